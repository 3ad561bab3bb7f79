//! Damage is caught: tampered receipts, corrupted version files, torn tails, corrupt ledgers and
//! topologies, empty and missing state directories.

use super::*;

#[test]
fn a_tampered_receipt_is_caught() {
    let f = fixture();
    let path = f.state.join("receipts.json");
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.matches("\"fresh\":2210").count(), 1);
    std::fs::write(&path, text.replace("\"fresh\":2210", "\"fresh\":22")).unwrap();

    let o = f.run(&["receipts", "verify"]);
    assert_eq!(o.code, 1, "{}", o.stdout);
    assert!(
        o.stdout.contains("\n  chain          BROKEN\n"),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains("\n    inbox                        BROKEN (1 receipts, fresh=22 reused=0)\n      ! chain[0] is not a valid receipt: content_hash does not match canonical receipt payload\n"), "{}", o.stdout);
    let v = f.run(&["receipts", "verify", "--json"]).json();
    assert_eq!(v["ok"], false);
    assert_eq!(v["nodes"][1]["ok"], false);
    assert_eq!(v["nodes"][1]["head"], serde_json::Value::Null);
    assert_eq!(v["nodes"][0]["ok"], true);

    let o = f.run(&["inspect", "inbox", "--strict"]);
    assert_eq!(o.code, 1);
    assert!(
        o.stdout
            .contains("\n  chain          BROKEN\n    ! chain[0] is not a valid receipt"),
        "{}",
        o.stdout
    );
    assert_eq!(f.run(&["inspect", "inbox"]).code, 0);
    assert_eq!(f.run(&["inspect", "digest", "--strict"]).code, 0);

    let o = f.run(&["trace"]);
    assert_eq!(o.code, 0);
    assert!(o.stdout.contains("  inbox  (chain BROKEN)\n    #0 rendered wake=external cause=external fresh=22 reused=0\n    ! chain[0] is not a valid receipt: content_hash does not match canonical receipt payload\n"), "{}", o.stdout);

    // A receipt whose node was rewritten breaks both chains it touches.
    std::fs::write(
        &path,
        text.replacen("\"node\":\"digest\"", "\"node\":\"inbox\"", 1),
    )
    .unwrap();
    let v = f.run(&["receipts", "verify", "--json"]).json();
    assert_eq!(v["ok"], false);
}

#[test]
fn a_corrupted_version_file_is_caught() {
    let f = fixture();
    let p = f.version_path("digest");
    let mut bytes = std::fs::read(&p).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x20;
    std::fs::write(&p, &bytes).unwrap();
    let o = f.run(&["receipts", "verify"]);
    assert_eq!(o.code, 1);
    assert!(
        o.stdout.contains(
            "\n  chain          ALL OK\n  world-models   BROKEN\n    ! digest: versions/sha256_"
        ),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains(".bin hashes to sha256:"), "{}", o.stdout);
    assert!(
        o.stdout
            .contains("    ! digest: published.json points to sha256:"),
        "{}",
        o.stdout
    );
    let v = f.run(&["receipts", "verify", "--json"]).json();
    assert_eq!(v["worldModels"]["ok"], false);
    assert_eq!(v["worldModels"]["errors"].as_array().unwrap().len(), 2);
    // Not OPWM1 at all.
    std::fs::write(&p, b"garbage").unwrap();
    let o = f.run(&["receipts", "verify"]);
    assert!(
        o.stdout
            .contains("does not decode as OPWM1: not an OPWM1 artifact (bad magic)"),
        "{}",
        o.stdout
    );
    let o = f.run(&["inspect", "digest"]);
    assert!(
        o.stdout
            .contains("(unreadable: not an OPWM1 artifact (bad magic))"),
        "{}",
        o.stdout
    );
    // A missing version file.
    std::fs::remove_file(&p).unwrap();
    let o = f.run(&["receipts", "verify"]);
    assert_eq!(o.code, 1);
    assert!(
        o.stdout.contains("(a version file that is missing)"),
        "{}",
        o.stdout
    );
    assert!(
        f.run(&["inspect", "digest"])
            .stdout
            .contains("(version file missing)")
    );
}

#[test]
fn a_torn_tail_is_a_note_and_is_not_repaired() {
    let f = fixture();
    let path = f.state.join("receipts.json");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.truncate(bytes.len() - 2);
    bytes.extend_from_slice(b",{\"content_hash\":\"sha256:");
    std::fs::write(&path, &bytes).unwrap();
    for args in [
        &["status"][..],
        &["logs"],
        &["receipts", "verify"],
        &["trace"],
        &["receipts", "cost"],
    ] {
        let o = f.run(args);
        assert_eq!(o.code, 0, "{args:?}: {}", o.stderr);
        assert!(
            o.stderr.starts_with("reactor: note: "),
            "{args:?}: {}",
            o.stderr
        );
        assert!(o.stderr.contains("ends with an incomplete receipt (a write in progress or an interrupted append); using the 5 complete receipt(s)"), "{}", o.stderr);
        assert_eq!(
            std::fs::read(&path).unwrap(),
            bytes,
            "{args:?} repaired the file"
        );
    }
    let v = f.run(&["status", "--json"]).json();
    assert_eq!(v["run"]["receipts"], 5);
}

#[test]
fn corrupt_ledgers_and_topologies_are_errors() {
    let f = fixture();
    std::fs::write(f.state.join("receipts.json"), b"[{}]garbage").unwrap();
    let o = f.run(&["logs"]);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr.contains("receipts.json is corrupt at byte 4"),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr
            .contains("hint: restore the file from a backup or move it aside")
    );
    std::fs::write(f.state.join("receipts.json"), b"[]\n").unwrap();
    std::fs::write(f.state.join("compile/topology.json"), b"{nope").unwrap();
    let o = f.run(&["topology"]);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr.contains("compile/topology.json is not valid JSON"),
        "{}",
        o.stderr
    );
    // status still reports (exit 0) and names the problem.
    let o = f.run(&["status"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.contains("  topology       2 nodes, 1 edges (at "),
        "{}",
        o.stdout
    );
    std::fs::remove_file(f.state.join("compile/manifest.json")).unwrap();
    let o = f.run(&["status"]);
    assert!(
        o.stdout
            .contains("  compiled       no\n  topology       unreadable: "),
        "{}",
        o.stdout
    );
    std::fs::remove_file(f.state.join("compile/topology.json")).unwrap();
    let o = f.run(&["topology"]);
    assert_eq!(o.code, 1);
    assert_eq!(
        o.stderr,
        "reactor: error: no compiled IR — run `reactor compile` first\n"
    );
}

#[test]
fn empty_and_missing_state_dirs() {
    // A project that has not run yet (the default state dir absent), and one whose configured
    // state dir is an empty directory: the offline verbs read an empty ledger (HOST.md §8.7).
    let d = tempfile::tempdir().unwrap();
    let fresh = d.path().join("fresh");
    let configured = d.path().join("configured");
    std::fs::create_dir_all(&fresh).unwrap();
    std::fs::create_dir_all(configured.join("empty")).unwrap();
    std::fs::write(configured.join("reactor.yml"), "state:\n  dir: empty\n").unwrap();
    for (proj, sd) in [
        (&fresh, fresh.join(".reactor")),
        (&configured, configured.join("empty")),
    ] {
        let s = sd.to_str().unwrap();
        let o = reactor_in(proj, &["status"]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        assert_eq!(
            o.stdout,
            format!(
                "reactor status\n\n  state dir      {s}\n  compiled       no\n  topology       (none)\n  writer         none\n\n  receipts       0\n  run cost       fresh=0 reused=0\n  dispositions   rendered=0 skipped=0 failed=0\n"
            )
        );
        let v = reactor_in(proj, &["status", "--json"]).json();
        assert_eq!(v["freshness"], "absent");
        assert_eq!(v["compiled"], false);
        assert_eq!(v["run"]["receipts"], 0);
        let o = reactor_in(proj, &["receipts", "verify"]);
        assert_eq!(o.code, 1);
        assert_eq!(
            o.stdout,
            "reactor receipts verify\n\n  no receipts found in this state dir — nothing to verify\n"
        );
        let v = reactor_in(proj, &["receipts", "verify", "--json"]).json();
        assert_eq!(
            (v["ok"].clone(), v["empty"].clone()),
            (serde_json::json!(false), serde_json::json!(true))
        );
        let o = reactor_in(proj, &["logs"]);
        assert_eq!(o.stdout, "reactor logs\n\n  (no receipts)\n");
        let o = reactor_in(proj, &["trace"]);
        assert_eq!(o.stdout, "reactor trace\n\n  (no receipts)\n");
        let o = reactor_in(proj, &["receipts", "cost"]);
        assert_eq!(o.code, 0);
        assert_eq!(
            o.stdout,
            "reactor receipts cost\n\n  receipts       0\n  run cost       fresh=0 reused=0\n  dispositions   rendered=0 skipped=0 failed=0\n"
        );
        let o = reactor_in(proj, &["topology"]);
        assert_eq!(o.code, 1);
        let o = reactor_in(proj, &["inspect", "x"]);
        assert_eq!(o.code, 1);
        assert_eq!(
            o.stderr,
            "reactor: error: unknown node 'x'\nhint: this state dir has no compiled topology; run `reactor compile` first\n"
        );
    }
    assert!(
        !fresh.join(".reactor").exists(),
        "a reader created the state dir"
    );
    let empty = configured.join("empty");
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
    // A zero-length ledger is an empty ledger with a note.
    std::fs::write(empty.join("receipts.json"), b"").unwrap();
    let o = reactor_in(d.path(), &["logs", "--state-dir", empty.to_str().unwrap()]);
    assert_eq!(o.code, 0);
    assert!(o.stderr.contains("is empty (0 bytes)"), "{}", o.stderr);
}
