//! Unit tests of the ledger: reading, torn tails, verification for write, appends.

use super::*;
use crate::format::receipt::{Cost, Fingerprints, Status, Wake, WakeSource, verify_receipt_chain};

fn receipt(node: &str, token: &str) -> Receipt {
    Receipt {
        node: node.into(),
        contract_fingerprint: "c".into(),
        status: Status::Rendered,
        wake: Wake::new(WakeSource::External),
        input_fingerprints: vec![],
        fingerprints: Fingerprints::atomic(token),
        semantic_diff: Default::default(),
        prev: None,
        cost: Cost::none(WakeSource::External),
        content_hash: String::new(),
    }
}

#[test]
fn reader_cases() {
    let r = read_ledger(b"[]\n").unwrap();
    assert!(r.receipts.is_empty() && r.torn.is_none());
    assert!(read_ledger(b"").unwrap().zero_length);
    assert!(matches!(read_ledger(b"{}"), Err(LedgerError::NotArray)));
    assert!(matches!(
        read_ledger(b"\xef\xbb\xbf[]"),
        Err(LedgerError::NotArray)
    ));
    let r = read_ledger(b"[{\"a\":1},{\"b\":").unwrap();
    assert_eq!(r.receipts.len(), 1);
    assert_eq!(
        r.torn,
        Some(TornTail {
            dropped_bytes: 6,
            complete: 1
        })
    );
    let r = read_ledger(b"[{\"a\":1}").unwrap();
    assert_eq!(r.receipts.len(), 1);
    assert!(r.torn.is_some());
    let r = read_ledger(b"[{\"a\":1},{\"b\"\0\0\0\0").unwrap();
    assert_eq!(r.receipts.len(), 1);
    assert!(r.torn.is_some());
    assert!(matches!(
        read_ledger(b"[{\"a\":1}]x"),
        Err(LedgerError::Corrupt { offset: 9, .. })
    ));
    assert!(matches!(
        read_ledger(b"[{\"a\":1},}"),
        Err(LedgerError::Corrupt { .. })
    ));
    assert!(matches!(
        read_ledger(b"[1 2]"),
        Err(LedgerError::Corrupt { .. })
    ));
    let pretty = b"[\n  {\"a\": 1.0}\n]";
    let r = read_ledger(pretty).unwrap();
    assert_eq!(r.receipts.len(), 1);
    assert!(!is_committed_form(pretty, &r));
    let canon = b"[{\"a\":1}]\n";
    assert!(is_committed_form(canon, &read_ledger(canon).unwrap()));
}

#[test]
fn tail_reader() {
    let full = b"[{\"a\":1},{\"b\":2},{\"c\":3}]\n";
    let r = read_ledger(b"[{\"a\":1}]\n").unwrap();
    let (new, consumed, torn) = read_ledger_tail(&full[r.end_of_complete..], true).unwrap();
    assert_eq!(new.len(), 2);
    assert!(!torn);
    assert_eq!(r.end_of_complete + consumed, full.len() - 2);
    let (new, _, torn) = read_ledger_tail(b",{\"b\":2},{\"c\"", true).unwrap();
    assert_eq!((new.len(), torn), (1, true));
    let (new, _, torn) = read_ledger_tail(b"{\"a\":1}]\n", false).unwrap();
    assert_eq!((new.len(), torn), (1, false));
    assert!(read_ledger_tail(b"]x", true).is_err());
    assert!(read_ledger_tail(b"{}", true).is_err());
}

#[test]
fn append_repair_and_normalize() {
    let d = tempfile::tempdir().unwrap();
    let (mut l, notes) = Ledger::open(d.path()).unwrap();
    assert_eq!(notes, vec![OpenNote::Created]);
    let a = l.append(receipt("a", "1")).unwrap();
    let a2 = l.append(receipt("a", "2")).unwrap();
    let b = l.append(receipt("b", "1")).unwrap();
    assert_eq!(a2.prev.as_deref(), Some(a.content_hash.as_str()));
    assert_eq!(b.prev, None);
    drop(l);
    let bytes = std::fs::read(d.path().join("receipts.json")).unwrap();
    let r = read_ledger(&bytes).unwrap();
    assert!(is_committed_form(&bytes, &r));
    let chain: Vec<Value> = r
        .receipts
        .iter()
        .filter(|v| v.get("node").and_then(Value::as_str) == Some("a"))
        .cloned()
        .collect();
    assert!(verify_receipt_chain(&chain).ok);

    // Tear the tail: the last receipt is dropped, the others kept, appends continue.
    let torn = &bytes[..bytes.len() - 40];
    std::fs::write(d.path().join("receipts.json"), torn).unwrap();
    let (mut l, notes) = Ledger::open(d.path()).unwrap();
    assert!(
        matches!(notes[0], OpenNote::Repaired { intact: 2, .. }),
        "{notes:?}"
    );
    assert_eq!(l.len(), 2);
    let b_again = l.append(receipt("b", "1")).unwrap();
    assert_eq!(b_again.prev, None);
    let a3 = l.append(receipt("a", "3")).unwrap();
    assert_eq!(a3.prev.as_deref(), Some(a2.content_hash.as_str()));
    drop(l);

    // Pretty-printed by a person: normalized once, hashes unchanged.
    let bytes = std::fs::read(d.path().join("receipts.json")).unwrap();
    let vals = read_ledger(&bytes).unwrap().receipts;
    let pretty = json::pretty_string(&Value::Array(vals));
    std::fs::write(d.path().join("receipts.json"), pretty).unwrap();
    let (l, notes) = Ledger::open(d.path()).unwrap();
    assert_eq!(notes, vec![OpenNote::Normalized { receipts: 4 }]);
    assert_eq!(l.last("a").unwrap().content_hash, a3.content_hash);
    assert_eq!(
        std::fs::read(d.path().join("receipts.json")).unwrap(),
        bytes
    );
}

#[test]
fn corrupt_is_refused_untouched() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("receipts.json");
    std::fs::write(&p, b"[{\"a\":1}]garbage").unwrap();
    assert!(matches!(
        Ledger::open(d.path()),
        Err(LedgerError::Corrupt { .. })
    ));
    assert_eq!(std::fs::read(&p).unwrap(), b"[{\"a\":1}]garbage");
    std::fs::write(&p, b"[{\"a\":1}]\n").unwrap();
    let e = Ledger::open(d.path()).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("receipts.json[0] fails verification: receipt.a is not pinned"),
        "{e}"
    );
    assert!(e.is_content_error());
    assert_eq!(std::fs::read(&p).unwrap(), b"[{\"a\":1}]\n");
}

/// Whitespace or NUL only: no array. Readers and writers both refuse it, and the writer
/// leaves it byte-identical (it used to truncate it to `]\n`).
#[test]
fn blank_files_are_refused_untouched() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("receipts.json");
    for blank in [
        &b" "[..],
        b"\n\n",
        b"\0",
        b"\0\0\0\0",
        b" \t\r\n\0\0",
        &[0u8; 4096],
    ] {
        assert!(
            matches!(read_ledger(blank), Err(LedgerError::Blank { len }) if len == blank.len()),
            "{blank:?}"
        );
        std::fs::write(&p, blank).unwrap();
        let e = Ledger::open(d.path()).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("receipts.json must contain a JSON array"),
            "{e}"
        );
        assert_eq!(std::fs::read(&p).unwrap(), blank);
        assert!(check_for_write(d.path()).is_err());
    }
    // A zero-length file is the empty ledger (§11.2 step 1): normalized to `[]\n`.
    std::fs::write(&p, b"").unwrap();
    let (l, notes) = Ledger::open(d.path()).unwrap();
    assert_eq!(l.len(), 0);
    assert_eq!(notes, vec![OpenNote::Normalized { receipts: 0 }]);
    assert_eq!(std::fs::read(&p).unwrap(), b"[]\n");
}

/// A receipt that fails verification (hash, chain, shape) makes every writer refuse, with
/// the index of the first bad receipt; the file is left byte-identical.
#[test]
fn unverified_receipts_are_refused_untouched() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("receipts.json");
    {
        let (mut l, _) = Ledger::open(d.path()).unwrap();
        l.append(receipt("a", "1")).unwrap();
        l.append(receipt("b", "1")).unwrap();
        l.append(receipt("a", "2")).unwrap();
        l.append(receipt("a", "3")).unwrap();
    }
    let good = std::fs::read(&p).unwrap();
    assert!(check_for_write(d.path()).is_ok());
    let text = String::from_utf8(good.clone()).unwrap();
    let refused = |bytes: &[u8], index: usize, needle: &str| {
        std::fs::write(&p, bytes).unwrap();
        match Ledger::open(d.path()) {
            Err(LedgerError::Unverified { index: i, problem }) => {
                assert_eq!(i, index, "{problem}");
                assert!(problem.contains(needle), "{problem}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(std::fs::read(&p).unwrap(), bytes);
        assert!(check_for_write(d.path()).is_err());
    };
    // Hash: a token edited in place (the stored content_hash is stale).
    let pos = text.match_indices("\"@atomic\":\"2\"").next().unwrap().0;
    let mut edited = text.clone();
    edited.replace_range(pos..pos + 13, "\"@atomic\":\"9\"");
    refused(edited.as_bytes(), 2, "content_hash does not match");
    // Chain: drop a's second receipt (a's third then links to a missing predecessor).
    let read = read_ledger(&good).unwrap();
    let mut vals = read.receipts.clone();
    vals.remove(2);
    refused(&committed_bytes(&vals).unwrap(), 2, "prev must be sha256:");
    // Chain: a node's first receipt with a non-null prev (a suffix of a chain).
    let vals = vec![read.receipts[2].clone()];
    refused(&committed_bytes(&vals).unwrap(), 0, "null (cold start)");
    // Shape: not an object, a missing key, an unknown key.
    refused(b"[1]\n", 0, "receipt must be an object");
    let mut o = read.receipts[1].as_object().unwrap().clone();
    o.remove("wake");
    let vals = vec![read.receipts[0].clone(), Value::Object(o)];
    refused(
        &committed_bytes(&vals).unwrap(),
        1,
        "receipt.wake is required",
    );
    let mut o = read.receipts[0].as_object().unwrap().clone();
    o.insert("extra", Value::Null);
    refused(
        &committed_bytes(&[Value::Object(o)]).unwrap(),
        0,
        "not pinned",
    );
    // Restored: opens and appends again.
    std::fs::write(&p, &good).unwrap();
    let (l, notes) = Ledger::open(d.path()).unwrap();
    assert!(notes.is_empty());
    assert_eq!(l.len(), 4);
}

/// A torn tail after a bad receipt is not repaired: the file is refused first.
#[test]
fn no_repair_before_verification() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("receipts.json");
    let bytes = b"[{\"a\":1},{\"b\":";
    std::fs::write(&p, bytes).unwrap();
    assert!(matches!(
        Ledger::open(d.path()),
        Err(LedgerError::Unverified { index: 0, .. })
    ));
    assert_eq!(std::fs::read(&p).unwrap(), bytes);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(96))]

    /// Hostile bytes: any mutation of a sound ledger (bytes flipped, cut, NUL-padded,
    /// spliced) is either opened (and then verifies) or refused with the file left
    /// byte-identical; never a panic, never a half-repaired file.
    #[test]
    fn any_mutation_is_opened_or_refused_untouched(
        edits in proptest::collection::vec((0usize..4096, proptest::prelude::any::<u8>()), 0..6),
        cut in proptest::option::of(0usize..4096),
        nul in 0usize..32,
    ) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("receipts.json");
        {
            let (mut l, _) = Ledger::open(d.path()).unwrap();
            for (i, n) in ["a", "b", "a", "c", "a"].iter().enumerate() {
                l.append(receipt(n, &i.to_string())).unwrap();
            }
        }
        let mut bytes = std::fs::read(&p).unwrap();
        for (at, b) in &edits {
            let at = at % bytes.len();
            bytes[at] = *b;
        }
        if let Some(c) = cut {
            bytes.truncate(c % (bytes.len() + 1));
        }
        bytes.extend(std::iter::repeat_n(0u8, nul));
        std::fs::write(&p, &bytes).unwrap();
        match Ledger::open(d.path()) {
            Ok((l, _)) => {
                let now = std::fs::read(&p).unwrap();
                let read = read_ledger(&now).unwrap();
                proptest::prop_assert!(is_committed_form(&now, &read));
                proptest::prop_assert_eq!(read.receipts.len(), l.len());
                proptest::prop_assert!(verify_for_write(&read.receipts).is_ok());
            }
            Err(e) => {
                proptest::prop_assert!(e.is_content_error(), "{e}");
                proptest::prop_assert_eq!(std::fs::read(&p).unwrap(), bytes);
            }
        }
    }
}
