//! Finding the elements of one ledger snapshot without parsing them (FORMATS.md §11.2), so the
//! parsing can be spread over threads ([`crate::replay::stream`]).
//!
//! The [`Splitter`] walks bytes `[0, end)` of a snapshot (`end`: its length with trailing NUL
//! bytes removed) through a window of positioned reads: the opening `[`, then each element's
//! byte span, found by tracking JSON strings (`"`, `\` escapes) and bracket depth, then the
//! separators exactly as [`crate::store::ledger::read_ledger`] reads them. It never judges an
//! element's content: an element it cannot delimit with certainty (one the snapshot cuts off,
//! or one that starts with a byte no JSON value starts with) ends the split with
//! [`Ending::Exact`], and so does any element whose own parse turns out not to span exactly
//! the bytes the splitter gave it (the pipeline's check). From such an element on, [`exact`]
//! reads the rest of the snapshot with the byte parser itself, element by element, over a
//! window that grows until the parser's answer cannot depend on bytes beyond it. Together they
//! give exactly the verdict of `read_ledger` over the same bytes — the same elements, the same
//! torn tail, the same error at the same offset — while holding only a window and one element
//! in memory.

use std::fs::File;
use std::io;
use std::ops::Range;
use std::os::unix::fs::FileExt;

use crate::format::json::{Parser, Value};
use crate::store::ledger::LedgerError;

/// The bytes of one snapshot: a file read by position (never past the snapshot length), or
/// bytes in memory (an embedded ledger).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Bytes<'a> {
    /// An open file.
    File(&'a File),
    /// Bytes in memory.
    Memory(&'a [u8]),
}

impl Bytes<'_> {
    /// Fills `buf` from offset `at`; fewer bytes only when the data ends (a file that shrank,
    /// or the end of the memory).
    pub(crate) fn read_at(&self, buf: &mut [u8], at: usize) -> io::Result<usize> {
        match self {
            Bytes::Memory(m) => {
                let src = m.get(at..).unwrap_or(&[]);
                let n = src.len().min(buf.len());
                buf[..n].copy_from_slice(&src[..n]);
                Ok(n)
            }
            Bytes::File(f) => {
                let mut got = 0usize;
                while got < buf.len() {
                    match f.read_at(&mut buf[got..], (at + got) as u64) {
                        Ok(0) => break,
                        Ok(n) => got += n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(got)
            }
        }
    }

    /// Bytes `[from, to)` (fewer when the data ends early).
    fn range(&self, from: usize, to: usize) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; to.saturating_sub(from)];
        let n = self.read_at(&mut buf, from)?;
        buf.truncate(n);
        Ok(buf)
    }
}

/// Read and batch sizes (the window grows past them for an element larger than one read).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Window {
    /// Bytes read at a time by the splitter.
    pub(crate) chunk: usize,
    /// The first window of the exact reader (doubled while its answer is inconclusive).
    pub(crate) exact: usize,
    /// About this many element bytes go to a worker at a time.
    pub(crate) batch: usize,
}

impl Default for Window {
    fn default() -> Window {
        Window {
            chunk: 1 << 20,
            exact: 1 << 16,
            batch: 128 * 1024,
        }
    }
}

/// The length of the content: `len` minus the trailing NUL bytes (FORMATS.md §11.2: a crash
/// that extended the file without data), read backwards in chunks.
pub(crate) fn content_end(bytes: Bytes<'_>, len: usize, window: Window) -> io::Result<usize> {
    let mut end = len;
    let step = window.chunk.max(1);
    while end > 0 {
        let from = end.saturating_sub(step);
        let chunk = bytes.range(from, end)?;
        if chunk.len() < end - from {
            // The file shrank under us: its content ends where the data does.
            return Ok(from + chunk.len());
        }
        match chunk.iter().rposition(|&b| b != 0) {
            Some(i) => return Ok(from + i + 1),
            None => end = from,
        }
    }
    Ok(0)
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// How a split ends.
#[derive(Debug)]
pub(crate) enum Ending {
    /// `]` and whitespace after the last element: a closed array.
    Closed {
        /// End of the last complete element (or of `[`).
        end_of_complete: usize,
    },
    /// The snapshot ends between elements (growth): the complete elements stand.
    Torn {
        /// End of the last complete element (or of `[`).
        end_of_complete: usize,
    },
    /// From the element starting at `start` on, only the byte parser can tell ([`exact`]).
    Exact {
        /// Where that element starts.
        start: usize,
        /// End of the last complete element before it (or of `[`).
        end_of_complete: usize,
    },
    /// Not an array, blank, or corrupt between elements or after the closing `]`.
    Content(LedgerError),
}

/// What the element at a position turned out to be.
enum Scan {
    /// A value spanning `[start, end)`, as far as brackets and strings tell.
    Complete(usize),
    /// Only the byte parser can tell (cut off by the snapshot, or an odd first byte).
    Unsure,
}

/// The splitter: a window `[at, at + win.len())` over bytes `[0, end)`, and a cursor.
pub(crate) struct Splitter<'a> {
    bytes: Bytes<'a>,
    end: usize,
    file_len: usize,
    chunk: usize,
    win: Vec<u8>,
    at: usize,
    pos: usize,
}

impl<'a> Splitter<'a> {
    /// A splitter over content `[0, end)` of a snapshot of `file_len` bytes.
    pub(crate) fn new(bytes: Bytes<'a>, end: usize, file_len: usize, window: Window) -> Self {
        Splitter {
            bytes,
            end,
            file_len,
            chunk: window.chunk.max(1),
            win: Vec::new(),
            at: 0,
            pos: 0,
        }
    }

    /// Reads more bytes after the window, dropping those before `keep`. False at the end of
    /// the content.
    fn fill(&mut self, keep: usize) -> io::Result<bool> {
        if keep > self.at {
            let drop = (keep - self.at).min(self.win.len());
            self.win.drain(..drop);
            self.at += drop;
        }
        let from = self.at + self.win.len();
        if from >= self.end {
            return Ok(false);
        }
        // Doubling past one chunk keeps a large element linear.
        let want = self.chunk.max(self.win.len()).min(self.end - from);
        let old = self.win.len();
        self.win.resize(old + want, 0);
        let n = self.bytes.read_at(&mut self.win[old..], from)?;
        self.win.truncate(old + n);
        if n < want {
            // The file shrank under us: the content ends where the data does.
            self.end = from + n;
        }
        Ok(n > 0)
    }

    /// The byte at the cursor, reading more when needed (`None` at the end of the content).
    fn peek(&mut self) -> io::Result<Option<u8>> {
        while self.pos >= self.at + self.win.len() {
            if !self.fill(self.pos)? {
                return Ok(None);
            }
        }
        Ok(Some(self.win[self.pos - self.at]))
    }

    fn skip_ws(&mut self) -> io::Result<()> {
        loop {
            let i = self.pos - self.at;
            match self.win[i.min(self.win.len())..]
                .iter()
                .position(|&b| !is_ws(b))
            {
                Some(k) => {
                    self.pos += k;
                    return Ok(());
                }
                None => {
                    self.pos = self.at + self.win.len();
                    if !self.fill(self.pos)? {
                        return Ok(());
                    }
                }
            }
        }
    }

    /// Splits the snapshot, calling `element(start, before, bytes)` for every element it can
    /// delimit, in order (`before`: the end of the previous element, or of `[`); stops early
    /// (returning `Ok(None)`) when `element` returns false.
    pub(crate) fn run(
        &mut self,
        element: &mut dyn FnMut(usize, usize, &[u8]) -> bool,
    ) -> io::Result<Option<Ending>> {
        self.skip_ws()?;
        match self.peek()? {
            None => {
                return Ok(Some(Ending::Content(LedgerError::Blank {
                    len: self.file_len,
                })));
            }
            Some(b'[') => self.pos += 1,
            Some(_) => return Ok(Some(Ending::Content(LedgerError::NotArray))),
        }
        let mut end_of_complete = self.pos;
        self.skip_ws()?;
        if self.peek()? == Some(b']') {
            self.pos += 1;
            return self.after_close(end_of_complete).map(Some);
        }
        loop {
            self.skip_ws()?;
            let start = self.pos;
            let Scan::Complete(end) = self.scan(start)? else {
                return Ok(Some(Ending::Exact {
                    start,
                    end_of_complete,
                }));
            };
            let bytes = &self.win[start - self.at..end - self.at];
            if !element(start, end_of_complete, bytes) {
                return Ok(None);
            }
            end_of_complete = end;
            self.pos = end;
            self.skip_ws()?;
            match self.peek()? {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return self.after_close(end_of_complete).map(Some);
                }
                None => return Ok(Some(Ending::Torn { end_of_complete })),
                Some(b) => {
                    return Ok(Some(Ending::Content(LedgerError::Corrupt {
                        offset: self.pos,
                        message: format!("unexpected character '{}' in array", b as char),
                    })));
                }
            }
        }
    }

    /// After the closing `]`: whitespace only, or data after the array.
    fn after_close(&mut self, end_of_complete: usize) -> io::Result<Ending> {
        self.skip_ws()?;
        Ok(match self.peek()? {
            None => Ending::Closed { end_of_complete },
            Some(_) => Ending::Content(LedgerError::Corrupt {
                offset: self.pos,
                message: "unexpected data after the closing ]".to_string(),
            }),
        })
    }

    /// Delimits the element starting at `start` (the window then holds all of it).
    fn scan(&mut self, start: usize) -> io::Result<Scan> {
        let Some(first) = self.peek()? else {
            return Ok(Scan::Unsure);
        };
        match first {
            b'{' | b'[' | b'"' => self.scan_nested(start),
            b'-' | b'0'..=b'9' | b't' | b'f' | b'n' => self.scan_scalar(start),
            _ => Ok(Scan::Unsure),
        }
    }

    /// A number or literal: the run of bytes that can belong to one. The element's own parse
    /// decides whether the run is one value.
    fn scan_scalar(&mut self, start: usize) -> io::Result<Scan> {
        let mut i = start - self.at;
        loop {
            match self.win[i..]
                .iter()
                .position(|&b| !(b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')))
            {
                Some(k) => return Ok(Scan::Complete(self.at + i + k)),
                None => {
                    let done = self.at + self.win.len();
                    if !self.fill(start)? {
                        // Cut off by the end of the snapshot: a longer number may follow.
                        return Ok(Scan::Unsure);
                    }
                    i = done - self.at;
                }
            }
        }
    }

    /// An object, array or string: bracket depth outside strings, `\` escaping one byte
    /// inside them.
    fn scan_nested(&mut self, start: usize) -> io::Result<Scan> {
        let mut i = start - self.at;
        let mut depth = 0usize;
        let mut in_str = false;
        let mut escaped = false;
        loop {
            while i < self.win.len() {
                if in_str {
                    if escaped {
                        escaped = false;
                        i += 1;
                        continue;
                    }
                    match self.win[i..].iter().position(|&b| b == b'"' || b == b'\\') {
                        None => i = self.win.len(),
                        Some(k) => {
                            i += k;
                            if self.win[i] == b'\\' {
                                escaped = true;
                            } else {
                                in_str = false;
                                if depth == 0 {
                                    return Ok(Scan::Complete(self.at + i + 1));
                                }
                            }
                            i += 1;
                        }
                    }
                    continue;
                }
                match self.win[i] {
                    b'"' => in_str = true,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            return Ok(Scan::Complete(self.at + i + 1));
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            let done = self.at + self.win.len();
            if !self.fill(start)? {
                return Ok(Scan::Unsure);
            }
            i = done - self.at;
        }
    }
}

/// How [`exact`] ends: as [`Ending`] without the `Exact` case.
#[derive(Debug)]
pub(crate) enum ExactEnding {
    /// A closed array.
    Closed {
        /// End of the last complete element.
        end_of_complete: usize,
    },
    /// The snapshot ends inside or between elements.
    Torn {
        /// End of the last complete element.
        end_of_complete: usize,
    },
    /// Corrupt (an element, a separator, or data after the closing `]`).
    Content(LedgerError),
}

/// Reads elements from `start` (an element start) to the end of the content with the byte
/// parser, exactly as `read_ledger` continues from there, calling `element(value, span)` for
/// each complete one (`span`: the value's absolute byte range in the file). `end_of_complete` is the end of the element before `start` (or of `[`).
///
/// The window starts at [`Window::exact`] bytes and doubles whenever the parser's answer could
/// depend on bytes past it: it ran out of input, or a value or the whitespace after it reaches
/// the window's end before the content's end.
pub(crate) fn exact(
    bytes: Bytes<'_>,
    end: usize,
    start: usize,
    mut end_of_complete: usize,
    window: Window,
    element: &mut dyn FnMut(Value, Range<usize>),
) -> io::Result<ExactEnding> {
    let mut at = start;
    let mut want = window.exact.max(1);
    loop {
        let win = bytes.range(at, end.min(at.saturating_add(want)))?;
        let whole = at + win.len() >= end || win.len() < want;
        let grow = |want: &mut usize| *want = want.saturating_mul(2);
        let mut p = Parser::new(&win);
        p.skip_ws();
        let value_start = p.pos;
        let v = match p.parse_value() {
            Ok(v) => v,
            Err(e) if e.is_eof() && !whole => {
                grow(&mut want);
                continue;
            }
            Err(e) if e.is_eof() => return Ok(ExactEnding::Torn { end_of_complete }),
            Err(e) => {
                return Ok(ExactEnding::Content(LedgerError::Corrupt {
                    offset: at + e.offset,
                    message: e.message(),
                }));
            }
        };
        let value_end = p.pos;
        p.skip_ws();
        if !whole && p.pos >= win.len() {
            // The value, or the whitespace after it, may continue past the window.
            grow(&mut want);
            continue;
        }
        element(v, at + value_start..at + value_end);
        end_of_complete = at + value_end;
        match p.peek() {
            Some(b',') => {
                at += p.pos + 1;
                want = window.exact.max(1);
            }
            Some(b']') => {
                let after = at + p.pos + 1;
                return Ok(match first_non_ws(bytes, after, end, window)? {
                    Some(offset) => ExactEnding::Content(LedgerError::Corrupt {
                        offset,
                        message: "unexpected data after the closing ]".to_string(),
                    }),
                    None => ExactEnding::Closed { end_of_complete },
                });
            }
            None => return Ok(ExactEnding::Torn { end_of_complete }),
            Some(b) => {
                return Ok(ExactEnding::Content(LedgerError::Corrupt {
                    offset: at + p.pos,
                    message: format!("unexpected character '{}' in array", b as char),
                }));
            }
        }
    }
}

/// The offset of the first non-whitespace byte in `[from, end)`, if any.
fn first_non_ws(
    bytes: Bytes<'_>,
    mut from: usize,
    end: usize,
    window: Window,
) -> io::Result<Option<usize>> {
    let step = window.chunk.max(1);
    while from < end {
        let chunk = bytes.range(from, end.min(from + step))?;
        if chunk.is_empty() {
            return Ok(None);
        }
        if let Some(k) = chunk.iter().position(|&b| !is_ws(b)) {
            return Ok(Some(from + k));
        }
        from += chunk.len();
    }
    Ok(None)
}
