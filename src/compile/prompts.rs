//! The compile-role preamble and the per-step task texts (RUNTIME.md §3.2.1, §3.3.1, §3.4.1,
//! §3.5.1), in the project's own wording. The texts live under `src/compile/prompts/` and are
//! embedded with `include_str!`; placeholders `{{name}}` are filled in one pass, so contract text
//! that happens to contain `{{…}}` is never expanded.

use crate::contract::{Contract, ContractSet};
use crate::core::canonicalizer::CanonicalizerSpec;
use crate::format::json;

/// The compile-role preamble: the second system block of every compile session (RUNTIME.md
/// §3.2.1).
pub const PREAMBLE: &str = include_str!("prompts/preamble.md");

const FORME: &str = include_str!("prompts/forme.md");
const CANONICALIZER: &str = include_str!("prompts/canonicalizer.md");
const POSTCONDITION: &str = include_str!("prompts/postcondition.md");
const POSTCONDITION_FACETED: &str = include_str!("prompts/postcondition_faceted.md");
const POSTCONDITION_ATOMIC: &str = include_str!("prompts/postcondition_atomic.md");
const REPAIR: &str = include_str!("prompts/repair.md");

/// Replaces every `{{name}}` of `template` whose name is in `vars` by its value, in one left to
/// right pass (inserted values are not scanned again). Unknown placeholders stay as written.
pub(crate) fn fill(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out =
        String::with_capacity(template.len() + vars.iter().map(|(_, v)| v.len()).sum::<usize>());
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        match after.find("}}") {
            Some(close) => {
                let name = &after[..close];
                match vars.iter().find(|(k, _)| *k == name) {
                    Some((_, v)) => out.push_str(v),
                    None => {
                        out.push_str("{{");
                        out.push_str(name);
                        out.push_str("}}");
                    }
                }
                rest = &after[close + 2..];
            }
            None => {
                out.push_str(&rest[open..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// A Markdown code fence longer than every backtick run inside `text` (at least three).
pub(crate) fn fence_for(text: &str) -> String {
    let mut longest = 0usize;
    let mut run = 0usize;
    for ch in text.chars() {
        if ch == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

fn code(name: &str) -> String {
    let fence = if name.contains('`') { "``" } else { "`" };
    let pad = if name.starts_with('`') || name.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{name}{pad}{fence}")
}

/// ` (<name>)` when the contract's name differs from its id, else nothing.
fn named(c: &Contract) -> String {
    if c.name == c.id {
        String::new()
    } else {
        format!(" ({})", c.name)
    }
}

/// Indents every line after the first by `indent` spaces.
fn hang(text: &str, indent: usize) -> String {
    let pad = " ".repeat(indent);
    text.split('\n')
        .enumerate()
        .map(|(i, l)| {
            if i == 0 || l.is_empty() {
                l.to_string()
            } else {
                format!("{pad}{l}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn facet_list(names: &[&str]) -> String {
    names.iter().map(|f| code(f)).collect::<Vec<_>>().join(", ")
}

/// The Forme task (RUNTIME.md §3.3.1): the node contracts with their kinds and the loader's
/// facet lists, the contracts that get no node, and the rules of the judgment.
pub(crate) fn forme_task(set: &ContractSet) -> String {
    let mut table = Vec::new();
    for c in set.nodes() {
        let facets = if c.is_faceted() {
            format!("facets {}", facet_list(&c.facet_names()))
        } else {
            "no facets (`@atomic` only)".to_string()
        };
        table.push(format!("   - {}: kind `{}`, {facets}", code(&c.id), c.kind));
    }
    if table.is_empty() {
        table.push("   (none: the project has no node contract, so `nodes` is `[]`)".to_string());
    }
    let others: Vec<String> = set
        .contracts()
        .iter()
        .filter(|c| !c.is_node())
        .map(|c| format!("{} ({})", code(&c.id), c.kind))
        .collect();
    let excluded = if others.is_empty() {
        String::new()
    } else {
        format!(
            "\n   These contracts are evidence only and get no entry in `nodes`: {}.\n",
            others.join(", ")
        )
    };
    fill(
        FORME,
        &[("node_table", &table.join("\n")), ("excluded", &excluded)],
    )
}

/// The canonicalizer task of a faceted node (RUNTIME.md §3.4.1): its Maintains text, its
/// declared facets with their `####` descriptions, and the structured-truth convention.
pub(crate) fn canonicalizer_task(c: &Contract) -> String {
    let maintains = c.body("Maintains");
    let facets = c
        .facets
        .iter()
        .map(|f| {
            let description = if f.description.is_empty() {
                "(no description)".to_string()
            } else {
                hang(&f.description, 2)
            };
            format!("- {}: {description}", code(&f.name))
        })
        .collect::<Vec<_>>()
        .join("\n");
    fill(
        CANONICALIZER,
        &[
            ("node", &c.id),
            ("named", &named(c)),
            ("fence", &fence_for(maintains)),
            ("maintains", maintains),
            ("facets", &facets),
        ],
    )
}

/// The postcondition task of a node (RUNTIME.md §3.5.1): its Maintains text, the postcondition
/// sentences the loader found, and either the frozen canonicalizer spec with the fact-naming rule
/// (faceted nodes) or the atomic-only rule.
pub(crate) fn postcondition_task(c: &Contract, spec: Option<&CanonicalizerSpec>) -> String {
    let maintains = c.body("Maintains");
    let sentences = c.postconditions();
    let list = if sentences.is_empty() {
        "(none: answer `{\"postconditions\": []}`)".to_string()
    } else {
        sentences
            .iter()
            .enumerate()
            .map(|(i, s)| format!("{}. {}", i + 1, hang(s, 3)))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let structure = match spec.filter(|s| !s.is_atomic_only()) {
        Some(spec) => {
            let text = json::pretty_string(&spec.to_value());
            let text = text.trim_end();
            fill(
                POSTCONDITION_FACETED,
                &[
                    ("facets", &facet_list(&c.facet_names())),
                    ("fence", &fence_for(text)),
                    ("spec", text),
                ],
            )
        }
        None => POSTCONDITION_ATOMIC.to_string(),
    };
    fill(
        POSTCONDITION,
        &[
            ("node", &c.id),
            ("named", &named(c)),
            ("fence", &fence_for(maintains)),
            ("maintains", maintains),
            ("postconditions", &list),
            ("structure", structure.trim_end()),
        ],
    )
}

/// The repair message (RUNTIME.md §3.2.3): every error on its own line, then the request for a
/// corrected complete answer.
pub(crate) fn repair_message(schema_name: &str, errors: &[String]) -> String {
    let lines = errors
        .iter()
        .map(|e| format!("- {}", e.replace('\n', " ")))
        .collect::<Vec<_>>()
        .join("\n");
    fill(REPAIR, &[("errors", &lines), ("schema", schema_name)])
        .trim_end()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::parse_contract;

    fn contract(text: &str, path: &str) -> Contract {
        parse_contract(text.as_bytes(), path).unwrap()
    }

    #[test]
    fn fill_is_one_pass_and_keeps_unknown_placeholders() {
        assert_eq!(
            fill("a {{x}} b {{y}} {{x}} {{", &[("x", "{{y}}"), ("y", "Y")]),
            "a {{y}} b Y {{y}} {{"
        );
        assert_eq!(fill("{{nope}}!", &[]), "{{nope}}!");
        assert_eq!(fill("", &[("x", "1")]), "");
    }

    #[test]
    fn fences_outgrow_backtick_runs() {
        assert_eq!(fence_for("plain"), "```");
        assert_eq!(fence_for("a ```` b ` c"), "`````");
    }

    #[test]
    fn forme_task_lists_nodes_facets_and_excluded_contracts() {
        let a = contract(
            "---\nid: watch\n---\n### Maintains\nm\n#### prices\nd\n#### stock\n",
            "a.prose.md",
        );
        let b = contract(
            "---\nid: inbox\nkind: gateway\n---\n### Maintains\nx\n",
            "b.prose.md",
        );
        let p = contract(
            "---\nid: style\nkind: pattern\n---\n### Goal\ng\n",
            "c.prose.md",
        );
        let set = ContractSet::from_contracts(vec![a, b, p]).unwrap();
        let task = forme_task(&set);
        assert!(task.contains("   - `inbox`: kind `gateway`, no facets (`@atomic` only)\n"));
        assert!(task.contains("   - `watch`: kind `responsibility`, facets `prices`, `stock`\n"));
        assert!(task.contains("get no entry in `nodes`: `style` (pattern)."));
        assert!(!task.contains("{{"));
    }

    #[test]
    fn canonicalizer_task_carries_maintains_and_facet_descriptions() {
        let c = contract(
            "---\nname: price-watch\n---\n### Maintains\nPrices. {{node}} ```x```\n#### prices\nThe set,\nto the cent.\n#### empty\n",
            "p.prose.md",
        );
        let task = canonicalizer_task(&c);
        assert!(task.starts_with("# Task: freeze the materiality of node `price-watch`\n"));
        assert!(task.contains("````\nPrices. {{node}} ```x```\n"));
        assert!(
            task.contains("- `prices`: The set,\n  to the cent.\n- `empty`: (no description)\n")
        );
        assert!(task.contains("Node `price-watch` is faceted."));
        let named = contract(
            "---\nid: w1\nname: Watch\n---\n### Maintains\nm\n#### f\n",
            "w.prose.md",
        );
        assert!(canonicalizer_task(&named).contains("Node `w1` (Watch) is faceted."));
    }

    #[test]
    fn postcondition_task_differs_for_faceted_and_atomic_nodes() {
        let c = contract(
            "---\nname: w\n---\n### Maintains\nPostcondition: one.\nPostcondition: two.\n#### f\n",
            "w.prose.md",
        );
        let mut spec = CanonicalizerSpec::identity("w");
        spec.facets.push(crate::core::canonicalizer::FacetSpec {
            facet: "f".into(),
            paths: vec!["f".into()],
        });
        let task = postcondition_task(&c, Some(&spec));
        assert!(task.contains("1. Postcondition: one.\n2. Postcondition: two."));
        assert!(task.contains("```json\n{\n  \"node\": \"w\","));
        assert!(task.contains("The node's facets: `f`"));
        let atomic = contract("---\nname: a\n---\n### Maintains\nx\n", "a.prose.md");
        let task = postcondition_task(&atomic, None);
        assert!(task.contains("(none: answer `{\"postconditions\": []}`)"));
        assert!(task.contains("Every one of its postconditions must be `render-attested`"));
    }

    #[test]
    fn repair_message_lists_one_error_per_line() {
        let m = repair_message("forme_output", &["$.a: x".into(), "$.b: y\nz".into()]);
        assert_eq!(
            m,
            "Your answer cannot be used. Errors found (JSON path: problem):\n\n- $.a: x\n- $.b: y z\n\nSend a corrected, complete `forme_output` answer that fixes every error above."
        );
    }
}
