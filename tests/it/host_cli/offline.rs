//! Offline verbs over a ledger written by the project's own store: text and `--json`, cache
//! freshness, no key and no change, the current writer, a closed stdout.

use super::*;

const ALL_OFFLINE: &[&[&str]] = &[
    &["status"],
    &["status", "--json"],
    &["topology"],
    &["topology", "--json"],
    &["topology", "--format", "dot"],
    &["topology", "--format", "mermaid"],
    &["inspect", "digest"],
    &["inspect", "inbox::ingress", "--json"],
    &["logs"],
    &["logs", "--node", "digest", "--json"],
    &["trace"],
    &["trace", "inbox", "--json"],
    &["receipts"],
    &["receipts", "list", "--node", "inbox"],
    &["receipts", "verify"],
    &["receipts", "verify", "--json"],
    &["receipts", "cost", "--rate", "$3/Mtok"],
    &["receipts", "cost", "--json", "--node", "digest"],
];

#[test]
fn offline_verbs_over_a_project_ledger() {
    let f = fixture();
    let abs_state = f.state.display().to_string();

    let o = f.run(&["status"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let expected_head =
        format!("reactor status\n\n  state dir      {abs_state}\n  compiled       yes (");
    assert!(o.stdout.starts_with(&expected_head), "{}", o.stdout);
    assert!(o.stdout.contains(
        "\n  topology       2 nodes, 1 edges (at 2026-06-02T18:00:00.000Z)\n  compile cost   fresh=4210 reused=0\n  writer         none\n\n  receipts       5\n  run cost       fresh=3300 reused=200\n  dispositions   rendered=3 skipped=1 failed=1\n\n  cost by surprise cause:\n    input        fresh=1090 reused=200\n    external     fresh=2210 reused=0\n\n  cost by node:\n    inbox::ingress               fresh=0 reused=0\n    inbox                        fresh=2210 reused=0\n    digest                       fresh=1090 reused=200\n"
    ), "{}", o.stdout);
    let v = f.run(&["status", "--json"]).json();
    assert_eq!(v["stateDir"], abs_state.as_str());
    assert_eq!(v["compiled"], true);
    assert_eq!(
        v["compile"],
        serde_json::json!({"nodes": 2, "edges": 1, "compiledAt": "2026-06-02T18:00:00.000Z", "cost": {"fresh": 4210, "reused": 0}, "model": "google/gemini-3.5-flash"})
    );
    assert_eq!(v["writer"], serde_json::Value::Null);
    assert_eq!(
        v["run"]["total"],
        serde_json::json!({"fresh": 3300, "reused": 200})
    );
    assert_eq!(
        v["run"]["dispositions"],
        serde_json::json!({"rendered": 3, "skipped": 1, "failed": 1, "other": 0})
    );
    assert_eq!(v["run"]["receipts"], 5);
    assert_eq!(v["freshness"], "fresh");
    assert!(v.get("staleReason").is_none());

    let o = f.run(&["topology"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        o.stdout,
        "reactor topology\n\n  acyclic        yes\n  entry points   inbox (ingress: inbox::ingress)\n\n  nodes:\n    digest                       wake=input maintains=[digest]\n    inbox                        wake=external maintains=[items]\n\n  edges:\n    inbox.items -> digest\n"
    );
    let v = f.run(&["topology", "--json"]).json();
    assert_eq!(v["entry_points"], serde_json::json!(["inbox"]));
    assert_eq!(v["acyclic"], true);
    assert_eq!(
        v["edges"],
        serde_json::json!([{"producer": "inbox", "facet": "items", "subscriber": "digest"}])
    );
    assert_eq!(v["nodes"][0]["node"], "digest");
    assert_eq!(v["nodes"][0]["wake_source"], "input");
    assert_eq!(v["nodes"][0]["maintains"], serde_json::json!(["digest"]));
    assert!(
        v["nodes"][1]["contract_fingerprint"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    let dot = f.run(&["topology", "--format", "dot"]).stdout;
    assert!(
        dot.starts_with("digraph reactor {\n") && dot.ends_with("}\n"),
        "{dot}"
    );
    assert!(
        dot.contains("\"inbox::ingress\" -> \"inbox\" [style=dashed];"),
        "{dot}"
    );
    assert!(
        dot.contains("\"inbox\" -> \"digest\" [label=\"items\"];"),
        "{dot}"
    );
    let mm = f.run(&["topology", "--format", "mermaid"]).stdout;
    assert!(
        mm.starts_with("flowchart LR\n") && mm.contains("n1[[\"inbox (entry point)\"]]"),
        "{mm}"
    );

    let o = f.run(&["inspect", "digest"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let dv = &f.versions["digest"];
    assert_eq!(
        o.stdout,
        format!(
            "reactor inspect digest\n\n  wake source    input\n  contract       {}\n  maintains      [digest]\n  subscribes to:\n    items <- inbox\n  published:\n    @atomic      sha256:cc\n    digest       sha256:dd\n  version        {}… (1 files)\n  receipts       3\n  cost           fresh=1090 reused=200\n  last status    skipped\n  last render    frame 3: memo key unchanged; retried after the failed frame 2\n  chain          ok (3 receipts)\n\n  world-model    {}… (published, 1 file)\n    truth.json   19 bytes\n      {{\n        \"digest\": \"1 item\"\n      }}\n",
            ContractSet::load(&f.project)
                .unwrap()
                .get("digest")
                .unwrap()
                .fingerprint(),
            &dv[..15],
            &dv[..15]
        )
    );
    let o = f.run(&["inspect", "inbox::ingress", "--json"]);
    let v = o.json();
    assert_eq!(v["known"], false);
    assert_eq!(v["receipts"], 1);
    assert_eq!(
        v["publishedFingerprints"],
        serde_json::json!({"@atomic": "inbox:1"})
    );
    assert_eq!(v["publishedVersion"], f.versions["inbox::ingress"].as_str());
    assert_eq!(v["lastReceipt"]["node"], "inbox::ingress");
    assert_eq!(v["chain"]["ok"], true);
    assert_eq!(v["chain"]["length"], 1);
    assert_eq!(v["cost"]["receipts"], 1);
    let o = f.run(&["inspect", "inbox::ingress"]);
    assert!(
        o.stdout
            .contains("\n  known          no (not in the compiled topology)\n"),
        "{}",
        o.stdout
    );
    let o = f.run(&["inspect", "nope"]);
    assert_eq!(o.code, 1);
    assert_eq!(o.stderr, "reactor: error: unknown node 'nope'\n");

    let o = f.run(&["logs"]);
    assert_eq!(
        o.stdout,
        "reactor logs\n\n  inbox::ingress               rendered wake=external fresh=0 reused=0\n  inbox                        rendered wake=external fresh=2210 reused=0\n  digest                       failed   wake=input    fresh=90 reused=0\n      reason: postconditions failed: cites-items (attested false)\n  digest                       rendered wake=input    fresh=1000 reused=200\n  digest                       skipped  wake=input    fresh=0 reused=0\n"
    );
    let v = f.run(&["logs", "--node", "digest", "--json"]).json();
    assert_eq!(v["receipts"], 3);
    assert_eq!(v["entries"][0]["index"], 2);
    assert_eq!(
        v["entries"][0]["reason"],
        "postconditions failed: cites-items (attested false)"
    );
    assert_eq!(
        v["entries"][0]["cost"],
        serde_json::json!({"fresh": 90, "reused": 0})
    );
    assert!(v["entries"][1].get("reason").is_none());
    assert!(
        v["entries"][1]["content_hash"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    let o = f.run(&["receipts", "list", "--node", "inbox"]);
    assert_eq!(
        o.stdout,
        "reactor receipts\n\n  inbox                        rendered wake=external fresh=2210 reused=0\n"
    );
    let o = f.run(&["logs", "--node", "ghost"]);
    assert_eq!(o.code, 1);

    let o = f.run(&["trace"]);
    assert_eq!(
        o.stdout,
        "reactor trace\n\n  inbox::ingress  (chain ok)\n    #0 rendered wake=external cause=external fresh=0 reused=0\n  inbox  (chain ok)\n    #0 rendered wake=external cause=external fresh=2210 reused=0\n  digest  (chain ok)\n    #0 failed wake=input cause=input fresh=90 reused=0\n      reason: postconditions failed: cites-items (attested false)\n    #1 rendered wake=input cause=input fresh=1000 reused=200\n    #2 skipped wake=input cause=input fresh=0 reused=0\n"
    );
    let v = f.run(&["trace", "inbox", "--json"]).json();
    assert_eq!(v["traces"].as_array().unwrap().len(), 1);
    assert_eq!(v["traces"][0]["steps"][0]["prev"], serde_json::Value::Null);
    assert_eq!(v["traces"][0]["chain"]["ok"], true);
    assert_eq!(
        v["traces"][0]["chain"]["head"],
        v["traces"][0]["steps"][0]["content_hash"]
    );
    assert_eq!(f.run(&["trace", "ghost"]).code, 1);
    // --why (issue 9): digest failed first, then rendered again on the same memo key (a retry),
    // then skipped; the ingress and the gateway rendered first on external wakes.
    let o = f.run(&["trace", "--why"]);
    assert_eq!(
        o.stdout,
        "reactor trace\n\n  inbox::ingress  (chain ok)\n    #0 rendered wake=external cause=external fresh=0 reused=0\n      why: first receipt of this node (external wake)\n  inbox  (chain ok)\n    #0 rendered wake=external cause=external fresh=2210 reused=0\n      why: first receipt of this node (external wake)\n  digest  (chain ok)\n    #0 failed wake=input cause=input fresh=90 reused=0\n      reason: postconditions failed: cites-items (attested false)\n      why: first receipt of this node (input wake)\n    #1 rendered wake=input cause=input fresh=1000 reused=200\n      why: memo key unchanged; retried after the failed frame 2\n    #2 skipped wake=input cause=input fresh=0 reused=0\n"
    );
    let v = f.run(&["trace", "digest", "--why", "--json"]).json();
    let steps = &v["traces"][0]["steps"];
    assert_eq!(steps[0]["why"]["causes"], serde_json::json!(["first"]));
    assert_eq!(steps[1]["why"]["causes"], serde_json::json!(["retry"]));
    assert_eq!(steps[1]["why"]["prior"], 2);
    assert_eq!(steps[1]["why"]["priorStatus"], "failed");
    assert_eq!(steps[2]["why"], serde_json::Value::Null);
    assert!(
        f.run(&["trace", "inbox", "--json"]).json()["traces"][0]["steps"][0]
            .get("why")
            .is_none()
    );
    assert_eq!(f.run(&["trace", "--why=1"]).code, 2);
    let v = f.run(&["inspect", "digest", "--json"]).json();
    assert_eq!(v["lastRender"]["frame"], 3);
    assert_eq!(
        v["lastRender"]["why"]["causes"],
        serde_json::json!(["retry"])
    );

    let o = f.run(&["receipts", "verify"]);
    assert_eq!(o.code, 0, "{}", o.stdout);
    assert_eq!(
        o.stdout,
        "reactor receipts verify\n\n  receipts       5\n  total cost     fresh=3300 reused=200\n  chain          ALL OK\n  world-models   ok (3 versions)\n\n  per node:\n    inbox::ingress               ok (1 receipts, fresh=0 reused=0)\n    inbox                        ok (1 receipts, fresh=2210 reused=0)\n    digest                       ok (3 receipts, fresh=1090 reused=200)\n"
    );
    let v = f.run(&["receipts", "verify", "--json"]).json();
    assert_eq!(v["ok"], true);
    assert_eq!(v["receipts"], 5);
    assert_eq!(
        v["worldModels"],
        serde_json::json!({"ok": true, "versions": 3, "errors": []})
    );
    assert_eq!(v["nodes"][2]["node"], "digest");
    assert_eq!(v["nodes"][2]["receipts"], 3);
    assert!(v.get("empty").is_none());

    let o = f.run(&["receipts", "cost", "--rate", "$3/Mtok"]);
    assert!(o.stdout.starts_with(
        "reactor receipts cost\n\n  receipts       5\n  run cost       fresh=3300 reused=200\n  dispositions   rendered=3 skipped=1 failed=1\n  rate           $3/Mtok\n  cost (USD)     total=$0.0105 fresh=$0.0099 reused=$0.0006\n\n  cost by surprise cause:\n"
    ), "{}", o.stdout);
    let v = f
        .run(&[
            "receipts",
            "cost",
            "--json",
            "--node",
            "digest",
            "--rate",
            "1000000tpd",
        ])
        .json();
    assert_eq!(
        v["total"],
        serde_json::json!({"fresh": 1090, "reused": 200})
    );
    assert_eq!(v["receipts"], 3);
    assert_eq!(v["rate"]["label"], "1000000 tokens-per-dollar");
    assert!((v["dollars"]["total"].as_f64().unwrap() - 0.00129).abs() < 1e-12);
}

#[test]
fn status_reports_compile_cache_freshness() {
    let f = fixture();
    let compiled_line = |f: &Fixture| {
        f.run(&["status"])
            .stdout
            .lines()
            .find(|l| l.starts_with("  compiled "))
            .unwrap()
            .to_string()
    };
    assert_eq!(compiled_line(&f), "  compiled       yes (fresh)");
    // A different compile model.
    let yml = std::fs::read_to_string(f.project.join("reactor.yml")).unwrap();
    std::fs::write(
        f.project.join("reactor.yml"),
        yml.replace(
            "compile_model: google/gemini-3.5-flash",
            "compile_model: other/model",
        ),
    )
    .unwrap();
    assert_eq!(
        compiled_line(&f),
        "  compiled       yes (STALE: compile model changed)"
    );
    let v = f.run(&["status", "--json"]).json();
    assert_eq!(v["freshness"], "stale");
    assert_eq!(v["staleReason"], "compile model changed");
    // No compile model at all: freshness cannot be decided.
    std::fs::write(
        f.project.join("reactor.yml"),
        "model:\n  provider: openai\n",
    )
    .unwrap();
    assert_eq!(
        compiled_line(&f),
        "  compiled       yes (freshness unknown: model.compile_model is required for provider 'openai')"
    );
    assert_eq!(f.run(&["status", "--json"]).json()["freshness"], "unknown");
    std::fs::write(f.project.join("reactor.yml"), yml).unwrap();
    assert_eq!(compiled_line(&f), "  compiled       yes (fresh)");
    // An edit to any section of a contract.
    let digest = f.project.join("digest.prose.md");
    let text = std::fs::read_to_string(&digest).unwrap();
    std::fs::write(
        &digest,
        text.replace("### Goal\n", "### Goal\nAlso: be brief.\n"),
    )
    .unwrap();
    assert_eq!(
        compiled_line(&f),
        "  compiled       yes (STALE: contract set changed)"
    );
    std::fs::write(&digest, &text).unwrap();
    // A corrupted node file.
    let node_file = f
        .state
        .join("compile/nodes")
        .join(format!("{}.json", node_segment("inbox")));
    let mut bytes = std::fs::read(&node_file).unwrap();
    bytes.push(b' ');
    std::fs::write(&node_file, bytes).unwrap();
    let line = compiled_line(&f);
    assert!(
        line.starts_with("  compiled       yes (STALE: cache corrupt: compile/nodes/"),
        "{line}"
    );
    // The check never writes.
    assert!(!f.state.join(".lock").exists());
}

#[test]
fn offline_verbs_need_no_key_and_change_nothing() {
    let f = fixture();
    let before = snapshot(&f.project);
    for args in ALL_OFFLINE {
        let o = f.run(args);
        assert_eq!(o.code, 0, "{args:?}: {}", o.stderr);
        assert!(!o.stderr.contains("error"), "{args:?}: {}", o.stderr);
        if args.contains(&"--json") {
            let _ = o.json();
        }
    }
    // Forced offline mode changes nothing for readers.
    let o = f.run(&["status", "--offline"]);
    assert_eq!(o.code, 0);
    assert_eq!(
        snapshot(&f.project),
        before,
        "an offline verb modified the project"
    );
    assert!(!f.state.join(".lock").exists());
}

#[test]
fn the_current_writer_is_reported() {
    let f = fixture();
    // Our own (alive) pid in .lock, and serve.json naming it with a URL.
    let me = std::process::id();
    std::fs::write(f.state.join(".lock"), format!("{me}\n")).unwrap();
    let o = f.run(&["status"]);
    assert!(
        o.stdout.contains(&format!("\n  writer         pid {me}\n")),
        "{}",
        o.stdout
    );
    std::fs::write(
        f.state.join("serve.json"),
        format!("{{\n  \"pid\": {me},\n  \"url\": \"http://127.0.0.1:8080/\",\n  \"reactor\": \"default\",\n  \"prefix\": \"\",\n  \"auth_token_env\": null,\n  \"started_at\": \"2026-06-02T18:00:00.000Z\"\n}}\n"),
    )
    .unwrap();
    let o = f.run(&["status"]);
    assert!(
        o.stdout.contains(&format!(
            "\n  writer         reactor serve (pid {me}) at http://127.0.0.1:8080/\n"
        )),
        "{}",
        o.stdout
    );
    let v = f.run(&["status", "--json"]).json();
    assert_eq!(
        v["writer"],
        serde_json::json!({"pid": me, "daemon": true, "url": "http://127.0.0.1:8080/"})
    );
    assert!(
        o.stdout.contains("\n  in flight      none\n"),
        "{}",
        o.stdout
    );
    assert_eq!(v["inFlight"], serde_json::json!([]));
    // The renders in flight the writer records (issue 10): shown while its pid holds the lock.
    let record = format!(
        r#"{{"inFlight":[{{"awaitingCommit":false,"node":"inbox","startedAt":"2026-06-02T18:00:05.120Z"}},{{"awaitingCommit":true,"node":"digest","startedAt":"2026-06-02T18:00:07.000Z"}}],"pid":{me}}}"#
    );
    std::fs::write(f.state.join("in-flight.json"), record).unwrap();
    let o = f.run(&["status"]);
    assert!(
        o.stdout.contains(
            "\n  in flight      2 renders: inbox (since 18:00:05), digest (since 18:00:07, awaiting commit)\n"
        ),
        "{}",
        o.stdout
    );
    let v = f.run(&["status", "--json"]).json();
    assert_eq!(
        v["inFlight"],
        serde_json::json!([
            {"node": "inbox", "startedAt": "2026-06-02T18:00:05.120Z", "awaitingCommit": false},
            {"node": "digest", "startedAt": "2026-06-02T18:00:07.000Z", "awaitingCommit": true}
        ])
    );
    // A record of another pid is stale.
    std::fs::write(
        f.state.join("in-flight.json"),
        r#"{"inFlight":[{"awaitingCommit":false,"node":"inbox","startedAt":"2026-06-02T18:00:05.120Z"}],"pid":4194303}"#,
    )
    .unwrap();
    let o = f.run(&["status"]);
    assert!(
        o.stdout.contains("\n  in flight      none\n"),
        "{}",
        o.stdout
    );
    // A dead pid counts as none.
    std::fs::write(f.state.join(".lock"), "4194303\n").unwrap();
    let o = f.run(&["status"]);
    assert!(
        o.stdout.contains("\n  writer         none\n"),
        "{}",
        o.stdout
    );
    assert!(!o.stdout.contains("in flight"), "{}", o.stdout);
}

#[test]
fn a_closed_stdout_ends_quietly_with_exit_0() {
    let f = fixture();
    let mut child = Command::new(bin())
        .args(["trace"])
        .current_dir(&f.project)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}
