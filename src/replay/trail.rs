//! The receipt trail as the host's offline verbs read it (`status`, `logs`, `trace`, `inspect`,
//! `receipts`): the complete prefix of one consistent snapshot of `<state-dir>/receipts.json`
//! ([`crate::replay::ledger`], FORMATS.md §11.2), never locked, never repaired, never created.
//! A torn tail or a zero-length file becomes a note; a corrupt file is an error.
//!
//! The ledger is streamed ([`crate::replay::stream`]): every element is verified as it is read
//! (its node's chain verdict, FORMATS.md §7.2) and projected leniently for display — a receipt
//! with a tampered or missing field still lists (with `?` for what cannot be read), so `logs`,
//! `trace` and `receipts verify` can show it next to the verdict — and then dropped. Only what
//! the verbs print stays: the entries, each node's verdict, and on request the causes
//! (`trace --why`, `inspect`) and one node's latest raw receipt. Receipts are indexed by node
//! once, so per-node questions cost the node's receipts, not the ledger's.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::format::json::{self, Value};
use crate::format::layout;
use crate::format::receipt::{
    ChainState, ChainVerdict, Lenient, NonEmptyText, ReceiptCheck, SafeCount,
};
use crate::replay::ledger::LedgerReadError;
use crate::replay::stream::{Reader, stream_ledger_file};
use crate::replay::why::Why;
use crate::replay::why_stream::{WhyStream, why_members};
use crate::store::ledger::TornTail;

/// One receipt projected for display. Fields that cannot be read are `?` (strings), `0`
/// (tokens) or `None`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrailEntry {
    /// Position in the ledger (0-based).
    pub index: usize,
    /// `node` (`?` when not a string).
    pub node: String,
    /// `status`.
    pub status: String,
    /// `wake.source`.
    pub wake_source: String,
    /// `cost.surprise_cause`.
    pub surprise_cause: String,
    /// `cost.tokens.fresh`.
    pub fresh: u64,
    /// `cost.tokens.reused`.
    pub reused: u64,
    /// `content_hash` as stored.
    pub content_hash: Option<String>,
    /// `prev` as stored.
    pub prev: Option<String>,
    /// `semantic_diff.failure_reason` of a failed receipt, when present.
    pub reason: Option<String>,
}

/// Collapses line breaks so a text prints as one line (HOST.md §3.3): each run of `\n`/`\r`
/// becomes one space (none after a space), trailing whitespace is trimmed.
pub(crate) fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut last_space = false;
    for c in s.chars() {
        if c == '\n' || c == '\r' {
            if !last_space {
                out.push(' ');
            }
            last_space = true;
        } else {
            out.push(c);
            last_space = c == ' ';
        }
    }
    out.trim_end().to_string()
}

/// The members a [`TrailEntry`] shows, each read leniently (the shared member types of the
/// receipt decoder, `format::receipt`).
#[derive(Default, serde::Deserialize)]
struct EntryWire {
    node: Lenient<NonEmptyText>,
    status: Lenient<String>,
    wake: Lenient<EntryWake>,
    cost: Lenient<EntryCost>,
    content_hash: Lenient<String>,
    prev: Lenient<String>,
    semantic_diff: Lenient<EntryDiff>,
}

#[derive(serde::Deserialize)]
struct EntryWake {
    source: Lenient<String>,
}

#[derive(serde::Deserialize)]
struct EntryCost {
    surprise_cause: Lenient<String>,
    tokens: Lenient<EntryTokens>,
}

#[derive(serde::Deserialize)]
struct EntryTokens {
    fresh: Lenient<SafeCount>,
    reused: Lenient<SafeCount>,
}

#[derive(serde::Deserialize)]
struct EntryDiff {
    failure_reason: Lenient<String>,
}

/// Projects one raw element (never fails).
pub(crate) fn project_entry(index: usize, v: &Value) -> TrailEntry {
    let w: EntryWire = json::from_value::<Lenient<EntryWire>>(v)
        .ok()
        .and_then(|l| l.0)
        .unwrap_or_default();
    let or_unknown = |s: Option<String>| s.unwrap_or_else(|| "?".to_string());
    let status = or_unknown(w.status.0);
    let reason = match w.semantic_diff.0.and_then(|d| d.failure_reason.0) {
        Some(r) if status == "failed" && !r.trim().is_empty() => Some(one_line(&r)),
        _ => None,
    };
    let (surprise_cause, tokens) = match w.cost.0 {
        Some(c) => (c.surprise_cause.0, c.tokens.0),
        None => (None, None),
    };
    let count = |n: Lenient<SafeCount>| n.0.map_or(0, |n| n.0);
    let (fresh, reused) = tokens.map_or((0, 0), |t| (count(t.fresh), count(t.reused)));
    TrailEntry {
        index,
        node: or_unknown(w.node.0.map(|n| n.0)),
        status,
        wake_source: or_unknown(w.wake.0.and_then(|k| k.source.0)),
        surprise_cause: or_unknown(surprise_cause),
        fresh,
        reused,
        content_hash: w.content_hash.0,
        prev: w.prev.0,
        reason,
    }
}

/// The ledger of one state directory, read-only: every receipt's [`TrailEntry`], each node's
/// chain verdict (FORMATS.md §7.2), and — when asked for ([`TrailRead`]) — the receipts'
/// causes and one node's latest raw receipt. The receipts themselves are not kept: the ledger
/// is streamed ([`crate::replay::stream`]), each receipt verified on a worker thread.
#[derive(Clone, Debug, Default)]
pub struct Trail {
    /// `<state-dir>/receipts.json`.
    pub path: PathBuf,
    /// True when the file exists.
    pub exists: bool,
    /// Every complete element's projection (empty when read by [`Trail::read_folding`]).
    pub entries: Vec<TrailEntry>,
    /// Number of complete elements.
    count: usize,
    /// Set when the file ends with an incomplete receipt (nothing is repaired).
    pub torn: Option<TornTail>,
    /// True when the file exists with zero bytes.
    pub(crate) zero_length: bool,
    /// Per projected node name, in order of first appearance.
    nodes: Vec<NodeTrail>,
    /// Node name → its position in `nodes`.
    by_node: HashMap<String, usize>,
    /// The cause of each explained frame, by ledger index ([`TrailRead::why`]).
    whys: BTreeMap<usize, Why>,
}

/// One node's part of the trail.
#[derive(Clone, Debug, Default)]
struct NodeTrail {
    name: String,
    /// Positions of its entries in [`Trail::entries`], in ledger order (empty when they are
    /// not kept).
    entries: Vec<usize>,
    /// Number of its receipts.
    count: usize,
    /// Its chain, verified receipt by receipt.
    chain: ChainState,
    /// Its latest raw receipt ([`TrailRead::last_raw_of`]).
    last_raw: Option<Value>,
}

/// What a read of the trail keeps besides the entries and the chain verdicts.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TrailRead<'a> {
    /// Explain every rendered or failed receipt ([`crate::replay::why`]; the slots come from
    /// `compile/topology.json` when readable) — `reactor trace --why`, `inspect`.
    pub(crate) why: bool,
    /// Keep the causes of this node's frames only (the others are `None`).
    pub(crate) why_of: Option<&'a str>,
    /// Keep this node's latest raw receipt.
    pub(crate) last_raw_of: Option<&'a str>,
    /// Keep the entries of this node only (all when `None`): [`Trail::entries`] then holds
    /// that node's, and [`Trail::entries_of`] answers for it alone.
    pub(crate) entries_of: Option<&'a str>,
}

/// What a worker hands the fold for one receipt.
struct TrailItem {
    entry: TrailEntry,
    check: ReceiptCheck,
    raw: Option<Value>,
}

impl Trail {
    /// Reads `<state_dir>/receipts.json` (an absent file or directory is the empty ledger)
    /// through the one ledger reader, keeping entries and chain verdicts.
    ///
    /// Errors: [`LedgerReadError`] — an unreadable file; a file that is not an array, blank or
    /// corrupt (FORMATS.md §11.2 step 5). Callers add the state-dir path and the restore hint.
    pub fn read(state_dir: &Path) -> Result<Trail, LedgerReadError> {
        Trail::read_with(state_dir, &TrailRead::default())
    }

    /// [`Trail::read`], keeping what `what` asks for besides.
    ///
    /// Errors: as [`Trail::read`].
    pub(crate) fn read_with(
        state_dir: &Path,
        what: &TrailRead<'_>,
    ) -> Result<Trail, LedgerReadError> {
        let (t, ()) = Trail::read_inner(state_dir, what, true, &mut || (), &|_, _| {})?;
        Ok(t)
    }

    /// Reads the trail without keeping its entries: `add` folds each one, in ledger order, into
    /// an accumulator that `init` makes (afresh for each snapshot the reader takes, so a
    /// retried snapshot never counts twice). The trail keeps each node's receipt count and chain
    /// verdict, so its memory grows with nodes, not receipts; `entries` and
    /// [`Trail::entries_of`] are empty. For verbs that only total the ledger (`status`,
    /// `receipts verify`, `receipts cost`).
    ///
    /// Errors: as [`Trail::read`].
    pub(crate) fn read_folding<A>(
        state_dir: &Path,
        init: &mut dyn FnMut() -> A,
        add: &dyn Fn(&mut A, &TrailEntry),
    ) -> Result<(Trail, A), LedgerReadError> {
        Trail::read_inner(state_dir, &TrailRead::default(), false, init, add)
    }

    /// [`Trail::read_with`] and [`Trail::read_folding`]: `keep` keeps the entries.
    fn read_inner<A>(
        state_dir: &Path,
        what: &TrailRead<'_>,
        keep: bool,
        init: &mut dyn FnMut() -> A,
        add: &dyn Fn(&mut A, &TrailEntry),
    ) -> Result<(Trail, A), LedgerReadError> {
        let path = state_dir.join(layout::RECEIPTS_FILE);
        if !state_dir.is_dir() {
            let t = Trail {
                path,
                ..Trail::default()
            };
            return Ok((t, init()));
        }
        let topology = match what.why {
            true => crate::replay::statedir::read_topology(state_dir)
                .ok()
                .flatten()
                .map(|t| t.topology),
            false => None,
        };
        let digest = |v: Value, _: std::ops::Range<usize>| {
            let entry = project_entry(0, &v);
            let check = ReceiptCheck::of(&v, None);
            let raw = if what.last_raw_of == Some(entry.node.as_str()) {
                Some(v)
            } else if what.why {
                // The walk reads a few members; the rest is dropped here, on the worker.
                Some(why_members(v))
            } else {
                None
            };
            TrailItem { entry, check, raw }
        };
        let mut start = || {
            let walk = what.why.then(|| WhyStream::new(topology.as_ref()));
            (Trail::default(), walk, init())
        };
        let mut fold =
            |(t, walk, acc): &mut (Trail, Option<WhyStream>, A), i: usize, mut item: TrailItem| {
                item.entry.index = i;
                add(acc, &item.entry);
                t.take(i, item, walk.as_mut(), what, keep);
            };
        let ((mut t, _, acc), end) =
            stream_ledger_file(&path, &mut Reader::new(&digest, &mut start, &mut fold))?;
        t.path = path;
        t.exists = end.exists;
        t.torn = end.torn;
        t.zero_length = end.zero_length;
        Ok((t, acc))
    }

    /// Takes receipt `i` (in order).
    fn take(
        &mut self,
        i: usize,
        item: TrailItem,
        walk: Option<&mut WhyStream>,
        what: &TrailRead<'_>,
        keep: bool,
    ) {
        let TrailItem {
            mut entry,
            check,
            mut raw,
        } = item;
        entry.index = i;
        let k = match self.by_node.get(&entry.node) {
            Some(&k) => k,
            None => {
                self.nodes.push(NodeTrail {
                    name: entry.node.clone(),
                    ..NodeTrail::default()
                });
                self.by_node
                    .insert(entry.node.clone(), self.nodes.len() - 1);
                self.nodes.len() - 1
            }
        };
        let keep = keep && what.entries_of.is_none_or(|n| n == entry.node);
        let position = self.entries.len();
        let node = &mut self.nodes[k];
        node.count += 1;
        if keep {
            node.entries.push(position);
        }
        node.chain.push_check(check);
        if what.last_raw_of == Some(entry.node.as_str()) {
            node.last_raw = if what.why { raw.clone() } else { raw.take() };
        }
        if let (Some(walk), Some(v)) = (walk, raw) {
            if what.why_of.is_none_or(|n| n == entry.node) {
                if let Some(why) = walk.step(v) {
                    self.whys.insert(i, why);
                }
            } else {
                walk.pass(v);
            }
        }
        self.count += 1;
        if keep {
            self.entries.push(entry);
        }
    }

    /// A trail over raw receipts already read (projected, verified and indexed by node).
    #[cfg(test)]
    pub(crate) fn from_raw(path: PathBuf, raw: Vec<Value>) -> Trail {
        let mut t = Trail {
            path,
            exists: true,
            ..Trail::default()
        };
        for (i, v) in raw.into_iter().enumerate() {
            let item = TrailItem {
                entry: project_entry(i, &v),
                check: ReceiptCheck::of(&v, None),
                raw: None,
            };
            t.take(i, item, None, &TrailRead::default(), true);
        }
        t
    }

    /// The reader's notes (a torn tail, a zero-length file), without the `reactor: note: `
    /// prefix.
    pub fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.zero_length {
            out.push(format!(
                "{} is empty (0 bytes); reading it as an empty ledger",
                self.path.display()
            ));
        }
        if let Some(t) = &self.torn {
            out.push(format!(
                "{} ends with an incomplete receipt (a write in progress or an interrupted append); using the {} complete receipt(s) and leaving the file untouched",
                self.path.display(),
                t.complete
            ));
        }
        out
    }

    /// Number of receipts.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True for an empty trail.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Distinct node values in order of first appearance.
    pub fn nodes(&self) -> Vec<&str> {
        self.nodes.iter().map(|n| n.name.as_str()).collect()
    }

    /// True when some receipt names `node`.
    pub fn has_node(&self, node: &str) -> bool {
        self.by_node.contains_key(node)
    }

    fn node(&self, node: &str) -> Option<&NodeTrail> {
        self.by_node.get(node).map(|&k| &self.nodes[k])
    }

    /// The entries of one node, in ledger order.
    pub(crate) fn entries_of<'a>(
        &'a self,
        node: &str,
    ) -> impl Iterator<Item = &'a TrailEntry> + 'a {
        self.node(node)
            .map(|n| n.entries.as_slice())
            .unwrap_or(&[])
            .iter()
            .map(|&i| &self.entries[i])
    }

    /// Number of receipts of one node.
    pub fn count_of(&self, node: &str) -> usize {
        self.node(node).map_or(0, |n| n.count)
    }

    /// One node's chain verdict (FORMATS.md §7.2), verified while the ledger was read.
    pub fn verify_chain(&self, node: &str) -> ChainVerdict {
        self.node(node)
            .map_or_else(|| ChainState::default().verdict(), |n| n.chain.verdict())
    }

    /// The cause of frame `index`, when the trail was read with [`TrailRead::why`] and the
    /// frame was explained.
    pub(crate) fn why(&self, index: usize) -> Option<&Why> {
        self.whys.get(&index)
    }

    /// `node`'s latest rendered or failed frame and its cause (read with [`TrailRead::why`]).
    pub(crate) fn last_render(&self, node: &str) -> Option<(usize, Why)> {
        let n = self.node(node)?;
        n.entries.iter().rev().find_map(|&p| {
            let i = self.entries[p].index;
            self.why(i).map(|w| (i, w.clone()))
        })
    }

    /// `node`'s latest raw receipt (read with [`TrailRead::last_raw_of`] naming it).
    pub(crate) fn last_raw(&self, node: &str) -> Option<&Value> {
        self.node(node)?.last_raw.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::json::parse_str;

    #[test]
    fn lenient_projection() {
        let v = parse_str(r#"{"node":"a","status":"failed","wake":{"source":"input"},"cost":{"surprise_cause":"input","tokens":{"fresh":90,"reused":-1}},"semantic_diff":{"failure_reason":"boom\nsecond"},"content_hash":"h","prev":null}"#).unwrap();
        let e = project_entry(3, &v);
        assert_eq!(e.index, 3);
        assert_eq!(e.node, "a");
        assert_eq!(e.status, "failed");
        assert_eq!(e.wake_source, "input");
        assert_eq!((e.fresh, e.reused), (90, 0));
        assert_eq!(e.reason.as_deref(), Some("boom second"));
        assert_eq!(e.content_hash.as_deref(), Some("h"));
        assert_eq!(e.prev, None);
        let e = project_entry(0, &parse_str("[1]").unwrap());
        assert_eq!((e.node.as_str(), e.status.as_str()), ("?", "?"));
        // Every member unreadable in its own way: each shows `?`, `0` or nothing.
        let v = parse_str(r#"{"node":"\ud800x","status":7,"wake":[],"cost":{"tokens":{"fresh":"9","reused":2.5}},"semantic_diff":{"failure_reason":"x"},"content_hash":null,"prev":"\udc00"}"#).unwrap();
        let e = project_entry(1, &v);
        assert_eq!(e.node, "\u{fffd}x");
        assert_eq!(
            (
                e.status.as_str(),
                e.wake_source.as_str(),
                e.surprise_cause.as_str()
            ),
            ("?", "?", "?")
        );
        assert_eq!((e.fresh, e.reused), (0, 0));
        assert_eq!((e.content_hash, e.prev, e.reason), (None, None, None));
        // A tampered status still shows as written; a blank reason is dropped.
        let v = parse_str(
            r#"{"node":"","status":"done","semantic_diff":{"failure_reason":" "},"cost":3}"#,
        )
        .unwrap();
        let e = project_entry(2, &v);
        assert_eq!((e.node.as_str(), e.status.as_str()), ("?", "done"));
        let v =
            parse_str(r#"{"status":"failed","semantic_diff":{"failure_reason":"\n"}}"#).unwrap();
        assert_eq!(project_entry(2, &v).reason, None);
    }

    #[test]
    fn reading_never_writes() {
        let d = tempfile::tempdir().unwrap();
        let t = Trail::read(&d.path().join("missing")).unwrap();
        assert!(t.is_empty() && !t.exists);
        assert!(!d.path().join("missing").exists());
        std::fs::write(d.path().join("receipts.json"), b"").unwrap();
        let t = Trail::read(d.path()).unwrap();
        assert!(t.zero_length);
        assert_eq!(t.notes().len(), 1);
        std::fs::write(d.path().join("receipts.json"), b"[{\"node\":\"a\"},{\"no").unwrap();
        let t = Trail::read(d.path()).unwrap();
        assert_eq!(t.len(), 1);
        assert!(t.notes()[0].contains("using the 1 complete receipt(s)"));
        assert_eq!(
            std::fs::read(d.path().join("receipts.json")).unwrap(),
            b"[{\"node\":\"a\"},{\"no"
        );
        std::fs::write(d.path().join("receipts.json"), b"{}").unwrap();
        let e = Trail::read(d.path()).unwrap_err();
        assert_eq!(e.to_string(), "receipts.json must contain a JSON array");
        std::fs::write(d.path().join("receipts.json"), b"[1]x").unwrap();
        assert!(
            Trail::read(d.path())
                .unwrap_err()
                .to_string()
                .contains("corrupt at byte 3")
        );
    }

    #[test]
    fn per_node_index() {
        let raw: Vec<Value> = ["a", "b", "a", "c", "a"]
            .iter()
            .map(|n| parse_str(&format!("{{\"node\":\"{n}\"}}")).unwrap())
            .collect();
        let t = Trail::from_raw(PathBuf::from("r"), raw);
        assert_eq!(t.nodes(), vec!["a", "b", "c"]);
        assert_eq!(
            t.entries_of("a").map(|e| e.index).collect::<Vec<_>>(),
            vec![0, 2, 4]
        );
        assert_eq!(t.count_of("c"), 1);
        assert_eq!(t.count_of("z"), 0);
        assert!(!t.has_node("z"));
        let v = t.verify_chain("a");
        assert!(!v.ok);
        assert_eq!(v.length, 3);
        assert!(t.verify_chain("z").ok);
    }

    #[test]
    fn a_folding_read_totals_what_a_full_read_keeps() {
        let d = tempfile::tempdir().unwrap();
        let mut text = String::from("[\n");
        for i in 0..40 {
            let node = ["a", "b", "c"][i % 3];
            let status = ["rendered", "skipped", "failed"][i % 3];
            text.push_str(&format!(
                "{}  {{\"node\": \"{node}\", \"status\": \"{status}\", \"cost\": {{\"surprise_cause\": \"input\", \"tokens\": {{\"fresh\": {i}, \"reused\": 1}}}}}}",
                if i == 0 { "" } else { ",\n" }
            ));
        }
        text.push_str("\n]\n");
        std::fs::write(d.path().join("receipts.json"), &text).unwrap();
        let full = Trail::read(d.path()).unwrap();
        // The accumulator: (receipts, fresh tokens, indexes seen) per fold.
        let (folded, (n, fresh, indexes)) = Trail::read_folding(
            d.path(),
            &mut || (0usize, 0u64, Vec::new()),
            &|acc: &mut (usize, u64, Vec<usize>), e: &TrailEntry| {
                acc.0 += 1;
                acc.1 += e.fresh;
                acc.2.push(e.index);
            },
        )
        .unwrap();
        assert_eq!(full.len(), 40);
        assert_eq!(folded.len(), full.len());
        assert!(!folded.is_empty());
        assert!(folded.entries.is_empty());
        assert_eq!(folded.entries_of("a").count(), 0);
        assert_eq!(folded.nodes(), full.nodes());
        for node in ["a", "b", "c", "z"] {
            assert_eq!(folded.count_of(node), full.count_of(node), "{node}");
            assert_eq!(folded.verify_chain(node), full.verify_chain(node), "{node}");
        }
        assert_eq!(n, 40);
        assert_eq!(fresh, full.entries.iter().map(|e| e.fresh).sum::<u64>());
        assert_eq!(indexes, (0..40).collect::<Vec<_>>());
        // Keeping one node's entries: that node's, the same as a full read's; counts and
        // verdicts for every node.
        let one = Trail::read_with(
            d.path(),
            &TrailRead {
                entries_of: Some("b"),
                ..TrailRead::default()
            },
        )
        .unwrap();
        let b: Vec<&TrailEntry> = full.entries_of("b").collect();
        assert_eq!(one.entries.iter().collect::<Vec<_>>(), b);
        assert_eq!(one.entries_of("b").collect::<Vec<_>>(), b);
        assert_eq!(one.entries_of("a").count(), 0);
        assert_eq!(one.len(), 40);
        for node in ["a", "b", "c"] {
            assert_eq!(one.count_of(node), full.count_of(node), "{node}");
            assert_eq!(one.verify_chain(node), full.verify_chain(node), "{node}");
        }
        // A missing state directory folds nothing.
        let (t, (n, _, _)) = Trail::read_folding(
            &d.path().join("missing"),
            &mut || (0usize, 0u64, Vec::new()),
            &|acc: &mut (usize, u64, Vec<usize>), _: &TrailEntry| acc.0 += 1,
        )
        .unwrap();
        assert!(t.is_empty() && !t.exists);
        assert_eq!(n, 0);
    }
}
