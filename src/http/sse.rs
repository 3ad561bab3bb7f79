//! Server-sent events: event framing, a broadcast hub, and the per-stream writer loop.
//!
//! Source: VIEWER.md §6.6 — headers `content-type: text/event-stream`, `cache-control: no-cache`,
//! `connection: keep-alive`, `x-accel-buffering: no`; every event flushed as soon as it is
//! written; a `: heartbeat` comment every 15 s; at most 64 streams (more → 503
//! `{"error":"too many event streams"}`); a disconnected client is dropped silently; on shutdown
//! every stream gets `event: shutdown` / `data: {}` and is closed (VIEWER.md §2.10 step 5).
//!
//! Usage: create one [`SseHub`], give clones to the handler of the events route and to whatever
//! produces events. The handler answers with [`SseHub::respond`] (or [`SseHub::subscribe`] +
//! [`Response::sse`] when it must compute catch-up events after subscribing, so that nothing
//! broadcast in between is lost), and producers call [`SseHub::broadcast`].

use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, select, unbounded};

use super::response::Response;

/// One framed SSE message (an event, a comment or a `retry:` line), ready to write.
///
/// Cloning is cheap (shared text). Line breaks inside `event` and `id` are replaced by spaces;
/// `data` is split on line breaks into several `data:` lines, as the SSE format requires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseEvent {
    text: Arc<str>,
}

fn one_line(s: &str) -> String {
    s.replace(['\r', '\n'], " ")
}

fn lines(s: &str) -> impl Iterator<Item = &str> {
    s.split("\r\n").flat_map(|l| l.split(['\r', '\n']))
}

impl SseEvent {
    /// An event with optional `id:` and `event:` lines and a `data:` payload, terminated by a
    /// blank line; lines appear in the order `id`, `event`, `data` (VIEWER.md §6.6, e.g.
    /// `id: 3` / `event: frame` / `data: {…}`).
    pub fn new(event: Option<&str>, id: Option<&str>, data: &str) -> SseEvent {
        let mut text = String::with_capacity(data.len() + 32);
        if let Some(id) = id {
            text.push_str("id: ");
            text.push_str(&one_line(id));
            text.push('\n');
        }
        if let Some(event) = event {
            text.push_str("event: ");
            text.push_str(&one_line(event));
            text.push('\n');
        }
        for line in lines(data) {
            text.push_str("data: ");
            text.push_str(line);
            text.push('\n');
        }
        text.push('\n');
        SseEvent { text: text.into() }
    }

    /// A named event without id: `event: <event>` / `data: <data>`.
    pub fn named(event: &str, data: &str) -> SseEvent {
        SseEvent::new(Some(event), None, data)
    }

    /// A comment (`: <text>` and a blank line), e.g. `: connected`, `: heartbeat`.
    pub fn comment(text: &str) -> SseEvent {
        let mut out = String::new();
        for line in lines(text) {
            if line.is_empty() {
                out.push_str(":\n");
            } else {
                out.push_str(": ");
                out.push_str(line);
                out.push('\n');
            }
        }
        out.push('\n');
        SseEvent { text: out.into() }
    }

    /// A reconnection delay: `retry: <ms>` and a blank line.
    pub fn retry(milliseconds: u64) -> SseEvent {
        SseEvent {
            text: format!("retry: {milliseconds}\n\n").into(),
        }
    }

    /// The framed text, blank-line terminated.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

/// Settings of an [`SseHub`].
#[derive(Clone, Debug)]
pub struct SseConfig {
    /// Maximum number of concurrent streams; a further subscription is refused with
    /// [`SseError::TooManyStreams`]. Default 64 (VIEWER.md §6.6).
    pub max_streams: usize,
    /// Interval between `: heartbeat` comments on every stream. Default 15 s (VIEWER.md §6.6).
    /// Values under 1 ms are treated as 1 ms.
    pub heartbeat: Duration,
    /// Events queued for one stream beyond which that client is considered stuck and is
    /// dropped (its stream closes without a final event). Default 4096.
    pub max_queued: usize,
    /// The event each stream receives when the server or the hub shuts down, right before the
    /// stream closes. Default `event: shutdown` / `data: {}` (VIEWER.md §6.6).
    pub shutdown_event: Option<SseEvent>,
}

impl Default for SseConfig {
    fn default() -> SseConfig {
        SseConfig {
            max_streams: 64,
            heartbeat: Duration::from_secs(15),
            max_queued: 4096,
            shutdown_event: Some(SseEvent::named("shutdown", "{}")),
        }
    }
}

/// Why [`SseHub::subscribe`] refused a stream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// The hub already holds `max` streams.
    #[error("too many event streams")]
    TooManyStreams {
        /// The configured maximum.
        max: usize,
    },
    /// The hub was closed (the server is shutting down).
    #[error("shutting down")]
    Closed,
}

impl SseError {
    /// 503 `{"error":"too many event streams"}` (VIEWER.md §6.6) or 503
    /// `{"error":"shutting down"}`.
    pub fn to_response(&self) -> Response {
        Response::error(503, &self.to_string())
    }
}

pub(crate) enum HubMsg {
    Event(SseEvent),
    Shutdown,
}

struct Slots {
    next_id: u64,
    open: Vec<(u64, Sender<HubMsg>)>,
    closed: bool,
}

struct HubInner {
    config: SseConfig,
    slots: Mutex<Slots>,
}

impl HubInner {
    fn lock(&self) -> MutexGuard<'_, Slots> {
        // A poisoned lock only means another thread panicked while holding it; the slot list
        // itself is always consistent, so keep serving.
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A broadcast hub for server-sent events. Clone it freely; all clones share the streams.
#[derive(Clone)]
pub struct SseHub {
    inner: Arc<HubInner>,
}

impl std::fmt::Debug for SseHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseHub")
            .field("streams", &self.stream_count())
            .field("config", &self.inner.config)
            .finish()
    }
}

impl SseHub {
    /// A hub with the given settings.
    pub fn new(config: SseConfig) -> SseHub {
        SseHub {
            inner: Arc::new(HubInner {
                config,
                slots: Mutex::new(Slots {
                    next_id: 0,
                    open: Vec::new(),
                    closed: false,
                }),
            }),
        }
    }

    /// The hub's settings.
    pub fn config(&self) -> &SseConfig {
        &self.inner.config
    }

    /// Registers a new stream. Events broadcast from now on are queued for it until the server
    /// writes them. Dropping the subscription unregisters it.
    ///
    /// Errors: [`SseError::TooManyStreams`] at the cap, [`SseError::Closed`] after
    /// [`SseHub::close`].
    pub(crate) fn subscribe(&self) -> Result<SseSubscription, SseError> {
        let mut slots = self.inner.lock();
        if slots.closed {
            return Err(SseError::Closed);
        }
        if slots.open.len() >= self.inner.config.max_streams {
            return Err(SseError::TooManyStreams {
                max: self.inner.config.max_streams,
            });
        }
        let id = slots.next_id;
        slots.next_id += 1;
        let (tx, rx) = unbounded();
        slots.open.push((id, tx));
        Ok(SseSubscription {
            id,
            rx,
            hub: Arc::clone(&self.inner),
        })
    }

    /// Subscribes and returns the streaming response with `initial` events first, or the 503
    /// of [`SseError::to_response`].
    pub fn respond(&self, initial: &[SseEvent]) -> Response {
        match self.subscribe() {
            Ok(sub) => Response::sse(sub, initial),
            Err(e) => e.to_response(),
        }
    }

    /// Queues `event` for every open stream; returns how many streams received it.
    pub fn broadcast(&self, event: &SseEvent) -> usize {
        self.broadcast_all(std::slice::from_ref(event))
    }

    /// Queues `events`, in order and contiguously, for every open stream; returns how many
    /// streams received them. A stream whose queue would exceed
    /// [`SseConfig::max_queued`] is dropped instead.
    pub fn broadcast_all(&self, events: &[SseEvent]) -> usize {
        let max = self.inner.config.max_queued;
        let mut slots = self.inner.lock();
        slots.open.retain(|(_, tx)| {
            if tx.len().saturating_add(events.len()) > max {
                return false;
            }
            events
                .iter()
                .all(|e| tx.send(HubMsg::Event(e.clone())).is_ok())
        });
        slots.open.len()
    }

    /// The number of registered streams.
    pub fn stream_count(&self) -> usize {
        self.inner.lock().open.len()
    }

    /// Sends the shutdown event to every stream (after the events already queued), closes them,
    /// and refuses further subscriptions. The server does the same on its own shutdown.
    pub fn close(&self) {
        let mut slots = self.inner.lock();
        slots.closed = true;
        for (_, tx) in slots.open.drain(..) {
            let _ = tx.send(HubMsg::Shutdown);
        }
    }

    /// Whether [`SseHub::close`] was called.
    #[cfg(test)]
    pub(crate) fn is_closed(&self) -> bool {
        self.inner.lock().closed
    }
}

/// One stream's registration in an [`SseHub`]; pass it to [`Response::sse`].
pub struct SseSubscription {
    id: u64,
    rx: Receiver<HubMsg>,
    hub: Arc<HubInner>,
}

impl std::fmt::Debug for SseSubscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseSubscription")
            .field("id", &self.id)
            .finish()
    }
}

impl Drop for SseSubscription {
    fn drop(&mut self) {
        let id = self.id;
        self.hub.lock().open.retain(|(slot, _)| *slot != id);
    }
}

fn write_piece(out: &mut dyn Write, bytes: &[u8], chunked: bool) -> std::io::Result<()> {
    if bytes.is_empty() {
        return Ok(());
    }
    if chunked {
        write!(out, "{:x}\r\n", bytes.len())?;
        out.write_all(bytes)?;
        out.write_all(b"\r\n")?;
    } else {
        out.write_all(bytes)?;
    }
    out.flush()
}

/// Writes a stream until the client leaves, the hub drops or closes it, or `stop` disconnects
/// (server shutdown). `gone` disconnects when the connection is known to be lost (the gate's
/// writer failed), ending the stream without waiting for its next write. `head` is the raw
/// response head, `initial` the first events; with `chunked`, every piece is one HTTP/1.1 chunk
/// and the stream ends with the last chunk.
pub(crate) fn pump(
    mut out: Box<dyn Write + Send>,
    head: &[u8],
    initial: &[u8],
    subscription: SseSubscription,
    (stop, gone): (&Receiver<()>, &Receiver<()>),
    chunked: bool,
) {
    enum Step {
        Write(SseEvent),
        Beat,
        Final,
        End,
    }
    let config = subscription.hub.config.clone();
    let heartbeat = config.heartbeat.max(Duration::from_millis(1));
    let beat = SseEvent::comment("heartbeat");
    let started = out
        .write_all(head)
        .and_then(|()| out.flush())
        .and_then(|()| write_piece(out.as_mut(), initial, chunked));
    if started.is_err() {
        return;
    }
    let mut next_beat = Instant::now() + heartbeat;
    loop {
        let wait = next_beat.saturating_duration_since(Instant::now());
        let step = select! {
            recv(subscription.rx) -> msg => match msg {
                Ok(HubMsg::Event(e)) => Step::Write(e),
                Ok(HubMsg::Shutdown) => Step::Final,
                Err(_) => Step::End,
            },
            recv(stop) -> _ => Step::Final,
            recv(gone) -> _ => Step::End,
            default(wait) => Step::Beat,
        };
        let result = match step {
            Step::Write(e) => write_piece(out.as_mut(), e.as_str().as_bytes(), chunked),
            Step::Beat => {
                let now = Instant::now();
                next_beat += heartbeat;
                if next_beat <= now {
                    next_beat = now + heartbeat;
                }
                write_piece(out.as_mut(), beat.as_str().as_bytes(), chunked)
            }
            Step::Final => {
                // Flush what was broadcast before the stop, then the final event.
                let mut pending = Vec::new();
                while let Ok(HubMsg::Event(e)) = subscription.rx.try_recv() {
                    pending.extend_from_slice(e.as_str().as_bytes());
                }
                if let Some(last) = &config.shutdown_event {
                    pending.extend_from_slice(last.as_str().as_bytes());
                }
                let _ = write_piece(out.as_mut(), &pending, chunked);
                break;
            }
            Step::End => break,
        };
        if result.is_err() {
            // The client went away: drop it silently (VIEWER.md §6.6).
            return;
        }
    }
    if chunked {
        let _ = out.write_all(b"0\r\n\r\n").and_then(|()| out.flush());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_framing() {
        assert_eq!(
            SseEvent::new(Some("frame"), Some("3"), "{\"a\":1}").as_str(),
            "id: 3\nevent: frame\ndata: {\"a\":1}\n\n"
        );
        assert_eq!(
            SseEvent::named("shutdown", "{}").as_str(),
            "event: shutdown\ndata: {}\n\n"
        );
        assert_eq!(SseEvent::comment("connected").as_str(), ": connected\n\n");
        assert_eq!(SseEvent::retry(3000).as_str(), "retry: 3000\n\n");
        assert_eq!(
            SseEvent::new(Some("a\nb"), Some("1\r2"), "x\ny\r\nz\rw").as_str(),
            "id: 1 2\nevent: a b\ndata: x\ndata: y\ndata: z\ndata: w\n\n"
        );
        assert_eq!(SseEvent::new(None, None, "").as_str(), "data: \n\n");
        assert_eq!(SseEvent::comment("a\n\nb").as_str(), ": a\n:\n: b\n\n");
    }

    #[test]
    fn hub_cap_and_unsubscribe_on_drop() {
        let hub = SseHub::new(SseConfig {
            max_streams: 2,
            ..SseConfig::default()
        });
        let a = hub.subscribe().unwrap();
        let b = hub.subscribe().unwrap();
        assert_eq!(hub.stream_count(), 2);
        assert_eq!(
            hub.subscribe().unwrap_err(),
            SseError::TooManyStreams { max: 2 }
        );
        let resp = hub.respond(&[]);
        assert_eq!(resp.status(), 503);
        assert_eq!(
            resp.body_bytes().unwrap(),
            br#"{"error":"too many event streams"}"#
        );
        drop(a);
        assert_eq!(hub.stream_count(), 1);
        let c = hub.subscribe().unwrap();
        assert_eq!(hub.broadcast(&SseEvent::named("x", "1")), 2);
        assert!(
            matches!(b.rx.try_recv(), Ok(HubMsg::Event(e)) if e.as_str() == "event: x\ndata: 1\n\n")
        );
        assert!(matches!(c.rx.try_recv(), Ok(HubMsg::Event(_))));
        hub.close();
        assert!(hub.is_closed());
        assert!(matches!(b.rx.try_recv(), Ok(HubMsg::Shutdown)));
        assert_eq!(hub.subscribe().unwrap_err(), SseError::Closed);
        assert_eq!(hub.stream_count(), 0);
    }

    #[test]
    fn stuck_streams_are_dropped_at_the_queue_limit() {
        let hub = SseHub::new(SseConfig {
            max_queued: 3,
            ..SseConfig::default()
        });
        let slow = hub.subscribe().unwrap();
        let e = SseEvent::named("x", "1");
        assert_eq!(hub.broadcast_all(&[e.clone(), e.clone()]), 1);
        assert_eq!(hub.broadcast_all(&[e.clone(), e.clone()]), 0);
        assert_eq!(hub.stream_count(), 0);
        // The two queued events are still delivered, then the channel reports disconnection.
        assert!(slow.rx.try_recv().is_ok());
        assert!(slow.rx.try_recv().is_ok());
        assert!(matches!(
            slow.rx.try_recv(),
            Err(crossbeam_channel::TryRecvError::Disconnected)
        ));
    }

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn pump_writes_events_heartbeats_and_final_event_in_chunks() {
        let hub = SseHub::new(SseConfig {
            heartbeat: Duration::from_millis(40),
            ..SseConfig::default()
        });
        let sub = hub.subscribe().unwrap();
        let (stop_tx, stop_rx) = crossbeam_channel::bounded::<()>(0);
        let sink = Shared::default();
        let out = sink.clone();
        let handle = std::thread::spawn(move || {
            pump(
                Box::new(out),
                b"HEAD\r\n\r\n",
                b": hi\n\n",
                sub,
                (&stop_rx, &crossbeam_channel::never()),
                true,
            );
        });
        hub.broadcast(&SseEvent::named("one", "1"));
        std::thread::sleep(Duration::from_millis(120));
        hub.broadcast(&SseEvent::named("two", "2"));
        drop(stop_tx);
        handle.join().unwrap();
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        assert!(
            text.starts_with("HEAD\r\n\r\n6\r\n: hi\n\n\r\n"),
            "{text:?}"
        );
        let one = text.find("event: one").unwrap();
        let beat = text.find(": heartbeat").unwrap();
        let two = text.find("event: two").unwrap();
        let last = text.find("event: shutdown\ndata: {}\n\n").unwrap();
        assert!(one < beat && beat < two && two < last, "{text:?}");
        assert!(text.ends_with("\r\n0\r\n\r\n"), "{text:?}");
        assert_eq!(hub.stream_count(), 0);
    }

    #[test]
    fn pump_stops_silently_on_write_errors() {
        struct Broken;
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let hub = SseHub::new(SseConfig::default());
        let sub = hub.subscribe().unwrap();
        let (_stop_tx, stop_rx) = crossbeam_channel::bounded::<()>(0);
        pump(
            Box::new(Broken),
            b"H",
            b"",
            sub,
            (&stop_rx, &crossbeam_channel::never()),
            false,
        );
        assert_eq!(hub.stream_count(), 0);
    }
}
