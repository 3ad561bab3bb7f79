//! Operating the host against providers that misbehave or live elsewhere (issue 8 items 4, 5
//! and 7), through the real binary: a provider that accepts and never answers ends after two
//! attempts with one line; the base-URL variables and where `doctor` says each value came
//! from; an Anthropic base URL without `/v1`; `model.max_tokens`; messages that say what
//! happened (a body cut short, a long `Retry-After`, no temperature hint without a
//! temperature, no zero spent-tokens hint, a located missing model id).

use std::path::Path;
use std::process::Command;

use serde_json::json;

use crate::host_serve::{CANARY, compile_entries, quickstart};
use crate::support::bin;
use crate::support::fake_provider::{self as fake, FakeProvider, Protocol};
use crate::support::raw_server::{Behaviour, RawServer};

/// Variables a child must not inherit.
const SCRUBBED: &[&str] = &[
    "OPENROUTER_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "REACTOR_OFFLINE",
    "REACTOR_ENV_PATH",
    "REACTOR_DEBUG",
    "REACTOR_SKILL_PATH",
    "REACTOR_MODEL_RECORD",
    "REACTOR_MODEL_BASE_URL",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
];

pub(crate) struct Out {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// Runs the binary on `project` with `FAKE_KEY`, no backoff sleeps, and `env`.
pub(crate) fn reactor(project: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut cmd = Command::new(bin());
    cmd.arg("--project").arg(project).args(args);
    for v in SCRUBBED {
        cmd.env_remove(v);
    }
    cmd.env("FAKE_KEY", CANARY)
        .env("REACTOR_HTTP_BACKOFF_MS", "0");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run reactor");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A quickstart project with this `model:` block (indented two spaces, without `model:`).
pub(crate) fn project_with(model: &str) -> Option<tempfile::TempDir> {
    let src = quickstart()?;
    let d = tempfile::tempdir().unwrap();
    for f in ["inbox.prose.md", "digest.prose.md"] {
        std::fs::copy(src.join(f), d.path().join(f)).unwrap();
    }
    std::fs::write(d.path().join("reactor.yml"), format!("model:\n{model}")).unwrap();
    Some(d)
}

/// The usual `model:` block pointing at `base_url`, plus `extra` lines.
pub(crate) fn model_block(provider: &str, base_url: &str, extra: &str) -> String {
    format!(
        "  provider: {provider}\n  base_url: {base_url}\n  api_key_env: FAKE_KEY\n  render_model: render-model\n  compile_model: compile-model\n{extra}"
    )
}

fn push_compile(fake: &FakeProvider) {
    for e in compile_entries(json!({"postconditions": []})) {
        fake.push(e);
    }
}

/// A port nothing listens on.
fn dead_base_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://127.0.0.1:{}/v1", l.local_addr().unwrap().port())
}

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

#[test]
fn a_cache_compiled_elsewhere_is_used_with_a_warning() {
    let fake = FakeProvider::start();
    let a = fake.base_url();
    let Some(p) = project_with(&model_block("openrouter", &a, "")) else {
        return;
    };
    push_compile(&fake);
    let o = reactor(p.path(), &["-q", "compile"], &[]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stderr, "");
    fake.finish();
    // The manifest records the base URL as its last member (provider: cost.provider).
    let manifest_path = p.path().join(".reactor/compile/manifest.json");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
    let keys: Vec<&String> = manifest.as_object().unwrap().keys().collect();
    assert_eq!(keys.last().map(|k| k.as_str()), Some("base_url"));
    assert_eq!(manifest["base_url"], a);
    assert_eq!(manifest["cost"]["provider"], "openrouter");

    // Same endpoint: silent.
    let o = reactor(p.path(), &["compile", "--check"], &[]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));

    // Another endpoint: the cache is still fresh (not part of the key), with a warning.
    let dead = dead_base_url();
    std::fs::write(
        p.path().join("reactor.yml"),
        format!("model:\n{}", model_block("openrouter", &dead, "")),
    )
    .unwrap();
    let warning = format!(
        "reactor: warning: the compile cache was compiled against provider 'openrouter' at {a}, but the configured provider is 'openrouter' at {dead}; the cache is still used (provider and endpoint are not part of its key): run `reactor compile --force` to recompile against the configured one\n"
    );
    let o = reactor(p.path(), &["compile", "--check"], &[]);
    assert_eq!(o.code, 0);
    assert_eq!(o.stderr, warning);
    let o = reactor(p.path(), &["--json", "compile", "--check"], &[]);
    assert_eq!(o.code, 0);
    assert_eq!(o.stderr, warning);
    // The override back to the compiling endpoint silences it.
    let o = reactor(
        p.path(),
        &["compile", "--check"],
        &[("REACTOR_MODEL_BASE_URL", &a)],
    );
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));
    // run and serve warn too (offline: no request can reach the dead endpoint).
    let o = reactor(p.path(), &["--offline", "run"], &[]);
    assert!(o.stderr.starts_with(&warning), "{}", o.stderr);
    let mut c = Command::new(bin());
    c.arg("--project")
        .arg(p.path())
        .args(["--offline", "serve", "--poll-interval", "600000"])
        .env("FAKE_KEY", CANARY);
    for v in SCRUBBED {
        c.env_remove(v);
    }
    let mut serve = crate::host_serve::Serve::spawn(c, false);
    assert_eq!(serve.sigterm_and_wait(), 0);
    assert!(serve.stderr().contains(&warning));
    // serve --json carries it as a `warning` event before `ready`.
    let mut c = Command::new(bin());
    c.arg("--project")
        .arg(p.path())
        .args(["--json", "--offline", "serve", "--poll-interval", "600000"])
        .env("FAKE_KEY", CANARY)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    for v in SCRUBBED {
        c.env_remove(v);
    }
    let mut child = c.spawn().unwrap();
    let mut events: Vec<serde_json::Value> = Vec::new();
    for l in std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap())) {
        let v: serde_json::Value = serde_json::from_str(&l.unwrap()).unwrap();
        let ready = v["event"] == "ready";
        events.push(v);
        if ready {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let message = warning
        .strip_prefix("reactor: warning: ")
        .unwrap()
        .trim_end();
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "warning" && e["message"] == message),
        "{events:?}"
    );

    // Another provider.
    std::fs::write(
        p.path().join("reactor.yml"),
        format!("model:\n{}", model_block("acme", &a, "")),
    )
    .unwrap();
    let o = reactor(p.path(), &["compile", "--check"], &[]);
    assert_eq!(o.code, 0);
    assert!(
        o.stderr.starts_with(&format!(
            "reactor: warning: the compile cache was compiled against provider 'openrouter' at {a}, but the configured provider is 'acme' at {a};"
        )),
        "{}",
        o.stderr
    );

    // A manifest written before the base URL was recorded stays fresh and readable; only a
    // provider change can be told.
    let mut old = manifest.clone();
    old.as_object_mut().unwrap().remove("base_url");
    std::fs::write(
        &manifest_path,
        serde_json::to_string_pretty(&old).unwrap() + "\n",
    )
    .unwrap();
    std::fs::write(
        p.path().join("reactor.yml"),
        format!("model:\n{}", model_block("openrouter", &dead, "")),
    )
    .unwrap();
    let o = reactor(p.path(), &["compile", "--check"], &[]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));
}

/// Runs `reactor <args>` on `project` under a pseudo-terminal (`script` from util-linux), so
/// stderr is a terminal; everything the terminal received. `None` (with a loud note) when
/// `script` is missing.
fn under_terminal(project: &Path, args: &[&str]) -> Option<(i32, String)> {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("SKIPPED: `script` (util-linux) is missing; the terminal progress is untested");
        return None;
    }
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let mut line = vec![
        quote(&bin().display().to_string()),
        "--project".into(),
        quote(&project.display().to_string()),
    ];
    line.extend(args.iter().map(|a| quote(a)));
    let mut cmd = Command::new("script");
    cmd.args(["-q", "-e", "-c", &line.join(" "), "/dev/null"]);
    for v in SCRUBBED {
        cmd.env_remove(v);
    }
    cmd.env("FAKE_KEY", CANARY)
        .env("REACTOR_HTTP_BACKOFF_MS", "0")
        .env("COLUMNS", "200")
        .env("TERM", "xterm");
    let out = cmd.output().expect("run script");
    Some((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    ))
}

#[test]
fn progress_is_live_on_a_terminal_and_one_line_per_render_otherwise() {
    use std::time::Duration;
    let fake = FakeProvider::start();
    let Some(p) = project_with(&model_block("openrouter", &fake.base_url(), "")) else {
        return;
    };
    // Slow answers, so the live line is drawn while a request waits.
    for e in compile_entries(json!({"postconditions": []})) {
        fake.push(e.delayed(Duration::from_millis(400)));
    }
    let Some((code, screen)) = under_terminal(p.path(), &["compile"]) else {
        return;
    };
    assert_eq!(code, 0, "{screen}");
    assert!(screen.contains("compile ["), "{screen}");
    assert!(screen.contains("/5 sessions"), "{screen}");
    assert!(screen.contains(" · compile:forme · "), "{screen}");
    assert!(screen.contains("for the model"), "{screen}");
    // Tokens so far: three answers of 12 + 3 tokens.
    assert!(screen.contains("3/5 sessions"), "{screen}");
    assert!(screen.contains("fresh=45 reused=0"), "{screen}");
    assert!(!screen.contains("0/0"), "{screen}");
    // The bar is not the plain lines, and the report follows.
    assert!(!screen.contains("reactor: compile: session"), "{screen}");
    assert!(
        screen.contains("status         compiled (sessions ran)"),
        "{screen}"
    );
    // Nothing extra with --json (nor with --quiet), terminal or not.
    for e in compile_entries(json!({"postconditions": []})) {
        fake.push(e.delayed(Duration::from_millis(150)));
    }
    let Some((code, screen)) = under_terminal(p.path(), &["--json", "compile", "--force"]) else {
        return;
    };
    assert_eq!(code, 0, "{screen}");
    assert!(!screen.contains("sessions"), "{screen}");
    assert!(screen.contains("\"status\": \"compiled\""), "{screen}");

    // trigger, not a terminal: one plain line per finished render, with its tokens.
    for e in crate::host_serve::render_entries(json!([{"id": "a", "body": "x"}]), "1 item") {
        fake.push(e);
    }
    let o = reactor(
        p.path(),
        &["trigger", "inbox", "--data", r#"{"id":"a","body":"x"}"#],
        &[],
    );
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    let lines: Vec<&str> = o.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{}", o.stderr);
    for (line, node) in lines.iter().zip(["inbox", "digest"]) {
        assert!(
            line.starts_with("reactor: trigger: render ")
                && line.contains(&format!(" {node} rendered in ")),
            "{line}"
        );
        // Two answers of 12 + 3 tokens each.
        assert!(line.ends_with("s (fresh=30 reused=0)"), "{line}");
    }
    assert!(
        lines[0].starts_with("reactor: trigger: render 1/2 inbox"),
        "{}",
        lines[0]
    );
    // --quiet: nothing.
    for e in crate::host_serve::render_entries(
        json!([{"id": "a", "body": "x"}, {"id": "b", "body": "y"}]),
        "2 items",
    ) {
        fake.push(e);
    }
    let o = reactor(
        p.path(),
        &[
            "--quiet",
            "trigger",
            "inbox",
            "--data",
            r#"{"id":"b","body":"y"}"#,
        ],
        &[],
    );
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    assert_eq!(o.stderr, "");
    fake.finish();
}

/// `promtool check metrics` over `text`: `Some(true)` when it accepts it. `None` (with a loud
/// note) when promtool is missing, unless `REACTOR_REQUIRE_PROMTOOL=1` (set by `.ci/run`).
fn promtool_accepts(text: &str) -> Option<(bool, String)> {
    use std::io::Write;
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            if std::env::var("REACTOR_REQUIRE_PROMTOOL").as_deref() == Ok("1") {
                panic!("promtool is missing (REACTOR_REQUIRE_PROMTOOL=1): {e}");
            }
            eprintln!(
                "SKIPPED: promtool (Debian package prometheus) is missing; the exposition was not validated"
            );
            return None;
        }
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    Some((
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    ))
}

pub(crate) fn get_text(url: &str) -> (u16, String, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut resp = agent.get(url).call().unwrap();
    let status = resp.status().as_u16();
    let ctype = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    (status, ctype, resp.body_mut().read_to_string().unwrap())
}

/// The value of the sample line starting with `prefix` (labels included).
pub(crate) fn sample(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[test]
fn serve_metrics_expose_prometheus_text_that_promtool_accepts() {
    use crate::host_serve::{Serve, cmd, http, render_entries};
    let fake = FakeProvider::start();
    let Some(p) = project_with(&model_block("openrouter", &fake.base_url(), "")) else {
        return;
    };
    push_compile(&fake);
    for e in render_entries(json!([{"id": "a", "body": "x"}]), "1 item") {
        fake.push(e);
    }
    // --metrics needs --http.
    let o = reactor(p.path(), &["serve", "--metrics"], &[]);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr
            .starts_with("reactor: error: --metrics requires --http\n"),
        "{}",
        o.stderr
    );

    let mut c = cmd(p.path());
    c.args([
        "serve",
        "--poll-interval",
        "600000",
        "--http",
        "0",
        "--metrics",
    ]);
    let mut serve = Serve::spawn(c, true);
    let base = serve.base.clone().unwrap();
    let (s, _) = http(
        "POST",
        &format!("{base}/trigger/inbox"),
        Some(r#"{"id":"a","body":"x"}"#),
    );
    assert_eq!(s, 200);
    let (s, _) = http("GET", &format!("{base}/status"), None);
    assert_eq!(s, 200);
    let (s, ctype, text) = get_text(&format!("{base}/metrics"));
    assert_eq!(s, 200, "{text}");
    assert_eq!(ctype, "text/plain; version=0.0.4; charset=utf-8");
    // Receipts by reactor, node and status; tokens by kind and surprise cause.
    assert!(
        sample(
            &text,
            "reactor_receipts_total{reactor=\"default\",node=\"inbox\",status=\"rendered\"}"
        )
        .is_some_and(|v| v >= 1.0),
        "{text}"
    );
    assert!(
        sample(
            &text,
            "reactor_receipts_total{reactor=\"default\",node=\"digest\",status=\"rendered\"}"
        )
        .is_some_and(|v| v >= 1.0),
        "{text}"
    );
    // Two renders of two answers of 12 + 3 tokens each, all external or input wakes.
    let fresh: f64 = text
        .lines()
        .filter(|l| l.starts_with("reactor_tokens_total{") && l.contains("kind=\"fresh\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert_eq!(fresh, 60.0, "{text}");
    assert!(text.contains("surprise_cause=\"external\""), "{text}");
    // One drain for the trigger; the queue is empty now.
    assert_eq!(
        sample(
            &text,
            "reactor_drain_duration_seconds_count{reactor=\"default\",trigger=\"trigger\"}"
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "reactor_queue_depth{reactor=\"default\"}"),
        Some(0.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "reactor_renders_in_flight{reactor=\"default\"}"),
        Some(0.0),
        "{text}"
    );
    // Model calls: five compile sessions and four render turns, all ok.
    assert_eq!(
        sample(
            &text,
            "reactor_model_requests_total{provider=\"openrouter\",outcome=\"ok\"}"
        ),
        Some(9.0),
        "{text}"
    );
    // HTTP latency by route pattern.
    assert_eq!(
        sample(
            &text,
            "reactor_http_request_duration_seconds_count{method=\"POST\",route=\"/trigger/{node}\",status=\"200\"}"
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "reactor_http_request_duration_seconds_count{method=\"GET\",route=\"/status\",status=\"200\"}"
        ),
        Some(1.0),
        "{text}"
    );
    if let Some((ok, report)) = promtool_accepts(&text) {
        assert!(ok, "promtool rejected the exposition: {report}\n{text}");
    }
    assert_eq!(serve.sigterm_and_wait(), 0);
    // The boot compiled: one progress line per session on stderr (not a terminal), none for
    // the drains after the boot.
    let err = serve.stderr();
    assert!(
        err.contains("reactor: serve: session 1/5 forme done in "),
        "{err}"
    );
    assert!(err.contains("reactor: serve: session 5/5 "), "{err}");
    assert!(!err.contains("render"), "{err}");
    fake.finish();

    // Off by default: the seven routes only.
    let mut serve = Serve::spawn(
        {
            let mut c = cmd(p.path());
            c.args(["serve", "--poll-interval", "600000", "--http", "0"]);
            c
        },
        true,
    );
    let base = serve.base.clone().unwrap();
    let (s, _, _) = get_text(&format!("{base}/metrics"));
    assert_eq!(s, 404);
    assert_eq!(serve.sigterm_and_wait(), 0);
}
