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
//! `STALE (re-compile needed)` with a `reason` line. JSON: see [`CompileReport`].
//! Several reactors print one report each (JSON `{"reactors": [{"reactor", …}]}`); the exit
//! status is the worst.

use std::process::ExitCode;

use serde::Serialize;

use crate::compile::{
    CacheKey, Compiled, Freshness, LoadedIr, StepCost, TopologySummary, compile_project_observed,
    freshness,
};
use crate::format::sanitize::redact;
use crate::host::args::{ArgStream, Globals, OwnedArg};
use crate::host::boot::{ModelPlan, compile_failure_redacted, load_contracts, take_lock};
use crate::host::error::{ErrorKind, HostError};
use crate::host::output::{self, Report};
use crate::host::progress::Progress;
use crate::host::project::{Project, ReactorSpec};
use crate::host::report::{VerbReport, print};
use crate::host::rollup::Tokens;

/// `reactor compile --help`.
pub(crate) const HELP: &str = "reactor compile — run the compile sessions into the cache

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

/// A Forme diagnostic: JSON `{"kind", "subscriber", "requirement"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DiagnosticRow {
    /// `unsatisfied` or `ambiguous`.
    pub kind: &'static str,
    /// The subscriber (sanitized).
    pub subscriber: String,
    /// The requirement (sanitized).
    pub requirement: String,
}

/// A lint: JSON `{"node", "code", "message"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LintRow {
    /// The node (sanitized).
    pub node: String,
    /// The lint code.
    pub code: String,
    /// The message (sanitized).
    pub message: String,
}

/// One compile session's cost: JSON `{"step", "node"?, "fresh", "reused"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StepRow {
    /// `forme`, `canonicalizer` or `postcondition`.
    pub step: &'static str,
    /// The node of a per-node step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Fresh tokens.
    pub fresh: u64,
    /// Reused tokens.
    pub reused: u64,
}

impl StepRow {
    /// `forme`, `canonicalizer:<node>` or `postcondition:<node>`.
    fn label(&self) -> String {
        match &self.node {
            Some(n) => format!("{}:{n}", self.step),
            None => self.step.to_string(),
        }
    }
}

/// The key triple (HOST.md §6.3): `{"contract_set_fingerprint", "sdk_version", "model"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KeyTriple {
    /// The contract-set fingerprint.
    pub contract_set_fingerprint: String,
    /// `reactor-rs/<version>[+skill.<hex>]`.
    pub sdk_version: String,
    /// The compile model.
    pub model: String,
}

impl From<&CacheKey> for KeyTriple {
    fn from(k: &CacheKey) -> Self {
        KeyTriple {
            contract_set_fingerprint: k.contract_set_fingerprint.clone(),
            sdk_version: k.sdk_version.clone(),
            model: k.model.clone(),
        }
    }
}

/// One reactor's compile report (HOST.md §8.3). JSON: `{"reactor"?, "status":
/// "compiled"|"cache-hit"|"stale", "reason"?, "contract_set_fingerprint", "sdk_version",
/// "model", "nodes", "edges", "entry_points", "acyclic", "diagnostics": [{"kind",
/// "subscriber", "requirement"}], "lints": [{"node", "code", "message"}], "cost": {"fresh",
/// "reused"}, "step_costs": [{"step", "node"?, "fresh", "reused"}], "state_dir", "cached"?}`.
/// `cached` (stale only) is the manifest's triple or `null`; a stale report without a
/// readable topology has `nodes` 0, `edges` 0, `entry_points` `[]` and `acyclic` `null`.
#[derive(Clone, Debug, Serialize)]
pub struct CompileReport {
    /// The reactor name, when the project has a `reactors:` list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reactor: Option<String>,
    /// `compiled`, `cache-hit` or `stale`.
    pub status: &'static str,
    /// Why the cache is stale (stale only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The current key triple.
    #[serde(flatten)]
    pub key: KeyTriple,
    /// Topology nodes.
    pub nodes: usize,
    /// Topology edges.
    pub edges: usize,
    /// Entry points.
    pub entry_points: Vec<String>,
    /// The acyclic flag (`null` without a readable topology).
    pub acyclic: Option<bool>,
    /// Forme diagnostics (compiled reports only).
    pub diagnostics: Vec<DiagnosticRow>,
    /// Lints (compiled reports only).
    pub lints: Vec<LintRow>,
    /// The session cost of this invocation (zero for a hit and a stale report).
    pub cost: Tokens,
    /// Per-step costs in session order (compiled reports only).
    pub step_costs: Vec<StepRow>,
    /// The reactor's state directory.
    pub state_dir: String,
    /// The manifest's triple (stale only; `null` when unreadable).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached: Option<Option<KeyTriple>>,
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
    fn base(spec: &ReactorSpec, multi: bool, status: &'static str, key: &CacheKey) -> Self {
        CompileReport {
            reactor: multi.then(|| spec.name.clone()),
            status,
            reason: None,
            key: KeyTriple::from(key),
            nodes: 0,
            edges: 0,
            entry_points: Vec::new(),
            acyclic: None,
            diagnostics: Vec::new(),
            lints: Vec::new(),
            cost: Tokens::default(),
            step_costs: Vec::new(),
            state_dir: spec.state_dir.display().to_string(),
            cached: None,
        }
    }

    fn with_topology(mut self, t: Option<TopologySummary>) -> Self {
        if let Some(t) = t {
            self.nodes = t.nodes;
            self.edges = t.edges;
            self.entry_points = t.entry_points;
            self.acyclic = Some(t.acyclic);
        }
        self
    }

    fn cache_hit(spec: &ReactorSpec, multi: bool, key: &CacheKey, loaded: &LoadedIr) -> Self {
        CompileReport::base(spec, multi, "cache-hit", key).with_topology(Some(loaded.ir.summary()))
    }

    fn stale(spec: &ReactorSpec, multi: bool, key: &CacheKey, fr: Freshness) -> Self {
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
        let mut r = CompileReport::base(spec, multi, "stale", key).with_topology(topology);
        r.reason = Some(reason);
        r.cached = Some(cached.as_ref().map(KeyTriple::from));
        r
    }

    fn compiled(spec: &ReactorSpec, multi: bool, c: &Compiled, secrets: &[&str]) -> Self {
        let mut r = CompileReport::base(spec, multi, "compiled", &c.key)
            .with_topology(Some(c.ir.summary()));
        r.diagnostics = c
            .diagnostics
            .iter()
            .map(|d| DiagnosticRow {
                kind: d.kind.as_str(),
                subscriber: clean(&d.subscriber, secrets),
                requirement: clean(&d.requirement, secrets),
            })
            .collect();
        r.lints = c
            .lints
            .iter()
            .map(|l| LintRow {
                node: clean(&l.node, secrets),
                code: clean(&l.code, secrets),
                message: clean(&l.message, secrets),
            })
            .collect();
        r.step_costs = c.steps.iter().map(step_row).collect();
        r.cost = Tokens {
            fresh: c.cost.tokens.fresh,
            reused: c.cost.tokens.reused,
        };
        r
    }

    /// True for a stale report.
    pub(crate) fn is_stale(&self) -> bool {
        self.status == "stale"
    }

    /// The exit status of this report: 1 for a stale report, else 0.
    pub fn exit_code(&self) -> u8 {
        u8::from(self.is_stale())
    }
}

fn step_row(s: &StepCost) -> StepRow {
    StepRow {
        step: s.step.kind(),
        node: s.step.node().map(str::to_string),
        fresh: s.tokens.fresh,
        reused: s.tokens.reused,
    }
}

impl VerbReport for CompileReport {
    /// The text report (HOST.md §8.3).
    fn to_text(&self) -> String {
        let mut r = Report::new("compile");
        if let Some(name) = &self.reactor {
            r.field("reactor", name);
        }
        let status = match self.status {
            "compiled" => "compiled (sessions ran)",
            "cache-hit" => "cache hit (zero session cost)",
            _ => "STALE (re-compile needed)",
        };
        r.field("status", status);
        if let Some(reason) = &self.reason {
            r.field("reason", reason);
        }
        r.field("contract-set", &self.key.contract_set_fingerprint)
            .field("sdk", &self.key.sdk_version)
            .field("model", &self.key.model)
            .field("state-dir", &self.state_dir);
        if !self.is_stale() {
            r.blank()
                .field("nodes", self.nodes.to_string())
                .field("edges", self.edges.to_string())
                .field(
                    "entry points",
                    if self.entry_points.is_empty() {
                        "(none)".to_string()
                    } else {
                        self.entry_points.join(", ")
                    },
                )
                .field(
                    "acyclic",
                    if self.acyclic == Some(true) {
                        "yes"
                    } else {
                        "no"
                    },
                );
        }
        if !self.diagnostics.is_empty() {
            r.blank().line(2, "Forme diagnostics:");
            for d in &self.diagnostics {
                r.line(
                    4,
                    format!("- {} ({}: \"{}\")", d.kind, d.subscriber, d.requirement),
                );
            }
        }
        if !self.lints.is_empty() {
            r.blank().line(2, "lints:");
            for l in &self.lints {
                r.line(4, format!("- {}: {}", l.node, l.message));
            }
        }
        if !self.step_costs.is_empty() {
            r.blank().line(2, "cost (tokens, surprise_cause: self):");
            for s in &self.step_costs {
                r.node_row(&s.label(), output::pair(s.fresh, s.reused));
            }
        }
        r.blank().field("total cost", self.cost.pair());
        r.finish()
    }
}

/// Compiles (or checks) one reactor: steps 1–5 of HOST.md §8.3. Errors carry the exact
/// messages of the specification; nothing is written unless the sessions all succeed.
pub(crate) fn compile_reactor(
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
            Freshness::Fresh(loaded) => CompileReport::cache_hit(spec, multi, &key, &loaded),
            stale => CompileReport::stale(spec, multi, &key, stale),
        });
    }
    if let Freshness::Fresh(loaded) = &current
        && !args.force
    {
        return Ok(CompileReport::cache_hit(spec, multi, &key, loaded));
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
        return Ok(CompileReport::cache_hit(spec, multi, &key, &loaded));
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
    compiled.write_cache(&spec.state_dir, jiff::Timestamp::now())?;
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
                    documents.push(ReactorCompile::Report(Box::new(report)));
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
                documents.push(ReactorCompile::Error {
                    reactor: spec.name.clone(),
                    status: "error",
                    ok: false,
                    message: e.json_message(),
                });
            }
        }
    }
    if g.json {
        output::print_json(&MultiCompile {
            reactors: documents,
        })?;
    }
    Ok(ExitCode::from(worst))
}

/// `compile --json` over several reactors: `{"reactors": [<report> | {"reactor", "status":
/// "error", "ok": false, "message"}]}`.
#[derive(Debug, Serialize)]
struct MultiCompile {
    reactors: Vec<ReactorCompile>,
}

/// One reactor's entry of [`MultiCompile`].
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum ReactorCompile {
    Report(Box<CompileReport>),
    Error {
        reactor: String,
        status: &'static str,
        ok: bool,
        message: String,
    },
}

/// Prints one report (text or JSON); a stale text report adds its hint on stderr.
fn emit(report: &CompileReport, json: bool) -> Result<(), HostError> {
    print(report, json)?;
    if !json && report.is_stale() {
        eprintln!("hint: {STALE_HINT}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::{DiagnosticKind, Step};
    use std::ffi::OsString;
    use std::path::PathBuf;

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
        let mut r = CompileReport::base(&spec(), false, "compiled", &key()).with_topology(Some(
            TopologySummary {
                nodes: 2,
                edges: 1,
                entry_points: vec![],
                acyclic: true,
            },
        ));
        let secret = "sk-live-secretsecret";
        r.diagnostics = vec![DiagnosticRow {
            kind: DiagnosticKind::Unsatisfied.as_str(),
            subscriber: "b".into(),
            requirement: clean(&format!("notes\n{secret}\u{1b}[31m"), &[secret]),
        }];
        r.lints = vec![LintRow {
            node: "a".into(),
            code: "x".into(),
            message: "uncovered".into(),
        }];
        r.step_costs = [
            StepCost {
                step: Step::Forme,
                tokens: crate::model::TokenCost {
                    fresh: 10,
                    reused: 2,
                },
                answers: 1,
            },
            StepCost {
                step: Step::Postcondition("a-node-name-longer-than-fourteen".into()),
                tokens: crate::model::TokenCost {
                    fresh: 5,
                    reused: 0,
                },
                answers: 1,
            },
        ]
        .iter()
        .map(step_row)
        .collect();
        r.cost = Tokens {
            fresh: 15,
            reused: 2,
        };
        let text = r.to_text();
        assert_eq!(
            text,
            "reactor compile\n\n  status         compiled (sessions ran)\n  contract-set   sha256:abc\n  sdk            reactor-rs/0.2.0\n  model          m\n  state-dir      /p/.reactor\n\n  nodes          2\n  edges          1\n  entry points   (none)\n  acyclic        yes\n\n  Forme diagnostics:\n    - unsatisfied (b: \"notes [redacted] [31m\")\n\n  lints:\n    - a: uncovered\n\n  cost (tokens, surprise_cause: self):\n    forme                        fresh=10 reused=2\n    postcondition:a-node-name-longer-than-fourteen fresh=5 reused=0\n\n  total cost     fresh=15 reused=2\n"
        );
        let j = serde_json::to_value(&r).unwrap();
        assert_eq!(
            j.as_object().unwrap().keys().collect::<Vec<_>>(),
            [
                "status",
                "contract_set_fingerprint",
                "sdk_version",
                "model",
                "nodes",
                "edges",
                "entry_points",
                "acyclic",
                "diagnostics",
                "lints",
                "cost",
                "step_costs",
                "state_dir"
            ]
        );
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
        let r = CompileReport::stale(&spec(), true, &key(), Freshness::Absent { topology: None });
        assert_eq!(r.exit_code(), 1);
        assert_eq!(
            r.to_text(),
            "reactor compile\n\n  reactor        default\n  status         STALE (re-compile needed)\n  reason         no compile cache\n  contract-set   sha256:abc\n  sdk            reactor-rs/0.2.0\n  model          m\n  state-dir      /p/.reactor\n\n  total cost     fresh=0 reused=0\n"
        );
        let j = serde_json::to_value(&r).unwrap();
        assert_eq!(j["reactor"], "default");
        assert_eq!(j["reason"], "no compile cache");
        assert_eq!(j["cached"], serde_json::Value::Null);
        assert_eq!(j["acyclic"], serde_json::Value::Null);
        assert_eq!(
            (j["nodes"].as_u64(), j["edges"].as_u64()),
            (Some(0), Some(0))
        );
        assert_eq!(j["step_costs"], serde_json::json!([]));
        assert_eq!(
            j.as_object()
                .unwrap()
                .keys()
                .next_back()
                .map(String::as_str),
            Some("cached")
        );
    }
}
