//! (room `host`; see ARCHITECTURE.md)

pub mod cli;
pub mod connectors;
pub mod daemon;
pub mod hosted;
pub mod queue;
