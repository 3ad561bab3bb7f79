//! Query parsing, the snapshot view and the index codes of `/api/frames` (routes are tested in
//! `server/tests.rs`).

use super::*;
use crate::devtools::examples::open_example;
use crate::replay::open::OpenStateDirOptions;
use crate::replay::snapshot::{build_session, snapshot_from_session};

fn q(s: &str) -> Result<PageQuery, PageQueryError> {
    parse_page_query(Some(s))
}

#[test]
fn page_queries_parse_with_defaults_and_bounds() {
    assert_eq!(
        parse_page_query(None),
        Ok(PageQuery {
            from: 0,
            count: 1000,
            form: PageForm::Full
        })
    );
    assert_eq!(
        q("from=12&count=5000"),
        Ok(PageQuery {
            from: 12,
            count: 5000,
            form: PageForm::Full
        })
    );
    assert_eq!(
        q("count=200000&form=index&from=0007&from=9"),
        Ok(PageQuery {
            from: 7,
            count: 200_000,
            form: PageForm::Index
        }),
        "the first occurrence wins; leading zeros are digits"
    );
    assert_eq!(q("form=full&_=1700000000").unwrap().form, PageForm::Full);
    assert_eq!(
        q("from=9007199254740991").unwrap().from,
        9_007_199_254_740_991
    );
}

#[test]
fn hostile_page_queries_are_refused_with_a_reason() {
    let from = "from must be a non-negative integer up to 2^53-1";
    let count = "count must be an integer from 1 to 5000";
    let long = "9".repeat(10_000);
    let cases: Vec<(String, &str)> = vec![
        ("from=-1".into(), from),
        ("from=+1".into(), from),
        ("from=1.5".into(), from),
        ("from=".into(), from),
        ("from=0x10".into(), from),
        ("from=9007199254740992".into(), from),
        (format!("from={long}"), from),
        ("from=%31%32".into(), "ok"),
        ("from=1%2".into(), "malformed percent-encoding in query"),
        ("count=0".into(), count),
        ("count=5001".into(), count),
        ("count=-5".into(), count),
        ("count= 5".into(), count),
        ("count=5&form=index&count=0".into(), "ok"),
        (
            "count=200001&form=index".into(),
            "count must be an integer from 1 to 200000",
        ),
        ("form=columns".into(), "form must be full or index"),
        ("form=".into(), "form must be full or index"),
        ("count=%ff".into(), "malformed percent-encoding in query"),
        (
            "from=%E0%A4%A".into(),
            "malformed percent-encoding in query",
        ),
        (
            format!("count={}", "%zz".repeat(5000)),
            "malformed percent-encoding in query",
        ),
    ];
    for (query, want) in cases {
        let got = q(&query);
        if want == "ok" {
            assert!(got.is_ok(), "{query}: {got:?}");
        } else {
            assert_eq!(
                got.map_err(|e| e.to_string()),
                Err(want.to_string()),
                "{query}"
            );
        }
    }
    assert_eq!(q("from=%31%32").unwrap().from, 12);
}

#[test]
fn the_snapshot_view_serializes_like_the_snapshot() {
    for name in ["masked-relay", "surprise-cost", "inbox-triage"] {
        let Ok(o) = open_example(name, &OpenStateDirOptions::default()) else {
            eprintln!("SKIPPED: the bundled fixture {name} is not generated");
            continue;
        };
        let session = build_session(&o);
        let snap = snapshot_from_session(&o, &session);
        let view = SnapshotView::new(&snap, &snap.frames, None);
        assert_eq!(
            json::to_js_compact(&view),
            json::to_js_compact(&snap),
            "{name}"
        );
        // frames=none: the same members with `frames: []`, then `frameCount`.
        let slots = WhySlots::new(o.topology.as_ref());
        let raw = RawStore::of_values(&o.raw);
        let src = PageSource {
            opened: &o,
            session: &session,
            slots: &slots,
            raw: &raw,
        };
        let head = crate::replay::snapshot::snapshot_head(&o, &session);
        let h = String::from_utf8(src.state_head(&head)).unwrap();
        let mut empty = snap.clone();
        empty.frames.clear();
        let e = String::from_utf8(json::to_js_compact(&empty)).unwrap();
        assert_eq!(
            h,
            format!(
                "{},\"frameCount\":{}}}",
                &e[..e.len() - 1],
                snap.frames.len()
            )
        );
    }
}

#[test]
fn index_codes_and_hash_lookups() {
    let Ok(o) = open_example("masked-relay", &OpenStateDirOptions::default()) else {
        eprintln!("SKIPPED: the bundled fixtures are not generated");
        return;
    };
    let session = build_session(&o);
    for f in &session.frames {
        let c = frame_code(f);
        assert!(c < 54);
        assert_eq!(
            c % 3,
            ["rendered", "skipped", "failed"]
                .iter()
                .position(|s| *s == f.status.as_str())
                .unwrap() as u8
        );
        assert_eq!(c >= 27, !f.moved_facets.is_empty());
    }
    let raw = RawStore::of_values(&o.raw);
    for (i, v) in o.raw.iter().enumerate() {
        let h = v.get("content_hash").and_then(Value::as_str).unwrap();
        assert_eq!(raw.by_hash(h), Some(i));
    }
    assert_eq!(raw.by_hash("sha256:nope"), None);
    // Every frame's cause read through a page's ledger is its whole-ledger cause.
    let slots = WhySlots::new(o.topology.as_ref());
    let whys = crate::replay::why::explain_ledger(&o.raw, o.topology.as_ref());
    for (from, to) in [(0, o.raw.len()), (5, 9), (40, 41)] {
        let ledger = PageLedger::new(&raw, &session, from..to);
        for (i, want) in whys.iter().enumerate().take(to).skip(from) {
            assert_eq!(&explain(&slots, &ledger, i), want, "frame {i}");
        }
    }
}
