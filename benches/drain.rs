//! Drain benchmark (run with `cargo bench --bench drain`): the cold boot of a generated
//! 10,000-node DAG with scripted renders, drained once, twice: with the drain's writes made
//! durable once at its end (group commit; goal ≤ 2 s) and with durability after every receipt.
//! Prints times and their ratio; asserts only that every node rendered.

use std::sync::Arc;
use std::time::Instant;

use reactor::core::ir::{AtomicRules, Ir, NodeIr};
use reactor::core::{Disposition, Reactor, ReactorOptions, RenderOutcome, RenderProduct};
use reactor::format::receipt::WakeSource;
use reactor::format::topology::{Edge, TopologyNode};
use reactor::scenario::ScriptedRender;
use reactor::store::ledger::SyncPolicy;

const LAYERS: usize = 100;
const WIDTH: usize = 100;

fn id(layer: usize, i: usize) -> String {
    format!("n{layer:03}-{i:03}")
}

fn ir() -> Ir {
    let mut ir = Ir::default();
    for l in 0..LAYERS {
        for i in 0..WIDTH {
            let n = id(l, i);
            let ws = if l == 0 {
                WakeSource::SelfWake
            } else {
                WakeSource::Input
            };
            ir.topology.nodes.push(TopologyNode {
                node: n.clone(),
                contract_fingerprint: Some(format!("c-{n}")),
                wake_source: Some(ws),
            });
            ir.nodes.insert(
                n.clone(),
                NodeIr {
                    id: n.clone(),
                    contract_fingerprint: format!("c-{n}"),
                    wake_source: ws,
                    rules: Arc::new(AtomicRules),
                },
            );
            if l > 0 {
                ir.topology
                    .edges
                    .push(Edge::new(&id(l - 1, i), &n, "@atomic"));
                ir.topology
                    .edges
                    .push(Edge::new(&id(l - 1, (i + 1) % WIDTH), &n, "@atomic"));
            }
        }
    }
    ir.topology.acyclic = true;
    ir
}

fn script() -> Arc<ScriptedRender> {
    let s = Arc::new(ScriptedRender::new());
    for l in 0..LAYERS {
        for i in 0..WIDTH {
            let n = id(l, i);
            s.set(&n.clone(), move |ctx| {
                let mut text = format!("# {n}\n");
                for p in ctx.upstream.producers() {
                    let files = ctx.upstream.read(p).unwrap_or_default();
                    text.push_str(&format!(
                        "{p}: {} bytes\n",
                        files.iter().map(|(_, b)| b.len()).sum::<usize>()
                    ));
                }
                RenderOutcome::Done(RenderProduct {
                    files: vec![("report.md".into(), text.into_bytes())],
                    ..Default::default()
                })
            });
        }
    }
    s
}

fn run(policy: SyncPolicy) -> f64 {
    let d = tempfile::tempdir().unwrap();
    let (r, _) = Reactor::open(
        d.path(),
        ir(),
        script(),
        ReactorOptions {
            sync: policy,
            ..Default::default()
        },
    )
    .unwrap();
    let t = Instant::now();
    let res = r.boot().unwrap();
    let secs = t.elapsed().as_secs_f64();
    let rendered = res
        .iter()
        .filter(|x| x.disposition == Disposition::Rendered)
        .count();
    assert_eq!(rendered, LAYERS * WIDTH);
    secs
}

fn main() {
    let group = run(SyncPolicy::Group);
    println!(
        "drain of {} nodes, group commit (durable once at the end): {group:.3} s (goal <= 2 s)",
        LAYERS * WIDTH
    );
    if std::env::var("REACTOR_BENCH_SKIP_PER_RECEIPT").is_ok() {
        println!("per-receipt durability: skipped (REACTOR_BENCH_SKIP_PER_RECEIPT set)");
        return;
    }
    let each = run(SyncPolicy::EveryAppend);
    println!(
        "drain of {} nodes, durable after every receipt:         {each:.3} s",
        LAYERS * WIDTH
    );
    println!("RATIO per-receipt/group = {:.1}x", each / group);
}
