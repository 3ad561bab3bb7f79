//! Deterministic scripted renders (RUNTIME.md §13.3): a [`Render`] whose per-node behaviour is
//! a plain function of the render context, with invocation counters, a failure switch and a
//! latch to hold a render in flight (for coalescing tests).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use crate::core::ir::NodeRules;
use crate::core::postcondition::{GateRejection, TruthError};
use crate::core::render::{
    Render, RenderContext, RenderFailure, RenderOutcome, RenderProduct, Usage,
};
use crate::format::address::address;
use crate::format::json::{self, Value};
use crate::format::opwm::FileTree;
use crate::format::receipt::Fingerprints;

/// A node's scripted behaviour.
pub(crate) type NodeScript = Arc<dyn Fn(&RenderContext<'_>) -> RenderOutcome + Send + Sync>;

/// A gate that holds renders of a node until released.
#[derive(Default)]
pub struct Latch {
    state: Mutex<(bool, usize)>,
    cv: Condvar,
}

impl Latch {
    /// Closes the latch: renders of the node block until [`Latch::release`].
    pub fn close(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).0 = true;
    }
    /// Opens the latch and wakes blocked renders.
    pub fn release(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).0 = false;
        self.cv.notify_all();
    }
    /// Number of renders currently blocked.
    pub fn waiting(&self) -> usize {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).1
    }
    fn pass(&self) {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        g.1 += 1;
        while g.0 {
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
        g.1 -= 1;
    }
}

/// A scripted render for a whole reactor.
#[derive(Default)]
pub struct ScriptedRender {
    scripts: Mutex<HashMap<String, NodeScript>>,
    counters: Mutex<HashMap<String, Arc<AtomicUsize>>>,
    failing: Mutex<HashMap<String, String>>,
    latches: Mutex<HashMap<String, Arc<Latch>>>,
}

impl ScriptedRender {
    /// An empty script (every node renders an empty tree).
    pub fn new() -> ScriptedRender {
        ScriptedRender::default()
    }

    /// Sets the behaviour of `node`.
    pub fn set(
        &self,
        node: &str,
        f: impl Fn(&RenderContext<'_>) -> RenderOutcome + Send + Sync + 'static,
    ) {
        self.scripts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(node.to_string(), Arc::new(f));
    }

    /// Makes `node` fail with `reason` (until [`ScriptedRender::heal`]).
    pub fn fail(&self, node: &str, reason: &str) {
        self.failing
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(node.to_string(), reason.to_string());
    }

    /// Stops failing `node`.
    pub fn heal(&self, node: &str) {
        self.failing
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(node);
    }

    /// The latch of `node` (created on first use).
    pub fn latch(&self, node: &str) -> Arc<Latch> {
        self.latches
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(node.to_string())
            .or_default()
            .clone()
    }

    /// How many times `node` rendered (including failed attempts).
    pub fn count(&self, node: &str) -> usize {
        self.counters
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(node)
            .map(|c| c.load(Ordering::SeqCst))
            .unwrap_or(0)
    }
}

impl Render for ScriptedRender {
    fn render(&self, ctx: &RenderContext<'_>) -> RenderOutcome {
        let counter = self
            .counters
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(ctx.node.to_string())
            .or_default()
            .clone();
        counter.fetch_add(1, Ordering::SeqCst);
        let latch = self
            .latches
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(ctx.node)
            .cloned();
        if let Some(l) = latch {
            l.pass();
        }
        if let Some(reason) = self
            .failing
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(ctx.node)
            .cloned()
        {
            return RenderOutcome::Failed(RenderFailure {
                reason,
                usage: None,
            });
        }
        let script = self
            .scripts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(ctx.node)
            .cloned();
        match script {
            Some(f) => f(ctx),
            None => RenderOutcome::Done(RenderProduct::default()),
        }
    }
}

/// A render product with one `truth.json` (pretty JSON of `truth`) plus extra files.
pub fn truth_product(
    truth: &Value,
    extra: Vec<(String, Vec<u8>)>,
    usage: Option<Usage>,
) -> RenderOutcome {
    let mut files = vec![(
        "truth.json".to_string(),
        json::pretty_string(truth).into_bytes(),
    )];
    files.extend(extra);
    RenderOutcome::Done(RenderProduct {
        files,
        usage,
        ..RenderProduct::default()
    })
}

/// The parsed `truth.json` of a file tree.
pub fn truth_of(files: &FileTree) -> Option<Value> {
    files
        .iter()
        .find(|(p, _)| p == "truth.json")
        .and_then(|(_, b)| json::parse(b).ok())
}

/// Fixture-local rules: `@atomic` = address of the canonical JSON of the whole `truth.json`
/// value, each facet = address of the canonical JSON of the top-level member of the same name
/// (`null` when absent). No postconditions. A missing or invalid `truth.json` fails the render
/// like a compiled faceted node.
#[derive(Clone, Debug)]
pub struct TopKeyRules {
    /// Declared facets, in order.
    pub facets: Vec<String>,
}

impl NodeRules for TopKeyRules {
    fn facets(&self) -> Vec<String> {
        self.facets.clone()
    }
    fn fingerprint(
        &self,
        files: &FileTree,
        _version: &str,
    ) -> Result<(Fingerprints, Vec<String>), TruthError> {
        let truth = truth_of(files).ok_or_else(|| {
            TruthError::Rules(
                "structured truth missing: the render wrote no valid truth.json".to_string(),
            )
        })?;
        let tok = |v: &Value| -> Result<String, TruthError> {
            json::canonical_string(v)
                .map(|s| address(s.as_bytes()))
                .map_err(|e| TruthError::Rules(format!("structured truth invalid: {e}")))
        };
        let mut out = vec![("@atomic".to_string(), tok(&truth)?)];
        for f in &self.facets {
            out.push((f.clone(), tok(truth.get(f).unwrap_or(&Value::Null))?));
        }
        Ok((Fingerprints(out), Vec::new()))
    }
    fn gate(&self, _files: &FileTree, _a: &HashMap<String, bool>) -> Result<(), GateRejection> {
        Ok(())
    }
}
