//! Load errors through `ContractSet::load`, and what the directory walk reads and skips.

use super::*;

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
