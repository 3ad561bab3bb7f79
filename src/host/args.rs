//! Command-line argument helpers shared by the host verbs (HOST.md §2): the global flags
//! ([`Globals`], accepted before or after the verb), one owned argument ([`OwnedArg`]), and the
//! per-verb stream ([`ArgStream`]) that takes the global flags out wherever they appear, so a
//! verb's `parse` sees only its own flags (`--flag value`, `--flag=value`) and positionals.
//!
//! Every failure is a usage error (exit 2) naming the verb; `REACTOR_OFFLINE` values that are
//! not understood are a configuration error (exit 1).

use std::ffi::OsString;
use std::path::PathBuf;

use crate::host::error::HostError;
use crate::host::project::{Project, ProjectOptions, ReactorSpec};

/// Global flags (HOST.md §2.1), accepted before or after the verb.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Globals {
    /// `--project <dir>`.
    pub project: Option<PathBuf>,
    /// `--state-dir <path>`.
    pub state_dir: Option<PathBuf>,
    /// `--reactor <name>`.
    pub reactor: Option<String>,
    /// `--json`.
    pub json: bool,
    /// `--offline` (see [`Globals::offline`] for the environment variable).
    pub(crate) offline_flag: bool,
    /// `-q` / `--quiet`: no progress display or progress lines on stderr (issue 8 item 2).
    pub quiet: bool,
    /// `-h` / `--help` was given.
    pub help: bool,
    /// `-V` / `-v` / `--version` was given.
    pub version: bool,
}

/// A command-line argument with owned contents (lexopt's borrows the parser).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OwnedArg {
    /// `--name` (the `=value` part, if any, is still in the parser).
    Long(String),
    /// `-c`.
    Short(char),
    /// A positional value.
    Value(OsString),
}

impl OwnedArg {
    pub(crate) fn from_lexopt(a: lexopt::Arg<'_>) -> OwnedArg {
        match a {
            lexopt::Arg::Long(l) => OwnedArg::Long(l.to_string()),
            lexopt::Arg::Short(c) => OwnedArg::Short(c),
            lexopt::Arg::Value(v) => OwnedArg::Value(v),
        }
    }

    /// How the argument was written (`--x`, `-x`, or the value).
    pub fn display(&self) -> String {
        match self {
            OwnedArg::Long(l) => format!("--{l}"),
            OwnedArg::Short(c) => format!("-{c}"),
            OwnedArg::Value(v) => v.to_string_lossy().into_owned(),
        }
    }
}

pub(crate) fn lexopt_error(e: lexopt::Error, verb: Option<&str>) -> HostError {
    HostError::usage(e.to_string(), verb)
}

fn take_value(
    p: &mut lexopt::Parser,
    flag: &str,
    verb: Option<&str>,
) -> Result<OsString, HostError> {
    p.value()
        .map_err(|_| HostError::usage(format!("{flag} needs a value"), verb))
}

fn utf8(v: OsString, flag: &str, verb: Option<&str>) -> Result<String, HostError> {
    v.into_string()
        .map_err(|_| HostError::usage(format!("the value of {flag} is not valid UTF-8"), verb))
}

fn refuse_attached(
    p: &mut lexopt::Parser,
    flag: &str,
    verb: Option<&str>,
) -> Result<(), HostError> {
    match p.optional_value() {
        Some(_) => Err(HostError::usage(
            format!("{flag} does not take a value"),
            verb,
        )),
        None => Ok(()),
    }
}

impl Globals {
    /// Consumes `arg` when it is a global flag (reading its value from `p`). Returns `true` when
    /// consumed. `verb` names the verb for usage hints.
    pub fn accept(
        &mut self,
        arg: &OwnedArg,
        p: &mut lexopt::Parser,
        verb: Option<&str>,
    ) -> Result<bool, HostError> {
        match arg {
            OwnedArg::Long(l) => match l.as_str() {
                "project" | "state-dir" => {
                    let flag = format!("--{l}");
                    let v = take_value(p, &flag, verb)?;
                    if v.is_empty() {
                        return Err(HostError::usage(
                            format!("{flag} needs a non-empty value"),
                            verb,
                        ));
                    }
                    if l == "project" {
                        self.project = Some(PathBuf::from(v));
                    } else {
                        self.state_dir = Some(PathBuf::from(v));
                    }
                    Ok(true)
                }
                "reactor" => {
                    let v = utf8(take_value(p, "--reactor", verb)?, "--reactor", verb)?;
                    if v.is_empty() {
                        return Err(HostError::usage("--reactor needs a non-empty value", verb));
                    }
                    self.reactor = Some(v);
                    Ok(true)
                }
                "json" | "offline" | "quiet" | "help" | "version" => {
                    refuse_attached(p, &format!("--{l}"), verb)?;
                    match l.as_str() {
                        "json" => self.json = true,
                        "offline" => self.offline_flag = true,
                        "quiet" => self.quiet = true,
                        "help" => self.help = true,
                        _ => self.version = true,
                    }
                    Ok(true)
                }
                _ => Ok(false),
            },
            OwnedArg::Short('q') => {
                self.quiet = true;
                Ok(true)
            }
            OwnedArg::Short('h') => {
                self.help = true;
                Ok(true)
            }
            OwnedArg::Short('V') | OwnedArg::Short('v') => {
                self.version = true;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// The project options of the command line.
    pub(crate) fn project_options(&self) -> ProjectOptions {
        ProjectOptions {
            project: self.project.clone(),
            state_dir: self.state_dir.clone(),
        }
    }

    /// Resolves the project (`reactor.yml`, state directories, reactors).
    pub(crate) fn load_project(&self) -> Result<Project, HostError> {
        Project::load(&self.project_options())
    }

    /// Resolves the project and the reactor a verb works on (`--reactor`, or the only one).
    pub(crate) fn select_reactor(&self, verb: &str) -> Result<(Project, ReactorSpec), HostError> {
        let project = self.load_project()?;
        let reactor = project.select(self.reactor.as_deref(), verb)?.clone();
        Ok((project, reactor))
    }

    /// [`Globals::select_reactor`] for a verb that only reads the state directory (the offline
    /// verbs): a `--state-dir` given on the command line must exist and be a state directory
    /// ([`crate::host::project::check_reader_state_dir`]); the configured or default one may
    /// be absent (a project that has not run yet reads as empty).
    pub(crate) fn select_reader(&self, verb: &str) -> Result<(Project, ReactorSpec), HostError> {
        let (project, reactor) = self.select_reactor(verb)?;
        if self.state_dir.is_some() {
            crate::host::project::check_reader_state_dir(&reactor.state_dir)?;
        }
        Ok((project, reactor))
    }

    /// Offline mode: `--offline`, or `REACTOR_OFFLINE` set to `1`, `true` or `yes` (any case).
    /// `0`, `false`, `no` or empty do not force it; any other value is a configuration error.
    pub fn offline(&self) -> Result<bool, HostError> {
        if self.offline_flag {
            return Ok(true);
        }
        parse_offline_env(std::env::var("REACTOR_OFFLINE").ok().as_deref())
    }
}

/// Interprets a `REACTOR_OFFLINE` value (HOST.md §2.2).
pub(crate) fn parse_offline_env(v: Option<&str>) -> Result<bool, HostError> {
    let Some(v) = v else { return Ok(false) };
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" => Ok(true),
        "" | "0" | "false" | "no" => Ok(false),
        other => Err(HostError::config(format!(
            "REACTOR_OFFLINE: invalid value '{}' (expected 1, true, yes, 0, false or no)",
            crate::host::yaml::clip(other, 40)
        ))),
    }
}

/// Verbs whose own `--version <v>` shadows the global `--version` when a value follows.
const VERB_VERSION_FLAG: (&[&str], &str) = (&["inspect"], "version");

/// The arguments after the verb, with the global flags taken out.
#[derive(Debug)]
pub struct ArgStream<'a> {
    p: &'a mut lexopt::Parser,
    /// The global flags seen so far (before and after the verb).
    pub globals: Globals,
    verb: &'static str,
}

impl<'a> ArgStream<'a> {
    /// A stream over the rest of `p` for `verb`.
    pub fn new(p: &'a mut lexopt::Parser, globals: Globals, verb: &'static str) -> ArgStream<'a> {
        ArgStream { p, globals, verb }
    }

    /// The verb name.
    pub fn verb(&self) -> &'static str {
        self.verb
    }

    /// The next verb-level argument; global flags are consumed on the way. `None` at the end,
    /// or as soon as `--help` or `--version` is seen (the rest is not parsed).
    pub(crate) fn next_arg(&mut self) -> Result<Option<OwnedArg>, HostError> {
        loop {
            if self.globals.help || self.globals.version {
                return Ok(None);
            }
            let arg = match self.p.next() {
                Ok(Some(a)) => OwnedArg::from_lexopt(a),
                Ok(None) => return Ok(None),
                Err(e) => return Err(lexopt_error(e, Some(self.verb))),
            };
            if self.verb_flag_with_value(&arg, VERB_VERSION_FLAG) {
                return Ok(Some(arg));
            }
            if self.globals.accept(&arg, self.p, Some(self.verb))? {
                continue;
            }
            return Ok(Some(arg));
        }
    }

    /// True when `arg` is `--<flag>` of a verb that takes it with a value (`inspect --version
    /// <v>`), and a value follows (`--flag=value`, or a next argument not starting with `-`).
    /// Otherwise the flag stays global (`reactor inspect --version` prints the version).
    fn verb_flag_with_value(&mut self, arg: &OwnedArg, (verbs, flag): (&[&str], &str)) -> bool {
        let OwnedArg::Long(l) = arg else {
            return false;
        };
        if l != flag || !verbs.contains(&self.verb) {
            return false;
        }
        match self.p.try_raw_args() {
            // An attached `=value` is pending.
            None => true,
            Some(raw) => raw
                .peek()
                .is_some_and(|next| !next.to_string_lossy().starts_with('-')),
        }
    }

    /// The UTF-8 value of `flag` (`--flag value` or `--flag=value`).
    pub fn value(&mut self, flag: &str) -> Result<String, HostError> {
        let v = take_value(self.p, flag, Some(self.verb))?;
        utf8(v, flag, Some(self.verb))
    }

    /// Refuses `--flag=value` for a flag without a value.
    pub(crate) fn no_value(&mut self, flag: &str) -> Result<(), HostError> {
        refuse_attached(self.p, flag, Some(self.verb))
    }

    /// The usage error for an argument the verb does not take.
    pub fn unexpected(&mut self, arg: &OwnedArg) -> HostError {
        match arg {
            OwnedArg::Value(v) => HostError::usage(
                format!("unexpected argument '{}'", v.to_string_lossy()),
                Some(self.verb),
            ),
            other => {
                // Swallow an attached `=value` so it is not reported separately.
                let _ = self.p.optional_value();
                HostError::usage(
                    format!("unknown flag '{}' for '{}'", other.display(), self.verb),
                    Some(self.verb),
                )
            }
        }
    }

    /// The value of `--parallel-renders`: an integer within
    /// [`PARALLEL_RENDERS_RANGE`](crate::host::config::PARALLEL_RENDERS_RANGE) (1–64); anything
    /// else is a usage error naming the flag (exit 2).
    pub fn parallel_renders(&mut self) -> Result<usize, HostError> {
        let v = self.value("--parallel-renders")?;
        let (lo, hi) = crate::host::config::PARALLEL_RENDERS_RANGE;
        v.parse::<usize>()
            .ok()
            .filter(|n| (lo..=hi).contains(n) && v.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| {
                HostError::usage(
                    format!(
                        "--parallel-renders: '{}' is not an integer from {lo} to {hi}",
                        crate::host::yaml::clip(&v, 40)
                    ),
                    Some(self.verb),
                )
            })
    }

    /// The usage error for a missing positional argument.
    pub fn missing(&self, what: &str) -> HostError {
        HostError::usage(format!("missing argument {what}"), Some(self.verb))
    }

    /// A positional value as UTF-8.
    pub fn positional(&self, v: OsString, what: &str) -> Result<String, HostError> {
        v.into_string()
            .map_err(|_| HostError::usage(format!("{what} is not valid UTF-8"), Some(self.verb)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream_args(v: &[&str]) -> lexopt::Parser {
        lexopt::Parser::from_args(v.iter().map(OsString::from).collect::<Vec<_>>())
    }

    #[test]
    fn globals_anywhere_with_both_value_forms() {
        let mut p = stream_args(&[
            "--json",
            "--state-dir=st",
            "x",
            "--project",
            "p",
            "--reactor=r",
            "--offline",
        ]);
        let mut s = ArgStream::new(&mut p, Globals::default(), "logs");
        let a = s.next_arg().unwrap();
        assert_eq!(a, Some(OwnedArg::Value("x".into())));
        assert_eq!(s.next_arg().unwrap(), None);
        let g = s.globals;
        assert!(g.json && g.offline_flag);
        assert_eq!(g.state_dir, Some(PathBuf::from("st")));
        assert_eq!(g.project, Some(PathBuf::from("p")));
        assert_eq!(g.reactor.as_deref(), Some("r"));
    }

    #[test]
    fn global_flag_errors() {
        let mut p = stream_args(&["--json=yes"]);
        let mut s = ArgStream::new(&mut p, Globals::default(), "logs");
        let e = s.next_arg().unwrap_err();
        assert_eq!(e.message, "--json does not take a value");
        assert_eq!(e.exit_code(), 2);
        let mut p = stream_args(&["--project"]);
        let mut s = ArgStream::new(&mut p, Globals::default(), "logs");
        assert_eq!(s.next_arg().unwrap_err().message, "--project needs a value");
        let mut p = stream_args(&["--state-dir="]);
        let mut s = ArgStream::new(&mut p, Globals::default(), "logs");
        assert_eq!(
            s.next_arg().unwrap_err().message,
            "--state-dir needs a non-empty value"
        );
    }

    #[test]
    fn help_stops_parsing_and_double_dash_ends_flags() {
        let mut p = stream_args(&["-h", "--bogus"]);
        let mut s = ArgStream::new(&mut p, Globals::default(), "logs");
        assert_eq!(s.next_arg().unwrap(), None);
        assert!(s.globals.help);
        let mut p = stream_args(&["--", "--json"]);
        let mut s = ArgStream::new(&mut p, Globals::default(), "inspect");
        assert_eq!(
            s.next_arg().unwrap(),
            Some(OwnedArg::Value("--json".into()))
        );
        assert!(!s.globals.json);
    }

    #[test]
    fn offline_environment_values() {
        for on in ["1", "true", "YES", " True "] {
            assert!(parse_offline_env(Some(on)).unwrap(), "{on}");
        }
        for off in ["", "0", "false", "No"] {
            assert!(!parse_offline_env(Some(off)).unwrap(), "{off}");
        }
        assert!(!parse_offline_env(None).unwrap());
        let e = parse_offline_env(Some("maybe")).unwrap_err();
        assert_eq!(e.exit_code(), 1);
        assert!(
            e.message
                .starts_with("REACTOR_OFFLINE: invalid value 'maybe'")
        );
    }
}
