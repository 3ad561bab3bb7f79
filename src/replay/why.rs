//! "Why did this render" (issue 9): for every rendered or failed receipt, the cause of the
//! reconcile, read from the ledger alone.
//!
//! The memo key of a receipt is `(contract_fingerprint, input_fingerprints)` (FORMATS.md §8.3);
//! a node renders when its key moved since its previous receipt, or when it is woken although
//! the key did not move (a self tick, an external re-wake, a retry after a failed receipt). This
//! module compares a receipt's key with the key of the same node's previous receipt (any
//! status) and names, in this order:
//!
//! - `first`: the node has no earlier receipt;
//! - `contract`: the contract fingerprint moved (old and new token);
//! - `inputs`: input slots whose token moved, each named by its topology edge (producer and
//!   facet: slot `k` is the node's `k`-th inbound edge in topology edge order, and the slot after
//!   the compiled edges of an entry point is the mounted `<gw>::ingress` `@atomic` edge), with
//!   the producer's latest frame before this one — the receipt whose fingerprint now sits in the
//!   slot. Without a topology (the node-only fallback) the slot number stands alone;
//! - `retry`: nothing moved, and the previous receipt failed (a failed node is never
//!   memo-skipped, FORMATS.md §4.3);
//! - `wake`: nothing moved; the receipt's `wake.source` (`self`, `external`, or `input`) woke it;
//! - `unknown`: a memo-key field of this or the previous receipt cannot be read (a receipt the
//!   viewer opens tolerantly, VIEWER.md §3.2).
//!
//! `contract` and `inputs` can both hold. `wake.refs` are resolved to frame indexes where a
//! receipt with that `content_hash` precedes this one. Skipped receipts have no cause (`None`).
//!
//! The computation is pure. [`explain`] answers one frame through a [`WhyLedger`] (the viewer's
//! server answers pages of frames this way); [`explain_ledger`] walks a whole ledger once,
//! linear in its receipts and their key lengths; [`crate::replay::why_stream`] explains a
//! streamed ledger receipt by receipt (the host's `trace --why` and `inspect`).

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::format::json::Value;
use crate::format::receipt::{Status, WakeSource};
use crate::format::topology::{Topology, ingress_node};

/// One cause of a reconcile (serialized lower-case: `first`, `contract`, `inputs`, `retry`,
/// `wake`, `unknown`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WhyCause {
    /// The node's first receipt.
    First,
    /// The contract fingerprint moved.
    Contract,
    /// One or more input fingerprints moved.
    Inputs,
    /// Nothing moved; the previous receipt failed.
    Retry,
    /// Nothing moved; the wake alone caused the reconcile.
    Wake,
    /// A memo-key field could not be read.
    Unknown,
}

impl WhyCause {
    /// The wire form.
    pub fn as_str(self) -> &'static str {
        match self {
            WhyCause::First => "first",
            WhyCause::Contract => "contract",
            WhyCause::Inputs => "inputs",
            WhyCause::Retry => "retry",
            WhyCause::Wake => "wake",
            WhyCause::Unknown => "unknown",
        }
    }
}

/// `{from, to}`: a moved contract fingerprint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ContractMove {
    /// The previous receipt's token.
    pub from: String,
    /// This receipt's token.
    pub to: String,
}

/// `{slot, producer, facet, from, to, frame}`: one input slot whose token moved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MovedInput {
    /// Position in `input_fingerprints` (0-based).
    pub slot: usize,
    /// The slot's producer, when the topology names the slot's edge.
    pub producer: Option<String>,
    /// The slot's facet (`@atomic` or a named facet), when the topology names the edge.
    pub facet: Option<String>,
    /// The previous receipt's token; `null` when the slot is new.
    pub from: Option<String>,
    /// This receipt's token; `null` when the slot disappeared.
    pub to: Option<String>,
    /// The producer's latest frame before this one, when the producer is known and has one.
    pub frame: Option<usize>,
}

/// The cause of one rendered or failed frame. JSON (key order as listed):
/// `{causes: string[], wake: "input"|"self"|"external"|null, prior: number|null,
/// priorStatus: string|null, contract: {from, to}|null, inputs: MovedInput[],
/// refs: (number|null)[], text: string}` — `prior` is the node's previous frame, `refs` holds
/// one entry per `wake.refs` element (the frame with that content hash, or `null`), `text` a
/// one-line English summary naming node ids and frame indexes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Why {
    /// At least one cause, in the order of the module documentation.
    pub causes: Vec<WhyCause>,
    /// `wake.source`, when readable.
    pub wake: Option<WakeSource>,
    /// The node's previous frame.
    pub prior: Option<usize>,
    /// The previous frame's status.
    pub prior_status: Option<Status>,
    /// The moved contract fingerprint.
    pub contract: Option<ContractMove>,
    /// The moved input slots, ascending.
    pub inputs: Vec<MovedInput>,
    /// `wake.refs` resolved to earlier frames.
    pub refs: Vec<Option<usize>>,
    /// One-line summary.
    pub text: String,
}

/// The input slots of every node (FORMATS.md §8.3), indexed once from a topology: slot `k` of
/// node `n` is `n`'s `k`-th inbound edge in edge order; an entry point has one more slot after
/// them, the mounted `<gw>::ingress` `@atomic` edge.
#[derive(Clone, Debug, Default)]
pub(crate) struct WhySlots {
    inbound: HashMap<String, Vec<(String, String)>>,
    entry_points: HashSet<String>,
}

impl WhySlots {
    /// Indexes `topology` (`None`: the node-only fallback, no slot is named). O(edges).
    pub(crate) fn new(topology: Option<&Topology>) -> WhySlots {
        let mut s = WhySlots::default();
        if let Some(t) = topology {
            for e in &t.edges {
                s.inbound
                    .entry(e.subscriber.clone())
                    .or_default()
                    .push((e.producer.clone(), e.facet.clone()));
            }
            s.entry_points = t.entry_points.iter().cloned().collect();
        }
        s
    }

    /// `(producer, facet)` of slot `k` of `node`, when the topology names it.
    pub(crate) fn slot(&self, node: &str, k: usize) -> Option<(String, String)> {
        let inbound = self.inbound.get(node).map(Vec::as_slice).unwrap_or(&[]);
        match inbound.get(k) {
            Some((p, f)) => Some((p.clone(), f.clone())),
            None if k == inbound.len() && self.entry_points.contains(node) => {
                Some((ingress_node(node), "@atomic".to_string()))
            }
            None => None,
        }
    }
}

/// What [`explain`] needs from a ledger.
pub(crate) trait WhyLedger {
    /// The raw receipt at frame `i`.
    fn receipt(&self, i: usize) -> Option<&Value>;
    /// The latest frame of `node` strictly before frame `before`.
    fn latest_before(&self, node: &str, before: usize) -> Option<usize>;
    /// A frame whose stored `content_hash` is `hash` (any one; callers check the position).
    fn by_hash(&self, hash: &str) -> Option<usize>;
    /// The `node` of frame `i`, when a string (a ledger walked in one pass keeps only this of
    /// earlier frames).
    fn node_of(&self, i: usize) -> Option<&str> {
        self.receipt(i).and_then(|v| str_at(v, "node"))
    }
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn inputs_of(v: &Value) -> Option<Vec<&str>> {
    v.get("input_fingerprints")?
        .as_array()?
        .iter()
        .map(Value::as_str)
        .collect()
}

/// `sha256:` + 8 hex digits + `…` for a content address; other tokens clipped to 60 characters.
pub(crate) fn short_token(s: &str) -> String {
    let hexy = |t: &str| t.len() > 8 && t.bytes().all(|b| b.is_ascii_hexdigit());
    match s.strip_prefix("sha256:") {
        Some(hex) if hexy(hex) => format!("sha256:{}…", &hex[..8]),
        _ if s.chars().count() > 60 => format!("{}…", s.chars().take(59).collect::<String>()),
        _ => s.to_string(),
    }
}

/// The cause of frame `i` (`None` for a skipped frame, a frame without a readable `node` or
/// `status`, or an index outside the ledger).
pub(crate) fn explain(slots: &WhySlots, ledger: &dyn WhyLedger, i: usize) -> Option<Why> {
    let r = ledger.receipt(i)?;
    let node = str_at(r, "node").filter(|n| !n.is_empty())?;
    let status = str_at(r, "status").and_then(Status::parse)?;
    if status == Status::Skipped {
        return None;
    }
    let wake = r.get("wake");
    let source = wake
        .and_then(|w| str_at(w, "source"))
        .and_then(WakeSource::parse);
    let refs: Vec<Option<usize>> = wake
        .and_then(|w| w.get("refs"))
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .map(|h| {
                    h.as_str()
                        .and_then(|h| ledger.by_hash(h))
                        .filter(|&k| k < i)
                })
                .collect()
        })
        .unwrap_or_default();
    let prior = ledger.latest_before(node, i);
    let prior_receipt = prior.and_then(|p| ledger.receipt(p));
    let prior_status = prior_receipt
        .and_then(|p| str_at(p, "status"))
        .and_then(Status::parse);
    let mut why = Why {
        causes: Vec::new(),
        wake: source,
        prior,
        prior_status,
        contract: None,
        inputs: Vec::new(),
        refs,
        text: String::new(),
    };
    match prior_receipt {
        None => why.causes.push(WhyCause::First),
        Some(p) => compare_keys(&mut why, slots, ledger, node, i, r, p),
    }
    why.text = summary(&why, ledger);
    Some(why)
}

/// Fills the causes of a receipt `r` (frame `i` of `node`) that has a previous receipt `p`.
fn compare_keys(
    why: &mut Why,
    slots: &WhySlots,
    ledger: &dyn WhyLedger,
    node: &str,
    i: usize,
    r: &Value,
    p: &Value,
) {
    let (Some(cur_c), Some(old_c), Some(cur_in), Some(old_in)) = (
        str_at(r, "contract_fingerprint"),
        str_at(p, "contract_fingerprint"),
        inputs_of(r),
        inputs_of(p),
    ) else {
        why.causes.push(WhyCause::Unknown);
        return;
    };
    if cur_c != old_c {
        why.causes.push(WhyCause::Contract);
        why.contract = Some(ContractMove {
            from: old_c.to_string(),
            to: cur_c.to_string(),
        });
    }
    for k in 0..cur_in.len().max(old_in.len()) {
        let (to, from) = (cur_in.get(k).copied(), old_in.get(k).copied());
        if to == from {
            continue;
        }
        let edge = slots.slot(node, k);
        let frame = edge
            .as_ref()
            .and_then(|(producer, _)| ledger.latest_before(producer, i));
        let (producer, facet) = match edge {
            Some((p, f)) => (Some(p), Some(f)),
            None => (None, None),
        };
        why.inputs.push(MovedInput {
            slot: k,
            producer,
            facet,
            from: from.map(str::to_string),
            to: to.map(str::to_string),
            frame,
        });
    }
    if !why.inputs.is_empty() {
        why.causes.push(WhyCause::Inputs);
    }
    if why.causes.is_empty() {
        why.causes
            .push(if why.prior_status == Some(Status::Failed) {
                WhyCause::Retry
            } else {
                WhyCause::Wake
            });
    }
}

const LISTED_INPUTS: usize = 4;

fn summary(why: &Why, ledger: &dyn WhyLedger) -> String {
    let wake = why.wake.map_or("unreadable", WakeSource::as_str);
    let mut parts: Vec<String> = Vec::new();
    for c in &why.causes {
        parts.push(match c {
            WhyCause::First => format!("first receipt of this node ({wake} wake)"),
            WhyCause::Contract => match &why.contract {
                Some(m) => format!(
                    "contract changed ({} → {})",
                    short_token(&m.from),
                    short_token(&m.to)
                ),
                None => "contract changed".into(),
            },
            WhyCause::Inputs => input_text(&why.inputs),
            WhyCause::Retry => match why.prior {
                Some(p) => format!("memo key unchanged; retried after the failed frame {p}"),
                None => "memo key unchanged; retried after a failure".into(),
            },
            WhyCause::Wake => format!("memo key unchanged; {wake} wake"),
            WhyCause::Unknown => "memo key unreadable (contract_fingerprint or input_fingerprints \
                 missing here or in the previous receipt)"
                .into(),
        });
    }
    // Without named slots, the wake refs say which receipts woke the node.
    let unnamed = why.inputs.iter().any(|m| m.producer.is_none());
    if unnamed || why.causes.contains(&WhyCause::Unknown) {
        let woken: Vec<String> = why
            .refs
            .iter()
            .flatten()
            .map(|&k| match ledger.node_of(k) {
                Some(n) => format!("frame {k} ({n})"),
                None => format!("frame {k}"),
            })
            .collect();
        if !woken.is_empty() {
            parts.push(format!("woken by {}", woken.join(", ")));
        }
    }
    parts.join("; ")
}

fn input_text(inputs: &[MovedInput]) -> String {
    let mut items: Vec<String> = inputs
        .iter()
        .take(LISTED_INPUTS)
        .map(|m| {
            let what = match (&m.producer, &m.facet) {
                (Some(p), Some(f)) => format!("{p} {f}"),
                _ => format!("slot {}", m.slot),
            };
            match (&m.from, &m.to, m.frame) {
                (_, None, _) => format!("{what} (slot removed)"),
                (None, Some(_), Some(k)) => format!("{what} (new slot, frame {k})"),
                (None, Some(_), None) => format!("{what} (new slot)"),
                (Some(_), Some(_), Some(k)) => format!("{what} (frame {k})"),
                (Some(_), Some(_), None) => what,
            }
        })
        .collect();
    if inputs.len() > LISTED_INPUTS {
        items.push(format!("{} more", inputs.len() - LISTED_INPUTS));
    }
    let noun = if inputs.len() == 1 { "input" } else { "inputs" };
    format!("{noun} moved: {}", items.join(", "))
}

/// A linear walk: each frame is explained when the receipts before it are indexed.
struct Walk<'a> {
    raw: &'a [Value],
    last: HashMap<&'a str, usize>,
    hashes: HashMap<&'a str, usize>,
}

impl WhyLedger for Walk<'_> {
    fn receipt(&self, i: usize) -> Option<&Value> {
        self.raw.get(i)
    }
    fn latest_before(&self, node: &str, before: usize) -> Option<usize> {
        self.last.get(node).copied().filter(|&k| k < before)
    }
    fn by_hash(&self, hash: &str) -> Option<usize> {
        self.hashes.get(hash).copied()
    }
}

/// The cause of every frame of a ledger (`None` for skipped frames), in one pass: O(receipts +
/// the lengths of their input fingerprints and wake refs) time, O(nodes + receipts) memory for
/// the node and content-hash indexes. `topology` is the compiled topology (`None`: fallback).
pub fn explain_ledger(raw: &[Value], topology: Option<&Topology>) -> Vec<Option<Why>> {
    let slots = WhySlots::new(topology);
    let mut walk = Walk {
        raw,
        last: HashMap::new(),
        hashes: HashMap::with_capacity(raw.len()),
    };
    let mut out = Vec::with_capacity(raw.len());
    for (i, r) in raw.iter().enumerate() {
        out.push(explain(&slots, &walk, i));
        if let Some(n) = str_at(r, "node") {
            walk.last.insert(n, i);
        }
        if let Some(h) = str_at(r, "content_hash") {
            walk.hashes.entry(h).or_insert(i);
        }
    }
    out
}

#[cfg(test)]
#[path = "why_tests.rs"]
mod tests;
