//! JSON with JavaScript semantics (FORMATS.md §3): the value model, a strict parser
//! (`parse.rs`), the canonical, compact and pretty writers (`write.rs`), and serde support: a
//! `Deserializer` over a [`Value`] ([`from_value`], `de.rs`) and a `Serializer` that builds one
//! ([`to_value`], `ser.rs`), so spec types derive their JSON shapes.
//!
//! * Numbers are IEEE-754 doubles (`JSON.parse` semantics); integers beyond 2^53 lose precision
//!   exactly as in JavaScript; a magnitude beyond the double range parses to ±infinity and cannot
//!   be canonicalized.
//! * Strings are sequences of UTF-16 code units: a `\uD800`-style escape that leaves a lone
//!   surrogate is preserved ([`JsString::Wtf16`]) and re-emitted as an escape.
//! * Duplicate object keys: the last value wins, at the position of the first occurrence.
//! * Canonical JSON (§3.2): no whitespace, object members sorted by key in UTF-16 order,
//!   `JSON.stringify` string escaping, ECMAScript `Number::toString` numbers.

use std::cmp::Ordering;
use std::fmt;

mod de;
mod parse;
mod ser;
mod write;

pub use de::{
    DeError, DeErrorKind, Found, PathSegment, TypeNames, ValueDeserializer, expect, expecting,
    from_value,
};
pub use parse::{ParseError, ParseErrorKind, Parser, parse, parse_str};
pub use ser::{MapBuilder, SeqBuilder, SerError, ValueSerializer, to_value, value_of};
pub use write::{
    JsCompactFormatter, JsPrettyFormatter, NonFinite, canonical_string, compact_string,
    number_to_string, pretty_string, to_js_compact, to_js_pretty, write_canonical,
    write_canonical_object_except, write_compact, write_js_string, write_number, write_pretty,
    write_str,
};

/// Maximum nesting depth accepted by the parser (arrays and objects). Deeper input is rejected
/// with [`ParseErrorKind::TooDeep`] instead of exhausting the stack.
pub const MAX_DEPTH: usize = 512;

/// A JSON string as a JavaScript engine holds it.
///
/// `Utf8` is used whenever the code units form valid Unicode; `Wtf16` only when the string holds
/// at least one lone surrogate, so derived equality and hashing are exact.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum JsString {
    /// A valid Unicode string.
    Utf8(String),
    /// UTF-16 code units containing at least one lone surrogate.
    Wtf16(Vec<u16>),
}

impl JsString {
    /// The string, if it is valid Unicode (no lone surrogate).
    pub fn as_str(&self) -> Option<&str> {
        match self {
            JsString::Utf8(s) => Some(s),
            JsString::Wtf16(_) => None,
        }
    }

    /// The string with lone surrogates replaced by U+FFFD (display projections only).
    pub fn to_lossy(&self) -> std::borrow::Cow<'_, str> {
        match self {
            JsString::Utf8(s) => std::borrow::Cow::Borrowed(s),
            JsString::Wtf16(u) => std::borrow::Cow::Owned(String::from_utf16_lossy(u)),
        }
    }

    /// Length in UTF-16 code units.
    pub(crate) fn utf16_len(&self) -> usize {
        match self {
            JsString::Utf8(s) => s.encode_utf16().count(),
            JsString::Wtf16(u) => u.len(),
        }
    }

    /// True when the string has no code units.
    pub fn is_empty(&self) -> bool {
        match self {
            JsString::Utf8(s) => s.is_empty(),
            JsString::Wtf16(u) => u.is_empty(),
        }
    }

    /// Builds a string from UTF-16 code units, choosing the canonical representation.
    pub fn from_utf16(units: Vec<u16>) -> JsString {
        match String::from_utf16(&units) {
            Ok(s) => JsString::Utf8(s),
            Err(_) => JsString::Wtf16(units),
        }
    }

    /// Compares in UTF-16 code-unit order (JavaScript's default sort order).
    pub(crate) fn cmp_utf16(&self, other: &JsString) -> Ordering {
        match (self, other) {
            (JsString::Utf8(a), JsString::Utf8(b)) => utf16_cmp(a, b),
            _ => self.units().cmp(other.units()),
        }
    }

    fn units(&self) -> Box<dyn Iterator<Item = u16> + '_> {
        match self {
            JsString::Utf8(s) => Box::new(s.encode_utf16()),
            JsString::Wtf16(u) => Box::new(u.iter().copied()),
        }
    }
}

impl From<&str> for JsString {
    fn from(s: &str) -> Self {
        JsString::Utf8(s.to_string())
    }
}

impl From<String> for JsString {
    fn from(s: String) -> Self {
        JsString::Utf8(s)
    }
}

impl PartialEq<str> for JsString {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == Some(other)
    }
}

impl fmt::Debug for JsString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsString::Utf8(s) => fmt::Debug::fmt(s, f),
            JsString::Wtf16(u) => write!(f, "Wtf16({u:x?})"),
        }
    }
}

impl fmt::Display for JsString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_lossy())
    }
}

/// Compares two Unicode strings in UTF-16 code-unit order without transcoding.
///
/// Byte order of UTF-8 equals code-point order, which equals UTF-16 order except when an astral
/// character (lead byte `F0`–`F4`) meets a character in U+E000–U+FFFF (lead byte `EE`–`EF`).
pub fn utf16_cmp(a: &str, b: &str) -> Ordering {
    let (ab, bb) = (a.as_bytes(), b.as_bytes());
    match ab.iter().zip(bb).position(|(x, y)| x != y) {
        None => ab.len().cmp(&bb.len()),
        Some(i) => {
            let (x, y) = (ab[i], bb[i]);
            if x >= 0xF0 && (0xEE..=0xEF).contains(&y) {
                Ordering::Less
            } else if y >= 0xF0 && (0xEE..=0xEF).contains(&x) {
                Ordering::Greater
            } else {
                x.cmp(&y)
            }
        }
    }
}

/// A JSON object: members in parsed (insertion) order, keys unique.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Object {
    entries: Vec<(JsString, Value)>,
}

impl Object {
    /// An empty object.
    pub fn new() -> Object {
        Object::default()
    }

    /// The member named `key`, if any.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.entries
            .iter()
            .find(|(k, _)| matches!(k, JsString::Utf8(s) if s == key))
            .map(|(_, v)| v)
    }

    /// Mutable access to the member named `key`.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.entries
            .iter_mut()
            .find(|(k, _)| matches!(k, JsString::Utf8(s) if s == key))
            .map(|(_, v)| v)
    }

    /// True when a member named `key` exists.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Sets `key` to `value`: replaces an existing member in place, or appends.
    pub fn insert(&mut self, key: impl Into<JsString>, value: Value) {
        let key = key.into();
        if let Some(slot) = self.entries.iter_mut().find(|(k, _)| *k == key) {
            slot.1 = value;
        } else {
            self.entries.push((key, value));
        }
    }

    /// Removes the member named `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let pos = self
            .entries
            .iter()
            .position(|(k, _)| matches!(k, JsString::Utf8(s) if s == key))?;
        Some(self.entries.remove(pos).1)
    }

    /// Members in order.
    pub fn iter(&self) -> impl Iterator<Item = (&JsString, &Value)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the object has no members.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Appends without a duplicate check. Callers guarantee `key` is new.
    pub fn push_unique(&mut self, key: impl Into<JsString>, value: Value) {
        self.entries.push((key.into(), value));
    }
}

/// A JSON value with JavaScript semantics (FORMATS.md §3.1).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `null`
    Null,
    /// `true` / `false`
    Bool(bool),
    /// Every number is a double.
    Number(f64),
    /// A string of UTF-16 code units.
    String(JsString),
    /// An array.
    Array(Vec<Value>),
    /// An object in parsed member order.
    Object(Object),
}

impl Value {
    /// The object, if this is one.
    pub fn as_object(&self) -> Option<&Object> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }
    /// The array, if this is one.
    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
    /// The string, if this is a valid-Unicode string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => s.as_str(),
            _ => None,
        }
    }
    /// The number, if this is one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(n) => Some(*n),
            _ => None,
        }
    }
    /// The member `key` of an object value.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_object().and_then(|o| o.get(key))
    }
    /// A JSON string value.
    pub fn str(s: impl Into<String>) -> Value {
        Value::String(JsString::Utf8(s.into()))
    }
    /// The JavaScript type name used in error messages (`object`, `array`, `string`, …).
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }

    /// Converts from a `serde_json::Value` (numbers become doubles).
    pub fn from_serde(v: &serde_json::Value) -> Value {
        match v {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => Value::Number(n.as_f64().unwrap_or(f64::NAN)),
            serde_json::Value::String(s) => Value::str(s.clone()),
            serde_json::Value::Array(a) => Value::Array(a.iter().map(Value::from_serde).collect()),
            serde_json::Value::Object(m) => {
                let mut o = Object::new();
                for (k, v) in m {
                    o.push_unique(k.as_str(), Value::from_serde(v));
                }
                Value::Object(o)
            }
        }
    }

    /// Converts to a `serde_json::Value`. Lone surrogates become U+FFFD; integral doubles within
    /// ±2^53 become integers, others floats; non-finite numbers become `null`.
    pub fn to_serde(&self) -> serde_json::Value {
        match self {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Number(n) => number_to_serde(*n),
            Value::String(s) => serde_json::Value::String(s.to_lossy().into_owned()),
            Value::Array(a) => serde_json::Value::Array(a.iter().map(Value::to_serde).collect()),
            Value::Object(o) => {
                let mut m = serde_json::Map::new();
                for (k, v) in o.iter() {
                    m.insert(k.to_lossy().into_owned(), v.to_serde());
                }
                serde_json::Value::Object(m)
            }
        }
    }
}

fn number_to_serde(n: f64) -> serde_json::Value {
    if n.is_finite() && n.fract() == 0.0 && n.abs() <= 9_007_199_254_740_991.0 {
        serde_json::Value::Number(serde_json::Number::from(n as i64))
    } else {
        serde_json::Number::from_f64(n)
            .map(serde_json::Value::Number)
            .unwrap_or(serde_json::Value::Null)
    }
}

#[cfg(test)]
mod tests;
