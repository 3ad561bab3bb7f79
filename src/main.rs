//! The `reactor` binary: the host CLI, or the viewer when invoked as `reactor-devtools`.

#![forbid(unsafe_code)]

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let argv0 = args.first().cloned().unwrap_or_default();
    let base = std::path::Path::new(&argv0)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let rest: Vec<std::ffi::OsString> = args.drain(1..).collect();
    if base == "reactor-devtools" {
        return reactor::devtools::cli::main(rest);
    }
    if rest.first().map(|a| a == "devtools").unwrap_or(false) {
        return reactor::devtools::cli::main(rest[1..].to_vec());
    }
    reactor::host::cli::main(rest)
}
