//! Operating the host (issue 8), through the real binary: `serve` reports every trigger and
//! every drain (text lines and `--json` events), the CLI accepts global flags before
//! `devtools` and refuses state directories that are none, and `inspect` shows what a render
//! produced.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use serde_json::{Value, json};

use crate::host_serve::{Serve, cmd, compile_entries, http, project, render_entries};
use crate::support::fake_provider::FakeProvider;
use crate::support::{bin, compat_dir};

/// The members of a `trigger` / `drain` event, in order (HOST.md §9.7).
const DRAIN_MEMBERS: [&str; 8] = [
    "event",
    "reactor",
    "node",
    "arrival_id",
    "dispositions",
    "receipts_added",
    "cost",
    "duration_ms",
];

/// The summed `cost.tokens` of the last `n` receipts of the ledger.
fn tail_tokens(proj: &std::path::Path, n: usize) -> (u64, u64) {
    let ledger: Vec<Value> =
        serde_json::from_slice(&std::fs::read(proj.join(".reactor/receipts.json")).unwrap())
            .unwrap();
    assert!(ledger.len() >= n);
    ledger[ledger.len() - n..].iter().fold((0, 0), |(f, r), x| {
        (
            f + x["cost"]["tokens"]["fresh"].as_u64().unwrap(),
            r + x["cost"]["tokens"]["reused"].as_u64().unwrap(),
        )
    })
}

/// Splits a text line `… receipts=<n> fresh=<f> reused=<r> in <ms> ms` into its figures.
fn figures(line: &str) -> (u64, u64, u64, u64) {
    let num = |key: &str| -> u64 {
        let at = line.find(key).unwrap_or_else(|| panic!("{key} in {line}")) + key.len();
        line[at..]
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let ms: u64 = line
        .rsplit(" in ")
        .next()
        .and_then(|t| t.strip_suffix(" ms"))
        .unwrap()
        .parse()
        .unwrap();
    (num("receipts="), num("fresh="), num("reused="), ms)
}

#[test]
fn serve_prints_one_line_per_drain_and_per_trigger() {
    let fake = FakeProvider::start();
    let yaml = "gateways:\n  - node: inbox\n    connector:\n      type: static\n      items: [{ id: item-1, body: \"one\" }]\n";
    let Some(proj) = project(&fake, yaml) else {
        return;
    };
    for e in compile_entries(json!({"postconditions": []})) {
        fake.push(e);
    }
    for (items, digest) in [
        (json!([{"id": "item-1", "body": "one"}]), "1 item"),
        (
            json!([{"id": "item-1", "body": "one"}, {"id": "item-2", "body": "two"}]),
            "2 items",
        ),
    ] {
        for e in render_entries(items, digest) {
            fake.push(e);
        }
    }
    let mut serve = Serve::start(proj.path(), true);
    let base = serve.base.clone().unwrap();
    // The gateway's arrival: one drain line, before the heartbeat.
    assert!(
        serve.wait_for("gateways: inbox ingested=1"),
        "{:?}",
        serve.seen
    );
    let drain = serve
        .seen
        .iter()
        .find(|l| l.starts_with("reactor serve — drain "))
        .cloned()
        .unwrap_or_else(|| panic!("no drain line: {:?}", serve.seen));
    assert!(
        drain.starts_with(
            "reactor serve — drain \"default\" inbox arrival item-1 (rendered=2 skipped=0 failed=0) receipts=3 "
        ),
        "{drain}"
    );
    let (receipts, fresh, reused, _) = figures(&drain);
    assert_eq!(receipts, 3);
    assert_eq!((fresh, reused), tail_tokens(proj.path(), 3), "{drain}");
    let heartbeat = serve
        .seen
        .iter()
        .position(|l| l.starts_with("gateways: "))
        .unwrap();
    let drain_at = serve.seen.iter().position(|l| *l == drain).unwrap();
    assert!(drain_at < heartbeat, "{:?}", serve.seen);

    // A trigger with new data: one trigger line naming the arrival.
    let (s, v) = http(
        "POST",
        &format!("{base}/trigger/inbox"),
        Some(r#"{"id":"item-2","body":"two"}"#),
    );
    assert_eq!(s, 200, "{v}");
    assert!(
        serve.wait_for("trigger \"default\" inbox"),
        "{:?}",
        serve.seen
    );
    let line = serve
        .seen
        .iter()
        .find(|l| l.starts_with("reactor serve — trigger "))
        .cloned()
        .unwrap();
    assert!(
        line.starts_with(
            "reactor serve — trigger \"default\" inbox arrival item-2 (rendered=2 skipped=0 failed=0) receipts=3 "
        ),
        "{line}"
    );
    let (receipts, fresh, reused, _) = figures(&line);
    assert_eq!(receipts, v["receiptsAdded"].as_u64().unwrap());
    assert_eq!((fresh, reused), tail_tokens(proj.path(), 3), "{line}");
    // A bare wake of a settled node: no arrival, one skipped receipt, no tokens.
    let (s, _) = http("POST", &format!("{base}/trigger/digest"), None);
    assert_eq!(s, 200);
    assert!(
        serve.wait_for(
            "reactor serve — trigger \"default\" digest (rendered=0 skipped=1 failed=0) receipts=1 fresh=0 reused=0 in "
        ),
        "{:?}",
        serve.seen
    );
    assert_eq!(serve.sigterm_and_wait(), 0);
    fake.finish();
}

#[test]
fn serve_json_emits_trigger_and_drain_events() {
    let fake = FakeProvider::start();
    let yaml = "gateways:\n  - node: inbox\n    connector:\n      type: static\n      items: [{ id: item-1, body: \"one\" }]\n";
    let Some(proj) = project(&fake, yaml) else {
        return;
    };
    for e in compile_entries(json!({"postconditions": []})) {
        fake.push(e);
    }
    for (items, digest) in [
        (json!([{"id": "item-1", "body": "one"}]), "1 item"),
        (
            json!([{"id": "item-1", "body": "one"}, {"id": "item-2", "body": "two"}]),
            "2 items",
        ),
    ] {
        for e in render_entries(items, digest) {
            fake.push(e);
        }
    }
    let mut child = cmd(proj.path())
        .args([
            "--json",
            "serve",
            "--http",
            "0",
            "--poll-interval",
            "600000",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = || -> Value { serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap() };
    let mut url = String::new();
    let mut events = Vec::new();
    // Boot, listen, ready, then the first tick's drain before the tick itself.
    loop {
        let v = next();
        if v["event"] == json!("listening") {
            url = v["url"].as_str().unwrap().to_string();
        }
        let done = v["event"] == json!("tick");
        events.push(v);
        if done {
            break;
        }
    }
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["booted", "listening", "ready", "drain", "tick"],
        "{events:?}"
    );
    let drain = &events[3];
    assert_eq!(
        drain.as_object().unwrap().keys().collect::<Vec<_>>(),
        DRAIN_MEMBERS
    );
    assert_eq!(drain["reactor"], json!("default"));
    assert_eq!(drain["node"], json!("inbox"));
    assert_eq!(drain["arrival_id"], json!("item-1"));
    assert_eq!(
        drain["dispositions"],
        json!([{"node": "inbox", "disposition": "rendered"}, {"node": "digest", "disposition": "rendered"}])
    );
    assert_eq!(drain["receipts_added"], json!(3));
    let (f, r) = tail_tokens(proj.path(), 3);
    assert_eq!(drain["cost"], json!({"fresh": f, "reused": r}));
    assert!(drain["duration_ms"].is_u64());
    // The tick's cost covers exactly what the drain added.
    assert_eq!(events[4]["cost"]["total"], drain["cost"]);

    let (s, v) = http(
        "POST",
        &format!("{url}/trigger/inbox"),
        Some(r#"{"id":"item-2","body":"two"}"#),
    );
    assert_eq!(s, 200, "{v}");
    let t = next();
    assert_eq!(
        t.as_object().unwrap().keys().collect::<Vec<_>>(),
        DRAIN_MEMBERS
    );
    assert_eq!(t["event"], json!("trigger"));
    assert_eq!(t["arrival_id"], json!("item-2"));
    assert_eq!(t["receipts_added"], v["receiptsAdded"]);
    let (f, r) = tail_tokens(proj.path(), 3);
    assert_eq!(t["cost"], json!({"fresh": f, "reused": r}));
    // The same data again: a duplicate, so no arrival id and only the gateway's skip.
    let (s, _) = http(
        "POST",
        &format!("{url}/trigger/inbox"),
        Some(r#"{"id":"item-2","body":"two"}"#),
    );
    assert_eq!(s, 200);
    let t = next();
    assert_eq!(t["event"], json!("trigger"));
    assert_eq!(t["arrival_id"], Value::Null);
    assert_eq!(
        t["dispositions"],
        json!([{"node": "inbox", "disposition": "skipped"}])
    );
    assert_eq!(t["receipts_added"], json!(1));
    assert_eq!(t["cost"], json!({"fresh": 0, "reused": 0}));
    let st = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    assert_eq!(child.wait().unwrap().code(), Some(0));
    fake.finish();
}

// ---------------------------------------------------------------------------------------------
// CLI (issue 8 item 8)
// ---------------------------------------------------------------------------------------------

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

#[test]
fn unreadable_parts_of_a_state_dir_are_permission_errors() {
    let d = tempfile::tempdir().unwrap();
    chmod(d.path(), 0o755);
    let sd = d.path().join("sd");
    // A bundled example ledger whose world-model store verifies.
    let (code, _, stderr) = run_in(
        d.path(),
        &["devtools", "--example", "masked-relay", "--copy-to", "sd"],
    );
    assert_eq!(code, 0, "{stderr}");
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

// ---------------------------------------------------------------------------------------------
// What a render produced (issue 8 item 9)
// ---------------------------------------------------------------------------------------------

/// The files of `node`'s artifact `version` in the state dir, decoded with the library's OPWM1
/// reader: `(path, bytes)` in artifact order.
fn artifact_files(sd: &std::path::Path, node: &str, version: &str) -> Vec<(String, Vec<u8>)> {
    let hex = version.strip_prefix("sha256:").unwrap();
    let path = sd
        .join("world-models")
        .join(reactor::format::layout::node_segment(node))
        .join("versions")
        .join(format!("sha256_{hex}.bin"));
    reactor::format::opwm::decode(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn inspect_shows_the_world_model_files_at_a_version() {
    let d = tempfile::tempdir().unwrap();
    let (code, _, stderr) = run_in(
        d.path(),
        &["devtools", "--example", "masked-relay", "--copy-to", "sd"],
    );
    assert_eq!(code, 0, "{stderr}");
    let sd = d.path().join("sd");
    let s = sd.to_str().unwrap();
    let node = "responsibility.viewport-masker";
    let published: Value = serde_json::from_slice(
        &std::fs::read(
            sd.join("world-models")
                .join(reactor::format::layout::node_segment(node))
                .join("published.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let current = published["version"].as_str().unwrap().to_string();
    // Default: the published version, in JSON every file with its size and truth.json whole.
    let (code, stdout, stderr) = run_in(d.path(), &["inspect", node, "--state-dir", s, "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys.last().map(|k| k.as_str()), Some("worldModel"));
    let wm = &v["worldModel"];
    assert_eq!(wm["version"], json!(current));
    assert_eq!(wm["published"], json!(true));
    let files = artifact_files(&sd, node, &current);
    assert_eq!(wm["files"].as_array().unwrap().len(), files.len());
    for (f, (path, bytes)) in wm["files"].as_array().unwrap().iter().zip(&files) {
        assert_eq!(f["path"], json!(path));
        assert_eq!(f["bytes"], json!(bytes.len()));
        if path == "truth.json" {
            assert_eq!(f["text"], json!(String::from_utf8(bytes.clone()).unwrap()));
        }
    }
    // Text: the block after the chain line, truth.json pretty-printed.
    let (code, text, _) = run_in(d.path(), &["inspect", node, "--state-dir", s]);
    assert_eq!(code, 0);
    let truth = &files.iter().find(|(p, _)| p == "truth.json").unwrap().1;
    assert!(
        text.contains(&format!(
            "\n\n  world-model    {}… (published, 1 file)\n    truth.json   {} bytes\n      {{\n        \"view_e1\": {{\n",
            &current[..15],
            truth.len()
        )),
        "{text}"
    );
    assert!(
        text.ends_with(" more lines (`--json` has the whole file)\n"),
        "{text}"
    );

    // --version with the @atomic fingerprint of the node's first render: an older version.
    let ledger: Vec<Value> =
        serde_json::from_slice(&std::fs::read(sd.join("receipts.json")).unwrap()).unwrap();
    let first = ledger
        .iter()
        .find(|r| r["node"] == json!(node) && r["status"] == json!("rendered"))
        .unwrap();
    let token = first["fingerprints"]["@atomic"].as_str().unwrap();
    let (code, stdout, stderr) = run_in(
        d.path(),
        &[
            "inspect",
            node,
            "--version",
            token,
            "--state-dir",
            s,
            "--json",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let wm = serde_json::from_str::<Value>(&stdout).unwrap()["worldModel"].clone();
    assert_eq!(wm["published"], json!(false));
    let older = wm["version"].as_str().unwrap();
    assert_ne!(older, current);
    let old_files = artifact_files(&sd, node, older);
    assert_eq!(
        wm["files"][0]["text"],
        json!(String::from_utf8(old_files[0].1.clone()).unwrap())
    );

    // A version holding index.md and other files (written with the library's OPWM1 encoder).
    let artifact = reactor::format::opwm::encode(vec![
        (
            "truth.json".into(),
            br#"{"view_e1":{"lenses":[]},"view_e2":{"lenses":[]}}"#.to_vec(),
        ),
        (
            "index.md".into(),
            b"# Viewports\n\nNothing masked yet.\n".to_vec(),
        ),
        ("raw/capture.bin".into(), vec![0u8, 159, 146, 150, 255]),
    ])
    .unwrap();
    let version = reactor::format::opwm::version(&artifact);
    let versions = sd
        .join("world-models")
        .join(reactor::format::layout::node_segment(node))
        .join("versions");
    std::fs::write(
        versions.join(format!(
            "sha256_{}.bin",
            version.strip_prefix("sha256:").unwrap()
        )),
        &artifact,
    )
    .unwrap();
    let (code, text, stderr) = run_in(
        d.path(),
        &["inspect", node, "--version", &version, "--state-dir", s],
    );
    assert_eq!(code, 0, "{stderr}");
    let block = &text[text.find("  world-model").unwrap()..];
    assert_eq!(
        block,
        format!(
            "  world-model    {}… (not the published version, 3 files)\n    index.md     33 bytes\n      # Viewports\n\n      Nothing masked yet.\n    raw/capture.bin 5 bytes\n    truth.json   49 bytes\n      {{\n        \"view_e1\": {{\n          \"lenses\": []\n        }},\n        \"view_e2\": {{\n          \"lenses\": []\n        }}\n      }}\n",
            &version[..15]
        )
    );
    let (_, stdout, _) = run_in(
        d.path(),
        &[
            "inspect",
            node,
            "--version",
            &version,
            "--state-dir",
            s,
            "--json",
        ],
    );
    let wm = serde_json::from_str::<Value>(&stdout).unwrap()["worldModel"].clone();
    assert_eq!(
        wm["files"],
        json!([
            {"path": "index.md", "bytes": 33, "text": "# Viewports\n\nNothing masked yet.\n"},
            {"path": "raw/capture.bin", "bytes": 5},
            {"path": "truth.json", "bytes": 49, "text": "{\"view_e1\":{\"lenses\":[]},\"view_e2\":{\"lenses\":[]}}"}
        ])
    );

    // Unknown versions are errors; `inspect --version` alone still prints the version.
    let (code, _, stderr) = run_in(
        d.path(),
        &["inspect", node, "--version", "sha256:00", "--state-dir", s],
    );
    assert_eq!(code, 1);
    assert!(
        stderr.starts_with(&format!(
            "reactor: error: node '{node}' has no world-model version 'sha256:00'\nhint: "
        )),
        "{stderr}"
    );
    let (code, stdout, _) = run_in(d.path(), &["inspect", "--version"]);
    assert_eq!((code, stdout.as_str()), (0, "reactor 0.2.0\n"));
    // A cold node (no published.json) has no world-model block; JSON says null.
    std::fs::remove_file(
        sd.join("world-models")
            .join(reactor::format::layout::node_segment(node))
            .join("published.json"),
    )
    .unwrap();
    let (_, stdout, _) = run_in(d.path(), &["inspect", node, "--state-dir", s, "--json"]);
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["publishedVersion"], Value::Null);
    assert_eq!(v["worldModel"], Value::Null);
    let (_, text, _) = run_in(d.path(), &["inspect", node, "--state-dir", s]);
    assert!(text.contains("  published:\n    (none — cold)\n"), "{text}");
    assert!(!text.contains("world-model"), "{text}");
}
