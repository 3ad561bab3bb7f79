//! The viewer command line (VIEWER.md §2).
use std::ffi::OsString;
use std::process::ExitCode;

/// Runs `reactor-devtools` with the arguments after the program name.
pub fn main(_args: Vec<OsString>) -> ExitCode {
    eprintln!("reactor-devtools: not built yet");
    ExitCode::from(1)
}
