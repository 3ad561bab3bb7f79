//! The commit gate (RUNTIME.md §6.3 step 4): every deterministic and attested obligation,
//! collected without short-circuiting, and the one-line failure reason.

use std::collections::HashMap;
use std::fmt;

use super::{CompiledPostconditions, Facts, Outcome, evaluate_explained, facet_facts};
use crate::core::canonicalizer::{CanonError, CompiledCanonicalizer};
use crate::format::json::Value;

/// The kind of a gate failure (RUNTIME.md §6.3 step 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// A deterministic predicate is `tripped`.
    Tripped,
    /// A deterministic predicate is `indeterminate`.
    Indeterminate,
    /// An attested obligation has no value in the render's `attestations`.
    MissingAttestation,
    /// An attested obligation was attested `false`.
    Attested,
}

impl FailureKind {
    /// `tripped`, `indeterminate`, `missing-attestation` or `attested`.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Tripped => "tripped",
            FailureKind::Indeterminate => "indeterminate",
            FailureKind::MissingAttestation => "missing-attestation",
            FailureKind::Attested => "attested",
        }
    }
}

/// One collected gate failure `{id, facet, kind, detail}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateFailure {
    /// The postcondition id.
    pub id: String,
    /// Its facet.
    pub facet: String,
    /// What failed.
    pub kind: FailureKind,
    /// `tripped` → `violation predicate holds`; `indeterminate` → the reason (module docs);
    /// `missing-attestation` → `attestation missing`; `attested` → `attested false`.
    pub detail: String,
}

impl fmt::Display for GateFailure {
    /// The reason segment: `<id> (tripped)`, `<id> (indeterminate: <detail>)`,
    /// `<id> (attestation missing)`, `<id> (attested false)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            FailureKind::Tripped => write!(f, "{} (tripped)", self.id),
            FailureKind::Indeterminate => write!(f, "{} (indeterminate: {})", self.id, self.detail),
            FailureKind::MissingAttestation => write!(f, "{} (attestation missing)", self.id),
            FailureKind::Attested => write!(f, "{} (attested false)", self.id),
        }
    }
}

/// Why a facet's facts cannot be computed: the detail of its `indeterminate` entries.
#[derive(Debug, thiserror::Error)]
enum NoFacts {
    /// No parsed truth or no canonicalizer (an atomic-only node, or truth that did not parse).
    #[error("structured truth unavailable")]
    NoTruth,
    /// The canonicalizer rejected the truth.
    #[error("{0}")]
    Canon(#[from] CanonError),
}

/// Checks every obligation of `set` without short-circuiting (RUNTIME.md §6.3 step 4) and
/// returns the failures sorted by id (empty = the gate passes).
///
/// `truth` is the parsed `truth.json` of a faceted node and `canonicalizer` its compiled
/// canonicalizer; when either is missing, every deterministic entry is `indeterminate`
/// (`structured truth unavailable`). `attestations` maps render-attested ids to the render's
/// booleans; only `true` passes.
pub fn check_gate(
    set: &CompiledPostconditions,
    truth: Option<&Value>,
    canonicalizer: Option<&CompiledCanonicalizer>,
    attestations: &HashMap<String, bool>,
) -> Vec<GateFailure> {
    let mut failures = Vec::new();
    let mut by_facet: HashMap<&str, Result<Facts, NoFacts>> = HashMap::new();
    for d in &set.deterministic {
        let facts =
            by_facet
                .entry(d.facet.as_str())
                .or_insert_with(|| match (truth, canonicalizer) {
                    (Some(t), Some(c)) => Ok(facet_facts(c, t, &d.facet)?),
                    _ => Err(NoFacts::NoTruth),
                });
        let (outcome, why) = match facts {
            Ok(f) => evaluate_explained(&d.predicate, f),
            Err(e) => (Outcome::Indeterminate, Some(e.to_string())),
        };
        let (kind, detail) = match outcome {
            Outcome::NotTripped => continue,
            Outcome::Tripped => (
                FailureKind::Tripped,
                "violation predicate holds".to_string(),
            ),
            Outcome::Indeterminate => (
                FailureKind::Indeterminate,
                why.unwrap_or_else(|| "undecidable".to_string()),
            ),
        };
        failures.push(GateFailure {
            id: d.id.clone(),
            facet: d.facet.clone(),
            kind,
            detail,
        });
    }
    for a in &set.attested {
        let (kind, detail) = match attestations.get(&a.id) {
            Some(true) => continue,
            Some(false) => (FailureKind::Attested, "attested false"),
            None => (FailureKind::MissingAttestation, "attestation missing"),
        };
        failures.push(GateFailure {
            id: a.id.clone(),
            facet: a.facet.clone(),
            kind,
            detail: detail.to_string(),
        });
    }
    failures.sort_by(|a, b| a.id.cmp(&b.id));
    failures
}

/// A failed commit gate (RUNTIME.md §6.3 step 4): the failures, sorted by id, never empty.
/// `Display` is the one-line failure reason: `postconditions failed: ` + the segments joined by
/// `; ` (callers sanitize it like every failure reason, §7.9).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("postconditions failed: {}", segments(failures))]
pub struct GateRejection {
    /// What failed, sorted by id.
    pub failures: Vec<GateFailure>,
}

fn segments(failures: &[GateFailure]) -> String {
    let parts: Vec<String> = failures.iter().map(GateFailure::to_string).collect();
    parts.join("; ")
}

/// The one-line failure reason of RUNTIME.md §6.3 for a sorted failure list (the text of
/// [`GateRejection`]). `None` when the list is empty.
pub fn failure_reason(failures: &[GateFailure]) -> Option<String> {
    if failures.is_empty() {
        return None;
    }
    Some(format!("postconditions failed: {}", segments(failures)))
}

/// The commit gate (RUNTIME.md §6.3 step 4): `Ok(())` when every obligation passes, otherwise
/// the failures, whose text is for example
/// `postconditions failed: fresh (indeterminate: fact prices.0.checked missing); has-prices (tripped); own-page (attested false)`.
/// An empty set passes trivially. See [`check_gate`] for the arguments.
///
/// Errors: [`GateRejection`].
pub fn gate(
    set: &CompiledPostconditions,
    truth: Option<&Value>,
    canonicalizer: Option<&CompiledCanonicalizer>,
    attestations: &HashMap<String, bool>,
) -> Result<(), GateRejection> {
    let failures = check_gate(set, truth, canonicalizer, attestations);
    if failures.is_empty() {
        Ok(())
    } else {
        Err(GateRejection { failures })
    }
}
