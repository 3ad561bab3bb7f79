//! The single-writer lock, `<state-dir>/.lock` (FORMATS.md §12.1).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::format::layout;

/// Errors taking the lock.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another writer holds the lock.
    #[error("state dir {} is in use by another writer (pid {})", .state_dir.display(), .pid.map(|p| p.to_string()).unwrap_or_else(|| "unknown".into()))]
    Held {
        /// The state directory.
        state_dir: PathBuf,
        /// The holder's pid, when the lock file names one.
        pid: Option<u32>,
    },
    /// The lock file could not be opened or written.
    #[error("cannot lock {}: {source}", .path.display())]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// A held writer lock; released by the OS when the process exits (or when dropped).
#[derive(Debug)]
pub struct StateLock {
    _file: File,
    path: PathBuf,
}

impl StateLock {
    /// Takes the exclusive advisory lock with `File::try_lock`, then records this process id.
    /// Never truncates before the lock is held; never deletes the file.
    pub fn acquire(state_dir: &Path) -> Result<StateLock, LockError> {
        let path = state_dir.join(layout::LOCK_FILE);
        let io = |source| LockError::Io {
            path: path.clone(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(LockError::Held {
                    state_dir: state_dir.to_path_buf(),
                    pid: holder_pid(state_dir),
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
        }
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        file.write_all(format!("{}\n", std::process::id()).as_bytes())
            .map_err(io)?;
        Ok(StateLock { _file: file, path })
    }

    /// The lock file path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The pid recorded in `<state-dir>/.lock`, if readable (readers use it for `status`/`doctor`).
pub(crate) fn holder_pid(state_dir: &Path) -> Option<u32> {
    let mut s = String::new();
    File::open(state_dir.join(layout::LOCK_FILE))
        .ok()?
        .read_to_string(&mut s)
        .ok()?;
    s.trim().parse().ok()
}

/// True when some process holds the lock (tests it without keeping it; never creates the file).
pub fn is_held(state_dir: &Path) -> bool {
    let Ok(f) = OpenOptions::new()
        .read(true)
        .write(true)
        .open(state_dir.join(layout::LOCK_FILE))
    else {
        return false;
    };
    match f.try_lock() {
        Ok(()) => {
            let _ = f.unlock();
            false
        }
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclusive_and_names_holder() {
        let d = tempfile::tempdir().unwrap();
        let l = StateLock::acquire(d.path()).unwrap();
        assert_eq!(holder_pid(d.path()), Some(std::process::id()));
        // A second open file description in the same process conflicts with flock.
        let e = StateLock::acquire(d.path()).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("is in use by another writer (pid"), "{msg}");
        assert!(msg.contains(&std::process::id().to_string()));
        assert!(is_held(d.path()));
        drop(l);
        assert!(!is_held(d.path()));
        let _again = StateLock::acquire(d.path()).unwrap();
    }
}
