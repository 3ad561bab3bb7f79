//! The daemon's seven routes (HOST.md §10) over loopback with a real HTTP client, on reactors
//! driven by scripted renders: members, namespacing, auth, ETags and hostile requests.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use reactor::core::ir::{AtomicRules, Ir, NodeIr};
use reactor::core::{Reactor, ReactorOptions, RenderOutcome, RenderProduct};
use reactor::format::json::{self, Value};
use reactor::format::receipt::WakeSource;
use reactor::format::topology::{Edge, TopologyNode};
use reactor::host::daemon::{Daemon, router};
use reactor::host::events::Out;
use reactor::host::hosted::HostedReactor;
use reactor::host::queue::TaskPool;
use reactor::http::{BearerAuth, Server, ServerConfig};
use reactor::scenario::ScriptedRender;

/// `inbox` (gateway) → `digest`, atomic-only; the digest copies the inbox size.
fn pair_ir() -> Ir {
    let mut ir = Ir::default();
    for (n, ws) in [
        ("inbox", WakeSource::External),
        ("digest", WakeSource::Input),
    ] {
        ir.topology.nodes.push(TopologyNode {
            node: n.into(),
            contract_fingerprint: Some(format!("c-{n}")),
            wake_source: Some(ws),
        });
        ir.nodes.insert(
            n.into(),
            NodeIr {
                id: n.into(),
                contract_fingerprint: format!("c-{n}"),
                wake_source: ws,
                rules: Arc::new(AtomicRules),
            },
        );
    }
    ir.topology
        .edges
        .push(Edge::new("inbox", "digest", "@atomic"));
    ir.topology.entry_points.push("inbox".into());
    ir
}

fn script() -> Arc<ScriptedRender> {
    let s = Arc::new(ScriptedRender::new());
    for (node, producer) in [("inbox", "inbox::ingress"), ("digest", "inbox")] {
        s.set(node, move |ctx| {
            let files = ctx.upstream.read(producer).unwrap_or_default();
            let size: usize = files.iter().map(|(_, b)| b.len()).sum();
            RenderOutcome::Done(RenderProduct {
                files: vec![(
                    "view.md".into(),
                    format!("{node}: upstream {size} bytes").into_bytes(),
                )],
                usage: Some(reactor::core::Usage {
                    provider: "fake".into(),
                    model: "m".into(),
                    fresh: 100,
                    reused: 10,
                }),
                ..Default::default()
            })
        });
    }
    s
}

struct Host {
    _dirs: Vec<tempfile::TempDir>,
    server: Server,
    hosted: Vec<Arc<HostedReactor>>,
}

fn host(names: &[&str], auth: Option<&str>) -> Host {
    let mut dirs = Vec::new();
    let mut hosted = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let d = tempfile::tempdir().unwrap();
        let (r, _) =
            Reactor::open(d.path(), pair_ir(), script(), ReactorOptions::default()).unwrap();
        let h = Arc::new(HostedReactor::new(name, i, Arc::new(r), vec![]));
        h.reactor.boot().unwrap();
        hosted.push(h);
        dirs.push(d);
    }
    let daemon = Arc::new(Daemon {
        reactors: hosted.clone(),
        pool: Arc::new(TaskPool::new(names.len(), 1)),
        single: names.len() == 1,
        stopping: Arc::new(AtomicBool::new(false)),
        out: Out::Silent,
    });
    let server = Server::start(
        ServerConfig::default(),
        router(daemon, auth.map(BearerAuth::new)),
    )
    .unwrap();
    Host {
        _dirs: dirs,
        server,
        hosted,
    }
}

fn call(
    h: &Host,
    method: &str,
    path: &str,
    body: Option<&str>,
    headers: &[(&str, &str)],
) -> (u16, String, Vec<(String, String)>) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let url = format!("http://{}{path}", h.server.local_addr());
    let mut resp = match method {
        "GET" => {
            let mut r = agent.get(&url);
            for (k, v) in headers {
                r = r.header(*k, *v);
            }
            r.call().unwrap()
        }
        _ => {
            let mut r = agent.post(&url);
            for (k, v) in headers {
                r = r.header(*k, *v);
            }
            r.send(body.unwrap_or("")).unwrap()
        }
    };
    let status = resp.status().as_u16();
    let hs = resp
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    (status, resp.body_mut().read_to_string().unwrap(), hs)
}

fn raw(h: &Host, req: &str) -> String {
    let mut s = TcpStream::connect(h.server.local_addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(req.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// Reads only until the end of the response head (for responses whose connection stays open).
fn raw_head(h: &Host, req: &str) -> String {
    let mut s = TcpStream::connect(h.server.local_addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(req.as_bytes()).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 1024];
    while !out.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn keys(body: &str) -> Vec<String> {
    json::parse_str(body)
        .unwrap()
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, _)| k.to_lossy().into_owned())
        .collect()
}

#[test]
fn single_reactor_routes_and_members() {
    let h = host(&["default"], None);
    let (s, b, hs) = call(&h, "GET", "/health", None, &[]);
    assert_eq!(
        (s, b.as_str()),
        (200, r#"{"ok":true,"reactors":1,"reactor":"default"}"#)
    );
    assert!(
        hs.iter()
            .any(|(k, v)| k == "etag" && v.starts_with("\"b3-"))
    );
    let (s, b, _) = call(&h, "GET", "/topology", None, &[]);
    assert_eq!(
        (s, b.as_str()),
        (200, r#"{"reactor":"default","nodes":["digest","inbox"]}"#)
    );
    // Trigger with an item: staged, gateway and digest render.
    let (s, b, _) = call(
        &h,
        "POST",
        "/trigger/inbox",
        Some(r#"{"id":"item-1","body":"hi"}"#),
        &[],
    );
    assert_eq!(s, 200, "{b}");
    assert_eq!(
        b,
        r#"{"reactor":"default","triggered":"inbox","receiptsAdded":3,"data":{"id":"item-1","body":"hi"},"dataDelivered":true}"#
    );
    // The same arrival again: not delivered, the wake memo-skips.
    let (_, b, _) = call(
        &h,
        "POST",
        "/trigger/inbox",
        Some(r#"{"body":"hi","id":"item-1"}"#),
        &[],
    );
    assert_eq!(
        b,
        r#"{"reactor":"default","triggered":"inbox","receiptsAdded":1,"data":{"body":"hi","id":"item-1"},"dataDelivered":false}"#
    );
    // Data to a non-gateway is echoed, not delivered; no body → no data members.
    let (_, b, _) = call(&h, "POST", "/trigger/digest", Some("[1]"), &[]);
    assert!(b.ends_with(r#""data":[1],"dataDelivered":false}"#), "{b}");
    let (_, b, _) = call(&h, "POST", "/trigger/digest", None, &[]);
    assert_eq!(keys(&b), ["reactor", "triggered", "receiptsAdded"]);
    let (_, b, _) = call(&h, "GET", "/status", None, &[]);
    assert_eq!(
        keys(&b),
        ["reactor", "nodes", "queueDepth", "cost", "inFlight"]
    );
    assert!(b.ends_with(r#","inFlight":[]}"#), "{b}");
    let v = json::parse_str(&b).unwrap();
    assert_eq!(v.get("nodes").and_then(Value::as_f64), Some(2.0));
    assert_eq!(v.get("queueDepth").and_then(Value::as_f64), Some(0.0));
    let (_, b, _) = call(&h, "GET", "/cost", None, &[]);
    assert_eq!(
        keys(&b),
        [
            "reactor",
            "total",
            "byNode",
            "bySurpriseCause",
            "dispositions",
            "receipts"
        ]
    );
    let cost = json::parse_str(&b).unwrap();
    // 3 (first trigger) + 1 (duplicate: inbox skips) + 1 + 1 (digest wakes skip).
    assert_eq!(cost.get("receipts").and_then(Value::as_f64), Some(6.0));
    let (_, b, _) = call(&h, "GET", "/receipts", None, &[]);
    let v = json::parse_str(&b).unwrap();
    let receipts = v.get("receipts").unwrap().as_array().unwrap();
    assert_eq!(receipts.len(), 6);
    assert_eq!(receipts[0].as_object().unwrap().len(), 13);
    // The receipts are exactly the ledger's bytes.
    let ledger =
        std::fs::read_to_string(h.hosted[0].reactor.state_dir().join("receipts.json")).unwrap();
    assert_eq!(
        format!("{}\n", json::compact_string(v.get("receipts").unwrap())),
        ledger
    );
    let (s, b, _) = call(&h, "GET", "/nodes/digest", None, &[]);
    assert_eq!(s, 200);
    assert_eq!(
        keys(&b),
        ["reactor", "node", "fingerprints", "lastReceipt", "receipts"]
    );
    let v = json::parse_str(&b).unwrap();
    assert_eq!(v.get("receipts").and_then(Value::as_f64), Some(3.0));
    assert_eq!(
        v.get("fingerprints").unwrap().get("@atomic"),
        v.get("lastReceipt")
            .unwrap()
            .get("fingerprints")
            .unwrap()
            .get("@atomic")
    );
    // ETag → 304.
    let (_, _, hs) = call(&h, "GET", "/cost", None, &[]);
    let etag = hs.iter().find(|(k, _)| k == "etag").unwrap().1.clone();
    let r = raw(
        &h,
        &format!(
            "GET /cost HTTP/1.1\r\nHost: 127.0.0.1\r\nIf-None-Match: {etag}\r\nConnection: close\r\n\r\n"
        ),
    );
    assert!(r.starts_with("HTTP/1.1 304"), "{r}");
    // Trailing slash ignored; query ignored.
    let (s, _, _) = call(&h, "GET", "/health/?x=1", None, &[]);
    assert_eq!(s, 200);
}

#[test]
fn errors_in_check_order() {
    let h = host(&["default"], None);
    let cases: Vec<(&str, &str, Option<&str>, u16, &str)> = vec![
        (
            "GET",
            "/nodes/nope",
            None,
            404,
            r#"{"error":"node 'nope' is not in reactor 'default' topology"}"#,
        ),
        (
            "POST",
            "/trigger/nope",
            Some("{"),
            404,
            r#"{"error":"node 'nope' is not in reactor 'default' topology"}"#,
        ),
        (
            "POST",
            "/trigger/inbox",
            Some("{nope"),
            400,
            r#"{"error":"invalid JSON body: "#,
        ),
        (
            "GET",
            "/nope",
            None,
            404,
            r#"{"error":"unknown route /nope"}"#,
        ),
        (
            "POST",
            "/nope",
            Some(""),
            404,
            r#"{"error":"unknown POST route /nope"}"#,
        ),
        (
            "GET",
            "/trigger/inbox",
            None,
            405,
            r#"{"error":"method GET not allowed on /trigger/inbox"}"#,
        ),
        (
            "POST",
            "/cost",
            Some(""),
            405,
            r#"{"error":"method POST not allowed on /cost"}"#,
        ),
        (
            "GET",
            "/nodes/%zz",
            None,
            400,
            r#"{"error":"invalid path encoding"}"#,
        ),
    ];
    for (m, p, body, status, prefix) in cases {
        let (s, b, _) = call(&h, m, p, body, &[]);
        assert_eq!(s, status, "{m} {p}: {b}");
        assert!(b.starts_with(prefix), "{m} {p}: {b}");
    }
    for m in ["PUT", "DELETE", "HEAD", "OPTIONS"] {
        let r = raw(
            &h,
            &format!(
                "{m} /cost HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            ),
        );
        assert!(r.starts_with("HTTP/1.1 405"), "{m}: {r}");
        assert!(
            r.to_ascii_lowercase().contains("allow: get, post"),
            "{m}: {r}"
        );
    }
    // 413 over 1 MiB, after the node check.
    let big = format!("[\"{}\"]", "x".repeat(1_048_577));
    let (s, b, _) = call(&h, "POST", "/trigger/inbox", Some(&big), &[]);
    assert_eq!(
        (s, b.as_str()),
        (
            413,
            r#"{"error":"request body too large (limit 1048576 bytes)"}"#
        )
    );
    let r = raw_head(
        &h,
        "POST /trigger/inbox HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 99999999999\r\n\r\n",
    );
    assert!(r.starts_with("HTTP/1.1 413"), "{r}");
    // Still serving.
    let (s, _, _) = call(&h, "GET", "/health", None, &[]);
    assert_eq!(s, 200);
}

#[test]
fn several_reactors_are_namespaced_and_isolated() {
    let h = host(&["alpha", "beta"], None);
    let (s, b, _) = call(&h, "GET", "/alpha/health", None, &[]);
    assert_eq!(
        (s, b.as_str()),
        (200, r#"{"ok":true,"reactors":2,"reactor":"alpha"}"#)
    );
    for p in ["/health", "/cost", "/nodes/inbox", "/"] {
        let (s, b, _) = call(&h, "GET", p, None, &[]);
        assert_eq!(
            (s, b.as_str()),
            (
                404,
                r#"{"error":"multi-reactor host: prefix the path with /<reactor> (reactors: alpha, beta)"}"#
            ),
            "{p}"
        );
    }
    let (s, b, _) = call(&h, "GET", "/gamma/cost", None, &[]);
    assert_eq!(
        (s, b.as_str()),
        (404, r#"{"error":"no such reactor: gamma"}"#)
    );
    let beta_ledger = std::fs::read(h.hosted[1].reactor.state_dir().join("receipts.json")).unwrap();
    let (s, b, _) = call(
        &h,
        "POST",
        "/alpha/trigger/inbox",
        Some(r#"{"id":"a1"}"#),
        &[],
    );
    assert_eq!(s, 200, "{b}");
    assert!(
        b.starts_with(r#"{"reactor":"alpha","triggered":"inbox","receiptsAdded":3"#),
        "{b}"
    );
    assert_eq!(
        std::fs::read(h.hosted[1].reactor.state_dir().join("receipts.json")).unwrap(),
        beta_ledger
    );
    let (_, b, _) = call(&h, "GET", "/beta/nodes/digest", None, &[]);
    assert!(
        b.contains("\"lastReceipt\":null") && b.ends_with("\"receipts\":0}"),
        "{b}"
    );
}

#[test]
fn bearer_token_when_enabled() {
    let token = "0123456789abcdef-token";
    let h = host(&["default"], Some(token));
    let (s, _, _) = call(&h, "GET", "/health", None, &[]);
    assert_eq!(s, 200, "health is exempt");
    let (s, b, hs) = call(&h, "GET", "/cost", None, &[]);
    assert_eq!(
        (s, b.as_str()),
        (401, r#"{"error":"missing or invalid bearer token"}"#)
    );
    assert!(
        hs.iter()
            .any(|(k, v)| k == "www-authenticate" && v == "Bearer realm=\"reactor\"")
    );
    let (s, _, _) = call(
        &h,
        "GET",
        "/cost",
        None,
        &[("Authorization", "Bearer wrong-token-wrong-token")],
    );
    assert_eq!(s, 401);
    let (s, _, _) = call(&h, "POST", "/trigger/inbox", None, &[]);
    assert_eq!(s, 401);
    let auth = format!("Bearer {token}");
    let (s, _, _) = call(&h, "GET", "/cost", None, &[("Authorization", &auth)]);
    assert_eq!(s, 200);
    let (s, _, _) = call(
        &h,
        "POST",
        "/trigger/inbox",
        None,
        &[("Authorization", &auth)],
    );
    assert_eq!(s, 200);
}

/// Concurrency 1 and 2 commit identical ledgers (HOST.md §9.2): the same triggers, interleaved
/// across two reactors, through pools of different sizes.
#[test]
fn concurrency_1_and_2_give_identical_fingerprints() {
    use reactor::host::hosted::external_wake;
    let mut ledgers: Vec<Vec<Vec<u8>>> = Vec::new();
    for concurrency in [1, 2] {
        let dirs: Vec<tempfile::TempDir> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
        let hosted: Vec<Arc<HostedReactor>> = dirs
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let (r, _) =
                    Reactor::open(d.path(), pair_ir(), script(), ReactorOptions::default())
                        .unwrap();
                Arc::new(HostedReactor::new(&format!("r{i}"), i, Arc::new(r), vec![]))
            })
            .collect();
        let pool = TaskPool::new(2, concurrency);
        let mut rxs = Vec::new();
        for k in 0..6 {
            for h in &hosted {
                let h = h.clone();
                let data = json::parse_str(&format!("{{\"id\":\"e{k}\",\"n\":{k}}}")).unwrap();
                rxs.push(pool.submit(h.index, move || {
                    external_wake(&h, "inbox", Some(&data)).map(|o| o.receipts_added)
                }));
            }
        }
        for rx in rxs {
            assert_eq!(rx.recv().unwrap().unwrap().unwrap(), 3);
        }
        pool.wait_idle();
        ledgers.push(
            dirs.iter()
                .map(|d| std::fs::read(d.path().join("receipts.json")).unwrap())
                .collect(),
        );
    }
    assert_eq!(ledgers[0], ledgers[1]);
    assert_eq!(
        ledgers[0][0], ledgers[0][1],
        "the two reactors ran the same script"
    );
}
