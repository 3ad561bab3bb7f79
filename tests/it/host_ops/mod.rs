//! Operating the host (issue 8), through the real binary: `serve` reports every trigger and
//! every drain (text lines and `--json` events), the CLI accepts global flags before
//! `devtools` and refuses state directories that are none, `inspect` shows what a render
//! produced, and every verb's `--json` document keeps its members in order.

mod cli;
mod inspect;
mod serve;
mod shapes;

use serde_json::Value;

use crate::support::{bin, compat_dir};

/// Exit code, stdout and stderr of the binary run in `cwd` (model keys and offline mode
/// scrubbed from the environment).
fn run_in(cwd: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    run_cmd(
        std::process::Command::new(bin())
            .args(args)
            .current_dir(cwd),
    )
}

fn run_cmd(cmd: &mut std::process::Command) -> (i32, String, String) {
    for v in [
        "OPENROUTER_API_KEY",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "REACTOR_OFFLINE",
        "REACTOR_STATE_DIR",
    ] {
        cmd.env_remove(v);
    }
    let out = cmd.output().expect("run reactor");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A copy of a compat state directory, or `None` (skipped loudly) without the corpus.
fn compat_copy(name: &str, to: &std::path::Path) -> Option<()> {
    let src = compat_dir()?.join(name);
    let st = std::process::Command::new("cp")
        .arg("-r")
        .arg(&src)
        .arg(to)
        .status()
        .unwrap();
    assert!(st.success());
    Some(())
}

/// A copy of the bundled `masked-relay` example (a ledger written by this project, world-model
/// store complete) at `<dir>/sd`.
fn example_copy(dir: &std::path::Path) -> std::path::PathBuf {
    let (code, _, stderr) = run_in(
        dir,
        &["devtools", "--example", "masked-relay", "--copy-to", "sd"],
    );
    assert_eq!(code, 0, "{stderr}");
    dir.join("sd")
}

/// The member names of a JSON object, in order.
fn keys_of(v: &Value) -> Vec<String> {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .cloned()
        .collect()
}

/// Runs the binary as an unprivileged user: directly when this process is not root, through
/// `setpriv` (uid/gid 65534) when it is; `None` (skipped loudly) when neither works.
fn unprivileged(args: &[&str], cwd: &std::path::Path) -> Option<(i32, String, String)> {
    let uid = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(str::to_string))
        })
        .unwrap_or_default();
    if uid != "0" {
        return Some(run_in(cwd, args));
    }
    let ok = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIPPED: running as root without setpriv; permission bits do not bind");
        return None;
    }
    Some(run_cmd(
        std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(bin())
            .args(args)
            .current_dir(cwd),
    ))
}

fn chmod(p: &std::path::Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The body of a GET, as text.
fn raw_get(url: &str) -> String {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    agent
        .get(url)
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap()
}
