//! The canonical (FORMATS.md §3.2), compact and pretty writers, and `serde_json` formatters
//! that print numbers as JavaScript does.

use std::cmp::Ordering;

use super::ser::Exact;
use super::{JsString, Object, Value};

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

/// A string: a `str`, or (with a lone surrogate) the exact form the project's serializer keeps
/// and the lossy form every other serializer gets (see `ser.rs`).
fn serialize_js_string<S: serde::Serializer>(js: &JsString, s: S) -> Result<S::Ok, S::Error> {
    match js {
        JsString::Utf8(t) => s.serialize_str(t),
        JsString::Wtf16(u) => Exact::Wtf16(u).serialize_in(s),
    }
}

/// An object key, serialized like a string value.
struct JsKey<'a>(&'a JsString);

impl serde::Serialize for JsKey<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_js_string(self.0, s)
    }
}

/// Any JSON value. For serializers other than the project's own ([`super::to_value`]), a
/// string with a lone surrogate is written with U+FFFD and a non-finite number as `null`.
impl serde::Serialize for Value {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        match self {
            Value::Null => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Number(n) => {
                if n.is_finite() && n.fract() == 0.0 && n.abs() <= 9_007_199_254_740_991.0 {
                    s.serialize_i64(*n as i64)
                } else if n.is_finite() {
                    s.serialize_f64(*n)
                } else {
                    Exact::NonFinite(*n).serialize_in(s)
                }
            }
            Value::String(js) => serialize_js_string(js, s),
            Value::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for i in items {
                    seq.serialize_element(i)?;
                }
                seq.end()
            }
            Value::Object(o) => o.serialize(s),
        }
    }
}

/// A JSON object, members in order (as [`Value`]'s `Serialize` writes one).
impl serde::Serialize for Object {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.len()))?;
        for (k, v) in self.iter() {
            map.serialize_entry(&JsKey(k), v)?;
        }
        map.end()
    }
}
