//! Reader benchmarks (run with `cargo bench --bench readers`; release mode). Prints figures and
//! ratios, asserts nothing (ISSUE 7 §4: every reader of topology, ledger and world-models is
//! linear):
//!
//! 1. Reading a 100,000-node `compile/topology.json` (parse + `unwrap_topology`, in process):
//!    goal under 1 s; and the ratio against 10,000 nodes (linear ≈ 10×, quadratic ≈ 100×).
//! 2. Every offline reader, as the real binary, over a 10,000- and a 100,000-node state
//!    directory: a gateway fanning out to every node (each of its renders wakes them all), a
//!    chain through all nodes, `labels.json` for every node, one receipt per node plus three
//!    gateway renders, world-models for every node. Seconds per reader and the 100k/10k ratio.
//! 3. The writer's open of that 100,000-receipt ledger (every receipt verified: shape, hash,
//!    chain).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use reactor::format::json::{self, Object, Value};
use reactor::format::opwm;
use reactor::format::receipt::{Cost, Fingerprints, Receipt, Status, Wake, WakeSource};
use reactor::format::topology::{Edge, Topology, TopologyNode, unwrap_topology, write_envelope};
use reactor::store::ledger::{Ledger, SyncPolicy};
use reactor::store::worldmodel::{Durability, WorldModelStore};

const GATEWAY: &str = "gateway.signal-inbox";

fn node_name(i: usize) -> String {
    format!("responsibility.node-{i:06}")
}

fn topology(n: usize) -> Topology {
    let mut t = Topology {
        acyclic: true,
        entry_points: vec![GATEWAY.into()],
        ..Default::default()
    };
    t.nodes.push(TopologyNode {
        node: GATEWAY.into(),
        contract_fingerprint: Some("contract:gateway".into()),
        wake_source: Some(WakeSource::External),
    });
    t.edges
        .push(Edge::new("ingress.signal-inbox", GATEWAY, "inbox"));
    for i in 1..n {
        t.nodes.push(TopologyNode {
            node: node_name(i),
            contract_fingerprint: Some(format!("contract:{i}")),
            wake_source: Some(WakeSource::Input),
        });
        t.edges.push(Edge::new(GATEWAY, &node_name(i), "feed"));
        if i > 1 {
            t.edges
                .push(Edge::new(&node_name(i - 1), &node_name(i), "@atomic"));
        }
    }
    t
}

fn receipt(node: &str, source: WakeSource, token: &str, facet: bool) -> Receipt {
    let h = |s: &str| reactor::format::address::address(s.as_bytes());
    let mut fingerprints = vec![("@atomic".to_string(), h(token))];
    if facet {
        fingerprints.push(("feed".into(), h(&format!("feed-{token}"))));
    }
    let mut diff = Object::new();
    diff.insert("summary", Value::str(format!("{node} {token}")));
    Receipt {
        node: node.into(),
        contract_fingerprint: h(node),
        status: Status::Rendered,
        wake: Wake {
            source,
            refs: vec![],
        },
        input_fingerprints: vec![],
        fingerprints: Fingerprints(fingerprints),
        semantic_diff: diff,
        prev: None,
        cost: Cost {
            provider: "fixture".into(),
            model: "deterministic-fake".into(),
            fresh: 120,
            reused: 40,
            surprise_cause: source,
        },
        content_hash: String::new(),
    }
}

/// A state directory with an `n`-node topology, labels, `n + 2` receipts and world-models.
fn generate(dir: &Path, n: usize) {
    let t = topology(n);
    std::fs::create_dir_all(dir.join("compile")).unwrap();
    std::fs::write(dir.join("compile/topology.json"), write_envelope(&t)).unwrap();
    let mut labels = Object::new();
    for node in &t.nodes {
        labels.push_unique(
            node.node.as_str(),
            Value::str(format!("label of {}", node.node)),
        );
    }
    std::fs::write(
        dir.join("compile/labels.json"),
        json::pretty_string(&Value::Object(labels)),
    )
    .unwrap();
    let (mut l, _) = Ledger::open(dir).unwrap();
    l.set_policy(SyncPolicy::Group);
    for k in 0..3 {
        l.append(receipt(
            GATEWAY,
            WakeSource::External,
            &format!("g{k}"),
            true,
        ))
        .unwrap();
    }
    for i in 1..n {
        l.append(receipt(
            &node_name(i),
            WakeSource::Input,
            &format!("n{i}"),
            false,
        ))
        .unwrap();
    }
    l.sync().unwrap();
    let store = WorldModelStore::new(dir).with_durability(Durability::Deferred);
    for node in t.nodes.iter().step_by(10) {
        let art =
            opwm::encode(vec![("truth.json".into(), node.node.clone().into_bytes())]).unwrap();
        store
            .commit(&node.node, &art, &Fingerprints::atomic(opwm::version(&art)))
            .unwrap();
    }
    store.flush().unwrap();
}

fn best_of(runs: usize, mut f: impl FnMut() -> Duration) -> Duration {
    (0..runs).map(|_| f()).min().unwrap_or_default()
}

fn time_topology_read(n: usize) -> Duration {
    let text = write_envelope(&topology(n));
    best_of(3, || {
        let t = Instant::now();
        let v = json::parse(text.as_bytes()).unwrap();
        let file = unwrap_topology(&v).unwrap();
        assert_eq!(file.topology.nodes.len(), n);
        t.elapsed()
    })
}

fn time_reader(bin: &str, cwd: &Path, args: &[&str], expect: &[i32]) -> Duration {
    best_of(2, || {
        let t = Instant::now();
        let st = Command::new(bin)
            .args(args)
            .current_dir(cwd)
            .env_remove("REACTOR_OFFLINE")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        let code = st.code().unwrap_or(-1);
        assert!(expect.contains(&code), "{args:?} exited {code}");
        t.elapsed()
    })
}

fn main() {
    let bin = env!("CARGO_BIN_EXE_reactor");

    // 1. The topology file alone.
    let small = time_topology_read(10_000);
    let big = time_topology_read(100_000);
    println!(
        "topology read (parse + unwrap_topology): 10,000 nodes {:.3} s; 100,000 nodes {:.3} s (goal < 1 s)",
        small.as_secs_f64(),
        big.as_secs_f64()
    );
    println!(
        "RATIO topology read 100k/10k = {:.1}x (linear ~10x, quadratic ~100x)",
        big.as_secs_f64() / small.as_secs_f64()
    );

    // 2. Every reader over whole state directories.
    let d = tempfile::tempdir().unwrap();
    let cwd = d.path().join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let sizes = [10_000usize, 100_000];
    for n in sizes {
        eprintln!("generating a {n}-node state dir …");
        generate(&d.path().join(format!("s{n}")), n);
    }
    let readers: Vec<(&str, Vec<&str>, Vec<i32>)> = vec![
        (
            "devtools --describe --json",
            vec!["devtools", "{dir}", "--describe", "--json"],
            vec![0],
        ),
        (
            "devtools --describe",
            vec!["devtools", "{dir}", "--describe"],
            vec![0],
        ),
        (
            "topology --json",
            vec!["topology", "--json", "--state-dir", "{dir}"],
            vec![0],
        ),
        (
            "topology --format mermaid",
            vec!["topology", "--format", "mermaid", "--state-dir", "{dir}"],
            vec![0],
        ),
        (
            "status --json",
            vec!["status", "--json", "--state-dir", "{dir}"],
            vec![0],
        ),
        (
            "receipts verify",
            vec!["receipts", "verify", "--state-dir", "{dir}"],
            vec![0],
        ),
        ("trace", vec!["trace", "--state-dir", "{dir}"], vec![0]),
        ("logs", vec!["logs", "--state-dir", "{dir}"], vec![0]),
        (
            "inspect <gateway>",
            vec!["inspect", GATEWAY, "--state-dir", "{dir}"],
            vec![0],
        ),
    ];
    for (name, args, expect) in &readers {
        let mut times = Vec::new();
        for n in sizes {
            let dir = d.path().join(format!("s{n}"));
            let dir = dir.to_str().unwrap();
            let args: Vec<&str> = args
                .iter()
                .map(|a| if *a == "{dir}" { dir } else { a })
                .collect();
            times.push(time_reader(bin, &cwd, &args, expect));
        }
        println!(
            "{name:<28} 10k {:>7.3} s   100k {:>7.3} s   RATIO {:.1}x",
            times[0].as_secs_f64(),
            times[1].as_secs_f64(),
            times[1].as_secs_f64() / times[0].as_secs_f64()
        );
    }

    // 3. The writer's open: every receipt verified.
    let dir = d.path().join("s100000");
    let open = best_of(3, || {
        let t = Instant::now();
        let (l, _) = Ledger::open(&dir).unwrap();
        assert_eq!(l.len(), 100_002);
        t.elapsed()
    });
    println!(
        "writer open of the 100,002-receipt ledger (verify every receipt): {:.3} s",
        open.as_secs_f64()
    );
}
