//! Unit tests of postconditions: decoding, entries and the compiled set here; facts,
//! evaluation, structured truth and the gate in `truth.rs`.

mod truth;

use std::collections::HashMap;

use super::*;
use crate::core::canonicalizer::{CanonicalizerSpec, CompiledCanonicalizer, compile_node};
use crate::format::address::{NULL_ADDRESS, address};
use crate::format::json::{self, Value, parse_str};
use crate::format::receipt::Fingerprints;

pub(super) fn leaf(kind: Kind, fact: &str, value: Value) -> FlatNode {
    FlatNode {
        kind,
        fact: Some(fact.to_string()),
        value: Some(value),
        children: None,
        child: None,
    }
}

pub(super) fn conn(kind: Kind, children: &[i64]) -> FlatNode {
    FlatNode {
        kind,
        fact: None,
        value: None,
        children: Some(children.to_vec()),
        child: None,
    }
}

pub(super) fn not(child: i64) -> FlatNode {
    FlatNode {
        kind: Kind::Not,
        fact: None,
        value: None,
        children: None,
        child: Some(child),
    }
}

pub(super) fn num(n: f64) -> Value {
    Value::Number(n)
}

pub(super) fn lt(fact: &str, n: f64) -> Predicate {
    Predicate::Leaf {
        kind: Comparison::LessThan,
        fact: fact.into(),
        value: num(n),
    }
}

// ---- decode ------------------------------------------------------------------------

#[test]
fn decode_builds_the_tree_root_anywhere() {
    let nodes = vec![
        leaf(Kind::NotEquals, "status", Value::str("ok")),
        conn(Kind::Or, &[0, 2]),
        leaf(Kind::LessThan, "count", num(3.0)),
        leaf(Kind::Equals, "unreferenced", Value::Null),
        // Unreferenced and malformed entries are ignored.
        conn(Kind::And, &[]),
    ];
    let p = decode(&nodes, 1).unwrap();
    assert_eq!(
        p,
        Predicate::Or(vec![
            Predicate::Leaf {
                kind: Comparison::NotEquals,
                fact: "status".into(),
                value: Value::str("ok"),
            },
            lt("count", 3.0),
        ])
    );
    assert_eq!(
        json::compact_string(&p.to_value()),
        r#"{"kind":"or","children":[{"kind":"not-equals","fact":"status","value":"ok"},{"kind":"less-than","fact":"count","value":3}]}"#
    );
}

#[test]
fn decode_shared_index_is_decoded_twice() {
    let nodes = vec![
        conn(Kind::And, &[1, 2]),
        leaf(Kind::Equals, "a", num(1.0)),
        not(1),
    ];
    let p = decode(&nodes, 0).unwrap();
    let a = Predicate::Leaf {
        kind: Comparison::Equals,
        fact: "a".into(),
        value: num(1.0),
    };
    assert_eq!(
        p,
        Predicate::And(vec![a.clone(), Predicate::Not(Box::new(a))])
    );
}

#[test]
fn decode_errors_name_the_index() {
    let one = vec![leaf(Kind::LessThan, "x", num(1.0))];
    let cases: Vec<(Vec<FlatNode>, i64, &str)> = vec![
        (
            one.clone(),
            1,
            "predicate root index 1 is out of range (pool has 1 nodes)",
        ),
        (
            one.clone(),
            -1,
            "predicate root index -1 is out of range (pool has 1 nodes)",
        ),
        (
            vec![],
            0,
            "predicate root index 0 is out of range (pool has 0 nodes)",
        ),
        (
            vec![
                conn(Kind::And, &[1, 5]),
                leaf(Kind::Equals, "a", Value::Null),
            ],
            0,
            "predicate node 0: index 5 is out of range (pool has 2 nodes)",
        ),
        (
            vec![not(-3)],
            0,
            "predicate node 0: index -3 is out of range (pool has 1 nodes)",
        ),
        (
            vec![conn(Kind::And, &[])],
            0,
            "predicate node 0: 'and' needs a non-empty children list",
        ),
        (
            vec![
                conn(Kind::Or, &[1]),
                FlatNode {
                    children: None,
                    ..conn(Kind::Or, &[])
                },
            ],
            0,
            "predicate node 1: 'or' needs a non-empty children list",
        ),
        (
            vec![FlatNode {
                child: None,
                ..not(0)
            }],
            0,
            "predicate node 0: 'not' needs a child",
        ),
        (
            vec![FlatNode {
                fact: None,
                ..leaf(Kind::GreaterThanOrEqual, "x", num(1.0))
            }],
            0,
            "predicate node 0: leaf 'greater-than-or-equal' needs a non-empty fact",
        ),
        (
            vec![leaf(Kind::Equals, "", num(1.0))],
            0,
            "predicate node 0: leaf 'equals' needs a non-empty fact",
        ),
        (
            vec![not(0)],
            0,
            "predicate cycle: node 0 is reachable from itself (0 -> 0)",
        ),
        (
            vec![
                conn(Kind::And, &[1]),
                conn(Kind::Or, &[3, 2]),
                not(1),
                leaf(Kind::Equals, "a", num(1.0)),
            ],
            0,
            "predicate cycle: node 1 is reachable from itself (1 -> 2 -> 1)",
        ),
    ];
    for (nodes, root, want) in cases {
        let err = decode(&nodes, root).unwrap_err();
        assert_eq!(err.to_string(), want);
    }
}

fn not_chain(levels: usize) -> Vec<FlatNode> {
    let mut nodes: Vec<FlatNode> = (1..levels).map(|i| not(i as i64)).collect();
    nodes.push(leaf(Kind::Equals, "a", num(1.0)));
    nodes
}

#[test]
fn decode_depth_limit() {
    assert!(decode(&not_chain(32), 0).is_ok());
    assert_eq!(
        decode(&not_chain(33), 0).unwrap_err(),
        DecodeError::TooDeep { levels: 33 }
    );
    // Also through and/or.
    let mut nodes: Vec<FlatNode> = (1..33).map(|i| conn(Kind::And, &[i])).collect();
    nodes.push(leaf(Kind::Equals, "a", num(1.0)));
    assert_eq!(
        decode(&nodes, 0).unwrap_err().to_string(),
        "predicate is 33 levels deep (at most 32)"
    );
    // A long cycle is reported as a cycle, not as depth.
    let mut cyc: Vec<FlatNode> = (1..40).map(|i| not(i as i64)).collect();
    cyc.push(not(0));
    assert!(matches!(
        decode(&cyc, 0).unwrap_err(),
        DecodeError::Cycle { cycle } if cycle.len() == 41
    ));
}

#[test]
fn decode_pool_limit() {
    let mut nodes = vec![leaf(Kind::Equals, "a", num(1.0)); MAX_POOL];
    assert!(decode(&nodes, 0).is_ok());
    nodes.push(leaf(Kind::Equals, "a", num(1.0)));
    assert_eq!(
        decode(&nodes, 0).unwrap_err().to_string(),
        "predicate pool has 257 nodes (at most 256)"
    );
}

#[test]
fn decode_rejects_exponential_sharing() {
    // Node i = and[i+1, i+1]: 31 levels of doubling is 2^31 decoded nodes.
    let mut nodes: Vec<FlatNode> = (1..31).map(|i| conn(Kind::And, &[i, i])).collect();
    nodes.push(leaf(Kind::Equals, "a", num(1.0)));
    let err = decode(&nodes, 0).unwrap_err();
    assert!(matches!(err, DecodeError::TooLarge { nodes, .. } if nodes > MAX_DECODED_NODES));
    // Long facts shared many times hit the byte bound.
    let long = "f".repeat(100_000);
    let nodes = vec![
        conn(Kind::Or, &[1; 20]),
        leaf(Kind::Equals, &long, Value::str("x")),
    ];
    assert!(matches!(
        decode(&nodes, 0).unwrap_err(),
        DecodeError::TooLarge { bytes, .. } if bytes > MAX_DECODED_BYTES
    ));
    // A huge children list pointing at one leaf is bounded too.
    let nodes = vec![
        conn(Kind::Or, &vec![1; 100_000]),
        leaf(Kind::Equals, "a", num(1.0)),
    ];
    assert!(matches!(
        decode(&nodes, 0).unwrap_err(),
        DecodeError::TooLarge { .. }
    ));
}

// ---- entries <-> JSON ------------------------------------------------------------------

const SESSION: &str = r#"[
  {"id": "own-page", "mode": "render-attested", "facet": "prices", "predicate": null,
   "source": "Postcondition: every price was read from the vendor's own page."},
  {"id": "has-prices", "mode": "deterministic", "facet": "prices",
   "predicate": {"nodes": [{"kind": "less-than", "fact": "prices.length", "value": 1,
                            "children": null, "child": null}], "root": 0},
   "source": "Postcondition: at least one vendor price is tracked."},
  {"id": "combo", "mode": "deterministic", "facet": "@atomic",
   "predicate": {"nodes": [{"kind": "or", "fact": null, "value": null, "children": [1, 2], "child": null},
                           {"kind": "not-equals", "fact": "status", "value": "ok", "children": null, "child": null},
                           {"kind": "equals", "fact": "gone", "value": null, "children": null, "child": null}],
                 "root": 0},
   "source": "Postcondition: status is ok."}
]"#;

pub(super) fn facets() -> Vec<String> {
    vec!["@atomic".into(), "prices".into()]
}

#[test]
fn entries_round_trip_sorted_with_nulls_omitted() {
    let entries = entries_from_value(&parse_str(SESSION).unwrap()).unwrap();
    assert_eq!(entries.len(), 3);
    let v = entries_to_value(&entries);
    assert_eq!(
        json::compact_string(&v),
        concat!(
            r#"[{"id":"combo","mode":"deterministic","facet":"@atomic","source":"Postcondition: status is ok.","#,
            r#""predicate":{"nodes":[{"kind":"or","children":[1,2]},{"kind":"not-equals","fact":"status","value":"ok"},"#,
            r#"{"kind":"equals","fact":"gone","value":null}],"root":0}},"#,
            r#"{"id":"has-prices","mode":"deterministic","facet":"prices","source":"Postcondition: at least one vendor price is tracked.","#,
            r#""predicate":{"nodes":[{"kind":"less-than","fact":"prices.length","value":1}],"root":0}},"#,
            r#"{"id":"own-page","mode":"render-attested","facet":"prices","source":"Postcondition: every price was read from the vendor's own page."}]"#
        )
    );
    // Reading the persisted form back gives the same entries (sorted).
    let again = entries_from_value(&v).unwrap();
    let mut sorted = entries.clone();
    sorted.sort_by(|a, b| a.id.cmp(&b.id));
    assert_eq!(again, sorted);
}

#[test]
fn entry_shape_errors_name_the_json_path() {
    let cases: &[(&str, &str)] = &[
        ("{}", "postconditions: expected an array, found an object"),
        (
            "[1]",
            "postconditions[0]: expected an object, found a number",
        ),
        (
            r#"[{"mode":"deterministic","facet":"f","source":"s"}]"#,
            "postconditions[0].id: required member is missing",
        ),
        (
            r#"[{"id":"a","mode":"judged","facet":"f","source":"s"}]"#,
            "postconditions[0].mode: expected \"deterministic\" or \"render-attested\", found \"judged\"",
        ),
        (
            r#"[{"id":"a","mode":"deterministic","facet":"f","source":5}]"#,
            "postconditions[0].source: expected a string, found a number",
        ),
        (
            r#"[{"id":"a","mode":"deterministic","facet":"f","source":"s","predicate":[]}]"#,
            "postconditions[0].predicate: expected an object or null, found an array",
        ),
        (
            r#"[{"id":"a","mode":"deterministic","facet":"f","source":"s","predicate":{"nodes":[],"root":0.5}}]"#,
            "postconditions[0].predicate.root: expected an integer index, found a number",
        ),
        (
            r#"[{"id":"a","mode":"deterministic","facet":"f","source":"s","predicate":{"nodes":[{"kind":"xor"}],"root":0}}]"#,
            "postconditions[0].predicate.nodes[0].kind: unknown kind \"xor\" (expected equals, not-equals, greater-than-or-equal, less-than, and, or, not)",
        ),
        (
            r#"[{"id":"a","mode":"deterministic","facet":"f","source":"s","predicate":{"nodes":[{"kind":"equals","fact":"x","value":[1]}],"root":0}}]"#,
            "postconditions[0].predicate.nodes[0].value: expected a string, number, boolean or null, found an array",
        ),
        (
            r#"[{"id":"a","mode":"deterministic","facet":"f","source":"s","predicate":{"nodes":[{"kind":"and","children":[0,"1"]}],"root":0}}]"#,
            "postconditions[0].predicate.nodes[0].children[1]: expected an integer index, found a string",
        ),
        (
            r#"[{"id":"a","mode":"deterministic","facet":"f","source":"s","predicate":{"nodes":[{"kind":"not","child":true}],"root":0}}]"#,
            "postconditions[0].predicate.nodes[0].child: expected an integer index, found a boolean",
        ),
        (
            r#"[{"id":"a","mode":"deterministic","facet":"f","source":"s","predicate":{"root":0}}]"#,
            "postconditions[0].predicate.nodes: required member is missing",
        ),
        (
            r#"[{"id":"a\ud800","mode":"deterministic","facet":"f","source":"s"}]"#,
            "postconditions[0].id: string holds a lone surrogate (not valid Unicode)",
        ),
    ];
    for (input, want) in cases {
        let err = entries_from_value(&parse_str(input).unwrap()).unwrap_err();
        assert_eq!(err.to_string(), *want, "input {input}");
    }
}

#[test]
fn entries_read_members_in_format_order_and_lower_pool_nodes() {
    // `id` is checked first whatever the input order; unknown members are ignored.
    let err = |text: &str| {
        entries_from_value(&parse_str(text).unwrap())
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        err(r#"[{"source":5,"x":[],"mode":"deterministic","facet":"f"}]"#),
        "postconditions[0].id: required member is missing"
    );
    assert_eq!(
        err(
            r#"[{"id":"a","mode":"deterministic","facet":"f","source":"s","predicate":{"root":"0","nodes":7}}]"#
        ),
        "postconditions[0].predicate.nodes: expected an array, found a number"
    );
    assert_eq!(
        err(
            r#"[{"id":"a","mode":"deterministic","facet":"f","source":"s","predicate":{"nodes":[{"kind":"or","children":3}],"root":0}}]"#
        ),
        "postconditions[0].predicate.nodes[0].children: expected an array of indices, found a number"
    );
    // Members a kind ignores are typed like the schema's, then dropped.
    assert_eq!(
        err(
            r#"[{"id":"a","mode":"deterministic","facet":"f","source":"s","predicate":{"nodes":[{"kind":"and","children":[0],"fact":5}],"root":0}}]"#
        ),
        "postconditions[0].predicate.nodes[0].fact: expected a string, found a number"
    );
    let entries = entries_from_value(
        &parse_str(
            r#"[{"id":"a","mode":"deterministic","facet":"f","source":"s","predicate":{"nodes":[
                {"kind":"not","child":1.0,"fact":"x","value":2,"children":[1]},
                {"kind":"equals","fact":"s","value":"\ud800","child":0},
                {"kind":"less-than","fact":"n"}],"root":0}}]"#,
        )
        .unwrap(),
    )
    .unwrap();
    let nodes = &entries[0].predicate.as_ref().unwrap().nodes;
    assert_eq!(nodes[0], not(1));
    // A lone surrogate in a comparison value is kept as it is.
    assert_eq!(
        nodes[1],
        leaf(Kind::Equals, "s", parse_str(r#""\ud800""#).unwrap())
    );
    // A leaf without a value compares with null, and writes it.
    assert_eq!(nodes[2], leaf(Kind::LessThan, "n", Value::Null));
    // Writing builds the project's value exactly: the lone surrogate is written as its escape
    // (session answers, the only source of written entries, never hold one).
    assert_eq!(
        json::compact_string(&entries[0].to_value()),
        r#"{"id":"a","mode":"deterministic","facet":"f","source":"s","predicate":{"nodes":[{"kind":"not","child":1},{"kind":"equals","fact":"s","value":"\ud800"},{"kind":"less-than","fact":"n","value":null}],"root":0}}"#
    );
}

// ---- compiled set ------------------------------------------------------------------------

#[test]
fn compiled_set_sorted_with_mode() {
    let entries = entries_from_value(&parse_str(SESSION).unwrap()).unwrap();
    let set = CompiledPostconditions::compile("price-watch", &facets(), entries).unwrap();
    assert_eq!(set.mode, Mode::RenderAttested);
    assert_eq!(
        set.deterministic
            .iter()
            .map(|d| d.id.as_str())
            .collect::<Vec<_>>(),
        ["combo", "has-prices"]
    );
    assert_eq!(set.attested.len(), 1);
    assert_eq!(
        set.entries()
            .iter()
            .map(|d| d.id.as_str())
            .collect::<Vec<_>>(),
        ["combo", "has-prices", "own-page"]
    );
    let v = json::compact_string(&set.to_value());
    assert!(v.starts_with(r#"{"node":"price-watch","mode":"render-attested","deterministic":[{"id":"combo","facet":"@atomic""#), "{v}");
    assert!(v.contains(r#"{"id":"has-prices","facet":"prices","source":"Postcondition: at least one vendor price is tracked.","predicate":{"kind":"less-than","fact":"prices.length","value":1}}"#), "{v}");
    assert!(v.ends_with(r#""attested":[{"id":"own-page","facet":"prices","source":"Postcondition: every price was read from the vendor's own page."}]}"#), "{v}");
    // Reloading the persisted form gives the same set.
    let again =
        CompiledPostconditions::from_value("price-watch", &facets(), &set.entries_value()).unwrap();
    assert_eq!(again, set);
    // Without attested entries (and when empty) the mode is deterministic.
    let only_det: Vec<PostconditionEntry> = set
        .entries()
        .iter()
        .filter(|e| e.mode == Mode::Deterministic)
        .cloned()
        .collect();
    let det = CompiledPostconditions::compile("price-watch", &facets(), only_det).unwrap();
    assert_eq!(det.mode, Mode::Deterministic);
    let empty = CompiledPostconditions::compile("price-watch", &facets(), vec![]).unwrap();
    assert_eq!(empty.mode, Mode::Deterministic);
    assert!(empty.is_empty());
    assert_eq!(empty, CompiledPostconditions::empty("price-watch"));
}

pub(super) fn entry(
    id: &str,
    mode: Mode,
    facet: &str,
    predicate: Option<FlatPredicate>,
) -> PostconditionEntry {
    PostconditionEntry {
        id: id.into(),
        mode,
        facet: facet.into(),
        source: "Postcondition: s.".into(),
        predicate,
    }
}

pub(super) fn simple() -> Option<FlatPredicate> {
    Some(FlatPredicate {
        nodes: vec![leaf(Kind::LessThan, "x", num(1.0))],
        root: 0,
    })
}

#[test]
fn compiled_set_validation() {
    let long_ok = format!("a{}", "b".repeat(63));
    let too_long = format!("a{}", "b".repeat(64));
    assert!(is_valid_id(&long_ok) && !is_valid_id(&too_long));
    for bad in ["", "-a", ".a", "_a", "a b", "a/b", "é"] {
        assert!(!is_valid_id(bad), "{bad}");
    }
    for good in ["a", "0", "A.b_c-d", "has-prices"] {
        assert!(is_valid_id(good), "{good}");
    }
    let entries = vec![
        entry("ok", Mode::Deterministic, "prices", simple()),
        entry("-bad", Mode::RenderAttested, "prices", None),
        entry("ok", Mode::RenderAttested, "prices", None),
        entry("nofacet", Mode::RenderAttested, "vendors", None),
        entry("nopred", Mode::Deterministic, "prices", None),
        entry("extra", Mode::RenderAttested, "prices", simple()),
        entry(
            "broken",
            Mode::Deterministic,
            "@atomic",
            Some(FlatPredicate {
                nodes: vec![not(0)],
                root: 0,
            }),
        ),
    ];
    let err = CompiledPostconditions::compile("pw", &["prices".into()], entries).unwrap_err();
    let PostconditionError::Invalid { node, problems } = err else {
        panic!("expected Invalid");
    };
    assert_eq!(node, "pw");
    assert_eq!(
        problems,
        vec![
            "postconditions[1].id '-bad' does not match ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$",
            "postconditions[2].id 'ok' repeats postconditions[0].id",
            "postconditions[3] ('nofacet'): facet 'vendors' is not a facet of node 'pw' (known: @atomic, prices)",
            "postconditions[4] ('nopred'): deterministic but has no predicate",
            "postconditions[5] ('extra'): render-attested but carries a predicate",
            "postconditions[6] ('broken'): predicate cycle: node 0 is reachable from itself (0 -> 0)",
        ]
    );
    // Atomic-only nodes: no deterministic entries; @atomic attested entries are fine.
    let err = CompiledPostconditions::compile(
        "brief",
        &["@atomic".into()],
        vec![
            entry("d", Mode::Deterministic, "@atomic", simple()),
            entry("a", Mode::RenderAttested, "@atomic", None),
        ],
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid postconditions for node 'brief': postconditions[0] ('d'): deterministic but node 'brief' is atomic-only (it has no structured facts)"
    );
    assert!(
        CompiledPostconditions::compile(
            "brief",
            &[],
            vec![entry("a", Mode::RenderAttested, "@atomic", None)]
        )
        .is_ok()
    );
}
