//! `reactor run` (HOST.md §8.4): compile if stale, boot (the cold-miss sweep), drain to
//! quiescence, report this invocation's dispositions, receipts and cost; exit 1 on a failure.

use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use crate::core::{Disposition, ReconcileResult};
use crate::format::receipt::Receipt;
use crate::host::args::{ArgStream, Globals};
use crate::host::boot::{self, CompileOutcome, ModelPlan};
use crate::host::error::HostError;
use crate::host::output::{self, Report};
use crate::host::progress::Progress;
use crate::host::rollup::CostRollup;

/// `reactor run --help`.
pub const HELP: &str = "reactor run — boot the reactor, drain to quiescence, report

Usage:
  reactor run [global flags]

Compiles first when the compile cache is stale, then runs the boot sweep (sources, failed
nodes, contract edits, moved inputs) and drains everything it wakes. Reports this run's
dispositions, receipts and cost. Does not poll gateways. Exits 1 when a node failed.
Needs the provider key unless --offline.
";

/// Parsed arguments (none besides the global flags).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Args;

/// Parses `run` arguments.
pub fn parse(s: &mut ArgStream<'_>) -> Result<Args, HostError> {
    if let Some(arg) = s.next_arg()? {
        return Err(s.unexpected(&arg));
    }
    Ok(Args)
}

/// A dispositions block of reconcile results (HOST.md §8 shared fragments).
pub fn dispositions_block(r: &mut Report, results: &[ReconcileResult]) {
    for x in results {
        r.node_row(&x.node, x.disposition.as_str());
        if let Some(reason) = &x.reason {
            r.line(6, format!("reason: {reason}"));
        }
    }
}

/// JSON dispositions `[{"node","disposition","reason"?}]`.
pub fn dispositions_json(results: &[ReconcileResult]) -> serde_json::Value {
    serde_json::Value::Array(
        results
            .iter()
            .map(|x| {
                let mut m = serde_json::Map::new();
                m.insert("node".into(), x.node.clone().into());
                m.insert("disposition".into(), x.disposition.as_str().into());
                if let Some(reason) = &x.reason {
                    m.insert("reason".into(), reason.clone().into());
                }
                serde_json::Value::Object(m)
            })
            .collect(),
    )
}

/// Collects the receipts a reactor appends (the per-invocation figures).
pub fn collect_receipts(reactor: &crate::core::Reactor) -> Arc<Mutex<Vec<Receipt>>> {
    let sink: Arc<Mutex<Vec<Receipt>>> = Arc::default();
    let s = sink.clone();
    reactor.on_receipt(move |r| s.lock().unwrap_or_else(|e| e.into_inner()).push(r.clone()));
    sink
}

/// The rollup of collected receipts.
pub fn rollup_of(receipts: &[Receipt]) -> CostRollup {
    let mut r = CostRollup::new();
    for x in receipts {
        r.add_receipt(x);
    }
    r
}

/// The `compile` line and JSON member of `run` / `trigger`.
pub fn compile_status(outcome: &CompileOutcome) -> (String, serde_json::Value) {
    match outcome {
        CompileOutcome::CacheHit => (
            "cache hit (zero session cost)".into(),
            serde_json::json!({"status": "cache-hit", "cost": {"fresh": 0, "reused": 0}}),
        ),
        CompileOutcome::Compiled(c) => (
            format!(
                "compiled (sessions ran) fresh={} reused={}",
                c.cost.tokens.fresh, c.cost.tokens.reused
            ),
            serde_json::json!({"status": "compiled", "cost": {"fresh": c.cost.tokens.fresh, "reused": c.cost.tokens.reused}}),
        ),
    }
}

/// Runs `reactor run`.
pub fn exec(_a: Args, g: &Globals) -> Result<ExitCode, HostError> {
    let (project, spec) = g.select_reactor("run")?;
    let plan = ModelPlan::resolve(&project, g.offline()?)?;
    boot::load_contracts(&spec)?;
    let key = plan.require_key(&project)?;
    let _lock = boot::take_lock(&spec.state_dir)?;
    let client = plan.client(key.clone())?;
    let progress = Progress::for_verb("run", g.json, g.quiet);
    let boot::Prepared {
        loaded,
        outcome,
        reactor,
    } = boot::prepare(
        &project,
        &spec,
        &plan,
        boot::Access {
            client,
            key: key.as_ref(),
            progress: &progress,
        },
        "compile failed (the IR is stale and could not be refreshed)",
        |_| Ok(()),
    )?;
    let appended = collect_receipts(&reactor);
    let results = reactor.boot();
    progress.finish();
    let results = results.map_err(|e| HostError::state(e.to_string()))?;
    cleanup_work();
    let receipts = appended.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let rollup = rollup_of(&receipts);
    let failed = results.iter().any(|r| r.disposition == Disposition::Failed);
    let (compile_line, compile_json) = compile_status(&outcome);
    let entry_points = &loaded.ir.topology.entry_points;
    if g.json {
        output::print_json(&serde_json::json!({
            "status": "ran",
            "ok": !failed,
            "compile": compile_json,
            "dispositions": dispositions_json(&results),
            "cost": {"fresh": rollup.total.fresh, "reused": rollup.total.reused},
            "receipts": receipts.len(),
        }))?;
    } else {
        let mut r = Report::new("run");
        r.field("compile", compile_line);
        r.blank();
        if results.is_empty() {
            r.line(2, "(no nodes woke — nothing to reconcile)");
        } else {
            r.line(2, "dispositions:");
            dispositions_block(&mut r, &results);
        }
        r.blank();
        r.field("receipts", receipts.len().to_string());
        r.field(
            "run cost",
            output::pair(rollup.total.fresh, rollup.total.reused),
        );
        if failed {
            r.blank();
            r.line(
                2,
                "note: a node FAILED — its prior truth stands and it woke nothing; `run` exits 1 when any node fails.",
            );
        }
        if let Some(first) = entry_points.first() {
            r.blank();
            let (names, verb) = if entry_points.len() == 1 {
                (first.clone(), "receives")
            } else {
                (entry_points.join(", "), "receive")
            };
            r.line(
                2,
                format!(
                    "note: run does not poll gateways; {names} {verb} data through `reactor serve` or `reactor trigger {first} --data @item.json`."
                ),
            );
        }
        output::write_stdout(&r.finish())?;
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Removes the render working directories unless `REACTOR_KEEP_WORK=1`.
pub fn cleanup_work() {
    if !crate::agent::render::keep_work_from_env() {
        let _ = crate::agent::render::remove_work_root(&crate::agent::render::default_work_root());
    }
}
