//! `reactor run` (HOST.md §8.4): compile if stale, boot (the cold-miss sweep), drain to
//! quiescence, report this invocation's dispositions, receipts and cost; exit 1 on a failure.

use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::format::receipt::Receipt;
use crate::host::args::{ArgStream, Globals, OwnedArg};
use crate::host::boot::{self, ModelPlan};
use crate::host::error::HostError;
use crate::host::output::Report;
use crate::host::progress::Progress;
use crate::host::report::{CompileStep, DispositionRow, VerbReport, dispositions_block, print};
use crate::host::rollup::{CostRollup, Tokens};

/// `reactor run --help`.
pub(crate) const HELP: &str = "reactor run — boot the reactor, drain to quiescence, report

Usage:
  reactor run [--parallel-renders <n>] [global flags]

Flags:
  --parallel-renders <n>   Renders run at once within the drain, 1-64 (default
                           model.parallel_renders, 4); receipts commit in the same order

Compiles first when the compile cache is stale, then runs the boot sweep (sources, failed
nodes, contract edits, moved inputs) and drains everything it wakes. Reports this run's
dispositions, receipts and cost. Does not poll gateways. Exits 1 when a node failed.
Needs the provider key unless --offline.
";

/// Parsed arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Args {
    /// `--parallel-renders` (overrides `model.parallel_renders`).
    pub parallel_renders: Option<usize>,
}

/// Parses `run` arguments.
pub fn parse(s: &mut ArgStream<'_>) -> Result<Args, HostError> {
    let mut a = Args::default();
    while let Some(arg) = s.next_arg()? {
        match &arg {
            OwnedArg::Long(l) if l == "parallel-renders" => {
                a.parallel_renders = Some(s.parallel_renders()?)
            }
            _ => return Err(s.unexpected(&arg)),
        }
    }
    Ok(a)
}

/// Collects the receipts a reactor appends (the per-invocation figures).
pub(crate) fn collect_receipts(reactor: &crate::core::Reactor) -> Arc<Mutex<Vec<Receipt>>> {
    let sink: Arc<Mutex<Vec<Receipt>>> = Arc::default();
    let s = sink.clone();
    reactor.on_receipt(move |r| s.lock().unwrap_or_else(|e| e.into_inner()).push(r.clone()));
    sink
}

/// The rollup of collected receipts.
pub(crate) fn rollup_of(receipts: &[Receipt]) -> CostRollup {
    let mut r = CostRollup::new();
    for x in receipts {
        r.add_receipt(x);
    }
    r
}

/// The `run` report (HOST.md §8.4). JSON: `{"status": "ran", "ok", "compile": {"status",
/// "cost"}, "dispositions": [...], "cost": {"fresh", "reused"}, "receipts": N}`.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct RunReport {
    /// Always `ran`.
    pub status: &'static str,
    /// No disposition failed.
    pub ok: bool,
    /// The compile step.
    pub compile: CompileStep,
    /// The boot drain's results, in firing order.
    pub dispositions: Vec<DispositionRow>,
    /// The tokens of the receipts this run appended.
    pub cost: Tokens,
    /// The number of receipts this run appended.
    pub receipts: usize,
    /// The compiled topology's entry points (for the gateway note).
    #[serde(skip)]
    pub entry_points: Vec<String>,
}

impl VerbReport for RunReport {
    fn to_text(&self) -> String {
        let mut r = Report::new("run");
        r.field("compile", self.compile.line());
        r.blank();
        if self.dispositions.is_empty() {
            r.line(2, "(no nodes woke — nothing to reconcile)");
        } else {
            r.line(2, "dispositions:");
            dispositions_block(&mut r, &self.dispositions);
        }
        r.blank();
        r.field("receipts", self.receipts.to_string());
        r.field("run cost", self.cost.pair());
        if !self.ok {
            r.blank();
            r.line(
                2,
                "note: a node FAILED — its prior truth stands and it woke nothing; `run` exits 1 when any node fails.",
            );
        }
        if let Some(first) = self.entry_points.first() {
            r.blank();
            let (names, verb) = if self.entry_points.len() == 1 {
                (first.clone(), "receives")
            } else {
                (self.entry_points.join(", "), "receive")
            };
            r.line(
                2,
                format!(
                    "note: run does not poll gateways; {names} {verb} data through `reactor serve` or `reactor trigger {first} --data @item.json`."
                ),
            );
        }
        r.finish()
    }
}

/// Runs `reactor run`.
pub fn exec(a: Args, g: &Globals) -> Result<ExitCode, HostError> {
    let (project, spec) = g.select_reactor("run")?;
    let plan =
        ModelPlan::resolve(&project, g.offline()?)?.with_parallel_renders(a.parallel_renders);
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
    crate::host::inflight::record_in_flight(&reactor);
    let appended = collect_receipts(&reactor);
    let results = reactor.boot();
    progress.finish();
    let results = results?;
    cleanup_work();
    let receipts = appended.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let dispositions = DispositionRow::of(&results);
    let report = RunReport {
        status: "ran",
        ok: !dispositions.iter().any(DispositionRow::failed),
        compile: CompileStep::from(&outcome),
        dispositions,
        cost: rollup_of(&receipts).total,
        receipts: receipts.len(),
        entry_points: loaded.ir.topology.entry_points.clone(),
    };
    print(&report, g.json)?;
    Ok(ExitCode::from(u8::from(!report.ok)))
}

/// Removes the render working directories unless `REACTOR_KEEP_WORK=1`.
pub(crate) fn cleanup_work() {
    if !crate::agent::render::keep_work_from_env() {
        let _ = crate::agent::render::remove_work_root(&crate::agent::render::default_work_root());
    }
}
