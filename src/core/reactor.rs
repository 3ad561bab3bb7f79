//! The reactor (RUNTIME.md §7, §9, §12): the per-node decision (memo skip, render, commit gate,
//! failed / rendered receipts), the height-ordered drain with merged wakes and pruning,
//! single-flight coalescing, ingress staging through the phantom `<G>::ingress` producer, and
//! the boot cold-miss sweep. Deterministic; renders arrive through [`Render`].
//!
//! This file holds the reactor's state, mounting and single-flight; the per-node decision is in
//! `reactor/decide.rs`, the drain's planning and boot in `reactor/drain.rs`, the drain's
//! executor (parallel renders, serial commit order) in `reactor/schedule.rs`, ingress staging in
//! `reactor/ingress.rs`.

mod decide;
mod drain;
mod ingress;
mod schedule;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use crate::core::ir::{IngressMode, Ir, MountError, Mounted, NodeIr, mount};
use crate::core::render::Render;
use crate::format::address::EMPTY_TREE_ADDRESS;
use crate::format::json::Value;
use crate::format::propagate::propagation_targets;
use crate::format::receipt::{Receipt, Wake, WakeSource};
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
type InFlightTap = Box<dyn Fn(&[InFlight]) + Send + Sync>;

/// A render the current drain has started and whose receipt is not appended yet (see
/// [`Reactor::in_flight`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InFlight {
    /// The node id.
    pub node: String,
    /// When the render started (monotonic clock).
    pub since: Instant,
    /// `true` once the render returned and its outcome waits for its turn in the commit order
    /// (an earlier node of the drain is still rendering); `false` while it renders.
    pub awaiting_commit: bool,
}

/// The in-flight registry: (position in the drain's commit order, the render).
type InFlightRegistry = Mutex<Vec<(usize, InFlight)>>;

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
    parallel_renders: usize,
    stop: OnceLock<Arc<AtomicBool>>,
    in_flight: InFlightRegistry,
    in_flight_taps: Mutex<Vec<InFlightTap>>,
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

/// Options of [`Reactor::open`].
#[derive(Clone, Debug)]
pub struct ReactorOptions {
    /// How phantom producers are mounted.
    pub ingress: IngressMode,
    /// Ledger durability.
    pub sync: SyncPolicy,
    /// Secret values redacted from failure reasons (provider keys, bearer tokens).
    pub secrets: Vec<String>,
    /// Renders a drain runs at once (at least 1; 0 counts as 1). Receipts still commit in the
    /// drain's serial order, so the ledger is the same for every value; `1` renders on the
    /// draining thread, one node after another. Default 1 here; the host's default is
    /// `model.parallel_renders` (4).
    pub parallel_renders: usize,
}

impl Default for ReactorOptions {
    fn default() -> Self {
        ReactorOptions {
            ingress: IngressMode::Host,
            sync: SyncPolicy::EveryAppend,
            secrets: Vec::new(),
            parallel_renders: 1,
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
        // The ledger first: a ledger the writer refuses leaves the state dir as it was.
        let (mut ledger, notes) = Ledger::open(state_dir)?;
        if !state_dir.join("registry.json").exists() {
            crate::store::fsutil::write_atomic(&state_dir.join("registry.json"), b"{}\n")
                .map_err(|e| CoreError::Store(e.to_string()))?;
        }
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
            parallel_renders: options.parallel_renders.max(1),
            stop: OnceLock::new(),
            in_flight: Mutex::new(Vec::new()),
            in_flight_taps: Mutex::new(Vec::new()),
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

    /// Renders a drain runs at once ([`ReactorOptions::parallel_renders`], at least 1).
    pub fn parallel_renders(&self) -> usize {
        self.parallel_renders
    }

    /// Makes drains observe `flag` (a host's stop request; the first one set wins). Once it is
    /// set, a drain starts no new reconcile: renders already in flight finish and commit in
    /// the drain's order, the rest of the drain is left undone and the drain returns what it
    /// committed. Nothing is lost: the next boot's cold-miss sweep re-derives every node the
    /// drain did not reach (RUNTIME.md §12).
    pub fn set_stop_flag(&self, flag: Arc<AtomicBool>) {
        let _ = self.stop.set(flag);
    }

    /// Whether the stop flag of [`Reactor::set_stop_flag`] is set.
    pub(crate) fn stop_requested(&self) -> bool {
        self.stop.get().is_some_and(|f| f.load(Ordering::SeqCst))
    }

    /// The renders the current drain has started and not yet committed, in the drain's commit
    /// order (height, then node id in UTF-16 order). Empty between drains. Memo skips never
    /// appear (they do not render).
    pub fn in_flight(&self) -> Vec<InFlight> {
        let mut v = lock(&self.in_flight).clone();
        v.sort_by_key(|(pos, _)| *pos);
        v.into_iter().map(|(_, f)| f).collect()
    }

    /// Registers a tap called with [`Reactor::in_flight`] each time it changes (a render
    /// starts, returns, or is committed or dropped), on the draining thread, outside every lock
    /// of the reactor. Taps must be quick.
    pub(crate) fn on_in_flight(&self, tap: impl Fn(&[InFlight]) + Send + Sync + 'static) {
        lock(&self.in_flight_taps).push(Box::new(tap));
    }

    fn in_flight_changed(&self) {
        let taps = lock(&self.in_flight_taps);
        if taps.is_empty() {
            return;
        }
        let now = self.in_flight();
        for t in taps.iter() {
            t(&now);
        }
    }

    fn track_render(&self, pos: usize, node: &str) {
        lock(&self.in_flight).push((
            pos,
            InFlight {
                node: node.to_string(),
                since: Instant::now(),
                awaiting_commit: false,
            },
        ));
        self.in_flight_changed();
    }

    fn render_returned(&self, pos: usize) {
        for (p, f) in lock(&self.in_flight).iter_mut() {
            if *p == pos {
                f.awaiting_commit = true;
            }
        }
        self.in_flight_changed();
    }

    fn untrack_render(&self, pos: usize) {
        let removed = {
            let mut v = lock(&self.in_flight);
            let before = v.len();
            v.retain(|(p, _)| *p != pos);
            v.len() != before
        };
        if removed {
            self.in_flight_changed();
        }
    }

    /// Registers a receipt tap, called after every acknowledged append.
    pub(crate) fn on_receipt(&self, tap: impl Fn(&Receipt) + Send + Sync + 'static) {
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

    /// After a receipt of the in-flight `node` was appended (RUNTIME.md §7.6): when wakes
    /// coalesced meanwhile, clears `dirty` and returns their merged wake (the node stays in
    /// flight for the follow-up); otherwise releases the node and returns `None`.
    fn follow_up(&self, node: &str) -> Option<Wake> {
        let mut st = lock(&self.state);
        let v = st.volatile.entry(node.to_string()).or_default();
        if v.dirty {
            v.dirty = false;
            return Some(
                v.pending
                    .take()
                    .unwrap_or_else(|| Wake::new(WakeSource::External)),
            );
        }
        v.in_flight = false;
        None
    }

    /// Releases an in-flight `node` without a follow-up, dropping its pending wakes (an
    /// infrastructure error, or a stop request: the next boot re-derives the node).
    fn release(&self, node: &str) {
        let mut st = lock(&self.state);
        let v = st.volatile.entry(node.to_string()).or_default();
        v.in_flight = false;
        v.dirty = false;
        v.pending = None;
    }
}
