//! The six bundled fixtures (VIEWER.md §9): byte-identical regeneration, the common frame
//! invariants through the user read path and the embedded `--example` path, the behaviours each
//! fixture must demonstrate, pinned receipt counts, and the inspector's `truth.json`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use reactor::devtools::examples::open_example;
use reactor::format::json::{self, Value};
use reactor::format::receipt::{Status, WakeSource};
use reactor::replay::snapshot::ReceiptFrame;
use reactor::replay::{
    DescribeOptions, OpenStateDirOptions, OpenedStateDir, ReplaySnapshot, build_snapshot,
    describe_state_dir, open_state_dir, read_node_world_model,
};
use reactor::scenario::fixtures::{FIXTURE_NAMES, FixtureError, generate};

use crate::support;

fn committed(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

/// Every file under `dir`, relative, with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                walk(base, &p, out);
            } else {
                let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn open_disk(name: &str) -> OpenedStateDir {
    open_state_dir(&committed(name), &OpenStateDirOptions::default())
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn open_embedded(name: &str) -> OpenedStateDir {
    open_example(name, &OpenStateDirOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn is_phantom(node: &str) -> bool {
    node.starts_with("ingress.")
}

fn raw_str<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    let mut cur = v;
    for p in path {
        cur = cur.get(p).unwrap_or(&Value::Null);
    }
    cur.as_str().unwrap_or("")
}

fn wake_refs(v: &Value) -> usize {
    v.get("wake")
        .and_then(|w| w.get("refs"))
        .and_then(Value::as_array)
        .map(Vec::len)
        .unwrap_or(0)
}

/// The parsed `truth.json` of a frame's version, through the inspector's read path.
fn truth_at(opened: &OpenedStateDir, f: &ReceiptFrame) -> Value {
    let view = read_node_world_model(opened, &f.node, &f.atomic_version)
        .unwrap_or_else(|| panic!("frame {}: {} has no readable version", f.index, f.node));
    let file = view
        .files
        .iter()
        .find(|x| x.path == "truth.json")
        .unwrap_or_else(|| panic!("frame {}: no truth.json", f.index));
    json::parse_str(file.text.as_deref().expect("utf-8 truth.json")).expect("truth.json parses")
}

fn named(moved: &[String]) -> Vec<&str> {
    moved
        .iter()
        .map(String::as_str)
        .filter(|f| *f != "@atomic")
        .collect()
}

/// Frames `i+1..` that continue the drain opened by frame `i` (input-woken frames).
fn drain_after(s: &ReplaySnapshot, i: usize) -> Vec<&ReceiptFrame> {
    s.frames[i + 1..]
        .iter()
        .take_while(|f| f.wake_source == WakeSource::Input)
        .collect()
}

fn rendered_nodes<'a>(frames: &[&'a ReceiptFrame]) -> Vec<&'a str> {
    frames
        .iter()
        .filter(|f| f.status == Status::Rendered)
        .map(|f| f.node.as_str())
        .collect()
}

/// The invariants every fixture satisfies (VIEWER.md §9 "Fixture tests", §4.3, the cost model).
fn check_common(name: &str, opened: &OpenedStateDir) -> ReplaySnapshot {
    let s = build_snapshot(opened);
    assert!(s.chain_verify.ok, "{name}: {:?}", s.chain_verify.errors);
    assert!(s.chain_verify.invalid_frames.is_empty());
    let d = describe_state_dir(opened, &DescribeOptions::default());
    assert!(d.chain_ok, "{name}: describe would exit 1");
    assert!(d.text.contains("\nCHAIN-VERIFY  ok"), "{name}");
    assert!(!s.frames.is_empty());
    let edge_set: BTreeSet<(String, String, String)> = s
        .edges
        .iter()
        .map(|e| (e.producer.clone(), e.subscriber.clone(), e.facet.clone()))
        .collect();
    assert_eq!(edge_set.len(), s.edges.len(), "{name}: duplicate edges");
    let (mut fresh, mut reused) = (0, 0);
    for (i, f) in s.frames.iter().enumerate() {
        assert_eq!(f.index, i);
        let raw = &opened.raw[i];
        fresh += f.cost.fresh;
        reused += f.cost.reused;
        assert_eq!(f.cost.surprise_cause, f.wake_source, "{name} frame {i}");
        for lane in &f.edges_to_light {
            assert!(
                edge_set.contains(&(
                    lane.producer.clone(),
                    lane.subscriber.clone(),
                    lane.facet.clone()
                )),
                "{name} frame {i}: lit lane {lane:?} is not a topology edge"
            );
            assert_eq!(lane.producer, f.node, "{name} frame {i}");
            assert!(f.moved_facets.contains(&lane.facet), "{name} frame {i}");
        }
        let distinct: BTreeSet<&str> = f
            .edges_to_light
            .iter()
            .map(|e| e.subscriber.as_str())
            .collect();
        assert_eq!(
            f.woken_subscribers.len(),
            distinct.len(),
            "{name} frame {i}"
        );
        let woken: BTreeSet<&str> = f.woken_subscribers.iter().map(String::as_str).collect();
        assert_eq!(woken, distinct, "{name} frame {i}");
        match f.status {
            Status::Skipped => {
                assert!(f.moved_facets.is_empty(), "{name} frame {i}: skip moved");
                assert!(f.edges_to_light.is_empty() && f.woken_subscribers.is_empty());
                assert_eq!((f.cost.fresh, f.cost.reused), (0, 0), "{name} frame {i}");
            }
            Status::Failed => {
                assert!(f.edges_to_light.is_empty() && f.woken_subscribers.is_empty());
                assert_eq!((f.cost.fresh, f.cost.reused), (0, 0), "{name} frame {i}");
                assert!(!raw_str(raw, &["semantic_diff", "failure_reason"]).is_empty());
            }
            Status::Rendered if is_phantom(&f.node) => {
                assert_eq!(f.wake_source, WakeSource::External, "{name} frame {i}");
                assert_eq!((f.cost.fresh, f.cost.reused), (0, 0));
                assert_eq!(raw_str(raw, &["cost", "provider"]), "none");
                assert_eq!(
                    raw_str(raw, &["contract_fingerprint"]),
                    format!("contract:{}@ingress", f.node)
                );
            }
            Status::Rendered => {
                // fresh = 180 × u, reused = 240 + 40 × u, u ≥ 1.
                let u = f.cost.fresh / 180;
                assert!(u >= 1 && f.cost.fresh == 180 * u, "{name} frame {i}");
                assert_eq!(f.cost.reused, 240 + 40 * u, "{name} frame {i}");
                assert_eq!(raw_str(raw, &["cost", "provider"]), "fixture");
                assert_eq!(raw_str(raw, &["cost", "model"]), "deterministic-fake");
                // The inspector opens every rendered frame, with a truth.json.
                let truth = truth_at(opened, f);
                assert!(!matches!(truth, Value::Null), "{name} frame {i}");
            }
        }
    }
    assert_eq!(s.cost_rollup.total.receipts, s.frames.len() as u64);
    assert_eq!(
        (s.cost_rollup.total.fresh, s.cost_rollup.total.reused),
        (fresh, reused)
    );
    // With a topology, the envelope's contract fingerprints are the ones the receipts carry.
    if s.has_topology {
        let env = opened
            .source
            .read("compile/topology.json")
            .unwrap()
            .expect("topology file");
        let env = json::parse(&env).unwrap();
        let fps = env
            .get("contract_fingerprints")
            .and_then(Value::as_object)
            .unwrap();
        for n in &s.nodes {
            let last = opened
                .raw
                .iter()
                .rev()
                .find(|r| raw_str(r, &["node"]) == n.id)
                .unwrap_or_else(|| panic!("{name}: {} never reconciled", n.id));
            assert_eq!(
                fps.get(&n.id).and_then(Value::as_str),
                Some(raw_str(last, &["contract_fingerprint"])),
                "{name}: {}",
                n.id
            );
        }
    }
    s
}

fn edge_facets(s: &ReplaySnapshot) -> BTreeSet<&str> {
    s.edges.iter().map(|e| e.facet.as_str()).collect()
}

/// `(receipts, rendered, skipped, failed)`.
fn counts(s: &ReplaySnapshot) -> (usize, usize, usize, usize) {
    let c = |st: Status| s.frames.iter().filter(|f| f.status == st).count();
    (
        s.frames.len(),
        c(Status::Rendered),
        c(Status::Skipped),
        c(Status::Failed),
    )
}

/// Indexes of the phantom producer's frames (one per scripted arrival).
fn arrivals(s: &ReplaySnapshot) -> Vec<usize> {
    s.frames
        .iter()
        .filter(|f| is_phantom(&f.node))
        .map(|f| f.index)
        .collect()
}

fn check_masked_relay(opened: &OpenedStateDir, s: &ReplaySnapshot) {
    assert_eq!(counts(s), (51, 39, 12, 0));
    assert_eq!((s.nodes.len(), s.edges.len()), (12, 23));
    assert_eq!(s.entry_points, vec!["gateway.signal-inbox"]);
    assert!(opened.labels.is_empty() && opened.beats.is_none());
    let r = |x: &str| {
        if x.starts_with("gateway.") || x.starts_with("ingress.") {
            x.to_string()
        } else {
            format!("responsibility.{x}")
        }
    };
    let mut want: BTreeSet<(String, String, String)> = BTreeSet::new();
    let mut add = |p: &str, sub: &str, f: &str| {
        want.insert((r(p), r(sub), f.to_string()));
    };
    add("ingress.signal-inbox", "gateway.signal-inbox", "inbox");
    add("gateway.signal-inbox", "signal-ledger", "ledger");
    for sc in ["scout-price", "scout-friction", "scout-desire"] {
        add("signal-ledger", sc, "@atomic");
        add(sc, "viewport-masker", "@atomic");
        add(sc, "insight-synthesizer", "@atomic");
    }
    add("viewport-masker", "expander-1", "view_e1");
    add("viewport-masker", "expander-2", "view_e2");
    for e in ["expander-1", "expander-2"] {
        for c in ["critic-strong", "critic-weak"] {
            add(e, c, "@atomic");
        }
        add(e, "insight-synthesizer", "@atomic");
    }
    for c in ["critic-strong", "critic-weak"] {
        add(c, "insight-synthesizer", "@atomic");
    }
    add("insight-synthesizer", "diversity-auditor", "@atomic");
    add("viewport-masker", "diversity-auditor", "@atomic");
    let got: BTreeSet<(String, String, String)> = s
        .edges
        .iter()
        .map(|e| (e.producer.clone(), e.subscriber.clone(), e.facet.clone()))
        .collect();
    assert_eq!(got, want);
    let facets = edge_facets(s);
    for f in ["inbox", "ledger", "view_e1", "view_e2", "@atomic"] {
        assert!(facets.contains(f), "{f}");
    }
    // Masker: every render moves exactly @atomic, view_e1, view_e2 and lights three lanes.
    let masker = "responsibility.viewport-masker";
    let renders: Vec<&ReceiptFrame> = s
        .frames
        .iter()
        .filter(|f| f.node == masker && f.status == Status::Rendered)
        .collect();
    assert_eq!(renders.len(), 3);
    for f in renders {
        let moved: BTreeSet<&str> = f.moved_facets.iter().map(String::as_str).collect();
        assert_eq!(moved, BTreeSet::from(["@atomic", "view_e1", "view_e2"]));
        let lanes: BTreeSet<(&str, &str)> = f
            .edges_to_light
            .iter()
            .map(|e| (e.subscriber.as_str(), e.facet.as_str()))
            .collect();
        assert_eq!(
            lanes,
            BTreeSet::from([
                ("responsibility.diversity-auditor", "@atomic"),
                ("responsibility.expander-1", "view_e1"),
                ("responsibility.expander-2", "view_e2"),
            ])
        );
        assert_eq!(f.edges_to_light.len(), 3);
        assert_eq!(f.woken_subscribers.len(), 3);
        // Diamond: the three scouts' receipts woke it once.
        assert_eq!(wake_refs(&opened.raw[f.index]), 3);
    }
    // Diamonds downstream: each synthesizer render was woken once by its 7 producers.
    for f in s
        .frames
        .iter()
        .filter(|f| f.node == "responsibility.insight-synthesizer" && f.status == Status::Rendered)
    {
        assert_eq!(wake_refs(&opened.raw[f.index]), 7);
    }
    // Cold boot → new signal → quiet re-wake of every node → another new signal.
    let declared: BTreeSet<&str> = s.nodes.iter().map(|n| n.id.as_str()).collect();
    let a = arrivals(s);
    assert_eq!(a.len(), 3);
    for &i in &a {
        let drain = drain_after(s, i);
        let nodes: Vec<&str> = rendered_nodes(&drain);
        assert_eq!(nodes.len(), 12, "drain after {i}");
        assert_eq!(nodes.iter().copied().collect::<BTreeSet<_>>(), declared);
    }
    let quiet: Vec<&ReceiptFrame> = s.frames[a[1] + 13..a[2]].iter().collect();
    assert_eq!(quiet.len(), 12);
    assert!(quiet.iter().all(|f| f.status == Status::Skipped
        && f.wake_source == WakeSource::SelfWake
        && f.cost.fresh == 0));
    let quiet_nodes: BTreeSet<&str> = quiet.iter().map(|f| f.node.as_str()).collect();
    assert_eq!(quiet_nodes, declared);
}

fn check_surprise_cost(opened: &OpenedStateDir, s: &ReplaySnapshot) {
    assert_eq!(counts(s), (5, 4, 1, 0));
    assert!(!s.has_topology);
    assert!(
        opened
            .source
            .read("compile/topology.json")
            .unwrap()
            .is_none()
    );
    assert_eq!((s.nodes.len(), s.edges.len()), (2, 0));
    let seq: Vec<(&str, Status, WakeSource)> = s
        .frames
        .iter()
        .map(|f| (f.node.as_str(), f.status, f.wake_source))
        .collect();
    let (g, d) = ("gateway.signals", "responsibility.digest");
    assert_eq!(
        seq,
        vec![
            (g, Status::Rendered, WakeSource::External),
            (d, Status::Rendered, WakeSource::Input),
            (g, Status::Skipped, WakeSource::External),
            (g, Status::Rendered, WakeSource::External),
            (d, Status::Rendered, WakeSource::Input),
        ]
    );
    assert_eq!((s.frames[2].cost.fresh, s.frames[2].cost.reused), (0, 0));
    assert!(s.frames[3].cost.fresh > 0 && s.frames[4].cost.fresh > 0);
    let cf = |i: usize| raw_str(&opened.raw[i], &["contract_fingerprint"]).to_string();
    assert_eq!(cf(0), cf(2));
    assert_ne!(cf(0), cf(3), "the contract edit changes the fingerprint");
    assert_ne!(s.frames[0].atomic_version, s.frames[3].atomic_version);
}

fn check_agent_observatory(opened: &OpenedStateDir, s: &ReplaySnapshot) {
    assert_eq!(counts(s), (56, 51, 4, 1));
    assert_eq!((s.nodes.len(), s.edges.len()), (14, 23));
    assert!(!s.nodes.iter().any(|n| n.id == "ingress.agent-fs"));
    assert!(s.edges.iter().any(|e| e.producer == "ingress.agent-fs"));
    assert!(!opened.labels.is_empty() && opened.beats.is_none());
    let facets = edge_facets(s);
    for r in [
        "claude-code",
        "codex",
        "cursor",
        "aider",
        "gemini-cli",
        "opencode",
    ] {
        assert!(facets.contains(format!("runtime:{r}").as_str()));
    }
    for x in ["auth-api", "auth-ui", "flaky-ci", "docs"] {
        assert!(facets.contains(format!("session:{x}").as_str()));
    }
    assert!(facets.contains("cluster-gate"));
    // One runtime's change lights exactly its adapter's lane.
    let gw = "gateway.runtime-watch";
    let single = s
        .frames
        .iter()
        .find(|f| f.node == gw && f.edges_to_light.len() == 1)
        .expect("a single-runtime gateway frame");
    let moved = named(&single.moved_facets);
    assert_eq!(moved.len(), 1);
    let rt = moved[0].strip_prefix("runtime:").unwrap();
    assert_eq!(single.woken_subscribers, vec![format!("adapter.{rt}")]);
    assert_eq!(single.edges_to_light[0].facet, moved[0]);
    // A two-session change wakes two summaries, each once.
    let two = s
        .frames
        .iter()
        .find(|f| {
            f.node == "ledger.sessions"
                && f.index > 0
                && named(&f.moved_facets).len() == 2
                && f.woken_subscribers.len() >= 2
        })
        .expect("a two-session ledger frame");
    let uniq: BTreeSet<&String> = two.woken_subscribers.iter().collect();
    assert_eq!(uniq.len(), two.woken_subscribers.len());
    // Diamond at the workstream index: woken once in that drain, by both summaries.
    let drain = drain_after(s, two.index);
    let idx: Vec<&&ReceiptFrame> = drain
        .iter()
        .filter(|f| f.node == "index.workstreams")
        .collect();
    assert_eq!(idx.len(), 1);
    assert_eq!(wake_refs(&opened.raw[idx[0].index]), 2);
    // The Codex adapter fails (red, 0 fresh), nothing follows it, then it recovers.
    let fails: Vec<&ReceiptFrame> = s
        .frames
        .iter()
        .filter(|f| f.status == Status::Failed)
        .collect();
    assert_eq!(fails.len(), 1);
    assert_eq!(fails[0].node, "adapter.codex");
    assert!(drain_after(s, fails[0].index).is_empty());
    assert!(
        s.frames[fails[0].index + 1..]
            .iter()
            .any(|f| f.node == "adapter.codex" && f.status == Status::Rendered)
    );
    // Self ticks cost nothing.
    let selfs: Vec<&ReceiptFrame> = s
        .frames
        .iter()
        .filter(|f| f.wake_source == WakeSource::SelfWake)
        .collect();
    assert!(!selfs.is_empty());
    assert!(
        selfs
            .iter()
            .all(|f| f.status == Status::Skipped && f.cost.fresh == 0)
    );
    // One tall concept-clusterer spike, the largest fresh of the run, gated by cluster-gate.
    let max = s.frames.iter().map(|f| f.cost.fresh).max().unwrap();
    let peaks: Vec<&ReceiptFrame> = s.frames.iter().filter(|f| f.cost.fresh == max).collect();
    assert_eq!(peaks.len(), 1);
    assert_eq!(peaks[0].node, "cluster.concepts");
    assert_eq!(spikes(s), vec![peaks[0].index]);
    let gate_opens: Vec<usize> = s
        .frames
        .iter()
        .filter(|f| {
            f.node == "index.workstreams" && f.moved_facets.iter().any(|m| m == "cluster-gate")
        })
        .map(|f| f.index)
        .collect();
    let cluster_renders: Vec<usize> = s
        .frames
        .iter()
        .filter(|f| f.node == "cluster.concepts" && f.status == Status::Rendered)
        .map(|f| f.index)
        .collect();
    assert_eq!(gate_opens.len(), cluster_renders.len());
    assert!(gate_opens.iter().zip(&cluster_renders).all(|(g, c)| g < c));
    let idx_renders = s
        .frames
        .iter()
        .filter(|f| f.node == "index.workstreams" && f.status == Status::Rendered)
        .count();
    assert!(
        idx_renders > gate_opens.len(),
        "the gate stays shut on most index renders"
    );
}

/// Frames that are "fresh spikes" by the SPA rule (VIEWER.md §8.5).
fn spikes(s: &ReplaySnapshot) -> Vec<usize> {
    let mut nz: Vec<u64> = s
        .frames
        .iter()
        .map(|f| f.cost.fresh)
        .filter(|&x| x > 0)
        .collect();
    nz.sort();
    let median = nz[nz.len() / 2];
    let bar = (4 * median).max(2000);
    s.frames
        .iter()
        .filter(|f| f.status == Status::Rendered && f.cost.fresh >= bar)
        .map(|f| f.index)
        .collect()
}

fn beat_at<'a>(opened: &'a OpenedStateDir, name: &str) -> &'a reactor::replay::open::Beat {
    opened
        .beats
        .as_ref()
        .unwrap()
        .beats
        .iter()
        .find(|b| b.name == name)
        .unwrap_or_else(|| panic!("beat {name}"))
}

fn check_beats(opened: &OpenedStateDir, s: &ReplaySnapshot, n: usize) {
    let beats = opened.beats.as_ref().expect("beats.json");
    assert_eq!(beats.beats.len(), n);
    for b in &beats.beats {
        assert!(b.from <= b.park && b.park <= b.to, "{}", b.name);
        assert!((b.to as usize) < s.frames.len(), "{}", b.name);
        assert!(!b.caption.is_empty() && b.hold_ms > 0.0);
    }
}

fn check_inbox_triage(opened: &OpenedStateDir, s: &ReplaySnapshot) {
    assert_eq!(counts(s), (40, 37, 2, 1));
    assert_eq!((s.nodes.len(), s.edges.len()), (16, 26));
    assert!(!opened.labels.is_empty());
    check_beats(opened, s, 8);
    let facets = edge_facets(s);
    for e in [
        "nl1", "nl2", "nl3", "nl4", "nl5", "ship1", "invoice1", "bad1",
    ] {
        assert!(facets.contains(format!("email:{e}").as_str()));
    }
    let first = arrivals(s)[0];
    let cold = drain_after(s, first);
    let nl_classified = cold
        .iter()
        .filter(|f| f.node.contains("classifier-nl") && f.status == Status::Rendered)
        .count();
    assert_eq!(nl_classified, 5);
    // One shared newsletter thread render; thread:newsletter moves exactly once.
    let nl_thread = "responsibility.thread-newsletter";
    let nl_renders: Vec<&ReceiptFrame> = s.frames.iter().filter(|f| f.node == nl_thread).collect();
    assert_eq!(nl_renders.len(), 1);
    assert!(cold.iter().any(|f| f.node == nl_thread));
    let threader: Vec<&ReceiptFrame> = s
        .frames
        .iter()
        .filter(|f| f.node == "responsibility.threader" && f.status == Status::Rendered)
        .collect();
    let moved_nl = threader
        .iter()
        .filter(|f| f.moved_facets.iter().any(|m| m == "thread:newsletter"))
        .count();
    assert_eq!(moved_nl, 1);
    assert!(threader.len() >= 3, "threader re-runs");
    for f in &threader[1..] {
        assert!(!f.woken_subscribers.iter().any(|w| w == nl_thread));
    }
    // classifier-bad1 fails, later recovers; the digest renders after the failure, never fails.
    let bad = "responsibility.classifier-bad1";
    let fail = s
        .frames
        .iter()
        .find(|f| f.node == bad && f.status == Status::Failed)
        .expect("bad1 fails");
    assert_eq!(fail.cost.fresh, 0);
    assert!(
        s.frames[fail.index..]
            .iter()
            .any(|f| f.node == bad && f.status == Status::Rendered)
    );
    let digest = "responsibility.digest";
    assert!(
        s.frames[fail.index..]
            .iter()
            .any(|f| f.node == digest && f.status == Status::Rendered)
    );
    assert!(
        !s.frames
            .iter()
            .any(|f| f.node == digest && f.status == Status::Failed)
    );
    // A single-email change lights one classifier lane while 7 stay dark.
    let gw = "gateway.inbox-stream";
    let subs = s.edges.iter().filter(|e| e.producer == gw).count();
    assert_eq!(subs, 8);
    let one = s
        .frames
        .iter()
        .find(|f| f.node == gw && f.edges_to_light.len() == 1)
        .expect("single-email frame");
    assert_eq!(one.woken_subscribers.len(), 1);
    // A self tick.
    assert!(
        s.frames
            .iter()
            .any(|f| f.wake_source == WakeSource::SelfWake && f.status == Status::Skipped)
    );
    // Beats land on their frames.
    let at = |b: &str| &s.frames[beat_at(opened, b).park as usize];
    assert_eq!(
        (
            at("garbled-email").node.as_str(),
            at("garbled-email").status
        ),
        (bad, Status::Failed)
    );
    assert_eq!(at("five-newsletters").node, nl_thread);
    assert_eq!(at("single-email").index, one.index);
    assert_eq!(
        (at("recovery").node.as_str(), at("recovery").status),
        (bad, Status::Rendered)
    );
    assert_eq!(at("self-tick").wake_source, WakeSource::SelfWake);
}

fn check_monorepo_ci(opened: &OpenedStateDir, s: &ReplaySnapshot) {
    assert_eq!(counts(s), (71, 52, 18, 1));
    assert_eq!((s.nodes.len(), s.edges.len()), (22, 42));
    check_beats(opened, s, 8);
    let facets = edge_facets(s);
    for p in ["core", "ui", "api", "utils", "auth", "billing"] {
        assert!(facets.contains(format!("pkg-{p}").as_str()));
    }
    let dist: BTreeSet<&str> = s
        .edges
        .iter()
        .filter(|e| e.facet == "core-dist")
        .map(|e| e.subscriber.as_str())
        .collect();
    assert_eq!(
        dist,
        BTreeSet::from(["build.pkg-api", "build.pkg-auth", "build.pkg-ui"])
    );
    let gw = "gateway.workspace";
    let builds = |drain: &[&ReceiptFrame]| -> BTreeSet<String> {
        rendered_nodes(drain)
            .into_iter()
            .filter(|n| n.starts_with("build."))
            .map(str::to_string)
            .collect()
    };
    // Leaf diff: only ui's lanes light; only ui rebuilds.
    let leaf = s
        .frames
        .iter()
        .find(|f| f.node == gw && named(&f.moved_facets) == ["pkg-ui"])
        .expect("leaf diff");
    let lanes: BTreeSet<&str> = leaf
        .edges_to_light
        .iter()
        .map(|e| e.subscriber.as_str())
        .collect();
    assert_eq!(lanes, BTreeSet::from(["build.pkg-ui", "lint.pkg-ui"]));
    assert_eq!(
        builds(&drain_after(s, leaf.index)),
        BTreeSet::from(["build.pkg-ui".to_string()])
    );
    // Hub diff: exactly core, ui, api and auth rebuild; test api fails; the gate says BLOCKED.
    let hub = s
        .frames
        .iter()
        .find(|f| f.node == gw && named(&f.moved_facets) == ["pkg-core"])
        .expect("hub diff");
    let drain = drain_after(s, hub.index);
    assert_eq!(
        builds(&drain),
        [
            "build.pkg-core",
            "build.pkg-ui",
            "build.pkg-api",
            "build.pkg-auth"
        ]
        .into_iter()
        .map(str::to_string)
        .collect()
    );
    let fail = drain
        .iter()
        .find(|f| f.status == Status::Failed)
        .expect("a failure in the hub drain");
    assert_eq!((fail.node.as_str(), fail.cost.fresh), ("test.pkg-api", 0));
    let verdict = |f: &ReceiptFrame| {
        truth_at(opened, f)
            .get("verdict")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let merges: Vec<&ReceiptFrame> = s
        .frames
        .iter()
        .filter(|f| f.node == "gate.merge" && f.status == Status::Rendered)
        .collect();
    let blocked = drain
        .iter()
        .find(|f| f.node == "gate.merge")
        .expect("gate in hub drain");
    assert_eq!(verdict(blocked), "BLOCKED");
    assert_eq!(verdict(merges[0]), "GREEN");
    let last = merges.last().unwrap();
    assert!(last.index > blocked.index);
    assert_eq!(verdict(last), "GREEN");
    // Long quiet stretches: a run of at least six consecutive skips.
    let mut run = 0;
    let mut best = 0;
    for f in &s.frames {
        run = if f.status == Status::Skipped {
            run + 1
        } else {
            0
        };
        best = best.max(run);
    }
    assert!(best >= 6, "{best}");
    let at = |b: &str| &s.frames[beat_at(opened, b).park as usize];
    assert_eq!(at("api-test-fails").index, fail.index);
    assert_eq!(at("blocked").index, blocked.index);
    assert_eq!(at("leaf-diff").index, leaf.index);
}

fn check_research_tree(opened: &OpenedStateDir, s: &ReplaySnapshot) {
    assert_eq!(counts(s), (44, 37, 6, 1));
    assert_eq!((s.nodes.len(), s.edges.len()), (13, 20));
    check_beats(opened, s, 9);
    let facets = edge_facets(s);
    for l in ["A1", "A2", "A3", "B1", "B2", "B3", "C1", "C2"] {
        assert!(facets.contains(format!("leaf:{l}").as_str()));
    }
    let sub_of = |leaf: &str| format!("synthesis.sub-{}", &leaf[..1]);
    let gw = "gateway.sources";
    let mut single_leaf_drains = 0;
    let mut two_leaf_drains = 0;
    let mut c1_failed = false;
    for f in s
        .frames
        .iter()
        .filter(|f| f.node == gw && f.status == Status::Rendered)
    {
        let drain = drain_after(s, f.index);
        let leaves: Vec<&str> = named(&f.moved_facets)
            .into_iter()
            .map(|m| m.strip_prefix("leaf:").unwrap())
            .collect();
        if leaves.len() == 1 && drain.iter().all(|x| x.status == Status::Rendered) {
            let got: BTreeSet<String> = rendered_nodes(&drain)
                .into_iter()
                .map(str::to_string)
                .collect();
            let want: BTreeSet<String> = [
                format!("finding.{}", leaves[0]),
                sub_of(leaves[0]),
                "synthesis.root".to_string(),
            ]
            .into();
            assert_eq!(got, want);
            single_leaf_drains += 1;
        }
        if leaves.len() == 2 && sub_of(leaves[0]) == sub_of(leaves[1]) {
            let subs: Vec<&&ReceiptFrame> = drain
                .iter()
                .filter(|x| x.node == sub_of(leaves[0]))
                .collect();
            assert_eq!(subs.len(), 1);
            assert_eq!(wake_refs(&opened.raw[subs[0].index]), 2);
            two_leaf_drains += 1;
        }
        if let Some(x) = drain.iter().find(|x| x.status == Status::Failed) {
            assert_eq!((x.node.as_str(), x.cost.fresh), ("finding.C1", 0));
            assert_eq!(drain.len(), 1, "nothing above C1 renders in that drain");
            c1_failed = true;
        }
    }
    assert!(single_leaf_drains >= 3, "{single_leaf_drains}");
    assert_eq!(two_leaf_drains, 1);
    assert!(c1_failed);
    let fail = s
        .frames
        .iter()
        .find(|f| f.status == Status::Failed)
        .unwrap();
    assert!(
        s.frames[fail.index..]
            .iter()
            .any(|f| f.node == "finding.C1" && f.status == Status::Rendered)
    );
    // The root holds the largest fresh.
    let root_max = s
        .frames
        .iter()
        .filter(|f| f.node == "synthesis.root")
        .map(|f| f.cost.fresh)
        .max()
        .unwrap();
    assert!(
        s.frames
            .iter()
            .filter(|f| f.node != "synthesis.root")
            .all(|f| f.cost.fresh < root_max)
    );
    let at = |b: &str| &s.frames[beat_at(opened, b).park as usize];
    assert_eq!(at("C1-fails").index, fail.index);
    assert_eq!(at("two-leaves").node, "synthesis.sub-B");
}

fn check_behaviour(name: &str, opened: &OpenedStateDir, s: &ReplaySnapshot) {
    match name {
        "masked-relay" => check_masked_relay(opened, s),
        "surprise-cost" => check_surprise_cost(opened, s),
        "agent-observatory" => check_agent_observatory(opened, s),
        "inbox-triage" => check_inbox_triage(opened, s),
        "monorepo-ci" => check_monorepo_ci(opened, s),
        "research-tree" => check_research_tree(opened, s),
        other => panic!("unexpected fixture {other}"),
    }
}

#[test]
fn regeneration_is_byte_identical_to_the_committed_fixtures() {
    let tmp = tempfile::tempdir().unwrap();
    for name in FIXTURE_NAMES {
        let out = tmp.path().join(name);
        generate(name, &out).unwrap_or_else(|e| panic!("{name}: {e}"));
        let fresh = files(&out);
        let old = files(&committed(name));
        let fresh_names: Vec<&String> = fresh.keys().collect();
        let old_names: Vec<&String> = old.keys().collect();
        assert_eq!(
            fresh_names, old_names,
            "{name}: file sets differ (regenerate with `cargo run --example gen_fixtures -- fixtures/`)"
        );
        for (k, v) in &fresh {
            assert!(
                old[k] == *v,
                "{name}: {k} differs from the committed fixture"
            );
        }
    }
}

#[test]
fn fixture_directories_hold_only_state_dir_entries() {
    for name in FIXTURE_NAMES {
        let all = files(&committed(name));
        assert!(all.contains_key("receipts.json") && all.contains_key("registry.json"));
        for k in all.keys() {
            let ok = k == "receipts.json"
                || k == "registry.json"
                || k == "beats.json"
                || k == "compile/topology.json"
                || k == "compile/labels.json"
                || k.starts_with("world-models/");
            assert!(ok, "{name}: unexpected entry {k}");
            assert!(!k.contains(".tmp-") && !k.ends_with(".lock"), "{name}: {k}");
        }
        let has = |f: &str| all.contains_key(f);
        let (topo, labels, beats) = match name {
            "masked-relay" => (true, false, false),
            "surprise-cost" => (false, false, false),
            "agent-observatory" => (true, true, false),
            _ => (true, true, true),
        };
        assert_eq!(has("compile/topology.json"), topo, "{name}");
        assert_eq!(has("compile/labels.json"), labels, "{name}");
        assert_eq!(has("beats.json"), beats, "{name}");
        assert!(all.keys().any(|k| k.ends_with("/published.json")));
        assert!(all.keys().any(|k| k.contains("/versions/sha256_")));
    }
}

#[test]
fn fixtures_replay_through_the_user_read_path() {
    for name in FIXTURE_NAMES {
        let opened = open_disk(name);
        assert!(!opened.synthetic);
        let s = check_common(name, &opened);
        check_behaviour(name, &opened, &s);
    }
}

#[test]
fn fixtures_replay_as_embedded_examples() {
    for name in FIXTURE_NAMES {
        let opened = open_embedded(name);
        assert!(opened.synthetic);
        assert_eq!(opened.state_dir, format!("example:{name}"));
        let s = check_common(name, &opened);
        check_behaviour(name, &opened, &s);
        // The embedded copy is the committed one.
        let disk = build_snapshot(&open_disk(name));
        assert_eq!(disk.frames, s.frames, "{name}");
    }
}

#[test]
fn a_rendered_version_is_readable_with_truth_json() {
    for name in FIXTURE_NAMES {
        let opened = open_embedded(name);
        let s = build_snapshot(&opened);
        // The last rendered frame of a faceted node (through atomic-index.json) and of an
        // atomic-only node (exact version file).
        let faceted = s.frames.iter().rev().find(|f| {
            f.status == Status::Rendered && f.moved_facets.len() > 1 && !is_phantom(&f.node)
        });
        let plain = s
            .frames
            .iter()
            .rev()
            .find(|f| f.status == Status::Rendered && f.moved_facets == ["@atomic"])
            .expect("an atomic-only render");
        for f in faceted.into_iter().chain([plain]) {
            let view = read_node_world_model(&opened, &f.node, &f.atomic_version)
                .unwrap_or_else(|| panic!("{name}: {} @ {}", f.node, f.atomic_version));
            assert_eq!(view.version, f.atomic_version);
            let truth = view
                .files
                .iter()
                .find(|x| x.path == "truth.json")
                .expect("truth.json");
            assert!(truth.bytes > 2 && truth.text.is_some());
            assert!(!view.published_fingerprints.0.is_empty());
        }
    }
}

#[test]
fn describe_of_every_example_exits_zero() {
    for name in FIXTURE_NAMES {
        let out = std::process::Command::new(support::bin())
            .args(["devtools", "--example", name, "--describe"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{name}: {text}");
        assert!(text.contains("(synthetic sample ledger"), "{name}");
        assert!(text.contains("\nCHAIN-VERIFY  ok"), "{name}");
        assert!(!text.contains('✗'), "{name}");
    }
}

#[test]
fn generator_refuses_unknown_names_and_non_empty_directories() {
    let tmp = tempfile::tempdir().unwrap();
    match generate("no-such-fixture", &tmp.path().join("x")) {
        Err(FixtureError::UnknownFixture(n)) => assert_eq!(n, "no-such-fixture"),
        other => panic!("{other:?}"),
    }
    assert!(
        !tmp.path().join("x").exists(),
        "nothing is created for an unknown name"
    );
    std::fs::write(tmp.path().join("keep.txt"), b"user data").unwrap();
    match generate("surprise-cost", tmp.path()) {
        Err(FixtureError::NotEmpty(_)) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(
        std::fs::read(tmp.path().join("keep.txt")).unwrap(),
        b"user data"
    );
    assert!(!tmp.path().join("receipts.json").exists());
    let msg: String = FixtureError::UnknownFixture("zz".into()).into();
    assert!(msg.contains("masked-relay"), "{msg}");
}
