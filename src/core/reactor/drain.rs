//! The drain's planning (RUNTIME.md §7.7): merged seed wakes, the dirty set, the distinct dirty
//! producers of each node and the commit order; `ingest`, `tick` and the boot cold-miss sweep
//! (§12). The executor that fires the plan is `schedule.rs`.

use std::collections::{HashMap, HashSet};

use super::schedule::Plan;
use super::{CoreError, Reactor, ReconcileResult, lock};
use crate::format::json;
use crate::format::receipt::{Status, Wake, WakeSource};

impl Reactor {
    /// Drains `seeds` and everything they wake, to quiescence (RUNTIME.md §7.7). One drain runs
    /// at a time per reactor; within it up to [`Reactor::parallel_renders`] renders run at once
    /// while receipts commit in the serial order (height, then node id in UTF-16 order).
    ///
    /// Under the group-commit policy the drain's writes are made durable once, at its end, before
    /// it returns; nothing it wrote is acknowledged earlier. After a stop request
    /// ([`Reactor::set_stop_flag`]) the drain starts nothing new and returns once the renders
    /// in flight committed.
    pub fn drain(&self, seeds: Vec<(String, Wake)>) -> Result<Vec<ReconcileResult>, CoreError> {
        let _guard = lock(&self.drain_lock);
        let results = self
            .plan(seeds)
            .and_then(|plan| super::schedule::run(self, &plan));
        self.sync()?;
        results
    }

    /// Planning steps 1–4 of RUNTIME.md §7.7. The commit order is the dirty set sorted by
    /// (height, id in UTF-16 order): heights are longest paths, so it is exactly the order in
    /// which the serial loop's "lowest ready height, then id" picks would settle the nodes,
    /// whatever the outcomes.
    fn plan(&self, seeds: Vec<(String, Wake)>) -> Result<Plan, CoreError> {
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
        let height = |n: &str| self.mounted.heights.get(n).copied().unwrap_or(0);
        let mut order: Vec<String> = dirty.into_iter().collect();
        order.sort_by(|a, b| {
            height(a)
                .cmp(&height(b))
                .then_with(|| json::utf16_cmp(a, b))
        });
        let pos: HashMap<String, usize> = order
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i))
            .collect();
        // 3. remaining distinct dirty producers; distinct dirty subscribers
        let remaining = order
            .iter()
            .map(|n| {
                self.producers_of(n)
                    .iter()
                    .filter(|p| pos.contains_key(*p))
                    .count()
            })
            .collect();
        let subscribers = order
            .iter()
            .map(|n| {
                let mut out: Vec<usize> = Vec::new();
                for s in self.mounted.subscribers.get(n).into_iter().flatten() {
                    if let Some(&i) = pos.get(s)
                        && !out.contains(&i)
                    {
                        out.push(i);
                    }
                }
                out
            })
            .collect();
        // 4. seeds carry their merged wake; every other node starts without one
        let seeds = order.iter().map(|n| seed_set.contains(n)).collect();
        let wakes = order.iter().map(|n| wakes.remove(n)).collect();
        Ok(Plan {
            order,
            pos,
            remaining,
            subscribers,
            seeds,
            wakes,
        })
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
    pub(crate) fn boot_seeds(&self) -> Vec<(String, Wake)> {
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
