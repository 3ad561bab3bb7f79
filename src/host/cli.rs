//! The host command line (HOST.md §1–§3): verb dispatch, help and version, and the
//! error/exit-code rules. The argument helpers (global flags anywhere, `--flag value` and
//! `--flag=value`, `--`) are in [`crate::host::args`].
//!
//! Each verb is one module with `parse(&mut ArgStream) -> Result<Args, HostError>` and
//! `exec(Args, &Globals) -> Result<ExitCode, HostError>`, plus its `HELP` text. [`ArgStream`]
//! consumes the global flags wherever they appear, so a verb's parser only sees its own flags
//! and positionals.

use std::ffi::OsString;
use std::process::ExitCode;

use crate::host::args::{ArgStream, Globals, OwnedArg, lexopt_error};
use crate::host::error::HostError;
use crate::host::output;
use crate::host::{
    compile, doctor, init, inspect, logs, receipts, run, serve, status, topology, trace, trigger,
};

/// The overview printed by `reactor --help`.
pub(crate) const OVERVIEW: &str = "Usage: reactor [global flags] <verb> [verb flags] [arguments]

reactor — keep a graph of model-backed nodes true to their prose contracts

Verbs:
  init [dir]          Scaffold a project (reactor.yml, two contracts, .gitignore, README)
  doctor              Check the environment and the project (--live adds one model request)
  compile             Run the compile sessions into the cache (--check: CI freshness test)
  run                 Boot, drain to quiescence, report and exit
  trigger <node>      One external wake, optionally with --data
  serve               The durable daemon with the continuity loop and optional HTTP
  topology            Print the compiled graph (--format text|dot|mermaid)
  status              Compile-cache and ledger summary
  inspect <node>      One node in detail
  logs                One line per receipt
  trace [node]        Per-node receipt chains
  receipts [list|verify|cost]
                      Ledger listing, full verification, cost rollup
  devtools [<dir>]    The replay viewer (same as reactor-devtools); without <dir>, the
                      project's state directory

Global flags (before or after the verb):
  --project <dir>     Project directory (reactor.yml, *.prose.md); default .
  --state-dir <path>  State directory, relative to the project; overrides state.dir
  --reactor <name>    One entry of the reactors: list
  --json              Print exactly one JSON document
  --offline           No model request and no http connector fetch (REACTOR_OFFLINE=1)
  -q, --quiet         No progress on stderr (shown live on a terminal, one line per
                      finished session or render otherwise)
  -h, --help          This help; `reactor help <verb>` or `reactor <verb> --help` for a verb
  -V, -v, --version   Print the version

The offline verbs (topology, status, inspect, logs, trace, receipts) need no key,
never take the state-dir lock and never touch the network.
";

/// True when `--json` appears before `--` (so that even an early usage error prints its JSON
/// document).
fn prescan_json(args: &[OsString]) -> bool {
    args.iter()
        .take_while(|a| a.as_os_str() != "--")
        .any(|a| a.as_os_str() == "--json")
}

/// `reactor <version>`.
pub(crate) fn version_line() -> String {
    format!("reactor {}\n", crate::version::VERSION)
}

/// Runs `reactor` with the arguments after the program name and returns the exit code.
pub fn main(args: Vec<OsString>) -> ExitCode {
    let json = prescan_json(&args);
    match run_args(args) {
        Ok(code) => code,
        Err(e) => ExitCode::from(output::print_error(&e, json)),
    }
}

/// The verbs this build implements, with their help texts.
const VERBS: &[(&str, &str)] = &[
    ("init", init::HELP),
    ("doctor", doctor::HELP),
    ("compile", compile::HELP),
    ("topology", topology::HELP),
    ("status", status::HELP),
    ("inspect", inspect::HELP),
    ("logs", logs::HELP),
    ("trace", trace::HELP),
    ("receipts", receipts::HELP),
    ("run", run::HELP),
    ("trigger", trigger::HELP),
    ("serve", serve::HELP),
    ("devtools", crate::devtools::cli::USAGE),
];

macro_rules! dispatch {
    ($module:ident, $p:expr, $globals:expr) => {{
        let mut stream = ArgStream::new($p, $globals, stringify!($module));
        // A verb parser may fail on a missing argument after `--help` stopped the parse.
        let parsed = $module::parse(&mut stream);
        let globals = stream.globals;
        if globals.help {
            output::write_stdout($module::HELP)?;
            return Ok(ExitCode::SUCCESS);
        }
        if globals.version {
            output::write_stdout(&version_line())?;
            return Ok(ExitCode::SUCCESS);
        }
        $module::exec(parsed?, &globals)
    }};
}

fn run_args(args: Vec<OsString>) -> Result<ExitCode, HostError> {
    let mut p = lexopt::Parser::from_args(args);
    let mut globals = Globals::default();
    let verb = loop {
        if globals.help {
            output::write_stdout(OVERVIEW)?;
            return Ok(ExitCode::SUCCESS);
        }
        let arg = match p.next() {
            Ok(Some(a)) => OwnedArg::from_lexopt(a),
            Ok(None) => break None,
            Err(e) => return Err(lexopt_error(e, None)),
        };
        if globals.accept(&arg, &mut p, None)? {
            continue;
        }
        match arg {
            OwnedArg::Value(v) => break Some(v),
            other => {
                let _ = p.optional_value();
                return Err(HostError::usage(
                    format!("unknown flag '{}'", other.display()),
                    None,
                ));
            }
        }
    };
    if globals.version {
        output::write_stdout(&version_line())?;
        return Ok(ExitCode::SUCCESS);
    }
    let Some(verb) = verb else {
        return Err(HostError::usage("no verb given", None));
    };
    let verb = verb
        .into_string()
        .map_err(|v| HostError::usage(format!("unknown verb '{}'", v.to_string_lossy()), None))?;
    match verb.as_str() {
        "help" => help_verb(&mut p, globals),
        "init" => dispatch!(init, &mut p, globals),
        "doctor" => dispatch!(doctor, &mut p, globals),
        "compile" => dispatch!(compile, &mut p, globals),
        "topology" => dispatch!(topology, &mut p, globals),
        "run" => dispatch!(run, &mut p, globals),
        "trigger" => dispatch!(trigger, &mut p, globals),
        "serve" => dispatch!(serve, &mut p, globals),
        "status" => dispatch!(status, &mut p, globals),
        "inspect" => dispatch!(inspect, &mut p, globals),
        "logs" => dispatch!(logs, &mut p, globals),
        "trace" => dispatch!(trace, &mut p, globals),
        "receipts" => dispatch!(receipts, &mut p, globals),
        "devtools" => devtools_verb(&mut p, &globals),
        other => Err(HostError::usage(
            format!("unknown verb '{}'", crate::host::yaml::clip(other, 60)),
            None,
        )),
    }
}

/// `reactor [global flags] devtools …`: the replay viewer (VIEWER.md) with the arguments after
/// the verb, as `reactor-devtools` would get them. Global flags given before the verb carry
/// over: `--json` is passed on (it shapes `--describe`), and without a `<state-dir>` argument
/// or `--example` the viewer opens the project's state directory (`--state-dir`, else
/// `state.dir` of `--project`'s reactor.yml, selected by `--reactor`). `--offline` changes
/// nothing (the viewer is keyless).
fn devtools_verb(p: &mut lexopt::Parser, globals: &Globals) -> Result<ExitCode, HostError> {
    let mut rest: Vec<OsString> = p.raw_args().map_err(|e| lexopt_error(e, None))?.collect();
    let names_a_ledger = viewer_names_a_ledger(&rest);
    if globals.json && !rest.iter().any(|a| a == "--json") {
        rest.push("--json".into());
    }
    let from_project =
        globals.project.is_some() || globals.state_dir.is_some() || globals.reactor.is_some();
    if from_project && !names_a_ledger {
        let (_, spec) = globals.select_reactor("devtools")?;
        rest.insert(0, spec.state_dir.into_os_string());
    }
    Ok(crate::devtools::cli::main(rest))
}

/// True when viewer arguments name what to replay: a positional `<state-dir>` or `--example`
/// (the viewer's value flags are skipped with their values; `--` ends flags).
fn viewer_names_a_ledger(args: &[OsString]) -> bool {
    const VALUE_FLAGS: [&str; 5] = ["--example", "--copy-to", "--port", "-p", "--host"];
    let mut i = 0;
    while i < args.len() {
        let a = args[i].to_string_lossy();
        if a == "--" {
            return i + 1 < args.len();
        }
        if a == "--example" || a.starts_with("--example=") {
            return true;
        }
        if VALUE_FLAGS.contains(&a.as_ref()) {
            i += 2;
            continue;
        }
        if !a.starts_with('-') || a == "-" {
            return true;
        }
        i += 1;
    }
    false
}

/// `reactor help [verb]`.
fn help_verb(p: &mut lexopt::Parser, mut globals: Globals) -> Result<ExitCode, HostError> {
    let mut topic: Option<String> = None;
    loop {
        let arg = match p.next() {
            Ok(Some(a)) => OwnedArg::from_lexopt(a),
            Ok(None) => break,
            Err(e) => return Err(lexopt_error(e, None)),
        };
        if globals.accept(&arg, p, None)? {
            continue;
        }
        match arg {
            OwnedArg::Value(v) if topic.is_none() => {
                topic = Some(v.to_string_lossy().into_owned());
            }
            OwnedArg::Value(v) => {
                return Err(HostError::usage(
                    format!("unexpected argument '{}'", v.to_string_lossy()),
                    None,
                ));
            }
            other => {
                let _ = p.optional_value();
                return Err(HostError::usage(
                    format!("unknown flag '{}'", other.display()),
                    None,
                ));
            }
        }
    }
    let Some(topic) = topic else {
        output::write_stdout(OVERVIEW)?;
        return Ok(ExitCode::SUCCESS);
    };
    if let Some((_, help)) = VERBS.iter().find(|(v, _)| *v == topic) {
        output::write_stdout(help)?;
        return Ok(ExitCode::SUCCESS);
    }
    Err(HostError::usage(
        format!("unknown verb '{}'", crate::host::yaml::clip(&topic, 60)),
        None,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        /// Every verb parser takes any argument list without panicking; every failure is a
        /// usage error (exit 2).
        #[test]
        fn verb_parsers_are_total(args in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::strategy::Just("--json".to_string()),
                proptest::strategy::Just("--node".to_string()),
                proptest::strategy::Just("--rate=$3".to_string()),
                proptest::strategy::Just("--format".to_string()),
                proptest::strategy::Just("--strict".to_string()),
                proptest::strategy::Just("--force".to_string()),
                proptest::strategy::Just("--state-dir".to_string()),
                proptest::strategy::Just("--".to_string()),
                proptest::strategy::Just("-hx".to_string()),
                proptest::strategy::Just("verify".to_string()),
                "\\PC{0,8}",
            ],
            0..8,
        )) {
            macro_rules! check {
                ($m:ident) => {{
                    let mut p = lexopt::Parser::from_args(args.iter().map(OsString::from).collect::<Vec<_>>());
                    let mut s = ArgStream::new(&mut p, Globals::default(), stringify!($m));
                    if let Err(e) = $m::parse(&mut s) {
                        proptest::prop_assert_eq!(e.exit_code(), 2, "{}", e.message);
                    }
                }};
            }
            check!(init);
            check!(topology);
            check!(status);
            check!(inspect);
            check!(logs);
            check!(trace);
            check!(receipts);
            check!(compile);
            check!(doctor);
            check!(run);
            check!(trigger);
            check!(serve);
        }
    }

    #[test]
    fn json_prescan_stops_at_double_dash() {
        let v = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        assert!(prescan_json(&v(&["bogus", "--json"])));
        assert!(!prescan_json(&v(&["inspect", "--", "--json"])));
    }
}
