//! Read-only projections of a state directory (VIEWER.md §3–§5, HOST.md §8.6–§8.11): the one
//! ledger reader ([`ledger`]: a consistent prefix of a ledger that may be growing), opening for
//! the viewer, the snapshot with frames and cost rollup, chain verification over raw receipts,
//! `--describe`, and the host's offline views ([`trail`], [`statedir`]).

pub mod describe;
pub(crate) mod describe_rows;
pub mod ledger;
pub mod open;
pub(crate) mod open_stream;
pub(crate) mod raw;
pub mod snapshot;
pub(crate) mod split;
pub mod statedir;
pub(crate) mod stream;
pub mod trail;
pub mod why;
pub(crate) mod why_stream;
pub mod worldmodel;

pub use describe::{DescribeOptions, DescribeResult, describe_state_dir};
pub use open::{
    OpenError, OpenStateDirOptions, OpenedStateDir, is_reactor_state_dir, open_state_dir,
    read_topology,
};
pub use snapshot::{ReplaySnapshot, build_snapshot, version_for_frame};
pub use worldmodel::{NodeWorldModelView, WorldModelFileView, read_node_world_model};
