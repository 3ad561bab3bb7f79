//! Gateway connectors (RUNTIME.md §9.3–§9.4, HOST.md §4.3): `static`, `file` and `http`
//! fetches, arrival ids, and `poll_gateway` staging each new arrival through the shared cursor.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::core::{Arrival, CoreError, Reactor, ReconcileResult, StageOutcome};
use crate::format::address::address;
use crate::format::json::{self, Value};
use crate::format::receipt::{Wake, WakeSource};

/// Largest `http` connector body (16 MiB).
pub(crate) const HTTP_BODY_LIMIT: u64 = 16 * 1024 * 1024;

/// What a connector fetches.
#[derive(Clone, Debug, PartialEq)]
pub enum ConnectorKind {
    /// The configured items, every poll.
    Static {
        /// The items.
        items: Vec<Value>,
    },
    /// Every `*.json` file directly inside `dir`, by name.
    File {
        /// The directory (absolute or relative to the working directory).
        dir: PathBuf,
    },
    /// `GET url` (with `{as_of}` / `{cursor}` replaced by the URL-encoded poll instant).
    Http {
        /// The URL template.
        url: String,
        /// Headers; a value `${NAME}` is replaced by the environment variable at poll time.
        headers: Vec<(String, String)>,
        /// Connect timeout (10 s).
        connect_timeout: Duration,
        /// Whole-request timeout (60 s).
        timeout: Duration,
    },
}

/// A gateway's connector.
#[derive(Clone, Debug, PartialEq)]
pub struct Connector {
    /// The fetch.
    pub kind: ConnectorKind,
    /// The item member carrying the arrival id (`id`).
    pub id_field: String,
}

/// One fetched element, with the fallback id its source provides (the file stem).
#[derive(Clone, Debug, PartialEq)]
pub struct Fetched {
    /// The item.
    pub item: Value,
    /// The id when the item has none of its own (`file` connector: the stem).
    pub(crate) fallback_id: Option<String>,
}

/// Errors fetching.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FetchError {
    /// The poll failed; nothing is staged.
    #[error("{0}")]
    Failed(String),
}

/// Every byte but RFC 3986 unreserved characters (`A-Z a-z 0-9 - _ . ~`).
const NOT_UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Percent-encodes the UTF-8 bytes of `s` except unreserved characters (RFC 3986 §2.3), with
/// upper-case hex digits: `2026-06-02T18:00:00.000Z` → `2026-06-02T18%3A00%3A00.000Z`.
pub(crate) fn url_encode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, NOT_UNRESERVED).to_string()
}

fn expand_env(value: &str) -> String {
    match value.strip_prefix("${").and_then(|v| v.strip_suffix('}')) {
        Some(name) => std::env::var(name).unwrap_or_default(),
        None => value.to_string(),
    }
}

impl Connector {
    /// Fetches the elements of one poll (RUNTIME.md §9.4). `as_of` is the poll instant
    /// (`2026-06-02T18:00:00.000Z`). Returns the elements and warnings (skipped files, a
    /// payload that is not an array).
    pub fn fetch(&self, as_of: &str) -> Result<(Vec<Fetched>, Vec<String>), FetchError> {
        match &self.kind {
            ConnectorKind::Static { items } => Ok((
                items
                    .iter()
                    .map(|i| Fetched {
                        item: i.clone(),
                        fallback_id: None,
                    })
                    .collect(),
                Vec::new(),
            )),
            ConnectorKind::File { dir } => Ok(fetch_dir(dir)),
            ConnectorKind::Http {
                url,
                headers,
                connect_timeout,
                timeout,
            } => {
                let url = url
                    .replace("{as_of}", &url_encode(as_of))
                    .replace("{cursor}", &url_encode(as_of));
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .timeout_connect(Some(*connect_timeout))
                    .timeout_global(Some(*timeout))
                    .user_agent(format!("reactor/{}", crate::version::VERSION))
                    .build()
                    .into();
                let mut req = agent.get(&url);
                for (k, v) in headers {
                    req = req.header(k.as_str(), expand_env(v));
                }
                let mut resp = req.call().map_err(|e| {
                    FetchError::Failed(format!("connector(http): GET {url} failed: {e}"))
                })?;
                let status = resp.status().as_u16();
                if !(200..300).contains(&status) {
                    return Err(FetchError::Failed(format!(
                        "connector(http): GET {url} → {status}"
                    )));
                }
                let body = resp
                    .body_mut()
                    .with_config()
                    .limit(HTTP_BODY_LIMIT)
                    .read_to_vec()
                    .map_err(|e| FetchError::Failed(format!("connector(http): GET {url}: {e}")))?;
                let v = json::parse(&body).map_err(|e| {
                    FetchError::Failed(format!(
                        "connector(http): GET {url}: the body is not JSON ({e})"
                    ))
                })?;
                Ok(array_elements(v))
            }
        }
    }
}

fn array_elements(v: Value) -> (Vec<Fetched>, Vec<String>) {
    match v {
        Value::Array(items) => (
            items
                .into_iter()
                .map(|item| Fetched {
                    item,
                    fallback_id: None,
                })
                .collect(),
            Vec::new(),
        ),
        other => (
            Vec::new(),
            vec![format!(
                "the connector payload is a JSON {}, not an array; no arrivals",
                other.type_name()
            )],
        ),
    }
}

fn fetch_dir(dir: &Path) -> (Vec<Fetched>, Vec<String>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return (Vec::new(), Vec::new());
    };
    let mut names: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
        .collect();
    names.sort();
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    for p in names {
        let stem = p
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        match std::fs::read(&p)
            .map_err(|e| e.to_string())
            .and_then(|b| json::parse(&b).map_err(|e| e.to_string()))
        {
            Ok(item) => out.push(Fetched {
                item,
                fallback_id: Some(stem),
            }),
            Err(e) => warnings.push(format!("skipped {}: {e}", p.display())),
        }
    }
    (out, warnings)
}

/// The arrival id of an item (FORMATS.md §13): its `id_field` member when that is a non-empty
/// string or a finite number (JavaScript decimal form), else `fallback`, else the content
/// address of its canonical JSON (`None` only for an item that cannot be canonicalized).
pub fn arrival_id(item: &Value, id_field: &str, fallback: Option<&str>) -> Option<String> {
    match item.get(id_field) {
        Some(Value::String(s)) if !s.is_empty() => return Some(s.to_lossy().into_owned()),
        Some(Value::Number(n)) if n.is_finite() => return Some(json::number_to_string(*n)),
        _ => {}
    }
    if let Some(f) = fallback {
        return Some(f.to_string());
    }
    json::canonical_string(item)
        .ok()
        .map(|c| address(c.as_bytes()))
}

/// The arrival id of a trigger payload (`trigger --data`, `POST /trigger/<node>`): the
/// `id_field` member rule, else `trigger:` + the content address of its canonical JSON.
pub(crate) fn trigger_arrival_id(item: &Value, id_field: &str) -> Option<String> {
    match item.get(id_field) {
        Some(Value::String(s)) if !s.is_empty() => return Some(s.to_lossy().into_owned()),
        Some(Value::Number(n)) if n.is_finite() => return Some(json::number_to_string(*n)),
        _ => {}
    }
    json::canonical_string(item)
        .ok()
        .map(|c| format!("trigger:{}", address(c.as_bytes())))
}

/// The outcome of one gateway poll.
#[derive(Clone, Debug, Default)]
pub(crate) struct PollReport {
    /// Arrivals staged, in payload order.
    pub(crate) ingested_ids: Vec<String>,
    /// Arrivals skipped (already in the cursor, or repeated within the poll).
    pub(crate) skipped_ids: Vec<String>,
    /// Reconcile results of the drains (one per staged arrival).
    pub results: Vec<ReconcileResult>,
    /// Soft problems.
    pub warnings: Vec<String>,
}

/// The drain of one staged arrival.
#[derive(Clone, Debug, Default)]
pub(crate) struct ArrivalDrain {
    /// The arrival id.
    pub arrival_id: String,
    /// The drain's results, in firing order.
    pub results: Vec<ReconcileResult>,
    /// Receipts appended by the staging and the drain.
    pub receipts_added: usize,
    /// Wall-clock time of the staging and the drain.
    pub took: std::time::Duration,
}

/// Errors of a poll.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PollError {
    /// The fetch failed; nothing was staged and the cursor is unchanged.
    #[error("{0}")]
    Fetch(#[from] FetchError),
    /// Staging or draining failed (an infrastructure error).
    #[error("{0}")]
    Core(#[from] CoreError),
}

/// `poll_gateway(G, source_id, connector, as_of)` (RUNTIME.md §9.4). `on_drain` is called after
/// each staged arrival's drain, as it finishes (`serve` prints one line per drain).
pub(crate) fn poll_gateway(
    reactor: &Reactor,
    gateway: &str,
    source_id: &str,
    connector: &Connector,
    as_of: &str,
    on_drain: &mut dyn FnMut(&ArrivalDrain),
) -> Result<PollReport, PollError> {
    let (elements, mut warnings) = connector.fetch(as_of)?;
    let mut report = PollReport::default();
    let mut seen_in_poll: Vec<String> = Vec::new();
    for el in elements {
        let Some(id) = arrival_id(&el.item, &connector.id_field, el.fallback_id.as_deref()) else {
            warnings.push("an item could not be canonicalized (non-finite number); skipped".into());
            continue;
        };
        if seen_in_poll.contains(&id) {
            warnings.push(format!(
                "arrival id {id} repeats within one poll; the first occurrence wins"
            ));
            report.skipped_ids.push(id);
            continue;
        }
        seen_in_poll.push(id.clone());
        let started = std::time::Instant::now();
        let before = reactor.ledger_len();
        match reactor.stage_arrival(
            gateway,
            Arrival {
                id: id.clone(),
                item: el.item,
            },
            source_id,
        )? {
            StageOutcome::Duplicate => report.skipped_ids.push(id),
            StageOutcome::Staged(_) => {
                report.ingested_ids.push(id.clone());
                let results = reactor.ingest(gateway, Wake::new(WakeSource::External))?;
                let drain = ArrivalDrain {
                    arrival_id: id,
                    results,
                    receipts_added: reactor.ledger_len().saturating_sub(before),
                    took: started.elapsed(),
                };
                on_drain(&drain);
                report.results.extend(drain.results);
            }
        }
    }
    report.warnings = warnings;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrival_ids() {
        let v = |t: &str| json::parse_str(t).unwrap();
        assert_eq!(
            arrival_id(&v(r#"{"id":"a"}"#), "id", None).as_deref(),
            Some("a")
        );
        assert_eq!(
            arrival_id(&v(r#"{"id":7.5}"#), "id", None).as_deref(),
            Some("7.5")
        );
        assert_eq!(
            arrival_id(&v(r#"{"key":"k"}"#), "key", None).as_deref(),
            Some("k")
        );
        assert_eq!(
            arrival_id(&v(r#"{"id":""}"#), "id", Some("stem")).as_deref(),
            Some("stem")
        );
        let a = arrival_id(&v(r#"{"b":1,"a":2}"#), "id", None).unwrap();
        assert_eq!(a, arrival_id(&v(r#"{"a":2,"b":1}"#), "id", None).unwrap());
        assert!(a.starts_with("sha256:"));
        let t = trigger_arrival_id(&v(r#"[1,2]"#), "id").unwrap();
        assert!(t.starts_with("trigger:sha256:"));
        assert_eq!(
            trigger_arrival_id(&v(r#"{"id":"x"}"#), "id").as_deref(),
            Some("x")
        );
        assert!(
            trigger_arrival_id(&v(r#"{"id":"x"}"#), "key")
                .unwrap()
                .starts_with("trigger:")
        );
    }

    #[test]
    fn file_connector_reads_sorted_json_and_skips_bad_files() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("b.json"), r#"{"x":2}"#).unwrap();
        std::fs::write(d.path().join("a.json"), r#"{"id":"first","x":1}"#).unwrap();
        std::fs::write(d.path().join("c.json"), "{nope").unwrap();
        std::fs::write(d.path().join("d.txt"), "{}").unwrap();
        let c = Connector {
            kind: ConnectorKind::File {
                dir: d.path().to_path_buf(),
            },
            id_field: "id".into(),
        };
        let (els, warnings) = c.fetch("t").unwrap();
        assert_eq!(els.len(), 2);
        assert_eq!(els[0].fallback_id.as_deref(), Some("a"));
        assert_eq!(
            arrival_id(&els[0].item, "id", els[0].fallback_id.as_deref()).as_deref(),
            Some("first")
        );
        assert_eq!(
            arrival_id(&els[1].item, "id", els[1].fallback_id.as_deref()).as_deref(),
            Some("b")
        );
        assert_eq!(warnings.len(), 1);
        let missing = Connector {
            kind: ConnectorKind::File {
                dir: d.path().join("missing"),
            },
            id_field: "id".into(),
        };
        assert!(missing.fetch("t").unwrap().0.is_empty());
    }

    #[test]
    fn non_array_payloads_warn() {
        let (els, w) = array_elements(Value::Null);
        assert!(els.is_empty());
        assert_eq!(w.len(), 1);
        assert_eq!(
            url_encode("2026-06-02T18:00:00.000Z"),
            "2026-06-02T18%3A00%3A00.000Z"
        );
    }
    #[test]
    fn url_encode_keeps_only_unreserved_characters() {
        assert_eq!(url_encode("aZ09-_.~"), "aZ09-_.~");
        assert_eq!(
            url_encode("a b/c?d=e&f+g%h#"),
            "a%20b%2Fc%3Fd%3De%26f%2Bg%25h%23"
        );
        assert_eq!(url_encode("été\u{0}\u{7f}"), "%C3%A9t%C3%A9%00%7F");
        assert_eq!(url_encode(""), "");
    }
}
