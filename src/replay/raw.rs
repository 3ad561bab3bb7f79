//! The raw receipts of a served ledger (VIEWER.md §6.5 receipt inspector, the frame causes of
//! [`crate::replay::why`]), parsed again when asked for instead of held as values.
//!
//! A ledger on disk is not copied: the store keeps each receipt's byte range in
//! `receipts.json` (FORMATS.md §11) and the open handle of the file the streamed open read,
//! and reads a receipt back with one positioned read. The writer only ever appends after the
//! complete elements, and a file replaced by rename stays readable through the handle, so the
//! range keeps its bytes; a receipt read back must still carry the `content_hash` it had at the
//! open, or the store answers "unknown" (a file rewritten in place under the viewer). Receipts
//! of an embedded example, and those the live follow appends, are kept as compact JSON text
//! ([`crate::format::json::write_compact`]: members in file order, JavaScript number forms,
//! lone surrogates as `\u` escapes), which parses back to an equal value.
//!
//! A `content_hash` index (a 64-bit digest of the stored text per receipt, the first receipt
//! winning) answers wake refs; a lookup confirms the match against the receipt, so a digest
//! collision answers "unknown", never a wrong receipt.
//!
//! Memory: 32 bytes per receipt on disk (range and digest) plus the index, against about the
//! ledger's own size for text.

use std::collections::HashMap;
use std::fs::File;
use std::hash::{Hash, Hasher};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use crate::format::json::{self, Value};

/// The receipts, in ledger order: first those in the file (by range), then those held as
/// text.
#[derive(Clone, Debug, Default)]
pub(crate) struct RawStore {
    /// The ledger file the ranges point into.
    file: Option<Arc<File>>,
    /// Each file receipt's byte range and its `content_hash` digest at the open.
    spans: Vec<(Range<usize>, Option<u64>)>,
    text: Vec<u8>,
    /// End of each text receipt in `text`.
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

/// One receipt ready to be stored (made on the streaming reader's workers): its byte range in
/// the ledger file, or its compact text; and its `content_hash` digest.
#[derive(Clone, Debug)]
pub(crate) struct RawText {
    body: Body,
    hash: Option<u64>,
}

#[derive(Clone, Debug)]
enum Body {
    Text(Vec<u8>),
    Span(Range<usize>),
}

impl RawText {
    /// The stored form of `v`: its compact text.
    pub(crate) fn of(v: &Value) -> RawText {
        let mut text = Vec::with_capacity(1024);
        json::write_compact(v, &mut text);
        RawText {
            body: Body::Text(text),
            hash: stored_hash(v).map(hash_digest),
        }
    }

    /// The stored form of `v`, read from `span` of the ledger file: the range only.
    pub(crate) fn in_file(v: &Value, span: Range<usize>) -> RawText {
        RawText {
            body: Body::Span(span),
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

    /// Sets the ledger file the ranges of [`RawText::in_file`] receipts point into (the handle
    /// the open read them through).
    pub(crate) fn set_file(&mut self, file: Option<Arc<File>>) {
        self.file = file;
    }

    /// Appends the next receipt. A range after a text receipt is kept as unknown (the file
    /// receipts come first; the streamed open never mixes them).
    pub(crate) fn push(&mut self, r: RawText) {
        let i = self.len();
        match r.body {
            Body::Span(span) if self.ends.is_empty() => self.spans.push((span, r.hash)),
            Body::Span(_) => {
                self.ends.push(self.text.len());
                return;
            }
            Body::Text(text) => {
                self.text.extend_from_slice(&text);
                self.ends.push(self.text.len());
            }
        }
        if let Some(h) = r.hash {
            self.by_hash.entry(h).or_insert(i);
        }
    }

    /// Number of receipts.
    pub(crate) fn len(&self) -> usize {
        self.spans.len() + self.ends.len()
    }

    /// Receipt `i`, parsed (`None` past the end, or when the file no longer holds it).
    pub(crate) fn get(&self, i: usize) -> Option<Value> {
        if let Some((span, hash)) = self.spans.get(i) {
            let mut bytes = vec![0u8; span.len()];
            self.file
                .as_ref()?
                .read_exact_at(&mut bytes, span.start as u64)
                .ok()?;
            let v = json::parse(&bytes).ok()?;
            return (stored_hash(&v).map(hash_digest) == *hash).then_some(v);
        }
        let i = i - self.spans.len();
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

    #[test]
    fn receipts_in_a_file_are_read_back_by_range() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("receipts.json");
        let ledger = "[\n  {\"content_hash\": \"h1\", \"n\": 1},\n  {\"content_hash\": \"h2\", \"a\": [1, 2]}\n]\n";
        std::fs::write(&path, ledger).unwrap();
        let spans: Vec<Range<usize>> = ["{\"content_hash\": \"h1\"", "{\"content_hash\": \"h2\""]
            .iter()
            .map(|t| {
                let start = ledger.find(t).unwrap();
                let end = start + ledger[start..].find('}').unwrap() + 1;
                start..end
            })
            .collect();
        let values: Vec<Value> = spans
            .iter()
            .map(|s| parse_str(&ledger[s.clone()]).unwrap())
            .collect();
        let mut store = RawStore::default();
        for (v, s) in values.iter().zip(&spans) {
            store.push(RawText::in_file(v, s.clone()));
        }
        // Without the file the ranges answer nothing; with it, the receipts.
        assert_eq!(store.get(0), None);
        store.set_file(Some(Arc::new(File::open(&path).unwrap())));
        assert_eq!(store.len(), 2);
        assert_eq!(store.get(0).as_ref(), Some(&values[0]));
        assert_eq!(store.get(1).as_ref(), Some(&values[1]));
        assert_eq!(store.by_hash("h2"), Some(1));
        // Text receipts (the live follow's) come after the file's.
        let appended = parse_str(r#"{"content_hash":"h3"}"#).unwrap();
        store.push(RawText::of(&appended));
        assert_eq!(store.get(2).as_ref(), Some(&appended));
        assert_eq!(store.by_hash("h3"), Some(2));
        assert_eq!(store.get(3), None);
        // Rewritten in place: what the range holds now is not the receipt, so it is unknown.
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.write_all_at(b"{\"content_hash\": \"hX\"", spans[0].start as u64)
            .unwrap();
        drop(f);
        assert_eq!(store.get(0), None);
        assert_eq!(store.by_hash("h1"), None);
        assert_eq!(store.get(1).as_ref(), Some(&values[1]));
        // A file replaced by rename stays readable through the handle.
        let other = d.path().join("new.json");
        std::fs::write(&other, "[]\n").unwrap();
        std::fs::rename(&other, &path).unwrap();
        assert_eq!(store.get(1).as_ref(), Some(&values[1]));
    }
}
