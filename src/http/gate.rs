//! The gate: the server's own accept loop and a front for every client connection, so that
//! tiny_http only ever sees request heads that were read with bounds and checked.
//!
//! Sources: issue 7 §1 (no wedge, bounded heads, strict framing, the listener never dies),
//! RFC 9112 §9.6 and §9.8 (closing; lingering so that a client still sending reads the response).
//!
//! ## Why
//! tiny_http 0.12 reads heads without a size bound, and an `HTTP/2.0` request line deadlocks its
//! connection thread for good (it answers 505 through the connection's next sequential writer
//! while the request that holds the previous writer is still alive; no socket timeout reaches a
//! thread waiting on a channel). Neither can be fixed from outside tiny_http, so tiny_http
//! never faces a client: it listens on a private socket (`internal.rs`) and the gate passes on
//! what it has checked.
//!
//! ## One connection
//! The accept loop (one thread, `http-accept`) gives every accepted connection the receive and
//! send timeouts ([`super::ServerConfig::io_timeout`]) and `TCP_NODELAY`, and a reader thread
//! (`http-gate`), which for each request:
//! 1. reads the head, at most [`MAX_HEAD_BYTES`], which must be complete within the I/O timeout
//!    of the moment the gate started waiting for it (this also bounds an idle keep-alive
//!    connection and a head trickled byte by byte);
//! 2. judges it (`head.rs`): refusals (400, 417, 431, 501, 505) are answered by the gate itself
//!    with `connection: close`, after any response still being written on the connection;
//! 3. on the connection's first accepted head, connects to tiny_http's private socket and starts
//!    a writer thread (`http-gate-out`) that copies tiny_http's output to the client;
//! 4. passes the head on (re-serialized, with a [`Tag`]: connection id, request number, the
//!    client's address), then exactly the body its framing delimits (`Content-Length` bytes,
//!    or chunked coding up to its last chunk), so that the next bytes are the next head.
//!
//! A declared `Content-Length` above [`super::MAX_DRAIN_BYTES`] (always over the body limit,
//! which that constant caps) reaches tiny_http as `MAX_DRAIN_BYTES + 1`, with the real value
//! in the tag: tiny_http discards an unread body by allocating its whole declared length, and it
//! must never be asked to allocate an absurd one. Such a request is the connection's last.
//!
//! ## Closing
//! A connection ends when its client ends it, when a head does not arrive in time, or when the
//! server decides to close it after a response (`Conn::close_input`): the gate stops passing on
//! input, tiny_http sees the end of its input and closes its side once its last response is
//! written, and the writer thread then ends the client's output, reads and discards what the
//! client still sends for [`LINGER`] and closes. A client that stops reading makes a write wait
//! longer than the send timeout: the writer thread then shuts down both sockets, and tiny_http's
//! writer (a response or an event stream) fails at its next write.
//!
//! ## Costs
//! A connection costs one thread and one descriptor until its first head is accepted; after
//! that, two gate threads, tiny_http's connection thread and four descriptors (one client
//! socket, the private socket's two ends, and tiny_http's duplicate of its end). Gate threads
//! have 256 KiB stacks. The number of connections is bounded only by threads and descriptors.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

use super::head::{
    BodyFraming, ChunkedScanner, MAX_HEAD_BYTES, Scan, Tag, Verdict, head_end, judge,
    leading_empty_lines,
};
use super::internal::{Internal, Stream};

/// How long a connection being closed keeps reading (and discarding) what the client still
/// sends after the end of its output: 2 seconds. Closing a socket with unread input makes the
/// kernel send a reset, and a client still sending a body would then lose the response it has
/// not read yet (the "lingering close" of Apache and nginx).
const LINGER: Duration = Duration::from_secs(2);

/// The first pause after a failed `accept()`; it doubles up to [`BACKOFF_MAX`].
const BACKOFF_FIRST: Duration = Duration::from_millis(5);
/// The longest pause after a failed `accept()`.
pub(crate) const BACKOFF_MAX: Duration = Duration::from_secs(1);

const STACK: usize = 256 * 1024;
const RELAY_BUF: usize = 16 * 1024;

/// The largest `Content-Length` passed on to tiny_http (see the module docs).
const FORWARDED_LENGTH_CAP: u64 = super::MAX_DRAIN_BYTES + 1;

/// What the accept loop and the connections share.
pub(crate) struct Gate {
    listener: TcpListener,
    local_addr: SocketAddr,
    io_timeout: Duration,
    internal: Arc<Internal>,
    cache_control: Option<String>,
    conns: Mutex<HashMap<u64, Arc<Conn>>>,
    next_id: AtomicU64,
    stopping: AtomicBool,
    /// Connections closed after a refusal (the gate's and the server's).
    pub(crate) closed: AtomicU64,
}

/// One client connection, shared by its reader and writer threads and found by the dispatcher
/// through its id.
pub(crate) struct Conn {
    id: u64,
    public: TcpStream,
    internal: OnceLock<Stream>,
    threads: AtomicUsize,
    closing: AtomicBool,
    cut: AtomicU64,
    output: Mutex<Output>,
    /// Dropped when the connection is aborted (see [`Conn::gone`]).
    lost: Mutex<Option<crossbeam_channel::Sender<()>>>,
    lost_rx: Receiver<()>,
}

#[derive(Default)]
struct Output {
    /// A refusal to write once tiny_http's output has ended.
    refusal: Option<Vec<u8>>,
    /// When the client's output was ended.
    done_at: Option<Instant>,
}

impl Conn {
    fn output(&self) -> std::sync::MutexGuard<'_, Output> {
        self.output.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The server closes this connection after its current response: nothing the client sends
    /// from now on is passed on, and tiny_http sees the end of its input.
    pub(crate) fn close_input(&self) {
        self.closing.store(true, Ordering::SeqCst);
        self.end_input();
    }

    /// Whether [`Conn::close_input`] was called (requests still arriving from the connection
    /// were passed on before it and are not answered).
    pub(crate) fn is_closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    /// Whether the body of request number `seq` ended early (the client stalled or left, or
    /// sent malformed chunked coding): tiny_http then sees the end of input inside the body.
    pub(crate) fn body_cut(&self, seq: u64) -> bool {
        self.cut.load(Ordering::SeqCst) == seq
    }

    fn end_input(&self) {
        if let Some(s) = self.internal.get() {
            let _ = s.shutdown(Shutdown::Write);
        }
    }

    /// A receiver that disconnects when the connection is lost (a write to the client failed or
    /// timed out): an event stream then ends at once instead of at its next write.
    pub(crate) fn gone(&self) -> Receiver<()> {
        self.lost_rx.clone()
    }

    fn abort(&self) {
        if let Some(s) = self.internal.get() {
            let _ = s.shutdown(Shutdown::Both);
        }
        let _ = self.public.shutdown(Shutdown::Both);
        drop(self.lost.lock().unwrap_or_else(|p| p.into_inner()).take());
    }

    /// Ends the client's output now (no tiny_http output on this connection).
    fn end_output_now(&self) {
        self.output().done_at = Some(Instant::now());
        let _ = self.public.shutdown(Shutdown::Write);
    }

    fn done_at(&self) -> Option<Instant> {
        self.output().done_at
    }
}

/// Removes a connection from the registry when its last thread ends.
struct Member<'a> {
    gate: &'a Gate,
    conn: &'a Arc<Conn>,
}

impl Drop for Member<'_> {
    fn drop(&mut self) {
        if self.conn.threads.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.gate
                .conns
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&self.conn.id);
        }
    }
}

/// How a connection's reader stops.
enum Ending {
    /// The client left or went quiet: tiny_http sees the end of input, responses in progress
    /// finish.
    Quiet,
    /// No further request is passed on; keep reading (and discarding) until the output ends
    /// and the linger passes.
    Discard,
    /// Answer this refusal (after any response in progress), then as `Discard`.
    Refuse(u16, &'static str),
    /// Close without an answer.
    Close,
}

/// How a body relay ended.
enum Relayed {
    Done,
    /// The client stalled or left inside the body.
    Cut,
    /// The chunked coding was malformed.
    Malformed,
    /// tiny_http's side is closed (the server is closing the connection).
    Refused,
}

enum HeadRead {
    Complete(usize),
    TooLarge,
    Ended,
}

/// The reader's view of the client socket: bytes read but not yet passed on.
struct Input<'a> {
    stream: &'a TcpStream,
    buf: Vec<u8>,
    io_timeout: Duration,
    timeout: Duration,
}

impl Input<'_> {
    fn set_timeout(&mut self, wait: Duration) -> std::io::Result<()> {
        let wait = wait.max(Duration::from_millis(1));
        if wait != self.timeout {
            self.stream.set_read_timeout(Some(wait))?;
            self.timeout = wait;
        }
        Ok(())
    }

    /// Reads more bytes into the buffer (at most 4 KiB), waiting at most the I/O timeout and
    /// never past `deadline`. `Ok(0)` = end of input.
    fn fill(&mut self, deadline: Option<Instant>) -> std::io::Result<usize> {
        let wait = match deadline {
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                if left < Duration::from_millis(1) {
                    return Err(std::io::ErrorKind::TimedOut.into());
                }
                left.min(self.io_timeout)
            }
            None => self.io_timeout,
        };
        self.set_timeout(wait)?;
        let mut scratch = [0u8; 4096];
        loop {
            match (&*self.stream).read(&mut scratch) {
                Ok(n) => {
                    self.buf.extend_from_slice(&scratch[..n]);
                    return Ok(n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    fn read_head(&mut self) -> HeadRead {
        let deadline = Instant::now() + self.io_timeout;
        let mut scanned = 0;
        loop {
            let skip = leading_empty_lines(&self.buf);
            if skip > 0 {
                self.buf.drain(..skip);
                scanned = 0;
            }
            if let Some(end) = head_end(&self.buf, scanned) {
                return if end > MAX_HEAD_BYTES {
                    HeadRead::TooLarge
                } else {
                    HeadRead::Complete(end)
                };
            }
            if self.buf.len() >= MAX_HEAD_BYTES {
                return HeadRead::TooLarge;
            }
            scanned = self.buf.len();
            match self.fill(Some(deadline)) {
                Ok(0) | Err(_) => return HeadRead::Ended,
                Ok(_) => {}
            }
        }
    }

    fn relay_exact(&mut self, out: &Stream, mut left: u64) -> Relayed {
        let take = (self.buf.len() as u64).min(left) as usize;
        if take > 0 {
            if (&*out).write_all(&self.buf[..take]).is_err() {
                return Relayed::Refused;
            }
            self.buf.drain(..take);
            left -= take as u64;
        }
        if left == 0 {
            return Relayed::Done;
        }
        if self.set_timeout(self.io_timeout).is_err() {
            return Relayed::Cut;
        }
        let mut chunk = vec![0u8; RELAY_BUF];
        while left > 0 {
            let want = left.min(RELAY_BUF as u64) as usize;
            match (&*self.stream).read(&mut chunk[..want]) {
                Ok(0) => return Relayed::Cut,
                Ok(n) => {
                    if (&*out).write_all(&chunk[..n]).is_err() {
                        return Relayed::Refused;
                    }
                    left -= n as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return Relayed::Cut,
            }
        }
        Relayed::Done
    }

    fn relay_chunked(&mut self, out: &Stream) -> Relayed {
        let mut scanner = ChunkedScanner::default();
        loop {
            if !self.buf.is_empty() {
                let (pass, outcome) = match scanner.feed(&self.buf) {
                    Scan::More => (self.buf.len(), None),
                    Scan::Done(n) => (n, Some(Relayed::Done)),
                    Scan::Malformed(n) => (n, Some(Relayed::Malformed)),
                };
                if (&*out).write_all(&self.buf[..pass]).is_err() {
                    return Relayed::Refused;
                }
                match outcome {
                    Some(Relayed::Done) => {
                        self.buf.drain(..pass);
                        return Relayed::Done;
                    }
                    Some(other) => return other,
                    None => self.buf.clear(),
                }
            }
            match self.fill(None) {
                Ok(0) | Err(_) => return Relayed::Cut,
                Ok(_) => {}
            }
        }
    }
}

/// A refused connection's answer: `{"error": message}` with `connection: close`.
fn refusal_bytes(status: u16, message: &str, cache_control: Option<&str>) -> Vec<u8> {
    let body = serde_json::json!({ "error": message }).to_string();
    let mut headers = vec![
        (
            "content-type".to_owned(),
            super::JSON_CONTENT_TYPE.to_owned(),
        ),
        ("x-content-type-options".to_owned(), "nosniff".to_owned()),
        ("connection".to_owned(), "close".to_owned()),
    ];
    if let Some(cc) = cache_control {
        headers.push(("cache-control".to_owned(), cc.to_owned()));
    }
    let mut bytes = super::respond::raw_head((1, 1), status, &headers, body.len()).into_bytes();
    bytes.extend_from_slice(body.as_bytes());
    bytes
}

impl Gate {
    pub(crate) fn new(
        listener: TcpListener,
        io_timeout: Duration,
        internal: Arc<Internal>,
        cache_control: Option<String>,
    ) -> std::io::Result<Gate> {
        let local_addr = listener.local_addr()?;
        Ok(Gate {
            listener,
            local_addr,
            io_timeout,
            internal,
            cache_control,
            conns: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            stopping: AtomicBool::new(false),
            closed: AtomicU64::new(0),
        })
    }

    /// The live connection with this id (one that passed at least one request on).
    pub(crate) fn conn(&self, id: u64) -> Option<Arc<Conn>> {
        self.conns
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .cloned()
    }

    /// Stops accepting: the accept loop ends and the listening socket refuses connections from
    /// now on (Linux wakes a blocked `accept()` on a listening socket that is shut down).
    pub(crate) fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        #[cfg(unix)]
        let _ = rustix::net::shutdown(&self.listener, rustix::net::Shutdown::Read);
        #[cfg(not(unix))]
        let _ = TcpStream::connect_timeout(&self.local_addr, Duration::from_millis(200));
    }

    /// Accepts connections until [`Gate::stop`]. A failed `accept()` (for example `EMFILE`:
    /// out of descriptors) pauses the loop for 5 ms doubling to 1 s, as Go's net/http does,
    /// with one line on stderr per episode; connections not yet accepted wait in the kernel's
    /// backlog meanwhile. An episode ends after a second without failure.
    pub(crate) fn accept_loop(self: &Arc<Gate>, stop: &Receiver<()>) {
        let mut backoff = BACKOFF_FIRST;
        let mut episode = false;
        let mut last_failure = Instant::now();
        loop {
            let accepted = self.listener.accept();
            if self.stopping.load(Ordering::SeqCst) {
                return;
            }
            match accepted {
                Ok((stream, peer)) => self.admit(stream, peer),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::Interrupted
                            | std::io::ErrorKind::ConnectionAborted
                            | std::io::ErrorKind::ConnectionReset
                            | std::io::ErrorKind::WouldBlock
                            | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => {
                    last_failure = Instant::now();
                    if !episode {
                        episode = true;
                        super::conn::log_line(&format!(
                            "reactor: http: accepting connections on {} failed ({e}); \
                             pausing the listener with backoff (5 ms doubling to 1 s)",
                            self.local_addr
                        ));
                    }
                    crossbeam_channel::select! {
                        recv(stop) -> _ => return,
                        default(backoff) => {}
                    }
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                    continue;
                }
            }
            if episode && last_failure.elapsed() >= BACKOFF_MAX {
                episode = false;
                backoff = BACKOFF_FIRST;
            }
        }
    }

    fn admit(self: &Arc<Gate>, stream: TcpStream, peer: SocketAddr) {
        let _ = stream.set_nodelay(true);
        let _ = stream.set_read_timeout(Some(self.io_timeout));
        let _ = stream.set_write_timeout(Some(self.io_timeout));
        let (lost, lost_rx) = crossbeam_channel::bounded(0);
        let conn = Arc::new(Conn {
            id: self.next_id.fetch_add(1, Ordering::Relaxed) + 1,
            public: stream,
            internal: OnceLock::new(),
            threads: AtomicUsize::new(1),
            closing: AtomicBool::new(false),
            cut: AtomicU64::new(0),
            output: Mutex::new(Output::default()),
            lost: Mutex::new(Some(lost)),
            lost_rx,
        });
        let gate = Arc::clone(self);
        // On spawn failure the closure is dropped and the connection closes unanswered.
        let _ = std::thread::Builder::new()
            .name("http-gate".to_owned())
            .stack_size(STACK)
            .spawn(move || gate.serve(&conn, peer));
    }

    /// The reader thread of one connection.
    fn serve(self: &Arc<Gate>, conn: &Arc<Conn>, peer: SocketAddr) {
        let _member = Member { gate: self, conn };
        let mut input = Input {
            stream: &conn.public,
            buf: Vec::new(),
            io_timeout: self.io_timeout,
            timeout: self.io_timeout,
        };
        match self.pass_requests(conn, peer, &mut input) {
            Ending::Quiet => conn.end_input(),
            Ending::Discard => {
                conn.end_input();
                discard(conn, &mut input);
            }
            Ending::Refuse(status, message) => {
                self.closed.fetch_add(1, Ordering::Relaxed);
                let bytes = refusal_bytes(status, message, self.cache_control.as_deref());
                if conn.internal.get().is_some() {
                    // After the responses tiny_http is still writing.
                    {
                        let mut output = conn.output();
                        if output.done_at.is_none() {
                            output.refusal = Some(bytes);
                        }
                    }
                    conn.end_input();
                } else {
                    let _ = (&conn.public).write_all(&bytes);
                    conn.end_output_now();
                }
                discard(conn, &mut input);
            }
            Ending::Close => {
                if conn.internal.get().is_some() {
                    conn.end_input();
                    discard(conn, &mut input);
                } else {
                    let _ = conn.public.shutdown(Shutdown::Both);
                }
            }
        }
    }

    /// Reads, judges and passes on requests until the connection's input must stop.
    fn pass_requests(
        self: &Arc<Gate>,
        conn: &Arc<Conn>,
        peer: SocketAddr,
        input: &mut Input<'_>,
    ) -> Ending {
        let mut seq = 0;
        loop {
            let len = match input.read_head() {
                HeadRead::Complete(len) => len,
                HeadRead::TooLarge => {
                    return Ending::Refuse(431, "request head too large (limit 65536 bytes)");
                }
                HeadRead::Ended => return Ending::Quiet,
            };
            let verdict = judge(&input.buf[..len]);
            input.buf.drain(..len);
            let head = match verdict {
                Verdict::Forward(head) => head,
                Verdict::Refuse { status, message } => return Ending::Refuse(status, message),
                Verdict::Close => return Ending::Close,
            };
            let out = match self.open(conn) {
                Opened::Ready(out) => out,
                Opened::Unavailable => return Ending::Refuse(503, "busy"),
                Opened::Failed => return Ending::Quiet,
            };
            seq += 1;
            let capped = match head.framing {
                BodyFraming::Length(n) if n > FORWARDED_LENGTH_CAP => Some(n),
                _ => None,
            };
            let tag = Tag {
                conn: conn.id,
                seq,
                peer,
                declared: capped,
            };
            let forwarded = head.forwarded(capped.map(|_| FORWARDED_LENGTH_CAP), &tag);
            if (&*out).write_all(&forwarded).is_err() {
                return Ending::Discard;
            }
            let relayed = match head.framing {
                BodyFraming::None => Relayed::Done,
                BodyFraming::Length(n) => input.relay_exact(out, n.min(FORWARDED_LENGTH_CAP)),
                BodyFraming::Chunked => input.relay_chunked(out),
            };
            match relayed {
                Relayed::Done => {}
                Relayed::Cut => {
                    conn.cut.store(seq, Ordering::SeqCst);
                    return Ending::Quiet;
                }
                Relayed::Malformed => {
                    conn.cut.store(seq, Ordering::SeqCst);
                    return Ending::Discard;
                }
                Relayed::Refused => return Ending::Discard,
            }
            if head.last || capped.is_some() {
                return Ending::Discard;
            }
        }
    }

    /// The connection's private socket to tiny_http, connected (and its writer thread started)
    /// on first use.
    fn open<'c>(self: &Arc<Gate>, conn: &'c Arc<Conn>) -> Opened<'c> {
        if let Some(out) = conn.internal.get() {
            return Opened::Ready(out);
        }
        let Ok(stream) = self.internal.connect() else {
            return Opened::Unavailable;
        };
        let _ = conn.internal.set(stream);
        self.conns
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(conn.id, Arc::clone(conn));
        conn.threads.fetch_add(1, Ordering::SeqCst);
        let gate = Arc::clone(self);
        let writer_conn = Arc::clone(conn);
        let spawned = std::thread::Builder::new()
            .name("http-gate-out".to_owned())
            .stack_size(STACK)
            .spawn(move || gate.copy_output(&writer_conn));
        if spawned.is_err() {
            conn.threads.fetch_sub(1, Ordering::SeqCst);
            conn.abort();
            return Opened::Failed;
        }
        match conn.internal.get() {
            Some(out) => Opened::Ready(out),
            None => Opened::Failed,
        }
    }

    /// The writer thread of one connection: tiny_http's output to the client, then the end.
    fn copy_output(self: &Arc<Gate>, conn: &Arc<Conn>) {
        let _member = Member { gate: self, conn };
        let Some(internal) = conn.internal.get() else {
            return;
        };
        let mut buf = vec![0u8; RELAY_BUF];
        let delivered = loop {
            match (&*internal).read(&mut buf) {
                Ok(0) => break true,
                Ok(n) => {
                    if (&conn.public).write_all(&buf[..n]).is_err() {
                        break false;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break true,
            }
        };
        if !delivered {
            // The client left or stopped reading: tiny_http's next write fails.
            conn.abort();
            return;
        }
        let refusal = {
            let mut output = conn.output();
            output.done_at = Some(Instant::now());
            output.refusal.take()
        };
        if let Some(bytes) = refusal {
            let _ = (&conn.public).write_all(&bytes);
        }
        let _ = conn.public.shutdown(Shutdown::Write);
        stop_reading_after_linger(conn);
    }
}

enum Opened<'c> {
    Ready(&'c Stream),
    /// tiny_http's socket cannot be reached (out of descriptors): answer 503.
    Unavailable,
    /// The writer thread could not start: the connection is aborted.
    Failed,
}

/// Reads and discards the client's input until the output has ended and [`LINGER`] has passed,
/// the client ends its input, or it stays silent for the I/O timeout.
fn discard(conn: &Conn, input: &mut Input<'_>) {
    input.buf.clear();
    loop {
        let deadline = conn.done_at().map(|t| t + LINGER);
        match input.fill(deadline) {
            Ok(0) | Err(_) => return,
            Ok(_) => input.buf.clear(),
        }
    }
}

/// Shuts the client socket down for reading [`LINGER`] from now (on one background thread for
/// all connections), which ends a reader waiting in [`discard`]. Holds only a weak reference:
/// a connection whose threads have all ended is closed at once.
fn stop_reading_after_linger(conn: &Arc<Conn>) {
    type Job = (Instant, Weak<Conn>);
    static LINGERING: OnceLock<Option<crossbeam_channel::Sender<Job>>> = OnceLock::new();
    let tx = LINGERING.get_or_init(|| {
        let (tx, rx) = crossbeam_channel::unbounded::<Job>();
        std::thread::Builder::new()
            .name("http-linger".to_owned())
            .spawn(move || {
                // Deadlines arrive in order (a constant delay).
                while let Ok((deadline, conn)) = rx.recv() {
                    std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
                    if let Some(conn) = conn.upgrade() {
                        let _ = conn.public.shutdown(Shutdown::Read);
                    }
                }
            })
            .ok()
            .map(|_| tx)
    });
    match tx {
        Some(tx) => {
            let _ = tx.send((Instant::now() + LINGER, Arc::downgrade(conn)));
        }
        None => {
            let _ = conn.public.shutdown(Shutdown::Read);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_complete_closing_responses() {
        let bytes = refusal_bytes(505, "HTTP version not supported", Some("no-cache"));
        let text = String::from_utf8(bytes).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 505 "), "{head}");
        assert!(head.contains("\r\nconnection: close"), "{head}");
        assert!(
            head.contains("\r\nx-content-type-options: nosniff"),
            "{head}"
        );
        assert!(head.contains("\r\ncache-control: no-cache"), "{head}");
        assert!(
            head.ends_with(&format!("content-length: {}", body.len())),
            "{head}"
        );
        assert_eq!(body, r#"{"error":"HTTP version not supported"}"#);
    }
}
