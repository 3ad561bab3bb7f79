//! Unit tests of the viewer's server over loopback: routes, paged frames with their causes
//! (issue 9), events and live follow.

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

/// An HTTP/1.0 request, so that a large body comes back whole (not chunked).
fn get10(addr: std::net::SocketAddr, target: &str) -> String {
    raw(
        addr,
        &format!("GET {target} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n"),
    )
}

fn status_of(resp: &str) -> u16 {
    resp.split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn json_body(resp: &str) -> serde_json::Value {
    serde_json::from_str(body(resp))
        .unwrap_or_else(|e| panic!("{e}: {}", &resp[..resp.len().min(400)]))
}

#[test]
fn frames_pages_carry_the_snapshot_frames_and_their_causes() {
    let Ok(o) = crate::devtools::examples::open_example("masked-relay", &Default::default()) else {
        eprintln!("SKIPPED: the bundled fixtures are not generated");
        return;
    };
    let whys = crate::replay::why::explain_ledger(&o.raw, o.topology.as_ref());
    let s = start(DevToolsServerOptions {
        example: Some("masked-relay".into()),
        ..Default::default()
    });
    let a = s.local_addr();
    let state = json_body(&get10(a, "/api/state"));
    let frames = state["frames"].as_array().unwrap();
    let total = frames.len();
    assert!(total > 40);
    // Pages of 7 cover the ledger; each frame is the snapshot's plus `why`.
    let mut from = 0;
    while from < total + 7 {
        let r = get10(a, &format!("/api/frames?from={from}&count=7"));
        assert!(status_of(&r) == 200, "{r}");
        let p = json_body(&r);
        assert_eq!(p["from"], from);
        assert_eq!(p["total"], total);
        let got = p["frames"].as_array().unwrap();
        assert_eq!(got.len(), total.saturating_sub(from).min(7));
        assert_eq!(p["count"], got.len());
        for (k, f) in got.iter().enumerate() {
            let i = from + k;
            let mut plain = f.clone();
            let why = plain.as_object_mut().unwrap().remove("why").unwrap();
            assert_eq!(plain, frames[i], "frame {i}");
            let want: serde_json::Value =
                serde_json::from_slice(&json::to_js_compact(&whys[i])).unwrap();
            assert_eq!(why, want, "frame {i}");
        }
        from += 7;
    }
    // ?why=1 is the same snapshot with the same causes; ?frames=none drops the frames.
    let with_why = json_body(&get10(a, "/api/state?why=1"));
    for (i, f) in with_why["frames"].as_array().unwrap().iter().enumerate() {
        let p = json_body(&get10(a, &format!("/api/frames?from={i}&count=1")));
        assert_eq!(f, &p["frames"][0]);
    }
    let head = json_body(&get10(a, "/api/state?frames=none"));
    assert_eq!(head["frames"], serde_json::json!([]));
    assert_eq!(head["frameCount"], total);
    assert_eq!(head["chainVerify"], state["chainVerify"]);
    assert_eq!(head["costRollup"], state["costRollup"]);
}

#[test]
fn the_frame_index_rebuilds_every_frame() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("ledger");
    crate::devtools::synthetic::write_synthetic_state_dir(
        &dir,
        &crate::devtools::synthetic::SyntheticSpec {
            nodes: 30,
            receipts: 900,
            seed: 3,
        },
    )
    .unwrap();
    let s = start(DevToolsServerOptions {
        state_dir: Some(dir),
        ..Default::default()
    });
    let a = s.local_addr();
    let state = json_body(&get10(a, "/api/state"));
    let frames = state["frames"].as_array().unwrap();
    let edges = state["edges"].as_array().unwrap();
    let code_of = |f: &serde_json::Value| {
        let st = ["rendered", "skipped", "failed"];
        let src = ["input", "self", "external"];
        let pos =
            |list: &[&str], v: &serde_json::Value| list.iter().position(|x| v == x).unwrap() as u64;
        pos(&st, &f["status"])
            + 3 * pos(&src, &f["wakeSource"])
            + 9 * pos(&src, &f["cost"]["surpriseCause"])
            + if f["movedFacets"].as_array().unwrap().is_empty() {
                0
            } else {
                27
            }
    };
    let mut from = 0;
    while from < frames.len() {
        let p = json_body(&get10(
            a,
            &format!("/api/frames?form=index&from={from}&count=250"),
        ));
        let nodes = p["nodes"].as_array().unwrap();
        let mut e = 0;
        for k in 0..p["count"].as_u64().unwrap() as usize {
            let f = &frames[from + k];
            assert_eq!(nodes[p["node"][k].as_u64().unwrap() as usize], f["node"]);
            assert_eq!(
                p["code"][k].as_u64().unwrap(),
                code_of(f),
                "frame {}",
                from + k
            );
            assert_eq!(p["fresh"][k], f["cost"]["fresh"]);
            assert_eq!(p["reused"][k], f["cost"]["reused"]);
            let lit = f["edgesToLight"].as_array().unwrap();
            assert_eq!(p["lit"][k].as_u64().unwrap() as usize, lit.len());
            for l in lit {
                let idx = p["edges"][e].as_u64().unwrap() as usize;
                assert_eq!(&edges[idx], l, "frame {}", from + k);
                e += 1;
            }
        }
        assert_eq!(p["edges"].as_array().unwrap().len(), e);
        from += 250;
    }
}

#[test]
fn frames_route_refuses_hostile_queries_and_state_keeps_its_bytes() {
    let s = start(DevToolsServerOptions {
        example: Some("research-tree".into()),
        ..Default::default()
    });
    let a = s.local_addr();
    let full = get10(a, "/api/state");
    assert_eq!(status_of(&full), 200);
    let full_body = body(&full).to_string();
    let long = format!("/api/frames?from={}", "9".repeat(20_000));
    for (target, err) in [
        (
            "/api/frames?from=-1",
            "from must be a non-negative integer up to 2^53-1",
        ),
        (
            "/api/frames?count=0",
            "count must be an integer from 1 to 5000",
        ),
        (
            "/api/frames?count=5001",
            "count must be an integer from 1 to 5000",
        ),
        (
            "/api/frames?count=1e3",
            "count must be an integer from 1 to 5000",
        ),
        (
            "/api/frames?form=index&count=999999",
            "count must be an integer from 1 to 200000",
        ),
        ("/api/frames?form=csv", "form must be full or index"),
        (
            "/api/frames?from=%zz",
            "malformed percent-encoding in query",
        ),
        (
            "/api/frames?from=%00",
            "from must be a non-negative integer up to 2^53-1",
        ),
        (
            long.as_str(),
            "from must be a non-negative integer up to 2^53-1",
        ),
    ] {
        let r = get10(a, target);
        assert!(
            status_of(&r) == 400,
            "{}: {}",
            &target[..target.len().min(60)],
            &r[..r.len().min(300)]
        );
        assert_eq!(
            body(&r),
            format!("{{\"error\":\"{err}\"}}"),
            "{}",
            &target[..target.len().min(60)]
        );
    }
    // Past the end: an empty page that still names the total.
    let p = json_body(&get10(a, "/api/frames?from=9007199254740991&count=5000"));
    assert_eq!(p["frames"], serde_json::json!([]));
    assert_eq!(p["count"], 0);
    for m in ["POST", "HEAD", "OPTIONS"] {
        let r = raw(
            a,
            &format!(
                "{m} /api/frames HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            ),
        );
        assert!(status_of(&r) == 405, "{m}: {r}");
    }
    for p in ["/api/frames/", "/api/frames/1", "/api/framesx"] {
        assert!(status_of(&get10(a, p)) == 404, "{p}");
    }
    // /api/state answers the same bytes for every other query, malformed ones included.
    for target in [
        "/api/state?frames=full",
        "/api/state?frames=NONE",
        "/api/state?why=0",
        "/api/state?why=true",
        "/api/state?%zz",
        "/api/state?frames=%zz",
        "/api/snapshot",
    ] {
        assert_eq!(body(&get10(a, target)), full_body, "{target}");
    }
    let head = get10(a, "/api/state?frames=none");
    assert!(
        status_of(&head) == 200 && head.contains("etag: \"b3-"),
        "{head}"
    );
    let n = json_body(&full)["frames"].as_array().unwrap().len();
    assert!(n > 10);
    assert!(
        body(&head).ends_with(&format!(",\"frameCount\":{n}}}")),
        "{head}"
    );
}
