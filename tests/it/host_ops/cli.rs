//! The command line (issue 8 item 8): global flags before `devtools`, `help devtools`, the
//! overview's `Usage:` line, state directories that are none, and permission errors.

use serde_json::{Value, json};

use super::{chmod, compat_copy, example_copy, run_in, unprivileged};

#[test]
fn global_flags_before_devtools_and_help_devtools() {
    let d = tempfile::tempdir().unwrap();
    // --json before the verb shapes --describe as it does after it.
    let after = run_in(
        d.path(),
        &[
            "devtools",
            "--example",
            "masked-relay",
            "--describe",
            "--json",
        ],
    );
    let before = run_in(
        d.path(),
        &[
            "--json",
            "devtools",
            "--example",
            "masked-relay",
            "--describe",
        ],
    );
    assert_eq!(after.0, 0, "{}", after.2);
    assert_eq!(before, after);
    let v: Value = serde_json::from_str(&before.1).unwrap();
    assert_eq!(v["tool"], json!("reactor-devtools"));
    // --project (and --state-dir) before the verb open the project's state directory.
    let proj = d.path().join("proj");
    std::fs::create_dir(&proj).unwrap();
    if compat_copy("masked-relay", &proj.join("ledger")).is_none() {
        return;
    }
    std::fs::write(proj.join("reactor.yml"), "state:\n  dir: ledger\n").unwrap();
    let direct = run_in(d.path(), &["devtools", "proj/ledger", "--describe"]);
    assert_eq!(direct.0, 0, "{}", direct.2);
    let via_project = run_in(&proj, &["--project", ".", "devtools", "--describe"]);
    let via_state_dir = run_in(
        d.path(),
        &[
            "--project",
            "proj",
            "--state-dir",
            "ledger",
            "devtools",
            "--describe",
        ],
    );
    let abs = proj.join("ledger");
    let normalize = |t: &str| t.replace(abs.to_str().unwrap(), "proj/ledger");
    for got in [&via_project, &via_state_dir] {
        assert_eq!(got.0, 0, "{}", got.2);
        assert_eq!(normalize(&got.1), direct.1);
    }
    // A positional state dir wins over the project's.
    let positional = run_in(
        d.path(),
        &["--project", "proj", "devtools", "proj/ledger", "--describe"],
    );
    assert_eq!(positional, direct);
    // `reactor help devtools` is the viewer's usage; the overview starts with `Usage: reactor`.
    let help = run_in(d.path(), &["help", "devtools"]);
    let own = run_in(d.path(), &["devtools", "--help"]);
    assert_eq!(help.0, 0);
    assert_eq!(help.1, own.1);
    assert!(help.1.contains("reactor-devtools <state-dir>"));
    let overview = run_in(d.path(), &["--help"]);
    assert_eq!(overview.0, 0);
    assert!(
        overview
            .1
            .starts_with("Usage: reactor [global flags] <verb> [verb flags] [arguments]\n"),
        "{}",
        overview.1
    );
    assert!(overview.1.contains("  devtools [<dir>]"));
}

#[test]
fn offline_verbs_refuse_a_state_dir_that_is_none() {
    let d = tempfile::tempdir().unwrap();
    let missing = d.path().join("typo");
    let empty = d.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    std::fs::write(empty.join("notes.txt"), "not a ledger").unwrap();
    let verbs: [&[&str]; 8] = [
        &["status"],
        &["topology"],
        &["inspect", "x"],
        &["logs"],
        &["trace"],
        &["receipts", "list"],
        &["receipts", "verify"],
        &["receipts", "cost"],
    ];
    for verb in verbs {
        for (dir, expected) in [
            (
                &missing,
                format!(
                    "reactor: error: state dir {} does not exist\n",
                    missing.display()
                ),
            ),
            (
                &empty,
                format!(
                    "reactor: error: {} is not a reactor state dir (no receipts.json, compile/ or world-models/ inside)\n",
                    empty.display()
                ),
            ),
        ] {
            let mut args = verb.to_vec();
            args.extend(["--state-dir", dir.to_str().unwrap()]);
            let (code, stdout, stderr) = run_in(d.path(), &args);
            assert_eq!(code, 1, "{args:?}: {stderr}");
            assert!(stdout.is_empty(), "{args:?}: {stdout}");
            assert!(stderr.starts_with(&expected), "{args:?}: {stderr}");
            assert!(stderr.contains("\nhint: "), "{args:?}: {stderr}");
            args.push("--json");
            let (code, stdout, _) = run_in(d.path(), &args);
            assert_eq!(code, 1);
            let v: Value = serde_json::from_str(&stdout).unwrap();
            assert_eq!(v["ok"], json!(false));
            assert!(
                v["message"]
                    .as_str()
                    .unwrap()
                    .contains(dir.to_str().unwrap())
            );
        }
    }
    assert!(!missing.exists(), "a reader created the state dir");
    // A relative --state-dir resolves against the project directory, and a real one reads.
    let proj = d.path().join("proj");
    std::fs::create_dir(&proj).unwrap();
    if compat_copy("masked-relay", &proj.join("ledger")).is_none() {
        return;
    }
    let (code, stdout, stderr) = run_in(
        d.path(),
        &["--project", "proj", "--state-dir", "ledger", "logs"],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with("reactor logs\n\n  "), "{stdout}");
}

#[test]
fn unreadable_parts_of_a_state_dir_are_permission_errors() {
    let d = tempfile::tempdir().unwrap();
    chmod(d.path(), 0o755);
    // A bundled example ledger whose world-model store verifies.
    let sd = example_copy(d.path());
    let s = sd.to_str().unwrap();
    let (code, stdout, _) = run_in(d.path(), &["receipts", "verify", "--state-dir", s]);
    assert_eq!(code, 0, "{stdout}");
    assert!(
        stdout.contains("  world-models   ok (39 versions)\n"),
        "{stdout}"
    );
    // An unreadable world-models/ makes `receipts verify` fail, not "ok (0 versions)".
    let wm = sd.join("world-models");
    chmod(&wm, 0o000);
    let Some((code, stdout, _)) = unprivileged(&["receipts", "verify", "--state-dir", s], d.path())
    else {
        chmod(&wm, 0o755);
        return;
    };
    let json = unprivileged(
        &["receipts", "verify", "--state-dir", s, "--json"],
        d.path(),
    );
    chmod(&wm, 0o755);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("  world-models   BROKEN\n"), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "    ! {} cannot be listed: Permission denied",
            wm.display()
        )),
        "{stdout}"
    );
    let v: Value = serde_json::from_str(&json.unwrap().1).unwrap();
    assert_eq!(v["ok"], json!(false));
    assert_eq!(v["worldModels"]["ok"], json!(false));
    // An unreadable state dir, ledger or compile cache is called a permission error.
    chmod(&sd, 0o000);
    let listed = unprivileged(&["logs", "--state-dir", s], d.path()).unwrap();
    chmod(&sd, 0o755);
    assert_eq!(listed.0, 1);
    assert!(
        listed
            .2
            .starts_with(&format!("reactor: error: permission denied: cannot list state dir {s}\nhint: check the owner and mode of {s} (reactor runs as uid ")),
        "{}",
        listed.2
    );
    let ledger = sd.join("receipts.json");
    chmod(&ledger, 0o000);
    let read = unprivileged(&["logs", "--state-dir", s], d.path()).unwrap();
    chmod(&ledger, 0o644);
    assert!(
        read.2.starts_with(&format!(
            "reactor: error: permission denied: cannot read {}\n",
            ledger.display()
        )),
        "{}",
        read.2
    );
    let compile = sd.join("compile");
    chmod(&compile, 0o000);
    let status = unprivileged(&["status", "--state-dir", s], d.path()).unwrap();
    let topology = unprivileged(&["topology", "--state-dir", s], d.path()).unwrap();
    chmod(&compile, 0o755);
    assert_eq!(status.0, 0, "{}", status.2);
    assert!(
        status.1.contains(&format!(
            "  compiled       yes (freshness unknown: permission denied: cannot read {}/manifest.json)\n",
            compile.display()
        )),
        "{}",
        status.1
    );
    assert!(
        topology.2.starts_with(&format!(
            "reactor: error: permission denied: cannot read {}/topology.json\n",
            compile.display()
        )),
        "{}",
        topology.2
    );
}
