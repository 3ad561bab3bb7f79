//! `reactor inspect <node> [--strict]` (HOST.md §8.8): one node in detail — its place in the
//! compiled topology, its published world-model pointer, its receipts, cost and chain verdict.
//!
//! A node outside the topology but present in the ledger (a phantom ingress producer, a removed
//! node) shows `known          no (not in the compiled topology)`; a node in neither is
//! `unknown node '<node>'` (exit 1). `--strict` exits 1 on a broken chain. The project adds
//! `last render    frame <i>: <cause>` (JSON `lastRender: {frame, why}` or `null`): the node's
//! latest rendered or failed receipt and why it happened ([`crate::replay::why`], issue 9).

use std::process::ExitCode;

use crate::format::address::is_content_address;
use crate::format::topology::TopologyFile;
use crate::host::args::{ArgStream, Globals, OwnedArg};
use crate::host::error::HostError;
use crate::host::logs::unknown_node;
use crate::host::output::{self, Report};
use crate::host::rollup::CostRollup;
use crate::replay::statedir::{self, VersionFile};
use crate::replay::trail::chain_json;

/// `reactor inspect --help`.
pub const HELP: &str = "reactor inspect — one node in detail

Usage:
  reactor inspect <node> [--strict] [global flags]

Flags:
  --strict   Exit 1 when the node's receipt chain is broken

Shows the node's wake source, contract fingerprint, facets, subscriptions, published
fingerprints and version, receipts, cost, last status, the cause of its last render
(which producers' fingerprints moved its memo key, a contract change, a retry or a
bare wake) and chain verdict.
";

/// Parsed arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Args {
    /// The node.
    pub node: String,
    /// `--strict`.
    pub strict: bool,
}

/// Parses `inspect` arguments.
pub fn parse(s: &mut ArgStream<'_>) -> Result<Args, HostError> {
    let mut node: Option<String> = None;
    let mut strict = false;
    while let Some(arg) = s.next_arg()? {
        match &arg {
            OwnedArg::Long(l) if l == "strict" => {
                s.no_value("--strict")?;
                strict = true;
            }
            OwnedArg::Value(v) if node.is_none() => {
                node = Some(s.positional(v.clone(), "<node>")?);
            }
            _ => return Err(s.unexpected(&arg)),
        }
    }
    match node {
        Some(node) => Ok(Args { node, strict }),
        None => Err(s.missing("<node>")),
    }
}

/// `sha256:` + 8 hex digits + `…` for a content address; other tokens as they are (clipped).
pub fn short_token(s: &str) -> String {
    if is_content_address(s) {
        format!("{}…", &s[..15])
    } else {
        crate::host::yaml::clip(s, 60)
    }
}

fn contract_of(t: &TopologyFile, node: &str) -> Option<String> {
    t.topology
        .nodes
        .iter()
        .find(|n| n.node == node)
        .and_then(|n| n.contract_fingerprint.clone())
        .filter(|f| !f.is_empty())
        .or_else(|| {
            t.contract_fingerprints
                .as_ref()?
                .iter()
                .find(|(k, _)| k == node)
                .map(|(_, v)| v.clone())
        })
}

/// Runs `inspect`.
pub fn exec(a: Args, g: &Globals) -> Result<ExitCode, HostError> {
    let (_, reactor) = g.select_reactor("inspect")?;
    let state_dir = &reactor.state_dir;
    let trail = crate::host::logs::read_trail(state_dir)?;
    let topo = statedir::read_topology(state_dir)
        .map_err(|e| crate::host::status::topology_error(state_dir, &e))?;
    let node = a.node.as_str();
    let in_topology = topo.as_ref().is_some_and(|t| t.topology.has_node(node));
    if !in_topology && !trail.has_node(node) {
        let e = unknown_node(node);
        return Err(if topo.is_none() {
            e.with_hint("this state dir has no compiled topology; run `reactor compile` first")
        } else {
            e
        });
    }
    let published = statedir::published(state_dir, node);
    let verdict = trail.verify_chain(node);
    let rollup = CostRollup::of_trail(&trail, Some(node));
    let count = trail.count_of(node);
    let last = trail.entries_of(node).last().cloned();
    // Why did its last render happen (issue 9): the latest rendered or failed receipt's cause.
    let whys = crate::replay::why::explain_state_dir(state_dir, &trail.raw);
    let last_render = crate::replay::why::last_render(&trail.raw, &whys, node);

    let (wake, contract, maintains, subs) = match (&topo, in_topology) {
        (Some(t), true) => {
            let wake = t
                .topology
                .nodes
                .iter()
                .find(|n| n.node == node)
                .and_then(|n| n.wake_source)
                .map(|w| w.as_str().to_string());
            let subs: Vec<(String, String)> = t
                .topology
                .edges
                .iter()
                .filter(|e| e.subscriber == node)
                .map(|e| (e.facet.clone(), e.producer.clone()))
                .collect();
            (
                wake,
                contract_of(t, node),
                statedir::maintains(state_dir, &t.topology.index(), node),
                subs,
            )
        }
        _ => (None, None, Vec::new(), Vec::new()),
    };
    let version_state = published
        .as_ref()
        .map(|p| statedir::version_file(state_dir, node, &p.version));

    if g.json {
        let v = serde_json::json!({
            "node": node,
            "known": in_topology,
            "wake_source": wake,
            "contract_fingerprint": contract,
            "maintains": maintains,
            "subscribesTo": subs.iter().map(|(f, p)| serde_json::json!({"facet": f, "producer": p})).collect::<Vec<_>>(),
            "publishedFingerprints": published.as_ref().map(|p| p.fingerprints.to_value().to_serde()),
            "publishedVersion": published.as_ref().map(|p| p.version.clone()),
            "lastReceipt": last.as_ref().map(|e| trail.raw[e.index].to_serde()),
            "receipts": count,
            "cost": rollup.to_json(),
            "chain": chain_json(&verdict),
            "lastRender": last_render.as_ref().map(|(i, w)| serde_json::json!({"frame": i, "why": crate::replay::why::to_serde(Some(w))})),
        });
        output::print_json(&v)?;
    } else {
        let mut r = Report::new(&format!("inspect {node}"));
        if in_topology {
            r.field("wake source", wake.as_deref().unwrap_or("?"));
            r.field("contract", contract.as_deref().unwrap_or("?"));
            r.field("maintains", format!("[{}]", maintains.join(", ")));
            r.line(2, "subscribes to:");
            if subs.is_empty() {
                r.line(4, "(none)");
            }
            for (f, p) in &subs {
                r.line(4, format!("{f} <- {p}"));
            }
        } else {
            r.field("known", "no (not in the compiled topology)");
        }
        r.line(2, "published:");
        match &published {
            None => {
                r.line(4, "(none — cold)");
            }
            Some(p) => {
                for (facet, token) in &p.fingerprints.0 {
                    r.sub_field(facet, short_token(token));
                }
            }
        }
        if let (Some(p), Some(vs)) = (&published, &version_state) {
            let detail = match vs {
                VersionFile::Files(n) => format!("({n} files)"),
                VersionFile::Missing => "(version file missing)".to_string(),
                VersionFile::Invalid(e) => format!("(unreadable: {e})"),
            };
            r.field("version", format!("{} {detail}", short_token(&p.version)));
        }
        r.field("receipts", count.to_string());
        r.field("cost", rollup.total.pair());
        r.field(
            "last status",
            last.as_ref().map(|e| e.status.as_str()).unwrap_or("(none)"),
        );
        if let Some(reason) = last.as_ref().and_then(|e| e.reason.as_deref()) {
            r.field("last reason", reason);
        }
        if let Some((i, w)) = &last_render {
            r.field("last render", format!("frame {i}: {}", w.text));
        }
        if verdict.ok {
            r.field("chain", format!("ok ({} receipts)", verdict.length));
        } else {
            r.field("chain", "BROKEN");
            for e in &verdict.errors {
                r.line(4, format!("! {e}"));
            }
        }
        output::write_stdout(r.as_str())?;
    }
    if a.strict && !verdict.ok {
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_shortened() {
        assert_eq!(
            short_token("sha256:59e80454aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
            "sha256:59e80454…"
        );
        assert_eq!(short_token("inbox:2"), "inbox:2");
    }
}
