//! `reactor logs [--node <node>]` (HOST.md §8.9): one line per receipt in ledger order.
//!
//! ```text
//! reactor logs
//!
//!   inbox::ingress               rendered wake=external fresh=0 reused=0
//!   digest                       failed   wake=input    fresh=90 reused=0
//!       reason: postconditions failed: cites-items (attested false)
//! ```
//!
//! JSON: `{"receipts": N, "entries": [{"index", "node", "status", "wake_source",
//! "cost": {"fresh", "reused"}, "content_hash", "reason"?}]}`. `receipts list` prints the same
//! body under its own header.

use std::path::Path;
use std::process::ExitCode;

use crate::host::args::{ArgStream, Globals, OwnedArg};
use crate::host::error::HostError;
use crate::host::output::{self, NODE_WIDTH, Report};
use crate::replay::trail::{Trail, TrailEntry};

/// `reactor logs --help`.
pub(crate) const HELP: &str = "reactor logs — one line per receipt, in ledger order

Usage:
  reactor logs [--node <node>] [global flags]

Flags:
  --node <node>   Only the receipts of this node

Each line: node, status, wake source and tokens (fresh=<n> reused=<n>); a failed
receipt adds its reason. Reads the ledger without locking or repairing it.
";

/// Parsed arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Args {
    /// `--node`.
    pub node: Option<String>,
}

/// Parses `logs` arguments.
pub fn parse(s: &mut ArgStream<'_>) -> Result<Args, HostError> {
    let mut a = Args::default();
    while let Some(arg) = s.next_arg()? {
        match &arg {
            OwnedArg::Long(l) if l == "node" => a.node = Some(s.value("--node")?),
            _ => return Err(s.unexpected(&arg)),
        }
    }
    Ok(a)
}

/// Reads the ledger of `state_dir` through the one reader ([`Trail::read`]) and prints its
/// notes (a torn tail, a zero-length file) on stderr. Every offline verb starts here.
///
/// Errors (state, exit 1): `<state-dir>: <problem>` with the hint `restore the file from a
/// backup or move it aside` for a corrupt, blank or non-array ledger; an unreadable file.
pub(crate) fn read_trail(state_dir: &Path) -> Result<Trail, HostError> {
    let trail = Trail::read(state_dir).map_err(|e| HostError::ledger_read(state_dir, &e))?;
    for n in trail.notes() {
        output::note(&n);
    }
    Ok(trail)
}

/// True when `node` is a topology node or appears in the ledger.
pub(crate) fn is_known_node(state_dir: &Path, trail: &Trail, node: &str) -> bool {
    if trail.has_node(node) {
        return true;
    }
    matches!(
        crate::replay::statedir::read_topology(state_dir),
        Ok(Some(t)) if t.topology.has_node(node)
    )
}

/// `unknown node '<node>'` (exit 1).
pub(crate) fn unknown_node(node: &str) -> HostError {
    HostError::input(format!(
        "unknown node '{}'",
        crate::host::yaml::clip(node, 120)
    ))
}

/// One listing line: `  <node:28> <status:8> wake=<source:8> fresh=<n> reused=<n>` and, under a
/// failed receipt with a reason, `      reason: <reason>`.
pub(crate) fn entry_lines(e: &TrailEntry) -> String {
    let mut s = format!(
        "  {:<w$} {:<8} wake={:<8} {}\n",
        e.node,
        e.status,
        e.wake_source,
        output::pair(e.fresh, e.reused),
        w = NODE_WIDTH
    );
    if let Some(r) = &e.reason {
        s.push_str(&format!("      reason: {r}\n"));
    }
    s
}

/// The JSON member of one entry.
pub(crate) fn entry_json(e: &TrailEntry) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    m.insert("index".into(), e.index.into());
    m.insert("node".into(), e.node.clone().into());
    m.insert("status".into(), e.status.clone().into());
    m.insert("wake_source".into(), e.wake_source.clone().into());
    m.insert(
        "cost".into(),
        serde_json::json!({"fresh": e.fresh, "reused": e.reused}),
    );
    m.insert("content_hash".into(), e.content_hash.clone().into());
    if let Some(r) = &e.reason {
        m.insert("reason".into(), r.clone().into());
    }
    serde_json::Value::Object(m)
}

/// Prints the listing of `logs` / `receipts list` under `reactor <title>`.
pub(crate) fn print_listing(
    title: &str,
    state_dir: &Path,
    node: Option<&str>,
    json: bool,
) -> Result<ExitCode, HostError> {
    let trail = read_trail(state_dir)?;
    if let Some(n) = node
        && !is_known_node(state_dir, &trail, n)
    {
        return Err(unknown_node(n));
    }
    let entries: Vec<&TrailEntry> = match node {
        Some(n) => trail.entries_of(n).collect(),
        None => trail.entries.iter().collect(),
    };
    if json {
        output::print_json(&serde_json::json!({
            "receipts": entries.len(),
            "entries": entries.iter().map(|e| entry_json(e)).collect::<Vec<_>>(),
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut r = Report::new(title);
    if entries.is_empty() {
        r.line(2, "(no receipts)");
    }
    let mut text = r.finish();
    for e in entries {
        text.push_str(&entry_lines(e));
    }
    output::write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// Runs `logs`.
pub fn exec(a: Args, g: &Globals) -> Result<ExitCode, HostError> {
    let (_, reactor) = g.select_reactor("logs")?;
    print_listing("logs", &reactor.state_dir, a.node.as_deref(), g.json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_layout() {
        let mut e = TrailEntry {
            index: 0,
            node: "inbox::ingress".into(),
            status: "rendered".into(),
            wake_source: "external".into(),
            surprise_cause: "external".into(),
            fresh: 0,
            reused: 0,
            content_hash: None,
            prev: None,
            reason: None,
        };
        assert_eq!(
            entry_lines(&e),
            "  inbox::ingress               rendered wake=external fresh=0 reused=0\n"
        );
        e.node = "digest".into();
        e.status = "failed".into();
        e.wake_source = "input".into();
        e.fresh = 90;
        e.reason = Some("postconditions failed: cites-items (attested false)".into());
        assert_eq!(
            entry_lines(&e),
            "  digest                       failed   wake=input    fresh=90 reused=0\n      reason: postconditions failed: cites-items (attested false)\n"
        );
    }
}
