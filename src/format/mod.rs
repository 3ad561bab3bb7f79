//! Pure data formats: canonical JSON and content addresses, receipts and their verifier, OPWM1
//! artifacts, topology types, state-dir layout constants, and the moved-facets and
//! propagation-targets functions shared by `core` and `replay` (FORMATS.md).
pub mod sanitize;
