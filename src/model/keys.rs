//! Provider-key lookup: the process environment, then `<project>/.env` or `REACTOR_ENV_PATH`
//! (HOST.md §2.3). No upward search through parent directories.
//!
//! `.env` grammar: one `KEY=VALUE` per line; an optional leading `export `; blank lines and lines
//! starting with `#` ignored; matching surrounding single or double quotes stripped. Values from
//! `.env` are used only for key lookup and are never exported.

use std::fmt;
use std::path::{Path, PathBuf};

use super::config::ProviderConfig;

/// The variable naming a `.env` file to read instead of `<project>/.env`.
pub(crate) const ENV_PATH_VAR: &str = "REACTOR_ENV_PATH";

/// Largest `.env` file read (1 MiB); a larger file is an error, not a silent truncation.
pub(crate) const MAX_ENV_FILE_BYTES: u64 = 1024 * 1024;

/// A provider key. Its `Debug` prints `ApiKey([redacted])`; it has no `Display`, so it cannot end
/// up in a message by accident (HOST.md §5.8).
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key value.
    pub fn new(value: impl Into<String>) -> ApiKey {
        ApiKey(value.into())
    }

    /// The key value, for the request header and for redaction lists. Never print it.
    pub(crate) fn expose_secret(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

/// Where a key was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum KeySource {
    /// The process environment.
    Environment,
    /// A `.env` file.
    EnvFile(PathBuf),
}

/// A key and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FoundKey {
    /// The key (redacted in `Debug`).
    pub key: ApiKey,
    /// Its source.
    pub source: KeySource,
}

/// A key-lookup failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The key is in neither the environment nor the `.env` file (HOST.md §5.1). `Display` is
    /// the message; [`KeyError::hints`] gives the two `hint:` lines.
    #[error(
        "the configured '{provider}' provider needs {var}, but it is not set in the environment or in {}",
        env_file.display()
    )]
    Missing {
        /// The provider label.
        provider: String,
        /// The key variable.
        var: String,
        /// The `.env` file consulted.
        env_file: PathBuf,
    },
    /// The `.env` file exists but cannot be used (unreadable, not UTF-8, larger than 1 MiB, a
    /// directory).
    #[error("cannot read {}: {detail}", path.display())]
    EnvFile {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        detail: String,
    },
}

impl KeyError {
    /// The `hint:` lines that follow the message (without the `hint: ` prefix).
    pub fn hints(&self) -> Vec<String> {
        match self {
            KeyError::Missing { var, .. } => vec![
                format!("set {var}, or change model.provider / model.api_key_env in reactor.yml"),
                "run `reactor doctor` to check the environment".to_string(),
            ],
            KeyError::EnvFile { .. } => vec![format!(
                "fix the file or point {ENV_PATH_VAR} at another one"
            )],
        }
    }
}

/// Parses `.env` text into `(KEY, VALUE)` pairs in file order (HOST.md §2.3). Lines that are not
/// `KEY=VALUE` with a valid variable name are ignored. Total: never fails.
pub(crate) fn parse_dotenv(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line
            .strip_prefix("export ")
            .map(str::trim_start)
            .unwrap_or(line);
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        let mut chars = key.chars();
        let valid = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            continue;
        }
        let value = value.trim();
        let value = strip_quotes(value);
        out.push((key.to_string(), value.to_string()));
    }
    out
}

fn strip_quotes(v: &str) -> &str {
    for q in ['"', '\''] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return &v[1..v.len() - 1];
        }
    }
    v
}

/// The `.env` file consulted: `env_path` (the value of `REACTOR_ENV_PATH`) when set and
/// non-empty, otherwise `<project_dir>/.env`.
pub(crate) fn env_file_path(project_dir: &Path, env_path: Option<&str>) -> PathBuf {
    match env_path.filter(|p| !p.trim().is_empty()) {
        Some(p) => PathBuf::from(p),
        None => project_dir.join(".env"),
    }
}

/// Reads one variable from a `.env` file; the last assignment wins. A missing file yields
/// `Ok(None)`; other read failures are [`KeyError::EnvFile`].
pub(crate) fn read_env_file_var(path: &Path, var: &str) -> Result<Option<String>, KeyError> {
    let env_err = |detail: String| KeyError::EnvFile {
        path: path.to_path_buf(),
        detail,
    };
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(env_err(e.to_string())),
    };
    if meta.is_dir() {
        return Err(env_err("is a directory".to_string()));
    }
    if meta.len() > MAX_ENV_FILE_BYTES {
        return Err(env_err(format!(
            "larger than {} KiB",
            MAX_ENV_FILE_BYTES / 1024
        )));
    }
    let bytes = std::fs::read(path).map_err(|e| env_err(e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|_| env_err("not UTF-8 text".to_string()))?;
    Ok(parse_dotenv(&text)
        .into_iter()
        .rev()
        .find(|(k, _)| k == var)
        .map(|(_, v)| v)
        .filter(|v| !v.is_empty()))
}

/// Looks a key up with an injected environment (for tests and for callers that snapshot the
/// environment): `env(var)` first (an empty value counts as unset), then the `.env` file at
/// `env_file`. `Ok(None)` when found nowhere.
pub(crate) fn lookup_key_with(
    var: &str,
    env: &dyn Fn(&str) -> Option<String>,
    env_file: &Path,
) -> Result<Option<FoundKey>, KeyError> {
    if let Some(v) = env(var).filter(|v| !v.is_empty()) {
        return Ok(Some(FoundKey {
            key: ApiKey(v),
            source: KeySource::Environment,
        }));
    }
    Ok(read_env_file_var(env_file, var)?.map(|v| FoundKey {
        key: ApiKey(v),
        source: KeySource::EnvFile(env_file.to_path_buf()),
    }))
}

fn process_env(var: &str) -> Option<String> {
    std::env::var(var).ok()
}

/// Looks a key up in the process environment, then in `REACTOR_ENV_PATH` or
/// `<project_dir>/.env` (HOST.md §2.3). `doctor` and the clients share this lookup.
pub(crate) fn lookup_key(var: &str, project_dir: &Path) -> Result<Option<FoundKey>, KeyError> {
    let env_path = std::env::var(ENV_PATH_VAR).ok();
    let file = env_file_path(project_dir, env_path.as_deref());
    lookup_key_with(var, &process_env, &file)
}

/// The key of a configured provider, or [`KeyError::Missing`] naming the variable and the `.env`
/// file consulted (HOST.md §5.1).
pub fn require_key(config: &ProviderConfig, project_dir: &Path) -> Result<ApiKey, KeyError> {
    let env_path = std::env::var(ENV_PATH_VAR).ok();
    let file = env_file_path(project_dir, env_path.as_deref());
    require_key_with(config, &process_env, &file)
}

/// [`require_key`] with an injected environment and `.env` path.
pub(crate) fn require_key_with(
    config: &ProviderConfig,
    env: &dyn Fn(&str) -> Option<String>,
    env_file: &Path,
) -> Result<ApiKey, KeyError> {
    match lookup_key_with(&config.api_key_env, env, env_file)? {
        Some(found) => Ok(found.key),
        None => Err(KeyError::Missing {
            provider: config.provider.clone(),
            var: config.api_key_env.clone(),
            env_file: env_file.to_path_buf(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::config::{ProviderConfig, ProviderSettings};

    #[test]
    fn dotenv_grammar() {
        let text = "# comment\n\nA=1\nexport B = two \nC=\"quoted value\"\nD='single'\nE=\"mismatched'\n\
                    bad line\n=novalue\n9X=no\nF=a=b\r\n  # indented comment\nG=\n";
        let pairs = parse_dotenv(text);
        let get = |k: &str| {
            pairs
                .iter()
                .find(|(kk, _)| kk == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("A"), Some("1"));
        assert_eq!(get("B"), Some("two"));
        assert_eq!(get("C"), Some("quoted value"));
        assert_eq!(get("D"), Some("single"));
        assert_eq!(get("E"), Some("\"mismatched'"));
        assert_eq!(get("F"), Some("a=b"));
        assert_eq!(get("G"), Some(""));
        assert_eq!(get("9X"), None);
        assert_eq!(pairs.len(), 7, "{pairs:?}");
        assert!(parse_dotenv("\"\n'\n=\n\u{0}=\u{0}").is_empty());
    }

    #[test]
    fn environment_wins_then_env_file_without_upward_search() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("proj");
        std::fs::create_dir(&project).unwrap();
        // A .env in the parent must never be found.
        std::fs::write(dir.path().join(".env"), "K=parent\n").unwrap();
        let file = env_file_path(&project, None);
        let none_env = |_: &str| None;
        assert_eq!(lookup_key_with("K", &none_env, &file).unwrap(), None);

        std::fs::write(project.join(".env"), "K=first\nK='from-file'\n").unwrap();
        let found = lookup_key_with("K", &none_env, &file).unwrap().unwrap();
        assert_eq!(found.key.expose_secret(), "from-file");
        assert_eq!(found.source, KeySource::EnvFile(project.join(".env")));

        let env = |v: &str| (v == "K").then(|| "from-env".to_string());
        let found = lookup_key_with("K", &env, &file).unwrap().unwrap();
        assert_eq!(found.key.expose_secret(), "from-env");
        assert_eq!(found.source, KeySource::Environment);

        // An empty environment value counts as unset.
        let empty = |_: &str| Some(String::new());
        let found = lookup_key_with("K", &empty, &file).unwrap().unwrap();
        assert_eq!(found.key.expose_secret(), "from-file");

        // REACTOR_ENV_PATH replaces <project>/.env.
        let other = dir.path().join("other.env");
        std::fs::write(&other, "export K=\"other\"\n").unwrap();
        let path = env_file_path(&project, Some(other.to_str().unwrap()));
        let found = lookup_key_with("K", &none_env, &path).unwrap().unwrap();
        assert_eq!(found.key.expose_secret(), "other");
    }

    #[test]
    fn missing_key_message_and_hints() {
        let config = ProviderConfig::resolve(&ProviderSettings::default()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".env");
        let err = require_key_with(&config, &|_| None, &file).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "the configured 'openrouter' provider needs OPENROUTER_API_KEY, but it is not set in the environment or in {}",
                file.display()
            )
        );
        assert_eq!(
            err.hints(),
            vec![
                "set OPENROUTER_API_KEY, or change model.provider / model.api_key_env in reactor.yml".to_string(),
                "run `reactor doctor` to check the environment".to_string()
            ]
        );
    }

    #[test]
    fn hostile_env_files_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let as_dir = dir.path().join("envdir");
        std::fs::create_dir(&as_dir).unwrap();
        assert!(matches!(
            read_env_file_var(&as_dir, "K"),
            Err(KeyError::EnvFile { .. })
        ));
        let binary = dir.path().join("bin.env");
        std::fs::write(&binary, [0xff, 0xfe, b'K', b'=', b'v']).unwrap();
        let e = read_env_file_var(&binary, "K").unwrap_err();
        assert!(e.to_string().contains("not UTF-8"), "{e}");
        let big = dir.path().join("big.env");
        std::fs::write(&big, vec![b'#'; (MAX_ENV_FILE_BYTES + 1) as usize]).unwrap();
        assert!(
            read_env_file_var(&big, "K")
                .unwrap_err()
                .to_string()
                .contains("larger than")
        );
    }

    #[test]
    fn api_key_debug_is_redacted() {
        let k = ApiKey::new("sk-test-0123456789abcdef");
        let found = FoundKey {
            key: k.clone(),
            source: KeySource::Environment,
        };
        let dbg = format!("{k:?} {found:?}");
        assert!(!dbg.contains("0123456789abcdef"), "{dbg}");
        assert!(dbg.contains("[redacted]"));
    }
}
