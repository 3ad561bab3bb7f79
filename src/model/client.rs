//! The HTTP provider client: Chat Completions or Anthropic Messages over `ureq` (blocking), with
//! the headers of HOST.md §5.2, the retries, backoff and timeouts of §5.6 and the error hints of
//! §5.7.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::backoff::SharedBackoff;
use super::config::{ConfigError, ProviderConfig, Transport};
use super::error::{ModelError, clean, redact_line};
use super::keys::ApiKey;
use super::types::{ModelRequest, ModelResponse};
use super::wire::{WireFailure, error_message_from_bytes};
use super::{ModelClient, chat, messages};

/// The variable that sets the base retry backoff in milliseconds (HOST.md §2.2).
pub(crate) const BACKOFF_ENV: &str = "REACTOR_HTTP_BACKOFF_MS";

/// The variable that enables one redacted stderr line per HTTP exchange (HOST.md §2.2).
pub(crate) const DEBUG_ENV: &str = "REACTOR_DEBUG";

/// Default connect timeout (`model.connect_timeout`).
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Default whole-response timeout of one attempt (`model.timeout`). With the one retry of a
/// timed-out attempt and the first backoff (at most 1 s), a provider that accepts the request
/// and never answers ends the call after at most 2 × 300 s + 1 s ≈ 10 min.
pub(crate) const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(300);

/// Transport settings of the provider clients (HOST.md §5.6, issue 8 item 4).
/// [`HttpSettings::default`] holds the defaults; `reactor.yml` sets the two timeouts
/// (`model.timeout`, `model.connect_timeout`); tests shorten them and set the backoff to 0.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpSettings {
    /// Connect timeout (10 s; `model.connect_timeout`).
    pub connect_timeout: Duration,
    /// Whole-exchange timeout per attempt: connect, request, response headers and body
    /// (300 s; `model.timeout`).
    pub attempt_timeout: Duration,
    /// Largest response body read, in bytes (32 MiB).
    pub body_limit: u64,
    /// Attempts per request, the first included (4).
    pub max_attempts: u32,
    /// Timed-out attempts (connect or response) tolerated before the call fails: the second
    /// timeout ends it, whatever attempts remain (2, i.e. a timed-out attempt is retried at
    /// most once).
    pub max_timeouts: u32,
    /// Base backoff (1 s; `REACTOR_HTTP_BACKOFF_MS`). Zero disables all sleeping between
    /// attempts, `Retry-After` included.
    pub backoff_base: Duration,
    /// Cap of one backoff sleep (30 s).
    pub backoff_cap: Duration,
    /// Longest `Retry-After` honoured (60 s); a longer value ends retrying at once.
    pub retry_after_limit: Duration,
    /// Print one redacted line per exchange on stderr (`REACTOR_DEBUG=1`): method, URL, status or
    /// error, latency, usage. Never headers or bodies.
    pub debug: bool,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            attempt_timeout: DEFAULT_ATTEMPT_TIMEOUT,
            body_limit: 32 * 1024 * 1024,
            max_attempts: 4,
            max_timeouts: 2,
            backoff_base: Duration::from_millis(1000),
            backoff_cap: Duration::from_secs(30),
            retry_after_limit: Duration::from_secs(60),
            debug: false,
        }
    }
}

impl HttpSettings {
    /// The defaults, with `REACTOR_HTTP_BACKOFF_MS` and `REACTOR_DEBUG` read from the process
    /// environment.
    ///
    /// Errors: a backoff value that is not a whole number of milliseconds.
    pub fn from_env() -> Result<HttpSettings, ConfigError> {
        HttpSettings::from_env_with(&|name| std::env::var(name).ok())
    }

    /// [`HttpSettings::from_env`] with an injected environment.
    pub(crate) fn from_env_with(
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<HttpSettings, ConfigError> {
        let mut s = HttpSettings::default();
        if let Some(raw) = env(BACKOFF_ENV).filter(|v| !v.trim().is_empty()) {
            let ms: u64 = raw.trim().parse().map_err(|_| ConfigError::BadEnv {
                var: BACKOFF_ENV,
                message: format!(
                    "expected a whole number of milliseconds, got '{}'",
                    raw.chars().take(40).collect::<String>()
                ),
            })?;
            s.backoff_base = Duration::from_millis(ms);
        }
        s.debug = env(DEBUG_ENV).is_some_and(|v| v.trim() == "1");
        Ok(s)
    }
}

/// Whether an HTTP status is retried (HOST.md §5.6): 408, 429, 500, 502, 503, 504, 529.
pub(crate) fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 429 | 500 | 502 | 503 | 504 | 529)
}

/// The backoff before retry number `attempt` (1 after the first failure):
/// `base × 2^(attempt − 1) × factor`, capped at `cap`; `factor` is clamped to [0.5, 1.0].
pub(crate) fn backoff_delay(base: Duration, attempt: u32, factor: f64, cap: Duration) -> Duration {
    let factor = if factor.is_finite() {
        factor.clamp(0.5, 1.0)
    } else {
        1.0
    };
    let exp = 2f64.powi(attempt.saturating_sub(1).min(30) as i32);
    let secs = base.as_secs_f64() * exp * factor;
    if !secs.is_finite() || secs >= cap.as_secs_f64() {
        cap
    } else {
        Duration::from_secs_f64(secs.max(0.0))
    }
}

/// Parses a `Retry-After` value: whole seconds, or an HTTP date (RFC 9110, e.g.
/// `Sun, 06 Nov 1994 08:49:37 GMT`) relative to `now` (a past date is zero). `None` when the
/// value is neither.
pub(crate) fn parse_retry_after(value: &str, now: jiff::Timestamp) -> Option<Duration> {
    let v = value.trim();
    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        return Some(Duration::from_secs(v.parse::<u64>().unwrap_or(u64::MAX)));
    }
    let at = jiff::fmt::rfc2822::DateTimeParser::new()
        .parse_timestamp(v)
        .ok()?;
    let diff = at.as_millisecond().saturating_sub(now.as_millisecond());
    Some(Duration::from_millis(diff.max(0) as u64))
}

/// A factor in [0.5, 1.0] from a cheap in-house source: the clock, the pid and a counter mixed
/// with splitmix64 (no random-number crate, HOST.md §5.6).
fn jitter_factor() -> f64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut x = nanos
        ^ (u64::from(std::process::id()) << 32)
        ^ COUNTER
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    0.5 + ((x >> 11) as f64 / (1u64 << 53) as f64) * 0.5
}

fn fmt_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 && d.as_secs() > 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

fn fmt_bytes(n: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else {
        format!("{n} bytes")
    }
}

/// Bytes a header value cannot carry as they are: controls (C0 and DEL) and `%` itself
/// (non-ASCII bytes are always encoded).
const HEADER_UNSAFE: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS.add(b'%');

/// Makes a purpose usable as a header value: bytes outside printable ASCII, and `%`, are
/// percent-encoded (`render:é` → `render:%C3%A9`).
fn header_safe(value: &str) -> String {
    percent_encoding::utf8_percent_encode(value, HEADER_UNSAFE).to_string()
}

/// The outcome of one attempt.
enum Attempt {
    Done(ModelResponse),
    /// A non-2xx status or a 2xx error body.
    Status {
        status: u16,
        message: String,
        retry_after: Option<String>,
    },
    /// No usable HTTP exchange (connect failure, timeout, broken connection).
    Transport {
        detail: String,
        kind: TransportKind,
    },
    /// Not retried (malformed body, refusal, oversized body).
    Fatal(ModelError),
}

/// Where an exchange without a usable response broke down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TransportKind {
    /// The provider was not reached: refused, host not found, connect timeout (retried).
    Connect {
        /// A connect timeout (counts against [`HttpSettings::max_timeouts`]).
        timed_out: bool,
    },
    /// Connected, but no complete response within the attempt timeout (retried at most once).
    NoAnswer,
    /// Connected, but the connection closed or broke mid-exchange (retried).
    Closed,
    /// Anything else ureq reports (not retried).
    Other,
}

impl TransportKind {
    fn timed_out(self) -> bool {
        matches!(
            self,
            TransportKind::Connect { timed_out: true } | TransportKind::NoAnswer
        )
    }
}

/// A provider client over HTTP (HOST.md §5): one per configured provider, safe to share between
/// threads. Holds the key; its `Debug` never shows it. A 429 or a `Retry-After` holds every
/// request of the client, not only the refused one ([`SharedBackoff`]).
pub struct ProviderClient {
    config: ProviderConfig,
    key: ApiKey,
    settings: HttpSettings,
    endpoint: String,
    agent: ureq::Agent,
    backoff: SharedBackoff,
}

impl fmt::Debug for ProviderClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderClient")
            .field("provider", &self.config.provider)
            .field("transport", &self.config.transport)
            .field("endpoint", &self.endpoint)
            .field("api_key_env", &self.config.api_key_env)
            .field("key", &"[redacted]")
            .field("settings", &self.settings)
            .finish()
    }
}

impl ProviderClient {
    /// A client for `config` with `key` and the transport `settings`. The request's own `model`,
    /// `temperature` and `reasoning_effort` are sent; callers fill them from the config
    /// ([`ProviderClient::config`]).
    pub fn new(config: ProviderConfig, key: ApiKey, settings: HttpSettings) -> ProviderClient {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(settings.connect_timeout))
            .timeout_global(Some(settings.attempt_timeout))
            .max_redirects(0)
            .max_redirects_will_error(false)
            .user_agent(format!("reactor/{}", crate::version::VERSION))
            .accept("application/json")
            .build()
            .into();
        ProviderClient {
            endpoint: config.endpoint(),
            config,
            key,
            settings,
            agent,
            backoff: SharedBackoff::new(),
        }
    }

    /// The rate-limit hold every attempt of this client waits for.
    pub fn shared_backoff(&self) -> &SharedBackoff {
        &self.backoff
    }

    /// The provider configuration.
    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    /// The endpoint requests go to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    fn secrets(&self) -> [&str; 1] {
        [self.key.expose_secret()]
    }

    fn body_for(&self, req: &ModelRequest) -> Value {
        // `model.max_tokens` for requests that set no budget themselves.
        let budgeted;
        let req = match (req.max_output_tokens, self.config.max_tokens) {
            (None, Some(n)) => {
                budgeted = ModelRequest {
                    max_output_tokens: Some(n),
                    ..req.clone()
                };
                &budgeted
            }
            _ => req,
        };
        match self.config.transport {
            Transport::ChatCompletions => chat::request_body(req),
            Transport::Messages => messages::request_body(req),
        }
    }

    fn attempt(&self, body: &[u8], purpose: &str) -> Attempt {
        let started = Instant::now();
        let mut builder = self
            .agent
            .post(&self.endpoint)
            .header("Content-Type", "application/json")
            .header("X-Reactor-Purpose", header_safe(purpose));
        builder = match self.config.transport {
            Transport::ChatCompletions => builder.header(
                "Authorization",
                format!("Bearer {}", self.key.expose_secret()),
            ),
            Transport::Messages => builder
                .header("x-api-key", self.key.expose_secret())
                .header("anthropic-version", messages::ANTHROPIC_VERSION),
        };
        if self.config.provider == "openrouter" {
            builder = builder.header("X-Title", "reactor");
        }
        let outcome = match builder.send(body) {
            Err(e) => self.transport_failure(e),
            Ok(mut resp) => {
                let status = resp.status().as_u16();
                let retry_after = resp
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .map(String::from);
                match resp
                    .body_mut()
                    .with_config()
                    .limit(self.settings.body_limit)
                    .read_to_vec()
                {
                    Err(ureq::Error::BodyExceedsLimit(_)) => {
                        Attempt::Fatal(self.unexpected(&format!(
                            "response body is larger than {}",
                            fmt_bytes(self.settings.body_limit)
                        )))
                    }
                    Err(e) => self.body_failure(e),
                    Ok(bytes) => self.interpret(status, retry_after, &bytes),
                }
            }
        };
        if self.settings.debug {
            let what = match &outcome {
                Attempt::Done(r) => {
                    let t = r.usage.tokens();
                    format!("200 fresh={} reused={}", t.fresh, t.reused)
                }
                Attempt::Status { status, .. } => status.to_string(),
                Attempt::Transport { detail, .. } => format!("error: {detail}"),
                Attempt::Fatal(e) => format!("error: {e}"),
            };
            eprintln!(
                "reactor: debug: POST {} -> {} ({} ms)",
                redact_line(&self.endpoint, &self.secrets()),
                redact_line(&what, &self.secrets()),
                started.elapsed().as_millis()
            );
        }
        outcome
    }

    fn unexpected(&self, detail: &str) -> ModelError {
        ModelError::UnexpectedResponse {
            provider: self.config.provider.clone(),
            detail: clean(detail, &self.secrets(), "no detail"),
        }
    }

    fn transport_failure(&self, e: ureq::Error) -> Attempt {
        use std::io::ErrorKind as Io;
        let (detail, kind) = match &e {
            ureq::Error::Timeout(ureq::Timeout::Connect) => (
                format!(
                    "connection timed out after {}",
                    fmt_duration(self.settings.connect_timeout)
                ),
                TransportKind::Connect { timed_out: true },
            ),
            ureq::Error::Timeout(_) => (
                format!(
                    "no complete response within {}",
                    fmt_duration(self.settings.attempt_timeout)
                ),
                TransportKind::NoAnswer,
            ),
            ureq::Error::Io(io)
                if matches!(
                    io.kind(),
                    Io::ConnectionRefused | Io::AddrNotAvailable | Io::NetworkUnreachable
                ) =>
            {
                (io.to_string(), TransportKind::Connect { timed_out: false })
            }
            ureq::Error::Io(io) if io.kind() == Io::TimedOut => (
                format!(
                    "no complete response within {}",
                    fmt_duration(self.settings.attempt_timeout)
                ),
                TransportKind::NoAnswer,
            ),
            ureq::Error::Io(io) => (io.to_string(), TransportKind::Closed),
            ureq::Error::ConnectionFailed => (
                "connection failed".to_string(),
                TransportKind::Connect { timed_out: false },
            ),
            ureq::Error::HostNotFound => (
                "host not found".to_string(),
                TransportKind::Connect { timed_out: false },
            ),
            ureq::Error::Protocol(p) => {
                (format!("broken HTTP exchange: {p}"), TransportKind::Closed)
            }
            other => (other.to_string(), TransportKind::Other),
        };
        Attempt::Transport {
            detail: clean(&detail, &self.secrets(), "connection failed"),
            kind,
        }
    }

    /// A failure while reading the body of a response whose status line and headers arrived:
    /// a timeout stays a timeout; anything else is a connection that closed mid-response.
    fn body_failure(&self, e: ureq::Error) -> Attempt {
        if matches!(e, ureq::Error::Timeout(_)) {
            return self.transport_failure(e);
        }
        let detail = match &e {
            ureq::Error::Io(io) => format!("response body incomplete ({io})"),
            other => format!("response body incomplete ({other})"),
        };
        Attempt::Transport {
            detail: clean(&detail, &self.secrets(), "response body incomplete"),
            kind: TransportKind::Closed,
        }
    }

    /// The error of a final transport failure after `attempts` attempts.
    fn transport_error(&self, kind: TransportKind, detail: String, attempts: u32) -> ModelError {
        let base_url = redact_line(&self.config.base_url, &self.secrets());
        match kind {
            TransportKind::NoAnswer => ModelError::TimedOut {
                provider: self.config.provider.clone(),
                base_url,
                timeout: fmt_duration(self.settings.attempt_timeout),
                attempts,
            },
            TransportKind::Closed => ModelError::ConnectionClosed {
                provider: self.config.provider.clone(),
                base_url,
                attempts,
                detail,
            },
            TransportKind::Connect { .. } | TransportKind::Other => {
                ModelError::Unreachable { base_url, detail }
            }
        }
    }

    fn interpret(&self, status: u16, retry_after: Option<String>, bytes: &[u8]) -> Attempt {
        if !(200..300).contains(&status) {
            return Attempt::Status {
                status,
                message: error_message_from_bytes(bytes),
                retry_after,
            };
        }
        let value: Value = match serde_json::from_slice(bytes) {
            Ok(v) => v,
            Err(e) => {
                let detail = if bytes.is_empty() {
                    "empty body".to_string()
                } else {
                    format!("body is not JSON ({e})")
                };
                return Attempt::Fatal(self.unexpected(&detail));
            }
        };
        let parsed = match self.config.transport {
            Transport::ChatCompletions => chat::parse_response(&value),
            Transport::Messages => messages::parse_response(&value),
        };
        match parsed {
            Ok(r) => Attempt::Done(r),
            Err(WireFailure::ErrorBody { status, message }) => Attempt::Status {
                status,
                message,
                retry_after: None,
            },
            Err(WireFailure::Malformed(detail)) => Attempt::Fatal(self.unexpected(&detail)),
            Err(WireFailure::Refused(text)) => Attempt::Fatal(ModelError::Refused {
                text: clean(&text, &self.secrets(), "no reason given"),
            }),
        }
    }

    /// The hint for a final failing status (HOST.md §5.7).
    fn status_error(
        &self,
        req: &ModelRequest,
        status: u16,
        message: &str,
        attempts: u32,
    ) -> ModelError {
        let provider = self.config.provider.clone();
        let env = self.config.api_key_env.clone();
        let lower = message.to_ascii_lowercase();
        let about_credits = lower.contains("credit") || lower.contains("balance");
        match status {
            401 | 403 => ModelError::KeyRejected {
                provider,
                env,
                status,
            },
            402 => ModelError::InsufficientCredits {
                provider,
                env,
                status,
            },
            429 => ModelError::RateLimited { provider, attempts },
            400..=499 if about_credits => ModelError::InsufficientCredits {
                provider,
                env,
                status,
            },
            // Only when the request carried one (reactor.yml sets model.temperature).
            400 if req.temperature.is_some() && lower.contains("temperature") => {
                ModelError::TemperatureRejected {
                    model: clean(&req.model, &self.secrets(), "?"),
                }
            }
            404 => ModelError::NotFound {
                model: clean(&req.model, &self.secrets(), "?"),
                base_url: redact_line(&self.config.base_url, &self.secrets()),
                role: if req.purpose.starts_with("compile") {
                    "compile".into()
                } else {
                    "render".into()
                },
            },
            408 | 500..=599 => ModelError::Unavailable {
                provider,
                status,
                attempts,
            },
            400..=499 => ModelError::Rejected {
                provider,
                status,
                message: clean(message, &self.secrets(), "no message"),
            },
            _ => self.unexpected(&format!("HTTP {status}")),
        }
    }

    fn sleep_before_retry(&self, delay: Duration) {
        if !self.settings.backoff_base.is_zero() && !delay.is_zero() {
            std::thread::sleep(delay);
        }
    }

    /// The pause before a retry of a refused status: a 429 or a `Retry-After` holds the whole
    /// client (every request waits for it before its next attempt); other statuses sleep this
    /// request only.
    fn back_off(&self, status: u16, retry_after: bool, delay: Duration) {
        if status == 429 || retry_after {
            if !self.settings.backoff_base.is_zero() {
                self.backoff.hold_for(delay);
            }
        } else {
            self.sleep_before_retry(delay);
        }
    }
}

impl ModelClient for ProviderClient {
    /// Sends the request, retrying per HOST.md §5.6, and returns the parsed response or the
    /// HOST.md §5.7 hint as a [`ModelError`].
    fn complete(&self, req: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let body = match serde_json::to_vec(&self.body_for(req)) {
            Ok(b) => b,
            Err(e) => return Err(self.unexpected(&format!("cannot encode the request: {e}"))),
        };
        let max = self.settings.max_attempts.max(1);
        let mut attempt = 0u32;
        let mut timeouts = 0u32;
        loop {
            attempt += 1;
            let backoff = backoff_delay(
                self.settings.backoff_base,
                attempt,
                jitter_factor(),
                self.settings.backoff_cap,
            );
            if !self.settings.backoff_base.is_zero() {
                self.backoff.wait();
            }
            match self.attempt(&body, &req.purpose) {
                Attempt::Done(r) => return Ok(r),
                Attempt::Fatal(e) => return Err(e),
                Attempt::Status {
                    status,
                    message,
                    retry_after,
                } => {
                    if !is_retryable_status(status) || attempt >= max {
                        return Err(self.status_error(req, status, &message, attempt));
                    }
                    let wait = retry_after
                        .as_deref()
                        .and_then(|v| parse_retry_after(v, jiff::Timestamp::now()));
                    match wait {
                        Some(d) if d > self.settings.retry_after_limit => {
                            return Err(ModelError::RetryAfterTooLong {
                                provider: self.config.provider.clone(),
                                status,
                                wait_secs: d.as_secs_f64().ceil() as u64,
                                limit_secs: self.settings.retry_after_limit.as_secs(),
                            });
                        }
                        Some(d) => self.back_off(status, true, d),
                        None => self.back_off(status, false, backoff),
                    }
                }
                Attempt::Transport { detail, kind } => {
                    if kind.timed_out() {
                        timeouts += 1;
                    }
                    let retryable = kind != TransportKind::Other
                        && timeouts < self.settings.max_timeouts.max(1);
                    if !retryable || attempt >= max {
                        return Err(self.transport_error(kind, detail, attempt));
                    }
                    self.sleep_before_retry(backoff);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        let base = Duration::from_millis(1000);
        let cap = Duration::from_secs(30);
        assert_eq!(backoff_delay(base, 1, 1.0, cap), Duration::from_secs(1));
        assert_eq!(backoff_delay(base, 2, 1.0, cap), Duration::from_secs(2));
        assert_eq!(backoff_delay(base, 3, 0.5, cap), Duration::from_secs(2));
        assert_eq!(backoff_delay(base, 40, 1.0, cap), cap);
        assert_eq!(backoff_delay(base, 1, 0.1, cap), Duration::from_millis(500));
        assert_eq!(
            backoff_delay(base, 1, f64::NAN, cap),
            Duration::from_secs(1)
        );
        assert_eq!(backoff_delay(Duration::ZERO, 3, 0.7, cap), Duration::ZERO);
        for _ in 0..1000 {
            let f = jitter_factor();
            assert!((0.5..=1.0).contains(&f), "{f}");
        }
    }

    #[test]
    fn retry_after_seconds_and_dates() {
        let now: jiff::Timestamp = "2026-06-02T18:00:00Z".parse().unwrap();
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after(" 120 ", now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(
            parse_retry_after("Tue, 02 Jun 2026 18:00:30 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after("Tue, 02 Jun 2026 17:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(
            parse_retry_after("99999999999999999999999", now),
            Some(Duration::from_secs(u64::MAX))
        );
        for bad in ["", "-1", "1.5", "soon", "Tue, 99 Jun 2026 18:00:30 GMT"] {
            assert_eq!(parse_retry_after(bad, now), None, "{bad}");
        }
    }

    #[test]
    fn retryable_statuses() {
        for s in [408, 429, 500, 502, 503, 504, 529] {
            assert!(is_retryable_status(s));
        }
        for s in [400, 401, 402, 403, 404, 422, 501] {
            assert!(!is_retryable_status(s));
        }
    }

    #[test]
    fn settings_from_env() {
        let s = HttpSettings::from_env_with(&|_| None).unwrap();
        assert_eq!(s, HttpSettings::default());
        let s = HttpSettings::from_env_with(&|n| match n {
            BACKOFF_ENV => Some("0".into()),
            DEBUG_ENV => Some("1".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(s.backoff_base, Duration::ZERO);
        assert!(s.debug);
        let e = HttpSettings::from_env_with(&|n| (n == BACKOFF_ENV).then(|| "fast".into()))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "REACTOR_HTTP_BACKOFF_MS: expected a whole number of milliseconds, got 'fast'"
        );
    }

    #[test]
    fn purpose_header_is_made_safe() {
        assert_eq!(header_safe("render:price-watch"), "render:price-watch");
        assert_eq!(header_safe("render:é\n"), "render:%C3%A9%0A");
        assert_eq!(header_safe("a%b"), "a%25b");
        assert_eq!(header_safe("\t x\u{7f}~"), "%09 x%7F~");
    }

    #[test]
    fn debug_output_hides_the_key() {
        let config =
            ProviderConfig::resolve(&crate::model::config::ProviderSettings::default()).unwrap();
        let client = ProviderClient::new(
            config,
            ApiKey::new("canary-9f8e7d6c5b4a"),
            HttpSettings::default(),
        );
        let dbg = format!("{client:?}");
        assert!(!dbg.contains("canary-9f8e7d6c5b4a"), "{dbg}");
        assert!(dbg.contains("OPENROUTER_API_KEY"));
    }
}
