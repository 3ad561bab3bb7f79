//! A hosted reactor: a mounted [`Reactor`] plus what the host keeps beside it — its gateways'
//! connectors, an in-memory copy of the ledger for the read routes (so GETs never wait for a
//! drain), and the whole-trail cost rollup. Also the shared external-wake logic of
//! `reactor trigger` and `POST /trigger/<node>` (HOST.md §8.5, §10.4; RUNTIME.md §9.2–§9.3).

use std::sync::{Arc, RwLock};

use serde_json::value::RawValue;
use std::time::{Duration, Instant};

use crate::core::{Arrival, CoreError, Reactor, ReconcileResult, StageOutcome};
use crate::format::json::{self, Value};
use crate::format::receipt::{Receipt, Wake, WakeSource};
use crate::host::connectors::{Connector, trigger_arrival_id};
use crate::host::rollup::CostRollup;
use crate::store::ledger::read_ledger;

/// A gateway entry of `reactor.yml` (HOST.md §4.3), resolved.
#[derive(Clone, Debug)]
pub struct GatewaySpec {
    /// The gateway node (an entry point).
    pub node: String,
    /// The cursor namespace (`node` by default).
    pub(crate) source_id: String,
    /// Minimum interval between polls (`None`: every tick).
    pub poll: Option<Duration>,
    /// The connector.
    pub connector: Connector,
}

/// The read-side copy of the ledger.
#[derive(Debug, Default)]
pub struct LedgerView {
    /// Canonical JSON of every receipt, in append order, held as raw JSON so the read routes
    /// splice the stored bytes into their answers unchanged.
    pub receipts: Vec<Arc<RawValue>>,
    /// Index of each node's last receipt in `receipts`, and its receipt count.
    pub last: std::collections::HashMap<String, (usize, u64)>,
    /// The whole-trail rollup.
    pub(crate) rollup: CostRollup,
}

impl LedgerView {
    fn push(&mut self, node: &str, bytes: Vec<u8>, add: impl FnOnce(&mut CostRollup)) {
        let i = self.receipts.len();
        self.receipts.push(raw_json(bytes));
        let e = self.last.entry(node.to_string()).or_insert((i, 0));
        e.0 = i;
        e.1 += 1;
        add(&mut self.rollup);
    }
}

/// Canonical JSON bytes as a raw JSON value (`null` should the bytes not be JSON, which a
/// canonical writer never produces).
fn raw_json(bytes: Vec<u8>) -> Arc<RawValue> {
    String::from_utf8(bytes)
        .ok()
        .and_then(|s| RawValue::from_string(s).ok())
        .unwrap_or_default()
        .into()
}

/// One reactor of the host.
pub struct HostedReactor {
    /// Its name (`default` for a single reactor without a list).
    pub name: String,
    /// Its queue index in the host's task pool.
    pub index: usize,
    /// The mounted reactor.
    pub reactor: Arc<Reactor>,
    /// Its gateways.
    pub gateways: Vec<GatewaySpec>,
    /// The read-side ledger copy, updated by a receipt tap.
    pub view: Arc<RwLock<LedgerView>>,
    /// Last poll start per gateway (index-aligned with `gateways`).
    pub(crate) last_poll: std::sync::Mutex<Vec<Option<Instant>>>,
    /// The daemon's metrics under `serve --metrics` (drain durations).
    metrics: std::sync::OnceLock<Arc<crate::host::metrics::Metrics>>,
}

impl std::fmt::Debug for HostedReactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostedReactor")
            .field("name", &self.name)
            .finish()
    }
}

impl HostedReactor {
    /// Wraps a reactor: loads its ledger into the read view and installs the tap that keeps the
    /// view current. Call before the boot drain so boot receipts are seen too.
    pub fn new(
        name: &str,
        index: usize,
        reactor: Arc<Reactor>,
        gateways: Vec<GatewaySpec>,
    ) -> HostedReactor {
        let view = Arc::new(RwLock::new(LedgerView::default()));
        if let Ok(bytes) = std::fs::read(reactor.state_dir().join("receipts.json"))
            && let Ok(read) = read_ledger(&bytes)
        {
            let mut v = view.write().unwrap_or_else(|e| e.into_inner());
            for raw in &read.receipts {
                let mut out = Vec::new();
                if json::write_canonical(raw, &mut out).is_err() {
                    continue;
                }
                let node = raw
                    .get("node")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let parsed = Receipt::from_value(raw).ok();
                v.push(&node, out, |r| {
                    if let Some(p) = &parsed {
                        r.add_receipt(p);
                    }
                });
            }
        }
        let tap_view = view.clone();
        reactor.on_receipt(move |r: &Receipt| {
            let bytes = r.canonical_bytes().unwrap_or_default();
            let mut v = tap_view.write().unwrap_or_else(|e| e.into_inner());
            v.push(&r.node, bytes, |roll| roll.add_receipt(r));
        });
        let n = gateways.len();
        HostedReactor {
            name: name.to_string(),
            index,
            reactor,
            gateways,
            view,
            last_poll: std::sync::Mutex::new(vec![None; n]),
            metrics: std::sync::OnceLock::new(),
        }
    }

    /// Attaches the daemon's metrics (`serve --metrics`); the first call wins.
    pub(crate) fn set_metrics(&self, metrics: Arc<crate::host::metrics::Metrics>) {
        let _ = self.metrics.set(metrics);
    }

    /// Records one drain of this reactor (`trigger` or `poll`) when metrics are on.
    pub(crate) fn observe_drain(&self, trigger: &str, took: Duration) {
        if let Some(m) = self.metrics.get() {
            m.drain(&self.name, trigger, took);
        }
    }

    /// The `source_id` and `id_field` that trigger data staged into `node` uses.
    pub(crate) fn cursor_for(&self, node: &str) -> (String, String) {
        match self.gateways.iter().find(|g| g.node == node) {
            Some(g) => (g.source_id.clone(), g.connector.id_field.clone()),
            None => (node.to_string(), "id".to_string()),
        }
    }

    /// True when `node` is a topology node.
    pub fn has_node(&self, node: &str) -> bool {
        self.reactor.mounted().nodes.iter().any(|n| n == node)
    }

    /// True when `node` is an entry point (it has a phantom ingress producer).
    pub(crate) fn is_entry_point(&self, node: &str) -> bool {
        self.reactor
            .mounted()
            .entry_points
            .iter()
            .any(|n| n == node)
    }
}

/// What an external wake did.
#[derive(Clone, Debug, Default)]
pub struct TriggerOutcome {
    /// Receipts appended by the task (ingress receipt and drain receipts).
    pub receipts_added: usize,
    /// Whether the data was staged (`None` without data).
    pub(crate) data_delivered: Option<bool>,
    /// The arrival id of the data (entry points only).
    pub arrival_id: Option<String>,
    /// Why it was not delivered.
    pub(crate) not_delivered: Option<NotDelivered>,
    /// The number of items in the ingress inbox after staging.
    pub(crate) inbox_len: Option<usize>,
    /// Reconcile results of the drain, in firing order.
    pub results: Vec<ReconcileResult>,
}

/// Why data was not staged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NotDelivered {
    /// The arrival id was already in the cursor.
    Duplicate,
    /// The node is not an entry point; a wake carries no payload.
    NotGateway,
}

/// Stages `data` (when the node is an entry point and the arrival is new), then wakes `node`
/// externally and drains to quiescence. The caller serializes this behind the reactor's queue.
pub fn external_wake(
    h: &HostedReactor,
    node: &str,
    data: Option<&Value>,
) -> Result<TriggerOutcome, CoreError> {
    let before = h.reactor.ledger_len();
    let mut out = TriggerOutcome::default();
    if let Some(d) = data {
        if h.is_entry_point(node) {
            let (source_id, id_field) = h.cursor_for(node);
            let id = trigger_arrival_id(d, &id_field)
                .ok_or_else(|| CoreError::Store("the data cannot be canonicalized".into()))?;
            out.arrival_id = Some(id.clone());
            match h.reactor.stage_arrival(
                node,
                Arrival {
                    id,
                    item: d.clone(),
                },
                &source_id,
            )? {
                StageOutcome::Staged(_) => {
                    out.data_delivered = Some(true);
                    out.inbox_len = Some(h.reactor.inbox(node).len());
                }
                StageOutcome::Duplicate => {
                    out.data_delivered = Some(false);
                    out.not_delivered = Some(NotDelivered::Duplicate);
                }
            }
        } else {
            out.data_delivered = Some(false);
            out.not_delivered = Some(NotDelivered::NotGateway);
        }
    }
    out.results = h.reactor.ingest(node, Wake::new(WakeSource::External))?;
    out.receipts_added = h.reactor.ledger_len() - before;
    Ok(out)
}
