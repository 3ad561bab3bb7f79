//! State-directory layout (FORMATS.md §2, §14.1, §14.3): entry names and the hex encoding of node
//! ids into directory names.

use crate::format::address::{hex, is_content_address, unhex};

/// The ledger.
pub(crate) const RECEIPTS_FILE: &str = "receipts.json";
/// The runtime registry.
pub(crate) const REGISTRY_FILE: &str = "registry.json";
/// The single-writer lock file.
pub(crate) const LOCK_FILE: &str = ".lock";
/// The running daemon's address record.
pub(crate) const SERVE_FILE: &str = "serve.json";
/// Authored replay captions.
pub(crate) const BEATS_FILE: &str = "beats.json";
/// The world-model store directory.
pub(crate) const WORLD_MODELS_DIR: &str = "world-models";
/// The singular fallback some reference viewers read.
pub(crate) const WORLD_MODEL_DIR_SINGULAR: &str = "world-model";
/// The compile cache directory.
pub(crate) const COMPILE_DIR: &str = "compile";
/// `compile/topology.json`.
pub(crate) const TOPOLOGY_FILE: &str = "topology.json";
/// `compile/labels.json`.
pub(crate) const LABELS_FILE: &str = "labels.json";
/// `compile/manifest.json`.
pub(crate) const MANIFEST_FILE: &str = "manifest.json";
/// `compile/nodes/`.
pub(crate) const COMPILE_NODES_DIR: &str = "nodes";
/// A node's current pointer.
pub(crate) const PUBLISHED_FILE: &str = "published.json";
/// A node's `@atomic` token → version index.
pub(crate) const ATOMIC_INDEX_FILE: &str = "atomic-index.json";
/// A node's committed versions.
pub(crate) const VERSIONS_DIR: &str = "versions";

/// The directory segment of a node: lowercase hex of its UTF-8 bytes.
pub fn node_segment(node: &str) -> String {
    hex(node.as_bytes())
}

/// The node id of a directory segment, if it is valid hex of UTF-8.
pub(crate) fn segment_node(seg: &str) -> Option<String> {
    String::from_utf8(unhex(seg)?).ok()
}

/// `sha256_<hex>.bin` for a content-address version; `None` for anything else.
pub fn version_file_name(version: &str) -> Option<String> {
    if !is_content_address(version) {
        return None;
    }
    Some(format!("sha256_{}.bin", &version[7..]))
}

/// True for names readers ignore (temporaries written by any implementation).
pub(crate) fn is_temporary_name(name: &str) -> bool {
    name.contains(".tmp-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments() {
        assert_eq!(
            node_segment("ingress.signal-inbox"),
            "696e67726573732e7369676e616c2d696e626f78"
        );
        assert_eq!(segment_node("616263").as_deref(), Some("abc"));
        assert_eq!(segment_node("ff"), None);
        assert_eq!(
            version_file_name(
                "sha256:e59ed80133c208bf8e8264c96c5bbe0d36aa073fb969671ec6b752bffb7b08e6"
            )
            .as_deref(),
            Some("sha256_e59ed80133c208bf8e8264c96c5bbe0d36aa073fb969671ec6b752bffb7b08e6.bin")
        );
        assert_eq!(version_file_name("inbox:3"), None);
        assert!(is_temporary_name("receipts.json.tmp-123"));
    }
}
