//! The host (room `host`; see ARCHITECTURE.md and HOST.md): the `reactor` command line, its
//! output conventions and errors, `reactor.yml` and project resolution, and the offline verbs.
//!
//! * [`cli`] dispatches one module per verb and maps errors to exit codes; [`args`] holds the
//!   argument helpers every verb's parser uses (global flags anywhere); [`output`] holds the
//!   report conventions and [`report`] the typed reports every verb prints (text and `--json`
//!   from one value); [`error`] the error type.
//! * [`config`] is `reactor.yml` (typed, validated, with `reactor.yml:<line>:<col>: <key path>`
//!   errors) over the located YAML tree of [`yaml`]; [`project`] resolves the project
//!   directory, state directories and reactors (run/trigger/serve build on it).
//! * Offline verbs (no key, no lock, no network, nothing created or repaired): [`init`],
//!   [`topology`], [`status`], [`inspect`], [`logs`], [`trace`], [`receipts`], reading through
//!   the one reader of [`crate::replay`] ([`crate::replay::trail`] for the ledger,
//!   [`crate::replay::statedir`] for topology, manifest, writer and world-models), with
//!   [`rollup`] (the host cost rollup).
//! * The daemon side: [`connectors`] (gateway fetches), [`queue`] (per-reactor queues),
//!   [`hosted`] (hosted reactors) and [`daemon`] (the HTTP routes); [`inflight`] shows the
//!   renders in flight (`/status`, and the `in-flight.json` every writer keeps for `status`).

pub mod args;
pub mod boot;
pub mod cli;
pub mod compile;
pub mod config;
pub mod connectors;
pub mod daemon;
pub mod doctor;
pub mod error;
pub mod events;
pub mod hosted;
pub mod inflight;
pub mod init;
pub mod inspect;
pub mod logs;
pub mod metrics;
pub mod output;
pub mod progress;
pub mod project;
pub mod queue;
pub mod receipts;
pub mod report;
pub(crate) mod rollup;
pub mod run;
pub mod serve;
pub mod status;
pub mod topology;
pub mod trace;
pub mod trigger;
pub mod yaml;
