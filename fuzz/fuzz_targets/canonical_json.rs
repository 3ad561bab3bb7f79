//! Canonical JSON (FORMATS.md §3): the parser and the canonical writer on arbitrary bytes, and
//! a differential against Node.js: `JSON.parse`, then `JSON.stringify` of every scalar with
//! object keys sorted by UTF-16 code units (`tests/node/canonical_json.mjs`, one long-lived
//! child). Without `node` the differential is skipped with a note, unless
//! `REACTOR_REQUIRE_NODE=1`.
//!
//! Properties: canonical text re-parses to the same value and is a fixpoint; only a value
//! holding a non-finite number fails to canonicalize; for UTF-8 input, Node accepts exactly
//! what the parser accepts (nesting within the parser's depth limit), refuses to canonicalize
//! exactly the same values, and otherwise prints byte-identical canonical text.
#![no_main]

use std::sync::{Mutex, OnceLock};

use libfuzzer_sys::fuzz_target;
use reactor::format::json::{self, ParseErrorKind};
use reactor_fuzz::{NodeCanonical, NodeDiff, has_non_finite, same_value};

fn node() -> &'static Mutex<Option<NodeDiff>> {
    static NODE: OnceLock<Mutex<Option<NodeDiff>>> = OnceLock::new();
    NODE.get_or_init(|| {
        let started = NodeDiff::start();
        if started.is_none() {
            if std::env::var("REACTOR_REQUIRE_NODE").as_deref() == Ok("1") {
                panic!("node is not available (REACTOR_REQUIRE_NODE=1)");
            }
            eprintln!("canonical_json: node is not available; the differential is skipped");
        }
        Mutex::new(started)
    })
}

fuzz_target!(|data: &[u8]| {
    let parsed = json::parse(data);
    let ours = match &parsed {
        Ok(v) => match json::canonical_string(v) {
            Ok(text) => {
                let back = json::parse_str(&text).expect("canonical text parses");
                assert!(same_value(&back, v), "{text}");
                assert_eq!(json::canonical_string(&back).unwrap(), text);
                NodeCanonical::Text(text)
            }
            Err(_) => {
                assert!(has_non_finite(v));
                NodeCanonical::NonFinite
            }
        },
        Err(e) if e.kind == ParseErrorKind::TooDeep => return,
        Err(_) => NodeCanonical::Rejected,
    };
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut guard = node().lock().unwrap();
    let Some(diff) = guard.as_mut() else { return };
    let theirs = diff.canonical(text);
    assert_eq!(ours, theirs, "input {text:?}");
});
