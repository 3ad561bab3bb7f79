//! The SPA in headless Chromium (VIEWER.md §8): `tests/browser/spa.mjs` drives Debian's
//! chromium through playwright-core against a real viewer process. Needs `node`, the npm
//! packages of `tests/browser` (`npm ci`) and `/usr/bin/chromium` (or `CHROMIUM_PATH`);
//! `.ci/run` installs them and sets `REACTOR_REQUIRE_BROWSER=1`, which turns a missing piece
//! into a failure instead of a loud skip.

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

fn run_spa(args: &[&std::ffi::OsStr], shot: &str) {
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
    let png = std::fs::read(&shot_path).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "screenshot {}",
        shot_path.display()
    );
    eprintln!("browser test passed; screenshot at {}", shot_path.display());
}

#[test]
fn spa_replays_masked_relay_in_chromium() {
    let Some(c) = compat_dir() else { return };
    let dir = c.join("masked-relay");
    run_spa(&[dir.as_os_str()], "spa-masked-relay.png");
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
    );
}
