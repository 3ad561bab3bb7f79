//! The drain's executor (RUNTIME.md §7.7 loop, §7.6 coalescing): renders in parallel, receipts
//! in the serial order.
//!
//! The plan's commit order is the dirty set sorted by (height, UTF-16 id). A **commit cursor**
//! walks it; every receipt is appended at the cursor, so the ledger, the world-model versions
//! and the registry are exactly those of a serial drain of the same work. Ahead of the cursor, a
//! node whose dirty producers have all settled (committed, or pruned) is *ready*: the executor
//! prepares it (the snapshot and memo check under the state lock) and renders it on a scoped
//! worker thread, up to `parallel_renders` at once, lowest position first. A render that
//! returns before its turn waits, its outcome buffered, until the cursor reaches it. A failed
//! render is just a `failed` receipt at its turn: it cancels nothing.
//!
//! A wake that coalesces into a node in flight (§7.6) is answered at the cursor: after the
//! node's receipt, the node is prepared again with the pending wake and rendered once more
//! before the cursor moves on, so follow-ups also commit in order.
//!
//! With `parallel_renders = 1` nothing runs ahead and every render runs on the draining thread
//! at the cursor: the serial drain. After a stop request nothing new starts; renders in flight
//! finish and commit in order and the rest of the plan is left to the next boot. On an
//! infrastructure error (§7.10) nothing new starts either, the renders in flight are awaited
//! and dropped without a receipt, and the error is returned.

use std::collections::{BTreeSet, HashMap};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;
use std::thread::Scope;

use super::decide::Decision;
use super::{CoreError, Reactor, ReconcileResult};
use crate::core::render::RenderOutcome;
use crate::format::receipt::{Wake, WakeSource};

/// A planned drain (RUNTIME.md §7.7 planning), indexed by position in the commit order.
pub(super) struct Plan {
    /// The dirty nodes in commit order: height, then id in UTF-16 code-unit order.
    pub order: Vec<String>,
    /// Position of each dirty node in `order`.
    pub(crate) pos: HashMap<String, usize>,
    /// Number of distinct dirty producers of each node.
    pub remaining: Vec<usize>,
    /// Positions of the distinct dirty subscribers of each node.
    pub subscribers: Vec<Vec<usize>>,
    /// Whether each node is a seed.
    pub seeds: Vec<bool>,
    /// The merged seed wake of each seed node.
    pub wakes: Vec<Option<Wake>>,
}

/// Where one planned node stands.
enum Slot<'a> {
    /// Not started: producers unsettled, or not picked yet.
    Waiting,
    /// Rendering on a worker.
    Running,
    /// Decided (a memo hit, or a render that returned), waiting for the cursor.
    Finished(Box<Decision<'a>>, Option<RenderOutcome>),
    /// Already in flight when fired: the `coalesced` result (§7.6).
    Coalesced(Box<ReconcileResult>),
    /// Committed at the cursor; a coalesced follow-up with this wake is due.
    Again(Wake),
    /// Settled (committed, pruned or left to the next boot).
    Settled,
}

/// What a worker sends back: position, decision, outcome (or the panic of the render).
type Returned<'a> = (
    usize,
    Box<Decision<'a>>,
    std::thread::Result<Option<RenderOutcome>>,
);

struct Executor<'a, 's> {
    reactor: &'a Reactor,
    plan: &'a Plan,
    limit: usize,
    slots: Vec<Slot<'a>>,
    remaining: Vec<usize>,
    /// Waiting positions whose dirty producers have all settled.
    ready: BTreeSet<usize>,
    wakes: Vec<Option<Wake>>,
    moved: Vec<bool>,
    cursor: usize,
    running: usize,
    /// Results of the node at the cursor (its attempt and follow-ups).
    firing: Vec<ReconcileResult>,
    results: Vec<ReconcileResult>,
    scope: &'s Scope<'s, 'a>,
    tx: mpsc::Sender<Returned<'a>>,
}

/// Runs `plan` to the end (or to a stop request) and returns the reconcile results in commit
/// order.
pub(super) fn run(reactor: &Reactor, plan: &Plan) -> Result<Vec<ReconcileResult>, CoreError> {
    let limit = reactor.parallel_renders.max(1);
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel();
        let mut ex = Executor {
            reactor,
            plan,
            limit,
            slots: plan.order.iter().map(|_| Slot::Waiting).collect(),
            remaining: plan.remaining.clone(),
            ready: (0..plan.order.len())
                .filter(|&i| plan.remaining[i] == 0)
                .collect(),
            wakes: plan.wakes.clone(),
            moved: vec![false; plan.order.len()],
            cursor: 0,
            running: 0,
            firing: Vec::new(),
            results: Vec::new(),
            scope,
            tx,
        };
        match ex.drive(&rx) {
            Ok(()) => Ok(std::mem::take(&mut ex.results)),
            Err(e) => {
                ex.abandon(&rx);
                Err(e)
            }
        }
    })
}

impl<'a, 's> Executor<'a, 's> {
    fn serial(&self) -> bool {
        self.limit == 1
    }

    fn drive(&mut self, rx: &mpsc::Receiver<Returned<'a>>) -> Result<(), CoreError> {
        loop {
            self.advance()?;
            if self.cursor == self.slots.len() {
                return Ok(());
            }
            self.fill()?;
            match self.slots[self.cursor] {
                Slot::Running => {}
                // Blocked behind renders ahead of it (no free render slot).
                Slot::Waiting | Slot::Again(_) if self.running > 0 => {}
                // A stop request arrived between `advance` and `fill`: `advance` settles it.
                Slot::Waiting | Slot::Again(_) if self.reactor.stop_requested() => continue,
                Slot::Waiting | Slot::Again(_) => {
                    return Err(CoreError::Internal(
                        "drain found no ready node (a cycle or an inconsistent topology)".into(),
                    ));
                }
                // Decided on this thread (memo hit, inline render, coalesced): commit it.
                _ => continue,
            }
            let (pos, decision, outcome) = rx.recv().map_err(|_| {
                CoreError::Internal("a render worker ended without an answer".into())
            })?;
            self.running -= 1;
            match outcome {
                Ok(o) => {
                    self.reactor.render_returned(pos);
                    self.slots[pos] = Slot::Finished(decision, o);
                }
                Err(panic) => {
                    self.reactor.untrack_render(pos);
                    self.reactor.release(decision.node());
                    self.abandon(rx);
                    std::panic::resume_unwind(panic);
                }
            }
        }
    }

    /// Commits at the cursor while it can: buffered outcomes in order, pruned nodes, and —
    /// after a stop request — nodes never started (left to the next boot).
    fn advance(&mut self) -> Result<(), CoreError> {
        while self.cursor < self.slots.len() {
            let i = self.cursor;
            match std::mem::replace(&mut self.slots[i], Slot::Waiting) {
                Slot::Settled => self.cursor += 1,
                Slot::Running => {
                    self.slots[i] = Slot::Running;
                    return Ok(());
                }
                Slot::Again(_) if self.reactor.stop_requested() => {
                    // No follow-up after a stop request; the next boot re-derives the node.
                    self.reactor.release(&self.plan.order[i]);
                    self.end_firing(i);
                }
                Slot::Again(w) => {
                    self.slots[i] = Slot::Again(w);
                    return Ok(());
                }
                Slot::Waiting => {
                    if self.reactor.stop_requested() {
                        // Left undone: the next boot's sweep re-derives it.
                        self.ready.remove(&i);
                        self.slots[i] = Slot::Settled;
                    } else if self.remaining[i] != 0 {
                        return Err(CoreError::Internal(
                            "drain found no ready node (a cycle or an inconsistent topology)"
                                .into(),
                        ));
                    } else if !self.fires(i) {
                        self.settle(i);
                    } else {
                        return Ok(());
                    }
                }
                Slot::Coalesced(r) => {
                    self.results.push(*r);
                    self.settle(i);
                }
                Slot::Finished(d, outcome) => {
                    let r = d.finish(outcome);
                    self.reactor.untrack_render(i);
                    let r = match r {
                        Ok(r) => r,
                        Err(e) => {
                            self.reactor.release(d.node());
                            return Err(e);
                        }
                    };
                    self.propagate(&r)?;
                    self.firing.push(r);
                    match self.reactor.follow_up(d.node()) {
                        Some(w) if !self.reactor.stop_requested() => {
                            self.slots[i] = Slot::Again(w);
                            return Ok(());
                        }
                        Some(_) => self.reactor.release(d.node()),
                        None => {}
                    }
                    self.end_firing(i);
                }
            }
        }
        Ok(())
    }

    /// The cursor's node is done firing: its results join the drain's, in order.
    fn end_firing(&mut self, i: usize) {
        let fired = std::mem::take(&mut self.firing);
        self.results.extend(fired);
        self.settle(i);
    }

    /// Starts what may start: the cursor's follow-up, then ready nodes in commit order while
    /// a render slot is free (only the cursor's node when serial). Ready nodes that do not fire
    /// are pruned on the way, which may make their subscribers ready.
    fn fill(&mut self) -> Result<(), CoreError> {
        if self.reactor.stop_requested() {
            return Ok(());
        }
        let c = self.cursor;
        if matches!(self.slots[c], Slot::Again(_)) {
            if self.running >= self.limit {
                return Ok(());
            }
            if let Slot::Again(w) = std::mem::replace(&mut self.slots[c], Slot::Waiting) {
                self.start(c, w)?;
            }
        }
        while self.running < self.limit {
            let Some(&i) = self.ready.first() else {
                break;
            };
            if self.serial() && i != c {
                break;
            }
            if !matches!(self.slots[i], Slot::Waiting) {
                self.ready.remove(&i);
                continue;
            }
            self.ready.remove(&i);
            if !self.fires(i) {
                self.settle(i);
                continue;
            }
            let plan = self.plan;
            let node = &plan.order[i];
            if self.reactor.mounted.phantoms.contains(node) {
                return Err(CoreError::Internal(format!(
                    "phantom producer '{node}' was woken"
                )));
            }
            let wake = self.wakes[i]
                .take()
                .unwrap_or_else(|| Wake::new(WakeSource::Input));
            if let Some(c) = self.reactor.coalesce(node, &wake, true) {
                self.slots[i] = Slot::Coalesced(Box::new(c));
                continue;
            }
            self.start(i, wake)?;
            if self.serial() {
                break;
            }
        }
        Ok(())
    }

    /// Prepares the claimed node at `i` and renders it: on this thread when serial, else on a
    /// worker. A memo hit needs no render.
    fn start(&mut self, i: usize, wake: Wake) -> Result<(), CoreError> {
        let reactor = self.reactor;
        let plan: &'a Plan = self.plan;
        let node: &'a str = &plan.order[i];
        let d = match reactor.prepare(node, wake) {
            Ok(d) => Box::new(d),
            Err(e) => {
                reactor.release(node);
                return Err(e);
            }
        };
        if !d.renders() {
            self.slots[i] = Slot::Finished(d, None);
            return Ok(());
        }
        reactor.track_render(i, node);
        if self.serial() {
            let outcome = d.render();
            reactor.render_returned(i);
            self.slots[i] = Slot::Finished(d, outcome);
            return Ok(());
        }
        let tx = self.tx.clone();
        self.running += 1;
        self.slots[i] = Slot::Running;
        self.scope.spawn(move || {
            let outcome = catch_unwind(AssertUnwindSafe(|| d.render()));
            let _ = tx.send((i, d, outcome));
        });
        Ok(())
    }

    fn fires(&self, i: usize) -> bool {
        self.plan.seeds[i] || self.moved[i]
    }

    /// Marks `i` settled and counts it off its dirty subscribers (§7.7 loop step 4).
    fn settle(&mut self, i: usize) {
        self.slots[i] = Slot::Settled;
        self.ready.remove(&i);
        for &s in &self.plan.subscribers[i] {
            if matches!(self.slots[s], Slot::Waiting) && self.remaining[s] > 0 {
                self.remaining[s] -= 1;
                if self.remaining[s] == 0 {
                    self.ready.insert(s);
                }
            }
        }
    }

    /// Merges the propagated wake into every target and marks it moved (§7.7 loop step 3).
    fn propagate(&mut self, r: &ReconcileResult) -> Result<(), CoreError> {
        let wake_ref = r.receipt.as_ref().map(|x| x.content_hash.clone());
        for t in &r.propagated {
            let Some(&ti) = self.plan.pos.get(t) else {
                return Err(CoreError::Internal(format!(
                    "propagation target '{t}' is not dirty"
                )));
            };
            let w = Wake {
                source: WakeSource::Input,
                refs: wake_ref.iter().cloned().collect(),
            };
            match &mut self.wakes[ti] {
                Some(x) => x.merge(&w),
                slot @ None => *slot = Some(w),
            }
            self.moved[ti] = true;
        }
        Ok(())
    }

    /// After an error: waits for the renders in flight and drops them without a receipt,
    /// releasing every node this drain claimed.
    fn abandon(&mut self, rx: &mpsc::Receiver<Returned<'a>>) {
        while self.running > 0 {
            let Ok((pos, d, _)) = rx.recv() else {
                break;
            };
            self.running -= 1;
            self.reactor.untrack_render(pos);
            self.reactor.release(d.node());
        }
        for (i, slot) in self.slots.iter_mut().enumerate() {
            match std::mem::replace(slot, Slot::Settled) {
                Slot::Finished(d, _) => {
                    self.reactor.untrack_render(i);
                    self.reactor.release(d.node());
                }
                Slot::Again(_) => self.reactor.release(&self.plan.order[i]),
                _ => {}
            }
        }
    }
}
