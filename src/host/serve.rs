//! `reactor serve` (HOST.md §9): boot every reactor of the project, optionally serve the
//! daemon's HTTP surface, and run the continuity loop (gateway polls, continuity, a cost line,
//! a fixed sleep) until SIGINT or SIGTERM; then drain every queue and exit 0.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::format::json;
use crate::host::args::{ArgStream, Globals, OwnedArg};
use crate::host::boot::{self, ModelPlan};
use crate::host::connectors::{ArrivalDrain, ConnectorKind, poll_gateway};
use crate::host::daemon::{Daemon, router_with_metrics};
use crate::host::error::{ErrorKind, HostError};
use crate::host::events::{DrainSummary, Event, GatewayPoll, Out, PollOutcome};
use crate::host::hosted::HostedReactor;
use crate::host::metrics::Metrics;
use crate::host::progress::Progress;
use crate::host::queue::TaskPool;
use crate::host::report::DispositionRow;
use crate::host::rollup::CostRollup;
use crate::http::{
    BearerAuth, SecondSignal, Server, ServerConfig, install_stop_signals, is_loopback_host,
};
use crate::store::lock::StateLock;

/// `reactor serve --help`.
pub(crate) const HELP: &str = "reactor serve — the durable host: boot, serve, poll, until stopped

Usage:
  reactor serve [--http <port>] [--host <addr>] [--concurrency <n>] [--poll-interval <ms>]
                [--auth-token-env <NAME>] [--metrics] [--parallel-renders <n>]
                [global flags]

Flags:
  --http <port>            Serve the daemon routes on this port (0 picks a free port)
  --host <addr>            Bind address (default 127.0.0.1); requires --http
  --concurrency <n>        Reactors worked on in parallel (default 1)
  --poll-interval <ms>     Sleep between ticks, at least 100 (default 60000)
  --auth-token-env <NAME>  Require `Authorization: Bearer <$NAME>` (at least 16 characters);
                           requires --http
  --metrics                Add GET /metrics (Prometheus text format; behind the same auth);
                           requires --http
  --parallel-renders <n>   Renders run at once within one reactor's drain, 1-64 (default
                           model.parallel_renders, 4); receipts commit in the same order

Routes: POST /trigger/<node>, GET /health /status /cost /topology /receipts /nodes/<node>
(prefixed /<reactor> on a multi-reactor host). SIGINT or SIGTERM starts no new render: the
renders in flight finish and commit, the rest is left to the next boot's sweep, and serve exits
0; a second signal abandons the renders in flight (no receipt) and exits 1.
";

/// Parsed arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Args {
    /// `--http`.
    pub http: Option<u16>,
    /// `--host`.
    pub host: Option<String>,
    /// `--concurrency`.
    pub concurrency: usize,
    /// `--poll-interval` (ms).
    pub poll_interval: u64,
    /// `--auth-token-env`.
    pub auth_token_env: Option<String>,
    /// `--metrics`: add `GET /metrics` (issue 8 item 10).
    pub metrics: bool,
    /// `--parallel-renders` (overrides `model.parallel_renders`).
    pub parallel_renders: Option<usize>,
}

impl Default for Args {
    fn default() -> Self {
        Args {
            http: None,
            host: None,
            concurrency: 1,
            poll_interval: 60_000,
            auth_token_env: None,
            metrics: false,
            parallel_renders: None,
        }
    }
}

fn digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Parses `serve` arguments; bad values are usage errors naming the flag (exit 2).
pub fn parse(s: &mut ArgStream<'_>) -> Result<Args, HostError> {
    let mut a = Args::default();
    let bad = |flag: &str, why: &str| HostError::usage(format!("{flag}: {why}"), Some("serve"));
    while let Some(arg) = s.next_arg()? {
        match &arg {
            OwnedArg::Long(l) if l == "http" => {
                let v = s.value("--http")?;
                a.http = Some(
                    v.parse::<u16>()
                        .ok()
                        .filter(|_| digits(&v))
                        .ok_or_else(|| {
                            bad(
                                "--http",
                                &format!("'{v}' is not a port (an integer 0-65535)"),
                            )
                        })?,
                );
            }
            OwnedArg::Long(l) if l == "host" => a.host = Some(s.value("--host")?),
            OwnedArg::Long(l) if l == "concurrency" => {
                let v = s.value("--concurrency")?;
                a.concurrency = v
                    .parse::<usize>()
                    .ok()
                    .filter(|n| *n >= 1 && digits(&v))
                    .ok_or_else(|| {
                        bad(
                            "--concurrency",
                            &format!("'{v}' is not an integer of at least 1"),
                        )
                    })?;
            }
            OwnedArg::Long(l) if l == "poll-interval" => {
                let v = s.value("--poll-interval")?;
                a.poll_interval = v
                    .parse::<u64>()
                    .ok()
                    .filter(|n| *n >= 100 && digits(&v))
                    .ok_or_else(|| {
                        bad(
                            "--poll-interval",
                            &format!("'{v}' is not an integer of at least 100 (ms)"),
                        )
                    })?;
            }
            OwnedArg::Long(l) if l == "auth-token-env" => {
                let v = s.value("--auth-token-env")?;
                let ok = v
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !ok {
                    return Err(bad(
                        "--auth-token-env",
                        &format!("'{v}' is not an environment variable name"),
                    ));
                }
                a.auth_token_env = Some(v);
            }
            OwnedArg::Long(l) if l == "metrics" => {
                s.no_value("--metrics")?;
                a.metrics = true;
            }
            OwnedArg::Long(l) if l == "parallel-renders" => {
                a.parallel_renders = Some(s.parallel_renders()?);
            }
            _ => return Err(s.unexpected(&arg)),
        }
    }
    if a.metrics && a.http.is_none() {
        return Err(HostError::usage("--metrics requires --http", Some("serve")));
    }
    if a.host.is_some() && a.http.is_none() {
        return Err(HostError::usage("--host requires --http", Some("serve")));
    }
    if a.auth_token_env.is_some() && a.http.is_none() {
        return Err(HostError::usage(
            "--auth-token-env requires --http",
            Some("serve"),
        ));
    }
    Ok(a)
}

/// The URL a local client should use (unspecified bind → loopback; IPv6 bracketed).
fn client_url(host: &str, port: u16) -> String {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    let h = match h {
        "0.0.0.0" => "127.0.0.1",
        "::" => "::1",
        other => other,
    };
    if h.contains(':') {
        format!("http://[{h}]:{port}/")
    } else {
        format!("http://{h}:{port}/")
    }
}

/// Runs `reactor serve`.
pub fn exec(a: Args, g: &Globals) -> Result<ExitCode, HostError> {
    let out = Out::for_json(g.json);
    match serve(a, g, &out) {
        Ok(code) => Ok(code),
        Err(e) => {
            if g.json {
                let event = Event::Error {
                    message: &e.message,
                };
                // HOST.md §9: one NDJSON `error` event on stdout, not a second document.
                out.event(&event);
                Err(e.with_json_printed())
            } else {
                Err(e)
            }
        }
    }
}

/// The `serve.json` files this process wrote (HOST.md §7.2). They are removed on every exit the
/// process controls: a clean stop or an error return (the [`Cleanup`] guard is dropped), and
/// the forced exit of a second signal (a hook of the signal thread, which runs no destructors).
/// Writing a file and removing the files both hold the lock, so a forced exit never races a
/// file being written.
#[derive(Clone, Default)]
struct ServeFiles(Arc<Mutex<Vec<std::path::PathBuf>>>);

impl ServeFiles {
    /// Writes one `serve.json` and records it.
    fn write(&self, path: std::path::PathBuf, bytes: &[u8]) -> std::io::Result<()> {
        let mut files = self.0.lock().unwrap_or_else(|e| e.into_inner());
        files.push(path.clone());
        crate::store::fsutil::write_atomic(&path, bytes)
    }

    /// Removes every recorded file (best effort) and forgets them.
    fn remove_all(&self) {
        let mut files = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for f in files.drain(..) {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// Removes the `serve.json` files when dropped.
struct Cleanup(ServeFiles);

impl Drop for Cleanup {
    fn drop(&mut self) {
        self.0.remove_all();
    }
}

/// The `serve --auth-token-env` token, read at startup (HOST.md §9.1 step 1).
fn auth_token(a: &Args) -> Result<Option<String>, HostError> {
    match &a.auth_token_env {
        Some(name) => match std::env::var(name) {
            Ok(t) if t.chars().count() >= 16 => Ok(Some(t)),
            _ => Err(HostError::config(format!(
                "--auth-token-env {name}: the variable is unset or shorter than 16 characters"
            ))),
        },
        None => Ok(None),
    }
}

/// What booting every reactor produced (HOST.md §9.1 step 3).
struct Booted {
    locks: Vec<StateLock>,
    hosted: Vec<Arc<HostedReactor>>,
    /// A stop signal arrived during boot.
    stopped: bool,
}

/// Boots each reactor in configuration order: lock, compile if stale, load, boot drain. The
/// boot's compile sessions and renders go to `access.progress` (finished before returning);
/// with `metrics`, every receipt, drain and model request is counted from here on.
fn boot_reactors(
    project: &crate::host::project::Project,
    plan: &ModelPlan,
    access: boot::Access<'_>,
    metrics: Option<&Arc<Metrics>>,
    signals: &crate::http::StopSignals,
    since_start: &Arc<Mutex<CostRollup>>,
    out: &Out,
) -> Result<Booted, HostError> {
    let boot::Access {
        client,
        key,
        progress,
    } = access;
    let mut booted = Booted {
        locks: Vec::new(),
        hosted: Vec::new(),
        stopped: false,
    };
    for (i, spec) in project.reactors.iter().enumerate() {
        booted.locks.push(boot::take_lock(&spec.state_dir)?);
        boot::load_contracts(spec)?;
        let prepared = boot::prepare(
            project,
            spec,
            plan,
            boot::Access {
                client: client.clone(),
                key,
                progress,
            },
            "compile failed",
            |_| Ok(()),
        )
        .map_err(|e| match e.message.strip_prefix("compile failed: ") {
            Some(rest) => HostError::new(
                ErrorKind::Model,
                format!(
                    "compile failed (IR stale, refresh failed) for reactor \"{}\": {rest}",
                    spec.name
                ),
            )
            .with_hint("run `reactor compile` first to see the full report"),
            None => e,
        })?;
        if let boot::CompileOutcome::CacheHit { drift: Some(w) } = &prepared.outcome {
            out.event(&Event::Warning { message: w });
        }
        let reactor = prepared.reactor;
        // After a stop signal a drain starts no new render (HOST.md §9.4).
        reactor.set_stop_flag(signals.flag());
        crate::host::inflight::record_in_flight(&reactor);
        let tap = since_start.clone();
        reactor.on_receipt(move |r| tap.lock().unwrap_or_else(|e| e.into_inner()).add_receipt(r));
        if let Some(m) = metrics {
            let (m, name) = (m.clone(), spec.name.clone());
            reactor.on_receipt(move |r| m.receipt(&name, r));
        }
        let gateways = spec.gateways.iter().map(|gc| gc.to_spec()).collect();
        let h = Arc::new(HostedReactor::new(
            &spec.name,
            i,
            Arc::new(reactor),
            gateways,
        ));
        if let Some(m) = metrics {
            h.set_metrics(m.clone());
        }
        let results = h.reactor.boot()?;
        let rows = DispositionRow::of(&results);
        let count = |d: &str| rows.iter().filter(|r| r.disposition == d).count();
        progress.suspend(|| {
            out.line(&format!(
                "reactor serve — booted \"{}\" (rendered={} skipped={} failed={})",
                spec.name,
                count("rendered"),
                count("skipped"),
                count("failed")
            ))
        });
        out.event(&Event::Booted {
            reactor: &spec.name,
            dispositions: rows,
        });
        booted.hosted.push(h);
        if signals.is_requested() {
            booted.stopped = true;
            break;
        }
    }
    progress.finish();
    Ok(booted)
}

/// Starts the HTTP surface (HOST.md §9.1 step 4): the `HTTP on` line, the `listening` event
/// and the non-loopback warning (§9.6). Returns the server and its client URL.
fn listen(
    a: &Args,
    port: u16,
    daemon: Arc<Daemon>,
    token: Option<&str>,
    metrics: Option<Arc<Metrics>>,
    out: &Out,
) -> Result<(Server, String), HostError> {
    let host = a.host.clone().unwrap_or_else(|| "127.0.0.1".into());
    let auth = token.map(BearerAuth::new);
    let s = Server::start(
        ServerConfig {
            host: host.clone(),
            port,
            // On a loopback bind, requests naming a foreign `Host` are refused (403), as in
            // the viewer: a defence against DNS rebinding reaching POST /trigger.
            ..ServerConfig::default()
        },
        router_with_metrics(daemon, auth, metrics),
    )
    .map_err(|e| HostError::state(format!("cannot listen on {host}:{port}: {e}")))?;
    let bound = s.local_addr().port();
    out.line(&format!("reactor serve — HTTP on {host}:{bound}"));
    let loopback = is_loopback_host(&host);
    let url = client_url(&host, bound);
    out.event(&Event::Listening {
        url: url.trim_end_matches('/'),
        loopback,
        auth: token.is_some(),
    });
    if !loopback {
        let warning = match &a.auth_token_env {
            None => format!(
                "WARNING: bound to {host} (not loopback) with NO auth — an unauthenticated POST /trigger/<node> can cause model spend. Put it behind a reverse proxy or network policy, or use --auth-token-env."
            ),
            Some(name) => format!(
                "WARNING: bound to {host} (not loopback); bearer-token auth is on (token from ${name}) but traffic is not encrypted — terminate TLS in front of it."
            ),
        };
        out.line(&format!("  {warning}"));
        out.event(&Event::Warning { message: &warning });
    }
    Ok((s, url))
}

/// `serve.json` (HOST.md §7.2): `{"pid", "url", "reactor", "prefix", "auth_token_env",
/// "started_at"}`.
#[derive(Debug, Serialize)]
struct ServeRecord<'a> {
    pid: u32,
    url: Option<&'a str>,
    reactor: &'a str,
    prefix: String,
    auth_token_env: Option<&'a str>,
    started_at: &'a str,
}

/// Writes `serve.json` into every hosted reactor's state directory.
fn write_serve_files(
    files: &ServeFiles,
    hosted: &[Arc<HostedReactor>],
    url: Option<&str>,
    multi: bool,
    auth_token_env: Option<&str>,
) -> Result<(), HostError> {
    let started_at = crate::compile::cache::iso_millis(jiff::Timestamp::now());
    for h in hosted {
        let record = ServeRecord {
            pid: std::process::id(),
            url,
            reactor: &h.name,
            prefix: if multi {
                format!("/{}", h.name)
            } else {
                String::new()
            },
            auth_token_env,
            started_at: &started_at,
        };
        let path = h.reactor.state_dir().join("serve.json");
        files
            .write(path.clone(), &json::to_js_pretty(&record))
            .map_err(|e| HostError::state(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(())
}

fn serve(a: Args, g: &Globals, out: &Out) -> Result<ExitCode, HostError> {
    let project = g.load_project()?;
    let offline = g.offline()?;
    let plan = ModelPlan::resolve(&project, offline)?.with_parallel_renders(a.parallel_renders);
    let key = plan.require_key(&project)?;
    let token = auth_token(&a)?;
    let signals = install_stop_signals(SecondSignal::Exit {
        code: 1,
        message: Some("reactor serve — second signal: abandoning in-flight work.".into()),
    })
    .map_err(|e| HostError::internal(format!("cannot install signal handlers: {e}")))?;
    let serve_files = ServeFiles::default();
    let cleanup = Cleanup(serve_files.clone());
    {
        let files = serve_files.clone();
        signals.on_forced_exit(move || files.remove_all());
    }
    let metrics = a.metrics.then(|| Arc::new(Metrics::new()));
    let client = match &metrics {
        Some(m) => m.client(&plan.config.provider, plan.client(key.clone())?),
        None => plan.client(key.clone())?,
    };
    // Progress of the boot (compile sessions, boot renders); later drains are not shown here.
    let progress = Progress::for_verb("serve", g.json, g.quiet);
    let since_start = Arc::new(Mutex::new(CostRollup::new()));
    let Booted {
        locks,
        hosted,
        stopped,
    } = boot_reactors(
        &project,
        &plan,
        boot::Access {
            client,
            key: key.as_ref(),
            progress: &progress,
        },
        metrics.as_ref(),
        &signals,
        &since_start,
        out,
    )?;
    if stopped {
        out.line("reactor serve — drained in-flight work; exiting.");
        out.event(&Event::Stopped { forced: false });
        return Ok(ExitCode::SUCCESS);
    }
    let pool = Arc::new(TaskPool::new(hosted.len(), a.concurrency));
    let stopping = Arc::new(AtomicBool::new(false));
    let daemon = Arc::new(Daemon {
        reactors: hosted.clone(),
        pool: pool.clone(),
        single: !project.multi,
        stopping: stopping.clone(),
        out: *out,
    });
    let (mut server, url) = match a.http {
        Some(port) => {
            let (s, url) = listen(&a, port, daemon, token.as_deref(), metrics, out)?;
            (Some(s), Some(url))
        }
        None => (None, None),
    };
    write_serve_files(
        &serve_files,
        &hosted,
        url.as_deref(),
        project.multi,
        a.auth_token_env.as_deref(),
    )?;
    out.line(&format!(
        "reactor serve — host booted ({} reactor(s); concurrency {}). Ctrl-C to stop.",
        hosted.len(),
        a.concurrency
    ));
    out.event(&Event::Ready {
        reactors: hosted.len(),
        concurrency: a.concurrency,
    });

    let interval = Duration::from_millis(a.poll_interval);
    let mut first = true;
    while !signals.is_requested() {
        tick(
            &hosted,
            &pool,
            first,
            offline,
            project.multi,
            out,
            &since_start,
        );
        first = false;
        let start = Instant::now();
        while start.elapsed() < interval && !signals.is_requested() {
            let left = interval
                .saturating_sub(start.elapsed())
                .min(Duration::from_millis(250));
            let _ = signals.wait_timeout(left);
        }
    }
    // Shutdown (HOST.md §9.4).
    stopping.store(true, Ordering::SeqCst);
    pool.wait_idle();
    if let Some(s) = server.take() {
        s.close();
    }
    drop(cleanup);
    crate::host::run::cleanup_work();
    drop(locks);
    out.line("reactor serve — drained in-flight work; exiting.");
    out.event(&Event::Stopped { forced: false });
    Ok(ExitCode::SUCCESS)
}

/// One tick of the continuity loop (HOST.md §9.3).
fn tick(
    hosted: &[Arc<HostedReactor>],
    pool: &Arc<TaskPool>,
    first: bool,
    offline: bool,
    multi: bool,
    out: &Out,
    since_start: &Arc<Mutex<CostRollup>>,
) {
    let now = Instant::now();
    let as_of = crate::compile::cache::iso_millis(jiff::Timestamp::now());
    let mut pending = Vec::new();
    for h in hosted {
        let mut last = h.last_poll.lock().unwrap_or_else(|e| e.into_inner());
        for (gi, gw) in h.gateways.iter().enumerate() {
            let due = first
                || match (gw.poll, last[gi]) {
                    (None, _) | (_, None) => true,
                    (Some(p), Some(prev)) => now.duration_since(prev) >= p,
                };
            if !due {
                continue;
            }
            last[gi] = Some(now);
            let label = if multi {
                format!("{}/{}", h.name, gw.source_id)
            } else {
                gw.source_id.clone()
            };
            if offline && matches!(gw.connector.kind, ConnectorKind::Http { .. }) {
                pending.push((h.name.clone(), gw.source_id.clone(), label, None));
                continue;
            }
            let task_h = h.clone();
            let source_id = gw.source_id.clone();
            let gw = gw.clone();
            let as_of = as_of.clone();
            let out = *out;
            let rx = pool.submit(h.index, move || {
                let started = Instant::now();
                let mut on_drain = |d: &ArrivalDrain| {
                    let summary = DrainSummary::new(
                        &task_h.name,
                        &gw.node,
                        Some(d.arrival_id.clone()),
                        &d.results,
                        d.receipts_added,
                        d.took,
                    );
                    out.line(&summary.line("drain"));
                    out.event(&Event::Drain(&summary));
                };
                let polled = poll_gateway(
                    &task_h.reactor,
                    &gw.node,
                    &gw.source_id,
                    &gw.connector,
                    &as_of,
                    &mut on_drain,
                );
                task_h.observe_drain("poll", started.elapsed());
                polled
                    .map(|r| (r.ingested_ids.len(), r.skipped_ids.len(), r.warnings))
                    .map_err(|e| e.to_string())
            });
            pending.push((h.name.clone(), source_id, label, Some(rx)));
        }
    }
    let mut polls = Vec::new();
    for (reactor, source_id, label, rx) in pending {
        let outcome = match rx.map(|r| r.recv()) {
            None => PollOutcome::Offline { skipped: "offline" },
            Some(Ok(Some(Ok((ingested, skipped, warnings))))) => {
                for w in warnings {
                    crate::host::output::warn(&w);
                }
                PollOutcome::Polled { ingested, skipped }
            }
            Some(Ok(Some(Err(msg)))) => PollOutcome::Failed {
                error: crate::format::sanitize::redact(&msg, &[]),
            },
            Some(_) => PollOutcome::Failed {
                error: "the poll task did not finish".into(),
            },
        };
        polls.push(GatewayPoll {
            reactor,
            source_id,
            outcome,
            label,
        });
    }
    // Continuity: nothing is armed in v1 (RUNTIME.md §10.4); one task per reactor, in order.
    let continuity: Vec<_> = hosted.iter().map(|h| pool.submit(h.index, || ())).collect();
    for rx in continuity {
        let _ = rx.recv();
    }
    if !polls.is_empty() {
        let parts: Vec<String> = polls.iter().map(GatewayPoll::fragment).collect();
        out.line(&format!("gateways: {}", parts.join("; ")));
    }
    let rollup = since_start
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    out.line(&rollup.one_line());
    out.event(&Event::Tick {
        at: &as_of,
        gateways: &polls,
        cost: &rollup,
    });
}
