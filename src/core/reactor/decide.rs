//! One decision of the reconciler (RUNTIME.md §7.4 steps 2–8): the memo skip, or a render whose
//! tree is fingerprinted, gated and committed, ending in a `skipped`, `rendered` or `failed`
//! receipt.

use super::{CoreError, Disposition, Reactor, ReconcileResult, lock};
use crate::core::ir::NodeIr;
use crate::core::render::{
    NotSubscribed, RenderContext, RenderOutcome, RenderProduct, UpstreamReader, Usage,
};
use crate::format::address::{COLD_START_EMPTY, address};
use crate::format::json::{Object, Value};
use crate::format::opwm::{self, FileTree};
use crate::format::propagate::moved_facets;
use crate::format::receipt::{Cost, Fingerprints, Receipt, Status, Wake};
use crate::format::sanitize::sanitize_reason;
use crate::store::worldmodel::WorldModelStore;

/// The read-isolated view of a node's producers (RUNTIME.md §8.5).
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

/// One decision about `node`, split so that its render can run on another thread: the
/// snapshot taken under the state lock ([`Reactor::prepare`]), the render itself
/// ([`Decision::render`], no lock held) and the commit ([`Decision::finish`]: fingerprint, gate,
/// world-model commit, receipt append), which the drain runs in its commit order.
pub(super) struct Decision<'a> {
    reactor: &'a Reactor,
    node: &'a str,
    wake: Wake,
    nir: &'a NodeIr,
    /// The current input tuple.
    inputs: Vec<String>,
    /// The node's last receipt.
    last: Option<Receipt>,
    /// What the render reads; `None` on a memo hit (no render).
    render: Option<RenderInput>,
}

/// The render's own inputs, taken with the snapshot.
struct RenderInput {
    prior: FileTree,
    producers: Vec<String>,
}

impl Reactor {
    /// The snapshot of one decision (RUNTIME.md §7.4 steps 2–3): the input tuple and the last
    /// receipt under the state lock, the memo check, and — on a miss — the prior published
    /// files and the producers the render may read.
    pub(super) fn prepare<'a>(
        &'a self,
        node: &'a str,
        wake: Wake,
    ) -> Result<Decision<'a>, CoreError> {
        let nir = self.node_ir(node)?;
        let (inputs, last) = {
            let st = lock(&self.state);
            (
                self.input_fingerprints(&st, node),
                st.ledger.last(node).cloned(),
            )
        };
        let mut d = Decision {
            reactor: self,
            node,
            wake,
            nir,
            inputs,
            last,
            render: None,
        };
        if !d.memo_hit() {
            d.render = Some(RenderInput {
                prior: self.store.published_files(node),
                producers: self.producers_of(node),
            });
        }
        Ok(d)
    }
}

impl Decision<'_> {
    /// The node this decision is about.
    pub(super) fn node(&self) -> &str {
        self.node
    }

    /// Whether [`Decision::render`] will call the render (a memo miss).
    pub(super) fn renders(&self) -> bool {
        self.render.is_some()
    }

    /// Runs the render (no lock held; safe on a worker thread). `None` on a memo hit.
    pub(super) fn render(&self) -> Option<RenderOutcome> {
        let input = self.render.as_ref()?;
        let upstream = Upstream {
            producers: input.producers.clone(),
            store: &self.reactor.store,
        };
        Some(self.reactor.render.render(&RenderContext {
            node: self.node,
            wake: &self.wake,
            contract_fingerprint: &self.nir.contract_fingerprint,
            input_fingerprints: &self.inputs,
            prior: &input.prior,
            upstream: &upstream,
        }))
    }

    /// Ends the decision with its receipt (RUNTIME.md §7.4 steps 4–8): `skipped` on a memo hit
    /// (`outcome` is then `None`), otherwise the render's outcome committed or refused.
    ///
    /// Errors: infrastructure failures (the receipt append), RUNTIME.md §7.10.
    pub(super) fn finish(
        &self,
        outcome: Option<RenderOutcome>,
    ) -> Result<ReconcileResult, CoreError> {
        match outcome {
            None => self.skip(),
            Some(RenderOutcome::Failed(f)) => self.fail(&f.reason, &f.usage),
            Some(RenderOutcome::Done(product)) => self.commit(product),
        }
    }
}

impl Decision<'_> {
    /// The memo key is unchanged and the last receipt did not fail (RUNTIME.md §7.4 step 2).
    fn memo_hit(&self) -> bool {
        self.last.as_ref().is_some_and(|l| {
            l.status != Status::Failed
                && l.contract_fingerprint == self.nir.contract_fingerprint
                && l.input_fingerprints == self.inputs
        })
    }

    fn receipt(
        &self,
        status: Status,
        fingerprints: Fingerprints,
        semantic_diff: Object,
        cost: Cost,
    ) -> Receipt {
        Receipt {
            node: self.node.to_string(),
            contract_fingerprint: self.nir.contract_fingerprint.clone(),
            status,
            wake: self.wake.clone(),
            input_fingerprints: self.inputs.clone(),
            fingerprints,
            semantic_diff,
            prev: None,
            cost,
            content_hash: String::new(),
        }
    }

    fn cost_of(&self, usage: &Option<Usage>) -> Cost {
        match usage {
            Some(u) => Cost {
                provider: u.provider.clone(),
                model: u.model.clone(),
                fresh: u.fresh,
                reused: u.reused,
                surprise_cause: self.wake.source,
            },
            None => Cost::none(self.wake.source),
        }
    }

    fn append(&self, r: Receipt) -> Result<Receipt, CoreError> {
        let mut st = lock(&self.reactor.state);
        self.reactor.append(&mut st, r)
    }

    fn result(&self, disposition: Disposition, receipt: Receipt) -> ReconcileResult {
        ReconcileResult {
            node: self.node.to_string(),
            disposition,
            receipt: Some(receipt),
            reason: None,
            propagated: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// A `skipped` receipt: fingerprints copied, empty diff, no cost.
    fn skip(&self) -> Result<ReconcileResult, CoreError> {
        let fingerprints = self
            .last
            .as_ref()
            .map(|l| l.fingerprints.clone())
            .unwrap_or_default();
        let r = self.receipt(
            Status::Skipped,
            fingerprints,
            Object::new(),
            Cost::none(self.wake.source),
        );
        Ok(self.result(Disposition::Skipped, self.append(r)?))
    }

    /// A `failed` receipt with the sanitized reason; fingerprints copied (or the cold-start
    /// token), the world-model untouched.
    fn fail(&self, reason: &str, usage: &Option<Usage>) -> Result<ReconcileResult, CoreError> {
        let secrets: Vec<&str> = self.reactor.secrets.iter().map(String::as_str).collect();
        let sanitized = sanitize_reason(reason, &secrets);
        let mut diff = Object::new();
        if let Some(s) = &sanitized {
            diff.push_unique("failure_reason", Value::str(s.clone()));
        }
        let fps = self
            .last
            .as_ref()
            .map(|l| l.fingerprints.clone())
            .unwrap_or_else(|| Fingerprints::atomic(COLD_START_EMPTY));
        let r = self.receipt(Status::Failed, fps, diff, self.cost_of(usage));
        let mut result = self.result(Disposition::Failed, self.append(r)?);
        result.reason = sanitized;
        Ok(result)
    }

    /// Harvest → fingerprints → gate → commit → `rendered` receipt and its propagation
    /// targets; any refusal is a `failed` receipt.
    fn commit(&self, product: RenderProduct) -> Result<ReconcileResult, CoreError> {
        let usage = &product.usage;
        let invalid = |e: &dyn std::fmt::Display| {
            self.fail(&format!("render produced an invalid file tree: {e}"), usage)
        };
        let tree = match opwm::normalize_tree(product.files) {
            Ok(t) => t,
            Err(e) => return invalid(&e),
        };
        let artifact = match opwm::encode(tree.clone()) {
            Ok(a) => a,
            Err(e) => return invalid(&e),
        };
        let version = address(&artifact);
        let rules = &self.nir.rules;
        let (fingerprints, warnings) = match rules.fingerprint(&tree, &version) {
            Ok(x) => x,
            Err(reason) => return self.fail(&reason.to_string(), usage),
        };
        if let Err(rejection) = rules.gate(&tree, &product.attestations) {
            return self.fail(&rejection.to_string(), usage);
        }
        let store = &self.reactor.store;
        if let Err(e) = store.commit_tree(self.node, &artifact, Some(tree), &fingerprints) {
            return self.fail(&format!("world-model commit failed: {e}"), usage);
        }
        let moved = moved_facets(&fingerprints, self.last.as_ref().map(|l| &l.fingerprints));
        let r = self.receipt(
            Status::Rendered,
            fingerprints,
            product.semantic_diff,
            self.cost_of(usage),
        );
        let mut result = self.result(Disposition::Rendered, self.append(r)?);
        result.propagated = self.reactor.targets(self.node, &moved);
        result.warnings = warnings;
        Ok(result)
    }
}
