//! The render seam (RUNTIME.md §13.3): what produces a node's files. The agent loop (model/)
//! and the scripted renders (scenario/) both implement [`Render`]; the reconciler never knows
//! which.

use std::collections::HashMap;

use crate::format::json::Object;
use crate::format::opwm::FileTree;
use crate::format::receipt::Wake;

/// Token usage reported by a render, mapped to receipt cost (RUNTIME.md §8.9).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Usage {
    /// Provider label recorded as `cost.provider`.
    pub provider: String,
    /// Model id recorded as `cost.model`.
    pub model: String,
    /// Fresh tokens.
    pub fresh: u64,
    /// Reused (cached) tokens.
    pub reused: u64,
}

/// A successful render: the node's complete new file tree and its signal.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RenderProduct {
    /// Every file of the new world-model (relative paths; normalized at commit).
    pub files: Vec<(String, Vec<u8>)>,
    /// The receipt's `semantic_diff` (`{}` when the render reported none).
    pub semantic_diff: Object,
    /// Render-attested postcondition id → attested value.
    pub attestations: HashMap<String, bool>,
    /// Usage, when a model was used.
    pub usage: Option<Usage>,
}

/// A failed render.
#[derive(Clone, Debug, PartialEq)]
pub struct RenderFailure {
    /// The unsanitized reason (the reconciler sanitizes it).
    pub reason: String,
    /// Usage spent before the failure, if any was reported.
    pub usage: Option<Usage>,
}

/// The outcome of one render.
#[derive(Clone, Debug, PartialEq)]
pub enum RenderOutcome {
    /// `status: done` with files.
    Done(RenderProduct),
    /// `status: failed`, a turn-cap overrun or an error.
    Failed(RenderFailure),
}

/// Read access to the published truth of the producers a node subscribes to (and no others:
/// read isolation, RUNTIME.md §8.5).
pub trait UpstreamReader {
    /// The producers this node may read, in mounted edge order, without duplicates.
    fn producers(&self) -> &[String];
    /// The producer's published files.
    ///
    /// Errors: [`NotSubscribed`] when the producer is not one of
    /// [`UpstreamReader::producers`].
    fn read(&self, producer: &str) -> Result<FileTree, NotSubscribed>;
}

/// A read of a producer the node does not subscribe to (read isolation, RUNTIME.md §8.5).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("read isolation: '{producer}' is not a producer this node subscribes to")]
pub struct NotSubscribed {
    /// The producer asked for.
    pub producer: String,
}

/// Everything a render needs (RUNTIME.md §8.1).
pub struct RenderContext<'a> {
    /// The node id.
    pub node: &'a str,
    /// The (merged) wake.
    pub wake: &'a Wake,
    /// The node's contract fingerprint.
    pub contract_fingerprint: &'a str,
    /// The current input tuple.
    pub input_fingerprints: &'a [String],
    /// The node's current published files (empty when cold).
    pub prior: &'a FileTree,
    /// The published truth of its producers.
    pub upstream: &'a dyn UpstreamReader,
}

/// What produces a node's files.
pub trait Render: Send + Sync {
    /// Runs one render of `ctx.node`.
    fn render(&self, ctx: &RenderContext<'_>) -> RenderOutcome;
}
