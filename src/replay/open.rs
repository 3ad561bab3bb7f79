//! Opening a state directory read-only (VIEWER.md §3): the ledger as a consistent prefix, each
//! receipt kept raw and projected, topology (flat or envelope, or the node-only fallback),
//! labels, beats and the world-model store.

use std::path::Path;
use std::sync::Arc;

use crate::format::json::{self, NonFinite, Value};
use crate::format::json::{DeError, PathSegment};
use crate::format::layout;
use crate::format::receipt::{
    ChainVerdict, Fingerprints, NonEmptyText, SafeCount, Status, WakeSource,
    recompute_content_hash, verify_chain_iter,
};
use crate::format::topology::{Topology, unwrap_topology};
use crate::replay::ledger::{LedgerReadError, read_ledger_from};
use crate::store::ledger::{LedgerError, TornTail};
use crate::store::source::{DiskSource, StateSource};

/// Library options of [`open_state_dir`] (VIEWER.md §4.2 `OpenStateDirOptions`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OpenStateDirOptions {
    /// Dollars per fresh token (default 0).
    pub fresh_rate: f64,
    /// Dollars per reused token (default 0).
    pub reused_rate: f64,
}

/// Why a state directory could not be opened (VIEWER.md §7).
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The path is not a state directory (no `receipts.json` or `compile` inside).
    #[error("not a reactor state-dir: {0}")]
    NotAStateDir(String),
    /// An I/O failure.
    #[error("{0}")]
    Io(String),
    /// `receipts.json` does not hold an array.
    #[error("receipts.json must contain a JSON array")]
    ReceiptsNotArray,
    /// `receipts.json` is corrupt (not a torn tail).
    #[error("receipts.json is corrupt at byte {offset}: {message}")]
    ReceiptsCorrupt {
        /// Byte offset.
        offset: usize,
        /// Parser message.
        message: String,
    },
    /// An element that cannot be projected into a frame.
    #[error("receipts.json[{index}]: {problem}")]
    ReceiptProjection {
        /// Element index.
        index: usize,
        /// The first problem.
        problem: String,
    },
    /// `compile/topology.json` is present but not JSON.
    #[error("compile/topology.json is not valid JSON: {0}")]
    TopologyInvalidJson(String),
    /// `--example` with a name that is not bundled.
    #[error("unknown example \"{0}\"")]
    UnknownExample(String),
}

impl From<LedgerReadError> for OpenError {
    fn from(e: LedgerReadError) -> Self {
        match e {
            LedgerReadError::Content(c) => c.into(),
            io => OpenError::Io(io.to_string()),
        }
    }
}

impl From<LedgerError> for OpenError {
    fn from(e: LedgerError) -> Self {
        match e {
            LedgerError::NotArray => OpenError::ReceiptsNotArray,
            LedgerError::Corrupt { offset, message } => {
                OpenError::ReceiptsCorrupt { offset, message }
            }
            other => OpenError::Io(other.to_string()),
        }
    }
}

/// The frame-relevant fields of one receipt (VIEWER.md §3.2 projection), read by the derived
/// decoder ([`project_receipt`]).
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(from = "ProjectionWire")]
pub struct ProjectedReceipt {
    /// Node id.
    pub node: String,
    /// Disposition.
    pub status: Status,
    /// `wake.source`.
    pub wake_source: WakeSource,
    /// Fingerprints in parsed key order (may lack `@atomic`).
    pub fingerprints: Fingerprints,
    /// `cost.tokens.fresh`.
    pub fresh: u64,
    /// `cost.tokens.reused`.
    pub reused: u64,
    /// `cost.surprise_cause`.
    pub surprise_cause: WakeSource,
}

/// The members VIEWER.md §3.2 requires, in the order their problems are reported.
#[derive(serde::Deserialize)]
struct ProjectionWire {
    node: NonEmptyText,
    status: Status,
    wake: ProjectedWake,
    #[serde(deserialize_with = "Fingerprints::deserialize_lossy")]
    fingerprints: Fingerprints,
    cost: ProjectedCost,
}

#[derive(serde::Deserialize)]
struct ProjectedWake {
    source: WakeSource,
}

#[derive(serde::Deserialize)]
struct ProjectedCost {
    tokens: ProjectedTokens,
    surprise_cause: WakeSource,
}

#[derive(serde::Deserialize)]
struct ProjectedTokens {
    fresh: SafeCount,
    reused: SafeCount,
}

impl From<ProjectionWire> for ProjectedReceipt {
    fn from(w: ProjectionWire) -> ProjectedReceipt {
        ProjectedReceipt {
            node: w.node.0,
            status: w.status,
            wake_source: w.wake.source,
            fingerprints: w.fingerprints,
            fresh: w.cost.tokens.fresh.0,
            reused: w.cost.tokens.reused.0,
            surprise_cause: w.cost.surprise_cause,
        }
    }
}

/// Why an element cannot be projected: the first problem in VIEWER.md §3.2 order, worded as
/// the specification words it (`status must be one of rendered | skipped | failed`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct ProjectionError {
    message: String,
}

impl ProjectionError {
    fn of(e: &DeError) -> ProjectionError {
        let path: Vec<&str> = e
            .path()
            .map(|s| match s {
                PathSegment::Key(k) => k.as_str(),
                PathSegment::Index(_) => "",
            })
            .collect();
        let message = match path.as_slice() {
            [] => "receipt must be an object".to_string(),
            ["node", ..] => "node must be a non-empty string".to_string(),
            ["status", ..] => "status must be one of rendered | skipped | failed".to_string(),
            ["wake"] => "wake must be an object".to_string(),
            ["wake", ..] => "wake.source must be one of input | self | external".to_string(),
            ["fingerprints", ..] => "fingerprints must be an object of strings".to_string(),
            ["cost"] => "cost must be an object".to_string(),
            ["cost", "tokens"] => "cost.tokens.fresh must be a non-negative safe integer".into(),
            ["cost", "tokens", k, ..] => {
                format!("cost.tokens.{k} must be a non-negative safe integer")
            }
            ["cost", ..] => "cost.surprise_cause must be one of input | self | external".into(),
            _ => e.to_string(),
        };
        ProjectionError { message }
    }
}

/// Projects one raw element (VIEWER.md §3.2).
///
/// Errors: [`ProjectionError`], the first problem.
pub(crate) fn project_receipt(v: &Value) -> Result<ProjectedReceipt, ProjectionError> {
    json::from_value(v).map_err(|e| ProjectionError::of(&e))
}

/// One beat of `beats.json` (FORMATS.md §15.3).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Beat {
    /// Beat name (`""` by default).
    pub name: String,
    /// The frame the caption belongs to.
    pub park: f64,
    /// Inclusive range start (default `park`).
    pub from: f64,
    /// Inclusive range end (default `park`).
    pub to: f64,
    /// Hold time for recorders, ms (default 0).
    pub hold_ms: f64,
    /// One line.
    pub caption: String,
}

/// `beats.json` as the viewer reads it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct BeatsMap {
    /// Scenario name (`""` by default).
    pub scenario: String,
    /// Title (`""` by default).
    pub title: String,
    /// Kept beats, in file order.
    pub beats: Vec<Beat>,
}

/// Reads `beats.json` bytes (absent or malformed → `None`).
pub(crate) fn parse_beats(bytes: &[u8]) -> Option<BeatsMap> {
    let v = json::parse(bytes).ok()?;
    let o = v.as_object()?;
    let beats = o.get("beats")?.as_array()?;
    let s = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
    let mut kept = Vec::new();
    for b in beats {
        let (Some(park), Some(caption)) = (
            b.get("park").and_then(Value::as_f64),
            b.get("caption").and_then(Value::as_str),
        ) else {
            continue;
        };
        let num = |k: &str, d: f64| b.get(k).and_then(Value::as_f64).unwrap_or(d);
        kept.push(Beat {
            name: s(b.get("name")),
            park,
            from: num("from", park),
            to: num("to", park),
            hold_ms: num("holdMs", 0.0),
            caption: caption.to_string(),
        });
    }
    Some(BeatsMap {
        scenario: s(o.get("scenario")),
        title: s(o.get("title")),
        beats: kept,
    })
}

/// Reads `compile/labels.json` bytes: non-objects → empty; non-string values dropped; order kept.
pub(crate) fn parse_labels(bytes: &[u8]) -> Vec<(String, String)> {
    match json::parse(bytes) {
        Ok(Value::Object(o)) => o
            .iter()
            .filter_map(|(k, v)| Some((k.to_lossy().into_owned(), v.as_str()?.to_string())))
            .collect(),
        _ => Vec::new(),
    }
}

/// `compile/labels.json` as the viewer reads it (VIEWER.md §3.4): `(node id, label)` pairs in
/// file order.
pub type Labels = Vec<(String, String)>;

/// Reads `compile/labels.json` through a source: absent, unreadable or unparsable → empty.
pub(crate) fn labels_from(src: &dyn StateSource) -> Labels {
    src.read(&format!("{}/{}", layout::COMPILE_DIR, layout::LABELS_FILE))
        .ok()
        .flatten()
        .map(|b| parse_labels(&b))
        .unwrap_or_default()
}

/// Reads `beats.json` through a source: absent, unreadable or malformed → `None`.
pub(crate) fn beats_from(src: &dyn StateSource) -> Option<BeatsMap> {
    src.read(layout::BEATS_FILE)
        .ok()
        .flatten()
        .and_then(|b| parse_beats(&b))
}

/// `read_labels(state_dir)` (VIEWER.md §7, §3.4): `<state_dir>/compile/labels.json` as
/// `(node id, label)` pairs in file order. Absent, unreadable, unparsable or not an object →
/// empty; entries whose value is not a string are dropped. Never fails.
pub fn read_labels(state_dir: &Path) -> Labels {
    labels_from(&DiskSource::new(state_dir))
}

/// `read_beats(state_dir)` (VIEWER.md §7, §3.4; FORMATS.md §15.3): `<state_dir>/beats.json`,
/// keeping only beats with a numeric `park` and a string `caption`. Absent, unreadable or
/// malformed → `None`. Never fails.
pub fn read_beats(state_dir: &Path) -> Option<BeatsMap> {
    beats_from(&DiskSource::new(state_dir))
}

/// `verify_node_chain_raw(opened, node)` (VIEWER.md §7): the raw receipts whose `node` member is
/// `node`, in ledger order, verified as one chain (FORMATS.md §7.1–§7.2) with the content
/// addresses the open already recomputed. A node with no receipt gives an empty, valid chain.
pub fn verify_node_chain_raw(opened: &OpenedStateDir, node: &str) -> ChainVerdict {
    verify_chain_iter(
        opened
            .raw
            .iter()
            .zip(&opened.recomputed)
            .filter(|(v, _)| v.get("node").and_then(Value::as_str) == Some(node))
            .map(|(v, address)| (v, Some(address))),
    )
}

/// An opened state directory (VIEWER.md §4.2 `OpenedStateDir`).
#[derive(Debug)]
pub struct OpenedStateDir {
    /// The directory string as given, or `example:<name>`.
    pub state_dir: String,
    /// Where the bytes come from.
    pub source: Arc<dyn StateSource>,
    /// Every complete element of `receipts.json`, raw.
    pub raw: Vec<Value>,
    /// The projection of each element.
    pub projected: Vec<ProjectedReceipt>,
    /// Each element's content address recomputed from its values.
    pub recomputed: Vec<Result<String, NonFinite>>,
    /// The topology, when a usable one was read.
    pub topology: Option<Topology>,
    /// `compile/labels.json`, file order.
    pub labels: Labels,
    /// `beats.json`.
    pub beats: Option<BeatsMap>,
    /// True only for `--example`.
    pub synthetic: bool,
    /// Set when the ledger ended with an incomplete receipt.
    pub torn: Option<TornTail>,
    /// True when `receipts.json` exists with zero bytes.
    pub zero_length: bool,
    /// Offset just after the last complete element of `receipts.json` (live follow resumes
    /// parsing there).
    pub end_of_complete: usize,
    /// The `receipts.json` file that was read (live follow checks it is still the same).
    pub ledger_identity: Option<crate::replay::ledger::FileIdentity>,
    /// Dollar rates.
    pub options: OpenStateDirOptions,
}

impl OpenedStateDir {
    /// The chain verdict of `node`'s receipts ([`verify_node_chain_raw`]).
    pub fn verify_node_chain(&self, node: &str) -> ChainVerdict {
        verify_node_chain_raw(self, node)
    }

    /// The CLI's stderr note for a torn tail (FORMATS.md §11.2 step 4), if any.
    pub fn torn_note(&self) -> Option<String> {
        self.torn.as_ref().map(torn_note)
    }
}

/// The CLI's stderr note for a torn tail (FORMATS.md §11.2 step 4).
pub(crate) fn torn_note(t: &TornTail) -> String {
    format!(
        "reactor-devtools: note: receipts.json ends with an incomplete receipt (a write in progress or an interrupted append); using the {} complete receipt(s)",
        t.complete
    )
}

/// The state-dir check (VIEWER.md §2.4 step 12): the path exists and contains an entry named
/// `receipts.json` or `compile`.
pub fn is_reactor_state_dir(path: &Path) -> bool {
    path.is_dir()
        && (std::fs::symlink_metadata(path.join(layout::RECEIPTS_FILE)).is_ok()
            || std::fs::symlink_metadata(path.join(layout::COMPILE_DIR)).is_ok())
}

/// Hashes every element, on two threads when the ledger is large.
pub(crate) fn recompute_all(raw: &[Value]) -> Vec<Result<String, NonFinite>> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(4);
    if raw.len() < 2048 || threads < 2 {
        return raw.iter().map(recompute_content_hash).collect();
    }
    let chunk = raw.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = raw
            .chunks(chunk)
            .map(|c| s.spawn(move || c.iter().map(recompute_content_hash).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    })
}

/// Reads the topology file through a source (VIEWER.md §3.3).
pub(crate) fn read_topology_from(src: &dyn StateSource) -> Result<Option<Topology>, OpenError> {
    let rel = format!("{}/{}", layout::COMPILE_DIR, layout::TOPOLOGY_FILE);
    let Some(bytes) = src
        .read(&rel)
        .map_err(|e| OpenError::Io(format!("cannot read {rel}: {e}")))?
    else {
        return Ok(None);
    };
    let v = json::parse(&bytes).map_err(|e| OpenError::TopologyInvalidJson(e.to_string()))?;
    Ok(unwrap_topology(&v).map(|t| t.topology))
}

/// `read_topology(state_dir)` (VIEWER.md §7): errors only on invalid JSON.
pub fn read_topology(state_dir: &Path) -> Result<Option<Topology>, OpenError> {
    read_topology_from(&DiskSource::new(state_dir))
}

/// Opens a state directory on disk (VIEWER.md §3.1). `dir` is echoed as given.
pub fn open_state_dir(dir: &Path, opts: &OpenStateDirOptions) -> Result<OpenedStateDir, OpenError> {
    if !is_reactor_state_dir(dir) {
        return Err(OpenError::NotAStateDir(dir.display().to_string()));
    }
    open_source(
        dir.display().to_string(),
        Arc::new(DiskSource::new(dir)),
        false,
        opts,
    )
}

/// Opens any source (disk or embedded).
pub(crate) fn open_source(
    state_dir: String,
    source: Arc<dyn StateSource>,
    synthetic: bool,
    opts: &OpenStateDirOptions,
) -> Result<OpenedStateDir, OpenError> {
    // The one ledger reader: a consistent prefix even while a writer appends.
    let ledger = read_ledger_from(source.as_ref())?;
    let (raw, torn, zero_length, end_of_complete) = (
        ledger.receipts,
        ledger.torn,
        ledger.zero_length,
        ledger.end_of_complete,
    );
    let mut projected = Vec::with_capacity(raw.len());
    for (index, v) in raw.iter().enumerate() {
        projected.push(
            project_receipt(v).map_err(|e| OpenError::ReceiptProjection {
                index,
                problem: e.to_string(),
            })?,
        );
    }
    let recomputed = recompute_all(&raw);
    let topology = read_topology_from(source.as_ref())?;
    let labels = labels_from(source.as_ref());
    let beats = beats_from(source.as_ref());
    Ok(OpenedStateDir {
        state_dir,
        source,
        raw,
        projected,
        recomputed,
        topology,
        labels,
        beats,
        synthetic,
        torn,
        zero_length,
        end_of_complete,
        ledger_identity: ledger.identity,
        options: *opts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beats_and_labels_tolerance() {
        let b = parse_beats(br#"{"title":"T","beats":[{"park":3,"caption":"c"},{"park":"x","caption":"c"},{"park":1}]}"#).unwrap();
        assert_eq!(b.title, "T");
        assert_eq!(b.scenario, "");
        assert_eq!(b.beats.len(), 1);
        assert_eq!(b.beats[0].from, 3.0);
        assert_eq!(b.beats[0].hold_ms, 0.0);
        assert!(parse_beats(b"[]").is_none());
        assert!(parse_beats(br#"{"beats":{}}"#).is_none());
        assert!(parse_beats(b"{").is_none());
        assert_eq!(
            parse_labels(br#"{"a":"A","b":3,"c":"C"}"#),
            vec![("a".into(), "A".into()), ("c".into(), "C".into())]
        );
        assert!(parse_labels(b"[1]").is_empty());
    }

    #[test]
    fn projection_problems() {
        let p = |t: &str| project_receipt(&json::parse_str(t).unwrap()).map_err(|e| e.to_string());
        assert_eq!(p("3").unwrap_err(), "receipt must be an object");
        assert_eq!(
            p(r#"{"node":""}"#).unwrap_err(),
            "node must be a non-empty string"
        );
        assert_eq!(
            p(r#"{"node":"a","status":"ok"}"#).unwrap_err(),
            "status must be one of rendered | skipped | failed"
        );
        let ok = p(r#"{"node":"a","status":"skipped","wake":{"source":"self"},"fingerprints":{},"cost":{"tokens":{"fresh":0,"reused":2},"surprise_cause":"self"}}"#).unwrap();
        assert_eq!(ok.reused, 2);
        assert_eq!(
            p(r#"{"node":"a","status":"skipped","wake":{"source":"self"},"fingerprints":{},"cost":{"tokens":{"fresh":-1,"reused":2},"surprise_cause":"self"}}"#).unwrap_err(),
            "cost.tokens.fresh must be a non-negative safe integer"
        );
        // Every problem of VIEWER.md §3.2, first one wins, in the specified order.
        let base = r#""node":"a","status":"failed""#;
        let wake = r#""wake":{"source":"input"},"fingerprints":{}"#;
        let cases = [
            (format!("{{{base}}}"), "wake must be an object"),
            (
                format!(r#"{{{base},"wake":{{"source":"later"}}}}"#),
                "wake.source must be one of input | self | external",
            ),
            (
                format!(r#"{{{base},"wake":{{"source":"input"}},"fingerprints":{{"a":1}}}}"#),
                "fingerprints must be an object of strings",
            ),
            (
                format!(r#"{{{base},{wake},"cost":[]}}"#),
                "cost must be an object",
            ),
            (
                format!(r#"{{{base},{wake},"cost":{{}}}}"#),
                "cost.tokens.fresh must be a non-negative safe integer",
            ),
            (
                format!(r#"{{{base},{wake},"cost":{{"tokens":{{"fresh":1,"reused":"2"}}}}}}"#),
                "cost.tokens.reused must be a non-negative safe integer",
            ),
            (
                format!(r#"{{{base},{wake},"cost":{{"tokens":{{"fresh":1,"reused":2}}}}}}"#),
                "cost.surprise_cause must be one of input | self | external",
            ),
        ];
        for (text, problem) in cases {
            assert_eq!(p(&text).unwrap_err(), problem, "{text}");
        }
        // Lone surrogates in the node and in tokens are read with U+FFFD (tolerant reading).
        let ok = p(r#"{"node":"\ud800","status":"failed","wake":{"source":"input","refs":3},"fingerprints":{"@atomic":"\udc00"},"cost":{"tokens":{"fresh":1,"reused":2},"surprise_cause":"self"},"extra":1}"#).unwrap();
        assert_eq!(ok.node, "\u{fffd}");
        assert_eq!(ok.fingerprints.atomic_token(), Some("\u{fffd}"));
        assert_eq!((ok.fresh, ok.surprise_cause), (1, WakeSource::SelfWake));
    }
}
