//! A second, deliberately simple implementation of the FORMATS.md rules, independent of the
//! project's `format` module: serde_json parsing, a naive canonical writer (integers only,
//! UTF-16 key sort by transcoding, JSON.stringify escaping), SHA-256 content hashes, per-node
//! `prev` links, and a byte-for-byte comparison of `receipts.json` with the canonical array.

use std::collections::HashMap;

use serde_json::Value;
use sha2::{Digest, Sha256};

fn esc(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Canonical JSON, simply. Errors on non-integer numbers (the project's own ledgers and the
/// corpus hold only integers).
pub fn canon(v: &Value, out: &mut String) -> Result<(), String> {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.push_str(&i.to_string());
            } else if let Some(u) = n.as_u64() {
                out.push_str(&u.to_string());
            } else {
                return Err(format!(
                    "the simple implementation handles integers only, found {n}"
                ));
            }
        }
        Value::String(s) => esc(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canon(x, out)?;
            }
            out.push(']');
        }
        Value::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort_by(|a, b| {
                a.encode_utf16()
                    .collect::<Vec<_>>()
                    .cmp(&b.encode_utf16().collect::<Vec<_>>())
            });
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                esc(k, out);
                out.push(':');
                canon(&o[k], out)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

fn sha(s: &str) -> String {
    let d = Sha256::digest(s.as_bytes());
    let mut h = String::from("sha256:");
    for b in d {
        h.push_str(&format!("{b:02x}"));
    }
    h
}

/// Checks a whole `receipts.json`: canonical bytes, recomputed hashes, per-node prev links.
pub fn check_ledger(bytes: &[u8]) -> Result<usize, String> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let arr = v.as_array().ok_or("not an array")?;
    let mut whole = String::from("[");
    let mut last: HashMap<String, String> = HashMap::new();
    for (i, r) in arr.iter().enumerate() {
        if i > 0 {
            whole.push(',');
        }
        canon(r, &mut whole)?;
        let o = r
            .as_object()
            .ok_or(format!("receipt {i} is not an object"))?;
        let mut body = o.clone();
        let stored = body
            .remove("content_hash")
            .and_then(|h| h.as_str().map(str::to_string))
            .ok_or(format!("receipt {i}: no content_hash"))?;
        let mut text = String::new();
        canon(&Value::Object(body), &mut text)?;
        let computed = sha(&text);
        if computed != stored {
            return Err(format!(
                "receipt {i}: content_hash {stored} but the payload hashes to {computed}"
            ));
        }
        let node = o
            .get("node")
            .and_then(Value::as_str)
            .ok_or(format!("receipt {i}: no node"))?;
        let prev = o.get("prev").ok_or(format!("receipt {i}: no prev"))?;
        let expected = last
            .get(node)
            .map(|h| Value::String(h.clone()))
            .unwrap_or(Value::Null);
        if *prev != expected {
            return Err(format!(
                "receipt {i} ({node}): prev {prev} but expected {expected}"
            ));
        }
        last.insert(node.to_string(), stored);
    }
    whole.push_str("]\n");
    if whole.as_bytes() != bytes {
        let at = whole
            .bytes()
            .zip(bytes.iter())
            .position(|(a, b)| a != *b)
            .unwrap_or(whole.len().min(bytes.len()));
        return Err(format!(
            "file bytes differ from the canonical serialization at byte {at}"
        ));
    }
    Ok(arr.len())
}

#[test]
fn simple_impl_matches_worked_example() {
    let r = r#"{"content_hash":"sha256:ddfa6a7c5575954aa83ceec1cf93497e80b2e3852defae19727226216b4d0b57","contract_fingerprint":"contract:ingress.signal-inbox@ingress","cost":{"model":"none","provider":"none","surprise_cause":"external","tokens":{"fresh":0,"reused":0}},"fingerprints":{"@atomic":"sha256:4b8dc041b829d799da5ebed390c0f7a58edc2ce1be03907a16d10ea5b96c4e43","inbox":"sha256:0d347a3656cbf09e7e918bbf56b3207d39dbadbb5b5bd58f368cd523750e5c19"},"hash_algorithm":"sha256","input_fingerprints":[],"node":"ingress.signal-inbox","prev":null,"schema":"openprose.receipt","semantic_diff":{},"sig":{"null_reason":"no-signer-adapter-configured","scheme":"none"},"status":"rendered","wake":{"refs":[],"source":"external"}}"#;
    assert_eq!(check_ledger(format!("[{r}]\n").as_bytes()), Ok(1));
    assert!(check_ledger(format!("[{r}]").as_bytes()).is_err());
    assert!(
        check_ledger(r#"[{"content_hash":"sha256:00","node":"a","prev":null}]"#.as_bytes())
            .is_err()
    );
}

/// Ledgers the project writes pass the simple implementation (the core invariant scenario).
#[test]
fn project_written_ledgers_pass_the_simple_implementation() {
    use reactor::core::ir::{AtomicRules, Ir, NodeIr};
    use reactor::core::{Reactor, ReactorOptions};
    use reactor::format::receipt::{Wake, WakeSource};
    use reactor::format::topology::{Edge, TopologyNode};
    use reactor::scenario::ScriptedRender;
    use std::sync::Arc;
    let mut ir = Ir::default();
    for (n, ws) in [("gw", WakeSource::External), ("b", WakeSource::Input)] {
        ir.topology.nodes.push(TopologyNode {
            node: n.into(),
            contract_fingerprint: Some(format!("c-{n}")),
            wake_source: Some(ws),
        });
        ir.nodes.insert(
            n.into(),
            NodeIr {
                id: n.into(),
                contract_fingerprint: format!("c-{n}"),
                wake_source: ws,
                rules: Arc::new(AtomicRules),
            },
        );
    }
    ir.topology.edges.push(Edge::new("gw", "b", "@atomic"));
    ir.topology.entry_points.push("gw".into());
    let d = tempfile::tempdir().unwrap();
    let s = Arc::new(ScriptedRender::new());
    s.set("gw", |ctx| {
        let n = ctx
            .upstream
            .read("gw::ingress")
            .map(|f| f.len())
            .unwrap_or(0);
        reactor::scenario::truth_product(
            &reactor::format::json::parse_str(&format!("{{\"n\":{n},\"s\":\"é\\u0001\\\"\"}}"))
                .unwrap(),
            vec![],
            None,
        )
    });
    let (r, _) = Reactor::open(d.path(), ir, s, ReactorOptions::default()).unwrap();
    for i in 0..5 {
        r.stage_arrival(
            "gw",
            reactor::core::Arrival {
                id: format!("a{i}"),
                item: reactor::format::json::Value::Number(i as f64),
            },
            "gw",
        )
        .unwrap();
        r.ingest("gw", Wake::new(WakeSource::External)).unwrap();
        r.ingest("b", Wake::new(WakeSource::SelfWake)).unwrap();
    }
    let bytes = std::fs::read(d.path().join("receipts.json")).unwrap();
    // 5 × (ingress + gateway render + self-woken skip of b) + b's one propagated render.
    assert_eq!(r.ledger_len(), 16);
    assert_eq!(check_ledger(&bytes), Ok(16));
}

/// The bundled fixtures (written by the project's reconciler) pass the simple implementation.
#[test]
fn bundled_fixtures_pass_the_simple_implementation() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    for name in reactor::devtools::SHIPPED_EXAMPLES {
        let bytes = std::fs::read(root.join(name).join("receipts.json")).unwrap();
        let n = check_ledger(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(n > 0, "{name}");
    }
}
