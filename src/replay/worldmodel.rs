//! The inspector's world-model view (VIEWER.md §4.2 `NodeWorldModelView`, §6.4).

use base64::Engine;
use serde::Serialize;

use crate::replay::open::OpenedStateDir;
use crate::replay::snapshot::Labels;
use crate::store::worldmodel::WorldModelReader;

/// One file of a version.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorldModelFileView {
    /// Normalized path.
    pub path: String,
    /// Strict UTF-8 decoding, or `null`.
    pub text: Option<String>,
    /// Standard base64 with padding.
    pub base64: String,
    /// Length in bytes.
    pub bytes: usize,
}

/// A node's world-model at a requested version.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeWorldModelView {
    /// Node id.
    pub node: String,
    /// The requested version string, echoed.
    pub version: String,
    /// The node's current published fingerprints (`{}` if unreadable).
    pub published_fingerprints: Labels,
    /// Files in artifact order.
    pub files: Vec<WorldModelFileView>,
}

/// Reads `node` at `version` (FORMATS.md §14.9); `None` when not found.
pub fn read_node_world_model(
    opened: &OpenedStateDir,
    node: &str,
    version: &str,
) -> Option<NodeWorldModelView> {
    let reader = WorldModelReader::open(opened.source.as_ref())?;
    let (_, files) = reader.read_version(node, version)?;
    let published = reader
        .published(node)
        .map(|p| Labels(p.fingerprints.0))
        .unwrap_or_default();
    Some(NodeWorldModelView {
        node: node.to_string(),
        version: version.to_string(),
        published_fingerprints: published,
        files: files
            .into_iter()
            .map(|(path, content)| WorldModelFileView {
                text: String::from_utf8(content.clone()).ok(),
                base64: base64::engine::general_purpose::STANDARD.encode(&content),
                bytes: content.len(),
                path,
            })
            .collect(),
    })
}

/// An opened world-model store of a state directory on disk (read-only).
#[derive(Debug)]
pub struct WorldModels {
    source: crate::store::source::DiskSource,
}

impl WorldModels {
    /// The node's current pointer.
    pub fn published(&self, node: &str) -> Option<crate::store::worldmodel::Published> {
        WorldModelReader::open(&self.source)?.published(node)
    }
    /// A node's files at a version (FORMATS.md §14.9 lookup): the resolved version and files.
    pub fn read_version(
        &self,
        node: &str,
        version: &str,
    ) -> Option<(String, crate::format::opwm::FileTree)> {
        WorldModelReader::open(&self.source)?.read_version(node, version)
    }
}

/// `open_world_models(state_dir)` (VIEWER.md §7): the store at `world-models/` (or the singular
/// `world-model/`), or `None` when the state directory has none.
pub fn open_world_models(state_dir: &std::path::Path) -> Option<WorldModels> {
    let source = crate::store::source::DiskSource::new(state_dir);
    WorldModelReader::open(&source)?;
    Some(WorldModels { source })
}
