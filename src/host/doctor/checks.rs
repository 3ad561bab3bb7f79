//! The checks `doctor` makes without side effects: whether a state directory is usable (from
//! permission bits, creating nothing), the compile cache's freshness, Docker, the system prompt
//! and unsupported connector plugins (HOST.md §8.2).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::agent::prompt::{PromptSource, SKILL_PATH_ENV};
use crate::compile::{CompileSettings, Freshness, freshness};
use crate::contract::ContractSet;
use crate::host::error::HostError;
use crate::host::project::ReactorSpec;
use crate::replay::statedir::{self, ManifestRead};

/// How long `docker version` may take before Docker counts as not available.
const DOCKER_PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a directory is not usable for writing. `Display` is the text after `NOT writable: `.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NotWritable {
    /// The directory cannot be examined (`stat` failed).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The path exists but is not a directory.
    #[error("not a directory")]
    NotADirectory,
    /// The permission bits refuse this process (`mode` is the low 12 bits).
    #[error("permission denied (mode {mode:04o})")]
    Mode {
        /// The directory's mode.
        mode: u32,
    },
    /// The directory is read-only (platforms without Unix modes).
    #[error("permission denied (read-only)")]
    ReadOnly,
    /// No ancestor of an absent directory exists.
    #[error("no existing parent directory")]
    NoParent,
    /// The nearest existing ancestor of an absent directory refuses writing.
    #[error("{}: {source}", dir.display())]
    Ancestor {
        /// That ancestor.
        dir: PathBuf,
        /// Why.
        source: Box<NotWritable>,
    },
}

/// Effective uid, effective gid and supplementary groups from `/proc/self/status`.
pub(super) fn effective_ids() -> Option<(u32, Vec<u32>)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| -> Option<Vec<u32>> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        Some(
            line[name.len()..]
                .split_whitespace()
                .filter_map(|v| v.parse().ok())
                .collect(),
        )
    };
    let uid = *field("Uid:")?.get(1)?;
    let mut groups = field("Groups:").unwrap_or_default();
    if let Some(gid) = field("Gid:").and_then(|g| g.get(1).copied()) {
        groups.push(gid);
    }
    Some((uid, groups))
}

/// Whether this process may create entries in the directory `path`, decided from its
/// permission bits (no file is created: `doctor` has no side effects).
pub(super) fn dir_writable(path: &Path) -> Result<(), NotWritable> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_dir() {
        return Err(NotWritable::NotADirectory);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let Some((uid, groups)) = effective_ids() {
            if uid == 0 {
                return Ok(());
            }
            let mode = meta.mode();
            let bits = if meta.uid() == uid {
                mode >> 6
            } else if groups.contains(&meta.gid()) {
                mode >> 3
            } else {
                mode
            };
            return if bits & 0o3 == 0o3 {
                Ok(())
            } else {
                Err(NotWritable::Mode {
                    mode: mode & 0o7777,
                })
            };
        }
    }
    if meta.permissions().readonly() {
        Err(NotWritable::ReadOnly)
    } else {
        Ok(())
    }
}

/// The state directory's usability: JSON `{"path", "exists", "writable"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StateDirHealth {
    /// The directory (`null` when the configuration is invalid).
    pub path: Option<String>,
    /// It exists.
    pub exists: bool,
    /// It is writable, or can be created.
    pub writable: bool,
    /// `(writable)`, `(absent; parent writable)` or `(NOT writable: <error>)`.
    #[serde(skip)]
    pub text: String,
    /// The problem that makes `doctor` unhealthy.
    #[serde(skip)]
    pub problem: Option<String>,
}

/// Decides whether `path` is usable as a state directory.
pub(super) fn state_dir_health(path: &Path) -> StateDirHealth {
    let shown = Some(path.display().to_string());
    let (exists, verdict) = match std::fs::metadata(path) {
        Ok(_) => (true, dir_writable(path)),
        Err(_) => {
            // The nearest existing ancestor decides whether the directory can be created.
            let parent = path.ancestors().skip(1).find(|p| p.exists());
            let verdict = match parent {
                Some(p) => dir_writable(p).map_err(|e| NotWritable::Ancestor {
                    dir: p.to_path_buf(),
                    source: Box::new(e),
                }),
                None => Err(NotWritable::NoParent),
            };
            (false, verdict)
        }
    };
    match (exists, verdict) {
        (true, Ok(())) => StateDirHealth {
            path: shown,
            exists,
            writable: true,
            text: "(writable)".into(),
            problem: None,
        },
        (false, Ok(())) => StateDirHealth {
            path: shown,
            exists,
            writable: true,
            text: "(absent; parent writable)".into(),
            problem: None,
        },
        (_, Err(e)) => StateDirHealth {
            path: shown,
            exists,
            writable: false,
            text: format!("(NOT writable: {e})"),
            problem: Some(if exists {
                format!("state dir {} is not writable: {e}", path.display())
            } else {
                format!("state dir {} cannot be created: {e}", path.display())
            }),
        },
    }
}

/// The compile cache's health: JSON `{"freshness", "reason"?, "contracts", "nodes"?,
/// "edges"?}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IrHealth {
    /// `fresh`, `stale`, `absent`, `no-contracts`, `invalid` or `unknown`.
    pub freshness: &'static str,
    /// Why it is not fresh.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Contracts found.
    pub contracts: usize,
    /// Topology nodes (fresh, or stale with a readable topology).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes: Option<usize>,
    /// Topology edges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edges: Option<usize>,
    /// The `compiled IR` line.
    #[serde(skip)]
    pub text: String,
    /// The problem that makes `doctor` unhealthy.
    #[serde(skip)]
    pub problem: Option<String>,
}

impl IrHealth {
    fn new(
        freshness: &'static str,
        reason: Option<String>,
        contracts: usize,
        text: String,
    ) -> Self {
        IrHealth {
            freshness,
            reason,
            contracts,
            nodes: None,
            edges: None,
            text,
            problem: None,
        }
    }

    fn counts(mut self, counts: Option<(usize, usize)>) -> Self {
        if let Some((n, e)) = counts {
            self.nodes = Some(n);
            self.edges = Some(e);
        }
        self
    }

    /// The answer when the configuration cannot be read.
    pub(super) fn configuration_invalid() -> Self {
        IrHealth::new(
            "unknown",
            Some("configuration invalid".into()),
            0,
            "unknown (configuration invalid)".into(),
        )
    }
}

/// Checks a reactor's contracts and compile cache against the current key (HOST.md §6.4).
pub(super) fn ir_health(
    spec: &ReactorSpec,
    settings: &Result<CompileSettings, HostError>,
) -> IrHealth {
    let set = match ContractSet::load(&spec.contracts_dir) {
        Ok(s) => s,
        Err(e) => {
            let text = format!("contracts invalid: {e}");
            return IrHealth {
                problem: Some(text.clone()),
                ..IrHealth::new("invalid", Some(e.to_string()), 0, text)
            };
        }
    };
    if set.is_empty() {
        let text = "no .prose.md contracts found in this project".to_string();
        return IrHealth {
            problem: Some(text.clone()),
            ..IrHealth::new("no-contracts", None, 0, text)
        };
    }
    let n = set.len();
    let not_compiled = || {
        IrHealth::new(
            "absent",
            Some("no compile cache".into()),
            n,
            "not compiled — run `reactor compile`".into(),
        )
    };
    if let Some(problem) = crate::host::status::manifest_permission_problem(&spec.state_dir) {
        return IrHealth {
            problem: Some(problem.clone()),
            ..IrHealth::new(
                "unknown",
                Some(problem.clone()),
                n,
                format!("unknown ({problem})"),
            )
        };
    }
    let settings = match settings {
        Ok(s) => s,
        Err(why) => {
            if statedir::read_manifest(&spec.state_dir) == ManifestRead::Absent {
                return not_compiled();
            }
            let why = &why.message;
            return IrHealth::new("unknown", Some(why.clone()), n, format!("unknown ({why})"));
        }
    };
    match freshness(&spec.state_dir, &settings.cache_key(&set)) {
        Freshness::Fresh(loaded) => {
            let t = loaded.ir.summary();
            IrHealth::new(
                "fresh",
                None,
                n,
                format!("fresh ({} nodes, {} edges)", t.nodes, t.edges),
            )
            .counts(Some((t.nodes, t.edges)))
        }
        Freshness::Stale {
            reason, topology, ..
        } => IrHealth::new(
            "stale",
            Some(reason.to_string()),
            n,
            format!("STALE ({reason}) — run `reactor compile`"),
        )
        .counts(topology.map(|t| (t.nodes, t.edges))),
        Freshness::Absent { .. } => not_compiled(),
    }
}

/// Whether `docker version` answers (exit 0) within [`DOCKER_PROBE_TIMEOUT`].
pub(super) fn docker_available() -> bool {
    let child = std::process::Command::new("docker")
        .args(["version", "--format", "{{.Server.Version}}"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    let Ok(mut child) = child else {
        return false;
    };
    let deadline = Instant::now() + DOCKER_PROBE_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status.success(),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(25)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return false;
            }
        }
    }
}

/// The system prompt: JSON `{"source", "ok"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PromptHealth {
    /// `embedded` or the file.
    pub source: String,
    /// It is usable.
    pub ok: bool,
    /// The `system prompt` line.
    #[serde(skip)]
    pub text: String,
}

/// Checks the system prompt (embedded, or `REACTOR_SKILL_PATH`).
pub(super) fn system_prompt_health() -> PromptHealth {
    match crate::agent::prompt::system_prompt() {
        Ok(p) => match p.source {
            PromptSource::Embedded => PromptHealth {
                source: "embedded".into(),
                ok: true,
                text: "embedded".into(),
            },
            PromptSource::File(f) => PromptHealth {
                source: f.display().to_string(),
                ok: true,
                text: format!("{} ({SKILL_PATH_ENV})", f.display()),
            },
        },
        Err(e) => {
            let file = PathBuf::from(e.path());
            let text = if file.exists() {
                format!("UNUSABLE at {}: {e}", file.display())
            } else {
                format!("MISSING at {}", file.display())
            };
            PromptHealth {
                source: file.display().to_string(),
                ok: false,
                text,
            }
        }
    }
}

/// Files of JavaScript connector plugins (unsupported, HOST.md §4.3) in the given directories.
pub(super) fn connector_plugins(dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for d in dirs {
        for name in ["connectors.js", "connectors.cjs"] {
            let p = d.join(name);
            if p.exists() && !found.contains(&p) {
                found.push(p);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_dir_verdicts() {
        let d = tempfile::tempdir().unwrap();
        let h = state_dir_health(d.path());
        assert_eq!(
            (h.exists, h.writable, h.text.as_str()),
            (true, true, "(writable)")
        );
        let h = state_dir_health(&d.path().join("a/b/c"));
        assert_eq!(
            (h.exists, h.writable, h.text.as_str()),
            (false, true, "(absent; parent writable)")
        );
        assert!(h.problem.is_none());
        // Nothing was created.
        assert!(!d.path().join("a").exists());
        let file = d.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let h = state_dir_health(&file);
        assert_eq!(h.text, "(NOT writable: not a directory)");
        let h = state_dir_health(&file.join("below"));
        assert_eq!(
            h.text,
            format!("(NOT writable: {}: not a directory)", file.display())
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_read_only_state_dir_is_not_writable() {
        use std::os::unix::fs::PermissionsExt;
        if effective_ids().is_some_and(|(uid, _)| uid == 0) {
            eprintln!("SKIPPED: running as root, permission bits do not bind");
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let ro = d.path().join("ro");
        std::fs::create_dir(&ro).unwrap();
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
        let h = state_dir_health(&ro);
        assert!(!h.writable);
        assert_eq!(h.text, "(NOT writable: permission denied (mode 0555))");
        let h = state_dir_health(&ro.join("state"));
        assert!(!h.writable && !h.exists);
        assert!(h.problem.unwrap().contains("cannot be created"));
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}
