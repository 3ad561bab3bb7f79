//! The render agent loop (RUNTIME.md §8) driven directly with hand-built render contexts:
//! read isolation (I16), bounded renders (I17), cost mapping (I18), attestations, the final
//! signal, workspace seeding and harvesting with path confinement and size limits, the sandbox
//! runners, model errors; the loopback fake provider over real HTTP on both protocols; and one
//! end-to-end pass through the real reconciler replayed twice (I7, agent-loop variant).

mod invariants;
mod outcomes;
mod over_http;
mod reconciler;
mod sandbox;
mod workspace;

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::fake_provider::{self as fake, FakeProvider, FakeUsage, Protocol};
use reactor::agent::prompt::{
    CONTINUE_REMINDER, FacetLayout, NodeBrief, PostconditionBrief, node_contract,
    system_prompt_from, tree_version,
};
use reactor::agent::render::{CANCELLED, NO_REASON, NO_SIGNAL, work_dir};
use reactor::agent::sandbox::{DockerRunner, ExecOutput, LocalRunner, SandboxError};
use reactor::agent::{AgentRender, RenderSettings, SandboxRunner};
use reactor::core::ir::{AtomicRules, Ir, NodeIr};
use reactor::core::render::{NotSubscribed, UpstreamReader};
use reactor::core::{Disposition, Reactor, ReactorOptions, Render, RenderContext, RenderOutcome};
use reactor::format::json as js;
use reactor::format::opwm::FileTree;
use reactor::format::receipt::{Status, Wake, WakeSource};
use reactor::format::topology::{Edge, TopologyNode};
use reactor::model::{
    ApiKey, HttpSettings, Message, ModelClient, ModelError, ModelRecord, ModelRequest,
    ModelResponse, OfflineClient, ProviderClient, ProviderConfig, ProviderSettings, ReplayClient,
    ToolArguments, ToolCall, Usage,
};
use reactor::scenario::TopKeyRules;
use serde_json::{Value, json};

const SYS: &str = "SYSTEM PROMPT";
const CANARY: &str = "canary-7f3a9b2c1d5e";

// ---------------------------------------------------------------------------------------------
// Fixtures

/// An upstream reader over fixed trees that logs every read.
struct TestUpstream {
    producers: Vec<String>,
    trees: HashMap<String, FileTree>,
    reads: Mutex<Vec<String>>,
}

impl UpstreamReader for TestUpstream {
    fn producers(&self) -> &[String] {
        &self.producers
    }
    fn read(&self, producer: &str) -> Result<FileTree, NotSubscribed> {
        self.reads.lock().unwrap().push(producer.to_string());
        if !self.producers.iter().any(|p| p == producer) {
            return Err(NotSubscribed {
                producer: producer.to_string(),
            });
        }
        Ok(self.trees.get(producer).cloned().unwrap_or_default())
    }
}

/// Owns everything a [`RenderContext`] borrows.
struct Fixture {
    wake: Wake,
    contract_fp: String,
    inputs: Vec<String>,
    prior: FileTree,
    upstream: TestUpstream,
}

impl Fixture {
    fn new(prior: FileTree) -> Fixture {
        Fixture {
            wake: Wake::new(WakeSource::External),
            contract_fp: "sha256:contract".into(),
            inputs: Vec::new(),
            prior,
            upstream: TestUpstream {
                producers: Vec::new(),
                trees: HashMap::new(),
                reads: Mutex::new(Vec::new()),
            },
        }
    }

    fn ctx<'a>(&'a self, node: &'a str) -> RenderContext<'a> {
        RenderContext {
            node,
            wake: &self.wake,
            contract_fingerprint: &self.contract_fp,
            input_fingerprints: &self.inputs,
            prior: &self.prior,
            upstream: &self.upstream,
        }
    }
}

fn file(path: &str, content: &str) -> (String, Vec<u8>) {
    (path.to_string(), content.as_bytes().to_vec())
}

fn watch_brief() -> NodeBrief {
    NodeBrief {
        id: "price-watch".into(),
        name: "Price watch".into(),
        kind: "responsibility".into(),
        contract_view: vec![
            (
                "Maintains".into(),
                "#### prices\nCurrent vendor prices.\n\nPostcondition: at least one price is \
                 listed."
                    .into(),
            ),
            ("Continuity".into(), "Self-driven, hourly.".into()),
        ],
        facets: vec![FacetLayout {
            name: "prices".into(),
            paths: vec!["prices".into()],
        }],
        postconditions: vec![
            PostconditionBrief {
                id: "has-prices".into(),
                source: "Postcondition: at least one price is listed.".into(),
                attested: false,
            },
            PostconditionBrief {
                id: "own-page".into(),
                source: "Postcondition: every price comes from the vendor's own page.".into(),
                attested: true,
            },
        ],
        inbound: Vec::new(),
    }
}

fn brief_brief() -> NodeBrief {
    NodeBrief {
        id: "price-brief".into(),
        name: "Price brief".into(),
        kind: "responsibility".into(),
        contract_view: vec![
            ("Requires".into(), "- vendor prices".into()),
            ("Maintains".into(), "A one-page brief of the prices.".into()),
        ],
        facets: Vec::new(),
        postconditions: Vec::new(),
        inbound: vec![("price-watch".into(), "prices".into())],
    }
}

fn plain_brief(id: &str) -> NodeBrief {
    NodeBrief {
        id: id.into(),
        name: id.into(),
        kind: "responsibility".into(),
        contract_view: vec![("Maintains".into(), "Some files.".into())],
        ..NodeBrief::default()
    }
}

fn briefs() -> HashMap<String, NodeBrief> {
    let mut m = HashMap::new();
    for b in [watch_brief(), brief_brief(), plain_brief("plain")] {
        m.insert(b.id.clone(), b);
    }
    m
}

fn settings(root: &Path) -> RenderSettings {
    let mut s = RenderSettings::new("openrouter", "render-model");
    s.work_root = root.to_path_buf();
    s.keep_work = false;
    s.secrets = vec![CANARY.to_string()];
    s
}

fn agent(
    client: Arc<dyn ModelClient>,
    s: &RenderSettings,
    sandbox: Option<Arc<dyn SandboxRunner>>,
) -> AgentRender {
    AgentRender::new(client, s.clone(), SYS, briefs()).with_sandbox(sandbox)
}

/// The first request a render of `node` will send (computed with a client that is never called).
fn base_request(
    s: &RenderSettings,
    sandbox: Option<Arc<dyn SandboxRunner>>,
    fx: &Fixture,
    node: &str,
) -> ModelRequest {
    agent(Arc::new(OfflineClient), s, sandbox)
        .initial_request(&fx.ctx(node))
        .expect("a brief exists")
}

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: ToolArguments::Json(args),
    }
}

fn usage(input: u64, cached: u64, output: u64) -> Usage {
    Usage {
        input,
        cached_input: cached,
        cache_write: 0,
        output,
    }
}

fn turn(calls: Vec<ToolCall>, u: Usage) -> ModelResponse {
    ModelResponse {
        text: None,
        tool_calls: calls,
        usage: u,
        stop_reason: Some("tool_calls".into()),
    }
}

fn res(id: &str, v: Value) -> Message {
    Message::tool_result(id, v.to_string(), false)
}

fn res_err(id: &str, message: &str) -> Message {
    Message::tool_result(id, json!({"error": message}).to_string(), true)
}

/// Replay records for a conversation: each turn's request is the base request extended with
/// every earlier response and the messages the harness is expected to append after it.
fn records(base: &ModelRequest, turns: Vec<(ModelResponse, Vec<Message>)>) -> Vec<ModelRecord> {
    let mut req = base.clone();
    let mut out = Vec::new();
    for (i, (resp, follow)) in turns.into_iter().enumerate() {
        out.push(ModelRecord {
            id: json!(format!("turn-{}", i + 1)),
            request: req.clone(),
            response: resp.clone(),
        });
        req.messages.push(resp.to_message());
        req.messages.extend(follow);
    }
    out
}

fn finish_done() -> Value {
    json!({"status": "done", "reason": null, "semantic_diff": null})
}

fn done(outcome: RenderOutcome) -> reactor::core::RenderProduct {
    match outcome {
        RenderOutcome::Done(p) => p,
        RenderOutcome::Failed(f) => panic!("expected done, got failed: {}", f.reason),
    }
}

fn failed(outcome: RenderOutcome) -> reactor::core::RenderFailure {
    match outcome {
        RenderOutcome::Failed(f) => f,
        RenderOutcome::Done(p) => panic!("expected failed, got done with {:?}", p.files),
    }
}

fn cost(p: &Option<reactor::core::Usage>) -> (u64, u64) {
    let u = p.as_ref().expect("usage reported");
    (u.fresh, u.reused)
}

/// Lists the files under a directory (relative, sorted), following nothing.
fn files_under(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                walk(base, &p, out);
            } else {
                out.push(
                    p.strip_prefix(base)
                        .unwrap()
                        .to_string_lossy()
                        .replace('\\', "/"),
                );
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

fn shell_then_finish(
    s: &RenderSettings,
    runner: Arc<dyn SandboxRunner>,
    fx: &Fixture,
    command: &str,
    expected: Value,
) -> RenderOutcome {
    let base = base_request(s, Some(runner.clone()), fx, "plain");
    assert!(base.tools.iter().any(|t| t.name == "shell_exec"));
    let recs = records(
        &base,
        vec![
            (
                turn(
                    vec![call("s", "shell_exec", json!({"command": command}))],
                    usage(7, 0, 3),
                ),
                vec![res("s", expected)],
            ),
            (
                turn(vec![call("f", "finish", finish_done())], usage(7, 0, 3)),
                vec![],
            ),
        ],
    );
    agent(Arc::new(ReplayClient::new(recs)), s, Some(runner)).render(&fx.ctx("plain"))
}

// ---------------------------------------------------------------------------------------------
// Real HTTP against the loopback fake provider

fn http_settings() -> HttpSettings {
    HttpSettings {
        backoff_base: Duration::ZERO,
        connect_timeout: Duration::from_secs(2),
        attempt_timeout: Duration::from_secs(10),
        ..HttpSettings::default()
    }
}

fn provider(name: &str, fake: &FakeProvider) -> Arc<ProviderClient> {
    let config = ProviderConfig::resolve(&ProviderSettings {
        provider: Some(name.into()),
        base_url: Some(fake.base_url()),
        api_key_env: Some("FAKE_KEY".into()),
        render_model: Some("render-model".into()),
        compile_model: Some("compile-model".into()),
        ..ProviderSettings::default()
    })
    .expect("valid config");
    Arc::new(ProviderClient::new(
        config,
        ApiKey::new(CANARY),
        http_settings(),
    ))
}

fn real_agent(client: Arc<dyn ModelClient>, s: &RenderSettings) -> AgentRender {
    let prompt = system_prompt_from(None).unwrap().text;
    AgentRender::new(client, s.clone(), prompt, briefs())
}
