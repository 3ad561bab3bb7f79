//! The server: binding, the dispatcher and worker pool, the busy limit, response writing
//! (standard headers, ETag/304, SSE hand-off) and graceful shutdown.
//!
//! Sources: VIEWER.md §2.10 (bind errors; shutdown within 1 s even with open event streams),
//! §6.1 (64 concurrent requests → 503 `{"error":"busy"}`, `Host` check, `nosniff`,
//! `cache-control: no-cache`, ETag/304), §6.6 (event streams), HOST.md §10.1 (the same rules for
//! the daemon), ARCHITECTURE.md (tiny_http: stream SSE through the request's writer, stop with
//! `unblock()`, bound request bodies ourselves).
//!
//! ## Threads
//! tiny_http accepts connections and parses request heads on its own threads. One dispatcher
//! thread takes parsed requests and hands each to a worker; workers are spawned on demand up to
//! [`ServerConfig::max_in_flight`] and kept, so every admitted request runs at once. A request
//! arriving while `max_in_flight` requests are being handled is answered 503 by a small
//! separate pool, so the dispatcher never blocks on a socket. An event stream gets its own
//! thread once its head is written; it does not count as an in-flight request (the hub caps
//! streams instead).
//!
//! ## Request bodies and tiny_http
//! tiny_http 0.12 discards an unread `Content-Length` body when the request is dropped, by
//! allocating a buffer as large as the remaining length; an absurd declared length would abort
//! the process. The server therefore never lets such a request drop: a response to a request
//! whose unread declared body exceeds [`MAX_DRAIN_BYTES`] is written through tiny_http's raw
//! stream hand-off (status and headers arrive, the body is delimited only by the connection)
//! and that connection is then abandoned, unread, for the life of the process (counted by
//! [`Server::abandoned_connections`]). Smaller unread bodies are drained normally, so ordinary
//! clients that send the whole body before reading still see their 413.
//!
//! tiny_http also drops any `connection` header an application sets; responses carrying one
//! (such as [`Response::payload_too_large`]'s `connection: close`) are written by hand through
//! the request's writer instead.

use std::io::Write;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

use super::policy::HostAllowList;
use super::request::{DEFAULT_BODY_LIMIT, Request, Source};
use super::response::{Body, Response, if_none_match_matches};
use super::router::Router;
use super::sse::{SseSubscription, pump};

/// The largest unread declared request body the server drains after responding (64 MiB);
/// above it the connection is abandoned instead (see the module documentation). It is also the
/// ceiling of [`ServerConfig::body_limit`].
pub const MAX_DRAIN_BYTES: u64 = 64 * 1024 * 1024;

/// Threads answering 503s while the workers are saturated.
const REJECT_THREADS: usize = 4;

/// Settings of a [`Server`].
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The host to bind, as the user gave it: a name (`localhost`), an IPv4 address or an IPv6
    /// address, bracketed or not. Names are resolved and the first address that binds is used
    /// (VIEWER.md §2.10 step 2). Default `127.0.0.1`.
    pub host: String,
    /// The port; 0 picks an ephemeral port ([`Server::local_addr`] reports the real one).
    pub port: u16,
    /// Requests handled at once; one more → 503 `{"error":"busy"}`. Default 64; values below 1
    /// are treated as 1.
    pub max_in_flight: usize,
    /// The request-body limit in bytes (default 1 MiB), capped at [`MAX_DRAIN_BYTES`].
    pub body_limit: u64,
    /// How long [`Server::close`] waits for in-flight responses and event streams before it
    /// returns anyway. Default 1 s (VIEWER.md §2.10 step 5).
    pub shutdown_grace: Duration,
    /// Apply the `Host` check of VIEWER.md §6.1 when the bound address is loopback.
    /// Default true. Non-loopback binds never check.
    pub host_check: bool,
    /// `cache-control` added to every response that does not set its own; `None` adds none.
    /// Default `Some("no-cache")` (VIEWER.md §6.1). Event streams always send `no-cache`.
    pub cache_control: Option<String>,
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            host: "127.0.0.1".to_owned(),
            port: 0,
            max_in_flight: 64,
            body_limit: DEFAULT_BODY_LIMIT,
            shutdown_grace: Duration::from_secs(1),
            host_check: true,
            cache_control: Some("no-cache".to_owned()),
        }
    }
}

/// Why [`Server::start`] could not listen (VIEWER.md §2.10 step 2 distinguishes these three).
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// Every resolved address was in use.
    #[error("port {port} on {host} is already in use")]
    AddrInUse {
        /// The host as configured.
        host: String,
        /// The port as configured.
        port: u16,
    },
    /// The host name could not be resolved (or resolved to no address).
    #[error("cannot resolve host \"{host}\": {reason}")]
    Resolve {
        /// The host as configured.
        host: String,
        /// The resolver's message.
        reason: String,
    },
    /// Any other failure to listen (permission denied, address not available, …).
    #[error("cannot listen on {host}:{port}: {source}")]
    Io {
        /// The host as configured.
        host: String,
        /// The port as configured.
        port: u16,
        /// The operating-system error.
        #[source]
        source: std::io::Error,
    },
}

/// What [`Server::close`] observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Time from the start of the shutdown until `close` returned.
    pub elapsed: Duration,
    /// Requests still being handled when the grace period ended (they are cut off: their
    /// threads are left to finish or die with the process).
    pub cut_off_requests: usize,
    /// Event streams still open when the grace period ended (a client that stopped reading).
    pub cut_off_streams: usize,
}

impl ShutdownReport {
    /// Whether everything finished within the grace period.
    pub fn is_clean(&self) -> bool {
        self.cut_off_requests == 0 && self.cut_off_streams == 0
    }
}

/// A counter that can be waited on until it reaches zero.
struct Gauge {
    n: Mutex<usize>,
    zero: Condvar,
}

impl Gauge {
    fn new() -> Gauge {
        Gauge {
            n: Mutex::new(0),
            zero: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, usize> {
        self.n.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn try_inc(&self, max: usize) -> bool {
        let mut n = self.lock();
        if *n >= max {
            return false;
        }
        *n += 1;
        true
    }

    fn inc(&self) {
        *self.lock() += 1;
    }

    fn dec(&self) {
        let mut n = self.lock();
        *n = n.saturating_sub(1);
        if *n == 0 {
            self.zero.notify_all();
        }
    }

    fn get(&self) -> usize {
        *self.lock()
    }

    fn wait_zero(&self, deadline: Instant) -> usize {
        let mut n = self.lock();
        while *n > 0 {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            n = match self.zero.wait_timeout(n, deadline - now) {
                Ok((guard, _)) => guard,
                Err(p) => p.into_inner().0,
            };
        }
        *n
    }
}

/// Decrements a gauge when dropped (also on unwinding).
struct GaugeGuard {
    shared: Arc<Shared>,
    stream: bool,
}

impl Drop for GaugeGuard {
    fn drop(&mut self) {
        if self.stream {
            self.shared.streams.dec();
        } else {
            self.shared.in_flight.dec();
        }
    }
}

struct Shared {
    router: Router,
    max_in_flight: usize,
    body_limit: u64,
    cache_control: Option<String>,
    host_allow: Option<HostAllowList>,
    shutting_down: AtomicBool,
    stop: Receiver<()>,
    in_flight: Gauge,
    streams: Gauge,
    abandoned: AtomicU64,
}

type Job = Box<dyn FnOnce() + Send + 'static>;

/// Threads spawned on demand up to `max`, kept until the pool is dropped.
struct Pool {
    name: &'static str,
    tx: Option<Sender<Job>>,
    rx: Receiver<Job>,
    spawned: usize,
    max: usize,
    pending: Arc<AtomicUsize>,
}

impl Pool {
    fn new(name: &'static str, max: usize) -> Pool {
        let (tx, rx) = crossbeam_channel::unbounded();
        Pool {
            name,
            tx: Some(tx),
            rx,
            spawned: 0,
            max: max.max(1),
            pending: Arc::new(AtomicUsize::new(0)),
        }
    }

    fn submit(&mut self, job: Job) {
        let pending = self.pending.fetch_add(1, Ordering::SeqCst);
        if pending >= self.spawned && self.spawned < self.max {
            let rx = self.rx.clone();
            let counter = Arc::clone(&self.pending);
            let spawned = std::thread::Builder::new()
                .name(format!("{}-{}", self.name, self.spawned))
                .spawn(move || {
                    while let Ok(job) = rx.recv() {
                        let _ = catch_unwind(AssertUnwindSafe(job));
                        counter.fetch_sub(1, Ordering::SeqCst);
                    }
                });
            if spawned.is_ok() {
                self.spawned += 1;
            }
        }
        if self.spawned == 0 {
            // No thread could be created: degrade to running the job here.
            let _ = catch_unwind(AssertUnwindSafe(job));
            self.pending.fetch_sub(1, Ordering::SeqCst);
            return;
        }
        if let Some(tx) = &self.tx {
            let _ = tx.send(job);
        }
    }
}

/// The parts of a running server that shutdown takes apart.
struct Control {
    tiny: Option<Arc<tiny_http::Server>>,
    stop: Option<Sender<()>>,
    dispatcher_done: Receiver<()>,
    dispatcher: Option<JoinHandle<()>>,
    report: Option<ShutdownReport>,
}

/// A running HTTP server. Dropping it performs [`Server::close`].
pub struct Server {
    handle: ServerHandle,
}

/// A cloneable, thread-safe handle on a [`Server`]: statistics and [`ServerHandle::close`]
/// from any thread. Dropping a handle does nothing.
#[derive(Clone)]
pub struct ServerHandle {
    local_addr: SocketAddr,
    shared: Arc<Shared>,
    control: Arc<Mutex<Control>>,
    grace: Duration,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.handle.fmt(f)
    }
}

impl std::fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("local_addr", &self.local_addr)
            .field("in_flight", &self.in_flight())
            .field("event_streams", &self.event_streams())
            .finish_non_exhaustive()
    }
}

fn strip_brackets(host: &str) -> &str {
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

fn bind(host: &str, port: u16) -> Result<TcpListener, BindError> {
    let addrs: Vec<SocketAddr> = match (strip_brackets(host), port).to_socket_addrs() {
        Ok(addrs) => addrs.collect(),
        Err(e) => {
            return Err(BindError::Resolve {
                host: host.to_owned(),
                reason: e.to_string(),
            });
        }
    };
    if addrs.is_empty() {
        return Err(BindError::Resolve {
            host: host.to_owned(),
            reason: "no addresses found".to_owned(),
        });
    }
    let mut first_error = None;
    let mut in_use = false;
    for addr in addrs {
        match TcpListener::bind(addr) {
            Ok(listener) => return Ok(listener),
            Err(e) => {
                in_use |= e.kind() == std::io::ErrorKind::AddrInUse;
                first_error.get_or_insert(e);
            }
        }
    }
    if in_use {
        return Err(BindError::AddrInUse {
            host: host.to_owned(),
            port,
        });
    }
    Err(BindError::Io {
        host: host.to_owned(),
        port,
        source: first_error.unwrap_or_else(|| std::io::Error::other("no address could be bound")),
    })
}

impl Server {
    /// Binds `config.host:config.port`, starts serving `router` on background threads and
    /// returns once listening.
    ///
    /// Errors: [`BindError::Resolve`] for an unresolvable host, [`BindError::AddrInUse`] when
    /// the port is taken, [`BindError::Io`] for any other listen failure.
    pub fn start(config: ServerConfig, router: Router) -> Result<Server, BindError> {
        let listener = bind(&config.host, config.port)?;
        let io_error = |source: std::io::Error| BindError::Io {
            host: config.host.clone(),
            port: config.port,
            source,
        };
        let local_addr = listener.local_addr().map_err(io_error)?;
        set_nodelay(&listener);
        let tiny = tiny_http::Server::from_listener(listener, None)
            .map_err(|e| io_error(std::io::Error::other(e.to_string())))?;
        let tiny = Arc::new(tiny);
        let host_allow = (config.host_check && local_addr.ip().to_canonical().is_loopback())
            .then(|| HostAllowList::new(&config.host));
        let (stop_tx, stop_rx) = crossbeam_channel::bounded::<()>(0);
        let shared = Arc::new(Shared {
            router,
            max_in_flight: config.max_in_flight.max(1),
            body_limit: config.body_limit.min(MAX_DRAIN_BYTES),
            cache_control: config.cache_control.clone(),
            host_allow,
            shutting_down: AtomicBool::new(false),
            stop: stop_rx,
            in_flight: Gauge::new(),
            streams: Gauge::new(),
            abandoned: AtomicU64::new(0),
        });
        let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(1);
        let dispatcher = {
            let shared = Arc::clone(&shared);
            let tiny = Arc::clone(&tiny);
            std::thread::Builder::new()
                .name("http-dispatch".to_owned())
                .spawn(move || {
                    dispatch_loop(&shared, &tiny);
                    drop(tiny);
                    let _ = done_tx.send(());
                })
                .map_err(io_error)?
        };
        Ok(Server {
            handle: ServerHandle {
                local_addr,
                shared,
                control: Arc::new(Mutex::new(Control {
                    tiny: Some(tiny),
                    stop: Some(stop_tx),
                    dispatcher_done: done_rx,
                    dispatcher: Some(dispatcher),
                    report: None,
                })),
                grace: config.shutdown_grace,
            },
        })
    }

    /// A handle for statistics and shutdown from other threads.
    pub fn handle(&self) -> ServerHandle {
        self.handle.clone()
    }

    /// The address actually bound (with the real port when 0 was configured).
    pub fn local_addr(&self) -> SocketAddr {
        self.handle.local_addr
    }

    /// Whether the `Host` check is active (loopback bind with [`ServerConfig::host_check`]).
    pub fn checks_host(&self) -> bool {
        self.handle.shared.host_allow.is_some()
    }

    /// Requests being handled right now (event streams excluded).
    pub fn in_flight(&self) -> usize {
        self.handle.in_flight()
    }

    /// Event streams being written right now.
    pub fn event_streams(&self) -> usize {
        self.handle.event_streams()
    }

    /// Connections abandoned because their declared body was too large to drain safely.
    pub fn abandoned_connections(&self) -> u64 {
        self.handle.abandoned_connections()
    }

    /// Whether shutdown has started.
    pub fn is_shutting_down(&self) -> bool {
        self.handle.is_shutting_down()
    }

    /// Graceful shutdown; see [`ServerHandle::close`].
    pub fn close(self) -> ShutdownReport {
        self.handle.close()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.handle.close();
    }
}

impl ServerHandle {
    /// The address actually bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Requests being handled right now (event streams excluded).
    pub fn in_flight(&self) -> usize {
        self.shared.in_flight.get()
    }

    /// Event streams being written right now.
    pub fn event_streams(&self) -> usize {
        self.shared.streams.get()
    }

    /// Connections abandoned because their declared body was too large to drain safely.
    pub fn abandoned_connections(&self) -> u64 {
        self.shared.abandoned.load(Ordering::Relaxed)
    }

    /// Whether shutdown has started.
    pub fn is_shutting_down(&self) -> bool {
        self.shared.shutting_down.load(Ordering::SeqCst)
    }

    /// Graceful shutdown (VIEWER.md §2.10 step 5): stop accepting connections, answer requests
    /// already queued with 503 `{"error":"shutting down"}`, send every event stream its final
    /// event and close it, let in-flight responses finish, and return within
    /// [`ServerConfig::shutdown_grace`] whatever clients do. Idempotent: later and concurrent
    /// calls return the first call's report. Called from inside a handler, it waits the whole
    /// grace period (that handler is itself in flight).
    pub fn close(&self) -> ShutdownReport {
        let mut control = self.control.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(report) = control.report {
            return report;
        }
        let started = Instant::now();
        let deadline = started + self.grace;
        self.shared.shutting_down.store(true, Ordering::SeqCst);
        // Disconnecting the stop channel wakes every event stream at once.
        drop(control.stop.take());
        if let Some(tiny) = control.tiny.take() {
            tiny.unblock();
        }
        if control.dispatcher_done.recv_deadline(deadline).is_ok()
            && let Some(handle) = control.dispatcher.take()
        {
            let _ = handle.join();
        }
        let cut_off_requests = self.shared.in_flight.wait_zero(deadline);
        let cut_off_streams = self.shared.streams.wait_zero(deadline);
        let report = ShutdownReport {
            elapsed: started.elapsed(),
            cut_off_requests,
            cut_off_streams,
        };
        control.report = Some(report);
        report
    }
}

unsafe extern "C" {
    fn setsockopt(fd: i32, level: i32, name: i32, value: *const std::ffi::c_void, len: u32) -> i32;
}

/// Disables Nagle's algorithm on the listening socket; Linux copies `TCP_NODELAY` to every
/// accepted connection. Without it, a response written in several pieces (head, then a large
/// body) can wait ~40 ms for the client's delayed ACK. Best effort: failure only costs latency.
fn set_nodelay(listener: &TcpListener) {
    use std::os::fd::AsRawFd;
    const IPPROTO_TCP: i32 = 6;
    const TCP_NODELAY: i32 = 1;
    let one: i32 = 1;
    // SAFETY: the descriptor is open for the call; the option value is a live i32.
    unsafe {
        setsockopt(
            listener.as_raw_fd(),
            IPPROTO_TCP,
            TCP_NODELAY,
            (&one as *const i32).cast(),
            std::mem::size_of::<i32>() as u32,
        );
    }
}

fn dispatch_loop(shared: &Arc<Shared>, tiny: &tiny_http::Server) {
    let mut workers = Pool::new("http-worker", shared.max_in_flight);
    let mut rejecters = Pool::new("http-reject", REJECT_THREADS);
    loop {
        let rq = match tiny.recv() {
            Ok(rq) => rq,
            Err(_) if shared.shutting_down.load(Ordering::SeqCst) => break,
            // An accept error ends tiny_http's accept loop; requests on connections already
            // open still arrive, so keep dispatching until shutdown.
            Err(_) => continue,
        };
        let request = Request::from_tiny(rq, shared.body_limit);
        if shared.shutting_down.load(Ordering::SeqCst) {
            let shared = Arc::clone(shared);
            rejecters.submit(Box::new(move || {
                send(&shared, request, Response::error(503, "shutting down"));
            }));
            continue;
        }
        if shared.in_flight.try_inc(shared.max_in_flight) {
            let shared = Arc::clone(shared);
            workers.submit(Box::new(move || {
                let _guard = GaugeGuard {
                    shared: Arc::clone(&shared),
                    stream: false,
                };
                handle(&shared, request);
            }));
        } else {
            let shared = Arc::clone(shared);
            rejecters.submit(Box::new(move || send(&shared, request, Response::busy())));
        }
    }
}

fn handle(shared: &Arc<Shared>, mut request: Request) {
    let denied = shared
        .host_allow
        .as_ref()
        .and_then(|allow| allow.check(&request));
    let response = match denied {
        Some(resp) => resp,
        None => catch_unwind(AssertUnwindSafe(|| shared.router.dispatch(&mut request)))
            .unwrap_or_else(|_| Response::error(500, "internal error")),
    };
    send(shared, request, response);
}

fn header_is_sendable(name: &str, value: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
        && value
            .bytes()
            .all(|b| b == b'\t' || (0x20..0x7f).contains(&b))
}

fn tiny_headers(headers: &[(String, String)]) -> Vec<tiny_http::Header> {
    headers
        .iter()
        .filter(|(n, v)| header_is_sendable(n, v))
        .filter_map(|(n, v)| tiny_http::Header::from_bytes(n.as_bytes(), v.as_bytes()).ok())
        .collect()
}

fn set_if_absent(headers: &mut Vec<(String, String)>, name: &str, value: &str) {
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
        headers.push((name.to_owned(), value.to_owned()));
    }
}

fn force(headers: &mut Vec<(String, String)>, name: &str, value: &str) {
    headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
    headers.push((name.to_owned(), value.to_owned()));
}

/// Writes `response` for `request`: standard headers, ETag/304, SSE hand-off, and the
/// abandonment path for undrainable bodies.
fn send(shared: &Arc<Shared>, mut request: Request, response: Response) {
    let undrainable = request.unread_declared() > MAX_DRAIN_BYTES;
    let response = if undrainable && response.is_event_stream() {
        Response::payload_too_large(shared.body_limit)
    } else {
        response
    };
    let is_head = request.method() == "HEAD";
    let version = request.http_version();
    let if_none_match: Vec<String> = request
        .header_values("if-none-match")
        .map(str::to_owned)
        .collect();
    let rq = match std::mem::replace(&mut request.source, Source::Taken) {
        Source::Tiny(rq) => *rq,
        Source::Memory(_) | Source::Taken => return,
    };
    let (mut status, mut headers, body) = response.into_parts();
    force(&mut headers, "x-content-type-options", "nosniff");
    if let Some(cc) = &shared.cache_control {
        set_if_absent(&mut headers, "cache-control", cc);
    }
    let bytes = match body {
        Body::Bytes(bytes) => bytes,
        Body::Sse {
            subscription,
            initial,
        } => {
            if shared.shutting_down.load(Ordering::SeqCst) {
                status = 503;
                force(&mut headers, "content-type", super::JSON_CONTENT_TYPE);
                br#"{"error":"shutting down"}"#.to_vec()
            } else if is_head {
                for (n, v) in sse_headers() {
                    force(&mut headers, n, v);
                }
                Vec::new()
            } else {
                start_stream(shared, rq, version, status, headers, subscription, initial);
                return;
            }
        }
    };
    let not_modified = (200..300).contains(&status)
        && !if_none_match.is_empty()
        && headers
            .iter()
            .find(|(n, _)| n == "etag")
            .is_some_and(|(_, tag)| if_none_match.iter().any(|h| if_none_match_matches(h, tag)));
    if undrainable {
        abandon(shared, rq, status, &headers, &bytes, is_head);
        return;
    }
    if headers.iter().any(|(n, _)| n == "connection") {
        // tiny_http drops a `connection` header set by the application; write such responses
        // (the 413 of HOST.md §10.4 step 2 carries `connection: close`) ourselves.
        let status = if not_modified { 304 } else { status };
        if not_modified {
            headers.retain(|(n, _)| n != "content-type");
        }
        write_raw(
            rq,
            version,
            status,
            &headers,
            &bytes,
            is_head || not_modified,
        );
        return;
    }
    let tiny_response = if not_modified {
        // 304 without a body; the content-length is the one a 200 would have had.
        headers.retain(|(n, _)| n != "content-type");
        tiny_http::Response::new(
            tiny_http::StatusCode(304),
            tiny_headers(&headers),
            std::io::Cursor::new(Vec::new()),
            Some(bytes.len()),
            None,
        )
        .with_chunked_threshold(usize::MAX)
    } else {
        let len = bytes.len();
        tiny_http::Response::new(
            tiny_http::StatusCode(status),
            tiny_headers(&headers),
            std::io::Cursor::new(bytes),
            Some(len),
            None,
        )
    };
    let _ = rq.respond(tiny_response);
}

/// Writes a complete response by hand through the request's raw writer. tiny_http first
/// discards the unread body (at most [`MAX_DRAIN_BYTES`], checked by the caller).
fn write_raw(
    rq: tiny_http::Request,
    version: (u8, u8),
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
    omit_body: bool,
) {
    let reason = tiny_http::StatusCode(status).default_reason_phrase();
    let minor = if version >= (1, 1) { 1 } else { 0 };
    let mut head = format!("HTTP/1.{minor} {status} {reason}\r\n");
    for (n, v) in headers
        .iter()
        .filter(|(n, v)| header_is_sendable(n, v) && n != "content-length")
    {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
    let mut out = rq.into_writer();
    let _ = out
        .write_all(head.as_bytes())
        .and_then(|()| {
            if omit_body {
                Ok(())
            } else {
                out.write_all(body)
            }
        })
        .and_then(|()| out.flush());
}

/// Answers a request whose unread declared body is too large to discard safely, through
/// tiny_http's raw stream hand-off, and leaks the connection so that tiny_http never tries to
/// discard that body (see the module docs).
///
/// tiny_http prints this head itself and refuses `content-length`, `connection` and
/// `transfer-encoding` there, adding `connection: upgrade` and `upgrade: none`; the body that
/// follows is therefore delimited only by the connection, which stays open. Clients see the
/// status and headers at once; this is reserved for declared bodies over 64 MiB.
fn abandon(
    shared: &Arc<Shared>,
    rq: tiny_http::Request,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
    is_head: bool,
) {
    let head = tiny_http::Response::new(
        tiny_http::StatusCode(status),
        tiny_headers(headers),
        std::io::empty(),
        Some(0),
        None,
    );
    let mut stream = rq.upgrade("none", head);
    let body = if is_head { &[][..] } else { body };
    let _ = stream.write_all(body).and_then(|()| stream.flush());
    shared.abandoned.fetch_add(1, Ordering::Relaxed);
    // Dropping the stream would make tiny_http drain (and first allocate) the whole declared
    // body; leaking it keeps the process alive at the cost of one idle connection.
    std::mem::forget(stream);
}

fn sse_headers() -> [(&'static str, &'static str); 4] {
    [
        ("content-type", "text/event-stream"),
        ("cache-control", "no-cache"),
        ("connection", "keep-alive"),
        ("x-accel-buffering", "no"),
    ]
}

fn start_stream(
    shared: &Arc<Shared>,
    rq: tiny_http::Request,
    version: (u8, u8),
    status: u16,
    mut headers: Vec<(String, String)>,
    subscription: SseSubscription,
    initial: Vec<u8>,
) {
    for (n, v) in sse_headers() {
        force(&mut headers, n, v);
    }
    headers.retain(|(n, _)| n != "content-length" && n != "transfer-encoding");
    let chunked = version >= (1, 1);
    if chunked {
        headers.push(("transfer-encoding".into(), "chunked".into()));
    }
    let reason = tiny_http::StatusCode(status).default_reason_phrase();
    let (major, minor) = if version >= (1, 1) { (1, 1) } else { (1, 0) };
    let mut head = format!("HTTP/{major}.{minor} {status} {reason}\r\n");
    for (n, v) in headers.iter().filter(|(n, v)| header_is_sendable(n, v)) {
        head.push_str(n);
        head.push_str(": ");
        head.push_str(v);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    let writer = rq.into_writer();
    shared.streams.inc();
    let guard = GaugeGuard {
        shared: Arc::clone(shared),
        stream: true,
    };
    let stop = shared.stop.clone();
    let spawned = std::thread::Builder::new()
        .name("http-sse".to_owned())
        .spawn(move || {
            let _guard = guard;
            pump(
                writer,
                head.as_bytes(),
                &initial,
                subscription,
                &stop,
                chunked,
            );
        });
    // On spawn failure the closure (writer, subscription, guard) is dropped: the stream closes
    // and the gauge goes back down.
    drop(spawned);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sendable_headers() {
        assert!(header_is_sendable("etag", "\"b3-00\""));
        assert!(header_is_sendable("x-a", "tab\there"));
        assert!(!header_is_sendable("bad name", "x"));
        assert!(!header_is_sendable("", "x"));
        assert!(!header_is_sendable("x", "a\r\nset-cookie: y"));
        assert!(!header_is_sendable("x", "é"));
    }

    #[test]
    fn gauge_waits_and_times_out() {
        let g = Arc::new(Gauge::new());
        assert!(g.try_inc(1));
        assert!(!g.try_inc(1));
        let t0 = Instant::now();
        assert_eq!(g.wait_zero(t0 + Duration::from_millis(50)), 1);
        assert!(t0.elapsed() >= Duration::from_millis(50));
        let g2 = Arc::clone(&g);
        let h = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            g2.dec();
        });
        assert_eq!(g.wait_zero(Instant::now() + Duration::from_secs(5)), 0);
        h.join().unwrap();
    }

    #[test]
    fn bind_errors_are_typed() {
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = taken.local_addr().unwrap().port();
        assert!(matches!(
            bind("127.0.0.1", port),
            Err(BindError::AddrInUse { port: p, .. }) if p == port
        ));
        assert!(matches!(
            // A NUL byte is rejected before any lookup: no DNS query leaves the machine.
            bind("no-such\0host", 0),
            Err(BindError::Resolve { .. })
        ));
        // 192.0.2.0/24 (TEST-NET-1) is never a local address: EADDRNOTAVAIL.
        assert!(matches!(bind("192.0.2.1", 0), Err(BindError::Io { .. })));
        let l = bind("[::1]", 0).or_else(|_| bind("127.0.0.1", 0)).unwrap();
        assert!(l.local_addr().unwrap().ip().is_loopback());
    }
}
