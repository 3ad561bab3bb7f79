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
    /// `model.max_tokens`: the output budget of every request that sets none itself.
    pub max_tokens: Option<u32>,
    /// The base-URL variables of the environment ([`EnvBaseUrls::from_env`]); all unset for a
    /// check of `reactor.yml` alone.
    pub env: EnvBaseUrls,
}

/// The variable that overrides `model.base_url` for every provider.
pub(crate) const BASE_URL_ENV: &str = "REACTOR_MODEL_BASE_URL";
/// OpenAI's own base-URL variable, honoured for provider `openai` when `reactor.yml` sets no
/// `model.base_url`.
pub(crate) const OPENAI_BASE_URL_ENV: &str = "OPENAI_BASE_URL";
/// Anthropic's own base-URL variable, honoured for provider `anthropic` when `reactor.yml` sets
/// no `model.base_url`.
pub(crate) const ANTHROPIC_BASE_URL_ENV: &str = "ANTHROPIC_BASE_URL";

/// The base-URL variables of the environment; empty values count as unset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvBaseUrls {
    /// [`BASE_URL_ENV`].
    pub reactor: Option<String>,
    /// [`OPENAI_BASE_URL_ENV`].
    pub openai: Option<String>,
    /// [`ANTHROPIC_BASE_URL_ENV`].
    pub anthropic: Option<String>,
}

impl EnvBaseUrls {
    /// Reads the three variables from the process environment.
    pub fn from_env() -> EnvBaseUrls {
        EnvBaseUrls::from_env_with(&|name| std::env::var(name).ok())
    }

    /// [`EnvBaseUrls::from_env`] with an injected environment.
    pub(crate) fn from_env_with(env: &dyn Fn(&str) -> Option<String>) -> EnvBaseUrls {
        let get = |name| env(name).filter(|v| !v.trim().is_empty());
        EnvBaseUrls {
            reactor: get(BASE_URL_ENV),
            openai: get(OPENAI_BASE_URL_ENV),
            anthropic: get(ANTHROPIC_BASE_URL_ENV),
        }
    }
}

/// Where a resolved value came from (shown by `doctor`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ValueSource {
    /// The provider table or a built-in default.
    #[default]
    Default,
    /// `reactor.yml`.
    ReactorYml,
    /// An environment variable.
    Env(&'static str),
}

impl ValueSource {
    /// `default`, `reactor.yml` or the variable's name.
    pub fn label(self) -> &'static str {
        match self {
            ValueSource::Default => "default",
            ValueSource::ReactorYml => "reactor.yml",
            ValueSource::Env(var) => var,
        }
    }
}

/// The source of each resolved value of a [`ProviderConfig`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ValueSources {
    /// `model.provider`.
    pub provider: ValueSource,
    /// The base URL: [`BASE_URL_ENV`], `model.base_url`, [`OPENAI_BASE_URL_ENV`] /
    /// [`ANTHROPIC_BASE_URL_ENV`], or the provider table, in that order.
    pub base_url: ValueSource,
    /// The key variable's name.
    pub api_key_env: ValueSource,
    /// The render model.
    pub render_model: ValueSource,
    /// The compile model.
    pub compile_model: ValueSource,
}

impl ValueSources {
    /// The pairs `(key, source)` in `reactor.yml` key order: `provider`, `base_url`,
    /// `api_key_env`, `render_model`, `compile_model`.
    pub fn pairs(&self) -> [(&'static str, ValueSource); 5] {
        [
            ("provider", self.provider),
            ("base_url", self.base_url),
            ("api_key_env", self.api_key_env),
            ("render_model", self.render_model),
            ("compile_model", self.compile_model),
        ]
    }

    /// One line for `doctor`: `provider reactor.yml, base_url REACTOR_MODEL_BASE_URL, …`.
    pub fn describe(&self) -> String {
        self.pairs()
            .iter()
            .map(|(k, s)| format!("{k} {}", s.label()))
            .collect::<Vec<_>>()
            .join(", ")
    }
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
    /// `model.max_tokens`: sent as `max_tokens` by requests that set no budget themselves
    /// (Messages otherwise sends 16384, Chat Completions nothing).
    pub max_tokens: Option<u32>,
    /// Where each value came from.
    pub sources: ValueSources,
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

/// An `http://` or `https://` URL with a host and no whitespace.
fn is_base_url(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("http://")
        .or_else(|| lower.strip_prefix("https://"));
    !(rest.is_none_or(|r| r.is_empty() || r.starts_with('/')) || url.contains(char::is_whitespace))
}

/// Applies the environment's base URL: [`BASE_URL_ENV`] always wins; the provider's own
/// variable only replaces the table's default (never a `reactor.yml` value).
fn env_base_url(
    label: &str,
    configured: (String, ValueSource),
    env: &EnvBaseUrls,
) -> Result<(String, ValueSource), ConfigError> {
    let from_env = match (&env.reactor, label, configured.1) {
        (Some(v), _, _) => Some((BASE_URL_ENV, v)),
        (None, "openai", ValueSource::Default) => {
            env.openai.as_ref().map(|v| (OPENAI_BASE_URL_ENV, v))
        }
        (None, "anthropic", ValueSource::Default) => {
            env.anthropic.as_ref().map(|v| (ANTHROPIC_BASE_URL_ENV, v))
        }
        _ => None,
    };
    let Some((var, value)) = from_env else {
        return Ok(configured);
    };
    let value = value.trim();
    if !is_base_url(value) {
        return Err(ConfigError::BadEnv {
            var,
            message: format!(
                "expected an http:// or https:// URL, got '{}'",
                value.chars().take(80).collect::<String>()
            ),
        });
    }
    Ok((value.to_string(), ValueSource::Env(var)))
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
        let yml = |v: &Option<String>| non_empty(v).map(|v| (v, ValueSource::ReactorYml));
        let base_override = yml(&settings.base_url);
        let env_override = yml(&settings.api_key_env);
        let row = TABLE.iter().find(|r| r.label == label);
        let (transport, base_url, api_key_env, default_model) = match row {
            Some(r) => (
                r.transport,
                base_override.unwrap_or((r.base_url.to_string(), ValueSource::Default)),
                env_override.unwrap_or((r.key_env.to_string(), ValueSource::Default)),
                r.default_model,
            ),
            None => match (base_override, env_override) {
                (Some(b), Some(e)) => (Transport::ChatCompletions, b, e, None),
                _ => return Err(ConfigError::UnknownProvider(label)),
            },
        };
        if !is_base_url(&base_url.0) {
            return Err(ConfigError::BadBaseUrl(base_url.0));
        }
        let base_url = env_base_url(&label, base_url, &settings.env)?;
        if !valid_var_name(&api_key_env.0) {
            return Err(ConfigError::BadKeyVariable(api_key_env.0));
        }
        let model = |v: &Option<String>| {
            yml(v).or(default_model.map(|m| (m.to_string(), ValueSource::Default)))
        };
        let render_model = model(&settings.render_model);
        let compile_model = model(&settings.compile_model);
        Ok(ProviderConfig {
            sources: ValueSources {
                provider: if settings.provider.is_some() {
                    ValueSource::ReactorYml
                } else {
                    ValueSource::Default
                },
                base_url: base_url.1,
                api_key_env: api_key_env.1,
                render_model: render_model.as_ref().map(|m| m.1).unwrap_or_default(),
                compile_model: compile_model.as_ref().map(|m| m.1).unwrap_or_default(),
            },
            provider: label,
            transport,
            base_url: base_url.0.trim_end_matches('/').to_string(),
            api_key_env: api_key_env.0,
            render_model: render_model.map(|m| m.0),
            compile_model: compile_model.map(|m| m.0),
            temperature: settings.temperature,
            reasoning_effort: non_empty(&settings.reasoning_effort),
            max_tokens: settings.max_tokens,
        })
    }

    /// The endpoint URL: the base URL (trailing `/` removed) plus `/chat/completions` or
    /// `/messages`. An Anthropic Messages base URL works with or without its trailing `/v1`:
    /// without it, `/v1/messages` is appended (`https://api.anthropic.com` →
    /// `https://api.anthropic.com/v1/messages`, as Anthropic's own clients read
    /// `ANTHROPIC_BASE_URL`).
    pub fn endpoint(&self) -> String {
        let base = self.base_url.trim_end_matches('/');
        let version = match self.transport {
            Transport::Messages if !base.to_ascii_lowercase().ends_with("/v1") => "/v1",
            _ => "",
        };
        format!("{base}{version}{}", self.transport.path())
    }

    /// The base URL as it may be stored (the compile manifest) and shown: without a trailing
    /// `/`, user information (`user:pass@`), query or fragment, and with the key shapes of
    /// RUNTIME.md §7.9 redacted, so no credential carried in the URL is ever persisted.
    pub(crate) fn recorded_base_url(&self) -> String {
        let url = self.base_url.split(['?', '#']).next().unwrap_or_default();
        let url = match url.split_once("://") {
            Some((scheme, rest)) => {
                let end = rest.find('/').unwrap_or(rest.len());
                let (authority, path) = rest.split_at(end);
                let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
                format!("{scheme}://{host}{path}")
            }
            None => url.to_string(),
        };
        crate::format::sanitize::redact(url.trim_end_matches('/'), &[])
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
            ..Default::default()
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
    fn recorded_base_urls_carry_no_credentials() {
        for (base, recorded) in [
            (
                "https://openrouter.ai/api/v1",
                "https://openrouter.ai/api/v1",
            ),
            (
                "http://user:pw@gw.local:8080/v1/",
                "http://gw.local:8080/v1",
            ),
            ("https://gw/v1?key=abc#x", "https://gw/v1"),
            ("https://tok@gw", "https://gw"),
        ] {
            let mut s = settings(None);
            s.base_url = Some(base.into());
            assert_eq!(
                ProviderConfig::resolve(&s).unwrap().recorded_base_url(),
                recorded
            );
        }
    }

    #[test]
    fn anthropic_base_url_with_or_without_v1() {
        for (base, endpoint) in [
            (
                "https://api.anthropic.com",
                "https://api.anthropic.com/v1/messages",
            ),
            (
                "https://api.anthropic.com/",
                "https://api.anthropic.com/v1/messages",
            ),
            (
                "https://api.anthropic.com/v1",
                "https://api.anthropic.com/v1/messages",
            ),
            (
                "https://proxy.internal/V1/",
                "https://proxy.internal/V1/messages",
            ),
            (
                "http://127.0.0.1:9/anthropic",
                "http://127.0.0.1:9/anthropic/v1/messages",
            ),
        ] {
            let mut s = settings(Some("anthropic"));
            s.base_url = Some(base.into());
            assert_eq!(
                ProviderConfig::resolve(&s).unwrap().endpoint(),
                endpoint,
                "{base}"
            );
        }
        // Chat Completions keeps the base as given.
        let mut s = settings(Some("openai"));
        s.base_url = Some("http://127.0.0.1:9".into());
        assert_eq!(
            ProviderConfig::resolve(&s).unwrap().endpoint(),
            "http://127.0.0.1:9/chat/completions"
        );
    }

    #[test]
    fn environment_base_urls_and_their_sources() {
        let env = |pairs: &[(&str, &str)]| {
            let pairs: Vec<(String, String)> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            EnvBaseUrls::from_env_with(&move |n| {
                pairs.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone())
            })
        };
        let resolve = |provider: &str, yml: Option<&str>, e: EnvBaseUrls| {
            let mut s = settings(Some(provider));
            s.base_url = yml.map(String::from);
            s.env = e;
            ProviderConfig::resolve(&s)
        };
        // The table, then the provider's own variable, then reactor.yml, then REACTOR_….
        let c = resolve("openai", None, env(&[])).unwrap();
        assert_eq!(
            (c.base_url.as_str(), c.sources.base_url),
            ("https://api.openai.com/v1", ValueSource::Default)
        );
        let c = resolve(
            "openai",
            None,
            env(&[("OPENAI_BASE_URL", "http://o.local/v1/")]),
        )
        .unwrap();
        assert_eq!(
            (c.base_url.as_str(), c.sources.base_url.label()),
            ("http://o.local/v1", "OPENAI_BASE_URL")
        );
        let c = resolve(
            "openai",
            Some("http://yml/v1"),
            env(&[("OPENAI_BASE_URL", "http://o.local/v1")]),
        )
        .unwrap();
        assert_eq!(
            (c.base_url.as_str(), c.sources.base_url.label()),
            ("http://yml/v1", "reactor.yml")
        );
        let c = resolve(
            "openai",
            Some("http://yml/v1"),
            env(&[
                ("OPENAI_BASE_URL", "http://o/v1"),
                ("REACTOR_MODEL_BASE_URL", "http://r/v1"),
            ]),
        )
        .unwrap();
        assert_eq!(
            (c.base_url.as_str(), c.sources.base_url.label()),
            ("http://r/v1", "REACTOR_MODEL_BASE_URL")
        );
        // A provider's variable reaches only that provider.
        let c = resolve(
            "anthropic",
            None,
            env(&[("OPENAI_BASE_URL", "http://o/v1")]),
        )
        .unwrap();
        assert_eq!(c.endpoint(), "https://api.anthropic.com/v1/messages");
        let c = resolve(
            "anthropic",
            None,
            env(&[("ANTHROPIC_BASE_URL", "http://a.local")]),
        )
        .unwrap();
        assert_eq!(c.endpoint(), "http://a.local/v1/messages");
        assert_eq!(c.sources.base_url, ValueSource::Env("ANTHROPIC_BASE_URL"));
        let c = resolve(
            "openrouter",
            None,
            env(&[("ANTHROPIC_BASE_URL", "http://a/")]),
        )
        .unwrap();
        assert_eq!(c.sources.base_url, ValueSource::Default);
        // Empty is unset; a bad value names the variable.
        let c = resolve("openai", None, env(&[("REACTOR_MODEL_BASE_URL", "  ")])).unwrap();
        assert_eq!(c.sources.base_url, ValueSource::Default);
        assert_eq!(
            resolve(
                "openai",
                None,
                env(&[("REACTOR_MODEL_BASE_URL", "ftp://x")])
            )
            .unwrap_err()
            .to_string(),
            "REACTOR_MODEL_BASE_URL: expected an http:// or https:// URL, got 'ftp://x'"
        );
        // The other sources.
        let c = resolve("anthropic", None, env(&[])).unwrap();
        assert_eq!(c.sources.provider, ValueSource::ReactorYml);
        assert_eq!(c.sources.render_model, ValueSource::Default);
        assert_eq!(c.sources.api_key_env, ValueSource::Default);
        let c = ProviderConfig::resolve(&ProviderSettings::default()).unwrap();
        assert_eq!(c.sources, ValueSources::default());
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
