//! `reactor.yml` (HOST.md §4): the typed configuration, its validation, and the conversion of
//! connector items to JSON.
//!
//! The text is parsed by `serde-saphyr` (YAML 1.2 core schema, `strict_booleans`) into a tree of
//! located nodes ([`crate::host::yaml`]); this module maps that tree onto the typed structures
//! below, key by key. Unknown keys, wrong types and out-of-range values are errors that name the
//! file position and the full key path, with the expected set:
//!
//! ```text
//! reactor.yml:7:3: model.temprature: unknown key (expected one of: provider, render_model, compile_model, temperature, reasoning_effort, max_turns, base_url, api_key_env, max_tokens, timeout, connect_timeout, parallel_renders)
//! reactor.yml:14:9: sandbox.mode: invalid value 'dokcer' (expected none, docker or unix-local)
//! ```
//!
//! `null` (or an empty value) counts as "not set" for optional keys. Relative paths are resolved
//! against the project directory (lexically; nothing is created or required to exist).

mod error;
mod gateways;
mod model;
mod reactors;
mod read;
#[cfg(test)]
mod tests;

use std::path::Path;

pub use error::ConfigFileError;
pub use gateways::{GatewayConfig, HTTP_CONNECT_TIMEOUT, HTTP_TIMEOUT};
pub use model::{ModelSection, SandboxMode, SandboxSection, StateSection, TelemetrySection};
pub(crate) use reactors::ReactorEntry;
pub(crate) use read::{clean_path, resolve_path};

use crate::host::yaml::{self, YamlValue};
use error::invalid;
use read::{Mapping, boolean, path_value, string};

/// The configuration file name inside the project directory.
pub(crate) const CONFIG_FILE: &str = "reactor.yml";
/// Default `state.dir`, relative to the project directory.
pub(crate) const DEFAULT_STATE_DIR: &str = ".reactor";
/// Default `model.max_turns`.
pub(crate) const DEFAULT_MAX_TURNS: u32 = 200;
/// Bounds of `model.max_turns`.
pub(crate) const MAX_TURNS_RANGE: (u32, u32) = (1, 10_000);
/// Default `model.parallel_renders`.
pub(crate) const DEFAULT_PARALLEL_RENDERS: usize = 4;
/// Bounds of `model.parallel_renders` (and of `--parallel-renders`).
pub(crate) const PARALLEL_RENDERS_RANGE: (usize, usize) = (1, 64);
/// Default `sandbox.image`.
pub(crate) const DEFAULT_SANDBOX_IMAGE: &str = "node:22-bookworm-slim";
/// Default `sandbox.network`.
pub(crate) const DEFAULT_SANDBOX_NETWORK: &str = "none";
/// Default `sandbox.shell_timeout_ms` (the agent's default shell timeout, 300 000 ms).
pub(crate) const DEFAULT_SHELL_TIMEOUT_MS: u64 =
    crate::agent::sandbox::DEFAULT_SHELL_TIMEOUT.as_millis() as u64;
/// Smallest `sandbox.shell_timeout_ms`.
pub(crate) const MIN_SHELL_TIMEOUT_MS: u64 = 1_000;
/// Default `connector.id_field`.
pub(crate) const DEFAULT_ID_FIELD: &str = "id";
/// Route names a reactor may not be called (HOST.md §4.4, §10.2).
pub(crate) const RESERVED_REACTOR_NAMES: [&str; 7] = [
    "health", "status", "cost", "topology", "receipts", "nodes", "trigger",
];

const ROOT_KEYS: &[&str] = &[
    "state",
    "model",
    "sandbox",
    "gateways",
    "reactors",
    "telemetry",
];
const STATE_KEYS: &[&str] = &["dir"];
const TELEMETRY_KEYS: &[&str] = &["enabled", "endpoint"];

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
            cfg.model = model::parse_model(n)?;
        }
        if let Some(n) = top.get("sandbox") {
            cfg.sandbox = model::parse_sandbox(n)?;
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
            cfg.gateways = gateways::parse_gateways(n, "gateways", project_dir)?;
        }
        if let Some(n) = reactors_node {
            cfg.reactors = Some(reactors::parse_reactors(n, project_dir)?);
        }
        Ok(cfg)
    }
}
