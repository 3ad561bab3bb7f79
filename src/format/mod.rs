//! Pure data formats: canonical JSON (with serde support) and content addresses, the
//! JSON-Schema-subset validator of the project's own schemas, receipts and their verifier,
//! OPWM1 artifacts, topology types, state-dir layout constants, and the moved-facets and
//! propagation-targets functions shared by `core` and `replay` (FORMATS.md).
pub mod address;
pub mod json;
pub(crate) mod jsonschema;
pub mod layout;
pub mod opwm;
pub(crate) mod propagate;
pub mod receipt;
pub(crate) mod sanitize;
pub mod topology;
