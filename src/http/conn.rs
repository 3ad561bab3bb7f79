//! Process- and socket-level settings that tiny_http 0.12 does not offer: the I/O timeout of
//! every connection, the open-file limit, logging from server threads, and the panic hook that
//! tells the supervisor when tiny_http's accept thread died.
//!
//! Sources: issue 7 §1 (timeouts, `RLIMIT_NOFILE`, the listener never dies).
//!
//! No `unsafe`: everything goes through `rustix`.

use std::sync::Once;
use std::time::Duration;

/// The default receive and send timeout of every accepted connection: 30 seconds.
///
/// A request head (with the idle wait before it on a keep-alive connection) must be complete
/// within this long; a connection whose next body read or next write (a response, an
/// event-stream chunk to a client that stopped reading) makes no progress for this long is
/// closed. Event streams write a heartbeat every
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

/// Raises the soft `RLIMIT_NOFILE` to the hard limit, once per process (as Go's runtime does):
/// each connection costs up to four descriptors (see `gate.rs`), so the common soft limit of
/// 1,024 is reached by a few hundred clients. Returns the `(soft, hard)` limits now in force, when known.
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

/// Installs (once) the process's panic hook wrapper: the panic of tiny_http's accept thread is counted (see [`tiny_panics`]) instead of printed,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_timeout_parsing() {
        // Not set in unit tests unless the caller set it; either way it is positive.
        assert!(io_timeout_from_env() > Duration::ZERO);
    }

    #[test]
    fn open_file_limit_is_raised_to_the_hard_limit() {
        if let Some((soft, hard)) = raise_open_file_limit() {
            assert!(soft <= hard);
            // Either raised, or the kernel refused a value above nr_open.
            assert!(soft == hard || soft >= 1024, "{soft} {hard}");
        }
    }
}
