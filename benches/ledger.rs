//! Ledger benchmarks (run with `cargo bench --bench ledger`; release mode). Prints ratios, asserts
//! nothing:
//!
//! 1. `reactor-devtools <dir> --describe --json` on a generated 100,000-receipt ledger (the
//!    synthetic generator of `examples/gen_ledger`: 400 nodes, about 117 MB) against `jq -c .`
//!    on the same `receipts.json` in the same run (goal ≤ 0.35×), and the describe process's
//!    peak RSS against the file size (goal ≤ 1.5×; issue 9 item 1).
//! 2. With `REACTOR_BENCH_1M=1`: the same describe on 1,000,000 receipts (about 1.1 GB), peak
//!    RSS (goal ≤ 1.5 GB). Off by default: it writes 1.1 GB and takes a minute.
//! 3. The time to append receipts 100,001–101,000 against receipts 1–1,000, each append fsynced
//!    (goal ≤ 1.5×: appends are O(receipt), not O(ledger)).
//!
//! Peak RSS is the child's maximum resident set size as `wait4(2)` reports it, read through
//! `/usr/bin/time -f %M` when that exists; otherwise `VmHWM` of `/proc/<pid>/status`, polled
//! every millisecond while the child runs (a lower bound).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use reactor::devtools::synthetic::{SyntheticSpec, write_synthetic_state_dir};

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

/// One run of `program args…` with stdout discarded: wall time and peak RSS in bytes (`None`
/// when it cannot be measured). Panics when the program fails.
fn measure(program: &str, args: &[&std::ffi::OsStr]) -> (Duration, Option<u64>) {
    let time = Path::new("/usr/bin/time");
    if time.exists() {
        let out = tempfile::NamedTempFile::new().unwrap();
        let t = Instant::now();
        let st = Command::new(time)
            .args(["-f", "%M", "-o"])
            .arg(out.path())
            .arg(program)
            .args(args)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        let wall = t.elapsed();
        assert!(st.success(), "{program} failed");
        let kib = std::fs::read_to_string(out.path())
            .ok()
            .and_then(|s| s.lines().last().and_then(|l| l.trim().parse::<u64>().ok()));
        return (wall, kib.map(|k| k * 1024));
    }
    let t = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let status = format!("/proc/{}/status", child.id());
    let mut peak: Option<u64> = None;
    let st = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        let hwm = std::fs::read_to_string(&status).ok().and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        });
        if let Some(k) = hwm {
            peak = Some(peak.unwrap_or(0).max(k * 1024));
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let wall = t.elapsed();
    assert!(st.success(), "{program} failed");
    (wall, peak)
}

/// Best wall time and largest peak RSS of `runs` runs.
fn measure_best(runs: usize, program: &str, args: &[&std::ffi::OsStr]) -> (Duration, Option<u64>) {
    let mut best = Duration::MAX;
    let mut peak: Option<u64> = None;
    for _ in 0..runs {
        let (t, rss) = measure(program, args);
        best = best.min(t);
        peak = match (peak, rss) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
    (best, peak)
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / 1048576.0
}

/// A synthetic state directory (400 nodes) of `receipts` receipts; returns the ledger's size.
fn synthetic(dir: &Path, receipts: usize) -> u64 {
    let spec = SyntheticSpec {
        nodes: 400,
        receipts,
        seed: 1,
    };
    write_synthetic_state_dir(dir, &spec).unwrap().bytes
}

/// Issue 9 item 1: describe --json against jq, and its peak RSS against the file size.
fn describe_vs_jq(bin: &str, root: &Path) {
    let dir = root.join("synthetic-100k");
    eprintln!("generating a 100,000-receipt synthetic ledger …");
    let size = synthetic(&dir, 100_000);
    println!(
        "synthetic ledger: 100000 receipts, 400 nodes, {:.1} MiB",
        mib(size)
    );
    let args = [
        "devtools".as_ref(),
        dir.as_os_str(),
        "--describe".as_ref(),
        "--json".as_ref(),
    ];
    let (describe, rss) = measure_best(3, bin, &args);
    println!("describe --json: {:.3} s", describe.as_secs_f64());
    match rss {
        Some(rss) => println!(
            "describe --json peak RSS: {:.1} MiB = {:.2}x the file (goal <= 1.5x)",
            mib(rss),
            rss as f64 / size as f64
        ),
        None => println!("describe --json peak RSS: not measurable here"),
    }
    if Command::new("jq").arg("--version").output().is_err() {
        println!("jq not found on PATH: skipping the jq comparison");
        return;
    }
    let receipts = dir.join("receipts.json");
    let (jq, jq_rss) = measure_best(
        3,
        "jq",
        &["-c".as_ref(), ".".as_ref(), receipts.as_os_str()],
    );
    println!(
        "jq -c .:         {:.3} s{}",
        jq.as_secs_f64(),
        jq_rss.map_or(String::new(), |r| format!(" (peak RSS {:.1} MiB)", mib(r)))
    );
    println!(
        "RATIO describe/jq = {:.2}x (goal <= 0.35x)",
        describe.as_secs_f64() / jq.as_secs_f64()
    );
}

/// Issue 9 item 1 at 1,000,000 receipts (only with `REACTOR_BENCH_1M=1`).
fn describe_1m(bin: &str, root: &Path) {
    if std::env::var("REACTOR_BENCH_1M").as_deref() != Ok("1") {
        println!("1,000,000 receipts: skipped (set REACTOR_BENCH_1M=1; writes about 1.1 GB)");
        return;
    }
    let dir = root.join("synthetic-1m");
    eprintln!("generating a 1,000,000-receipt synthetic ledger …");
    let size = synthetic(&dir, 1_000_000);
    println!(
        "synthetic ledger: 1000000 receipts, 400 nodes, {:.1} MiB",
        mib(size)
    );
    let args = [
        "devtools".as_ref(),
        dir.as_os_str(),
        "--describe".as_ref(),
        "--json".as_ref(),
    ];
    let (t, rss) = measure(bin, &args);
    println!("describe --json (1M): {:.3} s", t.as_secs_f64());
    match rss {
        Some(rss) => println!(
            "describe --json (1M) peak RSS: {:.1} MiB = {:.2} GB (goal <= 1.5 GB)",
            mib(rss),
            rss as f64 / 1e9
        ),
        None => println!("describe --json (1M) peak RSS: not measurable here"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

fn main() {
    let bin = env!("CARGO_BIN_EXE_reactor");
    let d = tempfile::tempdir().unwrap();

    // 1. and 2. describe --json against jq -c ., and peak RSS.
    describe_vs_jq(bin, d.path());
    describe_1m(bin, d.path());

    // 3. append 100,001–101,000 vs 1–1,000 (fsync per append), best of three: each round on a
    // fresh empty ledger and on a fresh, synced copy of a 100,000-receipt ledger (the first
    // appends after opening a large file pay a one-off warm-up that is not per-receipt cost).
    let big = d.path().join("big");
    eprintln!("generating a 100,000-receipt ledger by appends …");
    generate(&big, 100_000);
    let size = std::fs::metadata(big.join("receipts.json")).unwrap().len();
    println!("ledger: 100000 receipts, {:.1} MiB", mib(size));
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
