//! Progress of the long verbs on stderr (issue 8 item 2): `compile` (sessions), `run`,
//! `trigger` and a `serve` boot (compile sessions, then renders).
//!
//! Three modes, chosen once per process ([`Progress::for_verb`]):
//!
//! - **bar** (stderr is a terminal): a live `indicatif` line, redrawn ten times a second:
//!   `⠙ compile [#####-----] 2/5 sessions · compile:canonicalizer:inbox · fresh=3700 reused=1000
//!   · 4s · waiting 3s for the model`; cleared when the work ends, so the report that follows is
//!   unchanged.
//! - **lines** (stderr is not a terminal, e.g. CI logs): one plain line per finished session or
//!   render, `reactor: compile: session 2/5 canonicalizer:inbox done in 1.2s (fresh=500
//!   reused=1000)` / `reactor: run: render 1 inbox rendered in 0.3s (fresh=42 reused=0)`.
//! - **off** (`--json` or `--quiet`): nothing.
//!
//! The hooks are decorators, so neither `compile`, `model` nor `core` knows about the display:
//! [`ProgressClient`] wraps the model client (current request, seconds waited, tokens so far),
//! [`ProgressRender`] wraps core's `Render` seam (renders done, the nodes rendering now — with
//! parallel renders the line reads `· 3 renders in flight: a, b, c`), and the compile
//! step observer calls [`Progress::session_done`].

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use crate::compile::StepCost;
use crate::core::render::{Render, RenderContext, RenderOutcome};
use crate::model::{ModelClient, ModelError, ModelRequest, ModelResponse};

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A live bar (stderr is a terminal).
    Bar,
    /// One plain line per finished session or render.
    Lines,
    /// Nothing (`--json`, `--quiet`).
    Off,
}

impl Mode {
    /// `Off` with `--json` or `--quiet`; otherwise `Bar` when stderr is a terminal, else
    /// `Lines`.
    pub(crate) fn detect(json: bool, quiet: bool) -> Mode {
        if json || quiet {
            Mode::Off
        } else if std::io::stderr().is_terminal() {
            Mode::Bar
        } else {
            Mode::Lines
        }
    }
}

#[derive(Default)]
struct State {
    /// `sessions` or `renders`.
    unit: &'static str,
    done: u64,
    total: Option<u64>,
    current: Option<String>,
    fresh: u64,
    reused: u64,
    /// Start of each request in flight (renders run in parallel under `serve`).
    waiting: Vec<(u64, Instant)>,
    /// The nodes rendering now, in start order (a drain renders up to
    /// `model.parallel_renders` at once).
    rendering: Vec<String>,
    next_request: u64,
    /// When the last session ended (or the phase began): a session's duration.
    mark: Option<Instant>,
    /// [`Progress::finish`] was called: nothing more is shown.
    finished: bool,
}

struct Inner {
    mode: Mode,
    verb: &'static str,
    started: Instant,
    /// Created by the first [`Progress::phase`] in [`Mode::Bar`] (a cache hit draws nothing).
    bar: std::sync::OnceLock<ProgressBar>,
    state: Mutex<State>,
}

/// The progress display of one verb invocation; cheap to clone and share between threads.
#[derive(Clone)]
pub(crate) struct Progress(Arc<Inner>);

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress")
            .field("mode", &self.0.mode)
            .finish()
    }
}

fn secs(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

impl Progress {
    /// A display for `verb` (`compile`, `run`, `trigger`, `serve`) in `mode`.
    pub(crate) fn new(verb: &'static str, mode: Mode) -> Progress {
        Progress(Arc::new(Inner {
            mode,
            verb,
            started: Instant::now(),
            bar: std::sync::OnceLock::new(),
            state: Mutex::new(State {
                unit: "sessions",
                ..State::default()
            }),
        }))
    }

    /// The bar, created on first use in [`Mode::Bar`].
    fn bar(&self) -> Option<&ProgressBar> {
        if self.0.mode != Mode::Bar {
            return None;
        }
        Some(self.0.bar.get_or_init(|| {
            // Style and prefix before the first draw (the default style would flash).
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
                .with_style(self.style())
                .with_prefix(self.0.verb);
            bar.enable_steady_tick(Duration::from_millis(100));
            bar
        }))
    }

    /// [`Progress::new`] with [`Mode::detect`].
    pub(crate) fn for_verb(verb: &'static str, json: bool, quiet: bool) -> Progress {
        Progress::new(verb, Mode::detect(json, quiet))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The bar's template: the counters and the current work come from the shared state at
    /// draw time, so the seconds waited grow between events.
    fn style(&self) -> ProgressStyle {
        let weak = Arc::downgrade(&self.0);
        ProgressStyle::with_template("{spinner} {prefix} {work}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner())
            .with_key(
                "work",
                move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                    if let Some(inner) = weak.upgrade() {
                        let _ = w.write_str(&Progress(inner).line());
                    }
                },
            )
    }

    /// The live line after the prefix.
    fn line(&self) -> String {
        let s = self.state();
        let mut out = match s.total {
            Some(t) => {
                let width = 20usize;
                let filled = (s.done.min(t) * width as u64)
                    .checked_div(t)
                    .map_or(width, |f| f as usize);
                format!(
                    "[{}{}] {}/{t} {}",
                    "#".repeat(filled),
                    "-".repeat(width - filled),
                    s.done,
                    s.unit
                )
            }
            None => format!("{} {} done", s.done, s.unit),
        };
        if s.rendering.len() > 1 {
            let shown: Vec<&str> = s.rendering.iter().take(3).map(String::as_str).collect();
            let more = if s.rendering.len() > 3 { ", …" } else { "" };
            let _ = write!(
                out,
                " · {} renders in flight: {}{more}",
                s.rendering.len(),
                shown.join(", ")
            );
        } else if let Some(c) = &s.current {
            let _ = write!(out, " · {c}");
        }
        let _ = write!(
            out,
            " · fresh={} reused={} · {:.0}s",
            s.fresh,
            s.reused,
            self.0.started.elapsed().as_secs_f64()
        );
        if let Some(first) = s.waiting.iter().map(|(_, t)| *t).min() {
            let _ = write!(
                out,
                " · waiting {:.0}s for the model",
                first.elapsed().as_secs_f64()
            );
        }
        out
    }

    fn redraw(&self) {
        if let Some(bar) = self.0.bar.get()
            && !bar.is_finished()
        {
            bar.tick();
        }
    }

    /// Starts counting `unit` (`sessions`, `renders`) from zero, out of `total` when known.
    pub(crate) fn phase(&self, unit: &'static str, total: Option<u64>) {
        {
            let mut s = self.state();
            s.unit = unit;
            s.done = 0;
            s.total = total;
            s.current = None;
            s.mark = Some(Instant::now());
            if s.finished {
                return;
            }
        }
        if let Some(bar) = self.bar() {
            bar.tick();
        }
    }

    /// The number of compile sessions of `set` (the Forme session, then per contract a
    /// canonicalizer session when faceted and a postcondition session).
    pub(crate) fn sessions_of(set: &crate::contract::ContractSet) -> u64 {
        1 + set
            .contracts()
            .iter()
            .map(|c| 1 + u64::from(c.is_faceted()))
            .sum::<u64>()
    }

    /// A compile session finished (the compile room's step observer).
    pub(crate) fn session_done(&self, step: &StepCost) {
        let (done, total, elapsed, finished) = {
            let mut s = self.state();
            let now = Instant::now();
            let elapsed = now.duration_since(s.mark.unwrap_or(self.0.started));
            s.mark = Some(now);
            s.done += 1;
            if let Some(t) = s.total
                && s.done > t
            {
                s.total = Some(s.done);
            }
            s.current = None;
            (s.done, s.total, elapsed, s.finished)
        };
        if self.0.mode == Mode::Lines && !finished {
            let of = total.map(|t| format!("/{t}")).unwrap_or_default();
            eprintln!(
                "reactor: {}: session {done}{of} {} done in {} (fresh={} reused={})",
                self.0.verb,
                step.step.label(),
                secs(elapsed),
                step.tokens.fresh,
                step.tokens.reused
            );
        }
        self.redraw();
    }

    fn render_started(&self, node: &str) {
        {
            let mut s = self.state();
            s.rendering.push(node.to_string());
            s.current = Some(format!("render:{node}"));
        }
        self.redraw();
    }

    fn render_done(&self, node: &str, outcome: &RenderOutcome, elapsed: Duration) {
        let (done, total, finished) = {
            let mut s = self.state();
            s.done += 1;
            if let Some(t) = s.total
                && s.done > t
            {
                s.total = Some(s.done);
            }
            if let Some(i) = s.rendering.iter().position(|n| n == node) {
                s.rendering.remove(i);
            }
            s.current = s.rendering.last().map(|n| format!("render:{n}"));
            (s.done, s.total, s.finished)
        };
        if self.0.mode == Mode::Lines && !finished {
            let (word, usage) = match outcome {
                RenderOutcome::Done(p) => ("rendered", p.usage.as_ref()),
                RenderOutcome::Failed(f) => ("failed", f.usage.as_ref()),
            };
            let tokens = usage
                .map(|u| format!(" (fresh={} reused={})", u.fresh, u.reused))
                .unwrap_or_default();
            let of = total.map(|t| format!("/{t}")).unwrap_or_default();
            eprintln!(
                "reactor: {}: render {done}{of} {node} {word} in {}{tokens}",
                self.0.verb,
                secs(elapsed)
            );
        }
        self.redraw();
    }

    fn request_started(&self, purpose: &str) -> u64 {
        let id = {
            let mut s = self.state();
            let id = s.next_request;
            s.next_request += 1;
            s.waiting.push((id, Instant::now()));
            if s.current.is_none() || purpose.starts_with("compile:") {
                s.current = Some(purpose.to_string());
            }
            id
        };
        self.redraw();
        id
    }

    fn request_done(&self, id: u64, tokens: Option<(u64, u64)>) {
        {
            let mut s = self.state();
            s.waiting.retain(|(i, _)| *i != id);
            if let Some((fresh, reused)) = tokens {
                s.fresh += fresh;
                s.reused += reused;
            }
        }
        self.redraw();
    }

    /// Runs `f` (which prints) with the bar hidden, so the two do not mix on the terminal.
    pub(crate) fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match self.0.bar.get() {
            Some(bar) if !bar.is_finished() => bar.suspend(f),
            _ => f(),
        }
    }

    /// Ends the display: the bar is cleared (the verb's report follows on stdout).
    pub(crate) fn finish(&self) {
        self.state().finished = true;
        if let Some(bar) = self.0.bar.get() {
            bar.finish_and_clear();
        }
    }

    /// Wraps a model client so its requests feed the display (a no-op wrapper when off).
    pub(crate) fn client(&self, inner: Arc<dyn ModelClient>) -> Arc<dyn ModelClient> {
        if self.0.mode == Mode::Off {
            return inner;
        }
        Arc::new(ProgressClient {
            inner,
            progress: self.clone(),
        })
    }

    /// Wraps a render so each render feeds the display (a no-op wrapper when off).
    pub(crate) fn render(&self, inner: Arc<dyn Render>) -> Arc<dyn Render> {
        if self.0.mode == Mode::Off {
            return inner;
        }
        Arc::new(ProgressRender {
            inner,
            progress: self.clone(),
        })
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(bar) = self.bar.get() {
            bar.finish_and_clear();
        }
    }
}

/// A model client that reports each request's start and its tokens to a [`Progress`].
pub(crate) struct ProgressClient {
    inner: Arc<dyn ModelClient>,
    progress: Progress,
}

impl ModelClient for ProgressClient {
    fn complete(&self, req: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let id = self.progress.request_started(&req.purpose);
        let result = self.inner.complete(req);
        let tokens = result.as_ref().ok().map(|r| {
            let t = r.usage.tokens();
            (t.fresh, t.reused)
        });
        self.progress.request_done(id, tokens);
        result
    }
}

/// A render that reports each render's start and end to a [`Progress`] (core's `Render` seam
/// stays unaware of the display).
pub(crate) struct ProgressRender {
    inner: Arc<dyn Render>,
    progress: Progress,
}

impl Render for ProgressRender {
    fn render(&self, ctx: &RenderContext<'_>) -> RenderOutcome {
        self.progress.render_started(ctx.node);
        let started = Instant::now();
        let outcome = self.inner.render(ctx);
        self.progress
            .render_done(ctx.node, &outcome, started.elapsed());
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_live_line_shows_counts_current_work_tokens_and_waits() {
        let p = Progress::new("compile", Mode::Lines);
        p.phase("sessions", Some(5));
        assert!(
            p.line()
                .starts_with("[--------------------] 0/5 sessions · fresh=0 reused=0 · ")
        );
        let id = p.request_started("compile:forme");
        let line = p.line();
        assert!(line.contains(" · compile:forme · "), "{line}");
        assert!(line.ends_with("s for the model"), "{line}");
        p.request_done(id, Some((2300, 10)));
        let line = p.line();
        assert!(line.contains("fresh=2300 reused=10"), "{line}");
        assert!(!line.contains("waiting"), "{line}");
        p.phase("renders", None);
        assert!(p.line().starts_with("0 renders done · "), "{}", p.line());
    }

    #[test]
    fn the_live_line_lists_the_renders_in_flight() {
        let p = Progress::new("run", Mode::Off);
        p.phase("renders", Some(5));
        for n in ["a", "b", "c", "d"] {
            p.render_started(n);
        }
        let line = p.line();
        assert!(
            line.contains(" · 4 renders in flight: a, b, c, … · "),
            "{line}"
        );
        let done = RenderOutcome::Done(Default::default());
        p.render_done("b", &done, Duration::ZERO);
        p.render_done("d", &done, Duration::ZERO);
        let line = p.line();
        assert!(
            line.contains(" 2/5 renders · 2 renders in flight: a, c · "),
            "{line}"
        );
        p.render_done("a", &done, Duration::ZERO);
        let line = p.line();
        assert!(line.contains(" 3/5 renders · render:c · "), "{line}");
        p.render_done("c", &done, Duration::ZERO);
        let line = p.line();
        assert!(
            line.contains(" 4/5 renders · fresh=0 reused=0 · "),
            "{line}"
        );
        assert!(
            !line.contains("render:") && !line.contains("in flight"),
            "{line}"
        );
    }
}
