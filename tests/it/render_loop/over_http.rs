//! Real HTTP against the loopback fake provider on both protocols.

use super::*;

fn tool_names(body: &Value, protocol: Protocol) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| match protocol {
            Protocol::Chat => t["function"]["name"].as_str().unwrap().to_string(),
            Protocol::Messages => t["name"].as_str().unwrap().to_string(),
        })
        .collect()
}

const TOOLS: [&str; 9] = [
    "wm_list",
    "wm_read",
    "wm_list_upstream",
    "wm_read_upstream",
    "ws_list",
    "ws_read",
    "ws_write",
    "ws_delete",
    "finish",
];

#[test]
fn chat_completions_render_over_http() {
    let truth = r#"{"prices":[1,2]}"#;
    let fake = FakeProvider::with_entries([
        fake::chat_tool_calls(&[
            (
                "ws_write",
                json!({"path": "truth.json", "content": truth, "encoding": null}),
            ),
            ("wm_list", json!({})),
        ])
        .when_purpose("render:price-watch")
        .with_usage(FakeUsage {
            input: 1000,
            output: 50,
            cached: 800,
            cache_write: 0,
        }),
        fake::chat_tool_calls(&[(
            "finish",
            json!({"status": "done", "reason": null,
                   "semantic_diff": {"summary": "two prices", "notes": null},
                   "attestations": {"own-page": true}}),
        )])
        .when_purpose("render:price-watch")
        .with_usage(FakeUsage {
            input: 1200,
            output: 20,
            cached: 1000,
            cache_write: 0,
        }),
    ]);
    let root = tempfile::tempdir().unwrap();
    let s = settings(root.path());
    let fx = Fixture::new(Vec::new());
    let r = real_agent(provider("openrouter", &fake), &s);
    let p = done(r.render(&fx.ctx("price-watch")));
    assert_eq!(p.files, vec![file("truth.json", truth)]);
    assert_eq!(p.attestations.get("own-page"), Some(&true));
    assert_eq!(cost(&p.usage), (250 + 220, 1800));
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    for q in &reqs {
        assert_eq!(q.header("x-reactor-purpose"), Some("render:price-watch"));
        assert_eq!(q.received_key().as_deref(), Some(CANARY));
        assert!(q.path.ends_with("/v1/chat/completions"));
    }
    let b1 = reqs[0].json();
    assert_eq!(b1["model"], "render-model");
    assert_eq!(b1["tool_choice"], "auto");
    assert_eq!(b1["stream"], false);
    assert!(b1.get("temperature").is_none());
    assert_eq!(tool_names(b1, Protocol::Chat), TOOLS);
    let msgs = b1["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 2);
    assert_eq!(msgs[0]["role"], "system");
    let system = msgs[0]["content"].as_str().unwrap();
    let prompt = system_prompt_from(None).unwrap().text;
    let expected_head = format!(
        "{prompt}\n\n---\n\n{}\n\n---\n\n# This render",
        node_contract(&watch_brief())
    );
    assert!(
        system.starts_with(&expected_head),
        "three layers joined by the separator"
    );
    assert!(system.contains("cold start, your workspace is empty."));
    assert_eq!(msgs[1]["role"], "user");
    assert!(
        msgs[1]["content"]
            .as_str()
            .unwrap()
            .contains("empty (cold start)")
    );
    let finish_params = &b1["tools"][8]["function"]["parameters"];
    assert_eq!(
        finish_params["required"],
        json!(["status", "reason", "semantic_diff", "attestations"])
    );
    let b2 = reqs[1].json();
    let msgs = b2["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 5);
    assert_eq!(msgs[2]["role"], "assistant");
    assert_eq!(msgs[2]["tool_calls"][0]["id"], "call_fake_0");
    assert_eq!(msgs[2]["tool_calls"][0]["function"]["name"], "ws_write");
    assert!(msgs[2]["tool_calls"][0]["function"]["arguments"].is_string());
    assert_eq!(
        msgs[3],
        json!({"role": "tool", "tool_call_id": "call_fake_0",
               "content": json!({"path": "truth.json", "bytes": truth.len()}).to_string()})
    );
    assert_eq!(
        msgs[4],
        json!({"role": "tool", "tool_call_id": "call_fake_1",
               "content": "{\"version\":null,\"files\":[]}"})
    );
    assert_eq!(tool_names(b2, Protocol::Chat), TOOLS);
    fake.finish();
}

#[test]
fn anthropic_messages_render_over_http() {
    let fake = FakeProvider::with_entries([
        fake::messages_tool_calls(&[
            (
                "ws_write",
                json!({"path": "brief.md", "content": "brief", "encoding": "utf8"}),
            ),
            ("wm_read", json!({"path": "missing.md", "offset": null})),
        ])
        .when_purpose("render:plain")
        .with_usage(FakeUsage {
            input: 150,
            output: 50,
            cached: 800,
            cache_write: 50,
        }),
        fake::messages_finish(json!({"status": "done", "reason": null, "semantic_diff": null}))
            .when_purpose("render:plain")
            .with_usage(FakeUsage {
                input: 100,
                output: 10,
                cached: 0,
                cache_write: 0,
            }),
    ]);
    let root = tempfile::tempdir().unwrap();
    let mut s = settings(root.path());
    s.provider = "anthropic".into();
    s.temperature = Some(0.0);
    let fx = Fixture::new(Vec::new());
    let r = real_agent(provider("anthropic", &fake), &s);
    let p = done(r.render(&fx.ctx("plain")));
    assert_eq!(p.files, vec![file("brief.md", "brief")]);
    // Turn 1: 150 + 50 + 50 fresh, 800 reused; turn 2: 110 fresh.
    assert_eq!(cost(&p.usage), (360, 800));
    assert_eq!(p.usage.unwrap().provider, "anthropic");
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    for q in &reqs {
        assert_eq!(q.header("x-reactor-purpose"), Some("render:plain"));
        assert_eq!(q.header("anthropic-version"), Some("2023-06-01"));
        assert!(q.path.ends_with("/v1/messages"));
    }
    let b1 = reqs[0].json();
    let prompt = system_prompt_from(None).unwrap().text;
    assert_eq!(
        b1["system"][0],
        json!({"type": "text", "text": prompt, "cache_control": {"type": "ephemeral"}})
    );
    let second = b1["system"][1]["text"].as_str().unwrap();
    assert!(second.starts_with("# Node contract: plain (id `plain`, kind responsibility)"));
    assert!(second.contains("\n\n---\n\n# This render"));
    assert_eq!(b1["tool_choice"], json!({"type": "auto"}));
    assert_eq!(b1["temperature"], json!(0.0));
    assert_eq!(tool_names(b1, Protocol::Messages), TOOLS);
    assert!(b1["tools"][0]["input_schema"].is_object());
    assert_eq!(b1["messages"].as_array().unwrap().len(), 1);
    let b2 = reqs[1].json();
    let msgs = b2["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 3);
    assert_eq!(msgs[1]["role"], "assistant");
    assert_eq!(msgs[1]["content"][0]["type"], "tool_use");
    assert_eq!(msgs[2]["role"], "user");
    assert_eq!(
        msgs[2]["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "toolu_fake_0",
             "content": "{\"path\":\"brief.md\",\"bytes\":5}"},
            {"type": "tool_result", "tool_use_id": "toolu_fake_1",
             "content": "{\"error\":\"not found: missing.md\"}", "is_error": true}
        ])
    );
    fake.finish();
}

#[test]
fn http_401_fails_the_render_with_the_hint_and_no_key() {
    let fake = FakeProvider::with_entries([fake::error_401(Protocol::Chat)]);
    let root = tempfile::tempdir().unwrap();
    let s = settings(root.path());
    let fx = Fixture::new(vec![file("a.txt", "a")]);
    let r = real_agent(provider("openrouter", &fake), &s);
    let f = failed(r.render(&fx.ctx("plain")));
    assert_eq!(
        f.reason,
        "model call failed: openrouter rejected the key in FAKE_KEY (HTTP 401): check FAKE_KEY"
    );
    assert!(!f.reason.contains(CANARY));
    assert_eq!(f.usage, None);
    assert!(!work_dir(root.path(), "default", "plain").exists());
    assert_eq!(fake.request_count(), 1, "a 401 is not retried");
    fake.finish();
}
