//! "Why did this render" (issue 9) on the compatibility corpus and the bundled fixtures: every
//! rendered or failed frame gets a cause, every named input slot holds the token its producer's
//! receipt published, and the causes the corpus README describes are found where they are.

use std::collections::HashMap;

use reactor::format::json::Value;
use reactor::format::receipt::{Fingerprints, Status};
use reactor::replay::why::{Why, WhyCause, explain_ledger};
use reactor::replay::{self, OpenStateDirOptions, OpenedStateDir};

use crate::support::compat_dir;

const CORPUS: [&str; 6] = [
    "masked-relay",
    "surprise-cost",
    "agent-observatory-cli",
    "renewal-risk",
    "basic-unit-suite",
    "research-tree",
];

fn open(name: &str) -> Option<OpenedStateDir> {
    let dir = compat_dir()?.join(name);
    Some(replay::open_state_dir(&dir, &OpenStateDirOptions::default()).unwrap())
}

fn fingerprints(v: &Value) -> Fingerprints {
    Fingerprints::from_value(v.get("fingerprints").unwrap()).unwrap()
}

/// The invariants every ledger must satisfy, returning counts per cause.
fn check_ledger(
    name: &str,
    o: &OpenedStateDir,
    whys: &[Option<Why>],
) -> HashMap<&'static str, usize> {
    assert_eq!(whys.len(), o.raw.len(), "{name}");
    let mut counts = HashMap::new();
    let mut last_of: HashMap<&str, usize> = HashMap::new();
    for (i, (p, w)) in o.projected.iter().zip(whys).enumerate() {
        let skipped = p.status == Status::Skipped;
        assert_eq!(
            w.is_none(),
            skipped,
            "{name} frame {i}: a cause exactly for rendered/failed"
        );
        if let Some(w) = w {
            assert!(
                !w.causes.is_empty() && !w.text.is_empty(),
                "{name} frame {i}"
            );
            assert_eq!(
                w.prior,
                last_of.get(p.node.as_str()).copied(),
                "{name} frame {i}: prior"
            );
            assert_eq!(w.wake, Some(p.wake_source), "{name} frame {i}");
            for c in &w.causes {
                *counts.entry(c.as_str()).or_default() += 1;
            }
            assert!(
                !w.causes.contains(&WhyCause::Unknown),
                "{name} frame {i}: {}",
                w.text
            );
            assert_eq!(w.causes.contains(&WhyCause::First), w.prior.is_none());
            for m in &w.inputs {
                // A named slot holds what its producer's latest receipt published for that facet
                // (FORMATS.md §8.3); a producer without a receipt leaves the cold-start token.
                if let (Some(facet), Some(k)) = (&m.facet, m.frame) {
                    let fp = fingerprints(&o.raw[k]);
                    assert_eq!(
                        fp.resolve(facet),
                        m.to.as_deref(),
                        "{name} frame {i} slot {} ← frame {k}",
                        m.slot
                    );
                    assert!(k < i);
                }
            }
            for (r, k) in w.refs.iter().enumerate() {
                if let Some(k) = k {
                    let h = o.raw[*k].get("content_hash").and_then(Value::as_str);
                    let want = o.raw[i]
                        .get("wake")
                        .and_then(|w| w.get("refs"))
                        .and_then(Value::as_array)
                        .and_then(|a| a[r].as_str());
                    assert_eq!(h, want, "{name} frame {i} ref {r}");
                }
            }
        }
        last_of.insert(p.node.as_str(), i);
    }
    counts
}

#[test]
fn every_corpus_ledger_has_a_cause_for_each_render() {
    for name in CORPUS {
        let Some(o) = open(name) else { return };
        let whys = explain_ledger(&o.raw, o.topology.as_ref());
        let counts = check_ledger(name, &o, &whys);
        eprintln!("{name}: {counts:?}");
        assert!(counts.get("first").copied().unwrap_or(0) >= 2, "{name}");
    }
}

#[test]
fn masked_relay_causes_name_the_moved_producers() {
    let Some(o) = open("masked-relay") else {
        return;
    };
    let whys = explain_ledger(&o.raw, o.topology.as_ref());
    let node = |i: usize| o.projected[i].node.as_str();
    // The gateway re-renders only because the ingress lane's `inbox` facet moved.
    let gw: Vec<&Why> = (0..o.raw.len())
        .filter(|&i| node(i) == "gateway.signal-inbox")
        .filter_map(|i| whys[i].as_ref())
        .filter(|w| w.prior.is_some())
        .collect();
    assert!(!gw.is_empty());
    for w in &gw {
        if w.causes == [WhyCause::Inputs] {
            assert_eq!(w.inputs.len(), 1);
            assert_eq!(
                w.inputs[0].producer.as_deref(),
                Some("ingress.signal-inbox")
            );
            assert_eq!(w.inputs[0].facet.as_deref(), Some("inbox"));
        }
    }
    // The masker's slots are the three scouts' @atomic lanes: a masker render after the cold
    // boot names one or more scouts.
    let masker: Vec<&Why> = (0..o.raw.len())
        .filter(|&i| node(i) == "responsibility.viewport-masker")
        .filter_map(|i| whys[i].as_ref())
        .filter(|w| w.causes == [WhyCause::Inputs])
        .collect();
    assert!(!masker.is_empty());
    for w in masker {
        for m in &w.inputs {
            let p = m.producer.as_deref().unwrap();
            assert!(p.starts_with("responsibility.scout-"), "{p}");
            assert_eq!(m.facet.as_deref(), Some("@atomic"));
            assert!(w.text.contains(p), "{}", w.text);
        }
    }
}

#[test]
fn cli_host_ledger_names_the_mounted_ingress_slot() {
    // Written by the reference CLI host: the gateway's only slot is the mounted
    // `<gw>::ingress` edge, which compile/topology.json does not list.
    let Some(o) = open("agent-observatory-cli") else {
        return;
    };
    let whys = explain_ledger(&o.raw, o.topology.as_ref());
    let second = (0..o.raw.len())
        .filter(|&i| o.projected[i].node == "claude-sessions")
        .nth(1)
        .unwrap();
    let w = whys[second].as_ref().unwrap();
    assert_eq!(w.causes, [WhyCause::Inputs]);
    let m = &w.inputs[0];
    assert_eq!(
        (m.producer.as_deref(), m.facet.as_deref()),
        (Some("claude-sessions::ingress"), Some("@atomic"))
    );
    assert_eq!(
        (m.from.as_deref(), m.to.as_deref()),
        (Some("inbox:1"), Some("inbox:2"))
    );
    assert_eq!(
        o.projected[m.frame.unwrap()].node,
        "claude-sessions::ingress"
    );
    assert_eq!(
        w.text,
        format!(
            "input moved: claude-sessions::ingress @atomic (frame {})",
            m.frame.unwrap()
        )
    );
}

#[test]
fn contract_edits_failures_and_bare_wakes_are_told_apart() {
    // surprise-cost: gateway rendered → digest → gateway skipped → gateway rendered after a
    // contract edit → digest rendered because the gateway's output moved.
    let Some(o) = open("surprise-cost") else {
        return;
    };
    let whys = explain_ledger(&o.raw, o.topology.as_ref());
    let causes: Vec<Vec<WhyCause>> = whys
        .iter()
        .map(|w| w.as_ref().map(|w| w.causes.clone()).unwrap_or_default())
        .collect();
    use WhyCause::*;
    assert_eq!(
        causes,
        vec![
            vec![First],
            vec![First],
            vec![],
            vec![Contract],
            vec![Inputs]
        ]
    );
    assert_eq!(
        whys[3].as_ref().unwrap().text,
        "contract changed (contract:gateway.signals@v1 → contract:gateway.signals@v2)"
    );
    // Without a topology the digest's slot is a number, and the waking receipt is named.
    let t4 = &whys[4].as_ref().unwrap().text;
    assert_eq!(
        t4,
        "input moved: slot 0; woken by frame 3 (gateway.signals)"
    );

    // basic-unit-suite holds a failed receipt: it has a cause like any attempted render.
    let Some(o) = open("basic-unit-suite") else {
        return;
    };
    let whys = explain_ledger(&o.raw, o.topology.as_ref());
    let failed = o
        .projected
        .iter()
        .position(|p| p.status == Status::Failed)
        .unwrap();
    assert!(whys[failed].is_some(), "a failed frame has a cause");

    // renewal-risk re-wakes nodes whose key did not move: each such render is a bare wake,
    // and its key is byte-for-byte the previous receipt's.
    let Some(o) = open("renewal-risk") else {
        return;
    };
    let whys = explain_ledger(&o.raw, o.topology.as_ref());
    let mut bare = 0;
    for (i, w) in whys.iter().enumerate() {
        let Some(w) = w else { continue };
        if w.causes != [Wake] {
            continue;
        }
        bare += 1;
        let p = w.prior.unwrap();
        for key in ["contract_fingerprint", "input_fingerprints"] {
            assert_eq!(o.raw[i].get(key), o.raw[p].get(key), "frame {i} {key}");
        }
        let src = o.projected[i].wake_source.as_str();
        assert_eq!(w.text, format!("memo key unchanged; {src} wake"));
    }
    assert!(bare >= 10, "renewal-risk has bare re-wakes ({bare})");
}

#[test]
fn bundled_fixtures_have_a_cause_for_each_render() {
    for name in reactor::devtools::SHIPPED_EXAMPLES {
        let Ok(o) = reactor::devtools::open_example(name, &OpenStateDirOptions::default()) else {
            eprintln!("SKIPPED: the bundled fixture {name} is not generated");
            continue;
        };
        let whys = explain_ledger(&o.raw, o.topology.as_ref());
        let counts = check_ledger(name, &o, &whys);
        eprintln!("{name}: {counts:?}");
    }
}
