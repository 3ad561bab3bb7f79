//! The reactor core (room `core`, see ARCHITECTURE.md): deterministic, model-free functions that
//! turn a node's rendered files into fingerprints and decide whether a render may commit.
//!
//! * [`canonicalizer`]: the canonicalization spec, `compile_node` and the compiled canonicalizer
//!   (RUNTIME.md §4; persisted as the `canonicalizer` member of FORMATS.md §15.5).
//! * [`postcondition`]: flat postcondition entries and their decoding, the compiled postcondition
//!   set, facts, predicate evaluation, structured truth and the commit gate (RUNTIME.md §3.5,
//!   §5, §6).

pub mod canonicalizer;
pub mod postcondition;
