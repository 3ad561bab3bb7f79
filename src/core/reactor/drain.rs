//! The height-ordered drain with merged wakes and pruning (RUNTIME.md §7.7), `ingest`, `tick`
//! and the boot cold-miss sweep (§12).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};

use super::{CoreError, Reactor, ReconcileResult, lock};
use crate::format::json;
use crate::format::receipt::{Status, Wake, WakeSource};

/// `(height, id in UTF-16 order)` for the drain's ready queue.
#[derive(PartialEq, Eq)]
struct Ready(u32, String);
impl Ord for Ready {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0
            .cmp(&o.0)
            .then_with(|| json::utf16_cmp(&self.1, &o.1))
    }
}
impl PartialOrd for Ready {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

impl Reactor {
    /// Drains `seeds` and everything they wake, to quiescence (RUNTIME.md §7.7). One drain runs
    /// at a time per reactor.
    ///
    /// Under the group-commit policy the drain's writes are made durable once, at its end, before
    /// it returns; nothing it wrote is acknowledged earlier.
    pub fn drain(&self, seeds: Vec<(String, Wake)>) -> Result<Vec<ReconcileResult>, CoreError> {
        let _guard = lock(&self.drain_lock);
        let results = self.drain_locked(seeds);
        self.sync()?;
        results
    }

    fn drain_locked(&self, seeds: Vec<(String, Wake)>) -> Result<Vec<ReconcileResult>, CoreError> {
        // 1. merge seeds per node
        let mut wakes: HashMap<String, Wake> = HashMap::new();
        let mut seed_set: HashSet<String> = HashSet::new();
        for (n, w) in seeds {
            self.node_ir(&n)?;
            seed_set.insert(n.clone());
            match wakes.get_mut(&n) {
                Some(x) => x.merge(&w),
                None => {
                    wakes.insert(n, w);
                }
            }
        }
        // 2. dirty = seeds + reachable
        let mut dirty: HashSet<String> = HashSet::new();
        let mut stack: Vec<String> = seed_set.iter().cloned().collect();
        while let Some(n) = stack.pop() {
            if dirty.insert(n.clone()) {
                for s in self.mounted.subscribers.get(&n).into_iter().flatten() {
                    if !dirty.contains(s) {
                        stack.push(s.clone());
                    }
                }
            }
        }
        // 3. remaining distinct dirty producers
        let mut remaining: HashMap<String, usize> = HashMap::new();
        for n in &dirty {
            let producers = self.producers_of(n);
            remaining.insert(
                n.clone(),
                producers.iter().filter(|p| dirty.contains(*p)).count(),
            );
        }
        let height = |n: &str| self.mounted.heights.get(n).copied().unwrap_or(0);
        let mut ready: BinaryHeap<Reverse<Ready>> = remaining
            .iter()
            .filter(|(_, r)| **r == 0)
            .map(|(n, _)| Reverse(Ready(height(n), n.clone())))
            .collect();
        let mut moved: HashSet<String> = HashSet::new();
        let mut done: HashSet<String> = HashSet::new();
        let mut results = Vec::new();
        let guard = 4 * self.mounted.heights.len() + 16;
        let mut picks = 0usize;
        while done.len() < dirty.len() {
            picks += 1;
            if picks > guard {
                return Err(CoreError::Internal("drain exceeded its pick guard".into()));
            }
            let Some(Reverse(Ready(_, n))) = ready.pop() else {
                return Err(CoreError::Internal(
                    "drain found no ready node (a cycle or an inconsistent topology)".into(),
                ));
            };
            if done.contains(&n) {
                continue;
            }
            if seed_set.contains(&n) || moved.contains(&n) {
                let wake = wakes
                    .remove(&n)
                    .unwrap_or_else(|| Wake::new(WakeSource::Input));
                if self.mounted.phantoms.contains(&n) {
                    return Err(CoreError::Internal(format!(
                        "phantom producer '{n}' was woken"
                    )));
                }
                let fired = self.fire(&n, wake)?;
                for r in &fired {
                    let wake_ref = r.receipt.as_ref().map(|x| x.content_hash.clone());
                    for t in &r.propagated {
                        if !dirty.contains(t) {
                            return Err(CoreError::Internal(format!(
                                "propagation target '{t}' is not dirty"
                            )));
                        }
                        let w = Wake {
                            source: WakeSource::Input,
                            refs: wake_ref.iter().cloned().collect(),
                        };
                        match wakes.get_mut(t) {
                            Some(x) => x.merge(&w),
                            None => {
                                wakes.insert(t.clone(), w);
                            }
                        }
                        moved.insert(t.clone());
                    }
                }
                results.extend(fired);
            }
            done.insert(n.clone());
            for s in self.mounted.subscribers.get(&n).into_iter().flatten() {
                if dirty.contains(s) && !done.contains(s) {
                    let r = remaining.entry(s.clone()).or_default();
                    *r = r.saturating_sub(1);
                    if *r == 0 {
                        ready.push(Reverse(Ready(height(s), s.clone())));
                    }
                }
            }
        }
        Ok(results)
    }

    /// `ingest(node, wake)`: a wake for an in-flight node coalesces at once; otherwise a drain
    /// seeded with the node runs (waiting for any drain in progress).
    pub fn ingest(&self, node: &str, wake: Wake) -> Result<Vec<ReconcileResult>, CoreError> {
        self.node_ir(node)?;
        if let Some(c) = self.coalesce(node, &wake, false) {
            return Ok(vec![c]);
        }
        self.drain(vec![(node.to_string(), wake)])
    }

    /// `tick(node)`: a self wake.
    pub fn tick(&self, node: &str) -> Result<Vec<ReconcileResult>, CoreError> {
        self.ingest(node, Wake::new(WakeSource::SelfWake))
    }

    /// The boot seeds (RUNTIME.md §12): sources plus cold misses, each with its declared wake
    /// source and empty refs, in topology order.
    pub fn boot_seeds(&self) -> Vec<(String, Wake)> {
        let st = lock(&self.state);
        let mut seeds = Vec::new();
        for n in &self.mounted.nodes {
            let Some(nir) = self.ir.nodes.get(n) else {
                continue;
            };
            let is_source = self.mounted.inbound.get(n).is_none_or(Vec::is_empty);
            let last = st.ledger.last(n);
            let miss = match last {
                Some(l) => {
                    l.status == Status::Failed
                        || l.contract_fingerprint != nir.contract_fingerprint
                        || l.input_fingerprints != self.input_fingerprints(&st, n)
                }
                None => self
                    .producers_of(n)
                    .iter()
                    .any(|p| st.ledger.last(p).is_some()),
            };
            if is_source || miss {
                seeds.push((n.clone(), Wake::new(nir.wake_source)));
            }
        }
        seeds
    }

    /// `boot()`: drains the boot seeds.
    pub fn boot(&self) -> Result<Vec<ReconcileResult>, CoreError> {
        let seeds = self.boot_seeds();
        if seeds.is_empty() {
            return Ok(Vec::new());
        }
        self.drain(seeds)
    }
}
