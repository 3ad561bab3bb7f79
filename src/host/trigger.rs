//! `reactor trigger <node> [--data <json> | --data @<file> | --data @-]` (HOST.md §8.5): one
//! external wake — forwarded to a running daemon that holds the state directory, or a one-shot
//! over the durable state (boot, stage the data into a gateway, wake, drain, report).

use std::io::Read;
use std::process::ExitCode;
use std::time::Duration;

use serde::Serialize;

use crate::format::json::{self, Value};
use crate::host::args::{ArgStream, Globals, OwnedArg};
use crate::host::boot::{self, ModelPlan};
use crate::host::daemon::{ErrorReply, TriggerReply};
use crate::host::error::{ErrorKind, HostError};
use crate::host::hosted::{HostedReactor, NotDelivered, TriggerOutcome, external_wake};
use crate::host::output::Report;
use crate::host::progress::Progress;
use crate::host::report::{CompileStep, DispositionRow, VerbReport, dispositions_block, print};
use crate::host::rollup::Tokens;
use crate::host::run::{cleanup_work, collect_receipts, rollup_of};
use crate::store::lock::{StateLock, holder_pid};

/// `reactor trigger --help`.
pub(crate) const HELP: &str = "reactor trigger — one external wake of one node

Usage:
  reactor trigger <node> [--data <json> | --data @<file> | --data @-]
                  [--parallel-renders <n>] [global flags]

Flags:
  --data <value>   JSON data for the wake: inline JSON, @<file> (relative to the working
                   directory) or @- (stdin); at most 1 MiB. Data sent to a gateway is staged
                   as one arrival (the same payload twice is one arrival); data sent to any
                   other node is validated and reported but not delivered.
  --parallel-renders <n>
                   Renders run at once within a drain of the one-shot, 1-64 (default
                   model.parallel_renders, 4); receipts commit in the same order

When `reactor serve --http` holds the state directory, the wake is forwarded to it.
Otherwise a one-shot reactor boots over the durable state, wakes the node, drains and reports.
";

/// The largest `--data` value (1 MiB).
pub(crate) const DATA_LIMIT: usize = 1_048_576;

/// Parsed arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Args {
    /// The node.
    pub node: String,
    /// The raw `--data` value.
    pub data: Option<String>,
    /// `--parallel-renders` (overrides `model.parallel_renders`; one-shot only).
    pub parallel_renders: Option<usize>,
}

/// Parses `trigger` arguments.
pub fn parse(s: &mut ArgStream<'_>) -> Result<Args, HostError> {
    let mut node = None;
    let mut data = None;
    let mut parallel_renders = None;
    while let Some(arg) = s.next_arg()? {
        match arg {
            OwnedArg::Long(ref l) if l == "data" => data = Some(s.value("--data")?),
            OwnedArg::Long(ref l) if l == "parallel-renders" => {
                parallel_renders = Some(s.parallel_renders()?)
            }
            OwnedArg::Value(v) if node.is_none() => node = Some(s.positional(v, "<node>")?),
            other => return Err(s.unexpected(&other)),
        }
    }
    let node = node.ok_or_else(|| s.missing("<node>"))?;
    Ok(Args {
        node,
        data,
        parallel_renders,
    })
}

/// Reads and parses `--data` (HOST.md §8.5).
pub fn parse_data(raw: &str) -> Result<Value, HostError> {
    let bytes: Vec<u8> = if raw == "@-" {
        let mut b = Vec::new();
        std::io::stdin()
            .take(DATA_LIMIT as u64 + 1)
            .read_to_end(&mut b)
            .map_err(|e| invalid_data(&e.to_string()))?;
        b
    } else if let Some(path) = raw.strip_prefix('@') {
        let f = std::fs::File::open(path).map_err(|e| invalid_data(&format!("{path}: {e}")))?;
        let mut b = Vec::new();
        f.take(DATA_LIMIT as u64 + 1)
            .read_to_end(&mut b)
            .map_err(|e| invalid_data(&format!("{path}: {e}")))?;
        b
    } else {
        raw.as_bytes().to_vec()
    };
    if bytes.len() > DATA_LIMIT {
        return Err(invalid_data("more than 1 MiB"));
    }
    json::parse(&bytes).map_err(|e| invalid_data(&e.to_string()))
}

fn invalid_data(msg: &str) -> HostError {
    HostError::input(format!("invalid --data ({msg})"))
}

/// The `payload` line: compact JSON cut at 200 characters with `…`.
pub fn payload_line(v: &Value) -> String {
    let s = json::compact_string(v);
    if s.chars().count() > 200 {
        let cut: String = s.chars().take(200).collect();
        format!("{cut}…")
    } else {
        s
    }
}

/// `serve.json` when it names the lock holder (FORMATS.md §12.2).
struct Daemon {
    pid: u32,
    url: Option<String>,
    prefix: String,
    auth_env: Option<String>,
}

fn daemon_record(state_dir: &std::path::Path, holder: Option<u32>) -> Option<Daemon> {
    let v = json::parse(&std::fs::read(state_dir.join("serve.json")).ok()?).ok()?;
    let pid = v.get("pid").and_then(Value::as_f64)? as u32;
    if Some(pid) != holder {
        return None;
    }
    Some(Daemon {
        pid,
        url: v.get("url").and_then(Value::as_str).map(str::to_string),
        prefix: v
            .get("prefix")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        auth_env: v
            .get("auth_token_env")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

/// The one-shot `trigger` report (HOST.md §8.5). JSON: `{"status": "triggered", "ok",
/// "triggered", "compile", "boot": [...], "dispositions": [...], "cost": {"fresh", "reused"},
/// "receipts": N, "data"?, "dataDelivered"?, "arrivalId"?}`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TriggerReport {
    /// Always `triggered`.
    pub status: &'static str,
    /// No disposition (boot or trigger) failed.
    pub ok: bool,
    /// The node.
    pub triggered: String,
    /// The compile step.
    pub compile: CompileStep,
    /// The boot drain's results.
    pub boot: Vec<DispositionRow>,
    /// The trigger drain's results.
    pub dispositions: Vec<DispositionRow>,
    /// The tokens of the receipts this invocation appended.
    pub cost: Tokens,
    /// The number of receipts this invocation appended.
    pub receipts: usize,
    /// The parsed `--data` value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Whether the data was staged (present with `--data`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) data_delivered: Option<bool>,
    /// The data's arrival id (entry points only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arrival_id: Option<String>,
    /// The `data` line (HOST.md §8.5), with `--data`.
    #[serde(skip)]
    pub(crate) data_line: Option<String>,
}

impl VerbReport for TriggerReport {
    fn to_text(&self) -> String {
        let mut r = Report::new("trigger");
        r.field("triggered", &self.triggered);
        if let Some(d) = &self.data {
            r.field("payload", payload_line(d));
        }
        if let Some(l) = &self.data_line {
            r.field("data", l);
        }
        if self.compile.compiled() {
            r.field("compile", self.compile.line());
        }
        if !self.boot.is_empty() {
            r.blank();
            r.line(2, "boot sweep:");
            dispositions_block(&mut r, &self.boot);
        }
        r.blank();
        r.line(2, "dispositions:");
        dispositions_block(&mut r, &self.dispositions);
        r.blank();
        r.field("receipts", self.receipts.to_string());
        r.field("run cost", self.cost.pair());
        r.finish()
    }
}

/// The `data` line of a one-shot trigger (HOST.md §8.5).
fn data_line(node: &str, w: &TriggerOutcome) -> String {
    match (w.data_delivered, w.not_delivered) {
        (Some(true), _) => {
            let n = w.inbox_len.unwrap_or(0);
            format!(
                "delivered: staged as arrival {} ({node}::ingress now holds {n} item{})",
                w.arrival_id.clone().unwrap_or_default(),
                if n == 1 { "" } else { "s" }
            )
        }
        (_, Some(NotDelivered::Duplicate)) => format!(
            "not delivered: duplicate arrival {} (already staged)",
            w.arrival_id.clone().unwrap_or_default()
        ),
        _ => format!("not delivered: '{node}' is not a gateway and a wake carries no payload"),
    }
}

/// Runs `reactor trigger`.
pub fn exec(a: Args, g: &Globals) -> Result<ExitCode, HostError> {
    let data = a.data.as_deref().map(parse_data).transpose()?;
    let (project, spec) = g.select_reactor("trigger")?;
    crate::store::fsutil::create_dir_all_durable(&spec.state_dir).map_err(|e| {
        HostError::state(format!(
            "cannot create state dir {}: {e}",
            spec.state_dir.display()
        ))
    })?;
    let lock = match StateLock::acquire(&spec.state_dir) {
        Ok(l) => l,
        Err(crate::store::lock::LockError::Held { .. }) => {
            return held(&spec.state_dir, &a.node, data.as_ref(), g.json);
        }
        Err(e) => return Err(e.into()),
    };
    let report = one_shot(&project, &spec, &a, data, g)?;
    drop(lock);
    print(&report, g.json)?;
    Ok(ExitCode::from(u8::from(!report.ok)))
}

/// The state directory is locked: forward to the daemon holding it, or refuse (HOST.md §8.5).
fn held(
    state_dir: &std::path::Path,
    node: &str,
    data: Option<&Value>,
    json_out: bool,
) -> Result<ExitCode, HostError> {
    let holder = holder_pid(state_dir);
    match daemon_record(state_dir, holder) {
        Some(d) if d.url.is_some() => {
            let report = forward(node, data, &d)?;
            print(&report, json_out)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(d) => Err(HostError::state(format!(
            "state dir {} is held by reactor serve (pid {}) without an HTTP surface",
            state_dir.display(),
            d.pid
        ))
        .with_hint("restart it with --http to accept triggers")),
        None => Err(HostError::state(format!(
            "state dir {} is in use by another writer (pid {})",
            state_dir.display(),
            holder
                .map(|p| p.to_string())
                .unwrap_or_else(|| "unknown".into())
        ))
        .with_hint("stop that process first, or use `reactor trigger` to reach a running daemon")),
    }
}

/// The one-shot trigger under the lock: boot, stage, wake, drain (HOST.md §8.5 steps 1–5).
fn one_shot(
    project: &crate::host::project::Project,
    spec: &crate::host::project::ReactorSpec,
    a: &Args,
    data: Option<Value>,
    g: &Globals,
) -> Result<TriggerReport, HostError> {
    let node = a.node.as_str();
    let plan = ModelPlan::resolve(project, g.offline()?)?.with_parallel_renders(a.parallel_renders);
    boot::load_contracts(spec)?;
    let key = plan.require_key(project)?;
    let client = plan.client(key.clone())?;
    let progress = Progress::for_verb("trigger", g.json, g.quiet);
    let boot::Prepared {
        outcome, reactor, ..
    } = boot::prepare(
        project,
        spec,
        &plan,
        boot::Access {
            client,
            key: key.as_ref(),
            progress: &progress,
        },
        "compile failed (IR stale)",
        |loaded| match loaded.ir.node(node) {
            Some(_) => Ok(()),
            None => Err(HostError::input(format!(
                "node '{node}' is not in the compiled topology"
            ))),
        },
    )?;
    crate::host::inflight::record_in_flight(&reactor);
    let appended = collect_receipts(&reactor);
    let gateways = spec.gateways.iter().map(|gc| gc.to_spec()).collect();
    let hosted = HostedReactor::new(&spec.name, 0, std::sync::Arc::new(reactor), gateways);
    let boot_results = hosted.reactor.boot().inspect_err(|_| progress.finish())?;
    let wake = external_wake(&hosted, node, data.as_ref());
    progress.finish();
    let wake = wake?;
    cleanup_work();
    let receipts = appended.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let boot = DispositionRow::of(&boot_results);
    let dispositions = DispositionRow::of(&wake.results);
    Ok(TriggerReport {
        status: "triggered",
        ok: !boot.iter().chain(&dispositions).any(DispositionRow::failed),
        triggered: node.to_string(),
        compile: CompileStep::from(&outcome),
        boot,
        dispositions,
        cost: rollup_of(&receipts).total,
        receipts: receipts.len(),
        data_delivered: data.as_ref().map(|_| wake.data_delivered.unwrap_or(false)),
        arrival_id: data.as_ref().and(wake.arrival_id.clone()),
        data_line: data.as_ref().map(|_| data_line(node, &wake)),
        data,
    })
}

/// A trigger forwarded to the daemon (HOST.md §8.5). JSON: `{"status": "forwarded", "ok":
/// true, "daemon", "reactor", "triggered", "receiptsAdded", "data"?, "dataDelivered"?}`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ForwardedReport {
    /// Always `forwarded`.
    pub status: &'static str,
    /// Always true (a non-200 answer is an error).
    pub ok: bool,
    /// The daemon's base URL, without its trailing slash.
    pub daemon: String,
    /// The reactor the daemon named (`null` when it named none).
    pub reactor: Option<String>,
    /// The node.
    pub triggered: String,
    /// Receipts the daemon's task appended.
    pub receipts_added: u64,
    /// The `--data` value sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Whether the daemon staged it (present with `--data`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) data_delivered: Option<bool>,
    /// The daemon's pid.
    #[serde(skip)]
    pub pid: u32,
}

impl VerbReport for ForwardedReport {
    fn to_text(&self) -> String {
        let mut r = Report::new("trigger");
        r.field(
            "forwarded",
            format!("{} (reactor serve, pid {})", self.daemon, self.pid),
        );
        r.field("triggered", &self.triggered);
        if let Some(dv) = &self.data {
            r.field("payload", payload_line(dv));
            r.field(
                "data",
                if self.data_delivered == Some(true) {
                    "delivered"
                } else {
                    "not delivered (a duplicate, or not a gateway)"
                },
            );
        }
        r.field("receipts", self.receipts_added.to_string());
        r.finish()
    }
}

fn forward(node: &str, data: Option<&Value>, d: &Daemon) -> Result<ForwardedReport, HostError> {
    let base = d.url.clone().unwrap_or_default();
    let base = base.trim_end_matches('/').to_string();
    let url = format!(
        "{base}{}/trigger/{}",
        d.prefix,
        crate::host::connectors::url_encode(node)
    );
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(Duration::from_secs(5)))
        .build()
        .into();
    let mut req = agent.post(&url).header("Content-Type", "application/json");
    if let Some(env) = &d.auth_env {
        let token = std::env::var(env).map_err(|_| {
            HostError::config(format!(
                "the daemon requires a bearer token from ${env}, which is not set"
            ))
        })?;
        req = req.header("Authorization", format!("Bearer {token}"));
    }
    let body = data.map(json::compact_string).unwrap_or_default();
    let mut resp = req.send(body.as_bytes()).map_err(|e| {
        HostError::new(
            ErrorKind::Internal,
            format!("cannot reach the daemon at {base}: {e}"),
        )
    })?;
    let status = resp.status().as_u16();
    let text = resp.body_mut().read_to_string().unwrap_or_default();
    if status != 200 {
        let msg = serde_json::from_str::<ErrorReply>(&text)
            .map(|e| e.error)
            .unwrap_or_else(|_| format!("the daemon answered HTTP {status}"));
        return Err(HostError::new(ErrorKind::Internal, msg));
    }
    let reply: TriggerReply = serde_json::from_str(&text)
        .map_err(|_| HostError::internal("the daemon's answer is not JSON"))?;
    Ok(ForwardedReport {
        status: "forwarded",
        ok: true,
        daemon: base,
        reactor: reply.reactor,
        triggered: node.to_string(),
        receipts_added: reply.receipts_added,
        data_delivered: data.map(|_| reply.data_delivered.unwrap_or(false)),
        data: data.cloned(),
        pid: d.pid,
    })
}
