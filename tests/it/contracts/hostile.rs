//! Hostile input: oversized and very large contracts, deep trees, pathological markup, and
//! property tests over arbitrary bytes and markup.

use super::*;

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
