//! The receipt trail as the offline verbs read it (FORMATS.md §11.2): the longest consistent
//! prefix of `<state-dir>/receipts.json`, never locked, never repaired, never created. A torn
//! tail or a zero-length file becomes a note; a corrupt file is an error.
//!
//! Every element is kept raw (for verification) and projected leniently for display: a receipt
//! with a tampered or missing field still lists (with `?` for what cannot be read), so `logs`,
//! `trace` and `receipts verify` can show it next to the verdict.

use std::path::{Path, PathBuf};

use crate::format::json::Value;
use crate::format::layout;
use crate::format::receipt::{ChainVerdict, is_safe_nonneg_int, verify_receipt_chain};
use crate::host::error::HostError;
use crate::host::rollup::CostRollup;
use crate::store::ledger::{self, TornTail};

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

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut cur = v;
    for k in path {
        cur = cur.get(k)?;
    }
    cur.as_str()
}

fn tokens_at(v: &Value, key: &str) -> u64 {
    v.get("cost")
        .and_then(|c| c.get("tokens"))
        .and_then(|t| t.get(key))
        .and_then(Value::as_f64)
        .filter(|n| is_safe_nonneg_int(*n))
        .map(|n| n as u64)
        .unwrap_or(0)
}

/// Projects one raw element (never fails).
pub fn project_entry(index: usize, v: &Value) -> TrailEntry {
    let s = |path: &[&str]| str_at(v, path).unwrap_or("?").to_string();
    let node = match v.get("node") {
        Some(Value::String(js)) if !js.is_empty() => js.to_lossy().into_owned(),
        _ => "?".to_string(),
    };
    let status = s(&["status"]);
    let reason = if status == "failed" {
        str_at(v, &["semantic_diff", "failure_reason"])
            .filter(|r| !r.trim().is_empty())
            .map(crate::host::error::one_line)
    } else {
        None
    };
    TrailEntry {
        index,
        node,
        status,
        wake_source: s(&["wake", "source"]),
        surprise_cause: s(&["cost", "surprise_cause"]),
        fresh: tokens_at(v, "fresh"),
        reused: tokens_at(v, "reused"),
        content_hash: str_at(v, &["content_hash"]).map(str::to_string),
        prev: str_at(v, &["prev"]).map(str::to_string),
        reason,
    }
}

/// The ledger of one state directory, read-only.
#[derive(Clone, Debug, Default)]
pub struct Trail {
    /// `<state-dir>/receipts.json`.
    pub path: PathBuf,
    /// True when the file exists.
    pub exists: bool,
    /// Every complete element, raw.
    pub raw: Vec<Value>,
    /// Their projections.
    pub entries: Vec<TrailEntry>,
    /// Set when the file ends with an incomplete receipt (nothing is repaired).
    pub torn: Option<TornTail>,
    /// True when the file exists with zero bytes.
    pub zero_length: bool,
}

impl Trail {
    /// Reads `<state_dir>/receipts.json` (an absent file or directory is the empty ledger).
    ///
    /// Errors (state, exit 1): an unreadable file; a file that is not an array or is corrupt
    /// (FORMATS.md §11.2 step 5), with the hint to restore or move it aside.
    pub fn read(state_dir: &Path) -> Result<Trail, HostError> {
        let path = state_dir.join(layout::RECEIPTS_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Trail {
                    path,
                    ..Trail::default()
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
                return Ok(Trail {
                    path,
                    ..Trail::default()
                });
            }
            Err(e) => {
                return Err(HostError::state(format!(
                    "cannot read {}: {e}",
                    path.display()
                )));
            }
        };
        let read = ledger::read_ledger(&bytes).map_err(|e| {
            HostError::state(format!("{}: {e}", state_dir.display()))
                .with_hint("restore the file from a backup or move it aside")
        })?;
        let entries = read
            .receipts
            .iter()
            .enumerate()
            .map(|(i, v)| project_entry(i, v))
            .collect();
        Ok(Trail {
            path,
            exists: true,
            raw: read.receipts,
            entries,
            torn: read.torn,
            zero_length: read.zero_length,
        })
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

    /// Prints [`Trail::notes`] on stderr.
    pub fn print_notes(&self) {
        for n in self.notes() {
            crate::host::output::note(&n);
        }
    }

    /// Number of receipts.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True for an empty trail.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Distinct node values in order of first appearance.
    pub fn nodes(&self) -> Vec<&str> {
        let mut seen = std::collections::HashSet::new();
        self.entries
            .iter()
            .filter(|e| seen.insert(e.node.as_str()))
            .map(|e| e.node.as_str())
            .collect()
    }

    /// True when some receipt names `node`.
    pub fn has_node(&self, node: &str) -> bool {
        self.entries.iter().any(|e| e.node == node)
    }

    /// The entries of one node, in ledger order.
    pub fn entries_of<'a>(&'a self, node: &'a str) -> impl Iterator<Item = &'a TrailEntry> + 'a {
        self.entries.iter().filter(move |e| e.node == node)
    }

    /// Verifies one node's chain on the raw receipts (FORMATS.md §7.2).
    pub fn verify_chain(&self, node: &str) -> ChainVerdict {
        let chain: Vec<Value> = self
            .entries
            .iter()
            .filter(|e| e.node == node)
            .map(|e| self.raw[e.index].clone())
            .collect();
        verify_receipt_chain(&chain)
    }

    /// The cost rollup of every receipt, or of one node's.
    pub fn rollup(&self, node: Option<&str>) -> CostRollup {
        let mut r = CostRollup::new();
        for e in &self.entries {
            if node.is_some_and(|n| n != e.node) {
                continue;
            }
            r.add(&e.node, &e.status, &e.surprise_cause, e.fresh, e.reused);
        }
        r
    }
}

/// The JSON form of a chain verdict: `{"ok", "head"?, "length"?, "errors"?}`.
pub fn chain_json(v: &ChainVerdict) -> serde_json::Value {
    if v.ok {
        serde_json::json!({"ok": true, "head": v.head, "length": v.length})
    } else {
        serde_json::json!({"ok": false, "errors": v.errors})
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
        assert!(
            e.message
                .ends_with("receipts.json must contain a JSON array"),
            "{}",
            e.message
        );
        assert_eq!(
            e.hints,
            vec!["restore the file from a backup or move it aside".to_string()]
        );
        std::fs::write(d.path().join("receipts.json"), b"[1]x").unwrap();
        assert!(
            Trail::read(d.path())
                .unwrap_err()
                .message
                .contains("corrupt at byte")
        );
    }
}
