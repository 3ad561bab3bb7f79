//! Daemon read latency during a long drain (run with `cargo bench --bench daemon`): a hosted
//! reactor drains a generated DAG whose scripted renders each take about a millisecond, while
//! client threads issue GET requests over loopback. Prints requests per second and latency
//! percentiles per route (goal: reads never wait for the drain, p99 < 20 ms). Asserts nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use reactor::core::ir::{AtomicRules, Ir, NodeIr};
use reactor::core::{Reactor, ReactorOptions, RenderOutcome, RenderProduct};
use reactor::format::receipt::WakeSource;
use reactor::format::topology::{Edge, TopologyNode};
use reactor::host::daemon::{Daemon, router};
use reactor::host::events::Out;
use reactor::host::hosted::HostedReactor;
use reactor::host::queue::TaskPool;
use reactor::http::{Server, ServerConfig};
use reactor::scenario::ScriptedRender;
use reactor::store::ledger::SyncPolicy;

const LAYERS: usize = 40;
const WIDTH: usize = 50;

fn id(l: usize, i: usize) -> String {
    format!("n{l:02}-{i:02}")
}

fn main() {
    let mut ir = Ir::default();
    let s = Arc::new(ScriptedRender::new());
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
            }
            let name = n.clone();
            s.set(&n, move |_| {
                std::thread::sleep(Duration::from_millis(1));
                RenderOutcome::Done(RenderProduct {
                    files: vec![("r.md".into(), name.clone().into_bytes())],
                    ..Default::default()
                })
            });
        }
    }
    let d = tempfile::tempdir().unwrap();
    let (r, _) = Reactor::open(
        d.path(),
        ir,
        s,
        ReactorOptions {
            sync: SyncPolicy::EveryAppend,
            ..Default::default()
        },
    )
    .unwrap();
    let hosted = Arc::new(HostedReactor::new("default", 0, Arc::new(r), vec![]));
    let pool = Arc::new(TaskPool::new(1, 1));
    let daemon = Arc::new(Daemon {
        reactors: vec![hosted.clone()],
        pool: pool.clone(),
        single: true,
        stopping: Arc::new(AtomicBool::new(false)),
        out: Out::Silent,
    });
    let server = Server::start(ServerConfig::default(), router(daemon, None)).unwrap();
    let addr = server.local_addr();
    let draining = Arc::new(AtomicBool::new(true));
    let t0 = Instant::now();
    let h2 = hosted.clone();
    let done = draining.clone();
    let drain = pool.submit(0, move || {
        let res = h2.reactor.boot().map(|r| r.len());
        done.store(false, Ordering::SeqCst);
        res
    });
    let routes = [
        "/health",
        "/status",
        "/cost",
        "/topology",
        "/nodes/n39-00",
        "/receipts",
    ];
    let clients: Vec<_> = (0..4)
        .map(|c| {
            let draining = draining.clone();
            std::thread::spawn(move || {
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .build()
                    .into();
                let mut lat: Vec<(usize, f64)> = Vec::new();
                let mut k = c;
                while draining.load(Ordering::SeqCst) {
                    let ri = k % routes.len();
                    k += 1;
                    let t = Instant::now();
                    let mut resp = agent
                        .get(format!("http://{addr}{}", routes[ri]))
                        .call()
                        .unwrap();
                    let _ = resp.body_mut().read_to_vec();
                    lat.push((ri, t.elapsed().as_secs_f64() * 1000.0));
                }
                lat
            })
        })
        .collect();
    let rendered = drain.recv().unwrap().unwrap().unwrap();
    let drain_secs = t0.elapsed().as_secs_f64();
    let mut all: Vec<(usize, f64)> = Vec::new();
    for c in clients {
        all.extend(c.join().unwrap());
    }
    println!(
        "drain: {rendered} renders in {drain_secs:.2} s while 4 clients issued {} GETs ({:.0} req/s)",
        all.len(),
        all.len() as f64 / drain_secs
    );
    let pct = |v: &mut Vec<f64>, p: f64| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[((v.len() as f64 - 1.0) * p).round() as usize]
    };
    for (ri, route) in routes.iter().enumerate() {
        let mut v: Vec<f64> = all
            .iter()
            .filter(|(r, _)| *r == ri)
            .map(|(_, l)| *l)
            .collect();
        if v.is_empty() {
            continue;
        }
        println!(
            "  GET {route:<14} n={:<6} p50={:.2} ms p99={:.2} ms max={:.2} ms",
            v.len(),
            pct(&mut v, 0.5),
            pct(&mut v, 0.99),
            pct(&mut v, 1.0)
        );
    }
    let mut v: Vec<f64> = all.iter().map(|(_, l)| *l).collect();
    println!("ALL GETs p99 = {:.2} ms (goal < 20 ms)", pct(&mut v, 0.99));
    drop(server);
}
