//! `reactor status` (HOST.md §8.7): the compile cache and ledger summary of one reactor's state
//! directory. Exits 0, also over an empty or missing state directory.
//!
//! ```text
//! reactor status
//!
//!   state dir      /abs/proj/.reactor
//!   compiled       yes (fresh)
//!   topology       2 nodes, 1 edges (at 2026-06-02T18:00:00.000Z)
//!   compile cost   fresh=4210 reused=0
//!   writer         reactor serve (pid 4242) at http://127.0.0.1:8080/
//!
//!   receipts       12
//!   run cost       fresh=5210 reused=1800
//!   dispositions   rendered=5 skipped=6 failed=1
//!   …
//! ```
//!
//! `compiled` reads `yes (fresh)`, `yes (STALE: <reason>)`, `yes (freshness unknown: <error>)`
//! or `no`. JSON: `{"stateDir", "compiled", "freshness", "staleReason"?, "freshnessError"?,
//! "compile": {"nodes", "edges", "compiledAt", "cost", "model"}, "writer", "run"}`.

use std::process::ExitCode;

use crate::host::cli::{ArgStream, Globals};
use crate::host::error::HostError;
use crate::host::output::{self, Report};
use crate::host::receipts::write_ledger_body;
use crate::host::rollup::Tokens;
use crate::host::statedir::{self, Freshness, ManifestRead};
use crate::host::trail::Trail;

/// `reactor status --help`.
pub const HELP: &str = "reactor status — compile cache and ledger summary

Usage:
  reactor status [global flags]

Shows the state directory, whether the compile cache is present and fresh, the
compiled graph's size and cost, the current writer (from .lock and serve.json), and
the whole ledger's receipts, dispositions and cost by surprise cause and by node.
Exits 0 also over an empty or missing state directory.
";

/// Parsed arguments (none).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Args {}

/// Parses `status` arguments.
pub fn parse(s: &mut ArgStream<'_>) -> Result<Args, HostError> {
    if let Some(arg) = s.next_arg()? {
        return Err(s.unexpected(&arg));
    }
    Ok(Args {})
}

/// Runs `status`.
pub fn exec(_a: Args, g: &Globals) -> Result<ExitCode, HostError> {
    let (project, reactor) = g.select_reactor("status")?;
    let state_dir = &reactor.state_dir;
    let trail = Trail::read(state_dir)?;
    trail.print_notes();
    let manifest = statedir::read_manifest(state_dir);
    let freshness = statedir::compile_freshness(
        state_dir,
        &reactor.contracts_dir,
        &project.provider_settings(),
        &manifest,
    );
    let topo = statedir::read_topology(state_dir);
    let writer = statedir::current_writer(state_dir);
    let rollup = trail.rollup(None);

    let (topo_counts, topo_error) = match &topo {
        Ok(Some(t)) => (
            Some((t.topology.nodes.len() as u64, t.topology.edges.len() as u64)),
            None,
        ),
        Ok(None) => (None, None),
        Err(e) => (None, Some(e.message.clone())),
    };
    let present = match &manifest {
        ManifestRead::Present(m) => Some(m),
        _ => None,
    };
    let nodes = present.and_then(|m| m.nodes).or(topo_counts.map(|c| c.0));
    let edges = present.and_then(|m| m.edges).or(topo_counts.map(|c| c.1));
    let compiled = manifest != ManifestRead::Absent;

    if g.json {
        let mut v = serde_json::Map::new();
        if project.multi {
            v.insert("reactor".into(), reactor.name.clone().into());
        }
        v.insert("stateDir".into(), state_dir.display().to_string().into());
        v.insert("compiled".into(), compiled.into());
        v.insert("freshness".into(), freshness.as_str().into());
        match &freshness {
            Freshness::Stale(r) => {
                v.insert("staleReason".into(), r.clone().into());
            }
            Freshness::Unknown(e) => {
                v.insert("freshnessError".into(), e.clone().into());
            }
            _ => {}
        }
        let cost = present.map(|m| m.cost).unwrap_or_default();
        v.insert(
            "compile".into(),
            serde_json::json!({
                "nodes": nodes.unwrap_or(0),
                "edges": edges.unwrap_or(0),
                "compiledAt": present.and_then(|m| m.compiled_at.clone()),
                "cost": {"fresh": cost.fresh, "reused": cost.reused},
                "model": present.and_then(|m| m.model.clone()),
            }),
        );
        v.insert(
            "writer".into(),
            writer
                .as_ref()
                .map(|w| w.to_json())
                .unwrap_or(serde_json::Value::Null),
        );
        v.insert("run".into(), rollup.to_json());
        output::print_json(&serde_json::Value::Object(v))?;
        return Ok(ExitCode::SUCCESS);
    }

    let mut r = Report::new("status");
    if project.multi {
        r.field("reactor", &reactor.name);
    }
    r.field("state dir", state_dir.display().to_string());
    r.field(
        "compiled",
        match &freshness {
            Freshness::Fresh => "yes (fresh)".to_string(),
            Freshness::Stale(reason) => format!("yes (STALE: {reason})"),
            Freshness::Unknown(e) => format!("yes (freshness unknown: {e})"),
            Freshness::Absent => "no".to_string(),
        },
    );
    let topology_line = match (nodes, edges, &topo_error) {
        (_, _, Some(e)) if present.is_none() => format!("unreadable: {e}"),
        (Some(n), Some(e), _) => {
            let when = match present {
                Some(m) => m
                    .compiled_at
                    .as_deref()
                    .map(|at| format!(" (at {at})"))
                    .unwrap_or_default(),
                None => " (no compile manifest)".to_string(),
            };
            format!("{n} nodes, {e} edges{when}")
        }
        _ => "(none)".to_string(),
    };
    r.field("topology", topology_line);
    if let Some(m) = present {
        r.field("compile cost", Tokens::pair(&m.cost));
    }
    r.field(
        "writer",
        writer
            .as_ref()
            .map(|w| w.describe())
            .unwrap_or_else(|| "none".to_string()),
    );
    r.blank();
    write_ledger_body(&mut r, &rollup, None);
    output::write_stdout(r.as_str())?;
    Ok(ExitCode::SUCCESS)
}
