//! `serve --json`: NDJSON events, warnings, and flag validation.

use super::*;

#[test]
fn serve_json_events_warnings_and_flag_validation() {
    let fake = FakeProvider::start();
    let Some(proj) = project(&fake, "") else {
        return;
    };
    for e in compile_entries(json!({"postconditions": []})) {
        fake.push(e);
    }
    // Bad flag values are usage errors (exit 2); a short token is refused (exit 1).
    for (args, code) in [
        (vec!["serve", "--http", "abc"], 2),
        (vec!["serve", "--concurrency", "0"], 2),
        (vec!["serve", "--poll-interval", "99"], 2),
        (vec!["serve", "--host", "0.0.0.0"], 2),
        (vec!["serve", "--auth-token-env", "TOKEN"], 2),
        (
            vec!["serve", "--http", "0", "--auth-token-env", "SHORT_TOKEN"],
            1,
        ),
    ] {
        let out = cmd(proj.path())
            .args(&args)
            .env("SHORT_TOKEN", "short")
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(code),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // A startup failure with --json is one NDJSON `error` event on stdout (HOST.md §9), exit 1;
    // the text form goes to stderr.
    let out = cmd(proj.path())
        .args([
            "--json",
            "serve",
            "--http",
            "0",
            "--auth-token-env",
            "SHORT_TOKEN",
        ])
        .env("SHORT_TOKEN", "short")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    let event: Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(event["event"], json!("error"), "{event}");
    let message = event["message"].as_str().unwrap();
    assert!(message.contains("SHORT_TOKEN"), "{message}");
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with(&format!("reactor: error: {message}")),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // --json: NDJSON events only.
    let mut child = cmd(proj.path())
        .args([
            "--json",
            "serve",
            "--http",
            "0",
            "--host",
            "0.0.0.0",
            "--poll-interval",
            "600000",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut events: Vec<Value> = Vec::new();
    for l in lines.by_ref() {
        let v: Value = serde_json::from_str(&l.unwrap()).unwrap();
        let done = v["event"] == json!("ready");
        events.push(v);
        if done {
            break;
        }
    }
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["booted", "listening", "warning", "ready"],
        "{events:?}"
    );
    assert_eq!(events[1]["loopback"], json!(false));
    assert!(
        events[1]["url"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:")
    );
    assert!(
        events[2]["message"]
            .as_str()
            .unwrap()
            .starts_with("WARNING: bound to 0.0.0.0 (not loopback) with NO auth")
    );
    let serve_json: Value =
        serde_json::from_slice(&std::fs::read(proj.path().join(".reactor/serve.json")).unwrap())
            .unwrap();
    assert_eq!(serve_json["pid"], json!(child.id()));
    assert_eq!(serve_json["prefix"], json!(""));
    assert_eq!(serve_json["auth_token_env"], Value::Null);
    assert!(
        serve_json["url"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:")
    );
    // The first tick follows `ready`; stop only after it (a signal before it skips the loop).
    let tick: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(tick["event"], json!("tick"), "{tick}");
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let rest: Vec<Value> = lines
        .map_while(Result::ok)
        .map(|l| serde_json::from_str(&l).unwrap())
        .collect();
    assert_eq!(child.wait().unwrap().code(), Some(0));
    assert_eq!(
        rest.last().unwrap(),
        &json!({"event": "stopped", "forced": false})
    );
    fake.finish();
}
