//! End-to-end unit tests of the compile phase, with an in-memory scripted model client: the
//! price pair of RUNTIME.md §2.6 with the answers of HOST.md §11.3, failures and diagnostics.
//! The cache (exact bytes of the compile files, every freshness reason of HOST.md §6.4, the
//! keyless load and the compiled rules) is tested in `cache_files.rs`.

mod cache_files;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use serde_json::{Value as Sj, json};

use super::*;
use crate::contract::{Contract, parse_contract};
use crate::core::ir::{IngressMode, mount};
use crate::format::address::address;
use crate::format::receipt::WakeSource;
use crate::format::topology::Edge;
use crate::model::{ModelRequest, ModelResponse, Usage};

const PRICE_WATCH: &str = "---\nname: price-watch\nkind: responsibility\n---\n\n# Price watch\n\n### Goal\nKeep a current list price for every tracked vendor.\n\n### Maintains\nThe current list price of each tracked vendor. Each entry carries a stable\n`vendor` key. `checked_at` and the page `source` are immaterial.\nPostcondition: every entry has a positive price.\nPostcondition: every price was read from the vendor's own pricing page.\n\n#### prices\nThe set of vendor prices (unordered), material to the cent.\n\n### Continuity\n- self-driven: re-check once a day.\n";

const PRICE_BRIEF: &str = "---\nname: price-brief\n---\n\n### Requires\n- the current vendor prices\n\n### Maintains\nA short briefing on price movements. Material: the briefing text.\n\n### Continuity\n- input-driven: re-render when the vendor prices move.\n";

fn pair() -> ContractSet {
    pair_with(PRICE_WATCH)
}

fn pair_with(watch: &str) -> ContractSet {
    let c = |text: &str, path: &str| -> Contract { parse_contract(text.as_bytes(), path).unwrap() };
    ContractSet::from_contracts(vec![
        c(watch, "price-watch.prose.md"),
        c(PRICE_BRIEF, "price-brief.prose.md"),
    ])
    .unwrap()
}

/// Answers by purpose, each consumed once, in order per purpose.
struct Scripted {
    answers: Mutex<Vec<(String, ModelResponse)>>,
    calls: Mutex<Vec<ModelRequest>>,
}

impl Scripted {
    fn new(answers: Vec<(&str, Sj, u64)>) -> Scripted {
        Scripted {
            answers: Mutex::new(
                answers
                    .into_iter()
                    .map(|(p, a, tokens)| {
                        (
                            p.to_string(),
                            ModelResponse {
                                text: Some(a.to_string()),
                                usage: Usage {
                                    input: tokens,
                                    cached_input: tokens / 4,
                                    cache_write: 0,
                                    output: 10,
                                },
                                stop_reason: Some("stop".into()),
                                ..Default::default()
                            },
                        )
                    })
                    .collect(),
            ),
            calls: Mutex::new(Vec::new()),
        }
    }

    fn purposes(&self) -> Vec<String> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.purpose.clone())
            .collect()
    }

    fn left(&self) -> usize {
        self.answers.lock().unwrap().len()
    }
}

impl ModelClient for Scripted {
    fn complete(&self, req: &ModelRequest) -> Result<ModelResponse, ModelError> {
        self.calls.lock().unwrap().push(req.clone());
        let mut answers = self.answers.lock().unwrap();
        match answers.iter().position(|(p, _)| *p == req.purpose) {
            Some(i) => Ok(answers.remove(i).1),
            None => Err(ModelError::ReplayExhausted),
        }
    }
}

fn forme_answer() -> Sj {
    json!({"nodes": [
        {"id": "price-brief", "kind": "responsibility", "wake_source": "input",
         "requires": [{"facet": "vendor prices", "fan_in": false}], "maintains": []},
        {"id": "price-watch", "kind": "responsibility", "wake_source": "self",
         "requires": [], "maintains": ["prices"]}],
     "matches": [{"subscriber": "price-brief", "requirement": "vendor prices",
                  "producer": "price-watch", "facet": "prices"}]})
}

/// The canonicalizer answer for `price-watch`: the spec of RUNTIME.md §4.1 without `node`.
fn canonicalizer_answer() -> Sj {
    let mut answer = crate::core::canonicalizer::tests::spec_41()
        .to_value()
        .to_serde();
    answer.as_object_mut().unwrap().remove("node");
    answer
}

fn watch_postconditions() -> Sj {
    json!({"postconditions": [
        {"id": "own-page", "mode": "render-attested", "facet": "prices", "predicate": null,
         "source": "Postcondition: every price was read from the vendor's own pricing page."},
        {"id": "has-prices", "mode": "deterministic", "facet": "prices",
         "predicate": {"nodes": [{"kind": "less-than", "fact": "prices.length", "value": 1,
                                  "children": null, "child": null}], "root": 0},
         "source": "Postcondition: every entry has a positive price."}
    ]})
}

fn script() -> Scripted {
    Scripted::new(vec![
        ("compile:forme", forme_answer(), 1000),
        (
            "compile:postcondition:price-brief",
            json!({"postconditions": []}),
            400,
        ),
        (
            "compile:canonicalizer:price-watch",
            canonicalizer_answer(),
            800,
        ),
        (
            "compile:postcondition:price-watch",
            watch_postconditions(),
            600,
        ),
    ])
}

fn settings() -> CompileSettings {
    CompileSettings {
        system_prompt: "SYSTEM PROMPT".into(),
        model: "compile-model".into(),
        provider: "openrouter".into(),
        temperature: None,
        reasoning_effort: None,
        sdk_version: sdk_version(None),
        base_url: None,
    }
}

fn compiled() -> Compiled {
    let client = script();
    let c = compile_project(&pair(), &settings(), &client).unwrap();
    assert_eq!(client.left(), 0);
    c
}

fn ts() -> jiff::Timestamp {
    "2026-06-02T18:00:00.123456Z".parse().unwrap()
}

#[test]
fn compiles_the_price_pair_of_runtime_2_6() {
    let client = script();
    let mut seen = Vec::new();
    let c = compile_project_observed(&pair(), &settings(), &client, &mut |s| {
        seen.push(s.step.label())
    })
    .unwrap();
    assert_eq!(
        client.purposes(),
        [
            "compile:forme",
            "compile:postcondition:price-brief",
            "compile:canonicalizer:price-watch",
            "compile:postcondition:price-watch"
        ]
    );
    assert_eq!(
        seen,
        [
            "forme",
            "postcondition:price-brief",
            "canonicalizer:price-watch",
            "postcondition:price-watch"
        ]
    );
    // Every session got the same evidence and system blocks.
    let calls = client.calls.lock().unwrap().clone();
    for r in &calls {
        assert_eq!(r.system[0], "SYSTEM PROMPT");
        assert_eq!(r.messages[0], calls[0].messages[0]);
        assert_eq!(r.model, "compile-model");
    }
    assert_eq!(
        calls[2].output_schema.as_ref().unwrap().name,
        "canonicalizer_output"
    );
    assert_eq!(c.key.contract_set_fingerprint, pair().fingerprint());
    assert_eq!(
        c.key.sdk_version,
        format!("reactor-rs/{}", crate::version::VERSION)
    );
    let t = &c.ir.topology;
    assert_eq!(t.nodes.len(), 2);
    assert_eq!(
        t.edges,
        vec![Edge::new("price-watch", "price-brief", "prices")]
    );
    assert!(t.entry_points.is_empty());
    assert!(t.acyclic);
    assert!(c.diagnostics.is_empty());
    assert_eq!(c.lints, vec![]);
    let brief = c.ir.node("price-brief").unwrap();
    assert!(!brief.canonicalizer.is_faceted());
    assert_eq!(brief.spec(), &CanonicalizerSpec::identity("price-brief"));
    assert_eq!(brief.wake_source, WakeSource::Input);
    let watch = c.ir.node("price-watch").unwrap();
    assert_eq!(watch.attested_ids(), ["own-page"]);
    assert_eq!(watch.facets(), ["prices"]);
    assert_eq!(
        watch.contract_fingerprint,
        pair().get("price-watch").unwrap().fingerprint()
    );
    // Costs: each answer is (input - input/4) + 10 fresh and input/4 reused.
    let fresh: Vec<u64> = c.steps.iter().map(|s| s.tokens.fresh).collect();
    assert_eq!(fresh, [760, 310, 610, 460]);
    assert_eq!(
        c.cost,
        CompileCost {
            provider: "openrouter".into(),
            model: "compile-model".into(),
            tokens: TokenCost {
                fresh: 2140,
                reused: 700
            }
        }
    );
}

#[test]
fn failures_carry_the_hint_and_the_tokens_spent() {
    // The Forme answer wires a cycle: a compile error naming it.
    let cyclic_watch = PRICE_WATCH.replace(
        "### Maintains",
        "### Requires\n- the latest brief\n\n### Maintains",
    );
    let set = pair_with(&cyclic_watch);
    let mut forme = forme_answer();
    forme["nodes"][1]["requires"] = json!([{"facet": "latest brief", "fan_in": false}]);
    forme["matches"].as_array_mut().unwrap().push(
        json!({"subscriber": "price-watch", "requirement": "latest brief",
                     "producer": "price-brief", "facet": "@atomic"}),
    );
    let client = Scripted::new(vec![("compile:forme", forme, 100)]);
    let err = compile_project(&set, &settings(), &client).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the topology has a cycle: price-brief → price-watch → price-brief"
    );
    assert_eq!(
        err.spent(),
        TokenCost {
            fresh: 85,
            reused: 25
        }
    );
    assert_eq!(err.step(), None);

    // Three invalid canonicalizer answers exhaust the repairs.
    let bad = json!({"fields": [], "default_material": true, "facets": []});
    let client = Scripted::new(vec![
        ("compile:forme", forme_answer(), 100),
        (
            "compile:postcondition:price-brief",
            json!({"postconditions": []}),
            100,
        ),
        ("compile:canonicalizer:price-watch", bad.clone(), 100),
        ("compile:canonicalizer:price-watch", bad.clone(), 100),
        ("compile:canonicalizer:price-watch", bad, 100),
    ]);
    let err = compile_project(&pair(), &settings(), &client).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the canonicalizer:price-watch answer is still invalid after 2 repair turns: $: declared facet 'prices' has no entry in facets"
    );
    assert_eq!(err.step(), Some(&Step::Canonicalizer("price-watch".into())));
    assert_eq!(err.spent().fresh, 5 * 85);
    assert_eq!(client.left(), 0);

    // A provider failure in the middle: the hint is the model error's.
    let client = Scripted::new(vec![("compile:forme", forme_answer(), 100)]);
    let err = compile_project(&pair(), &settings(), &client).unwrap_err();
    assert_eq!(err.to_string(), "no remaining records");
    assert_eq!(err.step(), Some(&Step::Postcondition("price-brief".into())));
    assert_eq!(err.spent().fresh, 85);
}

#[test]
fn unsatisfied_needs_are_diagnostics_not_failures() {
    let mut forme = forme_answer();
    forme["matches"] = json!([]);
    let client = Scripted::new(vec![
        ("compile:forme", forme, 100),
        (
            "compile:postcondition:price-brief",
            json!({"postconditions": []}),
            100,
        ),
        (
            "compile:canonicalizer:price-watch",
            canonicalizer_answer(),
            100,
        ),
        (
            "compile:postcondition:price-watch",
            json!({"postconditions": []}),
            100,
        ),
    ]);
    let c = compile_project(&pair(), &settings(), &client).unwrap();
    assert!(c.ir.topology.edges.is_empty());
    assert_eq!(
        c.diagnostics
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>(),
        ["unsatisfied (price-brief: \"vendor prices\")"]
    );
    // Two Postcondition: sentences, no entry: a lint, not an error.
    assert_eq!(
        c.lints,
        vec![NodeLint {
            node: "price-watch".into(),
            code: "postcondition-count".into(),
            message: "0 postcondition entries compiled for 2 Postcondition: sentences in Maintains"
                .into(),
        }]
    );
}

#[test]
fn sdk_version_and_timestamps() {
    assert_eq!(
        sdk_version(None),
        format!("reactor-rs/{}", crate::version::VERSION)
    );
    // The suffix is the first 16 hex digits of SHA-256 over the prompt text.
    let v = sdk_version(Some("my prompt"));
    let full = crate::format::address::address(b"my prompt");
    assert_eq!(
        v,
        format!(
            "reactor-rs/{}+skill.{}",
            crate::version::VERSION,
            &full[7..23]
        )
    );
    assert_ne!(v, sdk_version(Some("my prompt ")));
    assert_eq!(
        cache::iso_millis("2026-11-22T09:10:00.999999Z".parse().unwrap()),
        "2026-11-22T09:10:00.999Z"
    );
    assert_eq!(
        cache::iso_millis(jiff::Timestamp::UNIX_EPOCH),
        "1970-01-01T00:00:00.000Z"
    );
}
