//! The `doctor` report (HOST.md §8.2): what was found, as one value that prints as text or as
//! the `--json` document.

use serde::Serialize;
use serde::ser::SerializeMap;

use super::checks::{IrHealth, PromptHealth, StateDirHealth};
use super::live::LiveSmoke;
use crate::host::output::Report;
use crate::host::report::{VerbReport, WriterInfo, writer_line};
use crate::model::config::ValueSources;

/// `reactor.yml`: JSON `{"path", "present", "ok", "error"?}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ConfigHealth {
    /// The file.
    pub path: String,
    /// It exists.
    pub present: bool,
    /// It (and the provider table) validates.
    pub ok: bool,
    /// The first error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The `config` line: `<path> (ok)`, `(absent: defaults)` or `(ERROR: <error>)`.
    #[serde(skip)]
    pub text: String,
}

/// `sandbox`: JSON `{"mode", "dockerAvailable"?}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxHealth {
    /// `none`, `docker` or `unix-local`.
    pub mode: &'static str,
    /// Whether Docker answers (docker mode only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) docker_available: Option<bool>,
    /// The `sandbox` line.
    #[serde(skip)]
    pub text: String,
}

/// One reactor's state directory, writer and compile cache: JSON `{"reactor", "stateDir",
/// "writer", "ir"}` (the `reactor` member only in the `reactors` list).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReactorHealth {
    /// The reactor.
    pub reactor: String,
    /// Its state directory.
    pub state_dir: StateDirHealth,
    /// Its current writer.
    pub writer: Option<WriterInfo>,
    /// Its compile cache.
    pub ir: IrHealth,
}

/// A note line (`telemetry`, `connectors.js`, `reasoning_effort`): JSON `"<label>: <text>"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    /// The label.
    pub label: &'static str,
    /// The text.
    pub text: String,
}

impl Serialize for Note {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{}: {}", self.label, self.text))
    }
}

/// Where each model value came from (issue 8 item 5): JSON `{"provider", "base_url",
/// "api_key_env", "render_model", "compile_model"}`, each `"default"`, `"reactor.yml"` or the
/// environment variable's name; the text line is `provider reactor.yml, base_url …, …`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelSources(pub ValueSources);

impl Serialize for ModelSources {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let pairs = self.0.pairs();
        let mut m = s.serialize_map(Some(pairs.len()))?;
        for (key, source) in pairs {
            m.serialize_entry(key, source.label())?;
        }
        m.end()
    }
}

fn single(reactors: &[ReactorHealth]) -> bool {
    reactors.len() <= 1
}

/// The `doctor` report. JSON (one document, also when unhealthy): `{"version", "config":
/// {"path", "present", "ok", "error"?}, "provider", "transport", "baseUrl", "apiKeyEnv",
/// "endpoint", "sources": {"provider", "base_url", "api_key_env", "render_model",
/// "compile_model"}, "liveKeyPresent", "offlineForced", "systemPrompt": {"source", "ok"}, "sandbox": {"mode",
/// "dockerAvailable"?}, "stateDir": {"path", "exists", "writable"}, "writer": {"pid",
/// "daemon", "url"?}|null, "ir": {"freshness": "fresh"|"stale"|"absent"|"no-contracts"|
/// "invalid"|"unknown", "reason"?, "contracts", "nodes"?, "edges"?}, "notes": [...],
/// "live"?: {"ran", "ok", "detail"}, "healthyForOffline", "healthyForLive",
/// "reactors"?: [{"reactor", "stateDir", "writer", "ir"}]}` (`provider`, `transport`,
/// `baseUrl`, `apiKeyEnv`, `endpoint` and `sources` are `null` when the configuration is
/// invalid; `stateDir`,
/// `writer` and `ir` describe the first reactor; `reactors` only with several).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DoctorReport {
    /// The package version.
    pub version: &'static str,
    /// `reactor.yml`.
    pub config: ConfigHealth,
    /// The provider label.
    pub provider: Option<String>,
    /// `chat-completions` or `messages`.
    pub transport: Option<&'static str>,
    /// The endpoint.
    pub base_url: Option<String>,
    /// The key variable.
    pub api_key_env: Option<String>,
    /// The URL requests go to (`<base_url>[/v1]<path>`).
    pub endpoint: Option<String>,
    /// Where each model value came from.
    pub sources: Option<ModelSources>,
    /// The key is set (never the key).
    pub(crate) live_key_present: bool,
    /// Offline mode is forced.
    pub offline_forced: bool,
    /// The system prompt.
    pub system_prompt: PromptHealth,
    /// The sandbox.
    pub sandbox: SandboxHealth,
    /// The first reactor's state directory.
    pub state_dir: StateDirHealth,
    /// The first reactor's writer.
    pub writer: Option<WriterInfo>,
    /// The first reactor's compile cache.
    pub ir: IrHealth,
    /// Notes.
    pub notes: Vec<Note>,
    /// The `--live` smoke request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<LiveSmoke>,
    /// Nothing is wrong for the offline verbs.
    pub(crate) healthy_for_offline: bool,
    /// A model-bearing verb could run.
    pub healthy_for_live: bool,
    /// Every reactor (listed only with several).
    #[serde(skip_serializing_if = "single")]
    pub reactors: Vec<ReactorHealth>,
    /// The `provider` line.
    #[serde(skip)]
    pub(crate) provider_text: String,
    /// The `live key` line.
    #[serde(skip)]
    pub(crate) key_text: String,
    /// The `offline mode` line.
    #[serde(skip)]
    pub(crate) offline_text: String,
    /// Every problem for the offline verbs (the first is shown).
    #[serde(skip)]
    pub problems: Vec<String>,
    /// What a model-bearing verb lacks.
    #[serde(skip)]
    pub missing: Vec<String>,
}

impl DoctorReport {
    /// The exit status: 0 when healthy for the offline verbs (and, with `--live`, the smoke
    /// request succeeded), else 1.
    pub fn exit_code(&self) -> u8 {
        u8::from(!(self.healthy_for_offline && self.live.as_ref().is_none_or(|l| l.ok)))
    }
}

impl VerbReport for DoctorReport {
    fn to_text(&self) -> String {
        const INVALID: &str = "unknown (configuration invalid)";
        let mut r = Report::new("doctor");
        r.field("version", format!("reactor {}", self.version))
            .field("config", &self.config.text)
            .field("provider", &self.provider_text)
            .field(
                "sources",
                self.sources
                    .map_or_else(|| INVALID.to_string(), |s| s.0.describe()),
            )
            .field("live key", &self.key_text)
            .field("offline mode", &self.offline_text)
            .field("system prompt", &self.system_prompt.text)
            .field("sandbox", &self.sandbox.text);
        if self.reactors.is_empty() {
            r.field("state dir", INVALID)
                .field("writer", INVALID)
                .field("compiled IR", INVALID);
        }
        for h in &self.reactors {
            if self.reactors.len() > 1 {
                r.field("reactor", &h.reactor);
            }
            r.field(
                "state dir",
                format!(
                    "{} {}",
                    h.state_dir.path.as_deref().unwrap_or(""),
                    h.state_dir.text
                ),
            )
            .field("writer", writer_line(h.writer.as_ref()))
            .field("compiled IR", &h.ir.text);
        }
        for n in &self.notes {
            r.field(n.label, &n.text);
        }
        if let Some(l) = &self.live {
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
            match self.problems.first() {
                None => "status: healthy-for-offline".to_string(),
                Some(p) => format!("status: UNHEALTHY — {p}"),
            },
        );
        r.line(
            2,
            if self.healthy_for_live {
                "live:   ready".to_string()
            } else {
                format!("live:   not ready — {}", self.missing.join("; "))
            },
        );
        r.finish()
    }
}
