//! The shipped artefact (README "Install"): the statically linked release binary, installed as
//! one file plus a `reactor-devtools` symlink and run with an empty environment (`env -i`) from
//! an empty directory — the viewer's `--describe` on a bundled example, and `serve` on loopback
//! against the loopback fake provider (compile at boot, a trigger that renders, the health route,
//! SIGTERM).
//!
//! `.ci/run` builds the binary (`cargo build --profile dist --target x86_64-unknown-linux-gnu`
//! with `-C target-feature=+crt-static`) and passes its path in `REACTOR_DIST_BIN`; without that
//! variable these tests skip loudly (any binary named there is tested, static or not).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use crate::host_serve::{Serve, compile_entries, http, quickstart, render_entries};
use crate::support::bin;
use crate::support::fake_provider::FakeProvider;

/// The binary under test, or `None` with a note when `REACTOR_DIST_BIN` is unset.
fn dist_bin() -> Option<PathBuf> {
    match std::env::var_os("REACTOR_DIST_BIN") {
        Some(p) => {
            let p = PathBuf::from(p);
            assert!(
                p.is_file(),
                "REACTOR_DIST_BIN={} is not a file",
                p.display()
            );
            Some(p)
        }
        None => {
            eprintln!(
                "SKIPPED: REACTOR_DIST_BIN is not set (bash .ci/run builds the static binary and sets it)"
            );
            None
        }
    }
}

/// Installs `bin` as `<root>/bin/reactor` plus the symlink `reactor-devtools -> reactor`, and
/// makes an empty working directory `<root>/empty`. Returns (bin dir, empty dir).
fn install(bin: &Path, root: &Path) -> (PathBuf, PathBuf) {
    let dir = root.join("bin");
    std::fs::create_dir(&dir).unwrap();
    std::fs::copy(bin, dir.join("reactor")).unwrap();
    std::os::unix::fs::symlink("reactor", dir.join("reactor-devtools")).unwrap();
    let empty = root.join("empty");
    std::fs::create_dir(&empty).unwrap();
    (dir, empty)
}

/// `program` with an empty environment (as `env -i`), run in `cwd`.
fn bare(program: &Path, cwd: &Path) -> Command {
    let mut c = Command::new(program);
    c.env_clear().current_dir(cwd);
    c
}

#[test]
fn installed_viewer_describes_an_example_with_an_empty_environment() {
    let Some(dist) = dist_bin() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let (bin_dir, empty) = install(&dist, root.path());
    for extra in [&[][..], &["--json"]] {
        let out = bare(&bin_dir.join("reactor-devtools"), &empty)
            .args(["--example", "masked-relay", "--describe"])
            .args(extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{extra:?}: {stderr}");
        assert!(stderr.is_empty(), "{extra:?}: {stderr}");
        // Byte-identical to the test build's output.
        let reference = Command::new(bin())
            .args(["devtools", "--example", "masked-relay", "--describe"])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(reference.status.code(), Some(0));
        assert!(!out.stdout.is_empty());
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&reference.stdout),
            "{extra:?}"
        );
    }
    // Nothing was written into the working directory.
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
}

#[test]
fn installed_host_serves_on_loopback_with_an_empty_environment() {
    let Some(dist) = dist_bin() else {
        return;
    };
    let Some(contracts) = quickstart() else {
        return;
    };
    let fake = FakeProvider::start();
    for e in compile_entries(json!({"postconditions": []})) {
        fake.push(e);
    }
    for e in render_entries(json!([{"id": "item-1", "body": "hello"}]), "1 item") {
        fake.push(e);
    }
    let root = tempfile::tempdir().unwrap();
    let (bin_dir, empty) = install(&dist, root.path());
    // The project: the quickstart contracts, a reactor.yml naming the fake by IP, the key in
    // `.env` (the environment is empty).
    let proj = root.path().join("proj");
    std::fs::create_dir(&proj).unwrap();
    for f in ["inbox.prose.md", "digest.prose.md"] {
        std::fs::copy(contracts.join(f), proj.join(f)).unwrap();
    }
    std::fs::write(
        proj.join("reactor.yml"),
        format!(
            "model:\n  provider: openrouter\n  base_url: {}\n  api_key_env: FAKE_KEY\n  render_model: render-model\n  compile_model: compile-model\n",
            fake.base_url()
        ),
    )
    .unwrap();
    std::fs::write(proj.join(".env"), "FAKE_KEY=sk-test-dist\n").unwrap();

    let mut c = bare(&bin_dir.join("reactor"), &empty);
    c.arg("--project")
        .arg(&proj)
        .args(["serve", "--http", "0", "--poll-interval", "600000"]);
    let mut serve = Serve::spawn(c, true);
    let base = serve.base.clone().unwrap();
    assert!(base.starts_with("http://127.0.0.1:"), "{base}");
    let (status, v) = http("GET", &format!("{base}/health"), None);
    assert_eq!(status, 200);
    assert_eq!(v, json!({"ok": true, "reactors": 1, "reactor": "default"}));
    // A trigger renders through the provider client of the installed binary.
    let (status, v) = http(
        "POST",
        &format!("{base}/trigger/inbox"),
        Some(r#"{"id":"item-1","body":"hello"}"#),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["receiptsAdded"], json!(3), "{v}");
    assert_eq!(v["dataDelivered"], json!(true), "{v}");
    assert_eq!(serve.sigterm_and_wait(), 0, "{:?}", serve.seen);
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
    // Five compile sessions at boot, two render turns per node.
    let requests = fake.requests();
    assert_eq!(requests.len(), 9);
    assert!(
        requests
            .iter()
            .all(|r| r.header("authorization") == Some("Bearer sk-test-dist")),
        "the key from .env reached every request"
    );
    fake.finish();
}
