//! The host's error type (HOST.md §3.3, §3.4; ARCHITECTURE.md "Errors carry a kind").
//!
//! Every failure of a verb is one [`HostError`]: a kind (which fixes the exit code), a one-line
//! message, zero or more hints and, for `REACTOR_DEBUG=1`, a cause chain. The CLI prints it once
//! through [`crate::host::output::print_error`].

use std::fmt;
use std::path::Path;

use crate::core::CoreError;
use crate::replay::ledger::LedgerReadError;
use crate::replay::statedir::TopologyReadError;
use crate::store::ledger::LedgerError;
use crate::store::lock::LockError;

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
    /// With `--json`, the verb already printed this error on stdout in its own form (the
    /// `serve --json` NDJSON `error` event, HOST.md §9), so nothing more is printed there.
    pub(crate) json_printed: bool,
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
            json_printed: false,
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
    pub(crate) fn broken_pipe() -> HostError {
        HostError::new(ErrorKind::BrokenPipe, "broken pipe")
    }

    /// Appends a `hint:` line.
    pub(crate) fn with_hint(mut self, hint: impl Into<String>) -> HostError {
        self.hints.push(hint.into());
        self
    }

    /// Appends a cause (shown with `REACTOR_DEBUG=1`).
    #[cfg(test)]
    pub(crate) fn with_cause(mut self, cause: impl fmt::Display) -> HostError {
        self.causes.push(cause.to_string());
        self
    }

    /// An I/O failure on `path` while trying to `what` (`read`, `list state dir`, …): a
    /// permission problem reads `permission denied: cannot <what> <path>` with a hint naming
    /// this process's user; anything else `cannot <what> <path>: <error>`. State, exit 1.
    pub(crate) fn io_problem(what: &str, path: &Path, e: &std::io::Error) -> HostError {
        if e.kind() == std::io::ErrorKind::PermissionDenied {
            HostError::state(format!(
                "permission denied: cannot {what} {}",
                path.display()
            ))
            .with_hint(permission_hint(path))
        } else {
            HostError::state(format!("cannot {what} {}: {e}", path.display()))
        }
    }

    /// Sets the `--json` document printed for this error.
    pub(crate) fn with_document(mut self, doc: serde_json::Value) -> HostError {
        self.document = Some(Box::new(doc));
        self
    }

    /// Marks the error as already printed on stdout with `--json` (stderr still gets the text).
    pub(crate) fn with_json_printed(mut self) -> HostError {
        self.json_printed = true;
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
    pub(crate) fn json_message(&self) -> String {
        let mut m = one_line(&self.message);
        for h in &self.hints {
            m.push_str("; hint: ");
            m.push_str(&one_line(h));
        }
        m
    }
}

pub(crate) use crate::replay::trail::one_line;

/// `check the owner and mode of <path> (reactor runs as uid <n>)`.
fn permission_hint(path: &Path) -> String {
    #[cfg(unix)]
    let who = format!(
        " (reactor runs as uid {})",
        rustix::process::geteuid().as_raw()
    );
    #[cfg(not(unix))]
    let who = String::new();
    format!("check the owner and mode of {}{who}", path.display())
}

// Conversions (issue 11 "errors the jj way"): every error another room hands the host becomes
// a HostError here, and only here, each choosing its kind (hence the exit code) and its hints.
// Verbs write `?`; a `map_err` elsewhere adds context the error itself does not carry.

impl From<std::io::Error> for HostError {
    /// A closed stdout is [`ErrorKind::BrokenPipe`]; any other unexpected I/O failure is
    /// internal.
    fn from(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            HostError::broken_pipe()
        } else {
            HostError::internal(e.to_string())
        }
    }
}

impl From<CoreError> for HostError {
    /// A reconciler failure (a store or ledger write, a staging problem): state, exit 1.
    fn from(e: CoreError) -> Self {
        HostError::state(e.to_string())
    }
}

impl From<crate::model::ConfigError> for HostError {
    /// The provider table refused the configuration (HOST.md §5.1): config, exit 1.
    fn from(e: crate::model::ConfigError) -> Self {
        HostError::config(e.to_string())
    }
}

impl From<crate::model::keys::KeyError> for HostError {
    /// A missing or unreadable key (HOST.md §5.1), with the key module's hints.
    fn from(e: crate::model::keys::KeyError) -> Self {
        let hints = e.hints();
        HostError {
            hints,
            ..HostError::config(e.to_string())
        }
    }
}

impl From<crate::host::config::ConfigFileError> for HostError {
    /// A `reactor.yml` error (HOST.md §4.1): config, exit 1.
    fn from(e: crate::host::config::ConfigFileError) -> Self {
        HostError::config(e.to_string())
    }
}

impl From<crate::agent::SkillError> for HostError {
    /// A `REACTOR_SKILL_PATH` file that cannot serve as the system prompt (HOST.md §2.2):
    /// config, exit 1.
    fn from(e: crate::agent::SkillError) -> Self {
        HostError::config(e.to_string())
    }
}

impl From<crate::contract::ContractError> for HostError {
    /// Contracts that do not load: `contracts invalid: <error>`, config, exit 1.
    fn from(e: crate::contract::ContractError) -> Self {
        HostError::config(format!("contracts invalid: {e}"))
    }
}

impl From<LockError> for HostError {
    /// A held lock names the holder and carries the hint of HOST.md §7.1; a lock file that
    /// cannot be written is a state error.
    fn from(e: LockError) -> Self {
        match e {
            LockError::Held { .. } => HostError::state(e.to_string()).with_hint(
                "stop that process first, or use `reactor trigger` to reach a running daemon",
            ),
            LockError::Io { path, source } => HostError::io_problem("lock", &path, &source),
        }
    }
}

impl From<crate::compile::cache::CacheWriteError> for HostError {
    /// `cannot write the compile cache: <error>` (HOST.md §6.5): state, exit 1.
    fn from(e: crate::compile::cache::CacheWriteError) -> Self {
        HostError::state(format!("cannot write the compile cache: {e}"))
    }
}

impl From<crate::core::ir::MountError> for HostError {
    /// A compiled IR the reconciler cannot mount: state, with the way out in the message.
    fn from(e: crate::core::ir::MountError) -> Self {
        HostError::state(format!("{e}; run `reactor compile --force`"))
    }
}

/// An error about one state directory, for the conversions whose message names the directory
/// (`<state-dir>: <problem>`). Built by [`StateDirContext::in_state_dir`].
#[derive(Debug)]
pub(crate) struct InStateDir<'a, E>(pub &'a Path, pub E);

impl From<InStateDir<'_, LedgerError>> for HostError {
    /// `<state-dir>: <problem>`, and for a problem with the file's content (corrupt, not an
    /// array, blank, a receipt that fails verification) the hint of FORMATS.md §11.4
    /// (`restore the file from a backup or move it aside`). State, exit 1.
    fn from(InStateDir(dir, e): InStateDir<'_, LedgerError>) -> Self {
        let err = HostError::state(format!("{}: {e}", dir.display()));
        if e.is_content_error() {
            err.with_hint(crate::store::ledger::RESTORE_HINT)
        } else {
            err
        }
    }
}

impl From<InStateDir<'_, LedgerReadError>> for HostError {
    /// A reader's ledger error: content problems as for [`LedgerError`]; a file that cannot be
    /// read names the file.
    fn from(InStateDir(dir, e): InStateDir<'_, LedgerReadError>) -> Self {
        match e {
            LedgerReadError::Content(c) => InStateDir(dir, c).into(),
            LedgerReadError::Io { path, source } => {
                HostError::io_problem("read", Path::new(&path), &source)
            }
        }
    }
}

impl From<InStateDir<'_, TopologyReadError>> for HostError {
    /// A `compile/topology.json` read error: the state-dir path before a JSON problem, the
    /// file path in an I/O problem. State, exit 1.
    fn from(InStateDir(dir, e): InStateDir<'_, TopologyReadError>) -> Self {
        match e {
            TopologyReadError::InvalidJson(_) => {
                HostError::state(format!("{}: {e}", dir.display()))
            }
            TopologyReadError::Io { path, source } => {
                HostError::io_problem("read", Path::new(&path), &source)
            }
        }
    }
}

impl From<InStateDir<'_, CoreError>> for HostError {
    /// Opening a reactor over a state directory: a ledger problem as for [`LedgerError`],
    /// anything else a state error.
    fn from(InStateDir(dir, e): InStateDir<'_, CoreError>) -> Self {
        match e {
            CoreError::Ledger(le) => InStateDir(dir, le).into(),
            other => other.into(),
        }
    }
}

/// Converts a result's error about one state directory into a [`HostError`] naming it.
pub(crate) trait StateDirContext<T> {
    /// The result, its error converted through [`InStateDir`].
    fn in_state_dir(self, dir: &Path) -> Result<T, HostError>;
}

impl<T, E> StateDirContext<T> for Result<T, E>
where
    for<'a> InStateDir<'a, E>: Into<HostError>,
{
    fn in_state_dir(self, dir: &Path) -> Result<T, HostError> {
        self.map_err(|e| InStateDir(dir, e).into())
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
    fn conversions_choose_kind_and_hints() {
        let dir = Path::new("/s");
        let held: HostError = LockError::Held {
            state_dir: dir.to_path_buf(),
            pid: Some(42),
        }
        .into();
        assert_eq!(held.kind, ErrorKind::State);
        assert_eq!(
            held.message,
            "state dir /s is in use by another writer (pid 42)"
        );
        assert_eq!(held.hints.len(), 1);
        let corrupt: HostError = InStateDir(
            dir,
            LedgerError::Corrupt {
                offset: 3,
                message: "x".into(),
            },
        )
        .into();
        assert_eq!(corrupt.message, "/s: receipts.json is corrupt at byte 3: x");
        assert_eq!(corrupt.hints, [crate::store::ledger::RESTORE_HINT]);
        let read: Result<(), LedgerReadError> =
            Err(LedgerReadError::Content(LedgerError::NotArray));
        let e = read.in_state_dir(dir).unwrap_err();
        assert_eq!(e.exit_code(), 1);
        assert_eq!(e.message, "/s: receipts.json must contain a JSON array");
        let missing: HostError = crate::model::keys::KeyError::Missing {
            provider: "openrouter".into(),
            var: "OPENROUTER_API_KEY".into(),
            env_file: "/p/.env".into(),
        }
        .into();
        assert_eq!(missing.kind, ErrorKind::Config);
        assert_eq!(missing.hints.len(), 2);
        assert!(missing.hints[0].starts_with("set OPENROUTER_API_KEY"));
        let core: HostError = InStateDir(dir, CoreError::Ledger(LedgerError::NotArray)).into();
        assert_eq!(core.message, "/s: receipts.json must contain a JSON array");
    }

    #[test]
    fn messages_are_one_line() {
        assert_eq!(one_line("a\nb\r\nc\n"), "a b c");
        assert_eq!(one_line("x \ny"), "x y");
    }
}
