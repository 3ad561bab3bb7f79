//! `reactor-devtools --export <file.html>` from the command line (VIEWER.md §2.4 steps 9 and 13,
//! §2.5, §2.6, §2.9): the usage text, the conflicts, the refusals, the summary line and the exit
//! codes. The page itself is tested in `src/devtools/export_tests.rs` and, opened from
//! `file://` in Chromium, in `browser.rs`.

use std::process::Command;

use crate::support::{bin, compat_dir, shared_dir};

fn devtools(args: &[&std::ffi::OsStr]) -> (i32, String, String) {
    let out = Command::new(bin())
        .arg("devtools")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn os(v: &[&str]) -> Vec<std::ffi::OsString> {
    v.iter().map(std::ffi::OsString::from).collect()
}

fn run(v: &[&str]) -> (i32, String, String) {
    let args = os(v);
    let refs: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    devtools(&refs)
}

/// The usage text printed by --help is the code block of VIEWER.md §2.6, byte for byte.
#[test]
fn help_prints_the_usage_of_the_spec_with_export() {
    let spec = std::fs::read_to_string(shared_dir().join("spec/VIEWER.md"));
    let Ok(spec) = spec else {
        eprintln!("SKIPPED: ../shared/spec/VIEWER.md is not present");
        return;
    };
    let section = spec.split("### 2.6 Usage text").nth(1).unwrap();
    let block = section.split("```\n").nth(1).unwrap();
    let (code, out, _) = run(&["--help"]);
    assert_eq!(code, 0);
    assert_eq!(out, block);
    assert_eq!(out, reactor::devtools::cli::USAGE);
}

#[test]
fn export_conflicts_and_refusals() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("r.html");
    let fs = f.to_str().unwrap();
    let unwritable = format!("{}/missing/r.html", d.path().display());
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["--example", "masked-relay", "--export", fs, "--describe"],
            "error: --export writes a report file; it cannot be combined with --describe\n".into(),
        ),
        (
            vec!["--example", "masked-relay", "--export", fs, "--copy-to", "x"],
            "error: --export writes a report file; it cannot be combined with --copy-to\n".into(),
        ),
        (
            vec!["--example", "masked-relay", "--title", "t"],
            "error: --title and --source only apply with --export\n".into(),
        ),
        (
            vec!["--example", "masked-relay", "--source", "s", "--describe"],
            "error: --title and --source only apply with --export\n".into(),
        ),
        (
            vec!["--example", "nope", "--export", fs],
            "error: unknown example \"nope\".\n  shipped examples: masked-relay, surprise-cost, agent-observatory, inbox-triage, monorepo-ci, research-tree\n".into(),
        ),
        (
            vec!["--example", "masked-relay", "--export", fs, "--source", d.path().to_str().unwrap()],
            format!("error: --source {} contains no .prose.md files\n", d.path().display()),
        ),
        (
            vec!["--export"],
            "error: option missing a value: --export\n".into(),
        ),
        (
            vec!["--example", "masked-relay", "--export", &unwritable],
            format!("error: cannot write {}/missing/r.html: No such file or directory (os error 2)\n", d.path().display()),
        ),
    ];
    for (args, want) in cases {
        let (code, out, err) = run(&args);
        assert_eq!(code, 1, "{args:?}: {out}{err}");
        assert!(
            err.starts_with(&want),
            "{args:?}: expected {want:?}, got {err:?}"
        );
        assert_eq!(out, "", "{args:?}");
        assert!(!f.exists(), "{args:?} wrote the file");
    }
    // --json without --describe is reported first (step 6 before step 9).
    let (code, _, err) = run(&["--example", "masked-relay", "--export", fs, "--json"]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("error: --json only applies with --describe"),
        "{err}"
    );
}

#[test]
fn export_writes_refuses_to_overwrite_and_forces() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("report.html");
    let fs = f.to_str().unwrap();
    let (code, out, err) = run(&[
        "--example",
        "research-tree",
        "--export",
        fs,
        "--port",
        "1",
        "--host",
        "x",
    ]);
    assert_eq!((code, err.as_str()), (0, ""), "{out}");
    let html = std::fs::read_to_string(&f).unwrap();
    let nodes = reactor::devtools::open_example("research-tree", &Default::default())
        .map(|o| reactor::replay::build_snapshot(&o))
        .unwrap();
    assert_eq!(
        out,
        format!(
            "reactor-devtools: wrote {fs} ({} nodes · {} edges · {} receipts · chain ✓ verified)\n",
            nodes.nodes.len(),
            nodes.edges.len(),
            nodes.frames.len()
        )
    );
    assert!(html.starts_with("<!doctype html>") && html.contains("id=\"report-synthetic\""));
    let (code, out, err) = run(&["--example", "research-tree", "--export", fs]);
    assert_eq!(code, 1);
    assert_eq!(out, "");
    assert_eq!(
        err,
        format!(
            "error: {fs} already exists — refusing to overwrite.\n  re-run with --force to overwrite it.\n"
        )
    );
    let (code, _, _) = run(&[
        "--example",
        "masked-relay",
        "--export",
        fs,
        "--force",
        "--title",
        "Forced",
    ]);
    assert_eq!(code, 0);
    assert!(
        std::fs::read_to_string(&f)
            .unwrap()
            .contains("<title>Forced</title>")
    );
    let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "no temporary file is left");
}

#[test]
fn export_of_state_dirs_reports_read_errors_and_tampering() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("r.html");
    // Not a state directory, or an unreadable ledger: the state-dir messages of §2.4 / §2.9.
    let missing = d.path().join("missing");
    let (code, _, err) = devtools(&[missing.as_os_str(), "--export".as_ref(), f.as_os_str()]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with(&format!(
            "error: state-dir not found: {}",
            missing.display()
        )),
        "{err}"
    );
    let bad = d.path().join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join("receipts.json"), "{\"not\": \"an array\"}").unwrap();
    let (code, out, err) = devtools(&[bad.as_os_str(), "--export".as_ref(), f.as_os_str()]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(
        err,
        format!(
            "reactor-devtools --export: cannot read state-dir \"{}\": receipts.json must contain a JSON array\n",
            bad.display()
        )
    );
    assert!(!f.exists());
    let Some(c) = compat_dir() else { return };
    // A tampered copy: the file is written and carries the verdict; exit 1.
    let t = d.path().join("t");
    std::fs::create_dir_all(&t).unwrap();
    let text = std::fs::read_to_string(c.join("surprise-cost/receipts.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v[1]["status"] = serde_json::json!("failed");
    std::fs::write(t.join("receipts.json"), v.to_string()).unwrap();
    let (code, out, err) = devtools(&[t.as_os_str(), "--export".as_ref(), f.as_os_str()]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        out,
        format!(
            "reactor-devtools: wrote {} (2 nodes · 0 edges · 5 receipts · chain ✗ TAMPERED)\nCHAIN-VERIFY FAILED — the export carries the tamper verdict.\n",
            f.display()
        )
    );
    let html = std::fs::read_to_string(&f).unwrap();
    assert!(
        html.contains("<span id=\"report-verdict\" class=\"pill bad\">chain ✗ TAMPERED</span>")
    );
    assert!(
        html.contains("<ul id=\"report-chain-errors\">\n<li>digest: "),
        "{}",
        &html[..2000.min(html.len())]
    );
}
