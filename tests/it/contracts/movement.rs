//! Fingerprint movement: which edits move the node fingerprint (§2.7) and which only the set
//! fingerprint (§2.8).

use super::*;

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
