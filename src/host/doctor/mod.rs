//! `reactor doctor [--live]` (HOST.md §8.2): the environment and the project, without side
//! effects (it creates nothing, not even the state directory, and takes no lock).
//!
//! ```text
//! reactor doctor
//!
//!   version        reactor 0.2.0
//!   config         /abs/proj/reactor.yml (ok)
//!   provider       openrouter (chat-completions, https://openrouter.ai/api/v1)
//!   sources        provider reactor.yml, base_url default, api_key_env default, render_model reactor.yml, compile_model reactor.yml
//!   live key       present (OPENROUTER_API_KEY)
//!   offline mode   not forced
//!   system prompt  embedded
//!   sandbox        mode none
//!   state dir      /abs/proj/.reactor (writable)
//!   writer         none
//!   compiled IR    fresh (2 nodes, 1 edges)
//!   live smoke     ok (412 ms)
//!
//!   status: healthy-for-offline
//!   live:   ready
//! ```
//!
//! Exit 0 when the configuration is valid, the contracts load and every state directory is
//! usable (with `--live`, the smoke request must also succeed); otherwise exit 1. A usage error
//! (a missing `--project`, a `--state-dir` that is a file, an unknown `--reactor`) exits 2 as
//! everywhere. JSON: see [`exec`].
//!
//! With several reactors (and no `--reactor`) the `state dir`, `writer` and `compiled IR` lines
//! repeat under a `reactor <name>` line per reactor; the JSON's `stateDir`, `writer` and `ir`
//! describe the first one and `reactors` lists all of them.

mod checks;
mod live;
mod report;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::compile::CompileSettings;
use crate::host::args::{ArgStream, Globals, OwnedArg, parse_offline_env};
use crate::host::boot::ModelPlan;
use crate::host::config::{CONFIG_FILE, SandboxMode};
use crate::host::error::{ErrorKind, HostError};
use crate::host::project::{Project, ReactorSpec, absolute};
use crate::host::report::{WriterInfo, print};
use crate::model::{ProviderConfig, Transport, keys};
use crate::replay::statedir;

use checks::{IrHealth, StateDirHealth};
pub(crate) use live::LiveSmoke;
pub(crate) use report::{
    ConfigHealth, DoctorReport, ModelSources, Note, ReactorHealth, SandboxHealth,
};

/// `reactor doctor --help`.
pub(crate) const HELP: &str = "reactor doctor — check the environment and the project

Usage:
  reactor doctor [--live] [global flags]

Reports the version, reactor.yml, the provider and whether its key is present
(never the key), offline mode, the system prompt, the sandbox, each state directory
and its current writer, and the compile cache's freshness. Creates nothing and
takes no lock.

Flags:
  --live    Also send one small request to the render model (needs the key)

Exits 0 when the configuration is valid, the contracts load and the state
directory is usable (and, with --live, the request succeeds); otherwise 1.
";

/// The `X-Reactor-Purpose` of the `--live` smoke request.
pub(crate) const LIVE_PURPOSE: &str = "doctor:live";

/// The user message of the `--live` smoke request (HOST.md §5.9).
pub(crate) const LIVE_PROMPT: &str = "Reply with the single word ok.";

/// The output budget of the `--live` smoke request, in tokens.
pub(crate) const LIVE_MAX_TOKENS: u32 = 64;

/// Parsed `doctor` arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Args {
    /// `--live`: one small request to the render model.
    pub live: bool,
}

/// Parses `doctor` arguments.
pub fn parse(s: &mut ArgStream<'_>) -> Result<Args, HostError> {
    let mut a = Args::default();
    while let Some(arg) = s.next_arg()? {
        match &arg {
            OwnedArg::Long(l) if l == "live" => {
                s.no_value("--live")?;
                a.live = true;
            }
            _ => return Err(s.unexpected(&arg)),
        }
    }
    Ok(a)
}

fn transport_name(t: Transport) -> &'static str {
    match t {
        Transport::ChatCompletions => "chat-completions",
        Transport::Messages => "messages",
    }
}

/// What the configuration step found: the project (when it loads), the provider (when it
/// resolves), and the first configuration error.
struct ConfigStep {
    /// The project directory.
    dir: PathBuf,
    project: Option<Project>,
    provider: Option<ProviderConfig>,
    health: ConfigHealth,
}

/// Loads `reactor.yml` and resolves the provider table. A usage error stays one (exit 2); a
/// configuration error is reported.
fn config_step(g: &Globals) -> Result<ConfigStep, HostError> {
    let opts = g.project_options();
    let dir = absolute(opts.project.as_deref().unwrap_or(Path::new(".")));
    let (project, mut error) = match Project::load(&opts) {
        Ok(p) => (Some(p), None),
        Err(e) if e.kind == ErrorKind::Usage => return Err(e),
        Err(e) => (None, Some(e.message)),
    };
    let path = project
        .as_ref()
        .map(|p| p.config_path.clone())
        .unwrap_or_else(|| dir.join(CONFIG_FILE));
    let provider = match &project {
        Some(p) => match ProviderConfig::resolve(&p.provider_settings()) {
            Ok(c) => Some(c),
            Err(e) => {
                error = Some(e.to_string());
                None
            }
        },
        None => None,
    };
    if error.is_none()
        && let Some(c) = &provider
        && let Err(e) = c
            .require_compile_model()
            .and_then(|_| c.require_render_model())
    {
        // Where the provider that needs the model id is set (issue 8 item 7).
        error = Some(match &project {
            Some(p) => format!("{}: {e}", p.config.model.location()),
            None => e.to_string(),
        });
    }
    let present = project
        .as_ref()
        .map_or(path.is_file(), |p| p.config_present);
    let text = match (&error, &project) {
        (Some(e), _) => format!("{} (ERROR: {e})", path.display()),
        (None, Some(p)) if !p.config_present => format!("{} (absent: defaults)", path.display()),
        _ => format!("{} (ok)", path.display()),
    };
    Ok(ConfigStep {
        dir,
        project,
        provider,
        health: ConfigHealth {
            path: path.display().to_string(),
            present,
            ok: error.is_none(),
            error,
            text,
        },
    })
}

/// Offline mode: the `offline mode` line, whether it is forced, and a problem for a
/// `REACTOR_OFFLINE` value that is not understood.
fn offline_step(g: &Globals) -> (String, bool, Option<String>) {
    let env_offline = parse_offline_env(std::env::var("REACTOR_OFFLINE").ok().as_deref());
    match (&env_offline, g.offline_flag) {
        (_, true) => ("forced (--offline)".to_string(), true, None),
        (Ok(true), false) => ("forced (REACTOR_OFFLINE)".to_string(), true, None),
        (Ok(false), false) => ("not forced".to_string(), false, None),
        (Err(e), false) => (
            format!("ERROR: {}", e.message),
            false,
            Some(e.message.clone()),
        ),
    }
}

/// The sandbox line; Docker is probed in docker mode only.
fn sandbox_step(mode: SandboxMode) -> SandboxHealth {
    let docker = (mode == SandboxMode::Docker).then(checks::docker_available);
    let text = match (mode, docker) {
        (SandboxMode::Docker, Some(true)) => "mode docker (docker available)".to_string(),
        (SandboxMode::Docker, _) => "mode docker (docker NOT available)".to_string(),
        (SandboxMode::UnixLocal, _) => {
            "mode unix-local (WARNING: shell_exec runs on this host without isolation)".to_string()
        }
        (SandboxMode::None, _) => "mode none".to_string(),
    };
    SandboxHealth {
        mode: mode.as_str(),
        docker_available: docker,
        text,
    }
}

/// The compile settings the cache key is computed with (an error when the configuration or the
/// system prompt is unusable).
fn compile_settings(c: &ConfigStep, offline: bool) -> Result<CompileSettings, HostError> {
    let (Some(config), true) = (&c.provider, c.health.ok) else {
        return Err(HostError::config("configuration invalid"));
    };
    let prompt = crate::agent::prompt::system_prompt()?;
    ModelPlan {
        config: config.clone(),
        prompt,
        max_turns: c
            .project
            .as_ref()
            .map(|p| p.config.model.max_turns)
            .unwrap_or_default(),
        offline,
        http: crate::model::HttpSettings::default(),
        location: String::new(),
        parallel_renders: 1,
    }
    .compile_settings()
}

/// The notes: telemetry keys, connector plugins, `reasoning_effort` with Messages.
fn notes(c: &ConfigStep, reactors: &[ReactorSpec]) -> Vec<Note> {
    let mut notes = Vec::new();
    let Some(p) = &c.project else {
        return notes;
    };
    if p.config.telemetry.is_some() {
        notes.push(Note {
            label: "telemetry",
            text: "keys present in reactor.yml (ignored: no telemetry is sent)".into(),
        });
    }
    let mut dirs = vec![p.dir.clone()];
    dirs.extend(reactors.iter().map(|r| r.contracts_dir.clone()));
    for f in checks::connector_plugins(&dirs) {
        let cjs = f.file_name().is_some_and(|n| n == "connectors.cjs");
        notes.push(Note {
            label: if cjs {
                "connectors.cjs"
            } else {
                "connectors.js"
            },
            text: format!(
                "{} present (unsupported: JavaScript connector plugins are not loaded)",
                f.display()
            ),
        });
    }
    if let Some(c) = &c.provider
        && c.transport == Transport::Messages
        && c.reasoning_effort.is_some()
    {
        notes.push(Note {
            label: "reasoning_effort",
            text: format!(
                "set with the {} provider (ignored: Messages requests do not carry it)",
                c.provider
            ),
        });
    }
    notes
}

/// The live smoke request, or why none was sent.
fn live_step(
    c: &ConfigStep,
    key: Option<Result<Option<keys::FoundKey>, keys::KeyError>>,
    offline: bool,
) -> LiveSmoke {
    if offline {
        return LiveSmoke::not_sent("offline mode forbids model calls");
    }
    let Some(config) = c.provider.as_ref().filter(|_| c.health.ok) else {
        return LiveSmoke::not_sent("the configuration is invalid");
    };
    match key {
        Some(Ok(Some(found))) => live::live_smoke(
            config,
            found.key,
            c.project.as_ref().map(|p| &p.config.model),
        ),
        _ => LiveSmoke::not_sent(format!("{} is not set", config.api_key_env)),
    }
}

/// Gathers the `doctor` report.
pub fn gather(a: &Args, g: &Globals) -> Result<DoctorReport, HostError> {
    let c = config_step(g)?;
    let mut problems: Vec<String> = Vec::new();
    let mut missing: Vec<String> = Vec::new();
    if let Some(e) = &c.health.error {
        // Errors located in the file already start with `reactor.yml:<line>:<col>:`.
        problems.push(if e.starts_with(CONFIG_FILE) {
            e.clone()
        } else {
            format!("{CONFIG_FILE}: {e}")
        });
        missing.push("the configuration is invalid".into());
    }
    let reactors: Vec<ReactorSpec> = match (&c.project, g.reactor.as_deref()) {
        (Some(p), Some(name)) => vec![p.select(Some(name), "doctor")?.clone()],
        (Some(p), None) => p.reactors.clone(),
        (None, _) => Vec::new(),
    };
    // Provider and key (only whether it is present, and the variable's name).
    let key = c
        .provider
        .as_ref()
        .map(|p| keys::lookup_key(&p.api_key_env, &c.dir));
    let key_present = matches!(key, Some(Ok(Some(_))));
    let (provider_text, key_text) = match &c.provider {
        Some(p) => {
            if !key_present {
                missing.push(match &key {
                    Some(Err(e)) => format!("no key in {} ({e})", p.api_key_env),
                    _ => format!("no key in {}", p.api_key_env),
                });
            }
            let state = if key_present { "present" } else { "absent" };
            (
                format!(
                    "{} ({}, {})",
                    p.provider,
                    transport_name(p.transport),
                    p.base_url
                ),
                format!("{state} ({})", p.api_key_env),
            )
        }
        None => (INVALID.to_string(), INVALID.to_string()),
    };
    let (offline_text, offline, offline_problem) = offline_step(g);
    problems.extend(offline_problem);
    if offline {
        missing.push("offline mode is forced".into());
    }
    let prompt = checks::system_prompt_health();
    if !prompt.ok {
        missing.push(format!(
            "the system prompt file {} is unusable",
            prompt.source
        ));
    }
    let sandbox = sandbox_step(
        c.project
            .as_ref()
            .map(|p| p.config.sandbox.mode)
            .unwrap_or_default(),
    );
    if sandbox.docker_available == Some(false) {
        missing.push("Docker is not available (sandbox.mode docker)".into());
    }
    let health = reactor_health(&reactors, &compile_settings(&c, offline), &mut problems);
    let notes = notes(&c, &reactors);
    let live = a.live.then(|| live_step(&c, key, offline));
    if live.as_ref().is_some_and(|l| l.ran && !l.ok) {
        missing.push("the live smoke request failed".into());
    }
    let first = health.first();
    Ok(DoctorReport {
        version: crate::version::VERSION,
        provider: c.provider.as_ref().map(|p| p.provider.clone()),
        transport: c.provider.as_ref().map(|p| transport_name(p.transport)),
        base_url: c.provider.as_ref().map(|p| p.base_url.clone()),
        api_key_env: c.provider.as_ref().map(|p| p.api_key_env.clone()),
        endpoint: c.provider.as_ref().map(|p| p.endpoint()),
        sources: c.provider.as_ref().map(|p| ModelSources(p.sources)),
        config: c.health,
        live_key_present: key_present,
        offline_forced: offline,
        system_prompt: prompt,
        state_dir: first.map_or_else(
            || StateDirHealth {
                path: None,
                exists: false,
                writable: false,
                text: String::new(),
                problem: None,
            },
            |h| h.state_dir.clone(),
        ),
        writer: first.and_then(|h| h.writer.clone()),
        ir: first.map_or_else(IrHealth::configuration_invalid, |h| h.ir.clone()),
        sandbox,
        notes,
        healthy_for_offline: problems.is_empty(),
        healthy_for_live: missing.is_empty() && live.as_ref().is_none_or(|l| l.ok),
        live,
        reactors: health,
        provider_text,
        key_text,
        offline_text,
        problems,
        missing,
    })
}

const INVALID: &str = "unknown (configuration invalid)";

/// Per reactor: state directory, writer and compile cache; their problems are added to
/// `problems` (prefixed with the reactor's name when there are several).
fn reactor_health(
    reactors: &[ReactorSpec],
    settings: &Result<CompileSettings, HostError>,
    problems: &mut Vec<String>,
) -> Vec<ReactorHealth> {
    let health: Vec<ReactorHealth> = reactors
        .iter()
        .map(|spec| ReactorHealth {
            reactor: spec.name.clone(),
            state_dir: checks::state_dir_health(&spec.state_dir),
            writer: statedir::current_writer(&spec.state_dir)
                .as_ref()
                .map(WriterInfo::from),
            ir: checks::ir_health(spec, settings),
        })
        .collect();
    for h in &health {
        let tag = |p: &str| {
            if health.len() > 1 {
                format!("{}: {p}", h.reactor)
            } else {
                p.to_string()
            }
        };
        problems.extend(h.ir.problem.as_deref().map(tag));
        problems.extend(h.state_dir.problem.as_deref().map(tag));
    }
    health
}

/// Runs `doctor`. JSON: see [`DoctorReport`].
pub fn exec(a: Args, g: &Globals) -> Result<ExitCode, HostError> {
    let report = gather(&a, g)?;
    print(&report, g.json)?;
    Ok(ExitCode::from(report.exit_code()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn parse_args(v: &[&str]) -> Result<Args, HostError> {
        let mut p = lexopt::Parser::from_args(v.iter().map(OsString::from).collect::<Vec<_>>());
        let mut s = ArgStream::new(&mut p, Globals::default(), "doctor");
        parse(&mut s)
    }

    #[test]
    fn flags() {
        assert!(!parse_args(&[]).unwrap().live);
        assert!(parse_args(&["--live", "--json"]).unwrap().live);
        for bad in [&["--live=1"][..], &["--check"], &["x"]] {
            let e = parse_args(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad:?}");
            assert_eq!(e.hints, ["try 'reactor doctor --help'"]);
        }
    }
}
