//! The streaming ledger reader: one consistent snapshot of `receipts.json` (the rules of
//! [`crate::replay::ledger`]: the length is taken once, only bytes before it are read, an
//! inconsistent read is confirmed on a second snapshot before it is reported) read in bounded
//! memory, with the per-receipt work spread over the cores.
//!
//! # Pipeline
//!
//! ```text
//! splitter thread ──batches of element bytes──▶ N worker threads ──results──▶ caller (in order)
//!   (split.rs)        (bounded queue)           parse + digest      (bounded)   fold
//! ```
//!
//! The splitter reads the snapshot through a window of positioned reads and cuts it into
//! elements ([`crate::replay::split`]); batches of about [`Window::batch`] bytes (128 KiB) go to the workers
//! through a bounded `crossbeam-channel` queue. A worker parses each element with the byte
//! parser and hands the value to the caller's `digest` (run on the worker: hashing,
//! verification, projection), then drops it. The caller's thread re-orders the batches by
//! sequence number and calls `fold` once per element, in file order. Both queues hold at most
//! `2 × N` batches, so memory is the window, a bounded number of batches and the caller's
//! accumulators — never the ledger.
//!
//! An element whose parse does not span exactly the bytes the splitter delimited (a syntax
//! error, a cut-off snapshot) stops the pipeline; the rest of the snapshot is then read by
//! [`crate::replay::split::exact`] on the caller's thread, so the verdict (elements, torn tail,
//! error and offset) is always the one [`crate::store::ledger::read_ledger`] gives over the
//! same bytes.

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::ops::Range;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender, bounded};

use crate::format::json::{Parser, Value};
use crate::format::layout;
use crate::replay::ledger::{Confirm, FileIdentity, LedgerReadError};
use crate::replay::split::{Bytes, Ending, ExactEnding, Splitter, Window, content_end, exact};
use crate::store::ledger::{LedgerError, TornTail};
use crate::store::source::StateSource;

/// At most this many worker threads.
const MAX_WORKERS: usize = 8;

/// How a streamed snapshot ended, apart from its elements (the members of
/// [`crate::replay::ledger::LedgerSnapshot`] without `receipts`).
#[derive(Clone, Debug, Default)]
pub(crate) struct StreamEnd {
    /// `<state-dir>/receipts.json`, when the ledger is on disk.
    pub(crate) path: Option<PathBuf>,
    /// True when the file exists.
    pub(crate) exists: bool,
    /// Number of complete elements.
    pub(crate) count: usize,
    /// Set when the snapshot ends with an incomplete receipt.
    pub(crate) torn: Option<TornTail>,
    /// True when the file exists with zero bytes.
    pub(crate) zero_length: bool,
    /// Offset just after the last complete element (or after `[`).
    pub(crate) end_of_complete: usize,
    /// The file read (`None` for embedded sources and absent files).
    pub(crate) identity: Option<FileIdentity>,
    /// The open handle of that file (the bytes of the complete elements stay readable through
    /// it, even once the path names another file).
    pub(crate) file: Option<Arc<File>>,
}

/// The per-receipt work of a streamed read: `digest` runs on the worker threads (one parsed
/// element and its absolute byte range in the ledger in, whatever the fold needs out; the
/// value is dropped after it), `fold` on the
/// caller's thread, once per element in file order. `start` makes a fresh accumulator for each
/// snapshot taken (a retried snapshot starts over).
pub(crate) struct Reader<'a, T, S> {
    /// Parsed element and its byte range → item (on a worker).
    pub(crate) digest: &'a (dyn Fn(Value, Range<usize>) -> T + Sync),
    /// A fresh accumulator.
    pub(crate) start: &'a mut dyn FnMut() -> S,
    /// Folds the item of element `index` (in order).
    pub(crate) fold: &'a mut dyn FnMut(&mut S, usize, T),
    /// Read sizes (tests shrink them to cross every boundary).
    pub(crate) window: Window,
    /// Worker threads (`None`: the available parallelism, at most 8).
    pub(crate) workers: Option<usize>,
}

impl<'a, T, S> Reader<'a, T, S> {
    /// A reader with the default window and worker count.
    pub(crate) fn new(
        digest: &'a (dyn Fn(Value, Range<usize>) -> T + Sync),
        start: &'a mut dyn FnMut() -> S,
        fold: &'a mut dyn FnMut(&mut S, usize, T),
    ) -> Self {
        Reader {
            digest,
            start,
            fold,
            window: Window::default(),
            workers: None,
        }
    }
}

/// Why one snapshot could not be read.
enum Failure {
    Content(LedgerError),
    Io(io::Error),
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Failure {
        Failure::Io(e)
    }
}

/// Streams `<state-dir>/receipts.json` of a source: on disk through [`stream_ledger_file`],
/// embedded in one pass (its bytes never change). An absent ledger is the empty one.
///
/// Errors: as [`stream_ledger_file`].
pub(crate) fn stream_ledger_from<T: Send, S>(
    src: &dyn StateSource,
    reader: &mut Reader<'_, T, S>,
) -> Result<(S, StreamEnd), LedgerReadError> {
    if let Some(root) = src.disk_root() {
        return stream_ledger_file(&root.join(layout::RECEIPTS_FILE), reader);
    }
    let io_err = |source| LedgerReadError::Io {
        path: layout::RECEIPTS_FILE.to_string(),
        source,
    };
    let mut sink = (reader.start)();
    let Some(bytes) = src.read(layout::RECEIPTS_FILE).map_err(io_err)? else {
        return Ok((sink, StreamEnd::default()));
    };
    match stream_once(Bytes::Memory(&bytes), bytes.len(), reader, &mut sink) {
        Ok(mut end) => {
            end.exists = true;
            Ok((sink, end))
        }
        Err(Failure::Content(e)) => Err(e.into()),
        Err(Failure::Io(e)) => Err(io_err(e)),
    }
}

/// Streams the ledger file `path` as the complete prefix of one consistent snapshot (the rules
/// of [`crate::replay::ledger`]): `fold` sees every complete element of the snapshot that is
/// returned, in order. An absent file is the empty ledger (`exists` false).
///
/// Errors: [`LedgerReadError::Content`] ([`LedgerError::NotArray`], [`LedgerError::Blank`],
/// [`LedgerError::Corrupt`] — confirmed on a second snapshot of the same file and length);
/// [`LedgerReadError::Io`] (unreadable, or a directory).
pub(crate) fn stream_ledger_file<T: Send, S>(
    path: &Path,
    reader: &mut Reader<'_, T, S>,
) -> Result<(S, StreamEnd), LedgerReadError> {
    let io_err = |source| LedgerReadError::Io {
        path: path.display().to_string(),
        source,
    };
    let mut confirm = Confirm::default();
    for attempt in 0..crate::replay::ledger::ATTEMPTS {
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let end = StreamEnd {
                    path: Some(path.to_path_buf()),
                    ..StreamEnd::default()
                };
                return Ok(((reader.start)(), end));
            }
            Err(e) => return Err(io_err(e)),
        };
        let meta = file.metadata().map_err(io_err)?;
        if meta.is_dir() {
            return Err(io_err(io::Error::other("it is a directory")));
        }
        let id = FileIdentity {
            dev: meta.dev(),
            ino: meta.ino(),
        };
        let len = meta.len();
        let mut sink = (reader.start)();
        let snapshot_len = usize::try_from(len).unwrap_or(usize::MAX);
        let e = match stream_once(Bytes::File(&file), snapshot_len, reader, &mut sink) {
            Ok(mut end) => {
                end.path = Some(path.to_path_buf());
                end.exists = true;
                end.identity = Some(id);
                end.file = Some(Arc::new(file));
                return Ok((sink, end));
            }
            Err(Failure::Io(e)) => return Err(io_err(e)),
            Err(Failure::Content(e)) => e,
        };
        if let Some(e) = confirm.settle(id, len, e, attempt) {
            return Err(e.into());
        }
    }
    Err(confirm
        .last()
        .map(LedgerReadError::from)
        .unwrap_or_else(|| io_err(io::Error::other("no snapshot taken"))))
}

/// A batch of element bytes: `spans[k]` is element `k`'s absolute `(start, end)`; their bytes
/// follow each other in `data`. `before` is the end of the element before the first (or of
/// `[`).
#[derive(Default)]
struct Batch {
    before: usize,
    data: Vec<u8>,
    spans: Vec<(usize, usize)>,
}

/// What goes through the queues, tagged with a sequence number.
enum Work {
    Batch(u64, Batch),
    /// The splitter is done (or failed); `u64` is its sequence number.
    End(u64, io::Result<Ending>),
}

/// One element's outcome on a worker: its item, or "the byte parser must decide from here"
/// (its start).
type Outcome<T> = Result<T, usize>;

enum Done<T> {
    /// `before` of the batch, and each element's outcome and end.
    Batch(usize, Vec<(Outcome<T>, usize)>),
    End(io::Result<Ending>),
}

fn worker_count(reader_workers: Option<usize>) -> usize {
    reader_workers
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
                .min(MAX_WORKERS)
        })
        .max(1)
}

/// One snapshot of `len` bytes, streamed into `sink`.
fn stream_once<T: Send, S>(
    bytes: Bytes<'_>,
    len: usize,
    reader: &mut Reader<'_, T, S>,
    sink: &mut S,
) -> Result<StreamEnd, Failure> {
    if len == 0 {
        return Ok(StreamEnd {
            zero_length: true,
            ..StreamEnd::default()
        });
    }
    let window = reader.window;
    let end = content_end(bytes, len, window)?;
    let workers = worker_count(reader.workers);
    let digest = reader.digest;
    let fold = &mut *reader.fold;
    let mut count = 0usize;
    let ending = std::thread::scope(|scope| {
        let (work_tx, work_rx) = bounded::<Work>(2 * workers);
        let (done_tx, done_rx) = bounded::<(u64, Done<T>)>(2 * workers);
        scope.spawn(move || split(bytes, end, len, window, work_tx));
        for _ in 0..workers {
            let (rx, tx) = (work_rx.clone(), done_tx.clone());
            scope.spawn(move || work(rx, tx, digest));
        }
        drop((work_rx, done_tx));
        collect(done_rx, &mut |i, item| fold(sink, i, item), &mut count)
    })?;
    let torn = |end_of_complete: usize, count: usize| StreamEnd {
        count,
        torn: Some(TornTail {
            dropped_bytes: len - end_of_complete,
            complete: count,
        }),
        end_of_complete,
        ..StreamEnd::default()
    };
    let closed = |end_of_complete: usize, count: usize| StreamEnd {
        count,
        end_of_complete,
        ..StreamEnd::default()
    };
    match ending {
        Ending::Closed { end_of_complete } => Ok(closed(end_of_complete, count)),
        Ending::Torn { end_of_complete } => Ok(torn(end_of_complete, count)),
        Ending::Content(e) => Err(Failure::Content(e)),
        Ending::Exact {
            start,
            end_of_complete,
        } => {
            let mut element = |v: Value, span: Range<usize>| {
                fold(sink, count, digest(v, span));
                count += 1;
            };
            match exact(bytes, end, start, end_of_complete, window, &mut element)? {
                ExactEnding::Closed { end_of_complete } => Ok(closed(end_of_complete, count)),
                ExactEnding::Torn { end_of_complete } => Ok(torn(end_of_complete, count)),
                ExactEnding::Content(e) => Err(Failure::Content(e)),
            }
        }
    }
}

/// The splitter thread: batches of elements, then the ending. Stops when the workers are gone.
fn split(bytes: Bytes<'_>, end: usize, len: usize, window: Window, tx: Sender<Work>) {
    let mut seq = 0u64;
    let mut batch = Batch::default();
    let mut gone = false;
    let mut splitter = Splitter::new(bytes, end, len, window);
    let ending = splitter.run(&mut |start, before, elem| {
        if batch.spans.is_empty() {
            batch.before = before;
        }
        batch.data.extend_from_slice(elem);
        batch.spans.push((start, start + elem.len()));
        if batch.data.len() >= window.batch.max(1) {
            let full = std::mem::take(&mut batch);
            if tx.send(Work::Batch(seq, full)).is_err() {
                gone = true;
                return false;
            }
            seq += 1;
        }
        true
    });
    if gone {
        return;
    }
    let ending = match ending {
        Ok(Some(e)) => Ok(e),
        Ok(None) => return,
        Err(e) => Err(e),
    };
    if !batch.spans.is_empty() {
        if tx.send(Work::Batch(seq, batch)).is_err() {
            return;
        }
        seq += 1;
    }
    let _ = tx.send(Work::End(seq, ending));
}

/// A worker: parses each element of a batch; the ones that parse to exactly their bytes go
/// through `digest`. After the first that does not, the rest of the batch is not parsed (the
/// exact reader takes over there).
fn work<T: Send>(
    rx: Receiver<Work>,
    tx: Sender<(u64, Done<T>)>,
    digest: &(dyn Fn(Value, Range<usize>) -> T + Sync),
) {
    while let Ok(w) = rx.recv() {
        let out = match w {
            Work::End(seq, ending) => (seq, Done::End(ending)),
            Work::Batch(seq, b) => {
                let mut items = Vec::with_capacity(b.spans.len());
                let mut off = 0usize;
                for &(start, end) in &b.spans {
                    let elem = &b.data[off..off + (end - start)];
                    off += end - start;
                    let mut p = Parser::new(elem);
                    match p.parse_value() {
                        Ok(v) if p.pos == elem.len() => {
                            items.push((Ok(digest(v, start..end)), end));
                        }
                        _ => {
                            items.push((Err(start), end));
                            break;
                        }
                    }
                }
                (seq, Done::Batch(b.before, items))
            }
        };
        if tx.send(out).is_err() {
            return;
        }
    }
}

/// The caller's side: results in sequence order, folded; the ending. An element the workers
/// could not settle ends the pipeline with [`Ending::Exact`] at its start (dropping the
/// receiver stops the workers and then the splitter).
fn collect<T>(
    rx: Receiver<(u64, Done<T>)>,
    fold: &mut dyn FnMut(usize, T),
    count: &mut usize,
) -> Result<Ending, Failure> {
    let mut pending: BTreeMap<u64, Done<T>> = BTreeMap::new();
    let mut next = 0u64;
    loop {
        let done = match pending.remove(&next) {
            Some(d) => d,
            None => match rx.recv() {
                Ok((seq, d)) if seq == next => d,
                Ok((seq, d)) => {
                    pending.insert(seq, d);
                    continue;
                }
                // Every worker is gone without an ending: only a panic does that.
                Err(_) => {
                    return Err(Failure::Io(io::Error::other(
                        "the ledger reader's workers stopped",
                    )));
                }
            },
        };
        next += 1;
        match done {
            Done::End(ending) => return Ok(ending?),
            Done::Batch(before, items) => {
                let mut end_of_complete = before;
                for (item, end) in items {
                    match item {
                        Ok(t) => {
                            fold(*count, t);
                            *count += 1;
                            end_of_complete = end;
                        }
                        Err(start) => {
                            return Ok(Ending::Exact {
                                start,
                                end_of_complete,
                            });
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
