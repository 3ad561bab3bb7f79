//! `reactor trigger <node> [--data <json> | --data @<file> | --data @-]` (HOST.md §8.5): one
//! external wake — forwarded to a running daemon that holds the state directory, or a one-shot
//! over the durable state (boot, stage the data into a gateway, wake, drain, report).

use std::io::Read;
use std::process::ExitCode;
use std::time::Duration;

use crate::core::Disposition;
use crate::format::json::{self, Value};
use crate::host::args::{ArgStream, Globals, OwnedArg};
use crate::host::boot::{self, ModelPlan};
use crate::host::error::{ErrorKind, HostError};
use crate::host::hosted::{HostedReactor, NotDelivered, external_wake};
use crate::host::output::{self, Report};
use crate::host::progress::Progress;
use crate::host::run::{
    cleanup_work, collect_receipts, compile_status, dispositions_block, dispositions_json,
    rollup_of,
};
use crate::store::lock::{StateLock, holder_pid};

/// `reactor trigger --help`.
pub const HELP: &str = "reactor trigger — one external wake of one node

Usage:
  reactor trigger <node> [--data <json> | --data @<file> | --data @-] [global flags]

Flags:
  --data <value>   JSON data for the wake: inline JSON, @<file> (relative to the working
                   directory) or @- (stdin); at most 1 MiB. Data sent to a gateway is staged
                   as one arrival (the same payload twice is one arrival); data sent to any
                   other node is validated and reported but not delivered.

When `reactor serve --http` holds the state directory, the wake is forwarded to it.
Otherwise a one-shot reactor boots over the durable state, wakes the node, drains and reports.
";

/// The largest `--data` value (1 MiB).
pub const DATA_LIMIT: usize = 1_048_576;

/// Parsed arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Args {
    /// The node.
    pub node: String,
    /// The raw `--data` value.
    pub data: Option<String>,
}

/// Parses `trigger` arguments.
pub fn parse(s: &mut ArgStream<'_>) -> Result<Args, HostError> {
    let mut node = None;
    let mut data = None;
    while let Some(arg) = s.next_arg()? {
        match arg {
            OwnedArg::Long(ref l) if l == "data" => data = Some(s.value("--data")?),
            OwnedArg::Value(v) if node.is_none() => node = Some(s.positional(v, "<node>")?),
            other => return Err(s.unexpected(&other)),
        }
    }
    let node = node.ok_or_else(|| s.missing("<node>"))?;
    Ok(Args { node, data })
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
            let holder = holder_pid(&spec.state_dir);
            return match daemon_record(&spec.state_dir, holder) {
                Some(d) if d.url.is_some() => forward(&a.node, data.as_ref(), &d, g.json),
                Some(d) => Err(HostError::state(format!(
                    "state dir {} is held by reactor serve (pid {}) without an HTTP surface",
                    spec.state_dir.display(),
                    d.pid
                ))
                .with_hint("restart it with --http to accept triggers")),
                None => Err(HostError::state(format!(
                    "state dir {} is in use by another writer (pid {})",
                    spec.state_dir.display(),
                    holder
                        .map(|p| p.to_string())
                        .unwrap_or_else(|| "unknown".into())
                ))
                .with_hint(
                    "stop that process first, or use `reactor trigger` to reach a running daemon",
                )),
            };
        }
        Err(e) => return Err(HostError::state(e.to_string())),
    };
    let plan = ModelPlan::resolve(&project, g.offline()?)?;
    boot::load_contracts(&spec)?;
    let key = plan.require_key(&project)?;
    let client = plan.client(key.clone())?;
    let node = a.node.clone();
    let progress = Progress::for_verb("trigger", g.json, g.quiet);
    let boot::Prepared {
        outcome, reactor, ..
    } = boot::prepare(
        &project,
        &spec,
        &plan,
        boot::Access {
            client,
            key: key.as_ref(),
            progress: &progress,
        },
        "compile failed (IR stale)",
        |loaded| match loaded.ir.node(&node) {
            Some(_) => Ok(()),
            None => Err(HostError::input(format!(
                "node '{node}' is not in the compiled topology"
            ))),
        },
    )?;
    let appended = collect_receipts(&reactor);
    let gateways = spec.gateways.iter().map(|gc| gc.to_spec()).collect();
    let hosted = HostedReactor::new(&spec.name, 0, std::sync::Arc::new(reactor), gateways);
    let boot_results = hosted.reactor.boot().map_err(|e| {
        progress.finish();
        HostError::state(e.to_string())
    })?;
    let outcome_wake = external_wake(&hosted, &a.node, data.as_ref());
    progress.finish();
    let outcome_wake = outcome_wake.map_err(|e| HostError::state(e.to_string()))?;
    cleanup_work();
    drop(lock);
    let receipts = appended.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let rollup = rollup_of(&receipts);
    let failed = boot_results
        .iter()
        .chain(&outcome_wake.results)
        .any(|r| r.disposition == Disposition::Failed);
    let (compile_line, compile_json) = compile_status(&outcome);
    let data_line =
        data.as_ref().map(
            |_| match (outcome_wake.data_delivered, outcome_wake.not_delivered) {
                (Some(true), _) => {
                    let n = outcome_wake.inbox_len.unwrap_or(0);
                    format!(
                        "delivered: staged as arrival {} ({}::ingress now holds {n} item{})",
                        outcome_wake.arrival_id.clone().unwrap_or_default(),
                        a.node,
                        if n == 1 { "" } else { "s" }
                    )
                }
                (_, Some(NotDelivered::Duplicate)) => format!(
                    "not delivered: duplicate arrival {} (already staged)",
                    outcome_wake.arrival_id.clone().unwrap_or_default()
                ),
                _ => format!(
                    "not delivered: '{}' is not a gateway and a wake carries no payload",
                    a.node
                ),
            },
        );
    if g.json {
        let mut m = serde_json::Map::new();
        m.insert("status".into(), "triggered".into());
        m.insert("ok".into(), (!failed).into());
        m.insert("triggered".into(), a.node.clone().into());
        m.insert("compile".into(), compile_json);
        m.insert("boot".into(), dispositions_json(&boot_results));
        m.insert(
            "dispositions".into(),
            dispositions_json(&outcome_wake.results),
        );
        m.insert(
            "cost".into(),
            serde_json::json!({"fresh": rollup.total.fresh, "reused": rollup.total.reused}),
        );
        m.insert("receipts".into(), receipts.len().into());
        if let Some(d) = &data {
            m.insert("data".into(), d.to_serde());
            m.insert(
                "dataDelivered".into(),
                outcome_wake.data_delivered.unwrap_or(false).into(),
            );
            if let Some(id) = &outcome_wake.arrival_id {
                m.insert("arrivalId".into(), id.clone().into());
            }
        }
        output::print_json(&serde_json::Value::Object(m))?;
    } else {
        let mut r = Report::new("trigger");
        r.field("triggered", &a.node);
        if let Some(d) = &data {
            r.field("payload", payload_line(d));
        }
        if let Some(l) = &data_line {
            r.field("data", l);
        }
        if matches!(outcome, boot::CompileOutcome::Compiled(_)) {
            r.field("compile", compile_line);
        }
        if !boot_results.is_empty() {
            r.blank();
            r.line(2, "boot sweep:");
            dispositions_block(&mut r, &boot_results);
        }
        r.blank();
        r.line(2, "dispositions:");
        dispositions_block(&mut r, &outcome_wake.results);
        r.blank();
        r.field("receipts", receipts.len().to_string());
        r.field(
            "run cost",
            output::pair(rollup.total.fresh, rollup.total.reused),
        );
        output::write_stdout(&r.finish())?;
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn forward(
    node: &str,
    data: Option<&Value>,
    d: &Daemon,
    json_out: bool,
) -> Result<ExitCode, HostError> {
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
    let v = json::parse_str(&text).ok();
    if status != 200 {
        let msg = v
            .as_ref()
            .and_then(|v| v.get("error"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| format!("the daemon answered HTTP {status}"));
        return Err(HostError::new(ErrorKind::Internal, msg));
    }
    let v = v.ok_or_else(|| HostError::internal("the daemon's answer is not JSON"))?;
    let receipts = v
        .get("receiptsAdded")
        .and_then(Value::as_f64)
        .unwrap_or(0.0) as u64;
    let delivered = v.get("dataDelivered").and_then(|x| match x {
        Value::Bool(b) => Some(*b),
        _ => None,
    });
    if json_out {
        let mut m = serde_json::Map::new();
        m.insert("status".into(), "forwarded".into());
        m.insert("ok".into(), true.into());
        m.insert("daemon".into(), base.clone().into());
        m.insert(
            "reactor".into(),
            v.get("reactor").map(Value::to_serde).unwrap_or_default(),
        );
        m.insert("triggered".into(), node.into());
        m.insert("receiptsAdded".into(), receipts.into());
        if let Some(dv) = data {
            m.insert("data".into(), dv.to_serde());
            m.insert("dataDelivered".into(), delivered.unwrap_or(false).into());
        }
        output::print_json(&serde_json::Value::Object(m))?;
    } else {
        let mut r = Report::new("trigger");
        r.field(
            "forwarded",
            format!("{base} (reactor serve, pid {})", d.pid),
        );
        r.field("triggered", node);
        if let Some(dv) = data {
            r.field("payload", payload_line(dv));
            r.field(
                "data",
                if delivered == Some(true) {
                    "delivered"
                } else {
                    "not delivered (a duplicate, or not a gateway)"
                },
            );
        }
        r.field("receipts", receipts.to_string());
        output::write_stdout(&r.finish())?;
    }
    Ok(ExitCode::SUCCESS)
}
