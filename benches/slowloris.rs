//! Latency of a normal GET while 800 slowloris connections trickle request heads, against the
//! real binary (issue 7 §1; run with `cargo bench --bench slowloris`, which builds the release
//! binary): the viewer (`reactor devtools --example masked-relay -p 0`, `GET /api/state`) and the
//! daemon (`reactor serve --http 0` on the quickstart project with the loopback fake provider,
//! `GET /health`; skipped with a note when the quickstart contracts are missing).
//!
//! For each server: 500 sequential GETs on fresh connections while quiet, then 800 connections
//! that each send half a head and one more header byte every 100 ms, and 500 more GETs while they
//! trickle. Prints p50/p99/max of both and the loaded p99 against the goal (under 50 ms).
//! Asserts nothing.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use reactor::http::raise_open_file_limit;
use serde_json::json;

#[allow(dead_code)]
#[path = "../tests/it/support/fake_provider.rs"]
mod fake_provider;

use fake_provider::FakeProvider;

const SLOW_CLIENTS: usize = 800;
const SAMPLES: usize = 500;
const GOAL_MS: f64 = 50.0;

/// A server process, killed on drop.
struct Proc {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(mut command: Command, marker: &str) -> Proc {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the reactor binary");
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let t0 = Instant::now();
    let addr = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(120).saturating_sub(t0.elapsed()))
            .expect("the server printed no address");
        if let Some(rest) = line.split(marker).nth(1) {
            break rest.trim().trim_end_matches('/').parse().unwrap();
        }
    };
    Proc { child, addr }
}

fn get(addr: SocketAddr, path: &str) -> Duration {
    let t0 = Instant::now();
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    assert!(
        out.starts_with(b"HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&out)
    );
    t0.elapsed()
}

fn percentiles(mut v: Vec<Duration>) -> (f64, f64, f64) {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let at = |q: f64| ms(v[((v.len() as f64 * q) as usize).min(v.len() - 1)]);
    (at(0.50), at(0.99), ms(*v.last().unwrap()))
}

fn measure(name: &str, addr: SocketAddr, path: &str) {
    for _ in 0..50 {
        get(addr, path);
    }
    let quiet: Vec<Duration> = (0..SAMPLES).map(|_| get(addr, path)).collect();
    let mut slow: Vec<TcpStream> = (0..SLOW_CLIENTS)
        .map(|_| {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(b"GET /api/state HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                .unwrap();
            s
        })
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let trickle = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                for s in &mut slow {
                    let _ = s.write_all(b"X");
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            slow.len()
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    let loaded: Vec<Duration> = (0..SAMPLES).map(|_| get(addr, path)).collect();
    stop.store(true, Ordering::SeqCst);
    let held = trickle.join().unwrap();
    let (q50, q99, qmax) = percentiles(quiet);
    let (l50, l99, lmax) = percentiles(loaded);
    println!("{name} (GET {path}), {held} connections trickling a head:");
    println!(
        "  quiet:     p50 {q50:7.3} ms  p99 {q99:7.3} ms  max {qmax:7.3} ms  ({SAMPLES} GETs)"
    );
    println!(
        "  slowloris: p50 {l50:7.3} ms  p99 {l99:7.3} ms  max {lmax:7.3} ms  ({SAMPLES} GETs)"
    );
    println!(
        "  slowloris p99 / goal ({GOAL_MS} ms): {:.3}  ({}); p99 slowloris/quiet: {:.2}",
        l99 / GOAL_MS,
        if l99 < GOAL_MS { "met" } else { "NOT met" },
        l99 / q99.max(1e-9)
    );
}

fn quickstart() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/contracts/quickstart");
    dir.is_dir().then_some(dir)
}

/// `serve --http 0` on a copy of the quickstart project, its compile sessions answered by the
/// loopback fake provider.
fn daemon(bin: &str, fake: &FakeProvider, src: &Path) -> (Proc, tempfile::TempDir) {
    let project = tempfile::tempdir().unwrap();
    for f in ["inbox.prose.md", "digest.prose.md"] {
        std::fs::copy(src.join(f), project.path().join(f)).unwrap();
    }
    std::fs::write(
        project.path().join("reactor.yml"),
        format!(
            "model:\n  provider: openrouter\n  base_url: {}\n  api_key_env: FAKE_KEY\n  render_model: render-model\n  compile_model: compile-model\n",
            fake.base_url()
        ),
    )
    .unwrap();
    for entry in compile_answers() {
        fake.push(entry);
    }
    let mut c = Command::new(bin);
    c.arg("--project")
        .arg(project.path())
        .env("FAKE_KEY", "sk-bench-not-a-real-key")
        .env_remove("REACTOR_OFFLINE")
        .args(["serve", "--poll-interval", "600000", "--http", "0"]);
    (spawn(c, "HTTP on "), project)
}

fn compile_answers() -> Vec<fake_provider::Entry> {
    use fake_provider::chat_json;
    vec![
        chat_json(&json!({
            "nodes": [
                {"id": "digest", "kind": "responsibility", "wake_source": "input",
                 "requires": [{"facet": "accepted items", "fan_in": false}], "maintains": ["digest"]},
                {"id": "inbox", "kind": "gateway", "wake_source": "external", "requires": [], "maintains": ["items"]}
            ],
            "matches": [{"subscriber": "digest", "requirement": "accepted items", "producer": "inbox", "facet": "items"}]
        }))
        .when_purpose("compile:forme"),
        chat_json(&json!({
            "fields": [{"path": "digest", "material": true, "text": null, "number": null, "collection": null}],
            "default_material": true,
            "facets": [{"facet": "digest", "paths": ["digest"]}]
        }))
        .when_purpose("compile:canonicalizer:digest"),
        chat_json(&json!({
            "fields": [{"path": "items", "material": true, "text": null, "number": null, "collection": "set"}],
            "default_material": true,
            "facets": [{"facet": "items", "paths": ["items"]}]
        }))
        .when_purpose("compile:canonicalizer:inbox"),
        chat_json(&json!({"postconditions": []})).when_purpose("compile:postcondition:digest"),
        chat_json(&json!({"postconditions": []})).when_purpose("compile:postcondition:inbox"),
    ]
}

fn main() {
    let limits = raise_open_file_limit();
    let bin = env!("CARGO_BIN_EXE_reactor");
    println!("slowloris bench: the release binary {bin}; client open-file limits {limits:?}");
    {
        let mut c = Command::new(bin);
        c.args(["devtools", "--example", "masked-relay", "-p", "0"]);
        let viewer = spawn(c, "open http://");
        measure("viewer", viewer.addr, "/api/state");
    }
    match quickstart() {
        Some(src) => {
            let fake = FakeProvider::start();
            let (daemon, _project) = daemon(bin, &fake, &src);
            measure("daemon", daemon.addr, "/health");
        }
        None => println!("daemon: SKIPPED (the quickstart contracts are missing)"),
    }
}
