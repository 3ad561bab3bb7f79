//! Pure text helpers for request targets: splitting path and query, strict percent-decoding of
//! path segments, and `application/x-www-form-urlencoded` query parsing.
//!
//! Sources: VIEWER.md §6.1 (routing on the path before `?`; malformed paths and queries → 400),
//! §6.4 (node id percent-decoded with `+` kept; `version` form-decoded, first occurrence wins),
//! HOST.md §10.1 (segments percent-decoded as UTF-8, one trailing `/` ignored).
//!
//! Nothing here panics on any input; every malformed escape or non-UTF-8 result is a
//! [`DecodeError`].

/// Why a percent-encoded string could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// A `%` not followed by two hexadecimal digits. `offset` is the byte offset of the `%`
    /// in the encoded input.
    #[error("malformed percent-escape at byte {offset}")]
    MalformedEscape {
        /// Byte offset of the offending `%` in the encoded text.
        offset: usize,
    },
    /// The decoded bytes are not valid UTF-8 (for example `%FF`).
    #[error("percent-decoded text is not valid UTF-8")]
    NotUtf8,
}

/// Splits a request target (`/path?query`) at the first `?`.
///
/// Returns the path (everything before `?`) and the query (everything after it, without the
/// `?`), `None` when there is no `?`. A `#` is not special (browsers never send fragments).
pub fn split_target(target: &str) -> (&str, Option<&str>) {
    match target.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (target, None),
    }
}

fn hex_value(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

fn decode(input: &str, plus_as_space: bool) -> Result<String, DecodeError> {
    let bytes = input.as_bytes();
    if !bytes
        .iter()
        .any(|&b| b == b'%' || (plus_as_space && b == b'+'))
    {
        return Ok(input.to_owned());
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hi = bytes.get(i + 1).copied().and_then(hex_value);
                let lo = bytes.get(i + 2).copied().and_then(hex_value);
                match (hi, lo) {
                    (Some(hi), Some(lo)) => {
                        out.push(hi * 16 + lo);
                        i += 3;
                    }
                    _ => return Err(DecodeError::MalformedEscape { offset: i }),
                }
            }
            b'+' if plus_as_space => {
                out.push(b' ');
                i += 1;
            }
            other => {
                out.push(other);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| DecodeError::NotUtf8)
}

/// Strict percent-decoding for path text: every `%` must start a `%XX` escape with two hex
/// digits, the result must be UTF-8, and `+` stays `+` (VIEWER.md §6.4).
///
/// Errors: [`DecodeError::MalformedEscape`] (`%`, `%4`, `%zz`), [`DecodeError::NotUtf8`]
/// (`%FF`, `%C3%28`).
pub fn percent_decode(input: &str) -> Result<String, DecodeError> {
    decode(input, false)
}

/// Form decoding (`application/x-www-form-urlencoded`): `+` becomes a space, then strict
/// percent-decoding as in [`percent_decode`].
pub fn form_decode(input: &str) -> Result<String, DecodeError> {
    decode(input, true)
}

/// Splits a path on `/` and percent-decodes every segment (HOST.md §10.1).
///
/// One leading `/` is removed and one trailing `/` is ignored, so `/nodes/a%2Fb/` gives
/// `["nodes", "a/b"]` and `/` gives `[]`. Empty inner segments are kept (`/a//b` gives
/// `["a", "", "b"]`) so that the caller decides what they mean.
///
/// Errors: the first segment that fails [`percent_decode`].
pub fn decode_path_segments(path: &str) -> Result<Vec<String>, DecodeError> {
    let trimmed = path.strip_prefix('/').unwrap_or(path);
    let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
    if trimmed.is_empty() {
        return Ok(Vec::new());
    }
    trimmed.split('/').map(percent_decode).collect()
}

/// A parsed query string: `name=value` pairs in order, both form-decoded.
///
/// Source: VIEWER.md §6.4 (form decoding, first occurrence wins).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    /// Parses `a=1&b=x+y&c` (without the leading `?`). Empty pieces (`a=1&&b=2`) are skipped;
    /// a piece without `=` has the empty value. Errors: the first malformed escape or
    /// non-UTF-8 name or value (the whole query is rejected, VIEWER.md §6.1).
    pub fn parse(query: &str) -> Result<Query, DecodeError> {
        let mut pairs = Vec::new();
        for piece in query.split('&') {
            if piece.is_empty() {
                continue;
            }
            let (name, value) = piece.split_once('=').unwrap_or((piece, ""));
            pairs.push((form_decode(name)?, form_decode(value)?));
        }
        Ok(Query { pairs })
    }

    /// The value of the first pair named `name`, if any.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every decoded pair, in order of appearance.
    pub fn pairs(&self) -> &[(String, String)] {
        &self.pairs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_target_separates_path_and_query() {
        assert_eq!(split_target("/a/b?x=1&y"), ("/a/b", Some("x=1&y")));
        assert_eq!(split_target("/a"), ("/a", None));
        assert_eq!(split_target("/a?"), ("/a", Some("")));
        assert_eq!(split_target("/a?b?c"), ("/a", Some("b?c")));
    }

    #[test]
    fn percent_decode_accepts_valid_escapes_and_keeps_plus() {
        assert_eq!(percent_decode("a%2Fb%3ac+d").unwrap(), "a/b:c+d");
        assert_eq!(percent_decode("%C3%A9t%C3%A9").unwrap(), "été");
        assert_eq!(percent_decode("plain").unwrap(), "plain");
        assert_eq!(percent_decode("").unwrap(), "");
    }

    #[test]
    fn percent_decode_rejects_malformed_escapes_with_offsets() {
        assert_eq!(
            percent_decode("%"),
            Err(DecodeError::MalformedEscape { offset: 0 })
        );
        assert_eq!(
            percent_decode("ab%4"),
            Err(DecodeError::MalformedEscape { offset: 2 })
        );
        assert_eq!(
            percent_decode("x%zz"),
            Err(DecodeError::MalformedEscape { offset: 1 })
        );
        assert_eq!(
            percent_decode("%%41"),
            Err(DecodeError::MalformedEscape { offset: 0 })
        );
        // A multi-byte character right after `%` must not panic on a char boundary.
        assert_eq!(
            percent_decode("%é"),
            Err(DecodeError::MalformedEscape { offset: 0 })
        );
    }

    #[test]
    fn percent_decode_rejects_non_utf8() {
        assert_eq!(percent_decode("%FF"), Err(DecodeError::NotUtf8));
        assert_eq!(percent_decode("%C3%28"), Err(DecodeError::NotUtf8));
        assert_eq!(percent_decode("%ED%A0%80"), Err(DecodeError::NotUtf8));
    }

    #[test]
    fn form_decode_turns_plus_into_space() {
        assert_eq!(form_decode("a+b%2Bc").unwrap(), "a b+c");
        assert_eq!(
            form_decode("+%"),
            Err(DecodeError::MalformedEscape { offset: 1 })
        );
    }

    #[test]
    fn path_segments_are_split_and_decoded() {
        assert_eq!(
            decode_path_segments("/nodes/a%2Fb/").unwrap(),
            vec!["nodes", "a/b"]
        );
        assert_eq!(decode_path_segments("/").unwrap(), Vec::<String>::new());
        assert_eq!(decode_path_segments("").unwrap(), Vec::<String>::new());
        assert_eq!(decode_path_segments("/a//b").unwrap(), vec!["a", "", "b"]);
        assert_eq!(
            decode_path_segments("/a/%zz"),
            Err(DecodeError::MalformedEscape { offset: 0 })
        );
    }

    #[test]
    fn query_first_occurrence_wins_and_pieces_decode() {
        let q = Query::parse("version=v+1&version=v2&flag&&empty=&x=%41").unwrap();
        assert_eq!(q.get("version"), Some("v 1"));
        assert_eq!(q.get("flag"), Some(""));
        assert_eq!(q.get("empty"), Some(""));
        assert_eq!(q.get("x"), Some("A"));
        assert_eq!(q.get("missing"), None);
        assert_eq!(q.pairs().len(), 5);
        assert_eq!(
            Query::parse("a=1&b=%G0"),
            Err(DecodeError::MalformedEscape { offset: 0 })
        );
        assert_eq!(Query::parse("a=%FF"), Err(DecodeError::NotUtf8));
        assert_eq!(Query::parse("").unwrap().pairs().len(), 0);
    }

    mod prop {
        use super::super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn decoding_never_panics(s in any::<String>()) {
                let _ = percent_decode(&s);
                let _ = form_decode(&s);
                let _ = decode_path_segments(&s);
                let _ = Query::parse(&s);
            }

            #[test]
            fn encode_then_decode_round_trips(s in any::<String>()) {
                let encoded: String = s
                    .bytes()
                    .map(|b| format!("%{b:02X}"))
                    .collect();
                prop_assert_eq!(percent_decode(&encoded).unwrap(), s);
            }
        }
    }
}
