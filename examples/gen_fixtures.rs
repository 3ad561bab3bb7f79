//! Regenerates the six bundled replay fixtures (VIEWER.md §9).
//!
//! Usage: `cargo run --example gen_fixtures -- <fixtures-dir> [<name>…]`
//!
//! For each fixture (all six by default) the existing `<fixtures-dir>/<name>/` is replaced by a
//! fresh generation: the generator writes into `<fixtures-dir>/.<name>.generating` first and
//! renames it into place only when it succeeded, so a failed run never leaves a half-written
//! fixture behind.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use reactor::scenario::fixtures::{FIXTURE_NAMES, generate};

fn regenerate(root: &Path, name: &str) -> Result<(), String> {
    let staging = root.join(format!(".{name}.generating"));
    if staging.exists() {
        std::fs::remove_dir_all(&staging)
            .map_err(|e| format!("cannot remove {}: {e}", staging.display()))?;
    }
    if let Err(e) = generate(name, &staging) {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(format!("{name}: {e}"));
    }
    let target = root.join(name);
    if target.exists() {
        std::fs::remove_dir_all(&target)
            .map_err(|e| format!("cannot remove {}: {e}", target.display()))?;
    }
    std::fs::rename(&staging, &target)
        .map_err(|e| format!("cannot move {} into place: {e}", staging.display()))
}

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let Some(root) = args.next().map(PathBuf::from) else {
        eprintln!("usage: gen_fixtures <fixtures-dir> [<name>…]");
        eprintln!("  names: {}", FIXTURE_NAMES.join(", "));
        return ExitCode::from(2);
    };
    let names: Vec<String> = args.map(|a| a.to_string_lossy().into_owned()).collect();
    let names: Vec<String> = if names.is_empty() {
        FIXTURE_NAMES.iter().map(|s| s.to_string()).collect()
    } else {
        names
    };
    if let Some(bad) = names.iter().find(|n| !FIXTURE_NAMES.contains(&n.as_str())) {
        eprintln!(
            "gen_fixtures: unknown fixture \"{bad}\" (expected one of: {})",
            FIXTURE_NAMES.join(", ")
        );
        return ExitCode::from(2);
    }
    if let Err(e) = std::fs::create_dir_all(&root) {
        eprintln!("gen_fixtures: cannot create {}: {e}", root.display());
        return ExitCode::FAILURE;
    }
    for name in &names {
        match regenerate(&root, name) {
            Ok(()) => println!("generated {}", root.join(name).display()),
            Err(e) => {
                eprintln!("gen_fixtures: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
