//! The canonicalizer language and `compile_node` (RUNTIME.md §4).
//!
//! A canonicalization spec ([`CanonicalizerSpec`]) is the frozen materiality decision of one
//! faceted node: which dotted paths of its `truth.json` are material, how text and numbers
//! normalize, which arrays are sets, and which paths carry each declared facet. It is plain data,
//! persisted as the `canonicalizer` member of the node's compile file (FORMATS.md §15.5), and
//! [`compile_node`] lowers it, with no model and no network, into a [`CompiledCanonicalizer`]: a
//! deterministic function from a JSON value (JavaScript semantics, FORMATS.md §3.1) to an ordered
//! fingerprint map (`@atomic` first, then the declared facets in spec order).
//!
//! Semantics implemented here, in the order they apply:
//!
//! 1. **Rule resolution** (§4.3): every position has a dotted path (array elements share their
//!    array's path); the governing rule is the one whose path equals the position's path or is a
//!    dotted prefix of it, choosing the longest. Matching is textual on UTF-16 code units, so a
//!    rule `a.b` also governs a top-level key literally named `a.b`.
//! 2. **Facet restriction** (§4.6): when reducing for a declared facet, a position takes part only
//!    if its path is empty (the root), equals a facet path, lies under one, or is an ancestor of
//!    one. Other positions are dropped before materiality applies.
//! 3. **Reduction** (§4.4): scalars are kept when material; arrays keep their surviving elements
//!    (an empty array survives only when material); objects keep their surviving members, and an
//!    object with none survives (as `{}`) only when a rule with exactly its non-root path is
//!    material.
//! 4. **Normalization** (§4.5): every kept string is put in NFC, then (with a `text` option)
//!    whitespace runs of the JavaScript `\s` class collapse to one space and the ends are trimmed,
//!    then the string is lower-cased with the Unicode default mapping; numbers with a positive
//!    quantum `q` become `round(x / q) × q` (JavaScript `Math.round`), `-0` becoming `0`; `set`
//!    arrays are sorted by the UTF-16 order of their elements' canonical JSON and de-duplicated.
//! 5. **Digest** (§4.7): each token is `sha256:` + hex SHA-256 of the canonical JSON of the reduced
//!    value, `null` for a dropped root
//!    ([`NULL_ADDRESS`](crate::format::address::NULL_ADDRESS)).
//!
//! Choices the specification leaves open, documented here:
//!
//! * Lower-casing uses Rust's [`str::to_lowercase`], which — like JavaScript's `toLowerCase` —
//!   applies the unconditional Unicode default mappings plus the language-independent
//!   `Final_Sigma` rule (`ΟΔΟΣ` lower-cases to `οδος` ending in U+03C2 `ς`), and maps U+0130 `İ`
//!   to `i` + U+0307 (two code points). The two can
//!   only differ where the Unicode versions of Rust's standard library and the JavaScript engine
//!   differ.
//! * Rounding follows `Math.round` exactly (the nearest integer, ties toward +∞), which differs
//!   from a literal `floor(v + 0.5)` only where `v + 0.5` itself rounds (for example
//!   `0.49999999999999994`).
//! * A member whose key is the empty string has the empty path, like the root; for facet
//!   restriction it therefore always takes part.
//! * Strings holding lone surrogates are normalized run by run between the lone surrogates, which
//!   are kept as they are (they are neither whitespace nor cased nor composable).
//! * A kept number that is not finite even without quantization (`1e400` parses to infinity) is
//!   the same error as a non-finite quantization result: it cannot be serialized.
//! * Values nested deeper than [`json::MAX_DEPTH`] containers (more than the parser accepts) are
//!   an error ([`CanonError::TooDeep`]) instead of exhausting the stack.

mod compile;
mod normalize;
mod reduce;
mod spec;
#[cfg(test)]
pub(crate) mod tests;

pub use compile::{CompiledCanonicalizer, Lint, compile_node};
pub use normalize::{is_js_whitespace, normalize_text};
pub use spec::{CanonicalizerSpec, Collection, FacetSpec, FieldRule, NumberRule, TextRule};

use crate::format::json::{self, DeError};

/// The reserved facet name covering the whole material truth (FORMATS.md §8.1).
pub(crate) const ATOMIC: &str = "@atomic";

/// Errors of spec reading, `compile_node` and application.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CanonError {
    /// The spec JSON has the wrong shape: the error names the JSON path inside the spec
    /// (`canonicalization spec: fields[1].text.case_insensitive: expected a boolean, found
    /// number`; no path for the spec itself).
    #[error("canonicalization spec: {0}")]
    Shape(DeError),
    /// `compile_node` checks failed (RUNTIME.md §3.4.3, contract-independent part). Every
    /// problem found is listed.
    #[error("invalid canonicalization spec for node '{node}': {}", problems.join("; "))]
    Invalid {
        /// The spec's node id.
        node: String,
        /// One sentence per problem, each naming the offending spec member.
        problems: Vec<String>,
    },
    /// A kept number is not finite (after quantization, or already in the input). This is a
    /// render failure (`structured truth invalid: <message>`, RUNTIME.md §5.3).
    #[error("{}", non_finite_message(path, *quantum))]
    NonFinite {
        /// The dotted path of the number (empty for the root).
        path: String,
        /// The quantum applied, if any.
        quantum: Option<f64>,
    },
    /// `serialize`/`reduced` was asked for a facet the canonicalizer does not emit.
    #[error("unknown facet '{facet}' for node '{node}'")]
    UnknownFacet {
        /// The node id.
        node: String,
        /// The facet asked for.
        facet: String,
    },
    /// The value nests more than [`json::MAX_DEPTH`] arrays/objects.
    #[error(
        "value nested deeper than {} levels at {}",
        json::MAX_DEPTH,
        describe_path(path)
    )]
    TooDeep {
        /// The dotted path where the limit was hit.
        path: String,
    },
}

fn describe_path(path: &str) -> String {
    if path.is_empty() {
        "the root".to_string()
    } else {
        format!("path '{path}'")
    }
}

fn non_finite_message(path: &str, quantum: Option<f64>) -> String {
    match quantum {
        Some(q) => format!(
            "number at {} is not finite after quantization by {}",
            describe_path(path),
            json::number_to_string(q)
        ),
        None => format!("number at {} is not finite", describe_path(path)),
    }
}
