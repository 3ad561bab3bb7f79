//! The canonicalization spec (RUNTIME.md §3.4.2, §4.1) and its JSON form (FORMATS.md §15.5
//! `canonicalizer`), derived with serde over the project's JSON value.

use serde::{Deserialize, Deserializer, Serialize};

use super::{ATOMIC, CanonError};
use crate::format::json::{self, Value};

/// The `text` option of a field rule (RUNTIME.md §3.4.2, §4.5): JSON
/// `{collapse_whitespace, case_insensitive}`, both always written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub struct TextRule {
    /// Collapse every whitespace run to one space and trim the ends. Defaults to `true` when the
    /// member is missing or `null` (specs written by the reference may omit it).
    #[serde(default = "yes", deserialize_with = "true_unless_false")]
    pub collapse_whitespace: bool,
    /// Lower-case with the Unicode default mapping. Defaults to `false` when missing or `null`.
    #[serde(default, deserialize_with = "false_unless_true")]
    pub case_insensitive: bool,
}

/// The `number` option of a field rule (RUNTIME.md §3.4.2, §4.5): JSON `{quantum}`, the
/// quantum always written (`null` when absent).
#[derive(Clone, Copy, Debug, PartialEq, Deserialize, Serialize)]
pub struct NumberRule {
    /// The quantum `q`: `None` or `Some(0.0)` keeps numbers exact; otherwise finite and `> 0`
    /// (checked by [`compile_node`](super::compile_node)). Missing means `None`.
    #[serde(default, deserialize_with = "number_or_null")]
    pub quantum: Option<f64>,
}

/// The `collection` option of a field rule: how arrays governed by the rule are ordered.
/// JSON `"ordered"` / `"set"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Collection {
    /// `"ordered"`: keep the input order (also the meaning of an absent option).
    Ordered,
    /// `"set"`: sort by canonical serialization (UTF-16 order) and de-duplicate.
    Set,
}

/// One field rule: `{path, material, text?, number?, collection?}` (RUNTIME.md §3.4.2); the
/// options are written only when present.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
pub struct FieldRule {
    /// Dotted path into `truth.json` (`prices`, `prices.vendor`).
    pub path: String,
    /// Keep (`true`) or drop (`false`) the field and its subtree, unless a longer rule says
    /// otherwise.
    pub material: bool,
    /// Text normalization, if any (`null` or missing means none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<TextRule>,
    /// Number quantization, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number: Option<NumberRule>,
    /// Array ordering, if given (`None` means ordered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub struct FacetSpec {
    /// The declared facet name (never `@atomic`).
    pub facet: String,
    /// The dotted paths carrying the facet (non-empty list).
    pub paths: Vec<String>,
}

/// A canonicalization spec `{node, fields, default_material, facets}` (RUNTIME.md §4.1),
/// persisted as the `canonicalizer` member of a compile file (FORMATS.md §15.5). Members are
/// written in that order (per rule `path`, `material`, then the options present).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
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

fn yes() -> bool {
    true
}

/// A boolean that defaults to `true` when missing or `null`.
fn true_unless_false<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Option::<bool>::deserialize(d)?.unwrap_or(true))
}

/// A boolean that defaults to `false` when missing or `null`.
fn false_unless_true<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Option::<bool>::deserialize(d)?.unwrap_or(false))
}

/// A number or `null` (missing means `null`); other types are `expected a number or null`.
fn number_or_null<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    struct Quantum;
    impl<'de> serde::de::Visitor<'de> for Quantum {
        type Value = Option<f64>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a number or null")
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Option<f64>, E> {
            Ok(None)
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Option<f64>, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<f64>, D::Error> {
            d.deserialize_any(self)
        }
        fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Option<f64>, E> {
            Ok(Some(n))
        }
        fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Option<f64>, E> {
            Ok(Some(n as f64))
        }
        fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Option<f64>, E> {
            Ok(Some(n as f64))
        }
    }
    d.deserialize_option(Quantum)
}

impl CanonicalizerSpec {
    /// The identity spec of an atomic-only node: no rules, everything material, no facets
    /// (RUNTIME.md §5.2; recorded in the compile file of nodes without declared facets).
    pub(crate) fn identity(node: impl Into<String>) -> CanonicalizerSpec {
        CanonicalizerSpec {
            node: node.into(),
            fields: Vec::new(),
            default_material: true,
            facets: Vec::new(),
        }
    }

    /// True when the spec declares no facet (an atomic-only node).
    pub(crate) fn is_atomic_only(&self) -> bool {
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
    /// [`compile_node`](super::compile_node).
    ///
    /// Errors: [`CanonError::Shape`] naming the JSON path of the first wrong member.
    pub fn from_value(v: &Value) -> Result<CanonicalizerSpec, CanonError> {
        json::from_value(v).map_err(CanonError::Shape)
    }

    /// The JSON form, keys in the FORMATS.md §15.5 order (`node`, `fields`, `default_material`,
    /// `facets`; per rule `path`, `material`, then `text`, `number`, `collection` only when
    /// present; `text` always spells both booleans; `number` is `{"quantum": q}` with `q` a
    /// number or `null`).
    pub fn to_value(&self) -> Value {
        json::value_of(self)
    }

    /// The contract-dependent check of RUNTIME.md §3.4.3: the spec's facet names must equal the
    /// node's declared facet set exactly (no missing, extra or duplicate facet; `@atomic` is
    /// never declared). `declared` is the contract's facet list (without `@atomic`).
    ///
    /// Errors: [`CanonError::Invalid`] listing every difference.
    pub(crate) fn check_declared_facets(&self, declared: &[String]) -> Result<(), CanonError> {
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
