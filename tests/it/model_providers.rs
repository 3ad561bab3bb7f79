//! The provider clients (HOST.md §5) against the loopback fake provider (HOST.md §11.2):
//! request shapes of both protocols, retries, timeouts, error hints, usage mapping, redaction,
//! and record/replay (RUNTIME.md §13.2).

use std::time::{Duration, Instant};

use crate::support::fake_provider::{self as fake, FakeProvider, FakeUsage, Protocol};
use crate::support::raw_server::{Behaviour, RawServer};
use reactor::model::replay::{RECORD_FORMAT, parse_record_file};
use reactor::model::{
    ApiKey, HttpSettings, Message, ModelClient, ModelError, ModelRequest, ModelResponse,
    OutputSchema, ProviderClient, ProviderConfig, ProviderSettings, RecordingClient, ReplayClient,
    TokenCost, ToolArguments, ToolSpec, Transport,
};
use serde_json::{Value, json};

/// A key that matches none of the shape rules of RUNTIME.md §7.9, so only exact-value redaction
/// can hide it.
const CANARY: &str = "canary-7f3a9b2c1d5e";

fn fast_settings() -> HttpSettings {
    HttpSettings {
        backoff_base: Duration::ZERO,
        connect_timeout: Duration::from_secs(2),
        attempt_timeout: Duration::from_secs(10),
        ..HttpSettings::default()
    }
}

fn config(provider: &str, base_url: &str) -> ProviderConfig {
    ProviderConfig::resolve(&ProviderSettings {
        provider: Some(provider.into()),
        base_url: Some(base_url.into()),
        api_key_env: Some("FAKE_KEY".into()),
        render_model: Some("render-model".into()),
        compile_model: Some("compile-model".into()),
        ..ProviderSettings::default()
    })
    .expect("valid config")
}

fn chat_client_at(base_url: &str) -> ProviderClient {
    ProviderClient::new(
        config("openrouter", base_url),
        ApiKey::new(CANARY),
        fast_settings(),
    )
}

fn chat_client(fake: &FakeProvider) -> ProviderClient {
    ProviderClient::new(
        config("openrouter", &fake.base_url()),
        ApiKey::new(CANARY),
        fast_settings(),
    )
}

fn messages_client(fake: &FakeProvider) -> ProviderClient {
    ProviderClient::new(
        config("anthropic", &fake.base_url()),
        ApiKey::new(CANARY),
        fast_settings(),
    )
}

fn forme_schema() -> OutputSchema {
    OutputSchema {
        name: "forme_output".into(),
        schema: json!({
            "type": "object", "additionalProperties": false, "required": ["nodes"],
            "properties": {"nodes": {"type": "array", "items": {"type": "string"}}}
        }),
    }
}

fn compile_request() -> ModelRequest {
    ModelRequest {
        purpose: "compile:forme".into(),
        model: "compile-model".into(),
        system: vec!["SYSTEM PROMPT".into(), "COMPILE PREAMBLE".into()],
        messages: vec![Message::user("EVIDENCE"), Message::user("TASK")],
        output_schema: Some(forme_schema()),
        ..ModelRequest::default()
    }
}

fn render_tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "wm_read".into(),
            description: "Read a published file.".into(),
            parameters: json!({"type": "object", "additionalProperties": false,
                "required": ["path", "offset"],
                "properties": {"path": {"type": "string"}, "offset": {"type": ["integer", "null"]}}}),
        },
        ToolSpec {
            name: "finish".into(),
            description: "End the render.".into(),
            parameters: json!({"type": "object", "required": ["status"],
                "properties": {"status": {"type": "string", "enum": ["done", "failed"]}}}),
        },
    ]
}

fn render_request() -> ModelRequest {
    ModelRequest {
        purpose: "render:price-watch".into(),
        model: "render-model".into(),
        system: vec!["SYSTEM PROMPT".into(), "CONTRACT".into(), "WAKE".into()],
        messages: vec![Message::user("POINTER")],
        tools: render_tools(),
        ..ModelRequest::default()
    }
}

fn assert_clean(text: &str) {
    assert!(!text.contains(CANARY), "key leaked: {text}");
    assert!(!text.contains('\n'), "not one line: {text}");
}

fn expect_err(result: Result<ModelResponse, ModelError>) -> ModelError {
    match result {
        Ok(r) => panic!("expected an error, got {r:?}"),
        Err(e) => {
            assert_clean(&e.to_string());
            assert_clean(&format!("{e:?}"));
            e
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Request shapes
// ---------------------------------------------------------------------------------------------

#[test]
fn chat_compile_request_shape_and_answer() {
    let fake = FakeProvider::with_entries([fake::chat_json(&json!({"nodes": ["a", "b"]}))
        .when_purpose("compile:forme")
        .when_model("compile-model")]);
    let client = chat_client(&fake);
    let resp = client.complete(&compile_request()).expect("answer");
    assert_eq!(
        resp.structured_answer(&forme_schema()).unwrap(),
        json!({"nodes": ["a", "b"]})
    );
    assert_eq!(resp.stop_reason.as_deref(), Some("stop"));

    let reqs = fake.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(
        r.header("authorization"),
        Some(format!("Bearer {CANARY}").as_str())
    );
    assert_eq!(r.header("x-api-key"), None);
    assert_eq!(r.header("anthropic-version"), None);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("accept"), Some("application/json"));
    assert_eq!(
        r.header("user-agent"),
        Some(format!("reactor/{}", env!("CARGO_PKG_VERSION")).as_str())
    );
    assert_eq!(r.header_count("user-agent"), 1);
    assert_eq!(r.header("x-reactor-purpose"), Some("compile:forme"));
    assert_eq!(r.header("x-title"), Some("reactor"));
    let body = r.json();
    assert_eq!(
        body,
        &json!({
            "model": "compile-model",
            "messages": [
                {"role": "system", "content": "SYSTEM PROMPT\n\n---\n\nCOMPILE PREAMBLE"},
                {"role": "user", "content": "EVIDENCE"},
                {"role": "user", "content": "TASK"}
            ],
            "response_format": {"type": "json_schema", "json_schema": {
                "name": "forme_output", "strict": true, "schema": forme_schema().schema}},
            "stream": false
        })
    );
    assert!(body.get("temperature").is_none());
    assert!(body.get("reasoning_effort").is_none());
    fake.finish();
}

#[test]
fn chat_render_turns_carry_tools_settings_and_history() {
    let fake = FakeProvider::with_entries([
        fake::chat_tool_calls(&[
            ("wm_read", json!({"path": "truth.json", "offset": null})),
            ("finish", json!({"status": "done"})),
        ])
        .when_purpose("render:price-watch"),
        fake::chat_text("all done").when_body_contains("\"role\":\"tool\""),
    ]);
    let client = ProviderClient::new(
        config("local", &fake.base_url()),
        ApiKey::new(CANARY),
        fast_settings(),
    );
    let mut req = render_request();
    req.temperature = Some(0.25);
    req.reasoning_effort = Some("low".into());
    let first = client.complete(&req).expect("turn 1");
    assert_eq!(first.tool_calls.len(), 2);
    assert_eq!(first.tool_calls[0].id, "call_fake_0");
    assert_eq!(first.tool_calls[0].name, "wm_read");
    assert_eq!(
        first.tool_calls[0].arguments,
        ToolArguments::Json(json!({"path": "truth.json", "offset": null}))
    );
    assert_eq!(first.stop_reason.as_deref(), Some("tool_calls"));

    req.messages.push(first.to_message());
    req.messages.push(Message::tool_result(
        "call_fake_0",
        "{\"error\":\"not found: truth.json\"}",
        true,
    ));
    req.messages
        .push(Message::tool_result("call_fake_1", "{\"ok\":true}", false));
    let second = client.complete(&req).expect("turn 2");
    assert_eq!(second.text.as_deref(), Some("all done"));

    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    // A custom provider label: no OpenRouter title header.
    assert_eq!(reqs[0].header("x-title"), None);
    let b1 = reqs[0].json();
    assert_eq!(
        b1["tools"],
        json!([
            {"type": "function", "function": {"name": "wm_read", "description": "Read a published file.",
                "parameters": render_tools()[0].parameters}},
            {"type": "function", "function": {"name": "finish", "description": "End the render.",
                "parameters": render_tools()[1].parameters}}
        ])
    );
    assert_eq!(b1["tool_choice"], "auto");
    assert_eq!(b1["temperature"], json!(0.25));
    assert_eq!(b1["reasoning_effort"], "low");
    assert_eq!(b1["stream"], false);
    assert!(b1.get("response_format").is_none());
    assert_eq!(
        b1["messages"][0]["content"],
        "SYSTEM PROMPT\n\n---\n\nCONTRACT\n\n---\n\nWAKE"
    );
    let history = reqs[1].json()["messages"].as_array().unwrap().clone();
    assert_eq!(history.len(), 5);
    assert_eq!(history[2]["role"], "assistant");
    assert_eq!(history[2]["content"], Value::Null);
    assert_eq!(history[2]["tool_calls"][1]["type"], "function");
    assert_eq!(history[2]["tool_calls"][1]["function"]["name"], "finish");
    assert_eq!(
        history[2]["tool_calls"][1]["function"]["arguments"],
        "{\"status\":\"done\"}"
    );
    assert_eq!(
        history[3],
        json!({"role": "tool", "tool_call_id": "call_fake_0", "content": "{\"error\":\"not found: truth.json\"}"})
    );
    assert_eq!(history[4]["tool_call_id"], "call_fake_1");
    fake.finish();
}

#[test]
fn chat_content_parts_are_concatenated() {
    let fake = FakeProvider::with_entries([fake::chat_content_parts(&["{\"nodes\":", " []}"])]);
    let resp = chat_client(&fake).complete(&compile_request()).unwrap();
    assert_eq!(
        resp.structured_answer(&forme_schema()).unwrap(),
        json!({"nodes": []})
    );
    fake.finish();
}

#[test]
fn messages_compile_request_shape_forced_tool_and_repair_turn() {
    let fake = FakeProvider::with_entries([
        fake::messages_submit("forme_output", json!({"nodes": 5})).when_purpose("compile:forme"),
        fake::messages_submit("forme_output", json!({"nodes": ["x"]}))
            .when_body_contains("\"is_error\":true"),
    ]);
    let client = messages_client(&fake);
    let mut req = compile_request();
    req.reasoning_effort = Some("high".into());
    let first = client.complete(&req).expect("first answer");
    assert_eq!(
        first.structured_answer(&forme_schema()).unwrap(),
        json!({"nodes": 5})
    );
    req.push_repair_turn(&first, "$.nodes: expected an array");
    let second = client.complete(&req).expect("repaired answer");
    assert_eq!(
        second.structured_answer(&forme_schema()).unwrap(),
        json!({"nodes": ["x"]})
    );

    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    let r = &reqs[0];
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.header("x-api-key"), Some(CANARY));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(r.header("authorization"), None);
    assert_eq!(r.header("x-title"), None);
    assert_eq!(r.header("x-reactor-purpose"), Some("compile:forme"));
    let body = r.json();
    assert_eq!(
        body,
        &json!({
            "model": "compile-model",
            "max_tokens": 16384,
            "system": [
                {"type": "text", "text": "SYSTEM PROMPT", "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "COMPILE PREAMBLE"}
            ],
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "EVIDENCE"},
                {"type": "text", "text": "TASK"}
            ]}],
            "tools": [{"name": "submit_forme_output",
                       "description": body["tools"][0]["description"],
                       "input_schema": forme_schema().schema}],
            "tool_choice": {"type": "tool", "name": "submit_forme_output"}
        })
    );
    assert!(body["tools"][0]["description"].as_str().unwrap().len() > 10);
    assert!(body.get("stream").is_none());
    assert!(body.get("reasoning_effort").is_none());
    let repair = &reqs[1].json()["messages"];
    assert_eq!(
        repair[1],
        json!({"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_fake_0",
            "name": "submit_forme_output", "input": {"nodes": 5}}]})
    );
    assert_eq!(
        repair[2],
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_fake_0",
            "content": "$.nodes: expected an array", "is_error": true}]})
    );
    fake.finish();
}

#[test]
fn messages_render_tool_calls_and_finish() {
    let fake = FakeProvider::with_entries([
        fake::messages_tool_calls(&[("wm_read", json!({"path": "a", "offset": 0}))])
            .when_purpose("render:price-watch"),
        fake::messages_finish(json!({"status": "done"})).when_body_contains("tool_result"),
    ]);
    let client = messages_client(&fake);
    let mut req = render_request();
    req.temperature = Some(0.0);
    let first = client.complete(&req).unwrap();
    assert_eq!(first.tool_calls[0].id, "toolu_fake_0");
    req.messages.push(first.to_message());
    req.messages.push(Message::tool_result(
        "toolu_fake_0",
        "{\"error\":\"x\"}",
        true,
    ));
    let second = client.complete(&req).unwrap();
    assert_eq!(second.tool_calls[0].name, "finish");
    assert_eq!(
        second.tool_calls[0].arguments.json(),
        Some(&json!({"status": "done"}))
    );
    assert_eq!(second.stop_reason.as_deref(), Some("tool_use"));

    let reqs = fake.requests();
    let b = reqs[0].json();
    assert_eq!(b["tool_choice"], json!({"type": "auto"}));
    assert_eq!(b["temperature"], json!(0.0));
    assert_eq!(
        b["tools"][0],
        json!({"name": "wm_read", "description": "Read a published file.",
               "input_schema": render_tools()[0].parameters})
    );
    assert_eq!(b["system"][1]["text"], "CONTRACT\n\n---\n\nWAKE");
    assert_eq!(
        b["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "POINTER"}]}])
    );
    let history = &reqs[1].json()["messages"];
    assert_eq!(
        history[2]["content"],
        json!([{"type": "tool_result", "tool_use_id": "toolu_fake_0", "content": "{\"error\":\"x\"}", "is_error": true}])
    );
    fake.finish();
}

#[test]
fn purpose_guards_pick_the_matching_entry() {
    let fake = FakeProvider::with_entries([
        fake::chat_text("for b").when_purpose("render:b"),
        fake::chat_text("for a").when_purpose("render:a"),
    ]);
    let client = chat_client(&fake);
    let mut req = render_request();
    req.purpose = "render:a".into();
    assert_eq!(
        client.complete(&req).unwrap().text.as_deref(),
        Some("for a")
    );
    req.purpose = "render:b".into();
    assert_eq!(
        client.complete(&req).unwrap().text.as_deref(),
        Some("for b")
    );
    fake.finish();
}

// ---------------------------------------------------------------------------------------------
// Retries
// ---------------------------------------------------------------------------------------------

#[test]
fn retries_429_with_retry_after_then_succeeds() {
    let fake = FakeProvider::with_entries([
        fake::error_429(Protocol::Chat, Some("2")),
        fake::chat_text("ok"),
    ]);
    let resp = chat_client(&fake).complete(&render_request()).unwrap();
    assert_eq!(resp.text.as_deref(), Some("ok"));
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    // Retries re-send the identical request.
    assert_eq!(reqs[0].raw_body, reqs[1].raw_body);
    fake.finish();
}

#[test]
fn retry_after_is_honoured_when_sleeping_is_enabled() {
    let fake = FakeProvider::with_entries([
        fake::error_429(Protocol::Chat, Some("1")),
        fake::chat_text("ok"),
    ]);
    let client = ProviderClient::new(
        config("openrouter", &fake.base_url()),
        ApiKey::new(CANARY),
        HttpSettings {
            backoff_base: Duration::from_millis(1),
            ..fast_settings()
        },
    );
    let started = Instant::now();
    client.complete(&render_request()).unwrap();
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After: 1 was not honoured ({:?})",
        started.elapsed()
    );
    fake.finish();
}

#[test]
fn retry_after_beyond_sixty_seconds_ends_retrying() {
    let fake = FakeProvider::with_entries([fake::error_429(Protocol::Chat, Some("120"))]);
    let err = expect_err(chat_client(&fake).complete(&render_request()));
    // Says what the provider asked (issue 8 item 7), not "retry shortly".
    assert_eq!(
        err.to_string(),
        "openrouter answered HTTP 429 and asked to retry after 120 s, longer than the 60 s reactor waits: try again after that, or lower --concurrency"
    );
    assert_eq!(fake.request_count(), 1);
    fake.finish();
    let fake = FakeProvider::with_entries([fake::error(Protocol::Messages, 503, "busy")
        .with_header("Retry-After", "Tue, 02 Jun 2099 18:00:30 GMT")]);
    let err = expect_err(messages_client(&fake).complete(&render_request()));
    let text = err.to_string();
    assert!(
        text.starts_with("anthropic answered HTTP 503 and asked to retry after ")
            && text.ends_with(" s, longer than the 60 s reactor waits: try again after that"),
        "{text}"
    );
    fake.finish();
}

#[test]
fn rate_limit_after_four_attempts() {
    let fake =
        FakeProvider::with_entries((0..4).map(|_| fake::error_429(Protocol::Messages, None)));
    let err = expect_err(messages_client(&fake).complete(&render_request()));
    assert_eq!(
        err.to_string(),
        "rate limited by anthropic (HTTP 429) after 4 attempts: retry shortly or lower --concurrency"
    );
    assert_eq!(fake.request_count(), 4);
    fake.finish();
}

#[test]
fn retries_500_then_succeeds_and_gives_up_after_four() {
    let fake = FakeProvider::with_entries([fake::error_500(Protocol::Chat), fake::chat_text("ok")]);
    assert_eq!(
        chat_client(&fake)
            .complete(&render_request())
            .unwrap()
            .text
            .as_deref(),
        Some("ok")
    );
    fake.finish();

    let fake = FakeProvider::with_entries([
        fake::error(Protocol::Messages, 529, "overloaded {{key}}"),
        fake::error(Protocol::Messages, 503, "unavailable"),
        fake::error(Protocol::Messages, 502, "bad gateway"),
        fake::error_500(Protocol::Messages),
    ]);
    let err = expect_err(messages_client(&fake).complete(&render_request()));
    assert_eq!(
        err.to_string(),
        "anthropic unavailable (HTTP 500) after 4 attempts"
    );
    assert_eq!(fake.request_count(), 4);
    fake.finish();
}

#[test]
fn client_errors_are_not_retried() {
    for (entry, status) in [
        (fake::error_401(Protocol::Chat), 401),
        (fake::error_402(Protocol::Chat), 402),
        (fake::error_400_temperature(Protocol::Chat), 400),
        (fake::error_404(Protocol::Chat), 404),
        (fake::error(Protocol::Chat, 422, "bad"), 422),
    ] {
        let fake = FakeProvider::with_entries([entry]);
        let err = expect_err(chat_client(&fake).complete(&render_request()));
        assert_eq!(fake.request_count(), 1, "HTTP {status} was retried: {err}");
        fake.finish();
    }
}

// ---------------------------------------------------------------------------------------------
// Hints (HOST.md §5.7)
// ---------------------------------------------------------------------------------------------

fn hint_for(protocol: Protocol, entry: fake::Entry, req: &ModelRequest) -> String {
    let fake = FakeProvider::with_entries([entry]);
    let client = match protocol {
        Protocol::Chat => chat_client(&fake),
        Protocol::Messages => messages_client(&fake),
    };
    let err = expect_err(client.complete(req));
    // The fake saw the key, and echoed it in its body; the hint must not carry it.
    assert_eq!(fake.requests()[0].received_key().as_deref(), Some(CANARY));
    fake.finish();
    err.to_string()
}

#[test]
fn every_hint_of_host_5_7() {
    let render = render_request();
    let compile = compile_request();
    assert_eq!(
        hint_for(Protocol::Chat, fake::error_401(Protocol::Chat), &render),
        "openrouter rejected the key in FAKE_KEY (HTTP 401): check FAKE_KEY"
    );
    assert_eq!(
        hint_for(
            Protocol::Messages,
            fake::error(Protocol::Messages, 403, "forbidden {{key}}"),
            &render
        ),
        "anthropic rejected the key in FAKE_KEY (HTTP 403): check FAKE_KEY"
    );
    assert_eq!(
        hint_for(Protocol::Chat, fake::error_402(Protocol::Chat), &render),
        "insufficient credits on the openrouter account behind FAKE_KEY (HTTP 402): top it up"
    );
    assert_eq!(
        hint_for(
            Protocol::Messages,
            fake::error(
                Protocol::Messages,
                400,
                "Your credit balance is too low ({{key}})"
            ),
            &render
        ),
        "insufficient credits on the anthropic account behind FAKE_KEY (HTTP 400): top it up"
    );
    // The temperature hint only when the request carried a temperature (reactor.yml sets
    // one); otherwise the provider's own message (issue 8 item 7).
    let mut with_temperature = render.clone();
    with_temperature.temperature = Some(0.3);
    assert_eq!(
        hint_for(
            Protocol::Chat,
            fake::error_400_temperature(Protocol::Chat),
            &with_temperature
        ),
        "model 'render-model' rejects temperature: delete model.temperature from reactor.yml (or set model.reasoning_effort: none)"
    );
    assert_eq!(
        hint_for(
            Protocol::Chat,
            fake::error_400_temperature(Protocol::Chat),
            &render
        ),
        "openrouter rejected the request (HTTP 400): Unsupported parameter: 'temperature' is not supported with this model (key [redacted])"
    );
    let fake = FakeProvider::with_entries([fake::error_404(Protocol::Chat)]);
    let err = expect_err(chat_client(&fake).complete(&compile));
    assert_eq!(
        err.to_string(),
        format!(
            "model 'compile-model' or its endpoint was not found at {} (HTTP 404): check model.compile_model and model.base_url",
            fake.base_url()
        )
    );
    fake.finish();
    let fake = FakeProvider::with_entries([fake::error_404(Protocol::Messages)]);
    let err = expect_err(messages_client(&fake).complete(&render));
    assert!(
        err.to_string()
            .ends_with("(HTTP 404): check model.render_model and model.base_url"),
        "{err}"
    );
    fake.finish();
    assert_eq!(
        hint_for(
            Protocol::Chat,
            fake::error(
                Protocol::Chat,
                422,
                "Invalid schema for key {{key}}\nsecond line"
            ),
            &render
        ),
        "openrouter rejected the request (HTTP 422): Invalid schema for key [redacted]"
    );
    assert_eq!(
        hint_for(
            Protocol::Messages,
            fake::error(Protocol::Messages, 400, "messages: roles must alternate"),
            &render
        ),
        "anthropic rejected the request (HTTP 400): messages: roles must alternate"
    );
    assert_eq!(
        hint_for(
            Protocol::Chat,
            fake::malformed(Protocol::Chat, "<html>gateway {{key}}</html>"),
            &render
        )
        .split(" (")
        .next()
        .unwrap(),
        "unexpected response from openrouter: body is not JSON"
    );
    assert_eq!(
        hint_for(
            Protocol::Chat,
            fake::malformed(Protocol::Chat, "{}"),
            &render
        ),
        "unexpected response from openrouter: no choices in the response"
    );
    assert_eq!(
        hint_for(
            Protocol::Messages,
            fake::malformed(Protocol::Messages, "{\"id\": \"x\"}"),
            &render
        ),
        "unexpected response from anthropic: content is missing"
    );
    assert_eq!(
        hint_for(Protocol::Chat, fake::malformed(Protocol::Chat, ""), &render),
        "unexpected response from openrouter: empty body"
    );
    assert_eq!(
        hint_for(
            Protocol::Chat,
            fake::chat_refusal("I cannot help with {{key}}"),
            &render
        ),
        "model refused: I cannot help with [redacted]"
    );
}

#[test]
fn unreachable_provider_after_retries() {
    // A port that was just bound and released: nothing listens there.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let base = format!("http://127.0.0.1:{port}/v1");
    let client = ProviderClient::new(
        config("openrouter", &base),
        ApiKey::new(CANARY),
        fast_settings(),
    );
    let err = expect_err(client.complete(&render_request()));
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("could not reach {base}: ")),
        "{text}"
    );
    assert!(matches!(err, ModelError::Unreachable { .. }));
}

#[test]
fn timeouts_are_retried_then_reported() {
    let short = HttpSettings {
        attempt_timeout: Duration::from_millis(800),
        ..fast_settings()
    };
    let fake = FakeProvider::with_entries([
        fake::chat_text("late").delayed(Duration::from_secs(3)),
        fake::chat_text("on time"),
    ]);
    let client = ProviderClient::new(
        config("openrouter", &fake.base_url()),
        ApiKey::new(CANARY),
        short.clone(),
    );
    assert_eq!(
        client.complete(&render_request()).unwrap().text.as_deref(),
        Some("on time")
    );
    assert_eq!(fake.request_count(), 2);
    fake.finish();

    let fake = FakeProvider::with_entries(
        (0..2).map(|_| fake::chat_text("late").delayed(Duration::from_secs(3))),
    );
    let client = ProviderClient::new(
        config("openrouter", &fake.base_url()),
        ApiKey::new(CANARY),
        HttpSettings {
            max_attempts: 2,
            ..short
        },
    );
    let err = expect_err(client.complete(&render_request()));
    assert_eq!(
        err.to_string(),
        format!(
            "openrouter accepted the request at {} but sent no complete response within 800 ms (2 attempts): check the endpoint, or raise model.timeout in reactor.yml",
            fake.base_url()
        )
    );
    assert_eq!(fake.request_count(), 2);
    fake.finish();

    // With four attempts allowed, a timed-out attempt is still retried only once.
    let fake = FakeProvider::with_entries(
        (0..2).map(|_| fake::chat_text("late").delayed(Duration::from_secs(3))),
    );
    let client = ProviderClient::new(
        config("openrouter", &fake.base_url()),
        ApiKey::new(CANARY),
        short,
    );
    let err = expect_err(client.complete(&render_request()));
    assert!(
        matches!(err, ModelError::TimedOut { attempts: 2, .. }),
        "{err}"
    );
    assert_eq!(fake.request_count(), 2);
    fake.finish();
}

#[test]
fn a_provider_that_never_answers_ends_after_two_attempts() {
    let server = RawServer::start(Behaviour::Hang);
    let client = ProviderClient::new(
        config("anthropic", &server.base_url()),
        ApiKey::new(CANARY),
        HttpSettings {
            attempt_timeout: Duration::from_millis(300),
            ..fast_settings()
        },
    );
    let err = expect_err(client.complete(&render_request()));
    assert_eq!(
        err.to_string(),
        format!(
            "anthropic accepted the request at {} but sent no complete response within 300 ms (2 attempts): check the endpoint, or raise model.timeout in reactor.yml",
            server.base_url()
        )
    );
    assert_eq!(server.accepted(), 2);
    assert!(server.heads()[0].starts_with("POST /v1/messages HTTP/1.1"));
}

#[test]
fn a_body_cut_short_is_a_connection_closed_mid_response() {
    let server = RawServer::start(Behaviour::Truncated {
        body: r#"{"id":"chatcmpl-fake","choices":[{"#.into(),
        announced: 4000,
    });
    let err = expect_err(chat_client_at(&server.base_url()).complete(&render_request()));
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "openrouter closed the connection mid-response at {} (4 attempts): response body incomplete (",
            server.base_url()
        )),
        "{text}"
    );
    assert!(!text.contains("could not reach"), "{text}");
    assert_clean(&text);
    assert_eq!(server.accepted(), 4);
}

#[test]
fn dropped_connections_are_retried_then_reported() {
    let fake = FakeProvider::with_entries([fake::dropped(Protocol::Chat), fake::chat_text("ok")]);
    assert_eq!(
        chat_client(&fake)
            .complete(&render_request())
            .unwrap()
            .text
            .as_deref(),
        Some("ok")
    );
    fake.finish();

    let fake = FakeProvider::with_entries((0..4).map(|_| fake::dropped(Protocol::Messages)));
    let err = expect_err(messages_client(&fake).complete(&render_request()));
    assert!(
        err.to_string().starts_with(&format!(
            "anthropic closed the connection mid-response at {} (4 attempts): ",
            fake.base_url()
        )),
        "{err}"
    );
    assert_eq!(fake.request_count(), 4);
    fake.finish();
}

#[test]
fn error_bodies_inside_200_are_errors_with_their_status() {
    // Retryable code inside: retried, then succeeds.
    let fake = FakeProvider::with_entries([
        fake::error_in_200(Protocol::Chat, Some(503), "upstream down"),
        fake::chat_text("ok"),
    ]);
    assert_eq!(
        chat_client(&fake)
            .complete(&render_request())
            .unwrap()
            .text
            .as_deref(),
        Some("ok")
    );
    fake.finish();
    // No code: 502, retried to the end.
    let fake = FakeProvider::with_entries(
        (0..4).map(|_| fake::error_in_200(Protocol::Chat, None, "provider returned error")),
    );
    let err = expect_err(chat_client(&fake).complete(&render_request()));
    assert_eq!(
        err.to_string(),
        "openrouter unavailable (HTTP 502) after 4 attempts"
    );
    fake.finish();
    // A client-error code inside: not retried, the message is reported.
    let fake = FakeProvider::with_entries([fake::error_in_200(
        Protocol::Chat,
        Some(400),
        "context too long for key {{key}}",
    )]);
    let err = expect_err(chat_client(&fake).complete(&render_request()));
    assert_eq!(
        err.to_string(),
        "openrouter rejected the request (HTTP 400): context too long for key [redacted]"
    );
    assert_eq!(fake.request_count(), 1);
    fake.finish();
    // Messages error body inside a 200.
    let fake = FakeProvider::with_entries(
        (0..4).map(|_| fake::error_in_200(Protocol::Messages, None, "internal")),
    );
    let err = expect_err(messages_client(&fake).complete(&render_request()));
    assert_eq!(
        err.to_string(),
        "anthropic unavailable (HTTP 500) after 4 attempts"
    );
    fake.finish();
}

#[test]
fn oversized_bodies_are_unexpected_responses() {
    let big = format!("{{\"pad\": \"{}\"}}", "x".repeat(8192));
    let fake = FakeProvider::with_entries([fake::malformed(Protocol::Chat, &big)]);
    let client = ProviderClient::new(
        config("openrouter", &fake.base_url()),
        ApiKey::new(CANARY),
        HttpSettings {
            body_limit: 1024,
            ..fast_settings()
        },
    );
    let err = expect_err(client.complete(&render_request()));
    assert_eq!(
        err.to_string(),
        "unexpected response from openrouter: response body is larger than 1024 bytes"
    );
    fake.finish();
}

// ---------------------------------------------------------------------------------------------
// Usage → cost
// ---------------------------------------------------------------------------------------------

#[test]
fn usage_maps_to_fresh_and_reused_for_both_protocols() {
    let fake = FakeProvider::with_entries([
        fake::chat_text("a").with_usage(FakeUsage {
            input: 1000,
            output: 50,
            cached: 600,
            cache_write: 0,
        }),
        fake::chat_text("b").without_usage(),
        fake::messages_text("c").with_usage(FakeUsage {
            input: 20,
            output: 30,
            cached: 900,
            cache_write: 100,
        }),
    ]);
    let chat = chat_client(&fake);
    let r = chat.complete(&render_request()).unwrap();
    assert_eq!(
        r.usage.tokens(),
        TokenCost {
            fresh: 450,
            reused: 600
        }
    );
    let r = chat.complete(&render_request()).unwrap();
    assert_eq!(
        r.usage.tokens(),
        TokenCost {
            fresh: 0,
            reused: 0
        }
    );
    let r = messages_client(&fake).complete(&render_request()).unwrap();
    assert_eq!(
        r.usage.tokens(),
        TokenCost {
            fresh: 150,
            reused: 900
        }
    );
    assert_eq!(r.usage.cache_write, 100);
    fake.finish();
}

#[test]
fn truncated_answers_are_flagged() {
    let fake = FakeProvider::with_entries([
        fake::chat_json(&json!({"nodes": []})).with_stop_reason("length"),
        fake::messages_submit("forme_output", json!({"nodes": []})).with_stop_reason("max_tokens"),
    ]);
    let r = chat_client(&fake).complete(&compile_request()).unwrap();
    assert!(r.truncated());
    assert!(r.structured_answer(&forme_schema()).is_err());
    let r = messages_client(&fake).complete(&compile_request()).unwrap();
    assert!(r.truncated());
    fake.finish();
}

// ---------------------------------------------------------------------------------------------
// Secrets
// ---------------------------------------------------------------------------------------------

#[test]
fn the_key_never_appears_in_errors_or_debug_output() {
    // An sk- shaped key and the canary, through every error path that carries provider text.
    for key in [CANARY, "sk-or-v1-0123456789abcdef"] {
        let fake = FakeProvider::with_entries([
            fake::error(Protocol::Chat, 418, "teapot {{key}} Bearer {{key}}"),
            fake::error_in_200(Protocol::Chat, Some(409), "conflict {{key}}"),
            fake::malformed(Protocol::Chat, "{{key}} {{key}}"),
            fake::chat_refusal("{{key}}"),
        ]);
        let client = ProviderClient::new(
            config("openrouter", &fake.base_url()),
            ApiKey::new(key),
            fast_settings(),
        );
        for _ in 0..4 {
            let err = client.complete(&render_request()).unwrap_err();
            for text in [err.to_string(), format!("{err:?}"), format!("{client:?}")] {
                assert!(!text.contains(key), "key leaked: {text}");
            }
        }
        fake.finish();
    }
}

// ---------------------------------------------------------------------------------------------
// Record / replay
// ---------------------------------------------------------------------------------------------

#[test]
fn record_then_replay_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("records.json");
    let fake = FakeProvider::with_entries([
        fake::chat_tool_calls(&[("wm_read", json!({"path": "a", "offset": null}))]).with_usage(
            FakeUsage {
                input: 40,
                output: 4,
                cached: 10,
                cache_write: 0,
            },
        ),
        fake::chat_json(&json!({"nodes": ["a"]})),
    ]);
    let recorder = RecordingClient::new(chat_client(&fake), &path);
    let render = render_request();
    let compile = compile_request();
    let live1 = recorder.complete(&render).unwrap();
    let live2 = recorder.complete(&compile).unwrap();
    fake.finish();

    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.ends_with('\n'));
    let file = parse_record_file(&text).unwrap();
    assert_eq!(file.format, RECORD_FORMAT);
    assert_eq!(file.records.len(), 2);
    assert_eq!(file.records[0].id, json!(1));
    assert_eq!(recorder.records(), file.records);

    let replay = ReplayClient::load(&path).unwrap();
    assert_eq!(replay.remaining(), 2);
    assert_eq!(replay.complete(&render).unwrap(), live1);
    // A mismatch names the record and the first differing path, and consumes nothing.
    let mut other = compile.clone();
    other.messages[1] = Message::user("A DIFFERENT TASK");
    let err = replay.complete(&other).unwrap_err();
    assert_eq!(
        err.to_string(),
        "request mismatch at record 2: first difference at $.messages[1].text: expected \"TASK\", got \"A DIFFERENT TASK\""
    );
    let mut other = compile.clone();
    other.temperature = Some(0.5);
    assert_eq!(
        replay.complete(&other).unwrap_err().to_string(),
        "request mismatch at record 2: first difference at $.temperature: expected nothing, got 0.5"
    );
    assert_eq!(replay.remaining(), 1);
    assert_eq!(replay.complete(&compile).unwrap(), live2);
    assert_eq!(replay.remaining(), 0);
    assert_eq!(
        replay.complete(&compile).unwrap_err().to_string(),
        "no remaining records"
    );
    assert_eq!(replay.calls().len(), 5);
    assert_eq!(
        live1.usage.tokens(),
        TokenCost {
            fresh: 34,
            reused: 10
        }
    );
}

#[test]
fn recording_skips_failed_calls() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rec.json");
    let fake = FakeProvider::with_entries([fake::error_401(Protocol::Chat), fake::chat_text("ok")]);
    let recorder = RecordingClient::new(chat_client(&fake), &path);
    assert!(recorder.complete(&render_request()).is_err());
    assert!(!path.exists());
    recorder.complete(&render_request()).unwrap();
    let file = parse_record_file(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(file.records.len(), 1);
    assert!(!std::fs::read_to_string(&path).unwrap().contains(CANARY));
    fake.finish();
}

// ---------------------------------------------------------------------------------------------
// The fake itself
// ---------------------------------------------------------------------------------------------

#[test]
fn fake_reports_unmatched_requests_and_unconsumed_entries() {
    let fake = FakeProvider::with_entries([fake::messages_text("never").when_purpose("render:z")]);
    let client = ProviderClient::new(
        config("openrouter", &fake.base_url()),
        ApiKey::new(CANARY),
        HttpSettings {
            max_attempts: 1,
            ..fast_settings()
        },
    );
    let err = client.complete(&render_request()).unwrap_err();
    // The fake's 500 carries an explanatory message (visible through the rejected hint path
    // only for 4xx; a 500 reports unavailability).
    assert_eq!(
        err.to_string(),
        "openrouter unavailable (HTTP 500) after 1 attempt"
    );
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].matched, None);
    let problems = fake.verify().unwrap_err();
    assert!(
        problems.contains("unmatched request POST /v1/chat/completions"),
        "{problems}"
    );
    assert!(
        problems.contains("unconsumed entry 'messages text'"),
        "{problems}"
    );
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fake.finish()));
    assert!(result.is_err(), "finish() must fail on leftovers");
}

#[test]
fn transport_follows_the_provider_label() {
    let c = config("anthropic", "http://127.0.0.1:1/v1/");
    assert_eq!(c.transport, Transport::Messages);
    assert_eq!(c.endpoint(), "http://127.0.0.1:1/v1/messages");
    let c = config("openrouter", "http://127.0.0.1:1/v1");
    assert_eq!(c.endpoint(), "http://127.0.0.1:1/v1/chat/completions");
}
