//! The durable host end to end (HOST.md §8.4, §8.5, §9, §10) over the quickstart project and the
//! loopback fake provider: `serve --http 0`, `POST /trigger/inbox`, the six GET routes, replay
//! in `reactor-devtools`, restart, duplicate arrivals, the lock, forwarding, `run`, postcondition
//! failures and SIGTERM during a slow render.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::fake_provider::{self as fake, Entry, FakeProvider};
use crate::support::{bin, shared_dir};

pub(crate) const CANARY: &str = "sk-test-0123456789abcdef-canary";

pub(crate) fn quickstart() -> Option<PathBuf> {
    let d = shared_dir().join("contracts/quickstart");
    if d.is_dir() {
        return Some(d);
    }
    if std::env::var("REACTOR_REQUIRE_COMPAT").as_deref() == Ok("1") {
        panic!("{} is missing (REACTOR_REQUIRE_COMPAT=1)", d.display());
    }
    eprintln!("SKIPPED: {} is missing", d.display());
    None
}

/// A temporary project with the quickstart contracts and a reactor.yml pointing at the fake.
pub(crate) fn project(fake: &FakeProvider, extra_yaml: &str) -> Option<tempfile::TempDir> {
    let src = quickstart()?;
    let d = tempfile::tempdir().unwrap();
    for f in ["inbox.prose.md", "digest.prose.md"] {
        std::fs::copy(src.join(f), d.path().join(f)).unwrap();
    }
    std::fs::write(
        d.path().join("reactor.yml"),
        format!(
            "model:\n  provider: openrouter\n  base_url: {}\n  api_key_env: FAKE_KEY\n  render_model: render-model\n  compile_model: compile-model\n{extra_yaml}",
            fake.base_url()
        ),
    )
    .unwrap();
    Some(d)
}

pub(crate) fn compile_entries(inbox_postconditions: Value) -> Vec<Entry> {
    vec![
        fake::chat_json(&json!({
            "nodes": [
                {"id": "digest", "kind": "responsibility", "wake_source": "input",
                 "requires": [{"facet": "accepted items", "fan_in": false}], "maintains": ["digest"]},
                {"id": "inbox", "kind": "gateway", "wake_source": "external", "requires": [], "maintains": ["items"]}
            ],
            "matches": [{"subscriber": "digest", "requirement": "accepted items", "producer": "inbox", "facet": "items"}]
        }))
        .when_purpose("compile:forme"),
        fake::chat_json(&json!({
            "fields": [{"path": "digest", "material": true, "text": null, "number": null, "collection": null}],
            "default_material": true,
            "facets": [{"facet": "digest", "paths": ["digest"]}]
        }))
        .when_purpose("compile:canonicalizer:digest"),
        fake::chat_json(&json!({
            "fields": [{"path": "items", "material": true, "text": null, "number": null, "collection": "set"}],
            "default_material": true,
            "facets": [{"facet": "items", "paths": ["items"]}]
        }))
        .when_purpose("compile:canonicalizer:inbox"),
        fake::chat_json(&json!({"postconditions": []})).when_purpose("compile:postcondition:digest"),
        fake::chat_json(&inbox_postconditions).when_purpose("compile:postcondition:inbox"),
    ]
}

/// A quickstart project whose compile answers are scripted (no inbox postconditions).
pub(crate) fn compiled_project(fake: &FakeProvider) -> Option<tempfile::TempDir> {
    let proj = project(fake, "")?;
    for e in compile_entries(json!({"postconditions": []})) {
        fake.push(e);
    }
    Some(proj)
}

/// Waits (at most 30 s) until a request with this `X-Reactor-Purpose` reached the fake.
pub(crate) fn wait_for_purpose(fake: &FakeProvider, purpose: &str) {
    let start = Instant::now();
    while !fake
        .requests()
        .iter()
        .any(|r| r.header("x-reactor-purpose") == Some(purpose))
    {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no {purpose} request"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(crate) fn write_truth(truth: Value) -> Entry {
    fake::chat_tool_calls(&[(
        "ws_write",
        json!({"path": "truth.json", "content": truth.to_string(), "encoding": null}),
    )])
}

pub(crate) fn finish() -> Entry {
    fake::chat_tool_calls(&[(
        "finish",
        json!({"status": "done", "reason": null, "semantic_diff": {"summary": "updated", "notes": null}}),
    )])
}

/// One render of each node: the inbox folds `items`, the digest writes a line.
pub(crate) fn render_entries(items: Value, digest: &str) -> Vec<Entry> {
    vec![
        write_truth(json!({"items": items})).when_purpose("render:inbox"),
        finish().when_purpose("render:inbox"),
        write_truth(json!({"digest": digest})).when_purpose("render:digest"),
        finish().when_purpose("render:digest"),
    ]
}

pub(crate) fn cmd(project: &Path) -> Command {
    let mut c = Command::new(bin());
    c.arg("--project")
        .arg(project)
        .env("FAKE_KEY", CANARY)
        .env("REACTOR_HTTP_BACKOFF_MS", "0")
        .env_remove("REACTOR_OFFLINE");
    c
}

/// A `reactor serve` child; its stdout lines arrive on a channel. Killed on drop.
pub(crate) struct Serve {
    pub(crate) child: Child,
    lines: mpsc::Receiver<String>,
    pub(crate) seen: Vec<String>,
    pub(crate) base: Option<String>,
}

impl Serve {
    pub(crate) fn start(project: &Path, http: bool) -> Serve {
        let mut c = cmd(project);
        c.arg("serve").args(["--poll-interval", "600000"]);
        if http {
            c.args(["--http", "0"]);
        }
        Serve::spawn(c, http)
    }

    /// Spawns a prepared `reactor … serve` command and waits for `host booted` (and, with
    /// `http`, reads the bound address into `base`).
    pub(crate) fn spawn(mut c: Command, http: bool) -> Serve {
        let mut child = c
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, rx) = mpsc::channel();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let mut s = Serve {
            child,
            lines: rx,
            seen: Vec::new(),
            base: None,
        };
        let ready = s.wait_for("host booted");
        if !ready {
            let err = s.stderr();
            panic!("serve did not boot: {:?} {err}", s.seen);
        }
        if http {
            let line = s
                .seen
                .iter()
                .find(|l| l.contains("HTTP on "))
                .cloned()
                .unwrap();
            let hp = line.rsplit("HTTP on ").next().unwrap().to_string();
            s.base = Some(format!("http://{hp}"));
        }
        s
    }

    pub(crate) fn wait_for(&mut self, needle: &str) -> bool {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(60) {
            if self.seen.iter().any(|l| l.contains(needle)) {
                return true;
            }
            match self.lines.recv_timeout(Duration::from_millis(200)) {
                Ok(l) => self.seen.push(l),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Ok(Some(_)) = self.child.try_wait() {
                        return false;
                    }
                }
                Err(_) => return false,
            }
        }
        false
    }

    pub(crate) fn stderr(&mut self) -> String {
        let mut s = String::new();
        if let Ok(Some(_)) = self.child.try_wait()
            && let Some(mut e) = self.child.stderr.take()
        {
            let _ = e.read_to_string(&mut s);
        }
        s
    }

    pub(crate) fn sigterm_and_wait(&mut self) -> i32 {
        let st = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
        self.wait_exit()
    }

    /// Waits (at most 30 s) for the process to exit; its exit code.
    pub(crate) fn wait_exit(&mut self) -> i32 {
        let t = Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                while let Ok(l) = self.lines.try_recv() {
                    self.seen.push(l);
                }
                return st.code().unwrap_or(-1);
            }
            assert!(t.elapsed() < Duration::from_secs(30), "serve did not stop");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn http(method: &str, url: &str, body: Option<&str>) -> (u16, Value) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut resp = match method {
        "GET" => agent.get(url).call().unwrap(),
        _ => agent.post(url).send(body.unwrap_or("")).unwrap(),
    };
    let status = resp.status().as_u16();
    let text = resp.body_mut().read_to_string().unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

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

#[test]
fn one_shot_trigger_and_run_report_this_invocation() {
    let fake = FakeProvider::start();
    let Some(proj) = project(&fake, "") else {
        return;
    };
    for e in compile_entries(json!({"postconditions": []})) {
        fake.push(e);
    }
    for e in render_entries(json!([{"id": "a", "body": "x"}]), "1 item") {
        fake.push(e);
    }
    let out = cmd(proj.path())
        .args(["trigger", "inbox", "--data", r#"{"id":"a","body":"x"}"#])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.starts_with("reactor trigger\n\n  triggered      inbox\n  payload        {\"id\":\"a\",\"body\":\"x\"}\n"), "{text}");
    assert!(
        text.contains(
            "  data           delivered: staged as arrival a (inbox::ingress now holds 1 item)"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "    inbox                        rendered\n    digest                       rendered"
        ),
        "{text}"
    );
    assert!(text.contains("  receipts       3\n"), "{text}");
    // A duplicate through the one-shot path; the wake memo-skips.
    let out = cmd(proj.path())
        .args([
            "--json",
            "trigger",
            "inbox",
            "--data",
            r#"{"body":"x","id":"a"}"#,
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["dataDelivered"], json!(false));
    assert_eq!(
        v["dispositions"],
        json!([{"node": "inbox", "disposition": "skipped"}])
    );
    assert_eq!(v["receipts"], json!(1));
    // Not a gateway: validated and reported, not delivered.
    let out = cmd(proj.path())
        .args(["trigger", "digest", "--data", "[1,2]"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("  data           not delivered: 'digest' is not a gateway and a wake carries no payload"), "{text}");
    // Invalid data and unknown nodes.
    let out = cmd(proj.path())
        .args(["trigger", "inbox", "--data", "{nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("reactor: error: invalid --data ("));
    let out = cmd(proj.path()).args(["trigger", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("node 'nope' is not in the compiled topology")
    );
    let out = cmd(proj.path()).args(["trigger"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    // run: nothing moved → no dispositions, the gateway note.
    let out = cmd(proj.path()).arg("run").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("  compile        cache hit (zero session cost)"),
        "{text}"
    );
    assert!(
        text.contains("  (no nodes woke — nothing to reconcile)"),
        "{text}"
    );
    assert!(
        text.contains("  receipts       0\n  run cost       fresh=0 reused=0"),
        "{text}"
    );
    assert!(
        text.contains("note: run does not poll gateways; inbox receives data through"),
        "{text}"
    );
    fake.finish();
}

#[test]
fn postcondition_violation_fails_and_wakes_nothing() {
    let fake = FakeProvider::start();
    let Some(proj) = project(&fake, "") else {
        return;
    };
    let has_items = json!({"postconditions": [{
        "id": "has-items", "mode": "deterministic", "facet": "items",
        "predicate": {"nodes": [{"kind": "less-than", "fact": "items.length", "value": 1, "children": null, "child": null}], "root": 0},
        "source": "Postcondition: at least one item is accepted."}]});
    for e in compile_entries(has_items) {
        fake.push(e);
    }
    // The render writes an empty item set: the deterministic postcondition trips.
    fake.push(write_truth(json!({"items": []})).when_purpose("render:inbox"));
    fake.push(finish().when_purpose("render:inbox"));
    let out = cmd(proj.path())
        .args(["--json", "trigger", "inbox", "--data", r#"{"id":"e"}"#])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], json!(false));
    assert_eq!(
        v["dispositions"],
        json!([{"node": "inbox", "disposition": "failed", "reason": "postconditions failed: has-items (tripped)"}])
    );
    let ledger = std::fs::read_to_string(proj.path().join(".reactor/receipts.json")).unwrap();
    assert!(ledger.contains(r#""failure_reason":"postconditions failed: has-items (tripped)""#));
    assert!(
        !ledger.contains(r#""node":"digest""#),
        "nothing downstream wakes"
    );
    fake.finish();
}

#[test]
fn a_faceted_node_without_truth_json_fails_clearly() {
    let fake = FakeProvider::start();
    let Some(proj) = project(&fake, "") else {
        return;
    };
    for e in compile_entries(json!({"postconditions": []})) {
        fake.push(e);
    }
    fake.push(
        fake::chat_tool_calls(&[(
            "ws_write",
            json!({"path": "notes.md", "content": "no truth", "encoding": null}),
        )])
        .when_purpose("render:inbox"),
    );
    fake.push(finish().when_purpose("render:inbox"));
    let out = cmd(proj.path())
        .args(["trigger", "inbox", "--data", r#"{"id":"n"}"#])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        text.contains("      reason: structured truth missing: node 'inbox' declares facets but its render wrote no truth.json"),
        "{text}"
    );
    assert!(!text.contains("digest"), "{text}");
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

#[test]
fn serve_json_events_warnings_and_flag_validation() {
    let fake = FakeProvider::start();
    let Some(proj) = project(&fake, "") else {
        return;
    };
    for e in compile_entries(json!({"postconditions": []})) {
        fake.push(e);
    }
    // Bad flag values are usage errors (exit 2); a short token is refused (exit 1).
    for (args, code) in [
        (vec!["serve", "--http", "abc"], 2),
        (vec!["serve", "--concurrency", "0"], 2),
        (vec!["serve", "--poll-interval", "99"], 2),
        (vec!["serve", "--host", "0.0.0.0"], 2),
        (vec!["serve", "--auth-token-env", "TOKEN"], 2),
        (
            vec!["serve", "--http", "0", "--auth-token-env", "SHORT_TOKEN"],
            1,
        ),
    ] {
        let out = cmd(proj.path())
            .args(&args)
            .env("SHORT_TOKEN", "short")
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(code),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // A startup failure with --json is one NDJSON `error` event on stdout (HOST.md §9), exit 1;
    // the text form goes to stderr.
    let out = cmd(proj.path())
        .args([
            "--json",
            "serve",
            "--http",
            "0",
            "--auth-token-env",
            "SHORT_TOKEN",
        ])
        .env("SHORT_TOKEN", "short")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    let event: Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(event["event"], json!("error"), "{event}");
    let message = event["message"].as_str().unwrap();
    assert!(message.contains("SHORT_TOKEN"), "{message}");
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with(&format!("reactor: error: {message}")),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // --json: NDJSON events only.
    let mut child = cmd(proj.path())
        .args([
            "--json",
            "serve",
            "--http",
            "0",
            "--host",
            "0.0.0.0",
            "--poll-interval",
            "600000",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut events: Vec<Value> = Vec::new();
    for l in lines.by_ref() {
        let v: Value = serde_json::from_str(&l.unwrap()).unwrap();
        let done = v["event"] == json!("ready");
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
        ["booted", "listening", "warning", "ready"],
        "{events:?}"
    );
    assert_eq!(events[1]["loopback"], json!(false));
    assert!(
        events[1]["url"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:")
    );
    assert!(
        events[2]["message"]
            .as_str()
            .unwrap()
            .starts_with("WARNING: bound to 0.0.0.0 (not loopback) with NO auth")
    );
    let serve_json: Value =
        serde_json::from_slice(&std::fs::read(proj.path().join(".reactor/serve.json")).unwrap())
            .unwrap();
    assert_eq!(serve_json["pid"], json!(child.id()));
    assert_eq!(serve_json["prefix"], json!(""));
    assert_eq!(serve_json["auth_token_env"], Value::Null);
    assert!(
        serve_json["url"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:")
    );
    // The first tick follows `ready`; stop only after it (a signal before it skips the loop).
    let tick: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(tick["event"], json!("tick"), "{tick}");
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let rest: Vec<Value> = lines
        .map_while(Result::ok)
        .map(|l| serde_json::from_str(&l).unwrap())
        .collect();
    assert_eq!(child.wait().unwrap().code(), Some(0));
    assert_eq!(
        rest.last().unwrap(),
        &json!({"event": "stopped", "forced": false})
    );
    fake.finish();
}
