//! Operating the host against providers that misbehave or live elsewhere (issue 8 items 4, 5
//! and 7), through the real binary: a provider that accepts and never answers ends after two
//! attempts with one line; the base-URL variables and where `doctor` says each value came
//! from; an Anthropic base URL without `/v1`; `model.max_tokens`; messages that say what
//! happened (a body cut short, a long `Retry-After`, no temperature hint without a
//! temperature, no zero spent-tokens hint, a located missing model id).

mod cache;
mod observe;
mod providers;

use std::path::Path;
use std::process::Command;

use serde_json::json;

use crate::host_serve::{CANARY, compile_entries, quickstart};
use crate::support::bin;
use crate::support::fake_provider::{self as fake, FakeProvider, Protocol};
use crate::support::raw_server::{Behaviour, RawServer};

/// Variables a child must not inherit.
const SCRUBBED: &[&str] = &[
    "OPENROUTER_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "REACTOR_OFFLINE",
    "REACTOR_ENV_PATH",
    "REACTOR_DEBUG",
    "REACTOR_SKILL_PATH",
    "REACTOR_MODEL_RECORD",
    "REACTOR_MODEL_BASE_URL",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
];

pub(crate) struct Out {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// Runs the binary on `project` with `FAKE_KEY`, no backoff sleeps, and `env`.
pub(crate) fn reactor(project: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut cmd = Command::new(bin());
    cmd.arg("--project").arg(project).args(args);
    for v in SCRUBBED {
        cmd.env_remove(v);
    }
    cmd.env("FAKE_KEY", CANARY)
        .env("REACTOR_HTTP_BACKOFF_MS", "0");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run reactor");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A quickstart project with this `model:` block (indented two spaces, without `model:`).
pub(crate) fn project_with(model: &str) -> Option<tempfile::TempDir> {
    let src = quickstart()?;
    let d = tempfile::tempdir().unwrap();
    for f in ["inbox.prose.md", "digest.prose.md"] {
        std::fs::copy(src.join(f), d.path().join(f)).unwrap();
    }
    std::fs::write(d.path().join("reactor.yml"), format!("model:\n{model}")).unwrap();
    Some(d)
}

/// The usual `model:` block pointing at `base_url`, plus `extra` lines.
pub(crate) fn model_block(provider: &str, base_url: &str, extra: &str) -> String {
    format!(
        "  provider: {provider}\n  base_url: {base_url}\n  api_key_env: FAKE_KEY\n  render_model: render-model\n  compile_model: compile-model\n{extra}"
    )
}

fn push_compile(fake: &FakeProvider) {
    for e in compile_entries(json!({"postconditions": []})) {
        fake.push(e);
    }
}

/// A port nothing listens on.
fn dead_base_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://127.0.0.1:{}/v1", l.local_addr().unwrap().port())
}

pub(crate) fn get_text(url: &str) -> (u16, String, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut resp = agent.get(url).call().unwrap();
    let status = resp.status().as_u16();
    let ctype = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    (status, ctype, resp.body_mut().read_to_string().unwrap())
}

/// The value of the sample line starting with `prefix` (labels included).
pub(crate) fn sample(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}
