//! Why a tool call failed. Every `Display` is the text the model reads in the call's
//! `{"error": …}` result (RUNTIME.md §8.5), one line; a workspace that cannot be seeded fails
//! the render with the same text as its reason.

use serde_json::Value;

use super::{HarvestError, MAX_TOTAL_BYTES, MAX_WRITE_BYTES};
use crate::core::render::NotSubscribed;
use crate::format::opwm::OpwmError;

/// `raw` as a JSON string literal (quotes and escapes), as messages show paths the model gave.
fn quoted(raw: &str) -> String {
    Value::String(raw.to_string()).to_string()
}

const MIB: u64 = 1024 * 1024;

/// Why a tool path is refused (RUNTIME.md §8.2, §8.5: confinement to the workspace).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// `""`.
    #[error("path is empty")]
    Empty,
    /// A NUL character.
    #[error("path contains a NUL character")]
    Nul,
    /// `/x`, `\x` or `C:…`.
    #[error("path {} is absolute; use a path relative to the workspace", quoted(.0))]
    Absolute(String),
    /// A `..` segment.
    #[error("path {} leaves the workspace (contains '..')", quoted(.0))]
    LeavesWorkspace(String),
    /// Only empty and `.` segments.
    #[error("path {} is empty after normalization", quoted(.0))]
    EmptyAfterNormalization(String),
    /// Any other path the world-model format rejects (FORMATS.md §9).
    #[error("{0}")]
    Invalid(OpwmError),
    /// A component of the path (`at`) is a symbolic link.
    #[error("path {} goes through a symbolic link ({at})", quoted(.path))]
    SymbolicLink {
        /// The normalized path.
        path: String,
        /// The component that is a link.
        at: String,
    },
    /// An intermediate component is a file.
    #[error("{0} is a file, not a directory")]
    FileInTheWay(String),
}

/// Why a tool call or a workspace operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// Arguments that break the tool's schema: the JSON path and the first violation
    /// (`$.status: expected one of "done", "failed"`).
    #[error("{path}: {problem}")]
    Arguments {
        /// JSON path of the violation (`$`, `$.attestations`).
        path: String,
        /// What is wrong there.
        problem: String,
    },
    /// `offset` that is not a non-negative integer.
    #[error("offset must be a non-negative integer")]
    Offset,
    /// A refused path.
    #[error(transparent)]
    Path(#[from] PathError),
    /// No such file.
    #[error("not found: {0}")]
    NotFound(String),
    /// A directory where a file is expected.
    #[error("{0} is a directory")]
    IsDirectory(String),
    /// `ws_delete` of a directory.
    #[error("{0} is a directory; delete its files one by one")]
    DeleteDirectory(String),
    /// A special file.
    #[error("{0} is not a regular file")]
    NotRegularFile(String),
    /// A file beyond the world-model size limit.
    #[error("{0} is larger than {mib} MiB", mib = MAX_TOTAL_BYTES / MIB)]
    FileTooLarge(String),
    /// `ws_write` content beyond [`MAX_WRITE_BYTES`] (the byte count given).
    #[error("content is {0} bytes; at most {mib} MiB per ws_write", mib = MAX_WRITE_BYTES as u64 / MIB)]
    ContentTooLarge(usize),
    /// Encoded `ws_write` content that cannot be within [`MAX_WRITE_BYTES`].
    #[error("content is larger than {} MiB", MAX_WRITE_BYTES as u64 / MIB)]
    EncodedContentTooLarge,
    /// `encoding: base64` content that does not decode.
    #[error("content is not valid base64")]
    NotBase64,
    /// A write that would take the workspace past [`super::MAX_FILES`].
    #[error("the workspace would hold more than {} files", super::MAX_FILES)]
    TooManyFiles,
    /// A write that would take the workspace past [`MAX_TOTAL_BYTES`].
    #[error("the workspace would exceed {} MiB", MAX_TOTAL_BYTES / MIB)]
    TooManyBytes,
    /// A read offset beyond the file (byte counts).
    #[error("offset {offset} is past the end of {path} ({total} bytes)")]
    OffsetPastEnd {
        /// The offset asked for.
        offset: u64,
        /// The file.
        path: String,
        /// Its size.
        total: usize,
    },
    /// A read offset inside a UTF-8 character of a text file.
    #[error("offset {offset} is inside a UTF-8 character of {path}; use a next_offset value")]
    OffsetInsideCharacter {
        /// The offset asked for.
        offset: usize,
        /// The file.
        path: String,
    },
    /// An operating-system failure: `cannot <action> <path>: <error>`.
    #[error("cannot {action} {path}: {source}")]
    Io {
        /// What was being done (`read`, `write`, `create directory`, …).
        action: &'static str,
        /// The path, as the model named it (or the workspace root).
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The workspace walk failed or went past a limit.
    #[error(transparent)]
    Harvest(#[from] HarvestError),
    /// `producer` is not an input of the node.
    #[error("producer '{producer}' is not an input of node '{node}'")]
    NotAnInput {
        /// The producer asked for.
        producer: String,
        /// The rendering node.
        node: String,
    },
    /// The reconciler refused the read (read isolation).
    #[error(transparent)]
    Upstream(#[from] NotSubscribed),
    /// `shell_exec` while command execution is disabled.
    #[error("command execution is disabled (sandbox.mode is none)")]
    ShellDisabled,
}

impl ToolError {
    /// An I/O failure while doing `action` on `path`.
    pub fn io(
        action: &'static str,
        path: impl Into<String>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| ToolError::Io {
            action,
            path,
            source,
        }
    }
}
