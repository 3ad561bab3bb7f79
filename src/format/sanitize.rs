//! Failure-reason sanitization and secret redaction (FORMATS.md §4.4, RUNTIME.md §7.9).
//!
//! Every text that can carry provider output or an error message passes through [`redact`]
//! before it reaches stdout, stderr or a file, and every receipt `failure_reason` through
//! [`sanitize_reason`] before the receipt is hashed.

/// The replacement written in place of a secret.
pub(crate) const REDACTED: &str = "[redacted]";

/// Maximum length of a sanitized failure reason, in UTF-16 code units (before the `…`).
pub(crate) const MAX_REASON_UNITS: usize = 500;

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// `s` cut to `max` characters with `…`, on one line.
pub(crate) fn clip(s: &str, max: usize) -> String {
    let one: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if one.chars().count() <= max {
        one
    } else {
        let mut t: String = one.chars().take(max).collect();
        t.push('…');
        t
    }
}

/// Replaces every secret in `text` with `[redacted]`:
/// the exact values in `secrets` (empty values are ignored), `sk-` followed by at least 8
/// characters of `[A-Za-z0-9_-]`, `AIza` followed by at least 20 such characters, `Bearer `
/// followed by a token, and the value after `x-api-key:`, `api-key:`, `api_key=` or `"api_key":`.
/// Total: never fails, never panics; the output is never longer than needed to hold the input
/// with secrets replaced.
pub(crate) fn redact(text: &str, secrets: &[&str]) -> String {
    let mut out = text.to_string();
    // Exact secret values first (longest first so a secret containing another is fully removed).
    let mut exact: Vec<&str> = secrets.iter().copied().filter(|s| s.len() >= 4).collect();
    exact.sort_by_key(|s| std::cmp::Reverse(s.len()));
    for s in exact {
        if out.contains(s) {
            out = out.replace(s, REDACTED);
        }
    }
    out = redact_prefixed_token(&out, "sk-", 8);
    out = redact_prefixed_token(&out, "AIza", 20);
    out = redact_after_label(&out, "Bearer ", false);
    out = redact_after_label(&out, "bearer ", false);
    for label in [
        "x-api-key:",
        "X-Api-Key:",
        "api-key:",
        "api_key=",
        "\"api_key\":",
    ] {
        out = redact_after_label(&out, label, true);
    }
    out
}

/// Replaces `<prefix><at least min token chars>` (whole token) with `[redacted]`.
fn redact_prefixed_token(text: &str, prefix: &str, min: usize) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find(prefix) {
        let after = &rest[pos + prefix.len()..];
        let run: usize = after
            .chars()
            .take_while(|c| is_token_char(*c))
            .map(char::len_utf8)
            .sum();
        let run_chars = after[..run].chars().count();
        // The prefix must not be glued to a preceding token character (e.g. "task-" is fine,
        // "ask-" inside a word is not a key).
        let glued = rest[..pos].chars().next_back().is_some_and(is_token_char);
        out.push_str(&rest[..pos]);
        if run_chars >= min && !glued {
            out.push_str(REDACTED);
            rest = &after[run..];
        } else {
            out.push_str(prefix);
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// Replaces the value following `label` (optional spaces and quotes, then a run of non-space,
/// non-quote, non-comma characters) with `[redacted]`.
fn redact_after_label(text: &str, label: &str, allow_space: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find(label) {
        out.push_str(&rest[..pos + label.len()]);
        let mut after = &rest[pos + label.len()..];
        if allow_space {
            let trimmed = after.trim_start_matches([' ', '\t']);
            out.push_str(&after[..after.len() - trimmed.len()]);
            after = trimmed;
        }
        let quoted = after.starts_with('"');
        if quoted {
            out.push('"');
            after = &after[1..];
        }
        let end = after
            .find(|c: char| c.is_whitespace() || c == '"' || c == ',' || c == '}' || c == '\'')
            .unwrap_or(after.len());
        if end > 0 && &after[..end] != REDACTED {
            out.push_str(REDACTED);
        } else {
            out.push_str(&after[..end]);
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Sanitizes a failure reason for a receipt's `semantic_diff.failure_reason`
/// (FORMATS.md §4.4): redacts secrets, keeps the first line trimmed, returns `None` when empty,
/// and cuts to 500 UTF-16 code units (499 when the cut would split a surrogate pair) plus `…`.
pub(crate) fn sanitize_reason(text: &str, secrets: &[&str]) -> Option<String> {
    let redacted = redact(text, secrets);
    let first = redacted.split('\n').next().unwrap_or("").trim();
    if first.is_empty() {
        return None;
    }
    let mut units = 0usize;
    for (idx, ch) in first.char_indices() {
        let w = ch.len_utf16();
        if units + w > MAX_REASON_UNITS {
            let mut cut = first[..idx].to_string();
            cut.push('…');
            return Some(cut);
        }
        units += w;
    }
    Some(first.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_known_and_shaped_secrets() {
        let t = redact(
            "key sk-test-0123456789abcdef and AIzaSyA1234567890123456789 Bearer abc.def x-api-key: zzz9",
            &["sk-test-0123456789abcdef"],
        );
        assert!(!t.contains("0123456789abcdef"), "{t}");
        assert!(!t.contains("SyA123"), "{t}");
        assert!(!t.contains("abc.def"), "{t}");
        assert!(!t.contains("zzz9"), "{t}");
        assert_eq!(t.matches(REDACTED).count(), 4, "{t}");
    }

    #[test]
    fn keeps_harmless_text() {
        assert_eq!(redact("task-runner ok", &[]), "task-runner ok");
        assert_eq!(redact("sk-short", &[]), "sk-short");
        assert_eq!(redact("risk-0123456789", &[]), "risk-0123456789");
    }

    #[test]
    fn exact_secret_anywhere() {
        assert_eq!(
            redact("xx-SECRETVALUE-yy", &["SECRETVALUE"]),
            "xx-[redacted]-yy"
        );
    }

    #[test]
    fn json_api_key_value() {
        let t = redact(r#"{"api_key": "hunter22"}"#, &[]);
        assert_eq!(t, r#"{"api_key": "[redacted]"}"#);
    }

    #[test]
    fn sanitize_first_line_trim_and_cut() {
        assert_eq!(
            sanitize_reason("  boom \nsecond", &[]).as_deref(),
            Some("boom")
        );
        assert_eq!(sanitize_reason(" \n x", &[]), None);
        let long = "a".repeat(600);
        let s = sanitize_reason(&long, &[]).unwrap();
        assert_eq!(s.encode_utf16().count(), 501);
        assert!(s.ends_with('…'));
        // A surrogate pair straddling the cut is not split: 499 'a' + one astral char.
        let astral = format!("{}😀tail", "a".repeat(499));
        let s = sanitize_reason(&astral, &[]).unwrap();
        assert_eq!(s, format!("{}…", "a".repeat(499)));
        // Exactly 500 units: kept whole.
        let exact = "b".repeat(500);
        assert_eq!(sanitize_reason(&exact, &[]).unwrap(), exact);
    }

    #[test]
    fn sanitize_redacts_before_cut() {
        let s = sanitize_reason("failed with sk-or-v1-abcdefgh12345678\nmore", &[]).unwrap();
        assert_eq!(s, "failed with [redacted]");
    }
}
