//! Unit tests of the canonicalizer: the RUNTIME.md §4.8 vectors, spec reading and
//! `compile_node` here; reduction and normalization in `reduce.rs`; properties in
//! `properties.rs`.

mod properties;
mod reduce;

use super::*;
use crate::format::address::{NULL_ADDRESS, address};
use crate::format::json::{self, Object, Value, parse_str};

/// The spec of RUNTIME.md §4.1 (shared with the postcondition tests).
pub(crate) fn spec_41() -> CanonicalizerSpec {
    CanonicalizerSpec::from_value(
        &parse_str(
            r#"{
  "node": "price-watch",
  "fields": [
{"path": "prices", "material": true, "collection": "set"},
{"path": "prices.vendor", "material": true,
 "text": {"collapse_whitespace": true, "case_insensitive": true}},
{"path": "prices.price", "material": true, "number": {"quantum": 0.01}},
{"path": "prices.checked_at", "material": false},
{"path": "prices.source", "material": false},
{"path": "checked_at", "material": false}
  ],
  "default_material": true,
  "facets": [{"facet": "prices", "paths": ["prices"]}]
}"#,
        )
        .unwrap(),
    )
    .unwrap()
}

/// The `truth.json` of RUNTIME.md §4.8.
pub(crate) const TRUTH_48: &str = r#"{
  "checked_at": "2026-06-02T18:00:00.000Z",
  "prices": [
{"vendor": "  Acme   Corp ", "price": 10.004, "checked_at": "2026-06-02T17:59:01.000Z",
 "source": "https://acme.example/pricing"},
{"vendor": "beta", "price": 7.5, "checked_at": "2026-06-02T17:59:03.000Z",
 "source": "https://beta.example/p"}
  ],
  "notes": "two vendors tracked"
}"#;

const ATOMIC_48: &str = "sha256:59e80454e453a7e43e99d1c3947b166272b93575509fd33e25cb5957469d3f2b";
const PRICES_48: &str = "sha256:2f37012b5f685cdc53c29539194bc94c752116d2186fc765ece7127c55e38f3f";

pub(super) fn compiled(spec_json: &str) -> CompiledCanonicalizer {
    compile_node(&CanonicalizerSpec::from_value(&parse_str(spec_json).unwrap()).unwrap()).unwrap()
}

pub(super) fn ser(c: &CompiledCanonicalizer, truth: &str, facet: &str) -> String {
    c.serialize(&parse_str(truth).unwrap(), facet).unwrap()
}

#[test]
fn worked_example_serializations_and_tokens() {
    let c = compile_node(&spec_41()).unwrap();
    let v = parse_str(TRUTH_48).unwrap();
    assert_eq!(
        c.serialize(&v, "@atomic").unwrap(),
        r#"{"notes":"two vendors tracked","prices":[{"price":10,"vendor":"acme corp"},{"price":7.5,"vendor":"beta"}]}"#
    );
    assert_eq!(
        c.serialize(&v, "prices").unwrap(),
        r#"{"prices":[{"price":10,"vendor":"acme corp"},{"price":7.5,"vendor":"beta"}]}"#
    );
    let fp = c.apply(&v).unwrap();
    assert_eq!(
        fp.0,
        vec![
            ("@atomic".to_string(), ATOMIC_48.to_string()),
            ("prices".to_string(), PRICES_48.to_string()),
        ]
    );
    assert_eq!(c.token(&v, "prices").unwrap(), PRICES_48);
    assert_eq!(c.facets(), ["@atomic", "prices"]);
    assert!(c.is_faceted());
}

#[test]
fn worked_example_immaterial_changes_move_nothing() {
    let c = compile_node(&spec_41()).unwrap();
    let moved = r#"{
  "checked_at": "2027-01-01T00:00:00.000Z",
  "prices": [
{"vendor": "beta", "price": 7.501, "checked_at": "2027-01-01T00:00:09.000Z",
 "source": "https://beta.example/p"},
{"vendor": "  Acme   Corp ", "price": 10.004, "checked_at": "2027-01-01T00:00:08.000Z",
 "source": "https://acme.example/pricing"}
  ],
  "notes": "two vendors tracked"
}"#;
    let fp = c.apply(&parse_str(moved).unwrap()).unwrap();
    assert_eq!(fp.get("@atomic"), Some(ATOMIC_48));
    assert_eq!(fp.get("prices"), Some(PRICES_48));
}

#[test]
fn worked_example_notes_change_moves_only_atomic() {
    let c = compile_node(&spec_41()).unwrap();
    let t = TRUTH_48.replace("two vendors tracked", "three vendors soon");
    let fp = c.apply(&parse_str(&t).unwrap()).unwrap();
    assert_eq!(
        fp.get("@atomic"),
        Some("sha256:76ca3c361b2e2bf59350effb33ffe98214e589bb70b66b9f3f150e606ac8b22c")
    );
    assert_eq!(fp.get("prices"), Some(PRICES_48));
}

#[test]
fn dropped_root_is_the_null_token() {
    assert_eq!(
        NULL_ADDRESS,
        "sha256:74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b"
    );
    assert_eq!(address(b"null"), NULL_ADDRESS);
    let c = compile_node(&spec_41()).unwrap();
    let v = parse_str(r#"{"checked_at": "x", "other": 1}"#).unwrap();
    assert_eq!(c.serialize(&v, "prices").unwrap(), "null");
    assert_eq!(c.reduced(&v, "prices").unwrap(), None);
    assert_eq!(c.apply(&v).unwrap().get("prices"), Some(NULL_ADDRESS));
    // Only immaterial members: the root itself is dropped.
    let v = parse_str(r#"{"checked_at": "x"}"#).unwrap();
    assert_eq!(c.apply(&v).unwrap().get("@atomic"), Some(NULL_ADDRESS));
    // An empty object root is dropped too (no exception for the root).
    assert_eq!(ser(&c, "{}", "@atomic"), "null");
}

#[test]
fn spec_round_trips_in_format_order() {
    let spec = spec_41();
    let text = json::compact_string(&spec.to_value());
    assert_eq!(
        text,
        r#"{"node":"price-watch","fields":[{"path":"prices","material":true,"collection":"set"},{"path":"prices.vendor","material":true,"text":{"collapse_whitespace":true,"case_insensitive":true}},{"path":"prices.price","material":true,"number":{"quantum":0.01}},{"path":"prices.checked_at","material":false},{"path":"prices.source","material":false},{"path":"checked_at","material":false}],"default_material":true,"facets":[{"facet":"prices","paths":["prices"]}]}"#
    );
    assert_eq!(
        CanonicalizerSpec::from_value(&spec.to_value()).unwrap(),
        spec
    );
}

#[test]
fn spec_parse_fills_text_defaults_and_accepts_nulls() {
    let s = CanonicalizerSpec::from_value(
        &parse_str(
            r#"{"node":"n","fields":[
            {"path":"a","material":true,"text":{}},
            {"path":"b","material":true,"text":{"case_insensitive":true},"number":null,"collection":null},
            {"path":"c","material":true,"number":{"quantum":null},"extra":1},
            {"path":"d","material":true,"number":{},"collection":"ordered"}
        ],"default_material":false,"facets":[]}"#,
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        s.fields[0].text,
        Some(TextRule {
            collapse_whitespace: true,
            case_insensitive: false
        })
    );
    assert_eq!(
        s.fields[1].text,
        Some(TextRule {
            collapse_whitespace: true,
            case_insensitive: true
        })
    );
    assert_eq!(s.fields[1].number, None);
    assert_eq!(s.fields[1].collection, None);
    assert_eq!(s.fields[2].number, Some(NumberRule { quantum: None }));
    assert_eq!(s.fields[3].collection, Some(Collection::Ordered));
    assert!(!s.default_material);
    let v = json::compact_string(&s.to_value());
    assert!(v.contains(r#"{"path":"c","material":true,"number":{"quantum":null}}"#));
    assert!(v.contains(r#"{"path":"b","material":true,"text":{"collapse_whitespace":true,"case_insensitive":true}}"#));
}

#[test]
fn spec_shape_errors_name_the_json_path() {
    let cases: &[(&str, &str)] = &[
        (
            "[]",
            "canonicalization spec: expected an object, found array",
        ),
        (
            r#"{"fields":[],"default_material":true,"facets":[]}"#,
            "canonicalization spec: node: required member is missing",
        ),
        (
            r#"{"node":1,"fields":[],"default_material":true,"facets":[]}"#,
            "canonicalization spec: node: expected a string, found number",
        ),
        (
            r#"{"node":"n","fields":{},"default_material":true,"facets":[]}"#,
            "canonicalization spec: fields: expected an array, found object",
        ),
        (
            r#"{"node":"n","fields":[{"path":"a","material":"yes"}],"default_material":true,"facets":[]}"#,
            "canonicalization spec: fields[0].material: expected a boolean, found string",
        ),
        (
            r#"{"node":"n","fields":[{"path":"a","material":true},{"material":true}],"default_material":true,"facets":[]}"#,
            "canonicalization spec: fields[1].path: required member is missing",
        ),
        (
            r#"{"node":"n","fields":[{"path":"a","material":true,"text":{"case_insensitive":1}}],"default_material":true,"facets":[]}"#,
            "canonicalization spec: fields[0].text.case_insensitive: expected a boolean, found number",
        ),
        (
            r#"{"node":"n","fields":[{"path":"a","material":true,"text":"yes"}],"default_material":true,"facets":[]}"#,
            "canonicalization spec: fields[0].text: expected an object, found string",
        ),
        (
            r#"{"node":"n","fields":[{"path":"a","material":true,"number":{"quantum":"0.1"}}],"default_material":true,"facets":[]}"#,
            "canonicalization spec: fields[0].number.quantum: expected a number or null, found string",
        ),
        (
            r#"{"node":"n","fields":[{"path":"a","material":true,"collection":"bag"}],"default_material":true,"facets":[]}"#,
            "canonicalization spec: fields[0].collection: expected \"ordered\", \"set\" or null, found \"bag\"",
        ),
        (
            r#"{"node":"n","fields":[],"default_material":null,"facets":[]}"#,
            "canonicalization spec: default_material: expected a boolean, found null",
        ),
        (
            r#"{"node":"n","fields":[],"default_material":true,"facets":[{"facet":"f","paths":["a",2]}]}"#,
            "canonicalization spec: facets[0].paths[1]: expected a string, found number",
        ),
        (
            r#"{"node":"n","fields":[],"default_material":true,"facets":[{"paths":[]}]}"#,
            "canonicalization spec: facets[0].facet: required member is missing",
        ),
        (
            r#"{"node":"n","fields":[{"path":"a\ud800","material":true}],"default_material":true,"facets":[]}"#,
            "canonicalization spec: fields[0].path: string holds a lone surrogate (not valid Unicode)",
        ),
    ];
    for (input, want) in cases {
        let err = CanonicalizerSpec::from_value(&parse_str(input).unwrap()).unwrap_err();
        assert_eq!(err.to_string(), *want, "input {input}");
    }
}

#[test]
fn spec_errors_follow_member_order_of_the_format_not_of_the_input() {
    // `node` comes first in FORMATS.md §15.5: its absence is reported before a later member's
    // wrong type, whatever order the input uses; unknown members are ignored.
    let err = |text: &str| {
        CanonicalizerSpec::from_value(&parse_str(text).unwrap())
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        err(r#"{"facets":7,"fields":[],"default_material":true,"x":1}"#),
        "canonicalization spec: node: required member is missing"
    );
    assert_eq!(
        err(
            r#"{"node":"n","facets":[],"default_material":true,"fields":[{"material":1,"path":2}]}"#
        ),
        "canonicalization spec: fields[0].path: expected a string, found number"
    );
    assert_eq!(
        err(
            r#"{"node":"n","fields":[{"path":"a","material":true,"collection":"s\ud800"}],"default_material":true,"facets":[]}"#
        ),
        "canonicalization spec: fields[0].collection: string holds a lone surrogate (not valid Unicode)"
    );
    assert_eq!(
        err(
            r#"{"node":"n","fields":[{"path":"a","material":true,"collection":1}],"default_material":true,"facets":[]}"#
        ),
        "canonicalization spec: fields[0].collection: expected a string, found number"
    );
    // The same derived type reads a session answer through serde_json.
    let spec: CanonicalizerSpec = serde_json::from_str(
        r#"{"node":"n","fields":[{"path":"a","material":true,"text":{"case_insensitive":true},"number":{"quantum":1},"collection":null}],"default_material":false,"facets":[]}"#,
    )
    .unwrap();
    assert_eq!(
        spec.fields[0].text,
        Some(TextRule {
            collapse_whitespace: true,
            case_insensitive: true
        })
    );
    assert_eq!(
        spec.fields[0].number,
        Some(NumberRule { quantum: Some(1.0) })
    );
    assert_eq!(spec.fields[0].collection, None);
}

pub(super) fn spec_with(fields: Vec<FieldRule>, facets: Vec<FacetSpec>) -> CanonicalizerSpec {
    CanonicalizerSpec {
        node: "n".into(),
        fields,
        default_material: true,
        facets,
    }
}

pub(super) fn facet(name: &str, paths: &[&str]) -> FacetSpec {
    FacetSpec {
        facet: name.into(),
        paths: paths.iter().map(|p| p.to_string()).collect(),
    }
}

pub(super) fn problems(spec: &CanonicalizerSpec) -> Vec<String> {
    match compile_node(spec) {
        Err(CanonError::Invalid { problems, node }) => {
            assert_eq!(node, spec.node);
            problems
        }
        other => panic!("expected Invalid, got {other:?}"),
    }
}

#[test]
fn compile_node_rejects_bad_paths() {
    let p = problems(&spec_with(
        vec![
            FieldRule::new("", true),
            FieldRule::new("a..b", true),
            FieldRule::new(".a", true),
            FieldRule::new("a.", true),
            FieldRule::new("ok", true),
            FieldRule::new("ok", false),
        ],
        vec![],
    ));
    assert_eq!(
        p,
        vec![
            "fields[0].path is empty",
            "fields[1].path 'a..b' has an empty segment",
            "fields[2].path '.a' has an empty segment",
            "fields[3].path 'a.' has an empty segment",
            "fields[5].path 'ok' repeats fields[4].path",
        ]
    );
}

#[test]
fn compile_node_checks_quantum_range() {
    let with_q = |q: Option<f64>| {
        let mut r = FieldRule::new("a", true);
        r.number = Some(NumberRule { quantum: q });
        spec_with(vec![r], vec![])
    };
    for ok in [
        None,
        Some(0.0),
        Some(-0.0),
        Some(0.01),
        Some(5e-324),
        Some(1e308),
    ] {
        assert!(compile_node(&with_q(ok)).is_ok(), "{ok:?}");
    }
    for (bad, shown) in [
        (-1.0, "-1"),
        (f64::NAN, "NaN"),
        (f64::INFINITY, "Infinity"),
        (f64::NEG_INFINITY, "-Infinity"),
    ] {
        assert_eq!(
            problems(&with_q(Some(bad))),
            vec![format!(
                "fields[0].number.quantum must be null, 0, or a finite number greater than 0 (found {shown})"
            )]
        );
    }
}

#[test]
fn compile_node_checks_facets() {
    let p = problems(&spec_with(
        vec![],
        vec![
            facet("@atomic", &["a"]),
            facet("f", &["a"]),
            facet("f", &["b"]),
            facet("g", &[]),
            facet("", &["c"]),
            facet("h", &["ok", "x..y", ""]),
        ],
    ));
    assert_eq!(
        p,
        vec![
            "facets[0].facet '@atomic' is reserved and must not be declared",
            "facets[2].facet 'f' is declared twice (also facets[1])",
            "facets[3].paths is empty: facet 'g' needs at least one path",
            "facets[4].facet is empty",
            "facets[5].paths[1] 'x..y' has an empty segment",
            "facets[5].paths[2] is empty",
        ]
    );
    let err = compile_node(&spec_with(vec![], vec![facet("g", &[])])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid canonicalization spec for node 'n': facets[0].paths is empty: facet 'g' needs at least one path"
    );
}

#[test]
fn declared_facet_set_must_match() {
    let s = spec_with(vec![], vec![facet("a", &["a"]), facet("b", &["b"])]);
    assert!(s.check_declared_facets(&["b".into(), "a".into()]).is_ok());
    let err = s
        .check_declared_facets(&["a".into(), "c".into()])
        .unwrap_err();
    assert_eq!(
        err,
        CanonError::Invalid {
            node: "n".into(),
            problems: vec![
                "facets[1].facet 'b' is not a declared facet of the node".into(),
                "declared facet 'c' has no entry in facets".into(),
            ]
        }
    );
    let s = spec_with(
        vec![],
        vec![
            facet("a", &["a"]),
            facet("a", &["b"]),
            facet("@atomic", &["c"]),
        ],
    );
    let Err(CanonError::Invalid { problems, .. }) = s.check_declared_facets(&["a".into()]) else {
        panic!("expected Invalid")
    };
    assert_eq!(
        problems,
        vec![
            "facets[1].facet 'a' is listed twice",
            "facets[2].facet '@atomic' is reserved and must not be declared",
        ]
    );
}

#[test]
fn lints_are_reported() {
    let mut immaterial_with_text = FieldRule::new("tmp", false);
    immaterial_with_text.text = Some(TextRule {
        collapse_whitespace: true,
        case_insensitive: false,
    });
    let spec = CanonicalizerSpec {
        node: "n".into(),
        fields: vec![
            FieldRule::new("notes", true),
            FieldRule::new("items", true),
            FieldRule::new("meta", false),
            FieldRule::new("deep", false),
            FieldRule::new("deep.keep", true),
            immaterial_with_text,
        ],
        default_material: true,
        facets: vec![
            facet("f", &["items", "items", "meta"]),
            facet("g", &["deep"]),
        ],
    };
    let c = compile_node(&spec).unwrap();
    let codes: Vec<String> = c.lints().iter().map(|l| l.to_string()).collect();
    assert_eq!(
        codes,
        vec![
            "material-rule-uncovered: rule 'notes' is material but no facet path covers it: it moves only @atomic",
            "options-on-immaterial-rule: rule 'tmp' is immaterial: its text/number options have no effect",
            "duplicate-facet-path: facet 'f' lists path 'items' twice",
            "immaterial-facet-path: facet 'f' path 'meta' is immaterial and no material rule lies under it: it can never carry material",
        ]
    );
    assert!(compile_node(&spec_41()).unwrap().lints().is_empty());
}

#[test]
fn identity_spec_is_atomic_only() {
    let s = CanonicalizerSpec::identity("brief");
    assert!(s.is_atomic_only());
    assert_eq!(
        json::compact_string(&s.to_value()),
        r#"{"node":"brief","fields":[],"default_material":true,"facets":[]}"#
    );
    let c = compile_node(&s).unwrap();
    assert_eq!(c.facets(), ["@atomic"]);
    assert!(!c.is_faceted());
    assert!(c.declared_facets().is_empty());
    let v = parse_str(r#"{"b":[1,"x"],"a":null}"#).unwrap();
    assert_eq!(
        c.serialize(&v, "@atomic").unwrap(),
        r#"{"a":null,"b":[1,"x"]}"#
    );
}

#[test]
fn unknown_facet_is_an_error() {
    let c = compile_node(&spec_41()).unwrap();
    let err = c.serialize(&Value::Null, "nope").unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown facet 'nope' for node 'price-watch'"
    );
}
