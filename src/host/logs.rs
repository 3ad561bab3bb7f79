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

use serde::Serialize;

use crate::host::args::{ArgStream, Globals, OwnedArg};
use crate::host::error::{HostError, StateDirContext};
use crate::host::output::{self, NODE_WIDTH, Report};
use crate::host::report::{VerbReport, print};
use crate::host::rollup::Tokens;
use crate::replay::trail::{Trail, TrailEntry, TrailRead};

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
    read_trail_with(state_dir, &TrailRead::default())
}

/// [`read_trail`], keeping what `what` asks for besides the entries and chain verdicts (the
/// causes for `trace --why` and `inspect`, one node's latest raw receipt).
///
/// Errors: as [`read_trail`].
pub(crate) fn read_trail_with(state_dir: &Path, what: &TrailRead<'_>) -> Result<Trail, HostError> {
    let trail = Trail::read_with(state_dir, what).in_state_dir(state_dir)?;
    print_notes(&trail);
    Ok(trail)
}

/// [`read_trail`] for verbs that only total the ledger: the entries are not kept, each is
/// added to the cost rollup of the receipts whose node `node` names (all when `None`) as the
/// ledger streams by ([`Trail::read_folding`]), so memory grows with nodes, not receipts.
///
/// Errors: as [`read_trail`].
pub(crate) fn read_trail_rollup(
    state_dir: &Path,
    node: Option<&str>,
) -> Result<(Trail, crate::host::rollup::CostRollup), HostError> {
    let (trail, rollup) = Trail::read_folding(
        state_dir,
        &mut crate::host::rollup::CostRollup::new,
        &|r, e| {
            if node.is_none_or(|n| e.node == n) {
                r.add_entry(e);
            }
        },
    )
    .in_state_dir(state_dir)?;
    print_notes(&trail);
    Ok((trail, rollup))
}

/// The reader's notes (a torn tail, a zero-length file) on stderr.
fn print_notes(trail: &Trail) {
    for n in trail.notes() {
        output::note(&n);
    }
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

/// One listing entry: JSON `{"index", "node", "status", "wake_source", "cost": {"fresh",
/// "reused"}, "content_hash", "reason"?}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EntryRow {
    /// Position in the ledger.
    pub index: usize,
    /// The node.
    pub node: String,
    /// The receipt status.
    pub status: String,
    /// The wake source.
    pub wake_source: String,
    /// The receipt's tokens.
    pub cost: Tokens,
    /// The stored content hash (`null` when absent).
    pub content_hash: Option<String>,
    /// The failure reason (failed receipts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl From<&TrailEntry> for EntryRow {
    fn from(e: &TrailEntry) -> Self {
        EntryRow {
            index: e.index,
            node: e.node.clone(),
            status: e.status.clone(),
            wake_source: e.wake_source.clone(),
            cost: Tokens {
                fresh: e.fresh,
                reused: e.reused,
            },
            content_hash: e.content_hash.clone(),
            reason: e.reason.clone(),
        }
    }
}

impl EntryRow {
    /// `  <node:28> <status:8> wake=<source:8> fresh=<n> reused=<n>` and, under a receipt with
    /// a reason, `      reason: <reason>`.
    pub fn lines(&self) -> String {
        let mut s = format!(
            "  {:<w$} {:<8} wake={:<8} {}\n",
            self.node,
            self.status,
            self.wake_source,
            self.cost.pair(),
            w = NODE_WIDTH
        );
        if let Some(r) = &self.reason {
            s.push_str(&format!("      reason: {r}\n"));
        }
        s
    }
}

/// The listing of `logs` and `receipts list` (HOST.md §8.9). JSON: `{"receipts": N,
/// "entries": [...]}`.
#[derive(Clone, Debug, Serialize)]
pub struct Listing {
    /// The number of entries listed.
    pub receipts: usize,
    /// The entries, in ledger order.
    pub entries: Vec<EntryRow>,
    /// The header: `logs` or `receipts`.
    #[serde(skip)]
    pub title: &'static str,
}

impl VerbReport for Listing {
    fn to_text(&self) -> String {
        let mut r = Report::new(self.title);
        if self.entries.is_empty() {
            r.line(2, "(no receipts)");
        }
        let mut text = r.finish();
        for e in &self.entries {
            text.push_str(&e.lines());
        }
        text
    }
}

/// Gathers the listing of `logs` / `receipts list` under `reactor <title>`.
pub fn listing(
    title: &'static str,
    state_dir: &Path,
    node: Option<&str>,
) -> Result<Listing, HostError> {
    let trail = read_trail(state_dir)?;
    if let Some(n) = node
        && !is_known_node(state_dir, &trail, n)
    {
        return Err(unknown_node(n));
    }
    let entries: Vec<EntryRow> = match node {
        Some(n) => trail.entries_of(n).map(EntryRow::from).collect(),
        None => trail.entries.iter().map(EntryRow::from).collect(),
    };
    Ok(Listing {
        receipts: entries.len(),
        entries,
        title,
    })
}

/// Runs `logs`.
pub fn exec(a: Args, g: &Globals) -> Result<ExitCode, HostError> {
    let (_, reactor) = g.select_reader("logs")?;
    print(
        &listing("logs", &reactor.state_dir, a.node.as_deref())?,
        g.json,
    )?;
    Ok(ExitCode::SUCCESS)
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
            EntryRow::from(&e).lines(),
            "  inbox::ingress               rendered wake=external fresh=0 reused=0\n"
        );
        e.node = "digest".into();
        e.status = "failed".into();
        e.wake_source = "input".into();
        e.fresh = 90;
        e.reason = Some("postconditions failed: cites-items (attested false)".into());
        assert_eq!(
            EntryRow::from(&e).lines(),
            "  digest                       failed   wake=input    fresh=90 reused=0\n      reason: postconditions failed: cites-items (attested false)\n"
        );
    }
}
