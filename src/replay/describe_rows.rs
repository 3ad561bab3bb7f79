//! What `--describe` keeps of each frame (VIEWER.md §5): a 32-byte row instead of the frame,
//! with node ids and (moved facets, woken subscribers) lists interned. The rows are gathered
//! frame by frame — from a session's frames or straight from the streaming reader — and
//! printed from (text) or serialized lazily (JSON), so describing a ledger holds its nodes and
//! the distinct frame shapes, not its receipts.

use std::collections::HashMap;

use serde::Serialize;
use serde::ser::SerializeSeq;

use crate::format::receipt::{Status, WakeSource};
use crate::replay::describe::{DescribeFrame, Dispositions};
use crate::replay::snapshot::{LabelMap, ReceiptFrame};

/// One frame, compact: indexes into [`DescribeTally`]'s interned node ids and shapes.
#[derive(Clone, Copy, Debug)]
struct Row {
    fresh: u64,
    reused: u64,
    node: u32,
    shape: u32,
    status: Status,
    wake_source: WakeSource,
    surprise_cause: WakeSource,
}

/// A frame's moved facets and woken subscribers (ids).
type Shape = (Vec<String>, Vec<String>);

/// The describe counts, gathered one frame at a time (VIEWER.md §5.2–§5.5): dispositions,
/// frames per wake source in first-seen order, the peak-fresh frame, and a row per frame.
#[derive(Clone, Debug, Default)]
pub(crate) struct DescribeTally {
    /// Dispositions so far.
    pub(crate) disp: Dispositions,
    /// Frames per `wake.source`, first-seen order.
    pub(crate) by_wake: Vec<(String, u64)>,
    /// `(fresh, frame, node)` of the first frame with the most fresh tokens (> 0).
    pub(crate) peak: Option<(u64, usize, String)>,
    nodes: Vec<String>,
    node_ix: HashMap<String, u32>,
    shapes: Vec<Shape>,
    shape_ix: HashMap<Shape, u32>,
    rows: Vec<Row>,
}

fn intern<K: std::hash::Hash + Eq + Clone>(
    key: K,
    table: &mut Vec<K>,
    index: &mut HashMap<K, u32>,
) -> u32 {
    if let Some(&i) = index.get(&key) {
        return i;
    }
    let i = u32::try_from(table.len()).unwrap_or(u32::MAX);
    table.push(key.clone());
    index.insert(key, i);
    i
}

impl DescribeTally {
    /// Takes the next frame (frames must come in index order).
    pub(crate) fn add(&mut self, f: ReceiptFrame) {
        match f.status {
            Status::Rendered => self.disp.rendered += 1,
            Status::Skipped => self.disp.skipped += 1,
            Status::Failed => self.disp.failed += 1,
        }
        let k = f.wake_source.as_str();
        match self.by_wake.iter_mut().find(|(c, _)| c == k) {
            Some((_, n)) => *n += 1,
            None => self.by_wake.push((k.to_string(), 1)),
        }
        if f.cost.fresh > 0 && self.peak.as_ref().is_none_or(|p| f.cost.fresh > p.0) {
            self.peak = Some((f.cost.fresh, f.index, f.node.clone()));
        }
        let node = match self.node_ix.get(&f.node) {
            Some(&i) => i,
            None => intern(f.node, &mut self.nodes, &mut self.node_ix),
        };
        let shape = intern(
            (f.moved_facets, f.woken_subscribers),
            &mut self.shapes,
            &mut self.shape_ix,
        );
        self.rows.push(Row {
            fresh: f.cost.fresh,
            reused: f.cost.reused,
            node,
            shape,
            status: f.status,
            wake_source: f.wake_source,
            surprise_cause: f.cost.surprise_cause,
        });
    }

    /// Number of frames taken.
    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    /// Frame `index` as the describe JSON shows it (labels applied).
    pub(crate) fn frame(&self, index: usize, labels: &LabelMap<'_>) -> DescribeFrame {
        let r = self.rows[index];
        let (moved, woken) = &self.shapes[r.shape as usize];
        let node = &self.nodes[r.node as usize];
        DescribeFrame {
            index,
            node: node.clone(),
            label: labels.label(node),
            status: r.status,
            wake_source: r.wake_source,
            moved_facets: moved.clone(),
            fresh: r.fresh,
            reused: r.reused,
            surprise_cause: r.surprise_cause,
            woken_subscribers: woken.iter().map(|s| labels.label(s)).collect(),
        }
    }

    /// Every frame, serialized lazily as the describe JSON's `frames` array.
    pub(crate) fn frames_json<'a>(&'a self, labels: &'a LabelMap<'a>) -> FramesJson<'a> {
        FramesJson {
            tally: self,
            labels,
        }
    }
}

/// The `frames` array of the describe JSON, built one frame at a time while serializing.
#[derive(Clone, Copy)]
pub(crate) struct FramesJson<'a> {
    tally: &'a DescribeTally,
    labels: &'a LabelMap<'a>,
}

impl Serialize for FramesJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.tally.len()))?;
        for i in 0..self.tally.len() {
            seq.serialize_element(&self.tally.frame(i, self.labels))?;
        }
        seq.end()
    }
}
