//! Runtime invariants of RUNTIME.md §14.2 over the "counter" fixture B, driven by scripted
//! renders on a temporary state directory.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use reactor::core::ir::{AtomicRules, IngressMode, Ir, NodeIr, NodeRules};
use reactor::core::{
    Arrival, Disposition, Reactor, ReactorOptions, RenderContext, RenderOutcome, RenderProduct,
    StageOutcome,
};
use reactor::format::json::{self, Value};
use reactor::format::receipt::{Status, Wake, WakeSource, verify_receipt_chain};
use reactor::format::topology::{Edge, Topology, TopologyNode};
use reactor::scenario::{ScriptedRender, TopKeyRules, truth_of, truth_product};
use reactor::store::ledger::read_ledger;

fn node(id: &str, ws: WakeSource, rules: Arc<dyn NodeRules>) -> (TopologyNode, NodeIr) {
    (
        TopologyNode {
            node: id.into(),
            contract_fingerprint: Some(format!("contract:{id}")),
            wake_source: Some(ws),
        },
        NodeIr {
            id: id.into(),
            contract_fingerprint: format!("contract:{id}"),
            wake_source: ws,
            rules,
        },
    )
}

fn facets(f: &[&str]) -> Arc<dyn NodeRules> {
    Arc::new(TopKeyRules {
        facets: f.iter().map(|s| s.to_string()).collect(),
    })
}

/// Fixture B of RUNTIME.md §14.1.
fn counter_ir() -> Ir {
    let mut ir = Ir::default();
    for (t, n) in [
        node("events", WakeSource::External, facets(&["raw", "counts"])),
        node("auditor", WakeSource::Input, Arc::new(AtomicRules)),
        node("summary", WakeSource::Input, facets(&["totals"])),
        node("trend", WakeSource::Input, Arc::new(AtomicRules)),
        node("alert", WakeSource::Input, facets(&["level"])),
        node("snapshot", WakeSource::Input, Arc::new(AtomicRules)),
    ] {
        ir.topology.nodes.push(t);
        ir.nodes.insert(n.id.clone(), n);
    }
    ir.topology.edges = vec![
        Edge::new("summary", "alert", "totals"),
        Edge::new("events", "auditor", "raw"),
        Edge::new("summary", "snapshot", "totals"),
        Edge::new("trend", "snapshot", "@atomic"),
        Edge::new("alert", "snapshot", "level"),
        Edge::new("events", "summary", "counts"),
        Edge::new("events", "trend", "counts"),
    ];
    ir.topology.entry_points = vec!["events".into()];
    ir.topology.acyclic = true;
    ir
}

fn upstream_truth(ctx: &RenderContext<'_>, producer: &str) -> Value {
    ctx.upstream
        .read(producer)
        .ok()
        .and_then(|f| truth_of(&f))
        .unwrap_or(Value::Null)
}

fn md(name: &str, text: String) -> Vec<(String, Vec<u8>)> {
    vec![(name.to_string(), text.into_bytes())]
}

fn counter_script() -> Arc<ScriptedRender> {
    let s = Arc::new(ScriptedRender::new());
    s.set("events", |ctx| {
        let inbox = ctx
            .upstream
            .read("events::ingress")
            .ok()
            .and_then(|f| f.into_iter().find(|(p, _)| p == "inbox.json"))
            .and_then(|(_, b)| json::parse(&b).ok())
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default();
        let mut raw = Vec::new();
        let mut counts: BTreeMap<String, f64> = BTreeMap::new();
        for e in &inbox {
            let id = e
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            raw.push(Value::str(id));
            let kind = e
                .get("item")
                .and_then(|i| i.get("kind"))
                .and_then(Value::as_str)
                .unwrap_or("");
            if kind != "noise" {
                *counts.entry(kind.to_string()).or_default() += 1.0;
            }
        }
        let mut c = json::Object::new();
        for (k, v) in counts {
            c.insert(k.as_str(), Value::Number(v));
        }
        let mut t = json::Object::new();
        t.insert("raw", Value::Array(raw));
        t.insert("counts", Value::Object(c));
        truth_product(&Value::Object(t), vec![], None)
    });
    s.set("auditor", |ctx| {
        let t = upstream_truth(ctx, "events");
        RenderOutcome::Done(RenderProduct {
            files: md(
                "audit.md",
                format!(
                    "raw: {}",
                    json::compact_string(t.get("raw").unwrap_or(&Value::Null))
                ),
            ),
            ..Default::default()
        })
    });
    s.set("summary", |ctx| {
        let t = upstream_truth(ctx, "events");
        let total: f64 = t
            .get("counts")
            .and_then(Value::as_object)
            .map(|o| o.iter().filter_map(|(_, v)| v.as_f64()).sum())
            .unwrap_or(0.0);
        let mut o = json::Object::new();
        o.insert("totals", Value::Number(total));
        truth_product(&Value::Object(o), vec![], None)
    });
    s.set("trend", |ctx| {
        let t = upstream_truth(ctx, "events");
        RenderOutcome::Done(RenderProduct {
            files: md(
                "trend.md",
                format!(
                    "counts: {}",
                    json::compact_string(t.get("counts").unwrap_or(&Value::Null))
                ),
            ),
            ..Default::default()
        })
    });
    s.set("alert", |ctx| {
        let t = upstream_truth(ctx, "summary");
        let total = t.get("totals").and_then(Value::as_f64).unwrap_or(0.0);
        let mut o = json::Object::new();
        o.insert(
            "level",
            Value::str(if total >= 3.0 { "high" } else { "low" }),
        );
        truth_product(&Value::Object(o), vec![], None)
    });
    s.set("snapshot", |ctx| {
        let a = upstream_truth(ctx, "summary");
        let b = upstream_truth(ctx, "alert");
        RenderOutcome::Done(RenderProduct {
            files: md(
                "snapshot.md",
                format!("{} {}", json::compact_string(&a), json::compact_string(&b)),
            ),
            ..Default::default()
        })
    });
    s
}

fn open(dir: &Path, script: Arc<ScriptedRender>) -> Reactor {
    Reactor::open(dir, counter_ir(), script, ReactorOptions::default())
        .unwrap()
        .0
}

fn arrive(r: &Reactor, id: &str, kind: &str) -> Vec<reactor::core::ReconcileResult> {
    let item = json::parse_str(&format!("{{\"id\":\"{id}\",\"kind\":\"{kind}\"}}")).unwrap();
    match r
        .stage_arrival(
            "events",
            Arrival {
                id: id.into(),
                item,
            },
            "events",
        )
        .unwrap()
    {
        StageOutcome::Staged(_) => {}
        StageOutcome::Duplicate => panic!("unexpected duplicate {id}"),
    }
    r.ingest("events", Wake::new(WakeSource::External)).unwrap()
}

fn ledger(dir: &Path) -> Vec<Value> {
    read_ledger(&std::fs::read(dir.join("receipts.json")).unwrap())
        .unwrap()
        .receipts
}

fn nodes_of(results: &[reactor::core::ReconcileResult]) -> Vec<(String, Disposition)> {
    results
        .iter()
        .map(|r| (r.node.clone(), r.disposition))
        .collect()
}

fn all_chains_verify(dir: &Path) {
    let all = ledger(dir);
    let mut by: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for v in all {
        by.entry(v.get("node").and_then(Value::as_str).unwrap().to_string())
            .or_default()
            .push(v);
    }
    for (n, chain) in by {
        let v = verify_receipt_chain(&chain);
        assert!(v.ok, "{n}: {:?}", v.errors);
    }
}

#[test]
fn i1_linear_propagation_in_height_order() {
    let d = tempfile::tempdir().unwrap();
    let s = counter_script();
    let r = open(d.path(), s.clone());
    let res = arrive(&r, "e1", "click");
    assert_eq!(
        nodes_of(&res),
        ["events", "auditor", "summary", "trend", "alert", "snapshot"]
            .iter()
            .map(|n| (n.to_string(), Disposition::Rendered))
            .collect::<Vec<_>>()
    );
    let l = ledger(d.path());
    let order: Vec<&str> = l
        .iter()
        .map(|v| v.get("node").unwrap().as_str().unwrap())
        .collect();
    assert_eq!(
        order,
        [
            "events::ingress",
            "events",
            "auditor",
            "summary",
            "trend",
            "alert",
            "snapshot"
        ]
    );
    // Each non-ingress wake after events is input, refs = producers' receipt hashes.
    let hash = |n: &str| {
        res.iter()
            .find(|x| x.node == n)
            .unwrap()
            .receipt
            .as_ref()
            .unwrap()
            .content_hash
            .clone()
    };
    let snap = res
        .iter()
        .find(|x| x.node == "snapshot")
        .unwrap()
        .receipt
        .as_ref()
        .unwrap();
    assert_eq!(snap.wake.source, WakeSource::Input);
    assert_eq!(
        snap.wake.refs,
        vec![hash("summary"), hash("trend"), hash("alert")]
    );
    for n in ["events", "auditor", "summary", "trend", "alert", "snapshot"] {
        assert_eq!(s.count(n), 1, "{n}");
    }
    all_chains_verify(d.path());
}

#[test]
fn i2_selective_facet_wake_prunes_unmoved() {
    let d = tempfile::tempdir().unwrap();
    let s = counter_script();
    let r = open(d.path(), s.clone());
    arrive(&r, "e1", "click");
    let res = arrive(&r, "e2", "noise");
    assert_eq!(
        nodes_of(&res),
        vec![
            ("events".to_string(), Disposition::Rendered),
            ("auditor".to_string(), Disposition::Rendered)
        ]
    );
    let ev = res[0].receipt.as_ref().unwrap();
    assert_eq!(res[0].propagated, vec!["auditor"]);
    assert!(ev.fingerprints.get("counts").is_some());
    for n in ["summary", "trend", "alert", "snapshot"] {
        assert_eq!(s.count(n), 1, "{n} must be pruned");
    }
}

#[test]
fn i3_diamond_renders_once_with_merged_wake() {
    let d = tempfile::tempdir().unwrap();
    let s = counter_script();
    let r = open(d.path(), s.clone());
    arrive(&r, "e1", "click");
    arrive(&r, "e3", "click");
    let before = s.count("snapshot");
    let res = arrive(&r, "e4", "click");
    let snaps: Vec<_> = res.iter().filter(|x| x.node == "snapshot").collect();
    assert_eq!(snaps.len(), 1);
    let hash = |n: &str| {
        res.iter()
            .find(|x| x.node == n)
            .unwrap()
            .receipt
            .as_ref()
            .unwrap()
            .content_hash
            .clone()
    };
    let w = &snaps[0].receipt.as_ref().unwrap().wake;
    assert_eq!(w.source, WakeSource::Input);
    assert_eq!(w.refs, vec![hash("summary"), hash("trend"), hash("alert")]);
    assert_eq!(s.count("snapshot"), before + 1);
    let alert = res.iter().find(|x| x.node == "alert").unwrap();
    assert_eq!(alert.disposition, Disposition::Rendered);
}

#[test]
fn i4_memo_skip_without_render() {
    let d = tempfile::tempdir().unwrap();
    let s = counter_script();
    let r = open(d.path(), s.clone());
    arrive(&r, "e1", "click");
    let n_before = ledger(d.path()).len();
    let prev = r.last_receipt("summary").unwrap();
    let res = r
        .ingest("summary", Wake::new(WakeSource::External))
        .unwrap();
    assert_eq!(res.len(), 1);
    let rc = res[0].receipt.as_ref().unwrap();
    assert_eq!(rc.status, Status::Skipped);
    assert_eq!(rc.fingerprints, prev.fingerprints);
    assert!(rc.semantic_diff.is_empty());
    assert_eq!(
        (
            rc.cost.provider.as_str(),
            rc.cost.model.as_str(),
            rc.cost.fresh,
            rc.cost.reused
        ),
        ("none", "none", 0, 0)
    );
    assert_eq!(rc.cost.surprise_cause, WakeSource::External);
    assert_eq!(rc.prev.as_deref(), Some(prev.content_hash.as_str()));
    assert_eq!(s.count("summary"), 1);
    assert_eq!(ledger(d.path()).len(), n_before + 1);
}

#[test]
fn i5_failure_containment_and_retry() {
    let d = tempfile::tempdir().unwrap();
    let s = counter_script();
    let r = open(d.path(), s.clone());
    arrive(&r, "e1", "click");
    let alert_dir = d
        .path()
        .join("world-models")
        .join(reactor::format::layout::node_segment("alert"));
    let published_before = std::fs::read(alert_dir.join("published.json")).unwrap();
    s.fail("alert", "boom");
    let snap_before = s.count("snapshot");
    let res = arrive(&r, "e2", "click");
    let alert = res.iter().find(|x| x.node == "alert").unwrap();
    assert_eq!(alert.disposition, Disposition::Failed);
    let rc = alert.receipt.as_ref().unwrap();
    assert_eq!(
        rc.semantic_diff
            .get("failure_reason")
            .and_then(Value::as_str),
        Some("boom")
    );
    assert!(alert.propagated.is_empty());
    assert_eq!(
        std::fs::read(alert_dir.join("published.json")).unwrap(),
        published_before
    );
    // snapshot still fires once, woken by summary / trend.
    assert_eq!(res.iter().filter(|x| x.node == "snapshot").count(), 1);
    assert_eq!(s.count("snapshot"), snap_before + 1);
    // Heal and ingest with unchanged inputs: a failed last receipt never memo-skips.
    s.heal("alert");
    let res = r.ingest("alert", Wake::new(WakeSource::External)).unwrap();
    assert_eq!(res[0].disposition, Disposition::Rendered);
    all_chains_verify(d.path());
}

#[test]
fn i5_first_failure_records_cold_start_empty() {
    let d = tempfile::tempdir().unwrap();
    let s = counter_script();
    s.fail("events", "nope");
    let r = open(d.path(), s.clone());
    let res = arrive(&r, "e1", "click");
    let rc = res[0].receipt.as_ref().unwrap();
    assert_eq!(rc.status, Status::Failed);
    assert_eq!(rc.fingerprints.atomic_token(), Some("cold-start:empty"));
    s.heal("events");
    let res = r.ingest("events", Wake::new(WakeSource::External)).unwrap();
    assert_eq!(res[0].disposition, Disposition::Rendered);
    // Every facet moved: all subscribers woke.
    assert_eq!(res[0].propagated, vec!["auditor", "summary", "trend"]);
}

#[test]
fn i6_restart_is_all_skips() {
    let d = tempfile::tempdir().unwrap();
    let s = counter_script();
    {
        let r = open(d.path(), s.clone());
        arrive(&r, "e1", "click");
    }
    let n = ledger(d.path()).len();
    let s2 = counter_script();
    let r = open(d.path(), s2.clone());
    let res = r.boot().unwrap();
    assert!(res.is_empty(), "{:?}", nodes_of(&res));
    assert_eq!(ledger(d.path()).len(), n);
    for node in ["events", "auditor", "summary", "trend", "alert", "snapshot"] {
        assert_eq!(s2.count(node), 0);
    }
}

#[test]
fn i7_deterministic_replay_is_byte_identical() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    for d in [a.path(), b.path()] {
        let r = open(d, counter_script());
        arrive(&r, "e1", "click");
        arrive(&r, "e2", "noise");
        arrive(&r, "e3", "click");
    }
    for f in ["receipts.json", "registry.json"] {
        assert_eq!(
            std::fs::read(a.path().join(f)).unwrap(),
            std::fs::read(b.path().join(f)).unwrap(),
            "{f}"
        );
    }
    let list = |d: &Path| {
        let mut v: Vec<_> = walk(&d.join("world-models"));
        v.sort();
        v
    };
    let la = list(a.path());
    assert_eq!(la.len(), list(b.path()).len());
    for rel in la {
        assert_eq!(
            std::fs::read(a.path().join("world-models").join(&rel)).unwrap(),
            std::fs::read(b.path().join("world-models").join(&rel)).unwrap(),
            "{rel}"
        );
    }
}

fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            for sub in walk(&p) {
                out.push(format!("{}/{}", e.file_name().to_string_lossy(), sub));
            }
        } else {
            out.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    out
}

#[test]
fn i8_ingress_dedup_and_cursor_rebuild() {
    let d = tempfile::tempdir().unwrap();
    {
        let r = open(d.path(), counter_script());
        arrive(&r, "e1", "click");
        let dup = r
            .stage_arrival(
                "events",
                Arrival {
                    id: "e1".into(),
                    item: Value::Null,
                },
                "events",
            )
            .unwrap();
        assert!(matches!(dup, StageOutcome::Duplicate));
    }
    let reg = std::fs::read_to_string(d.path().join("registry.json")).unwrap();
    assert_eq!(reg, "{\"gateway_cursors\":{\"events\":[\"e1\"]}}\n");
    // Delete the registry: the cursor is rebuilt from the ledger-consistent inbox.
    std::fs::remove_file(d.path().join("registry.json")).unwrap();
    let r = open(d.path(), counter_script());
    r.rebuild_cursor("events", "events");
    let dup = r
        .stage_arrival(
            "events",
            Arrival {
                id: "e1".into(),
                item: Value::Null,
            },
            "events",
        )
        .unwrap();
    assert!(matches!(dup, StageOutcome::Duplicate));
    assert!(matches!(
        r.stage_arrival(
            "summary",
            Arrival {
                id: "x".into(),
                item: Value::Null
            },
            "summary"
        ),
        Err(reactor::core::CoreError::NotEntryPoint(_))
    ));
}

#[test]
fn i9_coalescing_runs_exactly_one_follow_up() {
    let d = tempfile::tempdir().unwrap();
    let s = counter_script();
    let r = Arc::new(open(d.path(), s.clone()));
    let item = |k: &str| json::parse_str(&format!("{{\"kind\":\"{k}\"}}")).unwrap();
    r.stage_arrival(
        "events",
        Arrival {
            id: "e1".into(),
            item: item("click"),
        },
        "events",
    )
    .unwrap();
    let latch = s.latch("events");
    latch.close();
    let r2 = r.clone();
    let t = std::thread::spawn(move || {
        r2.ingest("events", Wake::new(WakeSource::External))
            .unwrap()
    });
    while latch.waiting() == 0 {
        std::thread::yield_now();
    }
    // While events renders: stage e5 and ingest twice; both coalesce without a receipt.
    let staged = r
        .stage_arrival(
            "events",
            Arrival {
                id: "e5".into(),
                item: item("click"),
            },
            "events",
        )
        .unwrap();
    assert!(matches!(staged, StageOutcome::Staged(_)));
    let n = ledger(d.path()).len();
    for _ in 0..2 {
        let c = r.ingest("events", Wake::new(WakeSource::External)).unwrap();
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].disposition, Disposition::Coalesced);
        assert!(c[0].receipt.is_none());
    }
    assert_eq!(ledger(d.path()).len(), n);
    latch.release();
    let res = t.join().unwrap();
    let events: Vec<_> = res.iter().filter(|x| x.node == "events").collect();
    // The attempt and exactly one follow-up, which renders because its input moved to inbox:2.
    assert_eq!(events.len(), 2, "{:?}", nodes_of(&res));
    assert_eq!(events[0].disposition, Disposition::Rendered);
    assert_eq!(events[1].disposition, Disposition::Rendered);
    let follow = events[1].receipt.as_ref().unwrap();
    assert_eq!(follow.input_fingerprints, vec!["inbox:2"]);
    assert_eq!(s.count("events"), 2);
    // Variant without staging: a coalesced follow-up whose input did not move is a skip.
    latch.close();
    let r3 = r.clone();
    r.stage_arrival(
        "events",
        Arrival {
            id: "e6".into(),
            item: item("click"),
        },
        "events",
    )
    .unwrap();
    let t = std::thread::spawn(move || {
        r3.ingest("events", Wake::new(WakeSource::External))
            .unwrap()
    });
    while latch.waiting() == 0 {
        std::thread::yield_now();
    }
    assert_eq!(
        r.ingest("events", Wake::new(WakeSource::SelfWake)).unwrap()[0].disposition,
        Disposition::Coalesced
    );
    latch.release();
    let res = t.join().unwrap();
    let events: Vec<_> = res.iter().filter(|x| x.node == "events").collect();
    assert_eq!(events.len(), 2);
    assert_eq!(events[1].disposition, Disposition::Skipped);
    all_chains_verify(d.path());
}

#[test]
fn mount_mode_as_written_rejects_nothing_for_phantoms() {
    let mut ir = counter_ir();
    ir.topology
        .edges
        .push(Edge::new("ingress.feed", "events", "inbox"));
    let d = tempfile::tempdir().unwrap();
    let r = Reactor::open(
        d.path(),
        ir,
        counter_script(),
        ReactorOptions {
            ingress: IngressMode::AsWritten,
            ..Default::default()
        },
    );
    assert!(r.is_ok());
    let _ = Topology::default();
}

#[test]
fn group_commit_writes_the_same_bytes_and_nothing_before_sync() {
    use reactor::store::ledger::SyncPolicy;
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    for (d, policy) in [
        (a.path(), SyncPolicy::EveryAppend),
        (b.path(), SyncPolicy::Group),
    ] {
        let (r, _) = Reactor::open(
            d,
            counter_ir(),
            counter_script(),
            ReactorOptions {
                sync: policy,
                ..Default::default()
            },
        )
        .unwrap();
        arrive(&r, "e1", "click");
        arrive(&r, "e2", "noise");
        arrive(&r, "e3", "click");
    }
    for f in ["receipts.json", "registry.json"] {
        assert_eq!(
            std::fs::read(a.path().join(f)).unwrap(),
            std::fs::read(b.path().join(f)).unwrap(),
            "{f}"
        );
    }
    // Under group commit, appends outside a drain stay invisible until sync.
    let (r, _) = Reactor::open(
        b.path(),
        counter_ir(),
        counter_script(),
        ReactorOptions {
            sync: SyncPolicy::Group,
            ..Default::default()
        },
    )
    .unwrap();
    let before = std::fs::read(b.path().join("receipts.json")).unwrap();
    r.append_phantom(
        "events::ingress",
        vec![],
        reactor::format::receipt::Fingerprints::atomic("inbox:99"),
        "x",
    )
    .unwrap();
    assert_eq!(
        std::fs::read(b.path().join("receipts.json")).unwrap(),
        before
    );
    r.sync().unwrap();
    let after = std::fs::read(b.path().join("receipts.json")).unwrap();
    assert!(after.len() > before.len());
    all_chains_verify(b.path());
}
