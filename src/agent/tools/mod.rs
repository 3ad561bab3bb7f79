//! The render tool set (RUNTIME.md §8.5–§8.6): tool specifications with their JSON Schemas, the
//! harness's own argument validation, the private workspace (seeding, path confinement, reads
//! with paging, writes, deletes, harvesting with the limits of §8.2) and the `finish` signal.
//! One concern per file: `specs.rs` (what is offered), `arguments.rs` (argument checks, the
//! `finish` signal, tool paths), `results.rs` (result shapes), `workspace.rs` (the files).
//!
//! Every tool answers with a JSON object as text; failures are `{"error": "<message>"}` results
//! (flagged as errors), never aborts.

mod arguments;
mod error;
mod results;
mod specs;
mod workspace;

pub use arguments::{FinishSignal, FinishStatus, parse_finish, tool_path, validate};
pub(crate) use error::{PathError, ToolError};
pub(crate) use results::{file_list, read_page};
pub(crate) use specs::{finish_schema, tool_specs};
pub use workspace::{HarvestError, Workspace};

/// Largest content returned by one read, in bytes (256 KiB; longer content is paged with
/// `offset`). Base64 pages hold at most 3/4 of it in raw bytes so the encoded text fits.
pub(crate) const MAX_READ_BYTES: usize = 256 * 1024;

/// Largest decoded content of one `ws_write`, in bytes (4 MiB).
pub(crate) const MAX_WRITE_BYTES: usize = 4 * 1024 * 1024;

/// Most files a harvested world-model may hold (10,000, RUNTIME.md §8.2).
pub(crate) const MAX_FILES: usize = 10_000;

/// Largest total size of a harvested world-model, in bytes (64 MiB, RUNTIME.md §8.2).
pub(crate) const MAX_TOTAL_BYTES: u64 = 64 * 1024 * 1024;

/// Deepest directory nesting walked in a workspace.
pub const MAX_DEPTH: usize = 128;

/// Tool names, in the order they are offered.
pub(crate) const WM_LIST: &str = "wm_list";
/// See [`WM_LIST`].
pub(crate) const WM_READ: &str = "wm_read";
/// See [`WM_LIST`].
pub(crate) const WM_LIST_UPSTREAM: &str = "wm_list_upstream";
/// See [`WM_LIST`].
pub(crate) const WM_READ_UPSTREAM: &str = "wm_read_upstream";
/// See [`WM_LIST`].
pub(crate) const WS_LIST: &str = "ws_list";
/// See [`WM_LIST`].
pub(crate) const WS_READ: &str = "ws_read";
/// See [`WM_LIST`].
pub(crate) const WS_WRITE: &str = "ws_write";
/// See [`WM_LIST`].
pub(crate) const WS_DELETE: &str = "ws_delete";
/// See [`WM_LIST`].
pub(crate) const SHELL_EXEC: &str = "shell_exec";
/// See [`WM_LIST`].
pub(crate) const FINISH: &str = "finish";

#[cfg(test)]
mod tests;
