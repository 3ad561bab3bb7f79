//! (room `devtools`; see ARCHITECTURE.md)

pub mod cli;
