//! Facts, evaluation, structured truth (I13) and the commit gate (I12).

use super::*;
use crate::core::canonicalizer::tests::{TRUTH_48, spec_41};

/// The gate's failure reason, `None` when it passes.
fn gate_reason(
    set: &CompiledPostconditions,
    truth: Option<&Value>,
    canonicalizer: Option<&CompiledCanonicalizer>,
    attestations: &HashMap<String, bool>,
) -> Option<String> {
    gate(set, truth, canonicalizer, attestations)
        .err()
        .map(|e| e.to_string())
}

// ---- facts --------------------------------------------------------------------------------

fn price_watch() -> CompiledCanonicalizer {
    compile_node(&spec_41()).unwrap()
}

fn facts_of(pairs: &[(&str, Value)]) -> Facts {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

#[test]
fn facts_of_the_worked_example() {
    let c = price_watch();
    let truth = parse_str(TRUTH_48).unwrap();
    let f = facet_facts(&c, &truth, "prices").unwrap();
    assert_eq!(
        f,
        facts_of(&[
            ("prices.length", num(2.0)),
            ("prices.0.price", num(10.0)),
            ("prices.0.vendor", Value::str("acme corp")),
            ("prices.1.price", num(7.5)),
            ("prices.1.vendor", Value::str("beta")),
        ])
    );
    let a = facet_facts(&c, &truth, "@atomic").unwrap();
    assert_eq!(a.get("notes"), Some(&Value::str("two vendors tracked")));
    assert_eq!(a.len(), 6);
    // A dropped facet has no facts.
    let empty = facet_facts(&c, &parse_str(r#"{"notes":"x"}"#).unwrap(), "prices").unwrap();
    assert!(empty.is_empty());
    assert!(facts(None).is_empty());
}

#[test]
fn facts_flattening_rules() {
    let v = parse_str(
        r#"{"a":[1,[2,3],{"b":null}],"len":{"length":7,"x":[]},"len.length":"actual",
            "e":{},"s":true,"a.0":"second"}"#,
    )
    .unwrap();
    let f = facts(Some(&v));
    assert_eq!(
        f,
        facts_of(&[
            ("a.length", num(3.0)),
            ("a.0", num(1.0)),
            ("a.1.length", num(2.0)),
            ("a.1.0", num(2.0)),
            ("a.1.1", num(3.0)),
            ("a.2.b", Value::Null),
            ("len.length", num(7.0)),
            ("len.x.length", num(0.0)),
            ("s", Value::Bool(true)),
        ])
    );
    // Actual member beats derived length.
    let v = parse_str(r#"{"x":[1,2],"x.length":9}"#).unwrap();
    assert_eq!(facts(Some(&v)).get("x.length"), Some(&num(9.0)));
    // Scalar root and array root.
    assert_eq!(facts(Some(&num(4.0))), facts_of(&[("", num(4.0))]));
    assert_eq!(
        facts(Some(&parse_str("[5]").unwrap())),
        facts_of(&[("length", num(1.0)), ("0", num(5.0))])
    );
}

// ---- evaluation ---------------------------------------------------------------------------

fn leaf_p(kind: Comparison, fact: &str, value: Value) -> Predicate {
    Predicate::Leaf {
        kind,
        fact: fact.into(),
        value,
    }
}

#[test]
fn leaf_truth_tables() {
    use Comparison::*;
    use Outcome::*;
    let f = facts_of(&[
        ("n", num(2.0)),
        ("z", num(0.0)),
        ("s", Value::str("2")),
        ("b", Value::Bool(true)),
        ("nul", Value::Null),
        ("inf", num(f64::INFINITY)),
    ]);
    let cases: Vec<(Comparison, &str, Value, Outcome)> = vec![
        (Equals, "n", num(2.0), Tripped),
        (Equals, "n", num(3.0), NotTripped),
        (Equals, "n", Value::str("2"), NotTripped),
        (Equals, "s", Value::str("2"), Tripped),
        (Equals, "s", num(2.0), NotTripped),
        (Equals, "z", num(-0.0), Tripped),
        (Equals, "b", Value::Bool(true), Tripped),
        (Equals, "b", num(1.0), NotTripped),
        (Equals, "nul", Value::Null, Tripped),
        (Equals, "nul", Value::Bool(false), NotTripped),
        (Equals, "z", Value::Null, NotTripped),
        (Equals, "s", Value::Null, NotTripped),
        (Equals, "missing", Value::Null, Indeterminate),
        (NotEquals, "n", num(2.0), NotTripped),
        (NotEquals, "n", Value::str("2"), Tripped),
        (NotEquals, "nul", Value::Null, NotTripped),
        (NotEquals, "missing", num(1.0), Indeterminate),
        (GreaterThanOrEqual, "n", num(2.0), Tripped),
        (GreaterThanOrEqual, "n", num(2.5), NotTripped),
        (GreaterThanOrEqual, "s", num(1.0), Indeterminate),
        (GreaterThanOrEqual, "n", Value::str("1"), Indeterminate),
        (GreaterThanOrEqual, "nul", num(0.0), Indeterminate),
        (GreaterThanOrEqual, "inf", num(0.0), Indeterminate),
        (
            GreaterThanOrEqual,
            "n",
            num(f64::NEG_INFINITY),
            Indeterminate,
        ),
        (LessThan, "n", num(2.0), NotTripped),
        (LessThan, "n", num(2.5), Tripped),
        (LessThan, "z", num(-0.0), NotTripped),
        (LessThan, "b", num(2.0), Indeterminate),
        (LessThan, "n", Value::Null, Indeterminate),
        (LessThan, "missing", num(1.0), Indeterminate),
    ];
    for (kind, fact, value, want) in cases {
        let p = leaf_p(kind, fact, value.clone());
        assert_eq!(evaluate(&p, &f), want, "{kind:?} {fact} {value:?}");
    }
    let why = |p: Predicate| evaluate_explained(&p, &f).1;
    assert_eq!(
        why(leaf_p(LessThan, "gone", num(1.0))).as_deref(),
        Some("fact gone missing")
    );
    assert_eq!(
        why(leaf_p(LessThan, "s", num(1.0))).as_deref(),
        Some("fact s is a string, not a number")
    );
    assert_eq!(
        why(leaf_p(LessThan, "inf", num(1.0))).as_deref(),
        Some("fact inf is not a finite number")
    );
    assert_eq!(
        why(leaf_p(LessThan, "n", Value::Null)).as_deref(),
        Some("comparison value for fact n is null, not a number")
    );
    assert_eq!(why(leaf_p(LessThan, "n", num(5.0))), None);
}

#[test]
fn connective_truth_tables() {
    use Outcome::*;
    let f = facts_of(&[("x", num(1.0))]);
    let t = || lt("x", 2.0); // tripped
    let n = || lt("x", 0.0); // not tripped
    let i = |name: &str| lt(name, 0.0); // indeterminate (missing)
    let and = |c: Vec<Predicate>| Predicate::And(c);
    let or = |c: Vec<Predicate>| Predicate::Or(c);
    let neg = |c: Predicate| Predicate::Not(Box::new(c));
    assert_eq!(evaluate(&and(vec![t(), t()]), &f), Tripped);
    assert_eq!(evaluate(&and(vec![t(), n()]), &f), NotTripped);
    assert_eq!(evaluate(&and(vec![i("a"), n()]), &f), NotTripped);
    assert_eq!(evaluate(&and(vec![t(), i("a")]), &f), Indeterminate);
    assert_eq!(evaluate(&or(vec![n(), n()]), &f), NotTripped);
    assert_eq!(evaluate(&or(vec![n(), t()]), &f), Tripped);
    assert_eq!(evaluate(&or(vec![i("a"), t()]), &f), Tripped);
    assert_eq!(evaluate(&or(vec![n(), i("a")]), &f), Indeterminate);
    assert_eq!(evaluate(&neg(t()), &f), NotTripped);
    assert_eq!(evaluate(&neg(n()), &f), Tripped);
    assert_eq!(evaluate(&neg(i("a")), &f), Indeterminate);
    assert_eq!(evaluate(&and(vec![]), &f), Indeterminate);
    assert_eq!(evaluate(&or(vec![]), &f), Indeterminate);
    // The first undecidable leaf in child order is the reason.
    assert_eq!(
        evaluate_explained(&or(vec![n(), i("first"), i("second")]), &f),
        (Indeterminate, Some("fact first missing".to_string()))
    );
    assert_eq!(
        evaluate_explained(&neg(and(vec![t(), i("deep")])), &f),
        (Indeterminate, Some("fact deep missing".to_string()))
    );
}

// ---- structured truth (I13) -----------------------------------------------------------------

const VERSION: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";

fn files(pairs: &[(&str, &[u8])]) -> Vec<(String, Vec<u8>)> {
    pairs
        .iter()
        .map(|(p, b)| (p.to_string(), b.to_vec()))
        .collect()
}

#[test]
fn structured_truth_for_faceted_nodes() {
    let c = price_watch();
    let st = structured_truth(
        "price-watch",
        &files(&[("report.md", b"# hi"), ("truth.json", TRUTH_48.as_bytes())]),
        Some(&c),
        VERSION,
    )
    .unwrap();
    assert_eq!(
        st.fingerprints.0,
        vec![
            (
                "@atomic".to_string(),
                "sha256:59e80454e453a7e43e99d1c3947b166272b93575509fd33e25cb5957469d3f2b"
                    .to_string()
            ),
            (
                "prices".to_string(),
                "sha256:2f37012b5f685cdc53c29539194bc94c752116d2186fc765ece7127c55e38f3f"
                    .to_string()
            ),
        ]
    );
    assert!(st.warnings.is_empty());
    assert_eq!(st.truth, Some(parse_str(TRUTH_48).unwrap()));
    // Empty facet: commits with a warning.
    let st = structured_truth(
        "price-watch",
        &files(&[("truth.json", br#"{"notes":"nothing yet"}"#)]),
        Some(&c),
        VERSION,
    )
    .unwrap();
    assert_eq!(st.fingerprints.get("prices"), Some(NULL_ADDRESS));
    assert_eq!(
        st.warnings,
        vec![
            "facet 'prices' of node 'price-watch' has no material: its paths are absent from truth.json"
        ]
    );
}

#[test]
fn structured_truth_failure_reasons() {
    let c = price_watch();
    let reason = |fs: Vec<(String, Vec<u8>)>| {
        structured_truth("price-watch", &fs, Some(&c), VERSION)
            .unwrap_err()
            .to_string()
    };
    let missing = "structured truth missing: node 'price-watch' declares facets but its render wrote no truth.json";
    assert_eq!(reason(files(&[])), missing);
    // Only the exact root path counts.
    assert_eq!(
        reason(files(&[
            ("out/truth.json", b"{}"),
            ("Truth.json", b"{}"),
            ("data.json", b"{}")
        ])),
        missing
    );
    assert_eq!(
        reason(files(&[("truth.json", b"{\"a\": ")])),
        "structured truth invalid: truth.json is not valid JSON (unexpected end of JSON input at byte 6)"
    );
    assert_eq!(
        reason(files(&[("truth.json", b"{\"a\": 1} x")])),
        "structured truth invalid: truth.json is not valid JSON (unexpected character 'x' after JSON value at byte 9)"
    );
    assert_eq!(
        reason(files(&[("truth.json", b"{\"a\": \"\xff\"}")])),
        "structured truth invalid: truth.json is not valid JSON (invalid UTF-8 at byte 7)"
    );
    assert_eq!(
        reason(files(&[("truth.json", b"")])),
        "structured truth invalid: truth.json is not valid JSON (unexpected end of JSON input at byte 0)"
    );
    for non_object in [&b"[1,2]"[..], b"null", b"\"x\"", b"3"] {
        assert_eq!(
            reason(files(&[("truth.json", non_object)])),
            "structured truth invalid: truth.json must hold a JSON object"
        );
    }
    assert_eq!(
        reason(files(&[(
            "truth.json",
            br#"{"prices":[{"vendor":"a","price":1e308}]}"#
        )])),
        "structured truth invalid: number at path 'prices.price' is not finite after quantization by 0.01"
    );
    let deep = "[".repeat(600);
    assert!(
        reason(files(&[("truth.json", deep.as_bytes())])).starts_with(
            "structured truth invalid: truth.json is not valid JSON (nesting deeper than 512 levels"
        )
    );
}

#[test]
fn structured_truth_for_atomic_only_nodes() {
    // No truth.json needed; an invalid one is not interpreted.
    for fs in [files(&[]), files(&[("truth.json", b"not json")])] {
        let st = structured_truth("brief", &fs, None, VERSION).unwrap();
        assert_eq!(st.fingerprints, Fingerprints::atomic(VERSION));
        assert!(st.warnings.is_empty() && st.truth.is_none());
    }
    let id = compile_node(&CanonicalizerSpec::identity("brief")).unwrap();
    let st = structured_truth("brief", &files(&[]), Some(&id), VERSION).unwrap();
    assert_eq!(st.fingerprints.atomic_token(), Some(VERSION));
}

// ---- the gate (I12) ------------------------------------------------------------------------

fn i12_set() -> CompiledPostconditions {
    let entries = vec![
        entry(
            "has-prices",
            Mode::Deterministic,
            "prices",
            Some(FlatPredicate {
                nodes: vec![leaf(Kind::LessThan, "prices.length", num(1.0))],
                root: 0,
            }),
        ),
        entry("own-page", Mode::RenderAttested, "prices", None),
    ];
    CompiledPostconditions::compile("price-watch", &facets(), entries).unwrap()
}

fn attest(pairs: &[(&str, bool)]) -> HashMap<String, bool> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[test]
fn gate_i12_scenarios() {
    let c = price_watch();
    let set = i12_set();
    let good = parse_str(TRUTH_48).unwrap();
    let yes = attest(&[("own-page", true)]);
    // All satisfied.
    assert_eq!(gate_reason(&set, Some(&good), Some(&c), &yes), None);
    assert!(check_gate(&set, Some(&good), Some(&c), &yes).is_empty());
    // Empty prices: tripped.
    let empty = parse_str(r#"{"prices":[]}"#).unwrap();
    assert_eq!(
        gate_reason(&set, Some(&empty), Some(&c), &yes),
        Some("postconditions failed: has-prices (tripped)".to_string())
    );
    // Attested false.
    assert_eq!(
        gate_reason(&set, Some(&good), Some(&c), &attest(&[("own-page", false)])),
        Some("postconditions failed: own-page (attested false)".to_string())
    );
    // Attestation missing (other ids do not count).
    assert_eq!(
        gate_reason(&set, Some(&good), Some(&c), &attest(&[("other", true)])),
        Some("postconditions failed: own-page (attestation missing)".to_string())
    );
    // Absent fact: prices facet dropped entirely.
    let absent = parse_str(r#"{"notes":"x"}"#).unwrap();
    let failures = check_gate(&set, Some(&absent), Some(&c), &yes);
    assert_eq!(
        failures,
        vec![GateFailure {
            id: "has-prices".into(),
            facet: "prices".into(),
            kind: FailureKind::Indeterminate,
            detail: "fact prices.length missing".into(),
        }]
    );
    assert_eq!(
        failure_reason(&failures).unwrap(),
        "postconditions failed: has-prices (indeterminate: fact prices.length missing)"
    );
    // Everything at once, collected and sorted by id.
    assert_eq!(
        gate_reason(&set, Some(&empty), Some(&c), &attest(&[])),
        Some(
            "postconditions failed: has-prices (tripped); own-page (attestation missing)"
                .to_string()
        )
    );
}

#[test]
fn gate_reason_lists_every_kind_sorted_by_id() {
    let c = price_watch();
    let entries = vec![
        entry("own-page", Mode::RenderAttested, "prices", None),
        entry(
            "has-prices",
            Mode::Deterministic,
            "prices",
            Some(FlatPredicate {
                nodes: vec![leaf(Kind::LessThan, "prices.length", num(1.0))],
                root: 0,
            }),
        ),
        entry(
            "fresh",
            Mode::Deterministic,
            "prices",
            Some(FlatPredicate {
                nodes: vec![leaf(Kind::Equals, "prices.0.checked", Value::Null)],
                root: 0,
            }),
        ),
        entry("zz-cites", Mode::RenderAttested, "@atomic", None),
    ];
    let set = CompiledPostconditions::compile("price-watch", &facets(), entries).unwrap();
    let truth = parse_str(r#"{"prices":[]}"#).unwrap();
    let failures = check_gate(
        &set,
        Some(&truth),
        Some(&c),
        &attest(&[("own-page", false)]),
    );
    assert_eq!(
        failures.iter().map(|f| f.kind.as_str()).collect::<Vec<_>>(),
        [
            "indeterminate",
            "tripped",
            "attested",
            "missing-attestation"
        ]
    );
    assert_eq!(
        failure_reason(&failures).unwrap(),
        "postconditions failed: fresh (indeterminate: fact prices.0.checked missing); has-prices (tripped); own-page (attested false); zz-cites (attestation missing)"
    );
}

#[test]
fn gate_without_truth_or_with_bad_truth_is_indeterminate() {
    let c = price_watch();
    let set = i12_set();
    let yes = attest(&[("own-page", true)]);
    assert_eq!(
        gate_reason(&set, None, Some(&c), &yes),
        Some(
            "postconditions failed: has-prices (indeterminate: structured truth unavailable)"
                .to_string()
        )
    );
    let good = parse_str(TRUTH_48).unwrap();
    assert_eq!(
        gate_reason(&set, Some(&good), None, &yes),
        Some(
            "postconditions failed: has-prices (indeterminate: structured truth unavailable)"
                .to_string()
        )
    );
    let bad = parse_str(r#"{"prices":[{"price":1e308}]}"#).unwrap();
    assert_eq!(
        gate_reason(&set, Some(&bad), Some(&c), &yes),
        Some("postconditions failed: has-prices (indeterminate: number at path 'prices.price' is not finite after quantization by 0.01)".to_string())
    );
    // Facts come from the canonical value only: a dropped member is never a fact.
    let entries = vec![entry(
        "src",
        Mode::Deterministic,
        "prices",
        Some(FlatPredicate {
            nodes: vec![leaf(Kind::Equals, "prices.0.source", Value::str("x"))],
            root: 0,
        }),
    )];
    let set = CompiledPostconditions::compile("price-watch", &facets(), entries).unwrap();
    assert_eq!(
        gate_reason(&set, Some(&good), Some(&c), &HashMap::new()),
        Some(
            "postconditions failed: src (indeterminate: fact prices.0.source missing)".to_string()
        )
    );
    // The empty set passes trivially, even without truth.
    assert_eq!(
        gate(
            &CompiledPostconditions::empty("n"),
            None,
            None,
            &HashMap::new()
        ),
        Ok(())
    );
}

#[test]
fn null_token_matches_address_of_null() {
    assert_eq!(address(b"null"), NULL_ADDRESS);
}
