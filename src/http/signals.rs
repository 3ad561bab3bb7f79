//! SIGINT/SIGTERM handling for servers: the first signal requests a graceful shutdown, a second
//! one exits at once (VIEWER.md §2.10 step 5: exit 0 silently; HOST.md §9.4: print a line and
//! exit 1).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::Receiver;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// What a second stop signal does while the first one's shutdown is running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecondSignal {
    /// Print `message` (when given) as one line on stdout, then `std::process::exit(code)`.
    Exit {
        /// The process exit code (viewer 0, host 1).
        code: i32,
        /// A line to print first, without the newline.
        message: Option<String>,
    },
    /// Ignore further signals.
    Ignore,
}

/// Failure to install the handlers.
#[derive(Debug, thiserror::Error)]
pub enum SignalError {
    /// signal-hook could not register a handler.
    #[error("cannot install signal handlers: {0}")]
    Install(#[source] std::io::Error),
    /// The listening thread could not be started.
    #[error("cannot start the signal thread: {0}")]
    Thread(#[source] std::io::Error),
}

/// Installed SIGINT/SIGTERM handlers. The first signal's number is delivered once on
/// [`StopSignals::receiver`] and sets [`StopSignals::is_requested`].
///
/// Dropping it stops the listening thread; the handlers stay registered (signal-hook does not
/// restore default dispositions), so later signals are then ignored. Keep it alive for the
/// life of the process.
pub struct StopSignals {
    rx: Receiver<i32>,
    requested: Arc<AtomicBool>,
    exit_hooks: ExitHooks,
    handle: signal_hook::iterator::Handle,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for StopSignals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StopSignals")
            .field("requested", &self.is_requested())
            .finish()
    }
}

/// Work to do before a [`SecondSignal::Exit`] ends the process (destructors do not run then).
type ExitHooks = Arc<Mutex<Vec<Box<dyn Fn() + Send>>>>;

/// Installs the handlers. Errors: [`SignalError`].
pub fn install_stop_signals(second: SecondSignal) -> Result<StopSignals, SignalError> {
    let mut signals = Signals::new([SIGINT, SIGTERM]).map_err(SignalError::Install)?;
    let handle = signals.handle();
    let (tx, rx) = crossbeam_channel::bounded(1);
    let requested = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&requested);
    let exit_hooks: ExitHooks = Arc::default();
    let hooks = Arc::clone(&exit_hooks);
    let thread = std::thread::Builder::new()
        .name("stop-signals".to_owned())
        .spawn(move || {
            for signal in signals.forever() {
                if !flag.swap(true, Ordering::SeqCst) {
                    let _ = tx.try_send(signal);
                    continue;
                }
                if let SecondSignal::Exit { code, message } = &second {
                    for hook in hooks.lock().unwrap_or_else(|e| e.into_inner()).iter() {
                        hook();
                    }
                    if let Some(line) = message {
                        let mut out = std::io::stdout().lock();
                        let _ = writeln!(out, "{line}").and_then(|()| out.flush());
                    }
                    std::process::exit(*code);
                }
            }
        })
        .map_err(SignalError::Thread)?;
    Ok(StopSignals {
        rx,
        requested,
        exit_hooks,
        handle,
        thread: Some(thread),
    })
}

impl StopSignals {
    /// Blocks until the first signal; returns its number (`SIGINT` = 2, `SIGTERM` = 15).
    /// `None` if the listening thread ended without one.
    pub fn wait(&self) -> Option<i32> {
        self.rx.recv().ok()
    }

    /// Like [`StopSignals::wait`] with a timeout; `None` when none arrived in time.
    pub fn wait_timeout(&self, timeout: Duration) -> Option<i32> {
        self.rx.recv_timeout(timeout).ok()
    }

    /// Registers work to run when a second signal exits the process at once
    /// ([`SecondSignal::Exit`]), before its line is printed: the process's own cleanup (a
    /// server removing the files it advertised itself with). Hooks run in registration order.
    pub(crate) fn on_forced_exit(&self, hook: impl Fn() + Send + 'static) {
        self.exit_hooks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Box::new(hook));
    }

    /// Whether a stop signal has arrived.
    pub fn is_requested(&self) -> bool {
        self.requested.load(Ordering::SeqCst)
    }

    /// The flag behind [`StopSignals::is_requested`], for work that polls it on other threads
    /// (a reactor's drain stops starting renders once it is set).
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.requested)
    }
}

impl Drop for StopSignals {
    fn drop(&mut self) {
        self.handle.close();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
