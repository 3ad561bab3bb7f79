//! `reactor doctor [--live]` (HOST.md §8.2): the environment and the project, without side
//! effects (it creates nothing, not even the state directory, and takes no lock).
//!
//! ```text
//! reactor doctor
//!
//!   version        reactor 0.2.0
//!   config         /abs/proj/reactor.yml (ok)
//!   provider       openrouter (chat-completions, https://openrouter.ai/api/v1)
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

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::agent::prompt::{PromptSource, SKILL_FILE, SKILL_PATH_ENV};
use crate::compile::{CompileSettings, Freshness, freshness};
use crate::contract::ContractSet;
use crate::format::sanitize::redact;
use crate::host::args::{ArgStream, Globals, OwnedArg, parse_offline_env};
use crate::host::boot::{ModelPlan, http_settings};
use crate::host::config::{CONFIG_FILE, SandboxMode};
use crate::host::error::{ErrorKind, HostError};
use crate::host::output::{self, Report};
use crate::host::project::{Project, ReactorSpec, absolute};
use crate::model::{
    Message, ModelClient, ModelRequest, ProviderClient, ProviderConfig, Transport, keys,
};
use crate::replay::statedir::{self, ManifestRead, Writer};

/// `reactor doctor --help`.
pub const HELP: &str = "reactor doctor — check the environment and the project

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
pub const LIVE_PURPOSE: &str = "doctor:live";

/// The user message of the `--live` smoke request (HOST.md §5.9).
pub const LIVE_PROMPT: &str = "Reply with the single word ok.";

/// The output budget of the `--live` smoke request, in tokens.
pub const LIVE_MAX_TOKENS: u32 = 64;

/// How long `docker version` may take before Docker counts as not available.
const DOCKER_PROBE_TIMEOUT: Duration = Duration::from_secs(10);

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

/// The state directory's usability.
#[derive(Clone, Debug, PartialEq, Eq)]
struct StateDirHealth {
    exists: bool,
    writable: bool,
    /// `(writable)`, `(absent; parent writable)` or `(NOT writable: <error>)`.
    text: String,
    problem: Option<String>,
}

/// The compile cache's health.
#[derive(Clone, Debug, PartialEq, Eq)]
struct IrHealth {
    /// `fresh`, `stale`, `absent`, `no-contracts`, `invalid` or `unknown`.
    freshness: &'static str,
    reason: Option<String>,
    contracts: usize,
    counts: Option<(usize, usize)>,
    text: String,
    problem: Option<String>,
}

/// One reactor's lines.
#[derive(Clone, Debug)]
struct ReactorHealth {
    name: String,
    state_dir: PathBuf,
    state: StateDirHealth,
    writer: Option<Writer>,
    ir: IrHealth,
}

impl ReactorHealth {
    fn state_json(&self) -> serde_json::Value {
        serde_json::json!({
            "path": self.state_dir.display().to_string(),
            "exists": self.state.exists,
            "writable": self.state.writable,
        })
    }

    fn writer_json(&self) -> serde_json::Value {
        self.writer
            .as_ref()
            .map(Writer::to_json)
            .unwrap_or(serde_json::Value::Null)
    }

    fn ir_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        m.insert("freshness".into(), self.ir.freshness.into());
        if let Some(r) = &self.ir.reason {
            m.insert("reason".into(), r.clone().into());
        }
        m.insert("contracts".into(), self.ir.contracts.into());
        if let Some((n, e)) = self.ir.counts {
            m.insert("nodes".into(), n.into());
            m.insert("edges".into(), e.into());
        }
        serde_json::Value::Object(m)
    }
}

/// The outcome of the `--live` smoke request.
#[derive(Clone, Debug, PartialEq, Eq)]
struct LiveSmoke {
    ran: bool,
    ok: bool,
    /// `ok (<ms> ms)` or the failure (a redacted hint, or why nothing was sent).
    detail: String,
}

fn transport_name(t: Transport) -> &'static str {
    match t {
        Transport::ChatCompletions => "chat-completions",
        Transport::Messages => "messages",
    }
}

/// Effective uid, effective gid and supplementary groups from `/proc/self/status`.
fn effective_ids() -> Option<(u32, Vec<u32>)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| -> Option<Vec<u32>> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        Some(
            line[name.len()..]
                .split_whitespace()
                .filter_map(|v| v.parse().ok())
                .collect(),
        )
    };
    let uid = *field("Uid:")?.get(1)?;
    let mut groups = field("Groups:").unwrap_or_default();
    if let Some(gid) = field("Gid:").and_then(|g| g.get(1).copied()) {
        groups.push(gid);
    }
    Some((uid, groups))
}

/// Whether this process may create entries in the directory `path`, decided from its
/// permission bits (no file is created: `doctor` has no side effects). Errors: a one-line
/// reason.
fn dir_writable(path: &Path) -> Result<(), String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_dir() {
        return Err("not a directory".into());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let Some((uid, groups)) = effective_ids() {
            if uid == 0 {
                return Ok(());
            }
            let mode = meta.mode();
            let bits = if meta.uid() == uid {
                mode >> 6
            } else if groups.contains(&meta.gid()) {
                mode >> 3
            } else {
                mode
            };
            return if bits & 0o3 == 0o3 {
                Ok(())
            } else {
                Err(format!("permission denied (mode {:04o})", mode & 0o7777))
            };
        }
    }
    if meta.permissions().readonly() {
        Err("permission denied (read-only)".into())
    } else {
        Ok(())
    }
}

fn state_dir_health(path: &Path) -> StateDirHealth {
    match std::fs::metadata(path) {
        Ok(_) => match dir_writable(path) {
            Ok(()) => StateDirHealth {
                exists: true,
                writable: true,
                text: "(writable)".into(),
                problem: None,
            },
            Err(e) => StateDirHealth {
                exists: true,
                writable: false,
                text: format!("(NOT writable: {e})"),
                problem: Some(format!("state dir {} is not writable: {e}", path.display())),
            },
        },
        Err(_) => {
            // The nearest existing ancestor decides whether the directory can be created.
            let mut parent = path.parent();
            while let Some(p) = parent {
                if p.exists() {
                    break;
                }
                parent = p.parent();
            }
            let verdict = match parent {
                Some(p) => dir_writable(p).map_err(|e| format!("{}: {e}", p.display())),
                None => Err("no existing parent directory".into()),
            };
            match verdict {
                Ok(()) => StateDirHealth {
                    exists: false,
                    writable: true,
                    text: "(absent; parent writable)".into(),
                    problem: None,
                },
                Err(e) => StateDirHealth {
                    exists: false,
                    writable: false,
                    text: format!("(NOT writable: {e})"),
                    problem: Some(format!(
                        "state dir {} cannot be created: {e}",
                        path.display()
                    )),
                },
            }
        }
    }
}

fn ir_health(spec: &ReactorSpec, settings: &Result<CompileSettings, String>) -> IrHealth {
    let health = |freshness, reason: Option<String>, contracts, text: String| IrHealth {
        freshness,
        reason,
        contracts,
        counts: None,
        text,
        problem: None,
    };
    let set = match ContractSet::load(&spec.contracts_dir) {
        Ok(s) => s,
        Err(e) => {
            let text = format!("contracts invalid: {e}");
            return IrHealth {
                problem: Some(text.clone()),
                ..health("invalid", Some(e.to_string()), 0, text)
            };
        }
    };
    if set.is_empty() {
        let text = "no .prose.md contracts found in this project".to_string();
        return IrHealth {
            problem: Some(text.clone()),
            ..health("no-contracts", None, 0, text)
        };
    }
    let n = set.len();
    let not_compiled = || {
        health(
            "absent",
            Some("no compile cache".into()),
            n,
            "not compiled — run `reactor compile`".into(),
        )
    };
    let settings = match settings {
        Ok(s) => s,
        Err(why) => {
            if statedir::read_manifest(&spec.state_dir) == ManifestRead::Absent {
                return not_compiled();
            }
            return health("unknown", Some(why.clone()), n, format!("unknown ({why})"));
        }
    };
    match freshness(&spec.state_dir, &settings.cache_key(&set)) {
        Freshness::Fresh(loaded) => {
            let t = loaded.ir.summary();
            IrHealth {
                counts: Some((t.nodes, t.edges)),
                ..health(
                    "fresh",
                    None,
                    n,
                    format!("fresh ({} nodes, {} edges)", t.nodes, t.edges),
                )
            }
        }
        Freshness::Stale {
            reason, topology, ..
        } => IrHealth {
            counts: topology.map(|t| (t.nodes, t.edges)),
            ..health(
                "stale",
                Some(reason.to_string()),
                n,
                format!("STALE ({reason}) — run `reactor compile`"),
            )
        },
        Freshness::Absent { .. } => not_compiled(),
    }
}

/// Whether `docker version` answers (exit 0) within [`DOCKER_PROBE_TIMEOUT`].
fn docker_available() -> bool {
    let child = std::process::Command::new("docker")
        .args(["version", "--format", "{{.Server.Version}}"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    let Ok(mut child) = child else {
        return false;
    };
    let deadline = Instant::now() + DOCKER_PROBE_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status.success(),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(25)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return false;
            }
        }
    }
}

/// The `system prompt` line, its JSON `source`, and whether it is usable.
fn system_prompt_health() -> (String, String, bool) {
    match crate::agent::prompt::system_prompt() {
        Ok(p) => match p.source {
            PromptSource::Embedded => ("embedded".into(), "embedded".into(), true),
            PromptSource::File(f) => (
                format!("{} ({SKILL_PATH_ENV})", f.display()),
                f.display().to_string(),
                true,
            ),
        },
        Err(e) => {
            let raw = std::env::var_os(SKILL_PATH_ENV).map(PathBuf::from);
            let file = match raw {
                Some(p) if p.is_dir() => p.join(SKILL_FILE),
                Some(p) => p,
                None => PathBuf::new(),
            };
            let text = if file.exists() {
                format!("UNUSABLE at {}: {e}", file.display())
            } else {
                format!("MISSING at {}", file.display())
            };
            (text, file.display().to_string(), false)
        }
    }
}

/// Files of JavaScript connector plugins (unsupported, HOST.md §4.3) in the given directories.
fn connector_plugins(dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for d in dirs {
        for name in ["connectors.js", "connectors.cjs"] {
            let p = d.join(name);
            if p.exists() && !found.contains(&p) {
                found.push(p);
            }
        }
    }
    found
}

fn live_smoke(
    config: &ProviderConfig,
    key: keys::ApiKey,
    model: Option<&crate::host::config::ModelSection>,
) -> LiveSmoke {
    let secret = key.expose_secret().to_string();
    // model.timeout / model.connect_timeout apply to the smoke request too.
    let settings = match model.map_or_else(http_settings, crate::host::boot::http_settings_for) {
        Ok(s) => s,
        Err(e) => {
            return LiveSmoke {
                ran: false,
                ok: false,
                detail: e.message,
            };
        }
    };
    let Ok(model) = config.require_render_model() else {
        return LiveSmoke {
            ran: false,
            ok: false,
            detail: format!(
                "model.render_model is required for provider '{}'",
                config.provider
            ),
        };
    };
    let request = ModelRequest {
        purpose: LIVE_PURPOSE.into(),
        model: model.to_string(),
        messages: vec![Message::user(LIVE_PROMPT)],
        temperature: config.temperature,
        reasoning_effort: config.reasoning_effort.clone(),
        max_output_tokens: Some(LIVE_MAX_TOKENS),
        ..ModelRequest::default()
    };
    let client = ProviderClient::new(config.clone(), key, settings);
    let started = Instant::now();
    match client.complete(&request) {
        Ok(_) => LiveSmoke {
            ran: true,
            ok: true,
            detail: format!("ok ({} ms)", started.elapsed().as_millis()),
        },
        Err(e) => LiveSmoke {
            ran: true,
            ok: false,
            detail: redact(&e.to_string(), &[secret.as_str()]),
        },
    }
}

/// Runs `doctor`.
///
/// JSON (one document, also when unhealthy): `{"version", "config": {"path", "present", "ok",
/// "error"?}, "provider", "transport", "baseUrl", "apiKeyEnv", "liveKeyPresent",
/// "offlineForced", "systemPrompt": {"source", "ok"}, "sandbox": {"mode",
/// "dockerAvailable"?}, "stateDir": {"path", "exists", "writable"}, "writer": {"pid",
/// "daemon", "url"?}|null, "ir": {"freshness": "fresh"|"stale"|"absent"|"no-contracts"|
/// "invalid"|"unknown", "reason"?, "contracts", "nodes"?, "edges"?}, "notes": [...],
/// "live"?: {"ran", "ok", "detail"}, "healthyForOffline", "healthyForLive",
/// "reactors"?: [{"reactor", "stateDir", "writer", "ir"}]}` (`provider`, `transport`,
/// `baseUrl` and `apiKeyEnv` are `null` when the configuration is invalid; `reactors` only with
/// several reactors).
pub fn exec(a: Args, g: &Globals) -> Result<ExitCode, HostError> {
    let opts = g.project_options();
    let dir = absolute(opts.project.as_deref().unwrap_or(Path::new(".")));
    let mut problems: Vec<String> = Vec::new();
    let mut missing: Vec<String> = Vec::new();

    // Configuration: a usage error stays one; a configuration error is reported.
    let (project, mut config_error) = match Project::load(&opts) {
        Ok(p) => (Some(p), None),
        Err(e) if e.kind == ErrorKind::Usage => return Err(e),
        Err(e) => (None, Some(e.message)),
    };
    let config_path = project
        .as_ref()
        .map(|p| p.config_path.clone())
        .unwrap_or_else(|| dir.join(CONFIG_FILE));
    let provider = match &project {
        Some(p) => match ProviderConfig::resolve(&p.provider_settings()) {
            Ok(c) => Some(c),
            Err(e) => {
                config_error = Some(e.to_string());
                None
            }
        },
        None => None,
    };
    if config_error.is_none()
        && let Some(c) = &provider
        && let Err(e) = c
            .require_compile_model()
            .and_then(|_| c.require_render_model())
    {
        // Where the provider that needs the model id is set (issue 8 item 7).
        config_error = Some(match &project {
            Some(p) => format!("{}: {e}", p.config.model.location()),
            None => e.to_string(),
        });
    }
    let reactors: Vec<ReactorSpec> = match (&project, g.reactor.as_deref()) {
        (Some(p), Some(name)) => vec![p.select(Some(name), "doctor")?.clone()],
        (Some(p), None) => p.reactors.clone(),
        (None, _) => Vec::new(),
    };
    let config_text = match (&config_error, &project) {
        (Some(e), _) => format!("{} (ERROR: {e})", config_path.display()),
        (None, Some(p)) if !p.config_present => {
            format!("{} (absent: defaults)", config_path.display())
        }
        _ => format!("{} (ok)", config_path.display()),
    };
    if let Some(e) = &config_error {
        // Errors located in the file already start with `reactor.yml:<line>:<col>:`.
        problems.push(if e.starts_with(CONFIG_FILE) {
            e.clone()
        } else {
            format!("{CONFIG_FILE}: {e}")
        });
        missing.push("the configuration is invalid".into());
    }

    // Provider and key (only whether it is present, and the variable's name).
    let key = provider
        .as_ref()
        .map(|c| keys::lookup_key(&c.api_key_env, &dir));
    let (provider_text, key_text, key_present) = match (&provider, &key) {
        (Some(c), Some(found)) => {
            let present = matches!(found, Ok(Some(_)));
            if !present {
                missing.push(match found {
                    Err(e) => format!("no key in {} ({e})", c.api_key_env),
                    _ => format!("no key in {}", c.api_key_env),
                });
            }
            (
                format!(
                    "{} ({}, {})",
                    c.provider,
                    transport_name(c.transport),
                    c.base_url
                ),
                format!(
                    "{} ({})",
                    if present { "present" } else { "absent" },
                    c.api_key_env
                ),
                present,
            )
        }
        _ => (
            "unknown (configuration invalid)".to_string(),
            "unknown (configuration invalid)".to_string(),
            false,
        ),
    };

    // Offline mode.
    let env_offline = parse_offline_env(std::env::var("REACTOR_OFFLINE").ok().as_deref());
    let (offline_text, offline) = match (&env_offline, g.offline_flag) {
        (_, true) => ("forced (--offline)".to_string(), true),
        (Ok(true), false) => ("forced (REACTOR_OFFLINE)".to_string(), true),
        (Ok(false), false) => ("not forced".to_string(), false),
        (Err(e), false) => {
            problems.push(e.message.clone());
            (format!("ERROR: {}", e.message), false)
        }
    };
    if offline {
        missing.push("offline mode is forced".into());
    }

    // System prompt.
    let (prompt_text, prompt_source, prompt_ok) = system_prompt_health();
    if !prompt_ok {
        missing.push(format!(
            "the system prompt file {prompt_source} is unusable"
        ));
    }

    // Sandbox.
    let sandbox = project
        .as_ref()
        .map(|p| p.config.sandbox.mode)
        .unwrap_or_default();
    let docker = (sandbox == SandboxMode::Docker).then(docker_available);
    let sandbox_text = match (sandbox, docker) {
        (SandboxMode::Docker, Some(true)) => "mode docker (docker available)".to_string(),
        (SandboxMode::Docker, _) => "mode docker (docker NOT available)".to_string(),
        (SandboxMode::UnixLocal, _) => {
            "mode unix-local (WARNING: shell_exec runs on this host without isolation)".to_string()
        }
        (SandboxMode::None, _) => "mode none".to_string(),
    };
    if docker == Some(false) {
        missing.push("Docker is not available (sandbox.mode docker)".into());
    }

    // Per reactor: state directory, writer, compile cache.
    let settings: Result<CompileSettings, String> = match (&provider, &config_error) {
        (Some(c), None) => match crate::agent::prompt::system_prompt() {
            Ok(prompt) => ModelPlan {
                config: c.clone(),
                prompt,
                max_turns: project
                    .as_ref()
                    .map(|p| p.config.model.max_turns)
                    .unwrap_or_default(),
                offline,
                http: crate::model::HttpSettings::default(),
                location: String::new(),
            }
            .compile_settings()
            .map_err(|e| e.message),
            Err(e) => Err(e),
        },
        (_, Some(_)) | (None, None) => Err("configuration invalid".into()),
    };
    let health: Vec<ReactorHealth> = reactors
        .iter()
        .map(|spec| ReactorHealth {
            name: spec.name.clone(),
            state_dir: spec.state_dir.clone(),
            state: state_dir_health(&spec.state_dir),
            writer: statedir::current_writer(&spec.state_dir),
            ir: ir_health(spec, &settings),
        })
        .collect();
    for h in &health {
        let tag = |p: &str| {
            if health.len() > 1 {
                format!("{}: {p}", h.name)
            } else {
                p.to_string()
            }
        };
        if let Some(p) = &h.ir.problem {
            problems.push(tag(p));
        }
        if let Some(p) = &h.state.problem {
            problems.push(tag(p));
        }
    }

    // Notes.
    let mut notes: Vec<(&str, String)> = Vec::new();
    if project
        .as_ref()
        .is_some_and(|p| p.config.telemetry.is_some())
    {
        notes.push((
            "telemetry",
            "keys present in reactor.yml (ignored: no telemetry is sent)".into(),
        ));
    }
    if let Some(p) = &project {
        let mut dirs = vec![p.dir.clone()];
        dirs.extend(reactors.iter().map(|r| r.contracts_dir.clone()));
        for f in connector_plugins(&dirs) {
            let name = f
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            notes.push((
                if name == "connectors.cjs" {
                    "connectors.cjs"
                } else {
                    "connectors.js"
                },
                format!(
                    "{} present (unsupported: JavaScript connector plugins are not loaded)",
                    f.display()
                ),
            ));
        }
    }
    if let Some(c) = &provider
        && c.transport == Transport::Messages
        && c.reasoning_effort.is_some()
    {
        notes.push((
            "reasoning_effort",
            format!(
                "set with the {} provider (ignored: Messages requests do not carry it)",
                c.provider
            ),
        ));
    }

    // The live smoke request.
    let live = a.live.then(|| {
        let not_sent = |detail: String| LiveSmoke {
            ran: false,
            ok: false,
            detail,
        };
        if offline {
            return not_sent("offline mode forbids model calls".into());
        }
        let Some(c) = provider.as_ref().filter(|_| config_error.is_none()) else {
            return not_sent("the configuration is invalid".into());
        };
        match key {
            Some(Ok(Some(found))) => {
                live_smoke(c, found.key, project.as_ref().map(|p| &p.config.model))
            }
            _ => not_sent(format!("{} is not set", c.api_key_env)),
        }
    });
    if let Some(l) = &live
        && !l.ok
        && l.ran
    {
        missing.push("the live smoke request failed".into());
    }

    let healthy_offline = problems.is_empty();
    let healthy_live = missing.is_empty() && live.as_ref().is_none_or(|l| l.ok);
    let code = u8::from(!(healthy_offline && live.as_ref().is_none_or(|l| l.ok)));

    if g.json {
        let mut m = serde_json::Map::new();
        m.insert("version".into(), crate::version::VERSION.into());
        let mut config = serde_json::Map::new();
        config.insert("path".into(), config_path.display().to_string().into());
        config.insert(
            "present".into(),
            project
                .as_ref()
                .map_or(config_path.is_file(), |p| p.config_present)
                .into(),
        );
        config.insert("ok".into(), config_error.is_none().into());
        if let Some(e) = &config_error {
            config.insert("error".into(), e.clone().into());
        }
        m.insert("config".into(), serde_json::Value::Object(config));
        let opt = |v: Option<String>| v.map_or(serde_json::Value::Null, Into::into);
        m.insert(
            "provider".into(),
            opt(provider.as_ref().map(|c| c.provider.clone())),
        );
        m.insert(
            "transport".into(),
            opt(provider
                .as_ref()
                .map(|c| transport_name(c.transport).to_string())),
        );
        m.insert(
            "baseUrl".into(),
            opt(provider.as_ref().map(|c| c.base_url.clone())),
        );
        m.insert(
            "apiKeyEnv".into(),
            opt(provider.as_ref().map(|c| c.api_key_env.clone())),
        );
        // Where each model value came from (issue 8 item 5).
        m.insert(
            "endpoint".into(),
            opt(provider.as_ref().map(|c| c.endpoint())),
        );
        m.insert(
            "sources".into(),
            provider.as_ref().map_or(serde_json::Value::Null, |c| {
                serde_json::Value::Object(
                    c.sources
                        .pairs()
                        .iter()
                        .map(|(k, s)| (k.to_string(), s.label().into()))
                        .collect(),
                )
            }),
        );
        m.insert("liveKeyPresent".into(), key_present.into());
        m.insert("offlineForced".into(), offline.into());
        m.insert(
            "systemPrompt".into(),
            serde_json::json!({"source": prompt_source, "ok": prompt_ok}),
        );
        let mut sb = serde_json::Map::new();
        sb.insert("mode".into(), sandbox.as_str().into());
        if let Some(d) = docker {
            sb.insert("dockerAvailable".into(), d.into());
        }
        m.insert("sandbox".into(), serde_json::Value::Object(sb));
        match health.first() {
            Some(h) => {
                m.insert("stateDir".into(), h.state_json());
                m.insert("writer".into(), h.writer_json());
                m.insert("ir".into(), h.ir_json());
            }
            None => {
                m.insert(
                    "stateDir".into(),
                    serde_json::json!({"path": null, "exists": false, "writable": false}),
                );
                m.insert("writer".into(), serde_json::Value::Null);
                m.insert(
                    "ir".into(),
                    serde_json::json!({"freshness": "unknown", "reason": "configuration invalid", "contracts": 0}),
                );
            }
        }
        m.insert(
            "notes".into(),
            notes
                .iter()
                .map(|(label, text)| serde_json::Value::from(format!("{label}: {text}")))
                .collect::<Vec<_>>()
                .into(),
        );
        if let Some(l) = &live {
            m.insert(
                "live".into(),
                serde_json::json!({"ran": l.ran, "ok": l.ok, "detail": l.detail}),
            );
        }
        m.insert("healthyForOffline".into(), healthy_offline.into());
        m.insert("healthyForLive".into(), healthy_live.into());
        if health.len() > 1 {
            m.insert(
                "reactors".into(),
                health
                    .iter()
                    .map(|h| {
                        serde_json::json!({
                            "reactor": h.name,
                            "stateDir": h.state_json(),
                            "writer": h.writer_json(),
                            "ir": h.ir_json(),
                        })
                    })
                    .collect::<Vec<_>>()
                    .into(),
            );
        }
        output::print_json(&serde_json::Value::Object(m))?;
        return Ok(ExitCode::from(code));
    }

    let mut r = Report::new("doctor");
    r.field("version", format!("reactor {}", crate::version::VERSION))
        .field("config", config_text)
        .field("provider", provider_text)
        .field(
            "sources",
            provider.as_ref().map_or_else(
                || "unknown (configuration invalid)".to_string(),
                |c| c.sources.describe(),
            ),
        )
        .field("live key", key_text)
        .field("offline mode", offline_text)
        .field("system prompt", prompt_text)
        .field("sandbox", sandbox_text);
    if health.is_empty() {
        r.field("state dir", "unknown (configuration invalid)")
            .field("writer", "unknown (configuration invalid)")
            .field("compiled IR", "unknown (configuration invalid)");
    }
    for h in &health {
        if health.len() > 1 {
            r.field("reactor", &h.name);
        }
        r.field(
            "state dir",
            format!("{} {}", h.state_dir.display(), h.state.text),
        )
        .field(
            "writer",
            h.writer
                .as_ref()
                .map_or_else(|| "none".to_string(), Writer::describe),
        )
        .field("compiled IR", &h.ir.text);
    }
    for (label, text) in &notes {
        r.field(label, text);
    }
    if let Some(l) = &live {
        r.field(
            "live smoke",
            if l.ok {
                l.detail.clone()
            } else {
                format!("FAILED — {}", l.detail)
            },
        );
    }
    r.blank();
    r.line(
        2,
        match problems.first() {
            None => "status: healthy-for-offline".to_string(),
            Some(p) => format!("status: UNHEALTHY — {p}"),
        },
    );
    r.line(
        2,
        if healthy_live {
            "live:   ready".to_string()
        } else {
            format!("live:   not ready — {}", missing.join("; "))
        },
    );
    output::write_stdout(r.as_str())?;
    Ok(ExitCode::from(code))
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

    #[test]
    fn state_dir_verdicts() {
        let d = tempfile::tempdir().unwrap();
        let h = state_dir_health(d.path());
        assert_eq!(
            (h.exists, h.writable, h.text.as_str()),
            (true, true, "(writable)")
        );
        let h = state_dir_health(&d.path().join("a/b/c"));
        assert_eq!(
            (h.exists, h.writable, h.text.as_str()),
            (false, true, "(absent; parent writable)")
        );
        assert!(h.problem.is_none());
        // Nothing was created.
        assert!(!d.path().join("a").exists());
    }

    #[cfg(unix)]
    #[test]
    fn a_read_only_state_dir_is_not_writable() {
        use std::os::unix::fs::PermissionsExt;
        if effective_ids().is_some_and(|(uid, _)| uid == 0) {
            eprintln!("SKIPPED: running as root, permission bits do not bind");
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let ro = d.path().join("ro");
        std::fs::create_dir(&ro).unwrap();
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
        let h = state_dir_health(&ro);
        assert!(!h.writable);
        assert_eq!(h.text, "(NOT writable: permission denied (mode 0555))");
        let h = state_dir_health(&ro.join("state"));
        assert!(!h.writable && !h.exists);
        assert!(h.problem.unwrap().contains("cannot be created"));
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}
