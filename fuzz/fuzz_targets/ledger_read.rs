//! `receipts.json` bytes through the reader (FORMATS.md §11.2), the live-follow tail reader and
//! both verifiers (§7: per-node chains as `receipts verify` and the viewer check them, and the
//! writer's check before it appends).
//!
//! Properties: every span re-parses to its element; the tail reader agrees with the reader; a
//! ledger the writer's check accepts has every node chain verified and the other way round;
//! the committed form of verified receipts reads back as the same receipts (up to member
//! order, which the committed form sorts), and a file already in committed form re-serializes
//! to identical bytes.
#![no_main]

use std::collections::HashMap;

use libfuzzer_sys::fuzz_target;
use reactor::format::json::{self, JsString, Value};
use reactor::format::receipt::verify_receipt_chain;
use reactor::store::ledger::{
    LedgerError, committed_bytes, is_committed_form, read_ledger, read_ledger_tail,
    verify_for_write,
};
use reactor_fuzz::same_value;

fuzz_target!(|bytes: &[u8]| {
    let Ok(read) = read_ledger(bytes) else { return };
    assert_eq!(read.receipts.len(), read.spans.len());
    assert!(read.end_of_complete <= bytes.len());
    for (v, (s, e)) in read.receipts.iter().zip(&read.spans) {
        assert_eq!(&json::parse(&bytes[*s..*e]).expect("a span parses"), v);
    }
    if let Some(t) = &read.torn {
        assert_eq!(t.complete, read.receipts.len());
        assert_eq!(t.dropped_bytes, bytes.len() - read.end_of_complete);
    }
    if bytes.first() == Some(&b'[') {
        let (tail, consumed, torn) =
            read_ledger_tail(&bytes[1..], false).expect("the tail reader agrees");
        assert_eq!(tail, read.receipts);
        assert_eq!(torn, read.torn.is_some());
        if !tail.is_empty() {
            assert_eq!(consumed + 1, read.end_of_complete);
        }
    }

    let mut chains: HashMap<&JsString, Vec<Value>> = HashMap::new();
    for v in &read.receipts {
        if let Some(Value::String(node)) = v.get("node") {
            chains.entry(node).or_default().push(v.clone());
        }
    }
    let all_nodes = chains.values().map(Vec::len).sum::<usize>() == read.receipts.len();
    let chains_ok = all_nodes && chains.values().all(|c| verify_receipt_chain(c).ok);
    match verify_for_write(&read.receipts) {
        Ok(last) => {
            assert!(
                chains_ok,
                "the writer accepts what the chain verifier refuses"
            );
            assert_eq!(last.len(), chains.len());
        }
        Err(LedgerError::BadElement { .. }) => {}
        Err(e) => assert!(
            !chains_ok,
            "the chain verifier accepts what the writer refuses: {e}"
        ),
    }
    if chains_ok {
        let committed = committed_bytes(&read.receipts).expect("verified receipts are finite");
        let again = read_ledger(&committed).expect("the committed form reads");
        assert_eq!(again.receipts.len(), read.receipts.len());
        for (a, b) in again.receipts.iter().zip(&read.receipts) {
            assert!(same_value(a, b), "the committed form changed a receipt");
        }
        assert!(is_committed_form(&committed, &again));
        if is_committed_form(bytes, &read) {
            assert_eq!(committed, bytes);
        }
    }
});
