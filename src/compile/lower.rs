//! Lowering of the canonicalizer answer (RUNTIME.md §3.4.3) and of the postcondition answer
//! (§3.5.3–§3.5.4). Both reuse the core checks (`check_declared_facets`, `compile_node`,
//! `CompiledPostconditions::compile`) so a session answer and a reloaded compile file are judged
//! by the same code; their problems are reported with a `$.` JSON path for the repair turn.

use super::schema::{CanonicalizerOutput, PostconditionOutput};
use crate::contract::Contract;
use crate::core::canonicalizer::{
    CanonError, CanonicalizerSpec, CompiledCanonicalizer, compile_node,
};
use crate::core::postcondition::{CompiledPostconditions, PostconditionEntry, PostconditionError};

/// Turns a core problem sentence into a repair line naming its JSON path: problems that start
/// with a member of the answer (`fields[0].path …`) get a `$.` prefix, others are attached to the
/// root (`$: …`).
fn at_path(problem: &str, roots: &[&str]) -> String {
    if roots.iter().any(|r| {
        problem
            .strip_prefix(r)
            .is_some_and(|rest| rest.starts_with(['[', '.', ' ', ':']))
    }) {
        format!("$.{problem}")
    } else {
        format!("$: {problem}")
    }
}

fn problems_of(e: CanonError) -> Vec<String> {
    match e {
        CanonError::Invalid { problems, .. } => problems,
        other => vec![other.to_string()],
    }
}

/// Lowers a canonicalizer answer to the node's canonicalization spec and compiles it
/// (RUNTIME.md §3.4.3): the spec is `{node, fields, default_material, facets}` with null
/// options omitted and the facets in the contract's declared order.
///
/// Checks (every problem reported, each naming its JSON path): the facet set equals the declared
/// set exactly ([`CanonicalizerSpec::check_declared_facets`]), and [`compile_node`] accepts the
/// spec (paths non-empty with no empty segment and unique, quantum `null`/`0`/finite `> 0`, no
/// `@atomic`, no duplicate facet, every facet with at least one path). Lints stay on the
/// returned canonicalizer.
pub fn lower_canonicalizer(
    contract: &Contract,
    out: &CanonicalizerOutput,
) -> Result<CompiledCanonicalizer, Vec<String>> {
    let mut spec = CanonicalizerSpec {
        node: contract.id.clone(),
        fields: out.fields.clone(),
        default_material: out.default_material,
        facets: out.facets.clone(),
    };
    let declared: Vec<String> = contract.facets.iter().map(|f| f.name.clone()).collect();
    let mut problems = Vec::new();
    if let Err(e) = spec.check_declared_facets(&declared) {
        problems.extend(problems_of(e));
    }
    if let Err(e) = compile_node(&spec) {
        for p in problems_of(e) {
            if !problems.contains(&p) {
                problems.push(p);
            }
        }
    }
    if !problems.is_empty() {
        return Err(problems
            .iter()
            .map(|p| at_path(p, &["fields", "facets", "default_material"]))
            .collect());
    }
    // The facet set equals the declared set: put it in the declared order.
    spec.facets.sort_by_key(|f| {
        declared
            .iter()
            .position(|d| *d == f.facet)
            .unwrap_or(usize::MAX)
    });
    compile_node(&spec).map_err(|e| {
        problems_of(e)
            .iter()
            .map(|p| at_path(p, &["fields", "facets"]))
            .collect()
    })
}

/// The flat entries of a postcondition answer. The members the schema calls ignored are
/// already dropped (a leaf keeps `fact` and `value`, `and`/`or` keep `children`, `not` keeps
/// `child`): the answer and a compile file read through the same derived
/// [`FlatNode`](crate::core::postcondition::FlatNode), so
/// [`crate::core::postcondition::entries_from_value`] reads back exactly these entries.
pub fn postcondition_entries(out: &PostconditionOutput) -> Vec<PostconditionEntry> {
    out.postconditions.clone()
}

/// Lowers a postcondition answer to the node's compiled postcondition set (RUNTIME.md §3.5.3):
/// ids unique and well-formed, `facet` known (`facets` is the node's facet list, `@atomic`
/// included or not), `predicate` present exactly for deterministic entries, no deterministic
/// entry on an atomic-only node, every predicate decodes. Every problem is reported with its
/// JSON path.
pub fn lower_postconditions(
    node: &str,
    facets: &[String],
    out: &PostconditionOutput,
) -> Result<CompiledPostconditions, Vec<String>> {
    CompiledPostconditions::compile(node, facets, postcondition_entries(out)).map_err(|e| match e {
        PostconditionError::Invalid { problems, .. } => problems
            .iter()
            .map(|p| at_path(p, &["postconditions"]))
            .collect(),
        other => vec![format!("$: {other}")],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::schema::{canonicalizer_schema, parse_answer, postcondition_schema};
    use crate::contract::parse_contract;
    use crate::core::postcondition::entries_from_value;
    use serde_json::json;

    fn price_watch() -> Contract {
        parse_contract(
            b"---\nname: price-watch\n---\n### Maintains\nPrices.\n#### prices\nThe set.\n#### stock\nLevels.\n",
            "price-watch.prose.md",
        )
        .unwrap()
    }

    fn canon(v: serde_json::Value) -> CanonicalizerOutput {
        parse_answer(&canonicalizer_schema(), &v).unwrap()
    }

    #[test]
    fn canonicalizer_answer_lowers_to_a_spec_in_declared_facet_order() {
        let out = canon(json!({
            "fields": [
                {"path": "prices", "material": true, "collection": "set", "text": null, "number": null},
                {"path": "prices.vendor", "material": true,
                 "text": {"collapse_whitespace": true, "case_insensitive": true}},
                {"path": "prices.price", "material": true, "number": {"quantum": 0.01}},
                {"path": "checked_at", "material": false}
            ],
            "default_material": true,
            "facets": [{"facet": "stock", "paths": ["stock"]},
                       {"facet": "prices", "paths": ["prices"]}]
        }));
        let c = lower_canonicalizer(&price_watch(), &out).unwrap();
        assert_eq!(c.facets(), ["@atomic", "prices", "stock"]);
        let text = crate::format::json::compact_string(&c.spec().to_value());
        assert_eq!(
            text,
            r#"{"node":"price-watch","fields":[{"path":"prices","material":true,"collection":"set"},{"path":"prices.vendor","material":true,"text":{"collapse_whitespace":true,"case_insensitive":true}},{"path":"prices.price","material":true,"number":{"quantum":0.01}},{"path":"checked_at","material":false}],"default_material":true,"facets":[{"facet":"prices","paths":["prices"]},{"facet":"stock","paths":["stock"]}]}"#
        );
    }

    #[test]
    fn facet_set_mismatch_and_bad_rules_are_rejected_with_paths() {
        let out = canon(json!({
            "fields": [
                {"path": "a..b", "material": true},
                {"path": "a..b", "material": true},
                {"path": "n", "material": true, "number": {"quantum": -1}}
            ],
            "default_material": true,
            "facets": [{"facet": "prices", "paths": []}, {"facet": "@atomic", "paths": ["x"]},
                       {"facet": "volume", "paths": ["v"]}]
        }));
        let errors = lower_canonicalizer(&price_watch(), &out).unwrap_err();
        assert!(
            errors.contains(
                &"$.facets[1].facet '@atomic' is reserved and must not be declared".to_string()
            ),
            "{errors:#?}"
        );
        assert!(errors.contains(
            &"$.facets[2].facet 'volume' is not a declared facet of the node".to_string()
        ));
        assert!(errors.contains(&"$: declared facet 'stock' has no entry in facets".to_string()));
        assert!(errors.contains(&"$.fields[0].path 'a..b' has an empty segment".to_string()));
        assert!(errors.contains(&"$.fields[1].path 'a..b' repeats fields[0].path".to_string()));
        assert!(
            errors
                .iter()
                .any(|e| e.starts_with("$.fields[2].number.quantum must be"))
        );
        assert!(
            errors
                .iter()
                .any(|e| e.starts_with("$.facets[0].paths is empty"))
        );
        // The reserved-facet problem is reported once although both checks find it.
        assert_eq!(
            errors
                .iter()
                .filter(|e| e.contains("'@atomic' is reserved"))
                .count(),
            1
        );
    }

    fn post(v: serde_json::Value) -> PostconditionOutput {
        parse_answer(&postcondition_schema(), &v).unwrap()
    }

    #[test]
    fn postcondition_answer_lowers_like_the_compile_file_reader() {
        let answer = json!({"postconditions": [
            {"id": "own-page", "mode": "render-attested", "facet": "prices", "predicate": null,
             "source": "Postcondition: every price was read from the vendor's own page."},
            {"id": "has-prices", "mode": "deterministic", "facet": "prices", "source": "Postcondition: at least one price.",
             "predicate": {"nodes": [
                {"kind": "or", "fact": "ignored", "value": 3, "children": [1, 2], "child": 9},
                {"kind": "less-than", "fact": "prices.length", "value": 1, "children": [7], "child": null},
                {"kind": "not", "fact": null, "value": null, "children": null, "child": 1}
             ], "root": 0}}
        ]});
        let out = post(answer.clone());
        let entries = postcondition_entries(&out);
        let back = entries_from_value(&crate::format::json::Value::from_serde(
            &answer["postconditions"],
        ))
        .unwrap();
        assert_eq!(entries, back);
        let set = lower_postconditions("price-watch", &["@atomic".into(), "prices".into()], &out)
            .unwrap();
        assert_eq!(set.deterministic.len(), 1);
        assert_eq!(set.attested[0].id, "own-page");
        // Persisted flat form: sorted by id, ignored members dropped, a leaf's value kept.
        assert_eq!(
            crate::format::json::compact_string(&set.entries_value()),
            r#"[{"id":"has-prices","mode":"deterministic","facet":"prices","source":"Postcondition: at least one price.","predicate":{"nodes":[{"kind":"or","children":[1,2]},{"kind":"less-than","fact":"prices.length","value":1},{"kind":"not","child":1}],"root":0}},{"id":"own-page","mode":"render-attested","facet":"prices","source":"Postcondition: every price was read from the vendor's own page."}]"#
        );
    }

    #[test]
    fn postcondition_lowering_errors_name_paths() {
        let out = post(json!({"postconditions": [
            {"id": "bad id", "mode": "deterministic", "facet": "nope", "predicate": null, "source": "s"},
            {"id": "p", "mode": "deterministic", "facet": "@atomic", "source": "s",
             "predicate": {"nodes": [{"kind": "and", "children": [0]}], "root": 0}},
            {"id": "p", "mode": "render-attested", "facet": "@atomic", "source": "s",
             "predicate": {"nodes": [], "root": 5}}
        ]}));
        let errors = lower_postconditions("n", &["@atomic".into()], &out).unwrap_err();
        assert!(
            errors.iter().all(|e| e.starts_with("$.postconditions[")),
            "{errors:#?}"
        );
        assert!(
            errors
                .iter()
                .any(|e| e.starts_with("$.postconditions[0].id 'bad id' does not match"))
        );
        assert!(
            errors
                .iter()
                .any(|e| e.contains("facet 'nope' is not a facet of node 'n'"))
        );
        assert!(
            errors
                .iter()
                .any(|e| e.contains("deterministic but has no predicate"))
        );
        assert!(errors.iter().any(|e| e.contains("atomic-only")));
        assert!(
            errors
                .iter()
                .any(|e| e.starts_with("$.postconditions[2].id 'p' repeats"))
        );
        assert!(
            errors
                .iter()
                .any(|e| e.contains("render-attested but carries a predicate"))
        );
        // The cyclic pool of entry 1 is a decode error on that entry.
        assert!(
            errors
                .iter()
                .any(|e| e.starts_with("$.postconditions[1] ('p'): ") && e.contains("cycle")),
            "{errors:#?}"
        );
    }

    #[test]
    fn at_path_only_prefixes_answer_members() {
        assert_eq!(
            at_path("fields[0].path x", &["fields"]),
            "$.fields[0].path x"
        );
        assert_eq!(at_path("fieldset x", &["fields"]), "$: fieldset x");
        assert_eq!(
            at_path("declared facet 'x'", &["facets"]),
            "$: declared facet 'x'"
        );
    }
}
