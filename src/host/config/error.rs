//! The error of `reactor.yml` (HOST.md §4.1): one line naming the file position and key path.

use std::path::PathBuf;

use super::CONFIG_FILE;
use crate::host::yaml::Pos;

/// A `reactor.yml` error. `Display` is the one-line message printed after `reactor: error: `.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigFileError {
    /// The file exists but cannot be read (a directory, unreadable, not UTF-8).
    #[error("cannot read {}: {detail}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        detail: String,
    },
    /// The YAML library refused the text (syntax, duplicate key, several documents, a tag, a
    /// non-finite number, the size limit). `line` 0 means no position is known.
    #[error("{}", render(*line, *column, "", message))]
    Yaml {
        /// 1-based line, or 0.
        line: u64,
        /// 1-based column, or 0.
        column: u64,
        /// The problem.
        message: String,
    },
    /// A key or value the configuration does not accept.
    #[error("{}", render(*line, *column, path, problem))]
    Invalid {
        /// 1-based line of the offending key or value.
        line: u64,
        /// 1-based column.
        column: u64,
        /// The key path (`model.temperature`, `gateways[0].connector.type`; empty for the
        /// document itself).
        path: String,
        /// What is wrong, with the expected set.
        problem: String,
    },
}

fn render(line: u64, column: u64, path: &str, problem: &str) -> String {
    let at = if line == 0 {
        format!("{CONFIG_FILE}:")
    } else {
        format!("{CONFIG_FILE}:{line}:{column}:")
    };
    if path.is_empty() {
        format!("{at} {problem}")
    } else {
        format!("{at} {path}: {problem}")
    }
}

pub(super) fn invalid(pos: Pos, path: &str, problem: impl Into<String>) -> ConfigFileError {
    ConfigFileError::Invalid {
        line: pos.line,
        column: pos.column,
        path: path.to_string(),
        problem: problem.into(),
    }
}
