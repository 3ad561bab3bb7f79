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
use crate::replay::raw::RawStore;
use crate::replay::snapshot::{
    ChainVerifyView, CostRollupView, EdgeView, Labels, NodeView, ReceiptFrame, ReplaySession,
    ReplaySnapshot,
};
use crate::replay::why::{Why, WhyLedger, WhySlots, explain};
use crate::replay::why_stream::WhyStream;

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

/// The served ledger as [`explain`] reads it for a set of frames: those frames' receipts, each
/// one's previous receipt of the same node and the receipts its wake refs resolve to, parsed
/// once from the [`RawStore`] (the only receipts `explain` reads).
pub(crate) struct PageLedger<'a> {
    values: std::collections::HashMap<usize, Value>,
    session: &'a ReplaySession,
    raw: &'a RawStore,
}

impl<'a> PageLedger<'a> {
    /// Parses what explaining `frames` needs.
    pub(crate) fn new(
        raw: &'a RawStore,
        session: &'a ReplaySession,
        frames: impl Iterator<Item = usize>,
    ) -> PageLedger<'a> {
        let mut values = std::collections::HashMap::new();
        let load = |values: &mut std::collections::HashMap<usize, Value>, k: usize| {
            if !values.contains_key(&k)
                && let Some(v) = raw.get(k)
            {
                values.insert(k, v);
            }
        };
        for i in frames {
            load(&mut values, i);
            let Some(v) = values.get(&i) else { continue };
            let refs: Vec<usize> = v
                .get("wake")
                .and_then(|w| w.get("refs"))
                .and_then(Value::as_array)
                .map(|refs| {
                    refs.iter()
                        .filter_map(|h| h.as_str().and_then(|h| raw.by_hash(h)))
                        .filter(|&k| k < i)
                        .collect()
                })
                .unwrap_or_default();
            let prior = v
                .get("node")
                .and_then(Value::as_str)
                .and_then(|n| session.latest_before(n, i));
            for k in refs.into_iter().chain(prior) {
                load(&mut values, k);
            }
        }
        PageLedger {
            values,
            session,
            raw,
        }
    }
}

impl WhyLedger for PageLedger<'_> {
    fn receipt(&self, i: usize) -> Option<&Value> {
        self.values.get(&i)
    }
    fn latest_before(&self, node: &str, before: usize) -> Option<usize> {
        self.session.latest_before(node, before)
    }
    fn by_hash(&self, hash: &str) -> Option<usize> {
        self.raw.by_hash(hash)
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
    /// The opened state directory (topology).
    pub opened: &'a OpenedStateDir,
    /// The session (frames).
    pub session: &'a ReplaySession,
    /// Input slots of the topology.
    pub slots: &'a WhySlots,
    /// The receipts.
    pub raw: &'a RawStore,
}

impl PageSource<'_> {
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
                let ledger = PageLedger::new(self.raw, self.session, from..to);
                let why = |i: usize| explain(self.slots, &ledger, i);
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

    /// The body of `GET /api/state?why=1`: the causes come from one pass over the receipts
    /// ([`WhyStream`]), frame after frame as they are serialized.
    pub(crate) fn state_with_why(&self, head: &ReplaySnapshot) -> Vec<u8> {
        let walk = std::cell::RefCell::new(WhyStream::new(self.opened.topology.as_ref()));
        let why = |i: usize| {
            let v = self.raw.get(i)?;
            walk.borrow_mut().step(v)
        };
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
