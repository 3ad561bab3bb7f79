//! Moved facets (FORMATS.md §9) and propagation targets with diamond single-wake (§10): pure
//! functions shared by the reconciler and the replay viewer.

use std::collections::{HashMap, HashSet};

use crate::format::receipt::Fingerprints;
use crate::format::topology::Edge;

/// Facets of `current` that moved relative to `prior` (the node's previous receipt's map), in
/// `current`'s order: a facet moved iff there is no prior, the prior lacks it, or the tokens
/// differ. Disappeared facets are not reported.
/// Linear in both maps (the prior map is indexed once; its first entry per facet counts, as
/// [`Fingerprints::get`] finds it).
pub fn moved_facets(current: &Fingerprints, prior: Option<&Fingerprints>) -> Vec<String> {
    let prior: Option<HashMap<&str, &str>> = prior.map(|p| {
        let mut m = HashMap::with_capacity(p.0.len());
        for (k, v) in &p.0 {
            m.entry(k.as_str()).or_insert(v.as_str());
        }
        m
    });
    current
        .0
        .iter()
        .filter(|(k, v)| match &prior {
            None => true,
            Some(p) => p.get(k.as_str()) != Some(&v.as_str()),
        })
        .map(|(k, _)| k.clone())
        .collect()
}

/// Indexes (into `edges`) of the lanes a rendered receipt of `producer` lights: every edge in
/// order whose producer matches and whose facet is **exactly** one of `moved` (no `@atomic`
/// fallback).
pub fn lit_edges(edges: &[Edge], producer: &str, moved: &[String]) -> Vec<usize> {
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
pub fn propagation_targets(edges: &[Edge], producer: &str, moved: &[String]) -> Vec<String> {
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
}
