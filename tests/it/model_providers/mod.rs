//! The provider clients (HOST.md §5) against the loopback fake provider (HOST.md §11.2):
//! request shapes of both protocols, retries, timeouts, error hints, usage mapping, redaction,
//! and record/replay (RUNTIME.md §13.2).

mod errors;
mod recording;
mod retries;
mod shapes;

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
