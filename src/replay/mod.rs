//! Read-only projections of a state directory (VIEWER.md §3–§5): opening, the snapshot with
//! frames and cost rollup, chain verification over raw receipts, and `--describe`.

pub mod describe;
pub mod open;
pub mod snapshot;
pub mod worldmodel;

pub use describe::{DescribeOptions, DescribeResult, describe_state_dir};
pub use open::{
    OpenError, OpenStateDirOptions, OpenedStateDir, is_reactor_state_dir, open_state_dir,
    read_topology,
};
pub use snapshot::{ReplaySnapshot, build_snapshot, version_for_frame};
pub use worldmodel::{NodeWorldModelView, WorldModelFileView, read_node_world_model};
