//! `reactor.yml` errors naming key and line, every example's `reactor.yml`, several reactors,
//! and `init`.

use super::*;

// ---------------------------------------------------------------------------------------------
// reactor.yml
// ---------------------------------------------------------------------------------------------

#[test]
fn config_errors_exit_1_naming_key_and_line() {
    let d = tempfile::tempdir().unwrap();
    let cases = [
        (
            "state:\n  dir: ./.reactor\nmodel:\n  provider: openrouter\n  temprature: 0\n",
            "reactor: error: reactor.yml:5:3: model.temprature: unknown key (expected one of: provider, render_model, compile_model, temperature, reasoning_effort, max_turns, base_url, api_key_env, max_tokens, timeout, connect_timeout, parallel_renders)\n",
        ),
        (
            "sandbox:\n  mode: dokcer\n",
            "reactor: error: reactor.yml:2:9: sandbox.mode: invalid value 'dokcer' (expected none, docker or unix-local)\n",
        ),
        (
            "model:\n  max_turns: 0\n",
            "reactor: error: reactor.yml:2:14: model.max_turns: invalid value 0 (expected an integer from 1 to 10000)\n",
        ),
        (
            "telemetry:\n  enabled: yes\n",
            "reactor: error: reactor.yml:2:12: telemetry.enabled: expected true or false, got a string ('yes')\n",
        ),
        (
            "gateways:\n  - node: inbox\n    connector: {type: file, url: \"http://x\"}\n",
            "reactor: error: reactor.yml:3:29: gateways[0].connector.url: does not belong to a 'file' connector (expected one of: type, id_field, dir)\n",
        ),
        ("model: [\n", "reactor: error: reactor.yml:1:"),
    ];
    for (yml, expected) in cases {
        std::fs::write(d.path().join("reactor.yml"), yml).unwrap();
        for verb in [
            &["status"][..],
            &["logs"],
            &["receipts", "verify"],
            &["topology"],
        ] {
            let o = reactor_in(d.path(), verb);
            assert_eq!(o.code, 1, "{yml:?} {verb:?}: {}", o.stderr);
            assert!(o.stderr.starts_with(expected), "{yml:?}: {}", o.stderr);
            assert!(o.stderr.contains("hint: fix "), "{}", o.stderr);
            assert!(o.stdout.is_empty());
        }
        let o = reactor_in(d.path(), &["status", "--json"]);
        assert_eq!(o.code, 1);
        let v = o.json();
        assert_eq!(v["ok"], false);
        assert!(
            v["message"]
                .as_str()
                .unwrap()
                .starts_with(expected.trim_start_matches("reactor: error: ").trim_end())
        );
    }
    assert!(!d.path().join(".reactor").exists());
}

#[test]
fn every_example_reactor_yml_is_accepted() {
    let dir = crate::support::shared_dir().join("contracts");
    if !dir.is_dir() {
        eprintln!("SKIPPED: {} is missing", dir.display());
        return;
    }
    let mut seen = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if !p.join("reactor.yml").is_file() {
            continue;
        }
        seen += 1;
        let st = tempfile::tempdir().unwrap();
        std::fs::create_dir(st.path().join("s")).unwrap();
        std::fs::write(st.path().join("s/receipts.json"), "[]\n").unwrap();
        let o = reactor(&[
            "status",
            "--project",
            p.to_str().unwrap(),
            "--state-dir",
            st.path().join("s").to_str().unwrap(),
        ]);
        assert_eq!(o.code, 0, "{}: {}", p.display(), o.stderr);
        assert!(o.stdout.contains("  receipts       0\n"));
    }
    assert_eq!(seen, 3);
}

#[test]
fn several_reactors_need_a_name() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("reactor.yml"),
        "reactors:\n  - name: alpha\n  - name: beta\n    state_dir: ./state/beta\n",
    )
    .unwrap();
    let o = reactor_in(d.path(), &["status"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.starts_with("reactor: error: 2 reactors are configured (alpha, beta); choose one with --reactor <name>\n"), "{}", o.stderr);
    let o = reactor_in(d.path(), &["status", "--reactor", "beta"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("  reactor        beta\n"));
    let state = std::fs::canonicalize(d.path()).unwrap().join("state/beta");
    assert!(
        o.stdout
            .contains(&format!("  state dir      {}\n", state.display()))
            || o.stdout.contains(&format!(
                "  state dir      {}\n",
                d.path().join("state/beta").display()
            )),
        "{}",
        o.stdout
    );
    let o = reactor_in(d.path(), &["--reactor=gamma", "logs"]);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr
            .starts_with("reactor: error: unknown reactor 'gamma' (configured: alpha, beta)\n")
    );
}

// ---------------------------------------------------------------------------------------------
// init
// ---------------------------------------------------------------------------------------------

#[test]
fn init_scaffolds_refuses_and_forces() {
    let d = tempfile::tempdir().unwrap();
    let o = reactor_in(d.path(), &["init", "demo"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let demo = d.path().join("demo");
    let shown = o.stdout.lines().nth(2).unwrap().trim_start().to_string();
    assert!(
        shown.starts_with("scaffolded into /") && shown.ends_with("/demo"),
        "{}",
        o.stdout
    );
    assert!(o.stdout.starts_with("reactor init\n\n  scaffolded into "));
    assert!(o.stdout.ends_with(
        "    + reactor.yml\n    + inbox.prose.md\n    + digest.prose.md\n    + .gitignore\n    + README.md\n\n  Next:\n    export OPENROUTER_API_KEY=...\n    reactor compile\n    reactor serve --http 8080\n"
    ), "{}", o.stdout);
    let set = ContractSet::load(&demo).unwrap();
    assert_eq!(set.len(), 2);
    assert_eq!(set.get("inbox").unwrap().facet_names(), vec!["items"]);
    assert_eq!(set.get("digest").unwrap().facet_names(), vec!["digest"]);
    assert!(
        std::fs::read_to_string(demo.join(".gitignore"))
            .unwrap()
            .contains(".reactor/")
    );
    // The scaffold is a working project for the offline verbs.
    let o = reactor_in(&demo, &["status"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(!demo.join(".reactor").exists());

    // Again: refused, scaffold files named.
    let before = snapshot(&demo);
    let o = reactor_in(d.path(), &["init", "demo"]);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr.starts_with("reactor: error: refused: "),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("/demo already contains scaffold files: reactor.yml, inbox.prose.md, digest.prose.md, .gitignore, README.md\n"), "{}", o.stderr);
    assert!(o.stderr.contains("hint: pass --force"));
    let o = reactor_in(d.path(), &["init", "demo", "--json"]);
    assert_eq!(o.code, 1);
    let v = o.json();
    assert_eq!(v["status"], "exists");
    assert_eq!(v["written"], serde_json::json!([]));
    assert_eq!(v["skipped"].as_array().unwrap().len(), 5);
    assert_eq!(snapshot(&demo), before);

    // A non-empty directory without scaffold files.
    let other = d.path().join("other");
    std::fs::create_dir_all(other.join("src")).unwrap();
    std::fs::write(other.join("notes.txt"), "keep me").unwrap();
    let o = reactor_in(&other, &["init"]);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr.contains("/other is not empty: notes.txt, src\n"),
        "{}",
        o.stderr
    );
    let o = reactor_in(&other, &["--json", "init", "."]);
    let v = o.json();
    assert_eq!(v["status"], "non-empty");
    assert_eq!(
        v["existingEntries"],
        serde_json::json!(["notes.txt", "src"])
    );
    // --force writes into it and deletes nothing.
    std::fs::write(other.join("reactor.yml"), "# old\n").unwrap();
    let o = reactor_in(&other, &["init", "--force", "--json"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v = o.json();
    assert_eq!(v["status"], "scaffolded");
    assert_eq!(
        v["written"],
        serde_json::json!([
            "reactor.yml",
            "inbox.prose.md",
            "digest.prose.md",
            ".gitignore",
            "README.md"
        ])
    );
    assert_eq!(
        std::fs::read_to_string(other.join("notes.txt")).unwrap(),
        "keep me"
    );
    assert!(other.join("src").is_dir());
    assert!(
        std::fs::read_to_string(other.join("reactor.yml"))
            .unwrap()
            .contains("gateways:")
    );
    // A file in the way.
    std::fs::write(d.path().join("plain"), "x").unwrap();
    let o = reactor_in(d.path(), &["init", "plain"]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("exists and is not a directory"));
}
