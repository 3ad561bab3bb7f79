//! Ingress staging through the phantom `<G>::ingress` producer (RUNTIME.md §9.2–§9.3) and
//! externally produced phantom receipts (VIEWER.md §9).

use super::{Arrival, CoreError, Reactor, StageOutcome, lock};
use crate::format::json::{self, Object, Value};
use crate::format::opwm;
use crate::format::receipt::{Cost, Fingerprints, Receipt, Status, Wake, WakeSource};
use crate::format::topology::ingress_node;

impl Reactor {
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
    /// [`Reactor::append_phantom`]), with the input wake they receive. Only the fixture
    /// generators seed drains this way.
    #[cfg(feature = "testing")]
    pub(crate) fn phantom_targets(
        &self,
        receipt: &Receipt,
        prior: Option<&Fingerprints>,
    ) -> Vec<(String, Wake)> {
        let moved = crate::format::propagate::moved_facets(&receipt.fingerprints, prior);
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
