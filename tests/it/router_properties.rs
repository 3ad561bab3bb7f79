//! Properties of `http::Router::dispatch` (issue 7 §5; HOST.md §10.1, VIEWER.md §6.1/§6.4) on
//! a daemon-shaped router (decoded segments, `{reactor}` restricted to hosted names, bearer
//! auth, a public health route) and a viewer-shaped one (exact and prefix routes, GET only).
//! The fuzz target `http_router` explores the same ground without bounds.

use percent_encoding::{AsciiSet, CONTROLS, NON_ALPHANUMERIC, utf8_percent_encode};
use proptest::prelude::*;
use reactor::http::{BearerAuth, Request, Response, Router, decode_path_segments, split_target};
use serde_json::{Value, json};

const TOKEN: &str = "prop-token";
/// Only what must be escaped in a path segment: the rest (non-ASCII included) stays raw.
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

fn body(r: &Response) -> Value {
    serde_json::from_slice(r.body_bytes().unwrap()).unwrap()
}

fn get(router: &Router, target: &str) -> Response {
    let auth = format!("Bearer {TOKEN}");
    let mut rq = Request::synthetic("GET", target, &[("authorization", &auth)], Vec::new());
    router.dispatch(&mut rq)
}

fn method() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec!["GET", "POST", "HEAD", "PUT", "get", "OPTIONS", ""])
            .prop_map(str::to_string),
        "\\PC{0,8}",
    ]
}

/// A path built from segments that are names, escapes (good, malformed, non-UTF-8), raw
/// non-ASCII, empty or dot segments.
fn path() -> impl Strategy<Value = String> {
    let seg = prop_oneof![
        prop::sample::select(vec![
            "r1",
            "r%202%2Fx",
            "nodes",
            "trigger",
            "health",
            "api",
            "node",
            "state",
            "%",
            "%4",
            "%zz",
            "%FF",
            "%C3%A9",
            "é",
            "",
            ".",
            "..",
            "a+b",
            "%2F",
            "?",
            "x?y=1",
        ])
        .prop_map(str::to_string),
        "[a-z%0-9]{1,6}",
    ];
    (prop::collection::vec(seg, 0..5), any::<bool>()).prop_map(|(segs, trailing)| {
        let mut p = format!("/{}", segs.join("/"));
        if trailing {
            p.push('/');
        }
        p
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any method, path and `Authorization` value gets an answer from the documented set: 405
    /// always with `allow`, 401 never on the public route, and a matched node parameter is the
    /// percent-decoding of its raw segment.
    #[test]
    fn random_requests_get_documented_answers(
        method in method(),
        path in path(),
        good_token in any::<bool>(),
        body in prop::collection::vec(any::<u8>(), 0..16),
    ) {
        let auth = if good_token { format!("Bearer {TOKEN}") } else { "Bearer nope".to_string() };
        let headers = [("authorization", auth.as_str())];
        let mut rq = Request::synthetic(&method, &path, &headers, body.clone());
        let r = daemon_like().dispatch(&mut rq);
        prop_assert!([200, 400, 401, 404, 405].contains(&r.status()), "{} {path}", r.status());
        prop_assert!(r.status() != 405 || r.header("allow").is_some());
        let segs = decode_path_segments(split_target(&path).0);
        if r.status() == 401 {
            prop_assert!(!good_token);
            let public = method == "GET"
                && segs.as_ref().is_ok_and(|s| {
                    s.len() == 2 && (s[0] == "r1" || s[0] == "r 2/x") && s[1] == "health"
                });
            prop_assert!(!public, "the public route asked for a token");
        }
        if r.status() == 200 && method == "GET" && let Some(node) = body_node(&r) {
            prop_assert_eq!(node, json!(segs.as_ref().unwrap()[2]));
        }
        if r.status() == 400 {
            prop_assert!(segs.is_err(), "400 for a path that decodes: {path}");
        }

        let mut rq = Request::synthetic(&method, &path, &headers, body);
        let r = viewer_like().dispatch(&mut rq);
        prop_assert!([200, 400, 404, 405].contains(&r.status()), "{} {path}", r.status());
        prop_assert!(r.status() != 405 || r.header("allow").is_some());
        if method != "GET" {
            prop_assert_eq!(r.status(), 405);
        }
    }

    /// Any text percent-encoded (every non-alphanumeric byte, or only what a path must escape)
    /// decodes back to itself as a pattern parameter (with or without a trailing `/`), as a
    /// prefix remainder and as a form-decoded query value (first occurrence wins).
    #[test]
    fn percent_encoded_parameters_decode_to_what_was_encoded(s in "\\PC{1,24}") {
        let query = utf8_percent_encode(&s, NON_ALPHANUMERIC).to_string();
        for set in [NON_ALPHANUMERIC, MINIMAL] {
            let enc = utf8_percent_encode(&s, set).to_string();
            let r = get(&viewer_like(), &format!("/api/node/{enc}?version={query}&version=x"));
            prop_assert_eq!(r.status(), 200);
            prop_assert_eq!(body(&r), json!({"id": s, "version": s}));
            for tail in ["", "/"] {
                let r = get(&daemon_like(), &format!("/r%202%2Fx/nodes/{enc}{tail}"));
                prop_assert_eq!(r.status(), 200, "{}", enc);
                prop_assert_eq!(body(&r), json!({"reactor": "r 2/x", "node": s}));
            }
        }
    }
}

fn body_node(r: &Response) -> Option<Value> {
    let v: Value = serde_json::from_slice(r.body_bytes()?).ok()?;
    v.get("node").cloned()
}
