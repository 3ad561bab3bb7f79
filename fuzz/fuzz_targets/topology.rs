//! `compile/topology.json` (FORMATS.md §15.1): the tolerant reader and the canonical writer.
//!
//! Properties: the reader keeps the first of duplicate node ids; what it reads, written as the
//! envelope and read again, has the same node ids, edges (as a multiset) and entry points, in
//! the writer's sorted order, with the writer's defaults filled in; writing that again gives
//! the same bytes.
#![no_main]

use std::collections::HashSet;

use libfuzzer_sys::fuzz_target;
use reactor::format::json::{self, utf16_cmp};
use reactor::format::receipt::WakeSource;
use reactor::format::topology::{Edge, unwrap_topology, write_envelope};

fn sorted_edges(edges: &[Edge]) -> Vec<Edge> {
    let mut e = edges.to_vec();
    e.sort_by(|a, b| {
        utf16_cmp(&a.subscriber, &b.subscriber)
            .then_with(|| utf16_cmp(&a.producer, &b.producer))
            .then_with(|| utf16_cmp(&a.facet, &b.facet))
    });
    e
}

fuzz_target!(|bytes: &[u8]| {
    let Ok(v) = json::parse(bytes) else { return };
    let Some(file) = unwrap_topology(&v) else {
        return;
    };
    let t = &file.topology;
    let mut seen = HashSet::new();
    assert!(
        t.nodes.iter().all(|n| seen.insert(n.node.as_str())),
        "duplicate node kept"
    );

    let written = write_envelope(t);
    let back = unwrap_topology(&json::parse_str(&written).expect("the envelope parses"))
        .expect("the envelope reads");
    assert!(back.envelope);
    let b = &back.topology;
    let mut nodes = t.nodes.clone();
    nodes.sort_by(|x, y| utf16_cmp(&x.node, &y.node));
    assert_eq!(b.nodes.len(), nodes.len());
    for (got, want) in b.nodes.iter().zip(&nodes) {
        assert_eq!(got.node, want.node);
        let fp = want.contract_fingerprint.clone().unwrap_or_default();
        assert_eq!(got.contract_fingerprint.as_deref(), Some(fp.as_str()));
        assert_eq!(
            got.wake_source,
            Some(want.wake_source.unwrap_or(WakeSource::Input))
        );
    }
    assert_eq!(b.edges, sorted_edges(&t.edges));
    let mut entry = t.entry_points.clone();
    entry.sort_by(|x, y| utf16_cmp(x, y));
    assert_eq!(b.entry_points, entry);
    assert!(b.acyclic);
    let fps: Vec<(String, String)> = b
        .nodes
        .iter()
        .map(|n| {
            (
                n.node.clone(),
                n.contract_fingerprint.clone().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(back.contract_fingerprints, Some(fps));
    assert_eq!(write_envelope(b), written, "the writer is not a fixpoint");
});
