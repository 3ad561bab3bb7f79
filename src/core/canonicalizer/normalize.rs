//! Text normalization (RUNTIME.md §4.5): NFC, JavaScript `\\s` whitespace collapse and Unicode
//! default lower-casing, run by run around lone surrogates.

use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfc_quick};

use super::TextRule;
use crate::format::json::JsString;

/// True for a code unit or code point JavaScript's `\\s` matches (RUNTIME.md §4.5): the
/// ECMAScript WhiteSpace and LineTerminator sets (tab to carriage return, space, NBSP, U+1680,
/// U+2000–U+200A, the line and paragraph separators, U+202F, U+205F, U+3000, the BOM).
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
