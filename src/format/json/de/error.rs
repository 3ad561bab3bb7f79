//! The error of the JSON-value deserializer: a path from the root and what is wrong, worded by
//! the caller ([`DeErrorKind::message`]).

use std::fmt;

use serde::de::{self, Expected, Unexpected};

use crate::format::json::{Value, number_to_string};

/// One step of a [`DeError`] path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathSegment {
    /// An object member.
    Key(String),
    /// An array element.
    Index(usize),
}

/// The JSON type of an offending value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// `null`
    Null,
    /// `true` / `false`
    Boolean,
    /// A number.
    Number,
    /// A string.
    String,
    /// An array.
    Array,
    /// An object.
    Object,
}

impl Found {
    /// The type of `v`.
    pub fn of(v: &Value) -> Found {
        match v {
            Value::Null => Found::Null,
            Value::Bool(_) => Found::Boolean,
            Value::Number(_) => Found::Number,
            Value::String(_) => Found::String,
            Value::Array(_) => Found::Array,
            Value::Object(_) => Found::Object,
        }
    }

    fn of_unexpected(u: &Unexpected<'_>) -> Found {
        match u {
            Unexpected::Bool(_) => Found::Boolean,
            Unexpected::Unsigned(_) | Unexpected::Signed(_) | Unexpected::Float(_) => Found::Number,
            Unexpected::Char(_) | Unexpected::Str(_) | Unexpected::Bytes(_) => Found::String,
            Unexpected::Unit | Unexpected::Option => Found::Null,
            Unexpected::Seq => Found::Array,
            _ => Found::Object,
        }
    }

    /// The bare type name (`string`, `array`, …), as `Value::type_name` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Found::Null => "null",
            Found::Boolean => "boolean",
            Found::Number => "number",
            Found::String => "string",
            Found::Array => "array",
            Found::Object => "object",
        }
    }

    /// The name with its article (`a string`, `an array`; `null` stays bare).
    pub(crate) fn with_article(self) -> &'static str {
        match self {
            Found::Null => "null",
            Found::Boolean => "a boolean",
            Found::Number => "a number",
            Found::String => "a string",
            Found::Array => "an array",
            Found::Object => "an object",
        }
    }
}

/// What is wrong at the path of a [`DeError`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeErrorKind {
    /// A declared member is absent: `required member is missing`.
    Missing,
    /// The value has the wrong type: `expected <expected>, found <found>`.
    Type {
        /// What the position accepts (`a boolean`, `an object or null`).
        expected: String,
        /// What it holds.
        found: Found,
    },
    /// A string that is not one of the accepted spellings:
    /// `expected "a", "b" or null, found "<found>"`.
    UnknownVariant {
        /// The string given.
        found: String,
        /// The accepted spellings; `null` (under an `Option`) is written bare.
        alternatives: Vec<String>,
    },
    /// An unknown member of a type that denies them: `unknown member`.
    UnknownMember,
    /// A string holds a lone surrogate where valid Unicode is required.
    LoneSurrogate,
    /// Anything else a `Deserialize` implementation reports, verbatim.
    Message(String),
}

/// How [`DeErrorKind::message`] names the found type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeNames {
    /// `found string` (the canonicalization spec's readers).
    Bare,
    /// `found a string` (the postcondition readers).
    WithArticle,
}

impl DeErrorKind {
    /// The message without the path.
    pub fn message(&self, names: TypeNames) -> String {
        match self {
            DeErrorKind::Missing => "required member is missing".to_string(),
            DeErrorKind::Type { expected, found } => {
                let found = match names {
                    TypeNames::Bare => found.name(),
                    TypeNames::WithArticle => found.with_article(),
                };
                format!("expected {expected}, found {found}")
            }
            DeErrorKind::UnknownVariant {
                found,
                alternatives,
            } => {
                let quoted: Vec<String> = alternatives
                    .iter()
                    .map(|a| {
                        if a == "null" {
                            a.clone()
                        } else {
                            format!("\"{a}\"")
                        }
                    })
                    .collect();
                let list = match quoted.split_last() {
                    None => "nothing".to_string(),
                    Some((last, [])) => last.clone(),
                    Some((last, init)) => format!("{} or {last}", init.join(", ")),
                };
                format!("expected {list}, found \"{found}\"")
            }
            DeErrorKind::UnknownMember => "unknown member".to_string(),
            DeErrorKind::LoneSurrogate => {
                "string holds a lone surrogate (not valid Unicode)".to_string()
            }
            DeErrorKind::Message(m) => m.clone(),
        }
    }
}

/// A deserialization failure: where (a path from the root) and what ([`DeErrorKind`]).
/// `Display` gives `<path>: <message>` (just the message at the root), type names bare.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeError {
    /// The path, innermost segment first (segments are pushed while the error bubbles up).
    pub(super) rev_path: Vec<PathSegment>,
    pub(super) kind: DeErrorKind,
}

impl DeError {
    pub(super) fn new(kind: DeErrorKind) -> DeError {
        DeError {
            rev_path: Vec::new(),
            kind,
        }
    }

    pub(super) fn type_error(expected: &str, found: Found) -> DeError {
        DeError::new(DeErrorKind::Type {
            expected: expected.to_string(),
            found,
        })
    }

    pub(super) fn under(mut self, segment: PathSegment) -> DeError {
        self.rev_path.push(segment);
        self
    }

    /// What is wrong.
    pub fn kind(&self) -> &DeErrorKind {
        &self.kind
    }

    /// The path segments from the root.
    pub fn path(&self) -> impl Iterator<Item = &PathSegment> {
        self.rev_path.iter().rev()
    }

    /// The path written after `root` (`root` may be empty): keys joined with `.`, indices as
    /// `[i]` (`fields[1].text`, or `postconditions[0].id` under `postconditions`).
    pub(crate) fn path_from(&self, root: &str) -> String {
        let mut out = root.to_string();
        for seg in self.path() {
            match seg {
                PathSegment::Key(k) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(k);
                }
                PathSegment::Index(i) => {
                    out.push('[');
                    out.push_str(&i.to_string());
                    out.push(']');
                }
            }
        }
        out
    }

    /// The message without the path (see [`DeErrorKind::message`]).
    pub fn message(&self, names: TypeNames) -> String {
        self.kind.message(names)
    }
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path_from("");
        let message = self.message(TypeNames::Bare);
        if path.is_empty() {
            f.write_str(&message)
        } else {
            write!(f, "{path}: {message}")
        }
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    fn custom<T: fmt::Display>(msg: T) -> DeError {
        DeError::new(DeErrorKind::Message(msg.to_string()))
    }

    fn invalid_type(unexp: Unexpected<'_>, exp: &dyn Expected) -> DeError {
        DeError::type_error(&exp.to_string(), Found::of_unexpected(&unexp))
    }

    fn invalid_value(unexp: Unexpected<'_>, exp: &dyn Expected) -> DeError {
        match unexp {
            Unexpected::Str(s) => DeError::new(DeErrorKind::Message(format!(
                "expected {exp}, found \"{s}\""
            ))),
            Unexpected::Float(n) => DeError::new(DeErrorKind::Message(format!(
                "expected {exp}, found {}",
                number_to_string(n)
            ))),
            other => DeError::type_error(&exp.to_string(), Found::of_unexpected(&other)),
        }
    }

    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> DeError {
        DeError::new(DeErrorKind::UnknownVariant {
            found: variant.to_string(),
            alternatives: expected.iter().map(|s| s.to_string()).collect(),
        })
    }

    fn unknown_field(field: &str, _expected: &'static [&'static str]) -> DeError {
        DeError::new(DeErrorKind::UnknownMember).under(PathSegment::Key(field.to_string()))
    }

    fn missing_field(field: &'static str) -> DeError {
        DeError::new(DeErrorKind::Missing).under(PathSegment::Key(field.to_string()))
    }
}
