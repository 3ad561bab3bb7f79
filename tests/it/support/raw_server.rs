//! A loopback TCP server below HTTP, for exchanges an HTTP library will not produce: a server
//! that accepts and reads the request but never answers (a hung provider), and one that sends a
//! status line and headers announcing more body bytes than it writes before closing (a body cut
//! short). Every accepted connection is counted; the request head of each is kept.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// What the server does with every connection.
#[derive(Clone, Debug)]
pub enum Behaviour {
    /// Read the request, then hold the connection open without a byte of response until the
    /// server is dropped.
    Hang,
    /// Answer `200` with `Content-Length: <announced>` but only `body` (shorter), then close.
    Truncated {
        /// The bytes actually written.
        body: String,
        /// The announced length (larger than `body`).
        announced: usize,
    },
}

/// The server; dropping it stops the accept loop and releases held connections.
pub struct RawServer {
    addr: String,
    accepted: Arc<AtomicUsize>,
    heads: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl RawServer {
    /// Starts on `127.0.0.1:0`.
    pub fn start(behaviour: Behaviour) -> RawServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let accepted = Arc::new(AtomicUsize::new(0));
        let heads = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (a, h, s) = (accepted.clone(), heads.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut held: Vec<TcpStream> = Vec::new();
            // Bounded: at most 10 minutes of accepting, whatever the test does.
            let deadline = std::time::Instant::now() + Duration::from_secs(600);
            while !s.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
                match listener.accept() {
                    Ok((mut conn, _)) => {
                        a.fetch_add(1, Ordering::SeqCst);
                        conn.set_nonblocking(false).unwrap();
                        let head = read_request(&mut conn);
                        h.lock().unwrap().push(head);
                        match &behaviour {
                            Behaviour::Hang => held.push(conn),
                            Behaviour::Truncated { body, announced } => {
                                let _ = write!(
                                    conn,
                                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {announced}\r\n\r\n{body}"
                                );
                                let _ = conn.flush();
                                let _ = conn.shutdown(std::net::Shutdown::Both);
                            }
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
            drop(held);
        });
        RawServer {
            addr,
            accepted,
            heads,
            stop,
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:<port>/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// The request heads read so far (request line and headers).
    pub fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Reads the head and as much of the body as `Content-Length` announces (bounded, with a read
/// timeout so a silent client cannot hold the server).
fn read_request(conn: &mut TcpStream) -> String {
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = find(&buf, b"\r\n\r\n") {
            break i + 4;
        }
        match conn.read(&mut chunk) {
            Ok(0) | Err(_) => return String::from_utf8_lossy(&buf).into_owned(),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        if buf.len() > 1 << 20 {
            break buf.len();
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0)
        .min(64 << 20);
    let mut have = buf.len() - head_end;
    while have < length {
        match conn.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => have += n,
        }
    }
    head
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}
