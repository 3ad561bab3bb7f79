//! RFC 9112 message-framing checks on a parsed request head, applied before anything routes or
//! reads the request (issue 7 §1).
//!
//! tiny_http 0.12 frames bodies loosely, and the connection it keeps reading after a request
//! would otherwise carry a second, smuggled request:
//!
//! | Head | tiny_http 0.12 | Here |
//! |---|---|---|
//! | `Transfer-Encoding` and `Content-Length` | ignores `Content-Length`, decodes chunked | 400, close |
//! | several `Content-Length` headers | uses the first | 400 unless all are the same plain number |
//! | `Content-Length` not a plain decimal (`-1`, `abc`, `+5`, `5, 5`, 2^64+1) | treated as absent: no body, the body bytes are parsed as the next request | 400, close |
//! | `Transfer-Encoding` other than exactly `chunked` (`gzip`, `gzip, chunked`) | decodes chunked anyway | 501, close |
//! | HTTP/1.1 without `Host`, or several `Host` headers | accepted | 400, close |
//!
//! Sources: RFC 9112 §3.2 (Host), §6.1 (Transfer-Encoding; 501 for an unknown coding), §6.3
//! (a message with both headers, or an invalid `Content-Length`, is a framing error: respond 400
//! and close the connection), RFC 9110 §8.6 (Content-Length = 1*DIGIT).

/// A refused head: the status and the `error` text of the JSON body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// 400 or 501.
    pub status: u16,
    /// The message, e.g. `invalid Content-Length`.
    pub message: &'static str,
}

fn refuse(status: u16, message: &'static str) -> Option<Refusal> {
    Some(Refusal { status, message })
}

/// A `Content-Length` value: one or more ASCII digits whose value fits in 64 bits.
pub(crate) fn plain_length(value: &str) -> Option<u64> {
    let v = value.trim_matches([' ', '\t']);
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse::<u64>().ok()
}

/// Checks the framing headers of a request head (`version` as `(major, minor)`; `headers` as
/// sent, names in any case). `None` = acceptable.
pub(crate) fn check(version: (u8, u8), headers: &[(String, String)]) -> Option<Refusal> {
    let values = |name: &'static str| {
        headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    let lengths: Vec<&str> = values("content-length").collect();
    let codings: Vec<&str> = values("transfer-encoding").collect();
    if !lengths.is_empty() && !codings.is_empty() {
        return refuse(400, "Transfer-Encoding together with Content-Length");
    }
    let mut declared = None;
    for value in &lengths {
        let Some(n) = plain_length(value) else {
            return refuse(400, "invalid Content-Length");
        };
        if declared.is_some_and(|d| d != n) {
            return refuse(400, "conflicting Content-Length headers");
        }
        declared = Some(n);
    }
    if !codings.is_empty() {
        let list: Vec<String> = codings
            .iter()
            .flat_map(|v| v.split(','))
            .map(|c| c.trim_matches([' ', '\t']).to_ascii_lowercase())
            .collect();
        if list != ["chunked"] {
            return refuse(
                501,
                "unsupported Transfer-Encoding (only chunked is accepted)",
            );
        }
    }
    let hosts = values("host").count();
    if hosts > 1 {
        return refuse(400, "several Host headers");
    }
    if hosts == 0 && version >= (1, 1) {
        return refuse(400, "missing Host header");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = vec![("Host".into(), "127.0.0.1".into())];
        v.extend(
            pairs
                .iter()
                .map(|(a, b)| ((*a).to_owned(), (*b).to_owned())),
        );
        v
    }

    #[test]
    fn acceptable_heads() {
        assert_eq!(check((1, 1), &h(&[])), None);
        assert_eq!(check((1, 1), &h(&[("Content-Length", "0")])), None);
        assert_eq!(check((1, 1), &h(&[("content-length", " 0042 ")])), None);
        assert_eq!(
            check(
                (1, 1),
                &h(&[("Content-Length", "5"), ("content-length", "5")])
            ),
            None
        );
        assert_eq!(check((1, 1), &h(&[("Transfer-Encoding", "Chunked")])), None);
        assert_eq!(check((1, 0), &[]), None, "HTTP/1.0 needs no Host");
    }

    #[test]
    fn refused_heads() {
        let status = |pairs: &[(&str, &str)]| check((1, 1), &h(pairs)).map(|r| r.status);
        assert_eq!(
            status(&[("Content-Length", "5"), ("Transfer-Encoding", "chunked")]),
            Some(400)
        );
        for bad in [
            "-1",
            "abc",
            "+5",
            "5, 5",
            "",
            "0x10",
            "18446744073709551617",
            "1e3",
        ] {
            assert_eq!(status(&[("Content-Length", bad)]), Some(400), "{bad:?}");
        }
        assert_eq!(
            status(&[("Content-Length", "5"), ("Content-Length", "6")]),
            Some(400)
        );
        for coding in ["gzip", "gzip, chunked", "chunked, chunked", "identity", ""] {
            assert_eq!(
                status(&[("Transfer-Encoding", coding)]),
                Some(501),
                "{coding:?}"
            );
        }
        assert_eq!(
            status(&[
                ("Transfer-Encoding", "chunked"),
                ("Transfer-Encoding", "gzip")
            ]),
            Some(501)
        );
        assert_eq!(check((1, 1), &[]).map(|r| r.status), Some(400));
        assert_eq!(status(&[("host", "other")]), Some(400));
    }

    #[test]
    fn plain_lengths() {
        assert_eq!(plain_length("18446744073709551615"), Some(u64::MAX));
        assert_eq!(plain_length("18446744073709551616"), None);
        assert_eq!(plain_length("\t7 "), Some(7));
        assert_eq!(plain_length("٣"), None);
    }
}
