//! The request handed to handlers: method, target, headers, the prefix-route remainder and a
//! body reader with a hard byte limit.
//!
//! Sources: VIEWER.md §6.1 (routing on the path only; GET bodies read and discarded up to
//! 1 MiB, larger → 413), HOST.md §10.4 step 2 (POST bodies up to 1 MiB, `Content-Length` over
//! the limit or a chunked body growing past it → 413; empty body = no data; invalid JSON → 400).

use std::io::Read;
use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::Value;

use super::codec::{DecodeError, Query, percent_decode, split_target};
use super::gate::Conn;
use super::head::{TAG_HEADER, Tag};
use super::response::Response;

/// The default request-body limit: 1 MiB = 1,048,576 bytes (VIEWER.md §6.1, HOST.md §10.1).
pub const DEFAULT_BODY_LIMIT: u64 = 1_048_576;

/// Why a request body could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    /// The declared `Content-Length`, or the bytes of a chunked body, exceed `limit` bytes.
    #[error("request body too large (limit {limit} bytes)")]
    TooLarge {
        /// The configured limit in bytes.
        limit: u64,
    },
    /// The connection failed or the chunked framing was malformed while reading.
    #[error("cannot read request body: {0}")]
    Io(String),
    /// The body is not valid JSON; the text is serde_json's message.
    #[error("invalid JSON body: {0}")]
    InvalidJson(String),
}

impl BodyError {
    /// The response for this error: 413 (HOST.md §10.4, with `connection: close`), 400
    /// `{"error":"cannot read request body: …"}` or 400 `{"error":"invalid JSON body: …"}`.
    pub fn to_response(&self) -> Response {
        match self {
            BodyError::TooLarge { limit } => Response::payload_too_large(*limit),
            other => Response::error(400, &other.to_string()),
        }
    }
}

pub(crate) enum Source {
    Tiny(Box<tiny_http::Request>),
    Memory(std::io::Cursor<Vec<u8>>),
    Taken,
}

enum BodyState {
    Unread,
    Read(Vec<u8>),
    Discarded,
    Failed(BodyError),
}

/// One HTTP request as seen by a handler.
///
/// The target is kept raw (no decoding); helpers decode on demand and report malformed input
/// as [`DecodeError`]. The body is read at most once, lazily, through [`Request::read_body`];
/// for `GET` and `HEAD` the router reads and discards it before the handler runs.
pub struct Request {
    pub(crate) source: Source,
    method: String,
    target: String,
    path_len: usize,
    headers: Vec<(String, String)>,
    remote_addr: Option<SocketAddr>,
    http_version: (u8, u8),
    rest: Option<String>,
    params: Vec<(String, String)>,
    body_limit: u64,
    declared_length: Option<u64>,
    chunked: bool,
    body: BodyState,
    consumed: u64,
    /// The gate's tag (connection id, request number) and, once the dispatcher found it, the
    /// connection.
    tag: Option<Tag>,
    conn: Option<Arc<Conn>>,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("method", &self.method)
            .field("target", &self.target)
            .field("remote_addr", &self.remote_addr)
            .finish_non_exhaustive()
    }
}

impl Request {
    /// A request as tiny_http parsed it from a head the gate passed on: the gate's tag field is
    /// removed from the headers and gives the client's address and, for a `Content-Length` the
    /// gate capped, the declared length.
    pub(crate) fn from_tiny(rq: tiny_http::Request, body_limit: u64) -> Request {
        let method = rq.method().as_str().to_owned();
        let target = rq.url().to_owned();
        let mut tag = None;
        let mut headers = Vec::with_capacity(rq.headers().len());
        for h in rq.headers() {
            let name = h.field.as_str().as_str();
            if name.eq_ignore_ascii_case(TAG_HEADER) {
                tag = Tag::parse(h.value.as_str());
            } else {
                headers.push((name.to_owned(), h.value.as_str().to_owned()));
            }
        }
        let remote_addr = tag.map(|t| t.peer).or_else(|| rq.remote_addr().copied());
        let version = rq.http_version();
        let http_version = (version.0, version.1);
        let declared_length = tag
            .and_then(|t| t.declared)
            .or_else(|| rq.body_length().map(|n| n as u64));
        let chunked = headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("transfer-encoding"));
        if let Some(declared) = tag.and_then(|t| t.declared) {
            for (n, v) in &mut headers {
                if n.eq_ignore_ascii_case("content-length") {
                    *v = declared.to_string();
                }
            }
        }
        let path_len = split_target(&target).0.len();
        Request {
            source: Source::Tiny(Box::new(rq)),
            method,
            target,
            path_len,
            headers,
            remote_addr,
            http_version,
            rest: None,
            params: Vec::new(),
            body_limit,
            declared_length,
            chunked,
            body: BodyState::Unread,
            consumed: 0,
            tag,
            conn: None,
        }
    }

    /// A request that never touched a socket, for unit tests of handlers and routers:
    /// `method` (e.g. `"GET"`), `target` (e.g. `"/api/node/a%2Fb?version=1"`), headers, and a
    /// body (its length is the declared `content-length`). The body limit is
    /// [`DEFAULT_BODY_LIMIT`]; see [`Request::with_body_limit`].
    pub fn synthetic(
        method: &str,
        target: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Request {
        let declared_length = if body.is_empty() {
            None
        } else {
            Some(body.len() as u64)
        };
        Request {
            source: Source::Memory(std::io::Cursor::new(body)),
            method: method.to_owned(),
            target: target.to_owned(),
            path_len: split_target(target).0.len(),
            headers: headers
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect(),
            remote_addr: None,
            http_version: (1, 1),
            rest: None,
            params: Vec::new(),
            body_limit: DEFAULT_BODY_LIMIT,
            declared_length,
            chunked: false,
            body: BodyState::Unread,
            consumed: 0,
            tag: None,
            conn: None,
        }
    }

    /// Replaces the body limit (bytes).
    #[cfg(test)]
    pub(crate) fn with_body_limit(mut self, limit: u64) -> Request {
        self.body_limit = limit;
        self
    }

    /// The method as sent (`GET`, `POST`, `OPTIONS`, or any other token).
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The raw request target: path and query, exactly as sent.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The path: the target's text before the first `?`, not decoded (VIEWER.md §6.1).
    pub fn path(&self) -> &str {
        &self.target[..self.path_len]
    }

    /// The raw query (after the first `?`), if any.
    pub(crate) fn raw_query(&self) -> Option<&str> {
        split_target(&self.target).1
    }

    /// The form-decoded query pairs (`+` is a space). A request without `?` has an empty
    /// query. Errors: a malformed escape or non-UTF-8 text anywhere in the query.
    pub fn query(&self) -> Result<Query, DecodeError> {
        match self.raw_query() {
            Some(q) => Query::parse(q),
            None => Ok(Query::default()),
        }
    }

    /// The first value of query parameter `name` (VIEWER.md §6.4: first occurrence wins).
    pub fn query_param(&self, name: &str) -> Result<Option<String>, DecodeError> {
        Ok(self.query()?.get(name).map(str::to_owned))
    }

    /// For a request matched by a prefix route, the raw text of the path after the prefix
    /// (`/api/node/a%2Fb` on prefix `/api/node/` → `a%2Fb`); `None` otherwise.
    pub fn rest(&self) -> Option<&str> {
        self.rest.as_deref()
    }

    /// [`Request::rest`] strictly percent-decoded (`+` stays `+`); the empty string when there
    /// is no remainder. Errors per [`percent_decode`].
    pub fn rest_decoded(&self) -> Result<String, DecodeError> {
        percent_decode(self.rest.as_deref().unwrap_or(""))
    }

    pub(crate) fn set_rest(&mut self, rest: Option<String>) {
        self.rest = rest;
    }

    /// For a request matched by a pattern route (`/nodes/{node}`), the percent-decoded value
    /// of parameter `name`; `None` for other requests or unknown names.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn set_params(&mut self, params: Vec<(String, String)>) {
        self.params = params;
    }

    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Every value of header `name` (case-insensitive), in order.
    pub(crate) fn header_values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// All headers as sent, `(name, value)`.
    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    /// The peer address (`None` for synthetic requests).
    pub fn remote_addr(&self) -> Option<SocketAddr> {
        self.remote_addr
    }

    /// The HTTP version as `(major, minor)`, e.g. `(1, 1)`.
    pub(crate) fn http_version(&self) -> (u8, u8) {
        self.http_version
    }

    /// The body limit in bytes that [`Request::read_body`] enforces.
    pub fn body_limit(&self) -> u64 {
        self.body_limit
    }

    /// Reads the whole body (once; later calls return the same bytes or error).
    ///
    /// A declared `Content-Length` above the limit fails at once with
    /// [`BodyError::TooLarge`] without reading; a chunked body fails as soon as it grows past
    /// the limit. A body discarded by the router (GET/HEAD) reads as empty.
    pub fn read_body(&mut self) -> Result<&[u8], BodyError> {
        if let BodyState::Unread = self.body {
            self.body = match self.read_limited() {
                Ok(bytes) => BodyState::Read(bytes),
                Err(e) => BodyState::Failed(e),
            };
        }
        match &self.body {
            BodyState::Read(bytes) => Ok(bytes),
            BodyState::Discarded | BodyState::Unread => Ok(&[]),
            BodyState::Failed(e) => Err(e.clone()),
        }
    }

    /// Reads the body as JSON (HOST.md §10.4 step 2): `Ok(None)` for an empty (or
    /// all-whitespace) body, `Ok(Some(value))` for valid JSON, [`BodyError::InvalidJson`]
    /// with serde_json's message otherwise. The `content-type` is not checked.
    pub fn read_json(&mut self) -> Result<Option<Value>, BodyError> {
        let bytes = self.read_body()?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        serde_json::from_slice(bytes)
            .map(Some)
            .map_err(|e| BodyError::InvalidJson(e.to_string()))
    }

    /// Reads and drops the body (VIEWER.md §6.1: GET bodies are read and discarded up to the
    /// limit). Errors as [`Request::read_body`].
    pub(crate) fn discard_body(&mut self) -> Result<(), BodyError> {
        self.read_body()?;
        if let BodyState::Read(_) = self.body {
            self.body = BodyState::Discarded;
        }
        Ok(())
    }

    /// Whether reading the body failed on the connection or its chunked framing (the rest of
    /// the connection cannot be trusted to start at a request boundary).
    pub(crate) fn body_failed(&self) -> bool {
        matches!(self.body, BodyState::Failed(BodyError::Io(_)))
            || matches!(
                (&self.body, self.declared_length),
                (BodyState::Failed(BodyError::TooLarge { .. }), None)
            )
    }

    /// Bytes of a declared body that were never read (0 for chunked or empty bodies).
    pub(crate) fn unread_declared(&self) -> u64 {
        self.declared_length
            .unwrap_or(0)
            .saturating_sub(self.consumed)
    }

    /// Whether a chunked body was not read to its end (unread, or refused as too large): its
    /// rest would be taken for the next request, so the connection must close.
    pub(crate) fn chunked_unfinished(&self) -> bool {
        self.chunked
            && matches!(
                self.body,
                BodyState::Unread | BodyState::Failed(BodyError::TooLarge { .. })
            )
    }

    /// The gate connection id from the tag, if any.
    pub(crate) fn gate_conn_id(&self) -> Option<u64> {
        self.tag.map(|t| t.conn)
    }

    /// Attaches the gate connection this request came from.
    pub(crate) fn attach(&mut self, conn: Option<Arc<Conn>>) {
        self.conn = conn;
    }

    /// The gate connection this request came from.
    pub(crate) fn conn(&self) -> Option<&Arc<Conn>> {
        self.conn.as_ref()
    }

    /// Reads what is left of a chunked body that was not read to its end, after the connection's
    /// input was closed (so the rest is only what the gate passed on before, at most
    /// [`super::MAX_DRAIN_BYTES`] is read). tiny_http would otherwise parse it as a request
    /// head and answer it. Sends `100 Continue` first if the client asked for it.
    pub(crate) fn drain_chunked_rest(&mut self) {
        if !self.chunked_unfinished() || self.conn.is_none() {
            return;
        }
        let Source::Tiny(rq) = &mut self.source else {
            return;
        };
        let reader = rq.as_reader();
        let mut chunk = [0u8; 8192];
        let mut total = 0u64;
        while total < super::MAX_DRAIN_BYTES {
            match reader.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => total += n as u64,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    }

    /// Whether the body ended before its end: fewer bytes than the declared `Content-Length`,
    /// or a chunked body the gate could not pass on to its last chunk (tiny_http reports either
    /// as a plain end of input).
    fn ended_early(&self) -> bool {
        let short = self.declared_length.is_some_and(|d| self.consumed < d);
        let cut = match (&self.conn, self.tag) {
            (Some(conn), Some(tag)) => conn.body_cut(tag.seq),
            _ => false,
        };
        short || cut
    }

    fn read_limited(&mut self) -> Result<Vec<u8>, BodyError> {
        let limit = self.body_limit;
        if let Some(declared) = self.declared_length
            && declared > limit
        {
            return Err(BodyError::TooLarge { limit });
        }
        let reader: &mut dyn Read = match &mut self.source {
            Source::Tiny(rq) => rq.as_reader(),
            Source::Memory(cursor) => cursor,
            Source::Taken => return Ok(Vec::new()),
        };
        let mut out = Vec::new();
        let mut chunk = [0u8; 8192];
        loop {
            let n = match reader.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(BodyError::Io(e.to_string())),
            };
            self.consumed = self.consumed.saturating_add(n as u64);
            if out.len() as u64 + n as u64 > limit {
                return Err(BodyError::TooLarge { limit });
            }
            out.extend_from_slice(&chunk[..n]);
        }
        if self.ended_early() {
            return Err(BodyError::Io(
                "the connection ended before the end of the body".to_owned(),
            ));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_query_and_headers() {
        let rq = Request::synthetic(
            "GET",
            "/api/node/a%2Fb?version=v+1&version=2",
            &[("Host", "localhost:1"), ("X-A", "1"), ("x-a", "2")],
            Vec::new(),
        );
        assert_eq!(rq.method(), "GET");
        assert_eq!(rq.path(), "/api/node/a%2Fb");
        assert_eq!(rq.raw_query(), Some("version=v+1&version=2"));
        assert_eq!(rq.query_param("version").unwrap().as_deref(), Some("v 1"));
        assert_eq!(rq.query_param("nope").unwrap(), None);
        assert_eq!(rq.header("host"), Some("localhost:1"));
        assert_eq!(rq.header_values("X-A").collect::<Vec<_>>(), vec!["1", "2"]);
        assert_eq!(rq.rest(), None);
        assert_eq!(rq.rest_decoded().unwrap(), "");
    }

    #[test]
    fn malformed_query_is_an_error() {
        let rq = Request::synthetic("GET", "/x?a=%zz", &[], Vec::new());
        assert!(rq.query().is_err());
        assert!(rq.query_param("a").is_err());
    }

    #[test]
    fn body_within_limit_is_read_once() {
        let mut rq = Request::synthetic("POST", "/t", &[], b"{\"a\":1}".to_vec());
        assert_eq!(rq.read_body().unwrap(), b"{\"a\":1}");
        assert_eq!(rq.read_body().unwrap(), b"{\"a\":1}");
        assert_eq!(rq.read_json().unwrap(), Some(serde_json::json!({"a": 1})));
        assert_eq!(rq.unread_declared(), 0);
    }

    #[test]
    fn body_over_limit_is_too_large_without_reading() {
        let mut rq = Request::synthetic("POST", "/t", &[], vec![b'x'; 11]).with_body_limit(10);
        assert_eq!(rq.read_body(), Err(BodyError::TooLarge { limit: 10 }));
        assert_eq!(rq.unread_declared(), 11);
        let resp = rq.read_body().unwrap_err().to_response();
        assert_eq!(resp.status(), 413);
        let mut ok = Request::synthetic("POST", "/t", &[], vec![b'x'; 10]).with_body_limit(10);
        assert_eq!(ok.read_body().unwrap().len(), 10);
    }

    #[test]
    fn json_body_rules() {
        let mut empty = Request::synthetic("POST", "/t", &[], Vec::new());
        assert_eq!(empty.read_json().unwrap(), None);
        let mut blank = Request::synthetic("POST", "/t", &[], b" \n".to_vec());
        assert_eq!(blank.read_json().unwrap(), None);
        let mut bad = Request::synthetic("POST", "/t", &[], b"{nope".to_vec());
        let err = bad.read_json().unwrap_err();
        assert!(matches!(err, BodyError::InvalidJson(_)));
        let resp = err.to_response();
        assert_eq!(resp.status(), 400);
        let body = std::str::from_utf8(resp.body_bytes().unwrap()).unwrap();
        assert!(
            body.starts_with(r#"{"error":"invalid JSON body: "#),
            "{body}"
        );
    }

    #[test]
    fn discard_body_frees_and_reads_as_empty() {
        let mut rq = Request::synthetic("GET", "/", &[], b"junk".to_vec());
        rq.discard_body().unwrap();
        assert_eq!(rq.read_body().unwrap(), b"");
    }
}
