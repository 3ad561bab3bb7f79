//! `serve --metrics`: `GET /metrics` in the Prometheus text exposition format (version 0.0.4),
//! built with the `prometheus-client` crate (issue 8 item 10). Off by default, so the v1
//! surface stays the seven routes of HOST.md §10.4.
//!
//! Families (all names prefixed `reactor_`):
//!
//! | Family | Type | Labels | What |
//! |---|---|---|---|
//! | `reactor_receipts_total` | counter | `reactor`, `node`, `status` | receipts appended since start |
//! | `reactor_tokens_total` | counter | `reactor`, `kind` (`fresh`/`reused`), `surprise_cause` | receipt tokens since start |
//! | `reactor_drain_duration_seconds` | histogram | `reactor`, `trigger` (`trigger`/`poll`) | one external wake or gateway poll and its drain to quiescence |
//! | `reactor_queue_depth` | gauge | `reactor` | tasks waiting or running in the reactor's queue, at scrape time |
//! | `reactor_renders_in_flight` | gauge | `reactor` | renders running in the reactor's drain (`model.parallel_renders` bounds it), at scrape time |
//! | `reactor_model_requests_total` | counter | `provider`, `outcome` | model calls by result (a call's retries count once) |
//! | `reactor_http_request_duration_seconds` | histogram | `method`, `route`, `status` | routed daemon requests |
//!
//! `outcome` is `ok` or the failure kind: `key_rejected`, `insufficient_credits`,
//! `rate_limited`, `rejected`, `not_found`, `unavailable`, `unreachable`, `timed_out`,
//! `connection_closed`, `unexpected_response`, `refused`, `offline`, `other`.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::format::receipt::Receipt;
use crate::model::{ModelClient, ModelError, ModelRequest, ModelResponse};

/// The `Content-Type` of the exposition.
pub(crate) const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReceiptLabels {
    reactor: String,
    node: String,
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TokenLabels {
    reactor: String,
    kind: String,
    surprise_cause: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DrainLabels {
    reactor: String,
    trigger: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReactorLabel {
    reactor: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModelLabels {
    provider: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HttpLabels {
    method: String,
    route: String,
    status: String,
}

fn drain_histogram() -> Histogram {
    // 10 ms … ~164 s: a drain with model renders takes seconds to minutes.
    Histogram::new(exponential_buckets(0.01, 2.0, 15))
}

fn http_histogram() -> Histogram {
    // 0.5 ms … ~8 s (a POST /trigger answers after its drain).
    Histogram::new(exponential_buckets(0.0005, 2.0, 15))
}

/// The daemon's metrics; shared by the receipt taps, the queue tasks, the model client and the
/// route handlers.
pub(crate) struct Metrics {
    registry: Registry,
    receipts: Family<ReceiptLabels, Counter>,
    tokens: Family<TokenLabels, Counter>,
    drains: Family<DrainLabels, Histogram, fn() -> Histogram>,
    queue_depth: Family<ReactorLabel, Gauge>,
    renders_in_flight: Family<ReactorLabel, Gauge>,
    model_requests: Family<ModelLabels, Counter>,
    http: Family<HttpLabels, Histogram, fn() -> Histogram>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// An empty registry with the seven families.
    pub(crate) fn new() -> Metrics {
        let mut registry = Registry::with_prefix("reactor");
        let receipts = Family::<ReceiptLabels, Counter>::default();
        registry.register(
            "receipts",
            "Receipts appended since the daemon started, by reactor, node and status",
            receipts.clone(),
        );
        let tokens = Family::<TokenLabels, Counter>::default();
        registry.register(
            "tokens",
            "Tokens recorded in receipts since the daemon started, by kind (fresh or reused) and surprise cause",
            tokens.clone(),
        );
        let drains = Family::<DrainLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            drain_histogram,
        );
        registry.register_with_unit(
            "drain_duration",
            "Duration of one external wake or gateway poll with its drain to quiescence",
            prometheus_client::registry::Unit::Seconds,
            drains.clone(),
        );
        let queue_depth = Family::<ReactorLabel, Gauge>::default();
        registry.register(
            "queue_depth",
            "Tasks waiting or running in the reactor's queue",
            queue_depth.clone(),
        );
        let renders_in_flight = Family::<ReactorLabel, Gauge>::default();
        registry.register(
            "renders_in_flight",
            "Renders running in the reactor's drain",
            renders_in_flight.clone(),
        );
        let model_requests = Family::<ModelLabels, Counter>::default();
        registry.register(
            "model_requests",
            "Model calls by provider and outcome (the retries of one call count once)",
            model_requests.clone(),
        );
        let http = Family::<HttpLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            http_histogram,
        );
        registry.register_with_unit(
            "http_request_duration",
            "Latency of routed daemon requests by method, route and status",
            prometheus_client::registry::Unit::Seconds,
            http.clone(),
        );
        Metrics {
            registry,
            receipts,
            tokens,
            drains,
            queue_depth,
            renders_in_flight,
            model_requests,
            http,
        }
    }

    /// Counts one appended receipt of `reactor`: the receipt family and its tokens.
    pub(crate) fn receipt(&self, reactor: &str, r: &Receipt) {
        self.receipts
            .get_or_create(&ReceiptLabels {
                reactor: reactor.to_string(),
                node: r.node.clone(),
                status: r.status.as_str().to_string(),
            })
            .inc();
        let cause = r.cost.surprise_cause.as_str().to_string();
        for (kind, n) in [("fresh", r.cost.fresh), ("reused", r.cost.reused)] {
            self.tokens
                .get_or_create(&TokenLabels {
                    reactor: reactor.to_string(),
                    kind: kind.to_string(),
                    surprise_cause: cause.clone(),
                })
                .inc_by(n);
        }
    }

    /// Records one drain (`trigger`: `trigger` for `POST /trigger`, `poll` for a gateway poll).
    pub(crate) fn drain(&self, reactor: &str, trigger: &str, took: Duration) {
        self.drains
            .get_or_create(&DrainLabels {
                reactor: reactor.to_string(),
                trigger: trigger.to_string(),
            })
            .observe(took.as_secs_f64());
    }

    /// Sets the queue depth of `reactor` (called at scrape time).
    pub(crate) fn queue_depth(&self, reactor: &str, depth: usize) {
        set_reactor_gauge(&self.queue_depth, reactor, depth);
    }

    /// Sets the renders in flight of `reactor` (called at scrape time).
    pub(crate) fn renders_in_flight(&self, reactor: &str, renders: usize) {
        set_reactor_gauge(&self.renders_in_flight, reactor, renders);
    }

    /// Counts one model call of `provider` with its outcome.
    pub(crate) fn model_request(&self, provider: &str, outcome: &'static str) {
        self.model_requests
            .get_or_create(&ModelLabels {
                provider: provider.to_string(),
                outcome: outcome.to_string(),
            })
            .inc();
    }

    /// Records one routed request.
    pub(crate) fn http_request(&self, method: &str, route: &str, status: u16, took: Duration) {
        self.http
            .get_or_create(&HttpLabels {
                method: method.to_string(),
                route: route.to_string(),
                status: status.to_string(),
            })
            .observe(took.as_secs_f64());
    }

    /// The exposition in the Prometheus text format (version 0.0.4).
    pub(crate) fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry);
        out
    }

    /// Wraps a model client so each call is counted by outcome.
    pub(crate) fn client(
        self: &Arc<Self>,
        provider: &str,
        inner: Arc<dyn ModelClient>,
    ) -> Arc<dyn ModelClient> {
        Arc::new(MetricsClient {
            inner,
            provider: provider.to_string(),
            metrics: self.clone(),
        })
    }
}

/// Sets `reactor`'s gauge of `family` to `n`.
fn set_reactor_gauge(family: &Family<ReactorLabel, Gauge>, reactor: &str, n: usize) {
    family
        .get_or_create(&ReactorLabel {
            reactor: reactor.to_string(),
        })
        .set(i64::try_from(n).unwrap_or(i64::MAX));
}

/// The `outcome` label of a model call.
pub fn outcome(result: &Result<ModelResponse, ModelError>) -> &'static str {
    match result {
        Ok(_) => "ok",
        Err(e) => match e {
            ModelError::KeyRejected { .. } => "key_rejected",
            ModelError::InsufficientCredits { .. } => "insufficient_credits",
            ModelError::RateLimited { .. } | ModelError::RetryAfterTooLong { .. } => "rate_limited",
            ModelError::TemperatureRejected { .. } | ModelError::Rejected { .. } => "rejected",
            ModelError::NotFound { .. } => "not_found",
            ModelError::Unavailable { .. } => "unavailable",
            ModelError::Unreachable { .. } => "unreachable",
            ModelError::TimedOut { .. } => "timed_out",
            ModelError::ConnectionClosed { .. } => "connection_closed",
            ModelError::UnexpectedResponse { .. } => "unexpected_response",
            ModelError::Refused { .. } => "refused",
            ModelError::Offline => "offline",
            _ => "other",
        },
    }
}

/// A model client that counts calls by outcome.
struct MetricsClient {
    inner: Arc<dyn ModelClient>,
    provider: String,
    metrics: Arc<Metrics>,
}

impl ModelClient for MetricsClient {
    fn complete(&self, req: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let result = self.inner.complete(req);
        self.metrics.model_request(&self.provider, outcome(&result));
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_names_every_family() {
        let m = Metrics::new();
        m.drain("default", "trigger", Duration::from_millis(30));
        m.queue_depth("default", 2);
        m.renders_in_flight("default", 3);
        m.model_request("openrouter", "ok");
        m.model_request("openrouter", "timed_out");
        m.http_request("GET", "/status", 200, Duration::from_millis(2));
        let text = m.encode();
        for needle in [
            "# TYPE reactor_drain_duration_seconds histogram",
            "reactor_drain_duration_seconds_count{reactor=\"default\",trigger=\"trigger\"} 1",
            "reactor_queue_depth{reactor=\"default\"} 2",
            "# TYPE reactor_renders_in_flight gauge",
            "reactor_renders_in_flight{reactor=\"default\"} 3",
            "reactor_model_requests_total{provider=\"openrouter\",outcome=\"timed_out\"} 1",
            "reactor_http_request_duration_seconds_bucket{method=\"GET\",route=\"/status\",status=\"200\",le=\"+Inf\"} 1",
            "# TYPE reactor_model_requests_total counter",
        ] {
            assert!(text.contains(needle), "{needle}\n{text}");
        }
    }
}
