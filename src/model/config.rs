//! Provider configuration: the provider table of HOST.md §5.1.
//!
//! The host parses `reactor.yml` and hands the plain `model.*` values to
//! [`ProviderConfig::resolve`]; this module applies the table's defaults and rules.

/// The wire protocol of a provider (HOST.md §5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// OpenAI-style Chat Completions: `POST <base>/chat/completions` (HOST.md §5.3).
    ChatCompletions,
    /// Anthropic Messages: `POST <base>/messages` (HOST.md §5.4).
    Messages,
}

impl Transport {
    /// The endpoint path appended to the base URL: `/chat/completions` or `/messages`.
    pub fn path(self) -> &'static str {
        match self {
            Transport::ChatCompletions => "/chat/completions",
            Transport::Messages => "/messages",
        }
    }
}

/// The raw `model.*` values of `reactor.yml` (HOST.md §4.2), each `None` when the key is absent.
/// Empty strings count as absent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProviderSettings {
    /// `model.provider` (default `openrouter`).
    pub provider: Option<String>,
    /// `model.base_url`.
    pub base_url: Option<String>,
    /// `model.api_key_env`.
    pub api_key_env: Option<String>,
    /// `model.render_model`.
    pub render_model: Option<String>,
    /// `model.compile_model`.
    pub compile_model: Option<String>,
    /// `model.temperature`.
    pub temperature: Option<f64>,
    /// `model.reasoning_effort`.
    pub reasoning_effort: Option<String>,
}

/// A resolved provider (HOST.md §5.1). Holds no key: the key is looked up separately
/// ([`super::keys`]) and given to the client.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderConfig {
    /// The `model.provider` label; receipts and the manifest record it as `cost.provider`.
    pub provider: String,
    /// The protocol, fixed by the provider label (a proxied `anthropic` still speaks Messages).
    pub transport: Transport,
    /// The base URL without trailing `/`.
    pub base_url: String,
    /// The name of the environment variable holding the key.
    pub api_key_env: String,
    /// The render model id, when configured or defaulted.
    pub render_model: Option<String>,
    /// The compile model id, when configured or defaulted.
    pub compile_model: Option<String>,
    /// Sampling temperature, sent only when set.
    pub temperature: Option<f64>,
    /// Reasoning effort, sent only when set (Chat Completions).
    pub reasoning_effort: Option<String>,
}

/// A configuration error; `Display` is the one-line message of HOST.md §5.1 / §2.2.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// An unknown provider label without both `base_url` and `api_key_env`.
    #[error(
        "model.provider: unknown provider '{0}'; use openrouter, openai, anthropic or google, or set both model.base_url and model.api_key_env"
    )]
    UnknownProvider(String),
    /// A model id a verb needs is not configured and the provider has no default.
    #[error("model.{role}_model is required for provider '{provider}'")]
    MissingModel {
        /// `render` or `compile`.
        role: &'static str,
        /// The provider label.
        provider: String,
    },
    /// `model.base_url` is not an `http://` or `https://` URL.
    #[error("model.base_url: expected an http:// or https:// URL, got '{0}'")]
    BadBaseUrl(String),
    /// `model.api_key_env` is not a plausible variable name.
    #[error("model.api_key_env: '{0}' is not an environment variable name")]
    BadKeyVariable(String),
    /// An environment variable with an unusable value.
    #[error("{var}: {message}")]
    BadEnv {
        /// The variable.
        var: &'static str,
        /// What is wrong.
        message: String,
    },
}

/// One row of the provider table.
struct Row {
    label: &'static str,
    transport: Transport,
    base_url: &'static str,
    key_env: &'static str,
    default_model: Option<&'static str>,
}

const TABLE: [Row; 4] = [
    Row {
        label: "openrouter",
        transport: Transport::ChatCompletions,
        base_url: "https://openrouter.ai/api/v1",
        key_env: "OPENROUTER_API_KEY",
        default_model: Some("google/gemini-3.5-flash"),
    },
    Row {
        label: "openai",
        transport: Transport::ChatCompletions,
        base_url: "https://api.openai.com/v1",
        key_env: "OPENAI_API_KEY",
        default_model: None,
    },
    Row {
        label: "anthropic",
        transport: Transport::Messages,
        base_url: "https://api.anthropic.com/v1",
        key_env: "ANTHROPIC_API_KEY",
        default_model: Some("claude-haiku-4-5"),
    },
    Row {
        label: "google",
        transport: Transport::ChatCompletions,
        base_url: "https://generativelanguage.googleapis.com/v1beta/openai",
        key_env: "GEMINI_API_KEY",
        default_model: None,
    },
];

/// The default provider label.
pub(crate) const DEFAULT_PROVIDER: &str = "openrouter";

fn non_empty(v: &Option<String>) -> Option<String> {
    v.as_ref()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn valid_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl ProviderConfig {
    /// Applies the provider table (HOST.md §5.1) to the configured values.
    ///
    /// Known labels take their row's transport, base URL, key variable and default models;
    /// `base_url` and `api_key_env` override the row. Any other label speaks Chat Completions and
    /// needs both `base_url` and `api_key_env`.
    ///
    /// Errors: [`ConfigError::UnknownProvider`], [`ConfigError::BadBaseUrl`] (not
    /// `http://`/`https://`), [`ConfigError::BadKeyVariable`].
    pub fn resolve(settings: &ProviderSettings) -> Result<ProviderConfig, ConfigError> {
        let label = match &settings.provider {
            Some(p) => p.trim().to_string(),
            None => DEFAULT_PROVIDER.to_string(),
        };
        let base_override = non_empty(&settings.base_url);
        let env_override = non_empty(&settings.api_key_env);
        let row = TABLE.iter().find(|r| r.label == label);
        let (transport, base_url, api_key_env, default_model) = match row {
            Some(r) => (
                r.transport,
                base_override.unwrap_or_else(|| r.base_url.to_string()),
                env_override.unwrap_or_else(|| r.key_env.to_string()),
                r.default_model,
            ),
            None => match (base_override, env_override) {
                (Some(b), Some(e)) => (Transport::ChatCompletions, b, e, None),
                _ => return Err(ConfigError::UnknownProvider(label)),
            },
        };
        let lower = base_url.to_ascii_lowercase();
        let rest = lower
            .strip_prefix("http://")
            .or_else(|| lower.strip_prefix("https://"));
        if rest.is_none_or(|r| r.is_empty() || r.starts_with('/'))
            || base_url.contains(char::is_whitespace)
        {
            return Err(ConfigError::BadBaseUrl(base_url));
        }
        if !valid_var_name(&api_key_env) {
            return Err(ConfigError::BadKeyVariable(api_key_env));
        }
        Ok(ProviderConfig {
            provider: label,
            transport,
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key_env,
            render_model: non_empty(&settings.render_model).or(default_model.map(String::from)),
            compile_model: non_empty(&settings.compile_model).or(default_model.map(String::from)),
            temperature: settings.temperature,
            reasoning_effort: non_empty(&settings.reasoning_effort),
        })
    }

    /// The endpoint URL: the base URL (trailing `/` removed) plus `/chat/completions` or
    /// `/messages`.
    pub fn endpoint(&self) -> String {
        format!(
            "{}{}",
            self.base_url.trim_end_matches('/'),
            self.transport.path()
        )
    }

    /// The render model id, or `model.render_model is required for provider '<p>'`.
    pub fn require_render_model(&self) -> Result<&str, ConfigError> {
        self.render_model
            .as_deref()
            .ok_or_else(|| ConfigError::MissingModel {
                role: "render",
                provider: self.provider.clone(),
            })
    }

    /// The compile model id, or `model.compile_model is required for provider '<p>'`.
    pub(crate) fn require_compile_model(&self) -> Result<&str, ConfigError> {
        self.compile_model
            .as_deref()
            .ok_or_else(|| ConfigError::MissingModel {
                role: "compile",
                provider: self.provider.clone(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(provider: Option<&str>) -> ProviderSettings {
        ProviderSettings {
            provider: provider.map(String::from),
            ..Default::default()
        }
    }

    #[test]
    fn defaults_follow_the_table() {
        let c = ProviderConfig::resolve(&settings(None)).unwrap();
        assert_eq!(c.provider, "openrouter");
        assert_eq!(c.transport, Transport::ChatCompletions);
        assert_eq!(
            c.endpoint(),
            "https://openrouter.ai/api/v1/chat/completions"
        );
        assert_eq!(c.api_key_env, "OPENROUTER_API_KEY");
        assert_eq!(c.require_render_model().unwrap(), "google/gemini-3.5-flash");
        assert_eq!(
            c.require_compile_model().unwrap(),
            "google/gemini-3.5-flash"
        );

        let c = ProviderConfig::resolve(&settings(Some("anthropic"))).unwrap();
        assert_eq!(c.transport, Transport::Messages);
        assert_eq!(c.endpoint(), "https://api.anthropic.com/v1/messages");
        assert_eq!(c.render_model.as_deref(), Some("claude-haiku-4-5"));

        let c = ProviderConfig::resolve(&settings(Some("google"))).unwrap();
        assert_eq!(c.api_key_env, "GEMINI_API_KEY");
        assert_eq!(
            c.endpoint(),
            "https://generativelanguage.googleapis.com/v1beta/openai/chat/completions"
        );
        assert_eq!(
            c.require_compile_model().unwrap_err().to_string(),
            "model.compile_model is required for provider 'google'"
        );
        let c = ProviderConfig::resolve(&settings(Some("openai"))).unwrap();
        assert_eq!(
            c.require_render_model().unwrap_err().to_string(),
            "model.render_model is required for provider 'openai'"
        );
    }

    #[test]
    fn overrides_keep_the_transport() {
        let s = ProviderSettings {
            provider: Some("anthropic".into()),
            base_url: Some("http://127.0.0.1:9/v1///".into()),
            api_key_env: Some("FAKE_KEY".into()),
            render_model: Some("r".into()),
            compile_model: Some("".into()),
            temperature: Some(0.2),
            reasoning_effort: Some("low".into()),
        };
        let c = ProviderConfig::resolve(&s).unwrap();
        assert_eq!(c.transport, Transport::Messages);
        assert_eq!(c.endpoint(), "http://127.0.0.1:9/v1/messages");
        assert_eq!(c.api_key_env, "FAKE_KEY");
        assert_eq!(c.render_model.as_deref(), Some("r"));
        assert_eq!(c.compile_model.as_deref(), Some("claude-haiku-4-5"));
        assert_eq!(c.temperature, Some(0.2));
    }

    #[test]
    fn unknown_labels_need_base_url_and_key_variable() {
        let e = ProviderConfig::resolve(&settings(Some("x"))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "model.provider: unknown provider 'x'; use openrouter, openai, anthropic or google, or set both model.base_url and model.api_key_env"
        );
        let mut s = settings(Some("local"));
        s.base_url = Some("http://localhost:8080/v1".into());
        assert!(ProviderConfig::resolve(&s).is_err());
        s.api_key_env = Some("LOCAL_KEY".into());
        let c = ProviderConfig::resolve(&s).unwrap();
        assert_eq!(c.transport, Transport::ChatCompletions);
        assert_eq!(c.provider, "local");
        assert!(c.render_model.is_none());
    }

    #[test]
    fn hostile_values_are_config_errors() {
        for bad in [
            "ftp://x",
            "http://",
            "https:///path",
            "localhost:8080",
            "http://a b",
        ] {
            let mut s = settings(None);
            s.base_url = Some(bad.into());
            assert!(
                matches!(ProviderConfig::resolve(&s), Err(ConfigError::BadBaseUrl(_))),
                "{bad}"
            );
        }
        for bad in ["1KEY", "MY-KEY", "A B", "K=V"] {
            let mut s = settings(None);
            s.api_key_env = Some(bad.into());
            assert!(
                matches!(
                    ProviderConfig::resolve(&s),
                    Err(ConfigError::BadKeyVariable(_))
                ),
                "{bad}"
            );
        }
    }
}
