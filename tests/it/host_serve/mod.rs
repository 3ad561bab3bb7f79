//! The durable host end to end (HOST.md §8.4, §8.5, §9, §10) over the quickstart project and the
//! loopback fake provider: `serve --http 0`, `POST /trigger/inbox`, the six GET routes, replay
//! in `reactor-devtools`, restart, duplicate arrivals, the lock, forwarding, `run`, postcondition
//! failures and SIGTERM during a slow render.

mod events;
mod failures;
mod lifecycle;
mod one_shot;

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
