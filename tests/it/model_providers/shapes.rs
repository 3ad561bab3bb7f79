//! Request shapes of both protocols, purpose guards, and usage mapped to cost.

use super::*;

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
