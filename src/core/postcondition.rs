//! Postconditions, structured truth and the commit gate (RUNTIME.md §3.5, §5, §6).
//!
//! * **Flat entries** ([`PostconditionEntry`]) are what the postcondition session produces and
//!   what the compile file persists (FORMATS.md §15.5 `postconditions`): `{id, mode, facet,
//!   source, predicate?}` with the predicate as a flat node pool `{nodes, root}`.
//! * [`decode`] rebuilds the recursive [`Predicate`] from a pool (RUNTIME.md §3.5.3), and
//!   [`CompiledPostconditions::compile`] validates a node's entries and builds the in-memory set
//!   of §3.5.4.
//! * [`facts`] flattens a facet's reduced truth into named facts (§5.4); [`evaluate`] decides a
//!   predicate over them (§6.1).
//! * [`structured_truth`] turns a render's files into the node's fingerprint map or the exact
//!   failure reason of §5.3, with the empty-facet warnings of §5.5.
//! * [`gate`] checks every deterministic and attested obligation and renders the one-line failure
//!   reason of §6.3.
//!
//! Choices the specification leaves open, documented here:
//!
//! * **Decoded size.** Sharing a pool index between parents decodes it once per parent, so a
//!   pool of 32 nodes can describe a tree of 2^32 nodes. Decoding therefore also rejects trees
//!   of more than [`MAX_DECODED_NODES`] nodes or more than [`MAX_DECODED_BYTES`] bytes of fact
//!   names and string values ([`DecodeError::TooLarge`]); a pool without sharing never comes
//!   close.
//! * **Ignored members.** Members the schema calls ignored are dropped while lowering: a leaf
//!   keeps `fact` and `value`, `and`/`or` keep `children`, `not` keeps `child`. The persisted form
//!   omits members that are absent, except a leaf's `value`, which is always written (`null` is a
//!   real comparison value).
//! * **Fact collisions.** Objects are flattened in canonical key order (UTF-16), and when two
//!   actual positions flatten to one name (`{"a": {"b": 1}, "a.b": 2}`) the first in that order
//!   wins; a derived `.length` fact never replaces an actual one. Members whose key holds a lone
//!   surrogate produce no facts (no predicate can name them).
//! * **Indeterminate details.** The reason names the first undecidable leaf in child order:
//!   `fact <name> missing`, `fact <name> is <a type>, not a number`, `fact <name> is not a
//!   finite number`, `comparison value for fact <name> is <a type>, not a number`; when the facts
//!   themselves cannot be computed: `structured truth unavailable`, or the canonicalization
//!   error's message.
//! * **Reason order.** The failure reason is sorted by id as the text of §6.3 requires (its
//!   example line lists `fresh` last, which is not id order).

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use crate::core::canonicalizer::{ATOMIC, CanonError, CompiledCanonicalizer};
use crate::format::address::NULL_ADDRESS;
use crate::format::json::{self, JsString, Object, Value};
use crate::format::receipt::Fingerprints;

/// Most nodes a flat predicate pool may hold (RUNTIME.md §3.5.2).
pub const MAX_POOL: usize = 256;
/// Most levels a decoded predicate may have; the root is level 1 (RUNTIME.md §3.5.3).
pub const MAX_LEVELS: usize = 32;
/// Most nodes a decoded predicate may have, counting shared pool entries once per parent.
pub const MAX_DECODED_NODES: usize = 4096;
/// Most bytes of fact names and string values a decoded predicate may hold in total.
pub const MAX_DECODED_BYTES: usize = 1 << 20;
/// The exact path of a faceted node's structured truth (RUNTIME.md §5.1).
pub const TRUTH_FILE: &str = "truth.json";

// ---------------------------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------------------------

/// How a postcondition is checked; also the mode of a whole set (RUNTIME.md §3.5.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

/// The kind of a flat predicate node (RUNTIME.md §3.5.2).
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
        Some(match s {
            "equals" => Kind::Equals,
            "not-equals" => Kind::NotEquals,
            "greater-than-or-equal" => Kind::GreaterThanOrEqual,
            "less-than" => Kind::LessThan,
            "and" => Kind::And,
            "or" => Kind::Or,
            "not" => Kind::Not,
            _ => return None,
        })
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

/// One entry of a flat predicate pool, as lowered (ignored members dropped, see module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct FlatNode {
    /// The node kind.
    pub kind: Kind,
    /// Leaves: the fact name (`None` when missing or null; [`decode`] rejects that).
    pub fact: Option<String>,
    /// Leaves: the comparison value (string, number, boolean or null). `Null` for connectives.
    pub value: Value,
    /// `and` / `or`: indices into the pool.
    pub children: Option<Vec<i64>>,
    /// `not`: an index into the pool.
    pub child: Option<i64>,
}

/// A flat predicate `{nodes, root}` (RUNTIME.md §3.5.2).
#[derive(Clone, Debug, PartialEq)]
pub struct FlatPredicate {
    /// The node pool.
    pub nodes: Vec<FlatNode>,
    /// Index of the root node.
    pub root: i64,
}

/// One postcondition as lowered from the session and persisted in the compile file
/// (FORMATS.md §15.5): `{id, mode, facet, source, predicate?}`.
#[derive(Clone, Debug, PartialEq)]
pub struct PostconditionEntry {
    /// Stable id, `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`.
    pub id: String,
    /// Deterministic or render-attested.
    pub mode: Mode,
    /// `@atomic` or a declared facet: whose canonical material the facts come from.
    pub facet: String,
    /// The postcondition sentence, verbatim.
    pub source: String,
    /// The violation predicate (deterministic entries only).
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

/// A decoded predicate tree (RUNTIME.md §3.5.4). It encodes the **violation**.
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

impl Predicate {
    /// The decoded JSON form of RUNTIME.md §3.5.4: a leaf `{kind, fact, value}`,
    /// `{kind, children: [...]}` or `{kind: "not", child: {...}}`.
    pub fn to_value(&self) -> Value {
        let mut o = Object::new();
        match self {
            Predicate::Leaf { kind, fact, value } => {
                o.push_unique("kind", Value::str(kind.kind().as_str()));
                o.push_unique("fact", Value::str(fact.clone()));
                o.push_unique("value", value.clone());
            }
            Predicate::And(c) | Predicate::Or(c) => {
                let kind = if matches!(self, Predicate::And(_)) {
                    "and"
                } else {
                    "or"
                };
                o.push_unique("kind", Value::str(kind));
                o.push_unique(
                    "children",
                    Value::Array(c.iter().map(Predicate::to_value).collect()),
                );
            }
            Predicate::Not(c) => {
                o.push_unique("kind", Value::str("not"));
                o.push_unique("child", c.to_value());
            }
        }
        Value::Object(o)
    }
}

/// Why a flat predicate does not decode (RUNTIME.md §3.5.3). Node numbers are pool indices.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// More than [`MAX_POOL`] nodes.
    #[error("predicate pool has {len} nodes (at most {MAX_POOL})")]
    PoolTooLarge {
        /// Pool length.
        len: usize,
    },
    /// `root` outside the pool.
    #[error("predicate root index {root} is out of range (pool has {len} nodes)")]
    RootOutOfRange {
        /// The root index given.
        root: i64,
        /// Pool length.
        len: usize,
    },
    /// A `children`/`child` index outside the pool.
    #[error("predicate node {node}: index {index} is out of range (pool has {len} nodes)")]
    IndexOutOfRange {
        /// The referring node.
        node: usize,
        /// The bad index.
        index: i64,
        /// Pool length.
        len: usize,
    },
    /// `and`/`or` without a non-empty `children` list.
    #[error("predicate node {node}: '{}' needs a non-empty children list", kind.as_str())]
    EmptyChildren {
        /// The node.
        node: usize,
        /// `and` or `or`.
        kind: Kind,
    },
    /// `not` without `child`.
    #[error("predicate node {node}: 'not' needs a child")]
    MissingChild {
        /// The node.
        node: usize,
    },
    /// A leaf without a non-empty `fact`.
    #[error("predicate node {node}: leaf '{}' needs a non-empty fact", kind.as_str())]
    MissingFact {
        /// The node.
        node: usize,
        /// The leaf kind.
        kind: Kind,
    },
    /// An index reachable from itself; `cycle` lists the indices from the first repeated node
    /// back to itself.
    #[error("predicate cycle: node {} is reachable from itself ({})", cycle[0], cycle.iter().map(usize::to_string).collect::<Vec<_>>().join(" -> "))]
    Cycle {
        /// The cycle, first node repeated at the end.
        cycle: Vec<usize>,
    },
    /// Deeper than [`MAX_LEVELS`] levels.
    #[error("predicate is {levels} levels deep (at most {MAX_LEVELS})")]
    TooDeep {
        /// Levels of the decoded tree (root = 1).
        levels: usize,
    },
    /// Larger than [`MAX_DECODED_NODES`] nodes or [`MAX_DECODED_BYTES`] bytes once shared
    /// entries are decoded once per parent.
    #[error(
        "decoded predicate is too large ({nodes} nodes, {bytes} bytes of facts and values; at most {MAX_DECODED_NODES} nodes and {MAX_DECODED_BYTES} bytes)"
    )]
    TooLarge {
        /// Decoded node count (saturating).
        nodes: usize,
        /// Decoded bytes (saturating).
        bytes: usize,
    },
}

/// Errors of reading and validating postcondition entries.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PostconditionError {
    /// The JSON has the wrong shape; `at` is its JSON path (`postconditions[0].predicate.root`).
    #[error("{at}: {message}")]
    Shape {
        /// JSON path of the offending member.
        at: String,
        /// What is wrong.
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

/// A deterministic postcondition of a compiled set.
#[derive(Clone, Debug, PartialEq)]
pub struct DeterministicPostcondition {
    /// The id.
    pub id: String,
    /// The facet whose facts it reads.
    pub facet: String,
    /// The source sentence.
    pub source: String,
    /// The decoded violation predicate.
    pub predicate: Predicate,
}

/// A render-attested postcondition of a compiled set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttestedPostcondition {
    /// The id (the key the render's `attestations` object must carry).
    pub id: String,
    /// The facet it concerns.
    pub facet: String,
    /// The source sentence.
    pub source: String,
}

/// A node's compiled postcondition set (RUNTIME.md §3.5.4).
#[derive(Clone, Debug, PartialEq)]
pub struct CompiledPostconditions {
    /// The node id.
    pub node: String,
    /// `Deterministic` when there are no attested entries (including the empty set).
    pub mode: Mode,
    /// Deterministic entries, sorted by id.
    pub deterministic: Vec<DeterministicPostcondition>,
    /// Render-attested entries, sorted by id.
    pub attested: Vec<AttestedPostcondition>,
    entries: Vec<PostconditionEntry>,
}

// ---------------------------------------------------------------------------------------------
// JSON <-> flat entries
// ---------------------------------------------------------------------------------------------

fn shape(at: impl Into<String>, message: impl Into<String>) -> PostconditionError {
    PostconditionError::Shape {
        at: at.into(),
        message: message.into(),
    }
}

fn a_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn expected(at: &str, what: &str, found: &Value) -> PostconditionError {
    shape(at, format!("expected {what}, found {}", a_type(found)))
}

fn required<'v>(o: &'v Object, key: &str, at: &str) -> Result<&'v Value, PostconditionError> {
    o.get(key)
        .ok_or_else(|| shape(format!("{at}.{key}"), "required member is missing"))
}

fn optional<'v>(o: &'v Object, key: &str) -> Option<&'v Value> {
    match o.get(key) {
        None | Some(Value::Null) => None,
        Some(v) => Some(v),
    }
}

fn text(v: &Value, at: &str) -> Result<String, PostconditionError> {
    match v {
        Value::String(JsString::Utf8(s)) => Ok(s.clone()),
        Value::String(JsString::Wtf16(_)) => Err(shape(
            at,
            "string holds a lone surrogate (not valid Unicode)",
        )),
        _ => Err(expected(at, "a string", v)),
    }
}

fn index(v: &Value, at: &str) -> Result<i64, PostconditionError> {
    match v {
        Value::Number(n) if n.is_finite() && n.fract() == 0.0 => Ok(*n as i64),
        _ => Err(expected(at, "an integer index", v)),
    }
}

fn parse_node(v: &Value, at: &str) -> Result<FlatNode, PostconditionError> {
    let o = v.as_object().ok_or_else(|| expected(at, "an object", v))?;
    let kind_at = format!("{at}.kind");
    let kind_s = text(required(o, "kind", at)?, &kind_at)?;
    let kind = Kind::parse(&kind_s).ok_or_else(|| {
        shape(
            &kind_at,
            format!(
                "unknown kind \"{kind_s}\" (expected equals, not-equals, greater-than-or-equal, less-than, and, or, not)"
            ),
        )
    })?;
    let mut node = FlatNode {
        kind,
        fact: None,
        value: Value::Null,
        children: None,
        child: None,
    };
    match kind {
        Kind::And | Kind::Or => {
            if let Some(c) = optional(o, "children") {
                let c_at = format!("{at}.children");
                let arr = c
                    .as_array()
                    .ok_or_else(|| expected(&c_at, "an array of indices", c))?;
                let mut out = Vec::with_capacity(arr.len().min(MAX_POOL + 1));
                for (i, x) in arr.iter().enumerate() {
                    out.push(index(x, &format!("{c_at}[{i}]"))?);
                }
                node.children = Some(out);
            }
        }
        Kind::Not => {
            if let Some(c) = optional(o, "child") {
                node.child = Some(index(c, &format!("{at}.child"))?);
            }
        }
        _ => {
            if let Some(f) = optional(o, "fact") {
                node.fact = Some(text(f, &format!("{at}.fact"))?);
            }
            match o.get("value") {
                None => {}
                Some(v @ (Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_))) => {
                    node.value = v.clone();
                }
                Some(other) => {
                    return Err(expected(
                        &format!("{at}.value"),
                        "a string, number, boolean or null",
                        other,
                    ));
                }
            }
        }
    }
    Ok(node)
}

fn parse_predicate(v: &Value, at: &str) -> Result<FlatPredicate, PostconditionError> {
    let o = v
        .as_object()
        .ok_or_else(|| expected(at, "an object or null", v))?;
    let nodes_at = format!("{at}.nodes");
    let nodes_v = required(o, "nodes", at)?;
    let arr = nodes_v
        .as_array()
        .ok_or_else(|| expected(&nodes_at, "an array", nodes_v))?;
    let mut nodes = Vec::with_capacity(arr.len().min(MAX_POOL + 1));
    for (i, n) in arr.iter().enumerate() {
        nodes.push(parse_node(n, &format!("{nodes_at}[{i}]"))?);
    }
    let root = index(required(o, "root", at)?, &format!("{at}.root"))?;
    Ok(FlatPredicate { nodes, root })
}

impl PostconditionEntry {
    /// Reads one entry. `at` names it in errors (`postconditions[2]`).
    ///
    /// Required: `id`, `mode` (`deterministic` / `render-attested`), `facet`, `source`
    /// (strings); `predicate` may be missing or `null`, otherwise `{nodes: [...], root}` with
    /// integer indices. Unknown members are ignored. Range and consistency checks belong to
    /// [`decode`] and [`CompiledPostconditions::compile`].
    ///
    /// Errors: [`PostconditionError::Shape`] naming the JSON path.
    pub fn from_value(v: &Value, at: &str) -> Result<PostconditionEntry, PostconditionError> {
        let o = v.as_object().ok_or_else(|| expected(at, "an object", v))?;
        let id = text(required(o, "id", at)?, &format!("{at}.id"))?;
        let mode_at = format!("{at}.mode");
        let mode = match text(required(o, "mode", at)?, &mode_at)?.as_str() {
            "deterministic" => Mode::Deterministic,
            "render-attested" => Mode::RenderAttested,
            other => {
                return Err(shape(
                    mode_at,
                    format!("expected \"deterministic\" or \"render-attested\", found \"{other}\""),
                ));
            }
        };
        let facet = text(required(o, "facet", at)?, &format!("{at}.facet"))?;
        let source = text(required(o, "source", at)?, &format!("{at}.source"))?;
        let predicate = match optional(o, "predicate") {
            None => None,
            Some(p) => Some(parse_predicate(p, &format!("{at}.predicate"))?),
        };
        Ok(PostconditionEntry {
            id,
            mode,
            facet,
            source,
            predicate,
        })
    }

    /// The persisted JSON form: keys `id`, `mode`, `facet`, `source`, then `predicate` when
    /// present; pool nodes as `{kind, fact?, value, children?, child?}` (a leaf always writes
    /// `value`, connectives write only their own members).
    pub fn to_value(&self) -> Value {
        let mut o = Object::new();
        o.push_unique("id", Value::str(self.id.clone()));
        o.push_unique("mode", Value::str(self.mode.as_str()));
        o.push_unique("facet", Value::str(self.facet.clone()));
        o.push_unique("source", Value::str(self.source.clone()));
        if let Some(p) = &self.predicate {
            let nodes = p
                .nodes
                .iter()
                .map(|n| {
                    let mut no = Object::new();
                    no.push_unique("kind", Value::str(n.kind.as_str()));
                    if let Some(f) = &n.fact {
                        no.push_unique("fact", Value::str(f.clone()));
                    }
                    if n.kind.comparison().is_some() {
                        no.push_unique("value", n.value.clone());
                    }
                    if let Some(c) = &n.children {
                        no.push_unique(
                            "children",
                            Value::Array(c.iter().map(|&i| Value::Number(i as f64)).collect()),
                        );
                    }
                    if let Some(c) = n.child {
                        no.push_unique("child", Value::Number(c as f64));
                    }
                    Value::Object(no)
                })
                .collect();
            let mut po = Object::new();
            po.push_unique("nodes", Value::Array(nodes));
            po.push_unique("root", Value::Number(p.root as f64));
            o.push_unique("predicate", Value::Object(po));
        }
        Value::Object(o)
    }
}

/// Reads the `postconditions` array (compile file or session output). Elements are named
/// `postconditions[i]` in errors.
///
/// Errors: [`PostconditionError::Shape`].
pub fn entries_from_value(v: &Value) -> Result<Vec<PostconditionEntry>, PostconditionError> {
    let arr = v
        .as_array()
        .ok_or_else(|| expected("postconditions", "an array", v))?;
    arr.iter()
        .enumerate()
        .map(|(i, e)| PostconditionEntry::from_value(e, &format!("postconditions[{i}]")))
        .collect()
}

/// The persisted `postconditions` array (FORMATS.md §15.5): entries sorted by id.
pub fn entries_to_value(entries: &[PostconditionEntry]) -> Value {
    let mut sorted: Vec<&PostconditionEntry> = entries.iter().collect();
    sorted.sort_by(|a, b| json::utf16_cmp(&a.id, &b.id));
    Value::Array(
        sorted
            .into_iter()
            .map(PostconditionEntry::to_value)
            .collect(),
    )
}

// ---------------------------------------------------------------------------------------------
// decode
// ---------------------------------------------------------------------------------------------

struct Decoder<'a> {
    nodes: &'a [FlatNode],
    state: Vec<u8>,
    levels: Vec<usize>,
    count: Vec<usize>,
    bytes: Vec<usize>,
    path: Vec<usize>,
}

fn in_range(i: i64, len: usize) -> Option<usize> {
    usize::try_from(i).ok().filter(|&u| u < len)
}

fn value_bytes(v: &Value) -> usize {
    match v {
        Value::String(s) => s.utf16_len(),
        _ => 0,
    }
}

impl Decoder<'_> {
    /// Depth-first check of everything reachable from `i`: shapes, indices, cycles; fills the
    /// levels, node count and byte weight of each subtree. Recursion depth is bounded by the
    /// pool size (no node is entered twice on one path).
    fn visit(&mut self, i: usize) -> Result<(), DecodeError> {
        let len = self.nodes.len();
        self.state[i] = 1;
        self.path.push(i);
        let node = &self.nodes[i];
        let mut kids: Vec<usize> = Vec::new();
        let mut own_bytes = 0;
        match node.kind {
            Kind::And | Kind::Or => {
                let list = match &node.children {
                    Some(c) if !c.is_empty() => c,
                    _ => {
                        return Err(DecodeError::EmptyChildren {
                            node: i,
                            kind: node.kind,
                        });
                    }
                };
                for &c in list {
                    kids.push(in_range(c, len).ok_or(DecodeError::IndexOutOfRange {
                        node: i,
                        index: c,
                        len,
                    })?);
                }
            }
            Kind::Not => {
                let c = node.child.ok_or(DecodeError::MissingChild { node: i })?;
                kids.push(in_range(c, len).ok_or(DecodeError::IndexOutOfRange {
                    node: i,
                    index: c,
                    len,
                })?);
            }
            _ => match &node.fact {
                Some(f) if !f.is_empty() => own_bytes = f.len() + value_bytes(&node.value),
                _ => {
                    return Err(DecodeError::MissingFact {
                        node: i,
                        kind: node.kind,
                    });
                }
            },
        }
        let mut levels = 0;
        let mut count: usize = 1;
        let mut bytes: usize = own_bytes;
        for &k in &kids {
            match self.state[k] {
                1 => {
                    let start = self.path.iter().position(|&p| p == k).unwrap_or(0);
                    let mut cycle = self.path[start..].to_vec();
                    cycle.push(k);
                    return Err(DecodeError::Cycle { cycle });
                }
                0 => self.visit(k)?,
                _ => {}
            }
            levels = levels.max(self.levels[k]);
            count = count.saturating_add(self.count[k]);
            bytes = bytes.saturating_add(self.bytes[k]);
        }
        self.levels[i] = levels + 1;
        self.count[i] = count;
        self.bytes[i] = bytes;
        self.state[i] = 2;
        self.path.pop();
        Ok(())
    }

    /// Builds the tree below `i` (checked by `visit`; depth at most `MAX_LEVELS`).
    fn build(&self, i: usize) -> Predicate {
        let node = &self.nodes[i];
        let len = self.nodes.len();
        let kids = || -> Vec<Predicate> {
            node.children
                .iter()
                .flatten()
                .filter_map(|&c| in_range(c, len))
                .map(|k| self.build(k))
                .collect()
        };
        match node.kind {
            Kind::And => Predicate::And(kids()),
            Kind::Or => Predicate::Or(kids()),
            Kind::Not => Predicate::Not(Box::new(
                node.child
                    .and_then(|c| in_range(c, len))
                    .map(|k| self.build(k))
                    // Unreachable after `visit`; an empty `and` evaluates indeterminate.
                    .unwrap_or(Predicate::And(Vec::new())),
            )),
            Kind::Equals | Kind::NotEquals | Kind::GreaterThanOrEqual | Kind::LessThan => {
                Predicate::Leaf {
                    kind: node.kind.comparison().unwrap_or(Comparison::Equals),
                    fact: node.fact.clone().unwrap_or_default(),
                    value: node.value.clone(),
                }
            }
        }
    }
}

/// Rebuilds the recursive predicate from a flat pool (RUNTIME.md §3.5.3).
///
/// Checks, in this order: the pool has at most [`MAX_POOL`] nodes; `root` is in range; then,
/// depth-first from the root in child order, every reachable node has its members (`and`/`or`
/// a non-empty `children`, `not` a `child`, leaves a non-empty `fact`), every index is in range
/// and no index is reachable from itself; finally the tree is at most [`MAX_LEVELS`] levels
/// deep and within [`MAX_DECODED_NODES`] / [`MAX_DECODED_BYTES`]. Unreferenced pool entries are
/// ignored (not even checked); an index referenced by two parents is decoded twice.
///
/// Errors: the first [`DecodeError`] found.
pub fn decode(nodes: &[FlatNode], root: i64) -> Result<Predicate, DecodeError> {
    let len = nodes.len();
    if len > MAX_POOL {
        return Err(DecodeError::PoolTooLarge { len });
    }
    let r = in_range(root, len).ok_or(DecodeError::RootOutOfRange { root, len })?;
    let mut d = Decoder {
        nodes,
        state: vec![0; len],
        levels: vec![0; len],
        count: vec![0; len],
        bytes: vec![0; len],
        path: Vec::new(),
    };
    d.visit(r)?;
    if d.levels[r] > MAX_LEVELS {
        return Err(DecodeError::TooDeep {
            levels: d.levels[r],
        });
    }
    if d.count[r] > MAX_DECODED_NODES || d.bytes[r] > MAX_DECODED_BYTES {
        return Err(DecodeError::TooLarge {
            nodes: d.count[r],
            bytes: d.bytes[r],
        });
    }
    Ok(d.build(r))
}

// ---------------------------------------------------------------------------------------------
// The compiled set
// ---------------------------------------------------------------------------------------------

/// True iff `id` matches `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`.
pub fn is_valid_id(id: &str) -> bool {
    let b = id.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && b[0].is_ascii_alphanumeric()
        && b[1..]
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

impl CompiledPostconditions {
    /// The empty set of `node` (mode `deterministic`; passes the gate trivially).
    pub fn empty(node: impl Into<String>) -> CompiledPostconditions {
        CompiledPostconditions {
            node: node.into(),
            mode: Mode::Deterministic,
            deterministic: Vec::new(),
            attested: Vec::new(),
            entries: Vec::new(),
        }
    }

    /// Validates a node's flat entries and builds the compiled set (RUNTIME.md §3.5.3–§3.5.4).
    ///
    /// `facets` is the node's facet list (declared facets, with or without `@atomic`, which is
    /// always known); a node whose list has no facet other than `@atomic` is atomic-only.
    /// Checks, every problem reported: ids well-formed and unique; `facet` known; `predicate`
    /// present exactly for deterministic entries; no deterministic entry on an atomic-only node;
    /// every predicate decodes ([`decode`]). Entries are then sorted by id.
    ///
    /// Errors: [`PostconditionError::Invalid`].
    pub fn compile(
        node: &str,
        facets: &[String],
        entries: Vec<PostconditionEntry>,
    ) -> Result<CompiledPostconditions, PostconditionError> {
        let atomic_only = facets.iter().all(|f| f == ATOMIC);
        let mut problems = Vec::new();
        let mut deterministic = Vec::new();
        let mut attested = Vec::new();
        for (i, e) in entries.iter().enumerate() {
            let name = format!("postconditions[{i}] ('{}')", e.id);
            if !is_valid_id(&e.id) {
                problems.push(format!(
                    "postconditions[{i}].id '{}' does not match ^[A-Za-z0-9][A-Za-z0-9._-]{{0,63}}$",
                    e.id
                ));
            } else if let Some(j) = entries[..i].iter().position(|p| p.id == e.id) {
                problems.push(format!(
                    "postconditions[{i}].id '{}' repeats postconditions[{j}].id",
                    e.id
                ));
            }
            if e.facet != ATOMIC && !facets.contains(&e.facet) {
                let mut known = vec![ATOMIC.to_string()];
                known.extend(facets.iter().filter(|f| *f != ATOMIC).cloned());
                problems.push(format!(
                    "{name}: facet '{}' is not a facet of node '{node}' (known: {})",
                    e.facet,
                    known.join(", ")
                ));
            }
            match (e.mode, &e.predicate) {
                (Mode::Deterministic, None) => {
                    problems.push(format!("{name}: deterministic but has no predicate"));
                }
                (Mode::RenderAttested, Some(_)) => {
                    problems.push(format!("{name}: render-attested but carries a predicate"));
                }
                (Mode::Deterministic, Some(p)) => {
                    if atomic_only {
                        problems.push(format!(
                            "{name}: deterministic but node '{node}' is atomic-only (it has no structured facts)"
                        ));
                    }
                    match decode(&p.nodes, p.root) {
                        Ok(predicate) => deterministic.push(DeterministicPostcondition {
                            id: e.id.clone(),
                            facet: e.facet.clone(),
                            source: e.source.clone(),
                            predicate,
                        }),
                        Err(err) => problems.push(format!("{name}: {err}")),
                    }
                }
                (Mode::RenderAttested, None) => attested.push(AttestedPostcondition {
                    id: e.id.clone(),
                    facet: e.facet.clone(),
                    source: e.source.clone(),
                }),
            }
        }
        if !problems.is_empty() {
            return Err(PostconditionError::Invalid {
                node: node.to_string(),
                problems,
            });
        }
        deterministic.sort_by(|a, b| a.id.cmp(&b.id));
        attested.sort_by(|a, b| a.id.cmp(&b.id));
        let mut entries = entries;
        entries.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(CompiledPostconditions {
            node: node.to_string(),
            mode: if attested.is_empty() {
                Mode::Deterministic
            } else {
                Mode::RenderAttested
            },
            deterministic,
            attested,
            entries,
        })
    }

    /// Reads the persisted `postconditions` array and compiles it (cache load, FORMATS.md
    /// §15.5: the flat predicates are decoded again).
    ///
    /// Errors: [`PostconditionError::Shape`] or [`PostconditionError::Invalid`].
    pub fn from_value(
        node: &str,
        facets: &[String],
        v: &Value,
    ) -> Result<CompiledPostconditions, PostconditionError> {
        CompiledPostconditions::compile(node, facets, entries_from_value(v)?)
    }

    /// The flat entries, sorted by id (what the compile file persists).
    pub fn entries(&self) -> &[PostconditionEntry] {
        &self.entries
    }

    /// The persisted `postconditions` array (FORMATS.md §15.5).
    pub fn entries_value(&self) -> Value {
        entries_to_value(&self.entries)
    }

    /// True when the set has no entry.
    pub fn is_empty(&self) -> bool {
        self.deterministic.is_empty() && self.attested.is_empty()
    }

    /// The in-memory shape of RUNTIME.md §3.5.4: `{node, mode, deterministic: [{id, facet,
    /// source, predicate}], attested: [{id, facet, source}]}` with decoded predicates.
    pub fn to_value(&self) -> Value {
        let mut o = Object::new();
        o.push_unique("node", Value::str(self.node.clone()));
        o.push_unique("mode", Value::str(self.mode.as_str()));
        let det = self
            .deterministic
            .iter()
            .map(|d| {
                let mut e = Object::new();
                e.push_unique("id", Value::str(d.id.clone()));
                e.push_unique("facet", Value::str(d.facet.clone()));
                e.push_unique("source", Value::str(d.source.clone()));
                e.push_unique("predicate", d.predicate.to_value());
                Value::Object(e)
            })
            .collect();
        o.push_unique("deterministic", Value::Array(det));
        let att = self
            .attested
            .iter()
            .map(|a| {
                let mut e = Object::new();
                e.push_unique("id", Value::str(a.id.clone()));
                e.push_unique("facet", Value::str(a.facet.clone()));
                e.push_unique("source", Value::str(a.source.clone()));
                Value::Object(e)
            })
            .collect();
        o.push_unique("attested", Value::Array(att));
        Value::Object(o)
    }
}

// ---------------------------------------------------------------------------------------------
// Facts
// ---------------------------------------------------------------------------------------------

/// Fact name → scalar value (string, number, boolean or null), RUNTIME.md §5.4.
pub type Facts = BTreeMap<String, Value>;

/// Flattens a facet's reduced value (`None` = dropped facet, no facts) into facts
/// (RUNTIME.md §5.4): member `k` at prefix `x` is named `k` or `x.k`; an array at `x` gives
/// `x.length` and its elements at `x.0`, `x.1`, …; a scalar at `x` is the fact `x`; an actual
/// member beats a derived `.length`. See the module docs for collisions.
pub fn facts(reduced: Option<&Value>) -> Facts {
    let mut actual = Facts::new();
    let mut derived = Facts::new();
    if let Some(v) = reduced {
        let mut name = String::new();
        flatten(v, &mut name, &mut actual, &mut derived);
    }
    for (k, v) in derived {
        actual.entry(k).or_insert(v);
    }
    actual
}

fn push_segment(name: &mut String, seg: &str) {
    if !name.is_empty() {
        name.push('.');
    }
    name.push_str(seg);
}

fn flatten(v: &Value, name: &mut String, actual: &mut Facts, derived: &mut Facts) {
    let base = name.len();
    match v {
        Value::Object(o) => {
            let mut members: Vec<(&JsString, &Value)> = o.iter().collect();
            members.sort_by(|a, b| a.0.cmp_utf16(b.0));
            for (k, val) in members {
                let Some(k) = k.as_str() else { continue };
                push_segment(name, k);
                flatten(val, name, actual, derived);
                name.truncate(base);
            }
        }
        Value::Array(items) => {
            push_segment(name, "length");
            derived
                .entry(name.clone())
                .or_insert(Value::Number(items.len() as f64));
            name.truncate(base);
            for (i, item) in items.iter().enumerate() {
                push_segment(name, &i.to_string());
                flatten(item, name, actual, derived);
                name.truncate(base);
            }
        }
        scalar => {
            actual.entry(name.clone()).or_insert_with(|| scalar.clone());
        }
    }
}

/// The facts of `facet` (`@atomic` or a declared facet) of a structured truth.
///
/// Errors: the canonicalizer's ([`CanonError::UnknownFacet`], [`CanonError::NonFinite`], …).
pub fn facet_facts(
    canonicalizer: &CompiledCanonicalizer,
    truth: &Value,
    facet: &str,
) -> Result<Facts, CanonError> {
    Ok(facts(canonicalizer.reduced(truth, facet)?.as_ref()))
}

// ---------------------------------------------------------------------------------------------
// Evaluation
// ---------------------------------------------------------------------------------------------

/// The result of evaluating a violation predicate (RUNTIME.md §6.1). A deterministic
/// postcondition passes only on `NotTripped`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The violation holds.
    Tripped,
    /// The violation does not hold: the postcondition passes.
    NotTripped,
    /// Undecidable (a missing fact, a non-number in an ordering comparison).
    Indeterminate,
}

impl Outcome {
    /// `tripped`, `not-tripped` or `indeterminate`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Tripped => "tripped",
            Outcome::NotTripped => "not-tripped",
            Outcome::Indeterminate => "indeterminate",
        }
    }
}

/// Evaluates `predicate` over `facts` (RUNTIME.md §6.1).
pub fn evaluate(predicate: &Predicate, facts: &Facts) -> Outcome {
    evaluate_explained(predicate, facts).0
}

/// Like [`evaluate`], with the reason of an `Indeterminate` outcome (the first undecidable
/// leaf in child order; wording in the module docs). The reason is `None` otherwise.
pub fn evaluate_explained(predicate: &Predicate, facts: &Facts) -> (Outcome, Option<String>) {
    match predicate {
        Predicate::Leaf { kind, fact, value } => eval_leaf(*kind, fact, value, facts),
        Predicate::And(children) => {
            if children.is_empty() {
                return (Outcome::Indeterminate, Some("empty 'and'".to_string()));
            }
            let mut undecided = None;
            for c in children {
                match evaluate_explained(c, facts) {
                    (Outcome::NotTripped, _) => return (Outcome::NotTripped, None),
                    (Outcome::Indeterminate, why) => {
                        if undecided.is_none() {
                            undecided = Some(why);
                        }
                    }
                    (Outcome::Tripped, _) => {}
                }
            }
            match undecided {
                Some(why) => (Outcome::Indeterminate, why),
                None => (Outcome::Tripped, None),
            }
        }
        Predicate::Or(children) => {
            if children.is_empty() {
                return (Outcome::Indeterminate, Some("empty 'or'".to_string()));
            }
            let mut undecided = None;
            for c in children {
                match evaluate_explained(c, facts) {
                    (Outcome::Tripped, _) => return (Outcome::Tripped, None),
                    (Outcome::Indeterminate, why) => {
                        if undecided.is_none() {
                            undecided = Some(why);
                        }
                    }
                    (Outcome::NotTripped, _) => {}
                }
            }
            match undecided {
                Some(why) => (Outcome::Indeterminate, why),
                None => (Outcome::NotTripped, None),
            }
        }
        Predicate::Not(child) => match evaluate_explained(child, facts) {
            (Outcome::Tripped, _) => (Outcome::NotTripped, None),
            (Outcome::NotTripped, _) => (Outcome::Tripped, None),
            indeterminate => indeterminate,
        },
    }
}

/// Strict equality: same JSON type and value; numbers as doubles; `null` equals only `null`.
fn strict_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        _ => false,
    }
}

fn eval_leaf(
    kind: Comparison,
    fact: &str,
    value: &Value,
    facts: &Facts,
) -> (Outcome, Option<String>) {
    let Some(actual) = facts.get(fact) else {
        return (Outcome::Indeterminate, Some(format!("fact {fact} missing")));
    };
    let verdict = |b: bool| {
        if b {
            (Outcome::Tripped, None)
        } else {
            (Outcome::NotTripped, None)
        }
    };
    match kind {
        Comparison::Equals => verdict(strict_equal(actual, value)),
        Comparison::NotEquals => verdict(!strict_equal(actual, value)),
        Comparison::GreaterThanOrEqual | Comparison::LessThan => {
            let a = match actual {
                Value::Number(a) if a.is_finite() => *a,
                Value::Number(_) => {
                    return (
                        Outcome::Indeterminate,
                        Some(format!("fact {fact} is not a finite number")),
                    );
                }
                other => {
                    return (
                        Outcome::Indeterminate,
                        Some(format!("fact {fact} is {}, not a number", a_type(other))),
                    );
                }
            };
            let b = match value {
                Value::Number(b) if b.is_finite() => *b,
                Value::Number(_) => {
                    return (
                        Outcome::Indeterminate,
                        Some(format!(
                            "comparison value for fact {fact} is not a finite number"
                        )),
                    );
                }
                other => {
                    return (
                        Outcome::Indeterminate,
                        Some(format!(
                            "comparison value for fact {fact} is {}, not a number",
                            a_type(other)
                        )),
                    );
                }
            };
            verdict(if kind == Comparison::GreaterThanOrEqual {
                a >= b
            } else {
                a < b
            })
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Structured truth
// ---------------------------------------------------------------------------------------------

/// The structured truth of a committed render (RUNTIME.md §5).
#[derive(Clone, Debug, PartialEq)]
pub struct StructuredTruth {
    /// The node's fingerprint map: `apply(truth)` for faceted nodes, `{"@atomic": version}` for
    /// atomic-only nodes.
    pub fingerprints: Fingerprints,
    /// Empty-facet warnings (RUNTIME.md §5.5), one per declared facet reduced to `null`.
    pub warnings: Vec<String>,
    /// The parsed `truth.json` object of a faceted node (input of the gate); `None` for
    /// atomic-only nodes, whose `truth.json` is not interpreted.
    pub truth: Option<Value>,
}

/// Computes a render's structured truth and fingerprints (RUNTIME.md §5.1–§5.3, §5.5).
///
/// `files` is the harvested file map (tree-relative paths and bytes); `canonicalizer` the
/// node's compiled canonicalizer (`None`, or one without declared facets, means atomic-only);
/// `version` the world-model version (`sha256:…` of the OPWM1 artifact).
///
/// Faceted nodes need a file at exactly `truth.json` holding UTF-8 JSON whose top-level value
/// is an object. Errors: the failure reason, exactly one of
/// * `structured truth missing: node '<node>' declares facets but its render wrote no truth.json`
/// * `structured truth invalid: truth.json is not valid JSON (<parser message>)` (the parser
///   message is e.g. `unexpected end of JSON input at byte 12`, or
///   `invalid UTF-8 at byte <n>`)
/// * `structured truth invalid: truth.json must hold a JSON object`
/// * `structured truth invalid: <canonicalization error>` (for example `number at path 'p' is
///   not finite after quantization by 0.01`).
pub fn structured_truth(
    node: &str,
    files: &[(String, Vec<u8>)],
    canonicalizer: Option<&CompiledCanonicalizer>,
    version: &str,
) -> Result<StructuredTruth, String> {
    let c = match canonicalizer {
        Some(c) if c.is_faceted() => c,
        _ => {
            return Ok(StructuredTruth {
                fingerprints: Fingerprints::atomic(version),
                warnings: Vec::new(),
                truth: None,
            });
        }
    };
    let bytes = files
        .iter()
        .find(|(p, _)| p == TRUTH_FILE)
        .map(|(_, b)| b)
        .ok_or_else(|| {
            format!(
                "structured truth missing: node '{node}' declares facets but its render wrote no truth.json"
            )
        })?;
    let text = std::str::from_utf8(bytes).map_err(|e| {
        format!(
            "structured truth invalid: truth.json is not valid JSON (invalid UTF-8 at byte {})",
            e.valid_up_to()
        )
    })?;
    let value = json::parse_str(text)
        .map_err(|e| format!("structured truth invalid: truth.json is not valid JSON ({e})"))?;
    if value.as_object().is_none() {
        return Err("structured truth invalid: truth.json must hold a JSON object".to_string());
    }
    let fingerprints = c
        .apply(&value)
        .map_err(|e| format!("structured truth invalid: {e}"))?;
    let warnings = fingerprints
        .0
        .iter()
        .skip(1)
        .filter(|(_, token)| token == NULL_ADDRESS)
        .map(|(facet, _)| {
            format!(
                "facet '{facet}' of node '{node}' has no material: its paths are absent from truth.json"
            )
        })
        .collect();
    Ok(StructuredTruth {
        fingerprints,
        warnings,
        truth: Some(value),
    })
}

// ---------------------------------------------------------------------------------------------
// The gate
// ---------------------------------------------------------------------------------------------

/// The kind of a gate failure (RUNTIME.md §6.3 step 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// A deterministic predicate is `tripped`.
    Tripped,
    /// A deterministic predicate is `indeterminate`.
    Indeterminate,
    /// An attested obligation has no value in the render's `attestations`.
    MissingAttestation,
    /// An attested obligation was attested `false`.
    Attested,
}

impl FailureKind {
    /// `tripped`, `indeterminate`, `missing-attestation` or `attested`.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Tripped => "tripped",
            FailureKind::Indeterminate => "indeterminate",
            FailureKind::MissingAttestation => "missing-attestation",
            FailureKind::Attested => "attested",
        }
    }
}

/// One collected gate failure `{id, facet, kind, detail}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateFailure {
    /// The postcondition id.
    pub id: String,
    /// Its facet.
    pub facet: String,
    /// What failed.
    pub kind: FailureKind,
    /// `tripped` → `violation predicate holds`; `indeterminate` → the reason (module docs);
    /// `missing-attestation` → `attestation missing`; `attested` → `attested false`.
    pub detail: String,
}

impl fmt::Display for GateFailure {
    /// The reason segment: `<id> (tripped)`, `<id> (indeterminate: <detail>)`,
    /// `<id> (attestation missing)`, `<id> (attested false)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            FailureKind::Tripped => write!(f, "{} (tripped)", self.id),
            FailureKind::Indeterminate => write!(f, "{} (indeterminate: {})", self.id, self.detail),
            FailureKind::MissingAttestation => write!(f, "{} (attestation missing)", self.id),
            FailureKind::Attested => write!(f, "{} (attested false)", self.id),
        }
    }
}

/// Checks every obligation of `set` without short-circuiting (RUNTIME.md §6.3 step 4) and
/// returns the failures sorted by id (empty = the gate passes).
///
/// `truth` is the parsed `truth.json` of a faceted node and `canonicalizer` its compiled
/// canonicalizer; when either is missing, every deterministic entry is `indeterminate`
/// (`structured truth unavailable`). `attestations` maps render-attested ids to the render's
/// booleans; only `true` passes.
pub fn check_gate(
    set: &CompiledPostconditions,
    truth: Option<&Value>,
    canonicalizer: Option<&CompiledCanonicalizer>,
    attestations: &HashMap<String, bool>,
) -> Vec<GateFailure> {
    let mut failures = Vec::new();
    let mut by_facet: HashMap<&str, Result<Facts, String>> = HashMap::new();
    for d in &set.deterministic {
        let facts =
            by_facet
                .entry(d.facet.as_str())
                .or_insert_with(|| match (truth, canonicalizer) {
                    (Some(t), Some(c)) => facet_facts(c, t, &d.facet).map_err(|e| e.to_string()),
                    _ => Err("structured truth unavailable".to_string()),
                });
        let (outcome, why) = match facts {
            Ok(f) => evaluate_explained(&d.predicate, f),
            Err(e) => (Outcome::Indeterminate, Some(e.clone())),
        };
        let (kind, detail) = match outcome {
            Outcome::NotTripped => continue,
            Outcome::Tripped => (
                FailureKind::Tripped,
                "violation predicate holds".to_string(),
            ),
            Outcome::Indeterminate => (
                FailureKind::Indeterminate,
                why.unwrap_or_else(|| "undecidable".to_string()),
            ),
        };
        failures.push(GateFailure {
            id: d.id.clone(),
            facet: d.facet.clone(),
            kind,
            detail,
        });
    }
    for a in &set.attested {
        let (kind, detail) = match attestations.get(&a.id) {
            Some(true) => continue,
            Some(false) => (FailureKind::Attested, "attested false"),
            None => (FailureKind::MissingAttestation, "attestation missing"),
        };
        failures.push(GateFailure {
            id: a.id.clone(),
            facet: a.facet.clone(),
            kind,
            detail: detail.to_string(),
        });
    }
    failures.sort_by(|a, b| a.id.cmp(&b.id));
    failures
}

/// The one-line failure reason of RUNTIME.md §6.3 for a sorted failure list:
/// `postconditions failed: ` + the segments joined by `; `. `None` when the list is empty.
/// (Callers sanitize it like every failure reason, §7.9.)
pub fn failure_reason(failures: &[GateFailure]) -> Option<String> {
    if failures.is_empty() {
        return None;
    }
    let parts: Vec<String> = failures.iter().map(GateFailure::to_string).collect();
    Some(format!("postconditions failed: {}", parts.join("; ")))
}

/// The commit gate (RUNTIME.md §6.3 step 4): `Ok(())` when every obligation passes, otherwise
/// the failure reason, e.g.
/// `postconditions failed: fresh (indeterminate: fact prices.0.checked missing); has-prices (tripped); own-page (attested false)`.
/// An empty set passes trivially. See [`check_gate`] for the arguments.
pub fn gate(
    set: &CompiledPostconditions,
    truth: Option<&Value>,
    canonicalizer: Option<&CompiledCanonicalizer>,
    attestations: &HashMap<String, bool>,
) -> Result<(), String> {
    match failure_reason(&check_gate(set, truth, canonicalizer, attestations)) {
        None => Ok(()),
        Some(reason) => Err(reason),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::canonicalizer::{CanonicalizerSpec, compile_node};
    use crate::format::address::address;
    use crate::format::json::parse_str;

    fn leaf(kind: Kind, fact: &str, value: Value) -> FlatNode {
        FlatNode {
            kind,
            fact: Some(fact.to_string()),
            value,
            children: None,
            child: None,
        }
    }

    fn conn(kind: Kind, children: &[i64]) -> FlatNode {
        FlatNode {
            kind,
            fact: None,
            value: Value::Null,
            children: Some(children.to_vec()),
            child: None,
        }
    }

    fn not(child: i64) -> FlatNode {
        FlatNode {
            kind: Kind::Not,
            fact: None,
            value: Value::Null,
            children: None,
            child: Some(child),
        }
    }

    fn num(n: f64) -> Value {
        Value::Number(n)
    }

    fn lt(fact: &str, n: f64) -> Predicate {
        Predicate::Leaf {
            kind: Comparison::LessThan,
            fact: fact.into(),
            value: num(n),
        }
    }

    // ---- decode ------------------------------------------------------------------------

    #[test]
    fn decode_builds_the_tree_root_anywhere() {
        let nodes = vec![
            leaf(Kind::NotEquals, "status", Value::str("ok")),
            conn(Kind::Or, &[0, 2]),
            leaf(Kind::LessThan, "count", num(3.0)),
            leaf(Kind::Equals, "unreferenced", Value::Null),
            // Unreferenced and malformed entries are ignored.
            conn(Kind::And, &[]),
        ];
        let p = decode(&nodes, 1).unwrap();
        assert_eq!(
            p,
            Predicate::Or(vec![
                Predicate::Leaf {
                    kind: Comparison::NotEquals,
                    fact: "status".into(),
                    value: Value::str("ok"),
                },
                lt("count", 3.0),
            ])
        );
        assert_eq!(
            json::compact_string(&p.to_value()),
            r#"{"kind":"or","children":[{"kind":"not-equals","fact":"status","value":"ok"},{"kind":"less-than","fact":"count","value":3}]}"#
        );
    }

    #[test]
    fn decode_shared_index_is_decoded_twice() {
        let nodes = vec![
            conn(Kind::And, &[1, 2]),
            leaf(Kind::Equals, "a", num(1.0)),
            not(1),
        ];
        let p = decode(&nodes, 0).unwrap();
        let a = Predicate::Leaf {
            kind: Comparison::Equals,
            fact: "a".into(),
            value: num(1.0),
        };
        assert_eq!(
            p,
            Predicate::And(vec![a.clone(), Predicate::Not(Box::new(a))])
        );
    }

    #[test]
    fn decode_errors_name_the_index() {
        let one = vec![leaf(Kind::LessThan, "x", num(1.0))];
        let cases: Vec<(Vec<FlatNode>, i64, &str)> = vec![
            (
                one.clone(),
                1,
                "predicate root index 1 is out of range (pool has 1 nodes)",
            ),
            (
                one.clone(),
                -1,
                "predicate root index -1 is out of range (pool has 1 nodes)",
            ),
            (
                vec![],
                0,
                "predicate root index 0 is out of range (pool has 0 nodes)",
            ),
            (
                vec![
                    conn(Kind::And, &[1, 5]),
                    leaf(Kind::Equals, "a", Value::Null),
                ],
                0,
                "predicate node 0: index 5 is out of range (pool has 2 nodes)",
            ),
            (
                vec![not(-3)],
                0,
                "predicate node 0: index -3 is out of range (pool has 1 nodes)",
            ),
            (
                vec![conn(Kind::And, &[])],
                0,
                "predicate node 0: 'and' needs a non-empty children list",
            ),
            (
                vec![
                    conn(Kind::Or, &[1]),
                    FlatNode {
                        children: None,
                        ..conn(Kind::Or, &[])
                    },
                ],
                0,
                "predicate node 1: 'or' needs a non-empty children list",
            ),
            (
                vec![FlatNode {
                    child: None,
                    ..not(0)
                }],
                0,
                "predicate node 0: 'not' needs a child",
            ),
            (
                vec![FlatNode {
                    fact: None,
                    ..leaf(Kind::GreaterThanOrEqual, "x", num(1.0))
                }],
                0,
                "predicate node 0: leaf 'greater-than-or-equal' needs a non-empty fact",
            ),
            (
                vec![leaf(Kind::Equals, "", num(1.0))],
                0,
                "predicate node 0: leaf 'equals' needs a non-empty fact",
            ),
            (
                vec![not(0)],
                0,
                "predicate cycle: node 0 is reachable from itself (0 -> 0)",
            ),
            (
                vec![
                    conn(Kind::And, &[1]),
                    conn(Kind::Or, &[3, 2]),
                    not(1),
                    leaf(Kind::Equals, "a", num(1.0)),
                ],
                0,
                "predicate cycle: node 1 is reachable from itself (1 -> 2 -> 1)",
            ),
        ];
        for (nodes, root, want) in cases {
            let err = decode(&nodes, root).unwrap_err();
            assert_eq!(err.to_string(), want);
        }
    }

    fn not_chain(levels: usize) -> Vec<FlatNode> {
        let mut nodes: Vec<FlatNode> = (1..levels).map(|i| not(i as i64)).collect();
        nodes.push(leaf(Kind::Equals, "a", num(1.0)));
        nodes
    }

    #[test]
    fn decode_depth_limit() {
        assert!(decode(&not_chain(32), 0).is_ok());
        assert_eq!(
            decode(&not_chain(33), 0).unwrap_err(),
            DecodeError::TooDeep { levels: 33 }
        );
        // Also through and/or.
        let mut nodes: Vec<FlatNode> = (1..33).map(|i| conn(Kind::And, &[i])).collect();
        nodes.push(leaf(Kind::Equals, "a", num(1.0)));
        assert_eq!(
            decode(&nodes, 0).unwrap_err().to_string(),
            "predicate is 33 levels deep (at most 32)"
        );
        // A long cycle is reported as a cycle, not as depth.
        let mut cyc: Vec<FlatNode> = (1..40).map(|i| not(i as i64)).collect();
        cyc.push(not(0));
        assert!(matches!(
            decode(&cyc, 0).unwrap_err(),
            DecodeError::Cycle { cycle } if cycle.len() == 41
        ));
    }

    #[test]
    fn decode_pool_limit() {
        let mut nodes = vec![leaf(Kind::Equals, "a", num(1.0)); MAX_POOL];
        assert!(decode(&nodes, 0).is_ok());
        nodes.push(leaf(Kind::Equals, "a", num(1.0)));
        assert_eq!(
            decode(&nodes, 0).unwrap_err().to_string(),
            "predicate pool has 257 nodes (at most 256)"
        );
    }

    #[test]
    fn decode_rejects_exponential_sharing() {
        // Node i = and[i+1, i+1]: 31 levels of doubling is 2^31 decoded nodes.
        let mut nodes: Vec<FlatNode> = (1..31).map(|i| conn(Kind::And, &[i, i])).collect();
        nodes.push(leaf(Kind::Equals, "a", num(1.0)));
        let err = decode(&nodes, 0).unwrap_err();
        assert!(matches!(err, DecodeError::TooLarge { nodes, .. } if nodes > MAX_DECODED_NODES));
        // Long facts shared many times hit the byte bound.
        let long = "f".repeat(100_000);
        let nodes = vec![
            conn(Kind::Or, &[1; 20]),
            leaf(Kind::Equals, &long, Value::str("x")),
        ];
        assert!(matches!(
            decode(&nodes, 0).unwrap_err(),
            DecodeError::TooLarge { bytes, .. } if bytes > MAX_DECODED_BYTES
        ));
        // A huge children list pointing at one leaf is bounded too.
        let nodes = vec![
            conn(Kind::Or, &vec![1; 100_000]),
            leaf(Kind::Equals, "a", num(1.0)),
        ];
        assert!(matches!(
            decode(&nodes, 0).unwrap_err(),
            DecodeError::TooLarge { .. }
        ));
    }

    // ---- entries <-> JSON ------------------------------------------------------------------

    const SESSION: &str = r#"[
      {"id": "own-page", "mode": "render-attested", "facet": "prices", "predicate": null,
       "source": "Postcondition: every price was read from the vendor's own page."},
      {"id": "has-prices", "mode": "deterministic", "facet": "prices",
       "predicate": {"nodes": [{"kind": "less-than", "fact": "prices.length", "value": 1,
                                "children": null, "child": null}], "root": 0},
       "source": "Postcondition: at least one vendor price is tracked."},
      {"id": "combo", "mode": "deterministic", "facet": "@atomic",
       "predicate": {"nodes": [{"kind": "or", "fact": null, "value": null, "children": [1, 2], "child": null},
                               {"kind": "not-equals", "fact": "status", "value": "ok", "children": null, "child": null},
                               {"kind": "equals", "fact": "gone", "value": null, "children": null, "child": null}],
                     "root": 0},
       "source": "Postcondition: status is ok."}
    ]"#;

    fn facets() -> Vec<String> {
        vec!["@atomic".into(), "prices".into()]
    }

    #[test]
    fn entries_round_trip_sorted_with_nulls_omitted() {
        let entries = entries_from_value(&parse_str(SESSION).unwrap()).unwrap();
        assert_eq!(entries.len(), 3);
        let v = entries_to_value(&entries);
        assert_eq!(
            json::compact_string(&v),
            concat!(
                r#"[{"id":"combo","mode":"deterministic","facet":"@atomic","source":"Postcondition: status is ok.","#,
                r#""predicate":{"nodes":[{"kind":"or","children":[1,2]},{"kind":"not-equals","fact":"status","value":"ok"},"#,
                r#"{"kind":"equals","fact":"gone","value":null}],"root":0}},"#,
                r#"{"id":"has-prices","mode":"deterministic","facet":"prices","source":"Postcondition: at least one vendor price is tracked.","#,
                r#""predicate":{"nodes":[{"kind":"less-than","fact":"prices.length","value":1}],"root":0}},"#,
                r#"{"id":"own-page","mode":"render-attested","facet":"prices","source":"Postcondition: every price was read from the vendor's own page."}]"#
            )
        );
        // Reading the persisted form back gives the same entries (sorted).
        let again = entries_from_value(&v).unwrap();
        let mut sorted = entries.clone();
        sorted.sort_by(|a, b| a.id.cmp(&b.id));
        assert_eq!(again, sorted);
    }

    #[test]
    fn entry_shape_errors_name_the_json_path() {
        let cases: &[(&str, &str)] = &[
            ("{}", "postconditions: expected an array, found an object"),
            (
                "[1]",
                "postconditions[0]: expected an object, found a number",
            ),
            (
                r#"[{"mode":"deterministic","facet":"f","source":"s"}]"#,
                "postconditions[0].id: required member is missing",
            ),
            (
                r#"[{"id":"a","mode":"judged","facet":"f","source":"s"}]"#,
                "postconditions[0].mode: expected \"deterministic\" or \"render-attested\", found \"judged\"",
            ),
            (
                r#"[{"id":"a","mode":"deterministic","facet":"f","source":5}]"#,
                "postconditions[0].source: expected a string, found a number",
            ),
            (
                r#"[{"id":"a","mode":"deterministic","facet":"f","source":"s","predicate":[]}]"#,
                "postconditions[0].predicate: expected an object or null, found an array",
            ),
            (
                r#"[{"id":"a","mode":"deterministic","facet":"f","source":"s","predicate":{"nodes":[],"root":0.5}}]"#,
                "postconditions[0].predicate.root: expected an integer index, found a number",
            ),
            (
                r#"[{"id":"a","mode":"deterministic","facet":"f","source":"s","predicate":{"nodes":[{"kind":"xor"}],"root":0}}]"#,
                "postconditions[0].predicate.nodes[0].kind: unknown kind \"xor\" (expected equals, not-equals, greater-than-or-equal, less-than, and, or, not)",
            ),
            (
                r#"[{"id":"a","mode":"deterministic","facet":"f","source":"s","predicate":{"nodes":[{"kind":"equals","fact":"x","value":[1]}],"root":0}}]"#,
                "postconditions[0].predicate.nodes[0].value: expected a string, number, boolean or null, found an array",
            ),
            (
                r#"[{"id":"a","mode":"deterministic","facet":"f","source":"s","predicate":{"nodes":[{"kind":"and","children":[0,"1"]}],"root":0}}]"#,
                "postconditions[0].predicate.nodes[0].children[1]: expected an integer index, found a string",
            ),
            (
                r#"[{"id":"a","mode":"deterministic","facet":"f","source":"s","predicate":{"nodes":[{"kind":"not","child":true}],"root":0}}]"#,
                "postconditions[0].predicate.nodes[0].child: expected an integer index, found a boolean",
            ),
            (
                r#"[{"id":"a","mode":"deterministic","facet":"f","source":"s","predicate":{"root":0}}]"#,
                "postconditions[0].predicate.nodes: required member is missing",
            ),
            (
                r#"[{"id":"a\ud800","mode":"deterministic","facet":"f","source":"s"}]"#,
                "postconditions[0].id: string holds a lone surrogate (not valid Unicode)",
            ),
        ];
        for (input, want) in cases {
            let err = entries_from_value(&parse_str(input).unwrap()).unwrap_err();
            assert_eq!(err.to_string(), *want, "input {input}");
        }
    }

    // ---- compiled set ------------------------------------------------------------------------

    #[test]
    fn compiled_set_sorted_with_mode() {
        let entries = entries_from_value(&parse_str(SESSION).unwrap()).unwrap();
        let set = CompiledPostconditions::compile("price-watch", &facets(), entries).unwrap();
        assert_eq!(set.mode, Mode::RenderAttested);
        assert_eq!(
            set.deterministic
                .iter()
                .map(|d| d.id.as_str())
                .collect::<Vec<_>>(),
            ["combo", "has-prices"]
        );
        assert_eq!(set.attested.len(), 1);
        assert_eq!(
            set.entries()
                .iter()
                .map(|d| d.id.as_str())
                .collect::<Vec<_>>(),
            ["combo", "has-prices", "own-page"]
        );
        let v = json::compact_string(&set.to_value());
        assert!(v.starts_with(r#"{"node":"price-watch","mode":"render-attested","deterministic":[{"id":"combo","facet":"@atomic""#), "{v}");
        assert!(v.contains(r#"{"id":"has-prices","facet":"prices","source":"Postcondition: at least one vendor price is tracked.","predicate":{"kind":"less-than","fact":"prices.length","value":1}}"#), "{v}");
        assert!(v.ends_with(r#""attested":[{"id":"own-page","facet":"prices","source":"Postcondition: every price was read from the vendor's own page."}]}"#), "{v}");
        // Reloading the persisted form gives the same set.
        let again =
            CompiledPostconditions::from_value("price-watch", &facets(), &set.entries_value())
                .unwrap();
        assert_eq!(again, set);
        // Without attested entries (and when empty) the mode is deterministic.
        let only_det: Vec<PostconditionEntry> = set
            .entries()
            .iter()
            .filter(|e| e.mode == Mode::Deterministic)
            .cloned()
            .collect();
        let det = CompiledPostconditions::compile("price-watch", &facets(), only_det).unwrap();
        assert_eq!(det.mode, Mode::Deterministic);
        let empty = CompiledPostconditions::compile("price-watch", &facets(), vec![]).unwrap();
        assert_eq!(empty.mode, Mode::Deterministic);
        assert!(empty.is_empty());
        assert_eq!(empty, CompiledPostconditions::empty("price-watch"));
    }

    fn entry(
        id: &str,
        mode: Mode,
        facet: &str,
        predicate: Option<FlatPredicate>,
    ) -> PostconditionEntry {
        PostconditionEntry {
            id: id.into(),
            mode,
            facet: facet.into(),
            source: "Postcondition: s.".into(),
            predicate,
        }
    }

    fn simple() -> Option<FlatPredicate> {
        Some(FlatPredicate {
            nodes: vec![leaf(Kind::LessThan, "x", num(1.0))],
            root: 0,
        })
    }

    #[test]
    fn compiled_set_validation() {
        let long_ok = format!("a{}", "b".repeat(63));
        let too_long = format!("a{}", "b".repeat(64));
        assert!(is_valid_id(&long_ok) && !is_valid_id(&too_long));
        for bad in ["", "-a", ".a", "_a", "a b", "a/b", "é"] {
            assert!(!is_valid_id(bad), "{bad}");
        }
        for good in ["a", "0", "A.b_c-d", "has-prices"] {
            assert!(is_valid_id(good), "{good}");
        }
        let entries = vec![
            entry("ok", Mode::Deterministic, "prices", simple()),
            entry("-bad", Mode::RenderAttested, "prices", None),
            entry("ok", Mode::RenderAttested, "prices", None),
            entry("nofacet", Mode::RenderAttested, "vendors", None),
            entry("nopred", Mode::Deterministic, "prices", None),
            entry("extra", Mode::RenderAttested, "prices", simple()),
            entry(
                "broken",
                Mode::Deterministic,
                "@atomic",
                Some(FlatPredicate {
                    nodes: vec![not(0)],
                    root: 0,
                }),
            ),
        ];
        let err = CompiledPostconditions::compile("pw", &["prices".into()], entries).unwrap_err();
        let PostconditionError::Invalid { node, problems } = err else {
            panic!("expected Invalid");
        };
        assert_eq!(node, "pw");
        assert_eq!(
            problems,
            vec![
                "postconditions[1].id '-bad' does not match ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$",
                "postconditions[2].id 'ok' repeats postconditions[0].id",
                "postconditions[3] ('nofacet'): facet 'vendors' is not a facet of node 'pw' (known: @atomic, prices)",
                "postconditions[4] ('nopred'): deterministic but has no predicate",
                "postconditions[5] ('extra'): render-attested but carries a predicate",
                "postconditions[6] ('broken'): predicate cycle: node 0 is reachable from itself (0 -> 0)",
            ]
        );
        // Atomic-only nodes: no deterministic entries; @atomic attested entries are fine.
        let err = CompiledPostconditions::compile(
            "brief",
            &["@atomic".into()],
            vec![
                entry("d", Mode::Deterministic, "@atomic", simple()),
                entry("a", Mode::RenderAttested, "@atomic", None),
            ],
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid postconditions for node 'brief': postconditions[0] ('d'): deterministic but node 'brief' is atomic-only (it has no structured facts)"
        );
        assert!(
            CompiledPostconditions::compile(
                "brief",
                &[],
                vec![entry("a", Mode::RenderAttested, "@atomic", None)]
            )
            .is_ok()
        );
    }

    // ---- facts --------------------------------------------------------------------------------

    use crate::core::canonicalizer::tests::{TRUTH_48, spec_41};

    fn price_watch() -> CompiledCanonicalizer {
        compile_node(&spec_41()).unwrap()
    }

    fn facts_of(pairs: &[(&str, Value)]) -> Facts {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn facts_of_the_worked_example() {
        let c = price_watch();
        let truth = parse_str(TRUTH_48).unwrap();
        let f = facet_facts(&c, &truth, "prices").unwrap();
        assert_eq!(
            f,
            facts_of(&[
                ("prices.length", num(2.0)),
                ("prices.0.price", num(10.0)),
                ("prices.0.vendor", Value::str("acme corp")),
                ("prices.1.price", num(7.5)),
                ("prices.1.vendor", Value::str("beta")),
            ])
        );
        let a = facet_facts(&c, &truth, "@atomic").unwrap();
        assert_eq!(a.get("notes"), Some(&Value::str("two vendors tracked")));
        assert_eq!(a.len(), 6);
        // A dropped facet has no facts.
        let empty = facet_facts(&c, &parse_str(r#"{"notes":"x"}"#).unwrap(), "prices").unwrap();
        assert!(empty.is_empty());
        assert!(facts(None).is_empty());
    }

    #[test]
    fn facts_flattening_rules() {
        let v = parse_str(
            r#"{"a":[1,[2,3],{"b":null}],"len":{"length":7,"x":[]},"len.length":"actual",
                "e":{},"s":true,"a.0":"second"}"#,
        )
        .unwrap();
        let f = facts(Some(&v));
        assert_eq!(
            f,
            facts_of(&[
                ("a.length", num(3.0)),
                ("a.0", num(1.0)),
                ("a.1.length", num(2.0)),
                ("a.1.0", num(2.0)),
                ("a.1.1", num(3.0)),
                ("a.2.b", Value::Null),
                ("len.length", num(7.0)),
                ("len.x.length", num(0.0)),
                ("s", Value::Bool(true)),
            ])
        );
        // Actual member beats derived length.
        let v = parse_str(r#"{"x":[1,2],"x.length":9}"#).unwrap();
        assert_eq!(facts(Some(&v)).get("x.length"), Some(&num(9.0)));
        // Scalar root and array root.
        assert_eq!(facts(Some(&num(4.0))), facts_of(&[("", num(4.0))]));
        assert_eq!(
            facts(Some(&parse_str("[5]").unwrap())),
            facts_of(&[("length", num(1.0)), ("0", num(5.0))])
        );
    }

    // ---- evaluation ---------------------------------------------------------------------------

    fn leaf_p(kind: Comparison, fact: &str, value: Value) -> Predicate {
        Predicate::Leaf {
            kind,
            fact: fact.into(),
            value,
        }
    }

    #[test]
    fn leaf_truth_tables() {
        use Comparison::*;
        use Outcome::*;
        let f = facts_of(&[
            ("n", num(2.0)),
            ("z", num(0.0)),
            ("s", Value::str("2")),
            ("b", Value::Bool(true)),
            ("nul", Value::Null),
            ("inf", num(f64::INFINITY)),
        ]);
        let cases: Vec<(Comparison, &str, Value, Outcome)> = vec![
            (Equals, "n", num(2.0), Tripped),
            (Equals, "n", num(3.0), NotTripped),
            (Equals, "n", Value::str("2"), NotTripped),
            (Equals, "s", Value::str("2"), Tripped),
            (Equals, "s", num(2.0), NotTripped),
            (Equals, "z", num(-0.0), Tripped),
            (Equals, "b", Value::Bool(true), Tripped),
            (Equals, "b", num(1.0), NotTripped),
            (Equals, "nul", Value::Null, Tripped),
            (Equals, "nul", Value::Bool(false), NotTripped),
            (Equals, "z", Value::Null, NotTripped),
            (Equals, "s", Value::Null, NotTripped),
            (Equals, "missing", Value::Null, Indeterminate),
            (NotEquals, "n", num(2.0), NotTripped),
            (NotEquals, "n", Value::str("2"), Tripped),
            (NotEquals, "nul", Value::Null, NotTripped),
            (NotEquals, "missing", num(1.0), Indeterminate),
            (GreaterThanOrEqual, "n", num(2.0), Tripped),
            (GreaterThanOrEqual, "n", num(2.5), NotTripped),
            (GreaterThanOrEqual, "s", num(1.0), Indeterminate),
            (GreaterThanOrEqual, "n", Value::str("1"), Indeterminate),
            (GreaterThanOrEqual, "nul", num(0.0), Indeterminate),
            (GreaterThanOrEqual, "inf", num(0.0), Indeterminate),
            (
                GreaterThanOrEqual,
                "n",
                num(f64::NEG_INFINITY),
                Indeterminate,
            ),
            (LessThan, "n", num(2.0), NotTripped),
            (LessThan, "n", num(2.5), Tripped),
            (LessThan, "z", num(-0.0), NotTripped),
            (LessThan, "b", num(2.0), Indeterminate),
            (LessThan, "n", Value::Null, Indeterminate),
            (LessThan, "missing", num(1.0), Indeterminate),
        ];
        for (kind, fact, value, want) in cases {
            let p = leaf_p(kind, fact, value.clone());
            assert_eq!(evaluate(&p, &f), want, "{kind:?} {fact} {value:?}");
        }
        let why = |p: Predicate| evaluate_explained(&p, &f).1;
        assert_eq!(
            why(leaf_p(LessThan, "gone", num(1.0))).as_deref(),
            Some("fact gone missing")
        );
        assert_eq!(
            why(leaf_p(LessThan, "s", num(1.0))).as_deref(),
            Some("fact s is a string, not a number")
        );
        assert_eq!(
            why(leaf_p(LessThan, "inf", num(1.0))).as_deref(),
            Some("fact inf is not a finite number")
        );
        assert_eq!(
            why(leaf_p(LessThan, "n", Value::Null)).as_deref(),
            Some("comparison value for fact n is null, not a number")
        );
        assert_eq!(why(leaf_p(LessThan, "n", num(5.0))), None);
    }

    #[test]
    fn connective_truth_tables() {
        use Outcome::*;
        let f = facts_of(&[("x", num(1.0))]);
        let t = || lt("x", 2.0); // tripped
        let n = || lt("x", 0.0); // not tripped
        let i = |name: &str| lt(name, 0.0); // indeterminate (missing)
        let and = |c: Vec<Predicate>| Predicate::And(c);
        let or = |c: Vec<Predicate>| Predicate::Or(c);
        let neg = |c: Predicate| Predicate::Not(Box::new(c));
        assert_eq!(evaluate(&and(vec![t(), t()]), &f), Tripped);
        assert_eq!(evaluate(&and(vec![t(), n()]), &f), NotTripped);
        assert_eq!(evaluate(&and(vec![i("a"), n()]), &f), NotTripped);
        assert_eq!(evaluate(&and(vec![t(), i("a")]), &f), Indeterminate);
        assert_eq!(evaluate(&or(vec![n(), n()]), &f), NotTripped);
        assert_eq!(evaluate(&or(vec![n(), t()]), &f), Tripped);
        assert_eq!(evaluate(&or(vec![i("a"), t()]), &f), Tripped);
        assert_eq!(evaluate(&or(vec![n(), i("a")]), &f), Indeterminate);
        assert_eq!(evaluate(&neg(t()), &f), NotTripped);
        assert_eq!(evaluate(&neg(n()), &f), Tripped);
        assert_eq!(evaluate(&neg(i("a")), &f), Indeterminate);
        assert_eq!(evaluate(&and(vec![]), &f), Indeterminate);
        assert_eq!(evaluate(&or(vec![]), &f), Indeterminate);
        // The first undecidable leaf in child order is the reason.
        assert_eq!(
            evaluate_explained(&or(vec![n(), i("first"), i("second")]), &f),
            (Indeterminate, Some("fact first missing".to_string()))
        );
        assert_eq!(
            evaluate_explained(&neg(and(vec![t(), i("deep")])), &f),
            (Indeterminate, Some("fact deep missing".to_string()))
        );
    }

    // ---- structured truth (I13) -----------------------------------------------------------------

    const VERSION: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";

    fn files(pairs: &[(&str, &[u8])]) -> Vec<(String, Vec<u8>)> {
        pairs
            .iter()
            .map(|(p, b)| (p.to_string(), b.to_vec()))
            .collect()
    }

    #[test]
    fn structured_truth_for_faceted_nodes() {
        let c = price_watch();
        let st = structured_truth(
            "price-watch",
            &files(&[("report.md", b"# hi"), ("truth.json", TRUTH_48.as_bytes())]),
            Some(&c),
            VERSION,
        )
        .unwrap();
        assert_eq!(
            st.fingerprints.0,
            vec![
                (
                    "@atomic".to_string(),
                    "sha256:59e80454e453a7e43e99d1c3947b166272b93575509fd33e25cb5957469d3f2b"
                        .to_string()
                ),
                (
                    "prices".to_string(),
                    "sha256:2f37012b5f685cdc53c29539194bc94c752116d2186fc765ece7127c55e38f3f"
                        .to_string()
                ),
            ]
        );
        assert!(st.warnings.is_empty());
        assert_eq!(st.truth, Some(parse_str(TRUTH_48).unwrap()));
        // Empty facet: commits with a warning.
        let st = structured_truth(
            "price-watch",
            &files(&[("truth.json", br#"{"notes":"nothing yet"}"#)]),
            Some(&c),
            VERSION,
        )
        .unwrap();
        assert_eq!(st.fingerprints.get("prices"), Some(NULL_ADDRESS));
        assert_eq!(
            st.warnings,
            vec![
                "facet 'prices' of node 'price-watch' has no material: its paths are absent from truth.json"
            ]
        );
    }

    #[test]
    fn structured_truth_failure_reasons() {
        let c = price_watch();
        let reason = |fs: Vec<(String, Vec<u8>)>| {
            structured_truth("price-watch", &fs, Some(&c), VERSION).unwrap_err()
        };
        let missing = "structured truth missing: node 'price-watch' declares facets but its render wrote no truth.json";
        assert_eq!(reason(files(&[])), missing);
        // Only the exact root path counts.
        assert_eq!(
            reason(files(&[
                ("out/truth.json", b"{}"),
                ("Truth.json", b"{}"),
                ("data.json", b"{}")
            ])),
            missing
        );
        assert_eq!(
            reason(files(&[("truth.json", b"{\"a\": ")])),
            "structured truth invalid: truth.json is not valid JSON (unexpected end of JSON input at byte 6)"
        );
        assert_eq!(
            reason(files(&[("truth.json", b"{\"a\": 1} x")])),
            "structured truth invalid: truth.json is not valid JSON (unexpected character 'x' after JSON value at byte 9)"
        );
        assert_eq!(
            reason(files(&[("truth.json", b"{\"a\": \"\xff\"}")])),
            "structured truth invalid: truth.json is not valid JSON (invalid UTF-8 at byte 7)"
        );
        assert_eq!(
            reason(files(&[("truth.json", b"")])),
            "structured truth invalid: truth.json is not valid JSON (unexpected end of JSON input at byte 0)"
        );
        for non_object in [&b"[1,2]"[..], b"null", b"\"x\"", b"3"] {
            assert_eq!(
                reason(files(&[("truth.json", non_object)])),
                "structured truth invalid: truth.json must hold a JSON object"
            );
        }
        assert_eq!(
            reason(files(&[(
                "truth.json",
                br#"{"prices":[{"vendor":"a","price":1e308}]}"#
            )])),
            "structured truth invalid: number at path 'prices.price' is not finite after quantization by 0.01"
        );
        let deep = "[".repeat(600);
        assert!(reason(files(&[("truth.json", deep.as_bytes())])).starts_with(
            "structured truth invalid: truth.json is not valid JSON (nesting deeper than 512 levels"
        ));
    }

    #[test]
    fn structured_truth_for_atomic_only_nodes() {
        // No truth.json needed; an invalid one is not interpreted.
        for fs in [files(&[]), files(&[("truth.json", b"not json")])] {
            let st = structured_truth("brief", &fs, None, VERSION).unwrap();
            assert_eq!(st.fingerprints, Fingerprints::atomic(VERSION));
            assert!(st.warnings.is_empty() && st.truth.is_none());
        }
        let id = compile_node(&CanonicalizerSpec::identity("brief")).unwrap();
        let st = structured_truth("brief", &files(&[]), Some(&id), VERSION).unwrap();
        assert_eq!(st.fingerprints.atomic_token(), Some(VERSION));
    }

    // ---- the gate (I12) ------------------------------------------------------------------------

    fn i12_set() -> CompiledPostconditions {
        let entries = vec![
            entry(
                "has-prices",
                Mode::Deterministic,
                "prices",
                Some(FlatPredicate {
                    nodes: vec![leaf(Kind::LessThan, "prices.length", num(1.0))],
                    root: 0,
                }),
            ),
            entry("own-page", Mode::RenderAttested, "prices", None),
        ];
        CompiledPostconditions::compile("price-watch", &facets(), entries).unwrap()
    }

    fn attest(pairs: &[(&str, bool)]) -> HashMap<String, bool> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn gate_i12_scenarios() {
        let c = price_watch();
        let set = i12_set();
        let good = parse_str(TRUTH_48).unwrap();
        let yes = attest(&[("own-page", true)]);
        // All satisfied.
        assert_eq!(gate(&set, Some(&good), Some(&c), &yes), Ok(()));
        assert!(check_gate(&set, Some(&good), Some(&c), &yes).is_empty());
        // Empty prices: tripped.
        let empty = parse_str(r#"{"prices":[]}"#).unwrap();
        assert_eq!(
            gate(&set, Some(&empty), Some(&c), &yes),
            Err("postconditions failed: has-prices (tripped)".to_string())
        );
        // Attested false.
        assert_eq!(
            gate(&set, Some(&good), Some(&c), &attest(&[("own-page", false)])),
            Err("postconditions failed: own-page (attested false)".to_string())
        );
        // Attestation missing (other ids do not count).
        assert_eq!(
            gate(&set, Some(&good), Some(&c), &attest(&[("other", true)])),
            Err("postconditions failed: own-page (attestation missing)".to_string())
        );
        // Absent fact: prices facet dropped entirely.
        let absent = parse_str(r#"{"notes":"x"}"#).unwrap();
        let failures = check_gate(&set, Some(&absent), Some(&c), &yes);
        assert_eq!(
            failures,
            vec![GateFailure {
                id: "has-prices".into(),
                facet: "prices".into(),
                kind: FailureKind::Indeterminate,
                detail: "fact prices.length missing".into(),
            }]
        );
        assert_eq!(
            failure_reason(&failures).unwrap(),
            "postconditions failed: has-prices (indeterminate: fact prices.length missing)"
        );
        // Everything at once, collected and sorted by id.
        assert_eq!(
            gate(&set, Some(&empty), Some(&c), &attest(&[])),
            Err(
                "postconditions failed: has-prices (tripped); own-page (attestation missing)"
                    .to_string()
            )
        );
    }

    #[test]
    fn gate_reason_lists_every_kind_sorted_by_id() {
        let c = price_watch();
        let entries = vec![
            entry("own-page", Mode::RenderAttested, "prices", None),
            entry(
                "has-prices",
                Mode::Deterministic,
                "prices",
                Some(FlatPredicate {
                    nodes: vec![leaf(Kind::LessThan, "prices.length", num(1.0))],
                    root: 0,
                }),
            ),
            entry(
                "fresh",
                Mode::Deterministic,
                "prices",
                Some(FlatPredicate {
                    nodes: vec![leaf(Kind::Equals, "prices.0.checked", Value::Null)],
                    root: 0,
                }),
            ),
            entry("zz-cites", Mode::RenderAttested, "@atomic", None),
        ];
        let set = CompiledPostconditions::compile("price-watch", &facets(), entries).unwrap();
        let truth = parse_str(r#"{"prices":[]}"#).unwrap();
        let failures = check_gate(
            &set,
            Some(&truth),
            Some(&c),
            &attest(&[("own-page", false)]),
        );
        assert_eq!(
            failures.iter().map(|f| f.kind.as_str()).collect::<Vec<_>>(),
            [
                "indeterminate",
                "tripped",
                "attested",
                "missing-attestation"
            ]
        );
        assert_eq!(
            failure_reason(&failures).unwrap(),
            "postconditions failed: fresh (indeterminate: fact prices.0.checked missing); has-prices (tripped); own-page (attested false); zz-cites (attestation missing)"
        );
    }

    #[test]
    fn gate_without_truth_or_with_bad_truth_is_indeterminate() {
        let c = price_watch();
        let set = i12_set();
        let yes = attest(&[("own-page", true)]);
        assert_eq!(
            gate(&set, None, Some(&c), &yes),
            Err(
                "postconditions failed: has-prices (indeterminate: structured truth unavailable)"
                    .to_string()
            )
        );
        let good = parse_str(TRUTH_48).unwrap();
        assert_eq!(
            gate(&set, Some(&good), None, &yes),
            Err(
                "postconditions failed: has-prices (indeterminate: structured truth unavailable)"
                    .to_string()
            )
        );
        let bad = parse_str(r#"{"prices":[{"price":1e308}]}"#).unwrap();
        assert_eq!(
            gate(&set, Some(&bad), Some(&c), &yes),
            Err("postconditions failed: has-prices (indeterminate: number at path 'prices.price' is not finite after quantization by 0.01)".to_string())
        );
        // Facts come from the canonical value only: a dropped member is never a fact.
        let entries = vec![entry(
            "src",
            Mode::Deterministic,
            "prices",
            Some(FlatPredicate {
                nodes: vec![leaf(Kind::Equals, "prices.0.source", Value::str("x"))],
                root: 0,
            }),
        )];
        let set = CompiledPostconditions::compile("price-watch", &facets(), entries).unwrap();
        assert_eq!(
            gate(&set, Some(&good), Some(&c), &HashMap::new()),
            Err(
                "postconditions failed: src (indeterminate: fact prices.0.source missing)"
                    .to_string()
            )
        );
        // The empty set passes trivially, even without truth.
        assert_eq!(
            gate(
                &CompiledPostconditions::empty("n"),
                None,
                None,
                &HashMap::new()
            ),
            Ok(())
        );
    }

    #[test]
    fn null_token_matches_address_of_null() {
        assert_eq!(address(b"null"), NULL_ADDRESS);
    }
}
