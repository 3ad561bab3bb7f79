//! Latency of a normal GET while 800 slowloris connections trickle request heads (issue 7 §1;
//! run with `cargo bench --bench slowloris`). The shared HTTP layer (`reactor::http::Server`, the
//! one behind the viewer and the daemon) serves a small JSON route on loopback; 800 connections
//! each send half a head and then one more header byte every 100 ms; one client issues
//! sequential GETs on fresh connections. Prints p50/p99/max without and with the slowloris and
//! their ratio (goal: p99 under 50 ms during the slowloris). Asserts nothing.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use reactor::http::{Response, Router, Server, ServerConfig, raise_open_file_limit};

const SLOW_CLIENTS: usize = 800;
const SAMPLES: usize = 2000;

fn get(addr: SocketAddr) -> Duration {
    let t0 = Instant::now();
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /api/state HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    assert!(
        out.starts_with(b"HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&out)
    );
    t0.elapsed()
}

fn percentiles(mut v: Vec<Duration>) -> (f64, f64, f64) {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let at = |q: f64| ms(v[((v.len() as f64 * q) as usize).min(v.len() - 1)]);
    (at(0.50), at(0.99), ms(*v.last().unwrap()))
}

fn main() {
    let limits = raise_open_file_limit();
    let body = serde_json::json!({"frames": 51, "nodes": ["a", "b", "c"]});
    let router = Router::new()
        .only_methods(&["GET"])
        .get("/api/state", move |_| {
            Response::json(200, &body).with_etag()
        });
    let server = Server::start(ServerConfig::default(), router).unwrap();
    let addr = server.local_addr();
    for _ in 0..50 {
        get(addr);
    }
    let quiet: Vec<Duration> = (0..SAMPLES).map(|_| get(addr)).collect();

    let mut slow: Vec<TcpStream> = (0..SLOW_CLIENTS)
        .map(|_| {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(b"GET /api/state HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                .unwrap();
            s
        })
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let trickle = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                for s in &mut slow {
                    let _ = s.write_all(b"X");
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            slow.len()
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    let loaded: Vec<Duration> = (0..SAMPLES).map(|_| get(addr)).collect();
    stop.store(true, Ordering::SeqCst);
    let held = trickle.join().unwrap();

    let (q50, q99, qmax) = percentiles(quiet);
    let (l50, l99, lmax) = percentiles(loaded);
    println!("slowloris: {held} connections trickling a head; open-file limits {limits:?}");
    println!(
        "  quiet:     p50 {q50:7.3} ms  p99 {q99:7.3} ms  max {qmax:7.3} ms  ({SAMPLES} GETs)"
    );
    println!(
        "  slowloris: p50 {l50:7.3} ms  p99 {l99:7.3} ms  max {lmax:7.3} ms  ({SAMPLES} GETs)"
    );
    println!(
        "  p99 ratio slowloris/quiet: {:.2}  (goal: slowloris p99 < 50 ms: {})",
        l99 / q99.max(1e-9),
        if l99 < 50.0 { "met" } else { "NOT met" }
    );
    server.close();
}
