//! The SPA in headless Chromium (VIEWER.md §8, issue 9): `tests/browser/spa.mjs` drives Debian's
//! chromium through playwright-core against a real viewer process. Needs `node`, the npm
//! packages of `tests/browser` (`npm ci`) and `/usr/bin/chromium` (or `CHROMIUM_PATH`);
//! `.ci/run` installs them and sets `REACTOR_REQUIRE_BROWSER=1`, which turns a missing piece
//! into a failure instead of a loud skip.
//!
//! Three runs: a real ledger (masked-relay from the compatibility corpus) also in the light theme
//! and at 760 px; a bundled example (the synthetic-sample banner); and a generated 400-node,
//! 12,000-receipt ledger (minimap, level-of-detail labels, zoom depth, virtualized timeline, the
//! small layout at scale). Screenshots land in `target/tmp/` (the paths are printed).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::support::{bin, compat_dir};

fn browser_ready() -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let script = root.join("tests/browser/spa.mjs");
    let chromium = std::env::var("CHROMIUM_PATH").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let mut missing = Vec::new();
    if Command::new("node").arg("--version").output().is_err() {
        missing.push("node".to_string());
    }
    if !root
        .join("tests/browser/node_modules/playwright-core")
        .is_dir()
    {
        missing.push("tests/browser/node_modules (run `npm ci` in tests/browser)".to_string());
    }
    if !Path::new(&chromium).exists() {
        missing.push(format!("{chromium} (apt-get install chromium)"));
    }
    if missing.is_empty() {
        return Some(script);
    }
    let msg = format!("the browser test needs {}", missing.join(", "));
    if std::env::var("REACTOR_REQUIRE_BROWSER").as_deref() == Ok("1") {
        panic!("{msg} (REACTOR_REQUIRE_BROWSER=1)");
    }
    eprintln!("SKIPPED: {msg}");
    None
}

/// Starts `reactor devtools <args> -p 0`, runs `spa.mjs` with `flags` against it, and checks that
/// the screenshots (`shot`, plus `-light` / `-small` variants for those flags) were written.
fn run_spa(args: &[&std::ffi::OsStr], shot: &str, flags: &[&str]) {
    let Some(script) = browser_ready() else {
        return;
    };
    let mut child = Command::new(bin())
        .arg("devtools")
        .args(args)
        .args(["-p", "0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    let url = line.trim().strip_prefix("open ").unwrap().to_string();
    let shot_path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(shot);
    let result = Command::new("node")
        .arg(&script)
        .args(["--url", &url, "--screenshot"])
        .arg(&shot_path)
        .args(flags)
        .output()
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let stdout = String::from_utf8_lossy(&result.stdout);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(
        result.status.success(),
        "spa.mjs failed:\n{stdout}\n{stderr}"
    );
    let mut shots = vec![shot_path.clone()];
    for (flag, suffix) in [("--light", "-light.png"), ("--small", "-small.png")] {
        if flags.contains(&flag) {
            let stem = shot.trim_end_matches(".png");
            shots.push(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{stem}{suffix}")));
        }
    }
    for p in &shots {
        let png = std::fs::read(p).unwrap_or_default();
        assert!(
            png.starts_with(b"\x89PNG") && png.len() > 10_000,
            "screenshot {}",
            p.display()
        );
        eprintln!("browser test passed; screenshot at {}", p.display());
    }
}

#[test]
fn spa_replays_masked_relay_in_chromium() {
    let Some(c) = compat_dir() else { return };
    let dir = c.join("masked-relay");
    run_spa(
        &[dir.as_os_str()],
        "spa-masked-relay.png",
        &["--light", "--small"],
    );
}

#[test]
fn spa_replays_a_bundled_example_in_chromium() {
    use std::ffi::OsStr;
    if reactor::devtools::examples::example_dir("research-tree").is_none() {
        eprintln!("SKIPPED: the bundled fixtures are not generated yet");
        return;
    }
    run_spa(
        &[OsStr::new("--example"), OsStr::new("research-tree")],
        "spa-research-tree.png",
        &[],
    );
}

#[test]
fn spa_navigates_a_generated_400_node_ledger_in_chromium() {
    use reactor::devtools::synthetic::{SyntheticSpec, write_synthetic_state_dir};
    if browser_ready().is_none() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("synthetic-400");
    let out = write_synthetic_state_dir(
        &dir,
        &SyntheticSpec {
            nodes: 400,
            receipts: 12_000,
            seed: 9,
        },
    )
    .unwrap();
    assert_eq!((out.nodes, out.receipts), (400, 12_000));
    run_spa(
        &[dir.as_os_str()],
        "spa-synthetic-400.png",
        &["--large", "--scale", "--small"],
    );
}
