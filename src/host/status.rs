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
//! or `no`. JSON: `{"stateDir", "compiled", "freshness", "staleReason"?, "freshnessError"?,
//! "compile": {"nodes", "edges", "compiledAt", "cost", "model"}, "writer", "run"}`.

use std::process::ExitCode;

use crate::host::args::{ArgStream, Globals};
use crate::host::error::HostError;
use crate::host::output::{self, Report};
use crate::host::receipts::write_ledger_body;
use crate::host::rollup::CostRollup;
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

/// Runs `status`.
pub fn exec(_a: Args, g: &Globals) -> Result<ExitCode, HostError> {
    let (project, reactor) = g.select_reactor("status")?;
    let state_dir = &reactor.state_dir;
    let trail = crate::host::logs::read_trail(state_dir)?;
    let manifest = statedir::read_manifest(state_dir);
    let freshness = compile_freshness(
        state_dir,
        &reactor.contracts_dir,
        &project.provider_settings(),
        &manifest,
    );
    let topo = statedir::read_topology(state_dir);
    let writer = statedir::current_writer(state_dir);
    let rollup = CostRollup::of_trail(&trail, None);

    let (topo_counts, topo_error) = match &topo {
        Ok(Some(t)) => (
            Some((t.topology.nodes.len() as u64, t.topology.edges.len() as u64)),
            None,
        ),
        Ok(None) => (None, None),
        Err(e) => (None, Some(topology_error(state_dir, e).message)),
    };
    let present = match &manifest {
        ManifestRead::Present(m) => Some(m),
        _ => None,
    };
    let nodes = present.and_then(|m| m.nodes).or(topo_counts.map(|c| c.0));
    let edges = present.and_then(|m| m.edges).or(topo_counts.map(|c| c.1));
    let compiled = manifest != ManifestRead::Absent;

    if g.json {
        let mut v = serde_json::Map::new();
        if project.multi {
            v.insert("reactor".into(), reactor.name.clone().into());
        }
        v.insert("stateDir".into(), state_dir.display().to_string().into());
        v.insert("compiled".into(), compiled.into());
        v.insert("freshness".into(), freshness.as_str().into());
        match &freshness {
            Freshness::Stale(r) => {
                v.insert("staleReason".into(), r.clone().into());
            }
            Freshness::Unknown(e) => {
                v.insert("freshnessError".into(), e.clone().into());
            }
            _ => {}
        }
        let cost = present.map(|m| m.cost).unwrap_or_default();
        v.insert(
            "compile".into(),
            serde_json::json!({
                "nodes": nodes.unwrap_or(0),
                "edges": edges.unwrap_or(0),
                "compiledAt": present.and_then(|m| m.compiled_at.clone()),
                "cost": {"fresh": cost.fresh, "reused": cost.reused},
                "model": present.and_then(|m| m.model.clone()),
            }),
        );
        v.insert(
            "writer".into(),
            writer
                .as_ref()
                .map(|w| w.to_json())
                .unwrap_or(serde_json::Value::Null),
        );
        v.insert("run".into(), rollup.to_json());
        output::print_json(&serde_json::Value::Object(v))?;
        return Ok(ExitCode::SUCCESS);
    }

    let mut r = Report::new("status");
    if project.multi {
        r.field("reactor", &reactor.name);
    }
    r.field("state dir", state_dir.display().to_string());
    r.field(
        "compiled",
        match &freshness {
            Freshness::Fresh => "yes (fresh)".to_string(),
            Freshness::Stale(reason) => format!("yes (STALE: {reason})"),
            Freshness::Unknown(e) => format!("yes (freshness unknown: {e})"),
            Freshness::Absent => "no".to_string(),
        },
    );
    let topology_line = match (nodes, edges, &topo_error) {
        (_, _, Some(e)) if present.is_none() => format!("unreadable: {e}"),
        (Some(n), Some(e), _) => {
            let when = match present {
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
    };
    r.field("topology", topology_line);
    if let Some(m) = present {
        r.field("compile cost", output::pair(m.cost.fresh, m.cost.reused));
    }
    r.field(
        "writer",
        writer
            .as_ref()
            .map(|w| w.describe())
            .unwrap_or_else(|| "none".to_string()),
    );
    r.blank();
    write_ledger_body(&mut r, &rollup, None);
    output::write_stdout(r.as_str())?;
    Ok(ExitCode::SUCCESS)
}

/// A `compile/topology.json` read error as the host reports it: the state-dir path before a
/// JSON problem, the file path in an I/O problem (exit 1).
pub(crate) fn topology_error(
    state_dir: &std::path::Path,
    e: &crate::replay::statedir::TopologyReadError,
) -> HostError {
    match e {
        crate::replay::statedir::TopologyReadError::InvalidJson(_) => {
            HostError::state(format!("{}: {e}", state_dir.display()))
        }
        io => HostError::state(io.to_string()),
    }
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

/// Why [`cache_key`] cannot compute a key; `Display` is one line.
#[derive(Debug, thiserror::Error)]
pub enum CacheKeyError {
    /// `contracts invalid: <load error>`.
    #[error("contracts invalid: {0}")]
    Contracts(#[from] crate::contract::ContractError),
    /// A `REACTOR_SKILL_PATH` problem.
    #[error(transparent)]
    Skill(#[from] crate::agent::SkillError),
    /// A provider configuration error, or `model.compile_model is required for provider '<p>'`.
    #[error(transparent)]
    Provider(#[from] crate::model::ConfigError),
}

/// The compile cache key of a reactor (HOST.md §6.3), computed offline and keylessly: the
/// contract-set fingerprint of `contracts_dir`, the SDK version (with the `+skill.` suffix when
/// `REACTOR_SKILL_PATH` replaces the system prompt) and the resolved compile model.
///
/// Errors: [`CacheKeyError`].
pub fn cache_key(
    contracts_dir: &std::path::Path,
    settings: &crate::model::ProviderSettings,
) -> Result<crate::compile::CacheKey, CacheKeyError> {
    let set = crate::contract::ContractSet::load(contracts_dir)?;
    let prompt = crate::agent::prompt::load_system_prompt()?;
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
    let key = match cache_key(contracts_dir, settings) {
        Ok(k) => k,
        Err(e) => {
            return match manifest {
                ManifestRead::Unreadable(m) => {
                    Freshness::Stale(format!("manifest unreadable: {m}"))
                }
                _ => Freshness::Unknown(e.to_string()),
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
