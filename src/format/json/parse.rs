//! The strict JSON parser with JavaScript semantics (FORMATS.md §3.1).

use super::{JsString, MAX_DEPTH, Object, Value};

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
    pub(crate) fn is_eof(&self) -> bool {
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
    pub(crate) pos: usize,
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
    pub(crate) fn peek(&self) -> Option<u8> {
        self.input.get(self.pos).copied()
    }

    /// Skips JSON whitespace (space, tab, LF, CR).
    pub(crate) fn skip_ws(&mut self) {
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
    pub(crate) fn parse_value(&mut self) -> Result<Value, ParseError> {
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
    pub(crate) fn parse_string(&mut self) -> Result<JsString, ParseError> {
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
