//! `reactor trace [node]` (HOST.md §8.10): per node (every node in order of first appearance,
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

use crate::host::args::{ArgStream, Globals, OwnedArg};
use crate::host::error::HostError;
use crate::host::logs::{is_known_node, unknown_node};
use crate::host::output::{self, Report, pair};
use crate::replay::trail::chain_json;

/// `reactor trace --help`.
pub const HELP: &str = "reactor trace — per-node receipt chains

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

/// Runs `trace`.
pub fn exec(a: Args, g: &Globals) -> Result<ExitCode, HostError> {
    let (_, reactor) = g.select_reactor("trace")?;
    let state_dir = &reactor.state_dir;
    let trail = crate::host::logs::read_trail(state_dir)?;
    let nodes: Vec<String> = match &a.node {
        Some(n) => {
            if !is_known_node(state_dir, &trail, n) {
                return Err(unknown_node(n));
            }
            vec![n.clone()]
        }
        None => trail.nodes().into_iter().map(str::to_string).collect(),
    };
    let whys = a
        .why
        .then(|| crate::replay::why::explain_state_dir(state_dir, &trail.raw));
    let mut r = Report::new("trace");
    let mut traces = Vec::new();
    if nodes.is_empty() {
        r.line(2, "(no receipts)");
    }
    for node in &nodes {
        let verdict = trail.verify_chain(node);
        r.line(
            2,
            format!(
                "{node}  (chain {})",
                if verdict.ok { "ok" } else { "BROKEN" }
            ),
        );
        let mut steps = Vec::new();
        for (i, e) in trail.entries_of(node).enumerate() {
            r.line(
                4,
                format!(
                    "#{i} {} wake={} cause={} {}",
                    e.status,
                    e.wake_source,
                    e.surprise_cause,
                    pair(e.fresh, e.reused)
                ),
            );
            if let Some(reason) = &e.reason {
                r.line(6, format!("reason: {reason}"));
            }
            let why = whys.as_ref().map(|w| w.get(e.index).cloned().flatten());
            if let Some(Some(w)) = &why {
                r.line(6, format!("why: {}", w.text));
            }
            let mut step = serde_json::json!({
                "index": i,
                "wake_source": e.wake_source,
                "status": e.status,
                "surprise_cause": e.surprise_cause,
                "cost": {"fresh": e.fresh, "reused": e.reused},
                "content_hash": e.content_hash,
                "prev": e.prev,
            });
            if let (Some(reason), Some(o)) = (&e.reason, step.as_object_mut()) {
                o.insert("reason".into(), reason.clone().into());
            }
            if let (Some(w), Some(o)) = (why, step.as_object_mut()) {
                o.insert("why".into(), crate::replay::why::to_serde(w.as_ref()));
            }
            steps.push(step);
        }
        for err in &verdict.errors {
            r.line(4, format!("! {err}"));
        }
        traces.push(serde_json::json!({
            "node": node,
            "steps": steps,
            "chain": chain_json(&verdict),
        }));
    }
    if g.json {
        output::print_json(&serde_json::json!({ "traces": traces }))?;
    } else {
        output::write_stdout(r.as_str())?;
    }
    Ok(ExitCode::SUCCESS)
}
