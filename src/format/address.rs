//! Content addresses (FORMATS.md §1): `sha256:` followed by 64 lowercase hex digits.

use sha2::{Digest, Sha256};

/// The prefix of every content address.
pub(crate) const SHA256_PREFIX: &str = "sha256:";

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(HEX[(b >> 4) as usize] as char);
        s.push(HEX[(b & 0xf) as usize] as char);
    }
    s
}

/// Decodes lowercase or uppercase hex; `None` on odd length or a non-hex character.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    let val = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    s.as_bytes()
        .chunks(2)
        .map(|p| Some(val(p[0])? << 4 | val(p[1])?))
        .collect()
}

/// `sha256:` + lowercase hex of SHA-256 over `bytes`.
pub fn address(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut s = String::with_capacity(71);
    s.push_str(SHA256_PREFIX);
    s.push_str(&hex(&digest));
    s
}

/// True iff `s` matches `^sha256:[a-f0-9]{64}$`.
pub(crate) fn is_content_address(s: &str) -> bool {
    s.len() == 71
        && s.starts_with(SHA256_PREFIX)
        && s.as_bytes()[7..]
            .iter()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The address of the empty OPWM1 artifact: the store's cold-start token (FORMATS.md §8.4).
pub(crate) const EMPTY_TREE_ADDRESS: &str =
    "sha256:e59ed80133c208bf8e8264c96c5bbe0d36aa073fb969671ec6b752bffb7b08e6";

/// The literal `@atomic` token of a failed receipt with no earlier receipt (FORMATS.md §8.4).
pub(crate) const COLD_START_EMPTY: &str = "cold-start:empty";

/// The address of canonical `null` (RUNTIME.md §4.7).
pub const NULL_ADDRESS: &str =
    "sha256:74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_are_what_they_claim() {
        assert_eq!(address(b"OPWM1\0\0\0\0"), EMPTY_TREE_ADDRESS);
        assert_eq!(address(b"null"), NULL_ADDRESS);
        assert!(is_content_address(EMPTY_TREE_ADDRESS));
        assert!(!is_content_address(COLD_START_EMPTY));
        assert!(!is_content_address(&EMPTY_TREE_ADDRESS.to_uppercase()));
        assert!(!is_content_address(&EMPTY_TREE_ADDRESS[..70]));
    }

    #[test]
    fn hex_round_trip() {
        assert_eq!(
            hex(b"ingress.signal-inbox"),
            "696e67726573732e7369676e616c2d696e626f78"
        );
        assert_eq!(unhex("696e"), Some(b"in".to_vec()));
        assert_eq!(unhex("6"), None);
        assert_eq!(unhex("zz"), None);
    }
}
