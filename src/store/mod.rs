//! Durable state on disk (FORMATS.md §2, §11–§14, §17): the receipt ledger (O(1) append,
//! fsync, torn-tail repair), the single-writer lock, the world-model store and `registry.json`.
//! Knows files, not meaning.

pub(crate) mod fsutil;
pub mod ledger;
pub mod lock;
pub mod registry;
pub mod source;
pub mod worldmodel;
