//! Deterministic scripted renders and the generators of the six bundled fixtures (RUNTIME.md
//! §13.3, VIEWER.md §9); used by tests, benches and `fixtures/`. Compiled only with the
//! `testing` feature, which every test, bench and example build turns on (the package's
//! dev-dependency on itself); the shipped library and binary carry the fixtures as data only.

pub mod fixtures;
pub mod script;

pub use fixtures::{FIXTURE_NAMES, FixtureError, generate};
pub use script::{Latch, ScriptedRender, TopKeyRules, truth_of, truth_product};
