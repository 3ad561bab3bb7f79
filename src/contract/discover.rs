//! Contract discovery (RUNTIME.md §2.1): a bounded, symlink-free walk of one directory.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::{CONTRACT_SUFFIX, ContractError, MAX_CONTRACT_BYTES};

/// Directory levels walked below the contracts directory. Entries of the directory itself are
/// at level 0; a subdirectory at level 64 is listed but not entered (its entries are ignored).
pub const MAX_DEPTH: usize = 64;

/// Most entries the walk may visit. Every directory entry that is not skipped by name (a name
/// starting with `.`, or `node_modules`) counts, files and directories alike; one more is
/// [`ContractError::TooManyEntries`].
pub const MAX_ENTRIES: usize = 20_000;

/// One discovered contract file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Discovered {
    /// Path relative to the contracts directory, `/`-separated, valid UTF-8.
    pub(crate) rel_path: String,
    /// The directory as given joined with the relative path.
    pub(crate) abs_path: PathBuf,
}

/// Lists the contract files under `dir` (RUNTIME.md §2.1): regular files whose names end in
/// `.prose.md`, found by a recursive walk that skips names beginning with `.` and names equal to
/// `node_modules`, never follows symbolic links (entries are classified with
/// [`fs::DirEntry::file_type`], which does not follow them; symlinked files and directories are
/// ignored) and stops [`MAX_DEPTH`] levels down. `dir` itself is resolved normally.
///
/// The result is sorted by the bytes of the UTF-8 relative path.
///
/// Errors: [`ContractError::NotADirectory`], [`ContractError::Io`] (an unreadable directory),
/// [`ContractError::TooManyEntries`] (more than [`MAX_ENTRIES`] entries visited),
/// [`ContractError::NonUtf8Path`] (a contract file whose relative path is not UTF-8).
pub fn discover(dir: &Path) -> Result<Vec<Discovered>, ContractError> {
    let shown = dir.display().to_string();
    let meta = fs::metadata(dir).map_err(|e| ContractError::Io {
        path: shown.clone(),
        message: e.to_string(),
    })?;
    if !meta.is_dir() {
        return Err(ContractError::NotADirectory { dir: shown });
    }

    // (absolute directory, relative path bytes with trailing '/' unless root, level)
    let mut stack: Vec<(PathBuf, Vec<u8>, usize)> = vec![(dir.to_path_buf(), Vec::new(), 0)];
    let mut visited = 0usize;
    let mut found: Vec<(Vec<u8>, PathBuf)> = Vec::new();
    while let Some((abs, rel, level)) = stack.pop() {
        let io_err = |e: std::io::Error| ContractError::Io {
            path: if rel.is_empty() {
                shown.clone()
            } else {
                String::from_utf8_lossy(&rel[..rel.len() - 1]).into_owned()
            },
            message: e.to_string(),
        };
        for entry in fs::read_dir(&abs).map_err(io_err)? {
            let entry = entry.map_err(io_err)?;
            let name = entry.file_name();
            let name_bytes = name.as_encoded_bytes();
            if name_bytes.starts_with(b".") || name_bytes == b"node_modules" {
                continue;
            }
            visited += 1;
            if visited > MAX_ENTRIES {
                return Err(ContractError::TooManyEntries {
                    dir: shown,
                    limit: MAX_ENTRIES,
                });
            }
            let file_type = entry.file_type().map_err(io_err)?;
            let mut child_rel = rel.clone();
            child_rel.extend_from_slice(name_bytes);
            if file_type.is_dir() {
                if level < MAX_DEPTH {
                    child_rel.push(b'/');
                    stack.push((entry.path(), child_rel, level + 1));
                }
            } else if file_type.is_file() && name_bytes.ends_with(CONTRACT_SUFFIX.as_bytes()) {
                found.push((child_rel, entry.path()));
            }
            // Symbolic links, sockets, devices and FIFOs are ignored.
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
        .into_iter()
        .map(|(rel, abs_path)| match String::from_utf8(rel) {
            Ok(rel_path) => Ok(Discovered { rel_path, abs_path }),
            Err(e) => Err(ContractError::NonUtf8Path {
                path: String::from_utf8_lossy(e.as_bytes()).into_owned(),
            }),
        })
        .collect()
}

/// Reads one discovered contract file, refusing more than [`MAX_CONTRACT_BYTES`].
///
/// Errors: [`ContractError::Io`], [`ContractError::TooLarge`].
pub(crate) fn read_contract_file(abs: &Path, rel: &str) -> Result<Vec<u8>, ContractError> {
    let io_err = |e: std::io::Error| ContractError::Io {
        path: rel.to_owned(),
        message: e.to_string(),
    };
    let file = fs::File::open(abs).map_err(io_err)?;
    let mut bytes = Vec::new();
    file.take(MAX_CONTRACT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io_err)?;
    if bytes.len() as u64 > MAX_CONTRACT_BYTES {
        return Err(ContractError::TooLarge {
            path: rel.to_owned(),
            limit: MAX_CONTRACT_BYTES,
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(root: &Path, rel: &str) {
        let p = root.join(rel);
        if let Some(parent) = p.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        fs::write(p, "x").unwrap();
    }

    fn rels(root: &Path) -> Vec<String> {
        discover(root)
            .unwrap()
            .into_iter()
            .map(|d| d.rel_path)
            .collect()
    }

    #[test]
    fn finds_sorted_contracts_and_skips_hidden_and_node_modules() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        for rel in [
            "b.prose.md",
            "a/z.prose.md",
            "a-b.prose.md",
            "A.prose.md",
            "notes.md",
            "x.prose.md.bak",
            ".reactor/hidden.prose.md",
            ".dot.prose.md",
            "node_modules/pkg/dep.prose.md",
            "sub/node_modules/dep.prose.md",
            "sub/.git/obj.prose.md",
            "sub/deep/c.prose.md",
        ] {
            touch(r, rel);
        }
        fs::create_dir_all(r.join("dir.prose.md")).unwrap();
        // Byte order: 'A' < 'a' < "a-b" ('-' 0x2D < '/' 0x2F) < "a/" < 'b' < 's'.
        assert_eq!(
            rels(r),
            vec![
                "A.prose.md",
                "a-b.prose.md",
                "a/z.prose.md",
                "b.prose.md",
                "sub/deep/c.prose.md"
            ]
        );
    }

    #[test]
    fn depth_is_capped_at_64_levels() {
        let t = tempfile::tempdir().unwrap();
        let mut rel = String::new();
        for level in 0..=MAX_DEPTH + 2 {
            touch(t.path(), &format!("{rel}c{level}.prose.md"));
            rel.push_str("d/");
        }
        let found = rels(t.path());
        // Files at levels 0..=64 are seen; levels 65 and 66 are ignored.
        assert_eq!(found.len(), MAX_DEPTH + 1);
        assert!(
            found
                .iter()
                .any(|p| p.ends_with(&format!("c{MAX_DEPTH}.prose.md")))
        );
        assert!(
            !found
                .iter()
                .any(|p| p.ends_with(&format!("c{}.prose.md", MAX_DEPTH + 1)))
        );
    }

    #[test]
    fn not_a_directory_and_missing_directory_are_errors() {
        let t = tempfile::tempdir().unwrap();
        touch(t.path(), "f");
        assert!(matches!(
            discover(&t.path().join("f")),
            Err(ContractError::NotADirectory { .. })
        ));
        let e = discover(&t.path().join("missing")).unwrap_err();
        assert!(matches!(e, ContractError::Io { .. }));
        assert!(e.to_string().starts_with("cannot read "));
    }

    #[test]
    fn oversized_file_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("big.prose.md");
        let f = fs::File::create(&p).unwrap();
        f.set_len(MAX_CONTRACT_BYTES + 1).unwrap();
        assert_eq!(
            read_contract_file(&p, "big.prose.md").unwrap_err(),
            ContractError::TooLarge {
                path: "big.prose.md".into(),
                limit: MAX_CONTRACT_BYTES
            }
        );
        f.set_len(MAX_CONTRACT_BYTES).unwrap();
        assert_eq!(
            read_contract_file(&p, "big.prose.md").unwrap().len() as u64,
            MAX_CONTRACT_BYTES
        );
    }

    #[cfg(unix)]
    #[test]
    fn non_utf8_contract_path_is_an_error() {
        use std::os::unix::ffi::OsStrExt;
        let t = tempfile::tempdir().unwrap();
        let name = std::ffi::OsStr::from_bytes(b"bad\xFF.prose.md");
        fs::write(t.path().join(name), "x").unwrap();
        // A non-UTF-8 name that is not a contract is simply ignored.
        fs::write(
            t.path().join(std::ffi::OsStr::from_bytes(b"other\xFF")),
            "x",
        )
        .unwrap();
        let e = discover(t.path()).unwrap_err();
        assert_eq!(
            e,
            ContractError::NonUtf8Path {
                path: "bad\u{FFFD}.prose.md".into()
            }
        );
    }
}
