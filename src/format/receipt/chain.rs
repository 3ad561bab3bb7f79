//! Chain verification (FORMATS.md §7.2): one node's receipts in order, each valid, all of the
//! node, each `prev` naming the one before.

use super::verify::verify_receipt_with;
use crate::format::json::{NonFinite, Value};

/// The outcome of [`verify_receipt_chain`] (FORMATS.md §7.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainVerdict {
    /// True when there are no errors.
    pub ok: bool,
    /// Content hash of the last receipt (when ok and non-empty).
    pub head: Option<String>,
    /// Number of receipts (when ok).
    pub length: usize,
    /// Every problem, in order.
    pub errors: Vec<String>,
    /// Positions (within the chain) of receipts that were invalid, broke the node-scoped ledger
    /// or had a `prev` mismatch.
    pub invalid_positions: Vec<usize>,
}

/// Verifies one node's receipts in order (FORMATS.md §7.2).
pub fn verify_receipt_chain(chain: &[Value]) -> ChainVerdict {
    verify_chain_iter(chain.iter().map(|v| (v, None)))
}

/// [`verify_receipt_chain`] over `(value, precomputed address)` pairs.
pub fn verify_chain_iter<'a>(
    chain: impl Iterator<Item = (&'a Value, Option<&'a Result<String, NonFinite>>)>,
) -> ChainVerdict {
    let mut state = ChainState::default();
    for (v, pre) in chain {
        state.push(v, pre);
    }
    state.verdict()
}

/// Incremental chain verification (FORMATS.md §7.2): push one node's receipts in order, then
/// read the verdict. Used by the viewer to extend a verdict as a ledger grows.
#[derive(Clone, Debug, Default)]
pub struct ChainState {
    expected_prev: Option<String>,
    chain_node: Option<String>,
    /// Receipts pushed so far.
    pub length: usize,
    /// Problems so far.
    pub errors: Vec<String>,
    /// Chain positions of invalid, foreign or mislinked receipts.
    pub(crate) invalid_positions: Vec<usize>,
    last_hash: Option<String>,
}

/// What [`ChainState`] needs of one receipt, computed apart from the chain (so the hashing and
/// verification of many receipts can run on other threads, FORMATS.md §7.1–§7.2): the
/// receipt's verdict, and its `node` and `prev` members.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ReceiptCheck {
    /// The receipt verifies on its own (§7.1).
    pub(crate) ok: bool,
    /// Its problems, in order (when not ok).
    pub(crate) errors: Vec<String>,
    /// The stored content hash (when ok).
    pub(crate) content_hash: Option<String>,
    /// `node`, `""` when not a string.
    pub(crate) node: String,
    /// `prev` when a string.
    pub(crate) prev: Option<String>,
}

impl ReceiptCheck {
    /// Checks one raw receipt; `pre` is its recomputed address when the caller has it.
    pub(crate) fn of(v: &Value, pre: Option<&Result<String, NonFinite>>) -> ReceiptCheck {
        let verdict = verify_receipt_with(v, pre);
        let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        ReceiptCheck {
            ok: verdict.ok,
            errors: verdict.errors,
            content_hash: verdict.content_hash,
            node: text("node").unwrap_or_default(),
            prev: text("prev"),
        }
    }
}

impl ChainState {
    /// Verifies the next receipt of the chain. Returns false when it was flagged.
    pub fn push(&mut self, v: &Value, pre: Option<&Result<String, NonFinite>>) -> bool {
        self.push_check(ReceiptCheck::of(v, pre))
    }

    /// [`ChainState::push`] with the receipt already checked ([`ReceiptCheck::of`]).
    pub(crate) fn push_check(&mut self, check: ReceiptCheck) -> bool {
        let i = self.length;
        self.length += 1;
        if !check.ok {
            self.errors.push(format!(
                "chain[{i}] is not a valid receipt: {}",
                check.errors.join("; ")
            ));
            self.invalid_positions.push(i);
            return false;
        }
        let node = check.node;
        match &self.chain_node {
            None => self.chain_node = Some(node),
            Some(cn) if *cn != node => {
                self.errors.push(format!(
                    "chain[{i}].node \"{node}\" breaks node-scoped ledger \"{cn}\""
                ));
                self.invalid_positions.push(i);
                return false;
            }
            Some(_) => {}
        }
        let mut ok = true;
        if check.prev != self.expected_prev {
            self.errors.push(format!(
                "chain[{i}].prev must be {} to chain the ledger",
                self.expected_prev.as_deref().unwrap_or("null (cold start)")
            ));
            self.invalid_positions.push(i);
            ok = false;
        }
        self.expected_prev = check.content_hash.clone();
        self.last_hash = check.content_hash;
        ok
    }

    /// The verdict so far.
    pub fn verdict(&self) -> ChainVerdict {
        let ok = self.errors.is_empty();
        ChainVerdict {
            ok,
            head: if ok { self.last_hash.clone() } else { None },
            length: self.length,
            errors: self.errors.clone(),
            invalid_positions: self.invalid_positions.clone(),
        }
    }
}
