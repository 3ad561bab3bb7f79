//! ISSUE 7 §2: readers agree with the writer. Every offline verb and `devtools --describe` read
//! a ledger that is growing under `reactor serve` (triggers over HTTP, the loopback fake
//! provider, world-models committed on every trigger) while the machine is under CPU load, and
//! none of them reports a corrupt ledger, a BROKEN chain or a missing version.
//!
//! The suite runs [`SUITE_RUNS`] runs of each reader. The acceptance figure is 200 runs each:
//!
//! ```text
//! REACTOR_GROWTH_RUNS=200 cargo test --release --test it reader_growth -- --nocapture
//! ```
//!
//! (`REACTOR_GROWTH_PAUSE_MS` sets the writer's pause between arrivals, default 100 ms.)
//!
//! A second test drives the library reader directly against the ledger writer (thousands of
//! reads, no process start-up in between).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::host_serve::{Serve, cmd, compiled_project, http, render_entries};
use crate::support::bin;
use crate::support::fake_provider::FakeProvider;

/// Runs of each reader in the normal suite.
const SUITE_RUNS: usize = 12;

/// The writer's pause between arrivals (`REACTOR_GROWTH_PAUSE_MS`, default 100 ms).
fn writer_pause() -> Duration {
    Duration::from_millis(
        std::env::var("REACTOR_GROWTH_PAUSE_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(100),
    )
}

fn runs() -> usize {
    std::env::var("REACTOR_GROWTH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(SUITE_RUNS)
}

/// Busy threads, one per core, until dropped.
struct CpuLoad {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl CpuLoad {
    fn start() -> CpuLoad {
        let stop = Arc::new(AtomicBool::new(false));
        let n = std::thread::available_parallelism().map_or(2, |n| n.get());
        let threads = (0..n)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        for i in 0..10_000u64 {
                            x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
                        }
                        std::hint::black_box(x);
                    }
                })
            })
            .collect();
        CpuLoad { stop, threads }
    }
}

impl Drop for CpuLoad {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// What counts as a false verdict next to a sound, growing ledger.
const WOLF: [&str; 6] = [
    "corrupt",
    "BROKEN",
    "missing",
    "must contain a JSON array",
    "FAILED",
    "cannot read",
];

struct Reader {
    name: &'static str,
    args: Vec<String>,
    /// Text every run must print (a positive check that it read something).
    expect: &'static str,
}

#[test]
fn readers_never_cry_wolf_next_to_a_growing_ledger() {
    let fake = FakeProvider::start();
    let Some(proj) = compiled_project(&fake) else {
        return;
    };
    for e in render_entries(json!([{"id": "item-0"}]), "item 0") {
        fake.push(e);
    }
    let state = proj.path().join(".reactor");
    let mut serve = Serve::start(proj.path(), true);
    let base = serve.base.clone().unwrap();
    let (s, v) = http(
        "POST",
        &format!("{base}/trigger/inbox"),
        Some(r#"{"id":"item-0"}"#),
    );
    assert_eq!(s, 200, "{v}");

    let runs = runs();
    let load = CpuLoad::start();
    // The writer: one new arrival per trigger (an ingress receipt and two renders, each a
    // world-model commit), and between them repeats of the last arrival (one memo-skipped
    // receipt each, no model call), as fast as the daemon takes them.
    let dir = state.to_str().unwrap().to_string();
    let host = |args: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        v.extend(["--state-dir".to_string(), dir.clone()]);
        v
    };
    let readers = vec![
        Reader {
            name: "status",
            args: host(&["status"]),
            expect: "  receipts       ",
        },
        Reader {
            name: "logs",
            args: host(&["logs"]),
            expect: "inbox::ingress",
        },
        Reader {
            name: "trace",
            args: host(&["trace"]),
            expect: "inbox  (chain ok)",
        },
        Reader {
            name: "inspect --strict",
            args: host(&["inspect", "digest", "--strict"]),
            expect: "  chain          ok (",
        },
        Reader {
            name: "receipts verify",
            args: host(&["receipts", "verify"]),
            expect: "  chain          ALL OK",
        },
        Reader {
            name: "receipts list",
            args: host(&["receipts", "list"]),
            expect: "digest",
        },
        Reader {
            name: "devtools --describe",
            args: vec!["devtools".into(), dir.clone(), "--describe".into()],
            expect: "CHAIN-VERIFY  ok",
        },
    ];
    let stop = AtomicBool::new(false);
    let triggers = AtomicUsize::new(0);
    let url = format!("{base}/trigger/inbox");
    let pause = writer_pause();
    let (elapsed, torn_notes, false_verdicts) = std::thread::scope(|sc| {
        // The writer: one new arrival per trigger (an ingress receipt and two renders, each a
        // world-model commit), then two repeats of that arrival (one memo-skipped receipt
        // each, no model call), over and over while the readers run.
        let writer = sc.spawn(|| {
            let mut k = 1usize;
            while !stop.load(Ordering::SeqCst) {
                let id = format!("item-{k}");
                for e in render_entries(json!([{ "id": id }]), &format!("item {k}")) {
                    fake.push(e);
                }
                let body = json!({ "id": id }).to_string();
                let (s, v) = http("POST", &url, Some(&body));
                assert_eq!(s, 200, "{v}");
                assert_eq!(v["receiptsAdded"], json!(3), "{v}");
                for _ in 0..2 {
                    let (s, v) = http("POST", &url, Some(&body));
                    assert_eq!((s, v["receiptsAdded"].clone()), (200, json!(1)), "{v}");
                }
                triggers.fetch_add(1, Ordering::SeqCst);
                k += 1;
                // Each arrival rewrites the whole ingress inbox (FORMATS.md §14.7), and every
                // reader reads the whole ledger and `receipts verify` hashes the whole store: a
                // pause keeps both growing steadily rather than without bound.
                std::thread::sleep(pause);
            }
        });
        let started = Instant::now();
        let mut torn_notes = 0usize;
        let mut false_verdicts: Vec<String> = Vec::new();
        for round in 0..runs {
            for r in &readers {
                let out = std::process::Command::new(bin())
                    .args(&r.args)
                    .env_remove("REACTOR_OFFLINE")
                    .output()
                    .unwrap();
                let stdout = String::from_utf8_lossy(&out.stdout);
                let stderr = String::from_utf8_lossy(&out.stderr);
                torn_notes += usize::from(stderr.contains("ends with an incomplete receipt"));
                let wolf = WOLF
                    .iter()
                    .find(|w| stdout.contains(**w) || stderr.contains(**w));
                if out.status.code() != Some(0) || wolf.is_some() || !stdout.contains(r.expect) {
                    false_verdicts.push(format!(
                        "round {round} {}: exit {:?}\n{stdout}{stderr}",
                        r.name,
                        out.status.code()
                    ));
                }
            }
        }
        let elapsed = started.elapsed();
        stop.store(true, Ordering::SeqCst);
        writer.join().unwrap();
        (elapsed, torn_notes, false_verdicts)
    });
    drop(load);
    assert_eq!(serve.sigterm_and_wait(), 0);
    let receipts = ledger_len(&state);
    eprintln!(
        "reader growth: {runs} runs of each of {} readers in {:.1} s under CPU load, next to {} \
         triggers ({receipts} receipts in the ledger at the end): {} false verdicts, {torn_notes} \
         torn-tail notes (a snapshot taken mid-append)",
        readers.len(),
        elapsed.as_secs_f64(),
        triggers.load(Ordering::SeqCst),
        false_verdicts.len()
    );
    let mut by_reader: Vec<(&str, usize)> = readers.iter().map(|r| (r.name, 0)).collect();
    for v in &false_verdicts {
        for (name, n) in by_reader.iter_mut() {
            *n += usize::from(v.split(": exit").next().is_some_and(|h| h.ends_with(*name)));
        }
    }
    assert!(
        false_verdicts.is_empty(),
        "{} false verdicts ({by_reader:?}); first: {}",
        false_verdicts.len(),
        false_verdicts[0]
    );
    assert!(
        triggers.load(Ordering::SeqCst) > 0,
        "the ledger did not grow while the readers ran"
    );
    // Everything the daemon wrote verifies at rest as well.
    let out = cmd(proj.path())
        .args(["receipts", "verify"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    fake.finish();
}

fn ledger_len(state: &Path) -> usize {
    let bytes = std::fs::read(state.join("receipts.json")).unwrap();
    reactor::store::ledger::read_ledger(&bytes)
        .unwrap()
        .receipts
        .len()
}

/// The library reader against the ledger writer in the same process: snapshot reads, back to
/// back, while 600 receipts are appended one group (one write, one fdatasync) at a time. Every
/// read parses, and no read ever sees fewer receipts than the one before.
#[test]
fn snapshot_reads_of_a_ledger_being_appended() {
    use reactor::format::receipt::{Cost, Fingerprints, Receipt, Status, Wake, WakeSource};
    use reactor::replay::ledger::read_ledger_file;
    use reactor::store::ledger::{Ledger, SyncPolicy};

    let d = tempfile::tempdir().unwrap();
    let dir = d.path().to_path_buf();
    let path = dir.join("receipts.json");
    Ledger::open(&dir).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    let appended = Arc::new(AtomicUsize::new(0));
    let writer = {
        let (stop, done, appended, dir) =
            (stop.clone(), done.clone(), appended.clone(), dir.clone());
        std::thread::spawn(move || {
            let (mut l, _) = Ledger::open(&dir).unwrap();
            l.set_policy(SyncPolicy::Group);
            let mut i = 0u64;
            while !stop.load(Ordering::SeqCst) && l.len() < 600 {
                // Groups of 1–4 receipts: one positioned write and one fdatasync each.
                for _ in 0..(1 + i % 4) {
                    let mut diff = reactor::format::json::Object::new();
                    diff.insert(
                        "pad",
                        reactor::format::json::Value::str("x".repeat((i as usize * 37) % 700)),
                    );
                    l.append(Receipt {
                        node: ["a", "b", "c"][(i % 3) as usize].into(),
                        contract_fingerprint: "c".into(),
                        status: Status::Rendered,
                        wake: Wake::new(WakeSource::External),
                        input_fingerprints: vec![],
                        fingerprints: Fingerprints::atomic(format!("t{i}")),
                        semantic_diff: diff,
                        prev: None,
                        cost: Cost::none(WakeSource::External),
                        content_hash: String::new(),
                    })
                    .unwrap();
                    i += 1;
                }
                l.sync().unwrap();
                appended.store(l.len(), Ordering::SeqCst);
            }
            done.store(true, Ordering::SeqCst);
        })
    };
    let load = CpuLoad::start();
    let mut last = 0usize;
    let mut reads = 0usize;
    let mut torn = 0usize;
    let started = Instant::now();
    while !done.load(Ordering::SeqCst) {
        let s = read_ledger_file(&path).unwrap_or_else(|e| {
            panic!(
                "read {reads}: a growing ledger was read as {e} ({} receipts appended)",
                appended.load(Ordering::SeqCst)
            )
        });
        assert!(s.receipts.len() >= last, "read {reads} went backwards");
        last = s.receipts.len();
        torn += usize::from(s.torn.is_some());
        reads += 1;
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the writer appended too slowly"
        );
    }
    stop.store(true, Ordering::SeqCst);
    writer.join().unwrap();
    drop(load);
    assert!(reads > 0);
    eprintln!(
        "snapshot reader: {reads} reads next to {} appended receipts, 0 errors ({torn} torn tails seen)",
        appended.load(Ordering::SeqCst)
    );
}
