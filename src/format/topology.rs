//! Topology types and the tolerant reader / canonical writer of `compile/topology.json`
//! (FORMATS.md §15.1).

use std::collections::{HashMap, HashSet};

use crate::format::json::{self, Object, Value};
use crate::format::receipt::WakeSource;

/// A declared node of the topology.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopologyNode {
    /// Node id.
    pub node: String,
    /// The node's contract fingerprint, when the file records one.
    pub contract_fingerprint: Option<String>,
    /// The node's intrinsic wake source, when the file records a valid one.
    pub wake_source: Option<WakeSource>,
}

/// `(subscriber, producer, facet)`: the subscriber consumes that facet of the producer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Edge {
    /// The consuming node.
    pub subscriber: String,
    /// The producing node (a topology node or a phantom ingress producer).
    pub producer: String,
    /// `@atomic` or a declared facet of the producer.
    pub facet: String,
}

impl Edge {
    /// Builds an edge.
    pub fn new(producer: &str, subscriber: &str, facet: &str) -> Edge {
        Edge {
            subscriber: subscriber.into(),
            producer: producer.into(),
            facet: facet.into(),
        }
    }
}

/// Nodes, edges (in semantic order), entry points and the acyclicity flag.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Topology {
    /// Declared nodes in file order (duplicates dropped, first kept).
    pub nodes: Vec<TopologyNode>,
    /// Edges in file order: the order fixes every subscriber's input slots.
    pub edges: Vec<Edge>,
    /// Entry points (gateways).
    pub entry_points: Vec<String>,
    /// The file's acyclicity flag (`true` when absent).
    pub acyclic: bool,
}

impl Topology {
    /// True when `id` is a declared node. O(nodes): for repeated questions build a
    /// [`TopologyIndex`] once.
    pub fn has_node(&self, id: &str) -> bool {
        self.nodes.iter().any(|n| n.node == id)
    }

    /// An index for repeated lookups (every reader that asks per node or per edge uses one, so
    /// that reading a topology stays linear in its size).
    pub fn index(&self) -> TopologyIndex<'_> {
        TopologyIndex::new(self)
    }
}

/// Lookups over a [`Topology`] built once in O(nodes + edges): node membership and position,
/// entry points, and per node its inbound edges, its outbound edges and the distinct facets its
/// outbound edges consume (edge order).
#[derive(Clone, Debug)]
pub struct TopologyIndex<'a> {
    topology: &'a Topology,
    nodes: HashMap<&'a str, usize>,
    entry_points: HashSet<&'a str>,
    inbound: HashMap<&'a str, Vec<usize>>,
    outbound: HashMap<&'a str, Vec<usize>>,
}

impl<'a> TopologyIndex<'a> {
    /// Indexes `topology`.
    pub fn new(topology: &'a Topology) -> TopologyIndex<'a> {
        let mut nodes = HashMap::with_capacity(topology.nodes.len());
        for (i, n) in topology.nodes.iter().enumerate() {
            nodes.entry(n.node.as_str()).or_insert(i);
        }
        let mut inbound: HashMap<&str, Vec<usize>> = HashMap::new();
        let mut outbound: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, e) in topology.edges.iter().enumerate() {
            inbound.entry(e.subscriber.as_str()).or_default().push(i);
            outbound.entry(e.producer.as_str()).or_default().push(i);
        }
        TopologyIndex {
            topology,
            nodes,
            entry_points: topology.entry_points.iter().map(String::as_str).collect(),
            inbound,
            outbound,
        }
    }

    /// The indexed topology.
    pub fn topology(&self) -> &'a Topology {
        self.topology
    }

    /// True when `id` is a declared node.
    pub fn has_node(&self, id: &str) -> bool {
        self.nodes.contains_key(id)
    }

    /// The declared node `id`.
    pub fn node(&self, id: &str) -> Option<&'a TopologyNode> {
        self.nodes.get(id).map(|&i| &self.topology.nodes[i])
    }

    /// True when `id` is an entry point.
    pub(crate) fn is_entry_point(&self, id: &str) -> bool {
        self.entry_points.contains(id)
    }

    /// The edges into `subscriber`, in edge order.
    pub fn inbound(&self, subscriber: &str) -> impl Iterator<Item = &'a Edge> + '_ {
        self.inbound
            .get(subscriber)
            .into_iter()
            .flatten()
            .map(|&i| &self.topology.edges[i])
    }

    /// The edges out of `producer`, in edge order.
    pub(crate) fn outbound(&self, producer: &str) -> impl Iterator<Item = &'a Edge> + '_ {
        self.outbound
            .get(producer)
            .into_iter()
            .flatten()
            .map(|&i| &self.topology.edges[i])
    }

    /// The distinct facets other than `@atomic` that `producer`'s outbound edges consume, in
    /// edge order.
    pub(crate) fn consumed_facets(&self, producer: &str) -> Vec<String> {
        let mut seen = HashSet::new();
        self.outbound(producer)
            .filter(|e| e.facet != "@atomic" && seen.insert(e.facet.as_str()))
            .map(|e| e.facet.clone())
            .collect()
    }
}

/// What `compile/topology.json` held: the topology, and for the envelope form its
/// `contract_fingerprints` member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopologyFile {
    /// The topology.
    pub topology: Topology,
    /// `contract_fingerprints` of the envelope (node → fingerprint, file order); `None` for the
    /// flat form or when the member is missing or not an object.
    pub contract_fingerprints: Option<Vec<(String, String)>>,
    /// True when the value was the `{topology, contract_fingerprints}` envelope.
    pub envelope: bool,
}

fn model_of(v: &Value) -> Option<&Object> {
    let o = v.as_object()?;
    if matches!(o.get("nodes"), Some(Value::Array(_)))
        && matches!(o.get("edges"), Some(Value::Array(_)))
    {
        Some(o)
    } else {
        None
    }
}

/// The phantom ingress producer of a gateway `<gw>`: the node id `<gw>::ingress`, producer of
/// the `@atomic` edge the mounted topology appends into every entry point (FORMATS.md §8.3).
pub(crate) fn ingress_node(gateway: &str) -> String {
    format!("{gateway}::ingress")
}

/// Reads a topology value, flat or envelope (FORMATS.md §15.1 reading rules 3–6). Returns `None`
/// for anything else (`null`, `{"nope":true}`, `{"topology":{"not":"a model"}}`); never errors.
pub fn unwrap_topology(v: &Value) -> Option<TopologyFile> {
    let (model, envelope) = match v.get("topology").and_then(model_of) {
        Some(m) => (m, true),
        None => (model_of(v)?, false),
    };
    let mut nodes: Vec<TopologyNode> = Vec::new();
    // Duplicate ids keep the first (rule 4); a set keeps the check linear.
    let mut seen: HashSet<&str> = HashSet::new();
    for n in model
        .get("nodes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(id) = n.get("node").and_then(Value::as_str) else {
            continue;
        };
        if !seen.insert(id) {
            continue;
        }
        nodes.push(TopologyNode {
            node: id.to_string(),
            contract_fingerprint: n
                .get("contract_fingerprint")
                .and_then(Value::as_str)
                .map(str::to_string),
            wake_source: n
                .get("wake_source")
                .and_then(Value::as_str)
                .and_then(WakeSource::parse),
        });
    }
    let mut edges = Vec::new();
    for e in model
        .get("edges")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (Some(p), Some(s), Some(f)) = (
            e.get("producer").and_then(Value::as_str),
            e.get("subscriber").and_then(Value::as_str),
            e.get("facet").and_then(Value::as_str),
        ) else {
            continue;
        };
        edges.push(Edge::new(p, s, f));
    }
    let entry_points = match model.get("entry_points") {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    };
    let acyclic = match model.get("acyclic") {
        Some(Value::Bool(b)) => *b,
        _ => true,
    };
    let contract_fingerprints = if envelope {
        v.get("contract_fingerprints")
            .and_then(Value::as_object)
            .map(|o| {
                o.iter()
                    .filter_map(|(k, v)| Some((k.to_lossy().into_owned(), v.as_str()?.to_string())))
                    .collect()
            })
    } else {
        None
    };
    Some(TopologyFile {
        topology: Topology {
            nodes,
            edges,
            entry_points,
            acyclic,
        },
        contract_fingerprints,
        envelope,
    })
}

/// Writes the envelope as the project's `compile` does (FORMATS.md §15.1 writing rules): pretty
/// JSON + `\n`; nodes sorted by id, edges by `(subscriber, producer, facet)`, entry points
/// sorted, all in UTF-16 order; `contract_fingerprints` keys in node order; `acyclic: true`.
/// Nodes without a contract fingerprint or wake source are written with `""` / `"input"`.
pub fn write_envelope(topology: &Topology) -> String {
    let mut nodes = topology.nodes.clone();
    nodes.sort_by(|a, b| json::utf16_cmp(&a.node, &b.node));
    let mut edges = topology.edges.clone();
    edges.sort_by(|a, b| {
        json::utf16_cmp(&a.subscriber, &b.subscriber)
            .then_with(|| json::utf16_cmp(&a.producer, &b.producer))
            .then_with(|| json::utf16_cmp(&a.facet, &b.facet))
    });
    let mut entry = topology.entry_points.clone();
    entry.sort_by(|a, b| json::utf16_cmp(a, b));
    let mut t = Object::new();
    t.push_unique(
        "nodes",
        Value::Array(
            nodes
                .iter()
                .map(|n| {
                    let mut o = Object::new();
                    o.push_unique("node", Value::str(n.node.clone()));
                    o.push_unique(
                        "contract_fingerprint",
                        Value::str(n.contract_fingerprint.clone().unwrap_or_default()),
                    );
                    o.push_unique(
                        "wake_source",
                        Value::str(n.wake_source.unwrap_or(WakeSource::Input).as_str()),
                    );
                    Value::Object(o)
                })
                .collect(),
        ),
    );
    t.push_unique(
        "edges",
        Value::Array(
            edges
                .iter()
                .map(|e| {
                    let mut o = Object::new();
                    o.push_unique("subscriber", Value::str(e.subscriber.clone()));
                    o.push_unique("producer", Value::str(e.producer.clone()));
                    o.push_unique("facet", Value::str(e.facet.clone()));
                    Value::Object(o)
                })
                .collect(),
        ),
    );
    t.push_unique(
        "entry_points",
        Value::Array(entry.into_iter().map(Value::str).collect()),
    );
    t.push_unique("acyclic", Value::Bool(true));
    let mut fps = Object::new();
    for n in &nodes {
        fps.push_unique(
            n.node.as_str(),
            Value::str(n.contract_fingerprint.clone().unwrap_or_default()),
        );
    }
    let mut env = Object::new();
    env.push_unique("topology", Value::Object(t));
    env.push_unique("contract_fingerprints", Value::Object(fps));
    json::pretty_string(&Value::Object(env))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::json::parse_str;

    #[test]
    fn flat_and_envelope() {
        let flat = parse_str(
            r#"{"nodes":[{"node":"a","wake_source":"external"},{"node":"a"},{"x":1},7],
                "edges":[{"subscriber":"b","producer":"a","facet":"f"},{"subscriber":"b"}]}"#,
        )
        .unwrap();
        let t = unwrap_topology(&flat).unwrap();
        assert!(!t.envelope);
        assert_eq!(t.topology.nodes.len(), 1);
        assert_eq!(t.topology.nodes[0].wake_source, Some(WakeSource::External));
        assert_eq!(t.topology.edges, vec![Edge::new("a", "b", "f")]);
        assert!(t.topology.acyclic);
        assert!(t.topology.entry_points.is_empty());
        let env = parse_str(
            r#"{"topology":{"nodes":[],"edges":[],"acyclic":false,"entry_points":["g"]},"contract_fingerprints":{"g":"c"}}"#,
        )
        .unwrap();
        let t = unwrap_topology(&env).unwrap();
        assert!(t.envelope);
        assert!(!t.topology.acyclic);
        assert_eq!(
            t.contract_fingerprints,
            Some(vec![("g".into(), "c".into())])
        );
        for none in [
            "null",
            r#"{"nope":true}"#,
            r#"{"topology":{"not":"a model"}}"#,
            "[]",
            r#"{"nodes":[],"edges":{}}"#,
        ] {
            assert!(
                unwrap_topology(&parse_str(none).unwrap()).is_none(),
                "{none}"
            );
        }
    }

    #[test]
    fn envelope_writer_sorts_and_round_trips() {
        let topo = Topology {
            nodes: vec![
                TopologyNode {
                    node: "z".into(),
                    contract_fingerprint: Some("cz".into()),
                    wake_source: Some(WakeSource::Input),
                },
                TopologyNode {
                    node: "a".into(),
                    contract_fingerprint: Some("ca".into()),
                    wake_source: Some(WakeSource::External),
                },
            ],
            edges: vec![Edge::new("a", "z", "f2"), Edge::new("a", "z", "@atomic")],
            entry_points: vec!["a".into()],
            acyclic: true,
        };
        let text = write_envelope(&topo);
        assert!(text.starts_with(
            "{\n  \"topology\": {\n    \"nodes\": [\n      {\n        \"node\": \"a\","
        ));
        assert!(text.ends_with("}\n"));
        let back = unwrap_topology(&parse_str(&text).unwrap()).unwrap();
        assert_eq!(back.topology.nodes[0].node, "a");
        assert_eq!(back.topology.edges[0].facet, "@atomic");
        assert_eq!(
            back.contract_fingerprints,
            Some(vec![("a".into(), "ca".into()), ("z".into(), "cz".into())])
        );
    }

    /// Hostile input: many duplicate ids and malformed entries. The reader keeps the first
    /// entry of each id in file order (the quadratic scan it replaced, as the reference), skips
    /// the malformed ones, and its index answers like the lists.
    #[test]
    fn duplicates_and_junk_at_scale() {
        let mut nodes = Vec::new();
        for i in 0..20_000 {
            nodes.push(format!(
                r#"{{"node":"n{}","wake_source":"{}"}}"#,
                i % 5_000,
                if i < 5_000 { "input" } else { "self" }
            ));
            nodes.push(r#"{"node":7}"#.to_string());
            nodes.push("null".to_string());
        }
        let edges: Vec<String> = (0..5_000)
            .map(|i| {
                format!(
                    r#"{{"producer":"n0","subscriber":"n{i}","facet":"f{}"}}"#,
                    i % 3
                )
            })
            .chain([r#"{"producer":"n0"}"#.to_string(), "[]".to_string()])
            .collect();
        let text = format!(
            r#"{{"nodes":[{}],"edges":[{}],"entry_points":["n0",3]}}"#,
            nodes.join(","),
            edges.join(",")
        );
        let t = unwrap_topology(&parse_str(&text).unwrap())
            .unwrap()
            .topology;
        assert_eq!(t.nodes.len(), 5_000);
        assert!(
            t.nodes
                .iter()
                .all(|n| n.wake_source == Some(WakeSource::Input))
        );
        assert_eq!(t.nodes[4_999].node, "n4999");
        assert_eq!(t.edges.len(), 5_000);
        assert_eq!(t.entry_points, vec!["n0".to_string()]);
        let ix = t.index();
        assert!(ix.has_node("n42") && !ix.has_node("n5000"));
        assert!(ix.is_entry_point("n0") && !ix.is_entry_point("n1"));
        assert_eq!(ix.consumed_facets("n0"), vec!["f0", "f1", "f2"]);
        assert_eq!(ix.outbound("n0").count(), 5_000);
        assert_eq!(
            ix.inbound("n7")
                .map(|e| e.facet.as_str())
                .collect::<Vec<_>>(),
            ["f1"]
        );
        assert_eq!(ix.node("n9").unwrap().node, "n9");
        assert!(ix.node("zz").is_none());
    }
}
