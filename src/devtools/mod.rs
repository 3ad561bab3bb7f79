//! The replay viewer (`reactor-devtools`): its command line, server routes (with paged frames and
//! frame causes, [`pages`]), embedded SPA assets, the `--export` report ([`export`]), bundled
//! fixtures, `--copy-to`, and synthetic state directories for scale benchmarks (VIEWER.md).

pub mod cli;
pub mod examples;
pub mod export;
pub(crate) mod pages;
pub mod server;
pub mod synthetic;

pub use examples::{SHIPPED_EXAMPLES, copy_example, open_example};
