//! The `model:`, `sandbox:`, `state:` and `telemetry:` sections (HOST.md §4.2).

use std::path::PathBuf;
use std::time::Duration;

use super::error::{ConfigFileError, invalid};
use super::read::{
    Mapping, integer_in, is_env_var_name, is_provider_label, non_empty_string, number,
    parse_duration, string, url_value,
};
use super::{
    DEFAULT_MAX_TURNS, DEFAULT_PARALLEL_RENDERS, DEFAULT_SANDBOX_IMAGE, DEFAULT_SANDBOX_NETWORK,
    DEFAULT_SHELL_TIMEOUT_MS, MAX_TURNS_RANGE, MIN_SHELL_TIMEOUT_MS, PARALLEL_RENDERS_RANGE,
};
use crate::host::yaml::{Pos, YamlNode, clip};
use crate::model::config::{ConfigError as ProviderError, ProviderConfig, ProviderSettings};

const MODEL_KEYS: &[&str] = &[
    "provider",
    "render_model",
    "compile_model",
    "temperature",
    "reasoning_effort",
    "max_turns",
    "base_url",
    "api_key_env",
    "max_tokens",
    "timeout",
    "connect_timeout",
    "parallel_renders",
];

/// Bounds of `model.max_tokens`.
pub(crate) const MAX_TOKENS_RANGE: (u32, u32) = (1, 1_048_576);
/// Longest `model.timeout` / `model.connect_timeout` (24 h).
pub(crate) const MAX_MODEL_TIMEOUT: Duration = Duration::from_secs(24 * 3600);
const SANDBOX_KEYS: &[&str] = &["mode", "image", "network", "shell_timeout_ms"];

/// `sandbox.mode` (HOST.md §4.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SandboxMode {
    /// Renders get no command execution.
    #[default]
    None,
    /// `shell_exec` in a disposable Docker container.
    Docker,
    /// `shell_exec` directly on the host, without isolation.
    UnixLocal,
}

impl SandboxMode {
    /// The `reactor.yml` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::None => "none",
            SandboxMode::Docker => "docker",
            SandboxMode::UnixLocal => "unix-local",
        }
    }
}

/// `state:`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StateSection {
    /// `state.dir`, resolved against the project directory; `None` when not set.
    pub dir: Option<PathBuf>,
}

/// `model:` — the plain values; the provider table is applied by
/// [`ProviderConfig::resolve`] (see [`ModelSection::provider_settings`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ModelSection {
    /// `model.provider`, lower-cased; `None` when not set (`openrouter`).
    pub provider: Option<String>,
    /// `model.render_model`.
    pub render_model: Option<String>,
    /// `model.compile_model`.
    pub compile_model: Option<String>,
    /// `model.temperature`: `0 ≤ t ≤ 2` (`≤ 1` for `anthropic`); `None` = omitted from requests.
    pub temperature: Option<f64>,
    /// `model.reasoning_effort`, sent verbatim on Chat Completions.
    pub reasoning_effort: Option<String>,
    /// `model.max_turns`: the render turn cap, `1..=10000` (default 200).
    pub max_turns: u32,
    /// `model.base_url`: an `http`/`https` URL overriding the provider's endpoint.
    pub base_url: Option<String>,
    /// `model.api_key_env`: the key variable overriding the provider's.
    pub api_key_env: Option<String>,
    /// `model.max_tokens`: the output budget of every request (`1..=1048576`); unset: 16384 on
    /// Anthropic Messages, not sent on Chat Completions.
    pub max_tokens: Option<u32>,
    /// `model.timeout`: the whole-exchange timeout of one provider attempt (default 300 s).
    pub timeout: Option<Duration>,
    /// `model.connect_timeout`: the connect timeout of one provider attempt (default 10 s).
    pub connect_timeout: Option<Duration>,
    /// Where the `model:` mapping is (for errors about a key it lacks); `None` without one.
    pub(crate) pos: Option<Pos>,
    /// Where `model.provider` is, when set.
    pub(crate) provider_pos: Option<Pos>,
    /// `model.parallel_renders`: renders a drain runs at once, `1..=64` (default 4; 1 renders
    /// one node after another). Receipts commit in the same order whatever the value.
    pub parallel_renders: usize,
}

impl Default for ModelSection {
    fn default() -> Self {
        ModelSection {
            provider: None,
            render_model: None,
            compile_model: None,
            temperature: None,
            reasoning_effort: None,
            max_turns: DEFAULT_MAX_TURNS,
            base_url: None,
            api_key_env: None,
            max_tokens: None,
            timeout: None,
            connect_timeout: None,
            pos: None,
            provider_pos: None,
            parallel_renders: DEFAULT_PARALLEL_RENDERS,
        }
    }
}

impl ModelSection {
    /// The provider label (`openrouter` when not set).
    pub(crate) fn provider_label(&self) -> &str {
        self.provider
            .as_deref()
            .unwrap_or(crate::model::config::DEFAULT_PROVIDER)
    }

    /// The values handed to [`ProviderConfig::resolve`].
    pub(crate) fn provider_settings(&self) -> ProviderSettings {
        ProviderSettings {
            provider: self.provider.clone(),
            base_url: self.base_url.clone(),
            api_key_env: self.api_key_env.clone(),
            render_model: self.render_model.clone(),
            compile_model: self.compile_model.clone(),
            temperature: self.temperature,
            reasoning_effort: self.reasoning_effort.clone(),
            max_tokens: self.max_tokens,
            env: Default::default(),
        }
    }

    /// Where a missing `model.<key>` belongs: `reactor.yml:<line>:<col>` of `model.provider`
    /// (which made the key required), else of the `model:` mapping, else the bare file name.
    pub fn location(&self) -> String {
        match self.provider_pos.or(self.pos) {
            Some(p) => format!("{}:{}:{}", super::CONFIG_FILE, p.line, p.column),
            None => super::CONFIG_FILE.to_string(),
        }
    }
}

/// `sandbox:`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SandboxSection {
    /// `sandbox.mode` (default `none`).
    pub mode: SandboxMode,
    /// `sandbox.image` (docker mode).
    pub image: String,
    /// `sandbox.network`: Docker's `--network` value (docker mode).
    pub network: String,
    /// `sandbox.shell_timeout_ms`: per-command timeout of `shell_exec`, ≥ 1000.
    pub(crate) shell_timeout_ms: u64,
}

impl Default for SandboxSection {
    fn default() -> Self {
        SandboxSection {
            mode: SandboxMode::None,
            image: DEFAULT_SANDBOX_IMAGE.to_string(),
            network: DEFAULT_SANDBOX_NETWORK.to_string(),
            shell_timeout_ms: DEFAULT_SHELL_TIMEOUT_MS,
        }
    }
}

/// `telemetry:` — accepted for compatibility, type-checked and ignored (no telemetry is sent).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TelemetrySection {
    /// `telemetry.enabled`.
    pub enabled: Option<bool>,
    /// `telemetry.endpoint`.
    pub endpoint: Option<String>,
}

pub(super) fn parse_model(node: &YamlNode) -> Result<ModelSection, ConfigFileError> {
    let m = Mapping::read(node, "model", MODEL_KEYS)?;
    let mut model = ModelSection::default();
    let opt_string = |key: &str| -> Result<Option<String>, ConfigFileError> {
        m.get(key)
            .map(|v| non_empty_string(v, &m.child(key)))
            .transpose()
    };
    model.pos = Some(m.pos);
    if let Some(v) = m.get("provider") {
        model.provider = Some(provider_label(v, &m.child("provider"))?);
        model.provider_pos = Some(v.pos);
    }
    model.render_model = opt_string("render_model")?;
    model.compile_model = opt_string("compile_model")?;
    model.reasoning_effort = opt_string("reasoning_effort")?;
    if let Some(v) = m.get("base_url") {
        model.base_url = Some(url_value(v, &m.child("base_url"))?);
    }
    if let Some(v) = m.get("api_key_env") {
        model.api_key_env = Some(key_variable(v, &m.child("api_key_env"))?);
    }
    if let Some(v) = m.get("max_turns") {
        let (lo, hi) = MAX_TURNS_RANGE;
        model.max_turns = integer_in(v, &m.child("max_turns"), lo as u64, hi as u64)? as u32;
    }
    if let Some(v) = m.get("parallel_renders") {
        let (lo, hi) = PARALLEL_RENDERS_RANGE;
        let path = m.child("parallel_renders");
        model.parallel_renders = integer_in(v, &path, lo as u64, hi as u64)? as usize;
    }
    if let Some(v) = m.get("temperature") {
        let label = model.provider_label().to_string();
        model.temperature = Some(temperature(v, &m.child("temperature"), &label)?);
    }
    if let Some(v) = m.get("max_tokens") {
        let (lo, hi) = MAX_TOKENS_RANGE;
        model.max_tokens =
            Some(integer_in(v, &m.child("max_tokens"), lo as u64, hi as u64)? as u32);
    }
    if let Some(v) = m.get("timeout") {
        model.timeout = Some(timeout(v, &m.child("timeout"))?);
    }
    if let Some(v) = m.get("connect_timeout") {
        model.connect_timeout = Some(timeout(v, &m.child("connect_timeout"))?);
    }
    check_provider_table(&m, &model)?;
    Ok(model)
}

/// `model.provider`: lower-cased, a built-in or custom label.
fn provider_label(v: &YamlNode, path: &str) -> Result<String, ConfigFileError> {
    let label = non_empty_string(v, path)?.trim().to_ascii_lowercase();
    if !is_provider_label(&label) {
        return Err(invalid(
            v.pos,
            path,
            format!(
                "invalid value '{}' (expected openrouter, openai, anthropic, google or a custom label matching [a-z0-9][a-z0-9._-]*)",
                clip(&label, 60)
            ),
        ));
    }
    Ok(label)
}

/// `model.api_key_env`: an environment variable name.
fn key_variable(v: &YamlNode, path: &str) -> Result<String, ConfigFileError> {
    let name = non_empty_string(v, path)?;
    if !is_env_var_name(&name) {
        return Err(invalid(
            v.pos,
            path,
            format!(
                "invalid value '{}' (expected an environment variable name matching [A-Za-z_][A-Za-z0-9_]*)",
                clip(&name, 60)
            ),
        ));
    }
    Ok(name)
}

/// `model.timeout` / `model.connect_timeout`: `<integer>` followed by `ms`, `s`, `m` or `h`,
/// above zero and at most 24 h.
fn timeout(v: &YamlNode, path: &str) -> Result<Duration, ConfigFileError> {
    match v.as_str().and_then(parse_duration) {
        Some(d) if !d.is_zero() && d <= MAX_MODEL_TIMEOUT => Ok(d),
        _ => {
            const EXPECTED: &str = "a duration above zero and at most 24h: an integer followed by ms, s, m or h, such as 30s or 5m";
            let problem = match v.as_str() {
                Some(s) => format!("invalid value '{}' (expected {EXPECTED})", clip(s, 40)),
                None => format!("expected {EXPECTED}, got {}", v.describe()),
            };
            Err(invalid(v.pos, path, problem))
        }
    }
}

/// `model.temperature`: `0 ≤ t ≤ 2`, or `≤ 1` for `anthropic`.
fn temperature(v: &YamlNode, path: &str, label: &str) -> Result<f64, ConfigFileError> {
    let t = number(v, path)?;
    let max = if label == "anthropic" { 1.0 } else { 2.0 };
    if !(0.0..=max).contains(&t) {
        let for_provider = if label == "anthropic" {
            " for provider 'anthropic'"
        } else {
            ""
        };
        return Err(invalid(
            v.pos,
            path,
            format!(
                "invalid value {} (expected a number from 0 to {}{for_provider})",
                crate::format::json::number_to_string(t),
                crate::format::json::number_to_string(max)
            ),
        ));
    }
    Ok(t)
}

/// The provider table's rules (a custom label needs `base_url` and `api_key_env`), reported at
/// the key they concern.
fn check_provider_table(m: &Mapping<'_>, model: &ModelSection) -> Result<(), ConfigFileError> {
    let Err(e) = ProviderConfig::resolve(&model.provider_settings()) else {
        return Ok(());
    };
    let (key, problem) = match &e {
        ProviderError::UnknownProvider(p) => (
            "provider",
            format!(
                "unknown provider '{p}'; use openrouter, openai, anthropic or google, or set both model.base_url and model.api_key_env"
            ),
        ),
        ProviderError::BadBaseUrl(u) => (
            "base_url",
            format!(
                "invalid value '{}' (expected an http:// or https:// URL)",
                clip(u, 80)
            ),
        ),
        ProviderError::BadKeyVariable(v) => (
            "api_key_env",
            format!(
                "invalid value '{}' (expected an environment variable name)",
                clip(v, 60)
            ),
        ),
        other => ("provider", other.to_string()),
    };
    let pos = m.get(key).map(|n| n.pos).unwrap_or(m.pos);
    Err(invalid(pos, &m.child(key), problem))
}

pub(super) fn parse_sandbox(node: &YamlNode) -> Result<SandboxSection, ConfigFileError> {
    let m = Mapping::read(node, "sandbox", SANDBOX_KEYS)?;
    let mut s = SandboxSection::default();
    if let Some(v) = m.get("mode") {
        let path = m.child("mode");
        let text = string(v, &path).map_err(|_| {
            invalid(
                v.pos,
                &path,
                format!("expected none, docker or unix-local, got {}", v.describe()),
            )
        })?;
        s.mode = match text.as_str() {
            "none" => SandboxMode::None,
            "docker" => SandboxMode::Docker,
            "unix-local" => SandboxMode::UnixLocal,
            other => {
                return Err(invalid(
                    v.pos,
                    &path,
                    format!(
                        "invalid value '{}' (expected none, docker or unix-local)",
                        clip(other, 60)
                    ),
                ));
            }
        };
    }
    if let Some(v) = m.get("image") {
        s.image = non_empty_string(v, &m.child("image"))?;
    }
    if let Some(v) = m.get("network") {
        s.network = non_empty_string(v, &m.child("network"))?;
    }
    if let Some(v) = m.get("shell_timeout_ms") {
        s.shell_timeout_ms = integer_in(
            v,
            &m.child("shell_timeout_ms"),
            MIN_SHELL_TIMEOUT_MS,
            u64::MAX,
        )?;
    }
    Ok(s)
}
