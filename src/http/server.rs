//! The server: binding, the public API ([`Server`], [`ServerHandle`]), the threads it starts
//! and graceful shutdown.
//!
//! Sources: VIEWER.md §2.10 (bind errors; shutdown within 1 s even with open event streams),
//! §6.1 (64 concurrent requests → 503 `{"error":"busy"}`, `Host` check, `nosniff`,
//! `cache-control: no-cache`, ETag/304), §6.6 (event streams), HOST.md §10.1 (the same rules for
//! the daemon), ARCHITECTURE.md (tiny_http: stream SSE through the request's writer, stop with
//! `unblock()`, bound request bodies ourselves), issue 7 §1 (no leak, no wedge, strict framing).
//!
//! ## Threads and where each concern lives
//! - `gate.rs`: the server's own accept loop on the public socket (pausing with backoff after an
//!   `accept()` error such as `EMFILE`, so the listener never dies) and, per connection, a
//!   reader that reads and checks every request head with bounds and timeouts (`head.rs`,
//!   `framing.rs`) and passes it on, and a writer that copies the responses back.
//! - `instances.rs`: tiny_http, listening on a private socket (`internal.rs`) that only the gate
//!   reaches, parses the passed-on heads and bodies; a supervisor restarts it after an accept
//!   error, and forwarder threads pass its requests to the dispatcher.
//! - `dispatch.rs`: the dispatcher and worker pools (the in-flight limit, 503 `busy`).
//! - `respond.rs`: writing responses, event-stream hand-off, closing after a refusal.
//!
//! ## No connection outlives its use
//! Every connection gets `SO_RCVTIMEO` and `SO_SNDTIMEO` ([`ServerConfig::io_timeout`], 30 s by
//! default): a head must be complete within that time of the moment the gate started waiting
//! for it (which also closes an idle keep-alive connection), a body that stalls for that long is
//! cut (the request gets 400), and a client that stops reading an event stream or a response is
//! dropped when a write waits that long. The soft `RLIMIT_NOFILE` is raised to the hard limit at
//! start.
//!
//! What stays unbounded: the number of connections (each costs threads and descriptors, see
//! `gate.rs`), and tiny_http's own queues.

use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

use super::dispatch::{Gauge, dispatch_loop};
use super::gate::Gate;
use super::instances::{start_tiny, supervise};
use super::internal::Internal;
use super::policy::HostAllowList;
use super::request::DEFAULT_BODY_LIMIT;
use super::router::Router;

/// The ceiling of [`ServerConfig::body_limit`] (64 MiB), and the largest `Content-Length` the
/// gate passes on to tiny_http as declared: a larger one (always over the body limit) reaches
/// tiny_http as 64 MiB + 1, since tiny_http discards an unread body by allocating its whole
/// declared length.
pub const MAX_DRAIN_BYTES: u64 = 64 * 1024 * 1024;

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
    /// The receive and send timeout of every connection (`SO_RCVTIMEO`/`SO_SNDTIMEO`, set on
    /// each accepted socket): a request head must be complete within this long of the moment
    /// the server starts waiting for it (an idle keep-alive connection is closed then), and a
    /// body read or a write making no progress for this long ends the connection. Default [`super::DEFAULT_IO_TIMEOUT`] (30 s), or the milliseconds in
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
    pub(crate) cut_off_streams: usize,
}

impl ShutdownReport {
    /// Whether everything finished within the grace period.
    pub fn is_clean(&self) -> bool {
        self.cut_off_requests == 0 && self.cut_off_streams == 0
    }
}

pub(super) struct Shared {
    pub(super) router: Router,
    pub(super) max_in_flight: usize,
    pub(super) body_limit: u64,
    pub(super) cache_control: Option<String>,
    pub(super) host_allow: Option<HostAllowList>,
    pub(super) shutting_down: AtomicBool,
    /// Disconnected when shutdown starts (wakes event streams and the supervisor).
    pub(super) stop: Receiver<()>,
    pub(super) in_flight: Gauge,
    pub(super) streams: Gauge,
    pub(super) io_timeout: Duration,
    /// tiny_http instances still delivering requests (see `instances.rs`).
    pub(super) generations: Mutex<Vec<Arc<tiny_http::Server>>>,
    pub(super) gate: Arc<Gate>,
    pub(super) internal: Arc<Internal>,
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
        let internal = Arc::new(Internal::bind().map_err(io_error)?);
        let first = start_tiny(&internal).map_err(io_error)?;
        let gate = Gate::new(
            listener,
            io_timeout,
            Arc::clone(&internal),
            config.cache_control.clone(),
        )
        .map_err(io_error)?;
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
            io_timeout,
            generations: Mutex::new(Vec::new()),
            gate: Arc::new(gate),
            internal,
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
                .name("http-supervise".to_owned())
                .spawn(move || supervise(&shared, first, request_tx))
                .map_err(io_error)?;
        }
        {
            let gate = Arc::clone(&shared.gate);
            let stop = shared.stop.clone();
            std::thread::Builder::new()
                .name("http-accept".to_owned())
                .spawn(move || gate.accept_loop(&stop))
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

    /// Connections the server closed after its response (refusals of a head, 413s, unreadable
    /// bodies).
    pub fn closed_connections(&self) -> u64 {
        self.handle.closed_connections()
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

    /// See [`Server::closed_connections`].
    pub fn closed_connections(&self) -> u64 {
        self.shared.gate.closed.load(Ordering::Relaxed)
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
        self.shared.gate.stop();
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
        // tiny_http's accept loop ends; connections already passed on keep working.
        self.shared.internal.shutdown();
        let report = ShutdownReport {
            elapsed: started.elapsed(),
            cut_off_requests,
            cut_off_streams,
        };
        control.report = Some(report);
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
