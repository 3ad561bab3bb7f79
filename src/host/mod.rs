//! (room `host`; see ARCHITECTURE.md)

pub mod cli;
pub mod connectors;
pub mod queue;
