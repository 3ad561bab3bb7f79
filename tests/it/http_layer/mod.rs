//! The `http` room over real loopback sockets: ureq 3 for well-formed traffic, raw `TcpStream`s
//! for hostile requests. Intervals are shortened through the configuration so every test runs in
//! well under a few seconds.

mod access;
mod gate;
mod hostile;
mod lifecycle;
mod routing;
mod sse;

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
