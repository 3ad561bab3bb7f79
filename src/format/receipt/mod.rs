//! Receipts (FORMATS.md §4–§7), one stage per file: the typed receipt the project writes and
//! its content hash (`model.rs`), the one decoder of raw receipt values and the member types
//! its projections share (`decode.rs`), and the verifiers `verify_receipt` (§7.1,
//! `verify.rs`) and `verify_receipt_chain` (§7.2, `chain.rs`), which work on raw parsed values
//! so that reference-written and tampered ledgers are judged exactly.

mod chain;
mod decode;
mod model;
mod verify;

pub(crate) use chain::ReceiptCheck;
pub use chain::{ChainState, ChainVerdict, verify_chain_iter, verify_receipt_chain};
pub use decode::{
    Lenient, NonEmptyText, ReceiptDecodeError, SafeCount, Text, lossy_string, safe_count,
};
pub use model::{
    Cost, CostWire, Fingerprints, HASH_ALGORITHM, NULL_SIGNER_REASON, RECEIPT_KEYS, Receipt,
    SCHEMA, Status, TokenCounts, Wake, WakeSource, is_safe_nonneg_int, recompute_content_hash,
};
pub use verify::{ReceiptVerdict, verify_receipt, verify_receipt_with};

#[cfg(test)]
mod tests;
