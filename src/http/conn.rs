//! Socket-level control that tiny_http 0.12 does not offer: listener options inherited by every
//! accepted connection (receive/send timeouts, `TCP_NODELAY`), the open-file limit, closing one
//! client connection by its peer address, and releasing a request whose declared body tiny_http
//! would otherwise discard by allocating its whole length.
//!
//! Sources: issue 7 §1 (timeouts, `RLIMIT_NOFILE`, 413 + close, no abandoned streams), RFC 9112
//! §9.6 (closing after a framing error), tiny_http 0.12's `EqualReader` (its `Drop` reads the
//! unread rest of a `Content-Length` body into a buffer as large as that rest).
//!
//! No `unsafe`: everything goes through `rustix`. Closing a connection needs a handle on a socket
//! that tiny_http owns; on Linux (5.6 or later) [`ClientSocket::find`] duplicates it with
//! `pidfd_getfd` on the process's own pidfd and shuts it down. Elsewhere, or where that call is
//! refused, it finds nothing and the connection ends by the receive timeout instead.

use std::net::{SocketAddr, TcpListener};
use std::sync::Once;
use std::time::Duration;

/// The default receive and send timeout of every accepted connection: 30 seconds.
///
/// A connection whose next read (request head, request body, or the idle wait between
/// keep-alive requests) or next write (a response, an event-stream chunk to a client that stopped
/// reading) makes no progress for this long is closed. Event streams write a heartbeat every
/// 15 s, so a healthy stream never waits on a full socket buffer for 30 s.
pub const DEFAULT_IO_TIMEOUT: Duration = Duration::from_secs(30);

/// The environment variable that replaces [`DEFAULT_IO_TIMEOUT`] (milliseconds, 1 or more),
/// meant for tests that must see timeouts quickly. Unset, empty or invalid → the default.
pub const IO_TIMEOUT_ENV: &str = "REACTOR_HTTP_IO_TIMEOUT_MS";

/// The I/O timeout from [`IO_TIMEOUT_ENV`], else [`DEFAULT_IO_TIMEOUT`].
pub fn io_timeout_from_env() -> Duration {
    std::env::var(IO_TIMEOUT_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|ms| *ms > 0)
        .map(Duration::from_millis)
        .unwrap_or(DEFAULT_IO_TIMEOUT)
}

/// Sets `TCP_NODELAY` and the receive/send timeouts on the listening socket; Linux copies these
/// options to every accepted connection. Best effort: a failure is reported as the error text.
///
/// Without `TCP_NODELAY` a response written in pieces (head, then body) can wait ~40 ms for the
/// client's delayed ACK.
pub(crate) fn configure_listener(
    listener: &TcpListener,
    io_timeout: Duration,
) -> Result<(), String> {
    #[cfg(unix)]
    {
        use rustix::net::sockopt::{Timeout, set_socket_timeout, set_tcp_nodelay};
        let mut errors = Vec::new();
        if let Err(e) = set_tcp_nodelay(listener, true) {
            errors.push(format!("TCP_NODELAY: {e}"));
        }
        for (id, name) in [
            (Timeout::Recv, "SO_RCVTIMEO"),
            (Timeout::Send, "SO_SNDTIMEO"),
        ] {
            if let Err(e) = set_socket_timeout(listener, id, Some(io_timeout)) {
                errors.push(format!("{name}: {e}"));
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join(", "))
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (listener, io_timeout);
        Ok(())
    }
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit, once per process (as Go's runtime does):
/// each connection costs tiny_http two descriptors, so the common soft limit of 1,024 is reached
/// by ~500 clients. Returns the `(soft, hard)` limits now in force, when known.
pub fn raise_open_file_limit() -> Option<(u64, u64)> {
    static ONCE: Once = Once::new();
    #[cfg(unix)]
    {
        use rustix::process::{Resource, getrlimit, setrlimit};
        ONCE.call_once(|| {
            let mut limit = getrlimit(Resource::Nofile);
            if limit.current < limit.maximum {
                limit.current = limit.maximum;
                // Refused (e.g. a hard limit above the kernel's nr_open): keep the soft limit.
                let _ = setrlimit(Resource::Nofile, limit);
            }
        });
        let now = getrlimit(Resource::Nofile);
        Some((
            now.current.unwrap_or(u64::MAX),
            now.maximum.unwrap_or(u64::MAX),
        ))
    }
    #[cfg(not(unix))]
    {
        ONCE.call_once(|| {});
        None
    }
}

/// Which directions [`ClientSocket::shutdown`] closes: reading (tiny_http's discarding of an
/// unread body then ends at end of input) or writing (the client sees the end of the response).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Half {
    Read,
    Write,
}

/// How long a connection closed after a refusal keeps reading (and discarding) what the client
/// still sends, before it stops reading: 2 seconds. Closing a socket with unread input makes the
/// kernel send a reset, and a client still sending its body would then lose the response it has
/// not read yet (the "lingering close" of Apache and nginx).
pub const LINGER: Duration = Duration::from_secs(2);

/// A duplicate handle on one client connection that tiny_http owns, found by its peer address.
/// Dropping it closes only the duplicate; tiny_http's own descriptors close as usual.
#[derive(Debug)]
pub(crate) struct ClientSocket {
    #[cfg(target_os = "linux")]
    fd: rustix::fd::OwnedFd,
}

impl ClientSocket {
    /// Finds the connection whose peer is `peer` and whose local port is `local_port`.
    ///
    /// Linux only (`pidfd_getfd` on the process's own pidfd, Linux 5.6+); elsewhere, or when
    /// the kernel refuses, `None`. Costs two system calls per open descriptor of the process,
    /// so it is reserved for connections being closed after a refusal.
    pub(crate) fn find(local_port: u16, peer: SocketAddr) -> Option<ClientSocket> {
        #[cfg(target_os = "linux")]
        {
            use rustix::net::{getpeername, getsockname};
            use rustix::process::{PidfdFlags, PidfdGetfdFlags, getpid, pidfd_getfd, pidfd_open};
            let me = pidfd_open(getpid(), PidfdFlags::empty()).ok()?;
            let entries = std::fs::read_dir("/proc/self/fd").ok()?;
            for entry in entries.flatten() {
                let Some(n) = entry
                    .file_name()
                    .to_str()
                    .and_then(|s| s.parse::<i32>().ok())
                else {
                    continue;
                };
                let Ok(fd) = pidfd_getfd(&me, n, PidfdGetfdFlags::empty()) else {
                    continue;
                };
                let is_peer = matches!(
                    getpeername(&fd).map(|a| a.and_then(|a| SocketAddr::try_from(a).ok())),
                    Ok(Some(a)) if a == peer
                );
                let is_ours = is_peer
                    && getsockname(&fd)
                        .ok()
                        .and_then(|a| SocketAddr::try_from(a).ok())
                        .is_some_and(|a| a.port() == local_port);
                if is_ours {
                    return Some(ClientSocket { fd });
                }
            }
            None
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (local_port, peer);
            None
        }
    }

    /// Shuts the connection down (`shutdown(2)`); errors (already closed) are ignored.
    pub(crate) fn shutdown(&self, half: Half) {
        #[cfg(target_os = "linux")]
        {
            use rustix::net::Shutdown;
            let how = match half {
                Half::Read => Shutdown::Read,
                Half::Write => Shutdown::Write,
            };
            let _ = rustix::net::shutdown(&self.fd, how);
        }
        #[cfg(not(target_os = "linux"))]
        let _ = half;
    }

    /// Writes `bytes` directly on the socket (bounded by the send timeout). Errors are the
    /// connection's (the client left).
    pub(crate) fn write_all(&self, bytes: &[u8]) -> std::io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            let mut rest = bytes;
            while !rest.is_empty() {
                match rustix::io::write(&self.fd, rest) {
                    Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                    Ok(n) => rest = &rest[n..],
                    Err(rustix::io::Errno::INTR) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Ok(())
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = bytes;
            Err(std::io::ErrorKind::Unsupported.into())
        }
    }

    /// Stops reading on this socket [`LINGER`] from now (on a background thread), so that
    /// tiny_http's discarding of a body the client keeps sending ends by then.
    pub(crate) fn stop_reading_after_linger(self) {
        static LINGERING: std::sync::OnceLock<
            Option<crossbeam_channel::Sender<(std::time::Instant, ClientSocket)>>,
        > = std::sync::OnceLock::new();
        let tx = LINGERING.get_or_init(|| {
            let (tx, rx) = crossbeam_channel::unbounded::<(std::time::Instant, ClientSocket)>();
            std::thread::Builder::new()
                .name("http-linger".to_owned())
                .spawn(move || {
                    // Deadlines arrive in order (a constant delay).
                    while let Ok((deadline, socket)) = rx.recv() {
                        let wait = deadline.saturating_duration_since(std::time::Instant::now());
                        std::thread::sleep(wait);
                        socket.shutdown(Half::Read);
                    }
                })
                .ok()
                .map(|_| tx)
        });
        match tx {
            Some(tx) => {
                let _ = tx.send((std::time::Instant::now() + LINGER, self));
            }
            None => self.shutdown(Half::Read),
        }
    }
}

thread_local! {
    static QUIET_PANICS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Writes one line to stderr without taking std's stderr lock (`reactor devtools` holds that
/// lock on its main thread for its whole run, so `eprintln!` from a server thread would block
/// forever). Best effort.
pub(crate) fn log_line(line: &str) {
    let mut text = line.to_owned();
    text.push('\n');
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let stderr = std::io::stderr();
        let mut bytes = text.as_bytes();
        while !bytes.is_empty() {
            match rustix::io::write(stderr.as_fd(), bytes) {
                Ok(0) | Err(_) => break,
                Ok(n) => bytes = &bytes[n..],
            }
        }
    }
    #[cfg(not(unix))]
    eprint!("{text}");
}

static TINY_PANICS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Installs (once) the process's panic hook wrapper: panics inside [`quietly`] print nothing,
/// the panic of tiny_http's accept thread is counted (see [`tiny_panics`]) instead of printed,
/// panics on the server's `http-*` threads (a handler's, answered 500) are printed through
/// [`log_line`], and every other panic goes to the previous hook. The accept-thread path takes no lock
/// and writes nothing (it runs while the process is out of descriptors).
///
/// tiny_http 0.12's accept thread panics, rather than reporting an error, when it cannot
/// duplicate an accepted socket (`try_clone().unwrap()` under `EMFILE`); the count is how the
/// listener supervisor learns that the accept loop is gone.
pub(crate) fn install_panic_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // `Stream::clone` in refined_tcp_stream.rs runs only on the accept thread.
            let in_accept = info.location().is_some_and(|l| {
                l.file().ends_with("refined_tcp_stream.rs") && l.file().contains("tiny_http")
            });
            if in_accept {
                TINY_PANICS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                return;
            }
            if QUIET_PANICS.with(std::cell::Cell::get) {
                return;
            }
            // The server's own threads report through `log_line`: the default hook takes std's
            // stderr lock, which `reactor devtools` holds on its main thread, and would wedge
            // the worker for good.
            let thread = std::thread::current();
            if let Some(name) = thread.name().filter(|n| n.starts_with("http-")) {
                let payload = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                let at = info
                    .location()
                    .map(|l| format!("{}:{}", l.file(), l.line()))
                    .unwrap_or_default();
                log_line(&format!("thread '{name}' panicked at {at}: {payload}"));
                return;
            }
            previous(info);
        }));
    });
}

/// How many times a tiny_http accept thread panicked so far.
pub(crate) fn tiny_panics() -> u64 {
    TINY_PANICS.load(std::sync::atomic::Ordering::SeqCst)
}

/// Runs `f` (which is expected to panic in a known way, see [`disposal`]) with the panic message
/// suppressed on this thread, and catches the panic.
fn quietly<F: FnOnce()>(f: F) {
    install_panic_hook();
    QUIET_PANICS.with(|q| q.set(true));
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET_PANICS.with(|q| q.set(false));
}

/// How a tiny_http request (or stream) that still has `unread` declared body bytes can be let
/// go without letting tiny_http 0.12 abort the process. See [`disposal`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Disposal {
    /// Drop it: tiny_http discards the rest (it ends at end of input once the connection is
    /// shut down for reading).
    Drop,
    /// The rest is larger than `isize::MAX`: tiny_http's buffer allocation panics ("capacity
    /// overflow"); drop it inside `catch_unwind`, which frees every descriptor.
    DropCatchingPanic,
    /// The rest cannot be reserved and would abort the process: keep the value for the life of
    /// the process (one tiny_http thread and two descriptors).
    Park,
}

/// Chooses the [`Disposal`] for a request whose unread declared body is `unread` bytes.
///
/// tiny_http discards an unread `Content-Length` body on drop by allocating `unread` bytes and
/// reading into them until the input ends. Up to [`super::MAX_DRAIN_BYTES`] that is always
/// safe; above it, it is safe when an allocation of that size can be reserved (the pages are
/// never touched: after the connection is shut down for reading, the first read returns end of
/// input); above `isize::MAX` the allocation panics instead of aborting. Anything else (more
/// than the machine can reserve, below 2^63) must be parked.
pub(crate) fn disposal(unread: u64) -> Disposal {
    if unread <= super::MAX_DRAIN_BYTES {
        return Disposal::Drop;
    }
    if unread > isize::MAX as u64 {
        return Disposal::DropCatchingPanic;
    }
    let reservable = usize::try_from(unread)
        .ok()
        .is_some_and(|n| Vec::<u8>::new().try_reserve_exact(n).is_ok());
    if reservable {
        Disposal::Drop
    } else {
        Disposal::Park
    }
}

/// Lets `value` go as `how` says (see [`disposal`]).
pub(crate) fn dispose<T: Send + 'static>(value: T, how: Disposal) {
    match how {
        Disposal::Drop => drop(value),
        Disposal::DropCatchingPanic => quietly(move || drop(value)),
        Disposal::Park => {
            static PARKED: std::sync::Mutex<Vec<Box<dyn Send>>> = std::sync::Mutex::new(Vec::new());
            PARKED
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(Box::new(value));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpStream;

    #[test]
    fn env_timeout_parsing() {
        // Not set in unit tests unless the caller set it; either way it is positive.
        assert!(io_timeout_from_env() > Duration::ZERO);
    }

    #[test]
    fn listener_options_are_inherited_by_accepted_sockets() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        configure_listener(&listener, Duration::from_millis(150)).unwrap();
        let addr = listener.local_addr().unwrap();
        let _client = TcpStream::connect(addr).unwrap();
        let (mut accepted, _) = listener.accept().unwrap();
        assert!(accepted.nodelay().unwrap());
        let t0 = std::time::Instant::now();
        let mut buf = [0u8; 8];
        let err = accepted.read(&mut buf).unwrap_err();
        assert!(
            matches!(
                err.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
            "{err:?}"
        );
        assert!(t0.elapsed() >= Duration::from_millis(100));
    }

    #[test]
    fn open_file_limit_is_raised_to_the_hard_limit() {
        if let Some((soft, hard)) = raise_open_file_limit() {
            assert!(soft <= hard);
            // Either raised, or the kernel refused a value above nr_open.
            assert!(soft == hard || soft >= 1024, "{soft} {hard}");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn close_connection_finds_the_socket_by_peer() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut client = TcpStream::connect(addr).unwrap();
        let (accepted, peer) = listener.accept().unwrap();
        assert_eq!(peer, client.local_addr().unwrap());
        let unknown: SocketAddr = "127.0.0.1:9".parse().unwrap();
        assert!(ClientSocket::find(addr.port(), unknown).is_none());
        let Some(socket) = ClientSocket::find(addr.port(), peer) else {
            eprintln!("skipped: pidfd_getfd is not available here");
            return;
        };
        socket.write_all(b"hi").unwrap();
        socket.shutdown(Half::Write);
        socket.shutdown(Half::Read);
        client
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut buf = Vec::new();
        client.read_to_end(&mut buf).unwrap();
        assert_eq!(buf, b"hi", "the client sees the bytes, then the close");
        let _ = client.write_all(b"x");
        drop(accepted);
    }

    #[test]
    fn disposal_regimes() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        struct Flag(Arc<AtomicBool>);
        impl Drop for Flag {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        assert_eq!(disposal(10), Disposal::Drop);
        assert_eq!(disposal(64 << 20), Disposal::Drop);
        assert_eq!(disposal(u64::MAX), Disposal::DropCatchingPanic);
        // 2^62 bytes can be reserved on no machine.
        assert_eq!(disposal(1 << 62), Disposal::Park);
        let dropped = Arc::new(AtomicBool::new(false));
        dispose(Flag(dropped.clone()), Disposal::Drop);
        assert!(dropped.load(Ordering::SeqCst));
        struct Panics(#[allow(dead_code)] Flag);
        impl Drop for Panics {
            fn drop(&mut self) {
                let v = vec![0u8; std::hint::black_box(usize::MAX)];
                drop(v);
            }
        }
        let inner = Arc::new(AtomicBool::new(false));
        dispose(Panics(Flag(inner.clone())), Disposal::DropCatchingPanic);
        assert!(
            inner.load(Ordering::SeqCst),
            "fields are dropped while unwinding"
        );
        let parked = Arc::new(AtomicBool::new(false));
        dispose(Flag(parked.clone()), Disposal::Park);
        assert!(!parked.load(Ordering::SeqCst));
    }
}
