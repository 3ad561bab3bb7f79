//! Routing, methods and decoding: JSON routes and standard headers, 405 with `Allow`, bodies of
//! daemon-style methods, percent-encoding, traversal, handler panics, synthetic requests.

use super::*;

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
