//! The host's error type (HOST.md §3.3, §3.4; ARCHITECTURE.md "Errors carry a kind").
//!
//! Every failure of a verb is one [`HostError`]: a kind (which fixes the exit code), a one-line
//! message, zero or more hints and, for `REACTOR_DEBUG=1`, a cause chain. The CLI prints it once
//! through [`crate::host::output::print_error`].

use std::fmt;

/// What kind of failure an error is; fixes the exit code (HOST.md §3.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Bad command line: unknown verb, flag or subcommand, missing argument, bad flag value,
    /// a `--state-dir` that is not a directory. Exit 2.
    Usage,
    /// `reactor.yml` or provider configuration. Exit 1.
    Config,
    /// Bad input other than the command line and the configuration (an unknown node, a
    /// refused `init`). Exit 1.
    Input,
    /// The state directory cannot be read as required (a corrupt ledger, an unreadable
    /// topology). Exit 1.
    State,
    /// A model-provider failure. Exit 1.
    Model,
    /// A bug or an unexpected I/O failure. Exit 1.
    Internal,
    /// stdout was closed by the reader (a broken pipe): the command ends quietly with exit 0.
    BrokenPipe,
}

/// A host failure: printed once as `reactor: error: <message>` plus `hint:` lines
/// (HOST.md §3.3).
#[derive(Debug, Clone, PartialEq)]
pub struct HostError {
    /// The kind (fixes the exit code).
    pub kind: ErrorKind,
    /// One line, without the `reactor: error: ` prefix.
    pub message: String,
    /// `hint:` lines, without the prefix.
    pub hints: Vec<String>,
    /// The cause chain, printed only with `REACTOR_DEBUG=1`.
    pub causes: Vec<String>,
    /// With `--json`, the document printed instead of the generic
    /// `{"status":"error","ok":false,"message":…}` (for verbs whose refusal has its own JSON
    /// shape, such as `init`).
    pub document: Option<Box<serde_json::Value>>,
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for HostError {}

impl HostError {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> HostError {
        HostError {
            kind,
            message: message.into(),
            hints: Vec::new(),
            causes: Vec::new(),
            document: None,
        }
    }

    /// A usage error ending with `hint: try 'reactor --help'` (or `'reactor <verb> --help'`).
    pub fn usage(message: impl Into<String>, verb: Option<&str>) -> HostError {
        let hint = match verb {
            Some(v) => format!("try 'reactor {v} --help'"),
            None => "try 'reactor --help'".to_string(),
        };
        HostError::new(ErrorKind::Usage, message).with_hint(hint)
    }

    /// A configuration error (exit 1).
    pub fn config(message: impl Into<String>) -> HostError {
        HostError::new(ErrorKind::Config, message)
    }

    /// An input error (exit 1).
    pub fn input(message: impl Into<String>) -> HostError {
        HostError::new(ErrorKind::Input, message)
    }

    /// A state-directory error (exit 1).
    pub fn state(message: impl Into<String>) -> HostError {
        HostError::new(ErrorKind::State, message)
    }

    /// An internal error (exit 1).
    pub fn internal(message: impl Into<String>) -> HostError {
        HostError::new(ErrorKind::Internal, message)
    }

    /// The quiet end of a closed stdout (exit 0, nothing printed).
    pub fn broken_pipe() -> HostError {
        HostError::new(ErrorKind::BrokenPipe, "broken pipe")
    }

    /// Appends a `hint:` line.
    pub fn with_hint(mut self, hint: impl Into<String>) -> HostError {
        self.hints.push(hint.into());
        self
    }

    /// Appends a cause (shown with `REACTOR_DEBUG=1`).
    pub fn with_cause(mut self, cause: impl fmt::Display) -> HostError {
        self.causes.push(cause.to_string());
        self
    }

    /// A ledger problem of the state directory `state_dir`, for readers and writers alike:
    /// `<state-dir>: <problem>`, and for a problem with the file's content (corrupt, not an
    /// array, blank, a receipt that fails verification) the hint of FORMATS.md §11.4
    /// (`restore the file from a backup or move it aside`). Exit 1.
    pub fn ledger(state_dir: &std::path::Path, e: &crate::store::ledger::LedgerError) -> HostError {
        let err = HostError::state(format!("{}: {e}", state_dir.display()));
        if e.is_content_error() {
            err.with_hint(crate::store::ledger::RESTORE_HINT)
        } else {
            err
        }
    }

    /// [`HostError::ledger`] for a reader's error ([`crate::replay::ledger::LedgerReadError`]).
    pub fn ledger_read(
        state_dir: &std::path::Path,
        e: &crate::replay::ledger::LedgerReadError,
    ) -> HostError {
        match e {
            crate::replay::ledger::LedgerReadError::Content(c) => HostError::ledger(state_dir, c),
            io => HostError::state(io.to_string()),
        }
    }

    /// Sets the `--json` document printed for this error.
    pub fn with_document(mut self, doc: serde_json::Value) -> HostError {
        self.document = Some(Box::new(doc));
        self
    }

    /// The exit code: 2 for usage errors, 0 for a broken pipe, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self.kind {
            ErrorKind::Usage => 2,
            ErrorKind::BrokenPipe => 0,
            _ => 1,
        }
    }

    /// The message with hints appended after `; hint: ` (the `--json` error document's
    /// `message`, HOST.md §3.3).
    pub fn json_message(&self) -> String {
        let mut m = one_line(&self.message);
        for h in &self.hints {
            m.push_str("; hint: ");
            m.push_str(&one_line(h));
        }
        m
    }
}

pub use crate::replay::trail::one_line;

impl From<std::io::Error> for HostError {
    fn from(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            HostError::broken_pipe()
        } else {
            HostError::internal(e.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_and_json_message() {
        let u = HostError::usage("unknown verb 'x'", None);
        assert_eq!(u.exit_code(), 2);
        assert_eq!(u.hints, vec!["try 'reactor --help'".to_string()]);
        assert_eq!(
            u.json_message(),
            "unknown verb 'x'; hint: try 'reactor --help'"
        );
        let v = HostError::usage("bad", Some("logs"));
        assert_eq!(v.hints, vec!["try 'reactor logs --help'".to_string()]);
        assert_eq!(HostError::config("c").exit_code(), 1);
        assert_eq!(HostError::broken_pipe().exit_code(), 0);
        let io = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert_eq!(HostError::from(io).kind, ErrorKind::BrokenPipe);
    }

    #[test]
    fn messages_are_one_line() {
        assert_eq!(one_line("a\nb\r\nc\n"), "a b c");
        assert_eq!(one_line("x \ny"), "x y");
    }
}
