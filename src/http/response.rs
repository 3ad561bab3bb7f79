//! Responses built by handlers: status, headers and either a byte body or an SSE stream.
//!
//! Sources: VIEWER.md §6.1 (JSON content type, compact JSON, `{"error": …}` bodies, ETag form),
//! HOST.md §10.1 and §10.5 (error bodies, 405 `allow`, 413 with `connection: close`).

use serde::Serialize;
use serde_json::{Map, Value};

use super::sse::SseSubscription;

/// `content-type` of every JSON response (VIEWER.md §6.1, HOST.md §10.1).
pub const JSON_CONTENT_TYPE: &str = "application/json; charset=utf-8";
/// `content-type` of plain-text responses such as the viewer's `Not found`.
pub const TEXT_CONTENT_TYPE: &str = "text/plain; charset=utf-8";

/// The body of a [`Response`].
pub(crate) enum Body {
    /// A complete body sent with a `content-length`.
    Bytes(Vec<u8>),
    /// A server-sent-events stream: the server writes the head and `initial` events, then
    /// forwards the subscription's events until the client leaves or the server stops
    /// (VIEWER.md §6.6).
    Sse {
        /// The hub registration that receives broadcast events.
        subscription: SseSubscription,
        /// Bytes written right after the head, already framed (see [`super::SseEvent`]).
        initial: Vec<u8>,
    },
}

/// An HTTP response produced by a handler.
///
/// Header names are stored lowercase; [`Response::with_header`] replaces an existing header of
/// the same name. Headers whose name or value cannot be sent (non-ASCII, control characters)
/// are silently dropped when the response is written — never a panic.
pub struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Body,
}

impl std::fmt::Debug for Response {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let body = match &self.body {
            Body::Bytes(b) => format!("{} bytes", b.len()),
            Body::Sse { .. } => "event stream".to_owned(),
        };
        f.debug_struct("Response")
            .field("status", &self.status)
            .field("headers", &self.headers)
            .field("body", &body)
            .finish()
    }
}

/// The strong ETag of a body: `"b3-<first 32 hex digits of BLAKE3(body)>"`, quotes included
/// (VIEWER.md §6.1, HOST.md §10.1).
pub fn etag_for(body: &[u8]) -> String {
    let hex = blake3::hash(body).to_hex();
    format!("\"b3-{}\"", &hex.as_str()[..32])
}

/// Whether an `If-None-Match` header value matches `etag` (weak comparison, RFC 9110
/// §13.1.2): `*` matches anything; otherwise any listed tag equal to `etag` once a `W/`
/// prefix is removed from either side.
pub fn if_none_match_matches(header: &str, etag: &str) -> bool {
    let etag = etag.strip_prefix("W/").unwrap_or(etag);
    header.split(',').map(str::trim).any(|candidate| {
        candidate == "*" || candidate.strip_prefix("W/").unwrap_or(candidate) == etag
    })
}

impl Response {
    /// A response with `status`, no headers and an empty body.
    pub fn new(status: u16) -> Response {
        Response {
            status,
            headers: Vec::new(),
            body: Body::Bytes(Vec::new()),
        }
    }

    /// A `200`-style response with the given content type and body bytes.
    pub fn bytes(status: u16, content_type: &str, body: Vec<u8>) -> Response {
        Response::new(status)
            .with_header("content-type", content_type)
            .with_body(body)
    }

    /// A JSON response: `value` serialized compactly, `content-type:
    /// application/json; charset=utf-8`. A value that cannot be serialized (a map with
    /// non-string keys) yields a 500 `{"error":"internal error: response is not serializable"}`.
    pub fn json<T: Serialize + ?Sized>(status: u16, value: &T) -> Response {
        match serde_json::to_vec(value) {
            Ok(body) => Response::bytes(status, JSON_CONTENT_TYPE, body),
            Err(_) => Response::error(500, "internal error: response is not serializable"),
        }
    }

    /// A JSON response from bytes the caller already serialized (no re-encoding).
    pub(crate) fn json_bytes(status: u16, body: Vec<u8>) -> Response {
        Response::bytes(status, JSON_CONTENT_TYPE, body)
    }

    /// A JSON error body `{"error": message}`.
    pub fn error(status: u16, message: &str) -> Response {
        Response::error_with(status, message, std::iter::empty::<(&str, Value)>())
    }

    /// A JSON error body `{"error": message, <extra members in order>}`, e.g.
    /// `{"error":"no such endpoint","path":"/api/x"}` (VIEWER.md §6.2). An extra member named
    /// `error` is ignored.
    pub fn error_with<'a, I>(status: u16, message: &str, extra: I) -> Response
    where
        I: IntoIterator<Item = (&'a str, Value)>,
    {
        let mut map = Map::new();
        map.insert("error".to_owned(), Value::String(message.to_owned()));
        for (key, value) in extra {
            if key != "error" {
                map.insert(key.to_owned(), value);
            }
        }
        Response::json(status, &Value::Object(map))
    }

    /// A plain-text response (`text/plain; charset=utf-8`).
    pub fn text(status: u16, body: &str) -> Response {
        Response::bytes(status, TEXT_CONTENT_TYPE, body.as_bytes().to_vec())
    }

    /// The viewer's static 404: `text/plain` `Not found` (VIEWER.md §6.2, §6.7).
    pub fn not_found_text() -> Response {
        Response::text(404, "Not found")
    }

    /// 405 with `allow: <methods joined by ", ">`. Body `{"error":"method <M> not allowed"}`,
    /// or `{"error":"method <M> not allowed on <path>"}` when `on_path` is given
    /// (VIEWER.md §6.1, HOST.md §10.5).
    pub(crate) fn method_not_allowed(
        method: &str,
        allow: &[&str],
        on_path: Option<&str>,
    ) -> Response {
        let message = match on_path {
            Some(path) => format!("method {method} not allowed on {path}"),
            None => format!("method {method} not allowed"),
        };
        Response::error(405, &message).with_header("allow", &allow.join(", "))
    }

    /// 413 `{"error":"request body too large (limit <limit> bytes)"}` with `connection: close`
    /// (HOST.md §10.4 step 2).
    pub(crate) fn payload_too_large(limit: u64) -> Response {
        Response::error(
            413,
            &format!("request body too large (limit {limit} bytes)"),
        )
        .with_header("connection", "close")
    }

    /// 503 `{"error":"busy"}`: more requests in flight than allowed (VIEWER.md §6.1).
    pub fn busy() -> Response {
        Response::error(503, "busy")
    }

    /// A server-sent-events response (VIEWER.md §6.6). `initial` events are written right after
    /// the head (for example `: connected`, `retry: 3000`, catch-up frames), then every event
    /// broadcast to the subscription's hub. See [`super::SseHub`].
    pub(crate) fn sse(subscription: SseSubscription, initial: &[super::SseEvent]) -> Response {
        let mut bytes = Vec::new();
        for event in initial {
            bytes.extend_from_slice(event.as_str().as_bytes());
        }
        Response {
            status: 200,
            headers: Vec::new(),
            body: Body::Sse {
                subscription,
                initial: bytes,
            },
        }
    }

    /// Sets (or replaces) a header; the name is lowercased.
    pub fn with_header(mut self, name: &str, value: &str) -> Response {
        self.set_header(name, value);
        self
    }

    /// Sets (or replaces) a header in place; the name is lowercased.
    pub(crate) fn set_header(&mut self, name: &str, value: &str) {
        let name = name.to_ascii_lowercase();
        self.headers.retain(|(n, _)| *n != name);
        self.headers.push((name, value.to_owned()));
    }

    /// Replaces the body with bytes (an SSE body is dropped, closing its subscription).
    pub(crate) fn with_body(mut self, body: Vec<u8>) -> Response {
        self.body = Body::Bytes(body);
        self
    }

    /// Adds `etag: "b3-…"` computed from the byte body (no effect on SSE bodies). The server
    /// answers a request whose `If-None-Match` matches it with 304 and no body.
    pub fn with_etag(mut self) -> Response {
        if let Body::Bytes(bytes) = &self.body {
            let tag = etag_for(bytes);
            self.set_header("etag", &tag);
        }
        self
    }

    /// The status code.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The value of header `name` (case-insensitive), if set.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// All headers as `(lowercase name, value)` pairs, in insertion order.
    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    /// The byte body, or `None` for an SSE stream.
    pub fn body_bytes(&self) -> Option<&[u8]> {
        match &self.body {
            Body::Bytes(b) => Some(b),
            Body::Sse { .. } => None,
        }
    }

    /// Whether this response is a server-sent-events stream.
    pub(crate) fn is_event_stream(&self) -> bool {
        matches!(self.body, Body::Sse { .. })
    }

    /// Splits the response into its parts (used by the server when writing it).
    pub(crate) fn into_parts(self) -> (u16, Vec<(String, String)>, Body) {
        (self.status, self.headers, self.body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etag_has_the_b3_form() {
        let tag = etag_for(b"hello");
        assert_eq!(tag.len(), 2 + 3 + 32);
        assert!(tag.starts_with("\"b3-"));
        assert!(tag.ends_with('"'));
        let hex = blake3::hash(b"hello").to_hex();
        assert_eq!(&tag[4..36], &hex.as_str()[..32]);
        assert_ne!(etag_for(b"hello"), etag_for(b"hello!"));
    }

    #[test]
    fn if_none_match_handles_lists_weak_tags_and_star() {
        let tag = "\"b3-abc\"";
        assert!(if_none_match_matches("\"b3-abc\"", tag));
        assert!(if_none_match_matches("\"x\", W/\"b3-abc\"", tag));
        assert!(if_none_match_matches("*", tag));
        assert!(!if_none_match_matches("\"b3-abd\"", tag));
        assert!(!if_none_match_matches("b3-abc", tag));
        assert!(!if_none_match_matches("", tag));
    }

    #[test]
    fn json_error_bodies_keep_member_order() {
        let r = Response::error_with(
            404,
            "no such endpoint",
            [
                ("path", Value::from("/api/x")),
                ("error", Value::from("ignored")),
            ],
        );
        assert_eq!(r.status(), 404);
        assert_eq!(r.header("Content-Type"), Some(JSON_CONTENT_TYPE));
        assert_eq!(
            std::str::from_utf8(r.body_bytes().unwrap()).unwrap(),
            r#"{"error":"no such endpoint","path":"/api/x"}"#
        );
    }

    #[test]
    fn method_not_allowed_sets_allow_and_message() {
        let r = Response::method_not_allowed("DELETE", &["GET", "POST"], Some("/trigger/x"));
        assert_eq!(r.status(), 405);
        assert_eq!(r.header("allow"), Some("GET, POST"));
        assert_eq!(
            r.body_bytes().unwrap(),
            br#"{"error":"method DELETE not allowed on /trigger/x"}"#
        );
        let r = Response::method_not_allowed("HE\"AD", &["GET"], None);
        assert_eq!(
            r.body_bytes().unwrap(),
            br#"{"error":"method HE\"AD not allowed"}"#
        );
    }

    #[test]
    fn with_header_replaces_case_insensitively() {
        let r = Response::text(200, "x")
            .with_header("Cache-Control", "max-age=1")
            .with_header("cache-control", "no-store");
        assert_eq!(r.header("CACHE-CONTROL"), Some("no-store"));
        assert_eq!(
            r.headers()
                .iter()
                .filter(|(n, _)| n == "cache-control")
                .count(),
            1
        );
    }

    #[test]
    fn payload_too_large_matches_host_text() {
        let r = Response::payload_too_large(1_048_576);
        assert_eq!(r.status(), 413);
        assert_eq!(r.header("connection"), Some("close"));
        assert_eq!(
            r.body_bytes().unwrap(),
            br#"{"error":"request body too large (limit 1048576 bytes)"}"#
        );
    }

    #[test]
    fn with_etag_uses_body_hash() {
        let r = Response::json(200, &serde_json::json!({"a": 1})).with_etag();
        assert_eq!(r.header("etag"), Some(etag_for(br#"{"a":1}"#).as_str()));
    }
}
