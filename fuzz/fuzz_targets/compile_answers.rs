//! Compile-session answers (RUNTIME.md §3.2–§3.5, HOST.md §5.3): the input as a model's answer
//! text (Chat Completions) and as the arguments of the `submit_*` tool call (Anthropic
//! Messages), decoded against each of the three session schemas and lowered for a small
//! contract set (a gateway and a faceted responsibility).
//!
//! Properties: what the tool-call transport decodes, the text transport decodes the same;
//! every validation error is one `$…` line and there are at most `MAX_ERROR_LINES` + 1; a
//! Forme answer that passes the checks wires to a topology of exactly the set's nodes whose
//! edges join known nodes and which the topology writer round-trips; a lowered canonicalizer
//! keeps the declared facet order and its spec round-trips through JSON; lowered
//! postconditions read back from their persisted form as the same set.
#![no_main]

use libfuzzer_sys::fuzz_target;
use reactor::compile::forme::{check_forme, wire};
use reactor::compile::lower::{lower_canonicalizer, lower_postconditions, postcondition_entries};
use reactor::compile::schema::{
    CanonicalizerOutput, FormeOutput, MAX_ERROR_LINES, PostconditionOutput, canonicalizer_schema,
    forme_schema, parse_answer, postcondition_schema,
};
use reactor::contract::{ContractSet, parse_contract};
use reactor::core::canonicalizer::CanonicalizerSpec;
use reactor::core::postcondition::{CompiledPostconditions, entries_from_value};
use reactor::format::json;
use reactor::format::topology::{unwrap_topology, write_envelope};
use reactor::model::{ModelResponse, OutputSchema, ToolArguments, ToolCall};

fn contracts() -> ContractSet {
    let text = "---\nname: price-watch\n---\n### Requires\n- items\n### Maintains\nPrices.\n\
                #### prices\nThe set.\n#### stock\nLevels.\n";
    let watch = parse_contract(text.as_bytes(), "price-watch.prose.md").unwrap();
    let inbox = parse_contract(
        b"---\nname: inbox\nkind: gateway\n---\n### Maintains\nItems.\n",
        "inbox.prose.md",
    )
    .unwrap();
    ContractSet::from_contracts(vec![watch, inbox]).unwrap()
}

/// The answer through both transports; asserts they agree (the text transport also trims
/// Unicode whitespace around the answer, so it may accept more).
fn answer(text: &str, schema: &OutputSchema) -> Option<serde_json::Value> {
    let chat = ModelResponse {
        text: Some(text.to_string()),
        stop_reason: Some("stop".into()),
        ..Default::default()
    };
    let messages = ModelResponse {
        tool_calls: vec![ToolCall {
            id: "t".into(),
            name: schema.submit_tool_name(),
            arguments: ToolArguments::from_text(text),
        }],
        stop_reason: Some("tool_use".into()),
        ..Default::default()
    };
    let (a, b) = (
        chat.structured_answer(schema),
        messages.structured_answer(schema),
    );
    match (&a, &b) {
        (Ok(x), Ok(y)) => assert_eq!(x, y),
        (Err(e), Ok(y)) => panic!("the tool call decodes {y} but the text fails: {e}"),
        _ => {}
    }
    a.ok()
}

fn check_errors(errors: &[String]) {
    assert!(!errors.is_empty());
    assert!(
        errors.len() <= MAX_ERROR_LINES + 1,
        "{} lines",
        errors.len()
    );
    for e in errors {
        assert!(e.starts_with('$') && !e.contains('\n'), "{e:?}");
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let set = contracts();

    let schema = forme_schema();
    if let Some(v) = answer(text, &schema) {
        match parse_answer::<FormeOutput>(&schema, &v) {
            Err(errors) => check_errors(&errors),
            Ok(out) => {
                if check_forme(&out, &set).is_ok()
                    && let Ok(wired) = wire(&out, &set)
                {
                    let t = &wired.topology;
                    let ids: Vec<&str> = t.nodes.iter().map(|n| n.node.as_str()).collect();
                    assert_eq!(ids, ["inbox", "price-watch"]);
                    for e in &t.edges {
                        assert!(t.has_node(&e.subscriber), "{e:?}");
                        assert!(t.has_node(&e.producer), "{e:?}");
                    }
                    let back = unwrap_topology(&json::parse_str(&write_envelope(t)).unwrap());
                    assert_eq!(
                        back.expect("the written topology reads").topology.edges,
                        t.edges
                    );
                }
            }
        }
    }

    let schema = canonicalizer_schema();
    if let Some(v) = answer(text, &schema) {
        match parse_answer::<CanonicalizerOutput>(&schema, &v) {
            Err(errors) => check_errors(&errors),
            Ok(out) => {
                let watch = set.get("price-watch").unwrap();
                if let Ok(c) = lower_canonicalizer(watch, &out) {
                    assert_eq!(c.facets(), ["@atomic", "prices", "stock"]);
                    let spec = c.spec();
                    assert_eq!(
                        &CanonicalizerSpec::from_value(&spec.to_value()).unwrap(),
                        spec
                    );
                }
            }
        }
    }

    let schema = postcondition_schema();
    if let Some(v) = answer(text, &schema) {
        match parse_answer::<PostconditionOutput>(&schema, &v) {
            Err(errors) => check_errors(&errors),
            Ok(out) => {
                let entries = postcondition_entries(&out);
                let persisted = reactor::core::postcondition::entries_to_value(&entries);
                assert_eq!(entries_from_value(&persisted).unwrap().len(), entries.len());
                let facets: Vec<String> = ["@atomic", "prices", "stock"].map(String::from).into();
                if let Ok(compiled) = lower_postconditions("price-watch", &facets, &out) {
                    let again = CompiledPostconditions::from_value(
                        "price-watch",
                        &facets,
                        &compiled.entries_value(),
                    )
                    .expect("persisted postconditions compile");
                    assert_eq!(again, compiled);
                }
            }
        }
    }
});
