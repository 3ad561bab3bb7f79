//! Structured truth (RUNTIME.md §5.1–§5.3, §5.5): a render's `truth.json`, its fingerprints and
//! the empty-facet warnings.

use super::TRUTH_FILE;
use crate::core::canonicalizer::{CanonError, CompiledCanonicalizer};
use crate::format::address::NULL_ADDRESS;
use crate::format::json::{self, ParseError, Value};
use crate::format::receipt::Fingerprints;

/// The structured truth of a committed render (RUNTIME.md §5).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StructuredTruth {
    /// The node's fingerprint map: `apply(truth)` for faceted nodes, `{"@atomic": version}` for
    /// atomic-only nodes.
    pub fingerprints: Fingerprints,
    /// Empty-facet warnings (RUNTIME.md §5.5), one per declared facet reduced to `null`.
    pub warnings: Vec<String>,
    /// The parsed `truth.json` object of a faceted node (input of the gate); `None` for
    /// atomic-only nodes, whose `truth.json` is not interpreted.
    pub truth: Option<Value>,
}

/// Why a render's structured truth is unusable (RUNTIME.md §5.3). `Display` is the receipt's
/// failure reason.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TruthError {
    /// No `truth.json` in a faceted node's tree.
    #[error(
        "structured truth missing: node '{node}' declares facets but its render wrote no truth.json"
    )]
    Missing {
        /// The node.
        node: String,
    },
    /// `truth.json` is not UTF-8.
    #[error(
        "structured truth invalid: truth.json is not valid JSON (invalid UTF-8 at byte {valid_up_to})"
    )]
    NotUtf8 {
        /// Length of the valid UTF-8 prefix, in bytes.
        valid_up_to: usize,
    },
    /// `truth.json` is not JSON.
    #[error("structured truth invalid: truth.json is not valid JSON ({0})")]
    NotJson(ParseError),
    /// The top-level value is not an object.
    #[error("structured truth invalid: truth.json must hold a JSON object")]
    NotObject,
    /// Canonicalization failed (a non-finite number, nesting too deep).
    #[error("structured truth invalid: {0}")]
    Canonicalization(CanonError),
    /// A reason given by [`NodeRules`](crate::core::ir::NodeRules) other than the compiled
    /// rules (the fixture generator's rules, test rules), verbatim.
    #[error("{0}")]
    Rules(String),
}

/// Computes a render's structured truth and fingerprints (RUNTIME.md §5.1–§5.3, §5.5).
///
/// `files` is the harvested file map (tree-relative paths and bytes); `canonicalizer` the
/// node's compiled canonicalizer (`None`, or one without declared facets, means atomic-only);
/// `version` the world-model version (`sha256:…` of the OPWM1 artifact).
///
/// Faceted nodes need a file at exactly `truth.json` holding UTF-8 JSON whose top-level value
/// is an object.
///
/// Errors: [`TruthError`], whose text is exactly one of
/// * `structured truth missing: node '<node>' declares facets but its render wrote no truth.json`
/// * `structured truth invalid: truth.json is not valid JSON (<parser message>)` (the parser
///   message is e.g. `unexpected end of JSON input at byte 12`, or
///   `invalid UTF-8 at byte <n>`)
/// * `structured truth invalid: truth.json must hold a JSON object`
/// * `structured truth invalid: <canonicalization error>` (for example `number at path 'p' is
///   not finite after quantization by 0.01`).
pub(crate) fn structured_truth(
    node: &str,
    files: &[(String, Vec<u8>)],
    canonicalizer: Option<&CompiledCanonicalizer>,
    version: &str,
) -> Result<StructuredTruth, TruthError> {
    let c = match canonicalizer {
        Some(c) if c.is_faceted() => c,
        _ => {
            return Ok(StructuredTruth {
                fingerprints: Fingerprints::atomic(version),
                warnings: Vec::new(),
                truth: None,
            });
        }
    };
    let bytes = files
        .iter()
        .find(|(p, _)| p == TRUTH_FILE)
        .map(|(_, b)| b)
        .ok_or_else(|| TruthError::Missing {
            node: node.to_string(),
        })?;
    let text = std::str::from_utf8(bytes).map_err(|e| TruthError::NotUtf8 {
        valid_up_to: e.valid_up_to(),
    })?;
    let value = json::parse_str(text).map_err(TruthError::NotJson)?;
    if value.as_object().is_none() {
        return Err(TruthError::NotObject);
    }
    let fingerprints = c.apply(&value).map_err(TruthError::Canonicalization)?;
    let warnings = fingerprints
        .0
        .iter()
        .skip(1)
        .filter(|(_, token)| token == NULL_ADDRESS)
        .map(|(facet, _)| {
            format!(
                "facet '{facet}' of node '{node}' has no material: its paths are absent from truth.json"
            )
        })
        .collect();
    Ok(StructuredTruth {
        fingerprints,
        warnings,
        truth: Some(value),
    })
}
