//! Starting and stopping: bind errors, `close` within its grace period, and stop signals (in a
//! child process).

use super::*;

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
            "http_layer::lifecycle::signal_child_process",
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
