//! The record/replay model client, the `REACTOR_MODEL_RECORD` recording wrapper and the offline
//! client (RUNTIME.md §13.2, §8.7).
//!
//! Record file: `{"format": "reactor.model-records/1", "records": [{"id", "request",
//! "response"}]}` where `request` and `response` are the serde forms of [`ModelRequest`] and
//! [`ModelResponse`].

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ModelClient;
use super::error::ModelError;
use super::types::{ModelRequest, ModelResponse};

/// The `format` member of a record file.
pub const RECORD_FORMAT: &str = "reactor.model-records/1";

/// The variable naming a record file to write from live calls (HOST.md §2.2).
pub(crate) const RECORD_ENV: &str = "REACTOR_MODEL_RECORD";

/// Largest record file loaded (64 MiB).
pub(crate) const MAX_RECORD_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// One recorded exchange: `{"id", "request", "response"}`. `id` is any JSON scalar (recording
/// writes 1, 2, 3, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRecord {
    /// The record's id, named in mismatch errors.
    pub id: Value,
    /// The expected request.
    pub request: ModelRequest,
    /// The response returned on a match.
    pub response: ModelResponse,
}

impl ModelRecord {
    /// The id as text: a string as is, anything else as JSON.
    pub(crate) fn id_text(&self) -> String {
        match &self.id {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }
}

/// A whole record file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordFile {
    /// Always [`RECORD_FORMAT`].
    pub format: String,
    /// The records, in call order.
    pub records: Vec<ModelRecord>,
}

/// A record file that cannot be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordFileError {
    /// Reading failed.
    #[error("cannot read model record file {path}: {detail}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        detail: String,
    },
    /// Not a record file (bad JSON, wrong shape, oversized).
    #[error("invalid model record file: {0}")]
    Invalid(String),
    /// The `format` member is not [`RECORD_FORMAT`].
    #[error("invalid model record file: format is '{0}', expected 'reactor.model-records/1'")]
    Format(String),
}

/// Parses record-file text.
///
/// Errors: [`RecordFileError::Invalid`] (not JSON, wrong shape), [`RecordFileError::Format`].
pub fn parse_record_file(text: &str) -> Result<RecordFile, RecordFileError> {
    let raw: Value =
        serde_json::from_str(text).map_err(|e| RecordFileError::Invalid(e.to_string()))?;
    match raw.get("format") {
        Some(Value::String(f)) if f == RECORD_FORMAT => {}
        Some(Value::String(f)) => {
            return Err(RecordFileError::Format(f.chars().take(80).collect()));
        }
        _ => {
            return Err(RecordFileError::Invalid(
                "missing string member 'format'".into(),
            ));
        }
    }
    serde_json::from_value(raw).map_err(|e| RecordFileError::Invalid(e.to_string()))
}

/// The canonical JSON of a request for comparison: its serde form with `null` members removed,
/// so absent optional fields are ignored (key order never matters to the comparison).
fn canonical(req: &ModelRequest) -> Value {
    fn strip(v: Value) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.into_iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| (k, strip(v)))
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.into_iter().map(strip).collect()),
            other => other,
        }
    }
    strip(serde_json::to_value(req).unwrap_or(Value::Null))
}

fn path_key(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        format!("{path}.{key}")
    } else {
        format!("{path}[{}]", Value::String(key.to_string()))
    }
}

fn short(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() > 60 {
        let mut s: String = text.chars().take(60).collect();
        s.push('…');
        s
    } else {
        text
    }
}

/// The first JSON path where `actual` differs from `expected`, and a short description
/// (`expected <v>, got <v>`). Objects are compared as maps (expected key order first), arrays
/// element by element. `None` when equal.
pub(crate) fn first_difference(expected: &Value, actual: &Value) -> Option<(String, String)> {
    fn walk(path: String, e: &Value, a: &Value) -> Option<(String, String)> {
        match (e, a) {
            (Value::Object(em), Value::Object(am)) => {
                for (k, ev) in em {
                    match am.get(k) {
                        Some(av) => {
                            if let Some(d) = walk(path_key(&path, k), ev, av) {
                                return Some(d);
                            }
                        }
                        None => {
                            return Some((
                                path_key(&path, k),
                                format!("expected {}, got nothing", short(ev)),
                            ));
                        }
                    }
                }
                am.iter()
                    .find(|(k, _)| !em.contains_key(*k))
                    .map(|(k, av)| {
                        (
                            path_key(&path, k),
                            format!("expected nothing, got {}", short(av)),
                        )
                    })
            }
            (Value::Array(ea), Value::Array(aa)) => {
                for (i, (ev, av)) in ea.iter().zip(aa.iter()).enumerate() {
                    if let Some(d) = walk(format!("{path}[{i}]"), ev, av) {
                        return Some(d);
                    }
                }
                if ea.len() != aa.len() {
                    let i = ea.len().min(aa.len());
                    return Some((
                        format!("{path}[{i}]"),
                        format!("expected {} elements, got {}", ea.len(), aa.len()),
                    ));
                }
                None
            }
            _ if e == a => None,
            _ => Some((path, format!("expected {}, got {}", short(e), short(a)))),
        }
    }
    walk("$".to_string(), expected, actual)
}

struct ReplayState {
    next: usize,
    calls: Vec<ModelRequest>,
}

/// Strictly sequential replay of recorded exchanges (RUNTIME.md §13.2): each call is compared
/// with the next record's request; a match returns a copy of its response.
pub struct ReplayClient {
    records: Vec<ModelRecord>,
    state: Mutex<ReplayState>,
}

impl std::fmt::Debug for ReplayClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplayClient")
            .field("records", &self.records.len())
            .field("remaining", &self.remaining())
            .finish()
    }
}

impl ReplayClient {
    /// A client replaying `records` in order.
    pub fn new(records: Vec<ModelRecord>) -> ReplayClient {
        ReplayClient {
            records,
            state: Mutex::new(ReplayState {
                next: 0,
                calls: Vec::new(),
            }),
        }
    }

    /// Parses record-file text (see [`parse_record_file`]).
    pub(crate) fn from_json(text: &str) -> Result<ReplayClient, RecordFileError> {
        Ok(ReplayClient::new(parse_record_file(text)?.records))
    }

    /// Loads a record file (at most 64 MiB).
    pub fn load(path: &Path) -> Result<ReplayClient, RecordFileError> {
        let io = |detail: String| RecordFileError::Io {
            path: path.display().to_string(),
            detail,
        };
        let meta = std::fs::metadata(path).map_err(|e| io(e.to_string()))?;
        if meta.len() > MAX_RECORD_FILE_BYTES {
            return Err(RecordFileError::Invalid(format!(
                "larger than {} MiB",
                MAX_RECORD_FILE_BYTES / (1024 * 1024)
            )));
        }
        let text = std::fs::read_to_string(path).map_err(|e| io(e.to_string()))?;
        ReplayClient::from_json(&text)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, ReplayState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every request received so far, matched or not, in call order.
    pub fn calls(&self) -> Vec<ModelRequest> {
        self.state().calls.clone()
    }

    /// Records not yet consumed.
    pub fn remaining(&self) -> usize {
        self.records.len() - self.state().next
    }
}

impl ModelClient for ReplayClient {
    /// Errors: `no remaining records` past the end; `request mismatch at record <id>: first
    /// difference at <path>: expected …, got …` on a mismatch (the record is not consumed).
    fn complete(&self, req: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let mut state = self.state();
        state.calls.push(req.clone());
        let Some(record) = self.records.get(state.next) else {
            return Err(ModelError::ReplayExhausted);
        };
        let expected = canonical(&record.request);
        let actual = canonical(req);
        if let Some((path, detail)) = first_difference(&expected, &actual) {
            return Err(ModelError::ReplayMismatch {
                id: record.id_text(),
                path,
                detail,
            });
        }
        state.next += 1;
        Ok(record.response.clone())
    }
}

/// Wraps a live client and writes every successful exchange to a record file
/// (`REACTOR_MODEL_RECORD`, RUNTIME.md §13.2). The file is rewritten after each call through a
/// temporary file, fsync and rename, so it is always a complete record file. Failed calls are
/// not recorded.
pub struct RecordingClient<C> {
    inner: C,
    path: PathBuf,
    records: Mutex<Vec<ModelRecord>>,
}

impl<C> std::fmt::Debug for RecordingClient<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingClient")
            .field("path", &self.path)
            .finish()
    }
}

impl<C: ModelClient> RecordingClient<C> {
    /// Records the calls made through `inner` into `path` (replacing any existing file on the
    /// first successful call).
    pub fn new(inner: C, path: impl Into<PathBuf>) -> RecordingClient<C> {
        RecordingClient {
            inner,
            path: path.into(),
            records: Mutex::new(Vec::new()),
        }
    }

    /// The records written so far.
    pub fn records(&self) -> Vec<ModelRecord> {
        self.records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn write(&self, records: &[ModelRecord]) -> std::io::Result<()> {
        let file = RecordFile {
            format: RECORD_FORMAT.to_string(),
            records: records.to_vec(),
        };
        let mut text = serde_json::to_string_pretty(&file).map_err(std::io::Error::other)?;
        text.push('\n');
        let dir = self
            .path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "records.json".into());
        let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
        {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, &self.path)?;
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

impl<C: ModelClient> ModelClient for RecordingClient<C> {
    fn complete(&self, req: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let response = self.inner.complete(req)?;
        let mut records = self.records.lock().unwrap_or_else(|p| p.into_inner());
        let id = Value::from(records.len() as u64 + 1);
        records.push(ModelRecord {
            id,
            request: req.clone(),
            response: response.clone(),
        });
        self.write(&records).map_err(|e| ModelError::Record {
            path: self.path.display().to_string(),
            detail: e.to_string(),
        })?;
        Ok(response)
    }
}

/// Wraps `client` in a [`RecordingClient`] when `REACTOR_MODEL_RECORD` names a file; returns it
/// unchanged otherwise.
pub(crate) fn with_recording_from_env(client: Box<dyn ModelClient>) -> Box<dyn ModelClient> {
    match std::env::var(RECORD_ENV) {
        Ok(path) if !path.trim().is_empty() => Box::new(RecordingClient::new(client, path)),
        _ => client,
    }
}

/// The client of offline mode: refuses every call with `offline mode: model calls are disabled`
/// and makes no request (RUNTIME.md §8.7, HOST.md §2.1).
#[derive(Debug, Clone, Copy, Default)]
pub struct OfflineClient;

impl ModelClient for OfflineClient {
    fn complete(&self, _req: &ModelRequest) -> Result<ModelResponse, ModelError> {
        Err(ModelError::Offline)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::types::{Message, Usage};
    use serde_json::json;

    fn req(text: &str) -> ModelRequest {
        ModelRequest {
            purpose: "render:a".into(),
            model: "m".into(),
            system: vec!["s".into()],
            messages: vec![Message::user(text)],
            ..Default::default()
        }
    }

    #[test]
    fn differences_name_the_first_path() {
        let e = json!({"a": 1, "b": [1, {"c": "x"}]});
        assert_eq!(
            first_difference(&e, &json!({"b": [1, {"c": "x"}], "a": 1})),
            None
        );
        assert_eq!(
            first_difference(&e, &json!({"a": 1, "b": [1, {"c": "y"}]})).unwrap(),
            (
                "$.b[1].c".to_string(),
                "expected \"x\", got \"y\"".to_string()
            )
        );
        assert_eq!(
            first_difference(&e, &json!({"a": 1, "b": [1]})).unwrap().0,
            "$.b[1]"
        );
        assert_eq!(
            first_difference(&e, &json!({"a": 1, "b": [1, {"c": "x"}], "z": 0}))
                .unwrap()
                .0,
            "$.z"
        );
        assert_eq!(
            first_difference(&json!({"a b": 1}), &json!({})).unwrap().0,
            "$[\"a b\"]"
        );
    }

    #[test]
    fn replay_is_sequential_and_strict() {
        let resp = ModelResponse {
            text: Some("one".into()),
            usage: Usage {
                input: 3,
                ..Default::default()
            },
            ..Default::default()
        };
        let client = ReplayClient::new(vec![ModelRecord {
            id: json!("r1"),
            request: req("hello"),
            response: resp.clone(),
        }]);
        let err = client.complete(&req("hullo")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "request mismatch at record r1: first difference at $.messages[0].text: expected \"hello\", got \"hullo\""
        );
        assert_eq!(client.remaining(), 1);
        assert_eq!(client.complete(&req("hello")).unwrap(), resp);
        assert_eq!(client.remaining(), 0);
        assert_eq!(
            client.complete(&req("hello")).unwrap_err().to_string(),
            "no remaining records"
        );
        assert_eq!(client.calls().len(), 3);
    }

    #[test]
    fn absent_and_null_optionals_compare_equal() {
        let text = json!({"format": RECORD_FORMAT, "records": [{
            "id": 1,
            "request": {"model": "m", "purpose": "render:a", "system": ["s"],
                        "messages": [{"role": "user", "text": "hello"}],
                        "temperature": null, "output_schema": null},
            "response": {"text": "ok"}
        }]})
        .to_string();
        let client = ReplayClient::from_json(&text).unwrap();
        assert_eq!(
            client.complete(&req("hello")).unwrap().text.as_deref(),
            Some("ok")
        );
    }

    #[test]
    fn bad_record_files_are_errors() {
        assert!(matches!(
            ReplayClient::from_json("not json"),
            Err(RecordFileError::Invalid(_))
        ));
        assert!(matches!(
            ReplayClient::from_json("{\"format\": \"other/1\", \"records\": []}"),
            Err(RecordFileError::Format(_))
        ));
        assert!(matches!(
            ReplayClient::from_json("{\"records\": []}"),
            Err(RecordFileError::Invalid(_))
        ));
        let bad_shape = json!({"format": RECORD_FORMAT, "records": [{"id": 1, "request": {"messages": 5}, "response": {}}]});
        assert!(matches!(
            ReplayClient::from_json(&bad_shape.to_string()),
            Err(RecordFileError::Invalid(_))
        ));
        let missing = ReplayClient::load(Path::new("/nonexistent/records.json")).unwrap_err();
        assert!(
            missing
                .to_string()
                .starts_with("cannot read model record file")
        );
    }

    #[test]
    fn offline_refuses() {
        let e = OfflineClient.complete(&req("x")).unwrap_err();
        assert_eq!(e.to_string(), "offline mode: model calls are disabled");
    }
}
