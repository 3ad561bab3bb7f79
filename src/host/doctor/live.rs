//! `doctor --live` (HOST.md §8.2, §5.9): one small request to the render model.

use std::time::Instant;

use serde::Serialize;

use super::{LIVE_MAX_TOKENS, LIVE_PROMPT, LIVE_PURPOSE};
use crate::format::sanitize::redact;
use crate::host::boot::{http_settings, http_settings_for};
use crate::host::config::ModelSection;
use crate::model::{Message, ModelClient, ModelRequest, ProviderClient, ProviderConfig, keys};

/// The outcome of the smoke request: JSON `{"ran", "ok", "detail"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LiveSmoke {
    /// A request was sent.
    pub ran: bool,
    /// It succeeded.
    pub ok: bool,
    /// `ok (<ms> ms)` or the failure (a redacted hint, or why nothing was sent).
    pub detail: String,
}

impl LiveSmoke {
    /// Nothing was sent, for `detail`.
    pub(super) fn not_sent(detail: impl Into<String>) -> LiveSmoke {
        LiveSmoke {
            ran: false,
            ok: false,
            detail: detail.into(),
        }
    }
}

/// Sends the smoke request: the render model is asked to reply `ok`, with no tools, under
/// `model.timeout` / `model.connect_timeout` of `model` (when the project loaded).
pub(super) fn live_smoke(
    config: &ProviderConfig,
    key: keys::ApiKey,
    model: Option<&ModelSection>,
) -> LiveSmoke {
    let secret = key.expose_secret().to_string();
    let settings = match model.map_or_else(http_settings, http_settings_for) {
        Ok(s) => s,
        Err(e) => return LiveSmoke::not_sent(e.message),
    };
    let Ok(model) = config.require_render_model() else {
        return LiveSmoke::not_sent(format!(
            "model.render_model is required for provider '{}'",
            config.provider
        ));
    };
    let request = ModelRequest {
        purpose: LIVE_PURPOSE.into(),
        model: model.to_string(),
        messages: vec![Message::user(LIVE_PROMPT)],
        temperature: config.temperature,
        reasoning_effort: config.reasoning_effort.clone(),
        max_output_tokens: Some(LIVE_MAX_TOKENS),
        ..ModelRequest::default()
    };
    let client = ProviderClient::new(config.clone(), key, settings);
    let started = Instant::now();
    match client.complete(&request) {
        Ok(_) => LiveSmoke {
            ran: true,
            ok: true,
            detail: format!("ok ({} ms)", started.elapsed().as_millis()),
        },
        Err(e) => LiveSmoke {
            ran: true,
            ok: false,
            detail: redact(&e.to_string(), &[secret.as_str()]),
        },
    }
}
