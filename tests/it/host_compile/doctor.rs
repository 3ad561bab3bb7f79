//! `reactor doctor`: text and JSON, a config error, `--live`, docker availability.

use super::*;

// ---------------------------------------------------------------------------------------------
// doctor
// ---------------------------------------------------------------------------------------------

fn doctor_report(p: &Proj, base_url: &str, key: &str, state: &str, ir: &str, tail: &str) -> String {
    format!(
        "reactor doctor

  version        reactor 0.2.0
  config         {} (ok)
  provider       openrouter (chat-completions, {base_url})
  sources        provider reactor.yml, base_url reactor.yml, api_key_env reactor.yml, render_model reactor.yml, compile_model reactor.yml
  live key       {key}
  offline mode   not forced
  system prompt  embedded
  sandbox        mode none
  state dir      {} {state}
  writer         none
  compiled IR    {ir}
{tail}",
        p.path().join("reactor.yml").display(),
        p.state().display(),
    )
}

#[test]
fn doctor_reports_text_and_json() {
    let Some(shared) = shared_contracts() else {
        return;
    };
    let fake = FakeProvider::with_entries(script(Protocol::Chat));
    let p = Proj::new(&shared, "smallest-project", "openrouter", &fake.base_url());
    let base = fake.base_url();

    // Before any compile: nothing is created by doctor.
    let o = p.run(&["doctor"], WITH_KEY);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        o.stdout,
        doctor_report(
            &p,
            &base,
            "present (FAKE_KEY)",
            "(absent; parent writable)",
            "not compiled — run `reactor compile`",
            "\n  status: healthy-for-offline\n  live:   ready\n"
        )
    );
    assert!(!p.state().exists(), "doctor creates nothing");

    // A fresh compiled project.
    assert_eq!(p.run(&["compile"], WITH_KEY).code, 0);
    let o = p.run(&["doctor"], WITH_KEY);
    assert_eq!(o.code, 0);
    let expected = |key: &str, tail: &str| {
        doctor_report(
            &p,
            &base,
            key,
            "(writable)",
            "fresh (2 nodes, 1 edges)",
            tail,
        )
    };
    assert_eq!(
        o.stdout,
        expected(
            "present (FAKE_KEY)",
            "\n  status: healthy-for-offline\n  live:   ready\n"
        )
    );
    let o = p.run(&["--json", "doctor"], WITH_KEY);
    assert_eq!(o.code, 0);
    let j = o.json();
    assert_eq!(
        j,
        json!({
            "version": "0.2.0",
            "config": {"path": p.path().join("reactor.yml").display().to_string(),
                       "present": true, "ok": true},
            "provider": "openrouter",
            "transport": "chat-completions",
            "baseUrl": base,
            "apiKeyEnv": "FAKE_KEY",
            "endpoint": format!("{base}/chat/completions"),
            "sources": {"provider": "reactor.yml", "base_url": "reactor.yml",
                        "api_key_env": "reactor.yml", "render_model": "reactor.yml",
                        "compile_model": "reactor.yml"},
            "liveKeyPresent": true,
            "offlineForced": false,
            "systemPrompt": {"source": "embedded", "ok": true},
            "sandbox": {"mode": "none"},
            "stateDir": {"path": p.state().display().to_string(), "exists": true, "writable": true},
            "writer": null,
            "ir": {"freshness": "fresh", "contracts": 2, "nodes": 2, "edges": 1},
            "notes": [],
            "healthyForOffline": true,
            "healthyForLive": true
        })
    );

    // A missing key: healthy for offline, not ready for live.
    let o = p.run(&["doctor"], &[]);
    assert_eq!(o.code, 0);
    assert_eq!(
        o.stdout,
        expected(
            "absent (FAKE_KEY)",
            "\n  status: healthy-for-offline\n  live:   not ready — no key in FAKE_KEY\n"
        )
    );
    let j = p.run(&["--json", "doctor"], &[]).json();
    assert_eq!(
        (
            &j["liveKeyPresent"],
            &j["healthyForOffline"],
            &j["healthyForLive"]
        ),
        (&json!(false), &json!(true), &json!(false))
    );
    // The key in the project's .env counts (the clients' lookup), and is never printed.
    std::fs::write(
        p.path().join(".env"),
        format!("export FAKE_KEY=\"{CANARY}\"\n"),
    )
    .unwrap();
    let o = p.run(&["doctor"], &[]);
    assert!(o.stdout.contains("  live key       present (FAKE_KEY)\n"));
    assert!(!o.stdout.contains(CANARY));
    std::fs::remove_file(p.path().join(".env")).unwrap();

    // A stale cache, the current writer and the offline switch.
    let original = std::fs::read(p.path().join("weekly-brief.prose.md")).unwrap();
    p.edit_brief();
    let held = StateLock::acquire(&p.state()).unwrap();
    let o = p.run(
        &["doctor"],
        &[("FAKE_KEY", CANARY), ("REACTOR_OFFLINE", "1")],
    );
    assert_eq!(o.code, 0, "stale is not unhealthy");
    assert!(
        o.stdout
            .contains("  compiled IR    STALE (contract set changed) — run `reactor compile`\n")
    );
    assert!(
        o.stdout
            .contains(&format!("  writer         pid {}\n", std::process::id()))
    );
    assert!(
        o.stdout
            .contains("  offline mode   forced (REACTOR_OFFLINE)\n")
    );
    assert!(
        o.stdout
            .ends_with("  live:   not ready — offline mode is forced\n"),
        "{}",
        o.stdout
    );
    let j = p.run(&["--json", "--offline", "doctor"], WITH_KEY).json();
    assert_eq!(
        j["writer"],
        json!({"pid": std::process::id(), "daemon": false})
    );
    assert_eq!(
        j["ir"],
        json!({"freshness": "stale", "reason": "contract set changed", "contracts": 2,
               "nodes": 2, "edges": 1})
    );
    assert_eq!(j["offlineForced"], true);
    drop(held);
    std::fs::write(p.path().join("weekly-brief.prose.md"), &original).unwrap();

    // Notes: telemetry, a JavaScript connector plugin, a missing system prompt file.
    p.configure(
        "openrouter",
        &base,
        "compile-model",
        "telemetry:\n  enabled: false\n",
    );
    std::fs::write(p.path().join("connectors.js"), "module.exports = {}\n").unwrap();
    let o = p.run(
        &["doctor"],
        &[
            ("FAKE_KEY", CANARY),
            ("REACTOR_SKILL_PATH", "/nonexistent/SKILL.md"),
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stdout);
    assert!(
        o.stdout
            .contains("  system prompt  MISSING at /nonexistent/SKILL.md\n"),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains(
        "  telemetry      keys present in reactor.yml (ignored: no telemetry is sent)\n"
    ));
    assert!(o.stdout.contains(&format!(
        "  connectors.js  {} present (unsupported: JavaScript connector plugins are not loaded)\n",
        p.path().join("connectors.js").display()
    )));
    assert!(
        o.stdout.contains(
            "  compiled IR    unknown (REACTOR_SKILL_PATH: cannot read /nonexistent/SKILL.md"
        ),
        "{}",
        o.stdout
    );
    assert!(o.stdout.ends_with(
        "  live:   not ready — the system prompt file /nonexistent/SKILL.md is unusable\n"
    ));
    std::fs::remove_file(p.path().join("connectors.js")).unwrap();
    fake.finish();
}

#[test]
fn doctor_reports_a_config_error_and_no_contracts_with_exit_1() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("reactor.yml"),
        "model:\n  provider: openrouter\n  temprature: 0\n",
    )
    .unwrap();
    let o = reactor(d.path(), &["doctor"], &[]);
    assert_eq!(o.code, 1);
    let first = "reactor.yml:3:3: model.temprature: unknown key (expected one of: provider, render_model, compile_model, temperature, reasoning_effort, max_turns, base_url, api_key_env, max_tokens, timeout, connect_timeout, parallel_renders)";
    let cwd = reactor::host::project::absolute(d.path());
    assert!(
        o.stdout.contains(&format!(
            "  config         {} (ERROR: {first})\n",
            cwd.join("reactor.yml").display()
        )),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .contains(&format!("\n  status: UNHEALTHY — {first}\n")),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .ends_with("  live:   not ready — the configuration is invalid\n")
    );
    assert_eq!(o.stderr, "");
    let o = reactor(d.path(), &["--json", "doctor"], &[]);
    assert_eq!(o.code, 1);
    let j = o.json();
    assert_eq!(j["config"]["ok"], false);
    assert_eq!(j["config"]["error"], first);
    assert_eq!(j["provider"], Value::Null);
    assert_eq!(j["healthyForOffline"], false);

    // A provider that needs model ids it was not given.
    std::fs::write(d.path().join("reactor.yml"), "model:\n  provider: openai\n").unwrap();
    let o = reactor(d.path(), &["doctor"], &[]);
    assert_eq!(o.code, 1);
    assert!(
        o.stdout.contains(
            "(ERROR: reactor.yml:2:13: model.compile_model is required for provider 'openai')"
        ),
        "{}",
        o.stdout
    );

    // No contracts.
    std::fs::write(d.path().join("reactor.yml"), "state:\n  dir: ./st\n").unwrap();
    let o = reactor(d.path(), &["doctor"], &[]);
    assert_eq!(o.code, 1);
    assert!(o.stdout.contains("  config         "));
    assert!(
        o.stdout
            .contains("  compiled IR    no .prose.md contracts found in this project\n")
    );
    assert!(
        o.stdout
            .contains("  status: UNHEALTHY — no .prose.md contracts found in this project\n")
    );
    assert!(!d.path().join("st").exists());
    // Usage errors stay usage errors.
    let o = reactor(d.path(), &["doctor", "--bogus"], &[]);
    assert_eq!(o.code, 2);
    let o = reactor(d.path(), &["--project", "nope", "doctor"], &[]);
    assert_eq!(o.code, 2);
}

#[test]
fn doctor_live_sends_one_small_request() {
    let Some(shared) = shared_contracts() else {
        return;
    };
    // OK over Chat Completions.
    let fake = FakeProvider::with_entries([fake::chat_text("ok").when_purpose("doctor:live")]);
    let p = Proj::new(&shared, "smallest-project", "openrouter", &fake.base_url());
    let o = p.run(&["doctor", "--live"], WITH_KEY);
    assert_eq!(o.code, 0, "{}", o.stdout);
    let line = o
        .stdout
        .lines()
        .find(|l| l.starts_with("  live smoke     "))
        .expect("a live smoke line");
    let ms = line
        .strip_prefix("  live smoke     ok (")
        .and_then(|r| r.strip_suffix(" ms)"))
        .unwrap_or_else(|| panic!("{line}"));
    assert!(ms.parse::<u64>().is_ok(), "{line}");
    assert!(o.stdout.ends_with("  live:   ready\n"));
    let requests = fake.requests();
    fake.finish();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(
        r.header("authorization"),
        Some(format!("Bearer {CANARY}").as_str())
    );
    let body = r.json();
    assert_eq!(body["model"], "render-model");
    assert_eq!(body["max_tokens"], 64);
    assert!(body.get("tools").is_none() && body.get("response_format").is_none());
    assert_eq!(body["messages"].as_array().unwrap().len(), 1);
    assert_eq!(body["messages"][0]["role"], "user");

    // A 401: FAILED with the hint, exit 1, the key nowhere.
    let fake = FakeProvider::with_entries([
        fake::error_401(Protocol::Chat).when_purpose("doctor:live"),
        fake::error_401(Protocol::Chat).when_purpose("doctor:live"),
    ]);
    p.configure("openrouter", &fake.base_url(), "compile-model", "");
    let o = p.run(&["doctor", "--live"], WITH_KEY);
    assert_eq!(o.code, 1);
    assert!(
        o.stdout.contains(
            "  live smoke     FAILED — openrouter rejected the key in FAKE_KEY (HTTP 401): check FAKE_KEY\n"
        ),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains("  status: healthy-for-offline\n"));
    assert!(
        o.stdout
            .ends_with("  live:   not ready — the live smoke request failed\n")
    );
    assert_no_key(&o, p.path());
    let o = p.run(&["--json", "doctor", "--live"], WITH_KEY);
    assert_eq!(o.code, 1);
    let j = o.json();
    assert_eq!(
        j["live"],
        json!({"ran": true, "ok": false,
               "detail": "openrouter rejected the key in FAKE_KEY (HTTP 401): check FAKE_KEY"})
    );
    assert_eq!(j["healthyForLive"], false);
    assert_eq!(j["healthyForOffline"], true);
    assert_no_key(&o, p.path());
    assert_eq!(fake.request_count(), 2, "a 401 is not retried");
    fake.finish();

    // No key: nothing is sent.
    let fake = FakeProvider::start();
    p.configure("openrouter", &fake.base_url(), "compile-model", "");
    let o = p.run(&["doctor", "--live"], &[]);
    assert_eq!(o.code, 1);
    assert!(
        o.stdout
            .contains("  live smoke     FAILED — FAKE_KEY is not set\n"),
        "{}",
        o.stdout
    );
    assert_eq!(fake.request_count(), 0);
    fake.finish();

    // Anthropic Messages: max_tokens 64, x-api-key.
    let fake = FakeProvider::with_entries([fake::messages_text("ok").when_purpose("doctor:live")]);
    p.configure(
        "anthropic",
        &fake.base_url(),
        "compile-model",
        "  reasoning_effort: low\n",
    );
    let o = p.run(&["doctor", "--live"], WITH_KEY);
    assert_eq!(o.code, 0, "{}", o.stdout);
    assert!(o.stdout.contains(&format!(
        "  provider       anthropic (messages, {})\n",
        fake.base_url()
    )));
    assert!(o.stdout.contains(
        "  reasoning_effort set with the anthropic provider (ignored: Messages requests do not carry it)\n"
    ), "{}", o.stdout);
    let requests = fake.requests();
    fake.finish();
    let r = &requests[0];
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.header("x-api-key"), Some(CANARY));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(r.json()["max_tokens"], 64);
    assert!(r.json().get("tools").is_none());
}

#[test]
fn doctor_reports_docker_availability_through_path() {
    let Some(shared) = shared_contracts() else {
        return;
    };
    let p = Proj::new(
        &shared,
        "smallest-project",
        "openrouter",
        "http://127.0.0.1:9/v1",
    );
    p.configure(
        "openrouter",
        "http://127.0.0.1:9/v1",
        "compile-model",
        "sandbox:\n  mode: docker\n",
    );
    // A `docker` first on PATH: a link to `true` (answers) or `false` (no daemon). A link, not
    // a freshly written script, so no exec can race a writer (ETXTBSY).
    for (target, line, ready) in [
        (
            "true",
            "  sandbox        mode docker (docker available)\n",
            true,
        ),
        (
            "false",
            "  sandbox        mode docker (docker NOT available)\n",
            false,
        ),
    ] {
        let Some(exe) = ["/bin", "/usr/bin"]
            .iter()
            .map(|d| Path::new(d).join(target))
            .find(|p| p.exists())
        else {
            eprintln!("SKIPPED: no {target} executable in /bin or /usr/bin");
            return;
        };
        let bin_dir = tempfile::tempdir().unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(&exe, bin_dir.path().join("docker")).unwrap();
        let path = format!(
            "{}:{}",
            bin_dir.path().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let o = p.run(&["doctor"], &[("FAKE_KEY", CANARY), ("PATH", &path)]);
        assert_eq!(o.code, 0, "{}", o.stdout);
        assert!(o.stdout.contains(line), "{}", o.stdout);
        if ready {
            assert!(o.stdout.ends_with("  live:   ready\n"), "{}", o.stdout);
        } else {
            assert!(
                o.stdout.ends_with(
                    "  live:   not ready — Docker is not available (sandbox.mode docker)\n"
                ),
                "{}",
                o.stdout
            );
        }
        let j = p
            .run(
                &["--json", "doctor"],
                &[("FAKE_KEY", CANARY), ("PATH", &path)],
            )
            .json();
        assert_eq!(
            j["sandbox"],
            json!({"mode": "docker", "dockerAvailable": ready})
        );
    }
    // unix-local: a warning on the sandbox line.
    p.configure(
        "openrouter",
        "http://127.0.0.1:9/v1",
        "compile-model",
        "sandbox:\n  mode: unix-local\n",
    );
    let o = p.run(&["doctor"], WITH_KEY);
    assert!(o.stdout.contains(
        "  sandbox        mode unix-local (WARNING: shell_exec runs on this host without isolation)\n"
    ), "{}", o.stdout);
}
