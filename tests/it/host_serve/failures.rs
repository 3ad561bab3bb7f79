//! Renders that fail: a violated postcondition wakes nothing, a faceted node without
//! `truth.json` fails clearly.

use super::*;

#[test]
fn postcondition_violation_fails_and_wakes_nothing() {
    let fake = FakeProvider::start();
    let Some(proj) = project(&fake, "") else {
        return;
    };
    let has_items = json!({"postconditions": [{
        "id": "has-items", "mode": "deterministic", "facet": "items",
        "predicate": {"nodes": [{"kind": "less-than", "fact": "items.length", "value": 1, "children": null, "child": null}], "root": 0},
        "source": "Postcondition: at least one item is accepted."}]});
    for e in compile_entries(has_items) {
        fake.push(e);
    }
    // The render writes an empty item set: the deterministic postcondition trips.
    fake.push(write_truth(json!({"items": []})).when_purpose("render:inbox"));
    fake.push(finish().when_purpose("render:inbox"));
    let out = cmd(proj.path())
        .args(["--json", "trigger", "inbox", "--data", r#"{"id":"e"}"#])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], json!(false));
    assert_eq!(
        v["dispositions"],
        json!([{"node": "inbox", "disposition": "failed", "reason": "postconditions failed: has-items (tripped)"}])
    );
    let ledger = std::fs::read_to_string(proj.path().join(".reactor/receipts.json")).unwrap();
    assert!(ledger.contains(r#""failure_reason":"postconditions failed: has-items (tripped)""#));
    assert!(
        !ledger.contains(r#""node":"digest""#),
        "nothing downstream wakes"
    );
    fake.finish();
}

#[test]
fn a_faceted_node_without_truth_json_fails_clearly() {
    let fake = FakeProvider::start();
    let Some(proj) = project(&fake, "") else {
        return;
    };
    for e in compile_entries(json!({"postconditions": []})) {
        fake.push(e);
    }
    fake.push(
        fake::chat_tool_calls(&[(
            "ws_write",
            json!({"path": "notes.md", "content": "no truth", "encoding": null}),
        )])
        .when_purpose("render:inbox"),
    );
    fake.push(finish().when_purpose("render:inbox"));
    let out = cmd(proj.path())
        .args(["trigger", "inbox", "--data", r#"{"id":"n"}"#])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        text.contains("      reason: structured truth missing: node 'inbox' declares facets but its render wrote no truth.json"),
        "{text}"
    );
    assert!(!text.contains("digest"), "{text}");
    fake.finish();
}
