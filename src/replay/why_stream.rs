//! "Why did this render" ([`crate::replay::why`]) in one pass over a streamed ledger: each
//! receipt is explained when it arrives, against what is kept of the receipts before it — each
//! node's latest receipt (the previous memo key), the node of every frame (for the wake refs'
//! wording) and the first frame of every content hash (to resolve wake refs). Memory grows
//! with the nodes and one hash (32 bytes for a content address) and node index per receipt,
//! never with whole receipts; the
//! causes are those of [`crate::replay::why::explain_ledger`] over the same receipts.

use std::collections::HashMap;

use crate::format::json::{Object, Value};
use crate::format::topology::Topology;
use crate::replay::why::{Why, WhyLedger, WhySlots, explain};

/// The walk's state after the receipts taken so far.
pub(crate) struct WhyStream {
    slots: WhySlots,
    /// Each node's latest receipt: its frame and its raw value.
    last: HashMap<String, (usize, Value)>,
    /// The `node` of every frame so far (into `names`), `None` when not a string.
    node_of: Vec<Option<u32>>,
    names: Vec<String>,
    name_ix: HashMap<String, u32>,
    /// The first frame of each stored `content_hash`.
    hashes: HashMap<HashKey, usize>,
}

/// A stored `content_hash` as a map key: the 32 bytes of a content address (FORMATS.md §1,
/// `sha256:` + 64 lowercase hex digits), any other text as it is — a million receipts' hashes
/// take a third of the memory their text would.
#[derive(Debug, Hash, PartialEq, Eq)]
enum HashKey {
    Sha256([u8; 32]),
    Text(Box<str>),
}

impl HashKey {
    fn of(s: &str) -> HashKey {
        if crate::format::address::is_content_address(s)
            && let Some(bytes) = crate::format::address::unhex(&s[7..])
            && let Ok(digest) = <[u8; 32]>::try_from(bytes)
        {
            return HashKey::Sha256(digest);
        }
        HashKey::Text(s.into())
    }
}

/// The members of a receipt that [`explain`] and the walk read.
const WHY_MEMBERS: [&str; 6] = [
    "node",
    "status",
    "wake",
    "contract_fingerprint",
    "input_fingerprints",
    "content_hash",
];

/// `v` with only the members the walk reads (a non-object as it is): what a streamed reader
/// hands [`WhyStream::step`] so the rest of the receipt is dropped where it was parsed.
pub(crate) fn why_members(v: Value) -> Value {
    let Value::Object(mut o) = v else {
        return v;
    };
    let mut slim = Object::new();
    for k in WHY_MEMBERS {
        if let Some(x) = o.remove(k) {
            slim.insert(k, x);
        }
    }
    Value::Object(slim)
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

impl WhyStream {
    /// A walk over a ledger of `topology` (`None`: the node-only fallback).
    pub(crate) fn new(topology: Option<&Topology>) -> WhyStream {
        WhyStream {
            slots: WhySlots::new(topology),
            last: HashMap::new(),
            node_of: Vec::new(),
            names: Vec::new(),
            name_ix: HashMap::new(),
            hashes: HashMap::new(),
        }
    }

    /// Explains the next receipt (`None` for a skipped or unreadable one) and takes it in.
    pub(crate) fn step(&mut self, v: Value) -> Option<Why> {
        let i = self.node_of.len();
        let why = explain(
            &self.slots,
            &Cursor {
                walk: self,
                i,
                current: &v,
            },
            i,
        );
        self.take(i, v);
        why
    }

    /// Takes the next receipt in without explaining it (a caller that wants the causes of
    /// some frames only).
    pub(crate) fn pass(&mut self, v: Value) {
        let i = self.node_of.len();
        self.take(i, v);
    }

    fn take(&mut self, i: usize, v: Value) {
        if let Some(h) = str_at(&v, "content_hash") {
            self.hashes.entry(HashKey::of(h)).or_insert(i);
        }
        let Some(node) = str_at(&v, "node") else {
            self.node_of.push(None);
            return;
        };
        let n = match self.name_ix.get(node) {
            Some(&n) => n,
            None => {
                let n = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
                self.names.push(node.to_string());
                self.name_ix.insert(node.to_string(), n);
                n
            }
        };
        self.node_of.push(Some(n));
        let key = self.names[n as usize].clone();
        self.last.insert(key, (i, v));
    }
}

/// The ledger as [`explain`] sees it while frame `i` (`current`) is explained.
struct Cursor<'a> {
    walk: &'a WhyStream,
    i: usize,
    current: &'a Value,
}

impl WhyLedger for Cursor<'_> {
    /// Frame `i` itself, or a node's latest receipt (the only earlier ones `explain` reads).
    fn receipt(&self, k: usize) -> Option<&Value> {
        if k == self.i {
            return Some(self.current);
        }
        let node = self.walk.node_of(k)?;
        let (frame, v) = self.walk.last.get(node)?;
        (*frame == k).then_some(v)
    }
    fn latest_before(&self, node: &str, before: usize) -> Option<usize> {
        self.walk
            .last
            .get(node)
            .map(|(f, _)| *f)
            .filter(|&f| f < before)
    }
    fn by_hash(&self, hash: &str) -> Option<usize> {
        self.walk.hashes.get(&HashKey::of(hash)).copied()
    }
    fn node_of(&self, k: usize) -> Option<&str> {
        if k == self.i {
            return str_at(self.current, "node");
        }
        self.walk.node_of(k)
    }
}

impl WhyStream {
    fn node_of(&self, k: usize) -> Option<&str> {
        let n = (*self.node_of.get(k)?)?;
        Some(&self.names[n as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devtools::examples::{SHIPPED_EXAMPLES, open_example};
    use crate::replay::why::explain_ledger;

    /// The one-pass causes are the whole-ledger causes, on every bundled fixture and on a
    /// ledger with unreadable members, repeated hashes and refs to later frames.
    #[test]
    fn one_pass_equals_the_whole_ledger_walk() {
        for name in SHIPPED_EXAMPLES {
            let o = open_example(name, &Default::default()).unwrap();
            let want = explain_ledger(&o.raw, o.topology.as_ref());
            let mut walk = WhyStream::new(o.topology.as_ref());
            let got: Vec<Option<Why>> = o.raw.iter().map(|v| walk.step(v.clone())).collect();
            assert_eq!(got, want, "{name}");
            let mut walk = WhyStream::new(o.topology.as_ref());
            let slim: Vec<Option<Why>> = o
                .raw
                .iter()
                .map(|v| walk.step(why_members(v.clone())))
                .collect();
            assert_eq!(slim, want, "{name} (slim receipts)");
        }
        let raw: Vec<Value> = [
            r#"{"node":"a","status":"rendered","content_hash":"h1","contract_fingerprint":"c","input_fingerprints":[],"wake":{"source":"external","refs":["h3"]}}"#,
            r#"{"node":7,"status":"failed","content_hash":"h2"}"#,
            r#"{"node":"a","status":"failed","content_hash":"h1","contract_fingerprint":"d","input_fingerprints":["x"],"wake":{"source":"input","refs":["h1","h2","h9"]}}"#,
            r#"{"node":"a","status":"rendered","content_hash":"h3","contract_fingerprint":"d","input_fingerprints":["x"],"wake":{"source":"self","refs":["h2"]}}"#,
            r#"{"node":"b","status":"rendered","content_hash":"h4","wake":{"source":"input","refs":["h3","h1"]}}"#,
            r#"{"node":"a","status":"skipped"}"#,
        ]
        .iter()
        .map(|t| crate::format::json::parse_str(t).unwrap())
        .collect();
        let want = explain_ledger(&raw, None);
        let mut walk = WhyStream::new(None);
        let got: Vec<Option<Why>> = raw
            .iter()
            .map(|v| walk.step(why_members(v.clone())))
            .collect();
        assert_eq!(got, want);
        // Frames passed without a cause still count for the frames after them.
        let mut walk = WhyStream::new(None);
        let mut some = Vec::new();
        for (i, v) in raw.iter().enumerate() {
            if i % 2 == 0 {
                walk.pass(v.clone());
            } else {
                some.push(walk.step(v.clone()));
            }
        }
        assert_eq!(
            some,
            vec![want[1].clone(), want[3].clone(), want[5].clone()]
        );
        assert_eq!(got[4].as_ref().unwrap().refs, vec![Some(3), Some(0)]);
        assert_eq!(got[2].as_ref().unwrap().refs, vec![Some(0), Some(1), None]);
        assert!(got[5].is_none());
    }

    #[test]
    fn hash_keys_are_exact() {
        let a = crate::format::address::address(b"x");
        assert!(matches!(HashKey::of(&a), HashKey::Sha256(_)));
        assert_eq!(HashKey::of(&a), HashKey::of(&a.clone()));
        assert_ne!(
            HashKey::of(&a),
            HashKey::of(&crate::format::address::address(b"y"))
        );
        // Only the exact form is packed: other spellings stay text and never match it.
        let upper = format!("sha256:{}", a[7..].to_uppercase());
        assert!(matches!(HashKey::of(&upper), HashKey::Text(_)));
        assert_ne!(HashKey::of(&upper), HashKey::of(&a));
        for other in ["", "h1", "sha256:", &a[..70], &format!("{a}0")] {
            assert_eq!(HashKey::of(other), HashKey::Text(other.into()), "{other}");
        }
    }
}
