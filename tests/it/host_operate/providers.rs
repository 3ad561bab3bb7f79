//! Providers that misbehave or live elsewhere: one that never answers, validated timeouts, the
//! base-URL variables and `doctor` naming their source, an Anthropic base URL without `/v1`,
//! and messages that say what happened.

use super::*;

#[test]
fn a_provider_that_never_answers_ends_with_one_line_after_two_attempts() {
    let server = RawServer::start(Behaviour::Hang);
    let Some(p) = project_with(&model_block(
        "openrouter",
        &server.base_url(),
        "  timeout: 1s\n  connect_timeout: 2s\n",
    )) else {
        return;
    };
    let o = reactor(p.path(), &["compile"], &[]);
    assert_eq!(o.code, 1, "{}{}", o.stdout, o.stderr);
    assert_eq!(
        o.stderr,
        format!(
            "reactor: error: compile failed: openrouter accepted the request at {} but sent no complete response within 1 s (2 attempts): check the endpoint, or raise model.timeout in reactor.yml\n",
            server.base_url()
        )
    );
    assert_eq!(o.stdout, "");
    // The first attempt and one retry, no more.
    assert_eq!(server.accepted(), 2);
    for head in server.heads() {
        assert!(
            head.starts_with("POST /v1/chat/completions HTTP/1.1"),
            "{head}"
        );
        assert!(
            head.to_ascii_lowercase()
                .contains("x-reactor-purpose: compile:forme")
        );
    }
    assert!(!p.path().join(".reactor/compile/manifest.json").exists());

    // The same through `run` with --json: one document, the same message.
    let o = reactor(p.path(), &["--json", "run"], &[]);
    assert_eq!(o.code, 1);
    let j: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(j["ok"], false);
    assert!(
        j["message"]
            .as_str()
            .unwrap()
            .ends_with("sent no complete response within 1 s (2 attempts): check the endpoint, or raise model.timeout in reactor.yml"),
        "{j}"
    );
    assert_eq!(server.accepted(), 4);

    // doctor --live honours model.timeout too.
    let o = reactor(p.path(), &["doctor", "--live"], &[]);
    assert_eq!(o.code, 1);
    assert!(
        o.stdout
            .contains("sent no complete response within 1 s (2 attempts)"),
        "{}",
        o.stdout
    );
    assert_eq!(server.accepted(), 6);
}

#[test]
fn timeouts_are_validated_with_their_line() {
    let Some(p) = project_with(&model_block(
        "openrouter",
        "http://127.0.0.1:9/v1",
        "  timeout: 0s\n",
    )) else {
        return;
    };
    let o = reactor(p.path(), &["compile"], &[]);
    assert_eq!(o.code, 1);
    assert_eq!(
        o.stderr,
        format!(
            "reactor: error: reactor.yml:7:12: model.timeout: invalid value '0s' (expected a duration above zero and at most 24h: an integer followed by ms, s, m or h, such as 30s or 5m)\nhint: fix {}\n",
            reactor::host::project::absolute(p.path())
                .join("reactor.yml")
                .display()
        )
    );
}

#[test]
fn base_url_variables_override_and_doctor_names_the_source() {
    let fake = FakeProvider::start();
    let dead = dead_base_url();
    // reactor.yml points at a dead port; REACTOR_MODEL_BASE_URL at the fake.
    let Some(p) = project_with(&model_block("openrouter", &dead, "  max_tokens: 2048\n")) else {
        return;
    };
    let env = [("REACTOR_MODEL_BASE_URL", fake.base_url())];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let o = reactor(p.path(), &["doctor"], &env);
    assert!(
        o.stdout.contains(&format!(
            "  provider       openrouter (chat-completions, {})\n  sources        provider reactor.yml, base_url REACTOR_MODEL_BASE_URL, api_key_env reactor.yml, render_model reactor.yml, compile_model reactor.yml\n",
            fake.base_url()
        )),
        "{}",
        o.stdout
    );
    push_compile(&fake);
    let o = reactor(p.path(), &["compile"], &env);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    let requests = fake.requests();
    assert_eq!(requests.len(), 5);
    // model.max_tokens reaches every request.
    for r in &requests {
        assert_eq!(r.json()["max_tokens"], 2048, "{}", r.raw_body);
    }
    fake.finish();

    // OPENAI_BASE_URL: honoured for provider openai when reactor.yml sets no base_url …
    let fake = FakeProvider::start();
    std::fs::write(
        p.path().join("reactor.yml"),
        "model:\n  provider: openai\n  api_key_env: FAKE_KEY\n  render_model: r\n  compile_model: c\n",
    )
    .unwrap();
    let openai = fake.base_url();
    let o = reactor(
        p.path(),
        &["--json", "doctor"],
        &[("OPENAI_BASE_URL", &openai)],
    );
    let j: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(j["baseUrl"], openai);
    assert_eq!(j["endpoint"], format!("{openai}/chat/completions"));
    assert_eq!(j["sources"]["base_url"], "OPENAI_BASE_URL");
    assert_eq!(j["sources"]["render_model"], "reactor.yml");
    // … and ignored for another provider, or when reactor.yml sets one.
    std::fs::write(
        p.path().join("reactor.yml"),
        format!("model:\n{}", model_block("openai", &dead, "")),
    )
    .unwrap();
    let o = reactor(
        p.path(),
        &["--json", "doctor"],
        &[("OPENAI_BASE_URL", &openai)],
    );
    let j: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(j["baseUrl"], dead);
    assert_eq!(j["sources"]["base_url"], "reactor.yml");
    // A bad value names the variable.
    let o = reactor(
        p.path(),
        &["compile"],
        &[("REACTOR_MODEL_BASE_URL", "ftp://x")],
    );
    assert_eq!(o.code, 1);
    assert_eq!(
        o.stderr,
        "reactor: error: REACTOR_MODEL_BASE_URL: expected an http:// or https:// URL, got 'ftp://x'\n"
    );
    fake.finish();
}

#[test]
fn an_anthropic_base_url_works_without_v1() {
    let fake = FakeProvider::with_entries([fake::messages_text("ok").when_purpose("doctor:live")]);
    let Some(p) = project_with(
        "  provider: anthropic\n  api_key_env: FAKE_KEY\n  render_model: r\n  compile_model: c\n",
    ) else {
        return;
    };
    let root = fake.base_url().trim_end_matches("/v1").to_string();
    let o = reactor(
        p.path(),
        &["doctor", "--live"],
        &[("ANTHROPIC_BASE_URL", &root)],
    );
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    assert!(
        o.stdout.contains("base_url ANTHROPIC_BASE_URL"),
        "{}",
        o.stdout
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/v1/messages");
    fake.finish();
}

#[test]
fn messages_say_what_happened() {
    // A body cut short: the connection closed mid-response, not "could not reach".
    let server = RawServer::start(Behaviour::Truncated {
        body: "{\"choices\": [".into(),
        announced: 5000,
    });
    let Some(p) = project_with(&model_block("openrouter", &server.base_url(), "")) else {
        return;
    };
    let o = reactor(p.path(), &["compile"], &[]);
    assert_eq!(o.code, 1);
    let first = o.stderr.lines().next().unwrap_or_default().to_string();
    assert!(
        first.starts_with(&format!(
            "reactor: error: compile failed: openrouter closed the connection mid-response at {} (4 attempts): response body incomplete",
            server.base_url()
        )),
        "{}",
        o.stderr
    );
    // No token was spent: no `tokens already spent: fresh=0 reused=0` hint.
    assert_eq!(o.stderr.lines().count(), 1, "{}", o.stderr);
    assert_eq!(server.accepted(), 4);

    // 429 with Retry-After: 120 says what the provider asked.
    let fake = FakeProvider::with_entries([fake::error_429(Protocol::Chat, Some("120"))]);
    let Some(p) = project_with(&model_block("openrouter", &fake.base_url(), "")) else {
        return;
    };
    let o = reactor(p.path(), &["compile"], &[]);
    assert_eq!(
        o.stderr,
        "reactor: error: compile failed: openrouter answered HTTP 429 and asked to retry after 120 s, longer than the 60 s reactor waits: try again after that, or lower --concurrency\n"
    );
    fake.finish();

    // A 400 about temperature with no model.temperature: the provider's message, no hint to
    // delete a key reactor.yml does not have; with one, the hint.
    let fake = FakeProvider::with_entries([fake::error_400_temperature(Protocol::Chat)]);
    std::fs::write(
        p.path().join("reactor.yml"),
        format!(
            "model:\n{}",
            model_block("openrouter", &fake.base_url(), "")
        ),
    )
    .unwrap();
    let o = reactor(p.path(), &["compile"], &[]);
    assert_eq!(
        o.stderr,
        "reactor: error: compile failed: openrouter rejected the request (HTTP 400): Unsupported parameter: 'temperature' is not supported with this model (key [redacted])\n"
    );
    fake.push(fake::error_400_temperature(Protocol::Chat));
    std::fs::write(
        p.path().join("reactor.yml"),
        format!(
            "model:\n{}",
            model_block("openrouter", &fake.base_url(), "  temperature: 0.2\n")
        ),
    )
    .unwrap();
    let o = reactor(p.path(), &["compile"], &[]);
    assert_eq!(
        o.stderr,
        "reactor: error: compile failed: model 'compile-model' rejects temperature: delete model.temperature from reactor.yml (or set model.reasoning_effort: none)\n"
    );
    fake.finish();

    // A model id the provider has no default for: located, with a hint.
    std::fs::write(
        p.path().join("reactor.yml"),
        "state:\n  dir: ./st\nmodel:\n  provider: openai\n  api_key_env: FAKE_KEY\n",
    )
    .unwrap();
    let o = reactor(p.path(), &["compile"], &[]);
    assert_eq!(o.code, 1);
    assert_eq!(
        o.stderr,
        "reactor: error: reactor.yml:4:13: model.compile_model is required for provider 'openai'\nhint: add `compile_model: <model id>` under `model:` in reactor.yml (the provider has no default compile model)\n"
    );
}
