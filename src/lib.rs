//! `reactor`: a deterministic runtime that keeps a DAG of model-backed nodes true to their
//! markdown contracts (`*.prose.md`), re-renders only what moved, and leaves a hash-chained
//! receipt for every decision; plus `reactor-devtools`, a read-only replay viewer of a saved
//! state directory.
//!
//! The module map follows `ARCHITECTURE.md` in the repository root. Data flows one way:
//! contracts → compile → core → store → replay → devtools; `host` wires the writers together.

#![forbid(unsafe_code)]
#![warn(unreachable_pub, missing_docs)]

pub mod agent;
pub mod compile;
pub mod contract;
pub mod core;
pub mod devtools;
pub mod format;
pub mod host;
pub mod http;
pub mod model;
pub mod replay;
#[cfg(feature = "testing")]
pub mod scenario;
pub mod store;
pub mod version;

// The library API (VIEWER.md §7). Everything else is reached through the rooms by the
// project's own binary, tests, benches and examples, and is `pub` only where they need it
// (`.ci/surface.py` keeps it so).
pub use devtools::examples::{CopyError, SHIPPED_EXAMPLES, copy_example, open_example};
pub use devtools::export::{ExportError, ExportOptions, export_report};
pub use devtools::server::{
    DevToolsServer, DevToolsServerOptions, ServerError, start_devtools_server,
};
pub use format::receipt::{ChainVerdict, ReceiptVerdict, verify_receipt, verify_receipt_chain};
pub use format::topology::unwrap_topology;
pub use replay::describe::{DescribeOptions, DescribeResult, describe_state_dir};
pub use replay::open::{
    Beat, BeatsMap, Labels, OpenError, OpenStateDirOptions, OpenedStateDir, is_reactor_state_dir,
    open_state_dir, read_beats, read_labels, read_topology, verify_node_chain_raw,
};
pub use replay::snapshot::{
    ChainVerifyView, CostRollupView, EdgeView, NodeView, ReceiptFrame, ReplaySnapshot,
    build_snapshot, version_for_frame,
};
pub use replay::worldmodel::{
    NodeWorldModelView, WorldModelFileView, WorldModels, open_world_models, read_node_world_model,
};
pub use version::{DEVTOOLS_VERSION, VERSION};
