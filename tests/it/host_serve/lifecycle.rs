//! `serve` over its life: the quickstart's trigger, routes, replay and restart; SIGTERM during a
//! slow render; a static gateway polled once across restarts.

use super::*;

fn keys(v: &Value) -> Vec<String> {
    v.as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

fn no_canary_anywhere(dir: &Path, outputs: &[&str]) {
    for o in outputs {
        assert!(!o.contains(CANARY), "the key leaked into output");
    }
    for e in walk(dir) {
        let bytes = std::fs::read(&e).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(CANARY),
            "the key leaked into {}",
            e.display()
        );
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn quickstart_serve_trigger_routes_replay_restart() {
    let fake = FakeProvider::start();
    let Some(proj) = project(&fake, "") else {
        return;
    };
    for e in compile_entries(json!({"postconditions": []})) {
        fake.push(e);
    }
    for e in render_entries(json!([{"id": "item-1", "body": "hello"}]), "1 item") {
        fake.push(e);
    }
    let state = proj.path().join(".reactor");
    let mut serve = Serve::start(proj.path(), true);
    let base = serve.base.clone().unwrap();
    assert!(state.join("serve.json").exists());
    // A second serve on the same state dir refuses with the holder's pid.
    let second = cmd(proj.path()).args(["serve"]).output().unwrap();
    assert_eq!(second.status.code(), Some(1));
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(
        err.contains(&format!(
            "is in use by another writer (pid {})",
            serve.child.id()
        )),
        "{err}"
    );

    let (s, v) = http(
        "POST",
        &format!("{base}/trigger/inbox"),
        Some(r#"{"id":"item-1","body":"hello"}"#),
    );
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        v,
        json!({"reactor": "default", "triggered": "inbox", "receiptsAdded": 3, "data": {"id": "item-1", "body": "hello"}, "dataDelivered": true})
    );
    // The same arrival again is staged once: not delivered, the gateway memo-skips.
    let (_, v) = http(
        "POST",
        &format!("{base}/trigger/inbox"),
        Some(r#"{"id":"item-1","body":"hello"}"#),
    );
    assert_eq!(v["dataDelivered"], json!(false));
    assert_eq!(v["receiptsAdded"], json!(1));
    // The six GET routes and their members.
    let (_, v) = http("GET", &format!("{base}/health"), None);
    assert_eq!(v, json!({"ok": true, "reactors": 1, "reactor": "default"}));
    let (_, v) = http("GET", &format!("{base}/status"), None);
    assert_eq!(
        keys(&v),
        ["reactor", "nodes", "queueDepth", "cost", "inFlight"]
    );
    assert_eq!(v["nodes"], json!(2));
    assert_eq!(v["inFlight"], json!([]));
    let (_, v) = http("GET", &format!("{base}/cost"), None);
    assert_eq!(
        keys(&v),
        [
            "reactor",
            "total",
            "byNode",
            "bySurpriseCause",
            "dispositions",
            "receipts"
        ]
    );
    assert_eq!(v["receipts"], json!(4));
    let (_, v) = http("GET", &format!("{base}/topology"), None);
    assert_eq!(
        v,
        json!({"reactor": "default", "nodes": ["digest", "inbox"]})
    );
    let (_, v) = http("GET", &format!("{base}/receipts"), None);
    assert_eq!(keys(&v), ["reactor", "receipts"]);
    assert_eq!(v["receipts"].as_array().unwrap().len(), 4);
    let (_, v) = http("GET", &format!("{base}/nodes/digest"), None);
    assert_eq!(
        keys(&v),
        ["reactor", "node", "fingerprints", "lastReceipt", "receipts"]
    );
    assert_eq!(v["lastReceipt"]["status"], json!("rendered"));
    assert_eq!(v["lastReceipt"]["wake"]["source"], json!("input"));
    // `trigger` while serve runs is forwarded; its receipt lands once.
    let fwd = cmd(proj.path())
        .args(["trigger", "digest"])
        .output()
        .unwrap();
    let fwd_out = String::from_utf8_lossy(&fwd.stdout).into_owned();
    assert_eq!(
        fwd.status.code(),
        Some(0),
        "{fwd_out}{}",
        String::from_utf8_lossy(&fwd.stderr)
    );
    assert!(
        fwd_out.contains("  forwarded      http://127.0.0.1:"),
        "{fwd_out}"
    );
    assert!(fwd_out.contains("  receipts       1"), "{fwd_out}");
    let (_, v) = http("GET", &format!("{base}/cost"), None);
    assert_eq!(v["receipts"], json!(5));
    // Stop: exit 0, serve.json removed.
    assert_eq!(serve.sigterm_and_wait(), 0);
    assert!(
        serve
            .seen
            .iter()
            .any(|l| l == "reactor serve — drained in-flight work; exiting."),
        "{:?}",
        serve.seen
    );
    assert!(!state.join("serve.json").exists());
    fake.verify().unwrap();
    let requests_before = fake.request_count();
    // The state dir replays in the viewer with every chain verified.
    let out = Command::new(bin())
        .arg("devtools")
        .arg(&state)
        .arg("--describe")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("CHAIN-VERIFY  ok"), "{text}");
    assert!(text.contains("  receipts    5 frames"), "{text}");
    // Restart: nothing renders (no request to the provider), the ledger is unchanged.
    let ledger = std::fs::read(state.join("receipts.json")).unwrap();
    let mut again = Serve::start(proj.path(), true);
    assert!(
        again
            .seen
            .iter()
            .any(|l| l.contains("booted \"default\" (rendered=0")),
        "{:?}",
        again.seen
    );
    let (_, v) = http(
        "POST",
        &format!("{}/trigger/inbox", again.base.clone().unwrap()),
        Some(r#"{"body":"hello","id":"item-1"}"#),
    );
    assert_eq!(v["dataDelivered"], json!(false));
    assert_eq!(again.sigterm_and_wait(), 0);
    assert_eq!(fake.request_count(), requests_before);
    let after = std::fs::read(state.join("receipts.json")).unwrap();
    assert_eq!(&after[..ledger.len() - 2], &ledger[..ledger.len() - 2]);
    no_canary_anywhere(&state, &[&serve.seen.join("\n"), &fwd_out]);
    fake.finish();
}

/// SIGTERM during a slow render (HOST.md §9.4 with issue 10): the render in flight — shown by
/// `GET /status` and `reactor status` — finishes and commits, nothing new starts, serve exits 0;
/// the digest it would have woken is rendered by the next boot's sweep, so nothing is lost.
#[test]
fn sigterm_during_a_slow_render_commits_it_and_the_next_boot_finishes_the_drain() {
    let fake = FakeProvider::start();
    let Some(proj) = project(&fake, "") else {
        return;
    };
    for e in compile_entries(json!({"postconditions": []})) {
        fake.push(e);
    }
    let mut renders = render_entries(json!([{"id": "s", "body": "slow"}]), "1 item");
    renders[0] = write_truth(json!({"items": [{"id": "s", "body": "slow"}]}))
        .when_purpose("render:inbox")
        .delayed(Duration::from_millis(4000));
    for e in renders {
        fake.push(e);
    }
    let mut c = cmd(proj.path());
    c.args([
        "serve",
        "--poll-interval",
        "600000",
        "--http",
        "0",
        "--metrics",
    ]);
    let mut serve = Serve::spawn(c, true);
    let base = serve.base.clone().unwrap();
    let url = format!("{base}/trigger/inbox");
    let t = std::thread::spawn(move || http("POST", &url, Some(r#"{"id":"s","body":"slow"}"#)));
    // Wait until the slow render request reached the fake.
    wait_for_purpose(&fake, "render:inbox");
    let (s, v) = http("GET", &format!("{base}/status"), None);
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["inFlight"].as_array().map(Vec::len), Some(1), "{v}");
    assert_eq!(v["inFlight"][0]["node"], json!("inbox"));
    assert_eq!(v["inFlight"][0]["awaitingCommit"], json!(false));
    assert!(v["inFlight"][0]["elapsedMs"].is_u64(), "{v}");
    let (s, _, text) = crate::host_operate::get_text(&format!("{base}/metrics"));
    assert_eq!(s, 200, "{text}");
    assert_eq!(
        crate::host_operate::sample(&text, "reactor_renders_in_flight{reactor=\"default\"}"),
        Some(1.0),
        "{text}"
    );
    let out = cmd(proj.path()).arg("status").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("\n  in flight      1 render: inbox (since "),
        "{text}"
    );
    // Then stop the daemon.
    assert_eq!(serve.sigterm_and_wait(), 0);
    let (s, v) = t.join().unwrap();
    assert_eq!(s, 200, "{v}");
    // The ingress receipt and the inbox render; the digest never started.
    assert_eq!(v["receiptsAdded"], json!(2));
    let ledger_path = proj.path().join(".reactor/receipts.json");
    let ledger = std::fs::read_to_string(&ledger_path).unwrap();
    assert!(ledger.contains(r#""node":"inbox""#));
    assert!(!ledger.contains(r#""node":"digest""#));
    assert!(!proj.path().join(".reactor/in-flight.json").exists());
    // The next boot's sweep renders the digest (its input moved), nothing else.
    let mut again = Serve::start(proj.path(), false);
    assert!(
        again
            .seen
            .iter()
            .any(|l| l == "reactor serve — booted \"default\" (rendered=1 skipped=0 failed=0)"),
        "{:?}",
        again.seen
    );
    assert_eq!(again.sigterm_and_wait(), 0);
    let ledger = std::fs::read_to_string(&ledger_path).unwrap();
    assert!(ledger.contains(r#""node":"digest""#));
    fake.finish();
}

#[test]
fn serve_polls_a_static_gateway_once_across_restarts() {
    let fake = FakeProvider::start();
    let yaml = "gateways:\n  - node: inbox\n    connector:\n      type: static\n      items: [{ id: item-1, body: \"one\" }, { id: item-2, body: \"two\" }]\n";
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
    let mut serve = Serve::start(proj.path(), false);
    assert!(
        serve.wait_for("gateways: inbox ingested=2 skipped=0"),
        "{:?}",
        serve.seen
    );
    assert!(serve.wait_for("cost: fresh="), "{:?}", serve.seen);
    let cost = serve
        .seen
        .iter()
        .find(|l| l.starts_with("cost: "))
        .unwrap()
        .clone();
    assert!(
        cost.ends_with("(rendered=6 skipped=0) receipts=6"),
        "{cost}"
    );
    assert_eq!(serve.sigterm_and_wait(), 0);
    let registry = std::fs::read_to_string(proj.path().join(".reactor/registry.json")).unwrap();
    assert_eq!(
        registry,
        "{\"gateway_cursors\":{\"inbox\":[\"item-1\",\"item-2\"]}}\n"
    );
    // A restart ingests nothing again.
    let mut again = Serve::start(proj.path(), false);
    assert!(
        again.wait_for("gateways: inbox ingested=0 skipped=2"),
        "{:?}",
        again.seen
    );
    assert_eq!(again.sigterm_and_wait(), 0);
    fake.finish();
}
