//! Helpers shared by the two wire protocols: token counts, error-body messages and the failure
//! kinds a response parser reports.

use serde_json::Value;

/// What a response parser found instead of a usable response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WireFailure {
    /// A 2xx body carrying an error object and no answer (HOST.md §5.3): the status found inside
    /// it (502 when none) and the provider's message.
    ErrorBody {
        /// Status code from the body, or 502.
        status: u16,
        /// The provider's message (raw; the client sanitizes it).
        message: String,
    },
    /// A body that is not a response of the protocol.
    Malformed(String),
    /// A Chat Completions refusal.
    Refused(String),
}

/// A token count from a usage member: non-negative integers as is, non-negative finite floats
/// truncated; missing, negative, non-finite or non-numeric values count as 0 (RUNTIME.md §8.9).
pub fn count(v: Option<&Value>) -> u64 {
    match v {
        Some(Value::Number(n)) => {
            if let Some(u) = n.as_u64() {
                u
            } else if let Some(f) = n.as_f64() {
                if f.is_finite() && f > 0.0 {
                    if f >= u64::MAX as f64 {
                        u64::MAX
                    } else {
                        f as u64
                    }
                } else {
                    0
                }
            } else {
                0
            }
        }
        _ => 0,
    }
}

/// The provider message of an error body: `error.message`, a string `error`, or a top-level
/// `message`; `None` when the body is not JSON or has none.
pub(crate) fn error_message(body: &Value) -> Option<String> {
    let err = body.get("error");
    if let Some(m) = err.and_then(|e| e.get("message")).and_then(Value::as_str) {
        return Some(m.to_string());
    }
    if let Some(m) = err.and_then(Value::as_str) {
        return Some(m.to_string());
    }
    body.get("message")
        .and_then(Value::as_str)
        .map(String::from)
}

/// The provider message of a raw error body: the JSON message when there is one, otherwise the
/// first 300 characters of the text.
pub(crate) fn error_message_from_bytes(body: &[u8]) -> String {
    if let Ok(v) = serde_json::from_slice::<Value>(body)
        && let Some(m) = error_message(&v)
    {
        return m;
    }
    let text = String::from_utf8_lossy(body);
    text.chars().take(300).collect()
}

/// A status code carried inside a 2xx error body (`error.code` or `error.status`, a number or a
/// numeric string in 100–599); `None` when absent.
pub(crate) fn status_in_body(err: &Value) -> Option<u16> {
    for key in ["code", "status"] {
        let code = match err.get(key) {
            Some(Value::Number(n)) => n.as_u64(),
            Some(Value::String(s)) => s.trim().parse::<u64>().ok(),
            _ => None,
        };
        if let Some(c) = code.filter(|c| (100..=599).contains(c)) {
            return Some(c as u16);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_are_total() {
        assert_eq!(count(Some(&json!(12))), 12);
        assert_eq!(count(Some(&json!(-3))), 0);
        assert_eq!(count(Some(&json!(2.9))), 2);
        assert_eq!(count(Some(&json!(-2.5))), 0);
        assert_eq!(count(Some(&json!(1e300))), u64::MAX);
        assert_eq!(count(Some(&json!("7"))), 0);
        assert_eq!(count(Some(&Value::Null)), 0);
        assert_eq!(count(None), 0);
    }

    #[test]
    fn error_messages_are_found_in_every_shape() {
        assert_eq!(
            error_message(&json!({"error": {"message": "m", "code": 400}})).as_deref(),
            Some("m")
        );
        assert_eq!(
            error_message(&json!({"type": "error", "error": {"type": "x", "message": "n"}}))
                .as_deref(),
            Some("n")
        );
        assert_eq!(
            error_message(&json!({"error": "plain"})).as_deref(),
            Some("plain")
        );
        assert_eq!(error_message(&json!({"detail": 1})), None);
        assert_eq!(error_message_from_bytes(b"<html>oops"), "<html>oops");
        assert_eq!(error_message_from_bytes(&[b'x'; 1000]).len(), 300);
        assert_eq!(status_in_body(&json!({"code": 429})), Some(429));
        assert_eq!(status_in_body(&json!({"code": "503"})), Some(503));
        assert_eq!(status_in_body(&json!({"code": "rate_limited"})), None);
        assert_eq!(status_in_body(&json!({"code": 99999})), None);
        assert_eq!(status_in_body(&json!({"status": 500})), Some(500));
    }

    fn arb_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<f64>().prop_map(|f| json!(f)),
            prop::sample::select(vec![
                "choices",
                "message",
                "content",
                "tool_calls",
                "function",
                "name",
                "arguments",
                "error",
                "type",
                "text",
                "tool_use",
                "input",
                "usage",
                "refusal",
                "code",
            ])
            .prop_map(|s| json!(s)),
            ".{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(5, 64, 6, |inner| {
            let keys = prop::sample::select(vec![
                "choices",
                "message",
                "content",
                "tool_calls",
                "function",
                "name",
                "arguments",
                "error",
                "type",
                "text",
                "id",
                "input",
                "usage",
                "refusal",
                "code",
                "status",
                "prompt_tokens",
                "cached_tokens",
                "prompt_tokens_details",
                "input_tokens",
                "stop_reason",
                "finish_reason",
            ]);
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::vec((keys, inner), 0..6).prop_map(|kv| {
                    Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
                }),
            ]
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

        /// Hostile bodies never panic either parser; every failure is a typed result.
        #[test]
        fn parsers_are_total(body in arb_json()) {
            let _ = crate::model::chat::parse_response(&body);
            let _ = crate::model::messages::parse_response(&body);
            let _ = crate::model::chat::usage(Some(&body));
            let _ = crate::model::messages::usage(Some(&body));
            let _ = error_message(&body);
            let _ = status_in_body(&body);
        }

        #[test]
        fn text_inputs_are_total(text in ".{0,200}") {
            let _ = error_message_from_bytes(text.as_bytes());
            let _ = crate::model::keys::parse_dotenv(&text);
            let _ = crate::model::client::parse_retry_after(&text, jiff::Timestamp::UNIX_EPOCH);
            let _ = crate::model::replay::parse_record_file(&text);
        }
    }
}
