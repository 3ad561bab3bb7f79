//! `reactor inspect <node> [--strict]` (HOST.md §8.8): one node in detail — its place in the
//! compiled topology, its published world-model pointer, its receipts, cost and chain verdict.
//!
//! A node outside the topology but present in the ledger (a phantom ingress producer, a removed
//! node) shows `known          no (not in the compiled topology)`; a node in neither is
//! `unknown node '<node>'` (exit 1). `--strict` exits 1 on a broken chain.

use std::process::ExitCode;

use serde::Serialize;

use crate::format::address::is_content_address;
use crate::format::json::Value;
use crate::format::topology::TopologyFile;
use crate::host::args::{ArgStream, Globals, OwnedArg};
use crate::host::error::{HostError, StateDirContext};
use crate::host::logs::unknown_node;
use crate::host::output::Report;
use crate::host::report::{ChainReport, FacetMap, VerbReport, print};
use crate::host::rollup::CostRollup;
use crate::replay::statedir::{self, VersionFile};

/// `reactor inspect --help`.
pub const HELP: &str = "reactor inspect — one node in detail

Usage:
  reactor inspect <node> [--strict] [global flags]

Flags:
  --strict   Exit 1 when the node's receipt chain is broken

Shows the node's wake source, contract fingerprint, facets, subscriptions, published
fingerprints and version, receipts, cost, last status and chain verdict.
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

/// One subscription: JSON `{"facet", "producer"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Subscription {
    /// The facet.
    pub facet: String,
    /// The producing node.
    pub producer: String,
}

/// The `inspect` report (HOST.md §8.8). JSON: `{"node", "known", "wake_source",
/// "contract_fingerprint", "maintains", "subscribesTo": [{"facet", "producer"}],
/// "publishedFingerprints", "publishedVersion", "lastReceipt", "receipts", "cost": <cost
/// rollup>, "chain": {"ok", "head"?, "length"?, "errors"?}}`.
#[derive(Clone, Debug, Serialize)]
pub struct InspectReport {
    /// The node.
    pub node: String,
    /// True when the node is in the compiled topology.
    pub known: bool,
    /// Its wake source (topology nodes only).
    pub wake_source: Option<String>,
    /// Its contract fingerprint (topology nodes only).
    pub contract_fingerprint: Option<String>,
    /// Its declared facets.
    pub maintains: Vec<String>,
    /// What it subscribes to.
    #[serde(rename = "subscribesTo")]
    pub subscribes_to: Vec<Subscription>,
    /// The fingerprints of `published.json` (`null` before the first commit).
    #[serde(rename = "publishedFingerprints")]
    pub published_fingerprints: Option<FacetMap>,
    /// The published version (`null` before the first commit).
    #[serde(rename = "publishedVersion")]
    pub published_version: Option<String>,
    /// The node's last receipt as stored.
    #[serde(rename = "lastReceipt")]
    pub last_receipt: Option<Value>,
    /// Its receipt count.
    pub receipts: usize,
    /// Its cost rollup.
    pub cost: CostRollup,
    /// Its chain verdict.
    pub chain: ChainReport,
    /// The `version` line's detail: `(<n> files)`, `(version file missing)` or
    /// `(unreadable: <error>)`.
    #[serde(skip)]
    pub version_detail: Option<String>,
    /// The last receipt's status and failure reason.
    #[serde(skip)]
    pub last: Option<(String, Option<String>)>,
}

impl VerbReport for InspectReport {
    fn to_text(&self) -> String {
        let mut r = Report::new(&format!("inspect {}", self.node));
        if self.known {
            r.field("wake source", self.wake_source.as_deref().unwrap_or("?"));
            r.field(
                "contract",
                self.contract_fingerprint.as_deref().unwrap_or("?"),
            );
            r.field("maintains", format!("[{}]", self.maintains.join(", ")));
            r.line(2, "subscribes to:");
            if self.subscribes_to.is_empty() {
                r.line(4, "(none)");
            }
            for s in &self.subscribes_to {
                r.line(4, format!("{} <- {}", s.facet, s.producer));
            }
        } else {
            r.field("known", "no (not in the compiled topology)");
        }
        r.line(2, "published:");
        match &self.published_fingerprints {
            Some(fps) => {
                for (facet, token) in &fps.0 {
                    r.sub_field(facet, short_token(token));
                }
            }
            None => {
                r.line(4, "(none — cold)");
            }
        }
        if let (Some(v), Some(detail)) = (&self.published_version, &self.version_detail) {
            r.field("version", format!("{} {detail}", short_token(v)));
        }
        r.field("receipts", self.receipts.to_string());
        r.field("cost", self.cost.total.pair());
        r.field(
            "last status",
            self.last
                .as_ref()
                .map(|(s, _)| s.as_str())
                .unwrap_or("(none)"),
        );
        if let Some(reason) = self.last.as_ref().and_then(|(_, r)| r.as_deref()) {
            r.field("last reason", reason);
        }
        if self.chain.ok {
            r.field("chain", format!("ok ({} receipts)", self.chain.length));
        } else {
            r.field("chain", "BROKEN");
            for e in &self.chain.errors {
                r.line(4, format!("! {e}"));
            }
        }
        r.finish()
    }
}

/// The node's place in the compiled topology: wake source, contract fingerprint, facets and
/// subscriptions.
fn topology_part(
    state_dir: &std::path::Path,
    t: &TopologyFile,
    node: &str,
) -> (
    Option<String>,
    Option<String>,
    Vec<String>,
    Vec<Subscription>,
) {
    let wake = t
        .topology
        .nodes
        .iter()
        .find(|n| n.node == node)
        .and_then(|n| n.wake_source)
        .map(|w| w.as_str().to_string());
    let subs = t
        .topology
        .edges
        .iter()
        .filter(|e| e.subscriber == node)
        .map(|e| Subscription {
            facet: e.facet.clone(),
            producer: e.producer.clone(),
        })
        .collect();
    (
        wake,
        contract_of(t, node),
        statedir::maintains(state_dir, &t.topology.index(), node),
        subs,
    )
}

/// Gathers the `inspect` report of `node` (HOST.md §8.8).
pub fn gather(state_dir: &std::path::Path, node: &str) -> Result<InspectReport, HostError> {
    let trail = crate::host::logs::read_trail(state_dir)?;
    let topo = statedir::read_topology(state_dir).in_state_dir(state_dir)?;
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
    let (wake, contract, maintains, subs) = match (&topo, in_topology) {
        (Some(t), true) => topology_part(state_dir, t, node),
        _ => (None, None, Vec::new(), Vec::new()),
    };
    let version_detail =
        published.as_ref().map(
            |p| match statedir::version_file(state_dir, node, &p.version) {
                VersionFile::Files(n) => format!("({n} files)"),
                VersionFile::Missing => "(version file missing)".to_string(),
                VersionFile::Invalid(e) => format!("(unreadable: {e})"),
            },
        );
    let last = trail.entries_of(node).last();
    Ok(InspectReport {
        node: node.to_string(),
        known: in_topology,
        wake_source: wake,
        contract_fingerprint: contract,
        maintains,
        subscribes_to: subs,
        published_fingerprints: published
            .as_ref()
            .map(|p| FacetMap(p.fingerprints.0.clone())),
        published_version: published.as_ref().map(|p| p.version.clone()),
        last_receipt: last.map(|e| trail.raw[e.index].clone()),
        receipts: trail.count_of(node),
        cost: CostRollup::of_trail(&trail, Some(node)),
        chain: ChainReport::from(&trail.verify_chain(node)),
        version_detail,
        last: last.map(|e| (e.status.clone(), e.reason.clone())),
    })
}

/// Runs `inspect`.
pub fn exec(a: Args, g: &Globals) -> Result<ExitCode, HostError> {
    let (_, reactor) = g.select_reader("inspect")?;
    let report = gather(&reactor.state_dir, &a.node)?;
    print(&report, g.json)?;
    Ok(ExitCode::from(u8::from(a.strict && !report.chain.ok)))
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
