//! The reactor itself (RUNTIME.md §4–§7, §9, §12): the canonicalizer language and
//! `compile_node`, structured truth, postconditions and the commit gate, the mounted IR, the
//! rules of a compiled node ([`rules::CompiledRules`]), the render seam, the reconciler with
//! its height-ordered drain, ingress staging and the boot sweep. Talks to the outside only
//! through [`render::Render`] and the store; imports nothing from `compile`. Deterministic.

pub mod canonicalizer;
pub mod ir;
pub mod postcondition;
pub mod reactor;
pub mod render;
pub mod rules;

pub use ir::{AtomicRules, IngressMode, Ir, NodeIr, NodeRules};
pub use reactor::{
    Arrival, CoreError, Disposition, InFlight, Reactor, ReactorOptions, ReconcileResult,
    StageOutcome,
};
pub use render::{
    NotSubscribed, Render, RenderContext, RenderFailure, RenderOutcome, RenderProduct, Usage,
};
