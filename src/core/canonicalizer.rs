//! The canonicalizer language and `compile_node` (RUNTIME.md §4).
//!
//! A canonicalization spec ([`CanonicalizerSpec`]) is the frozen materiality decision of one
//! faceted node: which dotted paths of its `truth.json` are material, how text and numbers
//! normalize, which arrays are sets, and which paths carry each declared facet. It is plain data,
//! persisted as the `canonicalizer` member of the node's compile file (FORMATS.md §15.5), and
//! [`compile_node`] lowers it, with no model and no network, into a [`CompiledCanonicalizer`]: a
//! deterministic function from a JSON value (JavaScript semantics, FORMATS.md §3.1) to an ordered
//! fingerprint map (`@atomic` first, then the declared facets in spec order).
//!
//! Semantics implemented here, in the order they apply:
//!
//! 1. **Rule resolution** (§4.3): every position has a dotted path (array elements share their
//!    array's path); the governing rule is the one whose path equals the position's path or is a
//!    dotted prefix of it, choosing the longest. Matching is textual on UTF-16 code units, so a
//!    rule `a.b` also governs a top-level key literally named `a.b`.
//! 2. **Facet restriction** (§4.6): when reducing for a declared facet, a position takes part only
//!    if its path is empty (the root), equals a facet path, lies under one, or is an ancestor of
//!    one. Other positions are dropped before materiality applies.
//! 3. **Reduction** (§4.4): scalars are kept when material; arrays keep their surviving elements
//!    (an empty array survives only when material); objects keep their surviving members, and an
//!    object with none survives (as `{}`) only when a rule with exactly its non-root path is
//!    material.
//! 4. **Normalization** (§4.5): every kept string is put in NFC, then (with a `text` option)
//!    whitespace runs of the JavaScript `\s` class collapse to one space and the ends are trimmed,
//!    then the string is lower-cased with the Unicode default mapping; numbers with a positive
//!    quantum `q` become `round(x / q) × q` (JavaScript `Math.round`), `-0` becoming `0`; `set`
//!    arrays are sorted by the UTF-16 order of their elements' canonical JSON and de-duplicated.
//! 5. **Digest** (§4.7): each token is `sha256:` + hex SHA-256 of the canonical JSON of the reduced
//!    value, `null` for a dropped root
//!    ([`NULL_ADDRESS`](crate::format::address::NULL_ADDRESS)).
//!
//! Choices the specification leaves open, documented here:
//!
//! * Lower-casing uses Rust's [`str::to_lowercase`], which — like JavaScript's `toLowerCase` —
//!   applies the unconditional Unicode default mappings plus the language-independent
//!   `Final_Sigma` rule (`ΟΔΟΣ` lower-cases to `οδος` ending in U+03C2 `ς`), and maps U+0130 `İ`
//!   to `i` + U+0307 (two code points). The two can
//!   only differ where the Unicode versions of Rust's standard library and the JavaScript engine
//!   differ.
//! * Rounding follows `Math.round` exactly (the nearest integer, ties toward +∞), which differs
//!   from a literal `floor(v + 0.5)` only where `v + 0.5` itself rounds (for example
//!   `0.49999999999999994`).
//! * A member whose key is the empty string has the empty path, like the root; for facet
//!   restriction it therefore always takes part.
//! * Strings holding lone surrogates are normalized run by run between the lone surrogates, which
//!   are kept as they are (they are neither whitespace nor cased nor composable).
//! * A kept number that is not finite even without quantization (`1e400` parses to infinity) is
//!   the same error as a non-finite quantization result: it cannot be serialized.
//! * Values nested deeper than [`json::MAX_DEPTH`] containers (more than the parser accepts) are
//!   an error ([`CanonError::TooDeep`]) instead of exhausting the stack.

use std::collections::HashMap;
use std::fmt;

use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfc_quick};

use crate::format::address::address;
use crate::format::json::{self, JsString, Object, Value, utf16_cmp};
use crate::format::receipt::Fingerprints;

/// The reserved facet name covering the whole material truth (FORMATS.md §8.1).
pub const ATOMIC: &str = "@atomic";

/// The `text` option of a field rule (RUNTIME.md §3.4.2, §4.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextRule {
    /// Collapse every whitespace run to one space and trim the ends. Defaults to `true` when the
    /// member is missing (specs written by the reference may omit it).
    pub collapse_whitespace: bool,
    /// Lower-case with the Unicode default mapping. Defaults to `false` when missing.
    pub case_insensitive: bool,
}

/// The `number` option of a field rule (RUNTIME.md §3.4.2, §4.5).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NumberRule {
    /// The quantum `q`: `None` or `Some(0.0)` keeps numbers exact; otherwise finite and `> 0`
    /// (checked by [`compile_node`]).
    pub quantum: Option<f64>,
}

/// The `collection` option of a field rule: how arrays governed by the rule are ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Collection {
    /// `"ordered"`: keep the input order (also the meaning of an absent option).
    Ordered,
    /// `"set"`: sort by canonical serialization (UTF-16 order) and de-duplicate.
    Set,
}

impl Collection {
    /// The JSON spelling (`"ordered"` / `"set"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Collection::Ordered => "ordered",
            Collection::Set => "set",
        }
    }
}

/// One field rule: `{path, material, text?, number?, collection?}` (RUNTIME.md §3.4.2).
#[derive(Clone, Debug, PartialEq)]
pub struct FieldRule {
    /// Dotted path into `truth.json` (`prices`, `prices.vendor`).
    pub path: String,
    /// Keep (`true`) or drop (`false`) the field and its subtree, unless a longer rule says
    /// otherwise.
    pub material: bool,
    /// Text normalization, if any.
    pub text: Option<TextRule>,
    /// Number quantization, if any.
    pub number: Option<NumberRule>,
    /// Array ordering, if given (`None` means ordered).
    pub collection: Option<Collection>,
}

impl FieldRule {
    /// A rule with no normalization options.
    pub fn new(path: impl Into<String>, material: bool) -> FieldRule {
        FieldRule {
            path: path.into(),
            material,
            text: None,
            number: None,
            collection: None,
        }
    }
}

/// One facet declaration: `{facet, paths}` (RUNTIME.md §3.4.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FacetSpec {
    /// The declared facet name (never `@atomic`).
    pub facet: String,
    /// The dotted paths carrying the facet (non-empty list).
    pub paths: Vec<String>,
}

/// A canonicalization spec `{node, fields, default_material, facets}` (RUNTIME.md §4.1),
/// persisted as the `canonicalizer` member of a compile file (FORMATS.md §15.5).
#[derive(Clone, Debug, PartialEq)]
pub struct CanonicalizerSpec {
    /// The node id.
    pub node: String,
    /// Field rules, in spec order.
    pub fields: Vec<FieldRule>,
    /// Materiality of positions no rule governs.
    pub default_material: bool,
    /// Declared facets, in declared order.
    pub facets: Vec<FacetSpec>,
}

/// Errors of spec parsing, `compile_node` and application.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CanonError {
    /// The spec JSON has the wrong shape. `at` is the JSON path inside the spec
    /// (`fields[1].text.case_insensitive`; empty for the spec itself).
    #[error("{}", shape_message(at, message))]
    Shape {
        /// JSON path of the offending member, relative to the spec.
        at: String,
        /// What is wrong (`expected a boolean, found string`).
        message: String,
    },
    /// `compile_node` checks failed (RUNTIME.md §3.4.3, contract-independent part). Every
    /// problem found is listed.
    #[error("invalid canonicalization spec for node '{node}': {}", problems.join("; "))]
    Invalid {
        /// The spec's node id.
        node: String,
        /// One sentence per problem, each naming the offending spec member.
        problems: Vec<String>,
    },
    /// A kept number is not finite (after quantization, or already in the input). This is a
    /// render failure (`structured truth invalid: <message>`, RUNTIME.md §5.3).
    #[error("{}", non_finite_message(path, *quantum))]
    NonFinite {
        /// The dotted path of the number (empty for the root).
        path: String,
        /// The quantum applied, if any.
        quantum: Option<f64>,
    },
    /// `serialize`/`reduced` was asked for a facet the canonicalizer does not emit.
    #[error("unknown facet '{facet}' for node '{node}'")]
    UnknownFacet {
        /// The node id.
        node: String,
        /// The facet asked for.
        facet: String,
    },
    /// The value nests more than [`json::MAX_DEPTH`] arrays/objects.
    #[error(
        "value nested deeper than {} levels at {}",
        json::MAX_DEPTH,
        describe_path(path)
    )]
    TooDeep {
        /// The dotted path where the limit was hit.
        path: String,
    },
}

fn shape_message(at: &str, message: &str) -> String {
    if at.is_empty() {
        format!("canonicalization spec: {message}")
    } else {
        format!("canonicalization spec: {at}: {message}")
    }
}

fn describe_path(path: &str) -> String {
    if path.is_empty() {
        "the root".to_string()
    } else {
        format!("path '{path}'")
    }
}

fn non_finite_message(path: &str, quantum: Option<f64>) -> String {
    match quantum {
        Some(q) => format!(
            "number at {} is not finite after quantization by {}",
            describe_path(path),
            json::number_to_string(q)
        ),
        None => format!("number at {} is not finite", describe_path(path)),
    }
}

// ---------------------------------------------------------------------------------------------
// Spec <-> JSON
// ---------------------------------------------------------------------------------------------

fn shape(at: impl Into<String>, message: impl Into<String>) -> CanonError {
    CanonError::Shape {
        at: at.into(),
        message: message.into(),
    }
}

fn expected(at: &str, what: &str, found: &Value) -> CanonError {
    shape(at, format!("expected {what}, found {}", found.type_name()))
}

fn member<'v>(obj: &'v Object, key: &str, at: &str) -> Result<&'v Value, CanonError> {
    obj.get(key)
        .ok_or_else(|| shape(join_at(at, key), "required member is missing"))
}

fn join_at(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_string()
    } else {
        format!("{at}.{key}")
    }
}

fn as_object<'v>(v: &'v Value, at: &str) -> Result<&'v Object, CanonError> {
    v.as_object().ok_or_else(|| expected(at, "an object", v))
}

fn as_bool(v: &Value, at: &str) -> Result<bool, CanonError> {
    match v {
        Value::Bool(b) => Ok(*b),
        _ => Err(expected(at, "a boolean", v)),
    }
}

fn as_text(v: &Value, at: &str) -> Result<String, CanonError> {
    match v {
        Value::String(JsString::Utf8(s)) => Ok(s.clone()),
        Value::String(JsString::Wtf16(_)) => Err(shape(
            at,
            "string holds a lone surrogate (not valid Unicode)",
        )),
        _ => Err(expected(at, "a string", v)),
    }
}

/// A member that may be missing or `null` (both mean absent).
fn optional<'v>(obj: &'v Object, key: &str) -> Option<&'v Value> {
    match obj.get(key) {
        None | Some(Value::Null) => None,
        Some(v) => Some(v),
    }
}

impl CanonicalizerSpec {
    /// The identity spec of an atomic-only node: no rules, everything material, no facets
    /// (RUNTIME.md §5.2; recorded in the compile file of nodes without declared facets).
    pub fn identity(node: impl Into<String>) -> CanonicalizerSpec {
        CanonicalizerSpec {
            node: node.into(),
            fields: Vec::new(),
            default_material: true,
            facets: Vec::new(),
        }
    }

    /// True when the spec declares no facet (an atomic-only node).
    pub fn is_atomic_only(&self) -> bool {
        self.facets.is_empty()
    }

    /// Reads a spec from its JSON form (FORMATS.md §15.5 `canonicalizer`).
    ///
    /// Required: `node` (string), `fields` (array), `default_material` (boolean), `facets`
    /// (array); per rule `path` (string) and `material` (boolean); per facet `facet` (string)
    /// and `paths` (array of strings). Optional members may be missing or `null`: `text` (object;
    /// a missing `collapse_whitespace` means `true`, a missing `case_insensitive` `false`),
    /// `number` (object with optional `quantum`, number or null), `collection` (`"ordered"` or
    /// `"set"`). Unknown members are ignored. Range checks (paths, quantum, facets) belong to
    /// [`compile_node`].
    ///
    /// Errors: [`CanonError::Shape`] naming the JSON path of the first wrong member.
    pub fn from_value(v: &Value) -> Result<CanonicalizerSpec, CanonError> {
        let obj = as_object(v, "")?;
        let node = as_text(member(obj, "node", "")?, "node")?;
        let fields_v = member(obj, "fields", "")?;
        let fields_a = fields_v
            .as_array()
            .ok_or_else(|| expected("fields", "an array", fields_v))?;
        let mut fields = Vec::with_capacity(fields_a.len());
        for (i, f) in fields_a.iter().enumerate() {
            fields.push(parse_rule(f, &format!("fields[{i}]"))?);
        }
        let default_material = as_bool(member(obj, "default_material", "")?, "default_material")?;
        let facets_v = member(obj, "facets", "")?;
        let facets_a = facets_v
            .as_array()
            .ok_or_else(|| expected("facets", "an array", facets_v))?;
        let mut facets = Vec::with_capacity(facets_a.len());
        for (i, f) in facets_a.iter().enumerate() {
            let at = format!("facets[{i}]");
            let o = as_object(f, &at)?;
            let facet = as_text(member(o, "facet", &at)?, &join_at(&at, "facet"))?;
            let paths_at = join_at(&at, "paths");
            let paths_v = member(o, "paths", &at)?;
            let paths_a = paths_v
                .as_array()
                .ok_or_else(|| expected(&paths_at, "an array", paths_v))?;
            let mut paths = Vec::with_capacity(paths_a.len());
            for (j, p) in paths_a.iter().enumerate() {
                paths.push(as_text(p, &format!("{paths_at}[{j}]"))?);
            }
            facets.push(FacetSpec { facet, paths });
        }
        Ok(CanonicalizerSpec {
            node,
            fields,
            default_material,
            facets,
        })
    }

    /// The JSON form, keys in the FORMATS.md §15.5 order (`node`, `fields`, `default_material`,
    /// `facets`; per rule `path`, `material`, then `text`, `number`, `collection` only when
    /// present; `text` always spells both booleans; `number` is `{"quantum": q}` with `q` a
    /// number or `null`).
    pub fn to_value(&self) -> Value {
        let mut o = Object::new();
        o.push_unique("node", Value::str(self.node.clone()));
        let fields = self
            .fields
            .iter()
            .map(|r| {
                let mut f = Object::new();
                f.push_unique("path", Value::str(r.path.clone()));
                f.push_unique("material", Value::Bool(r.material));
                if let Some(t) = r.text {
                    let mut t_o = Object::new();
                    t_o.push_unique("collapse_whitespace", Value::Bool(t.collapse_whitespace));
                    t_o.push_unique("case_insensitive", Value::Bool(t.case_insensitive));
                    f.push_unique("text", Value::Object(t_o));
                }
                if let Some(n) = r.number {
                    let mut n_o = Object::new();
                    n_o.push_unique("quantum", n.quantum.map_or(Value::Null, Value::Number));
                    f.push_unique("number", Value::Object(n_o));
                }
                if let Some(c) = r.collection {
                    f.push_unique("collection", Value::str(c.as_str()));
                }
                Value::Object(f)
            })
            .collect();
        o.push_unique("fields", Value::Array(fields));
        o.push_unique("default_material", Value::Bool(self.default_material));
        let facets = self
            .facets
            .iter()
            .map(|f| {
                let mut fo = Object::new();
                fo.push_unique("facet", Value::str(f.facet.clone()));
                fo.push_unique(
                    "paths",
                    Value::Array(f.paths.iter().map(|p| Value::str(p.clone())).collect()),
                );
                Value::Object(fo)
            })
            .collect();
        o.push_unique("facets", Value::Array(facets));
        Value::Object(o)
    }

    /// The contract-dependent check of RUNTIME.md §3.4.3: the spec's facet names must equal the
    /// node's declared facet set exactly (no missing, extra or duplicate facet; `@atomic` is
    /// never declared). `declared` is the contract's facet list (without `@atomic`).
    ///
    /// Errors: [`CanonError::Invalid`] listing every difference.
    pub fn check_declared_facets(&self, declared: &[String]) -> Result<(), CanonError> {
        let mut problems = Vec::new();
        let mut seen: Vec<&str> = Vec::new();
        for (i, f) in self.facets.iter().enumerate() {
            if f.facet == ATOMIC {
                problems.push(format!(
                    "facets[{i}].facet '{ATOMIC}' is reserved and must not be declared"
                ));
            } else if seen.contains(&f.facet.as_str()) {
                problems.push(format!("facets[{i}].facet '{}' is listed twice", f.facet));
            } else if !declared.contains(&f.facet) {
                problems.push(format!(
                    "facets[{i}].facet '{}' is not a declared facet of the node",
                    f.facet
                ));
            }
            seen.push(&f.facet);
        }
        for d in declared {
            if !self.facets.iter().any(|f| f.facet == *d) {
                problems.push(format!("declared facet '{d}' has no entry in facets"));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(CanonError::Invalid {
                node: self.node.clone(),
                problems,
            })
        }
    }
}

fn parse_rule(v: &Value, at: &str) -> Result<FieldRule, CanonError> {
    let o = as_object(v, at)?;
    let path = as_text(member(o, "path", at)?, &join_at(at, "path"))?;
    let material = as_bool(member(o, "material", at)?, &join_at(at, "material"))?;
    let text = match optional(o, "text") {
        None => None,
        Some(t) => {
            let t_at = join_at(at, "text");
            let to = as_object(t, &t_at)?;
            let collapse_whitespace = match optional(to, "collapse_whitespace") {
                None => true,
                Some(b) => as_bool(b, &join_at(&t_at, "collapse_whitespace"))?,
            };
            let case_insensitive = match optional(to, "case_insensitive") {
                None => false,
                Some(b) => as_bool(b, &join_at(&t_at, "case_insensitive"))?,
            };
            Some(TextRule {
                collapse_whitespace,
                case_insensitive,
            })
        }
    };
    let number = match optional(o, "number") {
        None => None,
        Some(n) => {
            let n_at = join_at(at, "number");
            let no = as_object(n, &n_at)?;
            let quantum = match optional(no, "quantum") {
                None => None,
                Some(Value::Number(q)) => Some(*q),
                Some(other) => {
                    return Err(expected(
                        &join_at(&n_at, "quantum"),
                        "a number or null",
                        other,
                    ));
                }
            };
            Some(NumberRule { quantum })
        }
    };
    let collection = match optional(o, "collection") {
        None => None,
        Some(c) => {
            let c_at = join_at(at, "collection");
            match as_text(c, &c_at)?.as_str() {
                "ordered" => Some(Collection::Ordered),
                "set" => Some(Collection::Set),
                other => {
                    return Err(shape(
                        c_at,
                        format!("expected \"ordered\", \"set\" or null, found \"{other}\""),
                    ));
                }
            }
        }
    };
    Ok(FieldRule {
        path,
        material,
        text,
        number,
        collection,
    })
}

// ---------------------------------------------------------------------------------------------
// compile_node
// ---------------------------------------------------------------------------------------------

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

#[derive(Clone, Debug)]
struct Rule {
    material: bool,
    text: Option<TextRule>,
    /// Only a quantum `> 0`.
    quantum: Option<f64>,
    set: bool,
}

/// The lowered form of a [`CanonicalizerSpec`] (RUNTIME.md §4.1): the node id, its facet list
/// (`@atomic` first, then the declared facets in spec order), [`apply`](Self::apply),
/// [`serialize`](Self::serialize), [`reduced`](Self::reduced) and the lints found while
/// compiling. Immutable and cheap to share.
#[derive(Clone, Debug)]
pub struct CompiledCanonicalizer {
    spec: CanonicalizerSpec,
    facets: Vec<String>,
    rules: Vec<Rule>,
    by_path: HashMap<Vec<u16>, usize>,
    max_rule_len: usize,
    facet_paths: Vec<Vec<Vec<u16>>>,
    lints: Vec<Lint>,
}

fn units(s: &str) -> Vec<u16> {
    s.encode_utf16().collect()
}

const DOT: u16 = b'.' as u16;

/// `p` equals `q` or lies under it (`p` starts with `q.`).
fn at_or_under(p: &[u16], q: &[u16]) -> bool {
    p.len() >= q.len() && p[..q.len()] == *q && (p.len() == q.len() || p[q.len()] == DOT)
}

/// `p` is a strict ancestor of `q` (`q` starts with `p.`).
fn strict_ancestor(p: &[u16], q: &[u16]) -> bool {
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

// ---------------------------------------------------------------------------------------------
// The compiled canonicalizer
// ---------------------------------------------------------------------------------------------

/// Where a position stands: its governing rule, the rule with exactly its path, and whether it
/// lies at or under a facet path of the current restriction (so every descendant takes part).
#[derive(Clone, Copy)]
struct Pos {
    rule: Option<usize>,
    exact: Option<usize>,
    inside: bool,
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
    pub fn declared_facets(&self) -> &[String] {
        &self.facets[1..]
    }

    /// True when the spec declares at least one facet (a faceted node, RUNTIME.md §5.1).
    pub fn is_faceted(&self) -> bool {
        self.facets.len() > 1
    }

    /// Soft findings of `compile_node` (RUNTIME.md §3.4.3).
    pub fn lints(&self) -> &[Lint] {
        &self.lints
    }

    /// The canonicalizer ref `{node, artifact: "canonicalizer/<node>", facets}` (RUNTIME.md
    /// §4.1), `facets` being [`facets`](Self::facets).
    pub fn artifact_ref(&self) -> Value {
        let mut o = Object::new();
        o.push_unique("node", Value::str(self.spec.node.clone()));
        o.push_unique(
            "artifact",
            Value::str(format!("canonicalizer/{}", self.spec.node)),
        );
        o.push_unique(
            "facets",
            Value::Array(self.facets.iter().map(|f| Value::str(f.clone())).collect()),
        );
        Value::Object(o)
    }

    /// The fingerprint map of `value` (RUNTIME.md §4.6): `@atomic` (the whole reduction) first,
    /// then each declared facet in spec order; each token is `sha256:<hex>` of the canonical JSON
    /// of the reduced value
    /// ([`NULL_ADDRESS`](crate::format::address::NULL_ADDRESS) for a dropped root).
    ///
    /// Errors: [`CanonError::NonFinite`] when a kept number is not finite (after quantization);
    /// [`CanonError::TooDeep`] beyond [`json::MAX_DEPTH`] nested containers.
    pub fn apply(&self, value: &Value) -> Result<Fingerprints, CanonError> {
        let mut out = Vec::with_capacity(self.facets.len());
        for (i, facet) in self.facets.iter().enumerate() {
            let text = self.serialize_at(value, i)?;
            out.push((facet.clone(), address(text.as_bytes())));
        }
        Ok(Fingerprints(out))
    }

    /// The canonical JSON text of `value` reduced for `facet` (`@atomic` or a declared facet):
    /// the exact bytes a token digests; `null` for a dropped root.
    ///
    /// Errors: as [`apply`](Self::apply), plus [`CanonError::UnknownFacet`].
    pub fn serialize(&self, value: &Value, facet: &str) -> Result<String, CanonError> {
        let i = self.facet_index(facet)?;
        self.serialize_at(value, i)
    }

    /// The reduced, normalized value of `value` for `facet` (`None` when the root is dropped):
    /// the input of the facts of RUNTIME.md §5.4.
    ///
    /// Errors: as [`serialize`](Self::serialize).
    pub fn reduced(&self, value: &Value, facet: &str) -> Result<Option<Value>, CanonError> {
        let i = self.facet_index(facet)?;
        self.reduce_at(value, i)
    }

    /// The token of one facet (`sha256:<hex>`), without computing the others.
    ///
    /// Errors: as [`serialize`](Self::serialize).
    pub fn token(&self, value: &Value, facet: &str) -> Result<String, CanonError> {
        Ok(address(self.serialize(value, facet)?.as_bytes()))
    }

    fn facet_index(&self, facet: &str) -> Result<usize, CanonError> {
        self.facets
            .iter()
            .position(|f| f == facet)
            .ok_or_else(|| CanonError::UnknownFacet {
                node: self.spec.node.clone(),
                facet: facet.to_string(),
            })
    }

    fn serialize_at(&self, value: &Value, i: usize) -> Result<String, CanonError> {
        match self.reduce_at(value, i)? {
            None => Ok("null".to_string()),
            // Every kept number was checked finite during reduction.
            Some(v) => json::canonical_string(&v).map_err(|_| CanonError::NonFinite {
                path: String::new(),
                quantum: None,
            }),
        }
    }

    /// `i` indexes [`facets`](Self::facets): 0 is `@atomic` (no restriction).
    fn reduce_at(&self, value: &Value, i: usize) -> Result<Option<Value>, CanonError> {
        let restrict = if i == 0 {
            None
        } else {
            self.facet_paths.get(i - 1).map(Vec::as_slice)
        };
        let mut walk = Walk {
            c: self,
            restrict,
            path: Vec::new(),
        };
        let root = Pos {
            rule: None,
            exact: None,
            inside: restrict.is_none(),
        };
        walk.reduce(value, root, 0)
    }

    fn lookup(&self, path: &[u16]) -> Option<usize> {
        if path.len() > self.max_rule_len || path.is_empty() {
            return None;
        }
        self.by_path.get(path).copied()
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

struct Walk<'a> {
    c: &'a CompiledCanonicalizer,
    restrict: Option<&'a [Vec<u16>]>,
    /// The current position's path as UTF-16 code units (a shared buffer).
    path: Vec<u16>,
}

impl Walk<'_> {
    fn path_text(&self) -> String {
        String::from_utf16_lossy(&self.path)
    }

    /// The position of the member whose path is `self.path`, given its parent's position and
    /// where the member's key starts in the buffer. `None` when facet restriction drops it.
    fn child_pos(&self, parent: Pos, key_start: usize) -> Option<Pos> {
        let path = &self.path[..];
        let inside = if parent.inside {
            true
        } else if path.is_empty() {
            false
        } else {
            let restrict = self.restrict.unwrap_or(&[]);
            if restrict.iter().any(|q| at_or_under(path, q)) {
                true
            } else if restrict.iter().any(|q| strict_ancestor(path, q)) {
                false
            } else {
                return None;
            }
        };
        let exact = self.c.lookup(path);
        let mut rule = exact;
        if rule.is_none() {
            // Dotted prefixes ending inside the key itself (a key containing '.'), longest first.
            let lim = path.len().min(self.c.max_rule_len + 1);
            let mut i = lim;
            while i > key_start {
                i -= 1;
                if path[i] == DOT
                    && let Some(r) = self.c.lookup(&path[..i])
                {
                    rule = Some(r);
                    break;
                }
            }
        }
        Some(Pos {
            rule: rule.or(parent.rule),
            exact,
            inside,
        })
    }

    fn reduce(&mut self, v: &Value, pos: Pos, depth: usize) -> Result<Option<Value>, CanonError> {
        let rule = pos.rule.map(|i| &self.c.rules[i]);
        let material = rule.map_or(self.c.spec.default_material, |r| r.material);
        match v {
            Value::Null | Value::Bool(_) => Ok(material.then(|| v.clone())),
            Value::Number(x) => {
                if !material {
                    return Ok(None);
                }
                let quantum = rule.and_then(|r| r.quantum);
                let y = match quantum {
                    Some(q) => quantize(*x, q),
                    None => *x,
                };
                if !y.is_finite() {
                    return Err(CanonError::NonFinite {
                        path: self.path_text(),
                        quantum,
                    });
                }
                Ok(Some(Value::Number(y)))
            }
            Value::String(s) => {
                if !material {
                    return Ok(None);
                }
                Ok(Some(Value::String(normalize_text(
                    s,
                    rule.and_then(|r| r.text),
                ))))
            }
            Value::Array(items) => {
                if depth >= json::MAX_DEPTH {
                    return Err(CanonError::TooDeep {
                        path: self.path_text(),
                    });
                }
                let mut out = Vec::new();
                for item in items {
                    if let Some(r) = self.reduce(item, pos, depth + 1)? {
                        out.push(r);
                    }
                }
                if out.is_empty() && !material {
                    return Ok(None);
                }
                if rule.is_some_and(|r| r.set) {
                    out = sort_dedup(out)?;
                }
                Ok(Some(Value::Array(out)))
            }
            Value::Object(obj) => {
                if depth >= json::MAX_DEPTH {
                    return Err(CanonError::TooDeep {
                        path: self.path_text(),
                    });
                }
                let mut out = Object::new();
                let base = self.path.len();
                for (k, val) in obj.iter() {
                    if base > 0 {
                        self.path.push(DOT);
                    }
                    let key_start = self.path.len();
                    match k {
                        JsString::Utf8(s) => self.path.extend(s.encode_utf16()),
                        JsString::Wtf16(u) => self.path.extend_from_slice(u),
                    }
                    let reduced = match self.child_pos(pos, key_start) {
                        Some(child) => self.reduce(val, child, depth + 1),
                        None => Ok(None),
                    };
                    self.path.truncate(base);
                    if let Some(r) = reduced? {
                        out.push_unique(k.clone(), r);
                    }
                }
                if !out.is_empty() {
                    return Ok(Some(Value::Object(out)));
                }
                // The root has the empty path and no rule has it, so `exact` is `None` there.
                let kept_empty = pos.exact.is_some_and(|i| self.c.rules[i].material);
                Ok(kept_empty.then_some(Value::Object(out)))
            }
        }
    }
}

/// JavaScript `Math.round(x / q) * q` with `-0` mapped to `0` (RUNTIME.md §4.5).
fn quantize(x: f64, q: f64) -> f64 {
    let y = js_round(x / q) * q;
    if y == 0.0 { 0.0 } else { y }
}

/// `Math.round`: the integral value nearest to `v`, ties toward +∞. Exact: `v - floor(v)` is
/// representable for every finite double.
fn js_round(v: f64) -> f64 {
    if !v.is_finite() {
        return v;
    }
    let f = v.floor();
    if v - f >= 0.5 { f + 1.0 } else { f }
}

/// Sorts by canonical serialization in UTF-16 order and removes duplicates (RUNTIME.md §4.5).
fn sort_dedup(items: Vec<Value>) -> Result<Vec<Value>, CanonError> {
    let mut keyed = Vec::with_capacity(items.len());
    for v in items {
        let text = json::canonical_string(&v).map_err(|_| CanonError::NonFinite {
            path: String::new(),
            quantum: None,
        })?;
        keyed.push((text, v));
    }
    keyed.sort_by(|a, b| utf16_cmp(&a.0, &b.0));
    keyed.dedup_by(|a, b| a.0 == b.0);
    Ok(keyed.into_iter().map(|(_, v)| v).collect())
}

/// The JavaScript `\s` class (RUNTIME.md §4.5).
pub fn is_js_whitespace(c: u32) -> bool {
    matches!(
        c,
        0x09..=0x0D
            | 0x20
            | 0xA0
            | 0x1680
            | 0x2000..=0x200A
            | 0x2028
            | 0x2029
            | 0x202F
            | 0x205F
            | 0x3000
            | 0xFEFF
    )
}

fn nfc(s: &str) -> String {
    if is_nfc_quick(s.chars()) == IsNormalized::Yes {
        s.to_string()
    } else {
        s.nfc().collect()
    }
}

fn collapse(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut pending = false;
    for c in s.chars() {
        if is_js_whitespace(c as u32) {
            pending = true;
        } else {
            if pending && !out.is_empty() {
                out.push(' ');
            }
            pending = false;
            out.push(c);
        }
    }
    out
}

fn collapse_units(u: &[u16]) -> Vec<u16> {
    let mut out = Vec::with_capacity(u.len());
    let mut pending = false;
    for &c in u {
        if is_js_whitespace(u32::from(c)) {
            pending = true;
        } else {
            if pending && !out.is_empty() {
                out.push(0x20);
            }
            pending = false;
            out.push(c);
        }
    }
    out
}

/// Applies `f` to every maximal run of valid text between lone surrogates.
fn map_runs(u: &[u16], f: impl Fn(&str) -> String) -> Vec<u16> {
    let mut out = Vec::with_capacity(u.len());
    let mut run = String::new();
    for r in char::decode_utf16(u.iter().copied()) {
        match r {
            Ok(c) => run.push(c),
            Err(e) => {
                out.extend(f(&run).encode_utf16());
                run.clear();
                out.push(e.unpaired_surrogate());
            }
        }
    }
    out.extend(f(&run).encode_utf16());
    out
}

/// NFC, then (per `text`) whitespace collapse and Unicode default lower-casing (RUNTIME.md §4.5).
pub fn normalize_text(s: &JsString, text: Option<TextRule>) -> JsString {
    let collapse_ws = text.is_some_and(|t| t.collapse_whitespace);
    let lower = text.is_some_and(|t| t.case_insensitive);
    match s {
        JsString::Utf8(s) => {
            let mut out = nfc(s);
            if collapse_ws {
                out = collapse(&out);
            }
            if lower {
                out = out.to_lowercase();
            }
            JsString::Utf8(out)
        }
        JsString::Wtf16(u) => {
            let mut out = map_runs(u, nfc);
            if collapse_ws {
                out = collapse_units(&out);
            }
            if lower {
                out = map_runs(&out, str::to_lowercase);
            }
            JsString::from_utf16(out)
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::format::address::NULL_ADDRESS;
    use crate::format::json::parse_str;

    /// The spec of RUNTIME.md §4.1 (shared with the postcondition tests).
    pub(crate) fn spec_41() -> CanonicalizerSpec {
        CanonicalizerSpec::from_value(
            &parse_str(
                r#"{
  "node": "price-watch",
  "fields": [
    {"path": "prices", "material": true, "collection": "set"},
    {"path": "prices.vendor", "material": true,
     "text": {"collapse_whitespace": true, "case_insensitive": true}},
    {"path": "prices.price", "material": true, "number": {"quantum": 0.01}},
    {"path": "prices.checked_at", "material": false},
    {"path": "prices.source", "material": false},
    {"path": "checked_at", "material": false}
  ],
  "default_material": true,
  "facets": [{"facet": "prices", "paths": ["prices"]}]
}"#,
            )
            .unwrap(),
        )
        .unwrap()
    }

    /// The `truth.json` of RUNTIME.md §4.8.
    pub(crate) const TRUTH_48: &str = r#"{
  "checked_at": "2026-06-02T18:00:00.000Z",
  "prices": [
    {"vendor": "  Acme   Corp ", "price": 10.004, "checked_at": "2026-06-02T17:59:01.000Z",
     "source": "https://acme.example/pricing"},
    {"vendor": "beta", "price": 7.5, "checked_at": "2026-06-02T17:59:03.000Z",
     "source": "https://beta.example/p"}
  ],
  "notes": "two vendors tracked"
}"#;

    const ATOMIC_48: &str =
        "sha256:59e80454e453a7e43e99d1c3947b166272b93575509fd33e25cb5957469d3f2b";
    const PRICES_48: &str =
        "sha256:2f37012b5f685cdc53c29539194bc94c752116d2186fc765ece7127c55e38f3f";

    fn compiled(spec_json: &str) -> CompiledCanonicalizer {
        compile_node(&CanonicalizerSpec::from_value(&parse_str(spec_json).unwrap()).unwrap())
            .unwrap()
    }

    fn ser(c: &CompiledCanonicalizer, truth: &str, facet: &str) -> String {
        c.serialize(&parse_str(truth).unwrap(), facet).unwrap()
    }

    #[test]
    fn worked_example_serializations_and_tokens() {
        let c = compile_node(&spec_41()).unwrap();
        let v = parse_str(TRUTH_48).unwrap();
        assert_eq!(
            c.serialize(&v, "@atomic").unwrap(),
            r#"{"notes":"two vendors tracked","prices":[{"price":10,"vendor":"acme corp"},{"price":7.5,"vendor":"beta"}]}"#
        );
        assert_eq!(
            c.serialize(&v, "prices").unwrap(),
            r#"{"prices":[{"price":10,"vendor":"acme corp"},{"price":7.5,"vendor":"beta"}]}"#
        );
        let fp = c.apply(&v).unwrap();
        assert_eq!(
            fp.0,
            vec![
                ("@atomic".to_string(), ATOMIC_48.to_string()),
                ("prices".to_string(), PRICES_48.to_string()),
            ]
        );
        assert_eq!(c.token(&v, "prices").unwrap(), PRICES_48);
        assert_eq!(c.facets(), ["@atomic", "prices"]);
        assert!(c.is_faceted());
    }

    #[test]
    fn worked_example_immaterial_changes_move_nothing() {
        let c = compile_node(&spec_41()).unwrap();
        let moved = r#"{
  "checked_at": "2027-01-01T00:00:00.000Z",
  "prices": [
    {"vendor": "beta", "price": 7.501, "checked_at": "2027-01-01T00:00:09.000Z",
     "source": "https://beta.example/p"},
    {"vendor": "  Acme   Corp ", "price": 10.004, "checked_at": "2027-01-01T00:00:08.000Z",
     "source": "https://acme.example/pricing"}
  ],
  "notes": "two vendors tracked"
}"#;
        let fp = c.apply(&parse_str(moved).unwrap()).unwrap();
        assert_eq!(fp.get("@atomic"), Some(ATOMIC_48));
        assert_eq!(fp.get("prices"), Some(PRICES_48));
    }

    #[test]
    fn worked_example_notes_change_moves_only_atomic() {
        let c = compile_node(&spec_41()).unwrap();
        let t = TRUTH_48.replace("two vendors tracked", "three vendors soon");
        let fp = c.apply(&parse_str(&t).unwrap()).unwrap();
        assert_eq!(
            fp.get("@atomic"),
            Some("sha256:76ca3c361b2e2bf59350effb33ffe98214e589bb70b66b9f3f150e606ac8b22c")
        );
        assert_eq!(fp.get("prices"), Some(PRICES_48));
    }

    #[test]
    fn dropped_root_is_the_null_token() {
        assert_eq!(
            NULL_ADDRESS,
            "sha256:74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b"
        );
        assert_eq!(address(b"null"), NULL_ADDRESS);
        let c = compile_node(&spec_41()).unwrap();
        let v = parse_str(r#"{"checked_at": "x", "other": 1}"#).unwrap();
        assert_eq!(c.serialize(&v, "prices").unwrap(), "null");
        assert_eq!(c.reduced(&v, "prices").unwrap(), None);
        assert_eq!(c.apply(&v).unwrap().get("prices"), Some(NULL_ADDRESS));
        // Only immaterial members: the root itself is dropped.
        let v = parse_str(r#"{"checked_at": "x"}"#).unwrap();
        assert_eq!(c.apply(&v).unwrap().get("@atomic"), Some(NULL_ADDRESS));
        // An empty object root is dropped too (no exception for the root).
        assert_eq!(ser(&c, "{}", "@atomic"), "null");
    }

    #[test]
    fn spec_round_trips_in_format_order() {
        let spec = spec_41();
        let text = json::compact_string(&spec.to_value());
        assert_eq!(
            text,
            r#"{"node":"price-watch","fields":[{"path":"prices","material":true,"collection":"set"},{"path":"prices.vendor","material":true,"text":{"collapse_whitespace":true,"case_insensitive":true}},{"path":"prices.price","material":true,"number":{"quantum":0.01}},{"path":"prices.checked_at","material":false},{"path":"prices.source","material":false},{"path":"checked_at","material":false}],"default_material":true,"facets":[{"facet":"prices","paths":["prices"]}]}"#
        );
        assert_eq!(
            CanonicalizerSpec::from_value(&spec.to_value()).unwrap(),
            spec
        );
    }

    #[test]
    fn spec_parse_fills_text_defaults_and_accepts_nulls() {
        let s = CanonicalizerSpec::from_value(
            &parse_str(
                r#"{"node":"n","fields":[
                {"path":"a","material":true,"text":{}},
                {"path":"b","material":true,"text":{"case_insensitive":true},"number":null,"collection":null},
                {"path":"c","material":true,"number":{"quantum":null},"extra":1},
                {"path":"d","material":true,"number":{},"collection":"ordered"}
            ],"default_material":false,"facets":[]}"#,
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(
            s.fields[0].text,
            Some(TextRule {
                collapse_whitespace: true,
                case_insensitive: false
            })
        );
        assert_eq!(
            s.fields[1].text,
            Some(TextRule {
                collapse_whitespace: true,
                case_insensitive: true
            })
        );
        assert_eq!(s.fields[1].number, None);
        assert_eq!(s.fields[1].collection, None);
        assert_eq!(s.fields[2].number, Some(NumberRule { quantum: None }));
        assert_eq!(s.fields[3].collection, Some(Collection::Ordered));
        assert!(!s.default_material);
        let v = json::compact_string(&s.to_value());
        assert!(v.contains(r#"{"path":"c","material":true,"number":{"quantum":null}}"#));
        assert!(v.contains(r#"{"path":"b","material":true,"text":{"collapse_whitespace":true,"case_insensitive":true}}"#));
    }

    #[test]
    fn spec_shape_errors_name_the_json_path() {
        let cases: &[(&str, &str)] = &[
            (
                "[]",
                "canonicalization spec: expected an object, found array",
            ),
            (
                r#"{"fields":[],"default_material":true,"facets":[]}"#,
                "canonicalization spec: node: required member is missing",
            ),
            (
                r#"{"node":1,"fields":[],"default_material":true,"facets":[]}"#,
                "canonicalization spec: node: expected a string, found number",
            ),
            (
                r#"{"node":"n","fields":{},"default_material":true,"facets":[]}"#,
                "canonicalization spec: fields: expected an array, found object",
            ),
            (
                r#"{"node":"n","fields":[{"path":"a","material":"yes"}],"default_material":true,"facets":[]}"#,
                "canonicalization spec: fields[0].material: expected a boolean, found string",
            ),
            (
                r#"{"node":"n","fields":[{"path":"a","material":true},{"material":true}],"default_material":true,"facets":[]}"#,
                "canonicalization spec: fields[1].path: required member is missing",
            ),
            (
                r#"{"node":"n","fields":[{"path":"a","material":true,"text":{"case_insensitive":1}}],"default_material":true,"facets":[]}"#,
                "canonicalization spec: fields[0].text.case_insensitive: expected a boolean, found number",
            ),
            (
                r#"{"node":"n","fields":[{"path":"a","material":true,"text":"yes"}],"default_material":true,"facets":[]}"#,
                "canonicalization spec: fields[0].text: expected an object, found string",
            ),
            (
                r#"{"node":"n","fields":[{"path":"a","material":true,"number":{"quantum":"0.1"}}],"default_material":true,"facets":[]}"#,
                "canonicalization spec: fields[0].number.quantum: expected a number or null, found string",
            ),
            (
                r#"{"node":"n","fields":[{"path":"a","material":true,"collection":"bag"}],"default_material":true,"facets":[]}"#,
                "canonicalization spec: fields[0].collection: expected \"ordered\", \"set\" or null, found \"bag\"",
            ),
            (
                r#"{"node":"n","fields":[],"default_material":null,"facets":[]}"#,
                "canonicalization spec: default_material: expected a boolean, found null",
            ),
            (
                r#"{"node":"n","fields":[],"default_material":true,"facets":[{"facet":"f","paths":["a",2]}]}"#,
                "canonicalization spec: facets[0].paths[1]: expected a string, found number",
            ),
            (
                r#"{"node":"n","fields":[],"default_material":true,"facets":[{"paths":[]}]}"#,
                "canonicalization spec: facets[0].facet: required member is missing",
            ),
            (
                r#"{"node":"n","fields":[{"path":"a\ud800","material":true}],"default_material":true,"facets":[]}"#,
                "canonicalization spec: fields[0].path: string holds a lone surrogate (not valid Unicode)",
            ),
        ];
        for (input, want) in cases {
            let err = CanonicalizerSpec::from_value(&parse_str(input).unwrap()).unwrap_err();
            assert_eq!(err.to_string(), *want, "input {input}");
        }
    }

    fn spec_with(fields: Vec<FieldRule>, facets: Vec<FacetSpec>) -> CanonicalizerSpec {
        CanonicalizerSpec {
            node: "n".into(),
            fields,
            default_material: true,
            facets,
        }
    }

    fn facet(name: &str, paths: &[&str]) -> FacetSpec {
        FacetSpec {
            facet: name.into(),
            paths: paths.iter().map(|p| p.to_string()).collect(),
        }
    }

    fn problems(spec: &CanonicalizerSpec) -> Vec<String> {
        match compile_node(spec) {
            Err(CanonError::Invalid { problems, node }) => {
                assert_eq!(node, spec.node);
                problems
            }
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    #[test]
    fn compile_node_rejects_bad_paths() {
        let p = problems(&spec_with(
            vec![
                FieldRule::new("", true),
                FieldRule::new("a..b", true),
                FieldRule::new(".a", true),
                FieldRule::new("a.", true),
                FieldRule::new("ok", true),
                FieldRule::new("ok", false),
            ],
            vec![],
        ));
        assert_eq!(
            p,
            vec![
                "fields[0].path is empty",
                "fields[1].path 'a..b' has an empty segment",
                "fields[2].path '.a' has an empty segment",
                "fields[3].path 'a.' has an empty segment",
                "fields[5].path 'ok' repeats fields[4].path",
            ]
        );
    }

    #[test]
    fn compile_node_checks_quantum_range() {
        let with_q = |q: Option<f64>| {
            let mut r = FieldRule::new("a", true);
            r.number = Some(NumberRule { quantum: q });
            spec_with(vec![r], vec![])
        };
        for ok in [
            None,
            Some(0.0),
            Some(-0.0),
            Some(0.01),
            Some(5e-324),
            Some(1e308),
        ] {
            assert!(compile_node(&with_q(ok)).is_ok(), "{ok:?}");
        }
        for (bad, shown) in [
            (-1.0, "-1"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
        ] {
            assert_eq!(
                problems(&with_q(Some(bad))),
                vec![format!(
                    "fields[0].number.quantum must be null, 0, or a finite number greater than 0 (found {shown})"
                )]
            );
        }
    }

    #[test]
    fn compile_node_checks_facets() {
        let p = problems(&spec_with(
            vec![],
            vec![
                facet("@atomic", &["a"]),
                facet("f", &["a"]),
                facet("f", &["b"]),
                facet("g", &[]),
                facet("", &["c"]),
                facet("h", &["ok", "x..y", ""]),
            ],
        ));
        assert_eq!(
            p,
            vec![
                "facets[0].facet '@atomic' is reserved and must not be declared",
                "facets[2].facet 'f' is declared twice (also facets[1])",
                "facets[3].paths is empty: facet 'g' needs at least one path",
                "facets[4].facet is empty",
                "facets[5].paths[1] 'x..y' has an empty segment",
                "facets[5].paths[2] is empty",
            ]
        );
        let err = compile_node(&spec_with(vec![], vec![facet("g", &[])])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid canonicalization spec for node 'n': facets[0].paths is empty: facet 'g' needs at least one path"
        );
    }

    #[test]
    fn declared_facet_set_must_match() {
        let s = spec_with(vec![], vec![facet("a", &["a"]), facet("b", &["b"])]);
        assert!(s.check_declared_facets(&["b".into(), "a".into()]).is_ok());
        let err = s
            .check_declared_facets(&["a".into(), "c".into()])
            .unwrap_err();
        assert_eq!(
            err,
            CanonError::Invalid {
                node: "n".into(),
                problems: vec![
                    "facets[1].facet 'b' is not a declared facet of the node".into(),
                    "declared facet 'c' has no entry in facets".into(),
                ]
            }
        );
        let s = spec_with(
            vec![],
            vec![
                facet("a", &["a"]),
                facet("a", &["b"]),
                facet("@atomic", &["c"]),
            ],
        );
        let Err(CanonError::Invalid { problems, .. }) = s.check_declared_facets(&["a".into()])
        else {
            panic!("expected Invalid")
        };
        assert_eq!(
            problems,
            vec![
                "facets[1].facet 'a' is listed twice",
                "facets[2].facet '@atomic' is reserved and must not be declared",
            ]
        );
    }

    #[test]
    fn lints_are_reported() {
        let mut immaterial_with_text = FieldRule::new("tmp", false);
        immaterial_with_text.text = Some(TextRule {
            collapse_whitespace: true,
            case_insensitive: false,
        });
        let spec = CanonicalizerSpec {
            node: "n".into(),
            fields: vec![
                FieldRule::new("notes", true),
                FieldRule::new("items", true),
                FieldRule::new("meta", false),
                FieldRule::new("deep", false),
                FieldRule::new("deep.keep", true),
                immaterial_with_text,
            ],
            default_material: true,
            facets: vec![
                facet("f", &["items", "items", "meta"]),
                facet("g", &["deep"]),
            ],
        };
        let c = compile_node(&spec).unwrap();
        let codes: Vec<String> = c.lints().iter().map(|l| l.to_string()).collect();
        assert_eq!(
            codes,
            vec![
                "material-rule-uncovered: rule 'notes' is material but no facet path covers it: it moves only @atomic",
                "options-on-immaterial-rule: rule 'tmp' is immaterial: its text/number options have no effect",
                "duplicate-facet-path: facet 'f' lists path 'items' twice",
                "immaterial-facet-path: facet 'f' path 'meta' is immaterial and no material rule lies under it: it can never carry material",
            ]
        );
        assert!(compile_node(&spec_41()).unwrap().lints().is_empty());
    }

    #[test]
    fn identity_spec_is_atomic_only() {
        let s = CanonicalizerSpec::identity("brief");
        assert!(s.is_atomic_only());
        assert_eq!(
            json::compact_string(&s.to_value()),
            r#"{"node":"brief","fields":[],"default_material":true,"facets":[]}"#
        );
        let c = compile_node(&s).unwrap();
        assert_eq!(c.facets(), ["@atomic"]);
        assert!(!c.is_faceted());
        assert!(c.declared_facets().is_empty());
        let v = parse_str(r#"{"b":[1,"x"],"a":null}"#).unwrap();
        assert_eq!(
            c.serialize(&v, "@atomic").unwrap(),
            r#"{"a":null,"b":[1,"x"]}"#
        );
        assert_eq!(
            json::compact_string(&c.artifact_ref()),
            r#"{"node":"brief","artifact":"canonicalizer/brief","facets":["@atomic"]}"#
        );
    }

    #[test]
    fn unknown_facet_is_an_error() {
        let c = compile_node(&spec_41()).unwrap();
        let err = c.serialize(&Value::Null, "nope").unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown facet 'nope' for node 'price-watch'"
        );
    }

    #[test]
    fn scalars_follow_materiality() {
        let c = compiled(
            r#"{"node":"n","fields":[{"path":"gone","material":false},{"path":"kept","material":true}],
            "default_material":false,"facets":[]}"#,
        );
        assert_eq!(
            ser(&c, r#"{"gone":1,"kept":null,"other":true}"#, "@atomic"),
            r#"{"kept":null}"#
        );
        assert_eq!(ser(&c, r#"{"kept":false}"#, "@atomic"), r#"{"kept":false}"#);
        // A scalar root is governed by default_material.
        assert_eq!(ser(&c, "5", "@atomic"), "null");
        let c2 = compiled(r#"{"node":"n","fields":[],"default_material":true,"facets":[]}"#);
        assert_eq!(ser(&c2, "5", "@atomic"), "5");
        assert_eq!(ser(&c2, "null", "@atomic"), "null");
    }

    #[test]
    fn array_rules() {
        let c = compiled(
            r#"{"node":"n","fields":[
              {"path":"m","material":true},
              {"path":"i","material":false},
              {"path":"i.keep","material":true}
            ],"default_material":false,"facets":[]}"#,
        );
        // Material empty array stays [].
        assert_eq!(ser(&c, r#"{"m":[]}"#, "@atomic"), r#"{"m":[]}"#);
        // Immaterial array with no survivors is dropped; with survivors it keeps them.
        assert_eq!(ser(&c, r#"{"i":[1,2]}"#, "@atomic"), "null");
        assert_eq!(ser(&c, r#"{"i":[]}"#, "@atomic"), "null");
        assert_eq!(
            ser(&c, r#"{"i":[{"keep":1,"x":2},{"x":3},5]}"#, "@atomic"),
            r#"{"i":[{"keep":1}]}"#
        );
        // Array elements share the array's path: nested arrays too.
        assert_eq!(
            ser(&c, r#"{"m":[[1,[2]],{"a":3}]}"#, "@atomic"),
            r#"{"m":[[1,[2]],{"a":3}]}"#
        );
    }

    #[test]
    fn object_rules() {
        let c = compiled(
            r#"{"node":"n","fields":[
              {"path":"a","material":false},
              {"path":"a.b","material":true},
              {"path":"rec","material":true},
              {"path":"rec.t","material":false},
              {"path":"under","material":true}
            ],"default_material":false,"facets":[]}"#,
        );
        // Immaterial parent with a material child rule keeps {"a":{"b":…}}.
        assert_eq!(
            ser(&c, r#"{"a":{"b":{"x":1},"c":2}}"#, "@atomic"),
            r#"{"a":{"b":{"x":1}}}"#
        );
        // Exactly-pathed material rule keeps an emptied object as {}.
        assert_eq!(
            ser(&c, r#"{"rec":{"t":"now"}}"#, "@atomic"),
            r#"{"rec":{}}"#
        );
        assert_eq!(ser(&c, r#"{"rec":{}}"#, "@atomic"), r#"{"rec":{}}"#);
        // A record governed by a prefix rule (no exact rule) is not kept empty; its parent,
        // which has an exact material rule, is.
        assert_eq!(
            ser(&c, r#"{"under":{"x":{}}}"#, "@atomic"),
            r#"{"under":{}}"#
        );
        let c2 = compiled(
            r#"{"node":"n","fields":[{"path":"under","material":true}],
            "default_material":true,"facets":[]}"#,
        );
        assert_eq!(
            ser(&c2, r#"{"under":{"x":{}}}"#, "@atomic"),
            r#"{"under":{}}"#
        );
        // Immaterial exact rule does not keep {}.
        assert_eq!(ser(&c, r#"{"a":{"c":1}}"#, "@atomic"), "null");
        // Empty objects inside material arrays without an exact rule vanish.
        let c3 = compiled(r#"{"node":"n","fields":[],"default_material":true,"facets":[]}"#);
        assert_eq!(
            ser(&c3, r#"{"l":[{},{"a":{}},1]}"#, "@atomic"),
            r#"{"l":[1]}"#
        );
    }

    #[test]
    fn longest_prefix_rule_wins_and_dotted_keys_match_textually() {
        let c = compiled(
            r#"{"node":"n","fields":[
              {"path":"a","material":true},
              {"path":"a.b","material":false},
              {"path":"a.b.c","material":true},
              {"path":"ab","material":false}
            ],"default_material":true,"facets":[]}"#,
        );
        assert_eq!(
            ser(
                &c,
                r#"{"a":{"b":{"c":1,"d":2},"e":3},"ab":4,"abc":5}"#,
                "@atomic"
            ),
            r#"{"a":{"b":{"c":1},"e":3},"abc":5}"#
        );
        // A top-level key literally named "a.b" is governed by rule a.b (dropped); "a.b.c" by a.b.c.
        assert_eq!(
            ser(&c, r#"{"a.b":1,"a.b.c":2,"a.bx":3,"a.b.d":4}"#, "@atomic"),
            r#"{"a.b.c":2,"a.bx":3}"#
        );
        // Mixed: member "b.c" of "a" has path a.b.c.
        assert_eq!(
            ser(&c, r#"{"a":{"b.c":7,"b.z":8}}"#, "@atomic"),
            r#"{"a":{"b.c":7}}"#
        );
    }

    #[test]
    fn set_sorting_dedup_and_utf16_order() {
        let c = compiled(
            r#"{"node":"n","fields":[{"path":"s","material":true,"collection":"set"}],
            "default_material":true,"facets":[]}"#,
        );
        // U+1F600 (D83D DE00) sorts before U+E000 in UTF-16 order.
        assert_eq!(
            ser(
                &c,
                "{\"s\":[\"\u{e000}\",\"\u{1f600}\",\"a\",\"a\",\"\u{e000}\"]}",
                "@atomic"
            ),
            "{\"s\":[\"a\",\"\u{1f600}\",\"\u{e000}\"]}"
        );
        // Elements of every type ordered by their canonical text; objects by canonical JSON.
        assert_eq!(
            ser(
                &c,
                r#"{"s":[{"b":1,"a":2},"x",10,9,true,null,{"a":2,"b":1},[2,1]]}"#,
                "@atomic"
            ),
            r#"{"s":["x",10,9,[1,2],null,true,{"a":2,"b":1}]}"#
        );
        // Nested arrays at the same path are sets too.
        assert_eq!(
            ser(&c, r#"{"s":[[3,1,3],[2]]}"#, "@atomic"),
            r#"{"s":[[1,3],[2]]}"#
        );
        // Equal after normalization: -0 and 0 dedup to one.
        assert_eq!(ser(&c, r#"{"s":[0,-0,0.0]}"#, "@atomic"), r#"{"s":[0]}"#);
        // Ordered keeps input order (and duplicates).
        let o = compiled(
            r#"{"node":"n","fields":[{"path":"s","material":true,"collection":"ordered"}],"default_material":true,"facets":[]}"#,
        );
        assert_eq!(ser(&o, r#"{"s":[2,1,2]}"#, "@atomic"), r#"{"s":[2,1,2]}"#);
    }

    #[test]
    fn set_dedup_after_normalization() {
        let c = compiled(
            r#"{"node":"n","fields":[{"path":"s","material":true,"collection":"set",
              "text":{"collapse_whitespace":true,"case_insensitive":true}}],
            "default_material":true,"facets":[]}"#,
        );
        assert_eq!(
            ser(&c, r#"{"s":["B  x"," b x ","a"]}"#, "@atomic"),
            r#"{"s":["a","b x"]}"#
        );
    }

    #[test]
    fn text_normalization() {
        let c = compiled(
            r#"{"node":"n","fields":[
              {"path":"c","material":true,"text":{"collapse_whitespace":true,"case_insensitive":false}},
              {"path":"l","material":true,"text":{"collapse_whitespace":false,"case_insensitive":true}},
              {"path":"n","material":true,"text":{"collapse_whitespace":true,"case_insensitive":true}},
              {"path":"r","material":true}
            ],"default_material":true,"facets":[]}"#,
        );
        let v = Value::Object({
            let mut o = Object::new();
            o.insert(
                "c",
                Value::str("\u{feff}\t a\u{a0}\u{2003}\u{3000}b\r\n\u{85}c \u{200b} "),
            );
            o.insert(
                "l",
                Value::str("  \u{c0}B \u{39f}\u{394}\u{39f}\u{3a3} \u{130} "),
            );
            o.insert(
                "n",
                Value::str(" X\u{2028}\u{2029}\u{202f}\u{205f}\u{1680}Y "),
            );
            o.insert("r", Value::str(" Raw  Text "));
            o
        });
        assert_eq!(
            c.serialize(&v, "@atomic").unwrap(),
            // U+0085 and U+200B are not JavaScript whitespace; the rest collapse.
            "{\"c\":\"a b \u{85}c \u{200b}\",\"l\":\"  \u{e0}b \u{3bf}\u{3b4}\u{3bf}\u{3c2} i\u{307} \",\"n\":\"x y\",\"r\":\" Raw  Text \"}"
        );
        // Text options on a number and number options on a string are ignored.
        let c = compiled(
            r#"{"node":"n","fields":[
              {"path":"t","material":true,"text":{"case_insensitive":true},"number":{"quantum":1}},
              {"path":"o","material":true,"collection":"set"}
            ],"default_material":true,"facets":[]}"#,
        );
        assert_eq!(
            ser(&c, r#"{"t":[" A ",1.6],"o":{"b":1,"a":2}}"#, "@atomic"),
            r#"{"o":{"a":2,"b":1},"t":["a",2]}"#
        );
    }

    #[test]
    fn nfc_equivalence() {
        let c = compile_node(&spec_41()).unwrap();
        let composed = r#"{"prices":[{"vendor":"Caf\u00e9","price":1}],"k\u00e9":"\u00e9"}"#;
        let decomposed = r#"{"prices":[{"vendor":"Cafe\u0301","price":1}],"k\u00e9":"e\u0301"}"#;
        let a = c.apply(&parse_str(composed).unwrap()).unwrap();
        let b = c.apply(&parse_str(decomposed).unwrap()).unwrap();
        assert_eq!(a, b);
        // Without any text option NFC still applies; keys are not normalized.
        let id = compile_node(&CanonicalizerSpec::identity("x")).unwrap();
        assert_eq!(
            ser(&id, r#"{"e\u0301":"e\u0301"}"#, "@atomic"),
            "{\"e\u{301}\":\"\u{e9}\"}"
        );
    }

    #[test]
    fn lone_surrogates_survive_normalization() {
        let c = compiled(
            r#"{"node":"n","fields":[{"path":"s","material":true,"text":{"case_insensitive":true}}],
            "default_material":true,"facets":[]}"#,
        );
        assert_eq!(
            ser(&c, r#"{"s":"  A\ud800  Be\u0301 "}"#, "@atomic"),
            "{\"s\":\"a\\ud800 b\u{e9}\"}"
        );
    }

    #[test]
    fn quantization() {
        let c = compiled(
            r#"{"node":"n","fields":[
              {"path":"q","material":true,"number":{"quantum":0.5}},
              {"path":"z","material":true,"number":{"quantum":0}},
              {"path":"c","material":true,"number":{"quantum":0.01}}
            ],"default_material":true,"facets":[]}"#,
        );
        assert_eq!(
            ser(
                &c,
                r#"{"q":[1.2,1.25,-1.25,-0.2,2.74,0.49999999999999994],"z":1.2345}"#,
                "@atomic"
            ),
            r#"{"q":[1,1.5,-1,0,2.5,0.5],"z":1.2345}"#
        );
        assert_eq!(js_round(0.49999999999999994), 0.0);
        assert_eq!(js_round(-2.5), -2.0);
        assert_eq!(js_round(2.5), 3.0);
        assert_eq!(js_round(4503599627370497.0), 4503599627370497.0);
        // -0 becomes 0 after quantization.
        assert!(quantize(-0.001, 0.5).is_sign_positive());
        // A non-finite result is an error naming the path.
        let err = ser_err(&c, r#"{"c":1e308}"#);
        assert_eq!(
            err.to_string(),
            "number at path 'c' is not finite after quantization by 0.01"
        );
        // A non-finite input number without quantum is an error too; dropped ones are fine.
        let id = compile_node(&CanonicalizerSpec::identity("x")).unwrap();
        let err = id
            .apply(&parse_str(r#"{"a":{"b":1e400}}"#).unwrap())
            .unwrap_err();
        assert_eq!(err.to_string(), "number at path 'a.b' is not finite");
        let drop = compiled(
            r#"{"node":"n","fields":[{"path":"a","material":false}],"default_material":true,"facets":[]}"#,
        );
        assert!(
            drop.apply(&parse_str(r#"{"a":1e400,"b":1}"#).unwrap())
                .is_ok()
        );
    }

    fn ser_err(c: &CompiledCanonicalizer, truth: &str) -> CanonError {
        c.serialize(&parse_str(truth).unwrap(), "@atomic")
            .unwrap_err()
    }

    #[test]
    fn facet_restriction() {
        let c = compiled(
            r#"{"node":"n","fields":[
              {"path":"r","material":true},
              {"path":"r.t","material":false}
            ],"default_material":true,"facets":[
              {"facet":"deep","paths":["a.b"]},
              {"facet":"top","paths":["a","x"]},
              {"facet":"rec","paths":["r.t"]},
              {"facet":"dot","paths":["k.v"]}
            ]}"#,
        );
        let v = r#"{"a":{"b":{"c":1},"d":2},"ab":3,"x":[{"y":1}],"r":{"t":1,"u":2},"k.v":5,"k":{"v":6,"w":7}}"#;
        // Ancestor positions take part but only their related members survive.
        assert_eq!(ser(&c, v, "deep"), r#"{"a":{"b":{"c":1}}}"#);
        assert_eq!(
            ser(&c, v, "top"),
            r#"{"a":{"b":{"c":1},"d":2},"x":[{"y":1}]}"#
        );
        // Inside the relation but immaterial: r.t dropped, but rule r (exact, material) keeps {}.
        assert_eq!(ser(&c, v, "rec"), r#"{"r":{}}"#);
        // A dotted key matches textually as well as the nested member.
        assert_eq!(ser(&c, v, "dot"), r#"{"k":{"v":6},"k.v":5}"#);
        // Absent paths give the null token.
        let fp = c.apply(&parse_str(r#"{"zz":1}"#).unwrap()).unwrap();
        assert_eq!(
            fp.facets().collect::<Vec<_>>(),
            ["@atomic", "deep", "top", "rec", "dot"]
        );
        assert_eq!(fp.get("deep"), Some(NULL_ADDRESS));
        assert_ne!(fp.get("@atomic"), Some(NULL_ADDRESS));
    }

    #[test]
    fn empty_key_member_has_the_root_path() {
        let c = compiled(
            r#"{"node":"n","fields":[],"default_material":true,
            "facets":[{"facet":"f","paths":["a"]}]}"#,
        );
        assert_eq!(
            ser(&c, r#"{"":{"a":1,"b":2},"b":3}"#, "f"),
            r#"{"":{"a":1}}"#
        );
    }

    #[test]
    fn hostile_values_do_not_panic() {
        let id = compile_node(&CanonicalizerSpec::identity("x")).unwrap();
        // Maximum parser depth is accepted.
        let deep = "[".repeat(json::MAX_DEPTH) + &"]".repeat(json::MAX_DEPTH);
        assert_eq!(
            id.serialize(&parse_str(&deep).unwrap(), "@atomic").unwrap(),
            deep
        );
        // Deeper hand-built values are an error, not a stack overflow.
        let mut v = Value::Null;
        for _ in 0..(json::MAX_DEPTH + 10) {
            let mut o = Object::new();
            o.insert("k", v);
            v = Value::Object(o);
        }
        let err = id.apply(&v).unwrap_err();
        assert!(matches!(err, CanonError::TooDeep { .. }), "{err:?}");
        drop_deep(v);
        // Huge set arrays.
        let c = compiled(
            r#"{"node":"n","fields":[{"path":"s","material":true,"collection":"set"}],
            "default_material":true,"facets":[{"facet":"f","paths":["s"]}]}"#,
        );
        let big: Vec<Value> = (0..200_000)
            .rev()
            .map(|i| Value::Number(f64::from(i % 1000)))
            .collect();
        let mut o = Object::new();
        o.insert("s", Value::Array(big));
        let out = c.reduced(&Value::Object(o), "f").unwrap().unwrap();
        let s = out.get("s").unwrap().as_array().unwrap();
        assert_eq!(s.len(), 1000);
        assert_eq!(s[0], Value::Number(0.0));
        assert_eq!(s[1], Value::Number(1.0));
        assert_eq!(s[2], Value::Number(10.0));
        // Long dotted keys at depth with many rules stay cheap.
        let fields: Vec<FieldRule> = (0..2000)
            .map(|i| FieldRule::new(format!("r{i}.x"), i % 2 == 0))
            .collect();
        let c = compile_node(&spec_with(fields, vec![facet("f", &["r0.x"])])).unwrap();
        let key = "k.".repeat(5000);
        let mut v = Value::Number(1.0);
        for _ in 0..400 {
            let mut o = Object::new();
            o.insert(key.as_str(), v);
            v = Value::Object(o);
        }
        assert!(c.apply(&v).is_ok());
        drop_deep(v);
    }

    /// Drops a deeply nested value iteratively (the derived drop recurses).
    fn drop_deep(mut v: Value) {
        loop {
            match v {
                Value::Object(mut o) => {
                    let next = o.iter().next().map(|(k, _)| k.to_lossy().into_owned());
                    match next.and_then(|k| o.remove(&k)) {
                        Some(inner) => v = inner,
                        None => return,
                    }
                }
                _ => return,
            }
        }
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        fn key() -> impl Strategy<Value = String> {
            prop::sample::select(vec!["a", "b", "a.b", "c", "", "e\u{301}", "\u{e9}"])
                .prop_map(str::to_string)
        }

        fn text() -> impl Strategy<Value = String> {
            prop::collection::vec(
                prop::sample::select(vec![
                    "a",
                    "B",
                    " ",
                    "\t",
                    "\u{a0}",
                    "e\u{301}",
                    "\u{e9}",
                    "\u{3a3}",
                    "\u{1f600}",
                    "\u{e000}",
                    "\u{85}",
                ]),
                0..6,
            )
            .prop_map(|parts| parts.concat())
        }

        fn value() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                (-1e6f64..1e6).prop_map(Value::Number),
                text().prop_map(Value::str),
            ];
            leaf.prop_recursive(4, 48, 5, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                    prop::collection::vec((key(), inner), 0..5).prop_map(|members| {
                        let mut o = Object::new();
                        for (k, v) in members {
                            o.insert(k, v);
                        }
                        Value::Object(o)
                    }),
                ]
            })
        }

        fn spec() -> impl Strategy<Value = CanonicalizerSpec> {
            let path = prop::sample::select(vec!["a", "b", "a.b", "a.b.c", "c", "b.a"]);
            let rule = (
                path,
                any::<bool>(),
                prop::option::of((any::<bool>(), any::<bool>())),
                prop::option::of(prop::sample::select(vec![0.0, 0.5, 0.01, 3.0])),
                prop::option::of(any::<bool>()),
            )
                .prop_map(|(p, m, t, q, set)| FieldRule {
                    path: p.to_string(),
                    material: m,
                    text: t.map(|(c, l)| TextRule {
                        collapse_whitespace: c,
                        case_insensitive: l,
                    }),
                    number: q.map(|q| NumberRule { quantum: Some(q) }),
                    collection: set.map(|s| {
                        if s {
                            Collection::Set
                        } else {
                            Collection::Ordered
                        }
                    }),
                });
            (
                prop::collection::vec(rule, 0..5),
                any::<bool>(),
                prop::collection::vec(
                    prop::sample::select(vec!["a", "b", "a.b", "c.d", "e\u{301}"]),
                    1..3,
                ),
            )
                .prop_map(|(mut fields, default_material, paths)| {
                    let mut seen = Vec::new();
                    fields.retain(|f| {
                        let fresh = !seen.contains(&f.path);
                        seen.push(f.path.clone());
                        fresh
                    });
                    CanonicalizerSpec {
                        node: "n".into(),
                        fields,
                        default_material,
                        facets: vec![FacetSpec {
                            facet: "f".into(),
                            paths: paths.into_iter().map(str::to_string).collect(),
                        }],
                    }
                })
        }

        proptest! {
            #[test]
            fn reduction_is_idempotent_and_total(spec in spec(), v in value()) {
                let c = compile_node(&spec).unwrap();
                let fp = c.apply(&v).unwrap();
                prop_assert_eq!(fp.0.len(), 2);
                for facet in ["@atomic", "f"] {
                    let text = c.serialize(&v, facet).unwrap();
                    // The serialization is canonical JSON of the reduced value.
                    let reparsed = json::parse_str(&text).unwrap();
                    prop_assert_eq!(&json::canonical_string(&reparsed).unwrap(), &text);
                    match c.reduced(&v, facet).unwrap() {
                        None => prop_assert_eq!(&text, "null"),
                        Some(r) => prop_assert_eq!(&json::canonical_string(&r).unwrap(), &text),
                    }
                    prop_assert_eq!(fp.get(facet).unwrap(), address(text.as_bytes()));
                }
                // The identity spec is idempotent on its own output.
                let id = compile_node(&CanonicalizerSpec::identity("x")).unwrap();
                let once = id.serialize(&v, "@atomic").unwrap();
                let twice = id.serialize(&json::parse_str(&once).unwrap(), "@atomic").unwrap();
                prop_assert_eq!(once, twice);
            }

            #[test]
            fn worked_example_tokens_ignore_order_and_immaterial_fields(
                rows in prop::collection::vec((text(), -1e4f64..1e4, text()), 0..6),
                seed in any::<u64>(),
            ) {
                let c = compile_node(&spec_41()).unwrap();
                let build = |rows: &[(String, f64, String)], stamp: &str| {
                    let prices = rows
                        .iter()
                        .map(|(vendor, price, src)| {
                            let mut o = Object::new();
                            o.insert("vendor", Value::str(vendor.clone()));
                            o.insert("price", Value::Number(*price));
                            o.insert("source", Value::str(format!("{src}{stamp}")));
                            o.insert("checked_at", Value::str(stamp));
                            Value::Object(o)
                        })
                        .collect();
                    let mut o = Object::new();
                    o.insert("checked_at", Value::str(stamp));
                    o.insert("prices", Value::Array(prices));
                    Value::Object(o)
                };
                let a = c.apply(&build(&rows, "t1")).unwrap();
                let mut shuffled = rows.clone();
                let n = shuffled.len();
                if n > 1 {
                    shuffled.rotate_left((seed as usize) % n);
                    shuffled.swap(0, (seed as usize / 7) % n);
                }
                let b = c.apply(&build(&shuffled, "t2")).unwrap();
                prop_assert_eq!(a, b);
            }
        }
    }

    #[test]
    fn whitespace_class_is_exactly_the_js_one() {
        let js: Vec<u32> = (0..=0xFFFFu32).filter(|&c| is_js_whitespace(c)).collect();
        let mut want: Vec<u32> = vec![
            0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F,
            0x3000, 0xFEFF,
        ];
        want.extend(0x2000..=0x200A);
        want.sort_unstable();
        assert_eq!(js, want);
    }
}
