//! The compatibility corpus (FORMATS.md §18): every reference-written state directory opens,
//! describes with the README's figures, and chain-verifies; tampering is always caught.

use std::path::Path;
use std::process::Command;

use proptest::prelude::*;

use reactor::format::json::{self, Value};
use reactor::replay::{self, DescribeOptions, OpenStateDirOptions};
use reactor::store::ledger::read_ledger;

use crate::simple_formats;
use crate::support::{bin, compat_dir};

/// `(folder, receipts, rendered, skipped, failed, fresh, reused, reuse %, topology (nodes, edges)
/// or None, distinct receipt nodes)` from `../shared/compat/README.md`.
/// One row of the README table.
type Figure = (
    &'static str,
    usize,
    u64,
    u64,
    u64,
    u64,
    u64,
    u64,
    Option<(usize, usize)>,
    usize,
);

const FIGURES: &[Figure] = &[
    (
        "masked-relay",
        77,
        46,
        31,
        0,
        27180,
        12840,
        32,
        Some((12, 23)),
        13,
    ),
    ("surprise-cost", 5, 4, 1, 0, 800, 640, 44, None, 2),
    (
        "agent-observatory-cli",
        13,
        11,
        2,
        0,
        38352,
        313856,
        89,
        Some((7, 13)),
        8,
    ),
    (
        "renewal-risk",
        65,
        40,
        25,
        0,
        3200,
        3760,
        54,
        Some((3, 6)),
        4,
    ),
    (
        "basic-unit-suite",
        45,
        35,
        9,
        1,
        6240,
        6960,
        53,
        Some((7, 9)),
        8,
    ),
    ("research-tree", 72, 49, 22, 1, 45900, 9360, 17, None, 14),
];

fn describe_json(dir: &Path) -> (i32, Value, String) {
    let out = Command::new(bin())
        .args(["devtools"])
        .arg(dir)
        .args(["--describe", "--json"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let v = json::parse_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    (
        out.status.code().unwrap_or(-1),
        v,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn num(v: &Value, path: &[&str]) -> f64 {
    let mut cur = v;
    for p in path {
        cur = cur
            .get(p)
            .unwrap_or_else(|| panic!("missing {p} in {path:?}"));
    }
    cur.as_f64().unwrap()
}

#[test]
fn every_corpus_dir_describes_with_readme_figures() {
    let Some(c) = compat_dir() else { return };
    for &(name, receipts, r, s, f, fresh, reused, pct, topo, distinct) in FIGURES {
        let dir = c.join(name);
        let (code, v, stderr) = describe_json(&dir);
        assert_eq!(code, 0, "{name}: {stderr}");
        assert_eq!(num(&v, &["receipts"]) as usize, receipts, "{name}");
        assert_eq!(num(&v, &["dispositions", "rendered"]) as u64, r, "{name}");
        assert_eq!(num(&v, &["dispositions", "skipped"]) as u64, s, "{name}");
        assert_eq!(num(&v, &["dispositions", "failed"]) as u64, f, "{name}");
        assert_eq!(
            num(&v, &["costRollup", "total", "fresh"]) as u64,
            fresh,
            "{name}"
        );
        assert_eq!(
            num(&v, &["costRollup", "total", "reused"]) as u64,
            reused,
            "{name}"
        );
        assert_eq!(
            reactor::replay::describe::reuse_percent(fresh, reused),
            pct,
            "{name}"
        );
        assert_eq!(
            v.get("chainVerify").unwrap().get("ok"),
            Some(&Value::Bool(true)),
            "{name}"
        );
        let present = v.get("topology").unwrap().get("present") == Some(&Value::Bool(true));
        match topo {
            Some((n, e)) => {
                assert!(present, "{name}");
                assert_eq!(num(&v, &["topology", "nodes"]) as usize, n, "{name}");
                assert_eq!(num(&v, &["topology", "edges"]) as usize, e, "{name}");
            }
            None => {
                assert!(!present, "{name}");
                assert_eq!(num(&v, &["topology", "edges"]) as usize, 0, "{name}");
            }
        }
        // Distinct receipt nodes, through the library.
        let opened = replay::open_state_dir(&dir, &OpenStateDirOptions::default()).unwrap();
        let mut nodes: Vec<&str> = opened.projected.iter().map(|p| p.node.as_str()).collect();
        nodes.sort();
        nodes.dedup();
        assert_eq!(nodes.len(), distinct, "{name}");
    }
}

#[test]
fn masked_relay_text_lines() {
    let Some(c) = compat_dir() else { return };
    let dir = c.join("masked-relay");
    let out = Command::new(bin())
        .arg("devtools")
        .arg(&dir)
        .arg("--describe")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    for line in [
        "  topology    yes · 12 nodes · 23 edges · acyclic=true",
        "  receipts    77 frames",
        "  dispositions rendered=46 · skipped=31 · failed=0",
        "  surprise-cause  external=8 · input=69  (a.k.a. wake-cause)",
        "  memo-skips  31  (Reactor renders skipped — zero fresh tokens each)",
        "  total       fresh=27180 tokens · reused=12840 tokens",
        "  prompt-cache reuse  32%  (provider-reported; can be 0% on the default model)",
        "    input     receipts=69  fresh=26100   tokens reused=12000 tokens",
        "    external  receipts=8   fresh=1080    tokens reused=840 tokens",
        "  peak fresh  1620 tokens at frame 58 (viewport-masker)",
        "CHAIN-VERIFY  ok — meaning-layer chain-consistency",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing line {line:?} in\n{text}"
        );
    }
    // Frame 58: the masker moves @atomic, view_e1, view_e2; three lanes; three woken once each.
    let opened = replay::open_state_dir(&dir, &OpenStateDirOptions::default()).unwrap();
    let snap = replay::build_snapshot(&opened);
    let f = &snap.frames[58];
    assert_eq!(f.node, "responsibility.viewport-masker");
    assert_eq!(f.moved_facets, vec!["@atomic", "view_e1", "view_e2"]);
    let lanes: Vec<(String, String)> = f
        .edges_to_light
        .iter()
        .map(|e| (e.facet.clone(), e.subscriber.clone()))
        .collect();
    assert_eq!(lanes.len(), 3);
    assert!(lanes.contains(&("@atomic".into(), "responsibility.diversity-auditor".into())));
    assert!(lanes.contains(&("view_e1".into(), "responsibility.expander-1".into())));
    assert!(lanes.contains(&("view_e2".into(), "responsibility.expander-2".into())));
    assert_eq!(f.woken_subscribers.len(), 3);
    // Wake sources: 69 input / 8 external / 0 self.
    let ext = snap
        .frames
        .iter()
        .filter(|f| f.wake_source == reactor::format::receipt::WakeSource::External)
        .count();
    assert_eq!((snap.frames.len() - ext, ext), (69, 8));
}

#[test]
fn corpus_files_are_canonical_and_hashes_recompute_simply() {
    let Some(c) = compat_dir() else { return };
    for &(name, ..) in FIGURES {
        let bytes = std::fs::read(c.join(name).join("receipts.json")).unwrap();
        // The deliberately simple second implementation agrees byte for byte.
        simple_formats::check_ledger(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        // And the project's own reader sees a committed-form file.
        let read = read_ledger(&bytes).unwrap();
        assert!(
            reactor::store::ledger::is_committed_form(&bytes, &read),
            "{name}"
        );
    }
    let masked = std::fs::metadata(c.join("masked-relay/receipts.json"))
        .unwrap()
        .len();
    assert_eq!(masked, 80918);
}

#[test]
fn agent_observatory_cli_has_constant_null_facet_fingerprints() {
    let Some(c) = compat_dir() else { return };
    let opened = replay::open_state_dir(
        &c.join("agent-observatory-cli"),
        &OpenStateDirOptions::default(),
    )
    .unwrap();
    let null_token = reactor::format::address::NULL_ADDRESS;
    let with_null = opened
        .projected
        .iter()
        .filter(|p| {
            p.fingerprints
                .0
                .iter()
                .any(|(k, v)| k != "@atomic" && v == null_token)
        })
        .count();
    assert!(
        with_null > 0,
        "the reference's constant-fingerprint bug should be visible"
    );
    assert!(
        opened
            .projected
            .iter()
            .any(|p| p.node.ends_with("::ingress"))
    );
}

/// Every leaf position in a JSON value, as a path of object keys / array indexes.
fn leaf_paths(v: &Value, prefix: &mut Vec<PathSeg>, out: &mut Vec<Vec<PathSeg>>) {
    match v {
        Value::Object(o) => {
            for (k, child) in o.iter() {
                prefix.push(PathSeg::Key(k.to_lossy().into_owned()));
                leaf_paths(child, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                prefix.push(PathSeg::Index(i));
                leaf_paths(child, prefix, out);
                prefix.pop();
            }
        }
        _ => out.push(prefix.clone()),
    }
}

#[derive(Clone, Debug)]
enum PathSeg {
    Key(String),
    Index(usize),
}

fn get_mut<'a>(v: &'a mut Value, path: &[PathSeg]) -> &'a mut Value {
    let mut cur = v;
    for seg in path {
        cur = match (seg, cur) {
            (PathSeg::Key(k), Value::Object(o)) => o.get_mut(k).unwrap(),
            (PathSeg::Index(i), Value::Array(a)) => &mut a[*i],
            _ => unreachable!(),
        };
    }
    cur
}

/// Another value of the same JSON type.
fn same_type_change(v: &Value, salt: u32) -> Value {
    match v {
        Value::Null => Value::Null,
        Value::Bool(b) => Value::Bool(!b),
        Value::Number(n) => Value::Number(n + 1.0 + f64::from(salt % 7)),
        Value::String(s) => Value::str(format!(
            "{}{}",
            s.to_lossy(),
            ["x", "0", " ", "é"][salt as usize % 4]
        )),
        other => other.clone(),
    }
}

fn tamper_and_describe(
    src: &Path,
    receipt: usize,
    leaf: usize,
    salt: u32,
) -> Option<(bool, String)> {
    let bytes = std::fs::read(src.join("receipts.json")).unwrap();
    let mut arr = read_ledger(&bytes).unwrap().receipts;
    let r = receipt % arr.len();
    let mut paths = Vec::new();
    leaf_paths(&arr[r], &mut Vec::new(), &mut paths);
    let path = &paths[leaf % paths.len()];
    let target = get_mut(&mut arr[r], path);
    if matches!(target, Value::Null) {
        // `null` has no other value of its type; the only null leaf is a cold-start `prev`.
        return None;
    }
    *target = same_type_change(target, salt);
    let d = tempfile::tempdir().unwrap();
    for entry in ["compile", "world-models"] {
        let from = src.join(entry);
        if from.is_dir() {
            copy_dir(&from, &d.path().join(entry));
        }
    }
    let text = reactor::store::ledger::committed_bytes(&arr).unwrap();
    std::fs::write(d.path().join("receipts.json"), text).unwrap();
    let opened = replay::open_state_dir(d.path(), &OpenStateDirOptions::default());
    match opened {
        Err(e) => Some((false, format!("open failed: {e}"))),
        Ok(o) => {
            let res = replay::describe_state_dir(&o, &DescribeOptions::default());
            Some((res.chain_ok, res.text))
        }
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, .. ProptestConfig::default() })]

    /// Changing any single field of any receipt to another value of the same JSON type makes the
    /// chain verification fail (describe exits 1).
    #[test]
    fn any_single_field_change_is_caught(dir_i in 0usize..6, receipt in 0usize..1000, leaf in 0usize..1000, salt in 0u32..1000) {
        let Some(c) = compat_dir() else { return Ok(()) };
        let name = FIGURES[dir_i].0;
        if let Some((ok, text)) = tamper_and_describe(&c.join(name), receipt, leaf, salt) {
            prop_assert!(!ok, "{name}: tampering not caught:\n{text}");
            if !text.starts_with("open failed") {
                prop_assert!(text.contains("CHAIN-VERIFY  FAILED"), "{text}");
            }
        }
    }
}

/// Writes `bytes` with member `key` of receipt `index` set to `value` into `dir` (beside a copy
/// of the topology) and runs `reactor-devtools <dir> --describe`.
fn describe_with_field(
    dir: &Path,
    bytes: &[u8],
    index: usize,
    key: &str,
    value: Value,
) -> std::process::Output {
    let mut arr = read_ledger(bytes).unwrap().receipts;
    if let Value::Object(o) = &mut arr[index] {
        o.insert(key, value);
    }
    std::fs::write(
        dir.join("receipts.json"),
        reactor::store::ledger::committed_bytes(&arr).unwrap(),
    )
    .unwrap();
    Command::new(bin())
        .arg("devtools")
        .arg(dir)
        .arg("--describe")
        .output()
        .unwrap()
}

#[test]
fn tampered_field_via_cli_exits_1_and_shape_breaks_are_reported() {
    let Some(c) = compat_dir() else { return };
    let src = c.join("masked-relay");
    let bytes = std::fs::read(src.join("receipts.json")).unwrap();
    let d = tempfile::tempdir().unwrap();
    copy_dir(&src.join("compile"), &d.path().join("compile"));
    // Same-type change of one field, hash left stale.
    let out = describe_with_field(
        d.path(),
        &bytes,
        10,
        "contract_fingerprint",
        Value::str("sha256:tampered"),
    );
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(
            "CHAIN-VERIFY  FAILED — one or more node chains are tampered or inconsistent"
        ),
        "{text}"
    );
    assert!(text.contains("content_hash does not match canonical receipt payload"));
    // Shape break: status becomes a number → cannot be projected → exit 1 with the index.
    let out = describe_with_field(d.path(), &bytes, 12, "status", Value::Number(3.0));
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("cannot read state-dir")
            && err.contains("receipts.json[12]: status must be one of rendered | skipped | failed"),
        "{err}"
    );
    // Shape break that projection tolerates: prev becomes a number → chain failure, exit 1.
    let out = describe_with_field(d.path(), &bytes, 12, "prev", Value::Number(7.0));
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("receipt.prev must be null or a sha256 content address"),
        "{text}"
    );
}

#[test]
fn impostor_example_of_viewer_5_5() {
    let Some(c) = compat_dir() else { return };
    let src = c.join("masked-relay");
    let bytes = std::fs::read(src.join("receipts.json")).unwrap();
    let mut arr = read_ledger(&bytes).unwrap().receipts;
    // The first rendered receipt of scout-price that is not its last.
    let node = "responsibility.scout-price";
    let idxs: Vec<usize> = arr
        .iter()
        .enumerate()
        .filter(|(_, v)| v.get("node").and_then(Value::as_str) == Some(node))
        .map(|(i, _)| i)
        .collect();
    let k = idxs[0];
    if let Value::Object(o) = &mut arr[k] {
        o.insert("node", Value::str("responsibility.IMPOSTOR"));
    }
    let d = tempfile::tempdir().unwrap();
    copy_dir(&src.join("compile"), &d.path().join("compile"));
    std::fs::write(
        d.path().join("receipts.json"),
        reactor::store::ledger::committed_bytes(&arr).unwrap(),
    )
    .unwrap();
    let out = Command::new(bin())
        .arg("devtools")
        .arg(d.path())
        .arg("--describe")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("  scout-price: chain[0].prev must be null (cold start) to chain the ledger"),
        "{text}"
    );
    assert!(text.contains("  IMPOSTOR (off-topology): chain[0] is not a valid receipt: content_hash does not match canonical receipt payload"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("  IMPOSTOR (off-topology)") && l.ends_with("chain✗")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("  scout-price ") && l.ends_with("chain✗")),
        "{text}"
    );
}
