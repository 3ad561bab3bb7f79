//! Parallel-renders benchmark (issue 10; run with `cargo bench --bench par`): the real binary,
//! `reactor run`, over a generated project of 4 heights × 16 nodes (each node of height h > 0
//! reads two nodes of height h − 1), against a loopback fake provider that answers every render
//! after 1 s (one answer per render: `ws_write` + `finish`; compile answers are immediate).
//! Runs once serially (`--parallel-renders 1`) and once with `--parallel-renders 16`, prints
//! both wall times, the parallel time's ratio to the ideal (heights × latency; goal ≤ 1.3×) and
//! whether the two ledgers are byte-identical.
//!
//! `REACTOR_BENCH_LATENCY_MS` changes the latency (default 1000).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const HEIGHTS: usize = 4;
const WIDTH: usize = 16;
const KEY_ENV: &str = "REACTOR_BENCH_KEY";

fn id(h: usize, i: usize) -> String {
    format!("l{h}n{i:02}")
}

/// The producers of node (h, i): (h − 1, i) and (h − 1, i + 1 mod WIDTH).
fn producers(h: usize, i: usize) -> [String; 2] {
    [id(h - 1, i), id(h - 1, (i + 1) % WIDTH)]
}

fn contract(h: usize, i: usize) -> String {
    let requires = if h == 0 {
        String::new()
    } else {
        "### Requires\n\n- the left input\n- the right input\n\n".to_string()
    };
    let continuity = if h == 0 {
        "- self-driven: re-render on its own schedule."
    } else {
        "- input-driven: re-render when an input moves."
    };
    format!(
        "---\nname: {}\nkind: responsibility\n---\n\n### Goal\n\nBenchmark node {} of height {h}.\n\n{requires}### Maintains\n\nOne output value. Material: the value.\n\n#### out\nThe output value.\n\n### Continuity\n\n{continuity}\n",
        id(h, i),
        id(h, i)
    )
}

fn forme_answer() -> Value {
    let mut nodes = Vec::new();
    let mut matches = Vec::new();
    for h in 0..HEIGHTS {
        for i in 0..WIDTH {
            let requires: Vec<Value> = if h == 0 {
                vec![]
            } else {
                vec![
                    json!({"facet": "the left input", "fan_in": false}),
                    json!({"facet": "the right input", "fan_in": false}),
                ]
            };
            nodes.push(json!({"id": id(h, i), "kind": "responsibility",
                "wake_source": if h == 0 { "self" } else { "input" },
                "requires": requires, "maintains": ["out"]}));
            if h > 0 {
                let [l, r] = producers(h, i);
                matches.push(json!({"subscriber": id(h, i), "requirement": "the left input", "producer": l, "facet": "out"}));
                matches.push(json!({"subscriber": id(h, i), "requirement": "the right input", "producer": r, "facet": "out"}));
            }
        }
    }
    json!({"nodes": nodes, "matches": matches})
}

fn chat(message: Value, finish: &str) -> Value {
    json!({"id": "chatcmpl-bench", "object": "chat.completion", "created": 1767225600,
        "model": "bench-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110,
                  "prompt_tokens_details": {"cached_tokens": 0}}})
}

fn answer(purpose: &str, latency: Duration) -> Value {
    let text = |v: Value| {
        chat(
            json!({"role": "assistant", "content": v.to_string()}),
            "stop",
        )
    };
    if purpose == "compile:forme" {
        return text(forme_answer());
    }
    if purpose.starts_with("compile:canonicalizer:") {
        return text(json!({
            "fields": [{"path": "out", "material": true, "text": null, "number": null, "collection": null}],
            "default_material": true,
            "facets": [{"facet": "out", "paths": ["out"]}]
        }));
    }
    if purpose.starts_with("compile:postcondition:") {
        return text(json!({"postconditions": []}));
    }
    let node = purpose.strip_prefix("render:").unwrap_or("?");
    std::thread::sleep(latency);
    let calls = [
        (
            "ws_write",
            json!({"path": "truth.json", "content": json!({"out": format!("value of {node}")}).to_string(), "encoding": null}),
        ),
        (
            "finish",
            json!({"status": "done", "reason": null, "semantic_diff": {"summary": "rendered", "notes": null}}),
        ),
    ];
    let calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(k, (name, args))| {
            json!({"id": format!("call_{k}"), "type": "function",
            "function": {"name": name, "arguments": args.to_string()}})
        })
        .collect();
    chat(
        json!({"role": "assistant", "content": null, "tool_calls": calls}),
        "tool_calls",
    )
}

/// A loopback Chat Completions fake: a thread per connection (keep-alive honoured), each
/// request answered in turn; renders answer after `latency`. It does not use tiny_http: that
/// crate's worker pool hands a burst of new connections larger than its idle threads to
/// threads that are already taken, so one of 16 simultaneous renders waited for another's
/// whole answer (one extra latency per layer) and the bench measured the fake, not the drain.
fn start_fake(latency: Duration) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("a local address");
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || serve_connection(conn, latency));
        }
    });
    format!("http://{addr}/v1")
}

/// Answers the requests of one connection until the client closes it.
fn serve_connection(conn: std::net::TcpStream, latency: Duration) {
    use std::io::{BufRead, BufReader, Read, Write};
    let mut out = match conn.try_clone() {
        Ok(c) => c,
        Err(_) => return,
    };
    let mut reader = BufReader::new(conn);
    loop {
        let (mut length, mut purpose) = (0usize, String::new());
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                let value = value.trim();
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.parse().unwrap_or(0);
                } else if name.eq_ignore_ascii_case("x-reactor-purpose") {
                    purpose = value.to_string();
                }
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let answer = answer(&purpose, latency).to_string();
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{answer}",
            answer.len()
        );
        if out.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

fn reactor(project: &Path, args: &[&str]) -> (Duration, String) {
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_reactor"))
        .arg("--project")
        .arg(project)
        .args(args)
        .env(KEY_ENV, "sk-bench-0123456789abcdef")
        .env("REACTOR_HTTP_BACKOFF_MS", "0")
        .env_remove("REACTOR_OFFLINE")
        .output()
        .expect("the reactor binary runs");
    let took = t.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "reactor {args:?} failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (took, stdout)
}

/// A compiled project whose renders go to `base_url`.
fn project(base_url: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for h in 0..HEIGHTS {
        for i in 0..WIDTH {
            std::fs::write(
                d.path().join(format!("{}.prose.md", id(h, i))),
                contract(h, i),
            )
            .unwrap();
        }
    }
    std::fs::write(
        d.path().join("reactor.yml"),
        format!(
            "model:\n  provider: openrouter\n  base_url: {base_url}\n  api_key_env: {KEY_ENV}\n  render_model: bench-model\n  compile_model: bench-model\n"
        ),
    )
    .unwrap();
    reactor(d.path(), &["compile"]);
    d
}

fn main() {
    let latency = Duration::from_millis(
        std::env::var("REACTOR_BENCH_LATENCY_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1000),
    );
    let base_url = start_fake(latency);
    let serial_project = project(&base_url);
    let parallel_project = project(&base_url);
    let (serial, out) = reactor(serial_project.path(), &["run", "--parallel-renders", "1"]);
    let rendered = out.matches("rendered").count();
    assert_eq!(rendered, HEIGHTS * WIDTH, "{out}");
    let (parallel, out) = reactor(
        parallel_project.path(),
        &["run", "--parallel-renders", "16"],
    );
    assert_eq!(out.matches("rendered").count(), HEIGHTS * WIDTH, "{out}");
    let ledger = |p: &Path| std::fs::read(p.join(".reactor/receipts.json")).unwrap();
    let identical = ledger(serial_project.path()) == ledger(parallel_project.path());
    let ideal = latency * HEIGHTS as u32;
    let ratio = parallel.as_secs_f64() / ideal.as_secs_f64();
    println!(
        "reactor run, {HEIGHTS} heights x {WIDTH} nodes, {} ms per render answer",
        latency.as_millis()
    );
    println!(
        "serial   (--parallel-renders 1):  {:.2} s",
        serial.as_secs_f64()
    );
    println!(
        "parallel (--parallel-renders 16): {:.2} s",
        parallel.as_secs_f64()
    );
    println!(
        "ideal (heights x latency):        {:.2} s",
        ideal.as_secs_f64()
    );
    println!(
        "RATIO parallel/ideal = {ratio:.2}x (goal <= 1.3x); serial/parallel = {:.1}x",
        serial.as_secs_f64() / parallel.as_secs_f64()
    );
    println!(
        "ledgers byte-identical: {}",
        if identical { "yes" } else { "NO" }
    );
    assert!(identical, "the serial and parallel ledgers differ");
}
