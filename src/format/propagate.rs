//! Moved facets (FORMATS.md §9) and propagation targets with diamond single-wake (§10): pure
//! functions shared by the reconciler and the replay viewer.

use std::collections::{HashMap, HashSet};

use crate::format::receipt::Fingerprints;
use crate::format::topology::Edge;

/// Facets of `current` that moved relative to `prior` (the node's previous receipt's map), in
/// `current`'s order: a facet moved iff there is no prior, the prior lacks it, or the tokens
/// differ. Disappeared facets are not reported.
/// Linear in both maps: a prior map of more than [`SMALL`] facets is indexed once (its first
/// entry per facet counts, as [`Fingerprints::get`] finds it); small ones are scanned.
pub(crate) fn moved_facets(current: &Fingerprints, prior: Option<&Fingerprints>) -> Vec<String> {
    let index: Option<HashMap<&str, &str>> = prior.filter(|p| p.0.len() > SMALL).map(|p| {
        let mut m = HashMap::with_capacity(p.0.len());
        for (k, v) in &p.0 {
            m.entry(k.as_str()).or_insert(v.as_str());
        }
        m
    });
    let token = |facet: &str| match &index {
        Some(m) => m.get(facet).copied(),
        None => prior.and_then(|p| p.get(facet)),
    };
    current
        .0
        .iter()
        .filter(|(k, v)| prior.is_none() || token(k) != Some(v.as_str()))
        .map(|(k, _)| k.clone())
        .collect()
}

/// Up to this many entries a linear scan beats building a hash index.
pub(crate) const SMALL: usize = 8;

/// Indexes (into `edges`) of the lanes a rendered receipt of `producer` lights: every edge in
/// order whose producer matches and whose facet is **exactly** one of `moved` (no `@atomic`
/// fallback).
pub(crate) fn lit_edges(edges: &[Edge], producer: &str, moved: &[String]) -> Vec<usize> {
    let moved: HashSet<&str> = moved.iter().map(String::as_str).collect();
    edges
        .iter()
        .enumerate()
        .filter(|(_, e)| e.producer == producer && moved.contains(e.facet.as_str()))
        .map(|(i, _)| i)
        .collect()
}

/// Distinct subscribers woken by a rendered receipt of `producer` that moved `moved`, ordered by
/// each subscriber's first qualifying edge (diamond single-wake).
pub(crate) fn propagation_targets(edges: &[Edge], producer: &str, moved: &[String]) -> Vec<String> {
    let mut seen: HashSet<&str> = HashSet::new();
    lit_edges(edges, producer, moved)
        .into_iter()
        .map(|i| &edges[i].subscriber)
        .filter(|s| seen.insert(s.as_str()))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(pairs: &[(&str, &str)]) -> Fingerprints {
        Fingerprints(
            pairs
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
        )
    }

    #[test]
    fn moved_rules() {
        let cur = fp(&[("@atomic", "2"), ("a", "1"), ("b", "9")]);
        assert_eq!(moved_facets(&cur, None), vec!["@atomic", "a", "b"]);
        let prior = fp(&[("@atomic", "1"), ("a", "1"), ("gone", "x")]);
        assert_eq!(moved_facets(&cur, Some(&prior)), vec!["@atomic", "b"]);
        assert!(moved_facets(&cur, Some(&cur)).is_empty());
    }

    #[test]
    fn worked_example_formats_10() {
        let edges = vec![
            Edge::new("A", "S", "f1"),
            Edge::new("A", "T", "f1"),
            Edge::new("A", "S", "f2"),
            Edge::new("A", "U", "@atomic"),
            Edge::new("B", "S", "f1"),
        ];
        let all: Vec<String> = ["@atomic", "f1", "f2"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(lit_edges(&edges, "A", &all), vec![0, 1, 2, 3]);
        assert_eq!(propagation_targets(&edges, "A", &all), vec!["S", "T", "U"]);
        let f2 = vec!["f2".to_string()];
        assert_eq!(lit_edges(&edges, "A", &f2), vec![2]);
        assert_eq!(propagation_targets(&edges, "A", &f2), vec!["S"]);
        // A moved named facet never selects an @atomic lane, and vice versa.
        let at = vec!["@atomic".to_string()];
        assert_eq!(propagation_targets(&edges, "A", &at), vec!["U"]);
        assert!(propagation_targets(&edges, "A", &["missing".to_string()]).is_empty());
    }

    /// Past [`SMALL`] entries the indexed paths give the scanned paths' answers.
    #[test]
    fn large_maps_and_fan_outs() {
        let prior = Fingerprints(
            (0..40)
                .map(|i| (format!("f{i}"), format!("t{i}")))
                .collect(),
        );
        let mut current = prior.clone();
        current.0[3].1 = "changed".into();
        current.0[17].1 = "changed".into();
        current.0.push(("new".into(), "t".into()));
        current.0.remove(30);
        assert_eq!(
            moved_facets(&current, Some(&prior)),
            vec!["f3", "f17", "new"]
        );
        assert!(moved_facets(&prior, Some(&prior)).is_empty());
        // 3 facets x 30 subscribers, every subscriber reached on each facet: 30 wakes once
        // each, in first-edge order.
        let mut edges = Vec::new();
        for f in ["a", "b", "c"] {
            for s in (0..30).rev() {
                edges.push(Edge::new("P", &format!("s{s:02}"), f));
            }
        }
        let moved: Vec<String> = (0..20)
            .map(|i| format!("x{i}"))
            .chain(["b".into(), "c".into()])
            .collect();
        let targets = propagation_targets(&edges, "P", &moved);
        assert_eq!(targets.len(), 30);
        assert_eq!(targets[0], "s29");
        assert_eq!(targets[29], "s00");
        assert_eq!(lit_edges(&edges, "P", &moved).len(), 60);
    }
}
