//! `reactor compile [--force] [--check]` (HOST.md §8.3): the compile sessions into the cache.
//!
//! For each reactor (every one of a `reactors:` list in order, or the one named by `--reactor`):
//!
//! 1. load the contracts (none: `no .prose.md contracts found under <dir>`, exit 1);
//! 2. compute the key triple (HOST.md §6.3) and check freshness (§6.4) offline, keylessly and
//!    without the lock;
//! 3. `--check` stops there: the cache-hit report (exit 0) or the stale report (exit 1, with a
//!    `hint:` on stderr). No compile, no network, no lock;
//! 4. a fresh cache without `--force` is a cache hit (zero session cost, no lock, no request);
//! 5. otherwise: offline mode refuses; else check the key, take the state-dir lock (§7.1),
//!    re-check freshness (unless `--force`; another writer may have compiled meanwhile), run the
//!    sessions and write the cache (§6.5). A failed session is `compile failed: <hint>` with a
//!    `hint: tokens already spent: fresh=<n> reused=<n>` line, exit 1, and the previous cache
//!    stands untouched.
//!
//! Reports (text; labels in 15 columns, step labels in 28):
//!
//! ```text
//! reactor compile
//!
//!   status         compiled (sessions ran)
//!   contract-set   sha256:3f1c…
//!   sdk            reactor-rs/0.2.0
//!   model          google/gemini-3.5-flash
//!   state-dir      /abs/proj/.reactor
//!
//!   nodes          2
//!   edges          1
//!   entry points   (none)
//!   acyclic        yes
//!
//!   cost (tokens, surprise_cause: self):
//!     forme                        fresh=1520 reused=0
//!     …
//!
//!   total cost     fresh=4210 reused=0
//! ```
//!
//! A cache hit reads `cache hit (zero session cost)` with the topology read back from
//! `topology.json` and no step block; a stale cache under `--check` reads
//! `STALE (re-compile needed)` with a `reason` line. JSON: see [`CompileReport::to_json`].
//! Several reactors print one report each (JSON `{"reactors": [{"reactor", …}]}`); the exit
//! status is the worst.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::compile::{
    CacheKey, Compiled, Diagnostic, Freshness, LoadedIr, NodeLint, StepCost, TopologySummary,
    compile_project_observed, freshness,
};
use crate::format::sanitize::redact;
use crate::host::args::{ArgStream, Globals, OwnedArg};
use crate::host::boot::{ModelPlan, compile_failure_redacted, load_contracts, take_lock};
use crate::host::error::{ErrorKind, HostError};
use crate::host::output::{self, Report};
use crate::host::progress::Progress;
use crate::host::project::{Project, ReactorSpec};
use crate::model::TokenCost;

/// `reactor compile --help`.
pub const HELP: &str = "reactor compile — run the compile sessions into the cache

Usage:
  reactor compile [--force | --check] [global flags]

Loads the *.prose.md contracts, computes the cache key (contract-set fingerprint,
reactor version, compile model) and checks <state-dir>/compile/ offline. A fresh
cache is a hit at zero session cost. A stale one is recompiled with the configured
compile model (the model key is needed) under the state-dir lock; a failed compile
leaves the previous cache untouched.

Flags:
  --check   Compile nothing: exit 0 when the cache is fresh, 1 when it is stale
            (for CI; needs no key, makes no request, takes no lock)
  --force   Recompile even when the cache is fresh

With a reactors: list every reactor is compiled in order (or one with --reactor);
the exit status is the worst.
";

/// The `--check` hint printed on stderr under a stale report.
pub const STALE_HINT: &str = "run `reactor compile` (needs a model key) to refresh the cache";

/// Parsed `compile` arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Args {
    /// `--force`: recompile even when the cache is fresh.
    pub force: bool,
    /// `--check`: report freshness only (exit 1 when stale).
    pub check: bool,
}

/// Parses `compile` arguments. `--check` with `--force` is a usage error (exit 2).
pub fn parse(s: &mut ArgStream<'_>) -> Result<Args, HostError> {
    let mut a = Args::default();
    while let Some(arg) = s.next_arg()? {
        match &arg {
            OwnedArg::Long(l) if l == "force" => {
                s.no_value("--force")?;
                a.force = true;
            }
            OwnedArg::Long(l) if l == "check" => {
                s.no_value("--check")?;
                a.check = true;
            }
            _ => return Err(s.unexpected(&arg)),
        }
    }
    if a.force && a.check {
        return Err(HostError::usage(
            "--check and --force cannot be used together",
            Some(s.verb()),
        ));
    }
    Ok(a)
}

/// Which of the three report forms (HOST.md §8.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReportStatus {
    /// The sessions ran and the cache was written.
    Compiled,
    /// The cache was fresh: zero session cost.
    CacheHit,
    /// `--check` over a stale cache.
    Stale {
        /// The first applicable reason (HOST.md §6.4).
        reason: String,
        /// The manifest's key triple, when it could be read.
        cached: Option<CacheKey>,
    },
}

/// One reactor's compile report: what the text and JSON forms print.
#[derive(Clone, Debug)]
pub struct CompileReport {
    /// The reactor name, shown when the project has a `reactors:` list.
    pub reactor: Option<String>,
    /// The form.
    pub status: ReportStatus,
    /// The current key triple.
    pub key: CacheKey,
    /// The compiled or cached topology (`None` for a stale report without a readable one).
    pub topology: Option<TopologySummary>,
    /// Forme diagnostics, already sanitized (compiled reports only).
    pub diagnostics: Vec<Diagnostic>,
    /// Lints, already sanitized (compiled reports only).
    pub lints: Vec<NodeLint>,
    /// Per-step costs in session order (compiled reports only).
    pub steps: Vec<StepCost>,
    /// The session cost of this invocation (zero for a cache hit and a stale report).
    pub cost: TokenCost,
    /// The reactor's state directory.
    pub state_dir: PathBuf,
}

/// Model-supplied text made printable: the exact secrets and the key shapes of RUNTIME.md §7.9
/// redacted, control characters (line breaks, escapes) replaced by spaces (HOST.md §5.8).
fn clean(text: &str, secrets: &[&str]) -> String {
    redact(text, secrets)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

impl CompileReport {
    fn base(spec: &ReactorSpec, multi: bool, status: ReportStatus, key: CacheKey) -> Self {
        CompileReport {
            reactor: multi.then(|| spec.name.clone()),
            status,
            key,
            topology: None,
            diagnostics: Vec::new(),
            lints: Vec::new(),
            steps: Vec::new(),
            cost: TokenCost::default(),
            state_dir: spec.state_dir.clone(),
        }
    }

    fn cache_hit(spec: &ReactorSpec, multi: bool, key: CacheKey, loaded: &LoadedIr) -> Self {
        let mut r = CompileReport::base(spec, multi, ReportStatus::CacheHit, key);
        r.topology = Some(loaded.ir.summary());
        r
    }

    fn stale(spec: &ReactorSpec, multi: bool, key: CacheKey, fr: Freshness) -> Self {
        let (reason, cached, topology) = match fr {
            Freshness::Stale {
                reason,
                cached,
                topology,
            } => (reason.to_string(), cached, topology),
            Freshness::Absent { topology } => (
                crate::compile::StaleReason::NoCache.to_string(),
                None,
                topology,
            ),
            Freshness::Fresh(loaded) => {
                // Not reached (callers pass a stale freshness); report the loaded topology.
                return CompileReport::cache_hit(spec, multi, key, &loaded);
            }
        };
        let mut r = CompileReport::base(spec, multi, ReportStatus::Stale { reason, cached }, key);
        r.topology = topology;
        r
    }

    fn compiled(spec: &ReactorSpec, multi: bool, c: &Compiled, secrets: &[&str]) -> Self {
        let mut r = CompileReport::base(spec, multi, ReportStatus::Compiled, c.key.clone());
        r.topology = Some(c.ir.summary());
        r.diagnostics = c
            .diagnostics
            .iter()
            .map(|d| Diagnostic {
                kind: d.kind,
                subscriber: clean(&d.subscriber, secrets),
                requirement: clean(&d.requirement, secrets),
                candidates: d
                    .candidates
                    .iter()
                    .map(|(p, f)| (clean(p, secrets), clean(f, secrets)))
                    .collect(),
            })
            .collect();
        r.lints = c
            .lints
            .iter()
            .map(|l| NodeLint {
                node: clean(&l.node, secrets),
                code: clean(&l.code, secrets),
                message: clean(&l.message, secrets),
            })
            .collect();
        r.steps = c.steps.clone();
        r.cost = c.cost.tokens;
        r
    }

    /// The exit status of this report: 1 for a stale report, else 0.
    pub fn exit_code(&self) -> u8 {
        match self.status {
            ReportStatus::Stale { .. } => 1,
            _ => 0,
        }
    }

    /// The text report (HOST.md §8.3).
    pub fn to_text(&self) -> String {
        let mut r = Report::new("compile");
        if let Some(name) = &self.reactor {
            r.field("reactor", name);
        }
        let status = match &self.status {
            ReportStatus::Compiled => "compiled (sessions ran)",
            ReportStatus::CacheHit => "cache hit (zero session cost)",
            ReportStatus::Stale { .. } => "STALE (re-compile needed)",
        };
        r.field("status", status);
        if let ReportStatus::Stale { reason, .. } = &self.status {
            r.field("reason", reason);
        }
        r.field("contract-set", &self.key.contract_set_fingerprint)
            .field("sdk", &self.key.sdk_version)
            .field("model", &self.key.model)
            .field("state-dir", self.state_dir.display().to_string());
        if !matches!(self.status, ReportStatus::Stale { .. }) {
            let t = self.topology.clone().unwrap_or_default();
            r.blank()
                .field("nodes", t.nodes.to_string())
                .field("edges", t.edges.to_string())
                .field(
                    "entry points",
                    if t.entry_points.is_empty() {
                        "(none)".to_string()
                    } else {
                        t.entry_points.join(", ")
                    },
                )
                .field("acyclic", if t.acyclic { "yes" } else { "no" });
        }
        if !self.diagnostics.is_empty() {
            r.blank().line(2, "Forme diagnostics:");
            for d in &self.diagnostics {
                r.line(4, format!("- {d}"));
            }
        }
        if !self.lints.is_empty() {
            r.blank().line(2, "lints:");
            for l in &self.lints {
                r.line(4, format!("- {l}"));
            }
        }
        if !self.steps.is_empty() {
            r.blank().line(2, "cost (tokens, surprise_cause: self):");
            for s in &self.steps {
                r.node_row(
                    &s.step.label(),
                    output::pair(s.tokens.fresh, s.tokens.reused),
                );
            }
        }
        r.blank().field(
            "total cost",
            output::pair(self.cost.fresh, self.cost.reused),
        );
        r.finish()
    }

    /// The JSON report (HOST.md §8.3): `{"reactor"?, "status": "compiled"|"cache-hit"|"stale",
    /// "reason"?, "contract_set_fingerprint", "sdk_version", "model", "nodes", "edges",
    /// "entry_points", "acyclic", "diagnostics": [{"kind", "subscriber", "requirement"}],
    /// "lints": [{"node", "code", "message"}], "cost": {"fresh", "reused"},
    /// "step_costs": [{"step", "node"?, "fresh", "reused"}], "state_dir", "cached"?}`.
    /// `cached` (stale only) is the manifest's triple `{"contract_set_fingerprint",
    /// "sdk_version", "model"}` or `null`; a stale report without a readable topology has
    /// `nodes` 0, `edges` 0, `entry_points` `[]` and `acyclic` `null`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        if let Some(name) = &self.reactor {
            m.insert("reactor".into(), name.clone().into());
        }
        let status = match &self.status {
            ReportStatus::Compiled => "compiled",
            ReportStatus::CacheHit => "cache-hit",
            ReportStatus::Stale { .. } => "stale",
        };
        m.insert("status".into(), status.into());
        if let ReportStatus::Stale { reason, .. } = &self.status {
            m.insert("reason".into(), reason.clone().into());
        }
        m.insert(
            "contract_set_fingerprint".into(),
            self.key.contract_set_fingerprint.clone().into(),
        );
        m.insert("sdk_version".into(), self.key.sdk_version.clone().into());
        m.insert("model".into(), self.key.model.clone().into());
        match &self.topology {
            Some(t) => {
                m.insert("nodes".into(), t.nodes.into());
                m.insert("edges".into(), t.edges.into());
                m.insert("entry_points".into(), t.entry_points.clone().into());
                m.insert("acyclic".into(), t.acyclic.into());
            }
            None => {
                m.insert("nodes".into(), 0.into());
                m.insert("edges".into(), 0.into());
                m.insert("entry_points".into(), serde_json::Value::Array(Vec::new()));
                m.insert("acyclic".into(), serde_json::Value::Null);
            }
        }
        m.insert(
            "diagnostics".into(),
            self.diagnostics
                .iter()
                .map(|d| {
                    serde_json::json!({
                        "kind": d.kind.as_str(),
                        "subscriber": d.subscriber,
                        "requirement": d.requirement,
                    })
                })
                .collect::<Vec<_>>()
                .into(),
        );
        m.insert(
            "lints".into(),
            self.lints
                .iter()
                .map(|l| serde_json::json!({"node": l.node, "code": l.code, "message": l.message}))
                .collect::<Vec<_>>()
                .into(),
        );
        m.insert(
            "cost".into(),
            serde_json::json!({"fresh": self.cost.fresh, "reused": self.cost.reused}),
        );
        m.insert(
            "step_costs".into(),
            self.steps
                .iter()
                .map(|s| {
                    let mut o = serde_json::Map::new();
                    o.insert("step".into(), s.step.kind().into());
                    if let Some(n) = s.step.node() {
                        o.insert("node".into(), n.into());
                    }
                    o.insert("fresh".into(), s.tokens.fresh.into());
                    o.insert("reused".into(), s.tokens.reused.into());
                    serde_json::Value::Object(o)
                })
                .collect::<Vec<_>>()
                .into(),
        );
        m.insert(
            "state_dir".into(),
            self.state_dir.display().to_string().into(),
        );
        if let ReportStatus::Stale { cached, .. } = &self.status {
            m.insert(
                "cached".into(),
                match cached {
                    Some(k) => serde_json::json!({
                        "contract_set_fingerprint": k.contract_set_fingerprint,
                        "sdk_version": k.sdk_version,
                        "model": k.model,
                    }),
                    None => serde_json::Value::Null,
                },
            );
        }
        serde_json::Value::Object(m)
    }
}

/// Compiles (or checks) one reactor: steps 1–5 of HOST.md §8.3. Errors carry the exact
/// messages of the specification; nothing is written unless the sessions all succeed.
pub fn compile_reactor(
    project: &Project,
    spec: &ReactorSpec,
    plan: &ModelPlan,
    args: &Args,
    progress: &Progress,
) -> Result<CompileReport, HostError> {
    let multi = project.multi;
    let set = load_contracts(spec)?;
    let settings = plan.compile_settings()?;
    let key = settings.cache_key(&set);
    let current = freshness(&spec.state_dir, &key);
    // A cache that will be used but came from another provider or endpoint (issue 8 item 6).
    if let Freshness::Fresh(loaded) = &current
        && !args.force
        && let Some(w) = plan.endpoint_drift(&loaded.manifest)
    {
        crate::host::output::warn(&w);
    }
    if args.check {
        return Ok(match current {
            Freshness::Fresh(loaded) => CompileReport::cache_hit(spec, multi, key, &loaded),
            stale => CompileReport::stale(spec, multi, key, stale),
        });
    }
    if let Freshness::Fresh(loaded) = &current
        && !args.force
    {
        return Ok(CompileReport::cache_hit(spec, multi, key, loaded));
    }
    if plan.offline {
        let message = match current.reason() {
            Some(reason) => format!(
                "the compile cache is stale ({reason}) and offline mode forbids model calls"
            ),
            None => "compile --force needs model calls, and offline mode forbids them".to_string(),
        };
        return Err(HostError::new(ErrorKind::Model, message));
    }
    let Some(api_key) = plan.require_key(project)? else {
        return Err(HostError::internal("no model key although not offline"));
    };
    let _lock = take_lock(&spec.state_dir)?;
    if !args.force
        && let Freshness::Fresh(loaded) = freshness(&spec.state_dir, &key)
    {
        // Another writer compiled between the first check and the lock: a hit after all.
        return Ok(CompileReport::cache_hit(spec, multi, key, &loaded));
    }
    // A writer never works on top of a ledger it would refuse to extend.
    crate::host::boot::check_ledger(&spec.state_dir)?;
    let secret = api_key.expose_secret().to_string();
    let secrets = [secret.as_str()];
    let client = progress.client(plan.client(Some(api_key))?);
    progress.phase("sessions", Some(Progress::sessions_of(&set)));
    let compiled = compile_project_observed(&set, &settings, client.as_ref(), &mut |step| {
        progress.session_done(step)
    });
    progress.finish();
    let compiled =
        compiled.map_err(|e| compile_failure_redacted("compile failed", &e, &secrets))?;
    compiled
        .write_cache(&spec.state_dir, jiff::Timestamp::now())
        .map_err(|e| HostError::state(format!("cannot write the compile cache: {e}")))?;
    if let Some(reason) = freshness(&spec.state_dir, &key).reason() {
        return Err(HostError::internal(format!(
            "the compile cache just written does not read back as fresh: {reason}"
        )));
    }
    Ok(CompileReport::compiled(spec, multi, &compiled, &secrets))
}

/// Runs `compile`.
pub fn exec(a: Args, g: &Globals) -> Result<ExitCode, HostError> {
    let project = g.load_project()?;
    let offline = g.offline()?;
    let targets: Vec<&ReactorSpec> = match g.reactor.as_deref() {
        Some(name) => vec![project.select(Some(name), "compile")?],
        None => project.reactors.iter().collect(),
    };
    let plan = ModelPlan::resolve(&project, offline)?;
    // One display per reactor (each compile clears its own when done).
    let progress = || Progress::for_verb("compile", g.json, g.quiet);
    if targets.len() == 1 {
        let report = compile_reactor(&project, targets[0], &plan, &a, &progress())?;
        emit(&report, g.json)?;
        return Ok(ExitCode::from(report.exit_code()));
    }
    // Several reactors: each in order, one report (or error) each; the worst status wins.
    let mut worst = 0u8;
    let mut documents = Vec::with_capacity(targets.len());
    for spec in targets {
        match compile_reactor(&project, spec, &plan, &a, &progress()) {
            Ok(report) => {
                worst = worst.max(report.exit_code());
                if g.json {
                    documents.push(report.to_json());
                } else {
                    emit(&report, false)?;
                }
            }
            Err(e) => {
                let e = HostError {
                    message: format!("reactor '{}': {}", spec.name, e.message),
                    ..e
                };
                worst = worst.max(e.exit_code());
                output::print_error(&e, false);
                if g.json {
                    let mut doc = serde_json::Map::new();
                    doc.insert("reactor".into(), spec.name.clone().into());
                    doc.insert("status".into(), "error".into());
                    doc.insert("ok".into(), false.into());
                    doc.insert("message".into(), e.json_message().into());
                    documents.push(serde_json::Value::Object(doc));
                }
            }
        }
    }
    if g.json {
        output::print_json(&serde_json::json!({ "reactors": documents }))?;
    }
    Ok(ExitCode::from(worst))
}

/// Prints one report (text or JSON); a stale text report adds its hint on stderr.
fn emit(report: &CompileReport, json: bool) -> Result<(), HostError> {
    if json {
        return output::print_json(&report.to_json());
    }
    let text = report.to_text();
    output::write_stdout(&text)?;
    if matches!(report.status, ReportStatus::Stale { .. }) {
        eprintln!("hint: {STALE_HINT}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::{DiagnosticKind, Step};
    use std::ffi::OsString;

    fn parse_args(v: &[&str]) -> Result<Args, HostError> {
        let mut p = lexopt::Parser::from_args(v.iter().map(OsString::from).collect::<Vec<_>>());
        let mut s = ArgStream::new(&mut p, Globals::default(), "compile");
        parse(&mut s)
    }

    #[test]
    fn flags() {
        assert_eq!(parse_args(&[]).unwrap(), Args::default());
        assert!(parse_args(&["--check"]).unwrap().check);
        assert!(parse_args(&["--json", "--force"]).unwrap().force);
        let e = parse_args(&["--check", "--force"]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(e.message, "--check and --force cannot be used together");
        assert_eq!(e.hints, ["try 'reactor compile --help'"]);
        for bad in [&["--check=yes"][..], &["--bogus"], &["extra"]] {
            assert_eq!(parse_args(bad).unwrap_err().exit_code(), 2, "{bad:?}");
        }
    }

    fn key() -> CacheKey {
        CacheKey {
            contract_set_fingerprint: "sha256:abc".into(),
            sdk_version: "reactor-rs/0.2.0".into(),
            model: "m".into(),
        }
    }

    fn spec() -> ReactorSpec {
        ReactorSpec {
            name: "default".into(),
            contracts_dir: PathBuf::from("/p"),
            state_dir: PathBuf::from("/p/.reactor"),
            gateways: Vec::new(),
            index: None,
        }
    }

    #[test]
    fn compiled_text_layout_and_sanitized_model_text() {
        let mut r = CompileReport::base(&spec(), false, ReportStatus::Compiled, key());
        r.topology = Some(TopologySummary {
            nodes: 2,
            edges: 1,
            entry_points: vec![],
            acyclic: true,
        });
        let secret = "sk-live-secretsecret";
        r.diagnostics = vec![Diagnostic {
            kind: DiagnosticKind::Unsatisfied,
            subscriber: "b".into(),
            requirement: clean(&format!("notes\n{secret}\u{1b}[31m"), &[secret]),
            candidates: vec![],
        }];
        r.lints = vec![NodeLint {
            node: "a".into(),
            code: "x".into(),
            message: "uncovered".into(),
        }];
        r.steps = vec![
            StepCost {
                step: Step::Forme,
                tokens: TokenCost {
                    fresh: 10,
                    reused: 2,
                },
                answers: 1,
            },
            StepCost {
                step: Step::Postcondition("a-node-name-longer-than-fourteen".into()),
                tokens: TokenCost {
                    fresh: 5,
                    reused: 0,
                },
                answers: 1,
            },
        ];
        r.cost = TokenCost {
            fresh: 15,
            reused: 2,
        };
        let text = r.to_text();
        assert_eq!(
            text,
            "reactor compile\n\n  status         compiled (sessions ran)\n  contract-set   sha256:abc\n  sdk            reactor-rs/0.2.0\n  model          m\n  state-dir      /p/.reactor\n\n  nodes          2\n  edges          1\n  entry points   (none)\n  acyclic        yes\n\n  Forme diagnostics:\n    - unsatisfied (b: \"notes [redacted] [31m\")\n\n  lints:\n    - a: uncovered\n\n  cost (tokens, surprise_cause: self):\n    forme                        fresh=10 reused=2\n    postcondition:a-node-name-longer-than-fourteen fresh=5 reused=0\n\n  total cost     fresh=15 reused=2\n"
        );
        let j = r.to_json();
        assert_eq!(j["status"], "compiled");
        assert_eq!(
            j["step_costs"][0],
            serde_json::json!({"step": "forme", "fresh": 10, "reused": 2})
        );
        assert_eq!(
            j["step_costs"][1]["node"],
            "a-node-name-longer-than-fourteen"
        );
        assert_eq!(j["diagnostics"][0]["kind"], "unsatisfied");
        assert!(j.get("cached").is_none() && j.get("reason").is_none());
    }

    #[test]
    fn stale_report_without_a_cache() {
        let r = CompileReport::stale(&spec(), true, key(), Freshness::Absent { topology: None });
        assert_eq!(r.exit_code(), 1);
        assert_eq!(
            r.to_text(),
            "reactor compile\n\n  reactor        default\n  status         STALE (re-compile needed)\n  reason         no compile cache\n  contract-set   sha256:abc\n  sdk            reactor-rs/0.2.0\n  model          m\n  state-dir      /p/.reactor\n\n  total cost     fresh=0 reused=0\n"
        );
        let j = r.to_json();
        assert_eq!(j["reactor"], "default");
        assert_eq!(j["reason"], "no compile cache");
        assert_eq!(j["cached"], serde_json::Value::Null);
        assert_eq!(j["acyclic"], serde_json::Value::Null);
        assert_eq!(
            (j["nodes"].as_u64(), j["edges"].as_u64()),
            (Some(0), Some(0))
        );
        assert_eq!(j["step_costs"], serde_json::json!([]));
    }
}
