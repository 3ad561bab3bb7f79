//! OPWM1 world-model artifacts (FORMATS.md §14.2): the encoder on a tree spelled by the input,
//! the decoder on the input itself, and the encoder on the trees it returns.
//!
//! Properties: an encoded tree decodes to the normalized tree (and encoding fails exactly
//! when normalization does); a decoded tree has normalized, unique paths; encoding it and
//! decoding again gives the same files sorted by path bytes; that encoding is canonical
//! (encoding its decode reproduces it byte for byte, so the version is stable). Errors name a
//! byte offset inside the input.
#![no_main]

use std::collections::HashSet;

use libfuzzer_sys::fuzz_target;
use reactor::format::opwm::{OpwmError, decode, encode, normalize_path, normalize_tree};
use reactor_fuzz::pieces;

/// The input read as a tree: pieces at `\n--\n`, alternately a path (lossy UTF-8) and content.
fn as_tree(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    let p = pieces(bytes, 16);
    p.chunks(2)
        .filter(|c| !c[0].is_empty())
        .map(|c| (String::from_utf8_lossy(c[0]).into_owned(), c[1].to_vec()))
        .collect()
}

fuzz_target!(|bytes: &[u8]| {
    let tree = as_tree(bytes);
    match (encode(tree.clone()), normalize_tree(tree)) {
        (Ok(artifact), Ok(normalized)) => {
            assert_eq!(
                decode(&artifact).expect("an encoded tree decodes"),
                normalized
            );
        }
        (Err(e), Err(f)) => assert_eq!(e, f),
        (got, want) => panic!("encode {got:?} but normalize {want:?}"),
    }

    let files = match decode(bytes) {
        Ok(f) => f,
        Err(OpwmError::Truncated(at) | OpwmError::BadUtf8(at)) => {
            assert!(at <= bytes.len());
            return;
        }
        Err(OpwmError::Trailing(n)) => {
            assert!(n > 0 && n <= bytes.len());
            return;
        }
        Err(_) => return,
    };
    let mut seen = HashSet::new();
    for (p, _) in &files {
        assert_eq!(normalize_path(p).as_deref(), Ok(p.as_str()));
        assert!(seen.insert(p.clone()), "duplicate path {p:?}");
    }
    let canonical = encode(files.clone()).expect("a decoded tree encodes");
    let mut sorted = files.clone();
    sorted.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    assert_eq!(decode(&canonical).expect("the encoding decodes"), sorted);
    assert_eq!(encode(sorted).unwrap(), canonical);
});
