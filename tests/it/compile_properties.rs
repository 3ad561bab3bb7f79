//! Properties of postcondition evaluation (RUNTIME.md §3.5, §5.4, §6) and of compile-session
//! answer decoding (§3.2–§3.5, HOST.md §5.3), issue 7 §5. The fuzz targets `postcondition`
//! and `compile_answers` explore the same ground without bounds.

use proptest::prelude::*;
use reactor::compile::lower::{lower_canonicalizer, lower_postconditions, postcondition_entries};
use reactor::compile::schema::{
    CanonicalizerOutput, PostconditionOutput, canonicalizer_schema, parse_answer,
    postcondition_schema,
};
use reactor::contract::parse_contract;
use reactor::core::postcondition::{
    Comparison, CompiledPostconditions, Facts, FlatNode, Kind, Outcome, Predicate, decode,
    entries_from_value, entries_to_value, evaluate, evaluate_explained, facts,
};
use reactor::format::json::Value;
use reactor::model::ModelResponse;
use serde_json::json;

const FACTS: &[&str] = &[
    "a",
    "b",
    "a.b",
    "items.length",
    "items.0",
    "items.1.k",
    "c",
    "É",
];

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        prop::sample::select(vec![0.0, -0.0, 1.0, 2.5, -3.0, 1e21]).prop_map(Value::Number),
        (-5i32..5).prop_map(|i| Value::Number(f64::from(i))),
        prop::sample::select(vec!["", "x", "1", "é"]).prop_map(Value::str),
    ]
}

fn predicate() -> impl Strategy<Value = Predicate> {
    let comparison = prop::sample::select(vec![
        Comparison::Equals,
        Comparison::NotEquals,
        Comparison::GreaterThanOrEqual,
        Comparison::LessThan,
    ]);
    let leaf =
        (comparison, prop::sample::select(FACTS), scalar()).prop_map(|(kind, fact, value)| {
            Predicate::Leaf {
                kind,
                fact: fact.to_string(),
                value,
            }
        });
    leaf.prop_recursive(4, 24, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..4).prop_map(Predicate::And),
            prop::collection::vec(inner.clone(), 1..4).prop_map(Predicate::Or),
            inner.prop_map(|p| Predicate::Not(Box::new(p))),
        ]
    })
}

/// Truth whose facts hit the predicates' names: scalars, a nested object and an array.
fn truth() -> impl Strategy<Value = serde_json::Value> {
    let s = prop_oneof![
        Just(json!(null)),
        any::<bool>().prop_map(|b| json!(b)),
        (-5i32..5).prop_map(|i| json!(i)),
        Just(json!(2.5)),
        prop::sample::select(vec!["", "x", "1", "é"]).prop_map(|s| json!(s)),
    ];
    (
        prop::option::of(s.clone()),
        prop::option::of(s.clone()),
        prop::option::of(s.clone()),
        prop::collection::vec(s.clone(), 0..3),
        prop::option::of(s),
    )
        .prop_map(|(a, ab, c, items, e)| {
            let mut o = serde_json::Map::new();
            if let Some(ab) = ab {
                o.insert("a".into(), json!({"b": ab}));
            } else if let Some(a) = a {
                o.insert("a".into(), a);
            }
            if let Some(c) = c {
                o.insert("c".into(), c);
            }
            o.insert("items".into(), json!(items));
            if let Some(e) = e {
                o.insert("É".into(), e);
            }
            serde_json::Value::Object(o)
        })
}

/// Flattens a tree into a pool (children before parents) and returns the root index.
fn flatten(p: &Predicate, pool: &mut Vec<FlatNode>) -> i64 {
    let node = match p {
        Predicate::Leaf { kind, fact, value } => FlatNode::leaf(*kind, fact.clone(), value.clone()),
        Predicate::And(c) | Predicate::Or(c) => FlatNode {
            kind: if matches!(p, Predicate::And(_)) {
                Kind::And
            } else {
                Kind::Or
            },
            fact: None,
            value: None,
            children: Some(c.iter().map(|x| flatten(x, pool)).collect()),
            child: None,
        },
        Predicate::Not(c) => FlatNode {
            kind: Kind::Not,
            fact: None,
            value: None,
            children: None,
            child: Some(flatten(c, pool)),
        },
    };
    pool.push(node);
    pool.len() as i64 - 1
}

/// The pool node as the session schema spells it: every member present, `null` where unused,
/// and junk in the members its kind ignores.
fn schema_node(n: &FlatNode) -> serde_json::Value {
    let value = n.value.as_ref().map(Value::to_serde).unwrap_or(json!(null));
    json!({
        "kind": n.kind.as_str(),
        "fact": n.fact.clone().unwrap_or_else(|| "ignored".into()),
        "value": if n.value.is_some() { value } else { json!(7) },
        "children": n.children.clone().unwrap_or_else(|| vec![99]),
        "child": n.child.unwrap_or(42),
    })
}

fn not(o: Outcome) -> Outcome {
    match o {
        Outcome::Tripped => Outcome::NotTripped,
        Outcome::NotTripped => Outcome::Tripped,
        Outcome::Indeterminate => Outcome::Indeterminate,
    }
}

fn neg(p: &Predicate) -> Predicate {
    Predicate::Not(Box::new(p.clone()))
}

fn laws(p: &Predicate, q: &Predicate, f: &Facts) -> Result<(), TestCaseError> {
    let (op, why) = evaluate_explained(p, f);
    prop_assert_eq!(why.is_some(), op == Outcome::Indeterminate, "{:?}", why);
    let oq = evaluate(q, f);
    prop_assert_eq!(evaluate(&neg(p), f), not(op));
    prop_assert_eq!(evaluate(&neg(&neg(p)), f), op);
    prop_assert_eq!(evaluate(&Predicate::And(vec![p.clone()]), f), op);
    prop_assert_eq!(evaluate(&Predicate::Or(vec![p.clone()]), f), op);
    let and = Predicate::And(vec![p.clone(), q.clone()]);
    let or = Predicate::Or(vec![p.clone(), q.clone()]);
    prop_assert_eq!(
        evaluate(&neg(&and), f),
        evaluate(&Predicate::Or(vec![neg(p), neg(q)]), f)
    );
    prop_assert_eq!(
        evaluate(&neg(&or), f),
        evaluate(&Predicate::And(vec![neg(p), neg(q)]), f)
    );
    prop_assert_eq!(
        evaluate(&and, f),
        evaluate(&Predicate::And(vec![q.clone(), p.clone()]), f)
    );
    let want_and = match (op, oq) {
        (Outcome::NotTripped, _) | (_, Outcome::NotTripped) => Outcome::NotTripped,
        (Outcome::Tripped, Outcome::Tripped) => Outcome::Tripped,
        _ => Outcome::Indeterminate,
    };
    prop_assert_eq!(evaluate(&and, f), want_and);
    Ok(())
}

fn watch() -> reactor::contract::Contract {
    let text = "---\nname: price-watch\n---\n### Maintains\nPrices.\n\
                #### prices\nThe set.\n#### stock\nLevels.\n";
    parse_contract(text.as_bytes(), "price-watch.prose.md").unwrap()
}

/// Postcondition entries to answer: a predicate, render-attested or not, and a facet.
fn entry_parts() -> impl Strategy<Value = Vec<(Predicate, bool, &'static str)>> {
    let facet = prop::sample::select(vec!["@atomic", "prices", "nope"]);
    prop::collection::vec((predicate(), any::<bool>(), facet), 0..4)
}

type FieldParts = Vec<(&'static str, bool, Option<f64>)>;
type FacetParts = Vec<(&'static str, Vec<&'static str>)>;

/// Canonicalizer answer parts: rules (valid, empty, malformed or reserved paths, quanta) and
/// facets (declared, undeclared) with their paths.
fn canon_parts() -> impl Strategy<Value = (FieldParts, FacetParts)> {
    let path = prop::sample::select(vec![
        "prices",
        "prices.vendor",
        "stock",
        "",
        "a..b",
        "@atomic",
    ]);
    let quantum = prop::option::of(prop::sample::select(vec![0.0, 0.5, -1.0]));
    let facet = prop::sample::select(vec!["stock", "prices", "other"]);
    let facet_path = prop::sample::select(vec!["prices", "stock", "prices.vendor"]);
    (
        prop::collection::vec((path, any::<bool>(), quantum), 0..4),
        prop::collection::vec((facet, prop::collection::vec(facet_path, 0..3)), 0..4),
    )
}

fn mode(attested: bool) -> &'static str {
    if attested {
        "render-attested"
    } else {
        "deterministic"
    }
}

/// The answer as a Chat Completions text reply, decoded the way a session does.
fn decoded(answer: &serde_json::Value, schema: &reactor::model::OutputSchema) -> serde_json::Value {
    let r = ModelResponse {
        text: Some(format!(
            "\n{}\n",
            serde_json::to_string_pretty(answer).unwrap()
        )),
        stop_reason: Some("stop".into()),
        ..Default::default()
    };
    r.structured_answer(schema).unwrap()
}

/// One hostile edit of an answer: a member removed, retyped or added, at any depth.
fn vandalize(v: &mut serde_json::Value, path: &[usize], how: u8) {
    let Some((&first, rest)) = path.split_first() else {
        return;
    };
    let child = match v {
        serde_json::Value::Object(m) if !m.is_empty() => {
            let key = m.keys().nth(first % m.len()).unwrap().clone();
            if rest.is_empty() || !(m[&key].is_object() || m[&key].is_array()) {
                match how % 4 {
                    0 => drop(m.shift_remove(&key)),
                    1 => drop(m.insert(key, json!({"x": [1.5]}))),
                    2 => drop(m.insert("unexpected".into(), json!(true))),
                    _ => drop(m.insert(key, json!("not-a-kind"))),
                }
                return;
            }
            m.get_mut(&key).unwrap()
        }
        serde_json::Value::Array(a) if !a.is_empty() => {
            let n = a.len();
            &mut a[first % n]
        }
        _ => return,
    };
    vandalize(child, rest, how);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// A predicate flattened into a pool decodes back to the same tree, wherever the pool
    /// puts it; evaluation over any truth's facts obeys the connectives: `not` swaps tripped
    /// and not-tripped, De Morgan's laws hold, `and`/`or` of one child is the child, `and` is
    /// commutative and three-valued, and an undecidable outcome always says why.
    #[test]
    fn predicates_decode_and_evaluate_lawfully(
        p in predicate(),
        q in predicate(),
        t in truth(),
        padding in 0usize..3,
    ) {
        let mut pool: Vec<FlatNode> = (0..padding)
            .map(|i| FlatNode::leaf(Comparison::Equals, format!("unused{i}"), Value::Null))
            .collect();
        let root = flatten(&p, &mut pool);
        prop_assert_eq!(decode(&pool, root).unwrap(), p.clone());
        let f = facts(Some(&Value::from_serde(&t)));
        laws(&p, &q, &f)?;
        if let Predicate::Leaf { kind: Comparison::Equals, fact, value } = &p {
            let want = match f.get(fact) {
                None => Outcome::Indeterminate,
                Some(actual) if actual == value => Outcome::Tripped,
                Some(_) => Outcome::NotTripped,
            };
            prop_assert_eq!(evaluate(&p, &f), want);
        }
    }

    /// A valid postcondition answer (pool nodes spelled with every member, junk in the ignored
    /// ones) decodes through the text transport to exactly the flattened entries; the
    /// persisted form reads back as the same entries; lowering succeeds exactly when the core's
    /// compile of the same entries does.
    #[test]
    fn postcondition_answers_decode_to_their_entries(
        preds in entry_parts(),
        duplicate_id in any::<bool>(),
    ) {
        let mut answer = Vec::new();
        let mut entries = Vec::new();
        for (i, (p, attested, facet)) in preds.iter().enumerate() {
            let mut pool = Vec::new();
            let root = flatten(p, &mut pool);
            let id = if duplicate_id && i > 0 { "p0".to_string() } else { format!("p{i}") };
            let predicate = (!attested).then(|| json!({
                "nodes": pool.iter().map(schema_node).collect::<Vec<_>>(),
                "root": root,
            }));
            let source = format!("Postcondition: {i}.");
            answer.push(json!({
                "id": id, "mode": mode(*attested), "facet": facet, "predicate": predicate,
                "source": source,
            }));
            let mut e =
                json!({"id": id, "mode": mode(*attested), "facet": facet, "source": source});
            if !attested {
                e["predicate"] = json!({"nodes": pool, "root": root});
            }
            entries.push(e);
        }
        let schema = postcondition_schema();
        let v = decoded(&json!({"postconditions": answer}), &schema);
        let out: PostconditionOutput = parse_answer(&schema, &v).unwrap();
        let got = postcondition_entries(&out);
        let want = entries_from_value(&Value::from_serde(&json!(entries))).unwrap();
        prop_assert_eq!(&got, &want);
        let mut sorted = want.clone();
        sorted.sort_by(|a, b| a.id.cmp(&b.id));
        prop_assert_eq!(entries_from_value(&entries_to_value(&got)).unwrap(), sorted);
        let facets: Vec<String> = ["@atomic", "prices", "stock"].map(String::from).into();
        let lowered = lower_postconditions("price-watch", &facets, &out);
        let direct = CompiledPostconditions::compile("price-watch", &facets, want);
        prop_assert_eq!(lowered.is_ok(), direct.is_ok());
        if let Ok(set) = lowered {
            let persisted = set.entries_value();
            let again = CompiledPostconditions::from_value("price-watch", &facets, &persisted);
            prop_assert_eq!(again, Ok(set));
        }
    }

    /// Hostile answers (a member removed, retyped or added at any depth of a valid answer, or
    /// arbitrary text): decoding never panics, and every rejection is a list of `$…` lines.
    #[test]
    fn hostile_answers_are_rejected_with_json_paths(
        p in predicate(),
        path in prop::collection::vec(any::<usize>(), 1..6),
        how in any::<u8>(),
        text in "\\PC{0,40}",
    ) {
        let mut pool = Vec::new();
        let root = flatten(&p, &mut pool);
        let mut answer = json!({"postconditions": [{
            "id": "p", "mode": "deterministic", "facet": "prices", "source": "s",
            "predicate": {"nodes": pool.iter().map(schema_node).collect::<Vec<_>>(), "root": root},
        }]});
        vandalize(&mut answer, &path, how);
        let schema = postcondition_schema();
        if let Err(lines) = parse_answer::<PostconditionOutput>(&schema, &answer) {
            prop_assert!(!lines.is_empty());
            prop_assert!(lines.iter().all(|l| l.starts_with('$')), "{:?}", lines);
        }
        let r = ModelResponse { text: Some(text), ..Default::default() };
        if let Ok(v) = r.structured_answer(&schema)
            && let Err(lines) = parse_answer::<PostconditionOutput>(&schema, &v)
        {
            prop_assert!(lines.iter().all(|l| l.starts_with('$')), "{:?}", lines);
        }
    }

    /// A canonicalizer answer decodes to its fields and facets; when it lowers for a contract
    /// declaring `prices` and `stock`, the facets come out in declared order and the spec
    /// holds exactly the answer's rules.
    #[test]
    fn canonicalizer_answers_decode_and_lower(
        (fields, facets) in canon_parts(),
        default_material in any::<bool>(),
    ) {
        let answer = json!({
            "fields": fields.iter().map(|(path, material, q)| json!({
                "path": path, "material": material, "text": null,
                "number": q.map(|q| json!({"quantum": q})), "collection": null,
            })).collect::<Vec<_>>(),
            "default_material": default_material,
            "facets": facets
                .iter()
                .map(|(f, paths)| json!({"facet": f, "paths": paths}))
                .collect::<Vec<_>>(),
        });
        let schema = canonicalizer_schema();
        let out: CanonicalizerOutput = parse_answer(&schema, &decoded(&answer, &schema)).unwrap();
        prop_assert_eq!(out.fields.len(), fields.len());
        prop_assert_eq!(out.default_material, default_material);
        let names: Vec<&str> = out.facets.iter().map(|f| f.facet.as_str()).collect();
        let want: Vec<&str> = facets.iter().map(|(f, _)| *f).collect();
        prop_assert_eq!(names, want);
        if let Ok(c) = lower_canonicalizer(&watch(), &out) {
            prop_assert_eq!(c.facets(), ["@atomic", "prices", "stock"]);
            prop_assert_eq!(&c.spec().fields, &out.fields);
            let mut sorted: Vec<&str> = facets.iter().map(|(f, _)| *f).collect();
            sorted.sort_unstable();
            prop_assert_eq!(sorted, ["prices", "stock"]);
        }
    }
}
