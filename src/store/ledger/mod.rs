//! The durable receipt ledger, `<state-dir>/receipts.json` (FORMATS.md §11).
//!
//! * [`read_ledger`] is the reader's longest-consistent-prefix parse (§11.2): never locks,
//!   never writes, tolerates a torn tail.
//! * [`Ledger`] is the writer (§11.3–§11.4): it opens under the state-dir lock, verifies every
//!   receipt (shape, hash and per-node chain, [`verify_for_write`]), repairs a torn tail,
//!   normalizes a valid but non-canonical file, and appends in O(receipt) by overwriting the
//!   closing `]\n` in place and syncing before acknowledging. A file it refuses is left
//!   byte-identical.
//!
//! Readers that read a file another process may be appending to go through
//! [`crate::replay::ledger`], which snapshots the length and calls [`read_ledger`] on that
//! prefix.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::format::json::{self, JsString, Parser, Value};
use crate::format::receipt::{Receipt, recompute_content_hash, verify_receipt_with};
use crate::store::fsutil;

/// Errors reading or writing the ledger.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// The file does not start with `[` (FORMATS.md §11.2 step 2).
    #[error("receipts.json must contain a JSON array")]
    NotArray,
    /// The file is not empty but holds only JSON whitespace and NUL bytes: no array at all.
    /// (Only a zero-length file is the empty ledger, §11.2 step 1.)
    #[error(
        "receipts.json must contain a JSON array (it holds {len} byte(s) of whitespace or NUL only)"
    )]
    Blank {
        /// File length in bytes.
        len: usize,
    },
    /// A syntax error that is not a torn tail, or data after the closing `]` (§11.2 step 5).
    #[error("receipts.json is corrupt at byte {offset}: {message}")]
    Corrupt {
        /// Byte offset of the problem.
        offset: usize,
        /// Parser message.
        message: String,
    },
    /// A receipt that fails verification (shape, content hash or its node's chain): writers
    /// refuse to append to such a ledger (FORMATS.md §7; the reference refused to boot).
    #[error("receipts.json[{index}] fails verification: {problem}")]
    Unverified {
        /// Element index (0-based, in file order): the first bad receipt.
        index: usize,
        /// Its problems, `; `-joined.
        problem: String,
    },
    /// An element a writer cannot index (boot stops, naming the element).
    #[error("receipts.json[{index}]: {problem}")]
    BadElement {
        /// Element index.
        index: usize,
        /// What is wrong.
        problem: String,
    },
    /// An I/O failure.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The OS error.
        source: io::Error,
    },
    /// An earlier failed append could not be rolled back; reopen to repair.
    #[error(
        "the ledger handle is poisoned after a failed append; reopen the state dir to repair receipts.json"
    )]
    Poisoned,
    /// The receipt could not be serialized (a non-finite number in its diff).
    #[error("receipt cannot be canonicalized: cannot canonicalize non-finite number")]
    NonFinite,
}

impl LedgerError {
    /// True for the errors about the file's content (not an array, blank, corrupt, a receipt
    /// that fails verification or cannot be indexed): the ones reported with the state-dir path
    /// and [`RESTORE_HINT`].
    pub fn is_content_error(&self) -> bool {
        matches!(
            self,
            LedgerError::NotArray
                | LedgerError::Blank { .. }
                | LedgerError::Corrupt { .. }
                | LedgerError::Unverified { .. }
                | LedgerError::BadElement { .. }
        )
    }
}

/// The hint readers and writers give with a corrupt or refused ledger (FORMATS.md §11.4 step 5).
pub(crate) const RESTORE_HINT: &str = "restore the file from a backup or move it aside";

fn io_err(context: impl Into<String>) -> impl FnOnce(io::Error) -> LedgerError {
    let context = context.into();
    move |source| LedgerError::Io { context, source }
}

/// A torn tail found by the reader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornTail {
    /// Bytes after the end of the last complete element.
    pub dropped_bytes: usize,
    /// Number of complete receipts kept.
    pub complete: usize,
}

/// The result of reading `receipts.json` bytes.
#[derive(Clone, Debug, Default)]
pub struct LedgerRead {
    /// Every complete element, raw, in file order.
    pub receipts: Vec<Value>,
    /// Byte spans `(start, end)` of each element in the input.
    pub spans: Vec<(usize, usize)>,
    /// Set when the input ends inside an element or before the closing `]`.
    pub torn: Option<TornTail>,
    /// Offset just after the last complete element (or after `[` when there is none).
    pub end_of_complete: usize,
    /// True when the input was zero bytes long.
    pub(crate) zero_length: bool,
}

/// Parses ledger bytes as a reader does (FORMATS.md §11.2): the longest consistent prefix.
///
/// After leading whitespace and `[`, complete elements separated by `,` are kept. What follows
/// the last complete element (trailing NUL bytes removed) must be `]` plus whitespace (a closed
/// array), or end before a continuation is complete (`,` and a partial element, a missing `]`):
/// a torn tail, reported in [`LedgerRead::torn`]. Anything else is corruption.
///
/// Errors: [`LedgerError::NotArray`] (first non-whitespace byte is not `[`),
/// [`LedgerError::Blank`] (a non-empty file of whitespace and NUL only),
/// [`LedgerError::Corrupt`] (with the byte offset). A torn tail is not an error.
pub fn read_ledger(bytes: &[u8]) -> Result<LedgerRead, LedgerError> {
    let mut out = LedgerRead::default();
    if bytes.is_empty() {
        out.zero_length = true;
        return Ok(out);
    }
    // Trailing NUL bytes (a crash that extended the file without data) are not content.
    let mut len = bytes.len();
    while len > 0 && bytes[len - 1] == 0 {
        len -= 1;
    }
    let input = &bytes[..len];
    let mut p = Parser::new(input);
    p.skip_ws();
    match p.peek() {
        None => return Err(LedgerError::Blank { len: bytes.len() }),
        Some(b'[') => p.pos += 1,
        Some(_) => return Err(LedgerError::NotArray),
    }
    out.end_of_complete = p.pos;
    let torn = |out: &mut LedgerRead| {
        out.torn = Some(TornTail {
            dropped_bytes: bytes.len() - out.end_of_complete,
            complete: out.receipts.len(),
        });
    };
    p.skip_ws();
    if p.peek() == Some(b']') {
        p.pos += 1;
    } else {
        loop {
            p.skip_ws();
            let start = p.pos;
            match p.parse_value() {
                Ok(v) => {
                    out.receipts.push(v);
                    out.spans.push((start, p.pos));
                    out.end_of_complete = p.pos;
                }
                Err(e) if e.is_eof() => {
                    torn(&mut out);
                    return Ok(out);
                }
                Err(e) => {
                    return Err(LedgerError::Corrupt {
                        offset: e.offset,
                        message: e.message(),
                    });
                }
            }
            p.skip_ws();
            match p.peek() {
                Some(b',') => p.pos += 1,
                Some(b']') => {
                    p.pos += 1;
                    break;
                }
                None => {
                    torn(&mut out);
                    return Ok(out);
                }
                Some(b) => {
                    return Err(LedgerError::Corrupt {
                        offset: p.pos,
                        message: format!("unexpected character '{}' in array", b as char),
                    });
                }
            }
        }
    }
    p.skip_ws();
    if p.pos < input.len() {
        return Err(LedgerError::Corrupt {
            offset: p.pos,
            message: "unexpected data after the closing ]".to_string(),
        });
    }
    Ok(out)
}

/// Parses the bytes of a ledger after a known complete prefix (live follow, VIEWER.md §6.6).
/// `tail` starts right after the last complete element the reader already has (or right after
/// the opening `[` when it has none, `had_elements` false). Returns the new complete elements,
/// the number of tail bytes they span (so the next read starts after them), and whether the
/// tail ends torn. Errors: [`LedgerError::Corrupt`] (offsets are relative to `tail`).
pub fn read_ledger_tail(
    tail: &[u8],
    had_elements: bool,
) -> Result<(Vec<Value>, usize, bool), LedgerError> {
    let mut len = tail.len();
    while len > 0 && tail[len - 1] == 0 {
        len -= 1;
    }
    let input = &tail[..len];
    let mut p = Parser::new(input);
    let mut out = Vec::new();
    let mut consumed = 0usize;
    let mut need_comma = had_elements;
    loop {
        p.skip_ws();
        match p.peek() {
            None => return Ok((out, consumed, true)),
            Some(b']') => {
                p.pos += 1;
                p.skip_ws();
                if p.pos < input.len() {
                    return Err(LedgerError::Corrupt {
                        offset: p.pos,
                        message: "unexpected data after the closing ]".to_string(),
                    });
                }
                return Ok((out, consumed, false));
            }
            Some(b',') if need_comma => {
                p.pos += 1;
                p.skip_ws();
            }
            Some(_) if !need_comma => {}
            Some(b) => {
                return Err(LedgerError::Corrupt {
                    offset: p.pos,
                    message: format!("unexpected character '{}' in array", b as char),
                });
            }
        }
        match p.parse_value() {
            Ok(v) => {
                out.push(v);
                consumed = p.pos;
                need_comma = true;
            }
            Err(e) if e.is_eof() => return Ok((out, consumed, true)),
            Err(e) => {
                return Err(LedgerError::Corrupt {
                    offset: e.offset,
                    message: e.message(),
                });
            }
        }
    }
}

/// True when `bytes` is exactly the committed form: `[` + canonical elements joined by `,` +
/// `]\n` (FORMATS.md §11.1).
pub fn is_committed_form(bytes: &[u8], read: &LedgerRead) -> bool {
    if read.torn.is_some() || read.zero_length {
        return false;
    }
    if !bytes.ends_with(b"]\n") || bytes.first() != Some(&b'[') {
        return false;
    }
    let mut expect = 1usize;
    let mut buf = Vec::with_capacity(1024);
    for (i, (v, (s, e))) in read.receipts.iter().zip(&read.spans).enumerate() {
        if i > 0 {
            if bytes.get(expect) != Some(&b',') {
                return false;
            }
            expect += 1;
        }
        if *s != expect {
            return false;
        }
        buf.clear();
        if json::write_canonical(v, &mut buf).is_err() || bytes[*s..*e] != buf[..] {
            return false;
        }
        expect = *e;
    }
    expect + 2 == bytes.len()
}

/// The whole committed-form text of a list of raw receipts.
pub fn committed_bytes(receipts: &[Value]) -> Result<Vec<u8>, LedgerError> {
    let mut out = Vec::with_capacity(receipts.len() * 900 + 3);
    out.push(b'[');
    for (i, r) in receipts.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        json::write_canonical(r, &mut out).map_err(|_| LedgerError::NonFinite)?;
    }
    out.extend_from_slice(b"]\n");
    Ok(out)
}

/// Verifies every receipt a writer is about to extend (FORMATS.md §7 as the project's writers
/// apply it; the reference refused to boot on a bad ledger): each receipt passes
/// [`verify_receipt_with`] (shape and content hash), and each node's receipts chain in file
/// order (`prev` is `null` for the node's first receipt, then the previous one's
/// `content_hash`). One pass, one hash per receipt: linear in the ledger.
///
/// Returns every node's last receipt, indexed for appends.
///
/// Errors: [`LedgerError::Unverified`] naming the first bad receipt's index and its problems;
/// [`LedgerError::BadElement`] for a verified receipt the writer cannot index (a node id that
/// is not valid Unicode).
pub fn verify_for_write(receipts: &[Value]) -> Result<HashMap<String, Receipt>, LedgerError> {
    // node → (expected `prev` of its next receipt, index of its last receipt)
    let mut chains: HashMap<&JsString, (Option<String>, usize)> = HashMap::new();
    for (index, v) in receipts.iter().enumerate() {
        let hash = recompute_content_hash(v);
        let verdict = verify_receipt_with(v, Some(&hash));
        if !verdict.ok {
            return Err(LedgerError::Unverified {
                index,
                problem: verdict.errors.join("; "),
            });
        }
        let Some(Value::String(node)) = v.get("node") else {
            return Err(LedgerError::Unverified {
                index,
                problem: "receipt.node must be a non-empty string".into(),
            });
        };
        let prev = v.get("prev").and_then(Value::as_str);
        let slot = chains.entry(node).or_insert((None, index));
        if prev != slot.0.as_deref() {
            return Err(LedgerError::Unverified {
                index,
                problem: format!(
                    "prev must be {} to chain the ledger of node \"{}\"",
                    slot.0.as_deref().unwrap_or("null (cold start)"),
                    node.to_lossy()
                ),
            });
        }
        *slot = (verdict.content_hash, index);
    }
    let mut last = HashMap::with_capacity(chains.len());
    for (_, (hash, index)) in chains {
        // A verified receipt's stored content_hash is its recomputed address.
        let r = Receipt::from_value_hashed(&receipts[index], hash.unwrap_or_default()).map_err(
            |e| LedgerError::BadElement {
                index,
                problem: e.to_string(),
            },
        )?;
        last.insert(r.node.clone(), r);
    }
    Ok(last)
}

/// The writer's check of an existing `<state_dir>/receipts.json` without opening it for write
/// (nothing is created, repaired or normalized): `compile` runs it before writing into a state
/// directory, and the writer verbs before a compile, so that no model call is paid for on top
/// of a ledger that [`Ledger::open`] would refuse. An absent file passes.
///
/// Errors: as [`read_ledger`] and [`verify_for_write`]; I/O errors.
pub fn check_for_write(state_dir: &Path) -> Result<(), LedgerError> {
    let path = state_dir.join("receipts.json");
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_err(format!("cannot read {}", path.display()))(e)),
    };
    let read = read_ledger(&bytes)?;
    verify_for_write(&read.receipts).map(|_| ())
}

/// What opening for write had to do (each is reported on stderr by the host, FORMATS.md §11.4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OpenNote {
    /// `receipts.json` was absent and created as `[]\n`.
    Created,
    /// A torn tail was dropped.
    Repaired {
        /// Bytes dropped.
        dropped_bytes: usize,
        /// Receipts kept.
        intact: usize,
    },
    /// The file was valid but not in committed form and was rewritten.
    Normalized {
        /// Receipts in the file.
        receipts: usize,
    },
}

impl OpenNote {
    /// The stderr line for this note (FORMATS.md §11.4 wording), or `None` for `Created`.
    pub fn message(&self, state_dir: &Path) -> Option<String> {
        let file = state_dir.join("receipts.json");
        match self {
            OpenNote::Created => None,
            OpenNote::Repaired {
                dropped_bytes,
                intact,
            } => Some(format!(
                "reactor: repaired {}: dropped an incomplete trailing receipt ({dropped_bytes} bytes); {intact} receipts intact",
                file.display()
            )),
            OpenNote::Normalized { receipts } => Some(format!(
                "reactor: normalized {} to canonical form ({receipts} receipts)",
                file.display()
            )),
        }
    }
}

/// When appends are made durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncPolicy {
    /// `sync_data` after every append, before it is acknowledged (the default).
    EveryAppend,
    /// Group commit: appends are indexed in memory and buffered; [`Ledger::sync`] writes the
    /// whole buffer in one write and one `fdatasync`. Nothing of a group reaches the file before
    /// `sync`, so world-model files made durable just before `sync` always precede the receipts
    /// that name them. Callers must not acknowledge anything before `sync` returns.
    Group,
}

/// The writer's handle on `receipts.json`. Requires the state-dir lock (see
/// [`crate::store::lock`]); the handle indexes every node's last receipt.
pub struct Ledger {
    path: PathBuf,
    file: File,
    committed_len: u64,
    count: usize,
    last: HashMap<String, Receipt>,
    poisoned: bool,
    policy: SyncPolicy,
    pending: Vec<u8>,
    buf: Vec<u8>,
}

impl std::fmt::Debug for Ledger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ledger")
            .field("path", &self.path)
            .field("count", &self.count)
            .field("committed_len", &self.committed_len)
            .finish()
    }
}

impl Ledger {
    /// Opens (creating, repairing or normalizing as needed) `<state_dir>/receipts.json` for
    /// append. Returns the handle and what was done.
    ///
    /// Errors: corrupt, blank or non-array files are refused untouched ([`LedgerError::NotArray`],
    /// [`LedgerError::Blank`], [`LedgerError::Corrupt`]), and so is a file with a receipt that
    /// fails verification ([`LedgerError::Unverified`], [`verify_for_write`]) or that the writer
    /// cannot index ([`LedgerError::BadElement`]); I/O errors. Only an absent file is created,
    /// and only a verified file is repaired or normalized.
    pub fn open(state_dir: &Path) -> Result<(Ledger, Vec<OpenNote>), LedgerError> {
        let path = state_dir.join("receipts.json");
        let mut notes = Vec::new();
        if !path.exists() {
            fsutil::write_atomic(&path, b"[]\n")
                .map_err(io_err(format!("cannot create {}", path.display())))?;
            notes.push(OpenNote::Created);
        }
        let bytes =
            std::fs::read(&path).map_err(io_err(format!("cannot read {}", path.display())))?;
        // Everything that can refuse the file runs before the first write.
        let read = read_ledger(&bytes)?;
        let index = verify_for_write(&read.receipts)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(io_err(format!("cannot open {}", path.display())))?;
        let committed_len;
        if let Some(t) = &read.torn {
            // Repair: cut after the last complete element and close the array.
            let cut = read.end_of_complete as u64;
            file.set_len(cut)
                .map_err(io_err("cannot truncate receipts.json"))?;
            file.write_all_at(b"]\n", cut)
                .map_err(io_err("cannot repair receipts.json"))?;
            file.sync_all()
                .map_err(io_err("cannot sync receipts.json"))?;
            committed_len = cut + 2;
            notes.push(OpenNote::Repaired {
                dropped_bytes: t.dropped_bytes,
                intact: t.complete,
            });
            // A repaired file whose elements are non-canonical still needs normalizing.
            let now = std::fs::read(&path).map_err(io_err("cannot read receipts.json"))?;
            let reread = read_ledger(&now)?;
            if !is_committed_form(&now, &reread) {
                let canon = committed_bytes(&reread.receipts)?;
                fsutil::write_atomic(&path, &canon)
                    .map_err(io_err("cannot normalize receipts.json"))?;
                notes.push(OpenNote::Normalized {
                    receipts: reread.receipts.len(),
                });
                return Self::reopen(
                    path,
                    canon.len() as u64,
                    reread.receipts.len(),
                    index,
                    notes,
                );
            }
        } else if !is_committed_form(&bytes, &read) {
            let canon = committed_bytes(&read.receipts)?;
            fsutil::write_atomic(&path, &canon)
                .map_err(io_err("cannot normalize receipts.json"))?;
            notes.push(OpenNote::Normalized {
                receipts: read.receipts.len(),
            });
            return Self::reopen(path, canon.len() as u64, read.receipts.len(), index, notes);
        } else {
            committed_len = bytes.len() as u64;
        }
        Ok((
            Ledger {
                path,
                file,
                committed_len,
                count: read.receipts.len(),
                last: index,
                poisoned: false,
                policy: SyncPolicy::EveryAppend,
                pending: Vec::new(),
                buf: Vec::with_capacity(2048),
            },
            notes,
        ))
    }

    fn reopen(
        path: PathBuf,
        len: u64,
        count: usize,
        last: HashMap<String, Receipt>,
        notes: Vec<OpenNote>,
    ) -> Result<(Ledger, Vec<OpenNote>), LedgerError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(io_err(format!("cannot open {}", path.display())))?;
        Ok((
            Ledger {
                path,
                file,
                committed_len: len,
                count,
                last,
                poisoned: false,
                policy: SyncPolicy::EveryAppend,
                pending: Vec::new(),
                buf: Vec::with_capacity(2048),
            },
            notes,
        ))
    }

    /// Sets the durability policy (see [`SyncPolicy`]).
    pub fn set_policy(&mut self, policy: SyncPolicy) {
        self.policy = policy;
    }

    /// The node's last receipt, with its content hash recomputed from values.
    pub fn last(&self, node: &str) -> Option<&Receipt> {
        self.last.get(node)
    }

    /// Number of receipts in the ledger.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True for an empty ledger.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Path of `receipts.json`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends a receipt: sets `prev` from the node's last receipt, stamps `content_hash`,
    /// writes it over the closing `]\n`, syncs (per the policy), then indexes it. Returns the
    /// stamped receipt. On a write or sync failure the committed state is restored and the
    /// receipt is not acknowledged.
    pub fn append(&mut self, mut receipt: Receipt) -> Result<Receipt, LedgerError> {
        if self.poisoned {
            return Err(LedgerError::Poisoned);
        }
        receipt.prev = self.last.get(&receipt.node).map(|r| r.content_hash.clone());
        receipt.stamp().map_err(|_| LedgerError::NonFinite)?;
        let body = receipt
            .canonical_bytes()
            .map_err(|_| LedgerError::NonFinite)?;
        if self.policy == SyncPolicy::Group {
            if self.count > 0 {
                self.pending.push(b',');
            }
            self.pending.extend_from_slice(&body);
            self.count += 1;
            self.last.insert(receipt.node.clone(), receipt.clone());
            return Ok(receipt);
        }
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        if self.count > 0 {
            buf.push(b',');
        }
        buf.extend_from_slice(&body);
        buf.extend_from_slice(b"]\n");
        let res = self.write_committed(&buf);
        self.buf = buf;
        res?;
        self.count += 1;
        self.last.insert(receipt.node.clone(), receipt.clone());
        Ok(receipt)
    }

    /// Writes `bytes` (ending in `]\n`) over the closing `]\n` and syncs; restores the committed
    /// state on failure (poisoning the handle if even that fails).
    fn write_committed(&mut self, bytes: &[u8]) -> Result<(), LedgerError> {
        let at = self.committed_len - 2;
        let res = self
            .file
            .write_all_at(bytes, at)
            .and_then(|()| self.file.sync_data());
        if let Err(e) = res {
            let restore = self
                .file
                .write_all_at(b"]\n", at)
                .and_then(|()| self.file.set_len(self.committed_len))
                .and_then(|()| self.file.sync_data());
            if restore.is_err() {
                self.poisoned = true;
            }
            return Err(LedgerError::Io {
                context: format!("cannot append to {}", self.path.display()),
                source: e,
            });
        }
        self.committed_len = at + bytes.len() as u64;
        Ok(())
    }

    /// Makes every buffered append durable (group commit): one write, one `fdatasync`. A no-op
    /// when nothing is pending. On failure the in-memory index is ahead of the file, so the
    /// handle is poisoned (reopen to continue).
    pub fn sync(&mut self) -> Result<(), LedgerError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        if self.poisoned {
            return Err(LedgerError::Poisoned);
        }
        let mut bytes = std::mem::take(&mut self.pending);
        bytes.extend_from_slice(b"]\n");
        if let Err(e) = self.write_committed(&bytes) {
            self.poisoned = true;
            return Err(e);
        }
        Ok(())
    }

    /// True when group-commit appends are waiting for [`Ledger::sync`].
    pub(crate) fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }
}

#[cfg(test)]
mod tests;
