//! The replay viewer (`reactor-devtools`): its command line, server routes, embedded SPA assets,
//! bundled fixtures and `--copy-to` (VIEWER.md).

pub mod cli;
pub mod examples;
pub mod server;

pub use examples::{SHIPPED_EXAMPLES, copy_example, open_example};
