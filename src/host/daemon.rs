//! The daemon's HTTP surface (HOST.md §10): seven routes — one ingress and six read-only
//! projections — with namespacing for several reactors, optional bearer auth, ETags, and the
//! check order method → auth → route → node → body size → body JSON. Paths are matched only by
//! the shared [`Router`] (pattern routes with `{reactor}` and `{node}` parameters).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::format::address::EMPTY_TREE_ADDRESS;
use crate::format::json::{self, Value};
use crate::host::events::{DrainSummary, Event, Out};
use crate::host::hosted::{HostedReactor, external_wake};
use crate::host::metrics::{CONTENT_TYPE as METRICS_CONTENT_TYPE, Metrics};
use crate::host::queue::TaskPool;
use crate::http::{BearerAuth, BodyError, Request, Response, Router, decode_path_segments};

/// The route names (reserved as reactor names, HOST.md §4.4).
pub(crate) const ROUTE_NAMES: [&str; 7] = [
    "health", "status", "cost", "topology", "receipts", "nodes", "trigger",
];

/// The answer to `POST /trigger/<node>` (HOST.md §10.4): `{"reactor", "triggered",
/// "receiptsAdded", "data"?, "dataDelivered"?}`. `reactor trigger` reads it back when it
/// forwards to a daemon (every member defaults when absent).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct TriggerReply {
    /// The addressed reactor.
    pub reactor: Option<String>,
    /// The node.
    pub triggered: String,
    /// Receipts appended by the task (ingress receipt and drain receipts).
    pub receipts_added: u64,
    /// The body, echoed (only when one was sent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Whether the body was staged (only when one was sent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) data_delivered: Option<bool>,
}

/// Every error answer of the daemon: `{"error": "<message>"}` (HOST.md §10.5).
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct ErrorReply {
    /// The message.
    pub error: String,
}

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
    /// Where each handled `POST /trigger/<node>` is reported (HOST.md §9.7).
    pub out: Out,
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

/// Builds the router (HOST.md §10): the seven routes as [`Router`] pattern routes, prefixed
/// with `/{reactor}` on a multi-reactor host (restricted to the hosted names), `GET …/health`
/// public when `auth` is given, and a fallback that words the namespacing 404s of §10.2.
pub fn router(daemon: Arc<Daemon>, auth: Option<BearerAuth>) -> Router {
    router_with_metrics(daemon, auth, None)
}

/// Wraps a handler so its latency is recorded under the route pattern (when metrics are on).
fn timed<F>(
    metrics: &Option<Arc<Metrics>>,
    route: &str,
    handler: F,
) -> impl Fn(&mut Request) -> Response + Send + Sync + 'static
where
    F: Fn(&mut Request) -> Response + Send + Sync + 'static,
{
    let metrics = metrics.clone();
    let route = route.to_string();
    move |req| {
        let started = Instant::now();
        let resp = handler(req);
        if let Some(m) = &metrics {
            m.http_request(req.method(), &route, resp.status(), started.elapsed());
        }
        resp
    }
}

/// `GET /metrics` (`serve --metrics`): the queue depths and renders in flight are read at
/// scrape time, then the whole registry is encoded in the Prometheus text format.
fn metrics_view(d: &Daemon, m: &Metrics) -> Response {
    for h in &d.reactors {
        m.queue_depth(&h.name, d.pool.depth(h.index));
        m.renders_in_flight(&h.name, h.reactor.in_flight().len());
    }
    Response::bytes(200, METRICS_CONTENT_TYPE, m.encode().into_bytes())
}

/// [`router`], plus `GET /metrics` and the request-latency histogram when `metrics` is given
/// (`serve --metrics`; the route is never prefixed and sits behind the same auth).
pub(crate) fn router_with_metrics(
    daemon: Arc<Daemon>,
    auth: Option<BearerAuth>,
    metrics: Option<Arc<Metrics>>,
) -> Router {
    let single = daemon.single;
    let prefix = if single { "" } else { "/{reactor}" };
    let mut r = Router::new()
        .decoded_segments()
        .only_methods(&["GET", "POST"])
        .display_path(move |req| route_path(req.path(), single));
    if let Some(a) = auth {
        r = r.bearer_auth(a);
    }
    if !single {
        let names: Vec<String> = daemon.reactors.iter().map(|h| h.name.clone()).collect();
        r = r.param("reactor", move |v| names.iter().any(|n| n == v));
    }
    type Get = fn(&Daemon, &Arc<HostedReactor>, &Request) -> Response;
    let reads: [(&str, Get); 5] = [
        ("/status", status),
        ("/cost", cost),
        ("/topology", topology),
        ("/receipts", receipts),
        ("/nodes/{node}", node_view),
    ];
    let d = daemon.clone();
    let path = format!("{prefix}/health");
    r = r.public_route(
        &["GET"],
        &path,
        timed(&metrics, &path, move |req| {
            health(&d, reactor_of(&d, req), req)
        }),
    );
    for (path, view) in reads {
        let d = daemon.clone();
        let path = format!("{prefix}{path}");
        r = r.get(
            &path,
            timed(&metrics, &path, move |req| {
                view(&d, reactor_of(&d, req), req)
            }),
        );
    }
    let d = daemon.clone();
    let path = format!("{prefix}/trigger/{{node}}");
    r = r.post(
        &path,
        timed(&metrics, &path, move |req| {
            let h = reactor_of(&d, req).clone();
            let node = req.param("node").unwrap_or_default().to_owned();
            trigger(&d, &h, &node, req)
        }),
    );
    if let Some(m) = &metrics {
        let (d, m2) = (daemon.clone(), m.clone());
        r = r.get(
            "/metrics",
            timed(&metrics, "/metrics", move |_| metrics_view(&d, &m2)),
        );
    }
    let d = daemon;
    r.fallback(timed(&metrics, "unmatched", move |req| unmatched(&d, req)))
}

/// The request path after the `/<reactor>` prefix of a multi-reactor host, segments decoded,
/// as HOST.md §10.2 shows it in messages (`/trigger/inbox`).
fn route_path(path: &str, single: bool) -> String {
    let segs = decode_path_segments(path).unwrap_or_default();
    let rest = if single || segs.is_empty() {
        &segs[..]
    } else {
        &segs[1..]
    };
    format!("/{}", rest.join("/"))
}

/// The addressed reactor: the only one, or the `{reactor}` parameter (already restricted to
/// hosted names by the router).
fn reactor_of<'d>(d: &'d Daemon, req: &Request) -> &'d Arc<HostedReactor> {
    req.param("reactor")
        .and_then(|name| d.reactors.iter().find(|h| h.name == name))
        .unwrap_or(&d.reactors[0])
}

/// The 404s for paths no route matches (HOST.md §10.2).
fn unmatched(d: &Daemon, req: &Request) -> Response {
    let segs = decode_path_segments(req.path()).unwrap_or_default();
    let unknown = |path: String| {
        if req.method() == "POST" {
            Response::error(404, &format!("unknown POST route {path}"))
        } else {
            Response::error(404, &format!("unknown route {path}"))
        }
    };
    if d.single {
        return unknown(format!("/{}", segs.join("/")));
    }
    let names = d
        .reactors
        .iter()
        .map(|h| h.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let prefix_needed = || {
        Response::error(
            404,
            &format!("multi-reactor host: prefix the path with /<reactor> (reactors: {names})"),
        )
    };
    match segs.first() {
        None => prefix_needed(),
        Some(first) if d.reactors.iter().any(|h| h.name == *first) => {
            unknown(format!("/{}", segs[1..].join("/")))
        }
        Some(first) if ROUTE_NAMES.contains(&first.as_str()) => prefix_needed(),
        Some(first) => Response::error(404, &format!("no such reactor: {first}")),
    }
}

fn health(d: &Daemon, h: &Arc<HostedReactor>, _req: &Request) -> Response {
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

fn status(d: &Daemon, h: &Arc<HostedReactor>, _req: &Request) -> Response {
    let view = h.view.read().unwrap_or_else(|e| e.into_inner());
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Status<'a> {
        reactor: &'a str,
        nodes: usize,
        queue_depth: usize,
        cost: &'a crate::host::rollup::CostRollup,
        in_flight: Vec<crate::host::inflight::InFlightJson>,
    }
    get_ok(json::to_js_compact(&Status {
        reactor: &h.name,
        nodes: h.reactor.mounted().nodes.len(),
        queue_depth: d.pool.depth(h.index),
        cost: &view.rollup,
        in_flight: crate::host::inflight::in_flight_json(&h.reactor),
    }))
}

fn cost(_d: &Daemon, h: &Arc<HostedReactor>, _req: &Request) -> Response {
    let view = h.view.read().unwrap_or_else(|e| e.into_inner());
    #[derive(Serialize)]
    struct Cost<'a> {
        reactor: &'a str,
        #[serde(flatten)]
        rollup: &'a crate::host::rollup::CostRollup,
    }
    get_ok(json::to_js_compact(&Cost {
        reactor: &h.name,
        rollup: &view.rollup,
    }))
}

fn topology(_d: &Daemon, h: &Arc<HostedReactor>, _req: &Request) -> Response {
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

fn receipts(_d: &Daemon, h: &Arc<HostedReactor>, _req: &Request) -> Response {
    let view = h.view.read().unwrap_or_else(|e| e.into_inner());
    #[derive(Serialize)]
    struct Receipts<'a> {
        reactor: &'a str,
        receipts: Vec<&'a RawValue>,
    }
    let body = json::to_js_compact(&Receipts {
        reactor: &h.name,
        receipts: view.receipts.iter().map(|r| &**r).collect(),
    });
    drop(view);
    get_ok(body)
}

fn node_view(_d: &Daemon, h: &Arc<HostedReactor>, req: &Request) -> Response {
    let node = req.param("node").unwrap_or_default();
    if !h.has_node(node) {
        return unknown_node(h, node);
    }
    let fingerprints = h
        .reactor
        .store()
        .published(node)
        .map(|p| p.fingerprints)
        .unwrap_or_else(|| crate::format::receipt::Fingerprints::atomic(EMPTY_TREE_ADDRESS));
    let view = h.view.read().unwrap_or_else(|e| e.into_inner());
    let (last, count) = match view.last.get(node) {
        Some((i, n)) => (Some(view.receipts[*i].clone()), *n),
        None => (None, 0),
    };
    drop(view);
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct NodeReply<'a> {
        reactor: &'a str,
        node: &'a str,
        fingerprints: Value,
        last_receipt: Option<&'a RawValue>,
        receipts: u64,
    }
    get_ok(json::to_js_compact(&NodeReply {
        reactor: &h.name,
        node,
        fingerprints: fingerprints.to_value(),
        last_receipt: last.as_deref(),
        receipts: count,
    }))
}

/// A failed trigger task, on stderr (`reactor: warning: …`) unless the daemon is silent.
fn warn_unless_silent(d: &Daemon, message: &str) {
    if d.out != Out::Silent {
        crate::host::output::warn(message);
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
            // A number that overflows to ±infinity (`1e400`) parses but cannot be canonicalized
            // (FORMATS.md §3.2 rule 1): it is the client's error, not the host's.
            Ok(v) => match json::canonical_string(&v) {
                Ok(_) => Some(v),
                Err(e) => return Response::error(400, &format!("invalid JSON body: {e}")),
            },
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
        let started = Instant::now();
        let woken = external_wake(&task_h, &task_node, task_data.as_ref());
        let took = started.elapsed();
        task_h.observe_drain("trigger", took);
        woken.map(|o| (o, took))
    });
    let (outcome, took) = match rx.recv() {
        Ok(Some(Ok(o))) => o,
        Ok(Some(Err(e))) => {
            let message = crate::format::sanitize::redact(&e.to_string(), &[]);
            warn_unless_silent(d, &format!("POST /trigger/{node} failed: {message}"));
            return Response::error(500, &message);
        }
        _ => {
            warn_unless_silent(d, &format!("POST /trigger/{node}: the task did not finish"));
            return Response::error(500, "internal error: the trigger task did not finish");
        }
    };
    let summary = DrainSummary::new(
        &h.name,
        node,
        outcome
            .arrival_id
            .clone()
            .filter(|_| outcome.data_delivered == Some(true)),
        &outcome.results,
        outcome.receipts_added,
        took,
    );
    d.out.line(&summary.line("trigger"));
    d.out.event(&Event::Trigger(&summary));
    let data_delivered = data
        .as_ref()
        .map(|_| outcome.data_delivered.unwrap_or(false));
    js(
        200,
        json::to_js_compact(&TriggerReply {
            reactor: Some(h.name.clone()),
            triggered: node.to_string(),
            receipts_added: outcome.receipts_added as u64,
            data,
            data_delivered,
        }),
    )
}
