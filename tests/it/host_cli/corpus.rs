//! Offline verbs over the compat corpus.

use super::*;

// ---------------------------------------------------------------------------------------------
// The compat corpus
// ---------------------------------------------------------------------------------------------

/// `(folder, receipts, fresh, reused, topology nodes or None, distinct receipt nodes)`.
type CorpusRow = (&'static str, usize, u64, u64, Option<usize>, usize);

const CORPUS: &[CorpusRow] = &[
    ("masked-relay", 77, 27180, 12840, Some(12), 13),
    ("surprise-cost", 5, 800, 640, None, 2),
    ("agent-observatory-cli", 13, 38352, 313856, Some(7), 8),
    ("renewal-risk", 65, 3200, 3760, Some(3), 4),
    ("basic-unit-suite", 45, 6240, 6960, Some(7), 8),
    ("research-tree", 72, 45900, 9360, None, 14),
];

#[test]
fn offline_verbs_over_the_compat_corpus() {
    let Some(corpus) = compat_dir() else { return };
    let cwd = tempfile::tempdir().unwrap();
    for (name, receipts, fresh, reused, topo_nodes, distinct) in CORPUS {
        let dir = corpus.join(name);
        let sd = dir.to_str().unwrap();
        let before = snapshot(&dir);
        let run = |args: &[&str]| {
            let mut a = args.to_vec();
            a.extend(["--state-dir", sd]);
            reactor_in(cwd.path(), &a)
        };

        let o = run(&["status"]);
        assert_eq!(o.code, 0, "{name}: {}", o.stderr);
        assert!(
            o.stdout.contains(&format!(
                "\n  receipts       {receipts}\n  run cost       fresh={fresh} reused={reused}\n"
            )),
            "{name}: {}",
            o.stdout
        );
        assert!(o.stdout.contains("\n  compiled       no\n"), "{name}");
        let v = run(&["status", "--json"]).json();
        assert_eq!(v["run"]["receipts"], *receipts as u64, "{name}");
        assert_eq!(
            v["run"]["byNode"].as_object().unwrap().len(),
            *distinct,
            "{name}"
        );

        let o = run(&["logs"]);
        assert_eq!(
            o.stdout
                .lines()
                .filter(|l| l.starts_with("  ") && !l.starts_with("      "))
                .count(),
            *receipts,
            "{name}"
        );
        let v = run(&["logs", "--json"]).json();
        assert_eq!(v["entries"].as_array().unwrap().len(), *receipts);

        let o = run(&["trace"]);
        assert_eq!(o.code, 0);
        assert_eq!(
            o.stdout.matches("  (chain ok)\n").count(),
            *distinct,
            "{name}: {}",
            o.stdout
        );
        assert!(!o.stdout.contains("BROKEN"));

        // Every chain verifies; the corpus ships no version blobs, so the world-model binding
        // reports each published pointer's missing version and the verb exits 1.
        let o = run(&["receipts", "verify"]);
        assert!(
            o.stdout.contains("\n  chain          ALL OK\n"),
            "{name}: {}",
            o.stdout
        );
        let v = run(&["receipts", "verify", "--json"]).json();
        assert!(
            v["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .all(|n| n["ok"] == true),
            "{name}"
        );
        assert_eq!(v["nodes"].as_array().unwrap().len(), *distinct);
        let wm_errors = v["worldModels"]["errors"].as_array().unwrap();
        assert!(
            wm_errors.iter().all(|e| e
                .as_str()
                .unwrap()
                .ends_with("(a version file that is missing)")),
            "{name}: {wm_errors:?}"
        );
        assert_eq!(o.code, if wm_errors.is_empty() { 0 } else { 1 }, "{name}");

        let v = run(&["receipts", "cost", "--json"]).json();
        assert_eq!(
            v["total"],
            serde_json::json!({"fresh": fresh, "reused": reused})
        );

        let o = run(&["topology"]);
        match topo_nodes {
            Some(n) => {
                assert_eq!(o.code, 0, "{name}: {}", o.stderr);
                assert!(o.stdout.ends_with("  note: no compile manifest (a replay fixture or a state dir written elsewhere)\n"), "{name}");
                let v = run(&["topology", "--json"]).json();
                assert_eq!(v["nodes"].as_array().unwrap().len(), *n, "{name}");
                let dot = run(&["topology", "--format", "dot"]).stdout;
                let labelled = dot
                    .lines()
                    .filter(|l| l.contains(" -> ") && l.contains("[label="))
                    .count();
                assert_eq!(labelled, v["edges"].as_array().unwrap().len(), "{name}");
            }
            None => {
                assert_eq!(o.code, 1, "{name}");
                assert_eq!(
                    o.stderr,
                    "reactor: error: no compiled IR — run `reactor compile` first\n"
                );
            }
        }
        assert_eq!(
            snapshot(&dir),
            before,
            "{name}: a reader modified the corpus"
        );
        assert!(!dir.join(".lock").exists());
    }

    // masked-relay in detail.
    let sd = corpus.join("masked-relay");
    let sd = sd.to_str().unwrap();
    let o = reactor_in(cwd.path(), &["topology", "--state-dir", sd]);
    assert!(
        o.stdout
            .contains("\n  entry points   gateway.signal-inbox (ingress: ingress.signal-inbox)\n"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .contains("\n    ingress.signal-inbox.inbox -> gateway.signal-inbox\n"),
        "{}",
        o.stdout
    );
    let o = reactor_in(
        cwd.path(),
        &["inspect", "ingress.signal-inbox", "--state-dir", sd],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout
            .contains("\n  known          no (not in the compiled topology)\n"),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains("(version file missing)"));
    let o = reactor_in(
        cwd.path(),
        &[
            "inspect",
            "gateway.signal-inbox",
            "--state-dir",
            sd,
            "--strict",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.contains("\n  wake source    external\n"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .contains("\n  subscribes to:\n    inbox <- ingress.signal-inbox\n"),
        "{}",
        o.stdout
    );
    let o = reactor_in(
        cwd.path(),
        &["receipts", "cost", "--state-dir", sd, "--rate", "$1/Mtok"],
    );
    assert!(
        o.stdout
            .contains("\n  cost (USD)     total=$0.0400 fresh=$0.0272 reused=$0.0128\n"),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains("\n  cost by surprise cause:\n    input        fresh=26100 reused=12000\n    external     fresh=1080 reused=840\n"), "{}", o.stdout);
}
