//! The render agent (room `agent`; see ARCHITECTURE.md): the bounded, tool-calling render loop
//! over a [`ModelClient`](crate::model::ModelClient) that implements the reconciler's render seam
//! ([`core::render::Render`](crate::core::render::Render)) as [`AgentRender`] (RUNTIME.md §8).
//! Instructions live in [`prompt`] (the embedded system prompt, node briefs, wake header, pointer
//! input), the tools and the render's workspace in [`tools`] (§8.5–§8.6), and the `shell_exec`
//! runners in [`sandbox`].
//!
//! The room sits beside `model`: it uses the provider clients and their neutral request and
//! response types, and `model` never imports it. The host mounts it (`host::boot`).

pub mod prompt;
pub mod render;
pub mod sandbox;
pub mod tools;

pub use prompt::{NodeBrief, PromptSource, SkillError, SystemPrompt, system_prompt};
pub use render::{AgentRender, RenderSettings};
pub use sandbox::{SandboxMode, SandboxRunner};
