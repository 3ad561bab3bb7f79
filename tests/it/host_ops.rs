//! Operating the host (issue 8), through the real binary: `serve` reports every trigger and
//! every drain (text lines and `--json` events), the CLI accepts global flags before
//! `devtools` and refuses state directories that are none, and `inspect` shows what a render
//! produced.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use serde_json::{Value, json};

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

#[test]
fn serve_prints_one_line_per_drain_and_per_trigger() {
    let fake = FakeProvider::start();
    let yaml = "gateways:\n  - node: inbox\n    connector:\n      type: static\n      items: [{ id: item-1, body: \"one\" }]\n";
    let Some(proj) = project(&fake, yaml) else {
        return;
    };
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
    let yaml = "gateways:\n  - node: inbox\n    connector:\n      type: static\n      items: [{ id: item-1, body: \"one\" }]\n";
    let Some(proj) = project(&fake, yaml) else {
        return;
    };
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
    let mut child = cmd(proj.path())
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
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = || -> Value { serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap() };
    let mut url = String::new();
    let mut events = Vec::new();
    // Boot, listen, ready, then the first tick's drain before the tick itself.
    loop {
        let v = next();
        if v["event"] == json!("listening") {
            url = v["url"].as_str().unwrap().to_string();
        }
        let done = v["event"] == json!("tick");
        events.push(v);
        if done {
            break;
        }
    }
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["booted", "listening", "ready", "drain", "tick"],
        "{events:?}"
    );
    let drain = &events[3];
    assert_eq!(
        drain.as_object().unwrap().keys().collect::<Vec<_>>(),
        DRAIN_MEMBERS
    );
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
    assert_eq!(events[4]["cost"]["total"], drain["cost"]);

    let (s, v) = http(
        "POST",
        &format!("{url}/trigger/inbox"),
        Some(r#"{"id":"item-2","body":"two"}"#),
    );
    assert_eq!(s, 200, "{v}");
    let t = next();
    assert_eq!(
        t.as_object().unwrap().keys().collect::<Vec<_>>(),
        DRAIN_MEMBERS
    );
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
    let t = next();
    assert_eq!(t["event"], json!("trigger"));
    assert_eq!(t["arrival_id"], Value::Null);
    assert_eq!(
        t["dispositions"],
        json!([{"node": "inbox", "disposition": "skipped"}])
    );
    assert_eq!(t["receipts_added"], json!(1));
    assert_eq!(t["cost"], json!({"fresh": 0, "reused": 0}));
    let st = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    assert_eq!(child.wait().unwrap().code(), Some(0));
    fake.finish();
}
