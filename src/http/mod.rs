//! (room `http`; see ARCHITECTURE.md) A small, domain-free HTTP layer on `tiny_http`, shared by
//! the viewer's server (VIEWER.md §6) and the host daemon (HOST.md §10).
//!
//! - [`Server`] binds (typed [`BindError`]s), dispatches requests to a bounded set of worker
//!   threads (more than [`ServerConfig::max_in_flight`] at once → 503 `{"error":"busy"}`),
//!   applies the loopback `Host` check, adds `x-content-type-options: nosniff` and
//!   `cache-control`, answers matching `If-None-Match` with 304, streams server-sent events and
//!   shuts down gracefully within a bounded time.
//! - A gate in front of tiny_http accepts every connection itself (pausing with backoff after
//!   `EMFILE`, so the listener never dies), sets a receive/send timeout on it
//!   ([`DEFAULT_IO_TIMEOUT`], 30 s), reads every request head with a size bound
//!   ([`MAX_HEAD_BYTES`], 64 KiB → 431) and refuses anything but well-formed HTTP/1.0 and 1.1
//!   (505 for `HTTP/2.0`), heads with bad RFC 9112 framing (400/501) and unknown `Expect`s
//!   (417), closing the connection after every refusal, so that nothing after a refused head is
//!   ever handled. tiny_http listens on a private socket only the gate reaches. The soft
//!   open-file limit is raised at start.
//! - [`Router`] maps exact paths, pattern routes with path parameters (`/nodes/{node}`,
//!   decoded segments) and prefixes (with the remainder captured) to handlers, answers 405 with
//!   `allow` (one policy for every route), checks an optional bearer token (with public routes)
//!   and reads-and-discards GET bodies.
//! - [`Request`] / [`Response`] carry the target, headers, a size-limited body and JSON helpers.
//! - [`SseHub`] broadcasts [`SseEvent`]s to every open event stream.
//! - [`StaticAssets`] serves embedded files with VIEWER.md §6.7 path normalization.
//! - [`install_stop_signals`] turns SIGINT/SIGTERM into a graceful stop, and a second signal
//!   into an immediate exit.
//!
//! A minimal server:
//! ```no_run
//! use reactor::http::{Response, Router, Server, ServerConfig, SseConfig, SseEvent, SseHub};
//! let hub = SseHub::new(SseConfig::default());
//! let events = hub.clone();
//! let router = Router::new()
//!     .only_methods(&["GET"])
//!     .get("/api/state", |_rq| Response::json(200, &serde_json::json!({"frames": 0})).with_etag())
//!     .get("/events", move |_rq| events.respond(&[SseEvent::comment("connected"), SseEvent::retry(3000)]));
//! let server = Server::start(ServerConfig { port: 0, ..ServerConfig::default() }, router)?;
//! println!("open http://{}/", server.local_addr());
//! hub.broadcast(&SseEvent::named("reset", r#"{"reason":"x","frames":0}"#));
//! let report = server.close(); // within 1 s, even with clients on /events
//! assert!(report.elapsed.as_secs() < 2);
//! # Ok::<(), reactor::http::BindError>(())
//! ```

mod assets;
mod codec;
mod conn;
mod dispatch;
mod framing;
mod gate;
mod head;
mod instances;
mod internal;
mod policy;
mod request;
mod respond;
mod response;
mod router;
mod server;
mod signals;
mod sse;

pub use assets::{StaticAssets, content_type_for, normalize_asset_path};
pub use codec::{
    DecodeError, Query, decode_path_segments, form_decode, percent_decode, split_target,
};
pub use conn::{DEFAULT_IO_TIMEOUT, IO_TIMEOUT_ENV, io_timeout_from_env, raise_open_file_limit};
pub use head::{MAX_HEAD_BYTES, MAX_HEADER_FIELDS};
pub use policy::{AuthExemption, BearerAuth, HostAllowList, is_loopback_host};
pub use request::{BodyError, DEFAULT_BODY_LIMIT, Request};
pub use response::{
    JSON_CONTENT_TYPE, Response, TEXT_CONTENT_TYPE, etag_for, if_none_match_matches,
};
pub use router::{Handler, Router};
pub use server::{BindError, MAX_DRAIN_BYTES, Server, ServerConfig, ServerHandle, ShutdownReport};
pub use signals::{SecondSignal, SignalError, StopSignals, install_stop_signals};
pub use sse::{SseConfig, SseError, SseEvent, SseHub, SseSubscription};
