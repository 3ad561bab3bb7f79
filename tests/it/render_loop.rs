//! The render agent loop (RUNTIME.md §8) driven directly with hand-built render contexts:
//! read isolation (I16), bounded renders (I17), cost mapping (I18), attestations, the final
//! signal, workspace seeding and harvesting with path confinement and size limits, the sandbox
//! runners, model errors; the loopback fake provider over real HTTP on both protocols; and one
//! end-to-end pass through the real reconciler replayed twice (I7, agent-loop variant).

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

fn text_turn(text: &str, u: Usage) -> ModelResponse {
    ModelResponse {
        text: Some(text.into()),
        tool_calls: Vec::new(),
        usage: u,
        stop_reason: Some("stop".into()),
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

/// Wraps a client and snapshots the node's working directory at every call.
struct Probe {
    inner: Arc<dyn ModelClient>,
    dir: PathBuf,
    seen: Mutex<Vec<Vec<String>>>,
}

impl ModelClient for Probe {
    fn complete(&self, req: &ModelRequest) -> Result<ModelResponse, ModelError> {
        self.seen.lock().unwrap().push(files_under(&self.dir));
        self.inner.complete(req)
    }
}

// ---------------------------------------------------------------------------------------------
// I16: read isolation

#[test]
fn i16_upstream_tools_only_see_subscribed_producers() {
    let root = tempfile::tempdir().unwrap();
    let s = settings(root.path());
    let truth = r#"{"prices":[{"vendor":"a","price":3}]}"#;
    let mut fx = Fixture::new(Vec::new());
    fx.wake = Wake {
        source: WakeSource::Input,
        refs: vec!["sha256:waker".into()],
    };
    fx.inputs = vec!["sha256:token-prices".into()];
    fx.upstream.producers = vec!["price-watch".into()];
    let watch_tree = vec![file("truth.json", truth)];
    fx.upstream
        .trees
        .insert("price-watch".into(), watch_tree.clone());
    fx.upstream
        .trees
        .insert("events".into(), vec![file("secret.txt", "not yours")]);
    let base = base_request(&s, None, &fx, "price-brief");
    let recs = records(
        &base,
        vec![
            (
                turn(
                    vec![
                        call("c1", "wm_list_upstream", json!({"producer": null})),
                        call(
                            "c2",
                            "wm_read_upstream",
                            json!({"producer": "events", "path": "secret.txt", "offset": null}),
                        ),
                        call("c3", "wm_list_upstream", json!({"producer": "events"})),
                        call(
                            "c4",
                            "wm_read_upstream",
                            json!({"producer": "price-watch", "path": "truth.json", "offset": null}),
                        ),
                    ],
                    usage(100, 0, 10),
                ),
                vec![
                    res(
                        "c1",
                        json!({"producers": [{"producer": "price-watch", "facets": ["prices"],
                                "version": tree_version(&watch_tree)}]}),
                    ),
                    res_err(
                        "c2",
                        "producer 'events' is not an input of node 'price-brief'",
                    ),
                    res_err(
                        "c3",
                        "producer 'events' is not an input of node 'price-brief'",
                    ),
                    res(
                        "c4",
                        json!({"path": "truth.json", "bytes": truth.len(), "encoding": "utf8",
                               "content": truth, "truncated": false}),
                    ),
                ],
            ),
            (
                turn(
                    vec![
                        call(
                            "c5",
                            "ws_write",
                            json!({"path": "brief.md", "content": "a: 3\n", "encoding": null}),
                        ),
                        call(
                            "c6",
                            "finish",
                            json!({"status": "done", "reason": null,
                                   "semantic_diff": {"summary": "first brief", "notes": null}}),
                        ),
                    ],
                    usage(200, 100, 20),
                ),
                vec![],
            ),
        ],
    );
    let client = Arc::new(ReplayClient::new(recs));
    let r = agent(client.clone(), &s, None);
    let p = done(r.render(&fx.ctx("price-brief")));
    assert_eq!(client.remaining(), 0, "every record consumed");
    assert_eq!(p.files, vec![file("brief.md", "a: 3\n")]);
    assert_eq!(
        js::compact_string(&js::Value::Object(p.semantic_diff.clone())),
        r#"{"summary":"first brief"}"#
    );
    assert!(p.attestations.is_empty());
    // The isolation error was produced by the harness: the reader never saw `events`.
    let reads = fx.upstream.reads.lock().unwrap().clone();
    assert_eq!(
        reads,
        vec!["price-watch".to_string()],
        "cached after one read"
    );
    // The error results were flagged as errors, in call order.
    let second = &client.calls()[1];
    let flags: Vec<(String, bool)> = second
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool {
                call_id, is_error, ..
            } => Some((call_id.clone(), *is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(
        flags,
        [
            ("c1".to_string(), false),
            ("c2".to_string(), true),
            ("c3".to_string(), true),
            ("c4".to_string(), false)
        ]
    );
    // The wake header names the slot and the waking receipt.
    assert!(base.system[2].contains("`price-watch` · `prices` → `sha256:token-prices`"));
    assert!(base.system[2].contains("`sha256:waker`"));
    assert_eq!(base.purpose, "render:price-brief");
    assert_eq!(cost(&p.usage), (110 + 120, 100));
}

// ---------------------------------------------------------------------------------------------
// I17: bounded renders

#[test]
fn i17_turn_cap_fails_and_keeps_the_summed_cost() {
    let root = tempfile::tempdir().unwrap();
    let mut s = settings(root.path());
    s.max_turns = 3;
    let fx = Fixture::new(Vec::new());
    let base = base_request(&s, None, &fx, "plain");
    let usages = [usage(100, 0, 10), usage(200, 50, 20), usage(300, 300, 5)];
    let turns = usages
        .iter()
        .enumerate()
        .map(|(i, u)| {
            let id = format!("c{i}");
            (
                turn(vec![call(&id, "ws_list", json!({}))], *u),
                vec![res(&id, json!({"files": []}))],
            )
        })
        .collect();
    let client = Arc::new(ReplayClient::new(records(&base, turns)));
    let f = failed(agent(client.clone(), &s, None).render(&fx.ctx("plain")));
    assert_eq!(f.reason, "render exceeded the turn cap (3 turns)");
    assert_eq!(client.remaining(), 0);
    assert_eq!(client.calls().len(), 3, "no fourth request");
    // (100 + 10) + (150 + 20) + (0 + 5) fresh; 0 + 50 + 300 reused.
    assert_eq!(cost(&f.usage), (285, 350));
    let u = f.usage.unwrap();
    assert_eq!(
        (u.provider.as_str(), u.model.as_str()),
        ("openrouter", "render-model")
    );
}

#[test]
fn i17_two_text_only_turns_end_without_a_signal() {
    let root = tempfile::tempdir().unwrap();
    let s = settings(root.path());
    let fx = Fixture::new(Vec::new());
    let base = base_request(&s, None, &fx, "plain");
    let recs = records(
        &base,
        vec![
            (
                text_turn("Let me think about it.", usage(10, 0, 1)),
                vec![Message::user(CONTINUE_REMINDER)],
            ),
            (text_turn("Here is my answer.", usage(20, 0, 2)), vec![]),
        ],
    );
    let client = Arc::new(ReplayClient::new(recs));
    let f = failed(agent(client.clone(), &s, None).render(&fx.ctx("plain")));
    assert_eq!(f.reason, NO_SIGNAL);
    assert_eq!(f.reason, "render produced no structured done/failed signal");
    assert_eq!(client.remaining(), 0);
    assert_eq!(cost(&f.usage), (33, 0));
}

#[test]
fn text_turns_that_are_not_consecutive_do_not_end_the_render() {
    let root = tempfile::tempdir().unwrap();
    let s = settings(root.path());
    let fx = Fixture::new(Vec::new());
    let base = base_request(&s, None, &fx, "plain");
    let recs = records(
        &base,
        vec![
            (
                text_turn("thinking", usage(1, 0, 1)),
                vec![Message::user(CONTINUE_REMINDER)],
            ),
            (
                turn(vec![call("a", "ws_list", json!({}))], usage(1, 0, 1)),
                vec![res("a", json!({"files": []}))],
            ),
            (
                text_turn("still thinking", usage(1, 0, 1)),
                vec![Message::user(CONTINUE_REMINDER)],
            ),
            (
                turn(vec![call("b", "finish", finish_done())], usage(1, 0, 1)),
                vec![],
            ),
        ],
    );
    let client = Arc::new(ReplayClient::new(recs));
    let p = done(agent(client.clone(), &s, None).render(&fx.ctx("plain")));
    assert!(p.files.is_empty());
    assert!(p.semantic_diff.is_empty());
    assert_eq!(cost(&p.usage), (8, 0));
    assert_eq!(client.remaining(), 0);
}

// ---------------------------------------------------------------------------------------------
// I18: cost mapping

#[test]
fn i18_usage_maps_to_fresh_and_reused_tokens() {
    let root = tempfile::tempdir().unwrap();
    let fx = Fixture::new(Vec::new());
    // Chat Completions: prompt 1000 of which 800 cached, completion 50.
    // Anthropic Messages (normalized by the client): input_tokens 150, cache_creation 50,
    // cache_read 800, output 50 → input 1000, cached 800, cache_write 50.
    for (provider, u) in [
        ("openrouter", usage(1000, 800, 50)),
        (
            "anthropic",
            Usage {
                input: 1000,
                cached_input: 800,
                cache_write: 50,
                output: 50,
            },
        ),
    ] {
        let mut s = settings(root.path());
        s.provider = provider.into();
        let base = base_request(&s, None, &fx, "plain");
        let recs = records(
            &base,
            vec![(turn(vec![call("f", "finish", finish_done())], u), vec![])],
        );
        let p = done(agent(Arc::new(ReplayClient::new(recs)), &s, None).render(&fx.ctx("plain")));
        let u = p.usage.unwrap();
        assert_eq!((u.fresh, u.reused), (250, 800), "{provider}");
        assert_eq!(u.provider, provider);
        assert_eq!(u.model, "render-model");
    }
}

// ---------------------------------------------------------------------------------------------
// The final signal

#[test]
fn attestations_and_semantic_diff_pass_through_after_an_invalid_finish() {
    let root = tempfile::tempdir().unwrap();
    let s = settings(root.path());
    let fx = Fixture::new(Vec::new());
    let base = base_request(&s, None, &fx, "price-watch");
    // The finish tool's schema lists the attested id.
    let finish = base.tools.iter().find(|t| t.name == "finish").unwrap();
    assert_eq!(
        finish.parameters["properties"]["attestations"],
        json!({"type": "object", "additionalProperties": false, "required": ["own-page"],
               "properties": {"own-page": {"type": "boolean"}}})
    );
    let truth = r#"{"prices":[1,2]}"#;
    let recs = records(
        &base,
        vec![
            (
                turn(
                    vec![
                        call(
                            "w",
                            "ws_write",
                            json!({"path": "truth.json", "content": truth, "encoding": "utf8"}),
                        ),
                        call("f1", "finish", finish_done()),
                    ],
                    usage(10, 0, 1),
                ),
                vec![
                    res("w", json!({"path": "truth.json", "bytes": truth.len()})),
                    res_err(
                        "f1",
                        "invalid finish signal: $: missing required property \"attestations\"",
                    ),
                ],
            ),
            (
                turn(
                    vec![
                        call(
                            "f2",
                            "finish",
                            json!({"status": "done", "reason": null,
                                   "semantic_diff": {"summary": format!("two prices {CANARY}"),
                                                     "notes": ["n1", "n2"]},
                                   "attestations": {"own-page": true}}),
                        ),
                        call(
                            "late",
                            "ws_write",
                            json!({"path": "after.txt", "content": "x", "encoding": null}),
                        ),
                    ],
                    usage(10, 0, 1),
                ),
                vec![],
            ),
        ],
    );
    let client = Arc::new(ReplayClient::new(recs));
    let p = done(agent(client.clone(), &s, None).render(&fx.ctx("price-watch")));
    assert_eq!(client.remaining(), 0);
    assert_eq!(
        p.files,
        vec![file("truth.json", truth)],
        "calls after finish never run"
    );
    assert_eq!(
        p.attestations,
        HashMap::from([("own-page".to_string(), true)])
    );
    assert_eq!(
        js::compact_string(&js::Value::Object(p.semantic_diff)),
        r#"{"summary":"two prices [redacted]","notes":["n1","n2"]}"#
    );
}

#[test]
fn failed_signals_carry_their_reason_or_the_default() {
    let root = tempfile::tempdir().unwrap();
    let s = settings(root.path());
    let fx = Fixture::new(Vec::new());
    let base = base_request(&s, None, &fx, "price-watch");
    for (args, want) in [
        (
            json!({"status": "failed", "reason": "  upstream is empty\n", "semantic_diff": null}),
            "upstream is empty",
        ),
        (json!({"status": "failed"}), NO_REASON),
        (json!({"status": "failed", "reason": "   "}), NO_REASON),
    ] {
        let recs = records(
            &base,
            vec![(
                turn(vec![call("f", "finish", args)], usage(5, 0, 5)),
                vec![],
            )],
        );
        let f = failed(
            agent(Arc::new(ReplayClient::new(recs)), &s, None).render(&fx.ctx("price-watch")),
        );
        assert_eq!(f.reason, want);
        assert_eq!(cost(&f.usage), (10, 0), "failed renders keep their cost");
    }
    assert_eq!(NO_REASON, "render reported failed without a reason");
}

#[test]
fn invalid_tool_calls_get_error_results_and_never_abort() {
    let root = tempfile::tempdir().unwrap();
    let s = settings(root.path());
    let fx = Fixture::new(Vec::new());
    let base = base_request(&s, None, &fx, "plain");
    let names = base
        .tools
        .iter()
        .map(|t| t.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let recs = records(
        &base,
        vec![
            (
                turn(
                    vec![
                        ToolCall {
                            id: "r".into(),
                            name: "wm_read".into(),
                            arguments: ToolArguments::Raw("{path:".into()),
                        },
                        call("u", "nope", json!({})),
                        call("t", "wm_read", json!({"path": 7, "offset": null})),
                        call("m", "ws_write", json!({"path": "x"})),
                        call("s", "shell_exec", json!({"command": "ls"})),
                        call("n", "wm_read", json!({"path": "a", "offset": -1})),
                        call(
                            "e",
                            "wm_read",
                            json!({"path": "a", "offset": null, "extra": 1}),
                        ),
                        call("o", "ws_list", json!([])),
                        call(
                            "b",
                            "ws_write",
                            json!({"path": "x.bin", "content": "@@not base64@@", "encoding": "base64"}),
                        ),
                        call(
                            "l",
                            "ws_write",
                            json!({"path": "x.txt", "content": "x", "encoding": "latin1"}),
                        ),
                        call("d", "wm_read", json!({"path": "../up.txt", "offset": null})),
                        call(
                            "a",
                            "wm_read",
                            json!({"path": "/etc/passwd", "offset": null}),
                        ),
                        call("z", "ws_read", json!({"path": "./", "offset": null})),
                    ],
                    usage(1, 0, 1),
                ),
                vec![
                    res_err("r", "arguments of wm_read are not valid JSON"),
                    res_err(
                        "u",
                        &format!("unknown tool \"nope\"; available tools: {names}"),
                    ),
                    res_err(
                        "t",
                        "invalid arguments for wm_read: $.path: expected string, got integer",
                    ),
                    res_err(
                        "m",
                        "invalid arguments for ws_write: $: missing required property \"content\"",
                    ),
                    res_err(
                        "s",
                        "unknown tool 'shell_exec': command execution is disabled (sandbox.mode is none)",
                    ),
                    res_err(
                        "n",
                        "invalid arguments for wm_read: offset must be a non-negative integer",
                    ),
                    res_err(
                        "e",
                        "invalid arguments for wm_read: $: unknown property \"extra\"",
                    ),
                    res_err(
                        "o",
                        "invalid arguments for ws_list: $: expected object, got array",
                    ),
                    res_err("b", "content is not valid base64"),
                    res_err(
                        "l",
                        "invalid arguments for ws_write: $.encoding: expected one of \"utf8\", \"base64\", null",
                    ),
                    res_err(
                        "d",
                        "path \"../up.txt\" leaves the workspace (contains '..')",
                    ),
                    res_err(
                        "a",
                        "path \"/etc/passwd\" is absolute; use a path relative to the workspace",
                    ),
                    res_err("z", "path \"./\" is empty after normalization"),
                ],
            ),
            (
                turn(vec![call("f", "finish", finish_done())], usage(1, 0, 1)),
                vec![],
            ),
        ],
    );
    let client = Arc::new(ReplayClient::new(recs));
    let p = done(agent(client.clone(), &s, None).render(&fx.ctx("plain")));
    assert!(p.files.is_empty());
    assert_eq!(client.remaining(), 0);
    assert!(!base.tools.iter().any(|t| t.name == "shell_exec"));
}

// ---------------------------------------------------------------------------------------------
// Workspace seeding and harvesting

#[test]
fn workspace_is_seeded_with_prior_truth_and_harvested() {
    let root = tempfile::tempdir().unwrap();
    let s = settings(root.path());
    let prior = vec![file("a.txt", "alpha"), file("dir/b.txt", "beta")];
    let fx = Fixture::new(prior.clone());
    let base = base_request(&s, None, &fx, "plain");
    assert!(base.system[2].contains("2 files. It has already been copied into your workspace"));
    let page = |path: &str, content: &str| {
        json!({"path": path, "bytes": content.len(), "encoding": "utf8", "content": content,
               "truncated": false})
    };
    let recs = records(
        &base,
        vec![
            (
                turn(
                    vec![
                        call("l", "wm_list", json!({})),
                        call("r", "ws_read", json!({"path": "dir/b.txt", "offset": null})),
                        call(
                            "m",
                            "wm_read",
                            json!({"path": "missing.txt", "offset": null}),
                        ),
                    ],
                    usage(1, 0, 1),
                ),
                vec![
                    res(
                        "l",
                        json!({"version": tree_version(&prior), "files": [
                            {"path": "a.txt", "bytes": 5}, {"path": "dir/b.txt", "bytes": 4}]}),
                    ),
                    res("r", page("dir/b.txt", "beta")),
                    res_err("m", "not found: missing.txt"),
                ],
            ),
            (
                turn(
                    vec![
                        call(
                            "w",
                            "ws_write",
                            json!({"path": "./new//n.txt", "content": "bmV3", "encoding": "base64"}),
                        ),
                        call("d", "ws_delete", json!({"path": "a.txt"})),
                        call("d2", "ws_delete", json!({"path": "a.txt"})),
                        call(
                            "x",
                            "ws_write",
                            json!({"path": "../escape.txt", "content": "x", "encoding": null}),
                        ),
                        call(
                            "y",
                            "ws_write",
                            json!({"path": "/tmp/abs.txt", "content": "x", "encoding": null}),
                        ),
                        call(
                            "z",
                            "ws_read",
                            json!({"path": "dir/../../x", "offset": null}),
                        ),
                        call("p", "wm_read", json!({"path": "a.txt", "offset": null})),
                        call("q", "ws_list", json!({})),
                    ],
                    usage(1, 0, 1),
                ),
                vec![
                    res("w", json!({"path": "new/n.txt", "bytes": 3})),
                    res("d", json!({"path": "a.txt", "deleted": true})),
                    res("d2", json!({"path": "a.txt", "deleted": false})),
                    res_err(
                        "x",
                        "path \"../escape.txt\" leaves the workspace (contains '..')",
                    ),
                    res_err(
                        "y",
                        "path \"/tmp/abs.txt\" is absolute; use a path relative to the workspace",
                    ),
                    res_err(
                        "z",
                        "path \"dir/../../x\" leaves the workspace (contains '..')",
                    ),
                    res("p", page("a.txt", "alpha")),
                    res(
                        "q",
                        json!({"files": [{"path": "dir/b.txt", "bytes": 4},
                                         {"path": "new/n.txt", "bytes": 3}]}),
                    ),
                ],
            ),
            (
                turn(vec![call("f", "finish", finish_done())], usage(1, 0, 1)),
                vec![],
            ),
        ],
    );
    let dir = work_dir(root.path(), "default", "plain");
    assert_eq!(dir, root.path().join("default").join("706c61696e"));
    let probe = Arc::new(Probe {
        inner: Arc::new(ReplayClient::new(recs)),
        dir: dir.clone(),
        seen: Mutex::new(Vec::new()),
    });
    let p = done(agent(probe.clone(), &s, None).render(&fx.ctx("plain")));
    assert_eq!(
        p.files,
        vec![file("dir/b.txt", "beta"), file("new/n.txt", "new")]
    );
    let seen = probe.seen.lock().unwrap().clone();
    assert_eq!(
        seen[0],
        ["a.txt", "dir/b.txt"],
        "seeded before the first turn"
    );
    assert_eq!(seen[2], ["dir/b.txt", "new/n.txt"]);
    assert!(
        !dir.exists(),
        "the working directory is removed after harvesting"
    );
    assert!(!root.path().join("default").join("escape.txt").exists());
}

#[test]
fn keep_work_keeps_the_directory_and_seeding_clears_stale_files() {
    let root = tempfile::tempdir().unwrap();
    let mut s = settings(root.path());
    s.keep_work = true;
    s.reactor = "second".into();
    let fx = Fixture::new(vec![file("kept.txt", "k")]);
    let base = base_request(&s, None, &fx, "plain");
    let recs = || {
        records(
            &base,
            vec![(
                turn(vec![call("f", "finish", finish_done())], usage(1, 0, 0)),
                vec![],
            )],
        )
    };
    let dir = work_dir(root.path(), "second", "plain");
    done(agent(Arc::new(ReplayClient::new(recs())), &s, None).render(&fx.ctx("plain")));
    assert_eq!(files_under(&dir), ["kept.txt"]);
    std::fs::write(dir.join("stale.txt"), "old").unwrap();
    let probe = Arc::new(Probe {
        inner: Arc::new(ReplayClient::new(recs())),
        dir: dir.clone(),
        seen: Mutex::new(Vec::new()),
    });
    done(agent(probe.clone(), &s, None).render(&fx.ctx("plain")));
    assert_eq!(probe.seen.lock().unwrap()[0], ["kept.txt"]);
    // A failure keeps it too, and removes it without REACTOR_KEEP_WORK.
    let f = failed(agent(Arc::new(OfflineClient), &s, None).render(&fx.ctx("plain")));
    assert_eq!(f.reason, "offline mode: model calls are disabled");
    assert!(dir.exists());
    s.keep_work = false;
    let f = failed(agent(Arc::new(OfflineClient), &s, None).render(&fx.ctx("plain")));
    assert!(f.usage.is_none(), "no turn completed: no usage");
    assert!(!dir.exists());
}

/// A sandbox runner that writes straight into the working directory, bypassing ws_write's
/// checks, as a shell command could.
struct Writer(fn(&Path));

impl SandboxRunner for Writer {
    fn exec(
        &self,
        command: &str,
        cwd: &Path,
        _timeout: Duration,
    ) -> Result<ExecOutput, SandboxError> {
        (self.0)(cwd);
        Ok(ExecOutput {
            exit_code: Some(0),
            stdout: format!("ran {command}").into_bytes(),
            stderr: Vec::new(),
            timed_out: false,
        })
    }
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

#[test]
fn harvest_size_limits_fail_the_render_with_cost() {
    let root = tempfile::tempdir().unwrap();
    let s = settings(root.path());
    let fx = Fixture::new(Vec::new());
    let ran = json!({"exit_code": 0, "stdout": "ran go", "stderr": "", "timed_out": false});
    let f = failed(shell_then_finish(
        &s,
        Arc::new(Writer(|cwd| {
            let f = std::fs::File::create(cwd.join("huge.bin")).unwrap();
            f.set_len(64 * 1024 * 1024 + 1).unwrap();
        })),
        &fx,
        "go",
        ran.clone(),
    ));
    assert_eq!(f.reason, "world-model too large: more than 64 MiB in total");
    assert_eq!(cost(&f.usage), (20, 0));
    let f = failed(shell_then_finish(
        &s,
        Arc::new(Writer(|cwd| {
            for i in 0..10_001 {
                std::fs::write(cwd.join(format!("f{i:05}")), b"").unwrap();
            }
        })),
        &fx,
        "go",
        ran.clone(),
    ));
    assert_eq!(f.reason, "world-model too large: more than 10000 files");
    // Exactly at the limits is fine.
    let p = done(shell_then_finish(
        &s,
        Arc::new(Writer(|cwd| {
            std::fs::create_dir(cwd.join("d")).unwrap();
            std::fs::write(cwd.join("d/x.txt"), b"x").unwrap();
            #[cfg(unix)]
            std::os::unix::fs::symlink("/etc/hostname", cwd.join("link")).unwrap();
        })),
        &fx,
        "go",
        ran,
    ));
    assert_eq!(
        p.files,
        vec![file("d/x.txt", "x")],
        "symbolic links are ignored"
    );
}

#[cfg(unix)]
#[test]
fn unix_local_shell_exec_runs_in_the_workspace() {
    let root = tempfile::tempdir().unwrap();
    let s = settings(root.path());
    let fx = Fixture::new(vec![file("in.txt", "seeded")]);
    let runner: Arc<dyn SandboxRunner> = Arc::new(LocalRunner::new());
    let base = base_request(&s, Some(runner.clone()), &fx, "plain");
    let recs = records(
        &base,
        vec![
            (
                turn(
                    vec![call(
                        "s",
                        "shell_exec",
                        json!({"command": "cat in.txt > out.txt; printf made; echo oops >&2; exit 4"}),
                    )],
                    usage(1, 0, 1),
                ),
                vec![res(
                    "s",
                    json!({"exit_code": 4, "stdout": "made", "stderr": "oops\n", "timed_out": false}),
                )],
            ),
            (
                turn(vec![call("f", "finish", finish_done())], usage(1, 0, 1)),
                vec![],
            ),
        ],
    );
    let client = Arc::new(ReplayClient::new(recs));
    let p = done(agent(client.clone(), &s, Some(runner)).render(&fx.ctx("plain")));
    assert_eq!(client.remaining(), 0);
    assert_eq!(
        p.files,
        vec![file("in.txt", "seeded"), file("out.txt", "seeded")]
    );
}

/// Writes a fake `docker` executable that logs its arguments to `log`, and for `run` executes
/// the trailing `sh -c <command>` inside the mounted directory.
#[cfg(unix)]
fn fake_docker(dir: &Path, log: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("docker");
    let script = format!(
        r#"#!/bin/sh
printf '%s\n' "$*" >> '{log}'
if [ "$1" = kill ]; then exit 0; fi
shift
vol=
while [ $# -gt 0 ]; do
  case "$1" in
    --rm) shift ;;
    --name|--network|-w) shift 2 ;;
    -v) vol="$2"; shift 2 ;;
    *) break ;;
  esac
done
shift
cd "${{vol%:/workspace}}" || exit 125
exec "$@"
"#,
        log = log.display()
    );
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[cfg(unix)]
#[test]
fn docker_mode_runs_commands_through_docker_run() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    let log = bin.path().join("docker.log");
    let docker = fake_docker(bin.path(), &log);
    let s = settings(root.path());
    let fx = Fixture::new(Vec::new());
    let runner: Arc<dyn SandboxRunner> =
        Arc::new(DockerRunner::new("img:test", "none").with_executable(&docker));
    let p = done(shell_then_finish(
        &s,
        runner,
        &fx,
        "printf ok; ls -a",
        json!({"exit_code": 0, "stdout": "ok.\n..\n", "stderr": "", "timed_out": false}),
    ))
    .files;
    assert!(p.is_empty());
    let logged = std::fs::read_to_string(&log).unwrap();
    let line = logged.lines().next().unwrap();
    let dir = work_dir(root.path(), "default", "plain");
    assert!(
        line.starts_with("run --rm --name reactor-sandbox-"),
        "{line}"
    );
    assert!(
        line.ends_with(&format!(
            " --network none -v {}:/workspace -w /workspace img:test sh -c printf ok; ls -a",
            dir.display()
        )),
        "{line}"
    );
}

#[cfg(unix)]
#[test]
fn docker_mode_writes_files_times_out_and_reports_a_missing_docker() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    let log = bin.path().join("docker.log");
    let docker = fake_docker(bin.path(), &log);
    let mut s = settings(root.path());
    s.shell_timeout = Duration::from_millis(400);
    let fx = Fixture::new(Vec::new());
    let runner: Arc<dyn SandboxRunner> =
        Arc::new(DockerRunner::new("img:test", "bridge").with_executable(&docker));
    let base = base_request(&s, Some(runner.clone()), &fx, "plain");
    let recs = records(
        &base,
        vec![
            (
                turn(
                    vec![
                        call(
                            "a",
                            "shell_exec",
                            json!({"command": "echo from-container > c.txt"}),
                        ),
                        call("b", "shell_exec", json!({"command": "sleep 20"})),
                    ],
                    usage(1, 0, 1),
                ),
                vec![
                    res(
                        "a",
                        json!({"exit_code": 0, "stdout": "", "stderr": "", "timed_out": false}),
                    ),
                    res(
                        "b",
                        json!({"exit_code": null, "stdout": "", "stderr": "", "timed_out": true}),
                    ),
                ],
            ),
            (
                turn(vec![call("f", "finish", finish_done())], usage(1, 0, 1)),
                vec![],
            ),
        ],
    );
    let started = std::time::Instant::now();
    let p =
        done(agent(Arc::new(ReplayClient::new(recs)), &s, Some(runner)).render(&fx.ctx("plain")));
    assert!(started.elapsed() < Duration::from_secs(15));
    assert_eq!(p.files, vec![file("c.txt", "from-container\n")]);
    let logged = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = logged.lines().collect();
    assert!(lines[1].contains("--network bridge"), "{logged}");
    assert!(lines[1].ends_with("sh -c sleep 20"), "{logged}");
    let name = lines[1].split(' ').nth(3).unwrap();
    assert!(
        lines.contains(&format!("kill {name}").as_str()),
        "the container is killed on timeout: {logged}"
    );
    // Without docker the render fails with a clear reason and keeps its cost.
    let missing: Arc<dyn SandboxRunner> =
        Arc::new(DockerRunner::new("img", "none").with_executable("/nonexistent/docker"));
    let base = base_request(&s, Some(missing.clone()), &fx, "plain");
    let recs = records(
        &base,
        vec![(
            turn(
                vec![call("s", "shell_exec", json!({"command": "true"}))],
                usage(3, 0, 1),
            ),
            vec![],
        )],
    );
    let f = failed(
        agent(Arc::new(ReplayClient::new(recs)), &s, Some(missing)).render(&fx.ctx("plain")),
    );
    assert!(
        f.reason.starts_with(
            "sandbox unavailable: docker is not available (cannot run '/nonexistent/docker'"
        ),
        "{}",
        f.reason
    );
    assert_eq!(cost(&f.usage), (4, 0));
}

// ---------------------------------------------------------------------------------------------
// Model errors, cancellation, unknown nodes

#[test]
fn model_errors_fail_the_render_and_keep_the_spent_cost() {
    let root = tempfile::tempdir().unwrap();
    let s = settings(root.path());
    let fx = Fixture::new(Vec::new());
    let base = base_request(&s, None, &fx, "plain");
    let recs = records(
        &base,
        vec![(
            turn(vec![call("a", "ws_list", json!({}))], usage(40, 0, 2)),
            vec![],
        )],
    );
    let f = failed(agent(Arc::new(ReplayClient::new(recs)), &s, None).render(&fx.ctx("plain")));
    assert_eq!(f.reason, "model call failed: no remaining records");
    assert_eq!(cost(&f.usage), (42, 0));
    let f = failed(agent(Arc::new(OfflineClient), &s, None).render(&fx.ctx("plain")));
    assert_eq!(f.reason, "offline mode: model calls are disabled");
    assert_eq!(f.usage, None);
    let f = failed(agent(Arc::new(OfflineClient), &s, None).render(&fx.ctx("ghost")));
    assert!(
        f.reason.starts_with("no contract view for node 'ghost'"),
        "{}",
        f.reason
    );
}

struct CancelAfterFirst {
    inner: ReplayClient,
    flag: Arc<AtomicBool>,
}

impl ModelClient for CancelAfterFirst {
    fn complete(&self, req: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let r = self.inner.complete(req);
        self.flag.store(true, Ordering::SeqCst);
        r
    }
}

#[test]
fn cancellation_is_observed_between_turns() {
    let root = tempfile::tempdir().unwrap();
    let s = settings(root.path());
    let fx = Fixture::new(Vec::new());
    let base = base_request(&s, None, &fx, "plain");
    let recs = records(
        &base,
        vec![(
            turn(vec![call("a", "ws_list", json!({}))], usage(5, 0, 5)),
            vec![res("a", json!({"files": []}))],
        )],
    );
    let flag = Arc::new(AtomicBool::new(false));
    let client = Arc::new(CancelAfterFirst {
        inner: ReplayClient::new(recs),
        flag: flag.clone(),
    });
    let r = agent(client, &s, None).with_cancel(flag);
    let f = failed(r.render(&fx.ctx("plain")));
    assert_eq!(f.reason, CANCELLED);
    assert_eq!(cost(&f.usage), (10, 0));
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

fn tool_names(body: &Value, protocol: Protocol) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| match protocol {
            Protocol::Chat => t["function"]["name"].as_str().unwrap().to_string(),
            Protocol::Messages => t["name"].as_str().unwrap().to_string(),
        })
        .collect()
}

const TOOLS: [&str; 9] = [
    "wm_list",
    "wm_read",
    "wm_list_upstream",
    "wm_read_upstream",
    "ws_list",
    "ws_read",
    "ws_write",
    "ws_delete",
    "finish",
];

#[test]
fn chat_completions_render_over_http() {
    let truth = r#"{"prices":[1,2]}"#;
    let fake = FakeProvider::with_entries([
        fake::chat_tool_calls(&[
            (
                "ws_write",
                json!({"path": "truth.json", "content": truth, "encoding": null}),
            ),
            ("wm_list", json!({})),
        ])
        .when_purpose("render:price-watch")
        .with_usage(FakeUsage {
            input: 1000,
            output: 50,
            cached: 800,
            cache_write: 0,
        }),
        fake::chat_tool_calls(&[(
            "finish",
            json!({"status": "done", "reason": null,
                   "semantic_diff": {"summary": "two prices", "notes": null},
                   "attestations": {"own-page": true}}),
        )])
        .when_purpose("render:price-watch")
        .with_usage(FakeUsage {
            input: 1200,
            output: 20,
            cached: 1000,
            cache_write: 0,
        }),
    ]);
    let root = tempfile::tempdir().unwrap();
    let s = settings(root.path());
    let fx = Fixture::new(Vec::new());
    let r = real_agent(provider("openrouter", &fake), &s);
    let p = done(r.render(&fx.ctx("price-watch")));
    assert_eq!(p.files, vec![file("truth.json", truth)]);
    assert_eq!(p.attestations.get("own-page"), Some(&true));
    assert_eq!(cost(&p.usage), (250 + 220, 1800));
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    for q in &reqs {
        assert_eq!(q.header("x-reactor-purpose"), Some("render:price-watch"));
        assert_eq!(q.received_key().as_deref(), Some(CANARY));
        assert!(q.path.ends_with("/v1/chat/completions"));
    }
    let b1 = reqs[0].json();
    assert_eq!(b1["model"], "render-model");
    assert_eq!(b1["tool_choice"], "auto");
    assert_eq!(b1["stream"], false);
    assert!(b1.get("temperature").is_none());
    assert_eq!(tool_names(b1, Protocol::Chat), TOOLS);
    let msgs = b1["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 2);
    assert_eq!(msgs[0]["role"], "system");
    let system = msgs[0]["content"].as_str().unwrap();
    let prompt = system_prompt_from(None).unwrap().text;
    let expected_head = format!(
        "{prompt}\n\n---\n\n{}\n\n---\n\n# This render",
        node_contract(&watch_brief())
    );
    assert!(
        system.starts_with(&expected_head),
        "three layers joined by the separator"
    );
    assert!(system.contains("cold start, your workspace is empty."));
    assert_eq!(msgs[1]["role"], "user");
    assert!(
        msgs[1]["content"]
            .as_str()
            .unwrap()
            .contains("empty (cold start)")
    );
    let finish_params = &b1["tools"][8]["function"]["parameters"];
    assert_eq!(
        finish_params["required"],
        json!(["status", "reason", "semantic_diff", "attestations"])
    );
    let b2 = reqs[1].json();
    let msgs = b2["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 5);
    assert_eq!(msgs[2]["role"], "assistant");
    assert_eq!(msgs[2]["tool_calls"][0]["id"], "call_fake_0");
    assert_eq!(msgs[2]["tool_calls"][0]["function"]["name"], "ws_write");
    assert!(msgs[2]["tool_calls"][0]["function"]["arguments"].is_string());
    assert_eq!(
        msgs[3],
        json!({"role": "tool", "tool_call_id": "call_fake_0",
               "content": json!({"path": "truth.json", "bytes": truth.len()}).to_string()})
    );
    assert_eq!(
        msgs[4],
        json!({"role": "tool", "tool_call_id": "call_fake_1",
               "content": "{\"version\":null,\"files\":[]}"})
    );
    assert_eq!(tool_names(b2, Protocol::Chat), TOOLS);
    fake.finish();
}

#[test]
fn anthropic_messages_render_over_http() {
    let fake = FakeProvider::with_entries([
        fake::messages_tool_calls(&[
            (
                "ws_write",
                json!({"path": "brief.md", "content": "brief", "encoding": "utf8"}),
            ),
            ("wm_read", json!({"path": "missing.md", "offset": null})),
        ])
        .when_purpose("render:plain")
        .with_usage(FakeUsage {
            input: 150,
            output: 50,
            cached: 800,
            cache_write: 50,
        }),
        fake::messages_finish(json!({"status": "done", "reason": null, "semantic_diff": null}))
            .when_purpose("render:plain")
            .with_usage(FakeUsage {
                input: 100,
                output: 10,
                cached: 0,
                cache_write: 0,
            }),
    ]);
    let root = tempfile::tempdir().unwrap();
    let mut s = settings(root.path());
    s.provider = "anthropic".into();
    s.temperature = Some(0.0);
    let fx = Fixture::new(Vec::new());
    let r = real_agent(provider("anthropic", &fake), &s);
    let p = done(r.render(&fx.ctx("plain")));
    assert_eq!(p.files, vec![file("brief.md", "brief")]);
    // Turn 1: 150 + 50 + 50 fresh, 800 reused; turn 2: 110 fresh.
    assert_eq!(cost(&p.usage), (360, 800));
    assert_eq!(p.usage.unwrap().provider, "anthropic");
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    for q in &reqs {
        assert_eq!(q.header("x-reactor-purpose"), Some("render:plain"));
        assert_eq!(q.header("anthropic-version"), Some("2023-06-01"));
        assert!(q.path.ends_with("/v1/messages"));
    }
    let b1 = reqs[0].json();
    let prompt = system_prompt_from(None).unwrap().text;
    assert_eq!(
        b1["system"][0],
        json!({"type": "text", "text": prompt, "cache_control": {"type": "ephemeral"}})
    );
    let second = b1["system"][1]["text"].as_str().unwrap();
    assert!(second.starts_with("# Node contract: plain (id `plain`, kind responsibility)"));
    assert!(second.contains("\n\n---\n\n# This render"));
    assert_eq!(b1["tool_choice"], json!({"type": "auto"}));
    assert_eq!(b1["temperature"], json!(0.0));
    assert_eq!(tool_names(b1, Protocol::Messages), TOOLS);
    assert!(b1["tools"][0]["input_schema"].is_object());
    assert_eq!(b1["messages"].as_array().unwrap().len(), 1);
    let b2 = reqs[1].json();
    let msgs = b2["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 3);
    assert_eq!(msgs[1]["role"], "assistant");
    assert_eq!(msgs[1]["content"][0]["type"], "tool_use");
    assert_eq!(msgs[2]["role"], "user");
    assert_eq!(
        msgs[2]["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "toolu_fake_0",
             "content": "{\"path\":\"brief.md\",\"bytes\":5}"},
            {"type": "tool_result", "tool_use_id": "toolu_fake_1",
             "content": "{\"error\":\"not found: missing.md\"}", "is_error": true}
        ])
    );
    fake.finish();
}

#[test]
fn http_401_fails_the_render_with_the_hint_and_no_key() {
    let fake = FakeProvider::with_entries([fake::error_401(Protocol::Chat)]);
    let root = tempfile::tempdir().unwrap();
    let s = settings(root.path());
    let fx = Fixture::new(vec![file("a.txt", "a")]);
    let r = real_agent(provider("openrouter", &fake), &s);
    let f = failed(r.render(&fx.ctx("plain")));
    assert_eq!(
        f.reason,
        "model call failed: openrouter rejected the key in FAKE_KEY (HTTP 401): check FAKE_KEY"
    );
    assert!(!f.reason.contains(CANARY));
    assert_eq!(f.usage, None);
    assert!(!work_dir(root.path(), "default", "plain").exists());
    assert_eq!(fake.request_count(), 1, "a 401 is not retried");
    fake.finish();
}

// ---------------------------------------------------------------------------------------------
// End to end through the reconciler

/// Answers with queued responses whatever the request, logging the requests.
struct ScriptClient {
    queue: Mutex<VecDeque<ModelResponse>>,
    log: Mutex<Vec<ModelRequest>>,
}

impl ModelClient for ScriptClient {
    fn complete(&self, req: &ModelRequest) -> Result<ModelResponse, ModelError> {
        self.log.lock().unwrap().push(req.clone());
        self.queue
            .lock()
            .unwrap()
            .pop_front()
            .ok_or(ModelError::ReplayExhausted)
    }
}

fn pair_ir() -> Ir {
    let mut ir = Ir::default();
    for (id, ws, rules) in [
        (
            "price-watch",
            WakeSource::SelfWake,
            Arc::new(TopKeyRules {
                facets: vec!["prices".into()],
            }) as Arc<dyn reactor::core::NodeRules>,
        ),
        ("price-brief", WakeSource::Input, Arc::new(AtomicRules)),
    ] {
        ir.topology.nodes.push(TopologyNode {
            node: id.into(),
            contract_fingerprint: Some(format!("contract:{id}")),
            wake_source: Some(ws),
        });
        ir.nodes.insert(
            id.into(),
            NodeIr {
                id: id.into(),
                contract_fingerprint: format!("contract:{id}"),
                wake_source: ws,
                rules,
            },
        );
    }
    ir.topology.edges = vec![Edge::new("price-watch", "price-brief", "prices")];
    ir.topology.acyclic = true;
    ir
}

fn pair_script() -> Vec<ModelResponse> {
    let truth = r#"{"prices":[{"vendor":"a","price":3}],"checked":"today"}"#;
    vec![
        turn(
            vec![call(
                "w1",
                "ws_write",
                json!({"path": "truth.json", "content": truth, "encoding": null}),
            )],
            usage(1000, 800, 50),
        ),
        turn(
            vec![call(
                "f1",
                "finish",
                json!({"status": "done", "reason": null,
                       "semantic_diff": {"summary": "one price", "notes": null},
                       "attestations": {"own-page": true}}),
            )],
            usage(1100, 1000, 20),
        ),
        turn(
            vec![call(
                "r1",
                "wm_read_upstream",
                json!({"producer": "price-watch", "path": "truth.json", "offset": null}),
            )],
            usage(500, 0, 10),
        ),
        turn(
            vec![
                call(
                    "w2",
                    "ws_write",
                    json!({"path": "brief.md", "content": "a: 3\n", "encoding": null}),
                ),
                call("f2", "finish", finish_done()),
            ],
            usage(600, 500, 30),
        ),
    ]
}

fn run_pair(state: &Path, work: &Path, client: Arc<dyn ModelClient>) -> Reactor {
    let mut s = settings(work);
    s.max_turns = 5;
    let render = Arc::new(real_agent(client, &s));
    let (r, _) = Reactor::open(state, pair_ir(), render, ReactorOptions::default()).unwrap();
    let results = r
        .ingest("price-watch", Wake::new(WakeSource::External))
        .unwrap();
    let got: Vec<(String, Disposition)> = results
        .iter()
        .map(|x| (x.node.clone(), x.disposition))
        .collect();
    assert_eq!(
        got,
        [
            ("price-watch".to_string(), Disposition::Rendered),
            ("price-brief".to_string(), Disposition::Rendered)
        ],
        "{:?}",
        results.iter().map(|x| x.reason.clone()).collect::<Vec<_>>()
    );
    r
}

#[test]
fn reconciler_commits_agent_renders_and_replay_is_deterministic() {
    let work = tempfile::tempdir().unwrap();
    let state1 = tempfile::tempdir().unwrap();
    let script = Arc::new(ScriptClient {
        queue: Mutex::new(pair_script().into()),
        log: Mutex::new(Vec::new()),
    });
    let r1 = run_pair(state1.path(), work.path(), script.clone());
    let requests = script.log.lock().unwrap().clone();
    assert_eq!(requests.len(), 4);
    let watch = r1.last_receipt("price-watch").unwrap();
    assert_eq!(watch.status, Status::Rendered);
    assert_eq!(watch.cost.provider, "openrouter");
    assert_eq!(watch.cost.model, "render-model");
    // (200 + 50) + (100 + 20) fresh; 800 + 1000 reused.
    assert_eq!((watch.cost.fresh, watch.cost.reused), (370, 1800));
    assert_eq!(watch.cost.surprise_cause, WakeSource::External);
    assert_eq!(
        js::compact_string(&js::Value::Object(watch.semantic_diff.clone())),
        r#"{"summary":"one price"}"#
    );
    let brief = r1.last_receipt("price-brief").unwrap();
    assert_eq!((brief.cost.fresh, brief.cost.reused), (510 + 130, 500));
    assert_eq!(brief.wake.source, WakeSource::Input);
    assert!(brief.semantic_diff.is_empty());
    // The brief's wake header names the producer receipt that woke it and the input slot.
    assert_eq!(requests[2].purpose, "render:price-brief");
    assert!(
        requests[2].system[2].contains(&format!("`{}`", watch.content_hash)),
        "{}",
        requests[2].system[2]
    );
    assert!(requests[2].system[2].contains("`price-watch` · `prices` → `sha256:"));
    // The upstream read returned the committed truth.
    let Message::Tool {
        content, is_error, ..
    } = &requests[3].messages[2]
    else {
        panic!("expected a tool result: {:?}", requests[3].messages);
    };
    assert!(!is_error);
    assert!(content.contains(r#"\"vendor\":\"a\""#), "{content}");
    assert_eq!(
        r1.store().published_files("price-brief"),
        vec![file("brief.md", "a: 3\n")]
    );
    assert_eq!(r1.store().published_files("price-watch").len(), 1);
    // Replay the logged exchanges on a fresh state directory: identical receipts.
    let recs: Vec<ModelRecord> = requests
        .into_iter()
        .zip(pair_script())
        .enumerate()
        .map(|(i, (request, response))| ModelRecord {
            id: json!(i + 1),
            request,
            response,
        })
        .collect();
    let replay = Arc::new(ReplayClient::new(recs));
    let state2 = tempfile::tempdir().unwrap();
    let _r2 = run_pair(state2.path(), work.path(), replay.clone());
    assert_eq!(replay.remaining(), 0);
    assert_eq!(
        std::fs::read(state1.path().join("receipts.json")).unwrap(),
        std::fs::read(state2.path().join("receipts.json")).unwrap()
    );
    assert!(
        files_under(work.path()).is_empty(),
        "working directories are removed"
    );
}
