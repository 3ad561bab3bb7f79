//! `reactor-devtools`: every exit-1 condition of the CLI, and every route of the server over
//! loopback with a real HTTP client (VIEWER.md §2, §6), including hostile requests, live follow
//! and signal shutdown with event streams attached.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reactor::devtools::server::{DevToolsServerOptions, start_devtools_server};
use reactor::format::json::{self, Value};
use reactor::format::receipt::{Cost, Fingerprints, Receipt, Status, Wake, WakeSource};
use reactor::store::ledger::Ledger;

use crate::support::{bin, compat_dir};

fn devtools(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin())
        .arg("devtools")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn version_help_and_argv0_dispatch() {
    let (code, out, _) = devtools(&["-V"]);
    assert_eq!((code, out.as_str()), (0, "0.2.0\n"));
    let (code, out, _) = devtools(&["--version", "--help"]);
    assert_eq!((code, out.as_str()), (0, "0.2.0\n"));
    let (code, out, _) = devtools(&["-h"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("reactor-devtools — replay a saved Reactor ledger"));
    assert!(out.contains("  reactor-devtools <state-dir> --export <file.html> [--force]  # write a self-contained report\n"));
    assert!(out.contains("      --force   Overwrite on --copy-to or --export.\n"));
    // The same binary under the name reactor-devtools.
    let d = tempfile::tempdir().unwrap();
    let link = d.path().join("reactor-devtools");
    std::os::unix::fs::symlink(bin(), &link).unwrap();
    let out = Command::new(&link).arg("--version").output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "0.2.0\n");
}

#[test]
fn every_exit_1_condition() {
    let d = tempfile::tempdir().unwrap();
    let not_state = d.path().join("plain");
    std::fs::create_dir(&not_state).unwrap();
    std::fs::write(not_state.join("x.txt"), "x").unwrap();
    let missing = d.path().join("missing");
    let ns = not_state.to_str().unwrap();
    let ms = missing.to_str().unwrap();
    // (args, stream, expected text)
    let cases: Vec<(Vec<&str>, &str, String)> = vec![
        (vec![], "out", "Usage:".into()),
        (vec!["x", "--port", "4556.0"], "err", "error: --port must be an integer (0-65535)".into()),
        (vec!["x", "--port", "65536"], "err", "error: --port must be an integer (0-65535)".into()),
        (vec!["x", "-p", ""], "err", "error: --port must be an integer (0-65535)".into()),
        (vec!["x", "--json"], "err", "error: --json only applies with --describe (the machine-readable run summary).\n  e.g. reactor-devtools --example masked-relay --describe --json".into()),
        (vec!["x", "--copy-to", "y"], "err", "error: --copy-to <dir> requires --example <name> (the sample ledger to copy).".into()),
        (vec!["x", "--example", "masked-relay"], "err", "error: pass either --example <name> OR a <state-dir>, not both".into()),
        (vec!["--example", "nope"], "err", "error: unknown example \"nope\".\n  shipped examples: masked-relay, surprise-cost, agent-observatory, inbox-triage, monorepo-ci, research-tree".into()),
        (vec!["--example", "--describe"], "err", "error: unknown example \"--describe\".".into()),
        (vec![ms, "--describe"], "err", format!("error: state-dir not found: {ms}\n  (after a global install, the bundled sample is reachable with\n   reactor-devtools --example masked-relay --describe)")),
        (vec![ns], "err", format!("error: not a reactor state-dir: {ns}\n  (expected a receipts.json or a compile/ directory inside it)")),
        (vec!["--nope"], "err", "error: unrecognized option: --nope".into()),
        (vec!["x", "y", "--verify=1", "-x"], "err", "error: unrecognized options: y, --verify, -x".into()),
        (vec!["x", "--describe=yes"], "err", "error: option --describe does not take a value".into()),
        (vec!["--example"], "err", "error: option missing a value: --example".into()),
    ];
    for (args, stream, want) in cases {
        let (code, out, err) = devtools(&args);
        assert_eq!(code, 1, "{args:?}: {out}{err}");
        let text = if stream == "out" { &out } else { &err };
        assert!(
            text.contains(&want),
            "{args:?}: expected {want:?} in {stream}:\n{text}"
        );
    }
    // Usage errors print the usage after a blank line.
    let (_, _, err) = devtools(&["--nope"]);
    assert!(err.contains("\n\nreactor-devtools — replay"), "{err}");
}

#[test]
fn copy_to_refusals_and_failures() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("afile");
    std::fs::write(&file, "x").unwrap();
    let (code, _, err) = devtools(&[
        "--example",
        "masked-relay",
        "--copy-to",
        file.to_str().unwrap(),
        "--force",
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("exists and is not a directory"), "{err}");
    let nonempty = d.path().join("ne");
    std::fs::create_dir(&nonempty).unwrap();
    std::fs::write(nonempty.join("keep.txt"), "x").unwrap();
    let (code, _, err) = devtools(&[
        "--example",
        "masked-relay",
        "--copy-to",
        nonempty.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains(
            "is not empty — refusing to overwrite.\n  re-run with --force to overwrite it:"
        ),
        "{err}"
    );
    let state = d.path().join("st");
    std::fs::create_dir(&state).unwrap();
    std::fs::write(state.join("receipts.json"), "[]\n").unwrap();
    let (code, _, err) = devtools(&[
        "--example",
        "masked-relay",
        "--copy-to",
        state.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains("is already a reactor state-dir — refusing to overwrite."),
        "{err}"
    );
}

#[test]
fn describe_empty_ledger_and_torn_tail() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("compile")).unwrap();
    let (code, out, _) = devtools(&[d.path().to_str().unwrap(), "--describe"]);
    assert_eq!(code, 0);
    assert!(out.contains("LEDGER EMPTY"));
    assert!(
        out.ends_with("    reactor-devtools --example masked-relay --describe\n\n"),
        "{out:?}"
    );
    let (code, out, _) = devtools(&[d.path().to_str().unwrap(), "--describe", "--json"]);
    assert_eq!(code, 0);
    let v = json::parse_str(&out).unwrap();
    assert_eq!(v.get("empty"), Some(&Value::Bool(true)));
    assert_eq!(
        json::compact_string(v.get("costRollup").unwrap()),
        r#"{"bySurpriseCause":{},"total":{"receipts":0,"fresh":0,"reused":0,"dollars":0}}"#
    );
    // A torn tail: the complete receipts are used and a note is printed.
    let (mut l, _) = Ledger::open(d.path()).unwrap();
    l.append(receipt("alpha", 1)).unwrap();
    l.append(receipt("alpha", 2)).unwrap();
    drop(l);
    let mut bytes = std::fs::read(d.path().join("receipts.json")).unwrap();
    bytes.truncate(bytes.len() - 30);
    std::fs::write(d.path().join("receipts.json"), &bytes).unwrap();
    let (code, out, err) = devtools(&[d.path().to_str().unwrap(), "--describe"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("  receipts    1 frames"), "{out}");
    assert!(err.contains("reactor-devtools: note: receipts.json ends with an incomplete receipt (a write in progress or an interrupted append); using the 1 complete receipt(s)"), "{err}");
    // Corrupt and non-array ledgers are read errors (exit 1).
    std::fs::write(d.path().join("receipts.json"), b"{}").unwrap();
    let (code, _, err) = devtools(&[d.path().to_str().unwrap(), "--describe"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("cannot read state-dir")
            && err.contains("receipts.json must contain a JSON array"),
        "{err}"
    );
    std::fs::write(d.path().join("receipts.json"), b"[1]x").unwrap();
    let (code, _, err) = devtools(&[d.path().to_str().unwrap(), "--describe"]);
    assert_eq!(code, 1);
    assert!(err.contains("receipts.json is corrupt at byte 3"), "{err}");
    std::fs::write(d.path().join("receipts.json"), b"[]").unwrap();
    std::fs::write(d.path().join("compile/topology.json"), b"{nope").unwrap();
    let (code, _, err) = devtools(&[d.path().to_str().unwrap(), "--describe"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("compile/topology.json is not valid JSON"),
        "{err}"
    );
}

#[test]
fn broken_pipe_keeps_the_exit_code() {
    let Some(c) = compat_dir() else { return };
    let mut child = Command::new(bin())
        .arg("devtools")
        .arg(c.join("masked-relay"))
        .arg("--describe")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    assert_eq!(child.wait().unwrap().code(), Some(0));
}

fn receipt(node: &str, i: u64) -> Receipt {
    Receipt {
        node: node.into(),
        contract_fingerprint: "contract:x".into(),
        status: Status::Rendered,
        wake: Wake::new(WakeSource::External),
        input_fingerprints: vec![],
        fingerprints: Fingerprints::atomic(format!("tok-{i}")),
        semantic_diff: Default::default(),
        prev: None,
        cost: Cost {
            provider: "p".into(),
            model: "m".into(),
            fresh: 10 * i,
            reused: i,
            surprise_cause: WakeSource::External,
        },
        content_hash: String::new(),
    }
}

/// A viewer process serving `dir` on an ephemeral port; killed on drop.
struct Viewer {
    child: Child,
    base: String,
    port: u16,
}

impl Viewer {
    fn start(dir: &Path) -> Viewer {
        let mut child = Command::new(bin())
            .arg("devtools")
            .arg(dir)
            .args(["-p", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        out.read_line(&mut first).unwrap();
        assert!(first.starts_with("reactor-devtools: replaying "), "{first}");
        let mut second = String::new();
        out.read_line(&mut second).unwrap();
        let url = second.trim().strip_prefix("open ").unwrap().to_string();
        let port = url
            .trim_end_matches('/')
            .rsplit(':')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        Viewer {
            child,
            base: url.trim_end_matches('/').to_string(),
            port,
        }
    }
}

impl Drop for Viewer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn get(url: &str) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut resp = agent.get(url).call().unwrap();
    let status = resp.status().as_u16();
    let headers = resp
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    let body = resp.body_mut().read_to_vec().unwrap();
    (status, headers, body)
}

fn header<'a>(h: &'a [(String, String)], name: &str) -> Option<&'a str> {
    h.iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Sends raw bytes and returns the status line and the whole response text.
fn raw(port: u16, request: &[u8]) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(request).unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

#[test]
fn every_route_over_loopback() {
    let Some(c) = compat_dir() else { return };
    let v = Viewer::start(&c.join("masked-relay"));
    let (s, h, state) = get(&format!("{}/api/state", v.base));
    assert_eq!(s, 200);
    assert_eq!(
        header(&h, "content-type"),
        Some("application/json; charset=utf-8")
    );
    assert_eq!(header(&h, "x-content-type-options"), Some("nosniff"));
    assert_eq!(header(&h, "cache-control"), Some("no-cache"));
    let etag = header(&h, "etag").unwrap().to_string();
    assert!(
        etag.starts_with("\"b3-") && etag.len() == 4 + 32 + 1,
        "{etag}"
    );
    let (s2, _, alias) = get(&format!("{}/api/snapshot", v.base));
    assert_eq!((s2, &alias), (200, &state));
    let snap = json::parse(&state).unwrap();
    assert_eq!(snap.get("frames").unwrap().as_array().unwrap().len(), 77);
    assert_eq!(snap.get("nodes").unwrap().as_array().unwrap().len(), 12);
    assert_eq!(
        snap.get("chainVerify").unwrap().get("ok"),
        Some(&Value::Bool(true))
    );
    assert_eq!(
        json::compact_string(snap.get("costRollup").unwrap().get("total").unwrap()),
        r#"{"receipts":77,"fresh":27180,"reused":12840,"dollars":0}"#
    );
    // If-None-Match → 304.
    let r = raw(v.port, format!("GET /api/state HTTP/1.1\r\nHost: 127.0.0.1\r\nIf-None-Match: {etag}\r\nConnection: close\r\n\r\n").as_bytes());
    assert!(r.starts_with("HTTP/1.1 304"), "{r}");
    // /api/node
    let (s, _, b) = get(&format!("{}/api/node/responsibility.signal-ledger", v.base));
    assert_eq!(s, 400);
    assert_eq!(
        String::from_utf8_lossy(&b),
        r#"{"error":"missing ?version= (a frame's atomicVersion or store artifact version)"}"#
    );
    let (s, _, b) = get(&format!(
        "{}/api/node/responsibility.signal-ledger?version=",
        v.base
    ));
    assert_eq!(s, 400, "{}", String::from_utf8_lossy(&b));
    let (s, _, b) = get(&format!("{}/api/node/no%2Fsuch?version=a+b", v.base));
    assert_eq!(s, 404);
    assert_eq!(
        String::from_utf8_lossy(&b),
        r#"{"error":"no world-model for node@version","node":"no/such","version":"a b"}"#
    );
    let r = raw(v.port, b"GET /api/node/bad%zzescape?version=x HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    assert!(
        r.starts_with("HTTP/1.1 400") && r.contains("malformed percent-encoding in node id"),
        "{r}"
    );
    let r = raw(
        v.port,
        b"GET /api/node/?version=x HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    assert!(
        r.starts_with("HTTP/1.1 400") && r.contains("missing node id"),
        "{r}"
    );
    let (s, _, b) = get(&format!("{}/api/node", v.base));
    assert_eq!(s, 404);
    assert_eq!(
        String::from_utf8_lossy(&b),
        r#"{"error":"no such endpoint","path":"/api/node"}"#
    );
    // Version blobs are absent from the corpus: a real atomicVersion is a 404, never a crash.
    let frame0 = &snap.get("frames").unwrap().as_array().unwrap()[1];
    let ver = frame0.get("atomicVersion").unwrap().as_str().unwrap();
    let (s, _, _) = get(&format!(
        "{}/api/node/gateway.signal-inbox?version={ver}",
        v.base
    ));
    assert_eq!(s, 404);
    // /api/receipt
    let (s, _, b) = get(&format!("{}/api/receipt/0", v.base));
    assert_eq!(s, 200);
    let rv = json::parse(&b).unwrap();
    assert_eq!(rv.get("index").and_then(Value::as_f64), Some(0.0));
    assert_eq!(
        rv.get("verify").unwrap().get("ok"),
        Some(&Value::Bool(true))
    );
    assert_eq!(
        rv.get("receipt")
            .unwrap()
            .get("content_hash")
            .and_then(Value::as_str),
        Some("sha256:ddfa6a7c5575954aa83ceec1cf93497e80b2e3852defae19727226216b4d0b57")
    );
    for bad in ["-1", "1.5", "x", "%31"] {
        let (s, _, b) = get(&format!("{}/api/receipt/{bad}", v.base));
        assert_eq!(s, 400, "{bad}");
        assert_eq!(
            String::from_utf8_lossy(&b),
            r#"{"error":"receipt index must be a non-negative integer"}"#
        );
    }
    let (s, _, b) = get(&format!("{}/api/receipt/77", v.base));
    assert_eq!(
        (s, String::from_utf8_lossy(&b).into_owned()),
        (
            404,
            r#"{"error":"no receipt at index","index":77}"#.to_string()
        )
    );
    let (s, _, b) = get(&format!("{}/api/receipt/99999999999999999999999", v.base));
    assert_eq!(s, 404, "{}", String::from_utf8_lossy(&b));
    // Unknown API path, SPA, static assets, traversal.
    let (s, _, b) = get(&format!("{}/api/nope", v.base));
    assert_eq!(
        (s, String::from_utf8_lossy(&b).into_owned()),
        (
            404,
            r#"{"error":"no such endpoint","path":"/api/nope"}"#.to_string()
        )
    );
    let (s, h, b) = get(&format!("{}/", v.base));
    assert_eq!(s, 200);
    assert_eq!(header(&h, "content-type"), Some("text/html; charset=utf-8"));
    assert!(
        header(&h, "content-security-policy")
            .unwrap()
            .starts_with("default-src 'self'")
    );
    assert!(String::from_utf8_lossy(&b).contains("/app.js"));
    let (s, h, _) = get(&format!("{}/app.js", v.base));
    assert_eq!(
        (s, header(&h, "content-type")),
        (200, Some("text/javascript; charset=utf-8"))
    );
    let (s, h, _) = get(&format!("{}/app.css", v.base));
    assert_eq!(
        (s, header(&h, "content-type")),
        (200, Some("text/css; charset=utf-8"))
    );
    for p in [
        "/../../Cargo.toml",
        "/%2e%2e/Cargo.toml",
        "/..%2f..%2fCargo.toml",
        "/nope.js",
        "/assets/",
    ] {
        let r = raw(
            v.port,
            format!("GET {p} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes(),
        );
        assert!(
            r.starts_with("HTTP/1.1 404") && r.ends_with("Not found"),
            "{p}: {r}"
        );
    }
    // Methods.
    for m in ["POST", "HEAD", "OPTIONS", "DELETE", "PUT"] {
        let r = raw(v.port, format!("{m} /api/state HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").as_bytes());
        assert!(r.starts_with("HTTP/1.1 405"), "{m}: {r}");
        assert!(r.to_ascii_lowercase().contains("allow: get"), "{m}: {r}");
    }
    // Host check (DNS rebinding).
    let r = raw(
        v.port,
        b"GET /api/state HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n",
    );
    assert!(
        r.starts_with("HTTP/1.1 403") && r.contains("forbidden host"),
        "{r}"
    );
    // Oversized header and garbage do not take the server down.
    let big = format!(
        "GET /api/state HTTP/1.1\r\nHost: localhost\r\nX-Big: {}\r\nConnection: close\r\n\r\n",
        "a".repeat(200_000)
    );
    let _ = raw(v.port, big.as_bytes());
    let _ = raw(v.port, b"\x00\x01\x02garbage\r\n\r\n");
    let (s, _, _) = get(&format!("{}/api/state", v.base));
    assert_eq!(s, 200);
}

#[test]
fn events_stream_and_signal_shutdown_within_a_second() {
    let Some(c) = compat_dir() else { return };
    let mut v = Viewer::start(&c.join("surprise-cost"));
    // A bare /events: comments only.
    let mut bare = TcpStream::connect(("127.0.0.1", v.port)).unwrap();
    bare.write_all(b"GET /events HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    // Opting in with ?after=2 catches up frames 3 and 4 then a summary.
    let mut s = TcpStream::connect(("127.0.0.1", v.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"GET /events?after=2 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut got = String::new();
    let t = Instant::now();
    let mut buf = [0u8; 4096];
    while !got.contains("event: summary") && t.elapsed() < Duration::from_secs(5) {
        let n = s.read(&mut buf).unwrap_or(0);
        if n == 0 {
            break;
        }
        got.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(
        got.contains("content-type: text/event-stream")
            || got.contains("Content-Type: text/event-stream"),
        "{got}"
    );
    assert!(got.contains(": connected"), "{got}");
    assert!(got.contains("retry: 3000"), "{got}");
    assert!(
        got.contains("event: hello\ndata: {\"live\":true,\"frames\":5}"),
        "{got}"
    );
    assert!(
        got.contains("id: 3\nevent: frame\ndata: {\"index\":3,"),
        "{got}"
    );
    assert!(got.contains("id: 4\nevent: frame"), "{got}");
    assert!(!got.contains("id: 2\n"), "{got}");
    // SIGTERM with two streams attached: exit 0 within a second, streams get `shutdown`.
    let t = Instant::now();
    unsafe_kill(v.child.id(), 15);
    let status = loop {
        if let Some(st) = v.child.try_wait().unwrap() {
            break st;
        }
        assert!(
            t.elapsed() < Duration::from_millis(1500),
            "still running after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
    let mut rest = String::new();
    let _ = s.read_to_string(&mut rest);
    assert!(rest.contains("event: shutdown"), "{rest}");
    drop(bare);
}

fn unsafe_kill(pid: u32, sig: i32) {
    let st = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(st.success());
}

#[test]
fn live_follow_pushes_new_frames() {
    let d = tempfile::tempdir().unwrap();
    {
        let (mut l, _) = Ledger::open(d.path()).unwrap();
        l.append(receipt("alpha", 1)).unwrap();
    }
    let server = start_devtools_server(DevToolsServerOptions {
        state_dir: Some(d.path().to_path_buf()),
        port: 0,
        poll_interval: Duration::from_millis(50),
        ..DevToolsServerOptions::default()
    })
    .unwrap();
    assert!(server.url().starts_with("http://127.0.0.1:") && server.url().ends_with('/'));
    let port = server.local_addr().port();
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"GET /events?after=0 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut got = String::new();
    let mut buf = [0u8; 4096];
    let mut read_until = |got: &mut String, needle: &str| {
        let t = Instant::now();
        while !got.contains(needle) && t.elapsed() < Duration::from_secs(5) {
            let n = s.read(&mut buf).unwrap_or(0);
            if n == 0 {
                break;
            }
            got.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    };
    read_until(&mut got, "event: hello");
    assert!(got.contains("\"live\":true,\"frames\":1"), "got: {got:?}");
    {
        let (mut l, _) = Ledger::open(d.path()).unwrap();
        l.append(receipt("alpha", 2)).unwrap();
        l.append(receipt("alpha", 3)).unwrap();
    }
    read_until(&mut got, "\"frames\":3,\"costRollup\"");
    assert!(
        got.contains("id: 1\nevent: frame\ndata: {\"index\":1,\"node\":\"alpha\""),
        "{got}"
    );
    assert!(got.contains("id: 2\nevent: frame"), "{got}");
    assert_eq!(server.snapshot().frames.len(), 3);
    assert_eq!(server.snapshot().cost_rollup.total.fresh, 60);
    // The grown frames page with their causes (issue 9): frame 2 re-rendered on an external
    // wake with an unchanged memo key; its previous frame is frame 1.
    let (st, _, body) = get(&format!("{}api/frames?from=1&count=5", server.url()));
    assert_eq!(st, 200);
    let page: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        (page["count"].as_u64(), page["total"].as_u64()),
        (Some(2), Some(3))
    );
    let why = &page["frames"][1]["why"];
    assert_eq!(why["causes"], serde_json::json!(["wake"]), "{page}");
    assert_eq!(why["prior"], 1);
    assert_eq!(why["text"], "memo key unchanged; external wake");
    let (_, _, body) = get(&format!("{}api/state?frames=none", server.url()));
    let head: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(head["frameCount"], 3);
    // A topology appearing triggers a reset.
    std::fs::create_dir_all(d.path().join("compile")).unwrap();
    std::fs::write(
        d.path().join("compile/topology.json"),
        r#"{"nodes":[{"node":"alpha"}],"edges":[]}"#,
    )
    .unwrap();
    read_until(&mut got, "event: reset");
    assert!(
        got.contains("{\"reason\":\"compile/topology.json changed\",\"frames\":3}"),
        "{got}"
    );
    assert!(server.snapshot().has_topology);
}

#[test]
fn every_example_describes_from_any_directory_and_copies() {
    let elsewhere = tempfile::tempdir().unwrap();
    for name in reactor::devtools::SHIPPED_EXAMPLES {
        for json in [false, true] {
            let mut cmd = Command::new(bin());
            cmd.current_dir(elsewhere.path())
                .args(["devtools", "--example", name, "--describe"]);
            if json {
                cmd.arg("--json");
            }
            let out = cmd.output().unwrap();
            assert_eq!(
                out.status.code(),
                Some(0),
                "{name}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let text = String::from_utf8(out.stdout).unwrap();
            if json {
                let v = json::parse_str(&text).unwrap();
                assert_eq!(v.get("synthetic"), Some(&Value::Bool(true)));
                assert_eq!(
                    v.get("stateDir").and_then(Value::as_str),
                    Some(format!("example:{name}").as_str())
                );
            } else {
                assert!(
                    text.contains(
                        "(synthetic sample ledger — token counts are illustrative, not a bill)"
                    ),
                    "{name}"
                );
                assert!(text.contains("CHAIN-VERIFY  ok"), "{name}");
            }
        }
        // --copy-to, then describe the copy by path (not synthetic).
        let target = elsewhere.path().join(format!("copy-{name}"));
        let (code, out, err) =
            devtools(&["--example", name, "--copy-to", target.to_str().unwrap()]);
        assert_eq!(code, 0, "{err}");
        assert!(
            out.starts_with(&format!(
                "reactor-devtools: copied the SAMPLE \"{name}\" ledger into {}",
                target.display()
            )),
            "{out}"
        );
        let (code, out, _) = devtools(&[target.to_str().unwrap(), "--describe"]);
        assert_eq!(code, 0, "{name}");
        assert!(!out.contains("synthetic sample"), "{name}");
        // A second copy needs --force, which replaces the fixture entries and keeps other files.
        std::fs::write(target.join("keep.txt"), "mine").unwrap();
        let (code, _, _) = devtools(&["--example", name, "--copy-to", target.to_str().unwrap()]);
        assert_eq!(code, 1);
        let (code, _, _) = devtools(&[
            "--example",
            name,
            "--copy-to",
            target.to_str().unwrap(),
            "--force",
        ]);
        assert_eq!(code, 0);
        assert_eq!(
            std::fs::read_to_string(target.join("keep.txt")).unwrap(),
            "mine"
        );
    }
    // surprise-cost has no topology: a --force copy over masked-relay must not keep its compile/.
    let t = elsewhere.path().join("copy-masked-relay");
    let (code, _, _) = devtools(&[
        "--example",
        "surprise-cost",
        "--copy-to",
        t.to_str().unwrap(),
        "--force",
    ]);
    assert_eq!(code, 0);
    assert!(!t.join("compile").exists());
    let (_, out, _) = devtools(&[t.to_str().unwrap(), "--describe"]);
    assert!(out.contains("topology    no (node-only fallback)"), "{out}");
}

#[test]
fn startup_errors_exit_1() {
    let Some(c) = compat_dir() else { return };
    let dir = c.join("surprise-cost");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let (code, _, err) = devtools(&[dir.to_str().unwrap(), "-p", &port]);
    assert_eq!(code, 1);
    let alt = port.parse::<u32>().unwrap() + 1;
    assert!(
        err.contains(&format!("reactor-devtools: Error: Port {port} on 127.0.0.1 is already in use. Pass a different port with --port/-p (e.g. --port {alt}).")),
        "{err}"
    );
    // (An unresolvable host is not exercised here: resolving it would query DNS, and tests
    // reach no network beyond loopback; the message is unit-tested in the http layer.)
}
