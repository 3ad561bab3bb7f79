//! The rate-limit hold shared by every request of one provider client (HOST.md §5.6 under
//! parallel renders, issue 10).
//!
//! A drain renders several nodes at once through one [`ProviderClient`](super::ProviderClient).
//! When the provider answers 429 (or sends `Retry-After`), backing off only the request that
//! was refused would let its siblings keep hammering the provider, and every one of them would
//! then be refused and back off on its own. Instead the client records a **not-before instant**
//! here — the later of the current one and `now + delay` — and every attempt of every request
//! of that client waits for it before it is sent. One refusal thus pauses the whole client once,
//! and the requests resume together when the provider said they may.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A shared not-before instant (monotonic clock). Thread-safe; cheap when no hold is set.
#[derive(Debug, Default)]
pub struct SharedBackoff {
    not_before: Mutex<Option<Instant>>,
}

impl SharedBackoff {
    /// No hold.
    pub fn new() -> SharedBackoff {
        SharedBackoff::default()
    }

    fn lock(&self) -> MutexGuard<'_, Option<Instant>> {
        self.not_before.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Holds every attempt until at least `until`; a later hold already set stands.
    pub(crate) fn hold_until(&self, until: Instant) {
        let mut g = self.lock();
        if g.is_none_or(|t| t < until) {
            *g = Some(until);
        }
    }

    /// [`SharedBackoff::hold_until`] `now + delay`.
    pub(crate) fn hold_for(&self, delay: Duration) {
        self.hold_until(Instant::now() + delay);
    }

    /// The instant before which no attempt may be sent, if one is set (it may be past).
    pub fn not_before(&self) -> Option<Instant> {
        *self.lock()
    }

    /// How long an attempt about to start at `now` must still wait (zero when free).
    pub(crate) fn remaining_at(&self, now: Instant) -> Duration {
        self.not_before()
            .map(|t| t.saturating_duration_since(now))
            .unwrap_or(Duration::ZERO)
    }

    /// Sleeps until no hold remains. Re-reads the instant after every sleep, since another
    /// refusal may have pushed it further meanwhile.
    pub fn wait(&self) {
        loop {
            let left = self.remaining_at(Instant::now());
            if left.is_zero() {
                return;
            }
            std::thread::sleep(left);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn the_later_hold_wins_and_the_wait_is_measured_from_now() {
        let b = SharedBackoff::new();
        let t0 = Instant::now();
        assert_eq!(b.not_before(), None);
        assert_eq!(b.remaining_at(t0), Duration::ZERO);
        b.hold_until(t0 + Duration::from_secs(5));
        b.hold_until(t0 + Duration::from_secs(2));
        assert_eq!(b.not_before(), Some(t0 + Duration::from_secs(5)));
        assert_eq!(
            b.remaining_at(t0 + Duration::from_secs(1)),
            Duration::from_secs(4)
        );
        assert_eq!(b.remaining_at(t0 + Duration::from_secs(9)), Duration::ZERO);
        b.hold_until(t0 + Duration::from_secs(7));
        assert_eq!(b.not_before(), Some(t0 + Duration::from_secs(7)));
    }

    #[test]
    fn a_waiter_honours_a_hold_extended_while_it_sleeps() {
        let b = Arc::new(SharedBackoff::new());
        let start = Instant::now();
        b.hold_until(start + Duration::from_millis(300));
        let waiter = {
            let b = b.clone();
            std::thread::spawn(move || {
                b.wait();
                Instant::now()
            })
        };
        std::thread::sleep(Duration::from_millis(20));
        b.hold_until(start + Duration::from_millis(500));
        let extended_at = Instant::now();
        let left = waiter.join().unwrap();
        if extended_at < start + Duration::from_millis(300) {
            assert!(
                left >= start + Duration::from_millis(500),
                "the waiter left {:?} after the start, before the extended hold ended",
                left - start
            );
        } else {
            eprintln!("SKIPPED the extension check: the machine was too slow to extend in time");
        }
        assert!(left >= start + Duration::from_millis(300));
        assert_eq!(b.remaining_at(Instant::now()), Duration::ZERO);
    }
}
