//! Property tests: canonicalization is insensitive to key order and set order.

use super::*;
use proptest::prelude::*;

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "b", "a.b", "c", "", "e\u{301}", "\u{e9}"])
        .prop_map(str::to_string)
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "a",
            "B",
            " ",
            "\t",
            "\u{a0}",
            "e\u{301}",
            "\u{e9}",
            "\u{3a3}",
            "\u{1f600}",
            "\u{e000}",
            "\u{85}",
        ]),
        0..6,
    )
    .prop_map(|parts| parts.concat())
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-1e6f64..1e6).prop_map(Value::Number),
        text().prop_map(Value::str),
    ];
    leaf.prop_recursive(4, 48, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..5).prop_map(|members| {
                let mut o = Object::new();
                for (k, v) in members {
                    o.insert(k, v);
                }
                Value::Object(o)
            }),
        ]
    })
}

fn spec() -> impl Strategy<Value = CanonicalizerSpec> {
    let path = prop::sample::select(vec!["a", "b", "a.b", "a.b.c", "c", "b.a"]);
    let rule = (
        path,
        any::<bool>(),
        prop::option::of((any::<bool>(), any::<bool>())),
        prop::option::of(prop::sample::select(vec![0.0, 0.5, 0.01, 3.0])),
        prop::option::of(any::<bool>()),
    )
        .prop_map(|(p, m, t, q, set)| FieldRule {
            path: p.to_string(),
            material: m,
            text: t.map(|(c, l)| TextRule {
                collapse_whitespace: c,
                case_insensitive: l,
            }),
            number: q.map(|q| NumberRule { quantum: Some(q) }),
            collection: set.map(|s| {
                if s {
                    Collection::Set
                } else {
                    Collection::Ordered
                }
            }),
        });
    (
        prop::collection::vec(rule, 0..5),
        any::<bool>(),
        prop::collection::vec(
            prop::sample::select(vec!["a", "b", "a.b", "c.d", "e\u{301}"]),
            1..3,
        ),
    )
        .prop_map(|(mut fields, default_material, paths)| {
            let mut seen = Vec::new();
            fields.retain(|f| {
                let fresh = !seen.contains(&f.path);
                seen.push(f.path.clone());
                fresh
            });
            CanonicalizerSpec {
                node: "n".into(),
                fields,
                default_material,
                facets: vec![FacetSpec {
                    facet: "f".into(),
                    paths: paths.into_iter().map(str::to_string).collect(),
                }],
            }
        })
}

proptest! {
    #[test]
    fn reduction_is_idempotent_and_total(spec in spec(), v in value()) {
        let c = compile_node(&spec).unwrap();
        let fp = c.apply(&v).unwrap();
        prop_assert_eq!(fp.0.len(), 2);
        for facet in ["@atomic", "f"] {
            let text = c.serialize(&v, facet).unwrap();
            // The serialization is canonical JSON of the reduced value.
            let reparsed = json::parse_str(&text).unwrap();
            prop_assert_eq!(&json::canonical_string(&reparsed).unwrap(), &text);
            match c.reduced(&v, facet).unwrap() {
                None => prop_assert_eq!(&text, "null"),
                Some(r) => prop_assert_eq!(&json::canonical_string(&r).unwrap(), &text),
            }
            prop_assert_eq!(fp.get(facet).unwrap(), address(text.as_bytes()));
        }
        // The identity spec is idempotent on its own output.
        let id = compile_node(&CanonicalizerSpec::identity("x")).unwrap();
        let once = id.serialize(&v, "@atomic").unwrap();
        let twice = id.serialize(&json::parse_str(&once).unwrap(), "@atomic").unwrap();
        prop_assert_eq!(once, twice);
    }

    #[test]
    fn worked_example_tokens_ignore_order_and_immaterial_fields(
        rows in prop::collection::vec((text(), -1e4f64..1e4, text()), 0..6),
        seed in any::<u64>(),
    ) {
        let c = compile_node(&spec_41()).unwrap();
        let build = |rows: &[(String, f64, String)], stamp: &str| {
            let prices = rows
                .iter()
                .map(|(vendor, price, src)| {
                    let mut o = Object::new();
                    o.insert("vendor", Value::str(vendor.clone()));
                    o.insert("price", Value::Number(*price));
                    o.insert("source", Value::str(format!("{src}{stamp}")));
                    o.insert("checked_at", Value::str(stamp));
                    Value::Object(o)
                })
                .collect();
            let mut o = Object::new();
            o.insert("checked_at", Value::str(stamp));
            o.insert("prices", Value::Array(prices));
            Value::Object(o)
        };
        let a = c.apply(&build(&rows, "t1")).unwrap();
        let mut shuffled = rows.clone();
        let n = shuffled.len();
        if n > 1 {
            shuffled.rotate_left((seed as usize) % n);
            shuffled.swap(0, (seed as usize / 7) % n);
        }
        let b = c.apply(&build(&shuffled, "t2")).unwrap();
        prop_assert_eq!(a, b);
    }
}
