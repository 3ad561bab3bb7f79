//! Integration tests of the contract loader (RUNTIME.md §2): the example projects under
//! `../shared/contracts`, the compat contract fingerprints, fingerprint stability and movement,
//! every load error, and hostile input.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use proptest::prelude::*;
use reactor::contract::{
    BadFacetReason, BadIdReason, Contract, ContractError, ContractSet, Kind, MAX_CONTRACT_BYTES,
    MAX_ENTRIES, parse_contract, render_evidence,
};
use reactor::format::json;

// ---------------------------------------------------------------------------------------------
// Helpers

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

fn write(root: &Path, rel: &str, text: impl AsRef<[u8]>) {
    let p = root.join(rel);
    if let Some(parent) = p.parent() {
        fs::create_dir_all(parent).unwrap();
    }
    fs::write(p, text).unwrap();
}

fn load(root: &Path) -> Result<ContractSet, ContractError> {
    ContractSet::load(root)
}

fn parse(text: &str) -> Contract {
    parse_contract(text.as_bytes(), "node.prose.md").unwrap()
}

/// A node contract with every prompt-relevant section, plus a preamble and an unknown key.
const BASE: &str = "---
id: n1
name: Node One
kind: responsibility
version: 1
---

# Node One

An introduction that reaches no prompt.

### Goal
Keep the thing true.

### Context
Some background.

### Requires
- the upstream view

### Maintains
The maintained truth. Postcondition: it is non-empty.

#### items
The item set (unordered).

### Continuity
- input-driven: re-render when the upstream view moves.

### Execution
Read, then write.

### Criteria
Legacy criteria prose.

### Tools
A tool list.
";

/// A second, unchanging contract so that set fingerprints cover more than one image.
const OTHER: &str = "---\nname: other\nkind: pattern\n---\n### Goal\nReusable prose.\n";

/// `(node fingerprint, set fingerprint)` of BASE-with-an-edit plus OTHER.
fn fingerprints(node_text: &str, path: &str) -> (String, String) {
    let node = parse_contract(node_text.as_bytes(), path).unwrap();
    let other = parse_contract(OTHER.as_bytes(), "other.prose.md").unwrap();
    let fp = node.fingerprint();
    let set = ContractSet::from_contracts(vec![node, other]).unwrap();
    (fp, set.fingerprint())
}

/// Applies `from → to` to BASE and checks which fingerprints move.
fn assert_moves(from: &str, to: &str, node_moves: bool, set_moves: bool) {
    assert!(BASE.contains(from), "edit anchor {from:?} not in BASE");
    let edited = BASE.replacen(from, to, 1);
    assert_ne!(edited, BASE);
    let (n0, s0) = fingerprints(BASE, "node.prose.md");
    let (n1, s1) = fingerprints(&edited, "node.prose.md");
    assert_eq!(
        n0 != n1,
        node_moves,
        "node fingerprint, edit {from:?} → {to:?}"
    );
    assert_eq!(
        s0 != s1,
        set_moves,
        "set fingerprint, edit {from:?} → {to:?}"
    );
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

// ---------------------------------------------------------------------------------------------
// Stability across processes

/// The probe project: several contracts whose parsing touches every code path that could hide
/// per-process state (hash maps for duplicate detection, sorting, canonical JSON).
fn write_probe_project(root: &Path) {
    write(root, "node.prose.md", BASE);
    write(root, "lib/other.prose.md", OTHER);
    write(
        root,
        "z/ünïcode.prose.md",
        "---\nname: \"ünïcode \u{1F600}\"\n---\n### Maintains\nm\n#### b\n#### a\n#### \u{E000}\n",
    );
    write(
        root,
        "gw.prose.md",
        "---\nkind: gateway\n---\n### Maintains\nall\n",
    );
}

fn probe_lines(dir: &Path) -> Vec<String> {
    let set = load(dir).unwrap();
    let mut lines: Vec<String> = set
        .contracts()
        .iter()
        .map(|c| format!("PROBE {} {}", c.id, c.fingerprint()))
        .collect();
    lines.push(format!("PROBE-SET {}", set.fingerprint()));
    lines.push(format!(
        "PROBE-EVIDENCE {}",
        reactor::format::address::address(render_evidence(&set).as_bytes())
    ));
    lines
}

/// Run only as a child of `fingerprints_are_stable_across_processes`.
#[test]
#[ignore = "child probe of fingerprints_are_stable_across_processes"]
fn fingerprint_probe_child() {
    let dir = std::env::var("REACTOR_CONTRACT_PROBE_DIR").expect("probe dir");
    for line in probe_lines(Path::new(&dir)) {
        println!("{line}");
    }
}

#[test]
fn fingerprints_are_stable_across_processes() {
    let t = tempfile::tempdir().unwrap();
    write_probe_project(t.path());
    let mine = probe_lines(t.path());
    assert_eq!(mine.len(), 4 + 2);

    let exe = std::env::current_exe().unwrap();
    let mut children = Vec::new();
    for _ in 0..2 {
        let out = Command::new(&exe)
            .args([
                "contracts::fingerprint_probe_child",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("REACTOR_CONTRACT_PROBE_DIR", t.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<String> = stdout
            .lines()
            // The harness may print `test … ... ` on the same line as the first probe line.
            .filter_map(|l| l.find("PROBE").map(|at| l[at..].to_owned()))
            .collect();
        children.push(lines);
    }
    assert_eq!(children[0], mine);
    assert_eq!(children[1], mine);
}

// ---------------------------------------------------------------------------------------------
// Fingerprint movement: node fingerprint (§2.7) and set fingerprint (§2.8)

#[test]
fn requires_edit_moves_both() {
    assert_moves("- the upstream view", "- the upstream views", true, true);
}

#[test]
fn maintains_edit_moves_both() {
    assert_moves(
        "The maintained truth.",
        "The maintained truths.",
        true,
        true,
    );
}

#[test]
fn facet_edit_inside_maintains_moves_both() {
    assert_moves(
        "The item set (unordered).",
        "The item set (ordered).",
        true,
        true,
    );
    assert_moves("#### items", "#### entries", true, true);
}

#[test]
fn continuity_edit_moves_both() {
    assert_moves(
        "input-driven: re-render",
        "self-driven: re-render",
        true,
        true,
    );
}

#[test]
fn execution_edit_moves_both() {
    assert_moves("Read, then write.", "Write, then read.", true, true);
}

#[test]
fn criteria_edit_moves_both() {
    assert_moves(
        "Legacy criteria prose.",
        "Other criteria prose.",
        true,
        true,
    );
}

#[test]
fn adding_a_fingerprinted_section_moves_both() {
    let text = BASE.replacen("### Execution\nRead, then write.\n\n", "", 1);
    let (n0, s0) = fingerprints(&text, "node.prose.md");
    let (n1, s1) = fingerprints(BASE, "node.prose.md");
    assert_ne!(n0, n1);
    assert_ne!(s0, s1);
}

#[test]
fn goal_edit_moves_only_the_set() {
    assert_moves("Keep the thing true.", "Keep the thing truer.", false, true);
}

#[test]
fn context_edit_moves_only_the_set() {
    assert_moves("Some background.", "More background.", false, true);
}

#[test]
fn any_other_section_edit_moves_only_the_set() {
    assert_moves("A tool list.", "A longer tool list.", false, true);
    assert_moves("### Tools\n", "### Schedule\n", false, true);
    assert_moves(
        "### Tools\nA tool list.\n",
        "### Tools\nA tool list.\n\n### Invariants\ni\n",
        false,
        true,
    );
}

#[test]
fn heading_text_edits_move_only_the_set() {
    // The node fingerprint covers bodies; the set image records full headings.
    assert_moves("### Maintains\n", "### Maintains (facets)\n", false, true);
    assert_moves("### Goal\n", "### goal\n", false, true);
}

#[test]
fn section_order_moves_only_the_set() {
    let reordered = BASE.replacen(
        "### Goal\nKeep the thing true.\n\n### Context\nSome background.\n",
        "### Context\nSome background.\n\n### Goal\nKeep the thing true.\n",
        1,
    );
    let (n0, s0) = fingerprints(BASE, "node.prose.md");
    let (n1, s1) = fingerprints(&reordered, "node.prose.md");
    assert_eq!(n0, n1);
    assert_ne!(s0, s1);
}

#[test]
fn name_kind_and_id_edits_move_both() {
    assert_moves("name: Node One", "name: Node Uno", true, true);
    assert_moves("kind: responsibility", "kind: gateway", true, true);
    assert_moves("id: n1", "id: n2", true, true);
    // Removing the `kind:` line keeps the default kind: nothing moves.
    assert_moves("kind: responsibility\n", "", false, false);
}

#[test]
fn preamble_unknown_front_matter_and_whitespace_move_nothing() {
    assert_moves(
        "An introduction that reaches no prompt.",
        "Another introduction.",
        false,
        false,
    );
    assert_moves("# Node One\n", "# Renamed title\n", false, false);
    assert_moves("version: 1", "version: 2", false, false);
    assert_moves("version: 1\n", "owner: someone\nversion: 1\n", false, false);
    assert_moves("### Goal\nKeep", "### Goal\n\n\n   Keep", false, false);
    assert_moves(
        "Read, then write.\n",
        "Read, then write.   \n\n\n",
        false,
        false,
    );
    assert_moves("id: n1", "id: \"n1\"", false, false);
    assert_moves("### Goal\n", "### Goal   \n", false, false);
}

#[test]
fn path_is_part_of_neither_fingerprint() {
    let a = fingerprints(BASE, "node.prose.md");
    let b = fingerprints(BASE, "moved/elsewhere/renamed.prose.md");
    assert_eq!(a, b);
}

#[test]
fn adding_a_non_node_contract_moves_only_the_set() {
    let node = parse(BASE);
    let other = parse_contract(OTHER.as_bytes(), "other.prose.md").unwrap();
    let extra = parse_contract(b"---\nkind: test\n---\n### Goal\nt\n", "t.prose.md").unwrap();
    let s0 = ContractSet::from_contracts(vec![node.clone(), other.clone()]).unwrap();
    let s1 = ContractSet::from_contracts(vec![node, other, extra]).unwrap();
    assert_ne!(s0.fingerprint(), s1.fingerprint());
    assert_eq!(s0.contract_fingerprints(), s1.contract_fingerprints());
}

#[test]
fn crlf_and_bom_hash_identically() {
    let t = tempfile::tempdir().unwrap();
    write(t.path(), "lf/node.prose.md", BASE);
    write(
        t.path(),
        "crlf/node.prose.md",
        format!("\u{FEFF}{}", BASE.replace('\n', "\r\n")),
    );
    write(t.path(), "bom/node.prose.md", format!("\u{FEFF}{BASE}"));
    let lf = load(&t.path().join("lf")).unwrap();
    for variant in ["crlf", "bom"] {
        let other = load(&t.path().join(variant)).unwrap();
        assert_eq!(other.fingerprint(), lf.fingerprint(), "{variant}");
        assert_eq!(other.contract_fingerprints(), lf.contract_fingerprints());
        assert_eq!(other.contracts()[0].sections, lf.contracts()[0].sections);
    }
}

#[test]
fn fenced_heading_is_body_text_not_a_section() {
    let text = "---\nname: f\n---\n### Execution\n```\n### Criteria\nnot criteria\n```\n### Maintains\nm\n";
    let t = tempfile::tempdir().unwrap();
    write(t.path(), "f.prose.md", text);
    let set = load(t.path()).unwrap();
    let c = set.get("f").unwrap();
    assert!(c.section("Criteria").is_none());
    assert_eq!(c.body("Execution"), "```\n### Criteria\nnot criteria\n```");
    assert!(c.fingerprint_text().ends_with("\ncriteria:"));
    assert_eq!(c.body("Maintains"), "m");
}

// ---------------------------------------------------------------------------------------------
// Load errors through `ContractSet::load`

fn load_err(files: &[(&str, &[u8])]) -> ContractError {
    let t = tempfile::tempdir().unwrap();
    for (rel, bytes) in files {
        write(t.path(), rel, bytes);
    }
    load(t.path()).unwrap_err()
}

#[test]
fn invalid_utf8_is_an_error_naming_path_and_line() {
    let e = load_err(&[
        ("ok.prose.md", b"fine"),
        ("sub/bad.prose.md", b"line1\nline2 \xC0\xAF\n"),
    ]);
    assert_eq!(
        e,
        ContractError::InvalidUtf8 {
            path: "sub/bad.prose.md".into(),
            line: 2
        }
    );
    assert_eq!(e.to_string(), "sub/bad.prose.md:2: not valid UTF-8");
}

#[test]
fn bad_ids_are_errors() {
    let cases: [(&str, &[u8], BadIdReason, Option<usize>); 4] = [
        (
            "a.prose.md",
            b"---\nid: x::y\n---\n",
            BadIdReason::DoubleColon,
            Some(2),
        ),
        (
            "a.prose.md",
            b"---\nkind: gateway\nname: '@gw'\n---\n",
            BadIdReason::LeadingAt,
            Some(3),
        ),
        (
            "@stem.prose.md",
            b"### Goal\ng\n",
            BadIdReason::LeadingAt,
            None,
        ),
        ("a::b.prose.md", b"", BadIdReason::DoubleColon, None),
    ];
    for (rel, bytes, reason, line) in cases {
        match load_err(&[(rel, bytes)]) {
            ContractError::BadId {
                path,
                line: got_line,
                reason: got,
                ..
            } => {
                assert_eq!(path, rel);
                assert_eq!(got, reason);
                assert_eq!(got_line, line);
            }
            other => panic!("{rel}: unexpected {other:?}"),
        }
    }
    let e = load_err(&[(
        "x.prose.md",
        format!("---\nid: {}\n---\n", "n".repeat(200)).as_bytes(),
    )]);
    assert!(matches!(
        e,
        ContractError::BadId {
            reason: BadIdReason::TooLong { bytes: 200 },
            ..
        }
    ));
}

#[test]
fn unknown_kind_is_an_error() {
    let e = load_err(&[("k.prose.md", b"---\nname: k\nkind: \"service\"\n---\n")]);
    assert_eq!(
        e,
        ContractError::UnknownKind {
            path: "k.prose.md".into(),
            line: 3,
            value: "service".into()
        }
    );
}

#[test]
fn duplicate_id_names_both_files() {
    let e = load_err(&[
        ("b/two.prose.md", b"---\nid: same\n---\n"),
        ("a/one.prose.md", b"---\nname: same\n---\n"),
        ("c/same.prose.md", b"---\nname: different\n---\n"),
    ]);
    assert_eq!(
        e.to_string(),
        "duplicate id \"same\": declared by a/one.prose.md and b/two.prose.md"
    );
    // A file stem colliding with a front-matter id is a duplicate too.
    let e = load_err(&[
        ("same.prose.md", b""),
        ("x.prose.md", b"---\nid: same\n---\n"),
    ]);
    assert_eq!(
        e,
        ContractError::DuplicateId {
            id: "same".into(),
            first: "same.prose.md".into(),
            second: "x.prose.md".into()
        }
    );
}

#[test]
fn duplicate_section_is_an_error() {
    let e = load_err(&[(
        "d.prose.md",
        b"---\nname: d\n---\n### Maintains\na\n### Goal\ng\n### MAINTAINS (again)\nb\n",
    )]);
    assert_eq!(
        e,
        ContractError::DuplicateSection {
            path: "d.prose.md".into(),
            line: 8,
            key: "Maintains".into(),
            first_line: 4
        }
    );
}

#[test]
fn bad_facet_names_are_errors() {
    let cases: [(&[u8], BadFacetReason, usize); 3] = [
        (
            b"### Maintains\nm\n#### @atomic\n",
            BadFacetReason::LeadingAt,
            3,
        ),
        (b"### Maintains\nm\n####   \n", BadFacetReason::Empty, 3),
        (
            b"### Maintains\n#### prices\na\n#### prices\nb\n",
            BadFacetReason::Duplicate { first_line: 2 },
            4,
        ),
    ];
    for (bytes, reason, line) in cases {
        match load_err(&[("f.prose.md", bytes)]) {
            ContractError::BadFacet {
                path,
                line: got_line,
                reason: got,
                ..
            } => {
                assert_eq!(path, "f.prose.md");
                assert_eq!(got, reason);
                assert_eq!(got_line, line);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[test]
fn entry_limit_is_an_error_not_a_truncation() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(root, "a.prose.md", "### Maintains\nm\n");
    // Entries under skipped names do not count.
    for i in 0..50 {
        write(root, &format!(".hidden/f{i}"), "");
        write(root, &format!("node_modules/f{i}"), "");
    }
    // `sub` + its files: MAX_ENTRIES in total with a.prose.md.
    for i in 0..MAX_ENTRIES - 2 {
        fs::write(root.join(format!("f{i}")), "").unwrap();
    }
    fs::create_dir(root.join("sub")).unwrap();
    assert_eq!(load(root).unwrap().len(), 1);
    fs::write(root.join("sub/one-too-many"), "").unwrap();
    let e = load(root).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("too many entries under {} (limit 20000)", root.display())
    );
}

#[cfg(unix)]
#[test]
fn symlinks_are_never_followed() {
    use std::os::unix::fs::symlink;
    let outside = tempfile::tempdir().unwrap();
    write(
        outside.path(),
        "real/x.prose.md",
        "---\nname: outside\n---\n",
    );
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(root, "a.prose.md", "### Maintains\nm\n");
    symlink(outside.path().join("real"), root.join("linked-dir")).unwrap();
    symlink(
        outside.path().join("real/x.prose.md"),
        root.join("linked.prose.md"),
    )
    .unwrap();
    symlink(root.join("a.prose.md"), root.join("alias.prose.md")).unwrap();
    symlink(root, root.join("loop")).unwrap();
    symlink(root.join("missing"), root.join("dangling.prose.md")).unwrap();
    let set = load(root).unwrap();
    let ids: Vec<&str> = set.contracts().iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["a"]);
}

#[test]
fn dot_directories_and_node_modules_are_skipped() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(root, "kept.prose.md", "");
    write(root, "nested/kept2.prose.md", "");
    // Each of these would be a load error if it were read.
    write(root, ".reactor/bad.prose.md", "---\nkind: nonsense\n---\n");
    write(root, ".git/x/bad.prose.md", b"\xFF");
    write(
        root,
        "node_modules/pkg/bad.prose.md",
        "---\nid: '@x'\n---\n",
    );
    write(
        root,
        "nested/node_modules/bad.prose.md",
        "---\nid: a::b\n---\n",
    );
    write(root, "nested/.hidden.prose.md", "---\nid: a::b\n---\n");
    let set = load(root).unwrap();
    let ids: Vec<&str> = set.contracts().iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["kept", "kept2"]);
    // A file merely containing `node_modules` in its name is kept.
    write(root, "node_modules_notes.prose.md", "");
    assert_eq!(load(root).unwrap().len(), 3);
}

#[test]
fn zero_contracts_is_not_a_loader_error() {
    let t = tempfile::tempdir().unwrap();
    write(t.path(), "README.md", "# nothing here");
    let set = load(t.path()).unwrap();
    assert!(set.is_empty());
    assert_eq!(set.fingerprint(), ContractSet::default().fingerprint());
}

#[test]
fn set_is_ordered_by_utf16_id() {
    let t = tempfile::tempdir().unwrap();
    // U+FF5E (BMP, above the surrogates) sorts after an astral character in UTF-16 order,
    // although its UTF-8 bytes sort first.
    write(t.path(), "1.prose.md", "---\nid: \"\u{FF5E}\"\n---\n");
    write(t.path(), "2.prose.md", "---\nid: \"\u{1F600}\"\n---\n");
    write(t.path(), "3.prose.md", "---\nid: B\n---\n");
    write(t.path(), "4.prose.md", "---\nid: a\n---\n");
    let set = load(t.path()).unwrap();
    let ids: Vec<&str> = set.contracts().iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["B", "a", "\u{1F600}", "\u{FF5E}"]);
    assert_eq!(set.get("\u{FF5E}").unwrap().path, "1.prose.md");
    assert!(set.get("missing").is_none());
}

// ---------------------------------------------------------------------------------------------
// Hostile input

#[test]
fn oversized_contract_is_refused_through_load() {
    let t = tempfile::tempdir().unwrap();
    let f = fs::File::create(t.path().join("huge.prose.md")).unwrap();
    f.set_len(MAX_CONTRACT_BYTES + 1).unwrap();
    let e = load(t.path()).unwrap_err();
    assert_eq!(
        e,
        ContractError::TooLarge {
            path: "huge.prose.md".into(),
            limit: MAX_CONTRACT_BYTES
        }
    );
}

#[test]
fn large_contracts_parse_in_linear_time() {
    // ~7 MiB: 100,000 sections with distinct keys, 100,000 facets, and one 1 MiB line.
    let mut text = String::from("---\nname: big\n---\n### Maintains\n");
    for i in 0..100_000 {
        text.push_str(&format!("#### f{i}\nd\n"));
    }
    for i in 0..100_000 {
        text.push_str(&format!("### S{i}\nbody {i}\n"));
    }
    text.push_str("### Long\n");
    text.push_str(&"x".repeat(1 << 20));
    assert!((text.len() as u64) < MAX_CONTRACT_BYTES);
    let start = std::time::Instant::now();
    let c = parse_contract(text.as_bytes(), "big.prose.md").unwrap();
    assert_eq!(c.facets.len(), 100_000);
    assert_eq!(c.sections.len(), 100_002);
    assert_eq!(c.body("Long").len(), 1 << 20);
    let _ = c.fingerprint();
    // Generous bound: a quadratic parser would take minutes here.
    assert!(start.elapsed().as_secs() < 60, "{:?}", start.elapsed());
}

#[test]
fn deep_trees_are_walked_to_the_cap_without_error() {
    let t = tempfile::tempdir().unwrap();
    let mut rel = String::new();
    for level in 0..200 {
        rel.push_str("d/");
        if level == 10 {
            write(t.path(), &format!("{rel}shallow.prose.md"), "");
        }
    }
    write(t.path(), &format!("{rel}too-deep.prose.md"), "");
    let set = load(t.path()).unwrap();
    let ids: Vec<&str> = set.contracts().iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["shallow"]);
}

#[test]
fn pathological_markup_does_not_panic() {
    for text in [
        "---",
        "---\n---",
        "---\n:\n: :\nid\n---",
        "###",
        "### ",
        "### \n### \n",
        "```",
        "~~~\n```\n### a",
        "### Maintains\n####",
        "### Maintains\n#### \u{FEFF}\n",
        "\u{FEFF}\u{FEFF}---\nid: x\n---",
        "\r\r\r\n\r",
        "---\nid: \"\n---\n",
        "---\nid: '\"'\n---\n",
    ] {
        let _ = parse_contract(text.as_bytes(), "p.prose.md");
    }
    // `### ` alone is a section with an empty heading; two of them are a duplicate.
    assert!(parse_contract(b"### \nx\n### \ny\n", "p.prose.md").is_err());
    // Matching single quotes around a double quote are removed.
    assert_eq!(parse("---\nid: '\"'\n---\n").id, "\"");
}

/// Lines that exercise every branch of the parser.
fn markup_line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("---".to_owned()),
        Just("### Maintains".to_owned()),
        Just("### maintains (x)".to_owned()),
        Just("### Requires".to_owned()),
        Just("### ".to_owned()),
        Just("## closer".to_owned()),
        Just("# title".to_owned()),
        Just("```".to_owned()),
        Just("~~~".to_owned()),
        Just("#### f".to_owned()),
        Just("#### @atomic".to_owned()),
        Just("#### ".to_owned()),
        Just("id: @x".to_owned()),
        Just("name: n".to_owned()),
        Just("kind: gateway".to_owned()),
        Just("kind: bogus".to_owned()),
        Just("Postcondition: holds.".to_owned()),
        Just("".to_owned()),
        "[ -~]{0,12}",
        "\\PC{0,6}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        if let Ok(c) = parse_contract(&bytes, "fuzz.prose.md") {
            prop_assert!(!c.id.is_empty());
            let _ = c.fingerprint();
        }
    }

    #[test]
    fn arbitrary_markup_parses_to_a_consistent_contract(
        lines in proptest::collection::vec(markup_line(), 0..40),
        crlf in any::<bool>(),
    ) {
        let sep = if crlf { "\r\n" } else { "\n" };
        let text = lines.join(sep);
        match parse_contract(text.as_bytes(), "fuzz.prose.md") {
            Ok(c) => {
                let mut keys: Vec<&str> = c.sections.iter().map(|s| s.key.as_str()).collect();
                keys.sort();
                keys.dedup();
                prop_assert_eq!(keys.len(), c.sections.len());
                for s in &c.sections {
                    prop_assert!(!s.body.is_empty());
                    prop_assert_eq!(reactor::contract::js_trim(&s.body), s.body.as_str());
                }
                let mut names = c.facet_names();
                names.sort();
                names.dedup();
                prop_assert_eq!(names.len(), c.facets.len());
                prop_assert!(c.facets.iter().all(|f| !f.name.is_empty() && !f.name.starts_with('@')));
                // Same text with the other line ending gives the same contract.
                let other = lines.join(if crlf { "\n" } else { "\r\n" });
                let c2 = parse_contract(other.as_bytes(), "fuzz.prose.md").unwrap();
                prop_assert_eq!(c2.fingerprint(), c.fingerprint());
            }
            Err(e) => {
                prop_assert!(e.to_string().starts_with("fuzz.prose.md"));
            }
        }
    }
}
