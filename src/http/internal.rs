//! The private socket between the gate and tiny_http (see `gate.rs`).
//!
//! On Unix it is a Unix-domain stream socket in a directory only this user can enter
//! (`<temp dir>/reactor-http-<pid>-<n>/`, mode 0700), so no other local user can reach tiny_http
//! without passing the gate. The socket is bound under one name and renamed to the name the gate
//! connects to: tiny_http 0.12 removes the file at its bound name when a server instance is
//! dropped, and a restarted instance shares the same socket, so the file must outlive every
//! instance. The directory and socket are removed when the server shuts down; those a killed
//! process leaves behind (they hold no data) are removed by the next server started with the same
//! temp directory, once their socket refuses connections.
//!
//! Elsewhere it is a loopback TCP listener on an ephemeral port.

use std::io;

#[cfg(not(unix))]
pub(crate) use std::net::{TcpListener as Listener, TcpStream as Stream};
#[cfg(unix)]
pub(crate) use std::os::unix::net::{UnixListener as Listener, UnixStream as Stream};

/// The listening side, owned by the server; tiny_http instances run on clones of it.
#[derive(Debug)]
pub(crate) struct Internal {
    listener: Listener,
    #[cfg(unix)]
    dir: std::path::PathBuf,
    #[cfg(unix)]
    path: std::path::PathBuf,
    #[cfg(not(unix))]
    addr: std::net::SocketAddr,
}

impl Internal {
    /// Creates the private directory and binds the socket.
    #[cfg(unix)]
    pub(crate) fn bind() -> io::Result<Internal> {
        use std::os::unix::fs::DirBuilderExt;
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let mut last_error = None;
        // A long temp-dir path may not fit a socket address (108 bytes): fall back to /tmp.
        for base in [std::env::temp_dir(), std::path::PathBuf::from("/tmp")] {
            sweep_stale(&base);
            for _ in 0..64 {
                let n = NEXT.fetch_add(1, Ordering::Relaxed);
                let dir = base.join(format!("reactor-http-{}-{n}", std::process::id()));
                match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                    Ok(()) => {}
                    // Left behind by an earlier process with the same id: try the next name.
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                    Err(e) => {
                        last_error = Some(e);
                        break;
                    }
                }
                let bound = dir.join("b");
                let path = dir.join("s");
                let made =
                    Listener::bind(&bound).and_then(|l| std::fs::rename(&bound, &path).map(|()| l));
                match made {
                    Ok(listener) => {
                        return Ok(Internal {
                            listener,
                            dir,
                            path,
                        });
                    }
                    Err(e) => {
                        let _ = std::fs::remove_file(&bound);
                        let _ = std::fs::remove_dir(&dir);
                        last_error = Some(e);
                        break;
                    }
                }
            }
        }
        Err(last_error.unwrap_or_else(|| io::Error::other("no private socket directory")))
    }

    /// Binds a loopback listener on an ephemeral port.
    #[cfg(not(unix))]
    pub(crate) fn bind() -> io::Result<Internal> {
        let listener = Listener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        Ok(Internal { listener, addr })
    }

    /// A clone of the listening socket, for a tiny_http instance.
    pub(crate) fn clone_listener(&self) -> io::Result<Listener> {
        self.listener.try_clone()
    }

    /// Connects to the listener.
    pub(crate) fn connect(&self) -> io::Result<Stream> {
        #[cfg(unix)]
        {
            Stream::connect(&self.path)
        }
        #[cfg(not(unix))]
        {
            Stream::connect(self.addr)
        }
    }

    /// Stops the listener: tiny_http's accept loop blocked on it ends at once (Linux wakes a
    /// blocked `accept()` on a listening socket that is shut down), no connection is accepted
    /// after, and the socket file and its directory are removed.
    pub(crate) fn shutdown(&self) {
        #[cfg(unix)]
        {
            let _ = rustix::net::shutdown(&self.listener, rustix::net::Shutdown::Both);
            let _ = std::fs::remove_file(&self.path);
            let _ = std::fs::remove_dir(&self.dir);
        }
        #[cfg(not(unix))]
        {
            let _ = self.listener.set_nonblocking(true);
            let _ = Stream::connect(self.addr);
        }
    }
}

/// Removes the private directories in `base` that processes killed before they could clean up
/// left behind (once per directory and process): a directory named like ours whose socket
/// refuses connections (nobody listens on it any more). Only our two socket names and the then
/// empty directory are removed; anything else, or another user's directory, stays.
#[cfg(unix)]
fn sweep_stale(base: &std::path::Path) {
    static SWEPT: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());
    {
        let mut swept = SWEPT.lock().unwrap_or_else(|p| p.into_inner());
        if swept.iter().any(|b| b == base) {
            return;
        }
        swept.push(base.to_path_buf());
    }
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let ours = name
            .to_str()
            .and_then(|n| n.strip_prefix("reactor-http-"))
            .and_then(|rest| rest.split_once('-'))
            .is_some_and(|(pid, n)| pid.parse::<u32>().is_ok() && n.parse::<u64>().is_ok());
        if !ours {
            continue;
        }
        let dir = entry.path();
        let socket = dir.join("s");
        let refused = matches!(
            Stream::connect(&socket),
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused
        );
        if refused {
            let _ = std::fs::remove_file(&socket);
            let _ = std::fs::remove_file(dir.join("b"));
            let _ = std::fs::remove_dir(&dir);
        }
    }
}

impl Drop for Internal {
    fn drop(&mut self) {
        #[cfg(unix)]
        {
            let _ = std::fs::remove_file(&self.path);
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn private_socket_connects_and_cleans_up() {
        let internal = Internal::bind().unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&internal.dir)
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o700);
            assert!(internal.path.exists());
        }
        let clone = internal.clone_listener().unwrap();
        let mut client = internal.connect().unwrap();
        let (mut server, _) = clone.accept().unwrap();
        client.write_all(b"ping").unwrap();
        let mut buf = [0u8; 4];
        server.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"ping");
        // Shutting the listener down wakes a blocked accept with an error.
        let waiter = std::thread::spawn(move || clone.accept().map(|_| ()));
        std::thread::sleep(std::time::Duration::from_millis(50));
        internal.shutdown();
        assert!(waiter.join().unwrap().is_err());
        #[cfg(unix)]
        assert!(!internal.dir.exists());
        drop(internal);
        #[cfg(unix)]
        {
            // A directory left by a killed process (its socket refuses connections) is swept.
            let base = tempfile::tempdir().unwrap();
            let stale = base.path().join("reactor-http-4000000-7");
            std::fs::create_dir(&stale).unwrap();
            drop(Listener::bind(stale.join("s")).unwrap());
            let foreign = base.path().join("reactor-http-notes");
            std::fs::create_dir(&foreign).unwrap();
            sweep_stale(base.path());
            assert!(!stale.exists());
            assert!(foreign.exists());
            let other = Internal::bind().unwrap();
            let dir = other.dir.clone();
            assert!(dir.exists());
            drop(other);
            assert!(!dir.exists(), "dropping removes the directory");
        }
    }
}
