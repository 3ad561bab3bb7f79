//! Text normalization, front matter, identity, sections and facets (RUNTIME.md §2.2–§2.5).

use std::collections::HashMap;

use super::{
    BadFacetReason, BadIdReason, CONTRACT_SUFFIX, Contract, ContractError, Facet, Kind,
    MAX_NODE_ID_BYTES, Section,
};

/// True for the characters JavaScript's `String.prototype.trim` removes (WhiteSpace and
/// LineTerminator: TAB, VT, FF, SP, NBSP, U+FEFF, the `Zs` spaces, LF, CR, U+2028, U+2029).
/// Rust's `char::is_whitespace` differs (it keeps U+FEFF and removes U+0085), and bodies must
/// trim exactly as the reference does for the contract fingerprints to agree.
fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\u{9}'..='\u{D}'
            | ' '
            | '\u{A0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200A}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202F}'
            | '\u{205F}'
            | '\u{3000}'
            | '\u{FEFF}'
    )
}

/// Trims like JavaScript's `String.prototype.trim` (see RUNTIME.md §2.3 "Each section body is
/// trimmed"; the reference is JavaScript).
pub fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_space)
}

/// The canonical section key of a heading (RUNTIME.md §2.3): its first whitespace-separated
/// word, lower-cased, then with its first character upper-cased (`maintains (facets)` →
/// `Maintains`). Two headings have the same key exactly when this function agrees.
pub fn section_key(heading: &str) -> String {
    let word = js_trim(heading).split(is_js_space).next().unwrap_or("");
    let lower = word.to_lowercase();
    let mut chars = lower.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Normalizes raw contract bytes (RUNTIME.md §2.2): strips one leading UTF-8 byte-order mark,
/// rejects invalid UTF-8 (returning the 1-based line of the first invalid byte) and replaces
/// every `\r\n` with `\n`. Lone `\r` characters are kept.
pub fn normalize_text(bytes: &[u8]) -> Result<String, usize> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok(if s.contains("\r\n") {
            s.replace("\r\n", "\n")
        } else {
            s.to_owned()
        }),
        Err(e) => {
            let valid = &bytes[..e.valid_up_to()];
            Err(1 + valid.iter().filter(|&&b| b == b'\n').count())
        }
    }
}

/// The recognised front-matter keys with the line each value came from.
#[derive(Default)]
struct FrontMatter<'a> {
    id: Option<(&'a str, usize)>,
    name: Option<(&'a str, usize)>,
    kind: Option<(&'a str, usize)>,
}

/// Removes one pair of matching single or double quotes around `v`.
fn unquote(v: &str) -> &str {
    let b = v.as_bytes();
    if b.len() >= 2 && (b[0] == b'"' || b[0] == b'\'') && b[b.len() - 1] == b[0] {
        &v[1..v.len() - 1]
    } else {
        v
    }
}

/// Reads front matter lines (`first_line` is the 1-based line of `lines[0]`).
fn read_front_matter<'a>(lines: &[&'a str], first_line: usize) -> FrontMatter<'a> {
    let mut fm = FrontMatter::default();
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with(is_js_space) || line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = unquote(js_trim(value));
        if value.is_empty() {
            continue;
        }
        let slot = match js_trim(key) {
            "id" => &mut fm.id,
            "name" => &mut fm.name,
            "kind" => &mut fm.kind,
            _ => continue,
        };
        if slot.is_none() {
            *slot = Some((value, first_line + i));
        }
    }
    fm
}

/// Which fence, if any, a line opens or closes: the marker character.
fn fence_marker(line: &str) -> Option<char> {
    if line.starts_with("```") {
        Some('`')
    } else if line.starts_with("~~~") {
        Some('~')
    } else {
        None
    }
}

/// Tracks fenced code blocks: a fence opened by ```` ``` ```` closes only at a line starting
/// with ```` ``` ````, one opened by `~~~` only at `~~~`.
#[derive(Default)]
struct Fence(Option<char>);

impl Fence {
    /// Feeds one line; returns true when the line is inside a fence or is a fence line (and
    /// therefore never a heading).
    fn feed(&mut self, line: &str) -> bool {
        match (self.0, fence_marker(line)) {
            (Some(open), Some(m)) if m == open => {
                self.0 = None;
                true
            }
            (Some(_), _) => true,
            (None, Some(m)) => {
                self.0 = Some(m);
                true
            }
            (None, None) => false,
        }
    }
}

/// A section being collected: heading, key, heading line, and body lines with their numbers.
struct OpenSection<'a> {
    heading: &'a str,
    key: String,
    line: usize,
    body: Vec<(&'a str, usize)>,
}

/// The file stem: the last path segment minus `.prose.md`.
fn file_stem(rel_path: &str) -> &str {
    let name = rel_path.rsplit('/').next().unwrap_or(rel_path);
    name.strip_suffix(CONTRACT_SUFFIX).unwrap_or(name)
}

/// Parses one contract (RUNTIME.md §2.2–§2.5) from its raw bytes. `rel_path` is the path
/// relative to the contracts directory (`/`-separated); it is recorded in the contract, named
/// by errors, and its file stem is the id of last resort.
///
/// Errors: [`ContractError::InvalidUtf8`], [`ContractError::BadId`],
/// [`ContractError::UnknownKind`], [`ContractError::DuplicateSection`],
/// [`ContractError::BadFacet`].
pub fn parse_contract(bytes: &[u8], rel_path: &str) -> Result<Contract, ContractError> {
    let text = normalize_text(bytes).map_err(|line| ContractError::InvalidUtf8 {
        path: rel_path.to_owned(),
        line,
    })?;
    let lines: Vec<&str> = text.split('\n').collect();

    // Front matter: only when line 1 is exactly `---` and a closing `---` follows.
    let (fm, body_start) = if lines.first() == Some(&"---") {
        match lines.iter().skip(1).position(|l| *l == "---") {
            Some(close) => (read_front_matter(&lines[1..=close], 2), close + 2),
            None => (FrontMatter::default(), 0),
        }
    } else {
        (FrontMatter::default(), 0)
    };

    let path = rel_path.to_owned();
    let kind = match fm.kind {
        None => Kind::Responsibility,
        Some((value, line)) => Kind::parse(value).ok_or_else(|| ContractError::UnknownKind {
            path: path.clone(),
            line,
            value: value.to_owned(),
        })?,
    };
    let (id, id_line) = match fm.id.or(fm.name) {
        Some((v, line)) => (v.to_owned(), Some(line)),
        None => (file_stem(rel_path).to_owned(), None),
    };
    let bad_id = |reason| ContractError::BadId {
        path: path.clone(),
        line: id_line,
        id: id.clone(),
        reason,
    };
    if id.is_empty() {
        return Err(bad_id(BadIdReason::Empty));
    }
    if id.contains("::") {
        return Err(bad_id(BadIdReason::DoubleColon));
    }
    if id.starts_with('@') {
        return Err(bad_id(BadIdReason::LeadingAt));
    }
    if kind.is_node() && id.len() > MAX_NODE_ID_BYTES {
        return Err(bad_id(BadIdReason::TooLong { bytes: id.len() }));
    }
    let name = fm
        .name
        .map(|(v, _)| v.to_owned())
        .unwrap_or_else(|| id.clone());

    // Sections.
    let mut sections: Vec<Section> = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut maintains_lines: Vec<(&str, usize)> = Vec::new();
    let mut current: Option<OpenSection<'_>> = None;
    let mut fence = Fence::default();
    for (idx, &line) in lines.iter().enumerate().skip(body_start) {
        let lineno = idx + 1;
        if fence.feed(line) {
            if let Some(open) = current.as_mut() {
                open.body.push((line, lineno));
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("### ") {
            close_section(current.take(), &mut sections, &mut maintains_lines);
            let heading = js_trim(rest);
            let key = section_key(heading);
            if let Some(&first_line) = seen.get(&key) {
                return Err(ContractError::DuplicateSection {
                    path,
                    line: lineno,
                    key,
                    first_line,
                });
            }
            seen.insert(key.clone(), lineno);
            current = Some(OpenSection {
                heading,
                key,
                line: lineno,
                body: Vec::new(),
            });
        } else if line.starts_with("# ") || line.starts_with("## ") {
            close_section(current.take(), &mut sections, &mut maintains_lines);
        } else if let Some(open) = current.as_mut() {
            open.body.push((line, lineno));
        }
    }
    close_section(current.take(), &mut sections, &mut maintains_lines);

    let facets = if kind.is_node() {
        parse_facets(&maintains_lines, &path)?
    } else {
        Vec::new()
    };

    Ok(Contract {
        id,
        name,
        kind,
        path,
        sections,
        facets,
    })
}

/// Ends the open section: keeps it when its trimmed body is non-empty and remembers the raw
/// lines of Maintains for facet extraction (even when its body is empty).
fn close_section<'a>(
    open: Option<OpenSection<'a>>,
    sections: &mut Vec<Section>,
    maintains: &mut Vec<(&'a str, usize)>,
) {
    let Some(open) = open else { return };
    let joined: Vec<&str> = open.body.iter().map(|(l, _)| *l).collect();
    let body = js_trim(&joined.join("\n")).to_owned();
    if open.key == "Maintains" {
        maintains.clone_from(&open.body);
    }
    if !body.is_empty() {
        sections.push(Section {
            heading: open.heading.to_owned(),
            key: open.key,
            body,
            line: open.line,
        });
    }
}

/// Extracts facets from the raw lines of the Maintains section (RUNTIME.md §2.5).
fn parse_facets(lines: &[(&str, usize)], path: &str) -> Result<Vec<Facet>, ContractError> {
    let mut facets: Vec<Facet> = Vec::new();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut current: Option<(&str, usize, Vec<&str>)> = None;
    let mut fence = Fence::default();
    let finish = |cur: Option<(&str, usize, Vec<&str>)>, facets: &mut Vec<Facet>| {
        if let Some((name, line, body)) = cur {
            facets.push(Facet {
                name: name.to_owned(),
                description: js_trim(&body.join("\n")).to_owned(),
                line,
            });
        }
    };
    for &(line, lineno) in lines {
        let heading = if fence.feed(line) {
            None
        } else {
            line.strip_prefix("#### ")
        };
        let Some(rest) = heading else {
            if let Some((_, _, body)) = current.as_mut() {
                body.push(line);
            }
            continue;
        };
        let name = js_trim(rest);
        let bad = |reason| ContractError::BadFacet {
            path: path.to_owned(),
            line: lineno,
            name: name.to_owned(),
            reason,
        };
        if name.is_empty() {
            return Err(bad(BadFacetReason::Empty));
        }
        if name.starts_with('@') {
            return Err(bad(BadFacetReason::LeadingAt));
        }
        if let Some(&first_line) = seen.get(name) {
            return Err(bad(BadFacetReason::Duplicate { first_line }));
        }
        seen.insert(name, lineno);
        finish(current.take(), &mut facets);
        current = Some((name, lineno, Vec::new()));
    }
    finish(current.take(), &mut facets);
    Ok(facets)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Contract, ContractError> {
        parse_contract(text.as_bytes(), "dir/sample.prose.md")
    }

    #[test]
    fn js_trim_matches_javascript_whitespace() {
        assert_eq!(js_trim("\u{FEFF} a \u{3000}\n"), "a");
        // U+0085 (NEL) is not JavaScript whitespace; Rust's trim would remove it.
        assert_eq!(js_trim("\u{85}a\u{85}"), "\u{85}a\u{85}");
        assert_eq!(js_trim("\u{2028}\t\u{B}x y\u{C}\r"), "x y");
    }

    #[test]
    fn section_key_is_first_word_canonicalized() {
        assert_eq!(section_key("Maintains (facets)"), "Maintains");
        assert_eq!(section_key("maintains"), "Maintains");
        assert_eq!(section_key("MAINTAINS\tx"), "Maintains");
        assert_eq!(section_key("  goal  "), "Goal");
        assert_eq!(section_key(""), "");
        assert_eq!(section_key("élan vital"), "Élan");
    }

    #[test]
    fn normalize_strips_bom_and_crlf_only() {
        assert_eq!(normalize_text(b"\xEF\xBB\xBFa\r\nb\rc").unwrap(), "a\nb\rc");
        // Only one leading BOM is removed.
        assert_eq!(
            normalize_text(b"\xEF\xBB\xBF\xEF\xBB\xBFa").unwrap(),
            "\u{FEFF}a"
        );
        assert_eq!(normalize_text(b"a\nb\n\xFFc"), Err(3));
        assert_eq!(normalize_text(b"\xC3"), Err(1));
    }

    #[test]
    fn front_matter_rules() {
        let c = parse(
            "---\n  id: indented\n# id: comment\nid:\nid: \"quoted-id\"\nid: second\nname: 'The Name'\nversion: 3\nkind: gateway\n---\n### Goal\ng\n",
        )
        .unwrap();
        assert_eq!(c.id, "quoted-id");
        assert_eq!(c.name, "The Name");
        assert_eq!(c.kind, Kind::Gateway);
        assert_eq!(c.path, "dir/sample.prose.md");
    }

    #[test]
    fn identity_falls_back_to_name_then_stem() {
        let c = parse("---\nname: only-name\n---\n").unwrap();
        assert_eq!((c.id.as_str(), c.name.as_str()), ("only-name", "only-name"));
        let c = parse("no front matter\n").unwrap();
        assert_eq!((c.id.as_str(), c.name.as_str()), ("sample", "sample"));
        assert_eq!(c.kind, Kind::Responsibility);
        // Empty (after quote removal) values are ignored.
        let c = parse("---\nid: ''\nname: \"\"\n---\n").unwrap();
        assert_eq!(c.id, "sample");
    }

    #[test]
    fn front_matter_needs_first_line_fence_and_a_closing_fence() {
        let c = parse("\n---\nid: x\n---\n").unwrap();
        assert_eq!(c.id, "sample");
        let c = parse("---\nid: x\n").unwrap();
        assert_eq!(c.id, "sample");
        let c = parse("--- \nid: x\n---\n").unwrap();
        assert_eq!(c.id, "sample");
        // A `---` later in the body never opens front matter, and the fence must be exact.
        let c = parse("---\nid: x\n----\n---\n### Goal\nok\n").unwrap();
        assert_eq!(c.id, "x");
        assert_eq!(c.body("goal"), "ok");
    }

    #[test]
    fn bad_ids_are_errors_naming_file_and_line() {
        let e = parse("---\nid: a::b\n---\n").unwrap_err();
        assert_eq!(
            e,
            ContractError::BadId {
                path: "dir/sample.prose.md".into(),
                line: Some(2),
                id: "a::b".into(),
                reason: BadIdReason::DoubleColon
            }
        );
        assert_eq!(
            e.to_string(),
            "dir/sample.prose.md:2: invalid id \"a::b\": an id must not contain '::' (reserved for ingress producers)"
        );
        let e = parse("---\nkind: test\nname: \"@x\"\n---\n").unwrap_err();
        assert!(matches!(
            e,
            ContractError::BadId {
                line: Some(3),
                reason: BadIdReason::LeadingAt,
                ..
            }
        ));
        let e = parse_contract(b"x", "@stem.prose.md").unwrap_err();
        assert!(matches!(
            e,
            ContractError::BadId {
                line: None,
                reason: BadIdReason::LeadingAt,
                ..
            }
        ));
        let e = parse_contract(b"x", "a/.prose.md").unwrap_err();
        assert!(matches!(
            e,
            ContractError::BadId {
                reason: BadIdReason::Empty,
                ..
            }
        ));
        // A whitespace-only id is not empty: the spec only forbids "", "::" and "@…".
        assert_eq!(parse("---\nid: '  '\n---\n").unwrap().id, "  ");
    }

    #[test]
    fn node_ids_are_capped_at_120_bytes_but_other_kinds_are_not() {
        let long = "x".repeat(121);
        let e = parse(&format!("---\nid: {long}\n---\n")).unwrap_err();
        assert!(matches!(
            e,
            ContractError::BadId {
                reason: BadIdReason::TooLong { bytes: 121 },
                ..
            }
        ));
        assert!(parse(&format!("---\nid: {}\n---\n", "x".repeat(120))).is_ok());
        assert!(parse(&format!("---\nid: {long}\nkind: pattern\n---\n")).is_ok());
    }

    #[test]
    fn unknown_kind_names_file_line_and_value() {
        let e = parse("---\nname: a\nkind: Gateway\n---\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "dir/sample.prose.md:3: unknown kind \"Gateway\" (expected responsibility, gateway, function, pattern or test)"
        );
        for k in Kind::ALL {
            let c = parse(&format!("---\nkind: {}\n---\n", k.as_str())).unwrap();
            assert_eq!(c.kind, k);
            assert_eq!(
                c.is_node(),
                matches!(k, Kind::Responsibility | Kind::Gateway)
            );
        }
    }

    #[test]
    fn sections_split_close_and_trim() {
        let c = parse(
            "---\nname: s\n---\n# Title\npreamble\n### Goal (why)\n\n  g1\ng2  \n\n## Notes\nlost\n### maintains\nm\n#### f\nfd\n##### deeper\nstill f\n### Empty\n   \n### Tools\nt\n# End\nlost too\n",
        )
        .unwrap();
        let got: Vec<(&str, &str, &str, usize)> = c
            .sections
            .iter()
            .map(|s| (s.heading.as_str(), s.key.as_str(), s.body.as_str(), s.line))
            .collect();
        assert_eq!(
            got,
            vec![
                ("Goal (why)", "Goal", "g1\ng2", 6),
                (
                    "maintains",
                    "Maintains",
                    "m\n#### f\nfd\n##### deeper\nstill f",
                    13
                ),
                ("Tools", "Tools", "t", 21),
            ]
        );
        assert_eq!(c.facets.len(), 1);
        assert_eq!(c.facets[0].description, "fd\n##### deeper\nstill f");
        assert_eq!(c.facets[0].line, 15);
    }

    #[test]
    fn heading_lines_need_the_exact_prefix() {
        let c = parse("### Goal\n###Tight\n ### Indented\n####x\n#Title\n##Sub\nend\n").unwrap();
        assert_eq!(c.sections.len(), 1);
        assert_eq!(
            c.body("Goal"),
            "###Tight\n ### Indented\n####x\n#Title\n##Sub\nend"
        );
    }

    #[test]
    fn fenced_headings_are_not_headings() {
        let c = parse(
            "### Execution\n```md\n### Not a section\n# nor a closer\n~~~\n### still fenced\n```\nafter\n~~~\n### fenced by tildes\n~~~\n### Goal\ng\n",
        )
        .unwrap();
        assert_eq!(c.sections.len(), 2);
        assert_eq!(
            c.body("Execution"),
            "```md\n### Not a section\n# nor a closer\n~~~\n### still fenced\n```\nafter\n~~~\n### fenced by tildes\n~~~"
        );
        assert_eq!(c.body("goal"), "g");
        // A fence in the preamble also hides headings, and an unclosed fence runs to the end.
        let c = parse("```\n### Hidden\n").unwrap();
        assert!(c.sections.is_empty());
    }

    #[test]
    fn fenced_facet_headings_are_not_facets() {
        let c = parse("### Maintains\nm\n```\n#### not-a-facet\n```\n#### real\nd\n").unwrap();
        assert_eq!(c.facet_names(), vec!["real"]);
    }

    #[test]
    fn duplicate_section_names_file_key_and_lines() {
        let e = parse("### Goal\na\n### Requires\nr\n### GOAL again\nb\n").unwrap_err();
        assert_eq!(
            e,
            ContractError::DuplicateSection {
                path: "dir/sample.prose.md".into(),
                line: 5,
                key: "Goal".into(),
                first_line: 1
            }
        );
        assert_eq!(
            e.to_string(),
            "dir/sample.prose.md:5: duplicate section \"Goal\" (first at line 1)"
        );
        // An empty first occurrence still counts as an occurrence of the key.
        assert!(parse("### Goal\n### Goal\nb\n").is_err());
    }

    #[test]
    fn facet_rules() {
        let c = parse(
            "### Maintains\nm\n#### prices\nThe prices.\n\n#### section:1\n#### a b \n### Goal\n#### not a facet\n",
        )
        .unwrap();
        assert_eq!(c.facet_names(), vec!["prices", "section:1", "a b"]);
        assert_eq!(c.facets[0].description, "The prices.");
        assert_eq!(c.facets[1].description, "");
        assert!(c.is_faceted());

        let e = parse("### Maintains\n#### \nx\n").unwrap_err();
        assert!(matches!(
            e,
            ContractError::BadFacet {
                line: 2,
                reason: BadFacetReason::Empty,
                ..
            }
        ));
        let e = parse("### Maintains\n#### @atomic\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "dir/sample.prose.md:2: invalid facet \"@atomic\": a facet name must not start with '@' (reserved)"
        );
        let e = parse("### Maintains\n#### a\n#### b\n####  a \n").unwrap_err();
        assert_eq!(
            e,
            ContractError::BadFacet {
                path: "dir/sample.prose.md".into(),
                line: 4,
                name: "a".into(),
                reason: BadFacetReason::Duplicate { first_line: 2 }
            }
        );
        // Non-node kinds have no facets and are not validated.
        let c = parse("---\nkind: pattern\n---\n### Maintains\n#### @x\n#### @x\n").unwrap();
        assert!(c.facets.is_empty());
        // Atomic-only node.
        let c = parse("### Maintains\nall of it\n").unwrap();
        assert!(!c.is_faceted());
    }

    #[test]
    fn a_bare_facet_heading_is_an_error() {
        // `#### ` alone is an (empty, invalid) facet heading although the body reads `####`.
        assert!(parse("### Maintains\n#### \n").is_err());
    }

    #[test]
    fn invalid_utf8_names_the_line() {
        let e = parse_contract(b"---\nname: x\n---\n\xFE\n", "a.prose.md").unwrap_err();
        assert_eq!(e.to_string(), "a.prose.md:4: not valid UTF-8");
    }

    #[test]
    fn crlf_and_bom_parse_identically() {
        let lf = "---\nname: n\n---\n### Maintains\nm1\nm2\n#### f\nd\n";
        let crlf = format!("\u{FEFF}{}", lf.replace('\n', "\r\n"));
        assert_eq!(parse(lf).unwrap(), parse(&crlf).unwrap());
    }
}
