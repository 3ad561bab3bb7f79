//! `serve` says what it does (issue 8 item 3): one line per drain and per `POST /trigger`, and
//! the same members as `drain` / `trigger` NDJSON events under `--json`.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use serde_json::{Value, json};

use super::{keys_of, raw_get};
use crate::host_serve::{Serve, cmd, compile_entries, http, project, render_entries};
use crate::support::fake_provider::FakeProvider;

/// The members of a `trigger` / `drain` event, in order (HOST.md §9.7).
const DRAIN_MEMBERS: [&str; 8] = [
    "event",
    "reactor",
    "node",
    "arrival_id",
    "dispositions",
    "receipts_added",
    "cost",
    "duration_ms",
];

/// The summed `cost.tokens` of the last `n` receipts of the ledger.
fn tail_tokens(proj: &std::path::Path, n: usize) -> (u64, u64) {
    let ledger: Vec<Value> =
        serde_json::from_slice(&std::fs::read(proj.join(".reactor/receipts.json")).unwrap())
            .unwrap();
    assert!(ledger.len() >= n);
    ledger[ledger.len() - n..].iter().fold((0, 0), |(f, r), x| {
        (
            f + x["cost"]["tokens"]["fresh"].as_u64().unwrap(),
            r + x["cost"]["tokens"]["reused"].as_u64().unwrap(),
        )
    })
}

/// Splits a text line `… receipts=<n> fresh=<f> reused=<r> in <ms> ms` into its figures.
fn figures(line: &str) -> (u64, u64, u64, u64) {
    let num = |key: &str| -> u64 {
        let at = line.find(key).unwrap_or_else(|| panic!("{key} in {line}")) + key.len();
        line[at..]
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let ms: u64 = line
        .rsplit(" in ")
        .next()
        .and_then(|t| t.strip_suffix(" ms"))
        .unwrap()
        .parse()
        .unwrap();
    (num("receipts="), num("fresh="), num("reused="), ms)
}

/// The quickstart project with a static gateway of one item, compiled on first use; renders
/// scripted for that item and for a second one (`item-2`, sent by a trigger).
fn gateway_project(fake: &FakeProvider) -> Option<tempfile::TempDir> {
    let yaml = "gateways:\n  - node: inbox\n    connector:\n      type: static\n      items: [{ id: item-1, body: \"one\" }]\n";
    let proj = project(fake, yaml)?;
    for e in compile_entries(json!({"postconditions": []})) {
        fake.push(e);
    }
    for (items, digest) in [
        (json!([{"id": "item-1", "body": "one"}]), "1 item"),
        (
            json!([{"id": "item-1", "body": "one"}, {"id": "item-2", "body": "two"}]),
            "2 items",
        ),
    ] {
        for e in render_entries(items, digest) {
            fake.push(e);
        }
    }
    Some(proj)
}

/// `reactor --json serve --http 0` over `proj`: the child, its NDJSON events, and the events up
/// to the first `tick` (the daemon's URL read from `listening`).
struct JsonServe {
    child: std::process::Child,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
    url: String,
    boot: Vec<Value>,
}

impl JsonServe {
    fn start(proj: &std::path::Path) -> JsonServe {
        let mut child = cmd(proj)
            .args([
                "--json",
                "serve",
                "--http",
                "0",
                "--poll-interval",
                "600000",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut s = JsonServe {
            child,
            lines,
            url: String::new(),
            boot: Vec::new(),
        };
        loop {
            let v = s.next();
            if v["event"] == json!("listening") {
                s.url = v["url"].as_str().unwrap().to_string();
            }
            let done = v["event"] == json!("tick");
            s.boot.push(v);
            if done {
                return s;
            }
        }
    }

    fn next(&mut self) -> Value {
        serde_json::from_str(&self.lines.next().unwrap().unwrap()).unwrap()
    }

    fn stop(mut self) {
        let st = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
        assert_eq!(self.child.wait().unwrap().code(), Some(0));
    }
}

#[test]
fn serve_prints_one_line_per_drain_and_per_trigger() {
    let fake = FakeProvider::start();
    let Some(proj) = gateway_project(&fake) else {
        return;
    };
    let mut serve = Serve::start(proj.path(), true);
    let base = serve.base.clone().unwrap();
    // The gateway's arrival: one drain line, before the heartbeat.
    assert!(
        serve.wait_for("gateways: inbox ingested=1"),
        "{:?}",
        serve.seen
    );
    let drain = serve
        .seen
        .iter()
        .find(|l| l.starts_with("reactor serve — drain "))
        .cloned()
        .unwrap_or_else(|| panic!("no drain line: {:?}", serve.seen));
    assert!(
        drain.starts_with(
            "reactor serve — drain \"default\" inbox arrival item-1 (rendered=2 skipped=0 failed=0) receipts=3 "
        ),
        "{drain}"
    );
    let (receipts, fresh, reused, _) = figures(&drain);
    assert_eq!(receipts, 3);
    assert_eq!((fresh, reused), tail_tokens(proj.path(), 3), "{drain}");
    let heartbeat = serve
        .seen
        .iter()
        .position(|l| l.starts_with("gateways: "))
        .unwrap();
    let drain_at = serve.seen.iter().position(|l| *l == drain).unwrap();
    assert!(drain_at < heartbeat, "{:?}", serve.seen);

    // A trigger with new data: one trigger line naming the arrival.
    let (s, v) = http(
        "POST",
        &format!("{base}/trigger/inbox"),
        Some(r#"{"id":"item-2","body":"two"}"#),
    );
    assert_eq!(s, 200, "{v}");
    assert!(
        serve.wait_for("trigger \"default\" inbox"),
        "{:?}",
        serve.seen
    );
    let line = serve
        .seen
        .iter()
        .find(|l| l.starts_with("reactor serve — trigger "))
        .cloned()
        .unwrap();
    assert!(
        line.starts_with(
            "reactor serve — trigger \"default\" inbox arrival item-2 (rendered=2 skipped=0 failed=0) receipts=3 "
        ),
        "{line}"
    );
    let (receipts, fresh, reused, _) = figures(&line);
    assert_eq!(receipts, v["receiptsAdded"].as_u64().unwrap());
    assert_eq!((fresh, reused), tail_tokens(proj.path(), 3), "{line}");
    // A bare wake of a settled node: no arrival, one skipped receipt, no tokens.
    let (s, _) = http("POST", &format!("{base}/trigger/digest"), None);
    assert_eq!(s, 200);
    assert!(
        serve.wait_for(
            "reactor serve — trigger \"default\" digest (rendered=0 skipped=1 failed=0) receipts=1 fresh=0 reused=0 in "
        ),
        "{:?}",
        serve.seen
    );
    assert_eq!(serve.sigterm_and_wait(), 0);
    fake.finish();
}

#[test]
fn serve_json_emits_trigger_and_drain_events() {
    let fake = FakeProvider::start();
    let Some(proj) = gateway_project(&fake) else {
        return;
    };
    let mut serve = JsonServe::start(proj.path());
    // Boot, listen, ready, then the first tick's drain before the tick itself.
    let names: Vec<&str> = serve
        .boot
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["booted", "listening", "ready", "drain", "tick"],
        "{:?}",
        serve.boot
    );
    let drain = &serve.boot[3];
    assert_eq!(keys_of(drain), DRAIN_MEMBERS);
    assert_eq!(drain["reactor"], json!("default"));
    assert_eq!(drain["node"], json!("inbox"));
    assert_eq!(drain["arrival_id"], json!("item-1"));
    assert_eq!(
        drain["dispositions"],
        json!([{"node": "inbox", "disposition": "rendered"}, {"node": "digest", "disposition": "rendered"}])
    );
    assert_eq!(drain["receipts_added"], json!(3));
    let (f, r) = tail_tokens(proj.path(), 3);
    assert_eq!(drain["cost"], json!({"fresh": f, "reused": r}));
    assert!(drain["duration_ms"].is_u64());
    // The tick's cost covers exactly what the drain added.
    assert_eq!(serve.boot[4]["cost"]["total"], drain["cost"]);

    let url = serve.url.clone();
    let (s, v) = http(
        "POST",
        &format!("{url}/trigger/inbox"),
        Some(r#"{"id":"item-2","body":"two"}"#),
    );
    assert_eq!(s, 200, "{v}");
    let t = serve.next();
    assert_eq!(keys_of(&t), DRAIN_MEMBERS);
    assert_eq!(t["event"], json!("trigger"));
    assert_eq!(t["arrival_id"], json!("item-2"));
    assert_eq!(t["receipts_added"], v["receiptsAdded"]);
    let (f, r) = tail_tokens(proj.path(), 3);
    assert_eq!(t["cost"], json!({"fresh": f, "reused": r}));
    // The same data again: a duplicate, so no arrival id and only the gateway's skip.
    let (s, _) = http(
        "POST",
        &format!("{url}/trigger/inbox"),
        Some(r#"{"id":"item-2","body":"two"}"#),
    );
    assert_eq!(s, 200);
    let t = serve.next();
    assert_eq!(t["event"], json!("trigger"));
    assert_eq!(t["arrival_id"], Value::Null);
    assert_eq!(
        t["dispositions"],
        json!([{"node": "inbox", "disposition": "skipped"}])
    );
    assert_eq!(t["receipts_added"], json!(1));
    assert_eq!(t["cost"], json!({"fresh": 0, "reused": 0}));
    serve.stop();
    fake.finish();
}

#[test]
fn daemon_read_routes_splice_stored_receipts_unchanged() {
    let fake = FakeProvider::start();
    let Some(proj) = gateway_project(&fake) else {
        return;
    };
    let serve = JsonServe::start(proj.path());
    let url = serve.url.clone();
    let (s, _) = http(
        "POST",
        &format!("{url}/trigger/inbox"),
        Some(r#"{"id":"item-2","body":"two"}"#),
    );
    assert_eq!(s, 200);
    // GET /receipts is the ledger file's array, byte for byte.
    let ledger = std::fs::read_to_string(proj.path().join(".reactor/receipts.json")).unwrap();
    let body = raw_get(&format!("{url}/receipts"));
    assert_eq!(
        body,
        format!(
            "{{\"reactor\":\"default\",\"receipts\":{}}}",
            ledger.trim_end()
        )
    );
    // GET /nodes/<node> carries the node's last receipt in its canonical bytes.
    let node = raw_get(&format!("{url}/nodes/inbox"));
    let elements: Vec<Value> = serde_json::from_str(&ledger).unwrap();
    let last_inbox = elements
        .iter()
        .rev()
        .find(|r| r["node"] == json!("inbox"))
        .unwrap();
    let canonical = reactor::format::json::canonical_string(
        &reactor::format::json::parse_str(&last_inbox.to_string()).unwrap(),
    )
    .unwrap();
    assert!(
        node.contains(&format!(",\"lastReceipt\":{canonical},\"receipts\":")),
        "{node}"
    );
    serve.stop();
    fake.finish();
}
