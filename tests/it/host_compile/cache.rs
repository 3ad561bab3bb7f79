//! Compile, cache hit, `--check`, `--force`, staleness and keyless reload; the Messages
//! protocol's forced submit tools; several reactors.

use super::*;

fn cache_hit_report(p: &Proj) -> String {
    format!(
        "reactor compile

  status         cache hit (zero session cost)
  contract-set   {}
  sdk            reactor-rs/0.2.0
  model          compile-model
  state-dir      {}

  nodes          2
  edges          1
  entry points   (none)
  acyclic        yes

  total cost     fresh=0 reused=0
",
        p.fingerprint(),
        p.state().display()
    )
}

// ---------------------------------------------------------------------------------------------
// Compile, cache hit, --check, --force, staleness, keyless reload
// ---------------------------------------------------------------------------------------------

#[test]
fn compile_writes_the_cache_then_hits_checks_forces_and_reloads_keylessly() {
    let Some(shared) = shared_contracts() else {
        return;
    };
    let fake = FakeProvider::with_entries(script(Protocol::Chat));
    let p = Proj::new(&shared, "smallest-project", "openrouter", &fake.base_url());

    // 1. The fresh compile. stderr is not a terminal: one plain progress line per finished
    // session, with its tokens (issue 8 item 2).
    let o = p.run(&["compile"], WITH_KEY);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout, compiled_report(&p));
    let lines: Vec<&str> = o.stderr.lines().collect();
    let expected = [
        ("1/5 forme", 2300, 0),
        ("2/5 canonicalizer:competitor-monitor", 700, 1000),
        ("3/5 postcondition:competitor-monitor", 490, 1000),
        ("4/5 canonicalizer:weekly-brief", 380, 1000),
        ("5/5 postcondition:weekly-brief", 220, 1000),
    ];
    assert_eq!(lines.len(), expected.len(), "{}", o.stderr);
    for (line, (what, fresh, reused)) in lines.iter().zip(expected) {
        let (head, tail) = line
            .split_once(" done in ")
            .unwrap_or_else(|| panic!("{line}"));
        assert_eq!(head, format!("reactor: compile: session {what}"));
        assert!(
            tail.ends_with(&format!("s (fresh={fresh} reused={reused})")),
            "{line}"
        );
    }
    assert_no_key(&o, p.path());
    let requests = fake.requests();
    assert_eq!(requests.len(), 5);

    // The wire: Chat Completions with a bearer key and a json_schema response format.
    let schemas = [
        "forme_output",
        "canonicalizer_output",
        "postcondition_output",
        "canonicalizer_output",
        "postcondition_output",
    ];
    for ((r, purpose), schema) in requests.iter().zip(PURPOSES).zip(schemas) {
        assert_eq!(r.method, "POST");
        assert_eq!(r.path, "/v1/chat/completions");
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {CANARY}").as_str())
        );
        assert_eq!(r.header("x-api-key"), None);
        assert_eq!(r.header("anthropic-version"), None);
        assert_eq!(r.header("x-reactor-purpose"), Some(purpose));
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(r.header("user-agent"), Some("reactor/0.2.0"));
        assert_eq!(r.header("x-title"), Some("reactor"));
        let body = r.json();
        assert_eq!(body["model"], "compile-model");
        assert_eq!(body["stream"], false);
        assert!(body.get("temperature").is_none());
        assert!(body.get("reasoning_effort").is_none());
        assert!(body.get("tools").is_none());
        let rf = &body["response_format"];
        assert_eq!(rf["type"], "json_schema");
        assert_eq!(rf["json_schema"]["name"], schema);
        assert_eq!(rf["json_schema"]["strict"], true);
        assert_eq!(rf["json_schema"]["schema"]["type"], "object");
        assert_eq!(rf["json_schema"]["schema"]["additionalProperties"], false);
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[0]["role"], "system");
        assert_eq!(
            messages[0]["content"].as_str().unwrap(),
            format!(
                "{}\n\n---\n\n{}",
                reactor::agent::prompt::EMBEDDED_SYSTEM_PROMPT.trim_end(),
                reactor::compile::prompts::PREAMBLE.trim_end()
            )
        );
        assert_eq!(messages[1]["role"], "user");
        assert_eq!(
            messages[1]["content"],
            requests[0].json()["messages"][1]["content"]
        );
    }

    // The cache on disk: 2 nodes, 1 edge weekly-brief ⟵ competitor-monitor on funding.
    let topo: Value =
        serde_json::from_slice(&std::fs::read(p.state().join("compile/topology.json")).unwrap())
            .unwrap();
    let t = &topo["topology"];
    assert_eq!(
        t["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["node"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["competitor-monitor", "weekly-brief"]
    );
    assert_eq!(
        t["edges"],
        json!([{"subscriber": "weekly-brief", "producer": "competitor-monitor", "facet": "funding"}])
    );
    assert_eq!(t["acyclic"], true);
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(p.state().join("compile/manifest.json")).unwrap())
            .unwrap();
    assert_eq!(
        manifest["contract_set_fingerprint"],
        p.fingerprint().as_str()
    );
    assert_eq!(manifest["sdk_version"], "reactor-rs/0.2.0");
    assert_eq!(manifest["model"], "compile-model");
    assert_eq!(
        manifest["cost"],
        json!({"provider": "openrouter", "model": "compile-model",
               "tokens": {"fresh": 4090, "reused": 4000}, "surprise_cause": "self"})
    );
    assert_eq!(
        (manifest["nodes"].as_u64(), manifest["edges"].as_u64()),
        (Some(2), Some(1))
    );
    // The writer recorded its pid in .lock (and released it on exit).
    let lock = std::fs::read_to_string(p.state().join(".lock")).unwrap();
    assert!(
        lock.ends_with('\n') && lock.trim().parse::<u32>().is_ok(),
        "{lock:?}"
    );

    // 2. A second compile is a cache hit: no request, no lock. Hold the lock here to prove it.
    let compile_dir = snapshot(&p.state().join("compile"));
    let held = StateLock::acquire(&p.state()).expect("lock free after the compile exited");
    let o = p.run(&["compile"], WITH_KEY);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout, cache_hit_report(&p));
    let o = p.run(&["--json", "compile"], WITH_KEY);
    assert_eq!(o.code, 0);
    let j = o.json();
    assert_eq!(j["status"], "cache-hit");
    assert_eq!(j["cost"], json!({"fresh": 0, "reused": 0}));
    assert_eq!(j["step_costs"], json!([]));
    assert_eq!(j["diagnostics"], json!([]));
    assert_eq!(
        (j["nodes"].as_u64(), j["edges"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(j["entry_points"], json!([]));
    assert_eq!(j["acyclic"], true);
    assert!(j.get("reason").is_none() && j.get("cached").is_none());
    // --check: fresh → the cache-hit report, exit 0, no key needed.
    let o = p.run(&["compile", "--check"], &[]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout, cache_hit_report(&p));
    assert_eq!(o.stderr, "");
    // --force needs the lock: another writer holds it.
    let o = p.run(&["compile", "--force"], WITH_KEY);
    assert_eq!(o.code, 1);
    assert_eq!(
        o.stderr,
        format!(
            "reactor: error: state dir {} is in use by another writer (pid {})\nhint: stop that process first, or use `reactor trigger` to reach a running daemon\n",
            p.state().display(),
            std::process::id()
        )
    );
    drop(held);
    assert_eq!(
        fake.request_count(),
        5,
        "a cache hit and --check send nothing"
    );
    assert_eq!(snapshot(&p.state().join("compile")), compile_dir);

    // 3. --check never touches the network, even with an unreachable base_url; changing the
    //    compile model or any contract makes the cache stale.
    p.configure("openrouter", "http://127.0.0.1:9/v1", "compile-model", "");
    let o = p.run(&["compile", "--check"], WITH_KEY);
    assert_eq!(
        o.code, 0,
        "the base URL is not part of the key: {}",
        o.stdout
    );
    p.configure("openrouter", "http://127.0.0.1:9/v1", "another-model", "");
    let o = p.run(&["compile", "--check"], WITH_KEY);
    assert_eq!(o.code, 1);
    assert!(
        o.stdout
            .contains("  reason         compile model changed\n"),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains("  model          another-model\n"));
    assert_eq!(o.stderr, STALE_HINT);
    let o = p.run(&["--json", "compile", "--check"], &[]);
    assert_eq!(o.code, 1);
    let j = o.json();
    assert_eq!(j["status"], "stale");
    assert_eq!(j["reason"], "compile model changed");
    assert_eq!(j["model"], "another-model");
    assert_eq!(
        j["cached"],
        json!({"contract_set_fingerprint": p.fingerprint(), "sdk_version": "reactor-rs/0.2.0",
               "model": "compile-model"})
    );
    assert_eq!(
        (j["nodes"].as_u64(), j["edges"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(j["acyclic"], true);
    // A replaced system prompt changes the SDK version.
    p.configure("openrouter", "http://127.0.0.1:9/v1", "compile-model", "");
    let skill = p.path().join("SKILL.md");
    std::fs::write(&skill, "A replacement system prompt.\n").unwrap();
    let o = p.run(
        &["--json", "compile", "--check"],
        &[("REACTOR_SKILL_PATH", skill.to_str().unwrap())],
    );
    assert_eq!(o.code, 1);
    assert_eq!(o.json()["reason"], "reactor version changed");
    assert!(
        o.json()["sdk_version"]
            .as_str()
            .unwrap()
            .starts_with("reactor-rs/0.2.0+skill.")
    );
    // A deleted artifact.
    let monitor = format!(
        "compile/nodes/{}.json",
        reactor::format::address::hex(b"competitor-monitor")
    );
    let saved = std::fs::read(p.state().join(&monitor)).unwrap();
    std::fs::remove_file(p.state().join(&monitor)).unwrap();
    let o = p.run(&["--json", "compile", "--check"], &[]);
    assert_eq!(o.code, 1);
    assert_eq!(
        o.json()["reason"],
        format!("cache incomplete: {monitor} missing")
    );
    std::fs::write(p.state().join(&monitor), &saved).unwrap();
    // A contract edit.
    let original = std::fs::read(p.path().join("weekly-brief.prose.md")).unwrap();
    p.edit_brief();
    let o = p.run(&["compile", "--check"], &[]);
    assert_eq!(o.code, 1);
    assert!(
        o.stdout.contains("  reason         contract set changed\n"),
        "{}",
        o.stdout
    );
    std::fs::write(p.path().join("weekly-brief.prose.md"), &original).unwrap();
    assert_eq!(p.run(&["compile", "--check"], &[]).code, 0);
    assert_eq!(fake.request_count(), 5);

    // 4. --force recompiles (JSON report), even over a fresh cache.
    p.configure("openrouter", &fake.base_url(), "compile-model", "");
    push_all(&fake, script(Protocol::Chat));
    let o = p.run(&["--json", "compile", "--force"], WITH_KEY);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(fake.request_count(), 10);
    let j = o.json();
    assert_eq!(j["status"], "compiled");
    assert_eq!(j["contract_set_fingerprint"], p.fingerprint().as_str());
    assert_eq!(j["sdk_version"], "reactor-rs/0.2.0");
    assert_eq!(j["model"], "compile-model");
    assert_eq!(
        (j["nodes"].as_u64(), j["edges"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(j["entry_points"], json!([]));
    assert_eq!(j["acyclic"], true);
    assert_eq!(j["diagnostics"], json!([]));
    assert_eq!(j["lints"], json!([]));
    assert_eq!(j["cost"], json!({"fresh": 4090, "reused": 4000}));
    assert_eq!(
        j["step_costs"],
        json!([
            {"step": "forme", "fresh": 2300, "reused": 0},
            {"step": "canonicalizer", "node": "competitor-monitor", "fresh": 700, "reused": 1000},
            {"step": "postcondition", "node": "competitor-monitor", "fresh": 490, "reused": 1000},
            {"step": "canonicalizer", "node": "weekly-brief", "fresh": 380, "reused": 1000},
            {"step": "postcondition", "node": "weekly-brief", "fresh": 220, "reused": 1000}
        ])
    );
    assert_eq!(j["state_dir"], p.state().display().to_string());
    assert_no_key(&o, p.path());
    fake.finish();

    // 5. A fresh process reloads the cache keylessly with the fake stopped.
    let o = p.run(&["status"], &[]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.contains("  compiled       yes (fresh)\n"),
        "{}",
        o.stdout
    );
    let o = p.run(&["topology"], &[]);
    assert_eq!(o.code, 0);
    assert!(
        o.stdout
            .contains("  edges:\n    competitor-monitor.funding -> weekly-brief\n"),
        "{}",
        o.stdout
    );
    let o = p.run(&["compile"], &[]);
    assert_eq!(
        (o.code, o.stdout.clone()),
        (0, cache_hit_report(&p)),
        "{}",
        o.stderr
    );
    let o = p.run(&["--offline", "compile"], &[]);
    assert_eq!(o.code, 0, "a cache hit needs neither key nor network");
    // … and the loaded rules fingerprint a world-model (library level, same files).
    let loaded = load_ir(&p.state()).expect("keyless load of the CLI-written cache");
    let ir = loaded.ir.to_ir();
    let mounted = mount(&ir, IngressMode::Host).expect("mounts");
    assert_eq!(mounted.nodes, ["competitor-monitor", "weekly-brief"]);
    let rules = &ir.nodes["competitor-monitor"].rules;
    let truth = |v: Value| vec![("truth.json".to_string(), v.to_string().into_bytes())];
    let a = truth(json!({"fetched_at": "t1", "funding": [
        {"round": "Series  A", "amount": 5, "date": "2026-01-02", "request_id": "r1"},
        {"round": "seed", "amount": 1, "date": "2025-03-01"}]}));
    let b = truth(json!({"fetched_at": "t2", "funding": [
        {"round": "seed", "amount": 1, "date": "2025-03-01", "request_id": "r9"},
        {"round": "series a", "amount": 5, "date": "2026-01-02"}]}));
    let c = truth(json!({"funding": [
        {"round": "seed", "amount": 2, "date": "2025-03-01"},
        {"round": "series a", "amount": 5, "date": "2026-01-02"}]}));
    let fa = rules.fingerprint(&a, "sha256:a").unwrap().0;
    assert_eq!(fa, rules.fingerprint(&b, "sha256:b").unwrap().0);
    assert_ne!(
        fa.get("funding"),
        rules.fingerprint(&c, "sha256:c").unwrap().0.get("funding")
    );
}

#[test]
fn compile_over_anthropic_messages_uses_forced_submit_tools() {
    let Some(shared) = shared_contracts() else {
        return;
    };
    let fake = FakeProvider::with_entries(script(Protocol::Messages));
    let p = Proj::new(&shared, "smallest-project", "anthropic", &fake.base_url());
    let o = p.run(&["compile"], WITH_KEY);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout
            .contains("  status         compiled (sessions ran)\n")
    );
    // Messages: fresh = input + cache writes + output, reused = cache reads.
    assert!(
        o.stdout
            .contains("    canonicalizer:competitor-monitor fresh=1700 reused=1000\n"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .contains("  total cost     fresh=8090 reused=4000\n")
    );
    assert_no_key(&o, p.path());
    let requests = fake.requests();
    fake.finish();
    let schemas = [
        "forme_output",
        "canonicalizer_output",
        "postcondition_output",
        "canonicalizer_output",
        "postcondition_output",
    ];
    assert_eq!(requests.len(), 5);
    for ((r, purpose), schema) in requests.iter().zip(PURPOSES).zip(schemas) {
        assert_eq!(r.method, "POST");
        assert_eq!(r.path, "/v1/messages");
        assert_eq!(r.header("x-api-key"), Some(CANARY));
        assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(r.header("authorization"), None);
        assert_eq!(r.header("x-title"), None);
        assert_eq!(r.header("x-reactor-purpose"), Some(purpose));
        let body = r.json();
        assert_eq!(body["model"], "compile-model");
        assert_eq!(body["max_tokens"], 16384);
        assert!(body.get("response_format").is_none());
        assert!(body.get("stream").is_none());
        let tool = format!("submit_{schema}");
        assert_eq!(body["tools"].as_array().unwrap().len(), 1);
        assert_eq!(body["tools"][0]["name"], tool.as_str());
        assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
        assert_eq!(body["tool_choice"], json!({"type": "tool", "name": tool}));
        assert_eq!(
            body["system"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert_eq!(
            body["system"][1]["text"],
            reactor::compile::prompts::PREAMBLE.trim_end()
        );
        let content = body["messages"][0]["content"].as_array().unwrap();
        assert_eq!(content.len(), 2);
    }
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(p.state().join("compile/manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["cost"]["provider"], "anthropic");
}

// ---------------------------------------------------------------------------------------------
// Several reactors
// ---------------------------------------------------------------------------------------------

#[test]
fn several_reactors_report_each_and_exit_with_the_worst() {
    let Some(shared) = shared_contracts() else {
        return;
    };
    let fake = FakeProvider::with_entries(script(Protocol::Chat));
    let d = tempfile::tempdir().unwrap();
    for sub in ["alpha", "beta"] {
        std::fs::create_dir(d.path().join(sub)).unwrap();
    }
    for e in std::fs::read_dir(shared.join("smallest-project")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), d.path().join("alpha").join(e.file_name())).unwrap();
    }
    std::fs::write(
        d.path().join("reactor.yml"),
        format!(
            "model:\n  provider: openrouter\n  base_url: {}\n  api_key_env: FAKE_KEY\n  render_model: r\n  compile_model: compile-model\nreactors:\n  - name: alpha\n    project: ./alpha\n  - name: beta\n    project: ./beta\n",
            fake.base_url()
        ),
    )
    .unwrap();
    let project = d.path().display().to_string();
    let run = |args: &[&str]| {
        let mut all = vec!["--project", project.as_str()];
        all.extend_from_slice(args);
        reactor(d.path(), &all, WITH_KEY)
    };
    // beta has no contracts: alpha compiles, beta fails, exit 1.
    let o = run(&["--quiet", "compile"]);
    assert_eq!(o.code, 1);
    assert!(
        o.stdout.starts_with(
            "reactor compile\n\n  reactor        alpha\n  status         compiled (sessions ran)\n"
        ),
        "{}",
        o.stdout
    );
    assert_eq!(
        o.stderr,
        format!(
            "reactor: error: reactor 'beta': no .prose.md contracts found under {}\n",
            d.path().join("beta").display()
        )
    );
    assert_eq!(fake.request_count(), 5);
    // Give beta the same contracts: --check reports alpha fresh and beta stale (worst: 1).
    for e in std::fs::read_dir(shared.join("smallest-project")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), d.path().join("beta").join(e.file_name())).unwrap();
    }
    let o = run(&["--json", "compile", "--check"]);
    assert_eq!(o.code, 1);
    let j = o.json();
    let reports = j["reactors"].as_array().unwrap();
    assert_eq!(reports.len(), 2);
    assert_eq!(
        (
            reports[0]["reactor"].as_str(),
            reports[0]["status"].as_str()
        ),
        (Some("alpha"), Some("cache-hit"))
    );
    assert_eq!(
        (
            reports[1]["reactor"].as_str(),
            reports[1]["status"].as_str()
        ),
        (Some("beta"), Some("stale"))
    );
    assert_eq!(
        reports[1]["state_dir"],
        d.path().join(".reactor/beta").display().to_string()
    );
    // --reactor picks one.
    let o = run(&["--reactor", "alpha", "compile", "--check"]);
    assert_eq!(o.code, 0);
    assert!(
        o.stdout
            .contains("  reactor        alpha\n  status         cache hit (zero session cost)\n")
    );
    // Compile beta too: both reports, exit 0.
    push_all(&fake, script(Protocol::Chat));
    let o = run(&["compile"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout.matches("reactor compile\n").count(), 2);
    assert!(
        o.stdout
            .contains("  reactor        beta\n  status         compiled (sessions ran)\n")
    );
    assert_eq!(fake.request_count(), 10);
    fake.finish();
}
