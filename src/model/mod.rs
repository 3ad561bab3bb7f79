//! Model providers (room `model`; see ARCHITECTURE.md): the provider-neutral request and
//! response (RUNTIME.md §13.1), the provider table and key lookup (HOST.md §2.3, §5.1), the HTTP
//! clients for Chat Completions and Anthropic Messages with retries and error hints
//! (HOST.md §5.2–§5.7), usage → cost (RUNTIME.md §8.9), and the record/replay and offline
//! clients (RUNTIME.md §13.2). This is the only room that touches the network; the render agent
//! loop over these clients lives in the `agent` room, which `model` never imports.
//!
//! Typical use by the host:
//!
//! ```no_run
//! use reactor::model::{
//!     HttpSettings, ModelClient, ModelRequest, Message, ProviderClient, ProviderConfig,
//!     ProviderSettings, keys,
//! };
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let config = ProviderConfig::resolve(&ProviderSettings::default())?;
//! let key = keys::require_key(&config, std::path::Path::new("."))?;
//! let client = ProviderClient::new(config.clone(), key, HttpSettings::from_env()?);
//! let response = client.complete(&ModelRequest {
//!     purpose: "render:price-watch".into(),
//!     model: config.require_render_model()?.to_string(),
//!     system: vec!["system prompt".into()],
//!     messages: vec![Message::user("pointer input")],
//!     temperature: config.temperature,
//!     reasoning_effort: config.reasoning_effort.clone(),
//!     ..Default::default()
//! })?;
//! let tokens = response.usage.tokens();
//! # let _ = tokens; Ok(()) }
//! ```

pub mod backoff;
pub mod chat;
pub mod client;
pub mod config;
pub mod error;
pub mod keys;
pub mod messages;
pub mod replay;
pub mod types;
pub mod wire;

pub use client::{HttpSettings, ProviderClient};
pub use config::{ConfigError, ProviderConfig, ProviderSettings, Transport};
pub use error::ModelError;
pub use keys::{ApiKey, KeyError};
pub use replay::{ModelRecord, OfflineClient, RecordingClient, ReplayClient};
pub use types::{
    Message, ModelRequest, ModelResponse, OutputSchema, SYSTEM_SEPARATOR, TokenCost, ToolArguments,
    ToolCall, ToolSpec, Usage,
};

use std::sync::Arc;

/// The model seam (RUNTIME.md §13): one blocking call per turn. Implementations are shared
/// between worker threads, hence `Send + Sync`.
pub trait ModelClient: Send + Sync {
    /// Sends one request and returns the response, or the failure as a one-line, redacted
    /// [`ModelError`] (retries, when the implementation has any, happen inside).
    fn complete(&self, req: &ModelRequest) -> Result<ModelResponse, ModelError>;
}

impl<C: ModelClient + ?Sized> ModelClient for Box<C> {
    fn complete(&self, req: &ModelRequest) -> Result<ModelResponse, ModelError> {
        (**self).complete(req)
    }
}

impl<C: ModelClient + ?Sized> ModelClient for Arc<C> {
    fn complete(&self, req: &ModelRequest) -> Result<ModelResponse, ModelError> {
        (**self).complete(req)
    }
}

impl<C: ModelClient + ?Sized> ModelClient for &C {
    fn complete(&self, req: &ModelRequest) -> Result<ModelResponse, ModelError> {
        (**self).complete(req)
    }
}
