//! The compiled postcondition set of a node (RUNTIME.md §3.5.3–§3.5.4): validation of the flat
//! entries, decoding, sorting, and the in-memory JSON shape.

use serde::Serialize;

use super::{
    Mode, PostconditionEntry, PostconditionError, Predicate, decode, entries_from_value,
    entries_to_value,
};
use crate::core::canonicalizer::ATOMIC;
use crate::format::json::{self, Value};

/// A deterministic postcondition of a compiled set: JSON `{id, facet, source, predicate}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeterministicPostcondition {
    /// The id.
    pub id: String,
    /// The facet whose facts it reads.
    pub facet: String,
    /// The source sentence.
    pub source: String,
    /// The decoded violation predicate.
    pub predicate: Predicate,
}

/// A render-attested postcondition of a compiled set: JSON `{id, facet, source}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AttestedPostcondition {
    /// The id (the key the render's `attestations` object must carry).
    pub id: String,
    /// The facet it concerns.
    pub facet: String,
    /// The source sentence.
    pub source: String,
}

/// A node's compiled postcondition set (RUNTIME.md §3.5.4). JSON (the in-memory shape):
/// `{node, mode, deterministic: [...], attested: [...]}`; the flat entries are not part of it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CompiledPostconditions {
    /// The node id.
    pub node: String,
    /// `Deterministic` when there are no attested entries (including the empty set).
    pub mode: Mode,
    /// Deterministic entries, sorted by id.
    pub deterministic: Vec<DeterministicPostcondition>,
    /// Render-attested entries, sorted by id.
    pub attested: Vec<AttestedPostcondition>,
    #[serde(skip)]
    entries: Vec<PostconditionEntry>,
}

/// True iff `id` matches `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`.
pub fn is_valid_id(id: &str) -> bool {
    let b = id.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && b[0].is_ascii_alphanumeric()
        && b[1..]
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

impl CompiledPostconditions {
    /// The empty set of `node` (mode `deterministic`; passes the gate trivially).
    pub fn empty(node: impl Into<String>) -> CompiledPostconditions {
        CompiledPostconditions {
            node: node.into(),
            mode: Mode::Deterministic,
            deterministic: Vec::new(),
            attested: Vec::new(),
            entries: Vec::new(),
        }
    }

    /// Validates a node's flat entries and builds the compiled set (RUNTIME.md §3.5.3–§3.5.4).
    ///
    /// `facets` is the node's facet list (declared facets, with or without `@atomic`, which is
    /// always known); a node whose list has no facet other than `@atomic` is atomic-only.
    /// Checks, every problem reported: ids well-formed and unique; `facet` known; `predicate`
    /// present exactly for deterministic entries; no deterministic entry on an atomic-only node;
    /// every predicate decodes ([`decode`]). Entries are then sorted by id.
    ///
    /// Errors: [`PostconditionError::Invalid`].
    pub fn compile(
        node: &str,
        facets: &[String],
        entries: Vec<PostconditionEntry>,
    ) -> Result<CompiledPostconditions, PostconditionError> {
        let atomic_only = facets.iter().all(|f| f == ATOMIC);
        let mut problems = Vec::new();
        let mut deterministic = Vec::new();
        let mut attested = Vec::new();
        for (i, e) in entries.iter().enumerate() {
            let name = format!("postconditions[{i}] ('{}')", e.id);
            if !is_valid_id(&e.id) {
                problems.push(format!(
                    "postconditions[{i}].id '{}' does not match ^[A-Za-z0-9][A-Za-z0-9._-]{{0,63}}$",
                    e.id
                ));
            } else if let Some(j) = entries[..i].iter().position(|p| p.id == e.id) {
                problems.push(format!(
                    "postconditions[{i}].id '{}' repeats postconditions[{j}].id",
                    e.id
                ));
            }
            if e.facet != ATOMIC && !facets.contains(&e.facet) {
                let mut known = vec![ATOMIC.to_string()];
                known.extend(facets.iter().filter(|f| *f != ATOMIC).cloned());
                problems.push(format!(
                    "{name}: facet '{}' is not a facet of node '{node}' (known: {})",
                    e.facet,
                    known.join(", ")
                ));
            }
            match (e.mode, &e.predicate) {
                (Mode::Deterministic, None) => {
                    problems.push(format!("{name}: deterministic but has no predicate"));
                }
                (Mode::RenderAttested, Some(_)) => {
                    problems.push(format!("{name}: render-attested but carries a predicate"));
                }
                (Mode::Deterministic, Some(p)) => {
                    if atomic_only {
                        problems.push(format!(
                            "{name}: deterministic but node '{node}' is atomic-only (it has no structured facts)"
                        ));
                    }
                    match decode(&p.nodes, p.root) {
                        Ok(predicate) => deterministic.push(DeterministicPostcondition {
                            id: e.id.clone(),
                            facet: e.facet.clone(),
                            source: e.source.clone(),
                            predicate,
                        }),
                        Err(err) => problems.push(format!("{name}: {err}")),
                    }
                }
                (Mode::RenderAttested, None) => attested.push(AttestedPostcondition {
                    id: e.id.clone(),
                    facet: e.facet.clone(),
                    source: e.source.clone(),
                }),
            }
        }
        if !problems.is_empty() {
            return Err(PostconditionError::Invalid {
                node: node.to_string(),
                problems,
            });
        }
        deterministic.sort_by(|a, b| a.id.cmp(&b.id));
        attested.sort_by(|a, b| a.id.cmp(&b.id));
        let mut entries = entries;
        entries.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(CompiledPostconditions {
            node: node.to_string(),
            mode: if attested.is_empty() {
                Mode::Deterministic
            } else {
                Mode::RenderAttested
            },
            deterministic,
            attested,
            entries,
        })
    }

    /// Reads the persisted `postconditions` array and compiles it (cache load, FORMATS.md
    /// §15.5: the flat predicates are decoded again).
    ///
    /// Errors: [`PostconditionError::Shape`] or [`PostconditionError::Invalid`].
    pub fn from_value(
        node: &str,
        facets: &[String],
        v: &Value,
    ) -> Result<CompiledPostconditions, PostconditionError> {
        CompiledPostconditions::compile(node, facets, entries_from_value(v)?)
    }

    /// The flat entries, sorted by id (what the compile file persists).
    pub fn entries(&self) -> &[PostconditionEntry] {
        &self.entries
    }

    /// The persisted `postconditions` array (FORMATS.md §15.5).
    pub fn entries_value(&self) -> Value {
        entries_to_value(&self.entries)
    }

    /// True when the set has no entry.
    pub fn is_empty(&self) -> bool {
        self.deterministic.is_empty() && self.attested.is_empty()
    }

    /// The in-memory shape of RUNTIME.md §3.5.4: `{node, mode, deterministic: [{id, facet,
    /// source, predicate}], attested: [{id, facet, source}]}` with decoded predicates.
    pub fn to_value(&self) -> Value {
        json::value_of(self)
    }
}
