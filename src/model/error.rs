//! Model-call errors and their one-line hints (HOST.md §5.7).
//!
//! Every text field of a [`ModelError`] is sanitized and redacted when the error is built (see
//! [`clean`]), so `Display` and `Debug` never show a key or a second line.

use crate::format::sanitize::{redact, sanitize_reason};

/// A model call that failed. `Display` is the hint of HOST.md §5.7, one line, redacted:
/// `compile` reports `compile failed: <hint>`, renders store `model call failed: <hint>`
/// (except [`ModelError::Offline`], whose text is the whole reason, RUNTIME.md §8.7).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// HTTP 401 or 403.
    #[error("{provider} rejected the key in {env} (HTTP {status}): check {env}")]
    KeyRejected {
        /// Provider label.
        provider: String,
        /// Name of the key variable.
        env: String,
        /// The HTTP status.
        status: u16,
    },
    /// HTTP 402, or an error message about credits or balance.
    #[error(
        "insufficient credits on the {provider} account behind {env} (HTTP {status}): top it up"
    )]
    InsufficientCredits {
        /// Provider label.
        provider: String,
        /// Name of the key variable.
        env: String,
        /// The HTTP status.
        status: u16,
    },
    /// HTTP 429 after the retries.
    #[error(
        "rate limited by {provider} (HTTP 429) after {attempts} {}: retry shortly or lower --concurrency",
        plural_attempts(*attempts)
    )]
    RateLimited {
        /// Provider label.
        provider: String,
        /// Attempts made (1–4).
        attempts: u32,
    },
    /// HTTP 400 whose message mentions `temperature`.
    #[error(
        "model '{model}' rejects temperature: delete model.temperature from reactor.yml (or set model.reasoning_effort: none)"
    )]
    TemperatureRejected {
        /// The model id of the request.
        model: String,
    },
    /// HTTP 404.
    #[error(
        "model '{model}' or its endpoint was not found at {base_url} (HTTP 404): check model.{role}_model and model.base_url"
    )]
    NotFound {
        /// The model id of the request.
        model: String,
        /// The configured base URL.
        base_url: String,
        /// `render` or `compile` (from the request purpose).
        role: String,
    },
    /// Any other 4xx.
    #[error("{provider} rejected the request (HTTP {status}): {message}")]
    Rejected {
        /// Provider label.
        provider: String,
        /// The HTTP status.
        status: u16,
        /// The provider's message (sanitized, redacted).
        message: String,
    },
    /// 5xx (or 408) after the retries.
    #[error("{provider} unavailable (HTTP {status}) after {attempts} {}", plural_attempts(*attempts))]
    Unavailable {
        /// Provider label.
        provider: String,
        /// The HTTP status of the last attempt.
        status: u16,
        /// Attempts made (1–4).
        attempts: u32,
    },
    /// The provider was not reached (refused, host not found, connect timeout) after the
    /// retries.
    #[error("could not reach {base_url}: {detail}")]
    Unreachable {
        /// The configured base URL.
        base_url: String,
        /// What failed (sanitized, redacted).
        detail: String,
    },
    /// The provider accepted the request but sent no complete response within the attempt
    /// timeout (`model.timeout`), twice (a timed-out attempt is retried once).
    #[error(
        "{provider} accepted the request at {base_url} but sent no complete response within {timeout} ({attempts} {}): check the endpoint, or raise model.timeout in reactor.yml",
        plural_attempts(*attempts)
    )]
    TimedOut {
        /// Provider label.
        provider: String,
        /// The configured base URL.
        base_url: String,
        /// The attempt timeout as printed (`5 s`, `300 s`, `800 ms`).
        timeout: String,
        /// Attempts made.
        attempts: u32,
    },
    /// The connection broke after the provider was reached: it closed mid-response (a body cut
    /// short, a reset, bytes that are not HTTP), after the retries.
    #[error(
        "{provider} closed the connection mid-response at {base_url} ({attempts} {}): {detail}",
        plural_attempts(*attempts)
    )]
    ConnectionClosed {
        /// Provider label.
        provider: String,
        /// The configured base URL.
        base_url: String,
        /// Attempts made.
        attempts: u32,
        /// What broke (sanitized, redacted).
        detail: String,
    },
    /// A retryable status whose `Retry-After` asks for a longer wait than the client sleeps
    /// (60 s, HOST.md §5.6): retrying stops at once and the message says what was asked.
    #[error(
        "{provider} answered HTTP {status} and asked to retry after {wait_secs} s, longer than the {limit_secs} s reactor waits: try again after that{}",
        if *status == 429 { ", or lower --concurrency" } else { "" }
    )]
    RetryAfterTooLong {
        /// Provider label.
        provider: String,
        /// The HTTP status (429, 503, …).
        status: u16,
        /// The `Retry-After` value in whole seconds (an HTTP date counted from now).
        wait_secs: u64,
        /// The longest wait honoured, in seconds.
        limit_secs: u64,
    },
    /// A body that is not a response of the protocol (not JSON, no choices, too large, …).
    #[error("unexpected response from {provider}: {detail}")]
    UnexpectedResponse {
        /// Provider label.
        provider: String,
        /// What was wrong (sanitized, redacted).
        detail: String,
    },
    /// A Chat Completions `message.refusal` (HOST.md §5.3).
    #[error("model refused: {text}")]
    Refused {
        /// The refusal text (sanitized, redacted).
        text: String,
    },
    /// Offline mode (RUNTIME.md §8.7): no request is made.
    #[error("offline mode: model calls are disabled")]
    Offline,
    /// Replay: the incoming request differs from the next record (RUNTIME.md §13.2).
    #[error("request mismatch at record {id}: first difference at {path}: {detail}")]
    ReplayMismatch {
        /// The record's id.
        id: String,
        /// The first differing JSON path (`$.messages[1].text`).
        path: String,
        /// Expected and actual values, shortened.
        detail: String,
    },
    /// Replay: every record was consumed.
    #[error("no remaining records")]
    ReplayExhausted,
    /// Recording (`REACTOR_MODEL_RECORD`) could not write its file.
    #[error("could not write model record file {path}: {detail}")]
    Record {
        /// The record file.
        path: String,
        /// The I/O error.
        detail: String,
    },
}

fn plural_attempts(n: u32) -> &'static str {
    if n == 1 { "attempt" } else { "attempts" }
}

impl ModelError {
    /// Whether this is the offline refusal (renders use its text as the reason without the
    /// `model call failed: ` prefix).
    pub(crate) fn is_offline(&self) -> bool {
        matches!(self, ModelError::Offline)
    }
}

/// Redacts `secrets` and the key shapes of RUNTIME.md §7.9 from `text`, keeps its first line and
/// cuts it to 500 UTF-16 units; an empty result becomes `fallback`.
pub(crate) fn clean(text: &str, secrets: &[&str], fallback: &str) -> String {
    sanitize_reason(text, secrets).unwrap_or_else(|| fallback.to_string())
}

/// Redacts without cutting (for labels such as URLs that must stay whole).
pub(crate) fn redact_line(text: &str, secrets: &[&str]) -> String {
    let red = redact(text, secrets);
    red.split('\n').next().unwrap_or("").trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hint_texts_match_host_5_7() {
        let e = ModelError::KeyRejected {
            provider: "openrouter".into(),
            env: "OPENROUTER_API_KEY".into(),
            status: 401,
        };
        assert_eq!(
            e.to_string(),
            "openrouter rejected the key in OPENROUTER_API_KEY (HTTP 401): check OPENROUTER_API_KEY"
        );
        let e = ModelError::RateLimited {
            provider: "anthropic".into(),
            attempts: 4,
        };
        assert_eq!(
            e.to_string(),
            "rate limited by anthropic (HTTP 429) after 4 attempts: retry shortly or lower --concurrency"
        );
        let e = ModelError::Unavailable {
            provider: "x".into(),
            status: 503,
            attempts: 1,
        };
        assert_eq!(e.to_string(), "x unavailable (HTTP 503) after 1 attempt");
        assert_eq!(
            ModelError::Offline.to_string(),
            "offline mode: model calls are disabled"
        );
        assert!(ModelError::Offline.is_offline());
    }

    #[test]
    fn clean_redacts_and_keeps_one_line() {
        let s = clean("bad key sk-abcdefgh12345\nsecond", &[], "none");
        assert_eq!(s, "bad key [redacted]");
        assert_eq!(clean("  \n", &[], "none"), "none");
        assert_eq!(
            redact_line("http://h/v1?k=SECRETVALUE\nx", &["SECRETVALUE"]),
            "http://h/v1?k=[redacted]"
        );
    }
}
