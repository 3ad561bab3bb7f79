//! The reactor (RUNTIME.md §7, §9, §12): the per-node decision (memo skip, render, commit gate,
//! failed / rendered receipts), the height-ordered drain with merged wakes and pruning,
//! single-flight coalescing, ingress staging through the phantom `<G>::ingress` producer, and
//! the boot cold-miss sweep. Deterministic; renders arrive through [`Render`].

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::core::ir::{IngressMode, Ir, MountError, Mounted, NodeIr, ingress_node, mount};
use crate::core::render::{
    NotSubscribed, Render, RenderContext, RenderOutcome, UpstreamReader, Usage,
};
use crate::format::address::{COLD_START_EMPTY, EMPTY_TREE_ADDRESS, address};
use crate::format::json::{self, Object, Value};
use crate::format::opwm::{self, FileTree};
use crate::format::propagate::{moved_facets, propagation_targets};
use crate::format::receipt::{Cost, Fingerprints, Receipt, Status, Wake, WakeSource};
use crate::format::sanitize::sanitize_reason;
use crate::store::ledger::{Ledger, LedgerError, OpenNote, SyncPolicy};
use crate::store::registry::{Registry, RegistryError};
use crate::store::worldmodel::{Durability, WorldModelStore};

/// Infrastructure errors (RUNTIME.md §7.10): the drain stops, no receipt is written for them.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    /// The IR could not be mounted (the host adds its recompile hint where it reports this).
    #[error("{0}")]
    Mount(#[from] MountError),
    /// The ledger could not be opened or appended.
    #[error("{0}")]
    Ledger(#[from] LedgerError),
    /// `registry.json` could not be read or written.
    #[error("{0}")]
    Registry(#[from] RegistryError),
    /// A store write outside a render commit failed (ingress staging).
    #[error("world-model store: {0}")]
    Store(String),
    /// An unknown node was named.
    #[error("unknown node '{0}'")]
    UnknownNode(String),
    /// A node that is not an entry point was asked to stage data.
    #[error("node '{0}' is not an entry point (gateway); data is only staged into gateways")]
    NotEntryPoint(String),
    /// An internal invariant failed (unreachable for a valid acyclic topology).
    #[error("internal error: {0}")]
    Internal(String),
}

/// A disposition of one reconcile (RUNTIME.md §7.7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disposition {
    /// Rendered and committed.
    Rendered,
    /// Memo key unchanged.
    Skipped,
    /// Render or gate failed.
    Failed,
    /// Absorbed by an in-flight render; no receipt.
    Coalesced,
}

impl Disposition {
    /// The wire form.
    pub fn as_str(self) -> &'static str {
        match self {
            Disposition::Rendered => "rendered",
            Disposition::Skipped => "skipped",
            Disposition::Failed => "failed",
            Disposition::Coalesced => "coalesced",
        }
    }
}

/// One reconcile result.
#[derive(Clone, Debug)]
pub struct ReconcileResult {
    /// Node id.
    pub node: String,
    /// Disposition.
    pub disposition: Disposition,
    /// The appended receipt (absent for `coalesced`).
    pub receipt: Option<Receipt>,
    /// The sanitized failure reason (failed only).
    pub reason: Option<String>,
    /// Subscribers woken (rendered only).
    pub propagated: Vec<String>,
    /// Soft warnings (empty facets).
    pub warnings: Vec<String>,
}

/// An arrival to stage into a gateway (RUNTIME.md §9.2).
#[derive(Clone, Debug, PartialEq)]
pub struct Arrival {
    /// The arrival id (dedup key).
    pub id: String,
    /// The payload.
    pub item: Value,
}

/// The outcome of staging.
#[derive(Clone, Debug)]
pub enum StageOutcome {
    /// The arrival was staged: the ingress receipt.
    Staged(Box<Receipt>),
    /// The id was already in the cursor: nothing written.
    Duplicate,
}

#[derive(Default)]
struct Volatile {
    in_flight: bool,
    dirty: bool,
    pending: Option<Wake>,
}

struct State {
    ledger: Ledger,
    registry: Registry,
    cursors: HashMap<String, BTreeSet<String>>,
    volatile: HashMap<String, Volatile>,
}

type Tap = Box<dyn Fn(&Receipt) + Send + Sync>;

/// A mounted reactor over one state directory.
pub struct Reactor {
    state_dir: PathBuf,
    ir: Ir,
    mounted: Mounted,
    store: WorldModelStore,
    render: Arc<dyn Render>,
    state: Mutex<State>,
    drain_lock: Mutex<()>,
    stage_lock: Mutex<()>,
    taps: Mutex<Vec<Tap>>,
    secrets: Vec<String>,
}

impl std::fmt::Debug for Reactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reactor")
            .field("state_dir", &self.state_dir)
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

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

struct Upstream<'a> {
    producers: Vec<String>,
    store: &'a WorldModelStore,
}

impl UpstreamReader for Upstream<'_> {
    fn producers(&self) -> &[String] {
        &self.producers
    }
    fn read(&self, producer: &str) -> Result<FileTree, NotSubscribed> {
        if !self.producers.iter().any(|p| p == producer) {
            return Err(NotSubscribed {
                producer: producer.to_string(),
            });
        }
        Ok(self.store.published_files(producer))
    }
}

/// Options of [`Reactor::open`].
#[derive(Clone, Debug)]
pub struct ReactorOptions {
    /// How phantom producers are mounted.
    pub ingress: IngressMode,
    /// Ledger durability.
    pub sync: SyncPolicy,
    /// Secret values redacted from failure reasons (provider keys, bearer tokens).
    pub secrets: Vec<String>,
}

impl Default for ReactorOptions {
    fn default() -> Self {
        ReactorOptions {
            ingress: IngressMode::Host,
            sync: SyncPolicy::EveryAppend,
            secrets: Vec::new(),
        }
    }
}

impl Reactor {
    /// Mounts `ir` over `state_dir` (created if absent): validates the IR, opens the ledger
    /// (repairing a torn tail), reads the registry and rebuilds gateway cursors (RUNTIME.md §12
    /// steps 1–3). The caller must hold the state-dir lock. Returns the ledger notes to report.
    pub fn open(
        state_dir: &Path,
        ir: Ir,
        render: Arc<dyn Render>,
        options: ReactorOptions,
    ) -> Result<(Reactor, Vec<OpenNote>), CoreError> {
        let mounted = mount(&ir, options.ingress)?;
        crate::store::fsutil::create_dir_all_durable(state_dir)
            .map_err(|e| CoreError::Store(format!("cannot create {}: {e}", state_dir.display())))?;
        crate::store::fsutil::remove_temporaries(state_dir);
        if !state_dir.join("registry.json").exists() {
            crate::store::fsutil::write_atomic(&state_dir.join("registry.json"), b"{}\n")
                .map_err(|e| CoreError::Store(e.to_string()))?;
        }
        let (mut ledger, notes) = Ledger::open(state_dir)?;
        ledger.set_policy(options.sync);
        let registry = Registry::read(state_dir)?;
        let store = WorldModelStore::new(state_dir).with_durability(match options.sync {
            SyncPolicy::EveryAppend => Durability::Immediate,
            SyncPolicy::Group => Durability::Deferred,
        });
        let mut cursors: HashMap<String, BTreeSet<String>> = HashMap::new();
        if let Some(Value::Object(c)) = registry.root.get("gateway_cursors") {
            for (k, v) in c.iter() {
                let ids = v
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| x.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
                cursors.insert(k.to_lossy().into_owned(), ids);
            }
        }
        let reactor = Reactor {
            state_dir: state_dir.to_path_buf(),
            ir,
            mounted,
            store,
            render,
            state: Mutex::new(State {
                ledger,
                registry,
                cursors,
                volatile: HashMap::new(),
            }),
            drain_lock: Mutex::new(()),
            stage_lock: Mutex::new(()),
            taps: Mutex::new(Vec::new()),
            secrets: options.secrets,
        };
        Ok((reactor, notes))
    }

    /// Unites the cursor of `source_id` with the ids of the ledger-consistent inbox of
    /// `gateway`'s ingress producer (RUNTIME.md §9.3), so a crash between the ingress receipt and
    /// the cursor write can never stage an arrival twice.
    pub fn rebuild_cursor(&self, gateway: &str, source_id: &str) {
        let ids: Vec<String> = self
            .inbox(gateway)
            .iter()
            .filter_map(|e| e.get("id").and_then(Value::as_str).map(str::to_string))
            .collect();
        let mut st = lock(&self.state);
        st.cursors
            .entry(source_id.to_string())
            .or_default()
            .extend(ids);
    }

    /// The state directory.
    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// The mounted topology.
    pub fn mounted(&self) -> &Mounted {
        &self.mounted
    }

    /// The IR.
    pub fn ir(&self) -> &Ir {
        &self.ir
    }

    /// The world-model store.
    pub fn store(&self) -> &WorldModelStore {
        &self.store
    }

    /// Registers a receipt tap, called after every acknowledged append.
    pub fn on_receipt(&self, tap: impl Fn(&Receipt) + Send + Sync + 'static) {
        lock(&self.taps).push(Box::new(tap));
    }

    /// The node's last receipt.
    pub fn last_receipt(&self, node: &str) -> Option<Receipt> {
        lock(&self.state).ledger.last(node).cloned()
    }

    /// Number of receipts in the ledger.
    pub fn ledger_len(&self) -> usize {
        lock(&self.state).ledger.len()
    }

    /// Makes a group commit durable: world-model files first (one `syncfs`), then the ledger's
    /// buffered receipts (one write, one `fdatasync`). A no-op under the per-receipt policy.
    pub fn sync(&self) -> Result<(), CoreError> {
        let mut st = lock(&self.state);
        if st.ledger.has_pending() {
            self.store
                .flush()
                .map_err(|e| CoreError::Store(format!("cannot make world-models durable: {e}")))?;
            st.ledger.sync()?;
        }
        Ok(())
    }

    fn append(&self, st: &mut State, r: Receipt) -> Result<Receipt, CoreError> {
        let r = st.ledger.append(r)?;
        for t in lock(&self.taps).iter() {
            t(&r);
        }
        Ok(r)
    }

    fn node_ir(&self, node: &str) -> Result<&NodeIr, CoreError> {
        self.ir
            .nodes
            .get(node)
            .ok_or_else(|| CoreError::UnknownNode(node.to_string()))
    }

    /// The current input tuple of a node (RUNTIME.md §7.3).
    fn input_fingerprints(&self, st: &State, node: &str) -> Vec<String> {
        self.mounted
            .inbound
            .get(node)
            .map(|ins| {
                ins.iter()
                    .map(|&i| {
                        let e = &self.mounted.edges[i];
                        st.ledger
                            .last(&e.producer)
                            .and_then(|r| r.fingerprints.resolve(&e.facet))
                            .unwrap_or(EMPTY_TREE_ADDRESS)
                            .to_string()
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    fn producers_of(&self, node: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for &i in self
            .mounted
            .inbound
            .get(node)
            .map(Vec::as_slice)
            .unwrap_or(&[])
        {
            let p = &self.mounted.edges[i].producer;
            if !out.contains(p) {
                out.push(p.clone());
            }
        }
        out
    }

    /// Propagation targets of `producer` over its own outbound edges (FORMATS.md §10).
    fn targets(&self, producer: &str, moved: &[String]) -> Vec<String> {
        match self.mounted.out_edges.get(producer) {
            Some(edges) => propagation_targets(edges, producer, moved),
            None => Vec::new(),
        }
    }

    /// Single-flight (RUNTIME.md §7.6): when `node` is in flight, merges `wake` into its pending
    /// wake, marks it dirty and returns the `coalesced` result; otherwise returns `None` (and,
    /// with `claim`, marks the node in flight for the caller).
    fn coalesce(&self, node: &str, wake: &Wake, claim: bool) -> Option<ReconcileResult> {
        let mut st = lock(&self.state);
        let v = st.volatile.entry(node.to_string()).or_default();
        if !v.in_flight {
            v.in_flight = claim;
            return None;
        }
        match &mut v.pending {
            Some(p) => p.merge(wake),
            None => v.pending = Some(wake.clone()),
        }
        v.dirty = true;
        Some(ReconcileResult {
            node: node.to_string(),
            disposition: Disposition::Coalesced,
            receipt: None,
            reason: None,
            propagated: Vec::new(),
            warnings: Vec::new(),
        })
    }

    /// `reconcile(node, wake)` including coalesced follow-ups (RUNTIME.md §7.4, §7.6).
    fn fire(&self, node: &str, wake: Wake) -> Result<Vec<ReconcileResult>, CoreError> {
        if let Some(c) = self.coalesce(node, &wake, true) {
            return Ok(vec![c]);
        }
        let mut results = Vec::new();
        let mut wake = wake;
        loop {
            let r = self.decide(node, &wake);
            let r = match r {
                Ok(r) => r,
                Err(e) => {
                    let mut st = lock(&self.state);
                    let v = st.volatile.entry(node.to_string()).or_default();
                    v.in_flight = false;
                    v.dirty = false;
                    v.pending = None;
                    return Err(e);
                }
            };
            results.push(r);
            let mut st = lock(&self.state);
            let v = st.volatile.entry(node.to_string()).or_default();
            if v.dirty {
                v.dirty = false;
                wake = v
                    .pending
                    .take()
                    .unwrap_or_else(|| Wake::new(WakeSource::External));
                continue;
            }
            v.in_flight = false;
            break;
        }
        Ok(results)
    }

    /// One decision: memo skip, or render → commit → receipt (RUNTIME.md §7.4 steps 2–8).
    fn decide(&self, node: &str, wake: &Wake) -> Result<ReconcileResult, CoreError> {
        let nir = self.node_ir(node)?;
        let (inputs, last) = {
            let st = lock(&self.state);
            (
                self.input_fingerprints(&st, node),
                st.ledger.last(node).cloned(),
            )
        };
        let base = |status: Status, fingerprints: Fingerprints, diff: Object, cost: Cost| Receipt {
            node: node.to_string(),
            contract_fingerprint: nir.contract_fingerprint.clone(),
            status,
            wake: wake.clone(),
            input_fingerprints: inputs.clone(),
            fingerprints,
            semantic_diff: diff,
            prev: None,
            cost,
            content_hash: String::new(),
        };
        if let Some(l) = &last
            && l.status != Status::Failed
            && l.contract_fingerprint == nir.contract_fingerprint
            && l.input_fingerprints == inputs
        {
            let r = base(
                Status::Skipped,
                l.fingerprints.clone(),
                Object::new(),
                Cost::none(wake.source),
            );
            let mut st = lock(&self.state);
            let r = self.append(&mut st, r)?;
            return Ok(ReconcileResult {
                node: node.to_string(),
                disposition: Disposition::Skipped,
                receipt: Some(r),
                reason: None,
                propagated: Vec::new(),
                warnings: Vec::new(),
            });
        }
        // Render.
        let prior = self.store.published_files(node);
        let upstream = Upstream {
            producers: self.producers_of(node),
            store: &self.store,
        };
        let ctx = RenderContext {
            node,
            wake,
            contract_fingerprint: &nir.contract_fingerprint,
            input_fingerprints: &inputs,
            prior: &prior,
            upstream: &upstream,
        };
        let outcome = self.render.render(&ctx);
        let cost_of = |u: &Option<Usage>| match u {
            Some(u) => Cost {
                provider: u.provider.clone(),
                model: u.model.clone(),
                fresh: u.fresh,
                reused: u.reused,
                surprise_cause: wake.source,
            },
            None => Cost::none(wake.source),
        };
        let fail = |reason: &str, usage: &Option<Usage>| -> Result<ReconcileResult, CoreError> {
            let secrets: Vec<&str> = self.secrets.iter().map(String::as_str).collect();
            let sanitized = sanitize_reason(reason, &secrets);
            let mut diff = Object::new();
            if let Some(s) = &sanitized {
                diff.push_unique("failure_reason", Value::str(s.clone()));
            }
            let fps = last
                .as_ref()
                .map(|l| l.fingerprints.clone())
                .unwrap_or_else(|| Fingerprints::atomic(COLD_START_EMPTY));
            let r = base(Status::Failed, fps, diff, cost_of(usage));
            let mut st = lock(&self.state);
            let r = self.append(&mut st, r)?;
            Ok(ReconcileResult {
                node: node.to_string(),
                disposition: Disposition::Failed,
                receipt: Some(r),
                reason: sanitized,
                propagated: Vec::new(),
                warnings: Vec::new(),
            })
        };
        let product = match outcome {
            RenderOutcome::Failed(f) => return fail(&f.reason, &f.usage),
            RenderOutcome::Done(p) => p,
        };
        let tree = match opwm::normalize_tree(product.files) {
            Ok(t) => t,
            Err(e) => {
                return fail(
                    &format!("render produced an invalid file tree: {e}"),
                    &product.usage,
                );
            }
        };
        let artifact = match opwm::encode(tree.clone()) {
            Ok(a) => a,
            Err(e) => {
                return fail(
                    &format!("render produced an invalid file tree: {e}"),
                    &product.usage,
                );
            }
        };
        let version = address(&artifact);
        let (fingerprints, warnings) = match nir.rules.fingerprint(&tree, &version) {
            Ok(x) => x,
            Err(reason) => return fail(&reason.to_string(), &product.usage),
        };
        if let Err(rejection) = nir.rules.gate(&tree, &product.attestations) {
            return fail(&rejection.to_string(), &product.usage);
        }
        if let Err(e) = self
            .store
            .commit_tree(node, &artifact, Some(tree), &fingerprints)
        {
            return fail(&format!("world-model commit failed: {e}"), &product.usage);
        }
        let moved = moved_facets(&fingerprints, last.as_ref().map(|l| &l.fingerprints));
        let r = base(
            Status::Rendered,
            fingerprints,
            product.semantic_diff,
            cost_of(&product.usage),
        );
        let r = {
            let mut st = lock(&self.state);
            self.append(&mut st, r)?
        };
        let propagated = self.targets(node, &moved);
        Ok(ReconcileResult {
            node: node.to_string(),
            disposition: Disposition::Rendered,
            receipt: Some(r),
            reason: None,
            propagated,
            warnings,
        })
    }

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

    /// The ledger-consistent inbox of `gateway`'s ingress producer (RUNTIME.md §9.2 step 1).
    pub fn inbox(&self, gateway: &str) -> Vec<Value> {
        let ing = ingress_node(gateway);
        let last_token = lock(&self.state)
            .ledger
            .last(&ing)
            .and_then(|r| r.fingerprints.atomic_token().map(str::to_string));
        let published: Vec<Value> = self
            .store
            .published_files(&ing)
            .into_iter()
            .find(|(p, _)| p == "inbox.json")
            .and_then(|(_, b)| json::parse(&b).ok())
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default();
        match last_token.as_deref() {
            None => Vec::new(),
            Some(t) => match t
                .strip_prefix("inbox:")
                .and_then(|n| n.parse::<usize>().ok())
            {
                Some(n) => published.into_iter().take(n).collect(),
                None => published,
            },
        }
    }

    /// Stages an arrival into gateway `gateway` (RUNTIME.md §9.2 steps 1–6). The caller then
    /// reconciles the gateway with an external wake.
    pub fn stage_arrival(
        &self,
        gateway: &str,
        arrival: Arrival,
        source_id: &str,
    ) -> Result<StageOutcome, CoreError> {
        if !self.mounted.entry_points.iter().any(|g| g == gateway) {
            return Err(CoreError::NotEntryPoint(gateway.to_string()));
        }
        let _staging = lock(&self.stage_lock);
        let ing = ingress_node(gateway);
        let mut inbox = self.inbox(gateway);
        let mut st = lock(&self.state);
        if st
            .cursors
            .get(source_id)
            .is_some_and(|c| c.contains(&arrival.id))
        {
            return Ok(StageOutcome::Duplicate);
        }
        let mut el = Object::new();
        el.push_unique("id", Value::str(arrival.id.clone()));
        el.push_unique("item", arrival.item);
        inbox.push(Value::Object(el));
        let n = inbox.len();
        let text = json::pretty_string(&Value::Array(inbox));
        let artifact = opwm::encode(vec![("inbox.json".to_string(), text.into_bytes())])
            .map_err(|e| CoreError::Store(e.to_string()))?;
        let fps = Fingerprints::atomic(format!("inbox:{n}"));
        self.store
            .commit(&ing, &artifact, &fps)
            .map_err(|e| CoreError::Store(format!("cannot commit {ing}: {e}")))?;
        let r = Receipt {
            node: ing.clone(),
            contract_fingerprint: format!("{ing}@edge"),
            status: Status::Rendered,
            wake: Wake::new(WakeSource::External),
            input_fingerprints: Vec::new(),
            fingerprints: fps,
            semantic_diff: Object::new(),
            prev: None,
            cost: Cost {
                provider: "connector".into(),
                model: "connector".into(),
                fresh: 0,
                reused: 0,
                surprise_cause: WakeSource::External,
            },
            content_hash: String::new(),
        };
        let r = self.append(&mut st, r)?;
        if st.ledger.has_pending() {
            self.store
                .flush()
                .map_err(|e| CoreError::Store(format!("cannot make world-models durable: {e}")))?;
            st.ledger.sync()?;
        }
        let ids = st.cursors.entry(source_id.to_string()).or_default();
        ids.insert(arrival.id);
        let snapshot: Vec<String> = ids.iter().cloned().collect();
        st.registry.set_cursor(source_id, snapshot);
        st.registry.write(&self.state_dir)?;
        Ok(StageOutcome::Staged(Box::new(r)))
    }

    /// Appends an externally produced `rendered` receipt for a phantom producer, after
    /// committing its files (the fixture generator's ingress receipts, VIEWER.md §9).
    pub fn append_phantom(
        &self,
        node: &str,
        files: Vec<(String, Vec<u8>)>,
        fingerprints: Fingerprints,
        contract_fingerprint: &str,
    ) -> Result<Receipt, CoreError> {
        if !self.mounted.phantoms.contains(node) {
            return Err(CoreError::UnknownNode(node.to_string()));
        }
        let artifact = opwm::encode(files).map_err(|e| CoreError::Store(e.to_string()))?;
        self.store
            .commit(node, &artifact, &fingerprints)
            .map_err(|e| CoreError::Store(e.to_string()))?;
        let r = Receipt {
            node: node.to_string(),
            contract_fingerprint: contract_fingerprint.to_string(),
            status: Status::Rendered,
            wake: Wake::new(WakeSource::External),
            input_fingerprints: Vec::new(),
            fingerprints,
            semantic_diff: Object::new(),
            prev: None,
            cost: Cost::none(WakeSource::External),
            content_hash: String::new(),
        };
        let mut st = lock(&self.state);
        self.append(&mut st, r)
    }

    /// The subscribers of a phantom producer's moved facets (to seed a drain after
    /// [`Reactor::append_phantom`]), with the input wake they receive.
    pub fn phantom_targets(
        &self,
        receipt: &Receipt,
        prior: Option<&Fingerprints>,
    ) -> Vec<(String, Wake)> {
        let moved = moved_facets(&receipt.fingerprints, prior);
        self.targets(&receipt.node, &moved)
            .into_iter()
            .map(|t| {
                (
                    t,
                    Wake {
                        source: WakeSource::Input,
                        refs: vec![receipt.content_hash.clone()],
                    },
                )
            })
            .collect()
    }
}
