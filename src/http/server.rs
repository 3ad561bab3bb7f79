//! The server: binding, listener supervision, the dispatcher and worker pool, the busy limit,
//! framing checks, response writing (standard headers, ETag/304, SSE hand-off, closing a
//! connection after a refusal) and graceful shutdown.
//!
//! Sources: VIEWER.md §2.10 (bind errors; shutdown within 1 s even with open event streams),
//! §6.1 (64 concurrent requests → 503 `{"error":"busy"}`, `Host` check, `nosniff`,
//! `cache-control: no-cache`, ETag/304), §6.6 (event streams), HOST.md §10.1 (the same rules for
//! the daemon), ARCHITECTURE.md (tiny_http: stream SSE through the request's writer, stop with
//! `unblock()`, bound request bodies ourselves), issue 7 §1 (no leak, no wedge, strict framing).
//!
//! ## Threads
//! tiny_http accepts connections and parses request heads on its own threads (one per
//! connection). A forwarder thread per tiny_http instance passes parsed requests to one
//! dispatcher thread, which applies the framing checks and hands each request to a worker;
//! workers are spawned on demand up to [`ServerConfig::max_in_flight`] and kept, so every
//! admitted request runs at once. A request arriving while `max_in_flight` requests are being
//! handled, or refused for its framing, is answered by a small separate pool, so the dispatcher
//! never blocks on a socket. An event stream gets its own thread once its head is written; it
//! does not count as an in-flight request (the hub caps streams instead).
//!
//! ## The listener never dies
//! tiny_http 0.12 ends its accept loop on the first `accept()` error (tiny-http issue #283), for
//! example `EMFILE` when the process runs out of descriptors, and closes its copy of the
//! listening socket. The server keeps its own copy and a supervisor thread: when an instance
//! reports the accept error, the supervisor starts a new tiny_http instance on a fresh clone of
//! the socket after a backoff of 5 ms doubling to 1 s (as Go's net/http does), logging one line
//! to stderr per episode; connections never accepted wait in the kernel's backlog meanwhile. The
//! old instance keeps delivering requests from its open connections until it has been idle for
//! twice the I/O timeout. The soft `RLIMIT_NOFILE` is raised to the hard limit at start.
//!
//! ## No connection outlives its use
//! The listening socket carries `SO_RCVTIMEO` and `SO_SNDTIMEO` ([`ServerConfig::io_timeout`],
//! 30 s by default), which Linux copies to every accepted connection: a head or body that
//! stalls, an idle keep-alive connection, and an event-stream client that stops reading are
//! closed when a read or write makes no progress for that long. `accept()` honours the
//! listener's `SO_RCVTIMEO` too, so a tiny_http instance that sees no connection for that long
//! ends its accept loop with `EAGAIN`; the supervisor starts the next instance at once, without
//! backoff or log (an idle server thus renews its accept thread every 30 s).
//!
//! Not bounded by any of this (inside tiny_http 0.12, out of reach without patching it): the
//! request-head size (a head is buffered whole; peak memory is about twice its size), and an
//! `HTTP/2.0` request line, which deadlocks its connection thread for good (tiny_http writes its
//! 505 through the next sequential writer while the request holding the previous one is alive).
//!
//! ## Framing and closing
//! Before routing, the dispatcher checks each head against RFC 9112 (see `framing.rs`): a
//! refused head gets 400 or 501 with `connection: close`. Every response that carries
//! `connection: close` (refusals, 413s, a body that could not be read, an unread declared body
//! over the body limit) closes its connection: the server writes the response at once directly
//! on the socket, ends its output, discards what the client still sends for at most 2 s
//! (lingering close, so that a client still sending its body reads the response instead of a
//! reset) and stops reading. Requests tiny_http parses from such a connection are never routed.
//! (A response written this way does not wait for an earlier pipelined response on the same
//! connection still being written; only a client that pipelines behind a request it then
//! oversizes can see them interleaved.) Requests are never
//! abandoned: see `conn.rs` for how a request with an absurd unread `Content-Length` is let go
//! (tiny_http would allocate the whole declared length to discard it).
//!
//! tiny_http also drops any `connection` header an application sets; responses carrying one
//! are written by hand through the request's writer instead.

use std::collections::HashMap;
use std::io::Write;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

use super::conn::{ClientSocket, Disposal, Half, disposal, dispose};
use super::framing;
use super::policy::HostAllowList;
use super::request::{DEFAULT_BODY_LIMIT, Request, Source};
use super::response::{Body, Response, if_none_match_matches};
use super::router::Router;
use super::sse::{SseSubscription, pump};

/// The largest unread declared request body that is always safe to let tiny_http discard
/// (64 MiB; larger ones are handled as `conn.rs` describes). It is also the ceiling of
/// [`ServerConfig::body_limit`].
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
    /// The receive and send timeout of every connection (`SO_RCVTIMEO`/`SO_SNDTIMEO` on the
    /// listening socket): a read or write making no progress for this long closes the
    /// connection. Default [`super::DEFAULT_IO_TIMEOUT`] (30 s), or the milliseconds in
    /// `REACTOR_HTTP_IO_TIMEOUT_MS` when set (for tests). Values below 100 ms are treated as
    /// 100 ms.
    pub io_timeout: Duration,
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
            io_timeout: super::conn::io_timeout_from_env(),
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
    local_port: u16,
    io_timeout: Duration,
    /// Peers whose connection is being closed after a refusal, with the time of the refusal:
    /// requests tiny_http still parses from them are never routed.
    closing: Mutex<HashMap<SocketAddr, Instant>>,
    /// Running tiny_http instances (the newest last); shutdown unblocks them all.
    generations: Mutex<Vec<Arc<tiny_http::Server>>>,
    parked: AtomicU64,
    closed: AtomicU64,
    restarts: AtomicU64,
}

impl Shared {
    fn mark_closing(&self, peer: SocketAddr) {
        let now = Instant::now();
        let keep = self.io_timeout + Duration::from_secs(1);
        let mut map = self.closing.lock().unwrap_or_else(|p| p.into_inner());
        map.retain(|_, at| now.duration_since(*at) < keep);
        map.insert(peer, now);
    }

    fn is_closing(&self, peer: SocketAddr) -> bool {
        let keep = self.io_timeout + Duration::from_secs(1);
        let map = self.closing.lock().unwrap_or_else(|p| p.into_inner());
        map.get(&peer).is_some_and(|at| at.elapsed() < keep)
    }
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
        super::conn::raise_open_file_limit();
        super::conn::install_panic_hook();
        let listener = bind(&config.host, config.port)?;
        let io_error = |source: std::io::Error| BindError::Io {
            host: config.host.clone(),
            port: config.port,
            source,
        };
        let local_addr = listener.local_addr().map_err(io_error)?;
        let io_timeout = config.io_timeout.max(Duration::from_millis(100));
        // Best effort: without the options, connections only lose their timeouts.
        let _ = super::conn::configure_listener(&listener, io_timeout);
        let first = start_tiny(&listener).map_err(io_error)?;
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
            local_port: local_addr.port(),
            io_timeout,
            closing: Mutex::new(HashMap::new()),
            generations: Mutex::new(Vec::new()),
            parked: AtomicU64::new(0),
            closed: AtomicU64::new(0),
            restarts: AtomicU64::new(0),
        });
        let (request_tx, request_rx) = crossbeam_channel::unbounded::<tiny_http::Request>();
        let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(1);
        let dispatcher = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("http-dispatch".to_owned())
                .spawn(move || {
                    dispatch_loop(&shared, &request_rx);
                    let _ = done_tx.send(());
                })
                .map_err(io_error)?
        };
        {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("http-listener".to_owned())
                .spawn(move || supervise(&shared, listener, local_addr, first, request_tx))
                .map_err(io_error)?;
        }
        Ok(Server {
            handle: ServerHandle {
                local_addr,
                shared,
                control: Arc::new(Mutex::new(Control {
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

    /// Requests kept for the life of the process because tiny_http 0.12 cannot let them go
    /// (an unread declared body larger than the machine can reserve; see `conn.rs`).
    pub fn parked_requests(&self) -> u64 {
        self.handle.parked_requests()
    }

    /// Connections the server closed after its response (refusals, 413s, unreadable bodies).
    pub fn closed_connections(&self) -> u64 {
        self.handle.closed_connections()
    }

    /// How many times the listener was restarted after an accept error.
    pub fn listener_restarts(&self) -> u64 {
        self.handle.listener_restarts()
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

    /// See [`Server::parked_requests`].
    pub fn parked_requests(&self) -> u64 {
        self.shared.parked.load(Ordering::Relaxed)
    }

    /// See [`Server::closed_connections`].
    pub fn closed_connections(&self) -> u64 {
        self.shared.closed.load(Ordering::Relaxed)
    }

    /// See [`Server::listener_restarts`].
    pub fn listener_restarts(&self) -> u64 {
        self.shared.restarts.load(Ordering::Relaxed)
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
        // Disconnecting the stop channel wakes every event stream and the supervisor at once.
        drop(control.stop.take());
        for tiny in self
            .shared
            .generations
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
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

/// Starts a tiny_http instance on a clone of `listener` (tiny_http closes its copy when its
/// accept loop ends). tiny_http panics when it cannot spawn its accept thread; that is an error.
fn start_tiny(listener: &TcpListener) -> std::io::Result<Arc<tiny_http::Server>> {
    let clone = listener.try_clone()?;
    match catch_unwind(AssertUnwindSafe(|| {
        tiny_http::Server::from_listener(clone, None)
    })) {
        Ok(Ok(tiny)) => Ok(Arc::new(tiny)),
        Ok(Err(e)) => Err(std::io::Error::other(e.to_string())),
        Err(_) => Err(std::io::Error::other("cannot start the accept thread")),
    }
}

const BACKOFF_FIRST: Duration = Duration::from_millis(5);
const BACKOFF_MAX: Duration = Duration::from_secs(1);

/// One tiny_http instance and whether its accept loop has ended.
struct Generation {
    tiny: Arc<tiny_http::Server>,
    dead: AtomicBool,
}

/// Keeps a tiny_http instance accepting on `listener` until shutdown (see the module docs).
///
/// tiny_http's accept loop ends in two ways: it reports the `accept()` error through its queue
/// (the forwarder passes it on), or its thread panics when it cannot duplicate an accepted socket
/// under `EMFILE` (seen through the panic hook's count, [`super::conn::tiny_panics`]).
fn supervise(
    shared: &Arc<Shared>,
    listener: TcpListener,
    local_addr: SocketAddr,
    first: Arc<tiny_http::Server>,
    requests: Sender<tiny_http::Request>,
) {
    let (failed_tx, failed_rx) = crossbeam_channel::unbounded::<std::io::Error>();
    let mut next = Some(first);
    let mut current: Option<Arc<Generation>> = None;
    let mut backoff = BACKOFF_FIRST;
    let mut episode = false;
    let mut last_failure = Instant::now();
    let mut panics_seen = super::conn::tiny_panics();
    loop {
        if let Some(tiny) = next.take() {
            let registered = {
                let mut generations = shared.generations.lock().unwrap_or_else(|p| p.into_inner());
                if shared.shutting_down.load(Ordering::SeqCst) {
                    false
                } else {
                    generations.push(Arc::clone(&tiny));
                    true
                }
            };
            if !registered {
                return;
            }
            let generation = Arc::new(Generation {
                tiny,
                dead: AtomicBool::new(false),
            });
            let forwarder = {
                let shared = Arc::clone(shared);
                let requests = requests.clone();
                let failed = failed_tx.clone();
                let generation = Arc::clone(&generation);
                std::thread::Builder::new()
                    .name("http-forward".to_owned())
                    .spawn(move || forward(&shared, &generation, &requests, &failed))
            };
            if forwarder.is_err() {
                // Without a forwarder nobody would answer this instance's requests.
                generation.tiny.unblock();
                retire(shared, &generation.tiny);
                let _ = failed_tx.send(std::io::Error::other("cannot spawn a thread"));
            }
            current = Some(generation);
        }
        // Wait for an accept error, a panicked accept thread, or shutdown; a quiet second
        // ends an episode.
        let error = crossbeam_channel::select! {
            recv(failed_rx) -> e => e.ok(),
            recv(shared.stop) -> _ => return,
            default(Duration::from_millis(20)) => {
                let panics = super::conn::tiny_panics();
                if panics != panics_seen {
                    panics_seen = panics;
                    if let Some(g) = &current {
                        g.dead.store(true, Ordering::SeqCst);
                    }
                    Some(std::io::Error::other(
                        "tiny_http's accept thread panicked: cannot duplicate a socket (out of descriptors)",
                    ))
                } else {
                    if episode && last_failure.elapsed() >= BACKOFF_MAX + backoff {
                        backoff = BACKOFF_FIRST;
                        episode = false;
                    }
                    continue;
                }
            }
        };
        let Some(error) = error else { return };
        if matches!(
            error.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ) {
            // Not a failure: `accept()` honours the listener's SO_RCVTIMEO, so an instance that
            // saw no connection for the I/O timeout ends its accept loop. Start the next one at
            // once (connections wait in the backlog meanwhile).
            match start_tiny(&listener) {
                Ok(tiny) => next = Some(tiny),
                Err(e) => {
                    let _ = failed_tx.send(e);
                }
            }
            continue;
        }
        last_failure = Instant::now();
        if !episode {
            episode = true;
            super::conn::log_line(&format!(
                "reactor: http: accepting connections on {local_addr} failed ({error}); \
                 restarting the listener with backoff (5 ms doubling to 1 s)"
            ));
        }
        loop {
            crossbeam_channel::select! {
                recv(shared.stop) -> _ => return,
                default(backoff) => {}
            }
            backoff = (backoff * 2).min(BACKOFF_MAX);
            match start_tiny(&listener) {
                Ok(tiny) => {
                    shared.restarts.fetch_add(1, Ordering::Relaxed);
                    next = Some(tiny);
                    break;
                }
                // EMFILE again (the clone needs a descriptor): keep backing off.
                Err(_) => continue,
            }
        }
    }
}

fn retire(shared: &Shared, tiny: &Arc<tiny_http::Server>) {
    shared
        .generations
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .retain(|t| !Arc::ptr_eq(t, tiny));
}

/// Passes the requests of one tiny_http instance to the dispatcher. After the instance's accept
/// loop ended (its error is reported once on `failed`), keeps passing requests from its open
/// connections until none has arrived for twice the I/O timeout.
fn forward(
    shared: &Arc<Shared>,
    generation: &Generation,
    requests: &Sender<tiny_http::Request>,
    failed: &Sender<std::io::Error>,
) {
    let tiny = &generation.tiny;
    let poll = Duration::from_millis(250);
    let idle_limit = shared.io_timeout * 2;
    let mut last_request = Instant::now();
    loop {
        if shared.shutting_down.load(Ordering::SeqCst) {
            // Pass on what is queued (answered 503 by the dispatcher), then stop.
            while let Ok(Some(rq)) = tiny.try_recv() {
                let _ = requests.send(rq);
            }
            break;
        }
        match tiny.recv_timeout(poll) {
            Ok(Some(rq)) => {
                last_request = Instant::now();
                if requests.send(rq).is_err() {
                    break;
                }
            }
            Ok(None) => {
                if generation.dead.load(Ordering::SeqCst) && last_request.elapsed() >= idle_limit {
                    break;
                }
            }
            // `unblock()` during shutdown, handled at the top of the loop.
            Err(_) if shared.shutting_down.load(Ordering::SeqCst) => {}
            Err(e) => {
                // The accept loop has ended (tiny-http issue #283).
                if !generation.dead.swap(true, Ordering::SeqCst) {
                    last_request = Instant::now();
                    let _ = failed.send(e);
                }
            }
        }
    }
    retire(shared, tiny);
}

fn dispatch_loop(shared: &Arc<Shared>, incoming: &Receiver<tiny_http::Request>) {
    let mut workers = Pool::new("http-worker", shared.max_in_flight);
    let mut rejecters = Pool::new("http-reject", REJECT_THREADS);
    while let Ok(rq) = incoming.recv() {
        let request = Request::from_tiny(rq, shared.body_limit);
        let peer = request.remote_addr();
        if peer.is_some_and(|p| shared.is_closing(p)) {
            // Parsed from a connection being closed after a refusal: never routed, never
            // answered (its output is already closed).
            let shared = Arc::clone(shared);
            rejecters.submit(Box::new(move || discard(&shared, request)));
            continue;
        }
        if let Some(refusal) = framing::check(request.http_version(), request.headers()) {
            // Marked here, before the next request of this connection is dispatched.
            if let Some(p) = peer {
                shared.mark_closing(p);
            }
            let shared = Arc::clone(shared);
            rejecters.submit(Box::new(move || {
                let response = Response::error(refusal.status, refusal.message)
                    .with_header("connection", "close");
                send(&shared, request, response);
            }));
            continue;
        }
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

/// Lets a request go without routing or answering it (tiny_http's own 500 meets the closed
/// output of a connection being closed).
fn discard(shared: &Shared, mut request: Request) {
    let how = disposal(request.unread_declared());
    if how == Disposal::Park {
        shared.parked.fetch_add(1, Ordering::Relaxed);
    }
    if let Source::Tiny(rq) = std::mem::replace(&mut request.source, Source::Taken) {
        dispose(*rq, how);
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

/// Writes `response` for `request`: standard headers, ETag/304, SSE hand-off, and closing the
/// connection when the response says `connection: close` or the request's body makes the rest of
/// the connection unusable (see the module docs).
fn send(shared: &Arc<Shared>, mut request: Request, response: Response) {
    let unread = request.unread_declared();
    let close = response
        .header("connection")
        .is_some_and(|v| v.eq_ignore_ascii_case("close"))
        || unread > shared.body_limit
        || request.body_failed();
    let response = if close && response.is_event_stream() {
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
    if not_modified {
        // 304 without a body; the content-length is the one a 200 would have had.
        status = 304;
        headers.retain(|(n, _)| n != "content-type");
    }
    let omit_body = is_head || not_modified;
    if close {
        force(&mut headers, "connection", "close");
        close_after(
            shared, rq, version, status, &headers, &bytes, omit_body, unread,
        );
        return;
    }
    if headers.iter().any(|(n, _)| n == "connection") {
        // tiny_http drops a `connection` header set by the application; write such responses
        // ourselves.
        if let Some(mut out) = write_raw(
            rq.into_writer(),
            version,
            status,
            &headers,
            &bytes,
            omit_body,
        ) {
            let _ = out.flush();
        }
        return;
    }
    let tiny_response = if not_modified {
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

/// A response head written by hand: status line, the sendable headers, `content-length`.
fn raw_head(version: (u8, u8), status: u16, headers: &[(String, String)], len: usize) -> String {
    let reason = tiny_http::StatusCode(status).default_reason_phrase();
    let minor = if version >= (1, 1) { 1 } else { 0 };
    let mut head = format!("HTTP/1.{minor} {status} {reason}\r\n");
    for (n, v) in headers
        .iter()
        .filter(|(n, v)| header_is_sendable(n, v) && n != "content-length")
    {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str(&format!("content-length: {len}\r\n\r\n"));
    head
}

/// Writes a complete response head and body by hand to `out`; returns the writer, or `None`
/// when the connection failed.
fn write_raw(
    mut out: Box<dyn Write + Send>,
    version: (u8, u8),
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
    omit_body: bool,
) -> Option<Box<dyn Write + Send>> {
    let head = raw_head(version, status, headers, body.len());
    out.write_all(head.as_bytes())
        .and_then(|()| {
            if omit_body {
                Ok(())
            } else {
                out.write_all(body)
            }
        })
        .and_then(|()| out.flush())
        .ok()
        .map(|()| out)
}

/// Writes the response and closes the connection; nothing after this request's head is ever
/// parsed as another request (such requests are marked and refused by the dispatcher).
///
/// With a handle on the socket (Linux), the response goes out at once, written directly on the
/// socket and followed by the end of output; tiny_http then discards what the client still sends
/// of its body (lingering close, at most [`super::conn::LINGER`], after which the socket stops
/// reading) and lets the connection go. Without a handle, tiny_http discards the body first (up
/// to [`MAX_DRAIN_BYTES`], bounded by the I/O timeout) and the client is trusted to honour
/// `connection: close`. A request whose unread body cannot be discarded at all is handled as
/// `conn.rs` describes.
#[allow(clippy::too_many_arguments)]
fn close_after(
    shared: &Arc<Shared>,
    rq: tiny_http::Request,
    version: (u8, u8),
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
    omit_body: bool,
    unread: u64,
) {
    let peer = rq.remote_addr().copied();
    if let Some(p) = peer {
        shared.mark_closing(p);
    }
    shared.closed.fetch_add(1, Ordering::Relaxed);
    let how = disposal(unread);
    if how == Disposal::Park {
        shared.parked.fetch_add(1, Ordering::Relaxed);
    }
    if let Some(socket) = peer.and_then(|p| ClientSocket::find(shared.local_port, p)) {
        let mut bytes = raw_head(version, status, headers, body.len()).into_bytes();
        if !omit_body {
            bytes.extend_from_slice(body);
        }
        let _ = socket.write_all(&bytes);
        socket.shutdown(Half::Write);
        if unread > MAX_DRAIN_BYTES {
            // Nothing worth lingering for: stop reading now.
            socket.shutdown(Half::Read);
        } else {
            socket.stop_reading_after_linger();
        }
        // tiny_http's own response to a dropped request (a 500) meets the closed output.
        dispose(rq, how);
        return;
    }
    if how == Disposal::Drop {
        // `into_writer` drops the body reader (tiny_http discards the rest) before writing.
        drop(write_raw(
            rq.into_writer(),
            version,
            status,
            headers,
            body,
            omit_body,
        ));
        return;
    }
    // The body reader must not be dropped by tiny_http's code paths: take the stream through
    // the raw hand-off, which keeps the reader. tiny_http prints this head itself (adding
    // `connection: upgrade` and `upgrade: none`, refusing `content-length`), so the body is
    // delimited by the close.
    let head = tiny_http::Response::new(
        tiny_http::StatusCode(status),
        tiny_headers(headers),
        std::io::empty(),
        Some(0),
        None,
    );
    let mut stream = rq.upgrade("none", head);
    let body = if omit_body { &[][..] } else { body };
    let _ = stream.write_all(body).and_then(|()| stream.flush());
    dispose(stream, how);
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
