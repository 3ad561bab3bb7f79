//! Provider failures: one line, exit 1, no partial cache, no key; a retried 500 then an answer.

use super::*;

// ---------------------------------------------------------------------------------------------
// Failures: one line, exit 1, no partial cache, no key
// ---------------------------------------------------------------------------------------------

struct Failure {
    label: &'static str,
    protocol: Protocol,
    entries: Vec<Entry>,
    env: Vec<(&'static str, &'static str)>,
    /// Extra `model:` lines of reactor.yml.
    yml: &'static str,
    /// The message after `reactor: error: compile failed: ` (`{base}` = the fake's base URL).
    message: String,
    /// A prefix is enough (transport errors carry the OS wording).
    prefix_only: bool,
    spent: (u64, u64),
    requests: usize,
}

fn forme_ok() -> Entry {
    fake::chat_json(&forme_answer())
        .when_purpose("compile:forme")
        .with_usage(usage(2000, 0, 300))
}

fn failures() -> Vec<Failure> {
    let chat = Protocol::Chat;
    let many = |e: fn() -> Entry| (0..4).map(|_| e()).collect::<Vec<_>>();
    vec![
        Failure {
            label: "401",
            protocol: chat,
            entries: vec![fake::error_401(chat).when_purpose("compile:forme")],
            env: vec![],
            yml: "",
            message: "openrouter rejected the key in FAKE_KEY (HTTP 401): check FAKE_KEY".into(),
            prefix_only: false,
            spent: (0, 0),
            requests: 1,
        },
        Failure {
            label: "401 anthropic",
            protocol: Protocol::Messages,
            entries: vec![fake::error_401(Protocol::Messages)],
            env: vec![],
            yml: "",
            message: "anthropic rejected the key in FAKE_KEY (HTTP 401): check FAKE_KEY".into(),
            prefix_only: false,
            spent: (0, 0),
            requests: 1,
        },
        Failure {
            label: "402 after forme",
            protocol: chat,
            entries: vec![
                forme_ok(),
                fake::error_402(chat).when_purpose("compile:canonicalizer:competitor-monitor"),
            ],
            env: vec![],
            yml: "",
            message: "insufficient credits on the openrouter account behind FAKE_KEY (HTTP 402): top it up".into(),
            prefix_only: false,
            spent: (2300, 0),
            requests: 2,
        },
        Failure {
            label: "429 retried",
            protocol: chat,
            entries: {
                let mut v = vec![fake::error_429(chat, Some("0"))];
                v.extend((0..3).map(|_| fake::error_429(chat, None)));
                v
            },
            env: vec![],
            yml: "",
            message: "rate limited by openrouter (HTTP 429) after 4 attempts: retry shortly or lower --concurrency".into(),
            prefix_only: false,
            spent: (0, 0),
            requests: 4,
        },
        Failure {
            label: "500 retried",
            protocol: chat,
            entries: many(|| fake::error_500(Protocol::Chat)),
            env: vec![],
            yml: "",
            message: "openrouter unavailable (HTTP 500) after 4 attempts".into(),
            prefix_only: false,
            spent: (0, 0),
            requests: 4,
        },
        Failure {
            label: "timeout",
            protocol: chat,
            // A timed-out attempt is retried once, then the call ends (issue 8 item 4).
            entries: (0..2)
                .map(|_| fake::chat_json(&forme_answer()).delayed(Duration::from_millis(1500)))
                .collect(),
            env: vec![],
            yml: "  timeout: 250ms\n",
            message: "openrouter accepted the request at {base} but sent no complete response within 250 ms (2 attempts): check the endpoint, or raise model.timeout in reactor.yml".into(),
            prefix_only: false,
            spent: (0, 0),
            requests: 2,
        },
        Failure {
            label: "malformed body",
            protocol: chat,
            entries: vec![fake::malformed(chat, "<html>gateway says {{key}}</html>")],
            env: vec![],
            yml: "",
            message: "unexpected response from openrouter: ".into(),
            prefix_only: true,
            spent: (0, 0),
            requests: 1,
        },
        Failure {
            label: "schema-invalid answers",
            protocol: chat,
            // Three answers (the first plus two repair turns) that fail the schema; each quotes
            // the key back, to prove the error list is redacted.
            entries: (0..3)
                .map(|_| {
                    fake::chat_text(
                        r#"{"nodes": [{"id": "{{key}}", "kind": "responsibility", "wake_source": "self", "requires": [], "maintains": []}], "matches": []}"#,
                    )
                        .when_purpose("compile:forme")
                        .with_usage(usage(100, 0, 10))
                })
                .collect(),
            env: vec![],
            yml: "",
            message: "the forme answer is still invalid after 2 repair turns: ".into(),
            prefix_only: true,
            spent: (330, 0),
            requests: 3,
        },
    ]
}

#[test]
fn provider_failures_exit_1_leave_no_partial_cache_and_never_leak_the_key() {
    let Some(shared) = shared_contracts() else {
        return;
    };
    // A project with a previous cache, compiled once.
    let base_fake = FakeProvider::with_entries(script(Protocol::Chat));
    let base = Proj::new(
        &shared,
        "smallest-project",
        "openrouter",
        &base_fake.base_url(),
    );
    assert_eq!(base.run(&["compile"], WITH_KEY).code, 0);
    base_fake.finish();

    for (i, f) in failures().into_iter().enumerate() {
        let fake = FakeProvider::with_entries(f.entries);
        let provider = match f.protocol {
            Protocol::Chat => "openrouter",
            Protocol::Messages => "anthropic",
        };
        // Case 0 starts from nothing; the others from a copy of the compiled project whose
        // contract was then edited (so the previous cache is stale and must stand).
        let p = if i == 0 {
            Proj::new(&shared, "smallest-project", provider, &fake.base_url())
        } else {
            let p = Proj::new(&shared, "smallest-project", provider, &fake.base_url());
            copy_tree(&base.state(), &p.state());
            p.edit_brief();
            p
        };
        if !f.yml.is_empty() {
            p.configure(provider, &fake.base_url(), "compile-model", f.yml);
        }
        let before = snapshot(&p.state().join("compile"));
        let mut env = f.env.clone();
        env.push(("FAKE_KEY", CANARY));
        let json_mode = i % 2 == 1;
        let args: &[&str] = if json_mode {
            &["--json", "compile"]
        } else {
            &["-q", "compile"]
        };
        let o = p.run(args, &env);
        let label = f.label;
        if label == "schema-invalid answers" {
            // The error list quotes the model's answer, key included: redacted by value.
            assert!(
                o.stderr
                    .contains("$.nodes[0].id: '[redacted]' is not a loaded contract"),
                "{}",
                o.stderr
            );
        }
        assert_eq!(o.code, 1, "{label}: {}{}", o.stdout, o.stderr);
        let message = f.message.replace("{base}", &fake.base_url());
        let lines: Vec<&str> = o.stderr.lines().collect();
        // The spent-tokens hint only when a token was spent (issue 8 item 7).
        let spent_any = f.spent != (0, 0);
        assert_eq!(
            lines.len(),
            if spent_any { 2 } else { 1 },
            "{label}: {}",
            o.stderr
        );
        let first = format!("reactor: error: compile failed: {message}");
        if f.prefix_only {
            assert!(lines[0].starts_with(&first), "{label}: {}", lines[0]);
            assert!(lines[0].len() > first.len(), "{label}: a detail follows");
        } else {
            assert_eq!(lines[0], first, "{label}");
        }
        if spent_any {
            assert_eq!(
                lines[1],
                format!(
                    "hint: tokens already spent: fresh={} reused={}",
                    f.spent.0, f.spent.1
                ),
                "{label}"
            );
        }
        assert!(!o.stderr.contains("fresh=0 reused=0"), "{label}");
        if json_mode {
            let j = o.json();
            assert_eq!(j["status"], "error");
            assert_eq!(j["ok"], false);
            let m = j["message"].as_str().unwrap();
            assert!(
                m.starts_with(&format!("compile failed: {message}")),
                "{label}: {m}"
            );
            assert_eq!(
                m.ends_with(&format!(
                    "; hint: tokens already spent: fresh={} reused={}",
                    f.spent.0, f.spent.1
                )),
                spent_any,
                "{label}: {m}"
            );
        } else {
            assert_eq!(o.stdout, "", "{label}");
        }
        assert_eq!(fake.request_count(), f.requests, "{label}");
        if i == 0 {
            assert!(
                !p.state().join("compile").exists(),
                "{label}: no cache at all"
            );
        } else {
            assert_eq!(
                snapshot(&p.state().join("compile")),
                before,
                "{label}: cache untouched"
            );
            assert!(!before.is_empty());
        }
        assert_no_key(&o, p.path());
        fake.finish();
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

#[test]
fn a_retried_500_then_an_answer_compiles() {
    let Some(shared) = shared_contracts() else {
        return;
    };
    let mut entries = vec![fake::error_500(Protocol::Chat).when_purpose("compile:forme")];
    entries.extend(script(Protocol::Chat));
    let fake = FakeProvider::with_entries(entries);
    let p = Proj::new(&shared, "smallest-project", "openrouter", &fake.base_url());
    let o = p.run(&["compile"], WITH_KEY);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout, compiled_report(&p));
    assert_eq!(fake.request_count(), 6);
    assert_no_key(&o, p.path());
    fake.finish();
}
