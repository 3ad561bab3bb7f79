//! A render's private workspace (RUNTIME.md §8.2): seeding from the prior world-model, path
//! confinement, reads, writes, deletes and harvesting within the limits.

use std::path::{Path, PathBuf};

use super::{
    MAX_DEPTH, MAX_FILES, MAX_TOTAL_BYTES, MAX_WRITE_BYTES, PathError, ToolError, tool_path,
};
use crate::format::opwm::{FileTree, OpwmError, normalize_tree};

/// Why harvesting failed; `Display` is the failed receipt's reason (RUNTIME.md §8.2).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HarvestError {
    /// More than [`MAX_FILES`] files or [`MAX_TOTAL_BYTES`] bytes.
    #[error("world-model too large: {0}")]
    TooLarge(String),
    /// A file name that is not valid UTF-8.
    #[error("workspace file name is not valid UTF-8: {0}")]
    BadName(String),
    /// A path rejected by normalization (collision after normalization, …).
    #[error("render produced an invalid file tree: {0}")]
    Invalid(OpwmError),
    /// Nesting deeper than [`MAX_DEPTH`].
    #[error("workspace is nested deeper than {MAX_DEPTH} directories")]
    TooDeep,
    /// An I/O error while walking or reading.
    #[error("cannot harvest the workspace: {0}")]
    Io(String),
}

/// A regular file found by a workspace walk.
struct Found {
    rel: String,
    abs: PathBuf,
    len: u64,
}

/// A render's private working directory (RUNTIME.md §8.2). Tool paths are confined to it: no
/// absolute paths, no `..`, never through a symbolic link.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// Removes `root` if it exists, recreates it and fills it with `prior` (normalized relative
    /// paths). Errors: [`ToolError`] (its text is the failed receipt's reason).
    pub fn seed(root: &Path, prior: &FileTree) -> Result<Workspace, ToolError> {
        let shown = root.display().to_string();
        remove_path(root).map_err(ToolError::io("clear", shown.clone()))?;
        std::fs::create_dir_all(root).map_err(ToolError::io("create", shown))?;
        let ws = Workspace {
            root: root.to_path_buf(),
        };
        for (path, bytes) in prior {
            let (norm, abs) = ws.resolve(path)?;
            ws.prepare(&norm, true)?;
            std::fs::write(&abs, bytes).map_err(ToolError::io("write", norm))?;
        }
        Ok(ws)
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Removes the directory (best effort).
    pub fn remove(&self) {
        let _ = remove_path(&self.root);
    }

    /// Resolves a tool path to `(normalized path, absolute path)` (see [`tool_path`]).
    pub fn resolve(&self, raw: &str) -> Result<(String, PathBuf), PathError> {
        let norm = tool_path(raw)?;
        let mut abs = self.root.clone();
        for seg in norm.split('/') {
            abs.push(seg);
        }
        Ok((norm, abs))
    }

    /// Checks every component of `norm` (never a symbolic link; intermediate components must be
    /// directories) and, with `create`, creates missing parent directories.
    fn prepare(&self, norm: &str, create: bool) -> Result<(), ToolError> {
        let segs: Vec<&str> = norm.split('/').collect();
        let mut cur = self.root.clone();
        for (i, seg) in segs.iter().enumerate() {
            cur.push(seg);
            let last = i + 1 == segs.len();
            let shown = segs[..=i].join("/");
            match std::fs::symlink_metadata(&cur) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(PathError::SymbolicLink {
                        path: norm.to_string(),
                        at: shown,
                    }
                    .into());
                }
                Ok(m) if !last && !m.is_dir() => {
                    return Err(PathError::FileInTheWay(shown).into());
                }
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    if last {
                        return Ok(());
                    }
                    if !create {
                        return Ok(());
                    }
                    std::fs::create_dir(&cur).map_err(ToolError::io("create directory", shown))?;
                }
                Err(e) => return Err(ToolError::io("inspect", shown)(e)),
            }
        }
        Ok(())
    }

    fn walk(&self) -> Result<Vec<Found>, HarvestError> {
        let mut out = Vec::new();
        let mut total: u64 = 0;
        self.walk_dir(&self.root, "", 0, &mut out, &mut total)?;
        Ok(out)
    }

    fn walk_dir(
        &self,
        dir: &Path,
        prefix: &str,
        depth: usize,
        out: &mut Vec<Found>,
        total: &mut u64,
    ) -> Result<(), HarvestError> {
        if depth > MAX_DEPTH {
            return Err(HarvestError::TooDeep);
        }
        let io = |e: std::io::Error| HarvestError::Io(e.to_string());
        let mut entries: Vec<(Vec<u8>, std::fs::DirEntry)> = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(io)? {
            let entry = entry.map_err(io)?;
            let name = entry.file_name();
            entries.push((name.as_encoded_bytes().to_vec(), entry));
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        for (_, entry) in entries {
            let name_os = entry.file_name();
            let ft = entry.file_type().map_err(io)?;
            if ft.is_symlink() || !(ft.is_file() || ft.is_dir()) {
                continue;
            }
            let Some(name) = name_os.to_str() else {
                return Err(HarvestError::BadName(format!(
                    "{prefix}{}",
                    name_os.to_string_lossy()
                )));
            };
            let rel = format!("{prefix}{name}");
            if ft.is_dir() {
                self.walk_dir(&entry.path(), &format!("{rel}/"), depth + 1, out, total)?;
                continue;
            }
            let len = entry.metadata().map_err(io)?.len();
            if out.len() >= MAX_FILES {
                return Err(HarvestError::TooLarge(format!(
                    "more than {MAX_FILES} files"
                )));
            }
            *total = total.saturating_add(len);
            if *total > MAX_TOTAL_BYTES {
                return Err(HarvestError::TooLarge(format!(
                    "more than {} MiB in total",
                    MAX_TOTAL_BYTES / (1024 * 1024)
                )));
            }
            out.push(Found {
                rel,
                abs: entry.path(),
                len,
            });
        }
        Ok(())
    }

    /// The workspace's regular files as `(path, bytes)` in walk order.
    ///
    /// Errors: as [`Workspace::harvest`].
    pub fn list(&self) -> Result<Vec<(String, u64)>, ToolError> {
        Ok(self.walk()?.into_iter().map(|f| (f.rel, f.len)).collect())
    }

    /// Reads a workspace file. Errors: `not found: <path>`, a directory, a symbolic link, a
    /// file larger than the world-model limit.
    pub fn read(&self, raw: &str) -> Result<(String, Vec<u8>), ToolError> {
        let (norm, abs) = self.resolve(raw)?;
        self.prepare(&norm, false)?;
        match std::fs::symlink_metadata(&abs) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(ToolError::NotFound(norm)),
            Err(e) => Err(ToolError::io("read", norm)(e)),
            Ok(m) if m.is_dir() => Err(ToolError::IsDirectory(norm)),
            Ok(m) if !m.is_file() => Err(ToolError::NotRegularFile(norm)),
            Ok(m) if m.len() > MAX_TOTAL_BYTES => Err(ToolError::FileTooLarge(norm)),
            Ok(_) => match std::fs::read(&abs) {
                Ok(b) => Ok((norm, b)),
                Err(e) => Err(ToolError::io("read", norm)(e)),
            },
        }
    }

    /// Creates or replaces a file, creating parent directories; returns `(path, size)`.
    ///
    /// Errors: content over [`MAX_WRITE_BYTES`]; a write that would take the workspace past
    /// [`MAX_FILES`] or [`MAX_TOTAL_BYTES`]; a directory in the way; confinement errors.
    pub fn write(&self, raw: &str, bytes: &[u8]) -> Result<(String, u64), ToolError> {
        if bytes.len() > MAX_WRITE_BYTES {
            return Err(ToolError::ContentTooLarge(bytes.len()));
        }
        let (norm, abs) = self.resolve(raw)?;
        self.prepare(&norm, false)?;
        let existing = match std::fs::symlink_metadata(&abs) {
            Ok(m) if m.is_dir() => return Err(ToolError::IsDirectory(norm)),
            Ok(m) if m.is_file() => Some(m.len()),
            Ok(_) => return Err(ToolError::NotRegularFile(norm)),
            Err(_) => None,
        };
        let files = self.walk()?;
        let count = files.len() + usize::from(existing.is_none());
        let total: u64 = files
            .iter()
            .map(|f| f.len)
            .sum::<u64>()
            .saturating_sub(existing.unwrap_or(0))
            .saturating_add(bytes.len() as u64);
        if count > MAX_FILES {
            return Err(ToolError::TooManyFiles);
        }
        if total > MAX_TOTAL_BYTES {
            return Err(ToolError::TooManyBytes);
        }
        self.prepare(&norm, true)?;
        if let Err(e) = std::fs::write(&abs, bytes) {
            return Err(ToolError::io("write", norm)(e));
        }
        Ok((norm, bytes.len() as u64))
    }

    /// Deletes a file; `(path, false)` when it did not exist.
    ///
    /// Errors: a directory, a symbolic link, confinement errors.
    pub fn delete(&self, raw: &str) -> Result<(String, bool), ToolError> {
        let (norm, abs) = self.resolve(raw)?;
        self.prepare(&norm, false)?;
        match std::fs::symlink_metadata(&abs) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok((norm, false)),
            Err(e) => Err(ToolError::io("delete", norm)(e)),
            Ok(m) if m.is_dir() => Err(ToolError::DeleteDirectory(norm)),
            Ok(_) => match std::fs::remove_file(&abs) {
                Ok(()) => Ok((norm, true)),
                Err(e) => Err(ToolError::io("delete", norm)(e)),
            },
        }
    }

    /// Collects every regular file (symbolic links and special files ignored) in a
    /// deterministic walk, normalizes the paths and returns the tree sorted by path bytes
    /// (RUNTIME.md §8.2).
    pub(crate) fn harvest(&self) -> Result<FileTree, HarvestError> {
        let found = self.walk()?;
        let mut files = Vec::with_capacity(found.len());
        for f in found {
            let bytes = std::fs::read(&f.abs).map_err(|e| HarvestError::Io(e.to_string()))?;
            files.push((f.rel, bytes));
        }
        let total: u64 = files.iter().map(|(_, b)| b.len() as u64).sum();
        if total > MAX_TOTAL_BYTES {
            return Err(HarvestError::TooLarge(format!(
                "more than {} MiB in total",
                MAX_TOTAL_BYTES / (1024 * 1024)
            )));
        }
        normalize_tree(files).map_err(HarvestError::Invalid)
    }
}

/// Removes a file, a symbolic link or a directory tree; absent is fine.
fn remove_path(p: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(p) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(p),
        Ok(_) => std::fs::remove_file(p),
    }
}
