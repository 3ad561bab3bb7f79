//! Renderings of contracts for prompts: the compile evidence (RUNTIME.md §3.2.1), the node
//! contract view (§8.3.2, FORMATS.md §15.5), postcondition sentences (§2.3) and the wake-intent
//! hint (§2.3 `Continuity`).

use super::text::js_trim;
use super::{Contract, ContractSet, Kind};
use crate::format::receipt::WakeSource;

/// The section keys of the node contract view, in the order renders show them (RUNTIME.md
/// §8.3.2): exactly the sections covered by the contract fingerprint (§2.7).
pub const VIEW_KEYS: [&str; 5] = [
    "Requires",
    "Maintains",
    "Continuity",
    "Execution",
    "Criteria",
];

/// Compile user message 1, the evidence (RUNTIME.md §3.2.1): one sentence giving the number of
/// contracts, then for each contract in id order a `## Contract <id>` heading, a `name:` line, a
/// `kind:` line, and each kept section as `### <heading>` followed by its body, in file order.
/// Blocks are separated by one blank line; the text ends with a single `\n`.
///
/// The text is a function of exactly the data the contract-set fingerprint covers (ids, names,
/// kinds, headings and bodies; never paths, preambles or other front matter), so a fresh compile
/// cache implies an identical evidence message.
pub fn render_evidence(set: &ContractSet) -> String {
    let n = set.len();
    let mut out = String::with_capacity(
        256 + set
            .contracts()
            .iter()
            .flat_map(|c| &c.sections)
            .map(|s| s.heading.len() + s.body.len() + 8)
            .sum::<usize>(),
    );
    let nodes = set.nodes().count();
    out.push_str(&format!(
        "The project declares {n} Prose contract{} ({nodes} of kind responsibility or gateway), \
         reproduced below in id order; each opens with a level-2 heading naming its id, followed \
         by its name, its kind and its sections.\n",
        if n == 1 { "" } else { "s" },
    ));
    for c in set.contracts() {
        out.push_str(&format!(
            "\n## Contract {}\n\nname: {}\nkind: {}\n",
            c.id, c.name, c.kind
        ));
        for s in &c.sections {
            out.push_str("\n### ");
            out.push_str(&s.heading);
            out.push('\n');
            out.push_str(&s.body);
            out.push('\n');
        }
    }
    out
}

/// The node contract view (RUNTIME.md §8.3.2; persisted as `contract_view` in
/// `compile/nodes/<hex>.json`, FORMATS.md §15.5): `(heading as written, trimmed body)` for each
/// of the `Requires`, `Maintains`, `Continuity`, `Execution` and `Criteria` sections the
/// contract has, in [`VIEW_KEYS`] order. Absent sections are omitted; other sections (Goal,
/// Invariants, …) never appear. Use [`section_key`](super::section_key) on a heading to recover
/// its key.
pub fn contract_view(c: &Contract) -> Vec<(String, String)> {
    VIEW_KEYS
        .iter()
        .filter_map(|k| c.section(k))
        .map(|s| (s.heading.clone(), s.body.clone()))
        .collect()
}

/// The marker a postcondition sentence starts with.
const POSTCONDITION: &str = "Postcondition:";

/// Byte offsets in `unit` where a postcondition sentence starts: offset 0, or after one of
/// `.`, `!`, `?`, `;` followed by whitespace.
fn sentence_starts(unit: &str) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut from = 0;
    while let Some(rel) = unit[from..].find(POSTCONDITION) {
        let at = from + rel;
        let before = unit[..at].trim_end();
        let boundary =
            before.is_empty() || (before.len() < at && before.ends_with(['.', '!', '?', ';']));
        if boundary {
            starts.push(at);
        }
        from = at + POSTCONDITION.len();
    }
    starts
}

/// Splits a Maintains body into postcondition sentences (see [`Contract::postconditions`]).
pub(super) fn postcondition_sentences(body: &str) -> Vec<String> {
    // First, unwrap the body into paragraph units: a unit ends at a blank line, a heading, a
    // code fence, or before a list item; fenced text is dropped.
    let mut units: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut fence: Option<char> = None;
    let flush = |cur: &mut String, units: &mut Vec<String>| {
        if !cur.is_empty() {
            units.push(std::mem::take(cur));
        }
    };
    for line in body.split('\n') {
        let marker = if line.starts_with("```") {
            Some('`')
        } else if line.starts_with("~~~") {
            Some('~')
        } else {
            None
        };
        if let Some(open) = fence {
            if marker == Some(open) {
                fence = None;
            }
            continue;
        }
        if let Some(m) = marker {
            flush(&mut cur, &mut units);
            fence = Some(m);
            continue;
        }
        let t = js_trim(line);
        if t.is_empty() || t.starts_with('#') {
            flush(&mut cur, &mut units);
            continue;
        }
        let item = ["- ", "* ", "+ "]
            .iter()
            .find_map(|m| t.strip_prefix(m))
            .map(js_trim);
        let t = match item {
            Some(rest) => {
                flush(&mut cur, &mut units);
                rest
            }
            None => t,
        };
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(t);
    }
    flush(&mut cur, &mut units);

    let mut out = Vec::new();
    for unit in &units {
        let starts = sentence_starts(unit);
        for (i, &s) in starts.iter().enumerate() {
            let end = starts.get(i + 1).copied().unwrap_or(unit.len());
            out.push(js_trim(&unit[s..end]).to_owned());
        }
    }
    out
}

/// See [`Contract::wake_intent`].
pub(super) fn wake_intent(c: &Contract) -> Option<WakeSource> {
    match c.kind {
        Kind::Gateway => return Some(WakeSource::External),
        Kind::Responsibility => {}
        _ => return None,
    }
    let text = c.body("Continuity").to_lowercase();
    [
        ("input-driven", WakeSource::Input),
        ("self-driven", WakeSource::SelfWake),
        ("external-driven", WakeSource::External),
    ]
    .into_iter()
    .filter_map(|(word, source)| text.find(word).map(|at| (at, source)))
    .min_by_key(|(at, _)| *at)
    .map(|(_, source)| source)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{parse_contract, section_key};

    fn contract(text: &str, path: &str) -> Contract {
        parse_contract(text.as_bytes(), path).unwrap()
    }

    #[test]
    fn evidence_lists_contracts_in_id_order_with_sections_in_file_order() {
        let b = contract(
            "---\nname: Beta\nkind: gateway\n---\n# Title is dropped\n### Maintains\nm\n### Goal\ng\n",
            "z/b.prose.md",
        );
        let a = contract(
            "---\nid: a\nkind: pattern\n---\n### Context\nc1\n\nc2\n",
            "a.prose.md",
        );
        let set = ContractSet::from_contracts(vec![b, a]).unwrap();
        assert_eq!(
            render_evidence(&set),
            "The project declares 2 Prose contracts (1 of kind responsibility or gateway), \
             reproduced below in id order; each opens with a level-2 heading naming its id, \
             followed by its name, its kind and its sections.\n\
             \n## Contract Beta\n\nname: Beta\nkind: gateway\n\n### Maintains\nm\n\n### Goal\ng\n\
             \n## Contract a\n\nname: a\nkind: pattern\n\n### Context\nc1\n\nc2\n"
        );
    }

    #[test]
    fn evidence_of_one_and_of_no_contract() {
        let set = ContractSet::from_contracts(vec![]).unwrap();
        assert!(render_evidence(&set).starts_with("The project declares 0 Prose contracts (0 "));
        let set = ContractSet::from_contracts(vec![contract("", "solo.prose.md")]).unwrap();
        let e = render_evidence(&set);
        assert!(e.starts_with("The project declares 1 Prose contract (1 "));
        assert!(e.ends_with("## Contract solo\n\nname: solo\nkind: responsibility\n"));
    }

    #[test]
    fn view_keeps_only_render_sections_in_fixed_order() {
        let c = contract(
            "### Criteria\ncr\n### Goal\ng\n### Continuity (when)\nco\n### maintains\nm\n### Invariants\ni\n### Execution\ne\n",
            "n.prose.md",
        );
        assert_eq!(
            contract_view(&c),
            vec![
                ("maintains".to_owned(), "m".to_owned()),
                ("Continuity (when)".to_owned(), "co".to_owned()),
                ("Execution".to_owned(), "e".to_owned()),
                ("Criteria".to_owned(), "cr".to_owned()),
            ]
        );
        assert_eq!(section_key(&contract_view(&c)[1].0), "Continuity");
    }

    #[test]
    fn postconditions_are_sentences_beginning_with_the_marker() {
        let c = contract(
            "### Maintains\nIntro. Postcondition: inline one.\nPostcondition: every entry has a\npositive price.\nPostcondition: second.\n\nnot one: Postcondition: mid-clause\n- Postcondition: in a list\n  wrapped item\n- other item\n```\nPostcondition: fenced\n```\n#### f\nPostcondition: under a facet.\n",
            "p.prose.md",
        );
        assert_eq!(
            c.postconditions(),
            vec![
                "Postcondition: inline one.",
                "Postcondition: every entry has a positive price.",
                "Postcondition: second.",
                "Postcondition: in a list wrapped item",
                "Postcondition: under a facet.",
            ]
        );
        let none = contract("### Goal\nPostcondition: not in maintains\n", "q.prose.md");
        assert!(none.postconditions().is_empty());
    }

    #[test]
    fn wake_intent_reads_continuity() {
        let cases = [
            ("", "- self-driven: daily", Some(WakeSource::SelfWake)),
            (
                "",
                "- Input-driven, coalesced; self-driven later",
                Some(WakeSource::Input),
            ),
            ("", "external-driven", Some(WakeSource::External)),
            ("", "whenever", None),
            ("kind: gateway\n", "self-driven", Some(WakeSource::External)),
            ("kind: function\n", "input-driven", None),
        ];
        for (fm, continuity, want) in cases {
            let c = contract(
                &format!("---\n{fm}---\n### Continuity\n{continuity}\n"),
                "w.prose.md",
            );
            assert_eq!(c.wake_intent(), want, "{fm:?} {continuity:?}");
        }
    }
}
