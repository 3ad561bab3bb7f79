//! What `serve` says (HOST.md §9.1–§9.7): its text lines on stdout, or one NDJSON event per
//! line under `--json`, both rendered from the same typed values. Besides the boot, listening,
//! tick and stop events, every `POST /trigger/<node>` and every drain of a gateway arrival is
//! reported with the same members (reactor, node, arrival id, dispositions, receipts added,
//! tokens, duration).

use std::io::Write;
use std::time::Duration;

use serde::Serialize;

use crate::core::ReconcileResult;
use crate::format::json;
use crate::host::report::DispositionRow;
use crate::host::rollup::{CostRollup, Tokens};

/// One `serve --json` event (HOST.md §9.7): an object whose first member is `event`.
#[derive(Debug, Serialize)]
#[serde(tag = "event", rename_all = "lowercase")]
pub enum Event<'a> {
    /// A reactor booted: `{"event": "booted", "reactor", "dispositions"}`.
    Booted {
        /// The reactor.
        reactor: &'a str,
        /// The boot drain's results.
        dispositions: Vec<DispositionRow>,
    },
    /// The HTTP surface listens: `{"event": "listening", "url", "loopback", "auth"}`.
    Listening {
        /// The client URL, without its trailing slash.
        url: &'a str,
        /// The bind address is loopback.
        loopback: bool,
        /// Bearer-token auth is on.
        auth: bool,
    },
    /// The host is up: `{"event": "ready", "reactors", "concurrency"}`.
    Ready {
        /// Hosted reactors.
        reactors: usize,
        /// The worker pool size.
        concurrency: usize,
    },
    /// One tick: `{"event": "tick", "at", "gateways", "cost"}`.
    Tick {
        /// When the tick started.
        at: &'a str,
        /// The gateway polls of the tick.
        gateways: &'a [GatewayPoll],
        /// The rollup of the receipts appended since the daemon started.
        cost: &'a CostRollup,
    },
    /// A warning: `{"event": "warning", "message"}`.
    Warning {
        /// The warning.
        message: &'a str,
    },
    /// The daemon stopped: `{"event": "stopped", "forced"}`.
    Stopped {
        /// A second signal abandoned in-flight work.
        forced: bool,
    },
    /// One `POST /trigger/<node>` handled: `{"event": "trigger", …}` with the members of
    /// [`DrainSummary`].
    Trigger(&'a DrainSummary),
    /// One gateway arrival staged and drained: `{"event": "drain", …}` with the members of
    /// [`DrainSummary`].
    Drain(&'a DrainSummary),
    /// A startup failure: `{"event": "error", "message"}`.
    Error {
        /// The error message.
        message: &'a str,
    },
}

/// One gateway poll of a tick: JSON `{"reactor", "source_id", …}` with `"ingested",
/// "skipped"` counts, `"skipped": "offline"` or `"error"`.
#[derive(Clone, Debug, Serialize)]
pub struct GatewayPoll {
    /// The reactor.
    pub reactor: String,
    /// The gateway's `source_id`.
    pub source_id: String,
    /// What the poll did.
    #[serde(flatten)]
    pub outcome: PollOutcome,
    /// `source_id`, prefixed `<reactor>/` on a multi-reactor host.
    #[serde(skip)]
    pub label: String,
}

/// What one gateway poll did.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum PollOutcome {
    /// Arrivals staged and duplicates skipped.
    Polled {
        /// New arrivals.
        ingested: usize,
        /// Duplicates.
        skipped: usize,
    },
    /// An `http` connector in offline mode: `"skipped": "offline"`.
    Offline {
        /// Always `offline`.
        skipped: &'static str,
    },
    /// The poll failed.
    Failed {
        /// The sanitized message.
        error: String,
    },
}

impl GatewayPoll {
    /// The heartbeat fragment: `<label> ingested=<n> skipped=<m>`, `<label> skipped: offline` or
    /// `<label> error: <message>` (HOST.md §9.3).
    pub(crate) fn fragment(&self) -> String {
        match &self.outcome {
            PollOutcome::Polled { ingested, skipped } => {
                format!("{} ingested={ingested} skipped={skipped}", self.label)
            }
            PollOutcome::Offline { .. } => format!("{} skipped: offline", self.label),
            PollOutcome::Failed { error } => format!("{} error: {error}", self.label),
        }
    }
}

/// Where `serve` output goes: text lines on stdout, NDJSON events on stdout under `--json`
/// (HOST.md §9.7), or nowhere (a daemon embedded in a test or a benchmark).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Out {
    /// Text lines.
    Text,
    /// NDJSON events.
    Json,
    /// Nothing.
    Silent,
}

impl Out {
    /// `Json` with `--json`, else `Text`.
    pub(crate) fn for_json(json: bool) -> Out {
        if json { Out::Json } else { Out::Text }
    }

    /// Prints one text line (text mode only).
    pub fn line(&self, text: &str) {
        if *self == Out::Text {
            let stdout = std::io::stdout();
            let mut o = stdout.lock();
            let _ = writeln!(o, "{text}");
            let _ = o.flush();
        }
    }

    /// Prints one NDJSON event (`--json` only).
    pub fn event(&self, e: &Event<'_>) {
        if *self == Out::Json {
            let stdout = std::io::stdout();
            let mut o = stdout.lock();
            let _ = o.write_all(&json::to_js_compact(e));
            let _ = o.write_all(b"\n");
            let _ = o.flush();
        }
    }
}

/// One drain and what it did: a `POST /trigger/<node>` task, or the drain of one gateway
/// arrival. JSON members `{"reactor", "node", "arrival_id", "dispositions", "receipts_added",
/// "cost": {"fresh", "reused"}, "duration_ms"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DrainSummary {
    /// The reactor.
    pub reactor: String,
    /// The woken node (the gateway, for an arrival).
    pub node: String,
    /// The arrival staged before the drain (`null` for a wake without data, a duplicate
    /// arrival, or data sent to a node that is not an entry point).
    pub arrival_id: Option<String>,
    /// The drain's results, in firing order.
    pub dispositions: Vec<DispositionRow>,
    /// Receipts appended (the ingress receipt of a staged arrival included).
    pub receipts_added: usize,
    /// Tokens of the appended receipts.
    pub cost: Tokens,
    /// Wall-clock time of the staging and the drain, in milliseconds.
    pub duration_ms: u64,
}

impl DrainSummary {
    /// A summary of `results`, staged as `arrival_id`, that appended `receipts_added`
    /// receipts in `took`.
    pub fn new(
        reactor: &str,
        node: &str,
        arrival_id: Option<String>,
        results: &[ReconcileResult],
        receipts_added: usize,
        took: Duration,
    ) -> DrainSummary {
        let mut cost = Tokens::default();
        for r in results.iter().filter_map(|r| r.receipt.as_ref()) {
            cost.add(r.cost.fresh, r.cost.reused);
        }
        DrainSummary {
            reactor: reactor.to_string(),
            node: node.to_string(),
            arrival_id,
            dispositions: DispositionRow::of(results),
            receipts_added,
            cost,
            duration_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
        }
    }

    /// The text line: `reactor serve — <what> "<reactor>" <node>[ arrival <id>]
    /// (rendered=<a> skipped=<b> failed=<c>[ coalesced=<d>]) receipts=<n> fresh=<f>
    /// reused=<r> in <ms> ms`.
    pub fn line(&self, what: &str) -> String {
        let count = |d: &str| {
            self.dispositions
                .iter()
                .filter(|r| r.disposition == d)
                .count()
        };
        let coalesced = match count("coalesced") {
            0 => String::new(),
            n => format!(" coalesced={n}"),
        };
        let arrival = self
            .arrival_id
            .as_deref()
            .map(|id| format!(" arrival {id}"))
            .unwrap_or_default();
        format!(
            "reactor serve — {what} \"{}\" {}{arrival} (rendered={} skipped={} failed={}{coalesced}) receipts={} {} in {} ms",
            self.reactor,
            self.node,
            count("rendered"),
            count("skipped"),
            count("failed"),
            self.receipts_added,
            self.cost.pair(),
            self.duration_ms
        )
    }
}
