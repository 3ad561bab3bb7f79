//! JSON with JavaScript semantics (FORMATS.md §3): the value model, a strict parser, and the
//! canonical, compact and pretty writers.
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
    pub fn utf16_len(&self) -> usize {
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
    pub fn cmp_utf16(&self, other: &JsString) -> Ordering {
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
    pub fn type_name(&self) -> &'static str {
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

// ---------------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------------

/// What went wrong while parsing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseErrorKind {
    /// The input ended before the value was complete (a torn tail, when reading a ledger).
    Eof,
    /// A byte that can never continue valid JSON.
    Syntax(String),
    /// Nesting deeper than [`MAX_DEPTH`].
    TooDeep,
}

/// A parse failure at a byte offset of the input.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{} at byte {offset}", self.message())]
pub struct ParseError {
    /// Byte offset where the problem was detected.
    pub offset: usize,
    /// The kind of problem.
    pub kind: ParseErrorKind,
}

impl ParseError {
    /// The message without the offset (e.g. `unexpected end of JSON input`).
    pub fn message(&self) -> String {
        match &self.kind {
            ParseErrorKind::Eof => "unexpected end of JSON input".to_string(),
            ParseErrorKind::Syntax(m) => m.clone(),
            ParseErrorKind::TooDeep => format!("nesting deeper than {MAX_DEPTH} levels"),
        }
    }
    /// True when the input simply ended early.
    pub fn is_eof(&self) -> bool {
        self.kind == ParseErrorKind::Eof
    }
}

/// Parses one complete JSON text (surrounding JSON whitespace allowed).
///
/// Errors: [`ParseError`] with the byte offset; trailing non-whitespace is a syntax error.
pub fn parse(input: &[u8]) -> Result<Value, ParseError> {
    let mut p = Parser::new(input);
    p.skip_ws();
    let v = p.parse_value()?;
    p.skip_ws();
    if p.pos < input.len() {
        return Err(p.syntax(format!(
            "unexpected {} after JSON value",
            describe_byte(input[p.pos])
        )));
    }
    Ok(v)
}

/// Parses a string of JSON text. See [`parse`].
pub fn parse_str(input: &str) -> Result<Value, ParseError> {
    parse(input.as_bytes())
}

fn describe_byte(b: u8) -> String {
    if b.is_ascii_graphic() {
        format!("character '{}'", b as char)
    } else {
        format!("byte 0x{b:02x}")
    }
}

/// A cursor-based JSON parser over bytes, usable element by element (the ledger reader parses
/// the `receipts.json` array one element at a time to find the longest consistent prefix).
pub struct Parser<'a> {
    input: &'a [u8],
    /// Current byte offset.
    pub pos: usize,
    depth: usize,
}

impl<'a> Parser<'a> {
    /// A parser positioned at the start of `input`.
    pub fn new(input: &'a [u8]) -> Parser<'a> {
        Parser {
            input,
            pos: 0,
            depth: 0,
        }
    }

    /// The byte at the cursor, if any.
    pub fn peek(&self) -> Option<u8> {
        self.input.get(self.pos).copied()
    }

    /// Skips JSON whitespace (space, tab, LF, CR).
    pub fn skip_ws(&mut self) {
        while let Some(b) = self.input.get(self.pos) {
            if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    fn eof(&self) -> ParseError {
        ParseError {
            offset: self.input.len(),
            kind: ParseErrorKind::Eof,
        }
    }

    fn syntax(&self, msg: String) -> ParseError {
        ParseError {
            offset: self.pos,
            kind: ParseErrorKind::Syntax(msg),
        }
    }

    fn unexpected(&self) -> ParseError {
        match self.peek() {
            None => self.eof(),
            Some(b) => self.syntax(format!("unexpected {}", describe_byte(b))),
        }
    }

    /// Parses one value at the cursor (no leading whitespace skipped).
    pub fn parse_value(&mut self) -> Result<Value, ParseError> {
        match self.peek() {
            None => Err(self.eof()),
            Some(b'{') => self.parse_object(),
            Some(b'[') => self.parse_array(),
            Some(b'"') => Ok(Value::String(self.parse_string()?)),
            Some(b't') => self.parse_literal(b"true", Value::Bool(true)),
            Some(b'f') => self.parse_literal(b"false", Value::Bool(false)),
            Some(b'n') => self.parse_literal(b"null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.parse_number(),
            Some(_) => Err(self.unexpected()),
        }
    }

    fn parse_literal(&mut self, word: &[u8], v: Value) -> Result<Value, ParseError> {
        for &expected in word {
            match self.peek() {
                None => return Err(self.eof()),
                Some(b) if b == expected => self.pos += 1,
                Some(_) => return Err(self.unexpected()),
            }
        }
        Ok(v)
    }

    fn enter(&mut self) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(ParseError {
                offset: self.pos,
                kind: ParseErrorKind::TooDeep,
            });
        }
        Ok(())
    }

    fn parse_array(&mut self) -> Result<Value, ParseError> {
        self.enter()?;
        self.pos += 1; // [
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_ws();
            items.push(self.parse_value()?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    break;
                }
                _ => return Err(self.unexpected()),
            }
        }
        self.depth -= 1;
        Ok(Value::Array(items))
    }

    fn parse_object(&mut self) -> Result<Value, ParseError> {
        self.enter()?;
        self.pos += 1; // {
        let mut obj = Object::new();
        // For large objects, an index keeps duplicate detection linear.
        let mut index: Option<std::collections::HashMap<JsString, usize>> = None;
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(Value::Object(obj));
        }
        loop {
            self.skip_ws();
            if self.peek() != Some(b'"') {
                return Err(self.unexpected());
            }
            let key = self.parse_string()?;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err(self.unexpected());
            }
            self.pos += 1;
            self.skip_ws();
            let value = self.parse_value()?;
            let existing = match &index {
                Some(ix) => ix.get(&key).copied(),
                None => obj.entries.iter().position(|(k, _)| *k == key),
            };
            match existing {
                Some(i) => obj.entries[i].1 = value,
                None => {
                    if let Some(ix) = index.as_mut() {
                        ix.insert(key.clone(), obj.entries.len());
                    }
                    obj.entries.push((key, value));
                    if index.is_none() && obj.entries.len() > 32 {
                        index = Some(
                            obj.entries
                                .iter()
                                .enumerate()
                                .map(|(i, (k, _))| (k.clone(), i))
                                .collect(),
                        );
                    }
                }
            }
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    break;
                }
                _ => return Err(self.unexpected()),
            }
        }
        self.depth -= 1;
        Ok(Value::Object(obj))
    }

    fn parse_number(&mut self) -> Result<Value, ParseError> {
        let start = self.pos;
        let bytes = self.input;
        let mut i = self.pos;
        let neg = bytes.get(i) == Some(&b'-');
        if neg {
            i += 1;
        }
        let int_start = i;
        match bytes.get(i) {
            None => {
                self.pos = i;
                return Err(self.eof());
            }
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => {
                while matches!(bytes.get(i), Some(b'0'..=b'9')) {
                    i += 1;
                }
            }
            Some(_) => {
                self.pos = i;
                return Err(self.syntax("no number after minus sign".to_string()));
            }
        }
        let int_end = i;
        let mut simple = true;
        if bytes.get(i) == Some(&b'.') {
            simple = false;
            i += 1;
            let d = i;
            while matches!(bytes.get(i), Some(b'0'..=b'9')) {
                i += 1;
            }
            if i == d {
                self.pos = i;
                return Err(if i >= bytes.len() {
                    self.eof()
                } else {
                    self.syntax("unterminated fractional number".to_string())
                });
            }
        }
        if matches!(bytes.get(i), Some(b'e' | b'E')) {
            simple = false;
            i += 1;
            if matches!(bytes.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            let d = i;
            while matches!(bytes.get(i), Some(b'0'..=b'9')) {
                i += 1;
            }
            if i == d {
                self.pos = i;
                return Err(if i >= bytes.len() {
                    self.eof()
                } else {
                    self.syntax("exponent part is missing a number".to_string())
                });
            }
        }
        self.pos = i;
        if simple && int_end - int_start <= 15 {
            let mut n: i64 = 0;
            for &b in &bytes[int_start..int_end] {
                n = n * 10 + i64::from(b - b'0');
            }
            let f = n as f64;
            return Ok(Value::Number(if neg { -f } else { f }));
        }
        // The slice is ASCII by construction.
        let text = std::str::from_utf8(&bytes[start..i]).map_err(|_| self.unexpected())?;
        let f: f64 = text
            .parse()
            .map_err(|_| self.syntax(format!("invalid number {text}")))?;
        Ok(Value::Number(f))
    }

    /// Parses a string token at the cursor (which must be on `"`).
    pub fn parse_string(&mut self) -> Result<JsString, ParseError> {
        let bytes = self.input;
        self.pos += 1; // opening quote
        let start = self.pos;
        // Fast path: no escapes.
        let mut i = start;
        while let Some(&b) = bytes.get(i) {
            if b == b'"' || b == b'\\' || b < 0x20 {
                break;
            }
            i += 1;
        }
        match bytes.get(i) {
            None => {
                self.pos = i;
                return Err(self.eof());
            }
            Some(b'"') => {
                self.pos = i + 1;
                return Ok(JsString::Utf8(decode_utf8(&bytes[start..i])));
            }
            Some(b'\\') => {}
            Some(_) => {
                self.pos = i;
                return Err(self.syntax("control character in string".to_string()));
            }
        }
        // Slow path: collect UTF-16 code units.
        let mut units: Vec<u16> = decode_utf8(&bytes[start..i]).encode_utf16().collect();
        let mut run_start = i;
        loop {
            match bytes.get(i) {
                None => {
                    self.pos = i;
                    return Err(self.eof());
                }
                Some(b'"') => {
                    units.extend(decode_utf8(&bytes[run_start..i]).encode_utf16());
                    self.pos = i + 1;
                    return Ok(JsString::from_utf16(units));
                }
                Some(b'\\') => {
                    units.extend(decode_utf8(&bytes[run_start..i]).encode_utf16());
                    i += 1;
                    let esc = match bytes.get(i) {
                        None => {
                            self.pos = i;
                            return Err(self.eof());
                        }
                        Some(&e) => e,
                    };
                    i += 1;
                    match esc {
                        b'"' => units.push(0x22),
                        b'\\' => units.push(0x5c),
                        b'/' => units.push(0x2f),
                        b'b' => units.push(0x08),
                        b'f' => units.push(0x0c),
                        b'n' => units.push(0x0a),
                        b'r' => units.push(0x0d),
                        b't' => units.push(0x09),
                        b'u' => {
                            let mut v: u16 = 0;
                            for _ in 0..4 {
                                let d = match bytes.get(i) {
                                    None => {
                                        self.pos = i;
                                        return Err(self.eof());
                                    }
                                    Some(&c) => c,
                                };
                                let digit = match d {
                                    b'0'..=b'9' => d - b'0',
                                    b'a'..=b'f' => d - b'a' + 10,
                                    b'A'..=b'F' => d - b'A' + 10,
                                    _ => {
                                        self.pos = i;
                                        return Err(
                                            self.syntax("bad Unicode escape in string".to_string())
                                        );
                                    }
                                };
                                v = v * 16 + u16::from(digit);
                                i += 1;
                            }
                            units.push(v);
                        }
                        _ => {
                            self.pos = i - 1;
                            return Err(self.syntax("bad escaped character in string".to_string()));
                        }
                    }
                    run_start = i;
                }
                Some(&b) if b < 0x20 => {
                    self.pos = i;
                    return Err(self.syntax("control character in string".to_string()));
                }
                Some(_) => i += 1,
            }
        }
    }
}

/// Decodes UTF-8, replacing invalid sequences with U+FFFD (what a JavaScript reader of a UTF-8
/// file sees).
fn decode_utf8(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s) => s.to_string(),
        Err(_) => String::from_utf8_lossy(b).into_owned(),
    }
}

// ---------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------

/// A value that cannot be canonicalized (FORMATS.md §3.2 rule 1).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot canonicalize non-finite number")]
pub struct NonFinite;

/// Appends the ECMAScript `Number::toString` form of a finite `n` (FORMATS.md §3.2).
/// Errors with [`NonFinite`] for NaN and ±infinity.
pub fn write_number(n: f64, out: &mut Vec<u8>) -> Result<(), NonFinite> {
    if !n.is_finite() {
        return Err(NonFinite);
    }
    if n == 0.0 {
        out.push(b'0');
        return Ok(());
    }
    if n.fract() == 0.0 && n.abs() < 1e15 {
        // Exact integer: itoa-style fast path.
        let mut buf = [0u8; 24];
        let mut i = buf.len();
        let neg = n < 0.0;
        let mut v = n.abs() as u64;
        while v > 0 {
            i -= 1;
            buf[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
        if neg {
            out.push(b'-');
        }
        out.extend_from_slice(&buf[i..]);
        return Ok(());
    }
    let mut b = ryu_js::Buffer::new();
    out.extend_from_slice(b.format_finite(n).as_bytes());
    Ok(())
}

/// The ECMAScript `Number::toString` form of `n`; `NaN`, `Infinity` and `-Infinity` for
/// non-finite values (display use).
pub fn number_to_string(n: f64) -> String {
    let mut out = Vec::new();
    match write_number(n, &mut out) {
        Ok(()) => String::from_utf8(out).unwrap_or_default(),
        Err(_) if n.is_nan() => "NaN".to_string(),
        Err(_) if n > 0.0 => "Infinity".to_string(),
        Err(_) => "-Infinity".to_string(),
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn push_u_escape(unit: u16, out: &mut Vec<u8>) {
    out.extend_from_slice(b"\\u");
    out.push(HEX[(unit >> 12) as usize & 0xf]);
    out.push(HEX[(unit >> 8) as usize & 0xf]);
    out.push(HEX[(unit >> 4) as usize & 0xf]);
    out.push(HEX[unit as usize & 0xf]);
}

/// Appends `s` as a JSON string literal exactly as `JSON.stringify` writes it.
pub fn write_str(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut run = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x0c => b"\\f",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => {
                out.extend_from_slice(&bytes[run..i]);
                push_u_escape(u16::from(b), out);
                run = i + 1;
                continue;
            }
            _ => continue,
        };
        out.extend_from_slice(&bytes[run..i]);
        out.extend_from_slice(esc);
        run = i + 1;
    }
    out.extend_from_slice(&bytes[run..]);
    out.push(b'"');
}

/// Appends a [`JsString`] as a JSON string literal (lone surrogates as lowercase `\udxxx`).
pub fn write_js_string(s: &JsString, out: &mut Vec<u8>) {
    match s {
        JsString::Utf8(s) => write_str(s, out),
        JsString::Wtf16(units) => {
            out.push(b'"');
            let mut i = 0;
            while i < units.len() {
                let u = units[i];
                let pair = (0xD800..=0xDBFF).contains(&u)
                    && units
                        .get(i + 1)
                        .is_some_and(|n| (0xDC00..=0xDFFF).contains(n));
                if pair {
                    let s = String::from_utf16_lossy(&units[i..i + 2]);
                    out.extend_from_slice(s.as_bytes());
                    i += 2;
                    continue;
                }
                if (0xD800..=0xDFFF).contains(&u) {
                    push_u_escape(u, out);
                } else {
                    let mut tmp = [0u8; 4];
                    let c = char::from_u32(u32::from(u)).unwrap_or('\u{fffd}');
                    let enc = c.encode_utf8(&mut tmp);
                    let mut one = Vec::with_capacity(8);
                    write_str(enc, &mut one);
                    // strip the quotes write_str added
                    out.extend_from_slice(&one[1..one.len() - 1]);
                }
                i += 1;
            }
            out.push(b'"');
        }
    }
}

/// Appends the canonical JSON of `v` (FORMATS.md §3.2).
pub fn write_canonical(v: &Value, out: &mut Vec<u8>) -> Result<(), NonFinite> {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_number(*n, out)?,
        Value::String(s) => write_js_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out)?;
            }
            out.push(b']');
        }
        Value::Object(obj) => {
            out.push(b'{');
            let sorted = obj
                .entries
                .windows(2)
                .all(|w| w[0].0.cmp_utf16(&w[1].0) == Ordering::Less);
            if sorted {
                for (i, (k, val)) in obj.entries.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write_js_string(k, out);
                    out.push(b':');
                    write_canonical(val, out)?;
                }
            } else {
                let mut refs: Vec<&(JsString, Value)> = obj.entries.iter().collect();
                refs.sort_by(|a, b| a.0.cmp_utf16(&b.0));
                for (i, (k, val)) in refs.into_iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write_js_string(k, out);
                    out.push(b':');
                    write_canonical(val, out)?;
                }
            }
            out.push(b'}');
        }
    }
    Ok(())
}

/// Appends the canonical JSON of `obj` without its member `skip` (used to hash a receipt
/// without its `content_hash`, FORMATS.md §5.1) — no copy of the object is made.
pub fn write_canonical_object_except(
    obj: &Object,
    skip: &str,
    out: &mut Vec<u8>,
) -> Result<(), NonFinite> {
    let keep = |k: &JsString| !matches!(k, JsString::Utf8(s) if s == skip);
    let mut refs: Vec<&(JsString, Value)> = obj.entries.iter().filter(|(k, _)| keep(k)).collect();
    if !refs
        .windows(2)
        .all(|w| w[0].0.cmp_utf16(&w[1].0) == Ordering::Less)
    {
        refs.sort_by(|a, b| a.0.cmp_utf16(&b.0));
    }
    out.push(b'{');
    for (i, (k, val)) in refs.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_js_string(k, out);
        out.push(b':');
        write_canonical(val, out)?;
    }
    out.push(b'}');
    Ok(())
}

/// The canonical JSON text of `v`.
pub fn canonical_string(v: &Value) -> Result<String, NonFinite> {
    let mut out = Vec::with_capacity(256);
    write_canonical(v, &mut out)?;
    // Only valid UTF-8 is ever written.
    Ok(String::from_utf8(out).unwrap_or_default())
}

/// Appends compact JSON (no whitespace, members in their stored order). Non-finite numbers
/// print as `null`, as `JSON.stringify` does.
pub fn write_compact(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => {
            if write_number(*n, out).is_err() {
                out.extend_from_slice(b"null");
            }
        }
        Value::String(s) => write_js_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_compact(item, out);
            }
            out.push(b']');
        }
        Value::Object(obj) => {
            out.push(b'{');
            for (i, (k, val)) in obj.entries.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_js_string(k, out);
                out.push(b':');
                write_compact(val, out);
            }
            out.push(b'}');
        }
    }
}

/// Appends pretty JSON as `JSON.stringify(v, null, 2)` writes it (members in stored order),
/// without a trailing newline.
pub fn write_pretty(v: &Value, out: &mut Vec<u8>, level: usize) {
    fn indent(out: &mut Vec<u8>, level: usize) {
        out.push(b'\n');
        for _ in 0..level {
            out.extend_from_slice(b"  ");
        }
    }
    match v {
        Value::Array(items) if !items.is_empty() => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                indent(out, level + 1);
                write_pretty(item, out, level + 1);
            }
            indent(out, level);
            out.push(b']');
        }
        Value::Object(obj) if !obj.is_empty() => {
            out.push(b'{');
            for (i, (k, val)) in obj.entries.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                indent(out, level + 1);
                write_js_string(k, out);
                out.extend_from_slice(b": ");
                write_pretty(val, out, level + 1);
            }
            indent(out, level);
            out.push(b'}');
        }
        other => write_compact(other, out),
    }
}

/// Pretty JSON of `v` plus one `\n` (the file form of FORMATS.md §1 "Pretty JSON").
pub fn pretty_string(v: &Value) -> String {
    let mut out = Vec::new();
    write_pretty(v, &mut out, 0);
    out.push(b'\n');
    String::from_utf8(out).unwrap_or_default()
}

/// Compact JSON of `v`.
pub fn compact_string(v: &Value) -> String {
    let mut out = Vec::new();
    write_compact(v, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// serde output with JavaScript number formatting
// ---------------------------------------------------------------------------------------------

/// A `serde_json` formatter that prints floats the way `JSON.stringify` does (integral values
/// without `.0`, JavaScript exponent forms, non-finite as `null`).
#[derive(Default)]
pub struct JsCompactFormatter;

fn js_float<W: ?Sized + std::io::Write>(w: &mut W, n: f64) -> std::io::Result<()> {
    let mut out = Vec::with_capacity(24);
    if write_number(n, &mut out).is_err() {
        out.clear();
        out.extend_from_slice(b"null");
    }
    w.write_all(&out)
}

impl serde_json::ser::Formatter for JsCompactFormatter {
    fn write_f64<W: ?Sized + std::io::Write>(&mut self, w: &mut W, v: f64) -> std::io::Result<()> {
        js_float(w, v)
    }
    fn write_f32<W: ?Sized + std::io::Write>(&mut self, w: &mut W, v: f32) -> std::io::Result<()> {
        js_float(w, f64::from(v))
    }
}

/// Like [`JsCompactFormatter`] but indented with two spaces (`JSON.stringify(v, null, 2)`).
pub struct JsPrettyFormatter(serde_json::ser::PrettyFormatter<'static>);

impl Default for JsPrettyFormatter {
    fn default() -> Self {
        JsPrettyFormatter(serde_json::ser::PrettyFormatter::with_indent(b"  "))
    }
}

impl serde_json::ser::Formatter for JsPrettyFormatter {
    fn write_f64<W: ?Sized + std::io::Write>(&mut self, w: &mut W, v: f64) -> std::io::Result<()> {
        js_float(w, v)
    }
    fn write_f32<W: ?Sized + std::io::Write>(&mut self, w: &mut W, v: f32) -> std::io::Result<()> {
        js_float(w, f64::from(v))
    }
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object_value(w)
    }
}

/// Serializes `v` as compact JSON with JavaScript number formatting.
pub fn to_js_compact<T: serde::Serialize + ?Sized>(v: &T) -> Vec<u8> {
    let mut out = Vec::with_capacity(1024);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, JsCompactFormatter);
    // Serializing plain data types into a Vec cannot fail.
    let _ = v.serialize(&mut ser);
    out
}

/// Serializes `v` as pretty JSON (two-space indent) with JavaScript number formatting, plus one
/// trailing `\n`.
pub fn to_js_pretty<T: serde::Serialize + ?Sized>(v: &T) -> Vec<u8> {
    let mut out = Vec::with_capacity(1024);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, JsPrettyFormatter::default());
    let _ = v.serialize(&mut ser);
    out.push(b'\n');
    out
}

impl serde::Serialize for Value {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self {
            Value::Null => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Number(n) => {
                if n.is_finite() && n.fract() == 0.0 && n.abs() <= 9_007_199_254_740_991.0 {
                    s.serialize_i64(*n as i64)
                } else if n.is_finite() {
                    s.serialize_f64(*n)
                } else {
                    s.serialize_unit()
                }
            }
            Value::String(js) => s.serialize_str(&js.to_lossy()),
            Value::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for i in items {
                    seq.serialize_element(i)?;
                }
                seq.end()
            }
            Value::Object(o) => {
                let mut map = s.serialize_map(Some(o.len()))?;
                for (k, v) in o.iter() {
                    map.serialize_entry(&*k.to_lossy(), v)?;
                }
                map.end()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(text: &str) -> String {
        canonical_string(&parse_str(text).unwrap()).unwrap()
    }

    #[test]
    fn worked_examples_formats_3_3() {
        assert_eq!(canon("1e21"), "1e+21");
        assert_eq!(canon("1e-7"), "1e-7");
        assert_eq!(canon("0.1"), "0.1");
        assert_eq!(canon("-0"), "0");
        assert_eq!(canon("123.0"), "123");
        assert_eq!(
            canon("[1E2, 2.50, 0.1e1, 1e-6, 0.30000000000000004]"),
            "[100,2.5,1,0.000001,0.30000000000000004]"
        );
        assert_eq!(
            canon("[100000000000000000000, 123456789012345680000, 12345678901234567890]"),
            "[100000000000000000000,123456789012345680000,12345678901234567000]"
        );
        assert_eq!(
            canon("[9007199254740993, 5e-324, 1.7976931348623157e308, -3.25e-10]"),
            "[9007199254740992,5e-324,1.7976931348623157e+308,-3.25e-10]"
        );
        assert_eq!(
            canon(r#"{ "z": { "y": [1, {"b": null, "a": true}], "x": "s" }, "a": [] }"#),
            r#"{"a":[],"z":{"x":"s","y":[1,{"a":true,"b":null}]}}"#
        );
        assert_eq!(canon(r#"{"a": 1, "a": 2}"#), r#"{"a":2}"#);
        assert_eq!(canon("{}"), "{}");
        assert_eq!(canon("[]"), "[]");
    }

    #[test]
    fn more_numbers() {
        for (input, want) in [
            ("1e20", "100000000000000000000"),
            ("1.5", "1.5"),
            ("123.456", "123.456"),
            ("0.000001", "0.000001"),
            ("1.5e-10", "1.5e-10"),
            ("-1e21", "-1e+21"),
            ("123456789012345", "123456789012345"),
            ("1234567890123456", "1234567890123456"),
            ("-5", "-5"),
            ("0.5", "0.5"),
            ("2e-7", "2e-7"),
            ("1.2e+21", "1.2e+21"),
        ] {
            assert_eq!(canon(input), want, "{input}");
        }
        assert!(canonical_string(&parse_str("1e400").unwrap()).is_err());
        assert_eq!(
            parse_str("-1e400").unwrap(),
            Value::Number(f64::NEG_INFINITY)
        );
    }

    #[test]
    fn key_order_utf16() {
        let text = "{\"b\":1,\"a\":2,\"10\":3,\"9\":4,\"Z\":5,\"\u{1F600}\":6,\"\u{E000}\":7,\"\":0,\"B\":8}";
        assert_eq!(
            canon(text),
            "{\"\":0,\"10\":3,\"9\":4,\"B\":8,\"Z\":5,\"a\":2,\"b\":1,\"\u{1F600}\":6,\"\u{E000}\":7}"
        );
    }

    #[test]
    fn string_escaping() {
        let input = r#""q\"b\\n\n\t\u0001\u001f\u000b\u007f\u00e9\u2028\ud83d\ude00\ud800""#;
        let want = "\"q\\\"b\\\\n\\n\\t\\u0001\\u001f\\u000b\u{7f}é\u{2028}😀\\ud800\"";
        assert_eq!(canon(input), want);
        // A lone low surrogate and an escaped slash.
        assert_eq!(canon(r#""\/\uDC00x""#), "\"/\\udc00x\"");
    }

    #[test]
    fn lone_surrogates_are_preserved_and_distinct() {
        let a = parse_str(r#""\ud800""#).unwrap();
        let b = parse_str(r#""\ud801""#).unwrap();
        assert_ne!(a, b);
        assert_eq!(canonical_string(&a).unwrap(), r#""\ud800""#);
        // A valid pair written as escapes is ordinary Unicode.
        assert_eq!(parse_str(r#""\ud83d\ude00""#).unwrap(), Value::str("😀"));
    }

    #[test]
    fn errors_and_eof() {
        for torn in [
            "[", "{\"a\":", "\"abc", "[1,", "tru", "-", "1.", "1e", "{\"a\"", "\"\\u12",
        ] {
            let e = parse_str(torn).unwrap_err();
            assert!(e.is_eof(), "{torn}: {e:?}");
        }
        for bad in [
            "[1,]",
            "{,}",
            "01",
            "[1 2]",
            "{\"a\" 1}",
            "nul1",
            "\"\\x\"",
            "[\"\u{1}\"]",
            "1 2",
            "+1",
            ".5",
        ] {
            let e = parse_str(bad).unwrap_err();
            assert!(!e.is_eof(), "{bad}: {e:?}");
        }
        let deep = "[".repeat(MAX_DEPTH + 1);
        assert_eq!(parse_str(&deep).unwrap_err().kind, ParseErrorKind::TooDeep);
    }

    #[test]
    fn duplicate_keys_keep_first_position_last_value() {
        let v = parse_str(r#"{"a":1,"b":2,"a":3}"#).unwrap();
        assert_eq!(compact_string(&v), r#"{"a":3,"b":2}"#);
        // Large objects use the index path.
        let mut text = String::from("{");
        for i in 0..100 {
            text.push_str(&format!("\"k{i}\":{i},"));
        }
        text.push_str("\"k5\":\"last\"}");
        let v = parse_str(&text).unwrap();
        assert_eq!(v.as_object().unwrap().len(), 100);
        assert_eq!(v.get("k5").unwrap().as_str(), Some("last"));
    }

    #[test]
    fn pretty_matches_json_stringify() {
        let v = parse_str(r#"{"a":[1,{"b":[]},{}],"c":"x","d":{}}"#).unwrap();
        assert_eq!(
            pretty_string(&v),
            "{\n  \"a\": [\n    1,\n    {\n      \"b\": []\n    },\n    {}\n  ],\n  \"c\": \"x\",\n  \"d\": {}\n}\n"
        );
    }

    #[test]
    fn serde_formatters_print_js_numbers() {
        #[derive(serde::Serialize)]
        struct T {
            a: f64,
            b: f64,
            c: u64,
            d: Vec<u8>,
        }
        let t = T {
            a: 0.0,
            b: 1e21,
            c: 3,
            d: vec![],
        };
        assert_eq!(
            String::from_utf8(to_js_compact(&t)).unwrap(),
            r#"{"a":0,"b":1e+21,"c":3,"d":[]}"#
        );
        assert_eq!(
            String::from_utf8(to_js_pretty(&t)).unwrap(),
            "{\n  \"a\": 0,\n  \"b\": 1e+21,\n  \"c\": 3,\n  \"d\": []\n}\n"
        );
    }

    #[test]
    fn utf16_cmp_agrees_with_unit_comparison() {
        let samples = [
            "",
            "a",
            "ab",
            "b",
            "\u{E000}",
            "\u{FFFF}",
            "\u{1F600}",
            "é",
            "\u{10000}",
            "z\u{1F600}",
            "z\u{E000}",
        ];
        for a in samples {
            for b in samples {
                let want = a.encode_utf16().cmp(b.encode_utf16());
                assert_eq!(utf16_cmp(a, b), want, "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        let v = parse(b"\"a\xffb\"").unwrap();
        assert_eq!(v.as_str(), Some("a\u{fffd}b"));
    }
}
