//! The viewer's HTTP server (VIEWER.md §2.10, §6): starting and closing it, and the CLI's
//! server mode. The state and live follow are in `live.rs`, the routes in `routes.rs`.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::devtools::cli::Io;
use crate::devtools::examples;
use crate::http::{
    BindError, SecondSignal, Server, ServerConfig, SseConfig, SseHub, install_stop_signals,
};
use crate::replay::open::{OpenError, OpenStateDirOptions};
use crate::replay::open_stream::{Served, serve_state_dir};
use crate::replay::snapshot::ReplaySnapshot;

mod live;
mod routes;

use live::{Live, Shared, ledger_info, lock, poll_once};
use routes::router;

/// The CSP of `index.html` (VIEWER.md §6.7).
pub(crate) const INDEX_CSP: &str = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-src 'none'; object-src 'none'";

/// Options of [`start_devtools_server`] (VIEWER.md §4.2 `DevToolsServerOptions`).
#[derive(Clone, Debug)]
pub struct DevToolsServerOptions {
    /// The state directory (ignored when `example` is set).
    pub state_dir: Option<PathBuf>,
    /// A bundled fixture name instead of a directory.
    pub example: Option<String>,
    /// Port (4555; 0 = any free port).
    pub port: u16,
    /// Bind host (`127.0.0.1`).
    pub host: String,
    /// Follow a growing ledger (true; never for examples).
    pub live: bool,
    /// Live-follow poll interval (500 ms).
    pub poll_interval: Duration,
    /// SSE heartbeat interval (15 s).
    pub heartbeat: Duration,
    /// Dollar rates for the rollup.
    pub open: OpenStateDirOptions,
}

impl Default for DevToolsServerOptions {
    fn default() -> Self {
        DevToolsServerOptions {
            state_dir: None,
            example: None,
            port: 4555,
            host: "127.0.0.1".into(),
            live: true,
            poll_interval: Duration::from_millis(500),
            heartbeat: Duration::from_secs(15),
            open: OpenStateDirOptions::default(),
        }
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// Opening the state directory failed.
    #[error("{0}")]
    Open(#[from] OpenError),
    /// Binding failed.
    #[error("{0}")]
    Bind(#[from] BindError),
    /// Neither a state directory nor an example was given.
    #[error("no state directory or example given")]
    NoTarget,
}

/// A running viewer server (VIEWER.md §7 `DevToolsServer`).
pub struct DevToolsServer {
    server: Option<Server>,
    shared: Arc<Shared>,
    url: String,
    stop: Arc<std::sync::atomic::AtomicBool>,
    poller: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for DevToolsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevToolsServer")
            .field("url", &self.url)
            .finish()
    }
}

impl DevToolsServer {
    /// `http://<host>:<port>/` with the bound port (IPv6 literals bracketed).
    pub fn url(&self) -> &str {
        &self.url
    }
    /// The bound address.
    pub fn local_addr(&self) -> std::net::SocketAddr {
        self.server
            .as_ref()
            .map(Server::local_addr)
            .unwrap_or_else(|| ([127, 0, 0, 1], 0).into())
    }
    /// The current snapshot.
    pub fn snapshot(&self) -> Arc<ReplaySnapshot> {
        Arc::new(lock(&self.shared.live).snapshot())
    }
    /// Stops following, sends `shutdown` to every event stream and closes the server
    /// (VIEWER.md §2.10 step 5). Also runs on drop.
    pub fn close(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(s) = self.server.take() {
            s.close();
        }
        self.shared.hub.close();
        if let Some(p) = self.poller.take() {
            let _ = p.join();
        }
    }
}

impl Drop for DevToolsServer {
    fn drop(&mut self) {
        self.close();
    }
}

fn host_for_url(host: &str) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

/// Opens the target, binds, and starts serving (and following) on background threads; returns
/// once listening (VIEWER.md §7 `start_devtools_server`).
pub fn start_devtools_server(opts: DevToolsServerOptions) -> Result<DevToolsServer, ServerError> {
    let served = match (&opts.example, &opts.state_dir) {
        (Some(name), _) => examples::serve_example(name, &opts.open)?,
        (None, Some(dir)) => serve_state_dir(dir, &opts.open)?,
        (None, None) => return Err(ServerError::NoTarget),
    };
    start_with(served, opts)
}

/// [`start_devtools_server`] over a state directory already read for serving.
pub(crate) fn start_with(
    served: Served,
    opts: DevToolsServerOptions,
) -> Result<DevToolsServer, ServerError> {
    let opened = &served.opened;
    let live_enabled = opts.live && !opened.synthetic && opened.source.disk_root().is_some();
    let ledger = ledger_info(opened);
    let shared = Arc::new(Shared {
        ledger,
        live: Mutex::new(Live::new(served)),
        hub: SseHub::new(SseConfig {
            heartbeat: opts.heartbeat,
            ..SseConfig::default()
        }),
        live_enabled,
    });
    let router = router(shared.clone());
    let server = Server::start(
        ServerConfig {
            host: opts.host.clone(),
            port: opts.port,
            ..ServerConfig::default()
        },
        router,
    )?;
    let url = format!(
        "http://{}:{}/",
        host_for_url(&opts.host),
        server.local_addr().port()
    );
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let poller = if live_enabled {
        let shared = shared.clone();
        let stop = stop.clone();
        let interval = opts.poll_interval;
        Some(std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let mut slept = Duration::ZERO;
                while slept < interval && !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    let step = Duration::from_millis(20).min(interval - slept);
                    std::thread::sleep(step);
                    slept += step;
                }
                if stop.load(std::sync::atomic::Ordering::SeqCst) {
                    break;
                }
                poll_once(&shared);
            }
        }))
    } else {
        None
    };
    Ok(DevToolsServer {
        server: Some(server),
        shared,
        url,
        stop,
        poller,
    })
}

/// Server mode of the CLI (VIEWER.md §2.10): bind, print the two lines, serve until SIGINT or
/// SIGTERM, close, exit 0.
pub(crate) fn run_cli(
    served: Served,
    example: Option<String>,
    host: &str,
    port: u16,
    io: &mut Io<'_>,
) -> u8 {
    let signals = match install_stop_signals(SecondSignal::Exit {
        code: 0,
        message: None,
    }) {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(
                io.err,
                "reactor-devtools: Error: cannot install signal handlers: {e}"
            );
            return 1;
        }
    };
    let frames = served.session.frames.len();
    let nodes = match &served.opened.topology {
        Some(t) => t.nodes.len(),
        None => served.session.chains.len(),
    };
    let opts = DevToolsServerOptions {
        example,
        port,
        host: host.to_string(),
        ..DevToolsServerOptions::default()
    };
    let mut server = match start_with(served, opts) {
        Ok(s) => s,
        Err(ServerError::Bind(BindError::AddrInUse { .. })) => {
            let alt = if port == 65535 { port - 1 } else { port + 1 };
            let _ = writeln!(
                io.err,
                "reactor-devtools: Error: Port {port} on {host} is already in use. Pass a different port with --port/-p (e.g. --port {alt})."
            );
            return 1;
        }
        Err(ServerError::Bind(BindError::Resolve { reason, .. })) => {
            let _ = writeln!(
                io.err,
                "reactor-devtools: Error: cannot resolve host \"{host}\": {reason}"
            );
            return 1;
        }
        Err(ServerError::Bind(BindError::Io { source, .. })) => {
            let _ = writeln!(
                io.err,
                "reactor-devtools: Error: cannot listen on {host}:{port}: {source}"
            );
            return 1;
        }
        Err(e) => {
            let _ = writeln!(io.err, "reactor-devtools: Error: {e}");
            return 1;
        }
    };
    let _ = write!(
        io.out,
        "reactor-devtools: replaying {frames} receipt(s) across {nodes} node(s)\n  open {}\n",
        server.url()
    );
    let _ = io.out.flush();
    signals.wait();
    server.close();
    0
}

#[cfg(test)]
mod tests;
