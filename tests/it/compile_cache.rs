//! The compile phase over real HTTP against the loopback fake provider (HOST.md §11.2), and the
//! compile cache on disk (HOST.md §6, FORMATS.md §15): request shapes of both protocols, a repair
//! turn, the written cache, freshness, the keyless load and mount with no client at all, and
//! staleness after a contract edit, a model change, an SDK change, a deleted or corrupted
//! artifact; a reference-written `compile/` reads as absent without an error.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::fake_provider::{self as fake, FakeProvider, FakeUsage};
use crate::support::smallest::{
    brief_canonicalizer, forme_answer, monitor_canonicalizer, monitor_postconditions,
};
use crate::support::{compat_dir, shared_dir};
use reactor::compile::prompts::PREAMBLE;
use reactor::compile::schema::{canonicalizer_schema, forme_schema, postcondition_schema};
use reactor::compile::{
    CacheKey, CompileSettings, Compiled, Freshness, StaleReason, compile_project, freshness,
    load_ir, sdk_version,
};
use reactor::contract::ContractSet;
use reactor::core::ir::{IngressMode, mount};
use reactor::format::receipt::WakeSource;
use reactor::format::topology::Edge;
use reactor::model::{
    ApiKey, HttpSettings, ModelClient, ProviderClient, ProviderConfig, ProviderSettings, TokenCost,
};
use serde_json::{Value, json};

const KEY: &str = "sk-test-0123456789abcdef";

/// `../shared/contracts/smallest-project`, or `None` (with a loud note) when the shared tree
/// is missing and not required; with `REACTOR_REQUIRE_COMPAT=1` a missing tree fails.
fn smallest_project() -> Option<PathBuf> {
    let d = shared_dir().join("contracts/smallest-project");
    if d.is_dir() {
        return Some(d);
    }
    if std::env::var("REACTOR_REQUIRE_COMPAT").as_deref() == Ok("1") {
        panic!("{} is missing (REACTOR_REQUIRE_COMPAT=1)", d.display());
    }
    eprintln!(
        "SKIPPED: {} is missing; set up ../shared beside the repository to run this test",
        d.display()
    );
    None
}

fn client(provider: &str, fake: &FakeProvider) -> ProviderClient {
    let config = ProviderConfig::resolve(&ProviderSettings {
        provider: Some(provider.into()),
        base_url: Some(fake.base_url()),
        api_key_env: Some("FAKE_KEY".into()),
        render_model: Some("render-model".into()),
        compile_model: Some("compile-model".into()),
        ..ProviderSettings::default()
    })
    .expect("valid config");
    ProviderClient::new(
        config,
        ApiKey::new(KEY),
        HttpSettings {
            backoff_base: Duration::ZERO,
            connect_timeout: Duration::from_secs(2),
            attempt_timeout: Duration::from_secs(20),
            ..HttpSettings::default()
        },
    )
}

fn settings(provider: &str) -> CompileSettings {
    CompileSettings {
        system_prompt: "SYSTEM PROMPT".into(),
        model: "compile-model".into(),
        provider: provider.into(),
        temperature: None,
        reasoning_effort: None,
        sdk_version: sdk_version(None),
        base_url: None,
    }
}

fn usage(input: u64, cached: u64, output: u64) -> FakeUsage {
    FakeUsage {
        input,
        output,
        cached,
        cache_write: 0,
    }
}

/// Compiles the smallest project through Chat Completions, with one repair turn on Forme.
fn compile_chat(set: &ContractSet) -> (Compiled, Vec<fake::RecordedRequest>) {
    // The first Forme answer forgets weekly-brief; the repair turn fixes it.
    let mut incomplete = forme_answer();
    incomplete["nodes"].as_array_mut().unwrap().pop();
    incomplete["matches"] = json!([]);
    let fake = FakeProvider::with_entries([
        fake::chat_json(&incomplete)
            .when_purpose("compile:forme")
            .with_usage(usage(2000, 0, 300)),
        fake::chat_json(&forme_answer())
            .when_purpose("compile:forme")
            .when_body_contains("has no entry")
            .with_usage(usage(2400, 2000, 320)),
        fake::chat_json(&monitor_canonicalizer())
            .when_purpose("compile:canonicalizer:competitor-monitor")
            .with_usage(usage(1500, 1000, 200)),
        fake::chat_json(&monitor_postconditions())
            .when_purpose("compile:postcondition:competitor-monitor")
            .with_usage(usage(1400, 1000, 90)),
        fake::chat_json(&brief_canonicalizer())
            .when_purpose("compile:canonicalizer:weekly-brief")
            .with_usage(usage(1300, 1000, 80)),
        fake::chat_json(&json!({"postconditions": []}))
            .when_purpose("compile:postcondition:weekly-brief")
            .with_usage(usage(1200, 1000, 20)),
    ]);
    let c = client("openrouter", &fake);
    let compiled = compile_project(set, &settings("openrouter"), &c).expect("compile succeeds");
    let requests = fake.requests();
    fake.finish();
    (compiled, requests)
}

#[test]
fn compiles_over_chat_completions_and_the_cache_round_trips() {
    let Some(dir) = smallest_project() else {
        return;
    };
    let set = ContractSet::load(&dir).expect("contracts load");
    let (compiled, requests) = compile_chat(&set);

    // Request shapes (HOST.md §5.2–§5.3).
    let purposes: Vec<&str> = requests
        .iter()
        .map(|r| r.header("x-reactor-purpose").unwrap_or(""))
        .collect();
    assert_eq!(
        purposes,
        [
            "compile:forme",
            "compile:forme",
            "compile:canonicalizer:competitor-monitor",
            "compile:postcondition:competitor-monitor",
            "compile:canonicalizer:weekly-brief",
            "compile:postcondition:weekly-brief"
        ]
    );
    let evidence = requests[0].json()["messages"][1].clone();
    assert!(evidence["content"].as_str().unwrap().starts_with(
        "The project declares 2 Prose contracts (2 of kind responsibility or gateway)"
    ));
    let schemas = [
        forme_schema(),
        forme_schema(),
        canonicalizer_schema(),
        postcondition_schema(),
        canonicalizer_schema(),
        postcondition_schema(),
    ];
    for (r, schema) in requests.iter().zip(&schemas) {
        assert_eq!(r.path, "/v1/chat/completions");
        assert!(r.matched.is_some());
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
        let body = r.json();
        assert_eq!(body["model"], "compile-model");
        assert_eq!(body["stream"], false);
        assert!(body.get("temperature").is_none());
        assert!(body.get("reasoning_effort").is_none());
        assert_eq!(
            body["response_format"],
            json!({"type": "json_schema", "json_schema": {
                "name": schema.name, "strict": true, "schema": schema.schema}})
        );
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(
            messages[0],
            json!({"role": "system",
                   "content": format!("SYSTEM PROMPT\n\n---\n\n{}", PREAMBLE.trim_end())})
        );
        assert_eq!(
            messages[1], evidence,
            "the evidence is identical for every session"
        );
        assert_eq!(messages[2]["role"], "user");
    }
    let task = |i: usize| {
        requests[i].json()["messages"][2]["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(task(0).contains("`competitor-monitor`: kind `responsibility`, facets `funding`"));
    assert!(task(2).starts_with("# Task: freeze the materiality of node `competitor-monitor`"));
    assert!(
        task(3).contains("1. Postcondition: every funding event cites a corroborating source.")
    );
    assert!(task(5).contains("(none: answer `{\"postconditions\": []}`)"));
    // The repair turn: the answer as returned, then the error list naming the JSON path.
    let repair = requests[1].json()["messages"].as_array().unwrap().clone();
    assert_eq!(repair.len(), 5);
    assert_eq!(repair[3]["role"], "assistant");
    assert_eq!(
        serde_json::from_str::<Value>(repair[3]["content"].as_str().unwrap()).unwrap()["nodes"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(repair[4]["role"], "user");
    let errors = repair[4]["content"].as_str().unwrap();
    assert!(
        errors.contains("- $.nodes: the responsibility contract 'weekly-brief' has no entry\n"),
        "{errors}"
    );

    // The compiled IR and its costs.
    let t = &compiled.ir.topology;
    assert_eq!(t.nodes.len(), 2);
    assert_eq!(
        t.edges,
        vec![Edge::new("competitor-monitor", "weekly-brief", "funding")]
    );
    assert!(t.entry_points.is_empty() && t.acyclic);
    assert!(compiled.diagnostics.is_empty());
    let labels: Vec<String> = compiled.steps.iter().map(|s| s.step.label()).collect();
    assert_eq!(
        labels,
        [
            "forme",
            "canonicalizer:competitor-monitor",
            "postcondition:competitor-monitor",
            "canonicalizer:weekly-brief",
            "postcondition:weekly-brief"
        ]
    );
    assert_eq!(compiled.steps[0].answers, 2);
    assert_eq!(
        compiled.steps[0].tokens,
        TokenCost {
            fresh: 2300 + 720,
            reused: 2000
        }
    );
    assert_eq!(
        compiled.cost.tokens,
        TokenCost {
            fresh: 3020 + 700 + 490 + 380 + 220,
            reused: 6000
        }
    );
    assert_eq!(compiled.cost.provider, "openrouter");

    // The cache: written, fresh, loaded keylessly and mounted with no client at all.
    let state = tempfile::tempdir().unwrap();
    let at: jiff::Timestamp = "2026-06-02T18:00:00Z".parse().unwrap();
    let manifest = compiled
        .write_cache(state.path(), at)
        .expect("cache written");
    assert_eq!((manifest.nodes, manifest.edges), (2, 1));
    let key = settings("openrouter").cache_key(&set);
    assert_eq!(compiled.key, key);
    match freshness(state.path(), &key) {
        Freshness::Fresh(loaded) => {
            assert_eq!(loaded.manifest.compiled_at, "2026-06-02T18:00:00.000Z");
            assert_eq!(loaded.manifest.cost, compiled.cost);
        }
        other => panic!("not fresh: {:?}", other.reason()),
    }
    assert_keyless_load(state.path());

    // Staleness.
    assert_stale_after_changes(&dir, state.path(), &compiled, &key);
}

/// Loads the cache as a fresh process would: no key, no client, only the state directory.
fn assert_keyless_load(state: &Path) {
    let loaded = load_ir(state).expect("keyless load");
    let ir = loaded.ir.to_ir();
    let mounted = mount(&ir, IngressMode::Host).expect("mounts");
    assert_eq!(mounted.nodes, ["competitor-monitor", "weekly-brief"]);
    assert_eq!(mounted.heights["weekly-brief"], 1);
    let monitor = loaded.ir.node("competitor-monitor").unwrap();
    assert_eq!(monitor.wake_source, WakeSource::SelfWake);
    assert_eq!(monitor.attested_ids(), ["cites-source"]);
    assert_eq!(
        monitor.facet_layout(),
        [("funding", &["funding".to_string()][..])]
    );
    assert_eq!(
        monitor
            .contract_view
            .iter()
            .map(|(h, _)| h.as_str())
            .collect::<Vec<_>>(),
        ["Maintains", "Continuity"]
    );
    // The re-lowered canonicalizer fingerprints structured truth: immaterial fields and event
    // order move nothing, a material amount does.
    let rules = &ir.nodes["competitor-monitor"].rules;
    let truth = |v: Value| vec![("truth.json".to_string(), v.to_string().into_bytes())];
    let a = truth(json!({"fetched_at": "t1", "funding": [
        {"round": "Series  A", "amount": 5, "date": "2026-01-02", "request_id": "r1"},
        {"round": "seed", "amount": 1, "date": "2025-03-01"}]}));
    let b = truth(json!({"fetched_at": "t2", "funding": [
        {"round": "seed", "amount": 1, "date": "2025-03-01", "request_id": "r9"},
        {"round": "series a", "amount": 5, "date": "2026-01-02"}]}));
    let c = truth(json!({"funding": [
        {"round": "seed", "amount": 2, "date": "2025-03-01"},
        {"round": "series a", "amount": 5, "date": "2026-01-02"}]}));
    let fa = rules.fingerprint(&a, "sha256:a").unwrap().0;
    assert_eq!(fa, rules.fingerprint(&b, "sha256:b").unwrap().0);
    assert_ne!(
        fa.get("funding"),
        rules.fingerprint(&c, "sha256:c").unwrap().0.get("funding")
    );
    let mut attestations = std::collections::HashMap::new();
    assert_eq!(
        rules.gate(&a, &attestations).unwrap_err().to_string(),
        "postconditions failed: cites-source (attestation missing)"
    );
    attestations.insert("cites-source".to_string(), true);
    assert_eq!(rules.gate(&a, &attestations), Ok(()));
}

fn reason(state: &Path, key: &CacheKey) -> String {
    freshness(state, key)
        .reason()
        .map(|r| r.to_string())
        .unwrap_or_else(|| "fresh".into())
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

fn assert_stale_after_changes(contracts: &Path, state: &Path, compiled: &Compiled, key: &CacheKey) {
    // A contract edit (in a section renders never see) changes the contract-set fingerprint.
    let edited = tempfile::tempdir().unwrap();
    copy_dir(contracts, edited.path());
    let file = edited.path().join("weekly-brief.prose.md");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        text.replace("### Goal\n", "### Goal\n\nEvery Monday. "),
    )
    .unwrap();
    let edited_set = ContractSet::load(edited.path()).unwrap();
    let edited_key = settings("openrouter").cache_key(&edited_set);
    assert_ne!(edited_key, *key);
    assert_eq!(reason(state, &edited_key), "contract set changed");

    // A compile model change; the provider label is not part of the key.
    let mut other_model = key.clone();
    other_model.model = "another-model".into();
    assert_eq!(reason(state, &other_model), "compile model changed");
    assert_eq!(
        settings("anthropic").cache_key(&ContractSet::load(contracts).unwrap()),
        *key
    );

    // An SDK change: a replaced system prompt (`REACTOR_SKILL_PATH`) or another version.
    let mut skill = key.clone();
    skill.sdk_version = sdk_version(Some("a replacement prompt"));
    assert!(
        skill
            .sdk_version
            .starts_with(&format!("{}+skill.", key.sdk_version))
    );
    assert_eq!(reason(state, &skill), "reactor version changed");
    let mut older = key.clone();
    older.sdk_version = "reactor-rs/0.1.0".into();
    assert_eq!(reason(state, &older), "reactor version changed");
    assert_eq!(reason(state, key), "fresh");

    let at: jiff::Timestamp = "2026-06-02T18:00:00Z".parse().unwrap();
    let monitor = format!(
        "compile/nodes/{}.json",
        reactor::format::address::hex(b"competitor-monitor")
    );
    // A deleted artifact.
    let deleted = tempfile::tempdir().unwrap();
    compiled.write_cache(deleted.path(), at).unwrap();
    std::fs::remove_file(deleted.path().join(&monitor)).unwrap();
    assert_eq!(
        reason(deleted.path(), key),
        format!("cache incomplete: {monitor} missing")
    );
    assert_eq!(
        load_ir(deleted.path()).unwrap_err(),
        StaleReason::Incomplete {
            file: monitor.clone()
        }
    );
    // A corrupted artifact (one byte).
    let corrupted = tempfile::tempdir().unwrap();
    compiled.write_cache(corrupted.path(), at).unwrap();
    let path = corrupted.path().join(&monitor);
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 2;
    bytes[last] ^= 0x01;
    std::fs::write(&path, bytes).unwrap();
    assert_eq!(
        reason(corrupted.path(), key),
        format!("cache corrupt: {monitor} does not match the manifest")
    );
    // A corrupted manifest.
    std::fs::write(corrupted.path().join("compile/manifest.json"), b"\xff\xfe").unwrap();
    assert!(reason(corrupted.path(), key).starts_with("manifest unreadable: "));
    // Recompiling over a stale cache makes it fresh again.
    compiled.write_cache(corrupted.path(), at).unwrap();
    assert_eq!(reason(corrupted.path(), key), "fresh");
}

#[test]
fn compiles_over_anthropic_messages_with_forced_submit_tools() {
    let Some(dir) = smallest_project() else {
        return;
    };
    let set = ContractSet::load(&dir).expect("contracts load");
    let fake = FakeProvider::with_entries([
        fake::messages_submit("forme_output", forme_answer()).when_purpose("compile:forme"),
        fake::messages_submit("canonicalizer_output", monitor_canonicalizer())
            .when_purpose("compile:canonicalizer:competitor-monitor"),
        // An invalid postcondition answer, repaired through a tool_result.
        fake::messages_submit(
            "postcondition_output",
            json!({"postconditions": [{"id": "cites source", "mode": "render-attested",
                   "facet": "funding", "predicate": null, "source": "s"}]}),
        )
        .when_purpose("compile:postcondition:competitor-monitor"),
        fake::messages_submit("postcondition_output", monitor_postconditions())
            .when_purpose("compile:postcondition:competitor-monitor")
            .when_body_contains("\"is_error\":true"),
        fake::messages_submit("canonicalizer_output", brief_canonicalizer())
            .when_purpose("compile:canonicalizer:weekly-brief"),
        fake::messages_submit("postcondition_output", json!({"postconditions": []}))
            .when_purpose("compile:postcondition:weekly-brief"),
    ]);
    let c = client("anthropic", &fake);
    let compiled = compile_project(&set, &settings("anthropic"), &c as &dyn ModelClient)
        .expect("compile succeeds");
    let requests = fake.requests();
    fake.finish();
    assert_eq!(requests.len(), 6);
    let names = [
        "forme_output",
        "canonicalizer_output",
        "postcondition_output",
        "postcondition_output",
        "canonicalizer_output",
        "postcondition_output",
    ];
    for (r, name) in requests.iter().zip(names) {
        assert_eq!(r.path, "/v1/messages");
        assert_eq!(r.header("x-api-key"), Some(KEY));
        let body = r.json();
        let tool = format!("submit_{name}");
        assert_eq!(body["tools"].as_array().unwrap().len(), 1);
        assert_eq!(body["tools"][0]["name"], tool.as_str());
        assert_eq!(body["tool_choice"], json!({"type": "tool", "name": tool}));
        assert_eq!(body["max_tokens"], 16384);
        assert_eq!(
            body["system"][0],
            json!({"type": "text", "text": "SYSTEM PROMPT", "cache_control": {"type": "ephemeral"}})
        );
        assert_eq!(body["system"][1]["text"], PREAMBLE.trim_end());
        assert!(body.get("response_format").is_none());
    }
    let repair = &requests[3].json()["messages"];
    let result = &repair[2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["is_error"], true);
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("- $.postconditions[0].id 'cites source' does not match"),
        "{result}"
    );
    assert_eq!(compiled.steps[2].answers, 2);
    assert_eq!(compiled.cost.provider, "anthropic");
    assert_eq!(compiled.ir.topology.edges.len(), 1);
    let state = tempfile::tempdir().unwrap();
    compiled
        .write_cache(state.path(), jiff::Timestamp::UNIX_EPOCH)
        .unwrap();
    assert!(freshness(state.path(), &compiled.key).is_fresh());
}

#[test]
fn a_failed_compile_reports_the_hint_and_the_tokens_spent() {
    let Some(dir) = smallest_project() else {
        return;
    };
    let set = ContractSet::load(&dir).expect("contracts load");
    let fake = FakeProvider::with_entries([
        fake::chat_json(&forme_answer()).when_purpose("compile:forme"),
        fake::error_401(fake::Protocol::Chat)
            .when_purpose("compile:canonicalizer:competitor-monitor"),
    ]);
    let c = client("openrouter", &fake);
    let err = compile_project(&set, &settings("openrouter"), &c).unwrap_err();
    fake.finish();
    assert_eq!(
        err.to_string(),
        "openrouter rejected the key in FAKE_KEY (HTTP 401): check FAKE_KEY"
    );
    assert_eq!(
        err.spent(),
        TokenCost {
            fresh: 15,
            reused: 0
        }
    );
}

#[test]
fn a_reference_written_compile_dir_is_absent_not_an_error() {
    let Some(compat) = compat_dir() else {
        return;
    };
    let state = compat.join("agent-observatory-cli");
    let key = CacheKey {
        contract_set_fingerprint: "sha256:0".into(),
        sdk_version: sdk_version(None),
        model: "compile-model".into(),
    };
    match freshness(&state, &key) {
        Freshness::Absent { topology } => {
            let t = topology.expect("the reference topology is readable");
            assert_eq!((t.nodes, t.edges), (7, 13));
            assert!(t.acyclic);
        }
        other => panic!("expected absent, got {:?}", other.reason()),
    }
    assert_eq!(load_ir(&state).unwrap_err(), StaleReason::NoCache);
    // A flat reference topology (no manifest either).
    let masked = compat.join("masked-relay");
    match freshness(&masked, &key) {
        Freshness::Absent { topology } => assert_eq!(topology.unwrap().nodes, 12),
        other => panic!("expected absent, got {:?}", other.reason()),
    }
}
