//! Properties of two persisted formats (issue 7 §5; the fuzz targets `topology` and `opwm`
//! explore the same ground without bounds): `compile/topology.json` (FORMATS.md §15.1) and
//! OPWM1 world-model artifacts (§14.2).

use proptest::prelude::*;
use reactor::format::json::{self, Object, Value, utf16_cmp};
use reactor::format::opwm::{self, OpwmError};
use reactor::format::receipt::WakeSource;
use reactor::format::topology::{Edge, Topology, TopologyNode, unwrap_topology, write_envelope};

/// Node ids and facets that exercise UTF-16 order (an astral character sorts before U+FF61),
/// dots, `::` and the empty string.
fn id() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "a",
            "b",
            "inbox",
            "a.b",
            "\u{FF61}",
            "\u{1F600}",
            "",
            "gw::ingress"
        ])
        .prop_map(str::to_string),
        "\\PC{0,6}",
    ]
}

fn wake() -> impl Strategy<Value = Option<WakeSource>> {
    prop::option::of(prop::sample::select(vec![
        WakeSource::Input,
        WakeSource::SelfWake,
        WakeSource::External,
    ]))
}

fn topology() -> impl Strategy<Value = Topology> {
    (
        prop::collection::vec((id(), prop::option::of("[a-z0-9:]{0,12}"), wake()), 0..8),
        prop::collection::vec((id(), id(), id()), 0..10),
        prop::collection::vec(id(), 0..4),
    )
        .prop_map(|(nodes, edges, entry_points)| {
            let mut seen = std::collections::HashSet::new();
            Topology {
                nodes: nodes
                    .into_iter()
                    .filter(|(n, _, _)| seen.insert(n.clone()))
                    .map(|(node, contract_fingerprint, wake_source)| TopologyNode {
                        node,
                        contract_fingerprint,
                        wake_source,
                    })
                    .collect(),
                edges: edges.iter().map(|(p, s, f)| Edge::new(p, s, f)).collect(),
                entry_points,
                acyclic: true,
            }
        })
}

/// The flat form of a topology as a value, with every node written `copies` times.
fn flat(t: &Topology, copies: usize) -> Value {
    let mut nodes = Vec::new();
    for copy in 0..copies {
        for n in &t.nodes {
            let mut o = Object::new();
            o.insert("node", Value::str(n.node.clone()));
            let fp = n.contract_fingerprint.clone().unwrap_or_default();
            o.insert("contract_fingerprint", Value::str(format!("{fp}{copy}")));
            nodes.push(Value::Object(o));
        }
    }
    let edges = t
        .edges
        .iter()
        .map(|e| {
            let mut o = Object::new();
            o.insert("producer", Value::str(e.producer.clone()));
            o.insert("subscriber", Value::str(e.subscriber.clone()));
            o.insert("facet", Value::str(e.facet.clone()));
            Value::Object(o)
        })
        .collect();
    let mut o = Object::new();
    o.insert("nodes", Value::Array(nodes));
    o.insert("edges", Value::Array(edges));
    o.insert("acyclic", Value::Bool(false));
    Value::Object(o)
}

fn sorted_edges(edges: &[Edge]) -> Vec<Edge> {
    let mut e = edges.to_vec();
    e.sort_by(|a, b| {
        utf16_cmp(&a.subscriber, &b.subscriber)
            .then_with(|| utf16_cmp(&a.producer, &b.producer))
            .then_with(|| utf16_cmp(&a.facet, &b.facet))
    });
    e
}

/// A byte-level mutation: overwrite, cut and append.
fn mutate(mut bytes: Vec<u8>, edits: &[(usize, u8)], cut: Option<usize>, tail: &[u8]) -> Vec<u8> {
    if !bytes.is_empty() {
        for (at, b) in edits {
            let n = bytes.len();
            bytes[at % n] = *b;
        }
    }
    if let Some(c) = cut {
        bytes.truncate(c % (bytes.len() + 1));
    }
    bytes.extend_from_slice(tail);
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// A topology written as the envelope reads back with the same nodes (sorted, the writer's
    /// defaults filled in), the same edges as a multiset in the writer's order, sorted entry
    /// points and the fingerprints map; writing what was read gives the same bytes.
    #[test]
    fn written_topology_reads_back(t in topology()) {
        let written = write_envelope(&t);
        let back = unwrap_topology(&json::parse_str(&written).unwrap()).unwrap();
        prop_assert!(back.envelope);
        let mut nodes = t.nodes.clone();
        nodes.sort_by(|a, b| utf16_cmp(&a.node, &b.node));
        let want: Vec<TopologyNode> = nodes
            .iter()
            .map(|n| TopologyNode {
                node: n.node.clone(),
                contract_fingerprint: Some(n.contract_fingerprint.clone().unwrap_or_default()),
                wake_source: Some(n.wake_source.unwrap_or(WakeSource::Input)),
            })
            .collect();
        prop_assert_eq!(&back.topology.nodes, &want);
        prop_assert_eq!(&back.topology.edges, &sorted_edges(&t.edges));
        let mut entry = t.entry_points.clone();
        entry.sort_by(|a, b| utf16_cmp(a, b));
        prop_assert_eq!(&back.topology.entry_points, &entry);
        let fps: Vec<(String, String)> = want
            .iter()
            .map(|n| (n.node.clone(), n.contract_fingerprint.clone().unwrap()))
            .collect();
        prop_assert_eq!(back.contract_fingerprints.as_ref(), Some(&fps));
        prop_assert_eq!(write_envelope(&back.topology), written);
    }

    /// The flat form keeps file order and the first of duplicate node ids (rule 4), reads the
    /// acyclicity flag, and carries no fingerprints map.
    #[test]
    fn flat_topology_keeps_the_first_duplicate(t in topology(), copies in 1usize..4) {
        let back = unwrap_topology(&flat(&t, copies)).unwrap();
        prop_assert!(!back.envelope);
        prop_assert_eq!(back.contract_fingerprints, None);
        prop_assert!(!back.topology.acyclic);
        let ids: Vec<&str> = back.topology.nodes.iter().map(|n| n.node.as_str()).collect();
        let want: Vec<&str> = t.nodes.iter().map(|n| n.node.as_str()).collect();
        prop_assert_eq!(ids, want);
        for (n, orig) in back.topology.nodes.iter().zip(&t.nodes) {
            let fp = orig.contract_fingerprint.clone().unwrap_or_default();
            prop_assert_eq!(n.contract_fingerprint.clone(), Some(format!("{fp}0")));
        }
        prop_assert_eq!(&back.topology.edges, &t.edges);
    }

    /// Hostile bytes in `compile/topology.json` (a written envelope flipped, cut and extended):
    /// the viewer's reader and the offline verbs' reader never panic and agree — both read the
    /// same topology, both find none, or both report invalid JSON.
    #[test]
    fn hostile_topology_files_are_read_or_refused(
        t in topology(),
        edits in prop::collection::vec((any::<usize>(), any::<u8>()), 0..6),
        cut in prop::option::of(any::<usize>()),
        tail in prop::collection::vec(any::<u8>(), 0..8),
    ) {
        let bytes = mutate(write_envelope(&t).into_bytes(), &edits, cut, &tail);
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("compile")).unwrap();
        std::fs::write(dir.path().join("compile/topology.json"), &bytes).unwrap();
        let viewer = reactor::replay::open::read_topology(dir.path());
        let offline = reactor::replay::statedir::read_topology(dir.path());
        match (viewer, offline) {
            (Ok(a), Ok(b)) => prop_assert_eq!(a, b.map(|f| f.topology)),
            (Err(a), Err(b)) => {
                prop_assert!(json::parse(&bytes).is_err());
                prop_assert!(!a.to_string().is_empty() && !b.to_string().is_empty());
            }
            (a, b) => prop_assert!(false, "viewer {a:?} but offline verbs {b:?}"),
        }
    }
}

/// A file tree with paths that normalize (`./`, `\`, doubled slashes), collide after
/// normalization, escape (`..`) or vanish (`.`, empty).
fn tree() -> impl Strategy<Value = Vec<(String, Vec<u8>)>> {
    let path = prop_oneof![
        prop::sample::select(vec![
            "a.txt",
            "./a.txt",
            "dir\\a.txt",
            "dir/a.txt",
            "dir//a.txt",
            "..",
            "x/../y",
            ".",
            "",
            "é/\u{1F600}",
            "b",
        ])
        .prop_map(str::to_string),
        "[a-z./\\\\]{1,10}",
    ];
    prop::collection::vec((path, prop::collection::vec(any::<u8>(), 0..16)), 0..6)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Encoding fails exactly when normalization does; an encoded tree decodes to the
    /// normalized tree, and re-encoding the decoded tree gives the same artifact (so the same
    /// version).
    #[test]
    fn opwm_round_trips_normalized_trees(files in tree()) {
        match (opwm::encode(files.clone()), opwm::normalize_tree(files)) {
            (Ok(artifact), Ok(normalized)) => {
                let decoded = opwm::decode(&artifact).unwrap();
                prop_assert_eq!(&decoded, &normalized);
                let again = opwm::encode(decoded).unwrap();
                prop_assert_eq!(opwm::version(&again), opwm::version(&artifact));
                prop_assert_eq!(again, artifact);
            }
            (Err(e), Err(f)) => prop_assert_eq!(e, f),
            (a, b) => prop_assert!(false, "encode {a:?} but normalize {b:?}"),
        }
    }

    /// Hostile artifacts (a valid one flipped, cut and extended, or with a huge declared
    /// count or length): decoding never panics and never allocates from a declared size; what
    /// decodes has normalized unique paths and re-encodes to an artifact that decodes the same;
    /// offsets in errors lie inside the input.
    #[test]
    fn hostile_opwm_is_decoded_or_refused(
        files in tree(),
        edits in prop::collection::vec((any::<usize>(), any::<u8>()), 0..6),
        cut in prop::option::of(any::<usize>()),
        tail in prop::collection::vec(any::<u8>(), 0..8),
        huge in any::<bool>(),
    ) {
        let Ok(artifact) = opwm::encode(files) else { return Ok(()) };
        let mut bytes = mutate(artifact, &edits, cut, &tail);
        if huge && bytes.len() >= 9 {
            bytes[5..9].copy_from_slice(&u32::MAX.to_le_bytes());
        }
        match opwm::decode(&bytes) {
            Ok(files) => {
                let mut seen = std::collections::HashSet::new();
                for (p, _) in &files {
                    prop_assert_eq!(opwm::normalize_path(p), Ok(p.clone()));
                    prop_assert!(seen.insert(p.clone()));
                }
                let again = opwm::encode(files.clone()).unwrap();
                let mut sorted = files;
                sorted.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
                prop_assert_eq!(opwm::decode(&again).unwrap(), sorted);
            }
            Err(OpwmError::Truncated(at) | OpwmError::BadUtf8(at)) => {
                prop_assert!(at <= bytes.len())
            }
            Err(OpwmError::Trailing(n)) => prop_assert!(n > 0 && n <= bytes.len()),
            Err(_) => {}
        }
    }
}
