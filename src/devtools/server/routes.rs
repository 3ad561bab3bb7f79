//! The viewer's routes (VIEWER.md §6): the snapshot API, the world-model and receipt
//! inspectors, server-sent events and the embedded SPA.

use std::sync::Arc;

use include_dir::{Dir, include_dir};
use serde::Serialize;

use super::INDEX_CSP;
use super::live::{Shared, lock};
use crate::devtools::pages::parse_page_query;
use crate::format::json::{self, Value};
use crate::format::receipt::verify_receipt;
use crate::http::{Request, Response, Router, SseEvent, StaticAssets};
use crate::replay::snapshot::snapshot_head;
use crate::replay::worldmodel::read_node_world_model;

static ASSETS: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/assets");

fn json_response(status: u16, body: Vec<u8>) -> Response {
    Response::json_bytes(status, body)
}

pub(super) fn router(shared: Arc<Shared>) -> Router {
    let assets = Arc::new(StaticAssets::from_dir(&ASSETS).with_header(
        "index.html",
        "content-security-policy",
        INDEX_CSP,
    ));
    let s1 = shared.clone();
    let s2 = shared.clone();
    let s3 = shared.clone();
    let s4 = shared.clone();
    let s5 = shared.clone();
    let s6 = shared.clone();
    let state = move |req: &mut Request| state_route(&s1, req);
    let state = Arc::new(state);
    let state2 = state.clone();
    Router::new()
        .only_methods(&["GET"])
        .get("/api/state", move |r| state(r))
        .get("/api/snapshot", move |r| state2(r))
        .prefix(&["GET"], "/api/node/", move |req| node_route(&s2, req))
        .prefix(&["GET"], "/api/receipt/", move |req| {
            receipt_route(&s3, req)
        })
        .get("/events", move |req| events_route(&s4, req))
        .get("/api/frames", move |req| frames_route(&s6, req))
        .get("/api/ledger", move |_req| {
            json_response(200, s5.ledger.clone())
        })
        .fallback(move |req| {
            let path = req.path().to_string();
            if path == "/api" || path.starts_with("/api/") {
                return Response::error_with(
                    404,
                    "no such endpoint",
                    [("path", serde_json::Value::String(path))],
                );
            }
            assets.respond_or_404(&path)
        })
}

/// `GET /api/state` (VIEWER.md §6.3) and its project variants `?frames=none` and `?why=1`
/// ([`crate::devtools::pages`]); every other query, malformed ones included, serves the
/// snapshot unchanged.
fn state_route(shared: &Shared, req: &mut Request) -> Response {
    let query = req.query().ok();
    let variant = query.as_ref().and_then(|q| {
        if q.get("frames") == Some("none") {
            Some(true)
        } else if q.get("why") == Some("1") {
            Some(false)
        } else {
            None
        }
    });
    let mut live = lock(&shared.live);
    let bytes = match variant {
        None => live.state_bytes().as_ref().clone(),
        Some(head_only) => {
            let head = snapshot_head(&live.opened, &live.session);
            let pages = live.pages();
            if head_only {
                pages.state_head(&head)
            } else {
                pages.state_with_why(&head)
            }
        }
    };
    drop(live);
    json_response(200, bytes).with_etag()
}

/// `GET /api/frames?from=&count=[&form=index]` ([`crate::devtools::pages`]).
fn frames_route(shared: &Shared, req: &mut Request) -> Response {
    let q = match parse_page_query(req.raw_query()) {
        Ok(q) => q,
        Err(e) => return Response::error(400, &e.to_string()),
    };
    let live = lock(&shared.live);
    let body = live.pages().page(&q);
    drop(live);
    json_response(200, body)
}

fn node_route(shared: &Shared, req: &mut Request) -> Response {
    let id = match req.rest_decoded() {
        Ok(id) => id,
        Err(_) => return Response::error(400, "malformed percent-encoding in node id"),
    };
    if id.is_empty() {
        return Response::error(400, "missing node id");
    }
    let version = match req.query_param("version") {
        Ok(Some(v)) if !v.is_empty() => v,
        Ok(_) => {
            return Response::error(
                400,
                "missing ?version= (a frame's atomicVersion or store artifact version)",
            );
        }
        Err(_) => return Response::error(400, "malformed percent-encoding in query"),
    };
    let live = lock(&shared.live);
    match read_node_world_model(&live.opened, &id, &version) {
        Some(view) => json_response(200, json::to_js_compact(&view)),
        None => Response::error_with(
            404,
            "no world-model for node@version",
            [
                ("node", serde_json::Value::String(id)),
                ("version", serde_json::Value::String(version)),
            ],
        ),
    }
}

fn receipt_route(shared: &Shared, req: &mut Request) -> Response {
    let raw = req.rest().unwrap_or("").to_string();
    if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return Response::error(400, "receipt index must be a non-negative integer");
    }
    let live = lock(&shared.live);
    let index = raw.parse::<usize>().ok();
    let receipt = index.and_then(|i| Some((i, live.raw.get(i)?)));
    let Some((i, receipt)) = receipt else {
        let n = raw
            .trim_start_matches('0')
            .parse::<f64>()
            .unwrap_or(f64::INFINITY);
        let n = if raw.trim_start_matches('0').is_empty() {
            0.0
        } else {
            n
        };
        let body = format!(
            "{{\"error\":\"no receipt at index\",\"index\":{}}}",
            json::number_to_string(n).replace("Infinity", "null")
        );
        return json_response(404, body.into_bytes());
    };
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Verify {
        ok: bool,
        errors: Vec<String>,
        expected_content_hash: Option<String>,
        actual_content_hash: Option<String>,
    }
    #[derive(Serialize)]
    struct Body<'a> {
        index: usize,
        receipt: &'a Value,
        verify: Verify,
    }
    drop(live);
    let v = verify_receipt(&receipt);
    let body = Body {
        index: i,
        receipt: &receipt,
        verify: Verify {
            ok: v.ok,
            errors: v.errors,
            expected_content_hash: v.expected_content_hash,
            actual_content_hash: v.actual_content_hash,
        },
    };
    json_response(200, json::to_js_compact(&body))
}

fn events_route(shared: &Shared, req: &mut Request) -> Response {
    let last_event_id = req
        .header("last-event-id")
        .map(str::trim)
        .map(str::to_string);
    let after_q = req.query_param("after").ok().flatten();
    let opted_in = last_event_id.is_some() || after_q.is_some();
    let after: Option<i64> = last_event_id
        .as_deref()
        .and_then(|s| s.parse::<i64>().ok())
        .or_else(|| after_q.as_deref().and_then(|s| s.parse::<i64>().ok()))
        .filter(|n| *n >= -1);
    // Hold the snapshot lock while subscribing so no frame is lost between catch-up and live.
    let live = lock(&shared.live);
    let sub = match shared.hub.subscribe() {
        Ok(s) => s,
        Err(e) => return e.to_response(),
    };
    let mut initial = vec![SseEvent::comment("connected"), SseEvent::retry(3000)];
    if opted_in {
        let frames = live.session.frames.len();
        initial.push(SseEvent::named(
            "hello",
            &format!("{{\"live\":{},\"frames\":{frames}}}", shared.live_enabled),
        ));
        if let Some(a) = after {
            let start = (a + 1).max(0) as usize;
            for i in start..frames {
                initial.push(live.frame_event(i));
            }
            initial.push(live.summary_event());
        }
    }
    drop(live);
    Response::sse(sub, &initial)
}
