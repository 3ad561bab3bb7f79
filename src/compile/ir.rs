//! The compiled IR (RUNTIME.md §3.1): the topology plus, per node, the compiled canonicalizer
//! (the identity spec for atomic-only nodes), the compiled postcondition set and the contract
//! view. A compiled node mounts as [`CompiledRules`].

use std::collections::HashMap;
use std::sync::Arc;

use crate::core::canonicalizer::{CanonicalizerSpec, CompiledCanonicalizer};
use crate::core::ir::{Ir, NodeIr};
use crate::core::postcondition::CompiledPostconditions;
use crate::core::rules::CompiledRules;
use crate::format::json::{self, Object, Value};
use crate::format::receipt::WakeSource;
use crate::format::topology::Topology;

/// One compiled topology node.
#[derive(Clone, Debug)]
pub struct CompiledNode {
    /// The node id.
    pub id: String,
    /// Its contract fingerprint (the memo key's first half, RUNTIME.md §2.7).
    pub contract_fingerprint: String,
    /// Its intrinsic wake source, as Forme decided it.
    pub wake_source: WakeSource,
    /// The compiled canonicalizer; its [`spec`](CompiledCanonicalizer::spec) is what the compile
    /// file persists (the identity spec for atomic-only nodes).
    pub canonicalizer: Arc<CompiledCanonicalizer>,
    /// The compiled postcondition set (possibly empty).
    pub postconditions: Arc<CompiledPostconditions>,
    /// The contract view shown to renders: `(heading as written, body)` for the Requires,
    /// Maintains, Continuity, Execution and Criteria sections present (RUNTIME.md §8.3.2).
    pub contract_view: Vec<(String, String)>,
}

impl CompiledNode {
    /// The canonicalization spec.
    pub fn spec(&self) -> &CanonicalizerSpec {
        self.canonicalizer.spec()
    }

    /// The declared facets, in spec order (without `@atomic`).
    pub fn facets(&self) -> &[String] {
        self.canonicalizer.declared_facets()
    }

    /// The facet layout for renders: each declared facet with its `truth.json` paths.
    pub fn facet_layout(&self) -> Vec<(&str, &[String])> {
        self.spec()
            .facets
            .iter()
            .map(|f| (f.facet.as_str(), f.paths.as_slice()))
            .collect()
    }

    /// The ids of the render-attested postconditions, sorted (the keys a render's `finish`
    /// must attest).
    pub fn attested_ids(&self) -> Vec<&str> {
        self.postconditions
            .attested
            .iter()
            .map(|a| a.id.as_str())
            .collect()
    }

    /// The node's mounted rules.
    pub fn rules(&self) -> CompiledRules {
        CompiledRules::new(
            self.id.clone(),
            Arc::clone(&self.canonicalizer),
            Arc::clone(&self.postconditions),
        )
    }

    /// The node as the core IR holds it.
    pub(crate) fn node_ir(&self) -> NodeIr {
        NodeIr {
            id: self.id.clone(),
            contract_fingerprint: self.contract_fingerprint.clone(),
            wake_source: self.wake_source,
            rules: Arc::new(self.rules()),
        }
    }

    /// The bytes of `compile/nodes/<hex(id)>.json` (FORMATS.md §15.5): pretty JSON + `\n`, keys
    /// `node`, `contract_fingerprint`, `canonicalizer`, `postconditions` (flat form, sorted by
    /// id), `contract_view` (heading → body, in view order).
    pub(crate) fn file_bytes(&self) -> Vec<u8> {
        let mut o = Object::new();
        o.push_unique("node", Value::str(self.id.clone()));
        o.push_unique(
            "contract_fingerprint",
            Value::str(self.contract_fingerprint.clone()),
        );
        o.push_unique("canonicalizer", self.spec().to_value());
        o.push_unique("postconditions", self.postconditions.entries_value());
        let mut view = Object::new();
        for (heading, body) in &self.contract_view {
            view.insert(heading.as_str(), Value::str(body.clone()));
        }
        o.push_unique("contract_view", Value::Object(view));
        json::pretty_string(&Value::Object(o)).into_bytes()
    }
}

/// Counts and flags of a topology, as the compile report shows them (HOST.md §8.3).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct TopologySummary {
    /// Number of topology nodes.
    pub nodes: usize,
    /// Number of compiled edges (phantom ingress edges are never in it).
    pub edges: usize,
    /// Entry points, as stored.
    pub entry_points: Vec<String>,
    /// The acyclicity flag.
    pub acyclic: bool,
}

impl TopologySummary {
    /// The summary of a topology.
    pub fn of(t: &Topology) -> TopologySummary {
        TopologySummary {
            nodes: t.nodes.len(),
            edges: t.edges.len(),
            entry_points: t.entry_points.clone(),
            acyclic: t.acyclic,
        }
    }
}

/// The compiled IR: the topology (nodes sorted by id, edges by `(subscriber, producer, facet)`,
/// entry points sorted, `acyclic: true`) and one [`CompiledNode`] per topology node, in
/// topology order.
#[derive(Clone, Debug, Default)]
pub struct CompiledIr {
    /// The compiled topology (no ingress edges).
    pub topology: Topology,
    /// The nodes, in topology node order.
    pub nodes: Vec<CompiledNode>,
}

impl CompiledIr {
    /// The node with this id.
    pub fn node(&self, id: &str) -> Option<&CompiledNode> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// Counts, entry points and acyclicity.
    pub fn summary(&self) -> TopologySummary {
        TopologySummary::of(&self.topology)
    }

    /// The core IR to mount (`core::ir::mount`): the topology and every node's
    /// [`CompiledRules`].
    pub fn to_ir(&self) -> Ir {
        Ir {
            topology: self.topology.clone(),
            nodes: self
                .nodes
                .iter()
                .map(|n| (n.id.clone(), n.node_ir()))
                .collect::<HashMap<_, _>>(),
        }
    }
}
