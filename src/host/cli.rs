//! The host command line (HOST.md §1).
use std::ffi::OsString;
use std::process::ExitCode;

/// Runs `reactor` with the arguments after the program name.
pub fn main(_args: Vec<OsString>) -> ExitCode {
    eprintln!("reactor: error: not built yet");
    ExitCode::from(1)
}
