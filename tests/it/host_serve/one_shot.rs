//! The one-shot verbs: `trigger` and `run` report this invocation.

use super::*;

#[test]
fn one_shot_trigger_and_run_report_this_invocation() {
    let fake = FakeProvider::start();
    let Some(proj) = project(&fake, "") else {
        return;
    };
    for e in compile_entries(json!({"postconditions": []})) {
        fake.push(e);
    }
    for e in render_entries(json!([{"id": "a", "body": "x"}]), "1 item") {
        fake.push(e);
    }
    let out = cmd(proj.path())
        .args(["trigger", "inbox", "--data", r#"{"id":"a","body":"x"}"#])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.starts_with("reactor trigger\n\n  triggered      inbox\n  payload        {\"id\":\"a\",\"body\":\"x\"}\n"), "{text}");
    assert!(
        text.contains(
            "  data           delivered: staged as arrival a (inbox::ingress now holds 1 item)"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "    inbox                        rendered\n    digest                       rendered"
        ),
        "{text}"
    );
    assert!(text.contains("  receipts       3\n"), "{text}");
    // A duplicate through the one-shot path; the wake memo-skips.
    let out = cmd(proj.path())
        .args([
            "--json",
            "trigger",
            "inbox",
            "--data",
            r#"{"body":"x","id":"a"}"#,
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["dataDelivered"], json!(false));
    assert_eq!(
        v["dispositions"],
        json!([{"node": "inbox", "disposition": "skipped"}])
    );
    assert_eq!(v["receipts"], json!(1));
    // Not a gateway: validated and reported, not delivered.
    let out = cmd(proj.path())
        .args(["trigger", "digest", "--data", "[1,2]"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("  data           not delivered: 'digest' is not a gateway and a wake carries no payload"), "{text}");
    // Invalid data and unknown nodes.
    let out = cmd(proj.path())
        .args(["trigger", "inbox", "--data", "{nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("reactor: error: invalid --data ("));
    let out = cmd(proj.path()).args(["trigger", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("node 'nope' is not in the compiled topology")
    );
    let out = cmd(proj.path()).args(["trigger"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    // run: nothing moved → no dispositions, the gateway note.
    let out = cmd(proj.path()).arg("run").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("  compile        cache hit (zero session cost)"),
        "{text}"
    );
    assert!(
        text.contains("  (no nodes woke — nothing to reconcile)"),
        "{text}"
    );
    assert!(
        text.contains("  receipts       0\n  run cost       fresh=0 reused=0"),
        "{text}"
    );
    assert!(
        text.contains("note: run does not poll gateways; inbox receives data through"),
        "{text}"
    );
    fake.finish();
}
