//! The postcondition model: flat entries as the postcondition session produces them and the
//! compile file persists them (RUNTIME.md §3.5.2, FORMATS.md §15.5), and the decoded predicate
//! tree (§3.5.4). The JSON forms are derived with serde over the project's JSON value.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};

use crate::format::json::{self, Found, TypeNames, Value, expect, expecting};

/// How a postcondition is checked; also the mode of a whole set (RUNTIME.md §3.5.4). JSON
/// `"deterministic"` / `"render-attested"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// `"deterministic"`: a predicate over facts of the canonicalized truth.
    Deterministic,
    /// `"render-attested"`: the render attests it in its final signal.
    RenderAttested,
}

impl Mode {
    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Deterministic => "deterministic",
            Mode::RenderAttested => "render-attested",
        }
    }
}

/// The kind of a flat predicate node (RUNTIME.md §3.5.2). JSON: its spelling ([`Kind::as_str`]);
/// an unknown spelling reads as `unknown kind "<s>" (expected equals, …)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Leaf `equals`.
    Equals,
    /// Leaf `not-equals`.
    NotEquals,
    /// Leaf `greater-than-or-equal`.
    GreaterThanOrEqual,
    /// Leaf `less-than`.
    LessThan,
    /// Connective `and`.
    And,
    /// Connective `or`.
    Or,
    /// Connective `not`.
    Not,
}

impl Kind {
    /// Every kind, in the order of RUNTIME.md §3.5.2.
    pub const ALL: [Kind; 7] = [
        Kind::Equals,
        Kind::NotEquals,
        Kind::GreaterThanOrEqual,
        Kind::LessThan,
        Kind::And,
        Kind::Or,
        Kind::Not,
    ];

    /// The JSON spelling (`greater-than-or-equal`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Equals => "equals",
            Kind::NotEquals => "not-equals",
            Kind::GreaterThanOrEqual => "greater-than-or-equal",
            Kind::LessThan => "less-than",
            Kind::And => "and",
            Kind::Or => "or",
            Kind::Not => "not",
        }
    }

    /// Parses the JSON spelling.
    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The comparison of a leaf kind; `None` for connectives.
    pub fn comparison(self) -> Option<Comparison> {
        match self {
            Kind::Equals => Some(Comparison::Equals),
            Kind::NotEquals => Some(Comparison::NotEquals),
            Kind::GreaterThanOrEqual => Some(Comparison::GreaterThanOrEqual),
            Kind::LessThan => Some(Comparison::LessThan),
            Kind::And | Kind::Or | Kind::Not => None,
        }
    }
}

impl Serialize for Kind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Kind, D::Error> {
        let s = String::deserialize(d)?;
        Kind::parse(&s).ok_or_else(|| {
            let all: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
            de::Error::custom(format!(
                "unknown kind \"{s}\" (expected {})",
                all.join(", ")
            ))
        })
    }
}

/// One entry of a flat predicate pool, as lowered: the members its kind ignores are dropped
/// (a leaf keeps `fact` and `value`, `and`/`or` keep `children`, `not` keeps `child`; see the
/// module docs). JSON `{kind, fact?, value?, children?, child?}`: absent members are not
/// written, and a leaf always writes `value` (`null` is a real comparison value).
///
/// Reading checks every member's type whatever the kind: `fact` a string or null, `value` a
/// string, number, boolean or null, `children` an array of integer indices or null, `child` an
/// integer index or null (the session schema's types).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(from = "PoolNode")]
pub struct FlatNode {
    /// The node kind.
    pub kind: Kind,
    /// Leaves: the fact name (`None` when missing or null; [`decode`](super::decode) rejects
    /// that).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fact: Option<String>,
    /// Leaves: the comparison value (string, number, boolean or null; `null` when missing).
    /// `None` for connectives.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// `and` / `or`: indices into the pool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub children: Option<Vec<i64>>,
    /// `not`: an index into the pool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub child: Option<i64>,
}

impl FlatNode {
    /// A leaf `{kind, fact, value}`.
    pub fn leaf(kind: Comparison, fact: impl Into<String>, value: Value) -> FlatNode {
        FlatNode {
            kind: kind.kind(),
            fact: Some(fact.into()),
            value: Some(value),
            children: None,
            child: None,
        }
    }
}

/// A pool node as written, before the members its kind ignores are dropped.
#[derive(Deserialize)]
struct PoolNode {
    kind: Kind,
    fact: Option<String>,
    #[serde(default, deserialize_with = "comparison_value")]
    value: Option<Value>,
    #[serde(default, deserialize_with = "indices")]
    children: Option<Vec<i64>>,
    #[serde(default, deserialize_with = "optional_index")]
    child: Option<i64>,
}

impl From<PoolNode> for FlatNode {
    fn from(n: PoolNode) -> FlatNode {
        let mut flat = FlatNode {
            kind: n.kind,
            fact: None,
            value: None,
            children: None,
            child: None,
        };
        match n.kind {
            Kind::And | Kind::Or => flat.children = n.children,
            Kind::Not => flat.child = n.child,
            _ => {
                flat.fact = n.fact;
                flat.value = Some(n.value.unwrap_or(Value::Null));
            }
        }
        flat
    }
}

/// A flat predicate `{nodes, root}` (RUNTIME.md §3.5.2).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
pub struct FlatPredicate {
    /// The node pool.
    pub nodes: Vec<FlatNode>,
    /// Index of the root node.
    #[serde(deserialize_with = "index")]
    pub root: i64,
}

/// One postcondition as lowered from the session and persisted in the compile file
/// (FORMATS.md §15.5): `{id, mode, facet, source, predicate?}`, written in that order.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
pub struct PostconditionEntry {
    /// Stable id, `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`.
    pub id: String,
    /// Deterministic or render-attested.
    pub mode: Mode,
    /// `@atomic` or a declared facet: whose canonical material the facts come from.
    pub facet: String,
    /// The postcondition sentence, verbatim.
    pub source: String,
    /// The violation predicate (deterministic entries only); missing or `null` means none.
    #[serde(
        default,
        deserialize_with = "predicate_or_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub predicate: Option<FlatPredicate>,
}

/// A leaf comparison (RUNTIME.md §6.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    /// Strict equality.
    Equals,
    /// Strict inequality.
    NotEquals,
    /// `fact >= value`, finite numbers only.
    GreaterThanOrEqual,
    /// `fact < value`, finite numbers only.
    LessThan,
}

impl Comparison {
    /// The leaf [`Kind`].
    pub fn kind(self) -> Kind {
        match self {
            Comparison::Equals => Kind::Equals,
            Comparison::NotEquals => Kind::NotEquals,
            Comparison::GreaterThanOrEqual => Kind::GreaterThanOrEqual,
            Comparison::LessThan => Kind::LessThan,
        }
    }
}

/// A decoded predicate tree (RUNTIME.md §3.5.4). It encodes the **violation**. JSON: a leaf
/// `{kind, fact, value}`, `{kind, children: [...]}` or `{kind: "not", child: {...}}`.
#[derive(Clone, Debug, PartialEq)]
pub enum Predicate {
    /// `{kind, fact, value}`.
    Leaf {
        /// The comparison.
        kind: Comparison,
        /// The fact name.
        fact: String,
        /// The comparison value (string, number, boolean or null).
        value: Value,
    },
    /// `{kind: "and", children}`.
    And(Vec<Predicate>),
    /// `{kind: "or", children}`.
    Or(Vec<Predicate>),
    /// `{kind: "not", child}`.
    Not(Box<Predicate>),
}

impl Serialize for Predicate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut o = s.serialize_struct("Predicate", 3)?;
        match self {
            Predicate::Leaf { kind, fact, value } => {
                o.serialize_field("kind", &kind.kind())?;
                o.serialize_field("fact", fact)?;
                o.serialize_field("value", value)?;
            }
            Predicate::And(c) => {
                o.serialize_field("kind", &Kind::And)?;
                o.serialize_field("children", c)?;
            }
            Predicate::Or(c) => {
                o.serialize_field("kind", &Kind::Or)?;
                o.serialize_field("children", c)?;
            }
            Predicate::Not(c) => {
                o.serialize_field("kind", &Kind::Not)?;
                o.serialize_field("child", c)?;
            }
        }
        o.end()
    }
}

impl Predicate {
    /// The decoded JSON form of RUNTIME.md §3.5.4 (see the type docs).
    pub fn to_value(&self) -> Value {
        json::value_of(self)
    }
}

/// Errors of reading and validating postcondition entries.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PostconditionError {
    /// The JSON has the wrong shape; `at` is its JSON path (`postconditions[0].predicate.root`).
    #[error("{at}: {message}")]
    Shape {
        /// JSON path of the offending member.
        at: String,
        /// What is wrong (`expected a string, found a number`).
        message: String,
    },
    /// The lowering checks of RUNTIME.md §3.5.3 failed; every problem is listed.
    #[error("invalid postconditions for node '{node}': {}", problems.join("; "))]
    Invalid {
        /// The node id.
        node: String,
        /// One sentence per problem, naming the entry by index and id.
        problems: Vec<String>,
    },
}

impl PostconditionError {
    fn shape(e: json::DeError, root: &str) -> PostconditionError {
        PostconditionError::Shape {
            at: e.path_from(root),
            message: e.message(TypeNames::WithArticle),
        }
    }
}

impl PostconditionEntry {
    /// Reads one entry. `at` names it in errors (`postconditions[2]`).
    ///
    /// Required: `id`, `mode` (`deterministic` / `render-attested`), `facet`, `source`
    /// (strings); `predicate` may be missing or `null`, otherwise `{nodes: [...], root}` with
    /// integer indices. Members are checked in that order; unknown members are ignored. Range
    /// and consistency checks belong to [`decode`](super::decode) and
    /// [`CompiledPostconditions::compile`](super::CompiledPostconditions::compile).
    ///
    /// Errors: [`PostconditionError::Shape`] naming the JSON path.
    pub fn from_value(v: &Value, at: &str) -> Result<PostconditionEntry, PostconditionError> {
        json::from_value(v).map_err(|e| PostconditionError::shape(e, at))
    }

    /// The persisted JSON form: keys `id`, `mode`, `facet`, `source`, then `predicate` when
    /// present; pool nodes as [`FlatNode`] writes them.
    pub fn to_value(&self) -> Value {
        json::value_of(self)
    }
}

/// Reads the `postconditions` array (compile file or session output). Elements are named
/// `postconditions[i]` in errors.
///
/// Errors: [`PostconditionError::Shape`].
pub fn entries_from_value(v: &Value) -> Result<Vec<PostconditionEntry>, PostconditionError> {
    json::from_value(v).map_err(|e| PostconditionError::shape(e, "postconditions"))
}

/// The persisted `postconditions` array (FORMATS.md §15.5): entries sorted by id.
pub fn entries_to_value(entries: &[PostconditionEntry]) -> Value {
    let mut sorted: Vec<&PostconditionEntry> = entries.iter().collect();
    sorted.sort_by(|a, b| json::utf16_cmp(&a.id, &b.id));
    json::value_of(&sorted)
}

// ---------------------------------------------------------------------------------------------
// Member readers with the messages of the postcondition readers
// ---------------------------------------------------------------------------------------------

/// A pool index: an integral number (`1.0` included), saturating to the `i64` range; range
/// checks belong to the decoder. Otherwise `expected an integer index`.
struct PoolIndex(i64);

impl<'de> Deserialize<'de> for PoolIndex {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<PoolIndex, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = PoolIndex;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer index")
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<PoolIndex, E> {
                Ok(PoolIndex(n))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<PoolIndex, E> {
                Ok(PoolIndex(i64::try_from(n).unwrap_or(i64::MAX)))
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<PoolIndex, E> {
                if n.is_finite() && n.fract() == 0.0 {
                    Ok(PoolIndex(n as i64))
                } else {
                    Err(E::invalid_type(de::Unexpected::Float(n), &self))
                }
            }
        }
        d.deserialize_any(V)
    }
}

fn index<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    PoolIndex::deserialize(d).map(|i| i.0)
}

fn optional_index<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    Ok(Option::<PoolIndex>::deserialize(d)?.map(|i| i.0))
}

/// `children`: null, or an array of indices (`expected an array of indices` otherwise).
fn indices<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<i64>>, D::Error> {
    struct Array(Vec<PoolIndex>);
    impl<'de> Deserialize<'de> for Array {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Array, D::Error> {
            expecting(d, expect!("an array of indices")).map(Array)
        }
    }
    Ok(Option::<Array>::deserialize(d)?.map(|a| a.0.into_iter().map(|i| i.0).collect()))
}

/// `predicate`: null, or a flat predicate (`expected an object or null` otherwise).
fn predicate_or_null<'de, D: Deserializer<'de>>(d: D) -> Result<Option<FlatPredicate>, D::Error> {
    struct Pred(FlatPredicate);
    impl<'de> Deserialize<'de> for Pred {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Pred, D::Error> {
            expecting(d, expect!("an object or null")).map(Pred)
        }
    }
    Ok(Option::<Pred>::deserialize(d)?.map(|p| p.0))
}

/// A leaf's `value`: a string, number, boolean or null (`None` when missing or null).
fn comparison_value<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    struct Scalar(Value);
    impl<'de> Deserialize<'de> for Scalar {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Scalar, D::Error> {
            let v = Value::deserialize(d)?;
            match v {
                Value::Array(_) | Value::Object(_) => Err(de::Error::invalid_type(
                    if matches!(v, Value::Array(_)) {
                        de::Unexpected::Seq
                    } else {
                        de::Unexpected::Map
                    },
                    &"a string, number, boolean or null",
                )),
                scalar => Ok(Scalar(scalar)),
            }
        }
    }
    Ok(Option::<Scalar>::deserialize(d)?.map(|s| s.0))
}

/// The article form of a value's type (`a number`, `an array`, `null`) for messages.
pub(super) fn a_type(v: &Value) -> &'static str {
    Found::of(v).with_article()
}
