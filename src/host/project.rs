//! Project resolution (HOST.md §2.1, §4.4): the project directory, `reactor.yml`, the state
//! directory (or directories) and the list of hosted reactors.
//!
//! * The project directory is `--project` (default `.`), made absolute lexically.
//! * The base state directory is `--state-dir` (relative to the project directory), else
//!   `state.dir`, else `<project>/.reactor`.
//! * Without a `reactors:` list there is one reactor named `default` whose contracts live in the
//!   project directory and whose state directory is the base. With a list, each entry gets
//!   `reactors[].state_dir` or `<base>/<name>`; the directories must be distinct.
//! * A state directory that exists as a file, or has a file as an ancestor, is a usage error:
//!   `state dir <path> is not a directory`.
//!
//! Nothing is created: readers and `doctor` use a [`Project`] without side effects.

use std::path::{Path, PathBuf};

use crate::host::config::{
    CONFIG_FILE, DEFAULT_STATE_DIR, GatewayConfig, ReactorConfig, clean_path, resolve_path,
};
use crate::host::error::HostError;
use crate::model::config::ProviderSettings;

/// The name of the single reactor when `reactor.yml` has no `reactors:` list.
pub(crate) const DEFAULT_REACTOR: &str = "default";

/// What the command line says about the project.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ProjectOptions {
    /// `--project` (default `.`).
    pub project: Option<PathBuf>,
    /// `--state-dir`.
    pub state_dir: Option<PathBuf>,
}

/// One hosted reactor, fully resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct ReactorSpec {
    /// `default`, or `reactors[].name`.
    pub name: String,
    /// The directory whose `*.prose.md` contracts make this reactor (absolute).
    pub(crate) contracts_dir: PathBuf,
    /// The reactor's state directory (absolute; may not exist yet).
    pub state_dir: PathBuf,
    /// Its gateways' connectors.
    pub gateways: Vec<GatewayConfig>,
    /// The index in `reactors:`, or `None` for the single reactor.
    pub index: Option<usize>,
}

/// A resolved project: configuration, state directories and reactors.
#[derive(Clone, Debug, PartialEq)]
pub struct Project {
    /// The project directory (absolute, lexically normalized).
    pub dir: PathBuf,
    /// `<dir>/reactor.yml`.
    pub(crate) config_path: PathBuf,
    /// True when `reactor.yml` exists.
    pub(crate) config_present: bool,
    /// The parsed configuration (defaults when the file is absent).
    pub config: ReactorConfig,
    /// The base state directory: `--state-dir`, else `state.dir`, else `<dir>/.reactor`.
    pub(crate) state_base: PathBuf,
    /// The hosted reactors, in list order (one named `default` without a list).
    pub reactors: Vec<ReactorSpec>,
    /// True when `reactor.yml` has a `reactors:` list (the daemon prefixes routes then).
    pub multi: bool,
}

/// `p` made absolute against the working directory and normalized lexically.
pub fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        clean_path(p)
    } else {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        clean_path(&cwd.join(p))
    }
}

/// Refuses a state directory that is a file or lies under a file (HOST.md §2.1). A missing
/// directory is fine. Usage error (exit 2): `state dir <path> is not a directory`.
pub(crate) fn check_state_dir(path: &Path) -> Result<(), HostError> {
    let mut cur = Some(path);
    while let Some(p) = cur {
        match std::fs::metadata(p) {
            Ok(m) => {
                if m.is_dir() {
                    return Ok(());
                }
                return Err(HostError::usage(
                    format!("state dir {} is not a directory", path.display()),
                    None,
                ));
            }
            Err(_) => cur = p.parent(),
        }
    }
    Ok(())
}

/// What marks a directory as a state directory: any of these entries (FORMATS.md §2).
const STATE_DIR_ENTRIES: [&str; 7] = [
    crate::format::layout::RECEIPTS_FILE,
    crate::format::layout::COMPILE_DIR,
    crate::format::layout::WORLD_MODELS_DIR,
    crate::format::layout::WORLD_MODEL_DIR_SINGULAR,
    crate::format::layout::REGISTRY_FILE,
    crate::format::layout::LOCK_FILE,
    crate::format::layout::SERVE_FILE,
];

/// Checks a state directory an offline verb was pointed at with `--state-dir` (issue 8: a typo
/// must not read as an empty ledger). Errors (state, exit 1), each naming the path:
/// `state dir <path> does not exist`, `<path> is not a reactor state dir (no receipts.json,
/// compile/ or world-models/ inside)`, and `permission denied: cannot list state dir <path>`.
/// Nothing is created.
pub(crate) fn check_reader_state_dir(path: &Path) -> Result<(), HostError> {
    let entries = match std::fs::read_dir(path) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(
                HostError::state(format!("state dir {} does not exist", path.display())).with_hint(
                    "check --state-dir (a relative path is resolved against the project directory)",
                ),
            );
        }
        Err(e) => return Err(HostError::io_problem("list state dir", path, &e)),
    };
    let names: Vec<std::ffi::OsString> = entries
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .collect();
    if names
        .iter()
        .any(|n| STATE_DIR_ENTRIES.iter().any(|s| n.as_os_str() == *s))
    {
        return Ok(());
    }
    Err(HostError::state(format!(
        "{} is not a reactor state dir (no receipts.json, compile/ or world-models/ inside)",
        path.display()
    ))
    .with_hint("point --state-dir at the directory `reactor run` or `reactor serve` writes (state.dir, default .reactor)"))
}

impl Project {
    /// Resolves the project (see the module documentation).
    ///
    /// Errors: a `--project` that is missing or not a directory (usage, exit 2); an unreadable or
    /// invalid `reactor.yml` (config, exit 1, naming `reactor.yml:<line>:<col>: <key path>`); a
    /// state directory that is not a directory (usage, exit 2); two reactors sharing a state
    /// directory (config, exit 1).
    pub(crate) fn load(opts: &ProjectOptions) -> Result<Project, HostError> {
        let dir = absolute(opts.project.as_deref().unwrap_or(Path::new(".")));
        match std::fs::metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(HostError::usage(
                    format!("project directory {} is not a directory", dir.display()),
                    None,
                ));
            }
            Err(_) => {
                return Err(HostError::usage(
                    format!("project directory {} does not exist", dir.display()),
                    None,
                ));
            }
        }
        let config_path = dir.join(CONFIG_FILE);
        let loaded = ReactorConfig::load(&dir)
            .map_err(|e| HostError::from(e).with_hint(format!("fix {}", config_path.display())))?;
        let config_present = loaded.is_some();
        let config = loaded.unwrap_or_default();
        let state_base = match &opts.state_dir {
            Some(s) => resolve_path(&dir, s),
            None => config
                .state
                .dir
                .clone()
                .unwrap_or_else(|| dir.join(DEFAULT_STATE_DIR)),
        };
        check_state_dir(&state_base)?;
        let (reactors, multi) = match &config.reactors {
            None => (
                vec![ReactorSpec {
                    name: DEFAULT_REACTOR.to_string(),
                    contracts_dir: dir.clone(),
                    state_dir: state_base.clone(),
                    gateways: config.gateways.clone(),
                    index: None,
                }],
                false,
            ),
            Some(entries) => {
                let mut out: Vec<ReactorSpec> = Vec::with_capacity(entries.len());
                for e in entries {
                    let state_dir = e
                        .state_dir
                        .clone()
                        .unwrap_or_else(|| state_base.join(&e.name));
                    if let Some(other) = out.iter().find(|r| r.state_dir == state_dir) {
                        let pos = e.state_dir_pos.unwrap_or(e.pos);
                        return Err(HostError::config(format!(
                            "{CONFIG_FILE}:{}:{}: reactors[{}].state_dir: {} is also the state directory of reactor '{}' (each reactor needs its own)",
                            pos.line,
                            pos.column,
                            e.index,
                            state_dir.display(),
                            other.name
                        )));
                    }
                    check_state_dir(&state_dir)?;
                    out.push(ReactorSpec {
                        name: e.name.clone(),
                        contracts_dir: e.project.clone(),
                        state_dir,
                        gateways: e.gateways.clone(),
                        index: Some(e.index),
                    });
                }
                (out, true)
            }
        };
        Ok(Project {
            dir,
            config_path,
            config_present,
            config,
            state_base,
            reactors,
            multi,
        })
    }

    /// The `model.*` values for [`crate::model::ProviderConfig::resolve`], with the base-URL
    /// variables of the process environment (`REACTOR_MODEL_BASE_URL`, `OPENAI_BASE_URL`,
    /// `ANTHROPIC_BASE_URL`).
    pub(crate) fn provider_settings(&self) -> ProviderSettings {
        ProviderSettings {
            env: crate::model::config::EnvBaseUrls::from_env(),
            ..self.config.model.provider_settings()
        }
    }

    /// The reactor names, in list order.
    pub(crate) fn names(&self) -> Vec<&str> {
        self.reactors.iter().map(|r| r.name.as_str()).collect()
    }

    /// The reactor a verb works on: the one named by `--reactor`, or the only one.
    ///
    /// Errors (usage, exit 2): an unknown name (listing the configured names); no `--reactor`
    /// while several reactors are configured. `verb` names the verb in the hint.
    pub(crate) fn select(&self, name: Option<&str>, verb: &str) -> Result<&ReactorSpec, HostError> {
        match name {
            Some(n) => self.reactors.iter().find(|r| r.name == n).ok_or_else(|| {
                HostError::usage(
                    format!(
                        "unknown reactor '{n}' (configured: {})",
                        self.names().join(", ")
                    ),
                    Some(verb),
                )
            }),
            None if self.reactors.len() == 1 => Ok(&self.reactors[0]),
            None => Err(HostError::usage(
                format!(
                    "{} reactors are configured ({}); choose one with --reactor <name>",
                    self.reactors.len(),
                    self.names().join(", ")
                ),
                Some(verb),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::error::ErrorKind;

    fn opts(dir: &Path) -> ProjectOptions {
        ProjectOptions {
            project: Some(dir.to_path_buf()),
            state_dir: None,
        }
    }

    #[test]
    fn single_reactor_defaults() {
        let d = tempfile::tempdir().unwrap();
        let p = Project::load(&opts(d.path())).unwrap();
        assert!(!p.config_present);
        assert!(!p.multi);
        assert_eq!(p.names(), vec!["default"]);
        assert_eq!(p.state_base, absolute(d.path()).join(".reactor"));
        let r = p.select(None, "status").unwrap();
        assert_eq!(r.contracts_dir, absolute(d.path()));
        assert!(p.select(Some("default"), "status").is_ok());
        assert_eq!(
            p.select(Some("x"), "status").unwrap_err().message,
            "unknown reactor 'x' (configured: default)"
        );
        // Nothing was created.
        assert!(!d.path().join(".reactor").exists());
        // --state-dir is relative to the project directory.
        let mut o = opts(d.path());
        o.state_dir = Some(PathBuf::from("state/../st"));
        let p = Project::load(&o).unwrap();
        assert_eq!(p.state_base, absolute(d.path()).join("st"));
    }

    #[test]
    fn state_dir_that_is_a_file_is_a_usage_error() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("f"), "x").unwrap();
        for sd in ["f", "f/sub/deeper"] {
            let mut o = opts(d.path());
            o.state_dir = Some(PathBuf::from(sd));
            let e = Project::load(&o).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Usage);
            assert_eq!(
                e.message,
                format!(
                    "state dir {} is not a directory",
                    absolute(d.path()).join(sd).display()
                )
            );
        }
        std::fs::write(d.path().join("reactor.yml"), "state:\n  dir: f\n").unwrap();
        let e = Project::load(&opts(d.path())).unwrap_err();
        assert_eq!(e.exit_code(), 2);
    }

    #[test]
    fn several_reactors_resolve_and_must_not_share_state() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("reactor.yml"),
            "state:\n  dir: ./st\nreactors:\n  - name: alpha\n    project: ./alpha\n  - name: beta\n    state_dir: ./state/beta\n",
        )
        .unwrap();
        let p = Project::load(&opts(d.path())).unwrap();
        assert!(p.multi);
        let base = absolute(d.path());
        assert_eq!(p.reactors[0].state_dir, base.join("st/alpha"));
        assert_eq!(p.reactors[0].contracts_dir, base.join("alpha"));
        assert_eq!(p.reactors[1].state_dir, base.join("state/beta"));
        assert_eq!(p.reactors[1].contracts_dir, base);
        let e = p.select(None, "logs").unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.message,
            "2 reactors are configured (alpha, beta); choose one with --reactor <name>"
        );
        assert_eq!(e.hints, vec!["try 'reactor logs --help'".to_string()]);
        assert_eq!(p.select(Some("beta"), "logs").unwrap().name, "beta");
        // --state-dir moves the default per-reactor directories only.
        let mut o = opts(d.path());
        o.state_dir = Some(PathBuf::from("/tmp/elsewhere"));
        let p = Project::load(&o).unwrap();
        assert_eq!(
            p.reactors[0].state_dir,
            PathBuf::from("/tmp/elsewhere/alpha")
        );
        assert_eq!(p.reactors[1].state_dir, base.join("state/beta"));

        std::fs::write(
            d.path().join("reactor.yml"),
            "reactors:\n  - name: alpha\n  - name: beta\n    state_dir: ./.reactor/alpha\n",
        )
        .unwrap();
        let e = Project::load(&opts(d.path())).unwrap_err();
        assert_eq!(e.exit_code(), 1);
        assert!(
            e.message
                .starts_with("reactor.yml:4:16: reactors[1].state_dir: "),
            "{}",
            e.message
        );
        assert!(
            e.message
                .contains("is also the state directory of reactor 'alpha'")
        );
    }

    #[test]
    fn a_missing_project_is_a_usage_error_and_a_bad_config_exits_1() {
        let d = tempfile::tempdir().unwrap();
        let e = Project::load(&opts(&d.path().join("nope"))).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.message.ends_with("does not exist"));
        std::fs::write(d.path().join("reactor.yml"), "model:\n  temprature: 1\n").unwrap();
        let e = Project::load(&opts(d.path())).unwrap_err();
        assert_eq!(e.exit_code(), 1);
        assert!(
            e.message
                .starts_with("reactor.yml:2:3: model.temprature: unknown key")
        );
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::create_dir(d.path().join("sub/reactor.yml")).unwrap();
        let e = Project::load(&opts(&d.path().join("sub"))).unwrap_err();
        assert!(e.message.contains("is a directory"), "{}", e.message);
    }
}
