//! (room `host`; see ARCHITECTURE.md)

pub mod cli;
