//! The read helpers of the library facade (VIEWER.md §7): `read_labels`, `read_beats` and
//! `verify_node_chain_raw`, against the compatibility corpus and against damaged copies.

use std::path::Path;

use reactor::format::json::{self, Value};
use reactor::{
    OpenStateDirOptions, open_state_dir, read_beats, read_labels, verify_node_chain_raw,
    verify_receipt_chain,
};

use crate::support::compat_dir;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

#[test]
fn labels_and_beats_read_as_the_open_reads_them() {
    let Some(corpus) = compat_dir() else { return };
    let mut with_labels = 0;
    let mut with_beats = 0;
    let mut beats_kept = 0;
    for name in [
        "agent-observatory-cli",
        "basic-unit-suite",
        "masked-relay",
        "renewal-risk",
        "research-tree",
        "surprise-cost",
    ] {
        let dir = corpus.join(name);
        let opened = open_state_dir(&dir, &OpenStateDirOptions::default()).unwrap();
        let labels = read_labels(&dir);
        let beats = read_beats(&dir);
        assert_eq!(labels, opened.labels, "{name}");
        assert_eq!(beats, opened.beats, "{name}");
        // Against the files themselves: every string entry, in file order.
        match std::fs::read(dir.join("compile/labels.json")) {
            Ok(bytes) => {
                with_labels += 1;
                let v = json::parse(&bytes).unwrap();
                let expected: Vec<(String, String)> = v
                    .as_object()
                    .unwrap()
                    .iter()
                    .filter_map(|(k, v)| Some((k.to_lossy().into_owned(), v.as_str()?.to_owned())))
                    .collect();
                assert!(!expected.is_empty(), "{name}");
                assert_eq!(labels, expected, "{name}");
            }
            Err(_) => assert!(labels.is_empty(), "{name}"),
        }
        match std::fs::read(dir.join("beats.json")) {
            Ok(bytes) => {
                with_beats += 1;
                let v = json::parse(&bytes).unwrap();
                let b = beats.unwrap_or_else(|| panic!("{name}: beats.json not read"));
                assert_eq!(
                    Some(b.title.as_str()),
                    v.get("title").and_then(Value::as_str),
                    "{name}"
                );
                let kept = v
                    .get("beats")
                    .and_then(Value::as_array)
                    .unwrap()
                    .iter()
                    .filter(|x| {
                        x.get("park").and_then(Value::as_f64).is_some()
                            && x.get("caption").and_then(Value::as_str).is_some()
                    })
                    .count();
                // renewal-risk's beats carry no `park`: none is kept there.
                assert_eq!(b.beats.len(), kept, "{name}");
                beats_kept += kept;
            }
            Err(_) => assert!(beats.is_none(), "{name}"),
        }
    }
    assert_eq!((with_labels, with_beats), (3, 3));
    assert!(beats_kept > 0);

    // Missing, malformed or hostile files: empty labels, no beats, never an error.
    let d = tempfile::tempdir().unwrap();
    assert!(read_labels(&d.path().join("nope")).is_empty());
    assert_eq!(read_beats(&d.path().join("nope")), None);
    std::fs::create_dir_all(d.path().join("compile")).unwrap();
    for (labels, beats) in [
        (&b"[1,2]"[..], &b"{\"beats\":{}}"[..]),
        (b"{", b"{\"beats\":[{\"park\":\"1\",\"caption\":\"c\"}"),
        (b"\xff\xfe", b"null"),
        (b"{\"a\":1,\"b\":null}", b"[]"),
    ] {
        std::fs::write(d.path().join("compile/labels.json"), labels).unwrap();
        std::fs::write(d.path().join("beats.json"), beats).unwrap();
        assert!(read_labels(d.path()).is_empty(), "{labels:?}");
        assert_eq!(read_beats(d.path()), None, "{beats:?}");
    }
    // A directory where the file should be.
    std::fs::remove_file(d.path().join("beats.json")).unwrap();
    std::fs::create_dir(d.path().join("beats.json")).unwrap();
    assert_eq!(read_beats(d.path()), None);
}

#[test]
fn node_chains_verify_from_the_raw_receipts() {
    let Some(corpus) = compat_dir() else { return };
    let dir = corpus.join("masked-relay");
    let opened = open_state_dir(&dir, &OpenStateDirOptions::default()).unwrap();
    let mut nodes: Vec<&str> = opened.projected.iter().map(|p| p.node.as_str()).collect();
    nodes.sort();
    nodes.dedup();
    assert!(nodes.len() > 5);
    let mut total = 0;
    for node in &nodes {
        let verdict = verify_node_chain_raw(&opened, node);
        assert!(verdict.ok, "{node}: {:?}", verdict.errors);
        // The same as verifying the node's raw receipts by hand.
        let mine: Vec<Value> = opened
            .raw
            .iter()
            .filter(|v| v.get("node").and_then(Value::as_str) == Some(node))
            .cloned()
            .collect();
        assert_eq!(verdict, verify_receipt_chain(&mine), "{node}");
        assert_eq!(verdict.length, mine.len(), "{node}");
        assert_eq!(verdict, opened.verify_node_chain(node), "{node}");
        total += verdict.length;
    }
    assert_eq!(total, opened.raw.len());
    let none = verify_node_chain_raw(&opened, "no.such-node");
    assert!(none.ok);
    assert_eq!(none.length, 0);

    // Tamper with one receipt of one node (the text of its first `"status":"skipped"` becomes
    // `"rendered"`): that node's chain fails, every other node's still verifies.
    let d = tempfile::tempdir().unwrap();
    copy_dir(&dir, d.path());
    let ledger = std::fs::read_to_string(d.path().join("receipts.json")).unwrap();
    let at = ledger.find("\"skipped\"").expect("a skipped receipt");
    let mut tampered = ledger.clone();
    tampered.replace_range(at..at + "\"skipped\"".len(), "\"rendered\"");
    std::fs::write(d.path().join("receipts.json"), tampered).unwrap();
    let original = open_state_dir(&dir, &OpenStateDirOptions::default()).unwrap();
    let opened = open_state_dir(d.path(), &OpenStateDirOptions::default()).unwrap();
    assert_eq!(opened.raw.len(), original.raw.len());
    let changed: Vec<usize> = (0..opened.raw.len())
        .filter(|&i| {
            json::canonical_string(&opened.raw[i]).unwrap()
                != json::canonical_string(&original.raw[i]).unwrap()
        })
        .collect();
    assert_eq!(changed.len(), 1, "{changed:?}");
    let victim_index = changed[0];
    let victim = opened.projected[victim_index].node.clone();
    for node in &nodes {
        let verdict = verify_node_chain_raw(&opened, node);
        assert_eq!(verdict.ok, *node != victim, "{node}: {:?}", verdict.errors);
    }
}
