//! `<state-dir>/registry.json` (FORMATS.md §13): the runtime registry. Writers preserve every key
//! they do not own; the project owns `gateway_cursors`.

use std::path::Path;

use crate::format::json::{self, JsString, Object, Value};
use crate::format::layout;
use crate::store::fsutil;

/// Errors reading or writing the registry.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The file is not a JSON object.
    #[error("registry snapshot must be an object")]
    NotObject,
    /// The file is not valid JSON.
    #[error("registry.json is not valid JSON: {0}")]
    Parse(String),
    /// An I/O failure.
    #[error("registry.json: {0}")]
    Io(#[from] std::io::Error),
}

/// The registry: the whole object (unknown keys preserved).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Registry {
    /// Every member, in file order.
    pub root: Object,
}

impl Registry {
    /// Reads `<state_dir>/registry.json`; absent means `{}`.
    pub(crate) fn read(state_dir: &Path) -> Result<Registry, RegistryError> {
        let p = state_dir.join(layout::REGISTRY_FILE);
        let bytes = match std::fs::read(&p) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Registry::default()),
            Err(e) => return Err(e.into()),
        };
        Self::parse(&bytes)
    }

    /// Parses registry bytes.
    pub(crate) fn parse(bytes: &[u8]) -> Result<Registry, RegistryError> {
        match json::parse(bytes) {
            Ok(Value::Object(root)) => Ok(Registry { root }),
            Ok(_) => Err(RegistryError::NotObject),
            Err(e) => Err(RegistryError::Parse(e.to_string())),
        }
    }

    /// The canonical bytes plus `\n`.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        // Only strings and arrays we wrote, or values read from JSON: always finite.
        let _ = json::write_canonical(&Value::Object(self.root.clone()), &mut out);
        out.push(b'\n');
        out
    }

    /// Writes canonically with temp + fsync + rename + directory fsync.
    pub(crate) fn write(&self, state_dir: &Path) -> Result<(), RegistryError> {
        fsutil::write_atomic(&state_dir.join(layout::REGISTRY_FILE), &self.to_bytes())?;
        Ok(())
    }

    /// The cursor (seen arrival ids) of `source_id`, sorted in UTF-16 order (tests read it;
    /// the reconciler reads cursors through its own index).
    #[cfg(test)]
    pub(crate) fn cursor(&self, source_id: &str) -> Vec<String> {
        self.root
            .get("gateway_cursors")
            .and_then(|c| c.get(source_id))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Replaces the cursor of `source_id` with `ids`, deduplicated and sorted in UTF-16 order.
    pub(crate) fn set_cursor(&mut self, source_id: &str, ids: impl IntoIterator<Item = String>) {
        let mut ids: Vec<String> = ids.into_iter().collect();
        ids.sort_by(|a, b| json::utf16_cmp(a, b));
        ids.dedup();
        let mut cursors = match self.root.remove("gateway_cursors") {
            Some(Value::Object(o)) => o,
            _ => Object::new(),
        };
        cursors.insert(
            JsString::from(source_id),
            Value::Array(ids.into_iter().map(Value::str).collect()),
        );
        self.root.insert("gateway_cursors", Value::Object(cursors));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_preserves_unknown_keys() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(Registry::read(d.path()).unwrap(), Registry::default());
        std::fs::write(
            d.path().join("registry.json"),
            br#"{"topology":{"x":[1,2]},"self_schedule":null}"#,
        )
        .unwrap();
        let mut r = Registry::read(d.path()).unwrap();
        r.set_cursor("claude", vec!["b".into(), "a".into(), "b".into()]);
        r.write(d.path()).unwrap();
        let text = std::fs::read_to_string(d.path().join("registry.json")).unwrap();
        assert_eq!(
            text,
            "{\"gateway_cursors\":{\"claude\":[\"a\",\"b\"]},\"self_schedule\":null,\"topology\":{\"x\":[1,2]}}\n"
        );
        assert_eq!(
            Registry::read(d.path()).unwrap().cursor("claude"),
            vec!["a", "b"]
        );
    }

    #[test]
    fn bad_files() {
        assert!(matches!(
            Registry::parse(b"[]"),
            Err(RegistryError::NotObject)
        ));
        assert!(matches!(
            Registry::parse(b"{"),
            Err(RegistryError::Parse(_))
        ));
    }
}
