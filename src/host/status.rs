//! `reactor status` (HOST.md §8.7): the compile cache and ledger summary of one reactor's state
//! directory. Exits 0, also over an empty or missing state directory.
//!
//! ```text
//! reactor status
//!
//!   state dir      /abs/proj/.reactor
//!   compiled       yes (fresh)
//!   topology       2 nodes, 1 edges (at 2026-06-02T18:00:00.000Z)
//!   compile cost   fresh=4210 reused=0
//!   writer         reactor serve (pid 4242) at http://127.0.0.1:8080/
//!
//!   receipts       12
//!   run cost       fresh=5210 reused=1800
//!   dispositions   rendered=5 skipped=6 failed=1
//!   …
//! ```
//!
//! `compiled` reads `yes (fresh)`, `yes (STALE: <reason>)`, `yes (freshness unknown: <error>)`
//! or `no`. While a writer holds the state directory, `in flight` lists its renders in flight
//! (`none`, or `2 renders: a (since 18:00:05), b (since 18:00:07, awaiting commit)`), read from
//! the `in-flight.json` the writer keeps ([`crate::host::inflight`]). JSON: `{"stateDir",
//! "compiled", "freshness", "staleReason"?, "freshnessError"?, "compile": {"nodes", "edges",
//! "compiledAt", "cost", "model"}, "writer", "run", "inFlight": [{"node", "startedAt",
//! "awaitingCommit"}]}`.

use std::process::ExitCode;

use serde::Serialize;

use crate::host::args::{ArgStream, Globals};
use crate::host::error::{HostError, InStateDir};
use crate::host::output::Report;
use crate::host::receipts::write_ledger_body;
use crate::host::report::{VerbReport, WriterInfo, print, writer_line};
use crate::host::rollup::{CostRollup, Tokens};
use crate::replay::statedir::{self, ManifestRead};

/// `reactor status --help`.
pub(crate) const HELP: &str = "reactor status — compile cache and ledger summary

Usage:
  reactor status [global flags]

Shows the state directory, whether the compile cache is present and fresh, the
compiled graph's size and cost, the current writer (from .lock and serve.json), and
the whole ledger's receipts, dispositions and cost by surprise cause and by node.
Exits 0 also over an empty or missing state directory.
";

/// Parsed arguments (none).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Args {}

/// Parses `status` arguments.
pub fn parse(s: &mut ArgStream<'_>) -> Result<Args, HostError> {
    if let Some(arg) = s.next_arg()? {
        return Err(s.unexpected(&arg));
    }
    Ok(Args {})
}

/// The `compile` member of `status`: `{"nodes", "edges", "compiledAt", "cost", "model"}`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompileSummary {
    /// Topology nodes (manifest, else `topology.json`; 0 when neither).
    pub nodes: u64,
    /// Topology edges.
    pub edges: u64,
    /// The manifest's `compiled_at`.
    pub compiled_at: Option<String>,
    /// The manifest's session cost.
    pub cost: Tokens,
    /// The manifest's compile model.
    pub model: Option<String>,
}

/// The `status` report (HOST.md §8.7). JSON: `{"reactor"?, "stateDir", "compiled",
/// "freshness", "staleReason"?, "freshnessError"?, "compile": {...}, "writer", "run": <cost
/// rollup>, "inFlight": [...]}`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusReport {
    /// The reactor, on a multi-reactor project.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reactor: Option<String>,
    /// The state directory.
    pub state_dir: String,
    /// A manifest exists (readable or not).
    pub compiled: bool,
    /// `fresh`, `stale`, `absent` or `unknown`.
    pub freshness: &'static str,
    /// Why the cache is stale.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) stale_reason: Option<String>,
    /// Why freshness could not be decided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub freshness_error: Option<String>,
    /// The compile cache's figures.
    pub compile: CompileSummary,
    /// The current writer.
    pub writer: Option<WriterInfo>,
    /// The whole trail's rollup.
    pub run: CostRollup,
    /// The writer's renders in flight (empty without a writer).
    pub in_flight: Vec<crate::host::inflight::RecordedRender>,
    /// The `topology` line.
    #[serde(skip)]
    pub(crate) topology_line: String,
    /// A manifest was read (the `compile cost` line is shown).
    #[serde(skip)]
    pub(crate) manifest_read: bool,
}

impl VerbReport for StatusReport {
    fn to_text(&self) -> String {
        let mut r = Report::new("status");
        if let Some(name) = &self.reactor {
            r.field("reactor", name);
        }
        r.field("state dir", &self.state_dir);
        r.field(
            "compiled",
            match (&self.stale_reason, &self.freshness_error) {
                (Some(reason), _) => format!("yes (STALE: {reason})"),
                (_, Some(e)) => format!("yes (freshness unknown: {e})"),
                _ if self.freshness == "fresh" => "yes (fresh)".to_string(),
                _ => "no".to_string(),
            },
        );
        r.field("topology", &self.topology_line);
        if self.manifest_read {
            r.field("compile cost", self.compile.cost.pair());
        }
        r.field("writer", writer_line(self.writer.as_ref()));
        if self.writer.is_some() {
            r.field(
                "in flight",
                crate::host::inflight::describe(&self.in_flight),
            );
        }
        r.blank();
        write_ledger_body(&mut r, &self.run, None);
        r.finish()
    }
}

/// The `topology` line: `<n> nodes, <m> edges (at <when>)`, `… (no compile manifest)`,
/// `unreadable: <error>` or `(none)`.
fn topology_line(
    counts: (Option<u64>, Option<u64>),
    topo_error: Option<&str>,
    manifest: Option<&crate::replay::statedir::Manifest>,
) -> String {
    match (counts, topo_error) {
        (_, Some(e)) if manifest.is_none() => format!("unreadable: {e}"),
        ((Some(n), Some(e)), _) => {
            let when = match manifest {
                Some(m) => m
                    .compiled_at
                    .as_deref()
                    .map(|at| format!(" (at {at})"))
                    .unwrap_or_default(),
                None => " (no compile manifest)".to_string(),
            };
            format!("{n} nodes, {e} edges{when}")
        }
        _ => "(none)".to_string(),
    }
}

/// Gathers the `status` report of one reactor.
pub fn gather(
    project: &crate::host::project::Project,
    reactor: &crate::host::project::ReactorSpec,
) -> Result<StatusReport, HostError> {
    let state_dir = &reactor.state_dir;
    let (_, run) = crate::host::logs::read_trail_rollup(state_dir, None)?;
    let manifest = statedir::read_manifest(state_dir);
    let freshness = compile_freshness(
        state_dir,
        &reactor.contracts_dir,
        &project.provider_settings(),
        &manifest,
    );
    let (topo_counts, topo_error) = match statedir::read_topology(state_dir) {
        Ok(Some(t)) => (
            Some((t.topology.nodes.len() as u64, t.topology.edges.len() as u64)),
            None,
        ),
        Ok(None) => (None, None),
        Err(e) => (
            None,
            Some(HostError::from(InStateDir(state_dir, e)).message),
        ),
    };
    let present = match &manifest {
        ManifestRead::Present(m) => Some(m),
        _ => None,
    };
    let nodes = present.and_then(|m| m.nodes).or(topo_counts.map(|c| c.0));
    let edges = present.and_then(|m| m.edges).or(topo_counts.map(|c| c.1));
    let cost = present.map(|m| m.cost).unwrap_or_default();
    let writer = statedir::current_writer(state_dir);
    let (stale_reason, freshness_error) = match &freshness {
        Freshness::Stale(r) => (Some(r.clone()), None),
        Freshness::Unknown(e) => (None, Some(e.clone())),
        _ => (None, None),
    };
    Ok(StatusReport {
        reactor: project.multi.then(|| reactor.name.clone()),
        state_dir: state_dir.display().to_string(),
        compiled: manifest != ManifestRead::Absent,
        freshness: freshness.as_str(),
        stale_reason,
        freshness_error,
        compile: CompileSummary {
            nodes: nodes.unwrap_or(0),
            edges: edges.unwrap_or(0),
            compiled_at: present.and_then(|m| m.compiled_at.clone()),
            cost: Tokens {
                fresh: cost.fresh,
                reused: cost.reused,
            },
            model: present.and_then(|m| m.model.clone()),
        },
        writer: writer.as_ref().map(WriterInfo::from),
        run,
        in_flight: writer
            .as_ref()
            .map(|w| crate::host::inflight::read_record(state_dir, w.pid))
            .unwrap_or_default(),
        topology_line: topology_line((nodes, edges), topo_error.as_deref(), present),
        manifest_read: present.is_some(),
    })
}

/// Runs `status`.
pub fn exec(_a: Args, g: &Globals) -> Result<ExitCode, HostError> {
    let (project, reactor) = g.select_reader("status")?;
    print(&gather(&project, &reactor)?, g.json)?;
    Ok(ExitCode::SUCCESS)
}

/// The compile cache's freshness as `status` shows it (HOST.md §6.4, §8.7).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Freshness {
    /// The cache matches the current key triple and every file checks out.
    Fresh,
    /// Stale, with the first applicable reason.
    Stale(String),
    /// No manifest.
    Absent,
    /// Freshness could not be decided (the error).
    Unknown(String),
}

impl Freshness {
    /// `fresh`, `stale`, `absent` or `unknown` (the `status --json` member).
    pub fn as_str(&self) -> &'static str {
        match self {
            Freshness::Fresh => "fresh",
            Freshness::Stale(_) => "stale",
            Freshness::Absent => "absent",
            Freshness::Unknown(_) => "unknown",
        }
    }
}

/// The compile cache key of a reactor (HOST.md §6.3), computed offline and keylessly: the
/// contract-set fingerprint of `contracts_dir`, the SDK version (with the `+skill.` suffix when
/// `REACTOR_SKILL_PATH` replaces the system prompt) and the resolved compile model.
///
/// Errors ([`HostError`], one line): `contracts invalid: <load error>`, a `REACTOR_SKILL_PATH`
/// problem, a provider configuration error, or `model.compile_model is required for provider
/// '<p>'`.
pub fn cache_key(
    contracts_dir: &std::path::Path,
    settings: &crate::model::ProviderSettings,
) -> Result<crate::compile::CacheKey, HostError> {
    let set = crate::contract::ContractSet::load(contracts_dir)?;
    let prompt = crate::agent::prompt::system_prompt()?;
    let replaced = match prompt.source {
        crate::agent::PromptSource::File(_) => Some(prompt.text.as_str()),
        crate::agent::PromptSource::Embedded => None,
    };
    let config = crate::model::ProviderConfig::resolve(settings)?;
    let model = config.require_compile_model()?.to_string();
    Ok(crate::compile::CacheKey {
        contract_set_fingerprint: set.fingerprint(),
        sdk_version: crate::compile::sdk_version(replaced),
        model,
    })
}

/// `permission denied: cannot read <state-dir>/compile/manifest.json` when this process may not
/// read the manifest (a permission problem is not a stale cache: recompiling would not help).
pub(crate) fn manifest_permission_problem(state_dir: &std::path::Path) -> Option<String> {
    let path = state_dir
        .join(crate::format::layout::COMPILE_DIR)
        .join(crate::format::layout::MANIFEST_FILE);
    match std::fs::File::open(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            Some(format!("permission denied: cannot read {}", path.display()))
        }
        _ => None,
    }
}

/// The compile cache's freshness as `status` shows it (HOST.md §6.4, §8.7): `Absent` without a
/// manifest; otherwise the full check of [`crate::compile::cache::freshness`] (key triple,
/// digests, keyless load) against [`cache_key`]. When the key cannot be computed the answer is
/// `Unknown(<error>)`, except for an unreadable manifest, which is stale whatever the key.
pub(crate) fn compile_freshness(
    state_dir: &std::path::Path,
    contracts_dir: &std::path::Path,
    settings: &crate::model::ProviderSettings,
    manifest: &ManifestRead,
) -> Freshness {
    if *manifest == ManifestRead::Absent {
        return Freshness::Absent;
    }
    if let Some(problem) = manifest_permission_problem(state_dir) {
        return Freshness::Unknown(problem);
    }
    let key = match cache_key(contracts_dir, settings) {
        Ok(k) => k,
        Err(e) => {
            return match manifest {
                ManifestRead::Unreadable(m) => {
                    Freshness::Stale(format!("manifest unreadable: {m}"))
                }
                _ => Freshness::Unknown(e.message),
            };
        }
    };
    match crate::compile::cache::freshness(state_dir, &key) {
        crate::compile::Freshness::Fresh(_) => Freshness::Fresh,
        crate::compile::Freshness::Stale { reason, .. } => Freshness::Stale(reason.to_string()),
        crate::compile::Freshness::Absent { .. } => Freshness::Absent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freshness_of_an_unreadable_manifest() {
        let d = tempfile::tempdir().unwrap();
        let settings = crate::model::ProviderSettings::default();
        assert_eq!(
            compile_freshness(d.path(), d.path(), &settings, &ManifestRead::Absent),
            Freshness::Absent
        );
        std::fs::create_dir(d.path().join("compile")).unwrap();
        std::fs::write(d.path().join("compile/manifest.json"), "[1]").unwrap();
        let m = statedir::read_manifest(d.path());
        // The compile cache module words the reason (the key is computable here).
        match compile_freshness(d.path(), d.path(), &settings, &m) {
            Freshness::Stale(r) => assert!(r.starts_with("manifest unreadable: "), "{r}"),
            other => panic!("{other:?}"),
        }
        // Without a computable key (no compile model for openai) it is still stale.
        let openai = crate::model::ProviderSettings {
            provider: Some("openai".into()),
            ..Default::default()
        };
        assert_eq!(
            compile_freshness(d.path(), d.path(), &openai, &m),
            Freshness::Stale("manifest unreadable: expected an object, got array".into())
        );
    }
}
