//! `compile_node` (RUNTIME.md §4.1, the contract-independent checks of §3.4.3): validation,
//! lowering into a [`CompiledCanonicalizer`], and lints.

use std::collections::HashMap;
use std::fmt;

use super::{ATOMIC, CanonError, CanonicalizerSpec, Collection, NumberRule, TextRule};
use crate::format::json;

/// A soft finding of [`compile_node`] (RUNTIME.md §3.4.3 "lints"): the spec is usable but
/// probably not what the contract meant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lint {
    /// A stable kind: `material-rule-uncovered`, `options-on-immaterial-rule`,
    /// `duplicate-facet-path` or `immaterial-facet-path`.
    pub code: &'static str,
    /// One sentence naming the rule or facet concerned.
    pub message: String,
}

impl fmt::Display for Lint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

/// A lowered field rule.
#[derive(Clone, Debug)]
pub(super) struct Rule {
    pub(super) material: bool,
    pub(super) text: Option<TextRule>,
    /// Only a quantum `> 0`.
    pub(super) quantum: Option<f64>,
    pub(super) set: bool,
}

/// The lowered form of a [`CanonicalizerSpec`] (RUNTIME.md §4.1): the node id, its facet list
/// (`@atomic` first, then the declared facets in spec order), [`apply`](Self::apply),
/// [`serialize`](Self::serialize), [`reduced`](Self::reduced) and the lints found while
/// compiling. Immutable and cheap to share.
#[derive(Clone, Debug)]
pub struct CompiledCanonicalizer {
    pub(super) spec: CanonicalizerSpec,
    /// `@atomic`, then the declared facets.
    pub(super) facets: Vec<String>,
    pub(super) rules: Vec<Rule>,
    /// Rule path (UTF-16) → index into `rules`.
    pub(super) by_path: HashMap<Vec<u16>, usize>,
    pub(super) max_rule_len: usize,
    /// Per declared facet, its paths (UTF-16).
    pub(super) facet_paths: Vec<Vec<Vec<u16>>>,
    lints: Vec<Lint>,
}

fn units(s: &str) -> Vec<u16> {
    s.encode_utf16().collect()
}

pub(super) const DOT: u16 = b'.' as u16;

/// `p` equals `q` or lies under it (`p` starts with `q.`).
pub(super) fn at_or_under(p: &[u16], q: &[u16]) -> bool {
    p.len() >= q.len() && p[..q.len()] == *q && (p.len() == q.len() || p[q.len()] == DOT)
}

/// `p` is a strict ancestor of `q` (`q` starts with `p.`).
pub(super) fn strict_ancestor(p: &[u16], q: &[u16]) -> bool {
    q.len() > p.len() && q[..p.len()] == *p && q[p.len()] == DOT
}

fn check_path(path: &str, at: &str, problems: &mut Vec<String>) {
    if path.is_empty() {
        problems.push(format!("{at} is empty"));
    } else if path.split('.').any(str::is_empty) {
        problems.push(format!("{at} '{path}' has an empty segment"));
    }
}

/// Validates a spec and lowers it (RUNTIME.md §4.1, the contract-independent checks of §3.4.3).
///
/// Checks, all reported together: every rule path and facet path is non-empty with no empty
/// dotted segment; rule paths are unique; every `number.quantum` is `null`, `0` or finite and
/// `> 0`; facet names are non-empty, never `@atomic`, and not repeated; every facet has at least
/// one path. The contract-dependent check (facet set equals the declared set) is
/// [`CanonicalizerSpec::check_declared_facets`].
///
/// Errors: [`CanonError::Invalid`] listing every problem. Lints are available from
/// [`CompiledCanonicalizer::lints`].
pub fn compile_node(spec: &CanonicalizerSpec) -> Result<CompiledCanonicalizer, CanonError> {
    let mut problems = Vec::new();
    let mut by_path: HashMap<Vec<u16>, usize> = HashMap::with_capacity(spec.fields.len());
    let mut rules = Vec::with_capacity(spec.fields.len());
    for (i, f) in spec.fields.iter().enumerate() {
        let at = format!("fields[{i}].path");
        check_path(&f.path, &at, &mut problems);
        if let Some(prev) = by_path.get(&units(&f.path)) {
            problems.push(format!("{at} '{}' repeats fields[{prev}].path", f.path));
        } else {
            by_path.insert(units(&f.path), i);
        }
        let mut quantum = None;
        if let Some(NumberRule { quantum: Some(q) }) = f.number {
            if q.is_nan() || q.is_infinite() || q < 0.0 {
                problems.push(format!(
                    "fields[{i}].number.quantum must be null, 0, or a finite number greater than 0 (found {})",
                    json::number_to_string(q)
                ));
            } else if q > 0.0 {
                quantum = Some(q);
            }
        }
        rules.push(Rule {
            material: f.material,
            text: f.text,
            quantum,
            set: f.collection == Some(Collection::Set),
        });
    }
    let mut facets = vec![ATOMIC.to_string()];
    let mut facet_paths = Vec::with_capacity(spec.facets.len());
    for (i, f) in spec.facets.iter().enumerate() {
        if f.facet.is_empty() {
            problems.push(format!("facets[{i}].facet is empty"));
        } else if f.facet == ATOMIC {
            problems.push(format!(
                "facets[{i}].facet '{ATOMIC}' is reserved and must not be declared"
            ));
        } else if let Some(prev) = spec.facets[..i].iter().position(|p| p.facet == f.facet) {
            problems.push(format!(
                "facets[{i}].facet '{}' is declared twice (also facets[{prev}])",
                f.facet
            ));
        }
        if f.paths.is_empty() {
            problems.push(format!(
                "facets[{i}].paths is empty: facet '{}' needs at least one path",
                f.facet
            ));
        }
        for (j, p) in f.paths.iter().enumerate() {
            check_path(p, &format!("facets[{i}].paths[{j}]"), &mut problems);
        }
        facets.push(f.facet.clone());
        facet_paths.push(f.paths.iter().map(|p| units(p)).collect::<Vec<_>>());
    }
    if !problems.is_empty() {
        return Err(CanonError::Invalid {
            node: spec.node.clone(),
            problems,
        });
    }
    let max_rule_len = by_path.keys().map(Vec::len).max().unwrap_or(0);
    let mut compiled = CompiledCanonicalizer {
        spec: spec.clone(),
        facets,
        rules,
        by_path,
        max_rule_len,
        facet_paths,
        lints: Vec::new(),
    };
    compiled.lints = compiled.find_lints();
    Ok(compiled)
}

impl CompiledCanonicalizer {
    /// The node id.
    pub fn node(&self) -> &str {
        &self.spec.node
    }

    /// The spec this canonicalizer was compiled from.
    pub fn spec(&self) -> &CanonicalizerSpec {
        &self.spec
    }

    /// The facet list: `@atomic` first, then the declared facets in spec order.
    pub fn facets(&self) -> &[String] {
        &self.facets
    }

    /// The declared facets (the facet list without `@atomic`).
    pub(crate) fn declared_facets(&self) -> &[String] {
        &self.facets[1..]
    }

    /// True when the spec declares at least one facet (a faceted node, RUNTIME.md §5.1).
    pub(crate) fn is_faceted(&self) -> bool {
        self.facets.len() > 1
    }

    /// Soft findings of `compile_node` (RUNTIME.md §3.4.3).
    pub fn lints(&self) -> &[Lint] {
        &self.lints
    }

    fn find_lints(&self) -> Vec<Lint> {
        let mut lints = Vec::new();
        let all_facet_paths: Vec<&Vec<u16>> = self.facet_paths.iter().flatten().collect();
        for f in &self.spec.fields {
            let p = units(&f.path);
            if f.material
                && !all_facet_paths.is_empty()
                && !all_facet_paths
                    .iter()
                    .any(|q| at_or_under(&p, q) || strict_ancestor(&p, q))
            {
                lints.push(Lint {
                    code: "material-rule-uncovered",
                    message: format!(
                        "rule '{}' is material but no facet path covers it: it moves only {ATOMIC}",
                        f.path
                    ),
                });
            }
            if !f.material && (f.text.is_some() || f.number.is_some()) {
                lints.push(Lint {
                    code: "options-on-immaterial-rule",
                    message: format!(
                        "rule '{}' is immaterial: its text/number options have no effect",
                        f.path
                    ),
                });
            }
        }
        for (fi, f) in self.spec.facets.iter().enumerate() {
            for (j, p) in f.paths.iter().enumerate() {
                if f.paths[..j].contains(p) {
                    lints.push(Lint {
                        code: "duplicate-facet-path",
                        message: format!("facet '{}' lists path '{p}' twice", f.facet),
                    });
                    continue;
                }
                let q = &self.facet_paths[fi][j];
                if !self.path_can_be_material(q) {
                    lints.push(Lint {
                        code: "immaterial-facet-path",
                        message: format!(
                            "facet '{}' path '{p}' is immaterial and no material rule lies under it: it can never carry material",
                            f.facet
                        ),
                    });
                }
            }
        }
        lints
    }

    /// Whether anything at or under `q` can be material: its governing rule (or the default) is
    /// material, or some material rule lies under it.
    fn path_can_be_material(&self, q: &[u16]) -> bool {
        let mut governing = None;
        let mut best = 0;
        for (p, &i) in &self.by_path {
            if at_or_under(q, p) && p.len() >= best {
                best = p.len();
                governing = Some(i);
            }
        }
        let material = governing.map_or(self.spec.default_material, |i| self.rules[i].material);
        material
            || self
                .by_path
                .iter()
                .any(|(p, &i)| strict_ancestor(q, p) && self.rules[i].material)
    }
}
