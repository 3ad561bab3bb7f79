//! A whole state directory through `reactor-devtools --describe` and the viewer's snapshot
//! (VIEWER.md §3, §5): the input is split at `\n--\n` into `receipts.json`,
//! `compile/topology.json`, `compile/labels.json` and `beats.json` (an empty piece is an absent
//! file, except the ledger, which is always written).
//!
//! Properties: open either succeeds or gives an error with a message; describe is
//! deterministic, its text ends with a newline and its verdict matches the writer's check and
//! the offline verbs' per-node verification (`receipts verify`, `trace`); the JSON form and the
//! snapshot serialize to JSON that parses back; the snapshot has one frame per receipt.
#![no_main]

use libfuzzer_sys::fuzz_target;
use reactor::format::json;
use reactor::replay::open::{OpenStateDirOptions, open_state_dir};
use reactor::replay::trail::Trail;
use reactor::replay::{DescribeOptions, build_snapshot, describe_state_dir};
use reactor::store::ledger::verify_for_write;
use reactor_fuzz::{pieces, temp_dir};

fuzz_target!(|data: &[u8]| {
    let p = pieces(data, 4);
    let dir = temp_dir();
    let root = dir.path();
    std::fs::create_dir(root.join("compile")).unwrap();
    std::fs::write(root.join("receipts.json"), p[0]).unwrap();
    for (bytes, rel) in [
        (p[1], "compile/topology.json"),
        (p[2], "compile/labels.json"),
        (p[3], "beats.json"),
    ] {
        if !bytes.is_empty() {
            std::fs::write(root.join(rel), bytes).unwrap();
        }
    }
    let opened = match open_state_dir(root, &OpenStateDirOptions::default()) {
        Ok(o) => o,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    let opts = DescribeOptions::default();
    let described = describe_state_dir(&opened, &opts);
    let again = describe_state_dir(&opened, &opts);
    assert_eq!(described.text, again.text, "describe is not deterministic");
    assert!(described.text.ends_with('\n'));
    assert_eq!(described.empty, opened.raw.is_empty());
    if verify_for_write(&opened.raw).is_ok() {
        assert!(
            described.chain_ok,
            "the writer's check passes but describe fails"
        );
    }
    let trail = Trail::read(root).expect("the offline verbs read what the viewer opened");
    assert_eq!(trail.len(), opened.raw.len());
    for row in &described.data.nodes {
        assert_eq!(
            trail.verify_chain(&row.node).ok,
            row.chain_ok,
            "{}",
            row.node
        );
        assert_eq!(
            trail.count_of(&row.node) as u64,
            row.rendered + row.skipped + row.failed
        );
    }
    let doc = json::to_js_pretty(&described.data);
    let doc = json::parse(&doc).expect("describe --json parses");
    assert_eq!(
        doc.get("chainVerify").and_then(|c| c.get("ok")),
        Some(&json::Value::Bool(described.chain_ok))
    );
    let snapshot = build_snapshot(&opened);
    assert_eq!(snapshot.frames.len(), opened.raw.len());
    json::parse(&json::to_js_compact(&snapshot)).expect("the snapshot parses");
});
