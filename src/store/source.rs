//! Read-only access to a state directory's files, on disk or embedded in the binary (the bundled
//! fixtures of `--example`). Readers never create, modify or lock anything.

use std::io;
use std::path::{Path, PathBuf};

/// Where a state directory's bytes come from. Paths are relative, `/`-separated.
pub trait StateSource: Send + Sync + std::fmt::Debug {
    /// The file's bytes, `Ok(None)` when absent (or a directory).
    fn read(&self, rel: &str) -> io::Result<Option<Vec<u8>>>;
    /// True when an entry (file or directory) exists at `rel`.
    fn exists(&self, rel: &str) -> bool;
    /// True when `rel` is a directory.
    fn is_dir(&self, rel: &str) -> bool;
    /// The disk path of the state directory, if it is on disk.
    fn disk_root(&self) -> Option<&Path>;
}

/// A state directory on disk.
#[derive(Clone, Debug)]
pub(crate) struct DiskSource {
    root: PathBuf,
}

impl DiskSource {
    /// A source rooted at `root`.
    pub(crate) fn new(root: impl Into<PathBuf>) -> DiskSource {
        DiskSource { root: root.into() }
    }
}

impl StateSource for DiskSource {
    fn read(&self, rel: &str) -> io::Result<Option<Vec<u8>>> {
        let p = self.root.join(rel);
        match std::fs::read(&p) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) if p.is_dir() => {
                let _ = e;
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
    fn exists(&self, rel: &str) -> bool {
        std::fs::symlink_metadata(self.root.join(rel)).is_ok()
    }
    fn is_dir(&self, rel: &str) -> bool {
        self.root.join(rel).is_dir()
    }
    fn disk_root(&self) -> Option<&Path> {
        Some(&self.root)
    }
}

/// A state directory embedded with `include_dir`.
#[derive(Clone, Debug)]
pub(crate) struct EmbeddedSource {
    dir: &'static include_dir::Dir<'static>,
}

impl EmbeddedSource {
    /// A source over an embedded directory.
    pub(crate) fn new(dir: &'static include_dir::Dir<'static>) -> EmbeddedSource {
        EmbeddedSource { dir }
    }
}

impl StateSource for EmbeddedSource {
    fn read(&self, rel: &str) -> io::Result<Option<Vec<u8>>> {
        Ok(self
            .dir
            .get_file(self.dir.path().join(rel))
            .map(|f| f.contents().to_vec()))
    }
    fn exists(&self, rel: &str) -> bool {
        self.dir.get_entry(self.dir.path().join(rel)).is_some()
    }
    fn is_dir(&self, rel: &str) -> bool {
        self.dir.get_dir(self.dir.path().join(rel)).is_some()
    }
    fn disk_root(&self) -> Option<&Path> {
        None
    }
}
