//! The SPA in headless Chromium (VIEWER.md §8, issue 9): `tests/browser/spa.mjs` drives Debian's
//! chromium through playwright-core against a real viewer process. Needs `node`, the npm
//! packages of `tests/browser` (`npm ci`) and `/usr/bin/chromium` (or `CHROMIUM_PATH`);
//! `.ci/run` installs them and sets `REACTOR_REQUIRE_BROWSER=1`, which turns a missing piece
//! into a failure instead of a loud skip.
//!
//! Runs: a real ledger (masked-relay from the compatibility corpus) also in the light theme and at
//! 760 px; a bundled example (the synthetic-sample banner); a generated 400-node, 12,000-receipt
//! ledger (minimap, level-of-detail labels, zoom depth, virtualized timeline, the small layout at
//! scale); a generated 100,000-receipt ledger opened with lazy frames (`lazy.mjs`); and
//! `--export` reports of masked-relay, intact and tampered, opened from `file://`
//! (`export.mjs`). Screenshots land in `target/tmp/` (the paths are printed).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::support::{bin, compat_dir};

fn browser_ready() -> Option<PathBuf> {
    browser_script("spa.mjs")
}

/// `tests/browser/<name>` when node, the npm packages and chromium are present (else a loud skip,
/// or a failure under `REACTOR_REQUIRE_BROWSER=1`).
fn browser_script(name: &str) -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let script = root.join("tests/browser").join(name);
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
    run_script("spa.mjs", args, shot, flags);
}

fn run_script(name: &str, args: &[&std::ffi::OsStr], shot: &str, flags: &[&str]) {
    let Some(script) = browser_script(name) else {
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
        "{name} failed:\n{stdout}\n{stderr}"
    );
    eprintln!("{stdout}");
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

/// A generated ledger of 100,000 receipts under `target/tmp`, written once and reused by later
/// runs (a `.complete` marker names the spec).
fn generated_100k() -> PathBuf {
    use reactor::devtools::synthetic::{SyntheticSpec, write_synthetic_state_dir};
    let spec = SyntheticSpec {
        nodes: 200,
        receipts: 100_000,
        seed: 7,
    };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lazy-100k");
    let marker = dir.join(".complete");
    let want = format!("{} {} {}", spec.nodes, spec.receipts, spec.seed);
    if std::fs::read_to_string(&marker).ok().as_deref() == Some(want.as_str()) {
        return dir;
    }
    let _ = std::fs::remove_dir_all(&dir);
    let out = write_synthetic_state_dir(&dir, &spec).unwrap();
    assert_eq!(out.receipts, 100_000);
    std::fs::write(&marker, want).unwrap();
    dir
}

#[test]
fn spa_loads_a_generated_100k_ledger_lazily_in_chromium() {
    if browser_script("lazy.mjs").is_none() {
        return;
    }
    let dir = generated_100k();
    run_script("lazy.mjs", &[dir.as_os_str()], "spa-lazy-100k.png", &[]);
}

/// Writes `reactor devtools <dir> --export <file>`; → (exit code, stdout).
fn export(dir: &Path, file: &Path) -> (i32, String) {
    let out = Command::new(bin())
        .arg("devtools")
        .arg(dir)
        .arg("--export")
        .arg(file)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn open_report(file: &Path, verdict: &str, shot: &str) {
    let Some(script) = browser_script("export.mjs") else {
        return;
    };
    let shot_path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(shot);
    let result = Command::new("node")
        .arg(&script)
        .arg("--file")
        .arg(file)
        .args(["--verdict", verdict, "--screenshot"])
        .arg(&shot_path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&result.stdout);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(
        result.status.success(),
        "export.mjs failed:\n{stdout}\n{stderr}"
    );
    let png = std::fs::read(&shot_path).unwrap_or_default();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{}",
        shot_path.display()
    );
    eprintln!(
        "{stdout}browser test passed; screenshot at {}",
        shot_path.display()
    );
}

#[test]
fn exported_reports_open_from_file_urls_in_chromium() {
    let Some(c) = compat_dir() else { return };
    if browser_script("export.mjs").is_none() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let ok_file = d.path().join("masked-relay.html");
    let (code, out) = export(&c.join("masked-relay"), &ok_file);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.ends_with("(12 nodes · 23 edges · 77 receipts · chain ✓ verified)\n"),
        "{out}"
    );
    open_report(&ok_file, "verified", "export-masked-relay.png");

    // A copy whose receipt 20 has a changed cost, not re-stamped: the chain fails.
    let tampered = d.path().join("tampered");
    std::fs::create_dir_all(tampered.join("compile")).unwrap();
    std::fs::copy(
        c.join("masked-relay/compile/topology.json"),
        tampered.join("compile/topology.json"),
    )
    .unwrap();
    let text = std::fs::read_to_string(c.join("masked-relay/receipts.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v[20]["cost"]["tokens"]["reused"] = serde_json::json!(999_999);
    std::fs::write(tampered.join("receipts.json"), v.to_string()).unwrap();
    let bad_file = d.path().join("tampered.html");
    let (code, out) = export(&tampered, &bad_file);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.ends_with("77 receipts · chain ✗ TAMPERED)\nCHAIN-VERIFY FAILED — the export carries the tamper verdict.\n"),
        "{out}"
    );
    open_report(&bad_file, "tampered", "export-tampered.png");
}
