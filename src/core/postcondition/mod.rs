//! Postconditions, structured truth and the commit gate (RUNTIME.md §3.5, §5, §6).
//!
//! * **Flat entries** ([`PostconditionEntry`]) are what the postcondition session produces and
//!   what the compile file persists (FORMATS.md §15.5 `postconditions`): `{id, mode, facet,
//!   source, predicate?}` with the predicate as a flat node pool `{nodes, root}`.
//! * [`decode`] rebuilds the recursive [`Predicate`] from a pool (RUNTIME.md §3.5.3), and
//!   [`CompiledPostconditions::compile`] validates a node's entries and builds the in-memory set
//!   of §3.5.4.
//! * [`facts`] flattens a facet's reduced truth into named facts (§5.4); [`evaluate`] decides a
//!   predicate over them (§6.1).
//! * [`structured_truth`] turns a render's files into the node's fingerprint map or the exact
//!   failure reason of §5.3, with the empty-facet warnings of §5.5.
//! * [`gate`] checks every deterministic and attested obligation and renders the one-line failure
//!   reason of §6.3.
//!
//! Choices the specification leaves open, documented here:
//!
//! * **Decoded size.** Sharing a pool index between parents decodes it once per parent, so a
//!   pool of 32 nodes can describe a tree of 2^32 nodes. Decoding therefore also rejects trees
//!   of more than [`MAX_DECODED_NODES`] nodes or more than [`MAX_DECODED_BYTES`] bytes of fact
//!   names and string values ([`DecodeError::TooLarge`]); a pool without sharing never comes
//!   close.
//! * **Ignored members.** Members the schema calls ignored are dropped while lowering: a leaf
//!   keeps `fact` and `value`, `and`/`or` keep `children`, `not` keeps `child`. The persisted form
//!   omits members that are absent, except a leaf's `value`, which is always written (`null` is a
//!   real comparison value).
//! * **Fact collisions.** Objects are flattened in canonical key order (UTF-16), and when two
//!   actual positions flatten to one name (`{"a": {"b": 1}, "a.b": 2}`) the first in that order
//!   wins; a derived `.length` fact never replaces an actual one. Members whose key holds a lone
//!   surrogate produce no facts (no predicate can name them).
//! * **Indeterminate details.** The reason names the first undecidable leaf in child order:
//!   `fact <name> missing`, `fact <name> is <a type>, not a number`, `fact <name> is not a
//!   finite number`, `comparison value for fact <name> is <a type>, not a number`; when the facts
//!   themselves cannot be computed: `structured truth unavailable`, or the canonicalization
//!   error's message.
//! * **Reason order.** The failure reason is sorted by id as the text of §6.3 requires (its
//!   example line lists `fresh` last, which is not id order).

mod decode;
mod evaluate;
mod facts;
mod gate;
mod model;
mod set;
#[cfg(test)]
mod tests;
mod truth;

pub use decode::{DecodeError, decode};
pub use evaluate::{Outcome, evaluate, evaluate_explained};
pub use facts::{Facts, facet_facts, facts};
pub use gate::{FailureKind, GateFailure, GateRejection, check_gate, failure_reason, gate};
pub use model::{
    Comparison, FlatNode, FlatPredicate, Kind, Mode, PostconditionEntry, PostconditionError,
    Predicate, entries_from_value, entries_to_value,
};
pub use set::{
    AttestedPostcondition, CompiledPostconditions, DeterministicPostcondition, is_valid_id,
};
pub(crate) use truth::{TruthError, structured_truth};

/// Most nodes a flat predicate pool may hold (RUNTIME.md §3.5.2).
pub(crate) const MAX_POOL: usize = 256;
/// Most levels a decoded predicate may have; the root is level 1 (RUNTIME.md §3.5.3).
pub(crate) const MAX_LEVELS: usize = 32;
/// Most nodes a decoded predicate may have, counting shared pool entries once per parent.
pub(crate) const MAX_DECODED_NODES: usize = 4096;
/// Most bytes of fact names and string values a decoded predicate may hold in total.
pub(crate) const MAX_DECODED_BYTES: usize = 1 << 20;
/// The exact path of a faceted node's structured truth (RUNTIME.md §5.1).
pub(crate) const TRUTH_FILE: &str = "truth.json";
