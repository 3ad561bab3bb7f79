//! The compile phase (RUNTIME.md §3) and the compile cache (HOST.md §6, FORMATS.md §15).
//!
//! [`compile_project`] runs the three structured-output sessions against a
//! [`ModelClient`] — Forme once over the whole contract set, then for
//! each topology node in id order its canonicalizer session (faceted nodes only; atomic-only
//! nodes record the identity spec) and its postcondition session — lowers every answer
//! deterministically ([`forme::wire`], [`lower`]) and returns a [`Compiled`] value: the IR, the
//! Forme diagnostics, the lints, the per-step costs and the total cost. Compiling is
//! all-or-nothing: any failure is a [`CompileError`] and nothing is written.
//! [`Compiled::write_cache`] then persists the IR ([`cache::write_cache`]); [`cache::freshness`]
//! and [`cache::load_ir`] read it back keylessly.
//!
//! Typical use by the host's `compile` verb (lock, flags and the report are the verb's job):
//!
//! ```no_run
//! # use reactor::compile::*;
//! # use reactor::contract::ContractSet;
//! # fn demo(client: &dyn reactor::model::ModelClient, state_dir: &std::path::Path)
//! # -> Result<(), Box<dyn std::error::Error>> {
//! let set = ContractSet::load(std::path::Path::new("."))?;
//! let settings = CompileSettings {
//!     system_prompt: "<system prompt>".into(),
//!     model: "google/gemini-3.5-flash".into(),
//!     provider: "openrouter".into(),
//!     temperature: None,
//!     reasoning_effort: None,
//!     sdk_version: sdk_version(None),
//!     base_url: Some("https://openrouter.ai/api/v1".into()),
//! };
//! let key = settings.cache_key(&set);
//! match freshness(state_dir, &key) {
//!     Freshness::Fresh(loaded) => { let _ir = loaded.ir.to_ir(); }
//!     stale => {
//!         eprintln!("stale: {}", stale.reason().map(|r| r.to_string()).unwrap_or_default());
//!         let compiled = compile_project(&set, &settings, client)?;
//!         compiled.write_cache(state_dir, jiff::Timestamp::now())?;
//!     }
//! }
//! # Ok(()) }
//! ```

pub mod cache;
pub mod forme;
pub mod ir;
pub mod lower;
pub mod prompts;
pub mod schema;
pub mod session;

#[cfg(test)]
mod tests;

use std::fmt;
use std::path::Path;
use std::sync::Arc;

pub use cache::{
    CacheKey, CacheWriteError, CompileCost, Freshness, LoadedIr, Manifest, StaleReason, freshness,
    load_ir, sdk_version, write_cache,
};
pub use forme::{Cycle, Diagnostic, DiagnosticKind, Wired, check_forme, wire};
pub use ir::{CompiledIr, CompiledNode, TopologySummary};
pub(crate) use session::{MAX_REPAIR_TURNS, SessionSettings, Step, StepCost};

use crate::contract::{Contract, ContractSet, render_evidence};
use crate::core::canonicalizer::{CanonicalizerSpec, compile_node};
use crate::format::receipt::WakeSource;
use crate::format::topology::TopologyNode;
use crate::model::{ModelClient, ModelError, TokenCost};
use session::{SessionFailure, SessionFailureKind, run_session};

/// Everything a compile needs besides the contracts and the client.
#[derive(Clone, Debug, PartialEq)]
pub struct CompileSettings {
    /// The system prompt text (the embedded one, or the `REACTOR_SKILL_PATH` replacement); the
    /// first system block of every session (RUNTIME.md §3.2.1).
    pub system_prompt: String,
    /// The resolved compile model id (`model.compile_model`).
    pub model: String,
    /// The provider label recorded in the cost (`openrouter`, `anthropic`, …).
    pub provider: String,
    /// Sent only when configured.
    pub temperature: Option<f64>,
    /// Sent only when configured.
    pub reasoning_effort: Option<String>,
    /// The key's SDK version ([`sdk_version`]; with `+skill.…` when the prompt was replaced).
    pub sdk_version: String,
    /// The provider's base URL as the manifest records it (`base_url`, FORMATS.md §15.4
    /// project addition; never part of the key): without credentials, query or fragment.
    pub base_url: Option<String>,
}

impl CompileSettings {
    /// The cache key of `set` under these settings (HOST.md §6.3).
    pub fn cache_key(&self, set: &ContractSet) -> CacheKey {
        CacheKey {
            contract_set_fingerprint: set.fingerprint(),
            sdk_version: self.sdk_version.clone(),
            model: self.model.clone(),
        }
    }

    fn session(&self) -> SessionSettings {
        SessionSettings {
            system_prompt: self.system_prompt.clone(),
            model: self.model.clone(),
            temperature: self.temperature,
            reasoning_effort: self.reasoning_effort.clone(),
        }
    }
}

/// A soft finding about one node (RUNTIME.md §3.2.3 layer 3): a canonicalizer lint of
/// `compile_node`, or `postcondition-count` when the number of compiled entries differs from the
/// number of `Postcondition:` sentences the loader found. Reported, never persisted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeLint {
    /// The node.
    pub node: String,
    /// A stable code (`material-rule-uncovered`, …, `postcondition-count`).
    pub code: String,
    /// One sentence.
    pub message: String,
}

impl fmt::Display for NodeLint {
    /// `<node>: <message>` (the report's lint line, HOST.md §8.3).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.node, self.message)
    }
}

/// A successful compile: the IR and everything the compile report needs (HOST.md §8.3).
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The key triple the cache is written under.
    pub key: CacheKey,
    /// The compiled IR.
    pub ir: CompiledIr,
    /// Forme diagnostics (unsatisfied and ambiguous needs), subscriber then need order.
    pub diagnostics: Vec<Diagnostic>,
    /// Lints, in node order.
    pub lints: Vec<NodeLint>,
    /// Per-step costs in session order (`forme`, then per node `canonicalizer:<node>` when
    /// faceted and `postcondition:<node>`).
    pub steps: Vec<StepCost>,
    /// The total cost (`surprise_cause: self`).
    pub cost: CompileCost,
    /// The base URL the sessions were sent to, recorded in the manifest.
    pub base_url: Option<String>,
}

impl Compiled {
    /// Writes the cache ([`cache::write_cache`]) with `compiled_at` from the caller's clock.
    ///
    /// Errors: [`CacheWriteError`].
    pub fn write_cache(
        &self,
        state_dir: &Path,
        compiled_at: jiff::Timestamp,
    ) -> Result<Manifest, CacheWriteError> {
        cache::write_cache(
            state_dir,
            &self.ir,
            &self.key,
            &self.cost,
            self.base_url.as_deref(),
            compiled_at,
        )
    }
}

/// A failed compile (HOST.md §8.3: `compile failed: <hint>`; a hint line gives the tokens
/// already spent, [`CompileError::spent`]). Nothing is written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    /// A provider call failed after its retries. `Display` is the provider hint (HOST.md §5.7).
    #[error("{error}")]
    Model {
        /// The step whose request failed.
        step: Step,
        /// The provider error.
        error: Box<ModelError>,
        /// Tokens spent by the whole compile before the failure.
        spent: TokenCost,
    },
    /// A session's third answer still failed validation or lowering.
    #[error(
        "the {step} answer is still invalid after {MAX_REPAIR_TURNS} repair turns: {}",
        one_line(errors)
    )]
    Invalid {
        /// The step.
        step: Step,
        /// The last error list (one JSON path each).
        errors: Vec<String>,
        /// Tokens spent by the whole compile.
        spent: TokenCost,
    },
    /// Forme's matches form a directed cycle (RUNTIME.md §3.3.4): a compile error, nothing is
    /// cached.
    #[error("the topology has a cycle: {cycle}")]
    Cycle {
        /// The cycle (`a → b → a`).
        cycle: Cycle,
        /// Tokens spent by the whole compile.
        spent: TokenCost,
    },
}

fn one_line(errors: &[String]) -> String {
    errors
        .iter()
        .map(|e| e.replace(['\n', '\r'], " "))
        .collect::<Vec<_>>()
        .join("; ")
}

impl CompileError {
    /// Tokens spent by the compile before it failed.
    pub fn spent(&self) -> TokenCost {
        match self {
            CompileError::Model { spent, .. }
            | CompileError::Invalid { spent, .. }
            | CompileError::Cycle { spent, .. } => *spent,
        }
    }

    /// The failing step (`None` for a cycle, which is found after the Forme session).
    pub fn step(&self) -> Option<&Step> {
        match self {
            CompileError::Model { step, .. } | CompileError::Invalid { step, .. } => Some(step),
            CompileError::Cycle { .. } => None,
        }
    }

    fn from_session(f: SessionFailure, before: TokenCost) -> CompileError {
        let mut spent = before;
        spent += f.tokens;
        match f.kind {
            SessionFailureKind::Model(error) => CompileError::Model {
                step: f.step,
                error,
                spent,
            },
            SessionFailureKind::Exhausted(errors) => CompileError::Invalid {
                step: f.step,
                errors,
                spent,
            },
        }
    }
}

/// Compiles `set` (RUNTIME.md §3.1): see [`compile_project_observed`]; no progress callback.
///
/// Errors: [`CompileError`].
pub fn compile_project(
    set: &ContractSet,
    settings: &CompileSettings,
    client: &dyn ModelClient,
) -> Result<Compiled, CompileError> {
    compile_project_observed(set, settings, client, &mut |_| {})
}

/// Compiles `set` (RUNTIME.md §3.1), calling `on_step` after each successful session:
///
/// 1. the evidence (user message 1, identical for every session) and the key triple;
/// 2. the Forme session, checked ([`check_forme`]) and lowered with [`wire`] (a cycle is a
///    [`CompileError::Cycle`]);
/// 3. for each topology node in id order: the canonicalizer session when the node is faceted
///    (lowered and compiled with `compile_node`; atomic-only nodes get the identity spec and no
///    session), then the postcondition session (lowered to the compiled set);
/// 4. the step costs summed into the total.
///
/// Sessions run sequentially; each may use up to [`MAX_REPAIR_TURNS`] repair turns.
///
/// Errors: [`CompileError`] with the provider hint or the last error list, and the tokens spent.
pub(crate) fn compile_project_observed(
    set: &ContractSet,
    settings: &CompileSettings,
    client: &dyn ModelClient,
    on_step: &mut dyn FnMut(&StepCost),
) -> Result<Compiled, CompileError> {
    let evidence = render_evidence(set);
    let mut run = Sessions {
        client,
        session: settings.session(),
        evidence: &evidence,
        on_step,
        steps: Vec::new(),
        spent: TokenCost::default(),
    };
    let forme_schema = schema::forme_schema();
    let forme_out = run.run(
        &Step::Forme,
        &prompts::forme_task(set),
        &forme_schema,
        |v| {
            let out: schema::FormeOutput = schema::parse_answer(&forme_schema, v)?;
            check_forme(&out, set)?;
            Ok(out)
        },
    )?;
    let wired = wire(&forme_out, set).map_err(|cycle| CompileError::Cycle {
        cycle,
        spent: run.spent,
    })?;
    let mut nodes = Vec::with_capacity(wired.topology.nodes.len());
    let mut lints = Vec::new();
    for tn in &wired.topology.nodes {
        // `check_forme` guarantees every topology node is a loaded node contract.
        let Some(contract) = set.get(&tn.node) else {
            continue;
        };
        nodes.push(run.node(contract, tn, &mut lints)?);
    }
    Ok(Compiled {
        cost: CompileCost {
            provider: settings.provider.clone(),
            model: settings.model.clone(),
            tokens: run.spent,
        },
        key: settings.cache_key(set),
        base_url: settings.base_url.clone(),
        ir: CompiledIr {
            topology: wired.topology,
            nodes,
        },
        diagnostics: wired.diagnostics,
        lints,
        steps: run.steps,
    })
}

/// The sessions of one compile, run in order, with the tokens spent so far.
struct Sessions<'a> {
    client: &'a dyn ModelClient,
    session: SessionSettings,
    evidence: &'a str,
    on_step: &'a mut dyn FnMut(&StepCost),
    steps: Vec<StepCost>,
    spent: TokenCost,
}

impl Sessions<'_> {
    /// One session ([`run_session`]); its cost is reported and added on success.
    fn run<T>(
        &mut self,
        step: &Step,
        task: &str,
        schema: &crate::model::OutputSchema,
        lower: impl Fn(&serde_json::Value) -> Result<T, Vec<String>>,
    ) -> Result<T, CompileError> {
        let (out, cost) = run_session(
            self.client,
            &self.session,
            step,
            self.evidence,
            task,
            schema,
            lower,
        )
        .map_err(|f| CompileError::from_session(f, self.spent))?;
        self.spent += cost.tokens;
        (self.on_step)(&cost);
        self.steps.push(cost);
        Ok(out)
    }

    /// A topology node's sessions: the canonicalizer session when the node is faceted (the
    /// identity spec otherwise), then the postcondition session; its lints are appended.
    fn node(
        &mut self,
        contract: &Contract,
        tn: &TopologyNode,
        lints: &mut Vec<NodeLint>,
    ) -> Result<CompiledNode, CompileError> {
        let canonicalizer = if contract.is_faceted() {
            let canon_schema = schema::canonicalizer_schema();
            self.run(
                &Step::Canonicalizer(contract.id.clone()),
                &prompts::canonicalizer_task(contract),
                &canon_schema,
                |v| lower::lower_canonicalizer(contract, &schema::parse_answer(&canon_schema, v)?),
            )?
        } else {
            compile_node(&CanonicalizerSpec::identity(contract.id.clone()))
                .expect("the identity spec (no rules, no facets) always compiles")
        };
        for l in canonicalizer.lints() {
            lints.push(NodeLint {
                node: contract.id.clone(),
                code: l.code.to_string(),
                message: l.message.clone(),
            });
        }
        let facets = canonicalizer.facets().to_vec();
        let spec = canonicalizer.is_faceted().then(|| canonicalizer.spec());
        let post_schema = schema::postcondition_schema();
        let postconditions = self.run(
            &Step::Postcondition(contract.id.clone()),
            &prompts::postcondition_task(contract, spec),
            &post_schema,
            |v| {
                lower::lower_postconditions(
                    &contract.id,
                    &facets,
                    &schema::parse_answer(&post_schema, v)?,
                )
            },
        )?;
        lints.extend(count_lint(contract, postconditions.entries().len()));
        Ok(CompiledNode {
            id: contract.id.clone(),
            contract_fingerprint: tn
                .contract_fingerprint
                .clone()
                .unwrap_or_else(|| contract.fingerprint()),
            wake_source: tn.wake_source.unwrap_or(WakeSource::Input),
            canonicalizer: Arc::new(canonicalizer),
            postconditions: Arc::new(postconditions),
            contract_view: contract.view(),
        })
    }
}

/// `postcondition-count` when the compiled entries differ in number from the contract's
/// `Postcondition:` sentences.
fn count_lint(contract: &Contract, entries: usize) -> Option<NodeLint> {
    let sentences = contract.postconditions().len();
    (sentences != entries).then(|| NodeLint {
        node: contract.id.clone(),
        code: "postcondition-count".into(),
        message: format!(
            "{entries} postcondition entr{} compiled for {sentences} Postcondition: sentence{} in Maintains",
            if entries == 1 { "y" } else { "ies" },
            if sentences == 1 { "" } else { "s" }
        ),
    })
}
