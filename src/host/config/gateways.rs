//! `gateways[]` and their connectors (HOST.md §4.3; RUNTIME.md §9.4).

use std::path::Path;
use std::time::Duration;

use super::DEFAULT_ID_FIELD;
use super::error::{ConfigFileError, invalid};
use super::read::{
    Mapping, is_env_var_name, join, list, non_empty_string, parse_duration, path_value, string,
    url_value,
};
use crate::host::connectors::{Connector, ConnectorKind};
use crate::host::yaml::{self, Pos, YamlNode, YamlValue, clip};

const GATEWAY_KEYS: &[&str] = &["node", "source_id", "poll", "connector"];
const CONNECTOR_TYPES: &[&str] = &["static", "file", "http"];

/// Connect timeout of an `http` connector (10 s).
pub const HTTP_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Whole-request timeout of an `http` connector (60 s).
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(60);

/// One `gateways[]` entry: a connector attached to a gateway node.
#[derive(Clone, Debug, PartialEq)]
pub struct GatewayConfig {
    /// The entry's key path (`gateways[0]`, `reactors[1].gateways[0]`), for boot-time errors
    /// such as `gateways[0].node: 'x' is not an entry point of the compiled topology`.
    pub path: String,
    /// Position of the entry in `reactor.yml`.
    pub(crate) pos: Pos,
    /// `node`: the gateway node (checked against the compiled entry points at boot).
    pub node: String,
    /// `source_id` (default `node`): the cursor namespace, unique within the reactor.
    pub(crate) source_id: String,
    /// `poll`: minimum interval between polls; `None` = every tick.
    pub poll: Option<Duration>,
    /// `connector`: the runtime connector itself (`http` connectors get
    /// [`HTTP_CONNECT_TIMEOUT`] and [`HTTP_TIMEOUT`]).
    pub connector: Connector,
}

impl GatewayConfig {
    /// The daemon's gateway ([`crate::host::hosted::GatewaySpec`]).
    pub(crate) fn to_spec(&self) -> crate::host::hosted::GatewaySpec {
        crate::host::hosted::GatewaySpec {
            node: self.node.clone(),
            source_id: self.source_id.clone(),
            poll: self.poll,
            connector: self.connector.clone(),
        }
    }
}

pub(super) fn parse_gateways(
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
) -> Result<Connector, ConfigFileError> {
    // The type decides which keys are allowed, so read it first.
    let kind = connector_type(node, path)?;
    let allowed: &[&str] = match kind {
        "static" => &["type", "id_field", "items"],
        "file" => &["type", "id_field", "dir"],
        _ => &["type", "id_field", "url", "headers"],
    };
    reject_foreign_keys(node, path, kind, allowed)?;
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
            let headers = match m.get("headers") {
                Some(h) => http_headers(h, &m.child("headers"))?,
                None => Vec::new(),
            };
            ConnectorKind::Http {
                url,
                headers,
                connect_timeout: HTTP_CONNECT_TIMEOUT,
                timeout: HTTP_TIMEOUT,
            }
        }
    };
    Ok(Connector { id_field, kind })
}

/// `connector.type` of a connector mapping: `static`, `file` or `http`.
fn connector_type(node: &YamlNode, path: &str) -> Result<&'static str, ConfigFileError> {
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
    match type_node.as_str() {
        Some(t) => CONNECTOR_TYPES
            .iter()
            .find(|known| **known == t)
            .copied()
            .ok_or_else(|| {
                invalid(
                    type_node.pos,
                    &tpath,
                    format!(
                        "invalid value '{}' (expected static, file or http)",
                        clip(t, 40)
                    ),
                )
            }),
        None => Err(invalid(
            type_node.pos,
            &tpath,
            format!(
                "expected static, file or http, got {}",
                type_node.describe()
            ),
        )),
    }
}

/// Keys of another connector type get a message naming the type.
fn reject_foreign_keys(
    node: &YamlNode,
    path: &str,
    kind: &str,
    allowed: &[&str],
) -> Result<(), ConfigFileError> {
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
    Ok(())
}

/// `connector.headers` of an `http` connector: header names are HTTP tokens, values are one-line
/// strings, and a `${NAME}` value must name a valid environment variable.
fn http_headers(h: &YamlNode, hpath: &str) -> Result<Vec<(String, String)>, ConfigFileError> {
    let YamlValue::Map(entries) = &h.value else {
        return Err(invalid(
            h.pos,
            hpath,
            format!(
                "expected a mapping of header names to strings, got {}",
                h.describe()
            ),
        ));
    };
    let mut headers = Vec::new();
    for (k, v) in entries {
        let Some(name) = k.as_str() else {
            return Err(invalid(
                k.pos,
                hpath,
                format!("header names must be strings, got {}", k.describe()),
            ));
        };
        let vpath = join(hpath, &clip(name, 60));
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
    Ok(headers)
}
