//! The intermediate representation a reactor mounts (RUNTIME.md §3.1, §7.1, §7.7, §9.1): the
//! compiled topology, per-node rules, the augmented (mounted) topology with phantom ingress
//! edges, and node heights.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::core::postcondition::{GateRejection, TruthError};
use crate::format::opwm::FileTree;
use crate::format::receipt::{Fingerprints, WakeSource};
use crate::format::topology::{Edge, Topology, ingress_node};

/// A node's frozen materiality and obligations: how committed files become fingerprints and
/// whether a render may commit (RUNTIME.md §5, §6).
pub trait NodeRules: Send + Sync {
    /// The node's declared facets (without `@atomic`), in spec order.
    fn facets(&self) -> Vec<String>;
    /// Fingerprints of a committed tree whose OPWM1 version is `version`, plus warnings (empty
    /// facets).
    ///
    /// Errors: [`TruthError`], whose text is the structured-truth failure reason (RUNTIME.md
    /// §5.3).
    fn fingerprint(
        &self,
        files: &FileTree,
        version: &str,
    ) -> Result<(Fingerprints, Vec<String>), TruthError>;
    /// The postcondition gate.
    ///
    /// Errors: [`GateRejection`], whose text is the one-line gate failure reason (§6.3).
    fn gate(
        &self,
        files: &FileTree,
        attestations: &HashMap<String, bool>,
    ) -> Result<(), GateRejection>;
}

/// Rules of an atomic-only node with no postconditions: `@atomic` = the version.
#[derive(Clone, Copy, Debug, Default)]
pub struct AtomicRules;

impl NodeRules for AtomicRules {
    fn facets(&self) -> Vec<String> {
        Vec::new()
    }
    fn fingerprint(
        &self,
        _files: &FileTree,
        version: &str,
    ) -> Result<(Fingerprints, Vec<String>), TruthError> {
        Ok((Fingerprints::atomic(version), Vec::new()))
    }
    fn gate(
        &self,
        _files: &FileTree,
        _attestations: &HashMap<String, bool>,
    ) -> Result<(), GateRejection> {
        Ok(())
    }
}

/// One topology node of the IR.
#[derive(Clone)]
pub struct NodeIr {
    /// Node id.
    pub id: String,
    /// The memo key's first half.
    pub contract_fingerprint: String,
    /// The intrinsic wake source (boot seeds use it).
    pub wake_source: WakeSource,
    /// Fingerprinting and gate.
    pub rules: Arc<dyn NodeRules>,
}

impl std::fmt::Debug for NodeIr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeIr")
            .field("id", &self.id)
            .field("contract_fingerprint", &self.contract_fingerprint)
            .field("wake_source", &self.wake_source)
            .finish()
    }
}

/// The IR: compiled topology plus per-node data.
#[derive(Clone, Debug, Default)]
pub struct Ir {
    /// The compiled topology (no ingress edges).
    pub topology: Topology,
    /// Node id → node data, for every topology node.
    pub nodes: HashMap<String, NodeIr>,
}

/// How phantom producers are mounted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IngressMode {
    /// The host: one `<G>::ingress →(@atomic) G` edge per entry point, appended after the
    /// compiled edges (RUNTIME.md §9.1). Edge producers must be topology nodes or these.
    Host,
    /// The fixture generator: the topology is mounted as written and any edge producer that is
    /// not a topology node is accepted as a phantom producer (VIEWER.md §9).
    AsWritten,
}

/// Errors mounting an IR. A compiled IR that does not mount is a stale or damaged compile; the
/// host reports it with its own hint to recompile.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MountError {
    /// A topology node without IR data.
    #[error("node '{0}' has no contract fingerprint in the compiled IR")]
    MissingNode(String),
    /// An edge whose producer is neither a node nor a phantom ingress producer.
    #[error("edge {producer} → {subscriber} names an unknown producer")]
    UnknownProducer {
        /// Producer.
        producer: String,
        /// Subscriber.
        subscriber: String,
    },
    /// An edge whose subscriber is not a topology node.
    #[error("edge {producer} → {subscriber} names an unknown subscriber")]
    UnknownSubscriber {
        /// Producer.
        producer: String,
        /// Subscriber.
        subscriber: String,
    },
    /// An edge facet the producer does not declare.
    #[error(
        "edge {producer} → {subscriber} uses facet '{facet}', which {producer} does not declare"
    )]
    UnknownFacet {
        /// Producer.
        producer: String,
        /// Subscriber.
        subscriber: String,
        /// Facet.
        facet: String,
    },
    /// A directed cycle.
    #[error("cycle detected: {0}")]
    Cycle(String),
}

/// The mounted topology: edges in mounted order, adjacency, heights.
#[derive(Clone, Debug)]
pub struct Mounted {
    /// Compiled edges then ingress edges.
    pub edges: Vec<Edge>,
    /// Topology node ids (declared nodes).
    pub nodes: Vec<String>,
    /// Entry points.
    pub entry_points: Vec<String>,
    /// Edge producers that are not topology nodes.
    pub(crate) phantoms: HashSet<String>,
    /// Inbound edge indexes per subscriber, in mounted order.
    pub inbound: HashMap<String, Vec<usize>>,
    /// Distinct subscribers per producer, in first-edge order.
    pub subscribers: HashMap<String, Vec<String>>,
    /// Each producer's outbound edges, in mounted order (propagation walks only these).
    pub(crate) out_edges: HashMap<String, Vec<Edge>>,
    /// Heights over every node and edge endpoint.
    pub heights: HashMap<String, u32>,
}

/// Mounts and validates an IR (RUNTIME.md §7.1, §7.7, §7.8, §9.1).
pub fn mount(ir: &Ir, mode: IngressMode) -> Result<Mounted, MountError> {
    let t = &ir.topology;
    let nodes: Vec<String> = t.nodes.iter().map(|n| n.node.clone()).collect();
    let node_set: HashSet<&str> = nodes.iter().map(String::as_str).collect();
    for n in &nodes {
        if !ir.nodes.contains_key(n) {
            return Err(MountError::MissingNode(n.clone()));
        }
    }
    let mut edges = t.edges.clone();
    if mode == IngressMode::Host {
        for g in &t.entry_points {
            edges.push(Edge::new(&ingress_node(g), g, "@atomic"));
        }
    }
    let entry_points: HashSet<&str> = t.entry_points.iter().map(String::as_str).collect();
    let mut facets_of: HashMap<&str, HashSet<String>> = HashMap::new();
    let mut phantoms = HashSet::new();
    for e in &edges {
        if !node_set.contains(e.subscriber.as_str()) {
            return Err(MountError::UnknownSubscriber {
                producer: e.producer.clone(),
                subscriber: e.subscriber.clone(),
            });
        }
        if node_set.contains(e.producer.as_str()) {
            let facets = facets_of
                .entry(e.producer.as_str())
                .or_insert_with(|| ir.nodes[&e.producer].rules.facets().into_iter().collect());
            if e.facet != "@atomic" && !facets.contains(&e.facet) {
                return Err(MountError::UnknownFacet {
                    producer: e.producer.clone(),
                    subscriber: e.subscriber.clone(),
                    facet: e.facet.clone(),
                });
            }
        } else {
            let ok = match mode {
                IngressMode::Host => {
                    entry_points.contains(e.subscriber.as_str())
                        && ingress_node(&e.subscriber) == e.producer
                }
                IngressMode::AsWritten => true,
            };
            if !ok {
                return Err(MountError::UnknownProducer {
                    producer: e.producer.clone(),
                    subscriber: e.subscriber.clone(),
                });
            }
            phantoms.insert(e.producer.clone());
        }
    }
    let mut inbound: HashMap<String, Vec<usize>> = HashMap::new();
    let mut subscribers: HashMap<String, Vec<String>> = HashMap::new();
    let mut out_edges: HashMap<String, Vec<Edge>> = HashMap::new();
    let mut pairs: HashSet<(&str, &str)> = HashSet::with_capacity(edges.len());
    for (i, e) in edges.iter().enumerate() {
        inbound.entry(e.subscriber.clone()).or_default().push(i);
        out_edges
            .entry(e.producer.clone())
            .or_default()
            .push(e.clone());
        let subs = subscribers.entry(e.producer.clone()).or_default();
        if pairs.insert((e.producer.as_str(), e.subscriber.as_str())) {
            subs.push(e.subscriber.clone());
        }
    }
    let heights = compute_heights(&nodes, &edges, &inbound)?;
    Ok(Mounted {
        edges,
        nodes,
        entry_points: t.entry_points.clone(),
        phantoms,
        inbound,
        subscribers,
        out_edges,
        heights,
    })
}

fn compute_heights(
    nodes: &[String],
    edges: &[Edge],
    inbound: &HashMap<String, Vec<usize>>,
) -> Result<HashMap<String, u32>, MountError> {
    let mut all: Vec<&str> = nodes.iter().map(String::as_str).collect();
    for e in edges {
        all.push(&e.producer);
        all.push(&e.subscriber);
    }
    let mut heights: HashMap<String, u32> = HashMap::new();
    // 0 = unvisited, 1 = on stack, 2 = done. Iterative DFS (no recursion on hostile input).
    let mut state: HashMap<&str, u8> = HashMap::new();
    for &start in &all {
        if state.get(start) == Some(&2) {
            continue;
        }
        let mut stack: Vec<(&str, usize)> = vec![(start, 0)];
        state.insert(start, 1);
        while let Some(&mut (n, ref mut next)) = stack.last_mut() {
            let ins = inbound.get(n).map(Vec::as_slice).unwrap_or(&[]);
            if *next < ins.len() {
                let p = edges[ins[*next]].producer.as_str();
                *next += 1;
                match state.get(p) {
                    Some(2) => {}
                    Some(1) => {
                        // Build the cycle path p → … → n → p from the stack.
                        let pos = stack.iter().position(|(x, _)| *x == p).unwrap_or(0);
                        let mut path: Vec<&str> = stack[pos..].iter().map(|(x, _)| *x).collect();
                        path.reverse();
                        let mut cyc: Vec<&str> = path.clone();
                        cyc.push(path[0]);
                        return Err(MountError::Cycle(cyc.join(" → ")));
                    }
                    _ => {
                        state.insert(p, 1);
                        stack.push((p, 0));
                    }
                }
            } else {
                let h = ins
                    .iter()
                    .map(|&i| {
                        heights
                            .get(edges[i].producer.as_str())
                            .copied()
                            .unwrap_or(0)
                            + 1
                    })
                    .max()
                    .unwrap_or(0);
                heights.insert(n.to_string(), h);
                state.insert(n, 2);
                stack.pop();
            }
        }
    }
    Ok(heights)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::topology::TopologyNode;

    fn ir(nodes: &[&str], edges: &[(&str, &str, &str)], entry: &[&str]) -> Ir {
        let mut ir = Ir::default();
        for n in nodes {
            ir.topology.nodes.push(TopologyNode {
                node: n.to_string(),
                contract_fingerprint: Some(format!("c-{n}")),
                wake_source: Some(WakeSource::Input),
            });
            ir.nodes.insert(
                n.to_string(),
                NodeIr {
                    id: n.to_string(),
                    contract_fingerprint: format!("c-{n}"),
                    wake_source: WakeSource::Input,
                    rules: Arc::new(AtomicRules),
                },
            );
        }
        ir.topology.edges = edges.iter().map(|(p, s, f)| Edge::new(p, s, f)).collect();
        ir.topology.entry_points = entry.iter().map(|s| s.to_string()).collect();
        ir
    }

    #[test]
    fn heights_and_ingress() {
        let m = mount(
            &ir(
                &["g", "a", "b"],
                &[
                    ("g", "a", "@atomic"),
                    ("a", "b", "@atomic"),
                    ("g", "b", "@atomic"),
                ],
                &["g"],
            ),
            IngressMode::Host,
        )
        .unwrap();
        assert_eq!(
            m.edges.last().unwrap(),
            &Edge::new("g::ingress", "g", "@atomic")
        );
        assert_eq!(m.heights["g::ingress"], 0);
        assert_eq!(m.heights["g"], 1);
        assert_eq!(m.heights["a"], 2);
        assert_eq!(m.heights["b"], 3);
        assert!(m.phantoms.contains("g::ingress"));
    }

    #[test]
    fn validation_errors() {
        let e = mount(&ir(&["a", "b"], &[("a", "b", "f")], &[]), IngressMode::Host).unwrap_err();
        assert!(matches!(e, MountError::UnknownFacet { .. }));
        let e = mount(
            &ir(&["b"], &[("x", "b", "@atomic")], &[]),
            IngressMode::Host,
        )
        .unwrap_err();
        assert!(matches!(e, MountError::UnknownProducer { .. }));
        assert!(
            mount(
                &ir(&["b"], &[("ingress.x", "b", "@atomic")], &[]),
                IngressMode::AsWritten
            )
            .is_ok()
        );
        let e = mount(
            &ir(
                &["a", "b"],
                &[("a", "b", "@atomic"), ("b", "a", "@atomic")],
                &[],
            ),
            IngressMode::Host,
        )
        .unwrap_err();
        match e {
            MountError::Cycle(c) => assert!(c == "a → b → a" || c == "b → a → b", "{c}"),
            other => panic!("{other:?}"),
        }
    }
}
