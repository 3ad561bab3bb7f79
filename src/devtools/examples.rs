//! The six bundled fixtures (VIEWER.md §2.7, §2.8, §9), embedded with `include_dir`.

use std::path::Path;
use std::sync::Arc;

use include_dir::{Dir, include_dir};

use crate::replay::open::{
    OpenError, OpenStateDirOptions, OpenedStateDir, is_reactor_state_dir, open_source,
};
use crate::replay::open_stream::{Served, read_for_serving};
use crate::store::source::{EmbeddedSource, StateSource};

static FIXTURES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/fixtures");

/// The six names, in the order of VIEWER.md §2.2.
pub const SHIPPED_EXAMPLES: [&str; 6] = [
    "masked-relay",
    "surprise-cost",
    "agent-observatory",
    "inbox-triage",
    "monorepo-ci",
    "research-tree",
];

/// The embedded directory of a fixture, if bundled.
pub fn example_dir(name: &str) -> Option<&'static Dir<'static>> {
    if !SHIPPED_EXAMPLES.contains(&name) {
        return None;
    }
    FIXTURES.get_dir(name)
}

/// The bytes of an embedded fixture.
///
/// Errors: [`OpenError::UnknownExample`] as [`open_example`].
pub(crate) fn example_source(name: &str) -> Result<Arc<dyn StateSource>, OpenError> {
    let dir = example_dir(name).ok_or_else(|| OpenError::UnknownExample(name.to_string()))?;
    Ok(Arc::new(EmbeddedSource::new(dir)))
}

/// Opens an embedded fixture (`stateDir` = `example:<name>`, synthetic).
///
/// Errors: [`OpenError::UnknownExample`] for a name that is not one of the six (or not
/// bundled in this build); otherwise as `open_state_dir`.
pub fn open_example(name: &str, opts: &OpenStateDirOptions) -> Result<OpenedStateDir, OpenError> {
    open_source(format!("example:{name}"), example_source(name)?, true, opts)
}

/// Reads an embedded fixture for the viewer's server (as [`open_example`], the receipts kept
/// as text).
///
/// Errors: as [`open_example`].
pub(crate) fn serve_example(name: &str, opts: &OpenStateDirOptions) -> Result<Served, OpenError> {
    read_for_serving(example_source(name)?, format!("example:{name}"), true, opts)
}

/// Errors of [`copy_example`] (VIEWER.md §2.8).
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    /// Not one of the six.
    #[error("unknown example \"{0}\"")]
    UnknownExample(String),
    /// The target exists and is not a directory.
    #[error("{0} exists and is not a directory")]
    NotADirectory(String),
    /// The target is a state directory and `force` is off.
    #[error("{0} is already a reactor state-dir")]
    AlreadyStateDir(String),
    /// The target is non-empty and `force` is off.
    #[error("{0} is not empty")]
    NotEmpty(String),
    /// An I/O failure.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The state-directory entries a fixture can hold (removed first under `--force`).
const FIXTURE_ENTRIES: [&str; 5] = [
    "receipts.json",
    "registry.json",
    "beats.json",
    "compile",
    "world-models",
];

fn write_dir(dir: &Dir<'_>, base: &Path, target: &Path) -> std::io::Result<()> {
    for f in dir.files() {
        let rel = f.path().strip_prefix(base).unwrap_or(f.path());
        let dest = target.join(rel);
        if let Some(p) = dest.parent() {
            std::fs::create_dir_all(p)?;
        }
        std::fs::write(&dest, f.contents())?;
    }
    for d in dir.dirs() {
        std::fs::create_dir_all(target.join(d.path().strip_prefix(base).unwrap_or(d.path())))?;
        write_dir(d, base, target)?;
    }
    Ok(())
}

/// Copies a bundled fixture into `target` as a real state directory (VIEWER.md §2.8 without the
/// printing). Refuses a non-empty directory or an existing state directory unless `force`;
/// with `force`, the fixture entries are removed first and unrelated files stay.
pub fn copy_example(name: &str, target: &Path, force: bool) -> Result<(), CopyError> {
    let dir = example_dir(name).ok_or_else(|| CopyError::UnknownExample(name.to_string()))?;
    let shown = target.display().to_string();
    if target.exists() {
        if !target.is_dir() {
            return Err(CopyError::NotADirectory(shown));
        }
        if !force {
            if is_reactor_state_dir(target) {
                return Err(CopyError::AlreadyStateDir(shown));
            }
            if std::fs::read_dir(target)?.next().is_some() {
                return Err(CopyError::NotEmpty(shown));
            }
        } else {
            for e in FIXTURE_ENTRIES {
                let p = target.join(e);
                match std::fs::symlink_metadata(&p) {
                    Ok(m) if m.is_dir() => std::fs::remove_dir_all(&p)?,
                    Ok(_) => std::fs::remove_file(&p)?,
                    Err(_) => {}
                }
            }
        }
    }
    std::fs::create_dir_all(target)?;
    write_dir(dir, dir.path(), target)?;
    Ok(())
}
