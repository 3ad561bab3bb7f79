//! Reading located YAML nodes as typed values: checked mappings, scalars, lists, paths and URLs,
//! and the lexical validators the configuration shares with the rest of the host.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use super::error::{ConfigFileError, invalid};
use crate::host::yaml::{Pos, YamlNode, YamlValue, clip};

/// A mapping whose keys were checked against the allowed set.
pub(super) struct Mapping<'a> {
    path: String,
    pub(super) pos: Pos,
    entries: Vec<(&'a str, &'a YamlNode, &'a YamlNode)>,
}

pub(super) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

impl<'a> Mapping<'a> {
    /// Reads a mapping (`null` is an empty one), refusing non-string and unknown keys.
    pub(super) fn read(
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
    pub(super) fn get(&self, key: &str) -> Option<&'a YamlNode> {
        self.entries
            .iter()
            .find(|(k, _, _)| *k == key)
            .map(|(_, _, v)| *v)
            .filter(|v| !v.is_null())
    }

    /// Where `key` is written (the mapping's position when absent).
    pub(super) fn key_pos(&self, key: &str) -> Pos {
        self.entries
            .iter()
            .find(|(k, _, _)| *k == key)
            .map(|(_, k, _)| k.pos)
            .unwrap_or(self.pos)
    }

    pub(super) fn child(&self, key: &str) -> String {
        join(&self.path, key)
    }

    pub(super) fn required(
        &self,
        key: &str,
        expected: &str,
    ) -> Result<&'a YamlNode, ConfigFileError> {
        self.get(key).ok_or_else(|| {
            invalid(
                self.key_pos(key),
                &self.child(key),
                format!("required key missing (expected {expected})"),
            )
        })
    }
}

pub(super) fn string(node: &YamlNode, path: &str) -> Result<String, ConfigFileError> {
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

pub(super) fn non_empty_string(node: &YamlNode, path: &str) -> Result<String, ConfigFileError> {
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

pub(super) fn boolean(node: &YamlNode, path: &str) -> Result<bool, ConfigFileError> {
    match node.value {
        YamlValue::Bool(b) => Ok(b),
        _ => Err(invalid(
            node.pos,
            path,
            format!("expected true or false, got {}", node.describe()),
        )),
    }
}

pub(super) fn number(node: &YamlNode, path: &str) -> Result<f64, ConfigFileError> {
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
pub(super) fn integer_in(
    node: &YamlNode,
    path: &str,
    lo: u64,
    hi: u64,
) -> Result<u64, ConfigFileError> {
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
pub(crate) fn clean_path(p: &Path) -> PathBuf {
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
pub(crate) fn resolve_path(base: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() {
        clean_path(p)
    } else {
        clean_path(&base.join(p))
    }
}

pub(super) fn path_value(
    node: &YamlNode,
    path: &str,
    project_dir: &Path,
) -> Result<PathBuf, ConfigFileError> {
    let s = non_empty_string(node, path)?;
    Ok(resolve_path(project_dir, Path::new(&s)))
}

/// True for `[A-Za-z_][A-Za-z0-9_]*` (an environment variable name).
pub(crate) fn is_env_var_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// True for an `http://` or `https://` URL with a host and no whitespace or control characters.
pub(crate) fn is_http_url(s: &str) -> bool {
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

pub(super) fn url_value(node: &YamlNode, path: &str) -> Result<String, ConfigFileError> {
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
pub(crate) fn is_provider_label(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c))
}

/// True for a reactor name: `[A-Za-z0-9][A-Za-z0-9._-]*`.
pub(crate) fn is_reactor_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

/// Parses a `poll` duration: `<integer>` followed by `ms`, `s`, `m` or `h` (`30s`, `5m`).
/// `None` for anything else (including overflow).
pub(crate) fn parse_duration(s: &str) -> Option<Duration> {
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

pub(super) fn list<'a>(node: &'a YamlNode, path: &str) -> Result<&'a [YamlNode], ConfigFileError> {
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
