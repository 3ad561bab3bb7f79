//! Unit tests of the viewer's server: routes, events and live follow over loopback.

use super::*;
use crate::format::json::{self, Value};
use std::io::{Read, Write};

fn raw(addr: std::net::SocketAddr, request: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

fn body(resp: &str) -> &str {
    resp.split_once("\r\n\r\n").map_or("", |(_, b)| b)
}

fn get(addr: std::net::SocketAddr, target: &str) -> String {
    raw(
        addr,
        &format!("GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"),
    )
}

fn start(opts: DevToolsServerOptions) -> DevToolsServer {
    start_devtools_server(DevToolsServerOptions {
        port: 0,
        live: false,
        ..opts
    })
    .unwrap()
}

#[test]
fn ledger_route_names_a_directory_and_an_example() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("my-ledger");
    crate::devtools::synthetic::write_synthetic_state_dir(
        &dir,
        &crate::devtools::synthetic::SyntheticSpec {
            nodes: 4,
            receipts: 3,
            seed: 1,
        },
    )
    .unwrap();
    // A relative spelling with `..` resolves to the canonical directory.
    let given = dir.join("..").join("my-ledger");
    let s = start(DevToolsServerOptions {
        state_dir: Some(given.clone()),
        ..Default::default()
    });
    let r = get(s.local_addr(), "/api/ledger");
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    assert!(
        r.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{r}"
    );
    let want = format!(
        "{{\"stateDir\":{},\"path\":{},\"example\":null,\"synthetic\":false}}",
        json::compact_string(&Value::str(given.display().to_string())),
        json::compact_string(&Value::str(
            std::fs::canonicalize(&dir).unwrap().display().to_string()
        )),
    );
    assert_eq!(body(&r), want);
    // /api/state is untouched by the route: its stateDir is still the directory as given.
    let st = get(s.local_addr(), "/api/state");
    assert!(body(&st).starts_with(&format!(
        "{{\"stateDir\":{}",
        json::compact_string(&Value::str(given.display().to_string()))
    )));
    drop(s);

    let s = start(DevToolsServerOptions {
        example: Some("masked-relay".into()),
        ..Default::default()
    });
    let r = get(s.local_addr(), "/api/ledger");
    assert_eq!(
        body(&r),
        r#"{"stateDir":"example:masked-relay","path":null,"example":"masked-relay","synthetic":true}"#
    );
}

#[test]
fn ledger_route_refuses_other_methods_paths_and_survives_hostile_queries() {
    let s = start(DevToolsServerOptions {
        example: Some("research-tree".into()),
        ..Default::default()
    });
    let a = s.local_addr();
    let good = body(&get(a, "/api/ledger")).to_string();
    assert!(good.contains("\"example\":\"research-tree\""), "{good}");
    for m in ["POST", "PUT", "DELETE", "HEAD"] {
        let r = raw(
            a,
            &format!(
                "{m} /api/ledger HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            ),
        );
        assert!(r.starts_with("HTTP/1.1 405"), "{m}: {r}");
    }
    for p in [
        "/api/ledger/x",
        "/api/ledgers",
        "/api/ledger/../../etc/passwd",
    ] {
        let r = get(a, p);
        assert!(r.starts_with("HTTP/1.1 404"), "{p}: {r}");
        assert!(!r.contains("research-tree"), "{p}: {r}");
    }
    // Queries are ignored, however malformed or long: same body, no panic.
    let long = format!("/api/ledger?q={}", "%zz".repeat(20_000));
    for q in [
        "/api/ledger?path=/etc&example=x",
        "/api/ledger?%ff%00=1",
        long.as_str(),
    ] {
        let r = get(a, q);
        assert!(r.starts_with("HTTP/1.1 200"), "{}", &r[..r.len().min(200)]);
        assert_eq!(body(&r), good);
    }
    // A forbidden Host is refused before the route runs (DNS-rebinding defence).
    let r = raw(
        a,
        "GET /api/ledger HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n",
    );
    assert!(r.starts_with("HTTP/1.1 403"), "{r}");
    assert_eq!(body(&get(a, "/api/ledger")), good, "still serving");
}
