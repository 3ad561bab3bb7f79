//! Deterministic scripted renders and the generators of the six bundled fixtures (RUNTIME.md
//! §13.3, VIEWER.md §9); used by tests, benches and `fixtures/`.

pub mod fixtures;
pub mod script;

pub use fixtures::{FIXTURE_NAMES, FixtureError, generate};
pub use script::{Latch, ScriptedRender, TopKeyRules, truth_of, truth_product};
