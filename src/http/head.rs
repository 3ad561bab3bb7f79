//! Request heads as the gate reads them (see `gate.rs`): where a head ends, whether it may be
//! passed on to tiny_http, how it is passed on, and where a chunked body ends.
//!
//! A head is accepted only when it is complete within [`MAX_HEAD_BYTES`], parses as HTTP/1.0 or
//! HTTP/1.1 (`httparse`, at most [`MAX_HEADER_FIELDS`] fields), carries a request target and
//! header values in visible ASCII, an `Expect` of `100-continue` if any, and passes the RFC 9112
//! framing checks of `framing.rs`. Anything else is refused here, before tiny_http sees a byte:
//!
//! | Head | Answer |
//! |---|---|
//! | more than 64 KiB, or more than 256 fields | 431 |
//! | a well-formed `HTTP/x.y` other than 1.0 and 1.1 (`HTTP/2.0`, `HTTP/3.0`, `HTTP/0.9`) | 505 |
//! | the HTTP/2 prior-knowledge preface `PRI * HTTP/2.0` | none: the connection is closed |
//! | anything `httparse` rejects, a non-ASCII target or header value | 400 |
//! | an `Expect` other than `100-continue` | 417 |
//! | framing errors (`framing.rs`) | 400 / 501 |
//!
//! Every refusal closes the connection. An accepted head is passed on re-serialized from its
//! parsed parts (one `name: value` line per field, CRLF line ends), with the gate's own
//! [`TAG_HEADER`] appended (any such field the client sent is dropped), so tiny_http parses
//! exactly what was checked here.
//!
//! Sources: RFC 9112 §2.2 (empty lines before a request line are ignored), §2.3 and RFC 9110
//! §15.6.6 (505), RFC 6585 §5 (431), RFC 9110 §10.1.1 and §15.5.18 (417), RFC 9113 §3.4 (the
//! HTTP/2 connection preface), RFC 9112 §7.1 (chunked coding).

use std::net::SocketAddr;

use super::framing;

/// The largest request head read: 64 KiB = 65,536 bytes, request line and blank line
/// included. A longer head is answered 431 with `connection: close`.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// The most header fields in one head: 256. More are answered 431.
pub const MAX_HEADER_FIELDS: usize = 256;

/// The header field the gate adds to every head it passes on (see [`Tag`]); removed again before
/// a handler sees the request.
pub(crate) const TAG_HEADER: &str = "x-reactor-gate";

/// How the body of an accepted request is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyFraming {
    /// No body (no `Content-Length`, or `Content-Length: 0`, and no `Transfer-Encoding`).
    None,
    /// A `Content-Length` body of this many bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

/// An accepted request head.
#[derive(Debug)]
pub(crate) struct Head {
    method: String,
    target: String,
    minor: u8,
    headers: Vec<(String, String)>,
    /// How the body is delimited.
    pub framing: BodyFraming,
    /// Whether tiny_http will read no further request from this connection after this one
    /// (`Connection` containing `close` or `upgrade`, or HTTP/1.0 without `keep-alive`; the same
    /// test tiny_http 0.12 applies).
    pub last: bool,
}

/// What to do with a complete head.
#[derive(Debug)]
pub(crate) enum Verdict {
    /// Pass it on.
    Forward(Head),
    /// Answer `status` with `{"error": message}` and close.
    Refuse {
        /// 400, 417, 431, 501 or 505.
        status: u16,
        /// The error text.
        message: &'static str,
    },
    /// Close without an answer (an HTTP/2 connection preface).
    Close,
}

fn refuse(status: u16, message: &'static str) -> Verdict {
    Verdict::Refuse { status, message }
}

/// The end (index just past the blank line) of the head at the start of `buf`, looking only at
/// bytes from `from - 2` on (the caller passes how much it scanned before). Lines end with CRLF
/// or, as RFC 9112 §2.2 lets a recipient accept, a bare LF: the head ends at the first LF
/// followed by an empty line (`LF LF` or `LF CR LF`). The gate forwards the head rebuilt with
/// CRLF, so tiny_http never sees a bare LF.
pub(crate) fn head_end(buf: &[u8], from: usize) -> Option<usize> {
    let start = from.saturating_sub(2);
    let tail = buf.get(start..)?;
    tail.iter().enumerate().find_map(|(i, &b)| {
        if b != b'\n' {
            return None;
        }
        match tail.get(i + 1..) {
            Some([b'\n', ..]) => Some(start + i + 2),
            Some([b'\r', b'\n', ..]) => Some(start + i + 3),
            _ => None,
        }
    })
}

/// Bytes of empty lines (`CRLF`) at the start of `buf`, which precede a request line and are
/// ignored (RFC 9112 §2.2).
pub(crate) fn leading_empty_lines(buf: &[u8]) -> usize {
    buf.chunks(2).take_while(|c| *c == b"\r\n").count() * 2
}

/// Judges one complete head (`bytes` ends with its blank line).
pub(crate) fn judge(bytes: &[u8]) -> Verdict {
    if bytes.starts_with(b"PRI * HTTP/2.0\r\n") {
        return Verdict::Close;
    }
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADER_FIELDS];
    let mut parsed = httparse::Request::new(&mut fields);
    match parsed.parse(bytes) {
        Ok(httparse::Status::Complete(n)) if n == bytes.len() => {}
        Ok(_) => return refuse(400, "malformed request head"),
        Err(httparse::Error::TooManyHeaders) => {
            return refuse(431, "too many header fields (limit 256)");
        }
        Err(httparse::Error::Version) => return version_refusal(bytes),
        Err(_) => return refuse(400, "malformed request head"),
    }
    let (Some(method), Some(target), Some(minor)) = (parsed.method, parsed.path, parsed.version)
    else {
        return refuse(400, "malformed request head");
    };
    if target.is_empty() || !target.bytes().all(|b| (0x21..0x7f).contains(&b)) {
        return refuse(400, "malformed request target");
    }
    let mut headers = Vec::with_capacity(parsed.headers.len());
    for field in parsed.headers.iter() {
        let visible = field
            .value
            .iter()
            .all(|&b| b == b'\t' || (0x20..0x7f).contains(&b));
        let Ok(value) = std::str::from_utf8(field.value) else {
            return refuse(400, "invalid header value");
        };
        if !visible {
            return refuse(400, "invalid header value");
        }
        if !field.name.eq_ignore_ascii_case(TAG_HEADER) {
            headers.push((field.name.to_owned(), value.to_owned()));
        }
    }
    let values = |name: &'static str| {
        headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    if values("expect").any(|v| !v.eq_ignore_ascii_case("100-continue")) {
        return refuse(417, "unsupported Expect (only 100-continue)");
    }
    if let Some(refusal) = framing::check((1, minor), &headers) {
        return refuse(refusal.status, refusal.message);
    }
    let framing = if values("transfer-encoding").next().is_some() {
        BodyFraming::Chunked
    } else {
        match values("content-length")
            .next()
            .and_then(framing::plain_length)
        {
            Some(0) | None => BodyFraming::None,
            Some(n) => BodyFraming::Length(n),
        }
    };
    let connection = values("connection").next().map(str::to_ascii_lowercase);
    let last = match connection {
        Some(v) if v.contains("close") || v.contains("upgrade") => true,
        Some(v) => minor == 0 && !v.contains("keep-alive"),
        None => minor == 0,
    };
    Verdict::Forward(Head {
        method: method.to_owned(),
        target: target.to_owned(),
        minor,
        headers,
        framing,
        last,
    })
}

/// 505 for a request line whose version is well formed (`HTTP/<digit>.<digit>`, or
/// `HTTP/<digit>`) but not 1.0 or 1.1; 400 otherwise.
fn version_refusal(bytes: &[u8]) -> Verdict {
    let line_end = bytes
        .windows(2)
        .position(|w| w == b"\r\n")
        .unwrap_or(bytes.len());
    let line = &bytes[..line_end];
    let parts: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
    let well_formed = match parts.as_slice() {
        [method, target, version] => {
            !method.is_empty()
                && !target.is_empty()
                && version.strip_prefix(b"HTTP/").is_some_and(|v| {
                    matches!(v, [d] if d.is_ascii_digit())
                        || matches!(v, [d, b'.', e] if d.is_ascii_digit() && e.is_ascii_digit())
                })
        }
        _ => false,
    };
    if well_formed {
        refuse(
            505,
            "HTTP version not supported (only HTTP/1.0 and HTTP/1.1)",
        )
    } else {
        refuse(400, "malformed request line")
    }
}

/// What the gate tells tiny_http (and through it the dispatcher) about a request, in the
/// [`TAG_HEADER`] field: `<connection id> <request number> <peer address> <declared length or ->`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tag {
    /// The gate connection's id (see `gate.rs`).
    pub conn: u64,
    /// The request's number on its connection, from 1.
    pub seq: u64,
    /// The client's address.
    pub peer: SocketAddr,
    /// The `Content-Length` the client declared, when the gate passed on a smaller one.
    pub declared: Option<u64>,
}

impl Tag {
    fn value(&self) -> String {
        let declared = self
            .declared
            .map_or_else(|| "-".to_owned(), |n| n.to_string());
        format!("{} {} {} {declared}", self.conn, self.seq, self.peer)
    }

    /// Parses a [`TAG_HEADER`] value; `None` when malformed.
    pub(crate) fn parse(value: &str) -> Option<Tag> {
        let mut parts = value.split(' ');
        let conn = parts.next()?.parse().ok()?;
        let seq = parts.next()?.parse().ok()?;
        let peer = parts.next()?.parse().ok()?;
        let declared = match parts.next()? {
            "-" => None,
            n => Some(n.parse().ok()?),
        };
        parts.next().is_none().then_some(Tag {
            conn,
            seq,
            peer,
            declared,
        })
    }
}

impl Head {
    /// The head as passed on: request line, the client's fields (with `Content-Length` replaced
    /// by `length` when given), the tag, the blank line.
    pub(crate) fn forwarded(&self, length: Option<u64>, tag: &Tag) -> Vec<u8> {
        let mut out = String::with_capacity(256);
        out.push_str(&self.method);
        out.push(' ');
        out.push_str(&self.target);
        out.push_str(if self.minor == 0 {
            " HTTP/1.0\r\n"
        } else {
            " HTTP/1.1\r\n"
        });
        for (name, value) in &self.headers {
            if length.is_some() && name.eq_ignore_ascii_case("content-length") {
                continue;
            }
            out.push_str(name);
            out.push_str(": ");
            out.push_str(value);
            out.push_str("\r\n");
        }
        if let Some(n) = length {
            out.push_str(&format!("Content-Length: {n}\r\n"));
        }
        out.push_str(TAG_HEADER);
        out.push_str(": ");
        out.push_str(&tag.value());
        out.push_str("\r\n\r\n");
        out.into_bytes()
    }
}

/// Where a chunked body ends, found byte by byte as it streams through the gate.
///
/// Accepts `1*16HEXDIG [ ";" extension ] CRLF`, the chunk's bytes, `CRLF`, …, and a last chunk
/// `0 [ ";" extension ] CRLF CRLF` (no trailer fields: tiny_http 0.12's decoder does not
/// read them either). Extensions are visible ASCII, spaces and tabs. Everything this accepts,
/// tiny_http decodes the same way; what it refuses is never passed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChunkedScanner {
    /// In a chunk-size line: the digits so far and their value.
    Size {
        digits: u8,
        size: u64,
    },
    /// In a chunk extension.
    Extension {
        size: u64,
    },
    /// After the size line's CR.
    SizeLf {
        size: u64,
    },
    /// Inside a chunk's data: bytes left.
    Data(u64),
    /// After a chunk's data: expecting CR, then LF.
    DataCr,
    DataLf,
    /// After the last chunk's size line: expecting the final CRLF.
    LastCr,
    LastLf,
}

/// The result of [`ChunkedScanner::feed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scan {
    /// Every byte fed belongs to the body; more is needed.
    More,
    /// The body ends after this many of the bytes fed.
    Done(usize),
    /// The byte at this index is not valid chunked coding.
    Malformed(usize),
}

impl Default for ChunkedScanner {
    fn default() -> ChunkedScanner {
        ChunkedScanner::Size { digits: 0, size: 0 }
    }
}

impl ChunkedScanner {
    /// Consumes the next `bytes` of the body.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Scan {
        let mut i = 0;
        while i < bytes.len() {
            if let ChunkedScanner::Data(left) = *self {
                let take = left.min((bytes.len() - i) as u64);
                i += take as usize;
                *self = if take == left {
                    ChunkedScanner::DataCr
                } else {
                    ChunkedScanner::Data(left - take)
                };
                continue;
            }
            let b = bytes[i];
            let next = match *self {
                ChunkedScanner::Size { digits, size } => match (b as char).to_digit(16) {
                    Some(d) if digits < 16 => Some(ChunkedScanner::Size {
                        digits: digits + 1,
                        size: size * 16 + u64::from(d),
                    }),
                    None if digits > 0 && b == b';' => Some(ChunkedScanner::Extension { size }),
                    None if digits > 0 && b == b'\r' => Some(ChunkedScanner::SizeLf { size }),
                    _ => None,
                },
                ChunkedScanner::Extension { size } => match b {
                    b'\r' => Some(ChunkedScanner::SizeLf { size }),
                    b'\t' | 0x20..=0x7e => Some(ChunkedScanner::Extension { size }),
                    _ => None,
                },
                ChunkedScanner::SizeLf { size } => (b == b'\n').then_some(if size == 0 {
                    ChunkedScanner::LastCr
                } else {
                    ChunkedScanner::Data(size)
                }),
                ChunkedScanner::DataCr => (b == b'\r').then_some(ChunkedScanner::DataLf),
                ChunkedScanner::DataLf => (b == b'\n').then_some(ChunkedScanner::default()),
                ChunkedScanner::LastCr => (b == b'\r').then_some(ChunkedScanner::LastLf),
                ChunkedScanner::LastLf => {
                    if b == b'\n' {
                        *self = ChunkedScanner::default();
                        return Scan::Done(i + 1);
                    }
                    None
                }
                ChunkedScanner::Data(_) => unreachable!("handled above"),
            };
            match next {
                Some(state) => *self = state,
                None => return Scan::Malformed(i),
            }
            i += 1;
        }
        Scan::More
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &str) -> Verdict {
        judge(text.as_bytes())
    }

    fn status(text: &str) -> Option<u16> {
        match head(text) {
            Verdict::Refuse { status, .. } => Some(status),
            Verdict::Forward(_) => None,
            Verdict::Close => Some(0),
        }
    }

    fn accepted(text: &str) -> Head {
        match head(text) {
            Verdict::Forward(h) => h,
            other => panic!("{text:?} → {other:?}"),
        }
    }

    #[test]
    fn head_end_is_found_incrementally() {
        let full = b"GET / HTTP/1.1\r\nHost: a\r\n\r\nrest";
        assert_eq!(head_end(full, 0), Some(full.len() - 4));
        assert_eq!(head_end(&full[..20], 0), None);
        // The marker straddles the previous scan's end.
        assert_eq!(head_end(full, 25), Some(full.len() - 4));
        assert_eq!(head_end(b"", 0), None);
        // Bare LF line ends (RFC 9112 §2.2), also mixed with CRLF, found incrementally.
        let lf = b"GET / HTTP/1.1\nHost: a\n\nrest";
        assert_eq!(head_end(lf, 0), Some(lf.len() - 4));
        assert_eq!(head_end(&lf[..23], 0), None);
        assert_eq!(head_end(lf, 23), Some(lf.len() - 4));
        let mixed = b"GET / HTTP/1.1\r\nHost: a\n\r\nrest";
        assert_eq!(head_end(mixed, 0), Some(mixed.len() - 4));
        let mixed = b"GET / HTTP/1.1\nHost: a\r\n\nrest";
        assert_eq!(head_end(mixed, 0), Some(mixed.len() - 4));
        assert_eq!(head_end(b"\n", 0), None);
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: a\r\n\r", 0), None);
        assert_eq!(leading_empty_lines(b"\r\n\r\nGET"), 4);
        assert_eq!(leading_empty_lines(b"\r\nX\r\n"), 2);
        assert_eq!(leading_empty_lines(b"\r"), 0);
    }

    #[test]
    fn accepted_heads_are_passed_on_re_serialized_and_tagged() {
        let h = accepted(
            "POST /t?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Reactor-Gate: 1 1 9.9.9.9:9 -\r\nContent-Length: 12\r\n\r\n",
        );
        assert_eq!(h.framing, BodyFraming::Length(12));
        assert!(!h.last);
        let tag = Tag {
            conn: 7,
            seq: 2,
            peer: "127.0.0.1:5000".parse().unwrap(),
            declared: None,
        };
        assert_eq!(
            String::from_utf8(h.forwarded(None, &tag)).unwrap(),
            "POST /t?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 12\r\nx-reactor-gate: 7 2 127.0.0.1:5000 -\r\n\r\n"
        );
        // A head with bare LF line ends is passed on with CRLF.
        let lf = accepted("GET /a HTTP/1.1\nHost: 127.0.0.1\nX-A: b\n\n");
        assert_eq!(
            String::from_utf8(lf.forwarded(None, &tag)).unwrap(),
            "GET /a HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: b\r\nx-reactor-gate: 7 2 127.0.0.1:5000 -\r\n\r\n"
        );
        let capped = Tag {
            declared: Some(u64::MAX),
            ..tag
        };
        let text = String::from_utf8(h.forwarded(Some(99), &capped)).unwrap();
        assert!(
            text.ends_with(
                "Host: 127.0.0.1\r\nContent-Length: 99\r\nx-reactor-gate: 7 2 127.0.0.1:5000 18446744073709551615\r\n\r\n"
            ),
            "{text:?}"
        );
        for t in [tag, capped] {
            assert_eq!(Tag::parse(&t.value()), Some(t));
        }
        let v6 = Tag {
            peer: "[::1]:80".parse().unwrap(),
            ..tag
        };
        assert_eq!(Tag::parse(&v6.value()), Some(v6));
        for bad in [
            "",
            "1 2",
            "1 2 x -",
            "1 2 127.0.0.1:1 -5",
            "1 2 127.0.0.1:1 - extra",
        ] {
            assert_eq!(Tag::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn keep_alive_follows_tiny_http() {
        let last = |t: &str| accepted(t).last;
        assert!(!last("GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
        assert!(last(
            "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
        ));
        assert!(last(
            "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n\r\n"
        ));
        assert!(last("GET / HTTP/1.0\r\n\r\n"));
        assert!(!last("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"));
        assert_eq!(
            accepted("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n").framing,
            BodyFraming::Chunked
        );
        assert_eq!(
            accepted("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n").framing,
            BodyFraming::None
        );
    }

    #[test]
    fn refused_heads() {
        assert_eq!(status("GET / HTTP/2.0\r\nHost: a\r\n\r\n"), Some(505));
        assert_eq!(status("GET / HTTP/3.0\r\nHost: a\r\n\r\n"), Some(505));
        assert_eq!(status("GET / HTTP/9.9\r\n\r\n"), Some(505));
        assert_eq!(status("GET / HTTP/2\r\n\r\n"), Some(505));
        assert_eq!(status("GET / HTTP/0.9\r\n\r\n"), Some(505));
        assert_eq!(
            status("PRI * HTTP/2.0\r\n\r\n"),
            Some(0),
            "h2c preface: close"
        );
        assert_eq!(status("GET / HTTP/1.1 x\r\n\r\n"), Some(400));
        assert_eq!(status("GET / FTP/1.0\r\n\r\n"), Some(400));
        assert_eq!(status("garbage\r\n\r\n"), Some(400));
        assert_eq!(status("GET\r\n\r\n"), Some(400));
        assert_eq!(status("GET / HTTP/1.1\r\nNo colon here\r\n\r\n"), Some(400));
        assert_eq!(status("G\u{e9}T / HTTP/1.1\r\n\r\n"), Some(400));
        assert_eq!(
            status("GET /\u{e9} HTTP/1.1\r\nHost: a\r\n\r\n"),
            Some(400),
            "non-ASCII target"
        );
        assert_eq!(
            judge_bytes(b"GET / HTTP/1.1\r\nHost: a\r\nX-Bin: \xff\xfe\r\n\r\n"),
            Some(400)
        );
        assert_eq!(
            status("GET / HTTP/1.1\r\nHost: a\r\nExpect: bogus\r\n\r\n"),
            Some(417)
        );
        assert_eq!(
            status(
                "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n"
            ),
            None
        );
        // Framing checks (the full table is tested in framing.rs).
        assert_eq!(
            status(
                "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"
            ),
            Some(400)
        );
        assert_eq!(
            status("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n"),
            Some(501)
        );
        assert_eq!(status("GET / HTTP/1.1\r\n\r\n"), Some(400), "no Host");
        let mut flood = String::from("GET / HTTP/1.1\r\nHost: a\r\n");
        for i in 0..MAX_HEADER_FIELDS {
            flood.push_str(&format!("X-{i}: v\r\n"));
        }
        flood.push_str("\r\n");
        assert_eq!(status(&flood), Some(431));
    }

    fn judge_bytes(bytes: &[u8]) -> Option<u16> {
        match judge(bytes) {
            Verdict::Refuse { status, .. } => Some(status),
            _ => None,
        }
    }

    fn scan_all(body: &[u8], piece: usize) -> Scan {
        let mut s = ChunkedScanner::default();
        let mut offset = 0;
        for part in body.chunks(piece) {
            match s.feed(part) {
                Scan::More => offset += part.len(),
                Scan::Done(n) => return Scan::Done(offset + n),
                Scan::Malformed(n) => return Scan::Malformed(offset + n),
            }
        }
        Scan::More
    }

    #[test]
    fn chunked_bodies_end_where_tiny_http_ends_them() {
        let body = b"5\r\nhello\r\n1;ext=1 \"q\"\r\n!\r\n0\r\n\r\nGET / HTTP/1.1\r\n";
        let end = body.len() - "GET / HTTP/1.1\r\n".len();
        for piece in [1, 2, 3, 7, body.len()] {
            assert_eq!(scan_all(body, piece), Scan::Done(end), "piece {piece}");
        }
        assert_eq!(scan_all(b"A\r\n0123456789", 4), Scan::More);
        assert_eq!(scan_all(b"fFfFfFfFfFfFfFfF\r\n", 5), Scan::More);
        for (bad, at) in [
            (&b"x\r\n"[..], 0),
            (b"\r\n", 0),
            (b" 5\r\n", 0),
            (b"+5\r\n", 0),
            (b"5 \r\n", 1),
            (b"5\rx", 2),
            (b"1\r\nab", 4),
            (b"1\r\na\rx", 5),
            (b"0\r\nX-Trailer: 1\r\n\r\n", 3),
            (b"00000000000000001\r\n", 16),
            (b"1;\x01\r\n", 2),
        ] {
            assert_eq!(scan_all(bad, 1), Scan::Malformed(at), "{bad:?}");
            assert_eq!(scan_all(bad, bad.len()), Scan::Malformed(at), "{bad:?}");
        }
    }
}
