//! Generators of the six bundled replay fixtures (VIEWER.md §9).
//!
//! Each generator mounts its topology exactly as written (phantom `ingress.<name>` producers
//! included, [`crate::core::IngressMode::AsWritten`]), drives the project's own reactor with
//! deterministic scripted renders (no clock, no randomness), and leaves an ordinary state
//! directory: `receipts.json`, `registry.json`, `world-models/`, `compile/topology.json` (the
//! `compile` envelope writer; not for `surprise-cost`), and `compile/labels.json` / `beats.json`
//! where VIEWER.md §9 lists them. Regenerating a fixture is byte-identical.
//!
//! Cost model (VIEWER.md §9): a render of `u` units costs `fresh = 180 × u` and
//! `reused = 240 + 40 × u` (provider `fixture`, model `deterministic-fake`); skips, self ticks
//! that skip, ingress receipts and failed renders cost 0/0.

use std::path::Path;

use crate::core::CoreError;

mod agent_observatory;
mod harness;
mod inbox_triage;
mod masked_relay;
mod monorepo_ci;
mod research_tree;
mod surprise_cost;

/// The six fixtures, in the order of VIEWER.md §2.2 (the same names as
/// [`crate::devtools::examples::SHIPPED_EXAMPLES`]).
pub const FIXTURE_NAMES: [&str; 6] = [
    "masked-relay",
    "surprise-cost",
    "agent-observatory",
    "inbox-triage",
    "monorepo-ci",
    "research-tree",
];

/// Why a fixture could not be generated.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    /// Not one of [`FIXTURE_NAMES`].
    #[error("unknown fixture \"{0}\" (expected one of: {names})", names = FIXTURE_NAMES.join(", "))]
    UnknownFixture(String),
    /// The output directory exists and is not empty.
    #[error("{0} is not empty; fixtures are generated into an absent or empty directory")]
    NotEmpty(String),
    /// A file could not be read or written.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The reactor reported an infrastructure error (mount, ledger, store).
    #[error("reactor: {0}")]
    Core(#[from] CoreError),
    /// The scenario script went off its rails (a step or beat it expected is missing).
    #[error("fixture script: {0}")]
    Script(String),
}

impl From<FixtureError> for String {
    fn from(e: FixtureError) -> String {
        e.to_string()
    }
}

/// Generates fixture `name` into `out_dir`, which must be absent or empty.
///
/// Errors: [`FixtureError::UnknownFixture`], [`FixtureError::NotEmpty`], I/O and reactor
/// errors. On error the directory may hold a partial fixture.
pub fn generate(name: &str, out_dir: &Path) -> Result<(), FixtureError> {
    match name {
        "masked-relay" => masked_relay::generate(out_dir),
        "surprise-cost" => surprise_cost::generate(out_dir),
        "agent-observatory" => agent_observatory::generate(out_dir),
        "inbox-triage" => inbox_triage::generate(out_dir),
        "monorepo-ci" => monorepo_ci::generate(out_dir),
        "research-tree" => research_tree::generate(out_dir),
        other => Err(FixtureError::UnknownFixture(other.to_string())),
    }
}
