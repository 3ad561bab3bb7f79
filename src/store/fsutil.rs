//! Durable file primitives (FORMATS.md §17): temp file + fsync + rename + directory fsync.
//!
//! Group commit (deferred durability) uses Linux `syncfs(2)` through `rustix`: deferred writes
//! skip fsync and one [`sync_filesystem`] makes the group durable. Elsewhere there is no
//! `syncfs`, so the deferred writes are durable at once (each file and its directory fsynced,
//! as [`write_atomic`] does) and [`sync_filesystem`] only fsyncs the directory: the same order
//! of durability, at the cost of one fsync per file.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh temporary path beside `target`: `<target>.tmp-<pid>-<n>` (FORMATS.md §2).
pub(crate) fn temp_path_for(target: &Path) -> PathBuf {
    let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut name = target
        .file_name()
        .map(|s| s.to_os_string())
        .unwrap_or_default();
    name.push(format!(".tmp-{}-{}", std::process::id(), n));
    target.with_file_name(name)
}

/// fsyncs a directory so a rename or create inside it is durable.
pub(crate) fn fsync_dir(dir: &Path) -> io::Result<()> {
    let d = File::open(dir)?;
    d.sync_all()
}

/// Writes `bytes` to `target` atomically and durably: temp file in the same directory,
/// `sync_all`, rename over the target, then fsync the directory. Readers see the old file or the
/// new one, never a mix. On error the temporary is removed (best effort).
pub(crate) fn write_atomic(target: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = temp_path_for(target);
    let res = (|| {
        let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, target)?;
        let parent = target.parent().filter(|p| !p.as_os_str().is_empty());
        fsync_dir(parent.unwrap_or(Path::new(".")))
    })();
    if res.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    res
}

/// Writes `bytes` to `target` through a temporary file and a rename, **without** fsync: the
/// group-commit path ([`crate::store::worldmodel::Durability::Deferred`]), made durable later by
/// [`sync_filesystem`] before any receipt naming the file reaches the ledger. (Off Linux: as
/// [`write_atomic`], see the module docs.)
#[cfg(target_os = "linux")]
pub(crate) fn write_atomic_deferred(target: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = temp_path_for(target);
    let res = (|| {
        let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(bytes)?;
        drop(f);
        fs::rename(&tmp, target)
    })();
    if res.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    res
}

/// [`write_atomic_deferred`] without `syncfs`: durable at once.
#[cfg(not(target_os = "linux"))]
pub(crate) fn write_atomic_deferred(target: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic(target, bytes)
}

/// Flushes every dirty file and directory of the file system holding `dir` to stable storage
/// (Linux `syncfs(2)`): one call makes a whole group of deferred writes durable.
#[cfg(target_os = "linux")]
pub(crate) fn sync_filesystem(dir: &Path) -> io::Result<()> {
    let d = File::open(dir)?;
    rustix::fs::syncfs(&d).map_err(io::Error::from)
}

/// [`sync_filesystem`] without `syncfs`: the deferred writes are already durable, so only
/// `dir` itself is fsynced.
#[cfg(not(target_os = "linux"))]
pub(crate) fn sync_filesystem(dir: &Path) -> io::Result<()> {
    fsync_dir(dir)
}

/// `mkdir -p` for the group-commit path: made durable by [`sync_filesystem`] on Linux, at once
/// ([`create_dir_all_durable`]) elsewhere.
pub(crate) fn create_dir_all_deferred(dir: &Path) -> io::Result<()> {
    if cfg!(target_os = "linux") {
        fs::create_dir_all(dir)
    } else {
        create_dir_all_durable(dir)
    }
}

/// Like [`write_atomic`], but does nothing when `target` already exists (content-addressed,
/// immutable files: FORMATS.md §14.3). Returns true when the file was created.
pub(crate) fn write_atomic_if_absent(target: &Path, bytes: &[u8]) -> io::Result<bool> {
    if target.exists() {
        return Ok(false);
    }
    write_atomic(target, bytes)?;
    Ok(true)
}

/// `mkdir -p` that also fsyncs each directory it creates and its parent.
pub(crate) fn create_dir_all_durable(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_dir_all_durable(parent)?;
    }
    match fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => return Ok(()),
        Err(e) => return Err(e),
    }
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
    fsync_dir(parent.unwrap_or(Path::new(".")))
}

/// Removes leftover temporaries (`*.tmp-*`) in `dir` (only writers holding the lock call this).
pub(crate) fn remove_temporaries(dir: &Path) {
    if let Ok(rd) = fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().contains(".tmp-")
                && e.file_type().map(|t| t.is_file()).unwrap_or(false)
            {
                let _ = fs::remove_file(e.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temporaries() {
        let d = tempfile::tempdir().unwrap();
        let t = d.path().join("x.json");
        write_atomic(&t, b"one").unwrap();
        write_atomic(&t, b"two").unwrap();
        assert_eq!(fs::read(&t).unwrap(), b"two");
        assert!(!write_atomic_if_absent(&t, b"three").unwrap());
        assert_eq!(fs::read(&t).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(d.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names.len(), 1);
        fs::write(d.path().join("y.json.tmp-1-2"), b"junk").unwrap();
        remove_temporaries(d.path());
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn nested_dirs() {
        let d = tempfile::tempdir().unwrap();
        let deep = d.path().join("a/b/c");
        create_dir_all_durable(&deep).unwrap();
        assert!(deep.is_dir());
        create_dir_all_durable(&deep).unwrap();
    }
}
