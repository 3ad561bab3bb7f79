//! The viewer's HTTP server (VIEWER.md §2.10, §6): the snapshot API, the world-model and receipt
//! inspectors, server-sent events with live follow, and the embedded SPA.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use include_dir::{Dir, include_dir};
use serde::Serialize;

use crate::devtools::cli::Io;
use crate::devtools::examples;
use crate::devtools::pages::{HashIndex, PageSource, parse_page_query};
use crate::format::json::{self, Value};
use crate::format::receipt::verify_receipt_with;
use crate::http::{
    BindError, Request, Response, Router, SecondSignal, Server, ServerConfig, SseConfig, SseEvent,
    SseHub, StaticAssets, install_stop_signals,
};
use crate::replay::ledger::{LedgerReadError, read_growth, read_ledger_file};
use crate::replay::open::{
    OpenError, OpenStateDirOptions, OpenedStateDir, open_state_dir, project_receipt,
};
use crate::replay::snapshot::{
    LabelMap, ReplaySession, ReplaySnapshot, build_session, snapshot_from_session, snapshot_head,
};
use crate::replay::why::WhySlots;
use crate::replay::worldmodel::read_node_world_model;

static ASSETS: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/assets");

/// The CSP of `index.html` (VIEWER.md §6.7).
pub const INDEX_CSP: &str = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-src 'none'; object-src 'none'";

/// Options of [`start_devtools_server`] (VIEWER.md §4.2 `DevToolsServerOptions`).
#[derive(Clone, Debug)]
pub struct DevToolsServerOptions {
    /// The state directory (ignored when `example` is set).
    pub state_dir: Option<PathBuf>,
    /// A bundled fixture name instead of a directory.
    pub example: Option<String>,
    /// Port (4555; 0 = any free port).
    pub port: u16,
    /// Bind host (`127.0.0.1`).
    pub host: String,
    /// Follow a growing ledger (true; never for examples).
    pub live: bool,
    /// Live-follow poll interval (500 ms).
    pub poll_interval: Duration,
    /// SSE heartbeat interval (15 s).
    pub heartbeat: Duration,
    /// Dollar rates for the rollup.
    pub open: OpenStateDirOptions,
}

impl Default for DevToolsServerOptions {
    fn default() -> Self {
        DevToolsServerOptions {
            state_dir: None,
            example: None,
            port: 4555,
            host: "127.0.0.1".into(),
            live: true,
            poll_interval: Duration::from_millis(500),
            heartbeat: Duration::from_secs(15),
            open: OpenStateDirOptions::default(),
        }
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// Opening the state directory failed.
    #[error("{0}")]
    Open(#[from] OpenError),
    /// Binding failed.
    #[error("{0}")]
    Bind(#[from] BindError),
    /// Neither a state directory nor an example was given.
    #[error("no state directory or example given")]
    NoTarget,
}

struct Live {
    opened: OpenedStateDir,
    session: ReplaySession,
    cache: Option<(Arc<ReplaySnapshot>, Arc<Vec<u8>>)>,
    /// Input slots of the topology and content hashes of the receipts (frame causes).
    slots: WhySlots,
    hashes: HashIndex,
    /// (len, mtime, inode) of receipts.json, topology, labels, beats at the last read.
    stamps: Vec<Option<(u64, std::time::SystemTime, u64)>>,
}

impl Live {
    fn new(opened: OpenedStateDir) -> Live {
        let session = build_session(&opened);
        let stamps = stamps(&opened);
        Live {
            slots: WhySlots::new(opened.topology.as_ref()),
            hashes: HashIndex::new(&opened.raw),
            opened,
            session,
            cache: None,
            stamps,
        }
    }

    fn pages(&self) -> PageSource<'_> {
        PageSource {
            opened: &self.opened,
            session: &self.session,
            slots: &self.slots,
            hashes: &self.hashes,
        }
    }

    fn snapshot(&mut self) -> (Arc<ReplaySnapshot>, Arc<Vec<u8>>) {
        if let Some(c) = &self.cache {
            return c.clone();
        }
        let snap = snapshot_from_session(&self.opened, &self.session);
        let bytes = json::to_js_compact(&snap);
        let c = (Arc::new(snap), Arc::new(bytes));
        self.cache = Some(c.clone());
        c
    }

    fn label(&self) -> impl Fn(&str) -> String + '_ {
        let labels = LabelMap::new(&self.opened.labels, !self.opened.labels.is_empty());
        move |id: &str| labels.label(id)
    }

    fn summary_event(&self) -> SseEvent {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Summary<'a> {
            frames: usize,
            cost_rollup: &'a crate::replay::snapshot::CostRollupView,
            chain_verify: crate::replay::snapshot::ChainVerifyView,
        }
        let label = self.label();
        let s = Summary {
            frames: self.session.frames.len(),
            cost_rollup: &self.session.rollup,
            chain_verify: self.session.chain_verify(&label),
        };
        SseEvent::named(
            "summary",
            &String::from_utf8_lossy(&json::to_js_compact(&s)),
        )
    }

    fn frame_event(&self, i: usize) -> SseEvent {
        let data = json::to_js_compact(&self.session.frames[i]);
        SseEvent::new(
            Some("frame"),
            Some(&i.to_string()),
            &String::from_utf8_lossy(&data),
        )
    }
}

const WATCHED: [&str; 4] = [
    "receipts.json",
    "compile/topology.json",
    "compile/labels.json",
    "beats.json",
];

fn stamps(opened: &OpenedStateDir) -> Vec<Option<(u64, std::time::SystemTime, u64)>> {
    use std::os::unix::fs::MetadataExt;
    let Some(root) = opened.source.disk_root() else {
        return vec![None; WATCHED.len()];
    };
    WATCHED
        .iter()
        .map(|rel| {
            std::fs::metadata(root.join(rel)).ok().map(|m| {
                (
                    m.len(),
                    m.modified().unwrap_or(std::time::UNIX_EPOCH),
                    m.ino(),
                )
            })
        })
        .collect()
}

struct Shared {
    live: Mutex<Live>,
    hub: SseHub,
    live_enabled: bool,
    /// The body of `GET /api/ledger` (fixed for the server's lifetime).
    ledger: Vec<u8>,
}

/// The body of `GET /api/ledger` (project): which ledger this viewer shows, so the SPA can name
/// it (title, top bar, a "synthetic sample" banner) without changing a byte of `/api/state`.
/// JSON, key order as listed: `{"stateDir": string, "path": string|null, "example": string|null,
/// "synthetic": boolean}` — `stateDir` as in the snapshot (VIEWER.md §4.1: the directory as given
/// or `example:<name>`), `path` the canonical absolute directory (null for a bundled example, the
/// given path when it cannot be canonicalized), `example` the bundled fixture's name (§2.7).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LedgerInfo {
    state_dir: String,
    path: Option<String>,
    example: Option<String>,
    synthetic: bool,
}

fn ledger_info(opened: &OpenedStateDir) -> Vec<u8> {
    let example = if opened.synthetic {
        opened
            .state_dir
            .strip_prefix("example:")
            .map(str::to_string)
    } else {
        None
    };
    let path = opened.source.disk_root().map(|p| {
        std::fs::canonicalize(p)
            .unwrap_or_else(|_| p.to_path_buf())
            .to_string_lossy()
            .into_owned()
    });
    json::to_js_compact(&LedgerInfo {
        state_dir: opened.state_dir.clone(),
        path,
        example,
        synthetic: opened.synthetic,
    })
}

fn lock(m: &Mutex<Live>) -> MutexGuard<'_, Live> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A running viewer server (VIEWER.md §7 `DevToolsServer`).
pub struct DevToolsServer {
    server: Option<Server>,
    shared: Arc<Shared>,
    url: String,
    stop: Arc<std::sync::atomic::AtomicBool>,
    poller: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for DevToolsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevToolsServer")
            .field("url", &self.url)
            .finish()
    }
}

impl DevToolsServer {
    /// `http://<host>:<port>/` with the bound port (IPv6 literals bracketed).
    pub fn url(&self) -> &str {
        &self.url
    }
    /// The bound address.
    pub fn local_addr(&self) -> std::net::SocketAddr {
        self.server
            .as_ref()
            .map(Server::local_addr)
            .unwrap_or_else(|| ([127, 0, 0, 1], 0).into())
    }
    /// The current snapshot.
    pub fn snapshot(&self) -> Arc<ReplaySnapshot> {
        lock(&self.shared.live).snapshot().0
    }
    /// Stops following, sends `shutdown` to every event stream and closes the server
    /// (VIEWER.md §2.10 step 5). Also runs on drop.
    pub fn close(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(s) = self.server.take() {
            s.close();
        }
        self.shared.hub.close();
        if let Some(p) = self.poller.take() {
            let _ = p.join();
        }
    }
}

impl Drop for DevToolsServer {
    fn drop(&mut self) {
        self.close();
    }
}

fn host_for_url(host: &str) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

/// Opens the target, binds, and starts serving (and following) on background threads; returns
/// once listening (VIEWER.md §7 `start_devtools_server`).
pub fn start_devtools_server(opts: DevToolsServerOptions) -> Result<DevToolsServer, ServerError> {
    let opened = match (&opts.example, &opts.state_dir) {
        (Some(name), _) => examples::open_example(name, &opts.open)?,
        (None, Some(dir)) => open_state_dir(dir, &opts.open)?,
        (None, None) => return Err(ServerError::NoTarget),
    };
    start_with(opened, opts)
}

/// [`start_devtools_server`] over an already opened state directory.
pub fn start_with(
    opened: OpenedStateDir,
    opts: DevToolsServerOptions,
) -> Result<DevToolsServer, ServerError> {
    let live_enabled = opts.live && !opened.synthetic && opened.source.disk_root().is_some();
    let ledger = ledger_info(&opened);
    let shared = Arc::new(Shared {
        ledger,
        live: Mutex::new(Live::new(opened)),
        hub: SseHub::new(SseConfig {
            heartbeat: opts.heartbeat,
            ..SseConfig::default()
        }),
        live_enabled,
    });
    let router = router(shared.clone());
    let server = Server::start(
        ServerConfig {
            host: opts.host.clone(),
            port: opts.port,
            ..ServerConfig::default()
        },
        router,
    )?;
    let url = format!(
        "http://{}:{}/",
        host_for_url(&opts.host),
        server.local_addr().port()
    );
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let poller = if live_enabled {
        let shared = shared.clone();
        let stop = stop.clone();
        let interval = opts.poll_interval;
        Some(std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let mut slept = Duration::ZERO;
                while slept < interval && !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    let step = Duration::from_millis(20).min(interval - slept);
                    std::thread::sleep(step);
                    slept += step;
                }
                if stop.load(std::sync::atomic::Ordering::SeqCst) {
                    break;
                }
                poll_once(&shared);
            }
        }))
    } else {
        None
    };
    Ok(DevToolsServer {
        server: Some(server),
        shared,
        url,
        stop,
        poller,
    })
}

/// One live-follow poll (VIEWER.md §6.6).
fn poll_once(shared: &Shared) {
    let mut live = lock(&shared.live);
    let now = stamps(&live.opened);
    if now == live.stamps {
        return;
    }
    let Some(root) = live.opened.source.disk_root().map(|p| p.to_path_buf()) else {
        return;
    };
    let aux_changed = now[1..] != live.stamps[1..];
    let reset = |live: &mut MutexGuard<'_, Live>, reason: &str| {
        let state_dir = live.opened.state_dir.clone();
        let opts = live.opened.options;
        match open_state_dir(&root, &opts) {
            Ok(mut o) => {
                o.state_dir = state_dir;
                **live = Live::new(o);
                let frames = live.session.frames.len();
                let data = format!(
                    "{{\"reason\":{},\"frames\":{frames}}}",
                    json::compact_string(&Value::str(reason))
                );
                shared.hub.broadcast(&SseEvent::named("reset", &data));
            }
            Err(_) => {
                // Keep the last good snapshot; retry on the next poll.
            }
        }
    };
    if aux_changed {
        let which = WATCHED[1..]
            .iter()
            .zip(now[1..].iter().zip(&live.stamps[1..]))
            .find(|(_, (a, b))| a != b)
            .map(|(n, _)| *n)
            .unwrap_or("compile/topology.json");
        reset(&mut live, &format!("{which} changed"));
        return;
    }
    let known = live.opened.raw.len();
    let same_inode = now[0].map(|s| s.2) == live.stamps[0].map(|s| s.2);
    let grew = now[0].map(|s| s.0).unwrap_or(0) >= live.stamps[0].map(|s| s.0).unwrap_or(0);
    let path = root.join(crate::format::layout::RECEIPTS_FILE);
    let growing = same_inode && grew && now[0].is_some() && known > 0;
    let (new, end): (Vec<Value>, usize) = match live.opened.ledger_identity {
        Some(identity) if growing => {
            // Appended in place: parse only the bytes after the known complete prefix, up to
            // one snapshot length (the one reader, replay::ledger).
            match read_growth(&path, identity, live.opened.end_of_complete, true) {
                Ok(Some(g)) => (g.receipts, g.end_of_complete),
                // Replaced or gone since: the next poll sees the new file.
                Ok(None) => return,
                Err(LedgerReadError::Content(_)) => {
                    reset(&mut live, "receipts.json was rewritten");
                    return;
                }
                Err(LedgerReadError::Io { .. }) => return,
            }
        }
        _ => {
            // Replaced or shrunk (the reference rewrites the whole file): re-read and check that
            // the known receipts are still a prefix.
            let Ok(read) = read_ledger_file(&path) else {
                return;
            };
            if read.receipts.len() < known {
                reset(&mut live, "receipts.json was rewritten");
                return;
            }
            let hashes = crate::replay::open::recompute_all(&read.receipts[..known]);
            if hashes != live.opened.recomputed {
                reset(&mut live, "receipts.json was rewritten");
                return;
            }
            live.opened.ledger_identity = read.identity;
            let end = read.end_of_complete;
            let mut all = read.receipts;
            (all.split_off(known), end)
        }
    };
    let mut projected = Vec::with_capacity(new.len());
    for v in &new {
        match project_receipt(v) {
            Ok(p) => projected.push(p),
            Err(_) => return, // keep the last good snapshot; retry later
        }
    }
    if live.opened.topology.is_none() && projected.iter().any(|p| !live.session.has_chain(&p.node))
    {
        reset(&mut live, "a new node appeared (node-only fallback)");
        return;
    }
    let hashes = crate::replay::open::recompute_all(&new);
    let mut events = Vec::with_capacity(new.len() + 1);
    for ((v, p), h) in new.into_iter().zip(projected).zip(hashes) {
        live.session.push(&v, &p, &h);
        let i = live.opened.raw.len();
        live.hashes.push(i, &v);
        live.opened.raw.push(v);
        live.opened.projected.push(p);
        live.opened.recomputed.push(h);
        let i = live.session.frames.len() - 1;
        events.push(live.frame_event(i));
    }
    live.opened.end_of_complete = end;
    live.stamps = now;
    live.cache = None;
    if !events.is_empty() {
        events.push(live.summary_event());
        shared.hub.broadcast_all(&events);
    }
}

fn json_response(status: u16, body: Vec<u8>) -> Response {
    Response::json_bytes(status, body)
}

fn router(shared: Arc<Shared>) -> Router {
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
        None => live.snapshot().1.as_ref().clone(),
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
        Err(e) => return Response::error(400, &e),
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
    let Some(i) = index.filter(|i| *i < live.opened.raw.len()) else {
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
    let v = verify_receipt_with(&live.opened.raw[i], Some(&live.opened.recomputed[i]));
    let body = Body {
        index: i,
        receipt: &live.opened.raw[i],
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

/// Server mode of the CLI (VIEWER.md §2.10): bind, print the two lines, serve until SIGINT or
/// SIGTERM, close, exit 0.
pub fn run_cli(
    opened: OpenedStateDir,
    example: Option<String>,
    host: &str,
    port: u16,
    io: &mut Io<'_>,
) -> u8 {
    let signals = match install_stop_signals(SecondSignal::Exit {
        code: 0,
        message: None,
    }) {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(
                io.err,
                "reactor-devtools: Error: cannot install signal handlers: {e}"
            );
            return 1;
        }
    };
    let frames = opened.raw.len();
    let nodes = match &opened.topology {
        Some(t) => t.nodes.len(),
        None => {
            let seen: std::collections::HashSet<&str> =
                opened.projected.iter().map(|p| p.node.as_str()).collect();
            seen.len()
        }
    };
    let opts = DevToolsServerOptions {
        example,
        port,
        host: host.to_string(),
        ..DevToolsServerOptions::default()
    };
    let mut server = match start_with(opened, opts) {
        Ok(s) => s,
        Err(ServerError::Bind(BindError::AddrInUse { .. })) => {
            let alt = if port == 65535 { port - 1 } else { port + 1 };
            let _ = writeln!(
                io.err,
                "reactor-devtools: Error: Port {port} on {host} is already in use. Pass a different port with --port/-p (e.g. --port {alt})."
            );
            return 1;
        }
        Err(ServerError::Bind(BindError::Resolve { reason, .. })) => {
            let _ = writeln!(
                io.err,
                "reactor-devtools: Error: cannot resolve host \"{host}\": {reason}"
            );
            return 1;
        }
        Err(ServerError::Bind(BindError::Io { source, .. })) => {
            let _ = writeln!(
                io.err,
                "reactor-devtools: Error: cannot listen on {host}:{port}: {source}"
            );
            return 1;
        }
        Err(e) => {
            let _ = writeln!(io.err, "reactor-devtools: Error: {e}");
            return 1;
        }
    };
    let _ = write!(
        io.out,
        "reactor-devtools: replaying {frames} receipt(s) across {nodes} node(s)\n  open {}\n",
        server.url()
    );
    let _ = io.out.flush();
    signals.wait();
    server.close();
    0
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;
