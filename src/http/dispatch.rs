//! The dispatcher and its worker pools: requests parsed by tiny_http are admitted (up to
//! [`super::ServerConfig::max_in_flight`] at once, 503 `{"error":"busy"}` beyond), routed on a
//! worker, and answered through `respond.rs`.
//!
//! Sources: VIEWER.md §6.1 (64 concurrent requests → 503 `{"error":"busy"}`, `Host` check),
//! HOST.md §10.1 (the same rules for the daemon), issue 7 §1.
//!
//! One dispatcher thread receives every parsed request and hands it to a worker; workers are
//! spawned on demand up to `max_in_flight` and kept, so every admitted request runs at once. A
//! request arriving while `max_in_flight` requests are being handled, one arriving during
//! shutdown, and one from a connection the server is closing are dealt with by a small
//! separate pool, so the dispatcher never blocks on a socket. An event stream gets its own
//! thread once its head is written; it does not count as an in-flight request (the hub caps
//! streams instead).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};

use super::request::{Request, Source};
use super::respond::send;
use super::response::Response;
use super::server::Shared;

/// Threads answering 503s while the workers are saturated.
const REJECT_THREADS: usize = 4;

/// A counter that can be waited on until it reaches zero.
pub(super) struct Gauge {
    n: Mutex<usize>,
    zero: Condvar,
}

impl Gauge {
    pub(super) fn new() -> Gauge {
        Gauge {
            n: Mutex::new(0),
            zero: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, usize> {
        self.n.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn try_inc(&self, max: usize) -> bool {
        let mut n = self.lock();
        if *n >= max {
            return false;
        }
        *n += 1;
        true
    }

    pub(super) fn inc(&self) {
        *self.lock() += 1;
    }

    pub(super) fn dec(&self) {
        let mut n = self.lock();
        *n = n.saturating_sub(1);
        if *n == 0 {
            self.zero.notify_all();
        }
    }

    pub(super) fn get(&self) -> usize {
        *self.lock()
    }

    pub(super) fn wait_zero(&self, deadline: Instant) -> usize {
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
pub(super) struct GaugeGuard {
    pub(super) shared: Arc<Shared>,
    pub(super) stream: bool,
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

/// Receives parsed requests until every forwarder is gone (shutdown).
pub(super) fn dispatch_loop(shared: &Arc<Shared>, incoming: &Receiver<tiny_http::Request>) {
    let mut workers = Pool::new("http-worker", shared.max_in_flight);
    let mut rejecters = Pool::new("http-reject", REJECT_THREADS);
    while let Ok(rq) = incoming.recv() {
        let mut request = Request::from_tiny(rq, shared.body_limit);
        let conn = request.gate_conn_id().and_then(|id| shared.gate.conn(id));
        if conn.as_ref().is_some_and(|c| c.is_closing()) {
            // Passed on before the server decided to close its connection: never routed, never
            // answered.
            rejecters.submit(Box::new(move || discard(request)));
            continue;
        }
        request.attach(conn);
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

/// Lets a request go without routing or answering it: its writer is dropped unused, so
/// tiny_http writes nothing for it.
fn discard(mut request: Request) {
    if let Source::Tiny(rq) = std::mem::replace(&mut request.source, Source::Taken) {
        drop(rq.into_writer());
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

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
}
