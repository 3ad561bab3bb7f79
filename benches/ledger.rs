//! Ledger benchmarks (run with `cargo bench --bench ledger`; release mode). Prints ratios, asserts
//! nothing:
//!
//! 1. `reactor-devtools <dir> --describe --json` on a generated 100,000-receipt ledger against
//!    `jq -c .` on the same `receipts.json` (goal ≤ 0.5×).
//! 2. The time to append receipts 100,001–101,000 against receipts 1–1,000, each append fsynced
//!    (goal ≤ 1.5×: appends are O(receipt), not O(ledger)).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use reactor::format::json::{Object, Value};
use reactor::format::receipt::{Cost, Fingerprints, Receipt, Status, Wake, WakeSource};
use reactor::format::topology::{Edge, Topology, TopologyNode, write_envelope};
use reactor::store::ledger::{Ledger, SyncPolicy};

const NODES: usize = 40;

fn node_name(i: usize) -> String {
    format!("responsibility.node-{i:02}")
}

fn receipt(i: u64) -> Receipt {
    let n = (i as usize * 7) % NODES;
    let status = match i % 10 {
        0..=5 => Status::Rendered,
        6..=8 => Status::Skipped,
        _ => Status::Failed,
    };
    let source = [
        WakeSource::Input,
        WakeSource::External,
        WakeSource::SelfWake,
    ][(i % 3) as usize];
    let mut diff = Object::new();
    let (fresh, reused) = match status {
        Status::Rendered => {
            diff.insert(
                "summary",
                Value::str(format!("revision {i} of the node's truth")),
            );
            (180 * (1 + i % 9), 240 + 40 * (i % 9))
        }
        Status::Failed => {
            diff.insert(
                "failure_reason",
                Value::str("postconditions failed: has-prices (tripped)"),
            );
            (0, 0)
        }
        Status::Skipped => (0, 0),
    };
    let h = |s: String| reactor::format::address::address(s.as_bytes());
    Receipt {
        node: node_name(n),
        contract_fingerprint: h(format!("contract-{n}")),
        status,
        wake: Wake {
            source,
            refs: if source == WakeSource::Input {
                vec![h(format!("ref-{i}"))]
            } else {
                vec![]
            },
        },
        input_fingerprints: (0..(n % 4)).map(|k| h(format!("in-{i}-{k}"))).collect(),
        fingerprints: Fingerprints(vec![
            ("@atomic".into(), h(format!("atomic-{}", i / 3))),
            ("facet".into(), h(format!("facet-{}", i / 5))),
        ]),
        semantic_diff: diff,
        prev: None,
        cost: Cost {
            provider: if fresh > 0 {
                "fixture".into()
            } else {
                "none".into()
            },
            model: if fresh > 0 {
                "deterministic-fake".into()
            } else {
                "none".into()
            },
            fresh,
            reused,
            surprise_cause: source,
        },
        content_hash: String::new(),
    }
}

fn generate(dir: &Path, n: u64) {
    let mut topo = Topology {
        acyclic: true,
        ..Default::default()
    };
    for i in 0..NODES {
        topo.nodes.push(TopologyNode {
            node: node_name(i),
            contract_fingerprint: Some(format!("c{i}")),
            wake_source: Some(WakeSource::Input),
        });
        if i > 0 {
            topo.edges.push(Edge::new(
                &node_name(i - 1),
                &node_name(i),
                if i % 2 == 0 { "facet" } else { "@atomic" },
            ));
        }
    }
    std::fs::create_dir_all(dir.join("compile")).unwrap();
    std::fs::write(dir.join("compile/topology.json"), write_envelope(&topo)).unwrap();
    let (mut l, _) = Ledger::open(dir).unwrap();
    l.set_policy(SyncPolicy::Group);
    for i in 0..n {
        l.append(receipt(i)).unwrap();
    }
    l.sync().unwrap();
}

fn time_appends(dir: &Path, from: u64, count: u64) -> Duration {
    let (mut l, _) = Ledger::open(dir).unwrap();
    let t = Instant::now();
    for i in from..from + count {
        l.append(receipt(i)).unwrap();
    }
    t.elapsed()
}

fn best_of(runs: usize, mut f: impl FnMut() -> Duration) -> Duration {
    (0..runs).map(|_| f()).min().unwrap_or_default()
}

fn main() {
    let bin = env!("CARGO_BIN_EXE_reactor");
    let d = tempfile::tempdir().unwrap();
    let big = d.path().join("big");
    eprintln!("generating a 100,000-receipt ledger …");
    generate(&big, 100_000);
    let size = std::fs::metadata(big.join("receipts.json")).unwrap().len();
    println!(
        "ledger: 100000 receipts, {:.1} MiB",
        size as f64 / 1048576.0
    );

    // 1. describe --json vs jq -c .
    let describe = best_of(3, || {
        let t = Instant::now();
        let st = Command::new(bin)
            .args(["devtools"])
            .arg(&big)
            .args(["--describe", "--json"])
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success(), "describe failed");
        t.elapsed()
    });
    println!("describe --json: {:.3} s", describe.as_secs_f64());
    match Command::new("jq").arg("--version").output() {
        Ok(_) => {
            let jq = best_of(3, || {
                let t = Instant::now();
                let st = Command::new("jq")
                    .args(["-c", "."])
                    .arg(big.join("receipts.json"))
                    .stdout(Stdio::null())
                    .status()
                    .unwrap();
                assert!(st.success());
                t.elapsed()
            });
            println!("jq -c .:         {:.3} s", jq.as_secs_f64());
            println!(
                "RATIO describe/jq = {:.2}x (goal <= 0.5x)",
                describe.as_secs_f64() / jq.as_secs_f64()
            );
        }
        Err(_) => println!("jq not found on PATH: skipping the jq comparison"),
    }

    // 2. append 100,001–101,000 vs 1–1,000 (fsync per append), best of three: each round on a
    // fresh empty ledger and on a fresh, synced copy of the 100,000-receipt ledger (the first
    // appends after opening a large file pay a one-off warm-up that is not per-receipt cost).
    let mut first = Duration::MAX;
    let mut late = Duration::MAX;
    for round in 0..3 {
        let small = d.path().join(format!("small-{round}"));
        std::fs::create_dir_all(&small).unwrap();
        first = first.min(time_appends(&small, 0, 1000));
        let copy = d.path().join(format!("big-{round}"));
        std::fs::create_dir_all(&copy).unwrap();
        std::fs::copy(big.join("receipts.json"), copy.join("receipts.json")).unwrap();
        std::fs::File::open(copy.join("receipts.json"))
            .unwrap()
            .sync_all()
            .unwrap();
        late = late.min(time_appends(&copy, 100_000, 1000));
        std::fs::remove_dir_all(&copy).unwrap();
    }
    println!(
        "append receipts 1–1,000:         {:.3} s",
        first.as_secs_f64()
    );
    println!(
        "append receipts 100,001–101,000: {:.3} s",
        late.as_secs_f64()
    );
    println!(
        "RATIO late/early appends = {:.2}x (goal <= 1.5x)",
        late.as_secs_f64() / first.as_secs_f64()
    );
}
