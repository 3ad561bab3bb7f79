//! The reactor (RUNTIME.md §7, §9, §12): the per-node decision (memo skip, render, commit gate,
//! failed / rendered receipts), the height-ordered drain with merged wakes and pruning,
//! single-flight coalescing, ingress staging through the phantom `<G>::ingress` producer, and
//! the boot cold-miss sweep. Deterministic; renders arrive through [`Render`].
//!
//! This file holds the reactor's state, mounting and single-flight; the per-node decision is in
//! `reactor/decide.rs`, the drain and boot in `reactor/drain.rs`, ingress staging in
//! `reactor/ingress.rs`.

mod decide;
mod drain;
mod ingress;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

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
}
