//! The viewer command line (VIEWER.md §2): parsing with lexopt semantics, the decision order,
//! and every message and exit code.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use std::sync::Arc;

use crate::devtools::examples::{self, CopyError, SHIPPED_EXAMPLES};
use crate::replay::open::torn_note;
use crate::replay::open_stream::{Served, read_for_describe, serve_state_dir};
use crate::replay::{self, DescribeOptions, OpenError, OpenStateDirOptions, OpenedStateDir};
use crate::store::source::{DiskSource, StateSource};

/// The usage text (VIEWER.md §2.6).
pub const USAGE: &str = "reactor-devtools — replay a saved Reactor ledger in a browser DAG viewer

Usage:
  reactor-devtools <state-dir> [--port <n>] [--host <h>] [--describe [--json]]
  reactor-devtools --example <name> [--describe [--json]]   # replay a bundled fixture
  reactor-devtools --example <name> --copy-to <dir> [--force]  # seed a sample ledger
  reactor-devtools <state-dir> --export <file.html> [--force]  # write a self-contained report

Arguments:
  <state-dir>   A saved Reactor state directory (receipts + compile/topology.json).

Options:
      --example <name>  Replay a fixture bundled in this binary — no path needed,
                 works from any directory. Bundled: masked-relay, surprise-cost,
                 agent-observatory, inbox-triage, monorepo-ci, research-tree.
      --copy-to <dir>   Copy the bundled --example fixture into <dir>, so
                 `reactor-devtools <dir> --describe` replays a ledger sitting in
                 your own tree. Refuses a non-empty / existing state-dir unless --force.
      --force   Overwrite on --copy-to or --export.
  -p, --port <n>  Port to listen on (default 4555).
      --host <h>  Host to bind (default 127.0.0.1).
      --describe Print a headless run summary (per-node + per-frame
                 dispositions, moved-facet diff, cost rollup, chain-verify)
                 and exit — no browser.
      --json    With --describe, emit that summary as one JSON object
                 (state-dir, topology, dispositions, the cost rollup by
                 surprise_cause, and the chain-verify verdict). Exit codes unchanged.
      --export <file.html>  Write a self-contained HTML report (replay, run tables,
                 outputs, contract sources) and exit.
      --title <text>    Title of the --export report.
      --source <path>   .prose.md file or directory to embed in the --export report.
  -V, --version  Print the version.
  -h, --help    Show this help.
";

/// Parsed arguments.
#[derive(Debug, Default)]
pub struct Args {
    /// `<state-dir>`
    pub state_dir: Option<OsString>,
    /// `--example`
    pub example: Option<String>,
    /// `--copy-to`
    pub(crate) copy_to: Option<OsString>,
    /// `--force`
    pub force: bool,
    /// `--port` (raw text; validated in the decision order)
    pub port: Option<String>,
    /// `--host`
    pub host: Option<String>,
    /// `--describe`
    pub describe: bool,
    /// `--json`
    pub json: bool,
    /// `--export <file.html>` (project)
    pub export: Option<OsString>,
    /// `--title <text>` (project)
    pub title: Option<String>,
    /// `--source <path>` (project)
    pub source: Option<OsString>,
    /// `--version`
    pub version: bool,
    /// `--help`
    pub help: bool,
    /// Unrecognized tokens, in order.
    pub unrecognized: Vec<String>,
    /// Other usage errors, in argument order.
    pub errors: Vec<String>,
}

/// Scans every argument (never stopping early), recording problems for the decision order.
pub fn parse(args: Vec<OsString>) -> Args {
    use lexopt::Arg::{Long, Short, Value};
    let mut a = Args::default();
    let mut p = lexopt::Parser::from_args(args);
    loop {
        let arg = match p.next() {
            Ok(Some(arg)) => arg,
            Ok(None) => break,
            Err(e) => {
                a.errors.push(e.to_string());
                continue;
            }
        };
        let flag = match &arg {
            Long(l) => format!("--{l}"),
            Short(c) => format!("-{c}"),
            Value(_) => String::new(),
        };
        let canonical = match &arg {
            Long("example") => "example",
            Long("copy-to") => "copy-to",
            Long("force") => "force",
            Long("port") | Short('p') => "port",
            Long("host") => "host",
            Long("describe") => "describe",
            Long("json") => "json",
            Long("export") => "export",
            Long("title") => "title",
            Long("source") => "source",
            Long("version") | Short('V') => "version",
            Long("help") | Short('h') => "help",
            Long(_) | Short(_) => "?",
            Value(_) => "positional",
        };
        match canonical {
            "positional" => {
                let Value(v) = arg else { continue };
                if a.state_dir.is_none() {
                    a.state_dir = Some(v);
                } else {
                    a.unrecognized.push(v.to_string_lossy().into_owned());
                }
            }
            "?" => {
                // Swallow an attached `=value` so it is not reported separately.
                if matches!(arg, Long(_)) {
                    let _ = p.optional_value();
                }
                a.unrecognized.push(flag);
            }
            "example" | "copy-to" | "port" | "host" | "export" | "title" | "source" => {
                let long = format!("--{canonical}");
                match p.value() {
                    Err(_) => a.errors.push(format!("option missing a value: {flag}")),
                    Ok(v) => {
                        let utf8 = || v.clone().into_string().ok();
                        match canonical {
                            "copy-to" => a.copy_to = Some(v),
                            "export" => a.export = Some(v),
                            "source" => a.source = Some(v),
                            "example" | "port" | "host" | "title" => match utf8() {
                                None => a.errors.push(format!(
                                    "option {long} has a value that is not valid UTF-8"
                                )),
                                Some(s) => match canonical {
                                    "example" => a.example = Some(s),
                                    "port" => a.port = Some(s),
                                    "title" => a.title = Some(s),
                                    _ => a.host = Some(s),
                                },
                            },
                            _ => {}
                        }
                    }
                }
            }
            flagname => {
                // Only a long option can carry an attached `=value`; for a short flag,
                // `optional_value` would swallow the rest of a bundle such as `-hV`.
                if matches!(arg, Long(_))
                    && let Some(_v) = p.optional_value()
                {
                    a.errors
                        .push(format!("option {flag} does not take a value"));
                    continue;
                }
                match flagname {
                    "force" => a.force = true,
                    "describe" => a.describe = true,
                    "json" => a.json = true,
                    "version" => a.version = true,
                    "help" => a.help = true,
                    _ => {}
                }
            }
        }
    }
    a
}

/// `--port` validity (VIEWER.md §2.3): one or more ASCII digits, at most 65535.
pub(crate) fn parse_port(s: &str) -> Option<u16> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let trimmed = s.trim_start_matches('0');
    if trimmed.len() > 5 {
        return None;
    }
    if trimmed.is_empty() {
        return Some(0);
    }
    trimmed
        .parse::<u32>()
        .ok()
        .filter(|n| *n <= 65535)
        .map(|n| n as u16)
}

/// Output sinks; writes ignore a closed pipe (the exit code stays what it would have been).
pub struct Io<'a> {
    /// stdout
    pub out: &'a mut dyn Write,
    /// stderr
    pub err: &'a mut dyn Write,
}

impl Io<'_> {
    pub(crate) fn out(&mut self, s: &str) {
        let _ = self.out.write_all(s.as_bytes());
        let _ = self.out.flush();
    }
    pub(crate) fn err(&mut self, s: &str) {
        let _ = self.err.write_all(s.as_bytes());
        let _ = self.err.flush();
    }
}

/// Runs `reactor-devtools` with the arguments after the program name.
pub fn main(args: Vec<OsString>) -> ExitCode {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let mut out = stdout.lock();
    let mut err = stderr.lock();
    let mut io = Io {
        out: &mut out,
        err: &mut err,
    };
    let code = run(args, &mut io);
    ExitCode::from(code)
}

/// The decision order of VIEWER.md §2.4. Returns the exit code.
pub fn run(args: Vec<OsString>, io: &mut Io<'_>) -> u8 {
    let a = parse(args);
    if a.version {
        io.out(&format!("{}\n", crate::version::DEVTOOLS_VERSION));
        return 0;
    }
    if a.help {
        io.out(USAGE);
        return 0;
    }
    let port = match check(&a, io) {
        Ok(port) => port,
        Err(code) => return code,
    };
    if let (Some(name), Some(dir)) = (&a.example, &a.copy_to) {
        return copy_to(name, &PathBuf::from(dir), a.force, io);
    }
    let target = match target(&a, io) {
        Ok(t) => t,
        Err(code) => return code,
    };
    let shown = a
        .example
        .as_ref()
        .map(|n| format!("example:{n}"))
        .unwrap_or_else(|| {
            PathBuf::from(a.state_dir.clone().unwrap_or_default())
                .display()
                .to_string()
        });
    if a.describe {
        return describe(&target, &shown, a.json, io);
    }
    if let Some(file) = &a.export {
        return crate::devtools::export::run_cli(
            target.open(),
            &shown,
            &crate::devtools::export::ExportArgs {
                file: PathBuf::from(file),
                force: a.force,
                title: a.title.clone(),
                source: a.source.as_ref().map(PathBuf::from),
            },
            io,
        );
    }
    let served = match target.serve() {
        Ok(s) => s,
        Err(e) => {
            io.err(&format!(
                "reactor-devtools: cannot read state-dir \"{shown}\": {e}\n"
            ));
            return 1;
        }
    };
    if let Some(note) = served.opened.torn_note() {
        io.err(&format!("{note}\n"));
    }
    let host = a.host.clone().unwrap_or_else(|| "127.0.0.1".to_string());
    crate::devtools::server::run_cli(served, a.example.clone(), &host, port, io)
}

/// The usage checks of VIEWER.md §2.4, in order: unknown options and bad values, no target,
/// the port, then the flag combinations. Returns the port, or the exit code after printing.
fn check(a: &Args, io: &mut Io<'_>) -> Result<u16, u8> {
    if !a.unrecognized.is_empty() || !a.errors.is_empty() {
        let mut msg = String::new();
        if !a.unrecognized.is_empty() {
            let plural = if a.unrecognized.len() > 1 {
                "options"
            } else {
                "option"
            };
            msg.push_str(&format!(
                "error: unrecognized {plural}: {}\n",
                a.unrecognized.join(", ")
            ));
        }
        for e in &a.errors {
            msg.push_str(&format!("error: {e}\n"));
        }
        msg.push('\n');
        msg.push_str(USAGE);
        io.err(&msg);
        return Err(1);
    }
    if a.state_dir.is_none() && a.example.is_none() {
        io.out(USAGE);
        return Err(1);
    }
    let port = match &a.port {
        Some(p) => match parse_port(p) {
            Some(n) => n,
            None => {
                io.err("error: --port must be an integer (0-65535)\n");
                return Err(1);
            }
        },
        None => 4555,
    };
    if a.json && !a.describe {
        io.err("error: --json only applies with --describe (the machine-readable run summary).\n  e.g. reactor-devtools --example masked-relay --describe --json\n");
        return Err(1);
    }
    if a.copy_to.is_some() && a.example.is_none() {
        io.err("error: --copy-to <dir> requires --example <name> (the sample ledger to copy).\n  e.g. reactor-devtools --example masked-relay --copy-to ./.reactor\n");
        return Err(1);
    }
    if a.example.is_some() && a.state_dir.is_some() {
        io.err("error: pass either --example <name> OR a <state-dir>, not both\n");
        return Err(1);
    }
    if let Some(msg) = export_conflict(a) {
        io.err(msg);
        return Err(1);
    }
    if let Some(name) = &a.example
        && !SHIPPED_EXAMPLES.contains(&name.as_str())
    {
        io.err(&format!(
            "error: unknown example \"{name}\".\n  shipped examples: {}\n",
            SHIPPED_EXAMPLES.join(", ")
        ));
        return Err(1);
    }
    Ok(port)
}

/// What the command line names: a bundled example or a state directory on disk.
enum Target {
    /// `--example <name>` (a shipped name; checked before).
    Example(String),
    /// `<state-dir>`.
    Dir(PathBuf),
}

impl Target {
    /// Opens it whole (server and `--export`).
    fn open(&self) -> Result<OpenedStateDir, OpenError> {
        let opts = OpenStateDirOptions::default();
        match self {
            Target::Example(name) => examples::open_example(name, &opts),
            Target::Dir(dir) => replay::open_state_dir(dir, &opts),
        }
    }

    /// Reads it for the viewer's server.
    fn serve(&self) -> Result<Served, OpenError> {
        let opts = OpenStateDirOptions::default();
        match self {
            Target::Example(name) => examples::serve_example(name, &opts),
            Target::Dir(dir) => serve_state_dir(dir, &opts),
        }
    }

    /// Where its bytes come from, the state-dir string it shows, and whether it is synthetic.
    fn source(&self) -> Result<(Arc<dyn StateSource>, String, bool), OpenError> {
        match self {
            Target::Example(name) => Ok((
                examples::example_source(name)?,
                format!("example:{name}"),
                true,
            )),
            Target::Dir(dir) => Ok((
                Arc::new(DiskSource::new(dir)),
                dir.display().to_string(),
                false,
            )),
        }
    }
}

/// The bundled example or the state directory. A directory that is absent or not a state
/// directory is reported here (exit code in `Err`).
fn target(a: &Args, io: &mut Io<'_>) -> Result<Target, u8> {
    if let Some(name) = &a.example {
        return Ok(Target::Example(name.clone()));
    }
    let dir = PathBuf::from(a.state_dir.clone().unwrap_or_default());
    let shown = dir.display().to_string();
    if !dir.exists() {
        io.err(&format!(
            "error: state-dir not found: {shown}\n  (after a global install, the bundled sample is reachable with\n   reactor-devtools --example masked-relay --describe)\n"
        ));
        return Err(1);
    }
    if !replay::is_reactor_state_dir(&dir) {
        io.err(&format!(
            "error: not a reactor state-dir: {shown}\n  (expected a receipts.json or a compile/ directory inside it)\n"
        ));
        return Err(1);
    }
    Ok(Target::Dir(dir))
}

/// `--describe [--json]` (VIEWER.md §5): exit 0 when every chain verifies. The ledger is
/// streamed ([`crate::replay::open_stream`]) and the report written as it is formatted.
fn describe(target: &Target, shown: &str, json: bool, io: &mut Io<'_>) -> u8 {
    let read = target.source().and_then(|(src, state_dir, synthetic)| {
        let opts = OpenStateDirOptions::default();
        read_for_describe(src.as_ref(), state_dir, &opts).map(|input| (input, synthetic))
    });
    let (input, synthetic) = match read {
        Ok(r) => r,
        Err(e) => {
            io.err(&format!(
                "reactor-devtools --describe: cannot read state-dir \"{shown}\": {e}\n"
            ));
            return 1;
        }
    };
    if let Some(t) = &input.end.torn {
        io.err(&format!("{}\n", torn_note(t)));
    } else if input.end.zero_length {
        io.err("reactor-devtools: note: receipts.json is empty (0 bytes); treating it as an empty ledger\n");
    }
    let report = input.report(&DescribeOptions {
        use_labels: None,
        synthetic,
    });
    let mut out = std::io::BufWriter::with_capacity(1 << 16, &mut *io.out);
    // As with every other output, a closed stdout is not an error of the report.
    let _ = if json {
        report.write_json(&mut out)
    } else {
        report.write_text(&mut out)
    };
    let _ = out.flush();
    if report.chain_ok() { 0 } else { 1 }
}

/// VIEWER.md §2.4 step 9: `--export` with `--describe` or `--copy-to`, or `--title` /
/// `--source` without `--export`.
fn export_conflict(a: &Args) -> Option<&'static str> {
    if a.export.is_some() && a.describe {
        Some("error: --export writes a report file; it cannot be combined with --describe\n")
    } else if a.export.is_some() && a.copy_to.is_some() {
        Some("error: --export writes a report file; it cannot be combined with --copy-to\n")
    } else if a.export.is_none() && (a.title.is_some() || a.source.is_some()) {
        Some("error: --title and --source only apply with --export\n")
    } else {
        None
    }
}

fn copy_to(name: &str, dir: &std::path::Path, force: bool, io: &mut Io<'_>) -> u8 {
    let shown = dir.display().to_string();
    match examples::copy_example(name, dir, force) {
        Ok(()) => {
            io.out(&format!(
                "reactor-devtools: copied the SAMPLE \"{name}\" ledger into {shown}\n  (a synthetic sample, not your own computed run — your real receipts come\n   from `reactor serve`/`reactor run` with a model key). Replay it keyless:\n    reactor-devtools {shown} --describe\n"
            ));
            0
        }
        Err(CopyError::AlreadyStateDir(_)) | Err(CopyError::NotEmpty(_)) => {
            let what = if replay::is_reactor_state_dir(dir) {
                "already a reactor state-dir"
            } else {
                "not empty"
            };
            io.err(&format!(
                "error: {shown} is {what} — refusing to overwrite.\n  re-run with --force to overwrite it:\n    reactor-devtools --example {name} --copy-to {shown} --force\n"
            ));
            1
        }
        Err(e) => {
            let detail = match &e {
                CopyError::NotADirectory(_) => format!("{shown} exists and is not a directory"),
                other => other.to_string(),
            };
            io.err(&format!(
                "error: failed to copy the sample ledger into {shown}: {detail}\n"
            ));
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn parsing_rules() {
        let a = parse(os(&[
            "--port=4556",
            "-p",
            "80",
            "dir",
            "extra",
            "--verify=1",
            "-x",
        ]));
        assert_eq!(a.port.as_deref(), Some("80"));
        assert_eq!(a.state_dir, Some(OsString::from("dir")));
        assert_eq!(a.unrecognized, vec!["extra", "--verify", "-x"]);
        let a = parse(os(&["--example", "--describe"]));
        assert_eq!(a.example.as_deref(), Some("--describe"));
        assert!(!a.describe);
        let a = parse(os(&["--describe=yes"]));
        assert_eq!(a.errors, vec!["option --describe does not take a value"]);
        let a = parse(os(&["--example"]));
        assert_eq!(a.errors, vec!["option missing a value: --example"]);
        let a = parse(os(&["-hV"]));
        assert!(a.help && a.version);
        let a = parse(os(&["-p4556", "--", "--describe"]));
        assert_eq!(a.port.as_deref(), Some("4556"));
        assert_eq!(a.state_dir, Some(OsString::from("--describe")));
        let a = parse(os(&["-p=4557"]));
        assert_eq!(a.port.as_deref(), Some("4557"));
    }

    #[test]
    fn ports() {
        assert_eq!(parse_port("0"), Some(0));
        assert_eq!(parse_port("65535"), Some(65535));
        assert_eq!(parse_port("0004556"), Some(4556));
        for bad in [
            "",
            "65536",
            "4556.0",
            "-1",
            "1e3",
            " 80",
            "99999999999999999999",
        ] {
            assert_eq!(parse_port(bad), None, "{bad}");
        }
    }
}
