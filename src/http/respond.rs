//! Writing a response: standard headers, ETag/304, the SSE hand-off, and closing a connection
//! after a response that requires it.
//!
//! Sources: VIEWER.md §6.1 (`nosniff`, `cache-control: no-cache`, ETag/304), §6.6 (event
//! streams), HOST.md §10.1, ARCHITECTURE.md (tiny_http: stream SSE through the request's
//! writer), issue 7 §1 (413 with `connection: close` at once; nothing after a refusal is
//! handled).
//!
//! Every response that carries `connection: close` (413s, a body that could not be read, a
//! declared body over the body limit left unread, a chunked body not read to its end) closes its
//! connection: the gate stops passing on the client's input (so tiny_http reads no further
//! request), the response is written through the request's writer (after any earlier response
//! on the connection) and the gate then ends the client's output with a lingering close
//! (`gate.rs`). Requests tiny_http still parses from such a connection are never routed.
//!
//! tiny_http also drops any `connection` header an application sets; responses carrying one
//! are written by hand through the request's writer instead.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::dispatch::GaugeGuard;
use super::request::{Request, Source};
use super::response::{Body, Response, if_none_match_matches};
use super::server::Shared;
use super::sse::{SseSubscription, pump};

fn header_is_sendable(name: &str, value: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
        && value
            .bytes()
            .all(|b| b == b'\t' || (0x20..0x7f).contains(&b))
}

fn tiny_headers(headers: &[(String, String)]) -> Vec<tiny_http::Header> {
    headers
        .iter()
        .filter(|(n, v)| header_is_sendable(n, v))
        .filter_map(|(n, v)| tiny_http::Header::from_bytes(n.as_bytes(), v.as_bytes()).ok())
        .collect()
}

fn set_if_absent(headers: &mut Vec<(String, String)>, name: &str, value: &str) {
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
        headers.push((name.to_owned(), value.to_owned()));
    }
}

fn force(headers: &mut Vec<(String, String)>, name: &str, value: &str) {
    headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
    headers.push((name.to_owned(), value.to_owned()));
}

fn take_tiny(request: &mut Request) -> Option<tiny_http::Request> {
    match std::mem::replace(&mut request.source, Source::Taken) {
        Source::Tiny(rq) => Some(*rq),
        Source::Memory(_) | Source::Taken => None,
    }
}

/// Writes `response` for `request`: standard headers, ETag/304, SSE hand-off, and closing the
/// connection when the response says `connection: close` or the request's body makes the rest of
/// the connection unusable (see the module docs).
pub(super) fn send(shared: &Arc<Shared>, mut request: Request, response: Response) {
    let close = response
        .header("connection")
        .is_some_and(|v| v.eq_ignore_ascii_case("close"))
        || request.unread_declared() > shared.body_limit
        || request.body_failed()
        || request.chunked_unfinished();
    let response = if close && response.is_event_stream() {
        Response::payload_too_large(shared.body_limit)
    } else {
        response
    };
    if !matches!(request.source, Source::Tiny(_)) {
        return;
    }
    let is_head = request.method() == "HEAD";
    let version = request.http_version();
    let if_none_match: Vec<String> = request
        .header_values("if-none-match")
        .map(str::to_owned)
        .collect();
    let (mut status, mut headers, body) = response.into_parts();
    force(&mut headers, "x-content-type-options", "nosniff");
    if let Some(cc) = &shared.cache_control {
        set_if_absent(&mut headers, "cache-control", cc);
    }
    let bytes = match body {
        Body::Bytes(bytes) => bytes,
        Body::Sse {
            subscription,
            initial,
        } => {
            if shared.shutting_down.load(Ordering::SeqCst) {
                status = 503;
                force(&mut headers, "content-type", super::JSON_CONTENT_TYPE);
                br#"{"error":"shutting down"}"#.to_vec()
            } else if is_head {
                for (n, v) in sse_headers() {
                    force(&mut headers, n, v);
                }
                Vec::new()
            } else {
                let gone = request
                    .conn()
                    .map_or_else(crossbeam_channel::never, |c| c.gone());
                if let Some(rq) = take_tiny(&mut request) {
                    let stream = Stream {
                        version,
                        status,
                        subscription,
                        initial,
                        gone,
                    };
                    start_stream(shared, rq, headers, stream);
                }
                return;
            }
        }
    };
    let not_modified = (200..300).contains(&status)
        && !if_none_match.is_empty()
        && headers
            .iter()
            .find(|(n, _)| n == "etag")
            .is_some_and(|(_, tag)| if_none_match.iter().any(|h| if_none_match_matches(h, tag)));
    if not_modified {
        // 304 without a body; the content-length is the one a 200 would have had.
        status = 304;
        headers.retain(|(n, _)| n != "content-type");
    }
    if close {
        force(&mut headers, "connection", "close");
    }
    let raw = RawResponse {
        version,
        status,
        headers: &headers,
        body: &bytes,
        omit_body: is_head || not_modified,
    };
    if close {
        close_after(shared, request, &raw);
        return;
    }
    let Some(rq) = take_tiny(&mut request) else {
        return;
    };
    if headers.iter().any(|(n, _)| n == "connection") {
        // tiny_http drops a `connection` header set by the application; write such responses
        // ourselves.
        drop(raw.write(rq.into_writer()));
        return;
    }
    respond_tiny(rq, status, &headers, bytes, not_modified);
}

/// Writes a response without a `connection` header through tiny_http.
fn respond_tiny(
    rq: tiny_http::Request,
    status: u16,
    headers: &[(String, String)],
    bytes: Vec<u8>,
    not_modified: bool,
) {
    let tiny_response = if not_modified {
        tiny_http::Response::new(
            tiny_http::StatusCode(304),
            tiny_headers(headers),
            std::io::Cursor::new(Vec::new()),
            Some(bytes.len()),
            None,
        )
        .with_chunked_threshold(usize::MAX)
    } else {
        let len = bytes.len();
        tiny_http::Response::new(
            tiny_http::StatusCode(status),
            tiny_headers(headers),
            std::io::Cursor::new(bytes),
            Some(len),
            None,
        )
    };
    let _ = rq.respond(tiny_response);
}

/// A response head written by hand: status line, the sendable headers, `content-length`.
pub(super) fn raw_head(
    version: (u8, u8),
    status: u16,
    headers: &[(String, String)],
    len: usize,
) -> String {
    let reason = tiny_http::StatusCode(status).default_reason_phrase();
    let minor = if version >= (1, 1) { 1 } else { 0 };
    let mut head = format!("HTTP/1.{minor} {status} {reason}\r\n");
    for (n, v) in headers
        .iter()
        .filter(|(n, v)| header_is_sendable(n, v) && n != "content-length")
    {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str(&format!("content-length: {len}\r\n\r\n"));
    head
}

/// A complete response written by hand.
struct RawResponse<'a> {
    version: (u8, u8),
    status: u16,
    headers: &'a [(String, String)],
    body: &'a [u8],
    omit_body: bool,
}

impl RawResponse<'_> {
    /// Writes head and body to `out` and flushes; returns the writer, or `None` when the
    /// connection failed.
    fn write(&self, mut out: Box<dyn Write + Send>) -> Option<Box<dyn Write + Send>> {
        let head = raw_head(self.version, self.status, self.headers, self.body.len());
        out.write_all(head.as_bytes())
            .and_then(|()| {
                if self.omit_body {
                    Ok(())
                } else {
                    out.write_all(self.body)
                }
            })
            .and_then(|()| out.flush())
            .ok()
            .map(|()| out)
    }
}

/// Writes the response and closes the connection; nothing after this request's head is ever
/// parsed as another request: the gate stops passing on input first (tiny_http then reads the
/// end of input after what it was already given), the unread rest of a chunked body is read
/// (so tiny_http cannot take it for a request head), and requests tiny_http still parses are
/// discarded by the dispatcher. The response goes out through the request's writer, after any
/// earlier response on the connection; the gate ends the client's output after it.
fn close_after(shared: &Arc<Shared>, mut request: Request, raw: &RawResponse<'_>) {
    shared.gate.closed.fetch_add(1, Ordering::Relaxed);
    if let Some(conn) = request.conn() {
        conn.close_input();
    }
    request.drain_chunked_rest();
    if let Some(rq) = take_tiny(&mut request) {
        // `into_writer` drops the body reader: tiny_http discards what is left of a declared
        // body, up to the end of input.
        drop(raw.write(rq.into_writer()));
    }
}

fn sse_headers() -> [(&'static str, &'static str); 4] {
    [
        ("content-type", "text/event-stream"),
        ("cache-control", "no-cache"),
        ("connection", "keep-alive"),
        ("x-accel-buffering", "no"),
    ]
}

/// An event stream about to start: its status line parts, hub registration, first events, and
/// the signal that its connection was lost.
struct Stream {
    version: (u8, u8),
    status: u16,
    subscription: SseSubscription,
    initial: Vec<u8>,
    gone: crossbeam_channel::Receiver<()>,
}

fn start_stream(
    shared: &Arc<Shared>,
    rq: tiny_http::Request,
    mut headers: Vec<(String, String)>,
    stream: Stream,
) {
    let Stream {
        version,
        status,
        subscription,
        initial,
        gone,
    } = stream;
    for (n, v) in sse_headers() {
        force(&mut headers, n, v);
    }
    headers.retain(|(n, _)| n != "content-length" && n != "transfer-encoding");
    let chunked = version >= (1, 1);
    if chunked {
        headers.push(("transfer-encoding".into(), "chunked".into()));
    }
    let reason = tiny_http::StatusCode(status).default_reason_phrase();
    let (major, minor) = if version >= (1, 1) { (1, 1) } else { (1, 0) };
    let mut head = format!("HTTP/{major}.{minor} {status} {reason}\r\n");
    for (n, v) in headers.iter().filter(|(n, v)| header_is_sendable(n, v)) {
        head.push_str(n);
        head.push_str(": ");
        head.push_str(v);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    let writer = rq.into_writer();
    shared.streams.inc();
    let guard = GaugeGuard {
        shared: Arc::clone(shared),
        stream: true,
    };
    let stop = shared.stop.clone();
    let spawned = std::thread::Builder::new()
        .name("http-sse".to_owned())
        .spawn(move || {
            let _guard = guard;
            pump(
                writer,
                head.as_bytes(),
                &initial,
                subscription,
                (&stop, &gone),
                chunked,
            );
        });
    // On spawn failure the closure (writer, subscription, guard) is dropped: the stream closes
    // and the gauge goes back down.
    drop(spawned);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sendable_headers() {
        assert!(header_is_sendable("etag", "\"b3-00\""));
        assert!(header_is_sendable("x-a", "tab\there"));
        assert!(!header_is_sendable("bad name", "x"));
        assert!(!header_is_sendable("", "x"));
        assert!(!header_is_sendable("x", "a\r\nset-cookie: y"));
        assert!(!header_is_sendable("x", "é"));
    }

    #[test]
    fn raw_heads_carry_the_length_and_drop_unsendable_headers() {
        let headers = vec![
            ("connection".to_owned(), "close".to_owned()),
            ("content-length".to_owned(), "999".to_owned()),
            ("x-bad".to_owned(), "a\r\nb".to_owned()),
        ];
        assert_eq!(
            raw_head((1, 0), 413, &headers, 12),
            "HTTP/1.0 413 Payload Too Large\r\nconnection: close\r\ncontent-length: 12\r\n\r\n"
        );
    }
}
