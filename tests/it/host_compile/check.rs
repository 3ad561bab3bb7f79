//! Every shared project loads; `init` then `compile --check`; diagnostics and lints.

use super::*;

// ---------------------------------------------------------------------------------------------
// Loading every shared project; init then --check
// ---------------------------------------------------------------------------------------------

#[test]
fn every_shared_project_loads_and_checks_stale_without_a_key() {
    let Some(shared) = shared_contracts() else {
        return;
    };
    let mut seen = 0;
    for e in std::fs::read_dir(&shared).unwrap() {
        let e = e.unwrap();
        if !e.file_type().unwrap().is_dir() {
            continue;
        }
        seen += 1;
        let name = e.file_name().to_string_lossy().into_owned();
        // A copy of every file (contracts and the project's own reactor.yml).
        let dir = tempfile::tempdir().unwrap();
        for f in std::fs::read_dir(e.path()).unwrap() {
            let f = f.unwrap();
            std::fs::copy(f.path(), dir.path().join(f.file_name())).unwrap();
        }
        let project = dir.path().display().to_string();
        let o = reactor(
            dir.path(),
            &["--project", &project, "compile", "--check"],
            &[],
        );
        assert_eq!(o.code, 1, "{name}: {}", o.stderr);
        assert!(
            o.stdout.contains(
                "  status         STALE (re-compile needed)\n  reason         no compile cache\n"
            ),
            "{name}: {}",
            o.stdout
        );
        assert_eq!(o.stderr, STALE_HINT, "{name}");
        let o = reactor(
            dir.path(),
            &["--project", &project, "--json", "compile", "--check"],
            &[],
        );
        assert_eq!(o.code, 1, "{name}");
        let j = o.json();
        assert_eq!(j["status"], "stale", "{name}");
        assert_eq!(
            j["contract_set_fingerprint"],
            ContractSet::load(dir.path())
                .unwrap()
                .fingerprint()
                .as_str(),
            "{name}"
        );
        let expected_model = match name.as_str() {
            "agent-observatory" => "gpt-5.4",
            _ => "google/gemini-3.5-flash",
        };
        assert_eq!(j["model"], expected_model, "{name}");
        assert_eq!(j["cached"], Value::Null);
        assert!(o.stderr.is_empty(), "{name}: --json omits the hint");
        // --check creates nothing, not even the state directory.
        assert!(!dir.path().join(".reactor").exists(), "{name}");
    }
    assert!(seen >= 4, "only {seen} shared projects");
}

#[test]
fn init_then_check_is_stale_with_the_hint() {
    let d = tempfile::tempdir().unwrap();
    let o = reactor(d.path(), &["init", "demo"], &[]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let o = reactor(d.path(), &["--project", "demo", "compile", "--check"], &[]);
    assert_eq!(o.code, 1);
    let demo = d.path().join("demo");
    assert_eq!(
        o.stdout,
        format!(
            "reactor compile

  status         STALE (re-compile needed)
  reason         no compile cache
  contract-set   {}
  sdk            reactor-rs/0.2.0
  model          google/gemini-3.5-flash
  state-dir      {}

  total cost     fresh=0 reused=0
",
            ContractSet::load(&demo).unwrap().fingerprint(),
            demo.join(".reactor").display()
        )
    );
    assert_eq!(o.stderr, STALE_HINT);
    // Without --check the same stale project needs the key (none here).
    let o = reactor(d.path(), &["--project", "demo", "compile"], &[]);
    assert_eq!(o.code, 1);
    assert_eq!(
        o.stderr,
        format!(
            "reactor: error: the configured 'openrouter' provider needs OPENROUTER_API_KEY, but it is not set in the environment or in {}\nhint: set OPENROUTER_API_KEY, or change model.provider / model.api_key_env in reactor.yml\nhint: run `reactor doctor` to check the environment\n",
            demo.join(".env").display()
        )
    );
    // Offline: the spec'd refusal, and nothing is created.
    let o = reactor(
        d.path(),
        &["--project", "demo", "--offline", "compile"],
        &[],
    );
    assert_eq!(o.code, 1);
    assert_eq!(
        o.stderr,
        "reactor: error: the compile cache is stale (no compile cache) and offline mode forbids model calls\n"
    );
    assert!(!demo.join(".reactor").exists());
    // --check with --force is a usage error.
    let o = reactor(
        d.path(),
        &[
            "--project",
            "demo",
            "--json",
            "compile",
            "--check",
            "--force",
        ],
        &[],
    );
    assert_eq!(o.code, 2);
    assert_eq!(
        o.json()["message"],
        "--check and --force cannot be used together; hint: try 'reactor compile --help'"
    );
    // No contracts.
    let empty = tempfile::tempdir().unwrap();
    let o = reactor(empty.path(), &["compile", "--check"], &[]);
    assert_eq!(o.code, 1);
    assert_eq!(
        o.stderr,
        format!(
            "reactor: error: no .prose.md contracts found under {}\n",
            reactor::host::project::absolute(empty.path()).display()
        )
    );
}

#[test]
fn diagnostics_and_lints_are_reported() {
    let Some(shared) = shared_contracts() else {
        return;
    };
    // Forme finds no producer for the brief's need (unsatisfied: no edge), and the monitor's
    // postcondition session compiles nothing for its one Postcondition: sentence (a lint).
    let mut forme = forme_answer();
    forme["matches"] = json!([]);
    let fake = FakeProvider::with_entries([
        fake::chat_json(&forme).when_purpose("compile:forme"),
        fake::chat_json(&monitor_canonicalizer())
            .when_purpose("compile:canonicalizer:competitor-monitor"),
        fake::chat_json(&json!({"postconditions": []}))
            .when_purpose("compile:postcondition:competitor-monitor"),
        fake::chat_json(&brief_canonicalizer()).when_purpose("compile:canonicalizer:weekly-brief"),
        fake::chat_json(&json!({"postconditions": []}))
            .when_purpose("compile:postcondition:weekly-brief"),
    ]);
    let p = Proj::new(&shared, "smallest-project", "openrouter", &fake.base_url());
    let o = p.run(&["compile"], WITH_KEY);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.contains(
            "  edges          0\n  entry points   (none)\n  acyclic        yes\n\n  Forme diagnostics:\n    - unsatisfied (weekly-brief: \"a current view of competitor fundraising activity\")\n\n  lints:\n    - competitor-monitor: 0 postcondition entries compiled for 1 Postcondition: sentence in Maintains\n\n  cost (tokens, surprise_cause: self):\n"
        ),
        "{}",
        o.stdout
    );
    // A second compile is a hit: diagnostics are not persisted, so none are shown.
    let o = p.run(&["--json", "compile"], WITH_KEY);
    assert_eq!(o.code, 0);
    let j = o.json();
    assert_eq!(j["status"], "cache-hit");
    assert_eq!(j["diagnostics"], json!([]));
    assert_eq!(j["lints"], json!([]));
    assert_eq!(j["edges"], 0);
    // The JSON of the compiled report, through --force.
    push_all(
        &fake,
        vec![
            fake::chat_json(&forme).when_purpose("compile:forme"),
            fake::chat_json(&monitor_canonicalizer())
                .when_purpose("compile:canonicalizer:competitor-monitor"),
            fake::chat_json(&json!({"postconditions": []}))
                .when_purpose("compile:postcondition:competitor-monitor"),
            fake::chat_json(&brief_canonicalizer())
                .when_purpose("compile:canonicalizer:weekly-brief"),
            fake::chat_json(&json!({"postconditions": []}))
                .when_purpose("compile:postcondition:weekly-brief"),
        ],
    );
    let j = p.run(&["--json", "compile", "--force"], WITH_KEY).json();
    assert_eq!(
        j["diagnostics"],
        json!([{"kind": "unsatisfied", "subscriber": "weekly-brief",
                "requirement": "a current view of competitor fundraising activity"}])
    );
    assert_eq!(
        j["lints"],
        json!([{"node": "competitor-monitor", "code": "postcondition-count",
                "message": "0 postcondition entries compiled for 1 Postcondition: sentence in Maintains"}])
    );
    fake.finish();
}
