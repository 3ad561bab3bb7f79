//! What the writer verbs (`compile`, `run`, `trigger`, `serve`) share (HOST.md §5, §6, §7, §8.3
//! steps 1–5, §8.4 steps 1–4, §9.1 step 3): the model plan and client, the key check, the
//! single-writer lock, compile-if-stale, and mounting a reactor whose renders are agent loops.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use crate::agent::prompt::{
    FacetLayout, NodeBrief, PostconditionBrief, PromptSource, SystemPrompt,
};
use crate::agent::render::{AgentRender, RenderSettings};
use crate::compile::cache::{Freshness, LoadedIr, Manifest, freshness, load_ir, sdk_version};
use crate::compile::{CompileError, CompileSettings, Compiled};
use crate::contract::ContractSet;
use crate::core::{Reactor, ReactorOptions};
use crate::host::config::ModelSection;
use crate::host::error::{ErrorKind, HostError, StateDirContext};
use crate::host::progress::Progress;
use crate::host::project::{Project, ReactorSpec};
use crate::model::replay::with_recording_from_env;
use crate::model::{
    ApiKey, ConfigError, HttpSettings, ModelClient, OfflineClient, ProviderClient, ProviderConfig,
};
use crate::store::ledger::{OpenNote, SyncPolicy};
use crate::store::lock::StateLock;

/// The resolved model side of a project.
#[derive(Clone, Debug)]
pub(crate) struct ModelPlan {
    /// The provider configuration (transport, endpoint, key variable, models).
    pub config: ProviderConfig,
    /// The system prompt (embedded or `REACTOR_SKILL_PATH`).
    pub prompt: SystemPrompt,
    /// `model.max_turns`.
    pub max_turns: u32,
    /// Offline mode (`--offline` / `REACTOR_OFFLINE`).
    pub offline: bool,
    /// The transport settings: `model.timeout`, `model.connect_timeout`,
    /// `REACTOR_HTTP_BACKOFF_MS`, `REACTOR_DEBUG`.
    pub http: HttpSettings,
    /// Where a missing model id belongs in `reactor.yml` (`reactor.yml:3:13`).
    pub location: String,
    /// Renders a drain runs at once: `--parallel-renders`, else `model.parallel_renders`.
    pub parallel_renders: usize,
}

impl ModelPlan {
    /// Resolves the provider table (with the base-URL variables of the environment), the
    /// transport settings and the system prompt. Errors: configuration (exit 1).
    pub(crate) fn resolve(project: &Project, offline: bool) -> Result<ModelPlan, HostError> {
        let config = ProviderConfig::resolve(&project.provider_settings())?;
        let prompt = crate::agent::prompt::system_prompt()?;
        Ok(ModelPlan {
            config,
            prompt,
            max_turns: project.config.model.max_turns,
            offline,
            http: http_settings_for(&project.config.model)?,
            location: project.config.model.location(),
            parallel_renders: project.config.model.parallel_renders,
        })
    }

    /// Applies `--parallel-renders` when given.
    pub(crate) fn with_parallel_renders(mut self, flag: Option<usize>) -> ModelPlan {
        if let Some(n) = flag {
            self.parallel_renders = n;
        }
        self
    }

    /// A missing model id as a configuration error naming the place in `reactor.yml` and
    /// how to fix it: `reactor.yml:3:13: model.compile_model is required for provider 'openai'`
    /// with `hint: add compile_model: <model id> under model: in reactor.yml`.
    pub(crate) fn config_error(&self, e: ConfigError) -> HostError {
        match e {
            ConfigError::MissingModel { role, .. } => {
                HostError::config(format!("{}: {e}", self.location)).with_hint(format!(
                    "add `{role}_model: <model id>` under `model:` in reactor.yml (the provider has no default {role} model)"
                ))
            }
            other => other.into(),
        }
    }

    /// The compile settings (HOST.md §6.3 key: contract set, `reactor-rs/<v>[+skill…]`, model).
    pub(crate) fn compile_settings(&self) -> Result<CompileSettings, HostError> {
        let model = self
            .config
            .require_compile_model()
            .map_err(|e| self.config_error(e))?
            .to_string();
        let replaced = match self.prompt.source {
            PromptSource::File(_) => Some(self.prompt.text.as_str()),
            PromptSource::Embedded => None,
        };
        Ok(CompileSettings {
            system_prompt: self.prompt.text.clone(),
            model,
            provider: self.config.provider.clone(),
            temperature: self.config.temperature,
            reasoning_effort: self.config.reasoning_effort.clone(),
            sdk_version: sdk_version(replaced),
            base_url: Some(self.config.recorded_base_url()),
        })
    }

    /// The warning when a usable cache was compiled against another provider or endpoint than
    /// the configured one (provider and endpoint are not part of the key, HOST.md §6.3, so the
    /// cache is still used). `None` when they match, or when the manifest predates the recorded
    /// base URL and the provider matches.
    pub(crate) fn endpoint_drift(&self, manifest: &Manifest) -> Option<String> {
        let provider = &self.config.provider;
        let base_url = self.config.recorded_base_url();
        let same_provider = manifest.cost.provider == *provider;
        let same_url = manifest.base_url.as_ref().is_none_or(|u| *u == base_url);
        if same_provider && same_url {
            return None;
        }
        let then = match &manifest.base_url {
            Some(u) => format!("provider '{}' at {u}", manifest.cost.provider),
            None => format!("provider '{}'", manifest.cost.provider),
        };
        Some(format!(
            "the compile cache was compiled against {then}, but the configured provider is '{provider}' at {base_url}; the cache is still used (provider and endpoint are not part of its key): run `reactor compile --force` to recompile against the configured one"
        ))
    }

    /// Checks that the key is present (unless offline) before any model call can happen
    /// (HOST.md §5.1). Returns it (absent offline).
    pub(crate) fn require_key(&self, project: &Project) -> Result<Option<ApiKey>, HostError> {
        if self.offline {
            return Ok(None);
        }
        Ok(Some(crate::model::keys::require_key(
            &self.config,
            &project.dir,
        )?))
    }

    /// The model client: the offline client, or the provider client (wrapped by the recording
    /// client when `REACTOR_MODEL_RECORD` is set).
    pub(crate) fn client(&self, key: Option<ApiKey>) -> Result<Arc<dyn ModelClient>, HostError> {
        match key {
            None => Ok(Arc::new(OfflineClient)),
            Some(key) => {
                let client: Box<dyn ModelClient> = Box::new(ProviderClient::new(
                    self.config.clone(),
                    key,
                    self.http.clone(),
                ));
                Ok(Arc::from(with_recording_from_env(client)))
            }
        }
    }
}

/// The transport settings of the provider clients from the environment alone
/// ([`HttpSettings::from_env`]: `REACTOR_HTTP_BACKOFF_MS`, `REACTOR_DEBUG`).
///
/// Errors (configuration, exit 1): a backoff that is not a whole number of milliseconds.
pub fn http_settings() -> Result<HttpSettings, HostError> {
    Ok(HttpSettings::from_env()?)
}

/// [`http_settings`] plus `model.timeout` and `model.connect_timeout` of `reactor.yml`.
pub(crate) fn http_settings_for(model: &ModelSection) -> Result<HttpSettings, HostError> {
    let mut settings = http_settings()?;
    if let Some(t) = model.timeout {
        settings.attempt_timeout = t;
    }
    if let Some(t) = model.connect_timeout {
        settings.connect_timeout = t;
    }
    Ok(settings)
}

/// Loads the contracts of a reactor; no contracts is an error (HOST.md §8.3 step 1).
pub(crate) fn load_contracts(spec: &ReactorSpec) -> Result<ContractSet, HostError> {
    let set = ContractSet::load(&spec.contracts_dir)?;
    if set.is_empty() {
        return Err(HostError::config(format!(
            "no .prose.md contracts found under {}",
            spec.contracts_dir.display()
        )));
    }
    Ok(set)
}

/// Takes the state-dir lock, creating the directory first (HOST.md §7.1). A held lock is an
/// error naming the holder, with the hint of §7.1.
pub(crate) fn take_lock(state_dir: &Path) -> Result<StateLock, HostError> {
    crate::store::fsutil::create_dir_all_durable(state_dir).map_err(|e| {
        HostError::state(format!(
            "cannot create state dir {}: {e}",
            state_dir.display()
        ))
    })?;
    Ok(StateLock::acquire(state_dir)?)
}

/// The writer's check of an existing ledger before it writes anything into the state
/// directory (FORMATS.md §11.4 step 5 and §7): not an array, blank, corrupt, or a receipt that
/// fails verification is refused, the file untouched. Nothing is created or repaired here
/// (that is [`crate::store::ledger::Ledger::open`]'s job once the reactor is mounted).
///
/// Errors (state, exit 1): `<state-dir>: receipts.json[<i>] fails verification: <problems>`
/// (or the reader's message) with the hint `restore the file from a backup or move it aside`.
pub fn check_ledger(state_dir: &Path) -> Result<(), HostError> {
    crate::store::ledger::check_for_write(state_dir).in_state_dir(state_dir)
}

/// How the IR of a reactor was obtained.
#[derive(Debug)]
pub(crate) enum CompileOutcome {
    /// The cache was fresh: zero session cost. `drift` is the warning when the configured
    /// provider or endpoint differs from the manifest's (FORMATS.md §15.4); it was printed on
    /// stderr already, and `serve --json` repeats it as a `warning` event.
    CacheHit {
        /// The endpoint-drift warning, if any.
        drift: Option<String>,
    },
    /// The sessions ran (the cache was stale or `--force`).
    Compiled(Box<Compiled>),
}

/// A compile failure as the writer verbs report it: the message with secret shapes and the
/// exact `secrets` (the provider key) redacted — a repair-exhausted error list quotes
/// model-supplied values (HOST.md §5.8) — and, when any token was spent, a hint giving them.
pub(crate) fn compile_failure_redacted(
    prefix: &str,
    e: &CompileError,
    secrets: &[&str],
) -> HostError {
    let spent = e.spent();
    let err = HostError::new(
        ErrorKind::Model,
        format!(
            "{prefix}: {}",
            crate::format::sanitize::redact(&e.to_string(), secrets)
        ),
    );
    if spent.fresh == 0 && spent.reused == 0 {
        return err;
    }
    err.with_hint(format!(
        "tokens already spent: fresh={} reused={}",
        spent.fresh, spent.reused
    ))
}

/// Compiles when the cache is stale (the caller holds the lock) and loads the IR keylessly.
/// `offline` refuses a compile. Errors carry the verb-specific prefix of the failure message.
pub(crate) fn ensure_compiled(
    spec: &ReactorSpec,
    plan: &ModelPlan,
    client: &dyn ModelClient,
    api_key: Option<&ApiKey>,
    failure_prefix: &str,
    progress: &Progress,
) -> Result<(LoadedIr, CompileOutcome), HostError> {
    let set = load_contracts(spec)?;
    let settings = plan.compile_settings()?;
    let key = settings.cache_key(&set);
    match freshness(&spec.state_dir, &key) {
        Freshness::Fresh(loaded) => {
            let drift = plan.endpoint_drift(&loaded.manifest);
            if let Some(w) = &drift {
                crate::host::output::warn(w);
            }
            Ok((*loaded, CompileOutcome::CacheHit { drift }))
        }
        stale => {
            if plan.offline {
                return Err(HostError::new(
                    ErrorKind::Model,
                    format!(
                        "the compile cache is stale ({}) and offline mode forbids model calls",
                        stale.reason().map(|r| r.to_string()).unwrap_or_default()
                    ),
                ));
            }
            // No model call is paid for on top of a ledger the writer would refuse.
            check_ledger(&spec.state_dir)?;
            progress.phase("sessions", Some(Progress::sessions_of(&set)));
            let compiled =
                crate::compile::compile_project_observed(&set, &settings, client, &mut |step| {
                    progress.session_done(step)
                })
                .map_err(|e| {
                    let secrets: Vec<&str> =
                        api_key.map(|k| vec![k.expose_secret()]).unwrap_or_default();
                    compile_failure_redacted(failure_prefix, &e, &secrets)
                })?;
            compiled.write_cache(&spec.state_dir, jiff::Timestamp::now())?;
            let loaded = load_ir(&spec.state_dir).map_err(|r| {
                HostError::internal(format!("the compile cache just written does not load: {r}"))
            })?;
            Ok((loaded, CompileOutcome::Compiled(Box::new(compiled))))
        }
    }
}

/// The render briefs of every node: contract view, facet layout, postconditions, and the
/// inbound slots in mounted order (for the wake header).
pub fn briefs(loaded: &LoadedIr, mounted: &crate::core::ir::Mounted) -> HashMap<String, NodeBrief> {
    let mut out = HashMap::new();
    for n in &loaded.ir.nodes {
        let mut postconditions: Vec<PostconditionBrief> = n
            .postconditions
            .deterministic
            .iter()
            .map(|d| PostconditionBrief {
                id: d.id.clone(),
                source: d.source.clone(),
                attested: false,
            })
            .chain(
                n.postconditions
                    .attested
                    .iter()
                    .map(|a| PostconditionBrief {
                        id: a.id.clone(),
                        source: a.source.clone(),
                        attested: true,
                    }),
            )
            .collect();
        postconditions.sort_by(|a, b| a.id.cmp(&b.id));
        let inbound = mounted
            .inbound
            .get(&n.id)
            .map(|ix| {
                ix.iter()
                    .map(|&i| {
                        (
                            mounted.edges[i].producer.clone(),
                            mounted.edges[i].facet.clone(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let kind = if mounted.entry_points.contains(&n.id) {
            "gateway"
        } else {
            "responsibility"
        };
        out.insert(
            n.id.clone(),
            NodeBrief {
                id: n.id.clone(),
                name: n.id.clone(),
                kind: kind.to_string(),
                contract_view: n.contract_view.clone(),
                facets: n
                    .facet_layout()
                    .into_iter()
                    .map(|(name, paths)| FacetLayout {
                        name: name.to_string(),
                        paths: paths.to_vec(),
                    })
                    .collect(),
                postconditions,
                inbound,
            },
        );
    }
    out
}

/// Mounts a reactor over `spec.state_dir` with group commit, whose renders are agent loops on
/// `client` reported to `progress` (the caller holds the lock). Returns the reactor and the
/// ledger notes to print.
pub(crate) fn open_reactor(
    project: &Project,
    spec: &ReactorSpec,
    loaded: &LoadedIr,
    plan: &ModelPlan,
    client: Arc<dyn ModelClient>,
    key: Option<&ApiKey>,
    progress: &Progress,
) -> Result<(Reactor, Vec<OpenNote>), HostError> {
    let ir = loaded.ir.to_ir();
    let mounted = crate::core::ir::mount(&ir, crate::core::ir::IngressMode::Host)?;
    let secrets: Vec<String> = key
        .map(|k| vec![k.expose_secret().to_string()])
        .unwrap_or_default();
    let render_model = if plan.offline {
        plan.config
            .render_model
            .clone()
            .unwrap_or_else(|| "none".into())
    } else {
        plan.config
            .require_render_model()
            .map_err(|e| plan.config_error(e))?
            .to_string()
    };
    let mut settings = RenderSettings::new(plan.config.provider.clone(), render_model);
    settings.temperature = plan.config.temperature;
    settings.reasoning_effort = plan.config.reasoning_effort.clone();
    settings.max_turns = plan.max_turns;
    settings.reactor = spec.name.clone();
    settings.shell_timeout =
        std::time::Duration::from_millis(project.config.sandbox.shell_timeout_ms);
    settings.secrets = secrets.clone();
    let sandbox = sandbox_runner(project, &plan.config.api_key_env);
    let render = AgentRender::new(
        client,
        settings,
        plan.prompt.text.clone(),
        briefs(loaded, &mounted),
    )
    .with_sandbox(sandbox);
    progress.phase("renders", Some(mounted.nodes.len() as u64));
    let (reactor, notes) = Reactor::open(
        &spec.state_dir,
        ir,
        progress.render(Arc::new(render)),
        ReactorOptions {
            sync: SyncPolicy::Group,
            secrets,
            parallel_renders: plan.parallel_renders,
            ..ReactorOptions::default()
        },
    )
    .in_state_dir(&spec.state_dir)?;
    for g in &spec.gateways {
        reactor.rebuild_cursor(&g.node, &g.source_id);
    }
    for gw in &mounted.entry_points {
        if !spec.gateways.iter().any(|g| &g.node == gw) {
            reactor.rebuild_cursor(gw, gw);
        }
    }
    Ok((reactor, notes))
}

fn sandbox_runner(
    project: &Project,
    key_env: &str,
) -> Option<Arc<dyn crate::agent::sandbox::SandboxRunner>> {
    use crate::agent::sandbox::SandboxMode;
    use crate::host::config::SandboxMode as Cfg;
    let s = &project.config.sandbox;
    let mode = match s.mode {
        Cfg::None => SandboxMode::None,
        Cfg::Docker => SandboxMode::Docker {
            image: s.image.clone(),
            network: s.network.clone(),
        },
        Cfg::UnixLocal => SandboxMode::UnixLocal,
    };
    mode.runner(&[key_env.to_string()])
}

/// Checks every `gateways[].node` against the entry points of the compiled topology
/// (HOST.md §4.3).
pub(crate) fn check_gateways(spec: &ReactorSpec, loaded: &LoadedIr) -> Result<(), HostError> {
    for g in &spec.gateways {
        if !loaded.ir.topology.entry_points.contains(&g.node) {
            return Err(HostError::config(format!(
                "{}.node: '{}' is not an entry point of the compiled topology",
                g.path, g.node
            )));
        }
    }
    Ok(())
}

/// Prints the ledger notes of opening for write (FORMATS.md §11.4 wording) on stderr.
pub(crate) fn print_notes(state_dir: &Path, notes: &[OpenNote]) {
    for n in notes {
        if let Some(m) = n.message(state_dir) {
            eprintln!("{m}");
        }
    }
}

/// A reactor ready for a writer verb: the IR (compiled first when stale), the gateways
/// checked, the reactor mounted with group commit, and the ledger notes printed.
pub(crate) struct Prepared {
    /// The loaded IR.
    pub loaded: LoadedIr,
    /// How it was obtained.
    pub outcome: CompileOutcome,
    /// The mounted reactor.
    pub reactor: Reactor,
}

/// The model side a writer verb hands to [`prepare`]: the client, the key (absent offline) and
/// the progress display its sessions and renders report to.
pub(crate) struct Access<'a> {
    /// The model client ([`ModelPlan::client`]).
    pub client: Arc<dyn ModelClient>,
    /// The provider key, for redaction.
    pub key: Option<&'a ApiKey>,
    /// The progress display (one in [`crate::host::progress::Mode::Off`] for none).
    pub progress: &'a Progress,
}

/// [`ensure_compiled`] + [`check_gateways`] + [`open_reactor`] (the caller holds the lock).
/// `check` runs between loading the IR and mounting (e.g. `trigger`'s node check).
pub(crate) fn prepare(
    project: &Project,
    spec: &ReactorSpec,
    plan: &ModelPlan,
    access: Access<'_>,
    failure_prefix: &str,
    check: impl FnOnce(&LoadedIr) -> Result<(), HostError>,
) -> Result<Prepared, HostError> {
    let Access {
        client,
        key,
        progress,
    } = access;
    let client = progress.client(client);
    let (loaded, outcome) =
        ensure_compiled(spec, plan, client.as_ref(), key, failure_prefix, progress)?;
    check(&loaded)?;
    check_gateways(spec, &loaded)?;
    let (reactor, notes) = open_reactor(project, spec, &loaded, plan, client, key, progress)?;
    print_notes(&spec.state_dir, &notes);
    Ok(Prepared {
        loaded,
        outcome,
        reactor,
    })
}
