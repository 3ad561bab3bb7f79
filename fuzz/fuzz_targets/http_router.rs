//! Request targets through the HTTP layer (HOST.md §10.1, VIEWER.md §6.1/§6.4): target
//! splitting, strict percent-decoding, form-decoded queries and `Router::dispatch` on a
//! daemon-shaped router (decoded segments, `{reactor}` restricted to hosted names, bearer auth
//! with a public health route) and a viewer-shaped one (exact and prefix routes, GET only).
//!
//! The input is split at `\n--\n` into method, target, `Authorization` value and body.
//!
//! Properties: any request gets a status from the documented set (405 always with `allow`,
//! 401 never on the public route); a matched node parameter is the percent-decoding of its raw
//! segment; any text percent-encoded (fully or minimally) decodes back to itself, as a node
//! parameter of both routers, as a prefix remainder and as a query value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use percent_encoding::{AsciiSet, CONTROLS, NON_ALPHANUMERIC, utf8_percent_encode};
use reactor::http::{
    BearerAuth, Query, Request, Response, Router, decode_path_segments, percent_decode,
    split_target,
};
use reactor_fuzz::pieces;
use serde_json::{Value, json};

const TOKEN: &str = "fuzz-token";
const MINIMAL: &AsciiSet = &CONTROLS.add(b'%').add(b'/').add(b'?').add(b'#').add(b' ');

fn daemon_like() -> Router {
    Router::new()
        .decoded_segments()
        .only_methods(&["GET", "POST"])
        .bearer_auth(BearerAuth::new(TOKEN))
        .param("reactor", |v| v == "r1" || v == "r 2/x")
        .public_route(&["GET"], "/{reactor}/health", |_| Response::text(200, "ok"))
        .get("/{reactor}/nodes/{node}", |rq| {
            Response::json(
                200,
                &json!({"reactor": rq.param("reactor"), "node": rq.param("node")}),
            )
        })
        .post("/{reactor}/trigger/{node}", |rq| match rq.read_body() {
            Ok(b) => Response::json(200, &json!({"bytes": b.len()})),
            Err(e) => e.to_response(),
        })
        .fallback(|_| Response::error(404, "no such route"))
}

fn viewer_like() -> Router {
    Router::new()
        .only_methods(&["GET"])
        .get("/api/state", |_| Response::json(200, &json!({})))
        .prefix(&["GET"], "/api/node/", |rq| {
            match (rq.rest_decoded(), rq.query_param("version")) {
                (Ok(id), Ok(v)) => Response::json(200, &json!({"id": id, "version": v})),
                _ => Response::error(400, "malformed percent-encoding"),
            }
        })
        .fallback(|_| Response::not_found_text())
}

fn body_json(r: &Response) -> Value {
    serde_json::from_slice(r.body_bytes().expect("a body")).expect("a JSON body")
}

fn get(router: &Router, target: &str) -> Response {
    let auth = format!("Bearer {TOKEN}");
    let mut rq = Request::synthetic("GET", target, &[("authorization", &auth)], Vec::new());
    router.dispatch(&mut rq)
}

fuzz_target!(|data: &[u8]| {
    let p = pieces(data, 4);
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let (method, target, auth) = (text(p[0]), text(p[1]), text(p[2]));

    let (path, query) = split_target(&target);
    assert_eq!(
        query.map_or(path.to_string(), |q| format!("{path}?{q}")),
        target
    );
    let _ = Query::parse(query.unwrap_or(""));

    let daemon = daemon_like();
    let headers = [("authorization", auth.as_str())];
    let mut rq = Request::synthetic(&method, &target, &headers, p[3].to_vec());
    let r = daemon.dispatch(&mut rq);
    assert!(
        [200, 400, 401, 404, 405, 413].contains(&r.status()),
        "{}",
        r.status()
    );
    assert!(r.status() != 405 || r.header("allow").is_some());
    let segments = decode_path_segments(path);
    if r.status() == 401 {
        let public = method == "GET"
            && segments.as_ref().is_ok_and(|s| {
                s.len() == 2 && (s[0] == "r1" || s[0] == "r 2/x") && s[1] == "health"
            });
        assert!(!public, "the public route asked for a token");
    }
    if r.status() == 200 && method == "GET" {
        let node = r
            .body_bytes()
            .and_then(|b| serde_json::from_slice::<Value>(b).ok());
        if let Some(node) = node.as_ref().and_then(|v| v.get("node")) {
            let segs = segments.expect("a matched path decodes");
            assert_eq!(node, &json!(segs[2]));
        }
    }

    let viewer = viewer_like();
    let mut rq = Request::synthetic(&method, &target, &headers, p[3].to_vec());
    let r = viewer.dispatch(&mut rq);
    assert!(
        [200, 400, 404, 405, 413].contains(&r.status()),
        "{}",
        r.status()
    );
    assert!(r.status() != 405 || r.header("allow").is_some());

    // Round trips of the target piece as a node id.
    let s = target;
    let query = utf8_percent_encode(&s, NON_ALPHANUMERIC).to_string();
    for set in [NON_ALPHANUMERIC, MINIMAL] {
        let enc = utf8_percent_encode(&s, set).to_string();
        assert_eq!(percent_decode(&enc).as_deref(), Ok(s.as_str()));
        let r = get(
            &viewer,
            &format!("/api/node/{enc}?version={query}&version=x"),
        );
        if s.is_empty() {
            continue;
        }
        assert_eq!(r.status(), 200);
        assert_eq!(body_json(&r), json!({"id": s, "version": s}));
        for tail in ["", "/"] {
            let r = get(&daemon, &format!("/r%202%2Fx/nodes/{enc}{tail}"));
            assert_eq!(r.status(), 200, "{enc}");
            assert_eq!(body_json(&r), json!({"reactor": "r 2/x", "node": s}));
        }
    }
});
