//! OPWM1 world-model artifacts (FORMATS.md §14.2): a committed file tree serialized as one
//! binary blob whose SHA-256 address is the world-model version.
//!
//! Layout: `"OPWM1"`, `u32le file_count`, then per file (sorted by the UTF-8 bytes of the
//! normalized path) `u32le path_len`, path bytes, `u32le content_len`, content bytes.

use crate::format::address::address;

/// The 5-byte magic.
pub(crate) const MAGIC: &[u8; 5] = b"OPWM1";

/// A file tree: normalized relative POSIX path → bytes, sorted by path bytes.
pub type FileTree = Vec<(String, Vec<u8>)>;

/// Errors of path normalization, encoding and decoding.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OpwmError {
    /// A path with a `..` segment.
    #[error("path {0:?} escapes the tree (contains '..')")]
    DotDot(String),
    /// A path that normalizes to nothing.
    #[error("path {0:?} is empty after normalization")]
    EmptyPath(String),
    /// Two paths normalize to the same path.
    #[error("duplicate path {0:?} after normalization")]
    Duplicate(String),
    /// A file or path longer than 4 GiB − 1.
    #[error("{0} is too large for an OPWM1 artifact")]
    TooLarge(String),
    /// Decoding: the artifact does not start with `OPWM1`.
    #[error("not an OPWM1 artifact (bad magic)")]
    BadMagic,
    /// Decoding: a declared length runs past the end of the artifact.
    #[error("truncated OPWM1 artifact at byte {0}")]
    Truncated(usize),
    /// Decoding: bytes after the last file.
    #[error("{0} trailing byte(s) after the last file")]
    Trailing(usize),
    /// Decoding: a path that is not valid UTF-8.
    #[error("path at byte {0} is not valid UTF-8")]
    BadUtf8(usize),
}

/// Normalizes a tree path: `\` → `/`, drops empty and `.` segments, rejects `..` and an empty
/// result.
pub fn normalize_path(path: &str) -> Result<String, OpwmError> {
    let replaced = path.replace('\\', "/");
    let mut segs = Vec::new();
    for seg in replaced.split('/') {
        match seg {
            "" | "." => {}
            ".." => return Err(OpwmError::DotDot(path.to_string())),
            s => segs.push(s),
        }
    }
    if segs.is_empty() {
        return Err(OpwmError::EmptyPath(path.to_string()));
    }
    Ok(segs.join("/"))
}

/// Normalizes every path, rejects duplicates, and sorts by path bytes.
pub fn normalize_tree(files: Vec<(String, Vec<u8>)>) -> Result<FileTree, OpwmError> {
    let mut out: FileTree = Vec::with_capacity(files.len());
    for (p, c) in files {
        out.push((normalize_path(&p)?, c));
    }
    out.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    for w in out.windows(2) {
        if w[0].0 == w[1].0 {
            return Err(OpwmError::Duplicate(w[0].0.clone()));
        }
    }
    Ok(out)
}

fn len32(n: usize, what: &str) -> Result<[u8; 4], OpwmError> {
    u32::try_from(n)
        .map(u32::to_le_bytes)
        .map_err(|_| OpwmError::TooLarge(what.to_string()))
}

/// Serializes a tree (normalizing and sorting it first).
pub fn encode(files: Vec<(String, Vec<u8>)>) -> Result<Vec<u8>, OpwmError> {
    let tree = normalize_tree(files)?;
    let total: usize = tree.iter().map(|(p, c)| 8 + p.len() + c.len()).sum();
    let mut out = Vec::with_capacity(9 + total);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&len32(tree.len(), "the file count")?);
    for (p, c) in &tree {
        out.extend_from_slice(&len32(p.len(), p)?);
        out.extend_from_slice(p.as_bytes());
        out.extend_from_slice(&len32(c.len(), p)?);
        out.extend_from_slice(c);
    }
    Ok(out)
}

fn read_u32(b: &[u8], pos: usize) -> Result<usize, OpwmError> {
    let s = b.get(pos..pos + 4).ok_or(OpwmError::Truncated(pos))?;
    Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]) as usize)
}

/// Parses an artifact, validating magic, lengths, trailing bytes, UTF-8 paths and duplicates.
/// Never pre-allocates from declared counts. Files are returned in artifact order.
pub fn decode(bytes: &[u8]) -> Result<FileTree, OpwmError> {
    if bytes.len() < 5 || &bytes[..5] != MAGIC {
        return Err(OpwmError::BadMagic);
    }
    let count = read_u32(bytes, 5)?;
    let mut pos = 9;
    let mut files = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for _ in 0..count {
        let plen = read_u32(bytes, pos)?;
        pos += 4;
        let pbytes = bytes
            .get(pos..pos.checked_add(plen).ok_or(OpwmError::Truncated(pos))?)
            .ok_or(OpwmError::Truncated(pos))?;
        let path = std::str::from_utf8(pbytes).map_err(|_| OpwmError::BadUtf8(pos))?;
        let path = normalize_path(path)?;
        pos += plen;
        let clen = read_u32(bytes, pos)?;
        pos += 4;
        let content = bytes
            .get(pos..pos.checked_add(clen).ok_or(OpwmError::Truncated(pos))?)
            .ok_or(OpwmError::Truncated(pos))?;
        pos += clen;
        if !seen.insert(path.clone()) {
            return Err(OpwmError::Duplicate(path));
        }
        files.push((path, content.to_vec()));
    }
    if pos != bytes.len() {
        return Err(OpwmError::Trailing(bytes.len() - pos));
    }
    Ok(files)
}

/// The version of an artifact: its content address.
pub fn version(artifact: &[u8]) -> String {
    address(artifact)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::address::EMPTY_TREE_ADDRESS;

    #[test]
    fn worked_example() {
        let a = encode(vec![("truth.json".into(), b"{\"a\":1}".to_vec())]).unwrap();
        let want = "4f50574d31010000000a00000074727574682e6a736f6e070000007b2261223a317d";
        assert_eq!(crate::format::address::hex(&a), want);
        assert_eq!(a.len(), 34);
        assert_eq!(
            version(&a),
            "sha256:466734db3678cc0c0c707a19b73ad6c98ad5592180de097bf9968cddc05031b5"
        );
        assert_eq!(
            decode(&a).unwrap(),
            vec![("truth.json".to_string(), b"{\"a\":1}".to_vec())]
        );
    }

    #[test]
    fn empty_tree() {
        let a = encode(vec![]).unwrap();
        assert_eq!(a, b"OPWM1\0\0\0\0");
        assert_eq!(version(&a), EMPTY_TREE_ADDRESS);
    }

    #[test]
    fn normalization_and_order() {
        assert_eq!(normalize_path("./a//b\\c.txt").unwrap(), "a/b/c.txt");
        assert!(matches!(
            normalize_path("a/../b"),
            Err(OpwmError::DotDot(_))
        ));
        assert!(matches!(
            normalize_path("/./"),
            Err(OpwmError::EmptyPath(_))
        ));
        assert!(matches!(
            encode(vec![("a".into(), vec![]), ("./a".into(), vec![1])]),
            Err(OpwmError::Duplicate(_))
        ));
        let a = encode(vec![
            ("b".into(), vec![2]),
            ("a".into(), vec![1]),
            ("B".into(), vec![]),
        ])
        .unwrap();
        let names: Vec<String> = decode(&a).unwrap().into_iter().map(|(p, _)| p).collect();
        assert_eq!(names, vec!["B", "a", "b"]);
    }

    #[test]
    fn hostile_artifacts() {
        assert_eq!(decode(b"OPWM"), Err(OpwmError::BadMagic));
        assert_eq!(decode(b"XPWM1\0\0\0\0"), Err(OpwmError::BadMagic));
        // Huge declared count with no data: no allocation, truncated.
        assert!(matches!(
            decode(b"OPWM1\xff\xff\xff\xff"),
            Err(OpwmError::Truncated(_))
        ));
        // Huge path length.
        assert!(matches!(
            decode(b"OPWM1\x01\0\0\0\xff\xff\xff\xffab"),
            Err(OpwmError::Truncated(_))
        ));
        let mut ok = encode(vec![("x".into(), vec![1, 2])]).unwrap();
        ok.push(0);
        assert_eq!(decode(&ok), Err(OpwmError::Trailing(1)));
        let bad_utf8 = b"OPWM1\x01\0\0\0\x01\0\0\0\xff\0\0\0\0";
        assert!(matches!(decode(bad_utf8), Err(OpwmError::BadUtf8(_))));
        let dotdot = b"OPWM1\x01\0\0\0\x02\0\0\0..\0\0\0\0";
        assert!(matches!(decode(dotdot), Err(OpwmError::DotDot(_))));
    }
}
