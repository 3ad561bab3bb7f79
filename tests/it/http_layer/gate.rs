//! The gate in front of tiny_http: keep-alive and pipelining, bounded heads, client addresses,
//! stalled bodies, `Expect: 100-continue`, unread chunked bodies.

use super::*;

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
