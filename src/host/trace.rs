//! `reactor trace [node] [--why]` (HOST.md §8.10): per node (every node in order of first appearance,
//! or one), the chain verdict over the raw receipts and its steps.
//!
//! ```text
//! reactor trace
//!
//!   price-watch  (chain ok)
//!     #0 rendered wake=self cause=self fresh=4100 reused=1800
//!   price-brief  (chain BROKEN)
//!     #0 rendered wake=input cause=input fresh=1110 reused=0
//!     ! chain[1].prev must be sha256:… to chain the ledger
//! ```
//!
//! JSON: `{"traces": [{"node", "steps": [{"index", "wake_source", "status", "surprise_cause",
//! "cost", "content_hash", "prev", "reason"?, "why"?}], "chain": {"ok", "head"?, "length"?,
//! "errors"?}}]}`; `index` is the position within the node's chain.
//!
//! `--why` (issue 9) adds under every rendered or failed step the line `why: <cause>` and, in
//! JSON, `"why"` on every step (`null` for a skipped one): the cause of the reconcile as
//! [`crate::replay::why`] computes it (frames are ledger positions).

use std::process::ExitCode;

use serde::Serialize;

use crate::host::args::{ArgStream, Globals, OwnedArg};
use crate::host::error::HostError;
use crate::host::logs::{is_known_node, unknown_node};
use crate::host::output::Report;
use crate::host::report::{ChainReport, VerbReport, print};
use crate::host::rollup::Tokens;
use crate::replay::trail::TrailRead;
use crate::replay::why::Why;

/// `reactor trace --help`.
pub(crate) const HELP: &str = "reactor trace — per-node receipt chains

Usage:
  reactor trace [node] [--why] [global flags]

Flags:
  --why      Under each rendered or failed step, name its cause: the producers
             and facets whose fingerprints moved its memo key, a changed contract,
             a retry after a failure, or a bare self/external wake

For every node in the ledger (in order of first appearance), or for one node: the
chain verdict (each receipt re-hashed and linked through prev) and its steps.
An unknown node exits 1.
";

/// Parsed arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Args {
    /// The node, when one is asked for.
    pub node: Option<String>,
    /// `--why`: each step's cause.
    pub why: bool,
}

/// Parses `trace` arguments.
pub fn parse(s: &mut ArgStream<'_>) -> Result<Args, HostError> {
    let mut a = Args::default();
    while let Some(arg) = s.next_arg()? {
        match arg {
            OwnedArg::Value(v) if a.node.is_none() => a.node = Some(s.positional(v, "<node>")?),
            OwnedArg::Long(l) if l == "why" => {
                s.no_value("--why")?;
                a.why = true;
            }
            other => return Err(s.unexpected(&other)),
        }
    }
    Ok(a)
}

/// One step of a node's chain: JSON `{"index", "wake_source", "status", "surprise_cause",
/// "cost", "content_hash", "prev", "reason"?, "why"?}`; `index` is the position within the
/// chain; `why` is present with `--why` only (`null` for a skipped step).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct TraceStep {
    /// Position within the node's chain.
    pub index: usize,
    /// The wake source.
    pub wake_source: String,
    /// The receipt status.
    pub status: String,
    /// The surprise cause.
    pub surprise_cause: String,
    /// The receipt's tokens.
    pub cost: Tokens,
    /// The stored content hash.
    pub content_hash: Option<String>,
    /// The stored `prev`.
    pub prev: Option<String>,
    /// The failure reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// With `--why`: the cause of the reconcile (`Some(None)` for a skipped step; `None`, not
    /// serialized, without `--why`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<Option<Why>>,
}

/// One node's trace: JSON `{"node", "steps", "chain"}`.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct NodeTrace {
    /// The node.
    pub node: String,
    /// Its receipts in chain order.
    pub steps: Vec<TraceStep>,
    /// The chain verdict.
    pub chain: ChainReport,
}

/// The `trace` report (HOST.md §8.10). JSON: `{"traces": [...]}`.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct TraceReport {
    /// One trace per node, in order of first appearance.
    pub traces: Vec<NodeTrace>,
}

impl VerbReport for TraceReport {
    fn to_text(&self) -> String {
        let mut r = Report::new("trace");
        if self.traces.is_empty() {
            r.line(2, "(no receipts)");
        }
        for t in &self.traces {
            let verdict = if t.chain.ok { "ok" } else { "BROKEN" };
            r.line(2, format!("{}  (chain {verdict})", t.node));
            for s in &t.steps {
                r.line(
                    4,
                    format!(
                        "#{} {} wake={} cause={} {}",
                        s.index,
                        s.status,
                        s.wake_source,
                        s.surprise_cause,
                        s.cost.pair()
                    ),
                );
                if let Some(reason) = &s.reason {
                    r.line(6, format!("reason: {reason}"));
                }
                if let Some(Some(w)) = &s.why {
                    r.line(6, format!("why: {}", w.text));
                }
            }
            for err in &t.chain.errors {
                r.line(4, format!("! {err}"));
            }
        }
        r.finish()
    }
}

/// Runs `trace`.
pub fn exec(a: Args, g: &Globals) -> Result<ExitCode, HostError> {
    let (_, reactor) = g.select_reader("trace")?;
    let state_dir = &reactor.state_dir;
    let trail = crate::host::logs::read_trail_with(
        state_dir,
        &TrailRead {
            why: a.why,
            why_of: a.node.as_deref(),
            last_raw_of: None,
            // `trace <node>` prints that node's chain only: the other entries are not kept.
            entries_of: a.node.as_deref(),
        },
    )?;
    let nodes: Vec<String> = match &a.node {
        Some(n) => {
            if !is_known_node(state_dir, &trail, n) {
                return Err(unknown_node(n));
            }
            vec![n.clone()]
        }
        None => trail.nodes().into_iter().map(str::to_string).collect(),
    };
    let traces = nodes
        .into_iter()
        .map(|node| NodeTrace {
            steps: trail
                .entries_of(&node)
                .enumerate()
                .map(|(i, e)| TraceStep {
                    index: i,
                    wake_source: e.wake_source.clone(),
                    status: e.status.clone(),
                    surprise_cause: e.surprise_cause.clone(),
                    cost: Tokens {
                        fresh: e.fresh,
                        reused: e.reused,
                    },
                    content_hash: e.content_hash.clone(),
                    prev: e.prev.clone(),
                    reason: e.reason.clone(),
                    why: a.why.then(|| trail.why(e.index).cloned()),
                })
                .collect(),
            chain: ChainReport::from(&trail.verify_chain(&node)),
            node,
        })
        .collect();
    print(&TraceReport { traces }, g.json)?;
    Ok(ExitCode::SUCCESS)
}
