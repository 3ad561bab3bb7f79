//! Unit tests of the receipt model, decoder and verifiers.

use super::*;
use crate::format::json::{self, Object, Value, parse_str};

const MASKED_FIRST: &str = r#"{"content_hash":"sha256:ddfa6a7c5575954aa83ceec1cf93497e80b2e3852defae19727226216b4d0b57","contract_fingerprint":"contract:ingress.signal-inbox@ingress","cost":{"model":"none","provider":"none","surprise_cause":"external","tokens":{"fresh":0,"reused":0}},"fingerprints":{"@atomic":"sha256:4b8dc041b829d799da5ebed390c0f7a58edc2ce1be03907a16d10ea5b96c4e43","inbox":"sha256:0d347a3656cbf09e7e918bbf56b3207d39dbadbb5b5bd58f368cd523750e5c19"},"hash_algorithm":"sha256","input_fingerprints":[],"node":"ingress.signal-inbox","prev":null,"schema":"openprose.receipt","semantic_diff":{},"sig":{"null_reason":"no-signer-adapter-configured","scheme":"none"},"status":"rendered","wake":{"refs":[],"source":"external"}}"#;

#[test]
fn worked_example_5_2() {
    let v = parse_str(MASKED_FIRST).unwrap();
    let mut body = Vec::new();
    json::write_canonical_object_except(v.as_object().unwrap(), "content_hash", &mut body).unwrap();
    assert_eq!(body.len(), 617);
    let verdict = verify_receipt(&v);
    assert!(verdict.ok, "{:?}", verdict.errors);
    assert_eq!(
        verdict.content_hash.as_deref(),
        Some("sha256:ddfa6a7c5575954aa83ceec1cf93497e80b2e3852defae19727226216b4d0b57")
    );
    // The typed reader and writer reproduce the exact bytes.
    let r = Receipt::from_value(&v).unwrap();
    assert_eq!(r.canonical_bytes().unwrap(), MASKED_FIRST.as_bytes());
}

#[test]
fn synthetic_example_5_2() {
    let mut r = Receipt {
        node: "alpha".into(),
        contract_fingerprint: format!("sha256:{}", "0".repeat(64)),
        status: Status::Skipped,
        wake: Wake::new(WakeSource::External),
        input_fingerprints: vec![],
        fingerprints: Fingerprints::atomic(crate::format::address::EMPTY_TREE_ADDRESS),
        semantic_diff: Object::new(),
        prev: None,
        cost: Cost::none(WakeSource::External),
        content_hash: String::new(),
    };
    assert_eq!(
        r.stamp().unwrap(),
        "sha256:047c238269abc2d8cb03a730710f386e3b8d4eb23f3a2989996c009507461b61"
    );
    let v = parse_str(std::str::from_utf8(&r.canonical_bytes().unwrap()).unwrap()).unwrap();
    assert!(verify_receipt(&v).ok);
}

#[test]
fn every_error_message_in_order() {
    let v = parse_str(
        r#"{"extra":1,"schema":"x","hash_algorithm":"md5","node":"","contract_fingerprint":3,
        "status":"done","wake":{"source":"later","refs":["nope"],"why":1},
        "input_fingerprints":[""],"fingerprints":{"a":""},"semantic_diff":[],
        "prev":"abc","sig":{"scheme":"rsa","extra":true},
        "cost":{"provider":"","model":"","tokens":{"fresh":-1,"reused":1.5},"surprise_cause":"input"},
        "content_hash":"sha256:XYZ"}"#,
    )
    .unwrap();
    let verdict = verify_receipt(&v);
    assert!(!verdict.ok);
    assert_eq!(
        verdict.errors,
        vec![
            "receipt.extra is not pinned in the receipt shape",
            "receipt.schema must be \"openprose.receipt\"",
            "receipt.hash_algorithm must be \"sha256\"",
            "receipt.node must be a non-empty string",
            "receipt.contract_fingerprint must be a non-empty string",
            "receipt.status must be one of rendered | skipped | failed",
            "receipt.wake.why is not pinned in the wake shape",
            "receipt.wake.source must be one of input | self | external",
            "receipt.wake.refs[0] must be a sha256 content address",
            "receipt.input_fingerprints[0] must be a non-empty string",
            "receipt.fingerprints must contain \"@atomic\"",
            "receipt.fingerprints[\"a\"] must be a non-empty string",
            "receipt.semantic_diff must be an object",
            "receipt.prev must be null or a sha256 content address",
            "receipt.sig.extra is not pinned in the sig shape",
            "receipt.sig.scheme must be \"none\" (only the null signer is supported)",
            "receipt.sig.null_reason must be a non-empty string",
            "receipt.cost.provider must be a non-empty string",
            "receipt.cost.model must be a non-empty string",
            "receipt.cost.tokens.fresh must be a non-negative safe integer",
            "receipt.cost.tokens.reused must be a non-negative safe integer",
            "receipt.cost.surprise_cause must match wake.source",
            "content_hash must use sha256:<64 lowercase hex>",
        ]
    );
    assert!(verdict.expected_content_hash.is_some());
    assert_eq!(verdict.actual_content_hash.as_deref(), Some("sha256:XYZ"));
}

#[test]
fn missing_keys_and_non_objects() {
    assert_eq!(
        verify_receipt(&Value::Array(vec![])).errors,
        vec!["receipt must be an object"]
    );
    let v = verify_receipt(&parse_str("{}").unwrap());
    assert_eq!(v.errors.first().unwrap(), "receipt.schema is required");
    assert!(v.errors.contains(&"receipt.prev is required".to_string()));
    assert_eq!(
        v.errors.last().unwrap(),
        "content_hash must be a sha256 content address"
    );
}

#[test]
fn skipped_rules_and_non_finite() {
    let mut v = parse_str(MASKED_FIRST).unwrap();
    if let Value::Object(o) = &mut v {
        o.insert("status", Value::str("skipped"));
        let mut d = Object::new();
        d.insert("x", Value::Number(f64::INFINITY));
        o.insert("semantic_diff", Value::Object(d));
    }
    let e = verify_receipt(&v).errors;
    assert!(e.contains(&"skipped receipt must carry an empty semantic_diff".to_string()));
    assert!(e.contains(
        &"receipt cannot be canonicalized: cannot canonicalize non-finite number".to_string()
    ));
}

#[test]
fn hash_mismatch() {
    let text = MASKED_FIRST.replace("\"status\":\"rendered\"", "\"status\":\"failed\"");
    let v = verify_receipt(&parse_str(&text).unwrap());
    assert_eq!(
        v.errors,
        vec!["content_hash does not match canonical receipt payload"]
    );
}

fn mk(node: &str, prev: Option<String>) -> Receipt {
    let mut r = Receipt {
        node: node.into(),
        contract_fingerprint: "c".into(),
        status: Status::Rendered,
        wake: Wake::new(WakeSource::External),
        input_fingerprints: vec![],
        fingerprints: Fingerprints::atomic("t"),
        semantic_diff: Object::new(),
        prev,
        cost: Cost::none(WakeSource::External),
        content_hash: String::new(),
    };
    r.stamp().unwrap();
    r
}

#[test]
fn chains() {
    assert_eq!(verify_receipt_chain(&[]).length, 0);
    let a = mk("a", None);
    let b = mk("a", Some(a.content_hash.clone()));
    let vals: Vec<Value> = [&a, &b].iter().map(|r| r.to_value(true)).collect();
    let ok = verify_receipt_chain(&vals);
    assert!(ok.ok);
    assert_eq!(ok.head.as_deref(), Some(b.content_hash.as_str()));
    assert_eq!(ok.length, 2);
    // A suffix does not verify.
    let suffix = verify_receipt_chain(&vals[1..]);
    assert_eq!(
        suffix.errors,
        vec!["chain[0].prev must be null (cold start) to chain the ledger"]
    );
    // Another node breaks the ledger.
    let c = mk("z", Some(b.content_hash.clone()));
    let vals3 = vec![vals[0].clone(), vals[1].clone(), c.to_value(true)];
    let bad = verify_receipt_chain(&vals3);
    assert_eq!(
        bad.errors,
        vec!["chain[2].node \"z\" breaks node-scoped ledger \"a\""]
    );
    assert_eq!(bad.invalid_positions, vec![2]);
}

#[test]
fn wake_merge_i10() {
    let h = |c: char| format!("sha256:{}", c.to_string().repeat(64));
    let mut w = Wake {
        source: WakeSource::SelfWake,
        refs: vec![h('a')],
    };
    w.merge(&Wake {
        source: WakeSource::Input,
        refs: vec![h('b')],
    });
    assert_eq!(w.source, WakeSource::Input);
    assert_eq!(w.refs, vec![h('a'), h('b')]);
    w.merge(&Wake {
        source: WakeSource::External,
        refs: vec![h('b'), h('c')],
    });
    assert_eq!(w.source, WakeSource::External);
    assert_eq!(w.refs, vec![h('a'), h('b'), h('c')]);
    let before = w.clone();
    w.merge(&before.clone());
    assert_eq!(w, before);
}

#[test]
fn the_decoder_names_the_first_problem_by_path() {
    let good = parse_str(MASKED_FIRST).unwrap();
    let with = |key: &str, v: Option<Value>| {
        let mut o = good.as_object().unwrap().clone();
        match v {
            Some(v) => o.insert(key, v),
            None => {
                o.remove(key);
            }
        }
        Receipt::from_value(&Value::Object(o))
    };
    assert_eq!(
        with("wake", None).unwrap_err().to_string(),
        "receipt.wake: required member is missing"
    );
    let lone = parse_str(r#""\ud800""#).unwrap();
    assert_eq!(
        with("node", Some(lone.clone())).unwrap_err().to_string(),
        "receipt.node: string holds a lone surrogate (not valid Unicode)"
    );
    assert_eq!(
        with("status", Some(Value::str("done")))
            .unwrap_err()
            .to_string(),
        "receipt.status: expected \"rendered\", \"skipped\" or \"failed\", found \"done\""
    );
    let mut cost = good.get("cost").unwrap().as_object().unwrap().clone();
    cost.insert("tokens", parse_str(r#"{"fresh":1.5,"reused":0}"#).unwrap());
    assert_eq!(
        with("cost", Some(Value::Object(cost)))
            .unwrap_err()
            .to_string(),
        "receipt.cost.tokens.fresh: expected a non-negative safe integer"
    );
    // A lone surrogate in the free-text provider is read with U+FFFD.
    let mut cost = good.get("cost").unwrap().as_object().unwrap().clone();
    cost.insert("provider", lone);
    let r = with("cost", Some(Value::Object(cost))).unwrap();
    assert_eq!(r.cost.provider, "\u{fffd}");
    let mut diff = Object::new();
    diff.insert("x", Value::Number(f64::INFINITY));
    assert_eq!(
        with("semantic_diff", Some(Value::Object(diff))).unwrap_err(),
        ReceiptDecodeError::Canonicalize(json::NonFinite)
    );
    assert!(matches!(
        Receipt::from_value(&Value::Array(vec![])),
        Err(ReceiptDecodeError::Shape(_))
    ));
}

#[test]
fn the_derived_writer_keeps_the_diff_exactly() {
    // A lone surrogate in the semantic diff is hashed as its escape, as the reference does.
    let diff = parse_str(r#"{"why":"\ud800","n":1e21}"#).unwrap();
    let mut r = mk("a", None);
    r.semantic_diff = diff.as_object().unwrap().clone();
    r.stamp().unwrap();
    let bytes = String::from_utf8(r.canonical_bytes().unwrap()).unwrap();
    assert!(
        bytes.contains(r#""semantic_diff":{"n":1e+21,"why":"\ud800"}"#),
        "{bytes}"
    );
    let back = Receipt::from_value(&parse_str(&bytes).unwrap()).unwrap();
    assert_eq!(back.content_hash, r.content_hash);
    assert_eq!(back.canonical_bytes().unwrap(), bytes.as_bytes());
    assert!(verify_receipt(&parse_str(&bytes).unwrap()).ok);
    // A non-finite number in the diff cannot be stamped.
    r.semantic_diff
        .insert("bad", Value::Number(f64::NEG_INFINITY));
    assert_eq!(r.stamp(), Err(json::NonFinite));
}
