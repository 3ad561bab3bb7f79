//! The shapes of tool results: file pages (text or base64) and file lists.

use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::{MAX_READ_BYTES, ToolError};

/// One page of a file as a read result: `{"path", "bytes", "encoding", "content", "truncated",
/// "next_offset"?}`. `bytes` is the whole file's size; `offset` and `next_offset` count bytes.
/// A file that is valid UTF-8 is returned as text (pages end on character boundaries); any
/// other file as base64 of the raw bytes.
///
/// Errors: [`ToolError::OffsetPastEnd`], [`ToolError::OffsetInsideCharacter`].
pub(crate) fn read_page(path: &str, bytes: &[u8], offset: Option<u64>) -> Result<Value, ToolError> {
    let total = bytes.len();
    let off = offset.unwrap_or(0);
    if off > total as u64 {
        return Err(ToolError::OffsetPastEnd {
            offset: off,
            path: path.to_string(),
            total,
        });
    }
    let off = off as usize;
    let (encoding, content, end) = match std::str::from_utf8(bytes) {
        Ok(text) => {
            if !text.is_char_boundary(off) {
                return Err(ToolError::OffsetInsideCharacter {
                    offset: off,
                    path: path.to_string(),
                });
            }
            let mut end = (off + MAX_READ_BYTES).min(total);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            ("utf8", text[off..end].to_string(), end)
        }
        Err(_) => {
            let end = (off + MAX_READ_BYTES / 4 * 3).min(total);
            (
                "base64",
                base64::engine::general_purpose::STANDARD.encode(&bytes[off..end]),
                end,
            )
        }
    };
    let mut out = Map::new();
    out.insert("path".into(), json!(path));
    out.insert("bytes".into(), json!(total));
    out.insert("encoding".into(), json!(encoding));
    out.insert("content".into(), json!(content));
    out.insert("truncated".into(), json!(end < total));
    if end < total {
        out.insert("next_offset".into(), json!(end));
    }
    Ok(Value::Object(out))
}

/// `[{"path", "bytes"}]` for a file list.
pub(crate) fn file_list(files: &[(String, u64)]) -> Value {
    Value::Array(
        files
            .iter()
            .map(|(p, n)| json!({"path": p, "bytes": n}))
            .collect(),
    )
}
