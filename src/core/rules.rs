//! The rules of a compiled node (RUNTIME.md §5, §6): the [`NodeRules`] that fingerprint a
//! committed tree with the node's compiled canonicalizer and gate it with its compiled
//! postcondition set.

use std::collections::HashMap;
use std::sync::Arc;

use crate::core::canonicalizer::CompiledCanonicalizer;
use crate::core::ir::NodeRules;
use crate::core::postcondition::{
    CompiledPostconditions, GateRejection, TRUTH_FILE, TruthError, gate, structured_truth,
};
use crate::format::json;
use crate::format::opwm::FileTree;
use crate::format::receipt::Fingerprints;

/// The rules of a compiled node (RUNTIME.md §5, §6): faceted nodes fingerprint their
/// `truth.json` with the compiled canonicalizer; atomic-only nodes fingerprint `@atomic` = the
/// world-model version; the gate checks the compiled postcondition set.
#[derive(Clone, Debug)]
pub struct CompiledRules {
    node: String,
    canonicalizer: Arc<CompiledCanonicalizer>,
    postconditions: Arc<CompiledPostconditions>,
}

impl CompiledRules {
    /// Rules from a compiled canonicalizer and postcondition set of `node`.
    pub fn new(
        node: impl Into<String>,
        canonicalizer: Arc<CompiledCanonicalizer>,
        postconditions: Arc<CompiledPostconditions>,
    ) -> CompiledRules {
        CompiledRules {
            node: node.into(),
            canonicalizer,
            postconditions,
        }
    }
}

impl NodeRules for CompiledRules {
    fn facets(&self) -> Vec<String> {
        self.canonicalizer.declared_facets().to_vec()
    }

    /// Errors: the structured-truth failure reasons of RUNTIME.md §5.3.
    fn fingerprint(
        &self,
        files: &FileTree,
        version: &str,
    ) -> Result<(Fingerprints, Vec<String>), TruthError> {
        let truth = structured_truth(&self.node, files, Some(&self.canonicalizer), version)?;
        Ok((truth.fingerprints, truth.warnings))
    }

    /// Errors: `postconditions failed: …` (RUNTIME.md §6.3).
    fn gate(
        &self,
        files: &FileTree,
        attestations: &HashMap<String, bool>,
    ) -> Result<(), GateRejection> {
        if self.postconditions.is_empty() {
            return Ok(());
        }
        if !self.canonicalizer.is_faceted() {
            return gate(&self.postconditions, None, None, attestations);
        }
        let truth = files
            .iter()
            .find(|(p, _)| p == TRUTH_FILE)
            .and_then(|(_, bytes)| json::parse(bytes).ok())
            .filter(|v| v.as_object().is_some());
        gate(
            &self.postconditions,
            truth.as_ref(),
            Some(&self.canonicalizer),
            attestations,
        )
    }
}
