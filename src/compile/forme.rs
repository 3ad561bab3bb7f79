//! Lowering of the Forme answer (RUNTIME.md §3.3.3–§3.3.4): the lowering checks, which trigger a
//! repair turn, and `wire()`, the deterministic construction of the topology with its
//! `unsatisfied` / `ambiguous` diagnostics and the acyclicity check.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::fmt;

use super::schema::{FormeNode, FormeOutput};
use crate::contract::{ContractSet, Kind};
use crate::core::canonicalizer::ATOMIC;
use crate::format::json::utf16_cmp;
use crate::format::receipt::WakeSource;
use crate::format::topology::{Edge, Topology, TopologyNode};

/// The kind of a Forme diagnostic (RUNTIME.md §3.3.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DiagnosticKind {
    /// No match satisfies the need: no edge.
    Unsatisfied,
    /// Several matches and the need is not `fan_in`: no edge.
    Ambiguous,
}

impl DiagnosticKind {
    /// `unsatisfied` or `ambiguous`.
    pub fn as_str(self) -> &'static str {
        match self {
            DiagnosticKind::Unsatisfied => "unsatisfied",
            DiagnosticKind::Ambiguous => "ambiguous",
        }
    }
}

/// A Forme diagnostic `{kind, subscriber, requirement}` (a warning: the compile succeeds; it is
/// reported, not persisted). `candidates` lists the `(producer, facet)` matches of an ambiguous
/// need, sorted; it is empty for an unsatisfied one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// `unsatisfied` or `ambiguous`.
    pub kind: DiagnosticKind,
    /// The node whose need it is.
    pub subscriber: String,
    /// The need name.
    pub requirement: String,
    /// The competing `(producer, facet)` pairs of an ambiguous need.
    pub(crate) candidates: Vec<(String, String)>,
}

impl fmt::Display for Diagnostic {
    /// `<kind> (<subscriber>: "<requirement>")`, the line of the compile report (HOST.md §8.3).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}: \"{}\")",
            self.kind.as_str(),
            self.subscriber,
            self.requirement
        )
    }
}

/// A directed cycle over producer → subscriber edges: `nodes` runs from the first node around
/// the cycle back to it (`[a, b, a]`). `Display` gives `a → b → a`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", nodes.join(" → "))]
pub struct Cycle {
    /// The cycle, first node repeated at the end.
    pub nodes: Vec<String>,
}

/// The result of [`wire`]: the topology (nodes sorted by id with their contract fingerprints
/// and wake sources, edges sorted by `(subscriber, producer, facet)`, entry points sorted,
/// `acyclic: true`) and the diagnostics in subscriber then need order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wired {
    /// The compiled topology.
    pub topology: Topology,
    /// Unsatisfied and ambiguous needs.
    pub diagnostics: Vec<Diagnostic>,
}

fn quoted(items: &[&str]) -> String {
    items
        .iter()
        .map(|s| format!("'{s}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The lowering checks of RUNTIME.md §3.3.3. Every problem is reported, one line each, naming
/// its JSON path (`$.nodes[1].kind: …`, `$.matches[0].facet: …`).
///
/// Checks: every `responsibility` and `gateway` contract appears exactly once in `nodes` and no
/// other id does; `kind` equals the contract's kind; a gateway's `wake_source` is `external`;
/// `maintains` equals the contract's declared facet set (order ignored, no repeats); need names
/// are non-empty and unique per node; every match names a reported subscriber, one of its
/// needs, another reported node as producer, and a facet the producer exposes (`@atomic` or a
/// declared facet).
pub fn check_forme(out: &FormeOutput, set: &ContractSet) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
    let reported = check_nodes(out, set, &mut errors);
    check_matches(out, set, &reported, &mut errors);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// The `nodes[]` checks of [`check_forme`]; returns each reported node contract's id → the
/// index of its first entry.
fn check_nodes<'o>(
    out: &'o FormeOutput,
    set: &ContractSet,
    errors: &mut Vec<String>,
) -> HashMap<&'o str, usize> {
    let mut reported: HashMap<&str, usize> = HashMap::new();
    for (i, n) in out.nodes.iter().enumerate() {
        let at = format!("$.nodes[{i}]");
        let Some(c) = set.get(&n.id) else {
            errors.push(format!("{at}.id: '{}' is not a loaded contract", n.id));
            continue;
        };
        if !c.is_node() {
            errors.push(format!(
                "{at}.id: '{}' is a {} contract; only responsibility and gateway contracts are nodes",
                n.id, c.kind
            ));
            continue;
        }
        if let Some(first) = reported.get(n.id.as_str()) {
            errors.push(format!(
                "{at}.id: '{}' is listed twice (also $.nodes[{first}])",
                n.id
            ));
            continue;
        }
        reported.insert(&n.id, i);
        if n.kind != c.kind {
            errors.push(format!(
                "{at}.kind: '{}' does not match the contract's kind '{}'",
                n.kind, c.kind
            ));
        }
        if c.kind == Kind::Gateway && n.wake_source != WakeSource::External {
            errors.push(format!(
                "{at}.wake_source: '{}' is a gateway, so its wake source must be 'external'",
                n.id
            ));
        }
        if let Some(e) = maintains_problem(&n.maintains, &c.facet_names()) {
            errors.push(format!("{at}.maintains: {e}"));
        }
        check_needs(n, &at, errors);
    }
    for c in set.nodes() {
        if !reported.contains_key(c.id.as_str()) {
            errors.push(format!(
                "$.nodes: the {} contract '{}' has no entry",
                c.kind, c.id
            ));
        }
    }
    reported
}

/// `maintains` must equal the declared facet set (order ignored, no repeats).
fn maintains_problem(maintains: &[String], declared: &[&str]) -> Option<String> {
    let declared_set: HashSet<&str> = declared.iter().copied().collect();
    let mut seen: HashSet<&str> = HashSet::new();
    let mut problems = Vec::new();
    for f in maintains {
        if !seen.insert(f.as_str()) {
            problems.push(format!("'{f}' is listed twice"));
        } else if !declared_set.contains(f.as_str()) {
            problems.push(format!("'{f}' is not a declared facet"));
        }
    }
    let missing: Vec<&str> = declared
        .iter()
        .copied()
        .filter(|d| !seen.contains(d))
        .collect();
    if !missing.is_empty() {
        problems.push(format!("missing {}", quoted(&missing)));
    }
    if problems.is_empty() {
        return None;
    }
    let expected = if declared.is_empty() {
        "[] (the node declares no facets)".to_string()
    } else {
        format!("the declared facets [{}]", quoted(declared))
    };
    Some(format!("must be {expected}: {}", problems.join("; ")))
}

/// Need names are non-empty and unique within the node.
fn check_needs(n: &FormeNode, at: &str, errors: &mut Vec<String>) {
    let mut needs: HashMap<&str, usize> = HashMap::new();
    for (k, need) in n.requires.iter().enumerate() {
        let need_at = format!("{at}.requires[{k}].facet");
        if need.facet.trim().is_empty() {
            errors.push(format!("{need_at}: a need name must not be empty"));
        } else if let Some(j) = needs.get(need.facet.as_str()) {
            errors.push(format!(
                "{need_at}: '{}' repeats {at}.requires[{j}].facet",
                need.facet
            ));
        } else {
            needs.insert(&need.facet, k);
        }
    }
}

/// The `matches[]` checks of [`check_forme`].
fn check_matches(
    out: &FormeOutput,
    set: &ContractSet,
    reported: &HashMap<&str, usize>,
    errors: &mut Vec<String>,
) {
    let mut need_sets: HashMap<&str, HashSet<&str>> = HashMap::new();
    for (m, x) in out.matches.iter().enumerate() {
        let at = format!("$.matches[{m}]");
        let subscriber = reported.get(x.subscriber.as_str()).map(|&i| &out.nodes[i]);
        match subscriber {
            None => errors.push(format!(
                "{at}.subscriber: '{}' is not a reported node",
                x.subscriber
            )),
            Some(s) => {
                let needs = need_sets
                    .entry(s.id.as_str())
                    .or_insert_with(|| s.requires.iter().map(|n| n.facet.as_str()).collect());
                if !needs.contains(x.requirement.as_str()) {
                    let names: Vec<&str> = s.requires.iter().map(|n| n.facet.as_str()).collect();
                    let known = if names.is_empty() {
                        "it has none".to_string()
                    } else {
                        format!("its needs are {}", quoted(&names))
                    };
                    errors.push(format!(
                        "{at}.requirement: '{}' is not a need of '{}' ({known})",
                        x.requirement, x.subscriber
                    ));
                }
            }
        }
        if x.producer == x.subscriber {
            errors.push(format!(
                "{at}.producer: '{}' is the subscriber itself; a node never consumes its own facets (use self continuity)",
                x.producer
            ));
            continue;
        }
        if !reported.contains_key(x.producer.as_str()) {
            errors.push(format!(
                "{at}.producer: '{}' is not a reported node",
                x.producer
            ));
            continue;
        }
        if let Some(p) = set.get(&x.producer) {
            let declared = p.facet_names();
            if x.facet != ATOMIC && !declared.contains(&x.facet.as_str()) {
                let mut exposed = vec![ATOMIC];
                exposed.extend(declared.iter().copied());
                errors.push(format!(
                    "{at}.facet: '{}' is not exposed by '{}' (it exposes {})",
                    x.facet,
                    x.producer,
                    quoted(&exposed)
                ));
            }
        }
    }
}

fn edge_cmp(a: &Edge, b: &Edge) -> Ordering {
    utf16_cmp(&a.subscriber, &b.subscriber)
        .then_with(|| utf16_cmp(&a.producer, &b.producer))
        .then_with(|| utf16_cmp(&a.facet, &b.facet))
}

/// `wire()` (RUNTIME.md §3.3.4): the deterministic lowering of a checked Forme answer.
///
/// 1. Topology nodes = the reported nodes (node contracts only, first entry of an id) sorted by
///    id, each with its contract fingerprint and wake source.
/// 2. For each subscriber (id order) and need (declared order): the matches for
///    `(subscriber, need)`, de-duplicated and sorted by `(producer, facet)`; none →
///    `unsatisfied`; several without `fan_in` → `ambiguous`; otherwise one edge per match.
/// 3. Identical edges from two needs are merged; 4. edges are sorted by
///    `(subscriber, producer, facet)` (UTF-16 order); 5. entry points = the `external` nodes,
///    sorted; 6. acyclicity by depth-first search.
///
/// Errors: a [`Cycle`] (a compile error, nothing is cached).
pub fn wire(out: &FormeOutput, set: &ContractSet) -> Result<Wired, Cycle> {
    let mut seen = HashSet::new();
    let mut reported: Vec<&FormeNode> = out
        .nodes
        .iter()
        .filter(|n| set.get(&n.id).is_some_and(|c| c.is_node()) && seen.insert(n.id.as_str()))
        .collect();
    reported.sort_by(|a, b| utf16_cmp(&a.id, &b.id));
    let nodes: Vec<TopologyNode> = reported
        .iter()
        .map(|n| TopologyNode {
            node: n.id.clone(),
            contract_fingerprint: set.get(&n.id).map(|c| c.fingerprint()),
            wake_source: Some(n.wake_source),
        })
        .collect();
    let mut by_need: HashMap<(&str, &str), Vec<(String, String)>> = HashMap::new();
    for m in &out.matches {
        by_need
            .entry((m.subscriber.as_str(), m.requirement.as_str()))
            .or_default()
            .push((m.producer.clone(), m.facet.clone()));
    }
    let mut diagnostics = Vec::new();
    let mut edges: Vec<Edge> = Vec::new();
    for s in &reported {
        for need in &s.requires {
            let mut found = by_need
                .remove(&(s.id.as_str(), need.facet.as_str()))
                .unwrap_or_default();
            found.sort_by(|a, b| utf16_cmp(&a.0, &b.0).then_with(|| utf16_cmp(&a.1, &b.1)));
            found.dedup();
            match found.len() {
                0 => diagnostics.push(Diagnostic {
                    kind: DiagnosticKind::Unsatisfied,
                    subscriber: s.id.clone(),
                    requirement: need.facet.clone(),
                    candidates: Vec::new(),
                }),
                n if n > 1 && !need.fan_in => diagnostics.push(Diagnostic {
                    kind: DiagnosticKind::Ambiguous,
                    subscriber: s.id.clone(),
                    requirement: need.facet.clone(),
                    candidates: found,
                }),
                _ => {
                    for (producer, facet) in found {
                        edges.push(Edge::new(&producer, &s.id, &facet));
                    }
                }
            }
        }
    }
    edges.sort_by(edge_cmp);
    edges.dedup();
    let mut entry_points: Vec<String> = reported
        .iter()
        .filter(|n| n.wake_source == WakeSource::External)
        .map(|n| n.id.clone())
        .collect();
    entry_points.sort_by(|a, b| utf16_cmp(a, b));
    let ids: Vec<&str> = nodes.iter().map(|n| n.node.as_str()).collect();
    if let Some(cycle) = find_cycle(&ids, &edges) {
        return Err(cycle);
    }
    Ok(Wired {
        topology: Topology {
            nodes,
            edges,
            entry_points,
            acyclic: true,
        },
        diagnostics,
    })
}

/// The first directed cycle over producer → subscriber edges found by a depth-first search
/// that starts from the nodes in the given order and follows each node's out-edges in edge
/// order. Iterative (no recursion on large graphs).
pub(crate) fn find_cycle(nodes: &[&str], edges: &[Edge]) -> Option<Cycle> {
    let mut out: HashMap<&str, Vec<&str>> = HashMap::new();
    for e in edges {
        out.entry(e.producer.as_str())
            .or_default()
            .push(e.subscriber.as_str());
    }
    // 1 = on the stack, 2 = done.
    let mut state: HashMap<&str, u8> = HashMap::new();
    for &start in nodes {
        if state.contains_key(start) {
            continue;
        }
        let mut stack: Vec<(&str, usize)> = vec![(start, 0)];
        state.insert(start, 1);
        while let Some(top) = stack.last_mut() {
            let (n, next) = (top.0, top.1);
            let succ = out.get(n).map(Vec::as_slice).unwrap_or(&[]);
            if next < succ.len() {
                top.1 += 1;
                let s = succ[next];
                match state.get(s) {
                    Some(2) => {}
                    Some(_) => {
                        let pos = stack.iter().position(|(x, _)| *x == s).unwrap_or(0);
                        let mut cycle: Vec<String> =
                            stack[pos..].iter().map(|(x, _)| x.to_string()).collect();
                        cycle.push(s.to_string());
                        return Some(Cycle { nodes: cycle });
                    }
                    None => {
                        state.insert(s, 1);
                        stack.push((s, 0));
                    }
                }
            } else {
                state.insert(n, 2);
                stack.pop();
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::schema::{FormeMatch, FormeNeed, FormeNode};
    use crate::contract::parse_contract;

    fn set(specs: &[(&str, &str, &[&str])]) -> ContractSet {
        let contracts = specs
            .iter()
            .map(|(id, kind, facets)| {
                let mut text = format!("---\nid: {id}\nkind: {kind}\n---\n### Maintains\nm\n");
                for f in *facets {
                    text.push_str(&format!("#### {f}\nd\n"));
                }
                parse_contract(text.as_bytes(), &format!("{id}.prose.md")).unwrap()
            })
            .collect();
        ContractSet::from_contracts(contracts).unwrap()
    }

    fn node(
        id: &str,
        kind: Kind,
        wake: WakeSource,
        needs: &[(&str, bool)],
        facets: &[&str],
    ) -> FormeNode {
        FormeNode {
            id: id.into(),
            kind,
            wake_source: wake,
            requires: needs
                .iter()
                .map(|(f, fan_in)| FormeNeed {
                    facet: f.to_string(),
                    fan_in: *fan_in,
                })
                .collect(),
            maintains: facets.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn m(subscriber: &str, requirement: &str, producer: &str, facet: &str) -> FormeMatch {
        FormeMatch {
            subscriber: subscriber.into(),
            requirement: requirement.into(),
            producer: producer.into(),
            facet: facet.into(),
        }
    }

    use Kind::{Gateway as G, Responsibility as R};
    use WakeSource::{External as Ext, Input as In, SelfWake as Slf};

    fn graph() -> (ContractSet, FormeOutput) {
        let s = set(&[
            ("inbox", "gateway", &[]),
            ("watch", "responsibility", &["prices", "stock"]),
            ("alt", "responsibility", &["prices"]),
            ("brief", "responsibility", &[]),
            ("style", "pattern", &[]),
        ]);
        let out = FormeOutput {
            nodes: vec![
                node("watch", R, Slf, &[], &["stock", "prices"]),
                node("inbox", G, Ext, &[], &[]),
                node("alt", R, In, &[("mail", false)], &["prices"]),
                node(
                    "brief",
                    R,
                    In,
                    &[
                        ("vendor prices", false),
                        ("all prices", true),
                        ("notes", false),
                        ("stock", false),
                        ("prices again", false),
                    ],
                    &[],
                ),
            ],
            matches: vec![
                m("alt", "mail", "inbox", "@atomic"),
                m("brief", "vendor prices", "watch", "prices"),
                m("brief", "vendor prices", "alt", "prices"),
                m("brief", "all prices", "watch", "prices"),
                m("brief", "all prices", "alt", "prices"),
                m("brief", "all prices", "alt", "prices"),
                m("brief", "stock", "watch", "stock"),
                m("brief", "prices again", "watch", "prices"),
            ],
        };
        (s, out)
    }

    #[test]
    fn wire_builds_sorted_topology_and_diagnostics() {
        let (s, out) = graph();
        check_forme(&out, &s).unwrap();
        let w = wire(&out, &s).unwrap();
        let ids: Vec<&str> = w.topology.nodes.iter().map(|n| n.node.as_str()).collect();
        assert_eq!(ids, ["alt", "brief", "inbox", "watch"]);
        assert_eq!(
            w.topology.nodes[3].contract_fingerprint,
            Some(s.get("watch").unwrap().fingerprint())
        );
        assert_eq!(w.topology.nodes[3].wake_source, Some(WakeSource::SelfWake));
        // "vendor prices" is ambiguous (no edge); "all prices" fans in (two edges, the
        // duplicate match collapsed); "prices again" repeats an edge of "all prices" (merged);
        // "notes" is unsatisfied.
        assert_eq!(
            w.topology.edges,
            vec![
                Edge::new("inbox", "alt", "@atomic"),
                Edge::new("alt", "brief", "prices"),
                Edge::new("watch", "brief", "prices"),
                Edge::new("watch", "brief", "stock"),
            ]
        );
        assert_eq!(w.topology.entry_points, vec!["inbox".to_string()]);
        assert!(w.topology.acyclic);
        assert_eq!(
            w.diagnostics,
            vec![
                Diagnostic {
                    kind: DiagnosticKind::Ambiguous,
                    subscriber: "brief".into(),
                    requirement: "vendor prices".into(),
                    candidates: vec![
                        ("alt".into(), "prices".into()),
                        ("watch".into(), "prices".into())
                    ],
                },
                Diagnostic {
                    kind: DiagnosticKind::Unsatisfied,
                    subscriber: "brief".into(),
                    requirement: "notes".into(),
                    candidates: vec![],
                },
            ]
        );
        assert_eq!(
            w.diagnostics[1].to_string(),
            "unsatisfied (brief: \"notes\")"
        );
    }

    #[test]
    fn edges_sort_in_utf16_order() {
        // UTF-16 order puts U+1F600 (surrogates 0xD83D 0xDE00) before U+FF21, unlike byte or
        // code-point order.
        let s = set(&[
            ("p", "responsibility", &[]),
            ("\u{FF21}", "responsibility", &[]),
            ("\u{1F600}", "responsibility", &[]),
        ]);
        let out = FormeOutput {
            nodes: vec![
                node("p", R, Slf, &[], &[]),
                node("\u{FF21}", R, In, &[("x", false)], &[]),
                node("\u{1F600}", R, In, &[("x", false)], &[]),
            ],
            matches: vec![
                m("\u{FF21}", "x", "p", "@atomic"),
                m("\u{1F600}", "x", "p", "@atomic"),
            ],
        };
        check_forme(&out, &s).unwrap();
        let w = wire(&out, &s).unwrap();
        assert_eq!(w.topology.edges[0].subscriber, "\u{1F600}");
        assert_eq!(w.topology.nodes[1].node, "\u{1F600}");
    }

    #[test]
    fn a_cycle_is_an_error_naming_it() {
        let s = set(&[
            ("a", "responsibility", &[]),
            ("b", "responsibility", &[]),
            ("c", "responsibility", &[]),
        ]);
        let out = FormeOutput {
            nodes: vec![
                node("a", R, In, &[("from c", false)], &[]),
                node("b", R, In, &[("from a", false)], &[]),
                node("c", R, In, &[("from b", false)], &[]),
            ],
            matches: vec![
                m("a", "from c", "c", "@atomic"),
                m("b", "from a", "a", "@atomic"),
                m("c", "from b", "b", "@atomic"),
            ],
        };
        check_forme(&out, &s).unwrap();
        let err = wire(&out, &s).unwrap_err();
        assert_eq!(err.to_string(), "a → b → c → a");
        // A chain is fine.
        let mut chain = out.clone();
        chain.matches.remove(0);
        chain.nodes[0].requires.clear();
        assert!(wire(&chain, &s).is_ok());
    }

    #[test]
    fn forme_checks_report_every_problem_with_paths() {
        let s = set(&[
            ("inbox", "gateway", &[]),
            ("watch", "responsibility", &["prices", "stock"]),
            ("brief", "responsibility", &[]),
            ("style", "pattern", &[]),
        ]);
        let out = FormeOutput {
            nodes: vec![
                node(
                    "watch",
                    G,
                    Slf,
                    &[("", false)],
                    &["prices", "prices", "extra"],
                ),
                node("inbox", G, In, &[("a", false), ("a", true)], &[]),
                node("style", Kind::Pattern, In, &[], &[]),
                node("ghost", R, In, &[], &[]),
                node("inbox", G, Ext, &[], &[]),
            ],
            matches: vec![
                m("brief", "x", "watch", "prices"),
                m("inbox", "b", "inbox", "@atomic"),
                m("inbox", "a", "watch", "volume"),
                m("inbox", "a", "nobody", "@atomic"),
            ],
        };
        let errors = check_forme(&out, &s).unwrap_err();
        assert_eq!(
            errors,
            vec![
                "$.nodes[0].kind: 'gateway' does not match the contract's kind 'responsibility'",
                "$.nodes[0].maintains: must be the declared facets ['prices', 'stock']: 'prices' is listed twice; 'extra' is not a declared facet; missing 'stock'",
                "$.nodes[0].requires[0].facet: a need name must not be empty",
                "$.nodes[1].wake_source: 'inbox' is a gateway, so its wake source must be 'external'",
                "$.nodes[1].requires[1].facet: 'a' repeats $.nodes[1].requires[0].facet",
                "$.nodes[2].id: 'style' is a pattern contract; only responsibility and gateway contracts are nodes",
                "$.nodes[3].id: 'ghost' is not a loaded contract",
                "$.nodes[4].id: 'inbox' is listed twice (also $.nodes[1])",
                "$.nodes: the responsibility contract 'brief' has no entry",
                "$.matches[0].subscriber: 'brief' is not a reported node",
                "$.matches[1].requirement: 'b' is not a need of 'inbox' (its needs are 'a', 'a')",
                "$.matches[1].producer: 'inbox' is the subscriber itself; a node never consumes its own facets (use self continuity)",
                "$.matches[2].facet: 'volume' is not exposed by 'watch' (it exposes '@atomic', 'prices', 'stock')",
                "$.matches[3].producer: 'nobody' is not a reported node",
            ]
        );
    }

    #[test]
    fn producers_expose_atomic_and_declared_facets() {
        let s = set(&[
            ("watch", "responsibility", &["prices"]),
            ("brief", "responsibility", &[]),
        ]);
        let out = FormeOutput {
            nodes: vec![
                node("watch", R, Slf, &[], &["prices"]),
                node("brief", R, In, &[("all of it", false)], &[]),
            ],
            matches: vec![m("brief", "all of it", "watch", "@atomic")],
        };
        check_forme(&out, &s).unwrap();
        let w = wire(&out, &s).unwrap();
        assert_eq!(
            w.topology.edges,
            vec![Edge::new("watch", "brief", "@atomic")]
        );
        assert!(w.diagnostics.is_empty());
        assert!(w.topology.entry_points.is_empty());
    }
}
