//! Help, version and usage errors.

use super::*;

// ---------------------------------------------------------------------------------------------
// Help, version, usage errors
// ---------------------------------------------------------------------------------------------

#[test]
fn help_and_version_exit_0() {
    for args in [&["--help"][..], &["-h"], &["help"], &["--json", "-h"]] {
        let o = reactor(args);
        assert_eq!(o.code, 0, "{args:?}");
        assert!(
            o.stdout.starts_with("Usage: reactor [global flags] <verb>"),
            "{args:?}: {}",
            o.stdout
        );
        assert!(o.stdout.contains("receipts [list|verify|cost]"));
    }
    for args in [
        &["help", "logs"][..],
        &["logs", "--help"],
        &["logs", "-h"],
        &["inspect", "--help"],
        &["--project", "/nonexistent", "logs", "--help"],
    ] {
        let o = reactor(args);
        assert_eq!(o.code, 0, "{args:?}: {}", o.stderr);
        assert!(o.stdout.starts_with("reactor "), "{args:?}");
        assert!(o.stdout.contains("Usage:"), "{args:?}");
    }
    let o = reactor(&["help", "receipts"]);
    assert!(o.stdout.contains("reactor receipts verify"));
    for args in [
        &["-V"][..],
        &["-v"],
        &["--version"],
        &["status", "-V"],
        &["inspect", "--version"],
    ] {
        let o = reactor(args);
        assert_eq!(
            (o.code, o.stdout.as_str()),
            (0, "reactor 0.2.0\n"),
            "{args:?}"
        );
    }
}

/// `--parallel-renders` on every writer verb (issue 10): 1–64, anything else a usage error.
#[test]
fn parallel_renders_flag_is_validated_on_run_trigger_and_serve() {
    let d = tempfile::tempdir().unwrap();
    let verbs: [&[&str]; 3] = [&["run"], &["trigger", "inbox"], &["serve"]];
    for verb in verbs {
        let name = verb[0];
        for bad in [
            "0",
            "65",
            "-1",
            "four",
            "1.5",
            "+3",
            "",
            "99999999999999999999999",
        ] {
            let mut args = verb.to_vec();
            args.push("--parallel-renders");
            args.push(bad);
            let o = reactor_in(d.path(), &args);
            assert_eq!(o.code, 2, "{args:?}: {}", o.stderr);
            assert!(
                o.stderr.starts_with(&format!(
                    "reactor: error: --parallel-renders: '{bad}' is not an integer from 1 to 64\n"
                )),
                "{args:?}: {}",
                o.stderr
            );
            assert!(
                o.stderr
                    .contains(&format!("hint: try 'reactor {name} --help'\n")),
                "{}",
                o.stderr
            );
        }
        let o = reactor_in(d.path(), &[name, "--help"]);
        assert!(o.stdout.contains("--parallel-renders <n>"), "{}", o.stdout);
    }
    let o = reactor_in(d.path(), &["run", "--parallel-renders"]);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr
            .starts_with("reactor: error: --parallel-renders needs a value\n"),
        "{}",
        o.stderr
    );
}

#[test]
fn usage_errors_exit_2_with_a_hint() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("afile"), "x").unwrap();
    let cases: &[(&[&str], &str, &str)] = &[
        (
            &["bogus"],
            "reactor: error: unknown verb 'bogus'\n",
            "try 'reactor --help'",
        ),
        (
            &[],
            "reactor: error: no verb given\n",
            "try 'reactor --help'",
        ),
        (
            &["--bogus", "status"],
            "reactor: error: unknown flag '--bogus'\n",
            "try 'reactor --help'",
        ),
        (
            &["logs", "--bogus"],
            "reactor: error: unknown flag '--bogus' for 'logs'\n",
            "try 'reactor logs --help'",
        ),
        (
            &["logs", "--bogus=1"],
            "reactor: error: unknown flag '--bogus' for 'logs'\n",
            "try 'reactor logs --help'",
        ),
        (
            &["receipts", "verifyy"],
            "reactor: error: unknown subcommand 'verifyy' for 'receipts' (expected list, verify or cost)\n",
            "try 'reactor receipts --help'",
        ),
        (
            &["receipts", "verify", "extra"],
            "reactor: error: unexpected argument 'extra'\n",
            "try 'reactor receipts --help'",
        ),
        (
            &["inspect"],
            "reactor: error: missing argument <node>\n",
            "try 'reactor inspect --help'",
        ),
        (
            &["trace", "a", "b"],
            "reactor: error: unexpected argument 'b'\n",
            "try 'reactor trace --help'",
        ),
        (
            &["receipts", "cost", "--rate", "abc"],
            "reactor: error: invalid --rate 'abc' (expected N, $N, N/Mtok, $N/Mtok, Ntpd or \"N tokens-per-dollar\")\n",
            "try 'reactor receipts --help'",
        ),
        (
            &["receipts", "cost", "--rate"],
            "reactor: error: --rate needs a value\n",
            "try 'reactor receipts --help'",
        ),
        (
            &["receipts", "list", "--rate", "3"],
            "reactor: error: --rate only applies to 'receipts cost'\n",
            "try 'reactor receipts --help'",
        ),
        (
            &["topology", "--format", "svg"],
            "reactor: error: invalid --format 'svg' (expected text, dot or mermaid)\n",
            "try 'reactor topology --help'",
        ),
        (
            &["topology", "--format=dot", "--json"],
            "reactor: error: --format dot and --format mermaid cannot be combined with --json\n",
            "try 'reactor topology --help'",
        ),
        (
            &["status", "--json=yes"],
            "reactor: error: --json does not take a value\n",
            "try 'reactor status --help'",
        ),
        (
            &["status", "--project"],
            "reactor: error: --project needs a value\n",
            "try 'reactor status --help'",
        ),
        (
            &["inspect", "n", "--strict=1"],
            "reactor: error: --strict does not take a value\n",
            "try 'reactor inspect --help'",
        ),
        (
            &["init", "x", "y"],
            "reactor: error: unexpected argument 'y'\n",
            "try 'reactor init --help'",
        ),
    ];
    for (args, first, hint) in cases {
        let o = reactor_in(d.path(), args);
        assert_eq!(o.code, 2, "{args:?}: {}", o.stderr);
        assert!(o.stderr.starts_with(first), "{args:?}: {}", o.stderr);
        assert!(
            o.stderr.contains(&format!("hint: {hint}\n")),
            "{args:?}: {}",
            o.stderr
        );
        assert!(o.stdout.is_empty() || args.contains(&"--json"), "{args:?}");
    }
    // A state dir that is a file, or under a file: the exact message, exit 2.
    for sd in ["afile", "afile/below"] {
        let o = reactor_in(d.path(), &["status", "--state-dir", sd]);
        assert_eq!(o.code, 2, "{}", o.stderr);
        let abs = std::fs::canonicalize(d.path()).unwrap_or(d.path().to_path_buf());
        let shown = d.path().join(sd);
        assert!(
            o.stderr.starts_with(&format!(
                "reactor: error: state dir {} is not a directory\n",
                shown.display()
            )) || o.stderr.starts_with(&format!(
                "reactor: error: state dir {} is not a directory\n",
                abs.join(sd).display()
            )),
            "{}",
            o.stderr
        );
    }
    // With --json even a usage error is one JSON document on stdout.
    let o = reactor_in(d.path(), &["receipts", "verifyy", "--json"]);
    assert_eq!(o.code, 2);
    let v = o.json();
    assert_eq!(v["status"], "error");
    assert_eq!(v["ok"], false);
    assert_eq!(
        v["message"],
        "unknown subcommand 'verifyy' for 'receipts' (expected list, verify or cost); hint: try 'reactor receipts --help'"
    );
    let o = reactor_in(d.path(), &["--json", "topology", "--format", "mermaid"]);
    assert_eq!(o.code, 2);
    assert_eq!(o.json()["status"], "error");
    // A missing --project is a usage error.
    let o = reactor_in(d.path(), &["status", "--project", "nope"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("does not exist"), "{}", o.stderr);
}

#[test]
fn writer_verbs_are_known_verbs() {
    for v in ["compile", "run", "trigger", "serve", "doctor"] {
        let o = reactor(&[v, "--offline", "--bogus-flag-for-test"]);
        assert!(!o.stderr.contains("unknown verb"), "{v}: {}", o.stderr);
        assert_ne!(o.code, 0, "{v}");
    }
}
