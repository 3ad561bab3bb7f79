//! Host check, bearer-token auth, ETags and the busy limit.

use super::*;

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
