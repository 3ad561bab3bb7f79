//! The one ledger reader (FORMATS.md §11.2): how every reader — the offline verbs, the viewer,
//! its live follow — reads `receipts.json` while a writer may be appending to it. Readers never
//! lock, never wait and never write.
//!
//! # How the writer appends
//!
//! The writer ([`crate::store::ledger::Ledger`]) keeps the committed length `L`; the file then
//! ends with `]\n`. An append (or a group of appends) is one positioned write of
//! `,<receipt>…]\n` at `L−2`, overwriting the closing `]\n`; bytes before `L−2` are never
//! written again. A torn-tail repair (writer open) truncates after the last complete element and
//! writes `]\n`; a normalization, and every reference writer, replaces the whole file by rename
//! (a new file; a reader holding the old one keeps reading consistent old bytes).
//!
//! # The complete prefix at a snapshot length
//!
//! A read opens the file, takes its length `S` from the open handle (`fstat`) and reads bytes
//! `[0, S)` only — never past `S`, so bytes appended after the snapshot are not seen at all
//! (they are the next read's growth, never "data after the closing `]`"). Those bytes are
//! read as [`crate::store::ledger::read_ledger`] parses them — streamed, in bounded memory and
//! with the parsing spread over the cores ([`crate::replay::stream`]), or, for live follow's
//! growth, parsed in one piece: leading whitespace, `[`, then every complete element. What
//! follows the last complete element, trailing NUL bytes removed, is one of:
//!
//! * `]` and whitespace — a closed array: the normal, committed case;
//! * a proper prefix of a continuation (`,` and part of an element, or nothing yet) — growth:
//!   a write in progress or an interrupted append; the complete elements are used and
//!   [`LedgerSnapshot::torn`] says so;
//! * anything else — inconsistent.
//!
//! An inconsistent snapshot is a corruption candidate, not yet a verdict: a read that overlaps
//! the writer's positioned write can see the old `]` or `\n` next to new bytes (`]{…`, `,\n…`)
//! in the last bytes of the snapshot, because the kernel does not order a reader's copy against
//! a concurrent writer's. Such a mix only exists while that write is in flight (microseconds).
//! So the reader takes a fresh snapshot (after 2 ms, then 4, 8, … ms, at most 64 ms apart) and
//! reports corruption only when two consecutive snapshots of the **same file at the same
//! length** fail with the **same error at the same offset**: real corruption is stable, a torn
//! read is not (the file has grown, or the bytes now parse). After [`ATTEMPTS`] snapshots that
//! keep changing, the last error is reported (a file that keeps changing and keeps failing to
//! parse). A corrupt ledger therefore costs one extra read and 2 ms; a sound one costs nothing.

use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::format::json::Value;
use crate::replay::stream::{Reader, StreamEnd, stream_ledger_file, stream_ledger_from};
use crate::store::ledger::{LedgerError, TornTail, read_ledger_tail};
use crate::store::source::StateSource;

/// How many snapshots a reader takes at most before it reports an inconsistent read.
pub(crate) const ATTEMPTS: u32 = 8;

/// A file's identity (device and inode): a rename-replaced ledger has a new one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileIdentity {
    /// `st_dev`.
    pub dev: u64,
    /// `st_ino`.
    pub(crate) ino: u64,
}

/// One consistent read of `receipts.json`.
#[derive(Clone, Debug, Default)]
pub struct LedgerSnapshot {
    /// `<state-dir>/receipts.json`, when the ledger is on disk.
    pub path: Option<PathBuf>,
    /// True when the file exists.
    pub exists: bool,
    /// Every complete element, raw, in file order.
    pub receipts: Vec<Value>,
    /// Set when the snapshot ends with an incomplete receipt (growth or an interrupted
    /// append); nothing is repaired.
    pub torn: Option<TornTail>,
    /// True when the file exists with zero bytes (the empty ledger, with a note).
    pub(crate) zero_length: bool,
    /// Offset just after the last complete element (or after `[` when there is none): live
    /// follow resumes parsing there.
    pub end_of_complete: usize,
    /// The file read, for live follow (`None` for embedded sources and absent files).
    pub(crate) identity: Option<FileIdentity>,
}

/// New complete elements found after a known prefix ([`read_growth`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct Growth {
    /// The new complete elements, in file order.
    pub receipts: Vec<Value>,
    /// The new end of the complete prefix (absolute offset).
    pub end_of_complete: usize,
}

/// Why a read failed: the file's content ([`LedgerError`]) or I/O.
#[derive(Debug, thiserror::Error)]
pub enum LedgerReadError {
    /// The content: not an array, blank, or corrupt (confirmed on a second snapshot).
    #[error("{0}")]
    Content(#[from] LedgerError),
    /// The file could not be opened or read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        source: io::Error,
    },
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> LedgerReadError + '_ {
    move |source| LedgerReadError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Reads bytes `[from, to)` of `file` (fewer when the file is now shorter).
fn read_range(file: &File, from: u64, to: u64) -> io::Result<Vec<u8>> {
    let want = to.saturating_sub(from);
    let mut buf = vec![0u8; usize::try_from(want).unwrap_or(usize::MAX)];
    let mut got = 0usize;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], from + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(got);
    Ok(buf)
}

/// One snapshot: the open file's identity and length, and `parse` over bytes `[from, S)`.
type Attempt<T> = (FileIdentity, u64, Result<T, LedgerError>);

/// A parser of one snapshot's bytes (it also sees the identity of the file read).
type SnapshotParse<'a, T> = dyn FnMut(FileIdentity, &[u8]) -> Result<T, LedgerError> + 'a;

/// `Ok(None)` when the file does not exist.
fn snapshot_once<T>(
    path: &Path,
    from: u64,
    parse: &mut SnapshotParse<'_, T>,
) -> Result<Option<Attempt<T>>, LedgerReadError> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error(path)(e)),
    };
    let meta = file.metadata().map_err(io_error(path))?;
    if meta.is_dir() {
        return Err(io_error(path)(io::Error::other("it is a directory")));
    }
    let id = FileIdentity {
        dev: meta.dev(),
        ino: meta.ino(),
    };
    let len = meta.len();
    let bytes = read_range(&file, from.min(len), len).map_err(io_error(path))?;
    Ok(Some((id, len, parse(id, &bytes))))
}

/// The pause before snapshot `attempt + 1`: 2 ms doubling, at most 64 ms.
fn pause(attempt: u32) -> Duration {
    Duration::from_millis(2 << attempt.min(5))
}

/// The "fails twice alike" rule of the module documentation: the content error of the last
/// snapshot, with the file and length it was taken of.
#[derive(Default)]
pub(crate) struct Confirm {
    previous: Option<(FileIdentity, u64, String, LedgerError)>,
}

impl Confirm {
    /// Snapshot `attempt` of file `id` at `len` bytes failed with `e`: the error when the
    /// snapshot before it failed alike (same file, length and message), else `None` after the
    /// pause before the next attempt (none after the last of [`ATTEMPTS`]).
    pub(crate) fn settle(
        &mut self,
        id: FileIdentity,
        len: u64,
        e: LedgerError,
        attempt: u32,
    ) -> Option<LedgerError> {
        let key = e.to_string();
        if let Some((pid, plen, pkey, _)) = &self.previous
            && *pid == id
            && *plen == len
            && *pkey == key
        {
            return Some(e);
        }
        self.previous = Some((id, len, key, e));
        if attempt + 1 < ATTEMPTS {
            std::thread::sleep(pause(attempt));
        }
        None
    }

    /// The last error seen, once the attempts are spent.
    pub(crate) fn last(self) -> Option<LedgerError> {
        self.previous.map(|(_, _, _, e)| e)
    }
}

/// Takes snapshots until one parses, or two consecutive ones of the same file and length fail
/// alike (see the module documentation). `Ok(None)` when the file does not exist.
fn consistent<T>(
    path: &Path,
    from: u64,
    parse: &mut SnapshotParse<'_, T>,
) -> Result<Option<(FileIdentity, u64, T)>, LedgerReadError> {
    let mut confirm = Confirm::default();
    for attempt in 0..ATTEMPTS {
        let Some((id, len, result)) = snapshot_once(path, from, parse)? else {
            return Ok(None);
        };
        let e = match result {
            Ok(v) => return Ok(Some((id, len, v))),
            Err(e) => e,
        };
        if let Some(e) = confirm.settle(id, len, e, attempt) {
            return Err(e.into());
        }
    }
    Err(confirm
        .last()
        .map(LedgerReadError::from)
        .unwrap_or_else(|| io_error(path)(io::Error::other("no snapshot taken"))))
}

/// Reads `<state_dir>/receipts.json` on disk as the complete prefix of one consistent snapshot
/// (module documentation). An absent file is the empty ledger (`exists` false); a zero-length
/// file is the empty ledger with `zero_length` set.
///
/// Errors: [`LedgerReadError::Content`] with [`LedgerError::NotArray`],
/// [`LedgerError::Blank`] or [`LedgerError::Corrupt`]; [`LedgerReadError::Io`] (unreadable, or
/// a directory).
pub fn read_ledger_file(path: &Path) -> Result<LedgerSnapshot, LedgerReadError> {
    let digest = |v: Value, _: std::ops::Range<usize>| v;
    let mut start = Vec::new;
    let mut fold = |s: &mut Vec<Value>, _: usize, v: Value| s.push(v);
    let read = stream_ledger_file(path, &mut Reader::new(&digest, &mut start, &mut fold))?;
    Ok(snapshot_of(read))
}

/// A snapshot from the elements and ending of a streamed read.
fn snapshot_of((receipts, end): (Vec<Value>, StreamEnd)) -> LedgerSnapshot {
    debug_assert_eq!(end.count, receipts.len());
    LedgerSnapshot {
        path: end.path,
        exists: end.exists,
        receipts,
        torn: end.torn,
        zero_length: end.zero_length,
        end_of_complete: end.end_of_complete,
        identity: end.identity,
    }
}

/// Reads the ledger of a state directory, on disk ([`read_ledger_file`]) or embedded (the
/// bundled fixtures: their bytes never change, so one pass is the snapshot).
///
/// Errors: as [`read_ledger_file`].
pub(crate) fn read_ledger_from(src: &dyn StateSource) -> Result<LedgerSnapshot, LedgerReadError> {
    let digest = |v: Value, _: std::ops::Range<usize>| v;
    let mut start = Vec::new;
    let mut fold = |s: &mut Vec<Value>, _: usize, v: Value| s.push(v);
    let read = stream_ledger_from(src, &mut Reader::new(&digest, &mut start, &mut fold))?;
    Ok(snapshot_of(read))
}

/// Reads the elements appended after a known complete prefix (live follow, VIEWER.md §6.6),
/// with the same snapshot rule: bytes `[end_of_complete, S)` of the file named `path`, which
/// must still be the file `identity` (else `Ok(None)`: it was replaced — re-read it whole).
/// `had_elements` says whether the known prefix holds any element (so a `,` is expected).
/// `Ok(None)` also when the file is gone.
///
/// Errors: [`LedgerReadError::Content`] with [`LedgerError::Corrupt`] when the bytes after the
/// prefix can never continue the array (confirmed on a second snapshot); I/O errors.
pub(crate) fn read_growth(
    path: &Path,
    identity: FileIdentity,
    end_of_complete: usize,
    had_elements: bool,
) -> Result<Option<Growth>, LedgerReadError> {
    // `None` inside: the path now names another file (replaced by rename).
    let parsed = consistent(path, end_of_complete as u64, &mut |id, tail| {
        if id != identity {
            return Ok(None);
        }
        read_ledger_tail(tail, had_elements).map(Some)
    })?;
    let Some((_, _, Some((receipts, consumed, _)))) = parsed else {
        return Ok(None);
    };
    Ok(Some(Growth {
        receipts,
        end_of_complete: end_of_complete + consumed,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::ledger::read_ledger;

    #[test]
    fn absent_zero_and_directory() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("receipts.json");
        let s = read_ledger_file(&p).unwrap();
        assert!(!s.exists && s.receipts.is_empty());
        std::fs::write(&p, b"").unwrap();
        let s = read_ledger_file(&p).unwrap();
        assert!(s.exists && s.zero_length);
        std::fs::remove_file(&p).unwrap();
        std::fs::create_dir(&p).unwrap();
        let e = read_ledger_file(&p).unwrap_err();
        assert!(e.to_string().ends_with("it is a directory"), "{e}");
    }

    #[test]
    fn snapshot_reads_only_up_to_its_length() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("receipts.json");
        std::fs::write(&p, b"[{\"a\":1}]\n").unwrap();
        let s = read_ledger_file(&p).unwrap();
        assert_eq!(
            (s.receipts.len(), s.end_of_complete, s.torn.is_none()),
            (1, 8, true)
        );
        // Growth after a snapshot: read from the known prefix on.
        std::fs::write(&p, b"[{\"a\":1},{\"b\":2},{\"c\"").unwrap();
        let g = read_growth(&p, s.identity.unwrap(), s.end_of_complete, true)
            .unwrap()
            .unwrap();
        assert_eq!(g.receipts.len(), 1);
        assert_eq!(g.end_of_complete, 16);
    }

    /// Real corruption is reported (after a confirming snapshot), at its offset.
    #[test]
    fn stable_corruption_is_reported() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("receipts.json");
        for (bytes, offset) in [
            (&b"[{\"a\":1}]x"[..], 9usize),
            (b"[{\"a\":1}]\n{\"b\":2}]\n", 10),
            (b"[{\"a\":1},}]\n", 9),
            (b"[{\"a\" 1}]\n", 6),
        ] {
            std::fs::write(&p, bytes).unwrap();
            match read_ledger_file(&p) {
                Err(LedgerReadError::Content(LedgerError::Corrupt { offset: o, .. })) => {
                    assert_eq!(o, offset, "{bytes:?}")
                }
                other => panic!("{bytes:?}: {other:?}"),
            }
        }
        std::fs::write(&p, b"{}").unwrap();
        assert!(matches!(
            read_ledger_file(&p),
            Err(LedgerReadError::Content(LedgerError::NotArray))
        ));
        std::fs::write(&p, b"  \n\0").unwrap();
        assert!(matches!(
            read_ledger_file(&p),
            Err(LedgerReadError::Content(LedgerError::Blank { len: 4 }))
        ));
        // The tail reader confirms too.
        std::fs::write(&p, b"[{\"a\":1}]\n").unwrap();
        let s = read_ledger_file(&p).unwrap();
        std::fs::write(&p, b"[{\"a\":1}]x").unwrap();
        assert!(matches!(
            read_growth(&p, s.identity.unwrap(), s.end_of_complete, true),
            Err(LedgerReadError::Content(LedgerError::Corrupt { .. }))
        ));
    }

    /// The torn read of a concurrent append (the old `]` next to the new element's first
    /// byte) is not a verdict: the next snapshot sees the grown file and parses. The append is
    /// made right after the first snapshot was parsed, in place, as the writer does.
    #[test]
    fn a_torn_read_is_retried() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("receipts.json");
        std::fs::write(&p, b"[{\"a\":1}]{").unwrap();
        let file = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        let mut attempts = 0;
        let got = consistent(&p, 0, &mut |_, b| {
            attempts += 1;
            let r = read_ledger(b);
            if attempts == 1 {
                assert!(matches!(r, Err(LedgerError::Corrupt { offset: 9, .. })));
                file.write_all_at(b",{\"b\":2}]\n", 8).unwrap();
            }
            r
        })
        .unwrap()
        .unwrap();
        assert_eq!(attempts, 2);
        assert_eq!(got.2.receipts.len(), 2);
        // A mixed read whose file has not changed yet is read again, not reported: here the
        // "writer" finishes only after the third snapshot.
        std::fs::write(&p, b"[{\"a\":1}]{").unwrap();
        let file = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        let mut attempts = 0;
        let got = consistent(&p, 0, &mut |_, b| {
            attempts += 1;
            if attempts == 1 {
                // The grown length is visible before the bytes are: same error, new length.
                file.set_len(20).unwrap();
            }
            if attempts == 2 {
                file.write_all_at(b",{\"b\":2}]\n", 8).unwrap();
            }
            read_ledger(b)
        });
        assert_eq!(got.unwrap().unwrap().2.receipts.len(), 2);
        assert_eq!(attempts, 3);
    }

    #[test]
    fn growth_of_a_replaced_file_is_none() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("receipts.json");
        std::fs::write(&p, b"[{\"a\":1}]\n").unwrap();
        let s = read_ledger_file(&p).unwrap();
        let tmp = d.path().join("receipts.json.tmp-1");
        std::fs::write(&tmp, b"[{\"a\":1},{\"b\":2}]\n").unwrap();
        std::fs::rename(&tmp, &p).unwrap();
        assert!(
            read_growth(&p, s.identity.unwrap(), s.end_of_complete, true)
                .unwrap()
                .is_none()
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// Hostile bytes on a file nobody writes: the snapshot reader gives exactly the verdict
        /// of the byte parser (same receipts, or the same error), and never panics.
        #[test]
        fn quiescent_files_read_as_their_bytes(
            base in proptest::sample::select(vec![
                &b"[]\n"[..],
                b"[{\"a\":1},{\"b\":[2,3]},\"x\"]\n",
                b"  [ {\"a\" : 1} , 2 ]  \n",
                b"",
            ]),
            edits in proptest::collection::vec((0usize..64, proptest::prelude::any::<u8>()), 0..4),
            cut in proptest::option::of(0usize..64),
            tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..8),
        ) {
            let mut bytes = base.to_vec();
            for (at, b) in &edits {
                if !bytes.is_empty() {
                    let at = at % bytes.len();
                    bytes[at] = *b;
                }
            }
            if let Some(c) = cut {
                bytes.truncate(c % (bytes.len() + 1));
            }
            bytes.extend(&tail);
            let d = tempfile::tempdir().unwrap();
            let p = d.path().join("receipts.json");
            std::fs::write(&p, &bytes).unwrap();
            let expected = read_ledger(&bytes);
            match (read_ledger_file(&p), expected) {
                (Ok(s), Ok(r)) => {
                    proptest::prop_assert_eq!(s.receipts, r.receipts);
                    proptest::prop_assert_eq!(s.torn, r.torn);
                    proptest::prop_assert_eq!(s.end_of_complete, r.end_of_complete);
                }
                (Err(LedgerReadError::Content(a)), Err(b)) => {
                    proptest::prop_assert_eq!(a.to_string(), b.to_string())
                }
                (got, want) => proptest::prop_assert!(false, "{got:?} vs {want:?}"),
            }
        }
    }
}
