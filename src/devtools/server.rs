//! The viewer's HTTP server (VIEWER.md §2.10, §6).

use crate::devtools::cli::Io;
use crate::replay::OpenedStateDir;

/// Server mode of the CLI.
pub fn run_cli(
    _opened: OpenedStateDir,
    _example: Option<String>,
    _host: &str,
    _port: u16,
    io: &mut Io<'_>,
) -> u8 {
    let _ = std::io::Write::write_all(io.err, b"reactor-devtools: the server is not built yet\n");
    1
}
