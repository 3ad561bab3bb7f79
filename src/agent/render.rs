//! The render agent loop (RUNTIME.md §8): [`AgentRender`] implements the reconciler's render
//! seam ([`Render`]) with a bounded, tool-calling conversation over a [`ModelClient`].
//!
//! One render:
//!
//! 1. looks up the node's [`NodeBrief`] (contract view, facet layout, postconditions, inbound
//!    slots) and builds the request: system blocks `[system prompt, node contract, wake
//!    header]` (§8.3), the pointer input (§8.4) and the tools (§8.5);
//! 2. seeds the working directory `<work root>/<reactor>/<hex(node)>/` with the prior published
//!    files (§8.2);
//! 3. runs turns until a valid `finish`, the turn cap, two consecutive turns without tool calls,
//!    a model error or a sandbox failure (§8.7);
//! 4. on `done` harvests the directory into the product's files; removes the directory unless
//!    `REACTOR_KEEP_WORK=1`;
//! 5. reports the usage summed over every completed turn, for failures too (§8.8–§8.9).
//!
//! The reconciler sanitizes reasons, normalizes the tree, fingerprints, gates and commits.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};

use crate::core::render::{
    Render, RenderContext, RenderFailure, RenderOutcome, RenderProduct, Usage as RenderUsage,
};
use crate::format::address::hex;
use crate::format::json::{self as js, Object};
use crate::format::opwm::FileTree;
use crate::format::sanitize::redact;

use super::prompt::{
    CONTINUE_REMINDER, NodeBrief, PriorSummary, node_contract, pointer_input, tree_version,
    wake_header,
};
use super::sandbox::{DEFAULT_SHELL_TIMEOUT, SandboxError, SandboxRunner};
use super::tools::{
    self, FINISH, FinishSignal, FinishStatus, MAX_WRITE_BYTES, SHELL_EXEC, ToolError, WM_LIST,
    WM_LIST_UPSTREAM, WM_READ, WM_READ_UPSTREAM, WS_DELETE, WS_LIST, WS_READ, WS_WRITE, Workspace,
};
use crate::model::ModelClient;
use crate::model::types::{Message, ModelRequest, TokenCost, ToolArguments, ToolCall, ToolSpec};

/// The default turn cap (`model.max_turns`, HOST.md §4.2).
pub(crate) const DEFAULT_MAX_TURNS: u32 = 200;

/// The variable that keeps render working directories (`1`, HOST.md §2.2).
pub(crate) const KEEP_WORK_ENV: &str = "REACTOR_KEEP_WORK";

/// The reactor segment of the working directory on a single-reactor host.
pub(crate) const DEFAULT_REACTOR: &str = "default";

/// Reason of a `failed` signal without a reason (RUNTIME.md §8.8).
pub const NO_REASON: &str = "render reported failed without a reason";

/// Reason of two consecutive turns without a tool call (RUNTIME.md §8.7).
pub const NO_SIGNAL: &str = "render produced no structured done/failed signal";

/// Reason of a render abandoned because the host's cancellation flag was raised.
pub const CANCELLED: &str = "render cancelled: the host is shutting down";

/// `<tmp>/reactor-work-<pid>`: this process's root of render working directories
/// (RUNTIME.md §8.2).
pub(crate) fn default_work_root() -> PathBuf {
    std::env::temp_dir().join(format!("reactor-work-{}", std::process::id()))
}

/// Whether `REACTOR_KEEP_WORK` is `1` in the process environment.
pub(crate) fn keep_work_from_env() -> bool {
    std::env::var(KEEP_WORK_ENV).is_ok_and(|v| v.trim() == "1")
}

/// The working directory of `node`: `<root>/<reactor>/<lowercase hex of the id's UTF-8 bytes>`.
pub fn work_dir(root: &Path, reactor: &str, node: &str) -> PathBuf {
    root.join(reactor).join(hex(node.as_bytes()))
}

/// Removes a work root (the host calls it with [`default_work_root`] on a normal exit unless
/// `REACTOR_KEEP_WORK=1`). Absent is fine.
pub(crate) fn remove_work_root(root: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(root) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// Settings of [`AgentRender`].
#[derive(Clone, Debug, PartialEq)]
pub struct RenderSettings {
    /// The provider label recorded as `cost.provider` (`openrouter`, `anthropic`, …).
    pub provider: String,
    /// The render model id, sent as `model` and recorded as `cost.model`.
    pub model: String,
    /// `model.temperature`; sent only when set.
    pub temperature: Option<f64>,
    /// `model.reasoning_effort`; sent only when set.
    pub reasoning_effort: Option<String>,
    /// `model.max_turns` (1–10000; 0 counts as 1). Default [`DEFAULT_MAX_TURNS`].
    pub max_turns: u32,
    /// The reactor's name (path-safe, HOST.md §4.4); [`DEFAULT_REACTOR`] on a single-reactor
    /// host.
    pub reactor: String,
    /// Root of the working directories; default [`default_work_root`]. Must lie outside the
    /// state directory.
    pub work_root: PathBuf,
    /// Keep working directories after the render (`REACTOR_KEEP_WORK=1`).
    pub keep_work: bool,
    /// `sandbox.shell_timeout_ms` as a duration (default 300 s).
    pub shell_timeout: Duration,
    /// Secret values (provider keys, bearer tokens) redacted from the reason, summary and notes
    /// a render reports.
    pub secrets: Vec<String>,
}

impl RenderSettings {
    /// Settings with the defaults: no temperature or reasoning effort, 200 turns, reactor
    /// `default`, [`default_work_root`], `keep_work` from `REACTOR_KEEP_WORK`, 300 s shell
    /// timeout, no secrets.
    pub fn new(provider: impl Into<String>, model: impl Into<String>) -> RenderSettings {
        RenderSettings {
            provider: provider.into(),
            model: model.into(),
            temperature: None,
            reasoning_effort: None,
            max_turns: DEFAULT_MAX_TURNS,
            reactor: DEFAULT_REACTOR.to_string(),
            work_root: default_work_root(),
            keep_work: keep_work_from_env(),
            shell_timeout: DEFAULT_SHELL_TIMEOUT,
            secrets: Vec::new(),
        }
    }
}

/// Supplies the [`NodeBrief`] of a node id (`None`: unknown node, the render fails).
pub(crate) type BriefProvider = dyn Fn(&str) -> Option<NodeBrief> + Send + Sync;

/// A node without a brief: the compiled topology does not describe it, so there is no contract
/// view to render from (the failed receipt's reason).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("no contract view for node '{node}': the compiled topology does not describe it")]
pub struct NoBrief {
    /// The node id.
    pub node: String,
}

/// The agent-loop render (RUNTIME.md §8). Shared between worker threads; one instance serves
/// every node of a reactor.
pub struct AgentRender {
    client: Arc<dyn ModelClient>,
    settings: RenderSettings,
    system_prompt: String,
    briefs: Arc<BriefProvider>,
    sandbox: Option<Arc<dyn SandboxRunner>>,
    cancel: Option<Arc<AtomicBool>>,
}

impl std::fmt::Debug for AgentRender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRender")
            .field("provider", &self.settings.provider)
            .field("model", &self.settings.model)
            .field("max_turns", &self.settings.max_turns)
            .field("reactor", &self.settings.reactor)
            .field("work_root", &self.settings.work_root)
            .field("sandbox", &self.sandbox.is_some())
            .finish()
    }
}

impl AgentRender {
    /// A render over `client` with `settings`, the system prompt text (see
    /// [`system_prompt`](super::prompt::system_prompt)) and one brief per node id.
    pub fn new(
        client: Arc<dyn ModelClient>,
        settings: RenderSettings,
        system_prompt: impl Into<String>,
        briefs: HashMap<String, NodeBrief>,
    ) -> AgentRender {
        AgentRender::with_brief_provider(client, settings, system_prompt, move |node| {
            briefs.get(node).cloned()
        })
    }

    /// [`AgentRender::new`] with briefs supplied by a function (for example read from the
    /// compile cache on demand).
    pub(crate) fn with_brief_provider(
        client: Arc<dyn ModelClient>,
        settings: RenderSettings,
        system_prompt: impl Into<String>,
        briefs: impl Fn(&str) -> Option<NodeBrief> + Send + Sync + 'static,
    ) -> AgentRender {
        AgentRender {
            client,
            settings,
            system_prompt: system_prompt.into(),
            briefs: Arc::new(briefs),
            sandbox: None,
            cancel: None,
        }
    }

    /// Offers `shell_exec`, run through `runner` (`sandbox.mode` `docker` or `unix-local`;
    /// see [`SandboxMode::runner`](super::sandbox::SandboxMode::runner)). `None` keeps command
    /// execution disabled.
    pub fn with_sandbox(mut self, runner: Option<Arc<dyn SandboxRunner>>) -> AgentRender {
        self.sandbox = runner;
        self
    }

    /// Observes `flag` between turns: once set, the render stops with [`CANCELLED`].
    pub fn with_cancel(mut self, flag: Arc<AtomicBool>) -> AgentRender {
        self.cancel = Some(flag);
        self
    }

    /// The settings.
    pub fn settings(&self) -> &RenderSettings {
        &self.settings
    }

    /// The working directory of `node` under these settings.
    pub fn work_dir(&self, node: &str) -> PathBuf {
        work_dir(&self.settings.work_root, &self.settings.reactor, node)
    }

    /// The tools offered to `brief`'s renders, in order.
    pub(crate) fn tools_for(&self, brief: &NodeBrief) -> Vec<ToolSpec> {
        tools::tool_specs(&brief.attested_ids(), self.sandbox.is_some())
    }

    /// The first request of a render of `ctx.node`: purpose `render:<node>`, the model and its
    /// settings, the three system blocks, the pointer input and the tools. Every later turn
    /// extends its messages.
    ///
    /// Errors: [`NoBrief`].
    pub fn initial_request(&self, ctx: &RenderContext<'_>) -> Result<ModelRequest, NoBrief> {
        let brief = self.brief(ctx.node)?;
        Ok(self.request_for(ctx, &brief))
    }

    fn brief(&self, node: &str) -> Result<NodeBrief, NoBrief> {
        (self.briefs)(node).ok_or_else(|| NoBrief {
            node: node.to_string(),
        })
    }

    fn request_for(&self, ctx: &RenderContext<'_>, brief: &NodeBrief) -> ModelRequest {
        let prior = PriorSummary::of(ctx.prior);
        ModelRequest {
            purpose: format!("render:{}", ctx.node),
            model: self.settings.model.clone(),
            system: vec![
                self.system_prompt.clone(),
                node_contract(brief),
                wake_header(
                    brief,
                    ctx.contract_fingerprint,
                    ctx.wake,
                    ctx.input_fingerprints,
                    &prior,
                ),
            ],
            messages: vec![Message::user(pointer_input(ctx.node, ctx.wake, &prior))],
            tools: self.tools_for(brief),
            output_schema: None,
            temperature: self.settings.temperature,
            reasoning_effort: self.settings.reasoning_effort.clone(),
            max_output_tokens: None,
        }
    }

    fn redact(&self, text: &str) -> String {
        let secrets: Vec<&str> = self.settings.secrets.iter().map(String::as_str).collect();
        redact(text, &secrets)
    }

    fn usage(&self, turns: u32, tokens: TokenCost) -> Option<RenderUsage> {
        (turns > 0).then(|| RenderUsage {
            provider: self.settings.provider.clone(),
            model: self.settings.model.clone(),
            fresh: tokens.fresh,
            reused: tokens.reused,
        })
    }

    fn product(
        &self,
        signal: FinishSignal,
        files: FileTree,
        usage: Option<RenderUsage>,
    ) -> RenderProduct {
        let mut diff = Object::new();
        if let Some(s) = &signal.summary {
            diff.insert("summary", js::Value::str(self.redact(s)));
        }
        if let Some(notes) = &signal.notes {
            diff.insert(
                "notes",
                js::Value::Array(
                    notes
                        .iter()
                        .map(|n| js::Value::str(self.redact(n)))
                        .collect(),
                ),
            );
        }
        RenderProduct {
            files,
            semantic_diff: diff,
            attestations: signal.attestations,
            usage,
        }
    }
}

/// How a conversation ended.
enum End {
    Finished(FinishSignal),
    Failed(String),
}

/// One tool call's effect.
enum Step {
    Result { content: String, is_error: bool },
    Finish(FinishSignal),
    Abort(String),
}

fn ok(v: Value) -> Step {
    Step::Result {
        content: v.to_string(),
        is_error: false,
    }
}

fn err(message: impl std::fmt::Display) -> Step {
    Step::Result {
        content: json!({"error": message.to_string()}).to_string(),
        is_error: true,
    }
}

/// The state of one render: its node, workspace and cached truths.
struct Session<'a, 'c> {
    ctx: &'a RenderContext<'c>,
    brief: &'a NodeBrief,
    attested: Vec<String>,
    tools: &'a [ToolSpec],
    ws: &'a Workspace,
    sandbox: Option<&'a Arc<dyn SandboxRunner>>,
    shell_timeout: Duration,
    upstream: HashMap<String, FileTree>,
}

fn arg_str<'v>(args: &'v Value, key: &str) -> Option<&'v str> {
    args.get(key).and_then(Value::as_str)
}

fn arg_offset(args: &Value) -> Result<Option<u64>, ToolError> {
    match args.get("offset") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => {
            if let Some(n) = v.as_u64() {
                return Ok(Some(n));
            }
            match v.as_f64() {
                Some(f) if f >= 0.0 && f.fract() == 0.0 && f < 9.0e15 => Ok(Some(f as u64)),
                _ => Err(ToolError::Offset),
            }
        }
    }
}

fn find_file<'t>(tree: &'t FileTree, path: &str) -> Option<&'t [u8]> {
    tree.iter()
        .find(|(p, _)| p == path)
        .map(|(_, b)| b.as_slice())
}

fn tree_listing(tree: &FileTree) -> Value {
    let files: Vec<(String, u64)> = tree
        .iter()
        .map(|(p, b)| (p.clone(), b.len() as u64))
        .collect();
    tools::file_list(&files)
}

/// Reads `raw` from a published tree, with the path rules of the workspace tools.
fn read_tree(tree: &FileTree, raw: &str, offset: Option<u64>) -> Step {
    let path = match tools::tool_path(raw) {
        Ok(p) => p,
        Err(e) => return err(e),
    };
    match find_file(tree, &path) {
        None => err(format!("not found: {path}")),
        Some(bytes) => match tools::read_page(&path, bytes, offset) {
            Ok(v) => ok(v),
            Err(e) => err(e),
        },
    }
}

fn lossy_capped(bytes: &[u8]) -> String {
    let cut = &bytes[..bytes.len().min(super::sandbox::MAX_STREAM_BYTES)];
    String::from_utf8_lossy(cut).into_owned()
}

impl Session<'_, '_> {
    fn upstream_tree(&mut self, producer: &str) -> Result<&FileTree, ToolError> {
        if !self.ctx.upstream.producers().iter().any(|p| p == producer) {
            return Err(ToolError::NotAnInput {
                producer: producer.to_string(),
                node: self.ctx.node.to_string(),
            });
        }
        Ok(match self.upstream.entry(producer.to_string()) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(self.ctx.upstream.read(producer)?),
        })
    }

    fn execute(&mut self, call: &ToolCall) -> Step {
        let Some(tool) = self.tools.iter().find(|t| t.name == call.name) else {
            return if call.name == SHELL_EXEC {
                err(
                    "unknown tool 'shell_exec': command execution is disabled (sandbox.mode is none)",
                )
            } else {
                let names: Vec<&str> = self.tools.iter().map(|t| t.name.as_str()).collect();
                err(format!(
                    "unknown tool {}; available tools: {}",
                    Value::String(call.name.clone()),
                    names.join(", ")
                ))
            };
        };
        let args = match &call.arguments {
            ToolArguments::Json(v) => v,
            ToolArguments::Raw(_) => {
                return err(format!("arguments of {} are not valid JSON", call.name));
            }
        };
        if call.name == FINISH {
            return match tools::parse_finish(args, &self.attested) {
                Ok(signal) => Step::Finish(signal),
                Err(e) => err(format!("invalid finish signal: {e}")),
            };
        }
        if let Err(e) = tools::validate(&tool.parameters, args) {
            return err(format!("invalid arguments for {}: {e}", call.name));
        }
        let offset = match arg_offset(args) {
            Ok(o) => o,
            Err(e) => return err(format!("invalid arguments for {}: {e}", call.name)),
        };
        let path = arg_str(args, "path").unwrap_or("");
        match call.name.as_str() {
            WM_LIST => ok(json!({
                "version": tree_version(self.ctx.prior),
                "files": tree_listing(self.ctx.prior),
            })),
            WM_READ => read_tree(self.ctx.prior, path, offset),
            WM_LIST_UPSTREAM => self.list_upstream(arg_str(args, "producer")),
            WM_READ_UPSTREAM => {
                let producer = arg_str(args, "producer").unwrap_or("").to_string();
                match self.upstream_tree(&producer) {
                    Ok(t) => read_tree(t, path, offset),
                    Err(e) => err(e),
                }
            }
            WS_LIST => match self.ws.list() {
                Ok(files) => ok(json!({"files": tools::file_list(&files)})),
                Err(e) => err(e),
            },
            WS_READ => match self.ws.read(path) {
                Ok((norm, bytes)) => match tools::read_page(&norm, &bytes, offset) {
                    Ok(v) => ok(v),
                    Err(e) => err(e),
                },
                Err(e) => err(e),
            },
            WS_WRITE => self.ws_write(args, path),
            WS_DELETE => match self.ws.delete(path) {
                Ok((norm, deleted)) => ok(json!({"path": norm, "deleted": deleted})),
                Err(e) => err(e),
            },
            SHELL_EXEC => self.shell_exec(arg_str(args, "command").unwrap_or("")),
            other => err(format!("unknown tool '{other}'")),
        }
    }

    /// `wm_list_upstream`: every producer with its facets and version, or one producer's files.
    fn list_upstream(&mut self, producer: Option<&str>) -> Step {
        let Some(p) = producer else {
            let producers: Vec<String> = self.ctx.upstream.producers().to_vec();
            let mut out = Vec::new();
            for p in producers {
                let version = match self.upstream_tree(&p) {
                    Ok(t) => tree_version(t),
                    Err(e) => return err(e),
                };
                out.push(json!({
                    "producer": p,
                    "facets": self.brief.facets_of(&p),
                    "version": version,
                }));
            }
            return ok(json!({"producers": out}));
        };
        match self.upstream_tree(p) {
            Ok(t) => ok(json!({
                "producer": p,
                "version": tree_version(t),
                "files": tree_listing(t),
            })),
            Err(e) => err(e),
        }
    }

    /// `ws_write`: UTF-8 text, or base64 within [`MAX_WRITE_BYTES`] decoded.
    fn ws_write(&self, args: &Value, path: &str) -> Step {
        let content = arg_str(args, "content").unwrap_or("");
        let bytes = match arg_str(args, "encoding") {
            Some("base64") => {
                if content.len() > MAX_WRITE_BYTES / 3 * 4 + 8 {
                    return err(ToolError::EncodedContentTooLarge);
                }
                match base64::engine::general_purpose::STANDARD.decode(content.trim()) {
                    Ok(b) => b,
                    Err(_) => return err(ToolError::NotBase64),
                }
            }
            _ => content.as_bytes().to_vec(),
        };
        match self.ws.write(path, &bytes) {
            Ok((norm, n)) => ok(json!({"path": norm, "bytes": n})),
            Err(e) => err(e),
        }
    }

    /// `shell_exec` in the workspace through the sandbox runner (an unavailable sandbox ends
    /// the render).
    fn shell_exec(&self, command: &str) -> Step {
        let Some(runner) = self.sandbox else {
            return err(ToolError::ShellDisabled);
        };
        match runner.exec(command, self.ws.root(), self.shell_timeout) {
            Ok(out) => ok(json!({
                "exit_code": out.exit_code,
                "stdout": lossy_capped(&out.stdout),
                "stderr": lossy_capped(&out.stderr),
                "timed_out": out.timed_out,
            })),
            Err(e @ SandboxError::Unavailable(_)) => Step::Abort(e.to_string()),
            Err(SandboxError::Failed(m)) => err(m),
        }
    }
}

impl AgentRender {
    /// Runs the conversation; returns how it ended, the number of completed turns and their
    /// summed tokens.
    fn converse(
        &self,
        ctx: &RenderContext<'_>,
        brief: &NodeBrief,
        ws: &Workspace,
    ) -> (End, u32, TokenCost) {
        let mut req = self.request_for(ctx, brief);
        let tools = req.tools.clone();
        let mut session = Session {
            ctx,
            brief,
            attested: brief.attested_ids(),
            tools: &tools,
            ws,
            sandbox: self.sandbox.as_ref(),
            shell_timeout: self.settings.shell_timeout,
            upstream: HashMap::new(),
        };
        let cap = self.settings.max_turns.max(1);
        let mut turns = 0u32;
        let mut tokens = TokenCost::default();
        let mut silent = 0u32;
        while turns < cap {
            if self
                .cancel
                .as_ref()
                .is_some_and(|c| c.load(Ordering::SeqCst))
            {
                return (End::Failed(CANCELLED.into()), turns, tokens);
            }
            let response = match self.client.complete(&req) {
                Ok(r) => r,
                Err(e) => {
                    let reason = if e.is_offline() {
                        e.to_string()
                    } else {
                        format!("model call failed: {e}")
                    };
                    return (End::Failed(reason), turns, tokens);
                }
            };
            turns += 1;
            tokens += response.usage.tokens();
            req.messages.push(response.to_message());
            if response.tool_calls.is_empty() {
                silent += 1;
                if silent >= 2 {
                    return (End::Failed(NO_SIGNAL.into()), turns, tokens);
                }
                req.messages.push(Message::user(CONTINUE_REMINDER));
                continue;
            }
            silent = 0;
            for call in &response.tool_calls {
                match session.execute(call) {
                    Step::Finish(signal) => return (End::Finished(signal), turns, tokens),
                    Step::Abort(reason) => return (End::Failed(reason), turns, tokens),
                    Step::Result { content, is_error } => {
                        req.messages
                            .push(Message::tool_result(call.id.clone(), content, is_error));
                    }
                }
            }
        }
        (
            End::Failed(format!("render exceeded the turn cap ({cap} turns)")),
            turns,
            tokens,
        )
    }
}

impl Render for AgentRender {
    fn render(&self, ctx: &RenderContext<'_>) -> RenderOutcome {
        let fail = |reason: String, usage: Option<RenderUsage>| {
            RenderOutcome::Failed(RenderFailure { reason, usage })
        };
        let brief = match self.brief(ctx.node) {
            Ok(b) => b,
            Err(e) => return fail(e.to_string(), None),
        };
        let dir = self.work_dir(ctx.node);
        let ws = match Workspace::seed(&dir, ctx.prior) {
            Ok(ws) => ws,
            Err(e) => {
                if !self.settings.keep_work {
                    let _ = std::fs::remove_dir_all(&dir);
                }
                return fail(format!("cannot prepare the render workspace: {e}"), None);
            }
        };
        let (end, turns, tokens) = self.converse(ctx, &brief, &ws);
        let usage = self.usage(turns, tokens);
        let outcome = match end {
            End::Failed(reason) => fail(reason, usage),
            End::Finished(signal) if signal.status == FinishStatus::Failed => {
                let reason = signal
                    .reason
                    .as_deref()
                    .map(str::trim)
                    .filter(|r| !r.is_empty())
                    .map(|r| self.redact(r))
                    .unwrap_or_else(|| NO_REASON.to_string());
                fail(reason, usage)
            }
            End::Finished(signal) => match ws.harvest() {
                Ok(files) => RenderOutcome::Done(self.product(signal, files, usage)),
                Err(e) => fail(e.to_string(), usage),
            },
        };
        if !self.settings.keep_work {
            ws.remove();
        }
        outcome
    }
}
