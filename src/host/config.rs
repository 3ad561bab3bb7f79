//! `reactor.yml` (HOST.md §4): the typed configuration, its validation, and the conversion of
//! connector items to JSON.
//!
//! The text is parsed by `serde-saphyr` (YAML 1.2 core schema, `strict_booleans`) into a tree of
//! located nodes ([`crate::host::yaml`]); this module maps that tree onto the typed structures
//! below, key by key. Unknown keys, wrong types and out-of-range values are errors that name the
//! file position and the full key path, with the expected set:
//!
//! ```text
//! reactor.yml:7:3: model.temprature: unknown key (expected one of: provider, render_model, compile_model, temperature, reasoning_effort, max_turns, base_url, api_key_env)
//! reactor.yml:14:9: sandbox.mode: invalid value 'dokcer' (expected none, docker or unix-local)
//! ```
//!
//! `null` (or an empty value) counts as "not set" for optional keys. Relative paths are resolved
//! against the project directory (lexically; nothing is created or required to exist).

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use crate::format::json::Value;
use crate::host::yaml::{self, Pos, YamlNode, YamlValue, clip};
use crate::model::config::{ConfigError as ProviderError, ProviderConfig, ProviderSettings};

/// The configuration file name inside the project directory.
pub const CONFIG_FILE: &str = "reactor.yml";
/// Default `state.dir`, relative to the project directory.
pub const DEFAULT_STATE_DIR: &str = ".reactor";
/// Default `model.max_turns`.
pub const DEFAULT_MAX_TURNS: u32 = 200;
/// Bounds of `model.max_turns`.
pub const MAX_TURNS_RANGE: (u32, u32) = (1, 10_000);
/// Default `sandbox.image`.
pub const DEFAULT_SANDBOX_IMAGE: &str = "node:22-bookworm-slim";
/// Default `sandbox.network`.
pub const DEFAULT_SANDBOX_NETWORK: &str = "none";
/// Default `sandbox.shell_timeout_ms`.
pub const DEFAULT_SHELL_TIMEOUT_MS: u64 = 300_000;
/// Smallest `sandbox.shell_timeout_ms`.
pub const MIN_SHELL_TIMEOUT_MS: u64 = 1_000;
/// Default `connector.id_field`.
pub const DEFAULT_ID_FIELD: &str = "id";
/// Route names a reactor may not be called (HOST.md §4.4, §10.2).
pub const RESERVED_REACTOR_NAMES: [&str; 7] = [
    "health", "status", "cost", "topology", "receipts", "nodes", "trigger",
];
/// The built-in provider labels (HOST.md §5.1).
pub const BUILTIN_PROVIDERS: [&str; 4] = ["openrouter", "openai", "anthropic", "google"];

const ROOT_KEYS: &[&str] = &[
    "state",
    "model",
    "sandbox",
    "gateways",
    "reactors",
    "telemetry",
];
const STATE_KEYS: &[&str] = &["dir"];
const MODEL_KEYS: &[&str] = &[
    "provider",
    "render_model",
    "compile_model",
    "temperature",
    "reasoning_effort",
    "max_turns",
    "base_url",
    "api_key_env",
];
const SANDBOX_KEYS: &[&str] = &["mode", "image", "network", "shell_timeout_ms"];
const GATEWAY_KEYS: &[&str] = &["node", "source_id", "poll", "connector"];
const REACTOR_KEYS: &[&str] = &["name", "project", "state_dir", "gateways"];
const TELEMETRY_KEYS: &[&str] = &["enabled", "endpoint"];
const CONNECTOR_TYPES: &[&str] = &["static", "file", "http"];

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

impl ConfigFileError {
    /// The key path of an [`ConfigFileError::Invalid`] error (empty otherwise).
    pub fn key_path(&self) -> &str {
        match self {
            ConfigFileError::Invalid { path, .. } => path,
            _ => "",
        }
    }
}

fn invalid(pos: Pos, path: &str, problem: impl Into<String>) -> ConfigFileError {
    ConfigFileError::Invalid {
        line: pos.line,
        column: pos.column,
        path: path.to_string(),
        problem: problem.into(),
    }
}

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
        }
    }
}

impl ModelSection {
    /// The provider label (`openrouter` when not set).
    pub fn provider_label(&self) -> &str {
        self.provider
            .as_deref()
            .unwrap_or(crate::model::config::DEFAULT_PROVIDER)
    }

    /// The values handed to [`ProviderConfig::resolve`].
    pub fn provider_settings(&self) -> ProviderSettings {
        ProviderSettings {
            provider: self.provider.clone(),
            base_url: self.base_url.clone(),
            api_key_env: self.api_key_env.clone(),
            render_model: self.render_model.clone(),
            compile_model: self.compile_model.clone(),
            temperature: self.temperature,
            reasoning_effort: self.reasoning_effort.clone(),
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
    pub shell_timeout_ms: u64,
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

/// The kind-specific part of a connector (HOST.md §4.3; RUNTIME.md §9.4).
#[derive(Clone, Debug, PartialEq)]
pub enum ConnectorKind {
    /// `type: static`: a fixed list of items.
    Static {
        /// The items as JSON values, in file order.
        items: Vec<Value>,
    },
    /// `type: file`: a directory of `*.json` files.
    File {
        /// The directory, resolved against the project directory.
        dir: PathBuf,
    },
    /// `type: http`: a URL polled for a JSON array.
    Http {
        /// The URL; `{as_of}` and `{cursor}` are replaced at poll time.
        url: String,
        /// Request headers in file order; a value `${NAME}` is replaced by the environment
        /// variable `NAME` at poll time.
        headers: Vec<(String, String)>,
    },
}

impl ConnectorKind {
    /// `static`, `file` or `http`.
    pub fn type_name(&self) -> &'static str {
        match self {
            ConnectorKind::Static { .. } => "static",
            ConnectorKind::File { .. } => "file",
            ConnectorKind::Http { .. } => "http",
        }
    }
}

/// `gateways[].connector`.
#[derive(Clone, Debug, PartialEq)]
pub struct ConnectorConfig {
    /// `connector.id_field`: the member carrying each item's arrival id (default `id`).
    pub id_field: String,
    /// The kind-specific settings.
    pub kind: ConnectorKind,
}

/// Connect timeout of an `http` connector (10 s).
pub const HTTP_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Whole-request timeout of an `http` connector (60 s).
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(60);

impl ConnectorConfig {
    /// The runtime connector ([`crate::host::connectors::Connector`]); `http` connectors get
    /// [`HTTP_CONNECT_TIMEOUT`] and [`HTTP_TIMEOUT`].
    pub fn to_connector(&self) -> crate::host::connectors::Connector {
        use crate::host::connectors::{Connector, ConnectorKind as Fetch};
        let kind = match &self.kind {
            ConnectorKind::Static { items } => Fetch::Static {
                items: items.clone(),
            },
            ConnectorKind::File { dir } => Fetch::File { dir: dir.clone() },
            ConnectorKind::Http { url, headers } => Fetch::Http {
                url: url.clone(),
                headers: headers.clone(),
                connect_timeout: HTTP_CONNECT_TIMEOUT,
                timeout: HTTP_TIMEOUT,
            },
        };
        Connector {
            kind,
            id_field: self.id_field.clone(),
        }
    }
}

/// One `gateways[]` entry: a connector attached to a gateway node.
#[derive(Clone, Debug, PartialEq)]
pub struct GatewayConfig {
    /// The entry's key path (`gateways[0]`, `reactors[1].gateways[0]`), for boot-time errors
    /// such as `gateways[0].node: 'x' is not an entry point of the compiled topology`.
    pub path: String,
    /// Position of the entry in `reactor.yml`.
    pub pos: Pos,
    /// `node`: the gateway node (checked against the compiled entry points at boot).
    pub node: String,
    /// `source_id` (default `node`): the cursor namespace, unique within the reactor.
    pub source_id: String,
    /// `poll`: minimum interval between polls; `None` = every tick.
    pub poll: Option<Duration>,
    /// `connector`.
    pub connector: ConnectorConfig,
}

impl GatewayConfig {
    /// The daemon's gateway ([`crate::host::hosted::GatewaySpec`]).
    pub fn to_spec(&self) -> crate::host::hosted::GatewaySpec {
        crate::host::hosted::GatewaySpec {
            node: self.node.clone(),
            source_id: self.source_id.clone(),
            poll: self.poll,
            connector: self.connector.to_connector(),
        }
    }
}

/// One `reactors[]` entry as written (paths resolved, defaults for `name` applied; the state
/// directory default depends on `--state-dir` and is applied by
/// [`crate::host::project::Project::load`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ReactorEntry {
    /// 0-based index in the list.
    pub index: usize,
    /// Position of the entry.
    pub pos: Pos,
    /// `name` (default `reactor-<index>`).
    pub name: String,
    /// `project`: the contracts directory (default: the project directory).
    pub project: PathBuf,
    /// `state_dir` when set.
    pub state_dir: Option<PathBuf>,
    /// Position of `state_dir` when set.
    pub state_dir_pos: Option<Pos>,
    /// `gateways`.
    pub gateways: Vec<GatewayConfig>,
}

/// The whole of `reactor.yml` (HOST.md §4.2–§4.4). `Default` is an absent file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReactorConfig {
    /// `state:`.
    pub state: StateSection,
    /// `model:`.
    pub model: ModelSection,
    /// `sandbox:`.
    pub sandbox: SandboxSection,
    /// `gateways:` of the single reactor (empty with a `reactors:` list).
    pub gateways: Vec<GatewayConfig>,
    /// `reactors:` when present (never empty).
    pub reactors: Option<Vec<ReactorEntry>>,
    /// `telemetry:` when present (ignored).
    pub telemetry: Option<TelemetrySection>,
}

impl ReactorConfig {
    /// Reads `<project_dir>/reactor.yml`: `Ok(None)` when the file is absent.
    pub fn load(project_dir: &Path) -> Result<Option<ReactorConfig>, ConfigFileError> {
        let path = project_dir.join(CONFIG_FILE);
        let read_err = |detail: String| ConfigFileError::Read {
            path: path.clone(),
            detail,
        };
        let meta = match std::fs::metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(read_err(e.to_string())),
        };
        if meta.is_dir() {
            return Err(read_err("is a directory".into()));
        }
        if meta.len() > yaml::MAX_YAML_BYTES as u64 {
            return Err(read_err(format!(
                "larger than {} KiB",
                yaml::MAX_YAML_BYTES / 1024
            )));
        }
        let bytes = std::fs::read(&path).map_err(|e| read_err(e.to_string()))?;
        let text = String::from_utf8(bytes).map_err(|_| read_err("not UTF-8 text".into()))?;
        ReactorConfig::parse(&text, project_dir).map(Some)
    }

    /// Parses and validates `reactor.yml` text. Relative paths are resolved against
    /// `project_dir`.
    pub fn parse(text: &str, project_dir: &Path) -> Result<ReactorConfig, ConfigFileError> {
        let root = yaml::parse_document(text).map_err(|e| ConfigFileError::Yaml {
            line: e.line,
            column: e.column,
            message: e.message,
        })?;
        let mut cfg = ReactorConfig::default();
        if root.is_null() {
            return Ok(cfg);
        }
        if !matches!(root.value, YamlValue::Map(_)) {
            return Err(invalid(
                root.pos,
                "",
                format!(
                    "expected a mapping of settings at the top level, got {}",
                    root.describe()
                ),
            ));
        }
        let top = Mapping::read(&root, "", ROOT_KEYS)?;
        if let Some(n) = top.get("state") {
            let m = Mapping::read(n, "state", STATE_KEYS)?;
            if let Some(d) = m.get("dir") {
                cfg.state.dir = Some(path_value(d, &m.child("dir"), project_dir)?);
            }
        }
        if let Some(n) = top.get("model") {
            cfg.model = parse_model(n)?;
        }
        if let Some(n) = top.get("sandbox") {
            cfg.sandbox = parse_sandbox(n)?;
        }
        if let Some(n) = top.get("telemetry") {
            let m = Mapping::read(n, "telemetry", TELEMETRY_KEYS)?;
            cfg.telemetry = Some(TelemetrySection {
                enabled: m
                    .get("enabled")
                    .map(|v| boolean(v, &m.child("enabled")))
                    .transpose()?,
                endpoint: m
                    .get("endpoint")
                    .map(|v| string(v, &m.child("endpoint")))
                    .transpose()?,
            });
        }
        let reactors_node = top.get("reactors");
        if let Some(n) = top.get("gateways") {
            if reactors_node.is_some() {
                return Err(invalid(
                    top.key_pos("gateways"),
                    "gateways",
                    "not allowed together with reactors (give each reactor its own gateways)",
                ));
            }
            cfg.gateways = parse_gateways(n, "gateways", project_dir)?;
        }
        if let Some(n) = reactors_node {
            cfg.reactors = Some(parse_reactors(n, project_dir)?);
        }
        Ok(cfg)
    }
}

/// A mapping whose keys were checked against the allowed set.
struct Mapping<'a> {
    path: String,
    pos: Pos,
    entries: Vec<(&'a str, &'a YamlNode, &'a YamlNode)>,
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

impl<'a> Mapping<'a> {
    /// Reads a mapping (`null` is an empty one), refusing non-string and unknown keys.
    fn read(
        node: &'a YamlNode,
        path: &str,
        allowed: &[&str],
    ) -> Result<Mapping<'a>, ConfigFileError> {
        let mut m = Mapping {
            path: path.to_string(),
            pos: node.pos,
            entries: Vec::new(),
        };
        let entries = match &node.value {
            YamlValue::Null => return Ok(m),
            YamlValue::Map(e) => e,
            _ => {
                return Err(invalid(
                    node.pos,
                    path,
                    format!("expected a mapping, got {}", node.describe()),
                ));
            }
        };
        for (k, v) in entries {
            let Some(key) = k.as_str() else {
                return Err(invalid(
                    k.pos,
                    path,
                    format!("keys must be strings, got {}", k.describe()),
                ));
            };
            if !allowed.contains(&key) {
                return Err(invalid(
                    k.pos,
                    &join(path, &clip(key, 60)),
                    format!("unknown key (expected one of: {})", allowed.join(", ")),
                ));
            }
            m.entries.push((key, k, v));
        }
        Ok(m)
    }

    /// The value of `key`, unless absent or `null`.
    fn get(&self, key: &str) -> Option<&'a YamlNode> {
        self.entries
            .iter()
            .find(|(k, _, _)| *k == key)
            .map(|(_, _, v)| *v)
            .filter(|v| !v.is_null())
    }

    /// Where `key` is written (the mapping's position when absent).
    fn key_pos(&self, key: &str) -> Pos {
        self.entries
            .iter()
            .find(|(k, _, _)| *k == key)
            .map(|(_, k, _)| k.pos)
            .unwrap_or(self.pos)
    }

    fn child(&self, key: &str) -> String {
        join(&self.path, key)
    }

    fn required(&self, key: &str, expected: &str) -> Result<&'a YamlNode, ConfigFileError> {
        self.get(key).ok_or_else(|| {
            invalid(
                self.key_pos(key),
                &self.child(key),
                format!("required key missing (expected {expected})"),
            )
        })
    }
}

fn string(node: &YamlNode, path: &str) -> Result<String, ConfigFileError> {
    match &node.value {
        YamlValue::Str(s) => {
            if s.chars().any(|c| c == '\u{0}') {
                return Err(invalid(
                    node.pos,
                    path,
                    "the string contains a NUL character",
                ));
            }
            Ok(s.clone())
        }
        _ => Err(invalid(
            node.pos,
            path,
            format!("expected a string, got {}", node.describe()),
        )),
    }
}

fn non_empty_string(node: &YamlNode, path: &str) -> Result<String, ConfigFileError> {
    let s = string(node, path)?;
    if s.trim().is_empty() {
        return Err(invalid(node.pos, path, "expected a non-empty string"));
    }
    if s.chars().any(|c| c.is_control()) {
        return Err(invalid(
            node.pos,
            path,
            format!(
                "invalid value '{}' (control characters are not allowed)",
                clip(&s, 60)
            ),
        ));
    }
    Ok(s)
}

fn boolean(node: &YamlNode, path: &str) -> Result<bool, ConfigFileError> {
    match node.value {
        YamlValue::Bool(b) => Ok(b),
        _ => Err(invalid(
            node.pos,
            path,
            format!("expected true or false, got {}", node.describe()),
        )),
    }
}

fn number(node: &YamlNode, path: &str) -> Result<f64, ConfigFileError> {
    match node.value {
        YamlValue::UInt(n) => Ok(n as f64),
        YamlValue::Int(n) => Ok(n as f64),
        YamlValue::Float(f) => Ok(f),
        _ => Err(invalid(
            node.pos,
            path,
            format!("expected a number, got {}", node.describe()),
        )),
    }
}

/// An integer in `lo..=hi` (an integral float is accepted).
fn integer_in(node: &YamlNode, path: &str, lo: u64, hi: u64) -> Result<u64, ConfigFileError> {
    let range = || {
        if hi == u64::MAX {
            format!("an integer of at least {lo}")
        } else {
            format!("an integer from {lo} to {hi}")
        }
    };
    let n: Option<i128> = match node.value {
        YamlValue::UInt(n) => Some(n as i128),
        YamlValue::Int(n) => Some(n as i128),
        YamlValue::Float(f) if f.fract() == 0.0 && f.abs() < 1e19 => Some(f as i128),
        _ => None,
    };
    match n {
        None => Err(invalid(
            node.pos,
            path,
            format!("expected {}, got {}", range(), node.describe()),
        )),
        Some(n) if n < lo as i128 || n > hi as i128 => Err(invalid(
            node.pos,
            path,
            format!("invalid value {n} (expected {})", range()),
        )),
        Some(n) => Ok(n as u64),
    }
}

/// Lexically normalizes a path: drops `.` segments and resolves `..` against earlier segments.
pub fn clean_path(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                let popped =
                    matches!(out.components().next_back(), Some(Component::Normal(_))) && out.pop();
                if !popped && !out.has_root() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// `p` resolved against `base` when relative, then normalized.
pub fn resolve_path(base: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() {
        clean_path(p)
    } else {
        clean_path(&base.join(p))
    }
}

fn path_value(node: &YamlNode, path: &str, project_dir: &Path) -> Result<PathBuf, ConfigFileError> {
    let s = non_empty_string(node, path)?;
    Ok(resolve_path(project_dir, Path::new(&s)))
}

/// True for `[A-Za-z_][A-Za-z0-9_]*` (an environment variable name).
pub fn is_env_var_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// True for an `http://` or `https://` URL with a host and no whitespace or control characters.
pub fn is_http_url(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    let Some(rest) = lower
        .strip_prefix("http://")
        .or_else(|| lower.strip_prefix("https://"))
    else {
        return false;
    };
    let host_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..host_end];
    !authority.is_empty()
        && !authority.starts_with(':')
        && !authority.starts_with('@')
        && !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

fn url_value(node: &YamlNode, path: &str) -> Result<String, ConfigFileError> {
    let s = non_empty_string(node, path)?;
    if !is_http_url(&s) {
        return Err(invalid(
            node.pos,
            path,
            format!(
                "invalid value '{}' (expected an http:// or https:// URL)",
                clip(&s, 80)
            ),
        ));
    }
    Ok(s)
}

/// True for a provider label: `[a-z0-9][a-z0-9._-]*`.
pub fn is_provider_label(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c))
}

/// True for a reactor name: `[A-Za-z0-9][A-Za-z0-9._-]*`.
pub fn is_reactor_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

/// Parses a `poll` duration: `<integer>` followed by `ms`, `s`, `m` or `h` (`30s`, `5m`).
/// `None` for anything else (including overflow).
pub fn parse_duration(s: &str) -> Option<Duration> {
    let digits = s.find(|c: char| !c.is_ascii_digit())?;
    if digits == 0 {
        return None;
    }
    let n: u64 = s[..digits].parse().ok()?;
    let ms_per = match &s[digits..] {
        "ms" => 1u64,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return None,
    };
    n.checked_mul(ms_per).map(Duration::from_millis)
}

fn parse_model(node: &YamlNode) -> Result<ModelSection, ConfigFileError> {
    let m = Mapping::read(node, "model", MODEL_KEYS)?;
    let mut model = ModelSection::default();
    let opt_string = |key: &str| -> Result<Option<String>, ConfigFileError> {
        m.get(key)
            .map(|v| non_empty_string(v, &m.child(key)))
            .transpose()
    };
    if let Some(v) = m.get("provider") {
        let path = m.child("provider");
        let label = non_empty_string(v, &path)?.trim().to_ascii_lowercase();
        if !is_provider_label(&label) {
            return Err(invalid(
                v.pos,
                &path,
                format!(
                    "invalid value '{}' (expected openrouter, openai, anthropic, google or a custom label matching [a-z0-9][a-z0-9._-]*)",
                    clip(&label, 60)
                ),
            ));
        }
        model.provider = Some(label);
    }
    model.render_model = opt_string("render_model")?;
    model.compile_model = opt_string("compile_model")?;
    model.reasoning_effort = opt_string("reasoning_effort")?;
    if let Some(v) = m.get("base_url") {
        model.base_url = Some(url_value(v, &m.child("base_url"))?);
    }
    if let Some(v) = m.get("api_key_env") {
        let path = m.child("api_key_env");
        let name = non_empty_string(v, &path)?;
        if !is_env_var_name(&name) {
            return Err(invalid(
                v.pos,
                &path,
                format!(
                    "invalid value '{}' (expected an environment variable name matching [A-Za-z_][A-Za-z0-9_]*)",
                    clip(&name, 60)
                ),
            ));
        }
        model.api_key_env = Some(name);
    }
    if let Some(v) = m.get("max_turns") {
        let (lo, hi) = MAX_TURNS_RANGE;
        model.max_turns = integer_in(v, &m.child("max_turns"), lo as u64, hi as u64)? as u32;
    }
    let label = model.provider_label().to_string();
    if let Some(v) = m.get("temperature") {
        let path = m.child("temperature");
        let t = number(v, &path)?;
        let max = if label == "anthropic" { 1.0 } else { 2.0 };
        if !(0.0..=max).contains(&t) {
            let for_provider = if label == "anthropic" {
                " for provider 'anthropic'"
            } else {
                ""
            };
            return Err(invalid(
                v.pos,
                &path,
                format!(
                    "invalid value {} (expected a number from 0 to {}{for_provider})",
                    crate::format::json::number_to_string(t),
                    crate::format::json::number_to_string(max)
                ),
            ));
        }
        model.temperature = Some(t);
    }
    // The provider table's rules (a custom label needs base_url and api_key_env).
    if let Err(e) = ProviderConfig::resolve(&model.provider_settings()) {
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
        return Err(invalid(pos, &m.child(key), problem));
    }
    Ok(model)
}

fn parse_sandbox(node: &YamlNode) -> Result<SandboxSection, ConfigFileError> {
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

fn list<'a>(node: &'a YamlNode, path: &str) -> Result<&'a [YamlNode], ConfigFileError> {
    match &node.value {
        YamlValue::Null => Ok(&[]),
        YamlValue::Seq(items) => Ok(items),
        _ => Err(invalid(
            node.pos,
            path,
            format!("expected a list, got {}", node.describe()),
        )),
    }
}

fn parse_gateways(
    node: &YamlNode,
    path: &str,
    project_dir: &Path,
) -> Result<Vec<GatewayConfig>, ConfigFileError> {
    let mut out: Vec<GatewayConfig> = Vec::new();
    for (i, item) in list(node, path)?.iter().enumerate() {
        let gpath = format!("{path}[{i}]");
        let m = Mapping::read(item, &gpath, GATEWAY_KEYS)?;
        let node_id = non_empty_string(m.required("node", "a gateway node id")?, &m.child("node"))?;
        let source_id = match m.get("source_id") {
            Some(v) => non_empty_string(v, &m.child("source_id"))?,
            None => node_id.clone(),
        };
        if let Some(prev) = out.iter().find(|g| g.source_id == source_id) {
            let pos = m.get("source_id").map(|v| v.pos).unwrap_or(m.pos);
            return Err(invalid(
                pos,
                &m.child("source_id"),
                format!(
                    "duplicate source_id '{}' (already used by {})",
                    clip(&source_id, 60),
                    prev.path
                ),
            ));
        }
        let poll = match m.get("poll") {
            None => None,
            Some(v) => {
                let ppath = m.child("poll");
                let d = v.as_str().and_then(parse_duration);
                match d {
                    Some(d) => Some(d),
                    None => {
                        let shown = match v.as_str() {
                            Some(s) => format!("'{}'", clip(s, 40)),
                            None => v.describe(),
                        };
                        return Err(invalid(
                            v.pos,
                            &ppath,
                            format!(
                                "invalid value {shown} (expected an integer followed by ms, s, m or h, such as 30s or 5m)"
                            ),
                        ));
                    }
                }
            }
        };
        let cnode = m.required("connector", "a mapping with a type")?;
        let connector = parse_connector(cnode, &m.child("connector"), project_dir)?;
        out.push(GatewayConfig {
            path: gpath,
            pos: item.pos,
            node: node_id,
            source_id,
            poll,
            connector,
        });
    }
    Ok(out)
}

fn parse_connector(
    node: &YamlNode,
    path: &str,
    project_dir: &Path,
) -> Result<ConnectorConfig, ConfigFileError> {
    // The type decides which keys are allowed, so read it first.
    let type_node = match &node.value {
        YamlValue::Map(entries) => entries
            .iter()
            .find(|(k, _)| k.as_str() == Some("type"))
            .map(|(_, v)| v)
            .filter(|v| !v.is_null()),
        _ => {
            return Err(invalid(
                node.pos,
                path,
                format!("expected a mapping, got {}", node.describe()),
            ));
        }
    };
    let tpath = join(path, "type");
    let Some(type_node) = type_node else {
        return Err(invalid(
            node.pos,
            &tpath,
            "required key missing (expected static, file or http)",
        ));
    };
    let kind = match type_node.as_str() {
        Some(t) if CONNECTOR_TYPES.contains(&t) => t,
        Some(t) => {
            return Err(invalid(
                type_node.pos,
                &tpath,
                format!(
                    "invalid value '{}' (expected static, file or http)",
                    clip(t, 40)
                ),
            ));
        }
        None => {
            return Err(invalid(
                type_node.pos,
                &tpath,
                format!(
                    "expected static, file or http, got {}",
                    type_node.describe()
                ),
            ));
        }
    };
    let allowed: &[&str] = match kind {
        "static" => &["type", "id_field", "items"],
        "file" => &["type", "id_field", "dir"],
        _ => &["type", "id_field", "url", "headers"],
    };
    // Keys of another connector type get a message naming the type.
    if let YamlValue::Map(entries) = &node.value {
        for (k, _) in entries {
            if let Some(key) = k.as_str()
                && !allowed.contains(&key)
                && ["items", "dir", "url", "headers"].contains(&key)
            {
                return Err(invalid(
                    k.pos,
                    &join(path, key),
                    format!(
                        "does not belong to a '{kind}' connector (expected one of: {})",
                        allowed.join(", ")
                    ),
                ));
            }
        }
    }
    let m = Mapping::read(node, path, allowed)?;
    let id_field = match m.get("id_field") {
        Some(v) => non_empty_string(v, &m.child("id_field"))?,
        None => DEFAULT_ID_FIELD.to_string(),
    };
    let kind = match kind {
        "static" => {
            let ipath = m.child("items");
            let items_node = m.required("items", "a list of items")?;
            let mut items = Vec::new();
            for (i, item) in list(items_node, &ipath)?.iter().enumerate() {
                let v = yaml::to_json(item)
                    .map_err(|(pos, msg)| invalid(pos, &format!("{ipath}[{i}]"), msg))?;
                items.push(v);
            }
            ConnectorKind::Static { items }
        }
        "file" => ConnectorKind::File {
            dir: path_value(
                m.required("dir", "a directory of *.json files")?,
                &m.child("dir"),
                project_dir,
            )?,
        },
        _ => {
            let url = url_value(
                m.required("url", "an http:// or https:// URL")?,
                &m.child("url"),
            )?;
            let mut headers = Vec::new();
            if let Some(h) = m.get("headers") {
                let hpath = m.child("headers");
                let YamlValue::Map(entries) = &h.value else {
                    return Err(invalid(
                        h.pos,
                        &hpath,
                        format!(
                            "expected a mapping of header names to strings, got {}",
                            h.describe()
                        ),
                    ));
                };
                for (k, v) in entries {
                    let Some(name) = k.as_str() else {
                        return Err(invalid(
                            k.pos,
                            &hpath,
                            format!("header names must be strings, got {}", k.describe()),
                        ));
                    };
                    let vpath = join(&hpath, &clip(name, 60));
                    if name.is_empty()
                        || !name
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c))
                    {
                        return Err(invalid(
                            k.pos,
                            &vpath,
                            "invalid header name (expected an HTTP token such as X-Api-Version)",
                        ));
                    }
                    let value = string(v, &vpath)?;
                    if value.chars().any(|c| c.is_control() && c != '\t') {
                        return Err(invalid(
                            v.pos,
                            &vpath,
                            "header values may not contain line breaks or control characters",
                        ));
                    }
                    if let Some(inner) = value.strip_prefix("${").and_then(|r| r.strip_suffix('}'))
                        && !is_env_var_name(inner)
                    {
                        return Err(invalid(
                            v.pos,
                            &vpath,
                            format!(
                                "invalid variable reference '{}' (expected ${{NAME}} with NAME matching [A-Za-z_][A-Za-z0-9_]*)",
                                clip(&value, 60)
                            ),
                        ));
                    }
                    headers.push((name.to_string(), value));
                }
            }
            ConnectorKind::Http { url, headers }
        }
    };
    Ok(ConnectorConfig { id_field, kind })
}

fn parse_reactors(
    node: &YamlNode,
    project_dir: &Path,
) -> Result<Vec<ReactorEntry>, ConfigFileError> {
    let items = list(node, "reactors")?;
    if items.is_empty() {
        return Err(invalid(
            node.pos,
            "reactors",
            "the list is empty (remove the key for a single reactor)",
        ));
    }
    let mut out: Vec<ReactorEntry> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let rpath = format!("reactors[{i}]");
        let m = Mapping::read(item, &rpath, REACTOR_KEYS)?;
        let name = match m.get("name") {
            Some(v) => {
                let npath = m.child("name");
                let name = string(v, &npath)?;
                if !is_reactor_name(&name) {
                    return Err(invalid(
                        v.pos,
                        &npath,
                        format!(
                            "invalid value '{}' (expected a name matching [A-Za-z0-9][A-Za-z0-9._-]*)",
                            clip(&name, 60)
                        ),
                    ));
                }
                if RESERVED_REACTOR_NAMES.contains(&name.as_str()) {
                    return Err(invalid(
                        v.pos,
                        &npath,
                        format!(
                            "'{name}' is a route name of the daemon (reserved: {})",
                            RESERVED_REACTOR_NAMES.join(", ")
                        ),
                    ));
                }
                name
            }
            None => format!("reactor-{i}"),
        };
        if let Some(prev) = out.iter().find(|r| r.name == name) {
            let pos = m.get("name").map(|v| v.pos).unwrap_or(m.pos);
            return Err(invalid(
                pos,
                &m.child("name"),
                format!(
                    "duplicate reactor name '{name}' (already used by reactors[{}])",
                    prev.index
                ),
            ));
        }
        let project = match m.get("project") {
            Some(v) => path_value(v, &m.child("project"), project_dir)?,
            None => project_dir.to_path_buf(),
        };
        let (state_dir, state_dir_pos) = match m.get("state_dir") {
            Some(v) => (
                Some(path_value(v, &m.child("state_dir"), project_dir)?),
                Some(v.pos),
            ),
            None => (None, None),
        };
        let gateways = match m.get("gateways") {
            Some(g) => parse_gateways(g, &m.child("gateways"), project_dir)?,
            None => Vec::new(),
        };
        out.push(ReactorEntry {
            index: i,
            pos: item.pos,
            name,
            project,
            state_dir,
            state_dir_pos,
            gateways,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proj() -> PathBuf {
        PathBuf::from("/abs/proj")
    }

    fn parse(text: &str) -> Result<ReactorConfig, ConfigFileError> {
        ReactorConfig::parse(text, &proj())
    }

    fn err(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn empty_and_absent_files_take_every_default() {
        for text in ["", "# nothing\n", "---\n", "~\n"] {
            let c = parse(text).unwrap();
            assert_eq!(c, ReactorConfig::default(), "{text:?}");
        }
        let c = ReactorConfig::default();
        assert_eq!(c.model.max_turns, 200);
        assert_eq!(c.model.provider_label(), "openrouter");
        assert_eq!(c.sandbox.mode, SandboxMode::None);
        assert_eq!(c.sandbox.image, "node:22-bookworm-slim");
        assert_eq!(c.sandbox.network, "none");
        assert_eq!(c.sandbox.shell_timeout_ms, 300_000);
        assert!(c.state.dir.is_none());
        let d = tempfile::tempdir().unwrap();
        assert_eq!(ReactorConfig::load(d.path()).unwrap(), None);
    }

    #[test]
    fn the_first_host_example_parses() {
        let c = parse(
            "state:\n  dir: ./.reactor\nmodel:\n  provider: openrouter\n  render_model: google/gemini-3.5-flash\n  compile_model: google/gemini-3.5-flash\n  max_turns: 200\nsandbox:\n  mode: none\ngateways:\n  - node: inbox\n    source_id: inbox\n    poll: 30s\n    connector:\n      type: static\n      id_field: id\n      items:\n        - { id: item-1, body: \"the first item\" }\n        - id: item-2\n          body: \"the second item\"\n          tags: [urgent]\n",
        )
        .unwrap();
        assert_eq!(c.state.dir, Some(PathBuf::from("/abs/proj/.reactor")));
        assert_eq!(
            c.model.render_model.as_deref(),
            Some("google/gemini-3.5-flash")
        );
        assert_eq!(c.gateways.len(), 1);
        let g = &c.gateways[0];
        assert_eq!(
            (g.node.as_str(), g.source_id.as_str(), g.path.as_str()),
            ("inbox", "inbox", "gateways[0]")
        );
        assert_eq!(g.poll, Some(Duration::from_secs(30)));
        let ConnectorKind::Static { items } = &g.connector.kind else {
            panic!()
        };
        assert_eq!(
            crate::format::json::compact_string(&Value::Array(items.clone())),
            r#"[{"id":"item-1","body":"the first item"},{"id":"item-2","body":"the second item","tags":["urgent"]}]"#
        );
        let s = c.model.provider_settings();
        assert_eq!(s.provider.as_deref(), Some("openrouter"));
        assert_eq!(s.compile_model.as_deref(), Some("google/gemini-3.5-flash"));
    }

    #[test]
    fn custom_and_anthropic_providers() {
        let c = parse("model:\n  provider: Acme-Gateway\n  base_url: https://llm.acme.internal/v1\n  api_key_env: ACME_LLM_KEY\n  render_model: acme/large\n  compile_model: acme/large\n  reasoning_effort: low\n").unwrap();
        assert_eq!(c.model.provider.as_deref(), Some("acme-gateway"));
        assert_eq!(c.model.reasoning_effort.as_deref(), Some("low"));
        let cfg = ProviderConfig::resolve(&c.model.provider_settings()).unwrap();
        assert_eq!(
            cfg.endpoint(),
            "https://llm.acme.internal/v1/chat/completions"
        );
        let c = parse("model:\n  provider: anthropic\n  base_url: https://proxy.internal/v1\n  api_key_env: MY_GATEWAY_KEY\n  temperature: 0\n").unwrap();
        assert_eq!(c.model.temperature, Some(0.0));
        assert_eq!(
            err("model:\n  provider: anthropic\n  temperature: 1.5\n"),
            "reactor.yml:3:16: model.temperature: invalid value 1.5 (expected a number from 0 to 1 for provider 'anthropic')"
        );
        assert_eq!(
            err("model:\n  temperature: 2.5\n"),
            "reactor.yml:2:16: model.temperature: invalid value 2.5 (expected a number from 0 to 2)"
        );
        assert_eq!(
            err("model:\n  temperature: -0.1\n"),
            "reactor.yml:2:16: model.temperature: invalid value -0.1 (expected a number from 0 to 2)"
        );
        assert_eq!(
            err("model:\n  provider: acme\n  base_url: http://x/v1\n"),
            "reactor.yml:2:13: model.provider: unknown provider 'acme'; use openrouter, openai, anthropic or google, or set both model.base_url and model.api_key_env"
        );
        assert_eq!(
            err("model:\n  provider: \"bad label\"\n"),
            "reactor.yml:2:13: model.provider: invalid value 'bad label' (expected openrouter, openai, anthropic, google or a custom label matching [a-z0-9][a-z0-9._-]*)"
        );
        assert_eq!(
            err("model:\n  base_url: ftp://x\n"),
            "reactor.yml:2:13: model.base_url: invalid value 'ftp://x' (expected an http:// or https:// URL)"
        );
        assert_eq!(
            err("model:\n  api_key_env: MY-KEY\n"),
            "reactor.yml:2:16: model.api_key_env: invalid value 'MY-KEY' (expected an environment variable name matching [A-Za-z_][A-Za-z0-9_]*)"
        );
    }

    #[test]
    fn unknown_keys_name_the_path_line_and_expected_set() {
        assert_eq!(
            err("model:\n  provider: openrouter\n  temprature: 0\n"),
            "reactor.yml:3:3: model.temprature: unknown key (expected one of: provider, render_model, compile_model, temperature, reasoning_effort, max_turns, base_url, api_key_env)"
        );
        assert_eq!(
            err("modle:\n  x: 1\n"),
            "reactor.yml:1:1: modle: unknown key (expected one of: state, model, sandbox, gateways, reactors, telemetry)"
        );
        assert_eq!(
            err("state:\n  dir: x\n  other: 1\n"),
            "reactor.yml:3:3: state.other: unknown key (expected one of: dir)"
        );
        assert_eq!(
            err("telemetry:\n  enabled: true\n  token: x\n"),
            "reactor.yml:3:3: telemetry.token: unknown key (expected one of: enabled, endpoint)"
        );
        assert_eq!(
            err("gateways:\n  - node: a\n    conector: {type: static, items: []}\n"),
            "reactor.yml:3:5: gateways[0].conector: unknown key (expected one of: node, source_id, poll, connector)"
        );
        assert_eq!(
            err("1: x\n"),
            "reactor.yml:1:1: keys must be strings, got a number (1)"
        );
    }

    #[test]
    fn wrong_types_and_ranges() {
        assert_eq!(
            err("sandbox:\n  mode: dokcer\n"),
            "reactor.yml:2:9: sandbox.mode: invalid value 'dokcer' (expected none, docker or unix-local)"
        );
        assert_eq!(
            err("sandbox:\n  mode: [docker]\n"),
            "reactor.yml:2:9: sandbox.mode: expected none, docker or unix-local, got a list"
        );
        assert_eq!(
            err("sandbox:\n  shell_timeout_ms: 999\n"),
            "reactor.yml:2:21: sandbox.shell_timeout_ms: invalid value 999 (expected an integer of at least 1000)"
        );
        assert_eq!(
            err("model:\n  max_turns: 0\n"),
            "reactor.yml:2:14: model.max_turns: invalid value 0 (expected an integer from 1 to 10000)"
        );
        assert_eq!(
            err("model:\n  max_turns: 10001\n"),
            "reactor.yml:2:14: model.max_turns: invalid value 10001 (expected an integer from 1 to 10000)"
        );
        assert_eq!(
            err("model:\n  max_turns: many\n"),
            "reactor.yml:2:14: model.max_turns: expected an integer from 1 to 10000, got a string ('many')"
        );
        assert_eq!(
            err("model:\n  max_turns: 2.5\n"),
            "reactor.yml:2:14: model.max_turns: expected an integer from 1 to 10000, got a number (2.5)"
        );
        assert_eq!(
            parse("model:\n  max_turns: 24.0\n")
                .unwrap()
                .model
                .max_turns,
            24
        );
        assert_eq!(
            err("model:\n  render_model: 5\n"),
            "reactor.yml:2:17: model.render_model: expected a string, got a number (5)"
        );
        assert_eq!(
            err("model: [a]\n"),
            "reactor.yml:1:8: model: expected a mapping, got a list"
        );
        assert_eq!(
            err("telemetry:\n  enabled: yes\n"),
            "reactor.yml:2:12: telemetry.enabled: expected true or false, got a string ('yes')"
        );
        assert_eq!(
            err("- a\n- b\n"),
            "reactor.yml:1:1: expected a mapping of settings at the top level, got a list"
        );
        assert_eq!(
            err("state:\n  dir: \"\"\n"),
            "reactor.yml:2:8: state.dir: expected a non-empty string"
        );
        // telemetry is accepted and type-checked.
        let c = parse("telemetry:\n  enabled: false\n  endpoint: https://t.example\n").unwrap();
        assert_eq!(c.telemetry.unwrap().enabled, Some(false));
    }

    #[test]
    fn gateways_and_connectors() {
        assert_eq!(
            err("gateways:\n  - source_id: s\n    connector: {type: static, items: []}\n"),
            "reactor.yml:2:5: gateways[0].node: required key missing (expected a gateway node id)"
        );
        assert_eq!(
            err("gateways:\n  - node: a\n"),
            "reactor.yml:2:5: gateways[0].connector: required key missing (expected a mapping with a type)"
        );
        assert_eq!(
            err("gateways:\n  - node: a\n    connector:\n      id_field: id\n"),
            "reactor.yml:4:7: gateways[0].connector.type: required key missing (expected static, file or http)"
        );
        assert_eq!(
            err("gateways:\n  - node: a\n    connector: {type: ftp}\n"),
            "reactor.yml:3:23: gateways[0].connector.type: invalid value 'ftp' (expected static, file or http)"
        );
        assert_eq!(
            err("gateways:\n  - node: a\n    connector: {type: file, dir: x, items: []}\n"),
            "reactor.yml:3:37: gateways[0].connector.items: does not belong to a 'file' connector (expected one of: type, id_field, dir)"
        );
        assert_eq!(
            err("gateways:\n  - node: a\n    connector: {type: static, items: [], bogus: 1}\n"),
            "reactor.yml:3:42: gateways[0].connector.bogus: unknown key (expected one of: type, id_field, items)"
        );
        assert_eq!(
            err("gateways:\n  - node: a\n    connector: {type: static}\n"),
            "reactor.yml:3:16: gateways[0].connector.items: required key missing (expected a list of items)"
        );
        assert_eq!(
            err("gateways:\n  - node: a\n    connector: {type: static, items: [{1: x}]}\n"),
            "reactor.yml:3:40: gateways[0].connector.items[0]: mapping keys must be strings, got a number (1)"
        );
        assert_eq!(
            err("gateways:\n  - node: a\n    connector: {type: static, items: [{a: .inf}]}\n"),
            "reactor.yml:3:43: non-finite number '.inf' (JSON numbers must be finite)"
        );
        assert_eq!(
            err("gateways:\n  - node: a\n    poll: 30\n    connector: {type: static, items: []}\n"),
            "reactor.yml:3:11: gateways[0].poll: invalid value a number (30) (expected an integer followed by ms, s, m or h, such as 30s or 5m)"
        );
        assert_eq!(
            err("gateways:\n  - node: a\n    poll: 5d\n    connector: {type: static, items: []}\n"),
            "reactor.yml:3:11: gateways[0].poll: invalid value '5d' (expected an integer followed by ms, s, m or h, such as 30s or 5m)"
        );
        assert_eq!(
            err(
                "gateways:\n  - node: a\n    connector: {type: static, items: []}\n  - node: b\n    source_id: a\n    connector: {type: static, items: []}\n"
            ),
            "reactor.yml:5:16: gateways[1].source_id: duplicate source_id 'a' (already used by gateways[0])"
        );
        let c = parse("gateways:\n  - node: g\n    poll: 250ms\n    connector:\n      type: file\n      id_field: key\n      dir: ./drop\n  - node: h\n    poll: 2h\n    connector:\n      type: http\n      url: \"https://helpdesk.example/api/new?since={as_of}\"\n      headers:\n        Authorization: ${HELPDESK_TOKEN}\n        X-Api-Version: \"2\"\n").unwrap();
        assert_eq!(c.gateways[0].poll, Some(Duration::from_millis(250)));
        assert_eq!(c.gateways[0].connector.id_field, "key");
        assert_eq!(
            c.gateways[0].connector.kind,
            ConnectorKind::File {
                dir: PathBuf::from("/abs/proj/drop")
            }
        );
        assert_eq!(c.gateways[1].poll, Some(Duration::from_secs(7200)));
        let spec = c.gateways[1].to_spec();
        assert_eq!((spec.node.as_str(), spec.source_id.as_str()), ("h", "h"));
        assert_eq!(spec.poll, Some(Duration::from_secs(7200)));
        match &spec.connector.kind {
            crate::host::connectors::ConnectorKind::Http {
                timeout,
                connect_timeout,
                ..
            } => assert_eq!(
                (*connect_timeout, *timeout),
                (HTTP_CONNECT_TIMEOUT, HTTP_TIMEOUT)
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(c.gateways[0].to_spec().connector.id_field, "key");
        let ConnectorKind::Http { url, headers } = &c.gateways[1].connector.kind else {
            panic!()
        };
        assert!(url.ends_with("since={as_of}"));
        assert_eq!(
            headers[0],
            ("Authorization".into(), "${HELPDESK_TOKEN}".into())
        );
        assert_eq!(headers[1], ("X-Api-Version".into(), "2".into()));
        assert_eq!(
            err(
                "gateways:\n  - node: a\n    connector: {type: http, url: \"file:///etc/passwd\"}\n"
            ),
            "reactor.yml:3:34: gateways[0].connector.url: invalid value 'file:///etc/passwd' (expected an http:// or https:// URL)"
        );
        assert_eq!(
            err(
                "gateways:\n  - node: a\n    connector: {type: http, url: \"http://x\", headers: {\"a b\": c}}\n"
            ),
            "reactor.yml:3:56: gateways[0].connector.headers.a b: invalid header name (expected an HTTP token such as X-Api-Version)"
        );
        assert_eq!(
            err(
                "gateways:\n  - node: a\n    connector: {type: http, url: \"http://x\", headers: {A: \"${bad name}\"}}\n"
            ),
            "reactor.yml:3:59: gateways[0].connector.headers.A: invalid variable reference '${bad name}' (expected ${NAME} with NAME matching [A-Za-z_][A-Za-z0-9_]*)"
        );
    }

    #[test]
    fn several_reactors() {
        let c = parse("reactors:\n  - name: alpha\n    project: ./alpha\n    gateways:\n      - node: tickets\n        connector: { type: http, url: \"https://helpdesk.example/api/new?since={as_of}\" }\n  - name: beta\n    project: ./beta\n    state_dir: ./state/beta\n  - project: gamma\n").unwrap();
        let r = c.reactors.unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!(r[0].name, "alpha");
        assert_eq!(r[0].project, PathBuf::from("/abs/proj/alpha"));
        assert_eq!(r[0].gateways[0].path, "reactors[0].gateways[0]");
        assert_eq!(r[1].state_dir, Some(PathBuf::from("/abs/proj/state/beta")));
        assert_eq!(r[2].name, "reactor-2");
        assert_eq!(
            err("reactors:\n  - name: status\n"),
            "reactor.yml:2:11: reactors[0].name: 'status' is a route name of the daemon (reserved: health, status, cost, topology, receipts, nodes, trigger)"
        );
        assert_eq!(
            err("reactors:\n  - name: a\n  - name: a\n"),
            "reactor.yml:3:11: reactors[1].name: duplicate reactor name 'a' (already used by reactors[0])"
        );
        assert_eq!(
            err("reactors:\n  - name: -a\n"),
            "reactor.yml:2:11: reactors[0].name: invalid value '-a' (expected a name matching [A-Za-z0-9][A-Za-z0-9._-]*)"
        );
        assert_eq!(
            err("reactors: []\n"),
            "reactor.yml:1:11: reactors: the list is empty (remove the key for a single reactor)"
        );
        assert_eq!(
            err("gateways: []\nreactors:\n  - name: a\n"),
            "reactor.yml:1:1: gateways: not allowed together with reactors (give each reactor its own gateways)"
        );
    }

    #[test]
    fn yaml_level_errors() {
        assert_eq!(
            err("a: 1\na: 2\n"),
            "reactor.yml:2:1: duplicate mapping key: a"
        );
        assert!(err("model: !!str x\n").starts_with("reactor.yml:1:"));
        assert!(err("model: !!str x\n").contains("YAML tags are not supported"));
        let e = err("model:\n  provider: [\n");
        assert!(e.starts_with("reactor.yml:2:"), "{e}");
    }

    #[test]
    fn paths_are_resolved_lexically() {
        assert_eq!(clean_path(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(clean_path(Path::new("/..")), PathBuf::from("/"));
        assert_eq!(clean_path(Path::new("a/../..")), PathBuf::from(".."));
        assert_eq!(
            resolve_path(Path::new("/p"), Path::new("../s")),
            PathBuf::from("/s")
        );
        assert_eq!(
            resolve_path(Path::new("/p"), Path::new("/abs/x/")),
            PathBuf::from("/abs/x")
        );
        let c = parse("state:\n  dir: ../elsewhere/.state\n").unwrap();
        assert_eq!(c.state.dir, Some(PathBuf::from("/abs/elsewhere/.state")));
    }

    #[test]
    fn helpers() {
        assert_eq!(parse_duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(parse_duration("0ms"), Some(Duration::ZERO));
        assert_eq!(parse_duration("5m"), Some(Duration::from_secs(300)));
        for bad in [
            "",
            "s",
            "30",
            "30 s",
            "-1s",
            "1.5s",
            "99999999999999999999h",
            "3S",
        ] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
        assert!(is_http_url("http://127.0.0.1:8080/v1"));
        assert!(is_http_url("HTTPS://x"));
        for bad in [
            "http://",
            "https:///p",
            "ftp://x",
            "http://a b",
            "http://:80",
        ] {
            assert!(!is_http_url(bad), "{bad}");
        }
        assert!(is_reactor_name("a.b-c_1"));
        assert!(!is_reactor_name("_a"));
        assert!(is_provider_label("acme-gateway.v2"));
        assert!(!is_provider_label("Acme"));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        /// Any text is either a configuration or an error; never a panic.
        #[test]
        fn parsing_is_total(text in "\\PC{0,200}") {
            let _ = parse(&text);
        }

        /// YAML-shaped input built from the real keys, odd scalars and indentation.
        #[test]
        fn yaml_shaped_input_is_total(parts in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::strategy::Just("model:\n".to_string()),
                proptest::strategy::Just("  temperature: ".to_string()),
                proptest::strategy::Just("gateways:\n  - node: a\n    connector: {type: static, items: [".to_string()),
                proptest::strategy::Just("reactors:\n  - name: ".to_string()),
                proptest::strategy::Just("sandbox: {mode: ".to_string()),
                proptest::strategy::Just("&a ".to_string()),
                proptest::strategy::Just("*a".to_string()),
                proptest::strategy::Just("!t ".to_string()),
                proptest::strategy::Just(".inf".to_string()),
                proptest::strategy::Just("]}\n".to_string()),
                proptest::strategy::Just("\"é\u{1F600}\"".to_string()),
                "[ -~]{0,12}",
            ],
            0..12,
        )) {
            let _ = parse(&parts.concat());
        }
    }

    #[test]
    fn the_example_projects_parse() {
        let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/contracts");
        if !dir.is_dir() {
            eprintln!("SKIPPED: {} is missing", dir.display());
            return;
        }
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            if p.join(CONFIG_FILE).is_file() {
                let c = ReactorConfig::load(&p)
                    .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
                    .unwrap();
                assert_eq!(c.gateways.len(), 1, "{}", p.display());
                let ConnectorKind::Static { items } = &c.gateways[0].connector.kind else {
                    panic!()
                };
                assert!(items.len() >= 2);
                assert!(
                    items
                        .iter()
                        .all(|i| i.get("id").and_then(Value::as_str).is_some())
                );
                seen += 1;
            }
        }
        assert_eq!(seen, 3);
    }
}
