//! Server-sent events: order, heartbeats, the cap, dropped and stalled clients, HTTP/1.0.

use super::*;

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
