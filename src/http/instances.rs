//! tiny_http on the private socket: starting instances, keeping one accepting, and passing their
//! requests to the dispatcher.
//!
//! tiny_http 0.12 ends its accept loop on the first `accept()` error (tiny-http issue #283), for
//! example `EMFILE` when the process runs out of descriptors, and its accept thread panics
//! (`try_clone().unwrap()`) when it cannot duplicate an accepted socket. The supervisor learns
//! of both (the error arrives through the instance's queue; the panic through the panic hook's
//! count, `conn.rs`) and starts a new instance on a fresh clone of the same private socket after
//! a backoff of 5 ms doubling to 1 s, logging one line per episode; connections the gate made
//! meanwhile wait in the socket's backlog. The old instance keeps delivering requests from its
//! open connections until it has been idle for twice the I/O timeout.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;

use super::internal::Internal;
use super::server::Shared;

const BACKOFF_FIRST: Duration = Duration::from_millis(5);

/// Starts a tiny_http instance on a clone of the private listener (tiny_http closes its copy
/// when its accept loop ends). tiny_http panics when it cannot spawn its accept thread; that is
/// an error.
pub(super) fn start_tiny(internal: &Internal) -> std::io::Result<Arc<tiny_http::Server>> {
    let clone = internal.clone_listener()?;
    match catch_unwind(AssertUnwindSafe(|| {
        tiny_http::Server::from_listener(clone, None)
    })) {
        Ok(Ok(tiny)) => Ok(Arc::new(tiny)),
        Ok(Err(e)) => Err(std::io::Error::other(e.to_string())),
        Err(_) => Err(std::io::Error::other("cannot start the accept thread")),
    }
}

/// One tiny_http instance and whether its accept loop has ended.
struct Generation {
    tiny: Arc<tiny_http::Server>,
    dead: AtomicBool,
}

/// Keeps a tiny_http instance accepting on the private socket until shutdown (see the module
/// docs).
pub(super) fn supervise(
    shared: &Arc<Shared>,
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
            match launch(shared, tiny, &requests, &failed_tx) {
                Some(generation) => current = Some(generation),
                None => return,
            }
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
                    if episode && last_failure.elapsed() >= super::gate::BACKOFF_MAX + backoff {
                        backoff = BACKOFF_FIRST;
                        episode = false;
                    }
                    continue;
                }
            }
        };
        let Some(error) = error else { return };
        last_failure = Instant::now();
        if !episode {
            episode = true;
            super::conn::log_line(&format!(
                "reactor: http: the internal listener failed ({error}); \
                 restarting it with backoff (5 ms doubling to 1 s)"
            ));
        }
        loop {
            crossbeam_channel::select! {
                recv(shared.stop) -> _ => return,
                default(backoff) => {}
            }
            backoff = (backoff * 2).min(super::gate::BACKOFF_MAX);
            match start_tiny(&shared.internal) {
                Ok(tiny) => {
                    next = Some(tiny);
                    break;
                }
                // EMFILE again (the clone needs a descriptor): keep backing off.
                Err(_) => continue,
            }
        }
    }
}

/// Registers an instance and starts its forwarder; `None` when the server is shutting down.
fn launch(
    shared: &Arc<Shared>,
    tiny: Arc<tiny_http::Server>,
    requests: &Sender<tiny_http::Request>,
    failed: &Sender<std::io::Error>,
) -> Option<Arc<Generation>> {
    {
        let mut generations = shared.generations.lock().unwrap_or_else(|p| p.into_inner());
        if shared.shutting_down.load(Ordering::SeqCst) {
            return None;
        }
        generations.push(Arc::clone(&tiny));
    }
    let generation = Arc::new(Generation {
        tiny,
        dead: AtomicBool::new(false),
    });
    let forwarder = {
        let shared = Arc::clone(shared);
        let requests = requests.clone();
        let failed = failed.clone();
        let generation = Arc::clone(&generation);
        std::thread::Builder::new()
            .name("http-forward".to_owned())
            .spawn(move || forward(&shared, &generation, &requests, &failed))
    };
    if forwarder.is_err() {
        // Without a forwarder nobody would answer this instance's requests.
        generation.tiny.unblock();
        retire(shared, &generation.tiny);
        let _ = failed.send(std::io::Error::other("cannot spawn a thread"));
    }
    Some(generation)
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
