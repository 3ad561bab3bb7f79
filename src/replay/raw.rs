//! The raw receipts of a served ledger (VIEWER.md §6.5 receipt inspector, the frame causes of
//! [`crate::replay::why`]), kept as compact JSON text and parsed again when asked for: about
//! the ledger's own size, where the parsed values would take several times more.
//!
//! The text of a receipt is its value written compact ([`crate::format::json::write_compact`]:
//! members in file order, JavaScript number forms, lone surrogates as `\u` escapes), which
//! parses back to an equal value. A `content_hash` index (a 64-bit digest of the stored text per
//! receipt, the first receipt winning) answers wake refs; a lookup confirms the match against
//! the receipt, so a digest collision answers "unknown", never a wrong receipt.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use crate::format::json::{self, Value};

/// The receipts, in ledger order.
#[derive(Clone, Debug, Default)]
pub(crate) struct RawStore {
    text: Vec<u8>,
    /// End of each receipt's text in `text`.
    ends: Vec<usize>,
    /// Digest of a stored `content_hash` → the first receipt holding it.
    by_hash: HashMap<u64, usize>,
}

/// The 64-bit digest of a `content_hash` text (the same in every process).
pub(crate) fn hash_digest(s: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

/// The stored `content_hash` of a raw receipt, when a string.
pub(crate) fn stored_hash(v: &Value) -> Option<&str> {
    v.get("content_hash").and_then(Value::as_str)
}

/// One receipt ready to be stored: its compact text and its `content_hash` digest (computed on
/// the streaming reader's workers).
#[derive(Clone, Debug)]
pub(crate) struct RawText {
    text: Vec<u8>,
    hash: Option<u64>,
}

impl RawText {
    /// The stored form of `v`.
    pub(crate) fn of(v: &Value) -> RawText {
        let mut text = Vec::with_capacity(1024);
        json::write_compact(v, &mut text);
        RawText {
            text,
            hash: stored_hash(v).map(hash_digest),
        }
    }
}

impl RawStore {
    /// The store of `raw`.
    #[cfg(test)]
    pub(crate) fn of_values(raw: &[Value]) -> RawStore {
        let mut s = RawStore::default();
        for v in raw {
            s.push(RawText::of(v));
        }
        s
    }

    /// Appends the next receipt.
    pub(crate) fn push(&mut self, r: RawText) {
        let i = self.ends.len();
        self.text.extend_from_slice(&r.text);
        self.ends.push(self.text.len());
        if let Some(h) = r.hash {
            self.by_hash.entry(h).or_insert(i);
        }
    }

    /// Number of receipts.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Receipt `i`, parsed (`None` past the end).
    pub(crate) fn get(&self, i: usize) -> Option<Value> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        // The text was written by the compact writer: it always parses.
        json::parse(&self.text[start..end]).ok()
    }

    /// The first receipt whose stored `content_hash` is `hash`.
    pub(crate) fn by_hash(&self, hash: &str) -> Option<usize> {
        let i = *self.by_hash.get(&hash_digest(hash))?;
        let v = self.get(i)?;
        (stored_hash(&v) == Some(hash)).then_some(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::json::parse_str;

    #[test]
    fn receipts_parse_back_equal_and_hashes_resolve() {
        let raw: Vec<Value> = [
            r#"{"content_hash":"h1","n":1.5e300,"s":"\ud800 ]} \" \\","dup":1,"dup":2}"#,
            r#"{"content_hash":"h2","a":[1,{"b":null}],"neg":-0.000001}"#,
            r#"{"content_hash":"h1","later":true}"#,
            r#"[1,2]"#,
            r#"{"content_hash":7}"#,
        ]
        .iter()
        .map(|t| parse_str(t).unwrap())
        .collect();
        let s = RawStore::of_values(&raw);
        assert_eq!(s.len(), 5);
        for (i, v) in raw.iter().enumerate() {
            assert_eq!(s.get(i).as_ref(), Some(v), "{i}");
        }
        assert_eq!(s.get(5), None);
        assert_eq!(s.by_hash("h1"), Some(0));
        assert_eq!(s.by_hash("h2"), Some(1));
        assert_eq!(s.by_hash("h3"), None);
        // A digest that points at a receipt with another hash text is not taken for it.
        let mut bogus = s.clone();
        bogus.by_hash.insert(hash_digest("x"), 0);
        assert_eq!(bogus.by_hash("x"), None);
    }
}
