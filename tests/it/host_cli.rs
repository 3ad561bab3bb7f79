//! The `reactor` host CLI as a child process (HOST.md §1–§4, §8.1, §8.6–§8.11, §11.4): help,
//! version and usage errors; `reactor.yml` errors naming key and line; `init`; and every
//! offline verb's text and `--json` shape over the compat corpus and over a ledger written by
//! the project's own store — tampered receipts, corrupted version files, torn tails, empty and
//! missing state directories. Offline verbs run without any key, never create the state
//! directory or a `.lock`, and never modify a byte.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use std::sync::Arc;

use reactor::compile::{CacheKey, CompileCost, CompiledIr, CompiledNode, sdk_version, write_cache};
use reactor::contract::ContractSet;
use reactor::core::canonicalizer::{CanonicalizerSpec, FacetSpec, compile_node};
use reactor::core::postcondition::CompiledPostconditions;
use reactor::format::json::{Object, Value};
use reactor::format::layout::{node_segment, version_file_name};
use reactor::format::opwm;
use reactor::format::receipt::{Cost, Fingerprints, Receipt, Status, Wake, WakeSource};
use reactor::format::topology::{Edge, Topology, TopologyNode};
use reactor::model::TokenCost;
use reactor::store::ledger::Ledger;
use reactor::store::worldmodel::WorldModelStore;

use crate::support::{bin, compat_dir};

/// Environment variables a run must not inherit (keys, offline switch, `.env` redirection).
const SCRUBBED: &[&str] = &[
    "OPENROUTER_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "REACTOR_OFFLINE",
    "REACTOR_ENV_PATH",
    "REACTOR_DEBUG",
    "REACTOR_SKILL_PATH",
];

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not one JSON document ({e}):\n{}", self.stdout))
    }
}

fn reactor_in(cwd: &Path, args: &[&str]) -> Out {
    let mut cmd = Command::new(bin());
    cmd.args(args).current_dir(cwd);
    for v in SCRUBBED {
        cmd.env_remove(v);
    }
    let out = cmd.output().expect("run reactor");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn reactor(args: &[&str]) -> Out {
    let d = tempfile::tempdir().unwrap();
    reactor_in(d.path(), args)
}

/// Every file under `dir` with its bytes (to prove a command changed nothing).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p.clone());
                out.insert(p, Vec::new());
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

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

// ---------------------------------------------------------------------------------------------
// reactor.yml
// ---------------------------------------------------------------------------------------------

#[test]
fn config_errors_exit_1_naming_key_and_line() {
    let d = tempfile::tempdir().unwrap();
    let cases = [
        (
            "state:\n  dir: ./.reactor\nmodel:\n  provider: openrouter\n  temprature: 0\n",
            "reactor: error: reactor.yml:5:3: model.temprature: unknown key (expected one of: provider, render_model, compile_model, temperature, reasoning_effort, max_turns, base_url, api_key_env, max_tokens, timeout, connect_timeout, parallel_renders)\n",
        ),
        (
            "sandbox:\n  mode: dokcer\n",
            "reactor: error: reactor.yml:2:9: sandbox.mode: invalid value 'dokcer' (expected none, docker or unix-local)\n",
        ),
        (
            "model:\n  max_turns: 0\n",
            "reactor: error: reactor.yml:2:14: model.max_turns: invalid value 0 (expected an integer from 1 to 10000)\n",
        ),
        (
            "telemetry:\n  enabled: yes\n",
            "reactor: error: reactor.yml:2:12: telemetry.enabled: expected true or false, got a string ('yes')\n",
        ),
        (
            "gateways:\n  - node: inbox\n    connector: {type: file, url: \"http://x\"}\n",
            "reactor: error: reactor.yml:3:29: gateways[0].connector.url: does not belong to a 'file' connector (expected one of: type, id_field, dir)\n",
        ),
        ("model: [\n", "reactor: error: reactor.yml:1:"),
    ];
    for (yml, expected) in cases {
        std::fs::write(d.path().join("reactor.yml"), yml).unwrap();
        for verb in [
            &["status"][..],
            &["logs"],
            &["receipts", "verify"],
            &["topology"],
        ] {
            let o = reactor_in(d.path(), verb);
            assert_eq!(o.code, 1, "{yml:?} {verb:?}: {}", o.stderr);
            assert!(o.stderr.starts_with(expected), "{yml:?}: {}", o.stderr);
            assert!(o.stderr.contains("hint: fix "), "{}", o.stderr);
            assert!(o.stdout.is_empty());
        }
        let o = reactor_in(d.path(), &["status", "--json"]);
        assert_eq!(o.code, 1);
        let v = o.json();
        assert_eq!(v["ok"], false);
        assert!(
            v["message"]
                .as_str()
                .unwrap()
                .starts_with(expected.trim_start_matches("reactor: error: ").trim_end())
        );
    }
    assert!(!d.path().join(".reactor").exists());
}

#[test]
fn every_example_reactor_yml_is_accepted() {
    let dir = crate::support::shared_dir().join("contracts");
    if !dir.is_dir() {
        eprintln!("SKIPPED: {} is missing", dir.display());
        return;
    }
    let mut seen = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if !p.join("reactor.yml").is_file() {
            continue;
        }
        seen += 1;
        let st = tempfile::tempdir().unwrap();
        std::fs::create_dir(st.path().join("s")).unwrap();
        std::fs::write(st.path().join("s/receipts.json"), "[]\n").unwrap();
        let o = reactor(&[
            "status",
            "--project",
            p.to_str().unwrap(),
            "--state-dir",
            st.path().join("s").to_str().unwrap(),
        ]);
        assert_eq!(o.code, 0, "{}: {}", p.display(), o.stderr);
        assert!(o.stdout.contains("  receipts       0\n"));
    }
    assert_eq!(seen, 3);
}

#[test]
fn several_reactors_need_a_name() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("reactor.yml"),
        "reactors:\n  - name: alpha\n  - name: beta\n    state_dir: ./state/beta\n",
    )
    .unwrap();
    let o = reactor_in(d.path(), &["status"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.starts_with("reactor: error: 2 reactors are configured (alpha, beta); choose one with --reactor <name>\n"), "{}", o.stderr);
    let o = reactor_in(d.path(), &["status", "--reactor", "beta"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("  reactor        beta\n"));
    let state = std::fs::canonicalize(d.path()).unwrap().join("state/beta");
    assert!(
        o.stdout
            .contains(&format!("  state dir      {}\n", state.display()))
            || o.stdout.contains(&format!(
                "  state dir      {}\n",
                d.path().join("state/beta").display()
            )),
        "{}",
        o.stdout
    );
    let o = reactor_in(d.path(), &["--reactor=gamma", "logs"]);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr
            .starts_with("reactor: error: unknown reactor 'gamma' (configured: alpha, beta)\n")
    );
}

// ---------------------------------------------------------------------------------------------
// init
// ---------------------------------------------------------------------------------------------

#[test]
fn init_scaffolds_refuses_and_forces() {
    let d = tempfile::tempdir().unwrap();
    let o = reactor_in(d.path(), &["init", "demo"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let demo = d.path().join("demo");
    let shown = o.stdout.lines().nth(2).unwrap().trim_start().to_string();
    assert!(
        shown.starts_with("scaffolded into /") && shown.ends_with("/demo"),
        "{}",
        o.stdout
    );
    assert!(o.stdout.starts_with("reactor init\n\n  scaffolded into "));
    assert!(o.stdout.ends_with(
        "    + reactor.yml\n    + inbox.prose.md\n    + digest.prose.md\n    + .gitignore\n    + README.md\n\n  Next:\n    export OPENROUTER_API_KEY=...\n    reactor compile\n    reactor serve --http 8080\n"
    ), "{}", o.stdout);
    let set = ContractSet::load(&demo).unwrap();
    assert_eq!(set.len(), 2);
    assert_eq!(set.get("inbox").unwrap().facet_names(), vec!["items"]);
    assert_eq!(set.get("digest").unwrap().facet_names(), vec!["digest"]);
    assert!(
        std::fs::read_to_string(demo.join(".gitignore"))
            .unwrap()
            .contains(".reactor/")
    );
    // The scaffold is a working project for the offline verbs.
    let o = reactor_in(&demo, &["status"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(!demo.join(".reactor").exists());

    // Again: refused, scaffold files named.
    let before = snapshot(&demo);
    let o = reactor_in(d.path(), &["init", "demo"]);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr.starts_with("reactor: error: refused: "),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("/demo already contains scaffold files: reactor.yml, inbox.prose.md, digest.prose.md, .gitignore, README.md\n"), "{}", o.stderr);
    assert!(o.stderr.contains("hint: pass --force"));
    let o = reactor_in(d.path(), &["init", "demo", "--json"]);
    assert_eq!(o.code, 1);
    let v = o.json();
    assert_eq!(v["status"], "exists");
    assert_eq!(v["written"], serde_json::json!([]));
    assert_eq!(v["skipped"].as_array().unwrap().len(), 5);
    assert_eq!(snapshot(&demo), before);

    // A non-empty directory without scaffold files.
    let other = d.path().join("other");
    std::fs::create_dir_all(other.join("src")).unwrap();
    std::fs::write(other.join("notes.txt"), "keep me").unwrap();
    let o = reactor_in(&other, &["init"]);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr.contains("/other is not empty: notes.txt, src\n"),
        "{}",
        o.stderr
    );
    let o = reactor_in(&other, &["--json", "init", "."]);
    let v = o.json();
    assert_eq!(v["status"], "non-empty");
    assert_eq!(
        v["existingEntries"],
        serde_json::json!(["notes.txt", "src"])
    );
    // --force writes into it and deletes nothing.
    std::fs::write(other.join("reactor.yml"), "# old\n").unwrap();
    let o = reactor_in(&other, &["init", "--force", "--json"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v = o.json();
    assert_eq!(v["status"], "scaffolded");
    assert_eq!(
        v["written"],
        serde_json::json!([
            "reactor.yml",
            "inbox.prose.md",
            "digest.prose.md",
            ".gitignore",
            "README.md"
        ])
    );
    assert_eq!(
        std::fs::read_to_string(other.join("notes.txt")).unwrap(),
        "keep me"
    );
    assert!(other.join("src").is_dir());
    assert!(
        std::fs::read_to_string(other.join("reactor.yml"))
            .unwrap()
            .contains("gateways:")
    );
    // A file in the way.
    std::fs::write(d.path().join("plain"), "x").unwrap();
    let o = reactor_in(d.path(), &["init", "plain"]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("exists and is not a directory"));
}

// ---------------------------------------------------------------------------------------------
// A ledger written by the project's own store
// ---------------------------------------------------------------------------------------------

struct Fixture {
    _tmp: tempfile::TempDir,
    project: PathBuf,
    state: PathBuf,
    versions: BTreeMap<String, String>,
}

fn receipt(
    node: &str,
    contract: &str,
    status: Status,
    source: WakeSource,
    fps: Fingerprints,
    fresh: u64,
    reused: u64,
) -> Receipt {
    let cost = if status == Status::Skipped {
        Cost::none(source)
    } else {
        Cost {
            provider: "openrouter".into(),
            model: "google/gemini-3.5-flash".into(),
            fresh,
            reused,
            surprise_cause: source,
        }
    };
    Receipt {
        node: node.into(),
        contract_fingerprint: contract.into(),
        status,
        wake: Wake::new(source),
        input_fingerprints: vec![],
        fingerprints: fps,
        semantic_diff: Object::new(),
        prev: None,
        cost,
        content_hash: String::new(),
    }
}

/// A scaffolded project with a compiled topology (envelope + node artifacts + manifest), three
/// world-model stores and five receipts, all written by the project's own store.
fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("proj");
    let o = reactor(&["init", project.to_str().unwrap()]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let set = ContractSet::load(&project).unwrap();
    let fp = |id: &str| set.get(id).unwrap().fingerprint();
    let state = project.join(".reactor");
    let topo = Topology {
        nodes: vec![
            TopologyNode {
                node: "digest".into(),
                contract_fingerprint: Some(fp("digest")),
                wake_source: Some(WakeSource::Input),
            },
            TopologyNode {
                node: "inbox".into(),
                contract_fingerprint: Some(fp("inbox")),
                wake_source: Some(WakeSource::External),
            },
        ],
        edges: vec![Edge::new("inbox", "digest", "items")],
        entry_points: vec!["inbox".into()],
        acyclic: true,
    };
    // A genuine compile cache, written by the compile room (envelope, node files, manifest).
    let node = |id: &str, wake: WakeSource, facet: &str| CompiledNode {
        id: id.into(),
        contract_fingerprint: fp(id),
        wake_source: wake,
        canonicalizer: Arc::new(
            compile_node(&CanonicalizerSpec {
                node: id.into(),
                fields: vec![],
                default_material: true,
                facets: vec![FacetSpec {
                    facet: facet.into(),
                    paths: vec![facet.into()],
                }],
            })
            .unwrap(),
        ),
        postconditions: Arc::new(CompiledPostconditions::empty(id)),
        contract_view: vec![],
    };
    let ir = CompiledIr {
        topology: topo,
        nodes: vec![
            node("digest", WakeSource::Input, "digest"),
            node("inbox", WakeSource::External, "items"),
        ],
    };
    let key = CacheKey {
        contract_set_fingerprint: set.fingerprint(),
        sdk_version: sdk_version(None),
        model: "google/gemini-3.5-flash".into(),
    };
    let cost = CompileCost {
        provider: "openrouter".into(),
        model: "google/gemini-3.5-flash".into(),
        tokens: TokenCost {
            fresh: 4210,
            reused: 0,
        },
    };
    let at = "2026-06-02T18:00:00Z".parse::<jiff::Timestamp>().unwrap();
    write_cache(&state, &ir, &key, &cost, None, at).unwrap();

    let store = WorldModelStore::new(&state);
    let mut versions = BTreeMap::new();
    let mut commit = |node: &str, file: &str, body: &str, fps: Fingerprints| -> Fingerprints {
        let art = opwm::encode(vec![(file.into(), body.as_bytes().to_vec())]).unwrap();
        let v = store.commit(node, &art, &fps).unwrap();
        versions.insert(node.to_string(), v);
        fps
    };
    let ing_fps = commit(
        "inbox::ingress",
        "inbox.json",
        "[{\"id\":\"item-1\"}]",
        Fingerprints::atomic("inbox:1"),
    );
    let inbox_fps = commit(
        "inbox",
        "truth.json",
        "{\"items\":[\"item-1\"]}",
        Fingerprints(vec![
            ("@atomic".into(), "sha256:aa".into()),
            ("items".into(), "sha256:bb".into()),
        ]),
    );
    let digest_fps = commit(
        "digest",
        "truth.json",
        "{\"digest\":\"1 item\"}",
        Fingerprints(vec![
            ("@atomic".into(), "sha256:cc".into()),
            ("digest".into(), "sha256:dd".into()),
        ]),
    );

    let (mut ledger, _) = Ledger::open(&state).unwrap();
    ledger
        .append(receipt(
            "inbox::ingress",
            "inbox::ingress@edge",
            Status::Rendered,
            WakeSource::External,
            ing_fps,
            0,
            0,
        ))
        .unwrap();
    ledger
        .append(receipt(
            "inbox",
            &fp("inbox"),
            Status::Rendered,
            WakeSource::External,
            inbox_fps,
            2210,
            0,
        ))
        .unwrap();
    let mut failed = receipt(
        "digest",
        &fp("digest"),
        Status::Failed,
        WakeSource::Input,
        Fingerprints::atomic("cold-start:empty"),
        90,
        0,
    );
    failed.semantic_diff.insert(
        "failure_reason",
        Value::str("postconditions failed: cites-items (attested false)"),
    );
    ledger.append(failed).unwrap();
    ledger
        .append(receipt(
            "digest",
            &fp("digest"),
            Status::Rendered,
            WakeSource::Input,
            digest_fps.clone(),
            1000,
            200,
        ))
        .unwrap();
    ledger
        .append(receipt(
            "digest",
            &fp("digest"),
            Status::Skipped,
            WakeSource::Input,
            digest_fps,
            0,
            0,
        ))
        .unwrap();
    drop(ledger);
    Fixture {
        _tmp: tmp,
        project,
        state,
        versions,
    }
}

impl Fixture {
    fn run(&self, args: &[&str]) -> Out {
        reactor_in(&self.project, args)
    }
    fn version_path(&self, node: &str) -> PathBuf {
        self.state
            .join("world-models")
            .join(node_segment(node))
            .join("versions")
            .join(version_file_name(&self.versions[node]).unwrap())
    }
}

const ALL_OFFLINE: &[&[&str]] = &[
    &["status"],
    &["status", "--json"],
    &["topology"],
    &["topology", "--json"],
    &["topology", "--format", "dot"],
    &["topology", "--format", "mermaid"],
    &["inspect", "digest"],
    &["inspect", "inbox::ingress", "--json"],
    &["logs"],
    &["logs", "--node", "digest", "--json"],
    &["trace"],
    &["trace", "inbox", "--json"],
    &["receipts"],
    &["receipts", "list", "--node", "inbox"],
    &["receipts", "verify"],
    &["receipts", "verify", "--json"],
    &["receipts", "cost", "--rate", "$3/Mtok"],
    &["receipts", "cost", "--json", "--node", "digest"],
];

#[test]
fn offline_verbs_over_a_project_ledger() {
    let f = fixture();
    let abs_state = f.state.display().to_string();

    let o = f.run(&["status"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let expected_head =
        format!("reactor status\n\n  state dir      {abs_state}\n  compiled       yes (");
    assert!(o.stdout.starts_with(&expected_head), "{}", o.stdout);
    assert!(o.stdout.contains(
        "\n  topology       2 nodes, 1 edges (at 2026-06-02T18:00:00.000Z)\n  compile cost   fresh=4210 reused=0\n  writer         none\n\n  receipts       5\n  run cost       fresh=3300 reused=200\n  dispositions   rendered=3 skipped=1 failed=1\n\n  cost by surprise cause:\n    input        fresh=1090 reused=200\n    external     fresh=2210 reused=0\n\n  cost by node:\n    inbox::ingress               fresh=0 reused=0\n    inbox                        fresh=2210 reused=0\n    digest                       fresh=1090 reused=200\n"
    ), "{}", o.stdout);
    let v = f.run(&["status", "--json"]).json();
    assert_eq!(v["stateDir"], abs_state.as_str());
    assert_eq!(v["compiled"], true);
    assert_eq!(
        v["compile"],
        serde_json::json!({"nodes": 2, "edges": 1, "compiledAt": "2026-06-02T18:00:00.000Z", "cost": {"fresh": 4210, "reused": 0}, "model": "google/gemini-3.5-flash"})
    );
    assert_eq!(v["writer"], serde_json::Value::Null);
    assert_eq!(
        v["run"]["total"],
        serde_json::json!({"fresh": 3300, "reused": 200})
    );
    assert_eq!(
        v["run"]["dispositions"],
        serde_json::json!({"rendered": 3, "skipped": 1, "failed": 1, "other": 0})
    );
    assert_eq!(v["run"]["receipts"], 5);
    assert_eq!(v["freshness"], "fresh");
    assert!(v.get("staleReason").is_none());

    let o = f.run(&["topology"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        o.stdout,
        "reactor topology\n\n  acyclic        yes\n  entry points   inbox (ingress: inbox::ingress)\n\n  nodes:\n    digest                       wake=input maintains=[digest]\n    inbox                        wake=external maintains=[items]\n\n  edges:\n    inbox.items -> digest\n"
    );
    let v = f.run(&["topology", "--json"]).json();
    assert_eq!(v["entry_points"], serde_json::json!(["inbox"]));
    assert_eq!(v["acyclic"], true);
    assert_eq!(
        v["edges"],
        serde_json::json!([{"producer": "inbox", "facet": "items", "subscriber": "digest"}])
    );
    assert_eq!(v["nodes"][0]["node"], "digest");
    assert_eq!(v["nodes"][0]["wake_source"], "input");
    assert_eq!(v["nodes"][0]["maintains"], serde_json::json!(["digest"]));
    assert!(
        v["nodes"][1]["contract_fingerprint"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    let dot = f.run(&["topology", "--format", "dot"]).stdout;
    assert!(
        dot.starts_with("digraph reactor {\n") && dot.ends_with("}\n"),
        "{dot}"
    );
    assert!(
        dot.contains("\"inbox::ingress\" -> \"inbox\" [style=dashed];"),
        "{dot}"
    );
    assert!(
        dot.contains("\"inbox\" -> \"digest\" [label=\"items\"];"),
        "{dot}"
    );
    let mm = f.run(&["topology", "--format", "mermaid"]).stdout;
    assert!(
        mm.starts_with("flowchart LR\n") && mm.contains("n1[[\"inbox (entry point)\"]]"),
        "{mm}"
    );

    let o = f.run(&["inspect", "digest"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let dv = &f.versions["digest"];
    assert_eq!(
        o.stdout,
        format!(
            "reactor inspect digest\n\n  wake source    input\n  contract       {}\n  maintains      [digest]\n  subscribes to:\n    items <- inbox\n  published:\n    @atomic      sha256:cc\n    digest       sha256:dd\n  version        {}… (1 files)\n  receipts       3\n  cost           fresh=1090 reused=200\n  last status    skipped\n  last render    frame 3: memo key unchanged; retried after the failed frame 2\n  chain          ok (3 receipts)\n\n  world-model    {}… (published, 1 file)\n    truth.json   19 bytes\n      {{\n        \"digest\": \"1 item\"\n      }}\n",
            ContractSet::load(&f.project)
                .unwrap()
                .get("digest")
                .unwrap()
                .fingerprint(),
            &dv[..15],
            &dv[..15]
        )
    );
    let o = f.run(&["inspect", "inbox::ingress", "--json"]);
    let v = o.json();
    assert_eq!(v["known"], false);
    assert_eq!(v["receipts"], 1);
    assert_eq!(
        v["publishedFingerprints"],
        serde_json::json!({"@atomic": "inbox:1"})
    );
    assert_eq!(v["publishedVersion"], f.versions["inbox::ingress"].as_str());
    assert_eq!(v["lastReceipt"]["node"], "inbox::ingress");
    assert_eq!(v["chain"]["ok"], true);
    assert_eq!(v["chain"]["length"], 1);
    assert_eq!(v["cost"]["receipts"], 1);
    let o = f.run(&["inspect", "inbox::ingress"]);
    assert!(
        o.stdout
            .contains("\n  known          no (not in the compiled topology)\n"),
        "{}",
        o.stdout
    );
    let o = f.run(&["inspect", "nope"]);
    assert_eq!(o.code, 1);
    assert_eq!(o.stderr, "reactor: error: unknown node 'nope'\n");

    let o = f.run(&["logs"]);
    assert_eq!(
        o.stdout,
        "reactor logs\n\n  inbox::ingress               rendered wake=external fresh=0 reused=0\n  inbox                        rendered wake=external fresh=2210 reused=0\n  digest                       failed   wake=input    fresh=90 reused=0\n      reason: postconditions failed: cites-items (attested false)\n  digest                       rendered wake=input    fresh=1000 reused=200\n  digest                       skipped  wake=input    fresh=0 reused=0\n"
    );
    let v = f.run(&["logs", "--node", "digest", "--json"]).json();
    assert_eq!(v["receipts"], 3);
    assert_eq!(v["entries"][0]["index"], 2);
    assert_eq!(
        v["entries"][0]["reason"],
        "postconditions failed: cites-items (attested false)"
    );
    assert_eq!(
        v["entries"][0]["cost"],
        serde_json::json!({"fresh": 90, "reused": 0})
    );
    assert!(v["entries"][1].get("reason").is_none());
    assert!(
        v["entries"][1]["content_hash"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    let o = f.run(&["receipts", "list", "--node", "inbox"]);
    assert_eq!(
        o.stdout,
        "reactor receipts\n\n  inbox                        rendered wake=external fresh=2210 reused=0\n"
    );
    let o = f.run(&["logs", "--node", "ghost"]);
    assert_eq!(o.code, 1);

    let o = f.run(&["trace"]);
    assert_eq!(
        o.stdout,
        "reactor trace\n\n  inbox::ingress  (chain ok)\n    #0 rendered wake=external cause=external fresh=0 reused=0\n  inbox  (chain ok)\n    #0 rendered wake=external cause=external fresh=2210 reused=0\n  digest  (chain ok)\n    #0 failed wake=input cause=input fresh=90 reused=0\n      reason: postconditions failed: cites-items (attested false)\n    #1 rendered wake=input cause=input fresh=1000 reused=200\n    #2 skipped wake=input cause=input fresh=0 reused=0\n"
    );
    let v = f.run(&["trace", "inbox", "--json"]).json();
    assert_eq!(v["traces"].as_array().unwrap().len(), 1);
    assert_eq!(v["traces"][0]["steps"][0]["prev"], serde_json::Value::Null);
    assert_eq!(v["traces"][0]["chain"]["ok"], true);
    assert_eq!(
        v["traces"][0]["chain"]["head"],
        v["traces"][0]["steps"][0]["content_hash"]
    );
    assert_eq!(f.run(&["trace", "ghost"]).code, 1);
    // --why (issue 9): digest failed first, then rendered again on the same memo key (a retry),
    // then skipped; the ingress and the gateway rendered first on external wakes.
    let o = f.run(&["trace", "--why"]);
    assert_eq!(
        o.stdout,
        "reactor trace\n\n  inbox::ingress  (chain ok)\n    #0 rendered wake=external cause=external fresh=0 reused=0\n      why: first receipt of this node (external wake)\n  inbox  (chain ok)\n    #0 rendered wake=external cause=external fresh=2210 reused=0\n      why: first receipt of this node (external wake)\n  digest  (chain ok)\n    #0 failed wake=input cause=input fresh=90 reused=0\n      reason: postconditions failed: cites-items (attested false)\n      why: first receipt of this node (input wake)\n    #1 rendered wake=input cause=input fresh=1000 reused=200\n      why: memo key unchanged; retried after the failed frame 2\n    #2 skipped wake=input cause=input fresh=0 reused=0\n"
    );
    let v = f.run(&["trace", "digest", "--why", "--json"]).json();
    let steps = &v["traces"][0]["steps"];
    assert_eq!(steps[0]["why"]["causes"], serde_json::json!(["first"]));
    assert_eq!(steps[1]["why"]["causes"], serde_json::json!(["retry"]));
    assert_eq!(steps[1]["why"]["prior"], 2);
    assert_eq!(steps[1]["why"]["priorStatus"], "failed");
    assert_eq!(steps[2]["why"], serde_json::Value::Null);
    assert!(
        f.run(&["trace", "inbox", "--json"]).json()["traces"][0]["steps"][0]
            .get("why")
            .is_none()
    );
    assert_eq!(f.run(&["trace", "--why=1"]).code, 2);
    let v = f.run(&["inspect", "digest", "--json"]).json();
    assert_eq!(v["lastRender"]["frame"], 3);
    assert_eq!(
        v["lastRender"]["why"]["causes"],
        serde_json::json!(["retry"])
    );

    let o = f.run(&["receipts", "verify"]);
    assert_eq!(o.code, 0, "{}", o.stdout);
    assert_eq!(
        o.stdout,
        "reactor receipts verify\n\n  receipts       5\n  total cost     fresh=3300 reused=200\n  chain          ALL OK\n  world-models   ok (3 versions)\n\n  per node:\n    inbox::ingress               ok (1 receipts, fresh=0 reused=0)\n    inbox                        ok (1 receipts, fresh=2210 reused=0)\n    digest                       ok (3 receipts, fresh=1090 reused=200)\n"
    );
    let v = f.run(&["receipts", "verify", "--json"]).json();
    assert_eq!(v["ok"], true);
    assert_eq!(v["receipts"], 5);
    assert_eq!(
        v["worldModels"],
        serde_json::json!({"ok": true, "versions": 3, "errors": []})
    );
    assert_eq!(v["nodes"][2]["node"], "digest");
    assert_eq!(v["nodes"][2]["receipts"], 3);
    assert!(v.get("empty").is_none());

    let o = f.run(&["receipts", "cost", "--rate", "$3/Mtok"]);
    assert!(o.stdout.starts_with(
        "reactor receipts cost\n\n  receipts       5\n  run cost       fresh=3300 reused=200\n  dispositions   rendered=3 skipped=1 failed=1\n  rate           $3/Mtok\n  cost (USD)     total=$0.0105 fresh=$0.0099 reused=$0.0006\n\n  cost by surprise cause:\n"
    ), "{}", o.stdout);
    let v = f
        .run(&[
            "receipts",
            "cost",
            "--json",
            "--node",
            "digest",
            "--rate",
            "1000000tpd",
        ])
        .json();
    assert_eq!(
        v["total"],
        serde_json::json!({"fresh": 1090, "reused": 200})
    );
    assert_eq!(v["receipts"], 3);
    assert_eq!(v["rate"]["label"], "1000000 tokens-per-dollar");
    assert!((v["dollars"]["total"].as_f64().unwrap() - 0.00129).abs() < 1e-12);
}

#[test]
fn status_reports_compile_cache_freshness() {
    let f = fixture();
    let compiled_line = |f: &Fixture| {
        f.run(&["status"])
            .stdout
            .lines()
            .find(|l| l.starts_with("  compiled "))
            .unwrap()
            .to_string()
    };
    assert_eq!(compiled_line(&f), "  compiled       yes (fresh)");
    // A different compile model.
    let yml = std::fs::read_to_string(f.project.join("reactor.yml")).unwrap();
    std::fs::write(
        f.project.join("reactor.yml"),
        yml.replace(
            "compile_model: google/gemini-3.5-flash",
            "compile_model: other/model",
        ),
    )
    .unwrap();
    assert_eq!(
        compiled_line(&f),
        "  compiled       yes (STALE: compile model changed)"
    );
    let v = f.run(&["status", "--json"]).json();
    assert_eq!(v["freshness"], "stale");
    assert_eq!(v["staleReason"], "compile model changed");
    // No compile model at all: freshness cannot be decided.
    std::fs::write(
        f.project.join("reactor.yml"),
        "model:\n  provider: openai\n",
    )
    .unwrap();
    assert_eq!(
        compiled_line(&f),
        "  compiled       yes (freshness unknown: model.compile_model is required for provider 'openai')"
    );
    assert_eq!(f.run(&["status", "--json"]).json()["freshness"], "unknown");
    std::fs::write(f.project.join("reactor.yml"), yml).unwrap();
    assert_eq!(compiled_line(&f), "  compiled       yes (fresh)");
    // An edit to any section of a contract.
    let digest = f.project.join("digest.prose.md");
    let text = std::fs::read_to_string(&digest).unwrap();
    std::fs::write(
        &digest,
        text.replace("### Goal\n", "### Goal\nAlso: be brief.\n"),
    )
    .unwrap();
    assert_eq!(
        compiled_line(&f),
        "  compiled       yes (STALE: contract set changed)"
    );
    std::fs::write(&digest, &text).unwrap();
    // A corrupted node file.
    let node_file = f
        .state
        .join("compile/nodes")
        .join(format!("{}.json", node_segment("inbox")));
    let mut bytes = std::fs::read(&node_file).unwrap();
    bytes.push(b' ');
    std::fs::write(&node_file, bytes).unwrap();
    let line = compiled_line(&f);
    assert!(
        line.starts_with("  compiled       yes (STALE: cache corrupt: compile/nodes/"),
        "{line}"
    );
    // The check never writes.
    assert!(!f.state.join(".lock").exists());
}

#[test]
fn offline_verbs_need_no_key_and_change_nothing() {
    let f = fixture();
    let before = snapshot(&f.project);
    for args in ALL_OFFLINE {
        let o = f.run(args);
        assert_eq!(o.code, 0, "{args:?}: {}", o.stderr);
        assert!(!o.stderr.contains("error"), "{args:?}: {}", o.stderr);
        if args.contains(&"--json") {
            let _ = o.json();
        }
    }
    // Forced offline mode changes nothing for readers.
    let o = f.run(&["status", "--offline"]);
    assert_eq!(o.code, 0);
    assert_eq!(
        snapshot(&f.project),
        before,
        "an offline verb modified the project"
    );
    assert!(!f.state.join(".lock").exists());
}

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

#[test]
fn the_current_writer_is_reported() {
    let f = fixture();
    // Our own (alive) pid in .lock, and serve.json naming it with a URL.
    let me = std::process::id();
    std::fs::write(f.state.join(".lock"), format!("{me}\n")).unwrap();
    let o = f.run(&["status"]);
    assert!(
        o.stdout.contains(&format!("\n  writer         pid {me}\n")),
        "{}",
        o.stdout
    );
    std::fs::write(
        f.state.join("serve.json"),
        format!("{{\n  \"pid\": {me},\n  \"url\": \"http://127.0.0.1:8080/\",\n  \"reactor\": \"default\",\n  \"prefix\": \"\",\n  \"auth_token_env\": null,\n  \"started_at\": \"2026-06-02T18:00:00.000Z\"\n}}\n"),
    )
    .unwrap();
    let o = f.run(&["status"]);
    assert!(
        o.stdout.contains(&format!(
            "\n  writer         reactor serve (pid {me}) at http://127.0.0.1:8080/\n"
        )),
        "{}",
        o.stdout
    );
    let v = f.run(&["status", "--json"]).json();
    assert_eq!(
        v["writer"],
        serde_json::json!({"pid": me, "daemon": true, "url": "http://127.0.0.1:8080/"})
    );
    assert!(
        o.stdout.contains("\n  in flight      none\n"),
        "{}",
        o.stdout
    );
    assert_eq!(v["inFlight"], serde_json::json!([]));
    // The renders in flight the writer records (issue 10): shown while its pid holds the lock.
    let record = format!(
        r#"{{"inFlight":[{{"awaitingCommit":false,"node":"inbox","startedAt":"2026-06-02T18:00:05.120Z"}},{{"awaitingCommit":true,"node":"digest","startedAt":"2026-06-02T18:00:07.000Z"}}],"pid":{me}}}"#
    );
    std::fs::write(f.state.join("in-flight.json"), record).unwrap();
    let o = f.run(&["status"]);
    assert!(
        o.stdout.contains(
            "\n  in flight      2 renders: inbox (since 18:00:05), digest (since 18:00:07, awaiting commit)\n"
        ),
        "{}",
        o.stdout
    );
    let v = f.run(&["status", "--json"]).json();
    assert_eq!(
        v["inFlight"],
        serde_json::json!([
            {"node": "inbox", "startedAt": "2026-06-02T18:00:05.120Z", "awaitingCommit": false},
            {"node": "digest", "startedAt": "2026-06-02T18:00:07.000Z", "awaitingCommit": true}
        ])
    );
    // A record of another pid is stale.
    std::fs::write(
        f.state.join("in-flight.json"),
        r#"{"inFlight":[{"awaitingCommit":false,"node":"inbox","startedAt":"2026-06-02T18:00:05.120Z"}],"pid":4194303}"#,
    )
    .unwrap();
    let o = f.run(&["status"]);
    assert!(
        o.stdout.contains("\n  in flight      none\n"),
        "{}",
        o.stdout
    );
    // A dead pid counts as none.
    std::fs::write(f.state.join(".lock"), "4194303\n").unwrap();
    let o = f.run(&["status"]);
    assert!(
        o.stdout.contains("\n  writer         none\n"),
        "{}",
        o.stdout
    );
    assert!(!o.stdout.contains("in flight"), "{}", o.stdout);
}

#[test]
fn a_closed_stdout_ends_quietly_with_exit_0() {
    let f = fixture();
    let mut child = Command::new(bin())
        .args(["trace"])
        .current_dir(&f.project)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

// ---------------------------------------------------------------------------------------------
// The compat corpus
// ---------------------------------------------------------------------------------------------

/// `(folder, receipts, fresh, reused, topology nodes or None, distinct receipt nodes)`.
type CorpusRow = (&'static str, usize, u64, u64, Option<usize>, usize);

const CORPUS: &[CorpusRow] = &[
    ("masked-relay", 77, 27180, 12840, Some(12), 13),
    ("surprise-cost", 5, 800, 640, None, 2),
    ("agent-observatory-cli", 13, 38352, 313856, Some(7), 8),
    ("renewal-risk", 65, 3200, 3760, Some(3), 4),
    ("basic-unit-suite", 45, 6240, 6960, Some(7), 8),
    ("research-tree", 72, 45900, 9360, None, 14),
];

#[test]
fn offline_verbs_over_the_compat_corpus() {
    let Some(corpus) = compat_dir() else { return };
    let cwd = tempfile::tempdir().unwrap();
    for (name, receipts, fresh, reused, topo_nodes, distinct) in CORPUS {
        let dir = corpus.join(name);
        let sd = dir.to_str().unwrap();
        let before = snapshot(&dir);
        let run = |args: &[&str]| {
            let mut a = args.to_vec();
            a.extend(["--state-dir", sd]);
            reactor_in(cwd.path(), &a)
        };

        let o = run(&["status"]);
        assert_eq!(o.code, 0, "{name}: {}", o.stderr);
        assert!(
            o.stdout.contains(&format!(
                "\n  receipts       {receipts}\n  run cost       fresh={fresh} reused={reused}\n"
            )),
            "{name}: {}",
            o.stdout
        );
        assert!(o.stdout.contains("\n  compiled       no\n"), "{name}");
        let v = run(&["status", "--json"]).json();
        assert_eq!(v["run"]["receipts"], *receipts as u64, "{name}");
        assert_eq!(
            v["run"]["byNode"].as_object().unwrap().len(),
            *distinct,
            "{name}"
        );

        let o = run(&["logs"]);
        assert_eq!(
            o.stdout
                .lines()
                .filter(|l| l.starts_with("  ") && !l.starts_with("      "))
                .count(),
            *receipts,
            "{name}"
        );
        let v = run(&["logs", "--json"]).json();
        assert_eq!(v["entries"].as_array().unwrap().len(), *receipts);

        let o = run(&["trace"]);
        assert_eq!(o.code, 0);
        assert_eq!(
            o.stdout.matches("  (chain ok)\n").count(),
            *distinct,
            "{name}: {}",
            o.stdout
        );
        assert!(!o.stdout.contains("BROKEN"));

        // Every chain verifies; the corpus ships no version blobs, so the world-model binding
        // reports each published pointer's missing version and the verb exits 1.
        let o = run(&["receipts", "verify"]);
        assert!(
            o.stdout.contains("\n  chain          ALL OK\n"),
            "{name}: {}",
            o.stdout
        );
        let v = run(&["receipts", "verify", "--json"]).json();
        assert!(
            v["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .all(|n| n["ok"] == true),
            "{name}"
        );
        assert_eq!(v["nodes"].as_array().unwrap().len(), *distinct);
        let wm_errors = v["worldModels"]["errors"].as_array().unwrap();
        assert!(
            wm_errors.iter().all(|e| e
                .as_str()
                .unwrap()
                .ends_with("(a version file that is missing)")),
            "{name}: {wm_errors:?}"
        );
        assert_eq!(o.code, if wm_errors.is_empty() { 0 } else { 1 }, "{name}");

        let v = run(&["receipts", "cost", "--json"]).json();
        assert_eq!(
            v["total"],
            serde_json::json!({"fresh": fresh, "reused": reused})
        );

        let o = run(&["topology"]);
        match topo_nodes {
            Some(n) => {
                assert_eq!(o.code, 0, "{name}: {}", o.stderr);
                assert!(o.stdout.ends_with("  note: no compile manifest (a replay fixture or a state dir written elsewhere)\n"), "{name}");
                let v = run(&["topology", "--json"]).json();
                assert_eq!(v["nodes"].as_array().unwrap().len(), *n, "{name}");
                let dot = run(&["topology", "--format", "dot"]).stdout;
                let labelled = dot
                    .lines()
                    .filter(|l| l.contains(" -> ") && l.contains("[label="))
                    .count();
                assert_eq!(labelled, v["edges"].as_array().unwrap().len(), "{name}");
            }
            None => {
                assert_eq!(o.code, 1, "{name}");
                assert_eq!(
                    o.stderr,
                    "reactor: error: no compiled IR — run `reactor compile` first\n"
                );
            }
        }
        assert_eq!(
            snapshot(&dir),
            before,
            "{name}: a reader modified the corpus"
        );
        assert!(!dir.join(".lock").exists());
    }

    // masked-relay in detail.
    let sd = corpus.join("masked-relay");
    let sd = sd.to_str().unwrap();
    let o = reactor_in(cwd.path(), &["topology", "--state-dir", sd]);
    assert!(
        o.stdout
            .contains("\n  entry points   gateway.signal-inbox (ingress: ingress.signal-inbox)\n"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .contains("\n    ingress.signal-inbox.inbox -> gateway.signal-inbox\n"),
        "{}",
        o.stdout
    );
    let o = reactor_in(
        cwd.path(),
        &["inspect", "ingress.signal-inbox", "--state-dir", sd],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout
            .contains("\n  known          no (not in the compiled topology)\n"),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains("(version file missing)"));
    let o = reactor_in(
        cwd.path(),
        &[
            "inspect",
            "gateway.signal-inbox",
            "--state-dir",
            sd,
            "--strict",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.contains("\n  wake source    external\n"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .contains("\n  subscribes to:\n    inbox <- ingress.signal-inbox\n"),
        "{}",
        o.stdout
    );
    let o = reactor_in(
        cwd.path(),
        &["receipts", "cost", "--state-dir", sd, "--rate", "$1/Mtok"],
    );
    assert!(
        o.stdout
            .contains("\n  cost (USD)     total=$0.0400 fresh=$0.0272 reused=$0.0128\n"),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains("\n  cost by surprise cause:\n    input        fresh=26100 reused=12000\n    external     fresh=1080 reused=840\n"), "{}", o.stdout);
}
