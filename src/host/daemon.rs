//! The daemon's HTTP surface (HOST.md §10): seven routes — one ingress and six read-only
//! projections — with namespacing for several reactors, optional bearer auth, ETags, and the
//! check order method → auth → route → node → body size → body JSON.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

use crate::format::address::EMPTY_TREE_ADDRESS;
use crate::format::json::{self, Value};
use crate::host::hosted::{HostedReactor, external_wake};
use crate::host::queue::TaskPool;
use crate::http::{BearerAuth, BodyError, Request, Response, Router, decode_path_segments};

/// The route names (reserved as reactor names, HOST.md §4.4).
pub const ROUTE_NAMES: [&str; 7] = [
    "health", "status", "cost", "topology", "receipts", "nodes", "trigger",
];

/// Shared state of the daemon's handlers.
pub struct Daemon {
    /// The hosted reactors, in configuration order.
    pub reactors: Vec<Arc<HostedReactor>>,
    /// The task pool (one queue per reactor).
    pub pool: Arc<TaskPool>,
    /// True on a single-reactor host (no path prefix).
    pub single: bool,
    /// Set on the first stop signal: new triggers get 503.
    pub stopping: Arc<AtomicBool>,
}

impl std::fmt::Debug for Daemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Daemon")
            .field("reactors", &self.reactors.len())
            .finish()
    }
}

fn js(status: u16, body: Vec<u8>) -> Response {
    Response::json_bytes(status, body)
}

fn get_ok(body: Vec<u8>) -> Response {
    js(200, body).with_etag()
}

/// Builds the router. With `auth`, every request but `GET /health` (and `/<name>/health`)
/// needs the bearer token.
pub fn router(daemon: Arc<Daemon>, auth: Option<BearerAuth>) -> Router {
    let mut r = Router::new().only_methods(&["GET", "POST"]);
    if let Some(a) = auth {
        let single = daemon.single;
        let names: Vec<String> = daemon.reactors.iter().map(|h| h.name.clone()).collect();
        r = r.bearer_auth(a.with_exemption(move |method, path| {
            if method != "GET" {
                return false;
            }
            let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
            match segs.as_slice() {
                ["health"] => single,
                [name, "health"] => !single && names.iter().any(|n| n == name),
                _ => false,
            }
        }));
    }
    let d = daemon.clone();
    r.fallback(move |req| handle(&d, req))
}

fn handle(d: &Daemon, req: &mut Request) -> Response {
    let segs = match decode_path_segments(req.path()) {
        Ok(s) => s,
        Err(_) => return Response::error(400, "invalid path encoding"),
    };
    let (h, rest): (&Arc<HostedReactor>, &[String]) = if d.single {
        (&d.reactors[0], &segs[..])
    } else {
        let names = d
            .reactors
            .iter()
            .map(|h| h.name.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        match segs.first() {
            None => {
                return Response::error(
                    404,
                    &format!(
                        "multi-reactor host: prefix the path with /<reactor> (reactors: {names})"
                    ),
                );
            }
            Some(first) => match d.reactors.iter().find(|h| h.name == *first) {
                Some(h) => (h, &segs[1..]),
                None if ROUTE_NAMES.contains(&first.as_str()) => {
                    return Response::error(
                        404,
                        &format!(
                            "multi-reactor host: prefix the path with /<reactor> (reactors: {names})"
                        ),
                    );
                }
                None => return Response::error(404, &format!("no such reactor: {first}")),
            },
        }
    };
    let path = format!("/{}", rest.join("/"));
    let method = req.method().to_string();
    let route: Vec<&str> = rest.iter().map(String::as_str).collect();
    let read_route = matches!(
        route.as_slice(),
        ["health"] | ["status"] | ["cost"] | ["topology"] | ["receipts"] | ["nodes", _]
    );
    let trigger_route = matches!(route.as_slice(), ["trigger", _]);
    if method == "GET" && trigger_route {
        return Response::method_not_allowed("GET", &["POST"], Some(&path));
    }
    if method == "POST" && read_route {
        return Response::method_not_allowed("POST", &["GET"], Some(&path));
    }
    if method == "POST" {
        let ["trigger", node] = route.as_slice() else {
            return Response::error(404, &format!("unknown POST route {path}"));
        };
        return trigger(d, h, node, req);
    }
    match route.as_slice() {
        ["health"] => {
            #[derive(Serialize)]
            struct Health<'a> {
                ok: bool,
                reactors: usize,
                reactor: &'a str,
            }
            get_ok(json::to_js_compact(&Health {
                ok: true,
                reactors: d.reactors.len(),
                reactor: &h.name,
            }))
        }
        ["status"] => {
            let view = h.view.read().unwrap_or_else(|e| e.into_inner());
            #[derive(Serialize)]
            #[serde(rename_all = "camelCase")]
            struct Status<'a> {
                reactor: &'a str,
                nodes: usize,
                queue_depth: usize,
                cost: &'a crate::host::rollup::CostRollup,
            }
            get_ok(json::to_js_compact(&Status {
                reactor: &h.name,
                nodes: h.reactor.mounted().nodes.len(),
                queue_depth: d.pool.depth(h.index),
                cost: &view.rollup,
            }))
        }
        ["cost"] => {
            let view = h.view.read().unwrap_or_else(|e| e.into_inner());
            let mut m = serde_json::Map::new();
            m.insert("reactor".into(), serde_json::Value::String(h.name.clone()));
            if let serde_json::Value::Object(members) = view.rollup.to_json() {
                m.extend(members);
            }
            get_ok(json::to_js_compact(&serde_json::Value::Object(m)))
        }
        ["topology"] => {
            let mut nodes: Vec<&str> = h
                .reactor
                .mounted()
                .nodes
                .iter()
                .map(String::as_str)
                .collect();
            nodes.sort_by(|a, b| json::utf16_cmp(a, b));
            #[derive(Serialize)]
            struct Topo<'a> {
                reactor: &'a str,
                nodes: Vec<&'a str>,
            }
            get_ok(json::to_js_compact(&Topo {
                reactor: &h.name,
                nodes,
            }))
        }
        ["receipts"] => {
            let view = h.view.read().unwrap_or_else(|e| e.into_inner());
            let total: usize = view.receipts.iter().map(|r| r.len() + 1).sum();
            let mut out = Vec::with_capacity(total + 64);
            out.extend_from_slice(b"{\"reactor\":");
            json::write_str(&h.name, &mut out);
            out.extend_from_slice(b",\"receipts\":[");
            for (i, r) in view.receipts.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(r);
            }
            out.extend_from_slice(b"]}");
            drop(view);
            get_ok(out)
        }
        ["nodes", node] => {
            if !h.has_node(node) {
                return unknown_node(h, node);
            }
            let fingerprints = h
                .reactor
                .store()
                .published(node)
                .map(|p| p.fingerprints)
                .unwrap_or_else(|| {
                    crate::format::receipt::Fingerprints::atomic(EMPTY_TREE_ADDRESS)
                });
            let view = h.view.read().unwrap_or_else(|e| e.into_inner());
            let (last, count) = match view.last.get(*node) {
                Some((i, n)) => (Some(view.receipts[*i].clone()), *n),
                None => (None, 0),
            };
            drop(view);
            let mut out = Vec::with_capacity(1024);
            out.extend_from_slice(b"{\"reactor\":");
            json::write_str(&h.name, &mut out);
            out.extend_from_slice(b",\"node\":");
            json::write_str(node, &mut out);
            out.extend_from_slice(b",\"fingerprints\":");
            json::write_compact(&fingerprints.to_value(), &mut out);
            out.extend_from_slice(b",\"lastReceipt\":");
            match last {
                Some(b) => out.extend_from_slice(&b),
                None => out.extend_from_slice(b"null"),
            }
            out.extend_from_slice(format!(",\"receipts\":{count}}}").as_bytes());
            get_ok(out)
        }
        _ => Response::error(404, &format!("unknown route {path}")),
    }
}

fn unknown_node(h: &HostedReactor, node: &str) -> Response {
    Response::error(
        404,
        &format!("node '{node}' is not in reactor '{}' topology", h.name),
    )
}

fn trigger(d: &Daemon, h: &Arc<HostedReactor>, node: &str, req: &mut Request) -> Response {
    if !h.has_node(node) {
        return unknown_node(h, node);
    }
    let data: Option<Value> = match req.read_body() {
        Err(BodyError::TooLarge { limit }) => return Response::payload_too_large(limit),
        Err(e) => return e.to_response(),
        Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => None,
        Ok(bytes) => match json::parse(bytes) {
            Ok(v) => Some(v),
            Err(e) => return Response::error(400, &format!("invalid JSON body: {e}")),
        },
    };
    if d.stopping.load(Ordering::SeqCst) {
        return Response::error(503, "shutting down");
    }
    let task_h = h.clone();
    let task_node = node.to_string();
    let task_data = data.clone();
    let rx = d.pool.submit(h.index, move || {
        external_wake(&task_h, &task_node, task_data.as_ref())
    });
    let outcome = match rx.recv() {
        Ok(Some(Ok(o))) => o,
        Ok(Some(Err(e))) => {
            return Response::error(500, &crate::format::sanitize::redact(&e.to_string(), &[]));
        }
        _ => return Response::error(500, "internal error: the trigger task did not finish"),
    };
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(b"{\"reactor\":");
    json::write_str(&h.name, &mut out);
    out.extend_from_slice(b",\"triggered\":");
    json::write_str(node, &mut out);
    out.extend_from_slice(format!(",\"receiptsAdded\":{}", outcome.receipts_added).as_bytes());
    if let Some(v) = &data {
        out.extend_from_slice(b",\"data\":");
        json::write_compact(v, &mut out);
        out.extend_from_slice(
            format!(
                ",\"dataDelivered\":{}",
                outcome.data_delivered.unwrap_or(false)
            )
            .as_bytes(),
        );
    }
    out.push(b'}');
    js(200, out)
}
