//! The integration suite (one test binary). Modules group the suites by room.

mod support;

mod core_invariants;
mod fixtures;
