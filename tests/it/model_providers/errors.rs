//! Errors: every hint of HOST.md §5.7, error bodies inside a 200, oversized bodies, and the key
//! never appearing in errors or debug output.

use super::*;

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
