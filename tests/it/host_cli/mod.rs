//! The `reactor` host CLI as a child process (HOST.md §1–§4, §8.1, §8.6–§8.11, §11.4): help,
//! version and usage errors; `reactor.yml` errors naming key and line; `init`; and every
//! offline verb's text and `--json` shape over the compat corpus and over a ledger written by
//! the project's own store — tampered receipts, corrupted version files, torn tails, empty and
//! missing state directories. Offline verbs run without any key, never create the state
//! directory or a `.lock`, and never modify a byte.

mod config;
mod corpus;
mod corrupt;
mod offline;
mod usage;

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
