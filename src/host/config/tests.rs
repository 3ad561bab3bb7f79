//! Tests of `reactor.yml` parsing (HOST.md §4).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::read::{is_http_url, is_provider_label, is_reactor_name, parse_duration};
use super::*;
use crate::format::json::Value;
use crate::host::connectors::ConnectorKind;
use crate::model::config::ProviderConfig;

fn proj() -> PathBuf {
    PathBuf::from("/abs/proj")
}

fn parse(text: &str) -> Result<ReactorConfig, ConfigFileError> {
    ReactorConfig::parse(text, &proj())
}

fn err(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

#[test]
fn empty_and_absent_files_take_every_default() {
    for text in ["", "# nothing\n", "---\n", "~\n"] {
        let c = parse(text).unwrap();
        assert_eq!(c, ReactorConfig::default(), "{text:?}");
    }
    let c = ReactorConfig::default();
    assert_eq!(c.model.max_turns, 200);
    assert_eq!(c.model.provider_label(), "openrouter");
    assert_eq!(c.sandbox.mode, SandboxMode::None);
    assert_eq!(c.sandbox.image, "node:22-bookworm-slim");
    assert_eq!(c.sandbox.network, "none");
    assert_eq!(c.sandbox.shell_timeout_ms, 300_000);
    assert!(c.state.dir.is_none());
    let d = tempfile::tempdir().unwrap();
    assert_eq!(ReactorConfig::load(d.path()).unwrap(), None);
}

#[test]
fn the_first_host_example_parses() {
    let c = parse(
        "state:\n  dir: ./.reactor\nmodel:\n  provider: openrouter\n  render_model: google/gemini-3.5-flash\n  compile_model: google/gemini-3.5-flash\n  max_turns: 200\nsandbox:\n  mode: none\ngateways:\n  - node: inbox\n    source_id: inbox\n    poll: 30s\n    connector:\n      type: static\n      id_field: id\n      items:\n        - { id: item-1, body: \"the first item\" }\n        - id: item-2\n          body: \"the second item\"\n          tags: [urgent]\n",
    )
    .unwrap();
    assert_eq!(c.state.dir, Some(PathBuf::from("/abs/proj/.reactor")));
    assert_eq!(
        c.model.render_model.as_deref(),
        Some("google/gemini-3.5-flash")
    );
    assert_eq!(c.gateways.len(), 1);
    let g = &c.gateways[0];
    assert_eq!(
        (g.node.as_str(), g.source_id.as_str(), g.path.as_str()),
        ("inbox", "inbox", "gateways[0]")
    );
    assert_eq!(g.poll, Some(Duration::from_secs(30)));
    let ConnectorKind::Static { items } = &g.connector.kind else {
        panic!()
    };
    assert_eq!(
        crate::format::json::compact_string(&Value::Array(items.clone())),
        r#"[{"id":"item-1","body":"the first item"},{"id":"item-2","body":"the second item","tags":["urgent"]}]"#
    );
    let s = c.model.provider_settings();
    assert_eq!(s.provider.as_deref(), Some("openrouter"));
    assert_eq!(s.compile_model.as_deref(), Some("google/gemini-3.5-flash"));
}

#[test]
fn custom_and_anthropic_providers() {
    let c = parse("model:\n  provider: Acme-Gateway\n  base_url: https://llm.acme.internal/v1\n  api_key_env: ACME_LLM_KEY\n  render_model: acme/large\n  compile_model: acme/large\n  reasoning_effort: low\n").unwrap();
    assert_eq!(c.model.provider.as_deref(), Some("acme-gateway"));
    assert_eq!(c.model.reasoning_effort.as_deref(), Some("low"));
    let cfg = ProviderConfig::resolve(&c.model.provider_settings()).unwrap();
    assert_eq!(
        cfg.endpoint(),
        "https://llm.acme.internal/v1/chat/completions"
    );
    let c = parse("model:\n  provider: anthropic\n  base_url: https://proxy.internal/v1\n  api_key_env: MY_GATEWAY_KEY\n  temperature: 0\n").unwrap();
    assert_eq!(c.model.temperature, Some(0.0));
    assert_eq!(
        err("model:\n  provider: anthropic\n  temperature: 1.5\n"),
        "reactor.yml:3:16: model.temperature: invalid value 1.5 (expected a number from 0 to 1 for provider 'anthropic')"
    );
    assert_eq!(
        err("model:\n  temperature: 2.5\n"),
        "reactor.yml:2:16: model.temperature: invalid value 2.5 (expected a number from 0 to 2)"
    );
    assert_eq!(
        err("model:\n  temperature: -0.1\n"),
        "reactor.yml:2:16: model.temperature: invalid value -0.1 (expected a number from 0 to 2)"
    );
    assert_eq!(
        err("model:\n  provider: acme\n  base_url: http://x/v1\n"),
        "reactor.yml:2:13: model.provider: unknown provider 'acme'; use openrouter, openai, anthropic or google, or set both model.base_url and model.api_key_env"
    );
    assert_eq!(
        err("model:\n  provider: \"bad label\"\n"),
        "reactor.yml:2:13: model.provider: invalid value 'bad label' (expected openrouter, openai, anthropic, google or a custom label matching [a-z0-9][a-z0-9._-]*)"
    );
    assert_eq!(
        err("model:\n  base_url: ftp://x\n"),
        "reactor.yml:2:13: model.base_url: invalid value 'ftp://x' (expected an http:// or https:// URL)"
    );
    assert_eq!(
        err("model:\n  api_key_env: MY-KEY\n"),
        "reactor.yml:2:16: model.api_key_env: invalid value 'MY-KEY' (expected an environment variable name matching [A-Za-z_][A-Za-z0-9_]*)"
    );
}

#[test]
fn model_timeouts_and_max_tokens() {
    let c =
        parse("model:\n  timeout: 5s\n  connect_timeout: 1500ms\n  max_tokens: 4096\n").unwrap();
    assert_eq!(c.model.timeout, Some(Duration::from_secs(5)));
    assert_eq!(c.model.connect_timeout, Some(Duration::from_millis(1500)));
    assert_eq!(c.model.max_tokens, Some(4096));
    assert_eq!(c.model.provider_settings().max_tokens, Some(4096));
    let c = parse("model:\n  timeout: 2m\n").unwrap();
    assert_eq!(c.model.timeout, Some(Duration::from_secs(120)));
    assert_eq!(c.model.connect_timeout, None);
    assert_eq!(parse("").unwrap().model.timeout, None);
    for (text, shown) in [
        ("0s", "'0s'"),
        ("5", "'5'"),
        ("5 s", "'5 s'"),
        ("-1s", "'-1s'"),
        ("25h", "'25h'"),
        ("99999999999999999999h", "'99999999999999999999h'"),
    ] {
        assert_eq!(
            err(&format!("model:\n  timeout: \"{text}\"\n")),
            format!(
                "reactor.yml:2:12: model.timeout: invalid value {shown} (expected a duration above zero and at most 24h: an integer followed by ms, s, m or h, such as 30s or 5m)"
            ),
            "{text}"
        );
    }
    assert_eq!(
        err("model:\n  connect_timeout: 10\n"),
        "reactor.yml:2:20: model.connect_timeout: expected a duration above zero and at most 24h: an integer followed by ms, s, m or h, such as 30s or 5m, got a number (10)"
    );
    assert_eq!(
        err("model:\n  max_tokens: 0\n"),
        "reactor.yml:2:15: model.max_tokens: invalid value 0 (expected an integer from 1 to 1048576)"
    );
    assert!(err("model:\n  max_tokens: 16k\n").starts_with("reactor.yml:2:15: model.max_tokens: "));
}

#[test]
fn missing_model_ids_are_located() {
    let c = parse("state:\n  dir: x\nmodel:\n  provider: openai\n").unwrap();
    assert_eq!(c.model.location(), "reactor.yml:4:13");
    let c = parse("model:\n  max_turns: 3\n").unwrap();
    assert_eq!(c.model.location(), "reactor.yml:2:3");
    assert_eq!(parse("").unwrap().model.location(), "reactor.yml");
}

#[test]
fn unknown_keys_name_the_path_line_and_expected_set() {
    assert_eq!(
        err("model:\n  provider: openrouter\n  temprature: 0\n"),
        "reactor.yml:3:3: model.temprature: unknown key (expected one of: provider, render_model, compile_model, temperature, reasoning_effort, max_turns, base_url, api_key_env, max_tokens, timeout, connect_timeout, parallel_renders)"
    );
    assert_eq!(
        err("modle:\n  x: 1\n"),
        "reactor.yml:1:1: modle: unknown key (expected one of: state, model, sandbox, gateways, reactors, telemetry)"
    );
    assert_eq!(
        err("state:\n  dir: x\n  other: 1\n"),
        "reactor.yml:3:3: state.other: unknown key (expected one of: dir)"
    );
    assert_eq!(
        err("telemetry:\n  enabled: true\n  token: x\n"),
        "reactor.yml:3:3: telemetry.token: unknown key (expected one of: enabled, endpoint)"
    );
    assert_eq!(
        err("gateways:\n  - node: a\n    conector: {type: static, items: []}\n"),
        "reactor.yml:3:5: gateways[0].conector: unknown key (expected one of: node, source_id, poll, connector)"
    );
    assert_eq!(
        err("1: x\n"),
        "reactor.yml:1:1: keys must be strings, got a number (1)"
    );
}

#[test]
fn wrong_types_and_ranges() {
    assert_eq!(
        err("sandbox:\n  mode: dokcer\n"),
        "reactor.yml:2:9: sandbox.mode: invalid value 'dokcer' (expected none, docker or unix-local)"
    );
    assert_eq!(
        err("sandbox:\n  mode: [docker]\n"),
        "reactor.yml:2:9: sandbox.mode: expected none, docker or unix-local, got a list"
    );
    assert_eq!(
        err("sandbox:\n  shell_timeout_ms: 999\n"),
        "reactor.yml:2:21: sandbox.shell_timeout_ms: invalid value 999 (expected an integer of at least 1000)"
    );
    assert_eq!(
        err("model:\n  max_turns: 0\n"),
        "reactor.yml:2:14: model.max_turns: invalid value 0 (expected an integer from 1 to 10000)"
    );
    assert_eq!(
        err("model:\n  max_turns: 10001\n"),
        "reactor.yml:2:14: model.max_turns: invalid value 10001 (expected an integer from 1 to 10000)"
    );
    assert_eq!(
        err("model:\n  max_turns: many\n"),
        "reactor.yml:2:14: model.max_turns: expected an integer from 1 to 10000, got a string ('many')"
    );
    assert_eq!(
        err("model:\n  max_turns: 2.5\n"),
        "reactor.yml:2:14: model.max_turns: expected an integer from 1 to 10000, got a number (2.5)"
    );
    assert_eq!(
        parse("model:\n  max_turns: 24.0\n")
            .unwrap()
            .model
            .max_turns,
        24
    );
    assert_eq!(
        err("model:\n  render_model: 5\n"),
        "reactor.yml:2:17: model.render_model: expected a string, got a number (5)"
    );
    assert_eq!(
        err("model: [a]\n"),
        "reactor.yml:1:8: model: expected a mapping, got a list"
    );
    assert_eq!(
        err("telemetry:\n  enabled: yes\n"),
        "reactor.yml:2:12: telemetry.enabled: expected true or false, got a string ('yes')"
    );
    assert_eq!(
        err("- a\n- b\n"),
        "reactor.yml:1:1: expected a mapping of settings at the top level, got a list"
    );
    assert_eq!(
        err("state:\n  dir: \"\"\n"),
        "reactor.yml:2:8: state.dir: expected a non-empty string"
    );
    // telemetry is accepted and type-checked.
    let c = parse("telemetry:\n  enabled: false\n  endpoint: https://t.example\n").unwrap();
    assert_eq!(c.telemetry.unwrap().enabled, Some(false));
}

#[test]
fn gateways_and_connectors() {
    assert_eq!(
        err("gateways:\n  - source_id: s\n    connector: {type: static, items: []}\n"),
        "reactor.yml:2:5: gateways[0].node: required key missing (expected a gateway node id)"
    );
    assert_eq!(
        err("gateways:\n  - node: a\n"),
        "reactor.yml:2:5: gateways[0].connector: required key missing (expected a mapping with a type)"
    );
    assert_eq!(
        err("gateways:\n  - node: a\n    connector:\n      id_field: id\n"),
        "reactor.yml:4:7: gateways[0].connector.type: required key missing (expected static, file or http)"
    );
    assert_eq!(
        err("gateways:\n  - node: a\n    connector: {type: ftp}\n"),
        "reactor.yml:3:23: gateways[0].connector.type: invalid value 'ftp' (expected static, file or http)"
    );
    assert_eq!(
        err("gateways:\n  - node: a\n    connector: {type: file, dir: x, items: []}\n"),
        "reactor.yml:3:37: gateways[0].connector.items: does not belong to a 'file' connector (expected one of: type, id_field, dir)"
    );
    assert_eq!(
        err("gateways:\n  - node: a\n    connector: {type: static, items: [], bogus: 1}\n"),
        "reactor.yml:3:42: gateways[0].connector.bogus: unknown key (expected one of: type, id_field, items)"
    );
    assert_eq!(
        err("gateways:\n  - node: a\n    connector: {type: static}\n"),
        "reactor.yml:3:16: gateways[0].connector.items: required key missing (expected a list of items)"
    );
    assert_eq!(
        err("gateways:\n  - node: a\n    connector: {type: static, items: [{1: x}]}\n"),
        "reactor.yml:3:40: gateways[0].connector.items[0]: mapping keys must be strings, got a number (1)"
    );
    assert_eq!(
        err("gateways:\n  - node: a\n    connector: {type: static, items: [{a: .inf}]}\n"),
        "reactor.yml:3:43: non-finite number '.inf' (JSON numbers must be finite)"
    );
    assert_eq!(
        err("gateways:\n  - node: a\n    poll: 30\n    connector: {type: static, items: []}\n"),
        "reactor.yml:3:11: gateways[0].poll: invalid value a number (30) (expected an integer followed by ms, s, m or h, such as 30s or 5m)"
    );
    assert_eq!(
        err("gateways:\n  - node: a\n    poll: 5d\n    connector: {type: static, items: []}\n"),
        "reactor.yml:3:11: gateways[0].poll: invalid value '5d' (expected an integer followed by ms, s, m or h, such as 30s or 5m)"
    );
    assert_eq!(
        err(
            "gateways:\n  - node: a\n    connector: {type: static, items: []}\n  - node: b\n    source_id: a\n    connector: {type: static, items: []}\n"
        ),
        "reactor.yml:5:16: gateways[1].source_id: duplicate source_id 'a' (already used by gateways[0])"
    );
    let c = parse("gateways:\n  - node: g\n    poll: 250ms\n    connector:\n      type: file\n      id_field: key\n      dir: ./drop\n  - node: h\n    poll: 2h\n    connector:\n      type: http\n      url: \"https://helpdesk.example/api/new?since={as_of}\"\n      headers:\n        Authorization: ${HELPDESK_TOKEN}\n        X-Api-Version: \"2\"\n").unwrap();
    assert_eq!(c.gateways[0].poll, Some(Duration::from_millis(250)));
    assert_eq!(c.gateways[0].connector.id_field, "key");
    assert_eq!(
        c.gateways[0].connector.kind,
        ConnectorKind::File {
            dir: PathBuf::from("/abs/proj/drop")
        }
    );
    assert_eq!(c.gateways[1].poll, Some(Duration::from_secs(7200)));
    let spec = c.gateways[1].to_spec();
    assert_eq!((spec.node.as_str(), spec.source_id.as_str()), ("h", "h"));
    assert_eq!(spec.poll, Some(Duration::from_secs(7200)));
    match &spec.connector.kind {
        ConnectorKind::Http {
            timeout,
            connect_timeout,
            ..
        } => assert_eq!(
            (*connect_timeout, *timeout),
            (HTTP_CONNECT_TIMEOUT, HTTP_TIMEOUT)
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(c.gateways[0].to_spec().connector.id_field, "key");
    let ConnectorKind::Http { url, headers, .. } = &c.gateways[1].connector.kind else {
        panic!()
    };
    assert!(url.ends_with("since={as_of}"));
    assert_eq!(
        headers[0],
        ("Authorization".into(), "${HELPDESK_TOKEN}".into())
    );
    assert_eq!(headers[1], ("X-Api-Version".into(), "2".into()));
    assert_eq!(
        err("gateways:\n  - node: a\n    connector: {type: http, url: \"file:///etc/passwd\"}\n"),
        "reactor.yml:3:34: gateways[0].connector.url: invalid value 'file:///etc/passwd' (expected an http:// or https:// URL)"
    );
    assert_eq!(
        err(
            "gateways:\n  - node: a\n    connector: {type: http, url: \"http://x\", headers: {\"a b\": c}}\n"
        ),
        "reactor.yml:3:56: gateways[0].connector.headers.a b: invalid header name (expected an HTTP token such as X-Api-Version)"
    );
    assert_eq!(
        err(
            "gateways:\n  - node: a\n    connector: {type: http, url: \"http://x\", headers: {A: \"${bad name}\"}}\n"
        ),
        "reactor.yml:3:59: gateways[0].connector.headers.A: invalid variable reference '${bad name}' (expected ${NAME} with NAME matching [A-Za-z_][A-Za-z0-9_]*)"
    );
}

#[test]
fn several_reactors() {
    let c = parse("reactors:\n  - name: alpha\n    project: ./alpha\n    gateways:\n      - node: tickets\n        connector: { type: http, url: \"https://helpdesk.example/api/new?since={as_of}\" }\n  - name: beta\n    project: ./beta\n    state_dir: ./state/beta\n  - project: gamma\n").unwrap();
    let r = c.reactors.unwrap();
    assert_eq!(r.len(), 3);
    assert_eq!(r[0].name, "alpha");
    assert_eq!(r[0].project, PathBuf::from("/abs/proj/alpha"));
    assert_eq!(r[0].gateways[0].path, "reactors[0].gateways[0]");
    assert_eq!(r[1].state_dir, Some(PathBuf::from("/abs/proj/state/beta")));
    assert_eq!(r[2].name, "reactor-2");
    assert_eq!(
        err("reactors:\n  - name: status\n"),
        "reactor.yml:2:11: reactors[0].name: 'status' is a route name of the daemon (reserved: health, status, cost, topology, receipts, nodes, trigger)"
    );
    assert_eq!(
        err("reactors:\n  - name: a\n  - name: a\n"),
        "reactor.yml:3:11: reactors[1].name: duplicate reactor name 'a' (already used by reactors[0])"
    );
    assert_eq!(
        err("reactors:\n  - name: -a\n"),
        "reactor.yml:2:11: reactors[0].name: invalid value '-a' (expected a name matching [A-Za-z0-9][A-Za-z0-9._-]*)"
    );
    assert_eq!(
        err("reactors: []\n"),
        "reactor.yml:1:11: reactors: the list is empty (remove the key for a single reactor)"
    );
    assert_eq!(
        err("gateways: []\nreactors:\n  - name: a\n"),
        "reactor.yml:1:1: gateways: not allowed together with reactors (give each reactor its own gateways)"
    );
}

#[test]
fn yaml_level_errors() {
    assert_eq!(
        err("a: 1\na: 2\n"),
        "reactor.yml:2:1: duplicate mapping key: a"
    );
    assert!(err("model: !!str x\n").starts_with("reactor.yml:1:"));
    assert!(err("model: !!str x\n").contains("YAML tags are not supported"));
    let e = err("model:\n  provider: [\n");
    assert!(e.starts_with("reactor.yml:2:"), "{e}");
}

#[test]
fn paths_are_resolved_lexically() {
    assert_eq!(clean_path(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
    assert_eq!(clean_path(Path::new("/..")), PathBuf::from("/"));
    assert_eq!(clean_path(Path::new("a/../..")), PathBuf::from(".."));
    assert_eq!(
        resolve_path(Path::new("/p"), Path::new("../s")),
        PathBuf::from("/s")
    );
    assert_eq!(
        resolve_path(Path::new("/p"), Path::new("/abs/x/")),
        PathBuf::from("/abs/x")
    );
    let c = parse("state:\n  dir: ../elsewhere/.state\n").unwrap();
    assert_eq!(c.state.dir, Some(PathBuf::from("/abs/elsewhere/.state")));
}

#[test]
fn helpers() {
    assert_eq!(parse_duration("30s"), Some(Duration::from_secs(30)));
    assert_eq!(parse_duration("0ms"), Some(Duration::ZERO));
    assert_eq!(parse_duration("5m"), Some(Duration::from_secs(300)));
    for bad in [
        "",
        "s",
        "30",
        "30 s",
        "-1s",
        "1.5s",
        "99999999999999999999h",
        "3S",
    ] {
        assert_eq!(parse_duration(bad), None, "{bad}");
    }
    assert!(is_http_url("http://127.0.0.1:8080/v1"));
    assert!(is_http_url("HTTPS://x"));
    for bad in [
        "http://",
        "https:///p",
        "ftp://x",
        "http://a b",
        "http://:80",
    ] {
        assert!(!is_http_url(bad), "{bad}");
    }
    assert!(is_reactor_name("a.b-c_1"));
    assert!(!is_reactor_name("_a"));
    assert!(is_provider_label("acme-gateway.v2"));
    assert!(!is_provider_label("Acme"));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
    /// Any text is either a configuration or an error; never a panic.
    #[test]
    fn parsing_is_total(text in "\\PC{0,200}") {
        let _ = parse(&text);
    }

    /// YAML-shaped input built from the real keys, odd scalars and indentation.
    #[test]
    fn yaml_shaped_input_is_total(parts in proptest::collection::vec(
        proptest::prop_oneof![
            proptest::strategy::Just("model:\n".to_string()),
            proptest::strategy::Just("  temperature: ".to_string()),
            proptest::strategy::Just("gateways:\n  - node: a\n    connector: {type: static, items: [".to_string()),
            proptest::strategy::Just("reactors:\n  - name: ".to_string()),
            proptest::strategy::Just("sandbox: {mode: ".to_string()),
            proptest::strategy::Just("&a ".to_string()),
            proptest::strategy::Just("*a".to_string()),
            proptest::strategy::Just("!t ".to_string()),
            proptest::strategy::Just(".inf".to_string()),
            proptest::strategy::Just("]}\n".to_string()),
            proptest::strategy::Just("\"é\u{1F600}\"".to_string()),
            "[ -~]{0,12}",
        ],
        0..12,
    )) {
        let _ = parse(&parts.concat());
    }
}

#[test]
fn the_example_projects_parse() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/contracts");
    if !dir.is_dir() {
        eprintln!("SKIPPED: {} is missing", dir.display());
        return;
    }
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let p = entry.unwrap().path();
        if p.join(CONFIG_FILE).is_file() {
            let c = ReactorConfig::load(&p)
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
                .unwrap();
            assert_eq!(c.gateways.len(), 1, "{}", p.display());
            let ConnectorKind::Static { items } = &c.gateways[0].connector.kind else {
                panic!()
            };
            assert!(items.len() >= 2);
            assert!(
                items
                    .iter()
                    .all(|i| i.get("id").and_then(Value::as_str).is_some())
            );
            seen += 1;
        }
    }
    assert_eq!(seen, 3);
}

#[test]
fn parallel_renders_defaults_to_4_and_is_bounded() {
    assert_eq!(parse("").unwrap().model.parallel_renders, 4);
    assert_eq!(
        parse("model:\n  parallel_renders: 16\n")
            .unwrap()
            .model
            .parallel_renders,
        16
    );
    assert_eq!(
        err("model:\n  parallel_renders: 0\n"),
        "reactor.yml:2:21: model.parallel_renders: invalid value 0 (expected an integer from 1 to 64)"
    );
    assert_eq!(
        err("model:\n  parallel_renders: 65\n"),
        "reactor.yml:2:21: model.parallel_renders: invalid value 65 (expected an integer from 1 to 64)"
    );
    assert_eq!(
        err("model:\n  parallel_renders: -1\n"),
        "reactor.yml:2:21: model.parallel_renders: invalid value -1 (expected an integer from 1 to 64)"
    );
    assert_eq!(
        err("model:\n  parallel_renders: lots\n"),
        "reactor.yml:2:21: model.parallel_renders: expected an integer from 1 to 64, got a string ('lots')"
    );
}
