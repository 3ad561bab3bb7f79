//! Paged frames and the frame causes (issue 9, project additions to VIEWER.md §6.2):
//!
//! - `GET /api/frames?from=<i>&count=<n>` — frames `i … i+n−1` (fewer at the end of the
//!   ledger, none past it) as `{"from", "count", "total", "frames": [ReceiptFrame + "why"]}`:
//!   each frame exactly as in `/api/state` (VIEWER.md §4.3) with one added member `why`, the
//!   frame's cause ([`crate::replay::why::Why`], `null` for a skipped frame). `count` is 1 to
//!   [`MAX_PAGE`] (default 1000), `from` a decimal integer ≤ 2^53−1 (default 0).
//! - `GET /api/frames?from=<i>&count=<n>&form=index` — the compact index the SPA precomputes
//!   from: `{"from", "count", "total", "nodes": [id…], "node": [n…], "code": [c…],
//!   "fresh": [t…], "reused": [t…], "lit": [k…], "edges": [e…]}`, one column entry per frame:
//!   `node` indexes `nodes` (every node with frames, first-seen order, stable as the ledger
//!   grows); `code` = status (rendered 0, skipped 1, failed 2) + 3 × wake source + 9 × surprise
//!   cause (input 0, self 1, external 2) + 27 when the frame moved any facet; `lit` is the
//!   number of the frame's `edgesToLight`, whose positions in the snapshot's `edges` follow in
//!   `edges`, frame after frame. `count` is 1 to [`MAX_INDEX_PAGE`].
//! - `GET /api/state?frames=none` — the snapshot of VIEWER.md §4.1 with `frames: []` and one
//!   added last member `frameCount`; `GET /api/state?why=1` — the full snapshot whose frames
//!   carry `why` (`frames=none` wins when both are given). Any other query leaves `/api/state`
//!   byte-identical.
//!
//! A malformed query (bad escape, a non-numeric, signed or out-of-range `from` or `count`, an
//! unknown `form`) answers 400 with `{"error": "<text>"}`; unknown parameters are ignored.

use serde::Serialize;
use serde::ser::SerializeSeq;

use crate::format::json::{self, Value};
use crate::http::Query;
use crate::replay::open::BeatsMap;
use crate::replay::open::OpenedStateDir;
use crate::replay::snapshot::{
    ChainVerifyView, CostRollupView, EdgeView, Labels, NodeView, ReceiptFrame, ReplaySession,
    ReplaySnapshot,
};
use crate::replay::why::{Why, WhyLedger, WhySlots, explain};

/// Largest `count` of a full page.
pub(crate) const MAX_PAGE: usize = 5_000;
/// Largest `count` of an index page.
pub(crate) const MAX_INDEX_PAGE: usize = 200_000;
const DEFAULT_PAGE: usize = 1_000;
const MAX_FROM: u64 = 9_007_199_254_740_991;

/// Which shape a page has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PageForm {
    /// Whole frames with their causes.
    Full,
    /// The compact columns.
    Index,
}

/// A parsed `/api/frames` query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PageQuery {
    /// First frame.
    pub from: usize,
    /// Frames asked for (at least 1).
    pub count: usize,
    /// Shape.
    pub form: PageForm,
}

/// Why an `/api/frames` query is refused; `Display` is the text of the 400 answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PageQueryError {
    /// A `%` not followed by two hex digits, or an escape that is not UTF-8.
    #[error("malformed percent-encoding in query")]
    Encoding,
    /// `form` other than `full` or `index`.
    #[error("form must be full or index")]
    Form,
    /// `from` not ASCII digits, or above 2^53-1.
    #[error("from must be a non-negative integer up to 2^53-1")]
    From,
    /// `count` not ASCII digits, 0, or above the form's largest page (`max`).
    #[error("count must be an integer from 1 to {max}")]
    Count {
        /// [`MAX_PAGE`] or [`MAX_INDEX_PAGE`].
        max: usize,
    },
}

/// Parses the query of `/api/frames` (the text after `?`, if any).
///
/// Errors: [`PageQueryError`] (the first problem in the order encoding, form, from, count).
pub(crate) fn parse_page_query(query: Option<&str>) -> Result<PageQuery, PageQueryError> {
    let q = Query::parse(query.unwrap_or("")).map_err(|_| PageQueryError::Encoding)?;
    let form = match q.get("form") {
        None | Some("full") => PageForm::Full,
        Some("index") => PageForm::Index,
        Some(_) => return Err(PageQueryError::Form),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let from = match q.get("from") {
        None => 0,
        Some(s) if digits(s) => s
            .parse::<u64>()
            .ok()
            .filter(|n| *n <= MAX_FROM)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or(PageQueryError::From)?,
        Some(_) => return Err(PageQueryError::From),
    };
    let max = match form {
        PageForm::Full => MAX_PAGE,
        PageForm::Index => MAX_INDEX_PAGE,
    };
    let bad_count = PageQueryError::Count { max };
    let count = match q.get("count") {
        None => DEFAULT_PAGE.min(max),
        Some(s) if digits(s) => s
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=max).contains(n))
            .ok_or(bad_count)?,
        Some(_) => return Err(bad_count),
    };
    Ok(PageQuery { from, count, form })
}

/// `content_hash` → frame, for wake refs: a 64-bit digest of the hash text per frame (the
/// first frame wins); lookups confirm the match against the receipt, so a digest collision
/// answers "unknown", never a wrong frame. O(1) per receipt.
#[derive(Clone, Debug, Default)]
pub(crate) struct HashIndex {
    map: std::collections::HashMap<u64, usize>,
}

fn digest(s: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

fn stored_hash(v: &Value) -> Option<&str> {
    v.get("content_hash").and_then(Value::as_str)
}

impl HashIndex {
    /// Indexes every receipt of `raw`.
    pub(crate) fn new(raw: &[Value]) -> HashIndex {
        let mut h = HashIndex {
            map: std::collections::HashMap::with_capacity(raw.len()),
        };
        for (i, v) in raw.iter().enumerate() {
            h.push(i, v);
        }
        h
    }
    /// Indexes receipt `i`.
    pub(crate) fn push(&mut self, i: usize, v: &Value) {
        if let Some(s) = stored_hash(v) {
            self.map.entry(digest(s)).or_insert(i);
        }
    }
    /// The first frame whose stored `content_hash` is `hash`.
    pub(crate) fn get(&self, raw: &[Value], hash: &str) -> Option<usize> {
        let i = *self.map.get(&digest(hash))?;
        (raw.get(i).and_then(stored_hash) == Some(hash)).then_some(i)
    }
}

/// The served ledger as [`explain`] reads it.
pub(crate) struct SessionLedger<'a> {
    /// Raw receipts.
    pub raw: &'a [Value],
    /// The replay session (per-node frame lists).
    pub session: &'a ReplaySession,
    /// Content hashes.
    pub hashes: &'a HashIndex,
}

impl WhyLedger for SessionLedger<'_> {
    fn receipt(&self, i: usize) -> Option<&Value> {
        self.raw.get(i)
    }
    fn latest_before(&self, node: &str, before: usize) -> Option<usize> {
        self.session.latest_before(node, before)
    }
    fn by_hash(&self, hash: &str) -> Option<usize> {
        self.hashes.get(self.raw, hash)
    }
}

/// A frame with its cause: the frame's members, then `why`.
#[derive(Serialize)]
pub(crate) struct FrameWithWhy<'a> {
    /// The frame.
    #[serde(flatten)]
    pub frame: &'a ReceiptFrame,
    /// Its cause.
    pub why: Option<Why>,
}

/// A sequence of frames serialized with their causes, computed one at a time.
pub(crate) struct FramesWithWhy<'a> {
    /// The frames.
    pub frames: &'a [ReceiptFrame],
    /// The cause of frame `frames[k].index`.
    pub why: &'a dyn Fn(usize) -> Option<Why>,
}

impl Serialize for FramesWithWhy<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.frames.len()))?;
        for f in self.frames {
            seq.serialize_element(&FrameWithWhy {
                frame: f,
                why: (self.why)(f.index),
            })?;
        }
        seq.end()
    }
}

/// The snapshot's members in the order of VIEWER.md §4.1 with the frames supplied separately,
/// plus the optional added `frameCount` (last). With the snapshot's own frames it serializes
/// byte-identically to [`ReplaySnapshot`] (a test checks it).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SnapshotView<'a, F: Serialize> {
    state_dir: &'a str,
    nodes: &'a [NodeView],
    edges: &'a [EdgeView],
    entry_points: &'a [String],
    acyclic: bool,
    frames: F,
    cost_rollup: &'a CostRollupView,
    has_topology: bool,
    labels: &'a Labels,
    beats: &'a Option<BeatsMap>,
    synthetic: bool,
    chain_verify: &'a ChainVerifyView,
    #[serde(skip_serializing_if = "Option::is_none")]
    frame_count: Option<usize>,
}

impl<'a, F: Serialize> SnapshotView<'a, F> {
    /// `snap` (its own `frames` ignored) with `frames` in their place.
    pub(crate) fn new(snap: &'a ReplaySnapshot, frames: F, frame_count: Option<usize>) -> Self {
        SnapshotView {
            state_dir: &snap.state_dir,
            nodes: &snap.nodes,
            edges: &snap.edges,
            entry_points: &snap.entry_points,
            acyclic: snap.acyclic,
            frames,
            cost_rollup: &snap.cost_rollup,
            has_topology: snap.has_topology,
            labels: &snap.labels,
            beats: &snap.beats,
            synthetic: snap.synthetic,
            chain_verify: &snap.chain_verify,
            frame_count,
        }
    }
}

/// Everything a page needs from the served state.
pub(crate) struct PageSource<'a> {
    /// The opened state directory (raw receipts, topology).
    pub opened: &'a OpenedStateDir,
    /// The session (frames).
    pub session: &'a ReplaySession,
    /// Input slots of the topology.
    pub slots: &'a WhySlots,
    /// Content hashes of the raw receipts.
    pub hashes: &'a HashIndex,
}

impl PageSource<'_> {
    /// The cause of frame `i`.
    pub(crate) fn why(&self, i: usize) -> Option<Why> {
        let ledger = SessionLedger {
            raw: &self.opened.raw,
            session: self.session,
            hashes: self.hashes,
        };
        explain(self.slots, &ledger, i)
    }

    /// The body of `GET /api/frames` for a parsed query.
    pub(crate) fn page(&self, q: &PageQuery) -> Vec<u8> {
        let total = self.session.frames.len();
        let from = q.from.min(total);
        let to = from.saturating_add(q.count).min(total);
        let frames = &self.session.frames[from..to];
        match q.form {
            PageForm::Full => {
                #[derive(Serialize)]
                struct Page<'a> {
                    from: usize,
                    count: usize,
                    total: usize,
                    frames: FramesWithWhy<'a>,
                }
                let why = |i: usize| self.why(i);
                json::to_js_compact(&Page {
                    from: q.from,
                    count: frames.len(),
                    total,
                    frames: FramesWithWhy { frames, why: &why },
                })
            }
            PageForm::Index => self.index_page(q.from, frames, total),
        }
    }

    fn index_page(&self, from: usize, frames: &[ReceiptFrame], total: usize) -> Vec<u8> {
        #[derive(Serialize)]
        struct Index<'a> {
            from: usize,
            count: usize,
            total: usize,
            nodes: Vec<&'a str>,
            node: Vec<usize>,
            code: Vec<u8>,
            fresh: Vec<u64>,
            reused: Vec<u64>,
            lit: Vec<usize>,
            edges: Vec<usize>,
        }
        let mut edge_pos: std::collections::HashMap<(&str, &str, &str), usize> =
            std::collections::HashMap::new();
        if let Some(t) = &self.opened.topology {
            for (i, e) in t.edges.iter().enumerate() {
                edge_pos
                    .entry((&e.producer, &e.subscriber, &e.facet))
                    .or_insert(i);
            }
        }
        let n = frames.len();
        let mut out = Index {
            from,
            count: n,
            total,
            nodes: self
                .session
                .chains
                .iter()
                .map(|c| c.node.as_str())
                .collect(),
            node: Vec::with_capacity(n),
            code: Vec::with_capacity(n),
            fresh: Vec::with_capacity(n),
            reused: Vec::with_capacity(n),
            lit: Vec::with_capacity(n),
            edges: Vec::new(),
        };
        for f in frames {
            out.node
                .push(self.session.chain_position(&f.node).unwrap_or(0));
            out.code.push(frame_code(f));
            out.fresh.push(f.cost.fresh);
            out.reused.push(f.cost.reused);
            out.lit.push(f.edges_to_light.len());
            for e in &f.edges_to_light {
                let key = (e.producer.as_str(), e.subscriber.as_str(), e.facet.as_str());
                out.edges.push(edge_pos.get(&key).copied().unwrap_or(0));
            }
        }
        json::to_js_compact(&out)
    }

    /// The body of `GET /api/state?frames=none`.
    pub(crate) fn state_head(&self, head: &ReplaySnapshot) -> Vec<u8> {
        let none: [ReceiptFrame; 0] = [];
        json::to_js_compact(&SnapshotView::new(
            head,
            &none[..],
            Some(self.session.frames.len()),
        ))
    }

    /// The body of `GET /api/state?why=1`.
    pub(crate) fn state_with_why(&self, head: &ReplaySnapshot) -> Vec<u8> {
        let why = |i: usize| self.why(i);
        json::to_js_compact(&SnapshotView::new(
            head,
            FramesWithWhy {
                frames: &self.session.frames,
                why: &why,
            },
            None,
        ))
    }
}

/// The index `code` of a frame (see the module documentation).
pub(crate) fn frame_code(f: &ReceiptFrame) -> u8 {
    use crate::format::receipt::{Status, WakeSource};
    let status = match f.status {
        Status::Rendered => 0,
        Status::Skipped => 1,
        Status::Failed => 2,
    };
    let src = |w: WakeSource| match w {
        WakeSource::Input => 0,
        WakeSource::SelfWake => 1,
        WakeSource::External => 2,
    };
    status
        + 3 * src(f.wake_source)
        + 9 * src(f.cost.surprise_cause)
        + if f.moved_facets.is_empty() { 0 } else { 27 }
}

#[cfg(test)]
#[path = "pages_tests.rs"]
mod tests;
