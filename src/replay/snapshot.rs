//! The replay snapshot (VIEWER.md §4): one frame per receipt, the cost rollup, and the chain
//! verdict — a pure function of an opened state directory, extendable as the ledger grows.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::format::json::{NonFinite, Value};
use crate::format::propagate::{SMALL, moved_facets};
use crate::format::receipt::{ChainState, Fingerprints, ReceiptCheck, Status, WakeSource};
use crate::format::topology::{Edge, Topology};
use crate::replay::open::{BeatsMap, OpenedStateDir, ProjectedReceipt};

/// `{id, isEntryPoint}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeView {
    /// Node id.
    pub id: String,
    /// True when the node is an entry point.
    pub is_entry_point: bool,
}

/// `{producer, subscriber, facet}` (also the shape of an `EdgeLight`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EdgeView {
    /// Producer.
    pub producer: String,
    /// Subscriber.
    pub subscriber: String,
    /// Facet.
    pub facet: String,
}

impl From<&Edge> for EdgeView {
    fn from(e: &Edge) -> Self {
        EdgeView {
            producer: e.producer.clone(),
            subscriber: e.subscriber.clone(),
            facet: e.facet.clone(),
        }
    }
}

/// A frame's cost.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FrameCost {
    /// Fresh tokens.
    pub fresh: u64,
    /// Reused tokens.
    pub reused: u64,
    /// `cost.surprise_cause`.
    pub surprise_cause: WakeSource,
}

/// One receipt projected for the viewer (VIEWER.md §4.3).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReceiptFrame {
    /// Position in append order.
    pub index: usize,
    /// Node id.
    pub node: String,
    /// Disposition.
    pub status: Status,
    /// `wake.source`.
    pub wake_source: WakeSource,
    /// Facets moved relative to the node's previous receipt.
    pub moved_facets: Vec<String>,
    /// Lanes lit (rendered frames with moved facets only).
    pub edges_to_light: Vec<EdgeView>,
    /// Distinct subscribers woken (diamond single-wake).
    pub woken_subscribers: Vec<String>,
    /// Cost.
    pub cost: FrameCost,
    /// The content address recomputed from the receipt's values.
    pub content_hash: String,
    /// `fingerprints["@atomic"]`, or `""`.
    pub atomic_version: String,
}

/// `{receipts, fresh, reused, dollars}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Bucket {
    /// Receipts counted.
    pub receipts: u64,
    /// Fresh tokens.
    pub fresh: u64,
    /// Reused tokens.
    pub reused: u64,
    /// `fresh × freshRate + reused × reusedRate`.
    pub dollars: f64,
}

impl Bucket {
    fn add(&mut self, fresh: u64, reused: u64, fresh_rate: f64, reused_rate: f64) {
        self.receipts += 1;
        self.fresh += fresh;
        self.reused += reused;
        self.dollars += fresh as f64 * fresh_rate + reused as f64 * reused_rate;
    }
}

/// The three cause buckets, always present, in this order.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ByCause {
    /// `input`
    pub input: Bucket,
    /// `self`
    #[serde(rename = "self")]
    pub(crate) self_: Bucket,
    /// `external`
    pub external: Bucket,
}

impl ByCause {
    /// The bucket of a cause.
    pub fn get(&self, c: WakeSource) -> &Bucket {
        match c {
            WakeSource::Input => &self.input,
            WakeSource::SelfWake => &self.self_,
            WakeSource::External => &self.external,
        }
    }
    fn get_mut(&mut self, c: WakeSource) -> &mut Bucket {
        match c {
            WakeSource::Input => &mut self.input,
            WakeSource::SelfWake => &mut self.self_,
            WakeSource::External => &mut self.external,
        }
    }
}

/// The snapshot rollup (FORMATS.md §16.1).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CostRollupView {
    /// Per `cost.surprise_cause`.
    pub by_cause: ByCause,
    /// All receipts.
    pub total: Bucket,
}

/// The chain verdict (VIEWER.md §4.4).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChainVerifyView {
    /// No errors anywhere.
    pub ok: bool,
    /// One line per failing node: `<label>: <errors joined by "; ">`.
    pub errors: Vec<String>,
    /// Ascending indexes of flagged frames.
    pub invalid_frames: Vec<usize>,
}

/// Labels in file order, serialized as a JSON object.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Labels(pub Vec<(String, String)>);

impl Serialize for Labels {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// `GET /api/state` (VIEWER.md §4.1).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplaySnapshot {
    /// The directory string as given (or `example:<name>`).
    pub state_dir: String,
    /// Topology nodes, or the fallback set.
    pub nodes: Vec<NodeView>,
    /// Topology edges (`[]` in fallback).
    pub edges: Vec<EdgeView>,
    /// Entry points.
    pub entry_points: Vec<String>,
    /// The topology's flag (`true` in fallback).
    pub acyclic: bool,
    /// One per receipt.
    pub frames: Vec<ReceiptFrame>,
    /// Whole-ledger rollup.
    pub cost_rollup: CostRollupView,
    /// Whether a usable topology was read.
    pub has_topology: bool,
    /// From `compile/labels.json`.
    pub labels: Labels,
    /// From `beats.json`.
    pub beats: Option<BeatsMap>,
    /// True only for `--example`.
    pub synthetic: bool,
    /// The chain verdict.
    pub chain_verify: ChainVerifyView,
}

/// One node's chain and counts (the describe PER-NODE row source).
#[derive(Clone, Debug, Default)]
pub(crate) struct NodeChain {
    /// Node id.
    pub node: String,
    /// Incremental verification state.
    pub chain: ChainState,
    /// Frame indexes of the node's receipts.
    pub frames: Vec<usize>,
    /// Counts.
    pub rendered: u64,
    /// Counts.
    pub skipped: u64,
    /// Counts.
    pub failed: u64,
    /// Sum of fresh tokens.
    pub fresh: u64,
}

/// The replay session: everything needed to extend the snapshot frame by frame.
#[derive(Clone, Debug)]
pub(crate) struct ReplaySession {
    edges: Vec<Edge>,
    out_edges: HashMap<String, Vec<usize>>,
    has_topology: bool,
    topology_nodes: Vec<String>,
    topology_node_set: HashSet<String>,
    last_fp: HashMap<String, Fingerprints>,
    chain_index: HashMap<String, usize>,
    /// Per-node chains in first-seen order.
    pub chains: Vec<NodeChain>,
    /// Frames so far (those pushed; [`ReplaySession::advance`] keeps none).
    pub frames: Vec<ReceiptFrame>,
    /// Receipts taken so far (pushed or advanced): the next frame's index.
    advanced: usize,
    /// Rollup so far.
    pub(crate) rollup: CostRollupView,
    fresh_rate: f64,
    reused_rate: f64,
}

impl ReplaySession {
    /// A session for a topology (or the fallback when `None`).
    pub(crate) fn new(
        topology: Option<&Topology>,
        fresh_rate: f64,
        reused_rate: f64,
    ) -> ReplaySession {
        let edges: Vec<Edge> = topology.map(|t| t.edges.clone()).unwrap_or_default();
        let mut out_edges: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, e) in edges.iter().enumerate() {
            out_edges.entry(e.producer.clone()).or_default().push(i);
        }
        let topology_nodes: Vec<String> = topology
            .map(|t| t.nodes.iter().map(|n| n.node.clone()).collect())
            .unwrap_or_default();
        ReplaySession {
            edges,
            out_edges,
            has_topology: topology.is_some(),
            topology_node_set: topology_nodes.iter().cloned().collect(),
            topology_nodes,
            last_fp: HashMap::new(),
            chain_index: HashMap::new(),
            chains: Vec::new(),
            frames: Vec::new(),
            advanced: 0,
            rollup: CostRollupView::default(),
            fresh_rate,
            reused_rate,
        }
    }

    /// Appends one receipt (raw value, its projection and its recomputed address) as the next
    /// frame, updating moved facets, lanes, rollup and the node's chain verdict.
    pub(crate) fn push(
        &mut self,
        raw: &Value,
        p: &ProjectedReceipt,
        recomputed: &Result<String, NonFinite>,
    ) {
        let check = ReceiptCheck::of(raw, Some(recomputed));
        self.push_checked(p.clone(), recomputed, check);
    }

    /// [`ReplaySession::push`] with the receipt already checked (the streaming reader checks
    /// receipts on its worker threads).
    pub(crate) fn push_checked(
        &mut self,
        p: ProjectedReceipt,
        recomputed: &Result<String, NonFinite>,
        check: ReceiptCheck,
    ) {
        let frame = self.advance(p, recomputed, check);
        self.frames.push(frame);
    }

    /// Takes one receipt into the session (moved facets, rollup, the node's chain and counts)
    /// and returns its frame without keeping it (`frames` is left alone): what a reader that
    /// keeps only aggregates calls.
    pub(crate) fn advance(
        &mut self,
        p: ProjectedReceipt,
        recomputed: &Result<String, NonFinite>,
        check: ReceiptCheck,
    ) -> ReceiptFrame {
        let index = self.advanced;
        self.advanced += 1;
        let moved = moved_facets(&p.fingerprints, self.last_fp.get(&p.node));
        let (edges_to_light, woken) = self.lanes(&p, &moved);
        self.rollup.by_cause.get_mut(p.surprise_cause).add(
            p.fresh,
            p.reused,
            self.fresh_rate,
            self.reused_rate,
        );
        self.rollup
            .total
            .add(p.fresh, p.reused, self.fresh_rate, self.reused_rate);
        let ci = match self.chain_index.get(&p.node) {
            Some(i) => *i,
            None => {
                self.chains.push(NodeChain {
                    node: p.node.clone(),
                    ..NodeChain::default()
                });
                self.chain_index
                    .insert(p.node.clone(), self.chains.len() - 1);
                self.chains.len() - 1
            }
        };
        let nc = &mut self.chains[ci];
        nc.chain.push_check(check);
        nc.frames.push(index);
        match p.status {
            Status::Rendered => nc.rendered += 1,
            Status::Skipped => nc.skipped += 1,
            Status::Failed => nc.failed += 1,
        }
        nc.fresh += p.fresh;
        let atomic_version = p.fingerprints.atomic_token().unwrap_or("").to_string();
        let frame = ReceiptFrame {
            index,
            node: p.node.clone(),
            status: p.status,
            wake_source: p.wake_source,
            moved_facets: moved,
            edges_to_light,
            woken_subscribers: woken,
            cost: FrameCost {
                fresh: p.fresh,
                reused: p.reused,
                surprise_cause: p.surprise_cause,
            },
            content_hash: recomputed.clone().unwrap_or_default(),
            atomic_version,
        };
        self.last_fp.insert(p.node, p.fingerprints);
        frame
    }

    /// The lanes a receipt lights and the subscribers they wake (diamond single-wake).
    fn lanes(&self, p: &ProjectedReceipt, moved: &[String]) -> (Vec<EdgeView>, Vec<String>) {
        if !(self.has_topology && p.status == Status::Rendered && !moved.is_empty()) {
            return (Vec::new(), Vec::new());
        }
        // Only the producer's own edges can light (FORMATS.md §10), in topology order. Past a
        // few entries, sets keep a frame linear in its producer's edges and moved facets.
        let moved_set: Option<HashSet<&str>> =
            (moved.len() > SMALL).then(|| moved.iter().map(String::as_str).collect());
        let is_moved = |f: &str| match &moved_set {
            Some(set) => set.contains(f),
            None => moved.iter().any(|m| m == f),
        };
        let lit: Vec<EdgeView> = self
            .out_edges
            .get(&p.node)
            .map(|ix| {
                ix.iter()
                    .map(|&i| &self.edges[i])
                    .filter(|e| is_moved(&e.facet))
                    .map(EdgeView::from)
                    .collect()
            })
            .unwrap_or_default();
        let woken: Vec<String> = if lit.len() <= SMALL {
            let mut woken: Vec<String> = Vec::new();
            for e in &lit {
                if !woken.contains(&e.subscriber) {
                    woken.push(e.subscriber.clone());
                }
            }
            woken
        } else {
            let mut seen: HashSet<&str> = HashSet::with_capacity(lit.len());
            lit.iter()
                .filter(|e| seen.insert(e.subscriber.as_str()))
                .map(|e| e.subscriber.clone())
                .collect()
        };
        (lit, woken)
    }

    /// True when some frame so far belongs to `node`.
    pub(crate) fn has_chain(&self, node: &str) -> bool {
        self.chain_index.contains_key(node)
    }

    /// The position of `node`'s chain in [`ReplaySession::chains`] (first-seen order), when it
    /// has frames.
    pub(crate) fn chain_position(&self, node: &str) -> Option<usize> {
        self.chain_index.get(node).copied()
    }

    /// `node`'s frame indexes, ascending (empty when it has none).
    pub(crate) fn node_frames(&self, node: &str) -> &[usize] {
        match self.chain_index.get(node) {
            Some(&i) => &self.chains[i].frames,
            None => &[],
        }
    }

    /// `node`'s latest frame strictly before frame `before`. O(log frames of the node).
    pub(crate) fn latest_before(&self, node: &str, before: usize) -> Option<usize> {
        let frames = self.node_frames(node);
        let k = frames.partition_point(|&f| f < before);
        k.checked_sub(1).map(|k| frames[k])
    }

    /// Per-node chains in report order: topology nodes in topology order (only those with
    /// frames), then every other node in first-seen order. The flag says whether the node is
    /// off-topology (only possible with a topology).
    pub(crate) fn chains_in_report_order(&self) -> Vec<(&NodeChain, bool)> {
        let mut out = Vec::with_capacity(self.chains.len());
        if self.has_topology {
            for n in &self.topology_nodes {
                if let Some(&i) = self.chain_index.get(n) {
                    out.push((&self.chains[i], false));
                }
            }
            for c in &self.chains {
                if !self.topology_node_set.contains(&c.node) {
                    out.push((c, true));
                }
            }
        } else {
            out.extend(self.chains.iter().map(|c| (c, false)));
        }
        out
    }

    /// The chain verdict view with the given labeller.
    pub(crate) fn chain_verify(&self, label: &dyn Fn(&str) -> String) -> ChainVerifyView {
        let mut errors = Vec::new();
        let mut invalid = Vec::new();
        for (c, off) in self.chains_in_report_order() {
            if !c.chain.errors.is_empty() {
                let mut l = label(&c.node);
                if off {
                    l.push_str(" (off-topology)");
                }
                errors.push(format!("{l}: {}", c.chain.errors.join("; ")));
            }
            invalid.extend(c.chain.invalid_positions.iter().map(|&p| c.frames[p]));
        }
        invalid.sort_unstable();
        ChainVerifyView {
            ok: errors.is_empty(),
            errors,
            invalid_frames: invalid,
        }
    }
}

/// `label(id)` for many ids (VIEWER.md §5.1): the `labels.json` value when labels are in use
/// and non-empty, otherwise the short name (the text after the first `.`, or the whole id).
/// `labels.json` is indexed once (the first entry of an id wins), so labelling every node and
/// frame stays linear.
#[derive(Clone, Debug)]
pub(crate) struct LabelMap<'a> {
    map: Option<HashMap<&'a str, &'a str>>,
}

impl<'a> LabelMap<'a> {
    /// Indexes `labels` when they are in use.
    pub(crate) fn new(labels: &'a [(String, String)], use_labels: bool) -> LabelMap<'a> {
        let map = use_labels.then(|| {
            let mut m = HashMap::with_capacity(labels.len());
            for (k, v) in labels {
                m.entry(k.as_str()).or_insert(v.as_str());
            }
            m
        });
        LabelMap { map }
    }

    /// The label of `id`: its non-empty `labels.json` value, else its short name.
    pub(crate) fn label(&self, id: &str) -> String {
        match self.map.as_ref().and_then(|m| m.get(id)) {
            Some(l) if !l.is_empty() => l.to_string(),
            _ => short_name(id).to_string(),
        }
    }
}

/// The text after the first `.` (the whole id if it has none).
pub(crate) fn short_name(id: &str) -> &str {
    match id.find('.') {
        Some(i) => &id[i + 1..],
        None => id,
    }
}

/// Builds the session of an opened state directory.
pub(crate) fn build_session(opened: &OpenedStateDir) -> ReplaySession {
    let mut s = ReplaySession::new(
        opened.topology.as_ref(),
        opened.options.fresh_rate,
        opened.options.reused_rate,
    );
    for i in 0..opened.raw.len() {
        s.push(&opened.raw[i], &opened.projected[i], &opened.recomputed[i]);
    }
    s
}

/// Assembles the snapshot from a session.
pub(crate) fn snapshot_from_session(
    opened: &OpenedStateDir,
    session: &ReplaySession,
) -> ReplaySnapshot {
    let mut snap = snapshot_head(opened, session);
    snap.frames = session.frames.clone();
    snap
}

/// The snapshot without its frames (`frames` is empty; every other member as in
/// [`snapshot_from_session`]): what `GET /api/state?frames=none` serves, without copying the
/// frames.
pub(crate) fn snapshot_head(opened: &OpenedStateDir, session: &ReplaySession) -> ReplaySnapshot {
    let labels = LabelMap::new(&opened.labels, !opened.labels.is_empty());
    let label = |id: &str| labels.label(id);
    let (nodes, edges, entry_points, acyclic) = match &opened.topology {
        Some(t) => (
            {
                let entry: HashSet<&str> = t.entry_points.iter().map(String::as_str).collect();
                t.nodes
                    .iter()
                    .map(|n| NodeView {
                        id: n.node.clone(),
                        is_entry_point: entry.contains(n.node.as_str()),
                    })
                    .collect()
            },
            t.edges.iter().map(EdgeView::from).collect(),
            t.entry_points.clone(),
            t.acyclic,
        ),
        None => (
            session
                .chains
                .iter()
                .map(|c| NodeView {
                    id: c.node.clone(),
                    is_entry_point: false,
                })
                .collect(),
            Vec::new(),
            Vec::new(),
            true,
        ),
    };
    ReplaySnapshot {
        state_dir: opened.state_dir.clone(),
        nodes,
        edges,
        entry_points,
        acyclic,
        frames: Vec::new(),
        cost_rollup: session.rollup.clone(),
        has_topology: opened.topology.is_some(),
        labels: Labels(opened.labels.clone()),
        beats: opened.beats.clone(),
        synthetic: opened.synthetic,
        chain_verify: session.chain_verify(&label),
    }
}

/// `build_snapshot` (VIEWER.md §4, §7): pure.
pub fn build_snapshot(opened: &OpenedStateDir) -> ReplaySnapshot {
    snapshot_from_session(opened, &build_session(opened))
}

/// `version_for_frame` (VIEWER.md §7): the frame's `atomicVersion`.
pub fn version_for_frame(frame: &ReceiptFrame) -> &str {
    &frame.atomic_version
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::topology::TopologyNode;

    fn projected(node: &str, facets: &[(&str, &str)]) -> ProjectedReceipt {
        ProjectedReceipt {
            node: node.into(),
            status: Status::Rendered,
            wake_source: WakeSource::Input,
            fingerprints: Fingerprints(
                facets
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            fresh: 1,
            reused: 0,
            surprise_cause: WakeSource::Input,
        }
    }

    /// A wide fan-out (past the small-set threshold) lights every edge of a moved facet and
    /// wakes each subscriber once, in first-edge order; nodes outside the topology report last.
    #[test]
    fn wide_fan_out_wakes_each_subscriber_once() {
        let mut t = Topology {
            acyclic: true,
            ..Default::default()
        };
        t.nodes.push(TopologyNode {
            node: "P".into(),
            contract_fingerprint: None,
            wake_source: None,
        });
        for f in ["a", "b"] {
            for s in (0..12).rev() {
                t.edges.push(Edge::new("P", &format!("s{s:02}"), f));
            }
        }
        for s in 0..12 {
            t.nodes.push(TopologyNode {
                node: format!("s{s:02}"),
                contract_fingerprint: None,
                wake_source: None,
            });
        }
        let mut session = ReplaySession::new(Some(&t), 0.0, 0.0);
        let raw = Value::Null;
        let h: Result<String, NonFinite> = Ok("h".into());
        session.push(
            &raw,
            &projected("P", &[("@atomic", "1"), ("a", "1"), ("b", "1")]),
            &h,
        );
        let f = &session.frames[0];
        assert_eq!(f.edges_to_light.len(), 24);
        assert_eq!(f.woken_subscribers.len(), 12);
        assert_eq!(f.woken_subscribers[0], "s11");
        assert_eq!(f.woken_subscribers[11], "s00");
        // Only `b` moves: its 12 edges light.
        session.push(
            &raw,
            &projected("P", &[("@atomic", "2"), ("a", "1"), ("b", "2")]),
            &h,
        );
        let f = &session.frames[1];
        assert_eq!(f.moved_facets, vec!["@atomic", "b"]);
        assert!(f.edges_to_light.iter().all(|e| e.facet == "b"));
        assert_eq!(f.woken_subscribers.len(), 12);
        session.push(&raw, &projected("ghost", &[("@atomic", "1")]), &h);
        session.push(&raw, &projected("s03", &[("@atomic", "1")]), &h);
        let order: Vec<(&str, bool)> = session
            .chains_in_report_order()
            .into_iter()
            .map(|(c, off)| (c.node.as_str(), off))
            .collect();
        assert_eq!(order, vec![("P", false), ("s03", false), ("ghost", true)]);
        assert!(session.has_chain("ghost") && !session.has_chain("s04"));
        let labels = vec![
            ("P".to_string(), "Producer".to_string()),
            ("s03".into(), String::new()),
        ];
        let map = LabelMap::new(&labels, true);
        assert_eq!(map.label("P"), "Producer");
        assert_eq!(map.label("s03"), "s03");
        assert_eq!(map.label("x.y"), "y");
        assert_eq!(LabelMap::new(&labels, false).label("P"), "P");
    }
}
