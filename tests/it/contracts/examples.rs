//! The example projects under `../shared/contracts` and the compat contract fingerprints.

use super::*;

/// `../shared` next to the crate, or `None` (with a loud message) when it is absent. With
/// `REACTOR_REQUIRE_COMPAT=1` a missing corpus fails the test instead.
fn shared_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared");
    if dir.join("contracts").is_dir() {
        return Some(dir);
    }
    if std::env::var("REACTOR_REQUIRE_COMPAT").as_deref() == Ok("1") {
        panic!(
            "REACTOR_REQUIRE_COMPAT=1 but {} has no contracts/ directory",
            dir.display()
        );
    }
    eprintln!(
        "\n!!! SKIPPED: {} is missing; the example-contract and compat checks did not run \
         (set REACTOR_REQUIRE_COMPAT=1 to make this a failure) !!!\n",
        dir.display()
    );
    None
}

// ---------------------------------------------------------------------------------------------
// Example projects and compat

#[test]
fn every_example_project_loads() {
    let Some(shared) = shared_dir() else { return };
    let root = shared.join("contracts");
    let mut projects: Vec<PathBuf> = fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    projects.sort();
    assert!(projects.len() >= 4, "expected the four example projects");
    for project in &projects {
        let set = load(project).unwrap_or_else(|e| panic!("{}: {e}", project.display()));
        assert!(!set.is_empty(), "{} has no contracts", project.display());
        for c in set.contracts() {
            assert!(c.is_node(), "{}: {}", project.display(), c.id);
            assert!(c.section("Maintains").is_some(), "{}", c.id);
            assert!(c.section("Continuity").is_some(), "{}", c.id);
            assert!(c.path.ends_with(".prose.md"));
        }
        // Evidence and views render for every project.
        let evidence = render_evidence(&set);
        for c in set.contracts() {
            assert!(evidence.contains(&format!("\n## Contract {}\n", c.id)));
            assert!(!c.view().is_empty());
        }
    }

    let by_name = |name: &str| load(&root.join(name)).unwrap();
    let smallest = by_name("smallest-project");
    let ids: Vec<&str> = smallest.contracts().iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["competitor-monitor", "weekly-brief"]);
    let monitor = smallest.get("competitor-monitor").unwrap();
    assert_eq!(monitor.facet_names(), ["funding"]);
    assert_eq!(
        monitor.postconditions(),
        ["Postcondition: every funding event cites a corroborating source."]
    );
    assert_eq!(
        monitor.wake_intent(),
        Some(reactor::format::receipt::WakeSource::SelfWake)
    );
    assert_eq!(
        smallest.get("weekly-brief").unwrap().facet_names(),
        ["brief"]
    );

    let quickstart = by_name("quickstart");
    let inbox = quickstart.get("inbox").unwrap();
    assert_eq!(inbox.kind, Kind::Gateway);
    assert_eq!(inbox.facet_names(), ["items"]);
    assert_eq!(quickstart.get("digest").unwrap().kind, Kind::Responsibility);

    let gw = by_name("gateway-connector");
    assert_eq!(gw.len(), 2);
    assert_eq!(gw.nodes().filter(|c| c.kind == Kind::Gateway).count(), 1);

    let obs = by_name("agent-observatory");
    assert_eq!(obs.len(), 7);
    assert_eq!(obs.nodes().filter(|c| c.kind == Kind::Gateway).count(), 1);
    let sessions = obs.get("claude-sessions").unwrap();
    assert_eq!(sessions.facet_names(), ["sessions"]);
    // `### Invariants` is kept (evidence) but not shown to renders.
    assert!(sessions.section("Invariants").is_some());
    assert!(
        !sessions
            .view()
            .iter()
            .any(|(h, _)| h.starts_with("Invariants"))
    );
}

#[test]
fn agent_observatory_contract_fingerprints_match_the_compat_topology() {
    let Some(shared) = shared_dir() else { return };
    let topo_path = shared.join("compat/agent-observatory-cli/compile/topology.json");
    let bytes = fs::read(&topo_path).unwrap();
    let topo = json::parse(&bytes).unwrap();
    let recorded = topo
        .get("contract_fingerprints")
        .and_then(|v| v.as_object())
        .expect("contract_fingerprints object");
    let mut want: Vec<(String, String)> = recorded
        .iter()
        .map(|(k, v)| (k.to_string(), v.as_str().unwrap().to_owned()))
        .collect();
    want.sort();
    assert_eq!(want.len(), 7);

    let set = load(&shared.join("contracts/agent-observatory")).unwrap();
    let mut got = set.contract_fingerprints();
    got.sort();
    assert_eq!(got, want);

    // Without the eighth `criteria:` line the fingerprints would not match.
    let c = set.get("dashboard").unwrap();
    let without = c.fingerprint_text().replace("\ncriteria:", "");
    assert_ne!(
        reactor::format::address::address(without.as_bytes()),
        c.fingerprint()
    );
}

#[test]
fn agent_observatory_set_fingerprint_ignores_the_directory_location() {
    let Some(shared) = shared_dir() else { return };
    let src = shared.join("contracts/agent-observatory");
    let a = load(&src).unwrap();
    // Copy into a nested temp directory (never into the repository).
    let t = tempfile::tempdir().unwrap();
    let dst = t.path().join("elsewhere/deeper");
    for e in fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_owned();
        write(&dst, &format!("renamed-dir/{name}"), fs::read(&p).unwrap());
    }
    let b = load(&dst).unwrap();
    assert_eq!(a.fingerprint(), b.fingerprint());
    assert_eq!(a.contract_fingerprints(), b.contract_fingerprints());
    assert_eq!(render_evidence(&a), render_evidence(&b));
    assert_ne!(a.contracts()[0].path, b.contracts()[0].path);
}
