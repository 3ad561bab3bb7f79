//! Synthetic ledgers with known causes (the compatibility corpus is covered in `tests/it/why.rs`).

use super::*;
use crate::format::json;
use crate::format::topology::{Edge, TopologyNode};

/// A receipt with just the fields the cause reads.
fn r(node: &str, status: &str, wake: &str, contract: &str, inputs: &[&str], hash: &str) -> Value {
    let mut v = serde_json::json!({
        "node": node,
        "status": status,
        "wake": {"source": wake, "refs": []},
        "contract_fingerprint": contract,
        "input_fingerprints": inputs,
        "content_hash": hash,
    });
    if wake == "input" {
        v["wake"]["refs"] = serde_json::json!([format!("ref:{hash}")]);
    }
    Value::from_serde(&v)
}

fn with_refs(mut v: Value, refs: &[&str]) -> Value {
    let arr = Value::Array(refs.iter().map(|s| Value::str(*s)).collect());
    if let Value::Object(o) = &mut v
        && let Some(Value::Object(w)) = o.get_mut("wake")
    {
        w.insert("refs", arr);
    }
    v
}

fn topo(nodes: &[&str], edges: &[(&str, &str, &str)], entry: &[&str]) -> Topology {
    Topology {
        nodes: nodes
            .iter()
            .map(|n| TopologyNode {
                node: n.to_string(),
                contract_fingerprint: None,
                wake_source: None,
            })
            .collect(),
        edges: edges.iter().map(|(p, s, f)| Edge::new(p, s, f)).collect(),
        entry_points: entry.iter().map(|s| s.to_string()).collect(),
        acyclic: true,
    }
}

fn causes(w: &Option<Why>) -> Vec<&'static str> {
    w.as_ref()
        .map(|w| w.causes.iter().map(|c| c.as_str()).collect())
        .unwrap_or_default()
}

#[test]
fn first_inputs_contract_retry_and_wakes_are_named() {
    // a →(@atomic) s, b →(f) s: s's slot 0 is a's @atomic, slot 1 is b's facet f.
    let t = topo(
        &["a", "b", "s"],
        &[("a", "s", "@atomic"), ("b", "s", "f")],
        &["a", "b"],
    );
    let ledger = vec![
        r("a", "rendered", "external", "ca", &["in:1"], "h0"),
        r("b", "rendered", "external", "cb", &["in:1"], "h1"),
        r("s", "rendered", "input", "cs", &["a1", "b1"], "h2"),
        r("a", "rendered", "external", "ca", &["in:2"], "h3"),
        r("s", "rendered", "input", "cs", &["a2", "b1"], "h4"),
        r("s", "skipped", "input", "cs", &["a2", "b1"], "h5"),
        r("s", "failed", "input", "cs2", &["a2", "b2"], "h6"),
        r("s", "rendered", "self", "cs2", &["a2", "b2"], "h7"),
        r("s", "rendered", "self", "cs2", &["a2", "b2"], "h8"),
        r("s", "rendered", "external", "cs2", &["a2", "b2"], "h9"),
    ];
    let w = explain_ledger(&ledger, Some(&t));
    assert_eq!(w.len(), 10);
    assert_eq!(causes(&w[0]), ["first"]);
    assert_eq!(
        w[0].as_ref().unwrap().text,
        "first receipt of this node (external wake)"
    );
    assert_eq!(w[0].as_ref().unwrap().prior, None);
    // The entry point's extra slot is the mounted ingress edge.
    let w3 = w[3].as_ref().unwrap();
    assert_eq!(causes(&w[3]), ["inputs"]);
    assert_eq!(w3.inputs[0].producer.as_deref(), Some("a::ingress"));
    assert_eq!(w3.inputs[0].facet.as_deref(), Some("@atomic"));
    assert_eq!(w3.inputs[0].frame, None);
    assert_eq!(w3.prior, Some(0));
    // s: slot 0 (a's @atomic) moved; its producer's receipt is frame 3.
    let w4 = w[4].as_ref().unwrap();
    assert_eq!(causes(&w[4]), ["inputs"]);
    assert_eq!(
        w4.inputs,
        vec![MovedInput {
            slot: 0,
            producer: Some("a".into()),
            facet: Some("@atomic".into()),
            from: Some("a1".into()),
            to: Some("a2".into()),
            frame: Some(3),
        }]
    );
    assert_eq!(w4.text, "input moved: a @atomic (frame 3)");
    assert_eq!(w4.prior, Some(2));
    assert_eq!(w4.prior_status, Some(Status::Rendered));
    assert!(w[5].is_none(), "a skipped frame has no cause");
    // Contract and an input moved together; the failed frame still has a cause.
    let w6 = w[6].as_ref().unwrap();
    assert_eq!(causes(&w[6]), ["contract", "inputs"]);
    assert_eq!(
        w6.contract,
        Some(ContractMove {
            from: "cs".into(),
            to: "cs2".into()
        })
    );
    assert_eq!(w6.inputs[0].producer.as_deref(), Some("b"));
    assert_eq!(w6.inputs[0].facet.as_deref(), Some("f"));
    assert_eq!(w6.inputs[0].frame, Some(1));
    assert_eq!(
        w6.text,
        "contract changed (cs → cs2); input moved: b f (frame 1)"
    );
    // Nothing moved after a failure: a retry, whatever the wake.
    assert_eq!(causes(&w[7]), ["retry"]);
    assert_eq!(
        w[7].as_ref().unwrap().text,
        "memo key unchanged; retried after the failed frame 6"
    );
    assert_eq!(causes(&w[8]), ["wake"]);
    assert_eq!(w[8].as_ref().unwrap().text, "memo key unchanged; self wake");
    assert_eq!(w[8].as_ref().unwrap().wake, Some(WakeSource::SelfWake));
    assert_eq!(
        w[9].as_ref().unwrap().text,
        "memo key unchanged; external wake"
    );
}

#[test]
fn wake_refs_resolve_to_earlier_frames_only() {
    let ledger = vec![
        r("p", "rendered", "external", "c", &[], "hp"),
        with_refs(
            r("s", "rendered", "input", "c", &["x"], "hs"),
            &["hp", "nope", "hs2"],
        ),
        r("s", "rendered", "external", "c", &["x"], "hs2"),
    ];
    let w = explain_ledger(&ledger, None);
    assert_eq!(w[1].as_ref().unwrap().refs, vec![Some(0), None, None]);
}

#[test]
fn fallback_without_topology_names_slots_and_the_waking_receipts() {
    let ledger = vec![
        r("p", "rendered", "external", "c", &[], "hp"),
        with_refs(r("s", "rendered", "input", "c", &["x", "y"], "hs"), &["hp"]),
        r("p", "rendered", "external", "c", &[], "hp2"),
        with_refs(
            r("s", "rendered", "input", "c", &["x", "y2", "z"], "hs2"),
            &["hp2"],
        ),
    ];
    let w = explain_ledger(&ledger, None);
    let w3 = w[3].as_ref().unwrap();
    assert_eq!(causes(&w[3]), ["inputs"]);
    assert_eq!(w3.inputs.len(), 2);
    assert_eq!(w3.inputs[0].slot, 1);
    assert_eq!(w3.inputs[0].producer, None);
    assert_eq!(w3.inputs[1].from, None, "slot 2 is new");
    assert_eq!(
        w3.text,
        "inputs moved: slot 1, slot 2 (new slot); woken by frame 2 (p)"
    );
    // A slot that disappeared is listed too.
    let ledger = vec![
        r("s", "rendered", "self", "c", &["x", "y"], "h0"),
        r("s", "rendered", "self", "c", &["x"], "h1"),
    ];
    let w = explain_ledger(&ledger, None);
    let w1 = w[1].as_ref().unwrap();
    assert_eq!(w1.inputs[0].slot, 1);
    assert_eq!(w1.inputs[0].to, None);
    assert_eq!(w1.text, "input moved: slot 1 (slot removed)");
}

#[test]
fn unreadable_keys_are_unknown_and_unreadable_frames_have_no_cause() {
    let bad = |v: &str| json::parse(v.as_bytes()).unwrap();
    let ledger = vec![
        r("s", "rendered", "self", "c", &["x"], "h0"),
        bad(
            r#"{"node":"s","status":"rendered","wake":{"source":"self","refs":[]},"contract_fingerprint":"c"}"#,
        ),
        bad(r#"{"node":"s","status":"bogus"}"#),
        bad(r#"[1,2]"#),
        bad(r#"{"node":"","status":"rendered"}"#),
        bad(r#"{"node":"t","status":"failed","wake":7,"input_fingerprints":[1]}"#),
        bad(
            r#"{"node":"t","status":"rendered","wake":{"source":"input","refs":"x"},"contract_fingerprint":"c","input_fingerprints":[]}"#,
        ),
    ];
    let w = explain_ledger(&ledger, None);
    assert_eq!(causes(&w[1]), ["unknown"]);
    assert!(
        w[1].as_ref()
            .unwrap()
            .text
            .starts_with("memo key unreadable")
    );
    assert!(w[2].is_none() && w[3].is_none() && w[4].is_none());
    // A first receipt needs no key; an unreadable wake source is said so.
    assert_eq!(causes(&w[5]), ["first"]);
    assert_eq!(
        w[5].as_ref().unwrap().text,
        "first receipt of this node (unreadable wake)"
    );
    assert_eq!(causes(&w[6]), ["unknown"]);
    assert!(w[6].as_ref().unwrap().refs.is_empty());
}

#[test]
fn many_moved_inputs_are_summarised_and_json_has_the_documented_shape() {
    let edges: Vec<(String, String, String)> = (0..6)
        .map(|k| (format!("p{k}"), "s".to_string(), "@atomic".to_string()))
        .collect();
    let e: Vec<(&str, &str, &str)> = edges
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
        .collect();
    let t = topo(&["s"], &e, &[]);
    let ledger = vec![
        r(
            "s",
            "rendered",
            "input",
            "c",
            &["a", "a", "a", "a", "a", "a"],
            "h0",
        ),
        r(
            "s",
            "rendered",
            "input",
            "c",
            &["b", "b", "b", "b", "b", "b"],
            "h1",
        ),
    ];
    let w = explain_ledger(&ledger, Some(&t));
    let w1 = w[1].as_ref().unwrap();
    assert_eq!(
        w1.text,
        "inputs moved: p0 @atomic, p1 @atomic, p2 @atomic, p3 @atomic, 2 more"
    );
    let j = String::from_utf8(json::to_js_compact(&w[0])).unwrap();
    assert_eq!(
        j,
        r#"{"causes":["first"],"wake":"input","prior":null,"priorStatus":null,"contract":null,"inputs":[],"refs":[null],"text":"first receipt of this node (input wake)"}"#
    );
    let j = String::from_utf8(json::to_js_compact(&w1.inputs[0])).unwrap();
    assert_eq!(
        j,
        r#"{"slot":0,"producer":"p0","facet":"@atomic","from":"a","to":"b","frame":null}"#
    );
}

#[test]
fn tokens_are_shortened_for_text() {
    let addr = format!("sha256:{}", "ab".repeat(32));
    assert_eq!(short_token(&addr), "sha256:abababab…");
    assert_eq!(short_token("inbox:2"), "inbox:2");
    assert_eq!(short_token(&"x".repeat(61)), format!("{}…", "x".repeat(59)));
    assert_eq!(short_token(&"x".repeat(60)), "x".repeat(60));
    assert_eq!(short_token("sha256:zz"), "sha256:zz");
}

/// Linear: a 20,000-receipt chain with wide keys is explained in one pass (a quadratic walk
/// would be visible as a timeout, not asserted as time).
#[test]
fn a_long_ledger_is_explained_frame_by_frame() {
    let t = topo(&["a", "s"], &[("a", "s", "@atomic")], &[]);
    let mut ledger = Vec::new();
    for k in 0..10_000 {
        ledger.push(r("a", "rendered", "self", "c", &[], &format!("ha{k}")));
        ledger.push(with_refs(
            r(
                "s",
                "rendered",
                "input",
                "c",
                &[&format!("a{k}")],
                &format!("hs{k}"),
            ),
            &[&format!("ha{k}")],
        ));
    }
    let w = explain_ledger(&ledger, Some(&t));
    for k in 1..10_000 {
        let ws = w[2 * k + 1].as_ref().unwrap();
        assert_eq!(ws.inputs[0].frame, Some(2 * k), "frame {}", 2 * k + 1);
        assert_eq!(ws.refs, vec![Some(2 * k)]);
        assert_eq!(ws.prior, Some(2 * k - 1));
    }
}
