//! The `http` room over real loopback sockets: ureq 3 for well-formed traffic, raw `TcpStream`s
//! for hostile requests. Intervals are shortened through the configuration so every test runs in
//! well under a few seconds.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use reactor::http::{
    BearerAuth, BindError, Request, Response, Router, SecondSignal, Server, ServerConfig,
    SseConfig, SseEvent, SseHub, StaticAssets, etag_for, install_stop_signals,
};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// helpers

fn config() -> ServerConfig {
    ServerConfig {
        host: "127.0.0.1".to_owned(),
        port: 0,
        ..ServerConfig::default()
    }
}

fn start(router: Router) -> Server {
    Server::start(config(), router).expect("bind 127.0.0.1:0")
}

fn url(server: &Server, path: &str) -> String {
    format!("http://{}{}", server.local_addr(), path)
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(5)))
        .build()
        .into()
}

fn stream_agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_per_read(Some(Duration::from_secs(5)))
        .build()
        .into()
}

struct Got {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Got {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {:?}", self.body))
    }
}

fn got(mut resp: ureq::http::Response<ureq::Body>) -> Got {
    let status = resp.status().as_u16();
    let headers = resp
        .headers()
        .iter()
        .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    let body = resp.body_mut().read_to_string().unwrap_or_default();
    Got {
        status,
        headers,
        body,
    }
}

fn get(server: &Server, path: &str) -> Got {
    got(agent().get(url(server, path)).call().expect("request"))
}

fn method(server: &Server, m: &str, path: &str) -> Got {
    let rq = ureq::http::Request::builder()
        .method(m)
        .uri(url(server, path))
        .body(())
        .unwrap();
    got(agent().run(rq).expect("request"))
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

/// Reads a response's status line and headers only.
fn read_head(reader: &mut impl BufRead) -> Option<Got> {
    let mut status_line = String::new();
    reader.read_line(&mut status_line).ok()?;
    let status = status_line.split(' ').nth(1)?.parse().ok()?;
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (n, v) = line.split_once(':')?;
        headers.push((n.trim().to_ascii_lowercase(), v.trim().to_owned()));
    }
    Some(Got {
        status,
        headers,
        body: String::new(),
    })
}

/// Reads one HTTP response (content-length or chunked framing) from a raw stream.
fn read_response(reader: &mut impl BufRead) -> Option<Got> {
    let mut status_line = String::new();
    reader.read_line(&mut status_line).ok()?;
    let status = status_line.split(' ').nth(1)?.parse().ok()?;
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (n, v) = line.split_once(':')?;
        headers.push((n.trim().to_ascii_lowercase(), v.trim().to_owned()));
    }
    let mut got = Got {
        status,
        headers,
        body: String::new(),
    };
    if status == 304 {
        return Some(got);
    }
    let mut body = Vec::new();
    if got.header("transfer-encoding") == Some("chunked") {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let n = usize::from_str_radix(size.trim(), 16).ok()?;
            let mut chunk = vec![0; n + 2];
            reader.read_exact(&mut chunk).ok()?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    } else {
        let n: usize = got.header("content-length")?.parse().ok()?;
        body.resize(n, 0);
        reader.read_exact(&mut body).ok()?;
    }
    got.body = String::from_utf8_lossy(&body).into_owned();
    Some(got)
}

/// Sends raw bytes on a fresh connection and reads one response.
fn raw(addr: SocketAddr, bytes: &[u8]) -> Option<Got> {
    let mut s = connect(addr);
    s.write_all(bytes).ok()?;
    read_response(&mut BufReader::new(s))
}

fn raw_get(addr: SocketAddr, target: &str, host: &str) -> Got {
    raw(
        addr,
        format!("GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .unwrap_or_else(|| panic!("no response for {target}"))
}

fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(3);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A router shaped like the viewer's (VIEWER.md §6.2) without its domain.
fn viewer_like(hub: Option<SseHub>) -> Router {
    static FILES: &[(&str, &[u8])] = &[
        ("index.html", b"<!doctype html><title>t</title>"),
        ("app.js", b"console.log('app')"),
        ("app.css", b"body{}"),
    ];
    let assets = Arc::new(StaticAssets::from_pairs(FILES).with_header(
        "index.html",
        "content-security-policy",
        "default-src 'self'",
    ));
    let mut router = Router::new()
        .only_methods(&["GET"])
        .get("/api/state", |_| {
            Response::json(200, &json!({"frames": 3, "nodes": ["a", "b"]})).with_etag()
        })
        .prefix(&["GET"], "/api/node/", |rq| {
            let id = match rq.rest_decoded() {
                Ok(id) => id,
                Err(_) => return Response::error(400, "malformed percent-encoding in node id"),
            };
            if id.is_empty() {
                return Response::error(400, "missing node id");
            }
            let version = match rq.query_param("version") {
                Ok(Some(v)) if !v.is_empty() => v,
                Ok(_) => return Response::error(400, "missing ?version="),
                Err(_) => return Response::error(400, "malformed query"),
            };
            Response::json(200, &json!({"node": id, "version": version}))
        })
        .prefix(&["GET"], "/api/", |rq| {
            Response::error_with(404, "no such endpoint", [("path", Value::from(rq.path()))])
        })
        .get("/panic", |_| panic!("handler bug"))
        .fallback(move |rq| assets.respond_or_404(rq.path()));
    if let Some(hub) = hub {
        router = router.get("/events", move |_| {
            hub.respond(&[SseEvent::comment("connected"), SseEvent::retry(3000)])
        });
    }
    router
}

// ---------------------------------------------------------------------------------------------
// routing, methods, decoding

#[test]
fn routes_json_and_standard_headers() {
    let server = start(viewer_like(None));
    let r = get(&server, "/api/state");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("content-type"),
        Some("application/json; charset=utf-8")
    );
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(r.header("cache-control"), Some("no-cache"));
    assert_eq!(r.body, r#"{"frames":3,"nodes":["a","b"]}"#);

    let r = get(&server, "/api/node/a%2Fb%3Ac+d?version=v+1&version=2");
    assert_eq!(r.status, 200);
    assert_eq!(r.json(), json!({"node": "a/b:c+d", "version": "v 1"}));

    let r = get(&server, "/api/node/");
    assert_eq!(
        (r.status, r.json()),
        (400, json!({"error": "missing node id"}))
    );
    let r = get(&server, "/api/node");
    assert_eq!(
        (r.status, r.json()),
        (
            404,
            json!({"error": "no such endpoint", "path": "/api/node"})
        )
    );
    let r = get(&server, "/api/node/x");
    assert_eq!(r.status, 400);

    let r = get(&server, "/");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(
        r.header("content-security-policy"),
        Some("default-src 'self'")
    );
    assert_eq!(r.body, "<!doctype html><title>t</title>");
    let r = get(&server, "/app.js");
    assert_eq!(
        r.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    let r = get(&server, "/nope.txt");
    assert_eq!((r.status, r.body.as_str()), (404, "Not found"));
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
    assert!(server.close().is_clean());
}

#[test]
fn non_get_methods_are_405_with_allow() {
    let server = start(viewer_like(None));
    for m in ["POST", "OPTIONS", "DELETE", "PUT", "PATCH"] {
        for path in ["/api/state", "/", "/no/such/path"] {
            let r = method(&server, m, path);
            assert_eq!(r.status, 405, "{m} {path}");
            assert_eq!(r.header("allow"), Some("GET"), "{m} {path}");
            assert_eq!(
                r.json(),
                json!({"error": format!("method {m} not allowed")})
            );
            assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
        }
    }
    // HEAD: same status and allow, and (per HTTP) no body bytes.
    let mut s = connect(server.local_addr());
    s.write_all(b"HEAD /api/state HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reader = BufReader::new(s);
    let r = read_head(&mut reader).unwrap();
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("GET"));
    let mut rest = Vec::new();
    let _ = reader.read_to_end(&mut rest);
    assert!(rest.is_empty(), "HEAD response carried a body: {rest:?}");
    // A made-up method token is answered the same way.
    let r = raw(
        server.local_addr(),
        b"BREW /api/state HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    assert_eq!(r.status, 405);
    assert_eq!(r.json(), json!({"error": "method BREW not allowed"}));
}

#[test]
fn daemon_style_methods_and_bodies() {
    // HOST.md §10: GET and POST served; per-route 405 names the path; POST bodies read lazily.
    let router = Router::new()
        .only_methods(&["GET", "POST"])
        .get("/health", |_| Response::json(200, &json!({"ok": true})))
        .prefix(&["POST"], "/trigger/", |rq| {
            let node = rq.rest_decoded().unwrap_or_default();
            if node != "inbox" {
                return Response::error(404, &format!("node '{node}' is not in topology"));
            }
            match rq.read_json() {
                Ok(data) => Response::json(200, &json!({"triggered": node, "data": data})),
                Err(e) => e.to_response(),
            }
        });
    let server = Server::start(
        ServerConfig {
            body_limit: 1024 * 64,
            ..config()
        },
        router,
    )
    .unwrap();
    let r = method(&server, "DELETE", "/health");
    assert_eq!((r.status, r.header("allow")), (405, Some("GET, POST")));
    assert_eq!(r.json(), json!({"error": "method DELETE not allowed"}));
    let r = method(&server, "POST", "/health");
    assert_eq!((r.status, r.header("allow")), (405, Some("GET")));
    assert_eq!(
        r.json(),
        json!({"error": "method POST not allowed on /health"})
    );
    let r = get(&server, "/trigger/inbox");
    assert_eq!((r.status, r.header("allow")), (405, Some("POST")));

    let a = agent();
    let r = got(a
        .post(url(&server, "/trigger/inbox"))
        .send(r#"{"id":"x"}"#)
        .unwrap());
    assert_eq!(r.json(), json!({"triggered": "inbox", "data": {"id": "x"}}));
    let r = got(a.post(url(&server, "/trigger/inbox")).send_empty().unwrap());
    assert_eq!(r.json(), json!({"triggered": "inbox", "data": null}));
    let r = got(a
        .post(url(&server, "/trigger/inbox"))
        .send("{nope")
        .unwrap());
    assert_eq!(r.status, 400);
    assert!(
        r.json()["error"]
            .as_str()
            .unwrap()
            .starts_with("invalid JSON body: ")
    );
    // Node check before the body (HOST.md §10.5 check order): a huge body to an unknown node
    // is a 404, and the connection stays usable for the next request.
    let big = vec![b'x'; 200_000];
    let r = got(a
        .post(url(&server, "/trigger/other"))
        .send(&big[..])
        .unwrap());
    assert_eq!(r.status, 404);
    let r = got(a
        .post(url(&server, "/trigger/inbox"))
        .send(&big[..])
        .unwrap());
    assert_eq!(r.status, 413);
    assert_eq!(r.header("connection"), Some("close"));
    assert_eq!(
        r.json(),
        json!({"error": "request body too large (limit 65536 bytes)"})
    );
    let r = get(&server, "/health");
    assert_eq!(r.status, 200);
}

#[test]
fn malformed_percent_encoding_is_400() {
    let server = start(viewer_like(None));
    for target in [
        "/api/node/%zz?version=1",
        "/api/node/%?version=1",
        "/api/node/a%2?version=1",
        "/api/node/%FF?version=1",
        "/api/node/%C3%28?version=1",
    ] {
        let r = raw_get(server.local_addr(), target, "127.0.0.1");
        assert_eq!(r.status, 400, "{target}");
        assert_eq!(
            r.json(),
            json!({"error": "malformed percent-encoding in node id"}),
            "{target}"
        );
    }
    let r = raw_get(server.local_addr(), "/api/node/a?version=%G1", "127.0.0.1");
    assert_eq!(
        (r.status, r.json()),
        (400, json!({"error": "malformed query"}))
    );
    let r = raw_get(server.local_addr(), "/api/node/a?version=", "127.0.0.1");
    assert_eq!(
        (r.status, r.json()),
        (400, json!({"error": "missing ?version="}))
    );
}

#[test]
fn traversal_attempts_are_404_and_never_the_file_system() {
    let server = start(viewer_like(None));
    let addr = server.local_addr();
    for target in [
        "/../../Cargo.toml",
        "/%2e%2e/%2e%2e/Cargo.toml",
        "/..%2f..%2fCargo.toml",
        "/..\\..\\Cargo.toml",
        "/%2E%2E%5C%2E%2E%5CCargo.toml",
        "/Cargo.toml",
        "/src/lib.rs",
        "/tests/http_layer.rs",
        "//etc/passwd",
        "/./../etc/passwd",
        "/%61pp.js",
        "/index.html%00",
    ] {
        let r = raw_get(addr, target, "127.0.0.1");
        assert_eq!((r.status, r.body.as_str()), (404, "Not found"), "{target}");
        assert!(!r.body.contains("[package]"));
    }
    // Normalization without decoding: `..` pops, so these name embedded assets.
    let r = raw_get(addr, "/../../app.js", "127.0.0.1");
    assert_eq!((r.status, r.body.as_str()), (200, "console.log('app')"));
    let r = raw_get(addr, "//app.js/", "127.0.0.1");
    assert_eq!((r.status, r.body.as_str()), (200, "console.log('app')"));
    let r = raw_get(addr, "/x/./../index.html", "127.0.0.1");
    assert_eq!(r.status, 200);
    assert!(r.body.starts_with("<!doctype html>"));
}

#[test]
fn handler_panic_is_500_and_the_server_survives() {
    let server = start(viewer_like(None));
    let r = get(&server, "/panic");
    assert_eq!(
        (r.status, r.json()),
        (500, json!({"error": "internal error"}))
    );
    assert_eq!(get(&server, "/api/state").status, 200);
}

// ---------------------------------------------------------------------------------------------
// bodies and hostile input

#[test]
fn oversized_bodies_are_413() {
    let server = Server::start(
        ServerConfig {
            body_limit: 1000,
            ..config()
        },
        Router::new().route(&["GET", "POST"], "/echo", |rq| match rq.read_body() {
            Ok(b) => Response::json(200, &json!({"len": b.len()})),
            Err(e) => e.to_response(),
        }),
    )
    .unwrap();
    let addr = server.local_addr();
    let a = agent();
    let r = got(a
        .post(url(&server, "/echo"))
        .send(&[b'a'; 1000][..])
        .unwrap());
    assert_eq!(r.json(), json!({"len": 1000}));
    let r = got(a
        .post(url(&server, "/echo"))
        .send(&[b'a'; 1001][..])
        .unwrap());
    assert_eq!(r.status, 413);
    assert_eq!(
        r.json(),
        json!({"error": "request body too large (limit 1000 bytes)"})
    );
    // A 3 MB upload from a client that sends everything before reading still gets its 413.
    let r = got(a
        .post(url(&server, "/echo"))
        .send(&vec![b'a'; 3_000_000][..])
        .unwrap());
    assert_eq!(r.status, 413);

    // GET bodies are read and discarded by the router: within the limit they are ignored…
    let mut req = b"GET /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: 900\r\n\r\n".to_vec();
    req.extend_from_slice(&[b'g'; 900]);
    let r = raw(addr, &req).unwrap();
    assert_eq!((r.status, r.json()), (200, json!({"len": 0})));
    // …and over it they are a 413.
    let mut req = b"GET /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: 1500\r\n\r\n".to_vec();
    req.extend_from_slice(&[b'g'; 1500]);
    assert_eq!(raw(addr, &req).unwrap().status, 413);

    // A chunked body growing past the limit.
    let mut s = connect(addr);
    s.write_all(b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n")
        .unwrap();
    for _ in 0..3 {
        s.write_all(b"1F4\r\n").unwrap();
        s.write_all(&[b'c'; 500]).unwrap();
        s.write_all(b"\r\n").unwrap();
    }
    s.write_all(b"0\r\n\r\n").unwrap();
    let r = read_response(&mut BufReader::new(s)).unwrap();
    assert_eq!(r.status, 413);

    // A malformed chunked body is a 400, not a panic.
    let r = raw(
        addr,
        b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
    )
    .unwrap();
    assert_eq!(r.status, 400);
    assert_eq!(get(&server, "/echo").status, 200);
}

#[test]
fn absurd_content_length_does_not_abort_the_process() {
    // tiny_http 0.12 would allocate the declared length to discard it; the gate passes on at most
    // 64 MiB + 1 as declared, and the server answers, closes the connection and keeps running.
    let server = Server::start(
        ServerConfig {
            body_limit: 1000,
            ..config()
        },
        Router::new()
            .only_methods(&["GET", "POST"])
            .route(&["GET", "POST"], "/echo", |rq| match rq.read_body() {
                Ok(b) => Response::json(200, &json!({"len": b.len()})),
                Err(e) => e.to_response(),
            })
            .get("/other", |_| Response::text(200, "ok")),
    )
    .unwrap();
    let addr = server.local_addr();
    for (i, (request, status)) in [
        // 2^62: no machine could reserve it.
        ("POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 4611686018427387904\r\n\r\nabc", 413),
        // Above isize::MAX.
        ("GET /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 18446744073709551615\r\n\r\n", 413),
        // 1 GB, unread because the route, method or host is refused first.
        ("POST /other HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000000\r\n\r\n", 405),
        ("DELETE /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000000\r\n\r\n", 405),
        ("POST /nowhere HTTP/1.1\r\nHost: evil.example\r\nContent-Length: 1000000000\r\n\r\n", 403),
        // With `Expect: 100-continue` the 413 comes before any `100 Continue`.
        ("POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n", 413),
    ]
    .iter()
    .enumerate()
    {
        let mut s = connect(addr);
        s.write_all(request.as_bytes()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut reader = BufReader::new(s.try_clone().unwrap());
        let r = read_head(&mut reader).unwrap_or_else(|| panic!("no response to #{i}"));
        assert_eq!(r.status, *status, "#{i}");
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(r.header("connection"), Some("close"), "#{i}");
        // The connection is closed by the server (end of input, not the read timeout).
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).unwrap_or_else(|e| panic!("#{i}: {e}"));
    }
    assert!(server.closed_connections() >= 6);
    wait_until("no request in flight", || server.in_flight() == 0);
    assert_eq!(get(&server, "/other").body, "ok");
    let report = server.close();
    assert!(report.is_clean(), "{report:?}");
}

#[test]
fn hostile_request_heads_do_not_kill_the_server() {
    let server = start(viewer_like(None));
    let addr = server.local_addr();
    let huge_header = format!(
        "GET /api/state HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: {}\r\nConnection: close\r\n\r\n",
        "a".repeat(1 << 20)
    );
    let mut flood = String::from("GET /api/state HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    for i in 0..20_000 {
        flood.push_str(&format!("X-H{i}: v\r\n"));
    }
    flood.push_str("Connection: close\r\n\r\n");
    let huge_target = format!(
        "GET /{} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
        "%".repeat(1 << 20)
    );
    // Each input with the status line it gets (`None`: the connection ends unanswered).
    let hostile: Vec<(Vec<u8>, Option<u16>)> = vec![
        (b"garbage\r\n\r\n".to_vec(), Some(400)),
        (b"\r\n\r\n".to_vec(), None),
        (b"GET\r\n\r\n".to_vec(), Some(400)),
        (b"GET / HTTP/9.9\r\n\r\n".to_vec(), Some(505)),
        (b"GET / HTTP/2.0\r\nHost: 127.0.0.1\r\n\r\n".to_vec(), Some(505)),
        (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec(), None),
        (b"GET / HTTP/1.1\r\nNo colon here\r\n\r\n".to_vec(), Some(400)),
        (b"GET / HTTP/1.1\r\nX-Bin: \xff\xfe\x00\r\n\r\n".to_vec(), Some(400)),
        (b"G\xc3\xa9T / HTTP/1.1\r\n\r\n".to_vec(), Some(400)),
        (b"GET http://evil.example/app.js HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".to_vec(), Some(404)),
        (b"GET * HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".to_vec(), Some(404)),
        (b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: bogus\r\n\r\n".to_vec(), Some(417)),
        (b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -5\r\nConnection: close\r\n\r\n".to_vec(), Some(400)),
        (b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nTE: chunked;q=x, gzip;q=\r\nConnection: close\r\n\r\n".to_vec(), Some(200)),
        (b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nIf-None-Match: ,,,W/\r\nConnection: close\r\n\r\n".to_vec(), Some(200)),
        // The body ends early: tiny_http gives up on the request unanswered.
        (b"GET /api/state HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\nshort".to_vec(), None),
        (huge_header.into_bytes(), Some(431)),
        (flood.into_bytes(), Some(431)),
        (huge_target.into_bytes(), Some(431)),
    ];
    for (i, (bytes, expected)) in hostile.iter().enumerate() {
        let mut s = connect(addr);
        let _ = s.write_all(bytes);
        // Half-close so requests that wait for more bytes see the end of input.
        let _ = s.shutdown(std::net::Shutdown::Write);
        // Every input ends with an answer or an end of input, well before the read timeout.
        let mut out = Vec::new();
        s.read_to_end(&mut out)
            .unwrap_or_else(|e| panic!("#{i}: the server kept the connection open: {e}"));
        let out = String::from_utf8_lossy(&out);
        match expected {
            Some(status) => assert!(
                out.starts_with(&format!("HTTP/1.1 {status} ")),
                "#{i}: {out:?}"
            ),
            None => assert_eq!(out, "", "#{i}"),
        }
        let r = get(&server, "/api/state");
        assert_eq!(r.status, 200, "server broken after hostile input #{i}");
    }
    // A client that connects and vanishes, and one that sends half a head and stalls.
    drop(connect(addr));
    let mut stalled = connect(addr);
    stalled.write_all(b"GET /api/sta").unwrap();
    assert_eq!(get(&server, "/api/state").status, 200);
    drop(stalled);
    assert!(server.close().is_clean());
}

// ---------------------------------------------------------------------------------------------
// the gate in front of tiny_http

fn echo_server(io_timeout: Duration) -> Server {
    Server::start(
        ServerConfig {
            body_limit: 1000,
            io_timeout,
            ..config()
        },
        Router::new()
            .route(&["GET", "POST"], "/echo", |rq| match rq.read_body() {
                Ok(b) => Response::json(200, &json!({"len": b.len()})),
                Err(e) => e.to_response(),
            })
            .get("/peer", |rq| {
                Response::text(
                    200,
                    &rq.remote_addr().map(|a| a.to_string()).unwrap_or_default(),
                )
            }),
    )
    .unwrap()
}

#[test]
fn keep_alive_and_pipelined_requests_pass_through_the_gate() {
    let server = echo_server(Duration::from_secs(30));
    let mut s = connect(server.local_addr());
    // Three pipelined requests: a Content-Length body, a chunked body, no body.
    s.write_all(
        b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n\r\nhello\
          POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\n\r\n\
          GET /echo HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    )
    .unwrap();
    let mut reader = BufReader::new(s.try_clone().unwrap());
    for len in [5, 5, 0] {
        let r = read_response(&mut reader).expect("a response");
        assert_eq!((r.status, r.json()), (200, json!({"len": len})));
    }
    // The connection stays open for the next request.
    s.write_all(b"GET /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let r = read_response(&mut reader).unwrap();
    assert_eq!(r.status, 200);
    let mut rest = Vec::new();
    reader.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "{rest:?}");
}

#[test]
fn request_heads_are_bounded() {
    let server = echo_server(Duration::from_secs(30));
    let addr = server.local_addr();
    let head = |total: usize| {
        let start = "GET /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nX-Pad: ";
        let pad = total - start.len() - 4;
        format!("{start}{}\r\n\r\n", "p".repeat(pad))
    };
    assert_eq!(head(reactor::http::MAX_HEAD_BYTES).len(), 65_536);
    let r = raw(addr, head(reactor::http::MAX_HEAD_BYTES).as_bytes()).unwrap();
    assert_eq!(r.status, 200);
    let r = raw(addr, head(reactor::http::MAX_HEAD_BYTES + 1).as_bytes()).unwrap();
    assert_eq!(r.status, 431);
    assert_eq!(r.header("connection"), Some("close"));
    assert_eq!(
        r.json(),
        json!({"error": "request head too large (limit 65536 bytes)"})
    );
}

#[test]
fn handlers_see_the_client_address() {
    let server = echo_server(Duration::from_secs(30));
    let mut s = connect(server.local_addr());
    let me = s.local_addr().unwrap();
    s.write_all(b"GET /peer HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let r = read_response(&mut BufReader::new(s)).unwrap();
    assert_eq!(r.body, me.to_string());
    // Any tag field a client sends is dropped by the gate.
    let r = raw(
        server.local_addr(),
        b"GET /peer HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Reactor-Gate: 1 1 10.9.9.9:1 -\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    assert!(r.body.starts_with("127.0.0.1:"), "{}", r.body);
}

#[test]
fn a_body_that_stalls_is_a_400_and_the_connection_closes() {
    let server = echo_server(Duration::from_millis(300));
    for partial in [
        &b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nA\r\n01234"[..],
        b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
        b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n",
        b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n\r\n",
    ] {
        let mut s = connect(server.local_addr());
        s.write_all(partial).unwrap();
        let mut all = String::new();
        s.read_to_string(&mut all).unwrap();
        let last = all.rfind("HTTP/1.1 ").unwrap_or(0);
        assert!(all[last..].starts_with("HTTP/1.1 400 "), "{all:?}");
        assert!(all.contains("cannot read request body: "), "{all:?}");
        assert!(all.contains("\r\nconnection: close\r\n"), "{all:?}");
    }
}

#[test]
fn expect_100_continue_within_the_limit() {
    let server = echo_server(Duration::from_secs(30));
    let mut s = connect(server.local_addr());
    s.write_all(
        b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n",
    )
    .unwrap();
    let mut reader = BufReader::new(s.try_clone().unwrap());
    let interim = read_head(&mut reader).unwrap();
    assert_eq!(interim.status, 100);
    s.write_all(b"hello").unwrap();
    let r = read_response(&mut reader).unwrap();
    assert_eq!((r.status, r.json()), (200, json!({"len": 5})));
}

#[test]
fn an_unread_chunked_body_closes_its_connection_without_a_stray_answer() {
    let server = echo_server(Duration::from_secs(30));
    let mut s = connect(server.local_addr());
    // `/peer` does not read bodies: the rest of the chunked body must never be taken for the
    // next request, and the pipelined request behind it is not answered.
    s.write_all(
        b"POST /peer HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n\
          1A\r\nGET /echo HTTP/1.1\r\nX: y\r\n\r\n0\r\n\r\n\
          GET /echo HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    )
    .unwrap();
    let mut all = String::new();
    s.read_to_string(&mut all).unwrap();
    assert!(all.starts_with("HTTP/1.1 405 "), "{all:?}");
    assert!(all.contains("\r\nconnection: close\r\n"), "{all:?}");
    assert_eq!(all.matches("HTTP/1.1 ").count(), 1, "{all:?}");
}

// ---------------------------------------------------------------------------------------------
// host check, auth, etag, busy

#[test]
fn host_check_on_loopback_binds() {
    let server = start(viewer_like(None));
    assert!(server.checks_host());
    let addr = server.local_addr();
    for host in [
        "evil.example",
        "evil.example:80",
        "localhost.evil.example",
        "127.0.0.1.nip.io",
        "[::2]:1",
        "0.0.0.0",
    ] {
        let r = raw_get(addr, "/api/state", host);
        assert_eq!(r.status, 403, "{host}");
        assert_eq!(r.json(), json!({"error": "forbidden host"}));
        // The check guards every path, static assets included.
        assert_eq!(raw_get(addr, "/", host).status, 403, "{host}");
    }
    let port = addr.port();
    for host in [
        "localhost".to_owned(),
        format!("localhost:{port}"),
        "127.0.0.1".to_owned(),
        format!("127.0.0.1:{port}"),
        "127.0.0.2:9".to_owned(),
        "[::1]".to_owned(),
        "[::1]:8080".to_owned(),
    ] {
        assert_eq!(raw_get(addr, "/api/state", &host).status, 200, "{host}");
    }
    // The configured --host string is allowed too, with any port.
    let named = Server::start(
        ServerConfig {
            host: "localhost".to_owned(),
            ..config()
        },
        viewer_like(None),
    )
    .unwrap();
    assert!(named.checks_host());
    assert_eq!(raw_get(named.local_addr(), "/", "LOCALHOST:1").status, 200);
    // Switched off: anything goes.
    let open = Server::start(
        ServerConfig {
            host_check: false,
            ..config()
        },
        viewer_like(None),
    )
    .unwrap();
    assert!(!open.checks_host());
    assert_eq!(raw_get(open.local_addr(), "/", "evil.example").status, 200);
}

#[test]
fn bearer_token_required_except_exemptions() {
    let token = "0123456789abcdef-token";
    let router = Router::new()
        .only_methods(&["GET", "POST"])
        .bearer_auth(
            BearerAuth::new(token)
                .with_exemption(|m, p| m == "GET" && (p == "/health" || p.ends_with("/health"))),
        )
        .get("/health", |_| Response::json(200, &json!({"ok": true})))
        .get("/cost", |_| Response::json(200, &json!({"total": 1})));
    let server = start(router);
    let a = agent();
    let r = get(&server, "/cost");
    assert_eq!(r.status, 401);
    assert_eq!(
        r.header("www-authenticate"),
        Some("Bearer realm=\"reactor\"")
    );
    assert_eq!(
        r.json(),
        json!({"error": "missing or invalid bearer token"})
    );
    for bad in [
        "Bearer wrong",
        "Bearer 0123456789abcdef-toke",
        "Bearer 0123456789abcdef-token2",
        "Basic 0123456789abcdef-token",
        token,
    ] {
        let r = got(a
            .get(url(&server, "/cost"))
            .header("Authorization", bad)
            .call()
            .unwrap());
        assert_eq!(r.status, 401, "{bad}");
    }
    let r = got(a
        .get(url(&server, "/cost"))
        .header("Authorization", format!("Bearer {token}"))
        .call()
        .unwrap());
    assert_eq!((r.status, r.json()), (200, json!({"total": 1})));
    assert_eq!(get(&server, "/health").status, 200);
    // The method check comes first (HOST.md §10.5): 405, not 401.
    assert_eq!(method(&server, "PUT", "/cost").status, 405);
    // POST /health is not exempt.
    assert_eq!(method(&server, "POST", "/health").status, 401);
}

#[test]
fn etag_and_if_none_match() {
    let server = start(viewer_like(None));
    let r = get(&server, "/api/state");
    let tag = r.header("etag").unwrap().to_owned();
    assert_eq!(tag, etag_for(r.body.as_bytes()));
    assert!(tag.starts_with("\"b3-") && tag.len() == 37);
    let a = agent();
    for inm in [
        tag.clone(),
        format!("W/{tag}"),
        format!("\"zzz\", {tag}"),
        "*".to_owned(),
    ] {
        let r = got(a
            .get(url(&server, "/api/state"))
            .header("If-None-Match", &inm)
            .call()
            .unwrap());
        assert_eq!(r.status, 304, "{inm}");
        assert_eq!(r.body, "");
        assert_eq!(r.header("etag"), Some(tag.as_str()));
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    }
    let r = got(a
        .get(url(&server, "/api/state"))
        .header("If-None-Match", "\"b3-0\"")
        .call()
        .unwrap());
    assert_eq!(r.status, 200);
    // Static assets carry ETags as well, and a 304 on a keep-alive connection leaves it usable.
    let js = get(&server, "/app.js");
    let js_tag = js.header("etag").unwrap().to_owned();
    let mut s = connect(server.local_addr());
    let req = format!(
        "GET /app.js HTTP/1.1\r\nHost: 127.0.0.1\r\nIf-None-Match: {js_tag}\r\n\r\nGET /app.js HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut reader = BufReader::new(s);
    assert_eq!(read_response(&mut reader).unwrap().status, 304);
    let second = read_response(&mut reader).unwrap();
    assert_eq!(
        (second.status, second.body.as_str()),
        (200, "console.log('app')")
    );
    // Errors are never turned into 304.
    let r = got(a
        .get(url(&server, "/nope"))
        .header("If-None-Match", "*")
        .call()
        .unwrap());
    assert_eq!(r.status, 404);
}

#[test]
fn busy_limit_answers_503() {
    let (release_tx, release_rx) = crossbeam_channel::unbounded::<()>();
    let entered = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&entered);
    let router = Router::new()
        .get("/slow", move |_| {
            seen.fetch_add(1, Ordering::SeqCst);
            let _ = release_rx.recv_timeout(Duration::from_secs(5));
            Response::text(200, "done")
        })
        .get("/fast", |_| Response::text(200, "fast"));
    let server = Server::start(
        ServerConfig {
            max_in_flight: 2,
            ..config()
        },
        router,
    )
    .unwrap();
    let slow_url = url(&server, "/slow");
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let u = slow_url.clone();
            std::thread::spawn(move || got(agent().get(u).call().unwrap()))
        })
        .collect();
    wait_until("two requests in flight", || server.in_flight() == 2);
    let r = get(&server, "/fast");
    assert_eq!((r.status, r.json()), (503, json!({"error": "busy"})));
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    release_tx.send(()).unwrap();
    release_tx.send(()).unwrap();
    for w in workers {
        let r = w.join().unwrap();
        assert_eq!((r.status, r.body.as_str()), (200, "done"));
    }
    assert_eq!(entered.load(Ordering::SeqCst), 2);
    wait_until("requests finished", || server.in_flight() == 0);
    assert_eq!(get(&server, "/fast").body, "fast");
}

// ---------------------------------------------------------------------------------------------
// server-sent events and shutdown

fn sse_server(heartbeat_ms: u64, max_streams: usize, grace_ms: u64) -> (Server, SseHub) {
    let hub = SseHub::new(SseConfig {
        heartbeat: Duration::from_millis(heartbeat_ms),
        max_streams,
        ..SseConfig::default()
    });
    let server = Server::start(
        ServerConfig {
            shutdown_grace: Duration::from_millis(grace_ms),
            ..config()
        },
        viewer_like(Some(hub.clone())),
    )
    .unwrap();
    (server, hub)
}

/// Reads SSE blocks (text up to a blank line) from a streaming body.
struct SseReader {
    lines: Box<dyn BufRead + Send>,
}

impl SseReader {
    fn open(server: &Server) -> (Got, SseReader) {
        let resp = stream_agent().get(url(server, "/events")).call().unwrap();
        let status = resp.status().as_u16();
        let headers = resp
            .headers()
            .iter()
            .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
            .collect();
        let reader = resp.into_body().into_reader();
        (
            Got {
                status,
                headers,
                body: String::new(),
            },
            SseReader {
                lines: Box::new(BufReader::new(reader)),
            },
        )
    }

    /// The next block without its trailing blank line; `None` at the end of the stream.
    fn block(&mut self) -> Option<String> {
        let mut block = String::new();
        loop {
            let mut line = String::new();
            match self.lines.read_line(&mut line) {
                Ok(0) | Err(_) => return None,
                Ok(_) if line == "\n" => return Some(block),
                Ok(_) => block.push_str(&line),
            }
        }
    }
}

#[test]
fn sse_streams_events_in_order_with_heartbeats_and_a_final_event() {
    let (server, hub) = sse_server(150, 64, 1000);
    let (head, mut events) = SseReader::open(&server);
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-type"), Some("text/event-stream"));
    assert_eq!(head.header("cache-control"), Some("no-cache"));
    assert_eq!(head.header("connection"), Some("keep-alive"));
    assert_eq!(head.header("x-accel-buffering"), Some("no"));
    assert_eq!(head.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(events.block().unwrap(), ": connected\n");
    assert_eq!(events.block().unwrap(), "retry: 3000\n");
    assert_eq!(hub.stream_count(), 1);
    wait_until("stream thread running", || server.event_streams() == 1);
    for i in 0..5 {
        let data = json!({"i": i}).to_string();
        hub.broadcast(&SseEvent::new(Some("frame"), Some(&i.to_string()), &data));
    }
    hub.broadcast_all(&[SseEvent::named("summary", r#"{"frames":5}"#)]);
    for i in 0..5 {
        assert_eq!(
            events.block().unwrap(),
            format!("id: {i}\nevent: frame\ndata: {{\"i\":{i}}}\n")
        );
    }
    assert_eq!(
        events.block().unwrap(),
        "event: summary\ndata: {\"frames\":5}\n"
    );
    // Idle: only heartbeats.
    let t0 = Instant::now();
    assert_eq!(events.block().unwrap(), ": heartbeat\n");
    assert_eq!(events.block().unwrap(), ": heartbeat\n");
    assert!(t0.elapsed() < Duration::from_secs(2));

    let reader = std::thread::spawn(move || {
        let mut rest = Vec::new();
        while let Some(b) = events.block() {
            rest.push(b);
        }
        rest
    });
    let report = server.close();
    assert!(report.elapsed < Duration::from_millis(1200), "{report:?}");
    assert!(report.is_clean(), "{report:?}");
    let rest = reader.join().unwrap();
    assert_eq!(
        rest.iter()
            .filter(|b| !b.starts_with(": heartbeat"))
            .collect::<Vec<_>>(),
        vec!["event: shutdown\ndata: {}\n"]
    );
}

#[test]
fn sse_cap_answers_503() {
    let (server, hub) = sse_server(1000, 2, 1000);
    let (a_head, _a) = SseReader::open(&server);
    let (b_head, _b) = SseReader::open(&server);
    assert_eq!((a_head.status, b_head.status), (200, 200));
    assert_eq!(hub.stream_count(), 2);
    let r = get(&server, "/events");
    assert_eq!(
        (r.status, r.json()),
        (503, json!({"error": "too many event streams"}))
    );
    // Other routes are unaffected by open streams.
    assert_eq!(get(&server, "/api/state").status, 200);
    wait_until("no request in flight", || server.in_flight() == 0);
    assert_eq!(server.event_streams(), 2);
}

#[test]
fn sse_dropped_client_is_removed_silently() {
    let (server, hub) = sse_server(50, 64, 1000);
    let mut s = connect(server.local_addr());
    s.write_all(b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    let mut first = [0u8; 64];
    let n = s.read(&mut first).unwrap();
    assert!(String::from_utf8_lossy(&first[..n]).starts_with("HTTP/1.1 200"));
    wait_until("stream registered", || server.event_streams() == 1);
    drop(s);
    wait_until("dropped stream removed", || {
        hub.stream_count() == 0 && server.event_streams() == 0
    });
    assert_eq!(hub.broadcast(&SseEvent::named("x", "1")), 0);
    assert!(server.close().is_clean());
}

#[test]
fn sse_client_that_stops_reading_is_closed_by_the_send_timeout() {
    let hub = SseHub::new(SseConfig {
        heartbeat: Duration::from_millis(50),
        max_queued: usize::MAX,
        ..SseConfig::default()
    });
    let server = Server::start(
        ServerConfig {
            io_timeout: Duration::from_millis(300),
            ..config()
        },
        viewer_like(Some(hub.clone())),
    )
    .unwrap();
    // A healthy stream outlives several timeouts: heartbeats keep the socket moving.
    let (_, mut healthy) = SseReader::open(&server);
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_millis(1200) {
        assert!(healthy.block().is_some(), "the healthy stream ended");
    }
    // A client that never reads: once its socket buffers are full, the next write waits longer
    // than the send timeout and the stream is closed.
    let mut stalled = connect(server.local_addr());
    stalled
        .write_all(b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    wait_until("two streams", || server.event_streams() == 2);
    let big = "x".repeat(64 * 1024);
    let t0 = Instant::now();
    while server.event_streams() == 2 {
        hub.broadcast(&SseEvent::named("bulk", &big));
        while healthy.block().is_some_and(|b| !b.contains("bulk")) {}
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the stalled stream was never closed"
        );
    }
    assert_eq!(server.event_streams(), 1, "the healthy stream survives");
    drop(stalled);
    assert!(healthy.block().is_some());
}

#[test]
fn sse_over_http_1_0_is_close_delimited() {
    let (server, hub) = sse_server(5000, 64, 1000);
    let mut s = connect(server.local_addr());
    s.write_all(b"GET /events HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    wait_until("stream registered", || server.event_streams() == 1);
    hub.broadcast(&SseEvent::named("x", "1"));
    std::thread::sleep(Duration::from_millis(50));
    let report = server.close();
    assert!(report.is_clean());
    let mut all = String::new();
    s.read_to_string(&mut all).unwrap();
    assert!(all.starts_with("HTTP/1.0 200 OK\r\n"), "{all}");
    assert!(
        !all.to_ascii_lowercase().contains("transfer-encoding"),
        "{all}"
    );
    assert!(
        all.ends_with("\r\n\r\n: connected\n\nretry: 3000\n\nevent: x\ndata: 1\n\nevent: shutdown\ndata: {}\n\n"),
        "{all:?}"
    );
}

#[test]
fn close_returns_within_grace_even_with_idle_and_stalled_sse_clients() {
    let (server, hub) = sse_server(60_000, 64, 1000);
    // A client that reads nothing after connecting, and one that reads normally.
    let mut idle = connect(server.local_addr());
    idle.write_all(b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    let (_, mut reading) = SseReader::open(&server);
    assert_eq!(reading.block().unwrap(), ": connected\n");
    wait_until("two streams", || server.event_streams() == 2);
    let t0 = Instant::now();
    let report = server.close();
    let elapsed = t0.elapsed();
    assert!(elapsed < Duration::from_millis(1200), "{elapsed:?}");
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(reading.block().unwrap(), "retry: 3000\n");
    assert_eq!(reading.block().unwrap(), "event: shutdown\ndata: {}\n");
    assert_eq!(reading.block(), None);
    // The response ends with the last chunk; the connection itself is the client's to close.
    let mut all = Vec::new();
    let mut buf = [0u8; 4096];
    while !all.ends_with(b"\r\n0\r\n\r\n") {
        match idle.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => all.extend_from_slice(&buf[..n]),
        }
    }
    let all = String::from_utf8_lossy(&all);
    assert!(all.contains("event: shutdown\ndata: {}\n\n"), "{all:?}");
    assert!(all.ends_with("\r\n0\r\n\r\n"), "{all:?}");
    assert_eq!(hub.stream_count(), 0);
}

#[test]
fn close_lets_in_flight_requests_finish() {
    let router = Router::new().get("/slow", |_| {
        std::thread::sleep(Duration::from_millis(300));
        Response::text(200, "finished")
    });
    let server = start(router);
    let u = url(&server, "/slow");
    let client = std::thread::spawn(move || got(agent().get(u).call().unwrap()));
    wait_until("request in flight", || server.in_flight() == 1);
    let report = server.close();
    assert!(report.is_clean(), "{report:?}");
    let r = client.join().unwrap();
    assert_eq!((r.status, r.body.as_str()), (200, "finished"));
}

#[test]
fn close_cuts_off_handlers_that_outlive_the_grace_period() {
    let router = Router::new().get("/stuck", |_| {
        std::thread::sleep(Duration::from_millis(1500));
        Response::text(200, "late")
    });
    let server = Server::start(
        ServerConfig {
            shutdown_grace: Duration::from_millis(200),
            ..config()
        },
        router,
    )
    .unwrap();
    let addr = server.local_addr();
    let mut s = connect(addr);
    s.write_all(b"GET /stuck HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    wait_until("request in flight", || server.in_flight() == 1);
    let t0 = Instant::now();
    let report = server.close();
    assert!(t0.elapsed() < Duration::from_millis(700), "{report:?}");
    assert_eq!(report.cut_off_requests, 1);
    assert!(!report.is_clean());
}

#[test]
fn handle_closes_from_another_thread() {
    let server = start(viewer_like(None));
    let handle = server.handle();
    assert_eq!(handle.local_addr(), server.local_addr());
    let closer = std::thread::spawn(move || handle.close());
    let first = closer.join().unwrap();
    assert!(server.is_shutting_down());
    assert!(first.is_clean());
    // Idempotent: the owner's close returns the same report.
    assert_eq!(server.close(), first);
}

#[test]
fn closed_server_stops_accepting() {
    let server = start(viewer_like(None));
    let addr = server.local_addr();
    assert_eq!(raw_get(addr, "/api/state", "127.0.0.1").status, 200);
    let report = server.close();
    assert!(report.is_clean());
    wait_until("listener closed", || TcpStream::connect(addr).is_err());
}

#[test]
fn bind_errors_via_start() {
    let first = start(Router::new());
    let port = first.local_addr().port();
    let err = Server::start(ServerConfig { port, ..config() }, Router::new()).unwrap_err();
    assert!(
        matches!(&err, BindError::AddrInUse { port: p, .. } if *p == port),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        format!("port {port} on 127.0.0.1 is already in use")
    );
    // A name the resolver rejects before any lookup (a NUL byte), so no DNS query leaves the
    // machine: tests reach no network beyond loopback.
    let err = Server::start(
        ServerConfig {
            host: "no-such\0host".to_owned(),
            ..config()
        },
        Router::new(),
    )
    .unwrap_err();
    assert!(matches!(err, BindError::Resolve { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with("cannot resolve host \"no-such\0host\": ")
    );
}

#[test]
fn synthetic_requests_run_routers_without_sockets() {
    let router = viewer_like(None);
    let mut rq = Request::synthetic("GET", "/api/node/n%3A1?version=7", &[], Vec::new());
    let resp = router.dispatch(&mut rq);
    assert_eq!(
        resp.body_bytes().unwrap(),
        br#"{"node":"n:1","version":"7"}"#
    );
}

// ---------------------------------------------------------------------------------------------
// signals (in a child process, so the test runner keeps its own signal dispositions)

const CHILD_ENV: &str = "REACTOR_HTTP_SIGNAL_CHILD";

#[test]
#[ignore = "child-process entry point of first_signal_stops_second_signal_exits (run by that test)"]
fn signal_child_process() {
    assert!(
        std::env::var_os(CHILD_ENV).is_some(),
        "runs only as the child of first_signal_stops_second_signal_exits"
    );
    let signals = install_stop_signals(SecondSignal::Exit {
        code: 7,
        message: Some("second signal: abandoning".to_owned()),
    })
    .unwrap();
    assert!(!signals.is_requested());
    signal_hook::low_level::raise(signal_hook::consts::SIGTERM).unwrap();
    let first = signals.wait_timeout(Duration::from_secs(3));
    println!("first={first:?} requested={}", signals.is_requested());
    std::io::stdout().flush().unwrap();
    signal_hook::low_level::raise(signal_hook::consts::SIGINT).unwrap();
    std::thread::sleep(Duration::from_secs(3));
    println!("still alive");
}

#[test]
fn first_signal_stops_second_signal_exits() {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([
            "--ignored",
            "--exact",
            "http_layer::signal_child_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("first=Some(15) requested=true"), "{stdout}");
    assert!(stdout.contains("second signal: abandoning"), "{stdout}");
    assert!(!stdout.contains("still alive"), "{stdout}");
    assert_eq!(out.status.code(), Some(7), "{stdout}");
}
