//! What an operator watches: live progress on a terminal (one line per render otherwise) and
//! `serve --metrics` as Prometheus text that `promtool` accepts.

use super::*;

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
