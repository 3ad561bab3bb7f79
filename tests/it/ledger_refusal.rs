//! ISSUE 7 §3: writers never damage or extend a bad ledger. `run`, `trigger`, `serve` and a
//! writing `compile` refuse a `receipts.json` whose receipts fail verification (hash, chain,
//! shape), that is corrupt or blank: exit 1, the state-dir path, the first bad index and the
//! FORMATS.md §11.4 hint, the file left byte-identical, no model call. `serve.json` is removed
//! on every exit the daemon controls, the second-signal exit included.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use crate::host_serve::{
    Serve, cmd, compiled_project, render_entries, wait_for_purpose, write_truth,
};
use crate::support::fake_provider::FakeProvider;
use reactor::format::json::Value;
use reactor::store::ledger::{committed_bytes, read_ledger};

const HINT: &str = "hint: restore the file from a backup or move it aside\n";

/// Every file of the state dir except the lock, with its bytes.
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n != ".lock") {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Runs every writer over the current ledger and checks each one refuses it the same way,
/// leaving every file of the state dir as it was and calling no model.
fn every_writer_refuses(proj: &Path, fake: &FakeProvider, needle: &str) {
    let state = proj.join(".reactor");
    let before = files(&state);
    let requests = fake.request_count();
    let prefix = format!("reactor: error: {}: ", state.display());
    for args in [
        vec!["run"],
        vec!["trigger", "digest"],
        vec!["trigger", "inbox", "--data", r#"{"id":"new"}"#],
        vec!["serve"],
        vec!["serve", "--http", "0"],
        vec!["compile", "--force"],
    ] {
        let out = cmd(proj).args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.starts_with(&prefix) && stderr.contains(needle) && stderr.ends_with(HINT),
            "{args:?}: {stderr}"
        );
        assert_eq!(files(&state), before, "{args:?} changed the state dir");
        assert!(!state.join("serve.json").exists());
    }
    // The refusal named no model call, and the lock is free again.
    assert_eq!(fake.request_count(), requests);
    assert!(!reactor::store::lock::is_held(&state));
    // Readers still read the file (they report chain problems, not refuse the file).
    let out = cmd(proj).args(["logs"]).output().unwrap();
    if needle.contains("fails verification") {
        assert_eq!(out.status.code(), Some(0));
    }
}

fn ledger_values(state: &Path) -> Vec<Value> {
    read_ledger(&std::fs::read(state.join("receipts.json")).unwrap())
        .unwrap()
        .receipts
}

#[test]
fn writers_refuse_a_ledger_that_fails_verification() {
    let fake = FakeProvider::start();
    let Some(proj) = compiled_project(&fake) else {
        return;
    };
    for k in 1..=2 {
        for e in render_entries(json!([{ "id": format!("i{k}") }]), &format!("{k} items")) {
            fake.push(e);
        }
        let out = cmd(proj.path())
            .args(["trigger", "inbox", "--data", &format!(r#"{{"id":"i{k}"}}"#)])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let state = proj.path().join(".reactor");
    let good = std::fs::read(state.join("receipts.json")).unwrap();
    let vals = ledger_values(&state);
    let nodes: Vec<&str> = vals
        .iter()
        .map(|v| v.get("node").and_then(Value::as_str).unwrap())
        .collect();
    assert_eq!(
        nodes,
        [
            "inbox::ingress",
            "inbox",
            "digest",
            "inbox::ingress",
            "inbox",
            "digest"
        ]
    );

    // Hash: a value edited in place, the stored content_hash left stale: the second ingress
    // receipt's token (index 3; the inbox's input slot that repeats it comes later).
    let text = String::from_utf8(good.clone()).unwrap();
    let at = text.find("\"inbox:2\"").unwrap();
    assert!(at > text.find("\"inbox:1\"").unwrap());
    std::fs::write(
        state.join("receipts.json"),
        text.replacen("\"inbox:2\"", "\"inbox:7\"", 1),
    )
    .unwrap();
    every_writer_refuses(
        proj.path(),
        &fake,
        "receipts.json[3] fails verification: content_hash does not match canonical receipt payload",
    );

    // Chain: the inbox's first receipt removed (its second one, now index 3, links to it).
    let mut cut = vals.clone();
    cut.remove(1);
    std::fs::write(state.join("receipts.json"), committed_bytes(&cut).unwrap()).unwrap();
    every_writer_refuses(
        proj.path(),
        &fake,
        "receipts.json[3] fails verification: prev must be null (cold start) to chain the ledger of node \"inbox\"",
    );

    // Shape: an unknown member (index 2).
    let mut extra = vals.clone();
    if let Value::Object(o) = &mut extra[2] {
        o.insert("verdict", Value::str("ok"));
    }
    std::fs::write(
        state.join("receipts.json"),
        committed_bytes(&extra).unwrap(),
    )
    .unwrap();
    every_writer_refuses(
        proj.path(),
        &fake,
        "receipts.json[2] fails verification: receipt.verdict is not pinned in the receipt shape",
    );

    // Restored from the "backup": writers work again.
    std::fs::write(state.join("receipts.json"), &good).unwrap();
    let out = cmd(proj.path()).args(["run"]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    fake.finish();
}

#[test]
fn writers_refuse_blank_and_corrupt_ledgers_untouched() {
    let fake = FakeProvider::start();
    let Some(proj) = compiled_project(&fake) else {
        return;
    };
    let out = cmd(proj.path()).args(["compile"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let state = proj.path().join(".reactor");
    for (bytes, needle) in [
        (
            &b"  \n"[..],
            "receipts.json must contain a JSON array (it holds 3 byte(s) of whitespace or NUL only)",
        ),
        (
            b"\0\0\0\0\0\0\0\0",
            "receipts.json must contain a JSON array (it holds 8 byte(s) of whitespace or NUL only)",
        ),
        (b"{}\n", "receipts.json must contain a JSON array"),
        (
            b"[]\n[]\n",
            "receipts.json is corrupt at byte 3: unexpected data after the closing ]",
        ),
    ] {
        std::fs::write(state.join("receipts.json"), bytes).unwrap();
        every_writer_refuses(proj.path(), &fake, needle);
        assert_eq!(std::fs::read(state.join("receipts.json")).unwrap(), bytes);
        // Readers refuse it the same way, with the same hint.
        let out = cmd(proj.path()).args(["status"]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains(needle) && stderr.ends_with(HINT),
            "{stderr}"
        );
    }
    // A zero-length file is the empty ledger: `run` normalizes it and goes on.
    std::fs::write(state.join("receipts.json"), b"").unwrap();
    let out = cmd(proj.path()).args(["run"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("normalized") && stderr.contains("(0 receipts)"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(state.join("receipts.json")).unwrap(), b"[]\n");
    fake.finish();
}

/// A second SIGTERM during the drain exits 1 at once; `serve.json` does not outlive it.
#[test]
fn serve_json_is_removed_on_a_second_signal() {
    let fake = FakeProvider::start();
    let Some(proj) = compiled_project(&fake) else {
        return;
    };
    // The inbox render hangs long enough for two signals.
    fake.push(
        write_truth(json!({"items": [{"id": "s"}]}))
            .when_purpose("render:inbox")
            .delayed(Duration::from_secs(20)),
    );
    let mut serve = Serve::start(proj.path(), true);
    let state = proj.path().join(".reactor");
    assert!(state.join("serve.json").exists());
    let url = format!("{}/trigger/inbox", serve.base.clone().unwrap());
    // The daemon dies under this request: its error is expected and ignored.
    std::thread::spawn(move || {
        let _ = ureq::post(&url).send(r#"{"id":"s"}"#);
    });
    wait_for_purpose(&fake, "render:inbox");
    let pid = serve.child.id().to_string();
    let kill = || {
        let st = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        assert!(st.success());
    };
    kill();
    // The first signal starts the drain: no new tick, the render still in flight.
    std::thread::sleep(Duration::from_millis(300));
    assert!(serve.child.try_wait().unwrap().is_none());
    kill();
    let code = serve.wait_exit();
    assert_eq!(code, 1);
    assert!(
        serve
            .seen
            .iter()
            .any(|l| l == "reactor serve — second signal: abandoning in-flight work."),
        "{:?}",
        serve.seen
    );
    assert!(
        !state.join("serve.json").exists(),
        "serve.json outlived the forced exit"
    );
    // The abandoned render wrote no receipt (issue 10): only the ingress receipt is there.
    let ledger = std::fs::read_to_string(state.join("receipts.json")).unwrap();
    assert!(ledger.contains(r#""node":"inbox::ingress""#), "{ledger}");
    assert!(!ledger.contains(r#""node":"inbox""#), "{ledger}");
    // Nothing committed was damaged: the ingress receipt verifies, writers can open.
    let out = cmd(proj.path())
        .args(["receipts", "verify"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    fake.finish();
}
