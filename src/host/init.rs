//! `reactor init [dir] [--force]` (HOST.md §8.1): scaffolds a project — `reactor.yml`, a
//! gateway contract `inbox` (facet `items`, external-driven), a responsibility `digest` that
//! requires the accepted item set (facet `digest`, input-driven), `.gitignore` and `README.md`.
//!
//! Refusals (exit 1): a directory that already holds a scaffold file
//! (`refused: <dir> already contains scaffold files: …`) or any other entry
//! (`refused: <dir> is not empty: …`). `--force` overwrites scaffold files and writes into a
//! non-empty directory; it never deletes anything.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::Serialize;

use crate::host::args::{ArgStream, Globals, OwnedArg};
use crate::host::error::HostError;
use crate::host::output::Report;
use crate::host::project::absolute;
use crate::host::report::{VerbReport, print};

/// `reactor init --help`.
pub(crate) const HELP: &str = "reactor init — scaffold a project

Usage:
  reactor init [dir] [--force]

Writes reactor.yml, inbox.prose.md (a gateway), digest.prose.md (a responsibility
that follows the inbox), .gitignore and README.md into dir (default: --project,
else the current directory; created if absent).

Flags:
  --force   Overwrite existing scaffold files and write into a non-empty directory
            (nothing else is ever deleted)
";

/// The scaffold's `reactor.yml`.
pub(crate) const REACTOR_YML: &str = r#"# reactor.yml: how this project runs. Every key is optional; HOST.md lists them all.

# Where receipts, world-models and the compile cache are kept (relative to this file).
state:
  dir: ./.reactor

# The model provider. openrouter reads OPENROUTER_API_KEY from the environment or
# from ./.env. anthropic, openai, google, or any OpenAI-compatible endpoint (set
# base_url and api_key_env) are configured the same way.
model:
  provider: openrouter
  render_model: google/gemini-3.5-flash
  compile_model: google/gemini-3.5-flash
  max_turns: 200

# Renders may not run commands unless a sandbox is chosen (docker or unix-local).
sandbox:
  mode: none

# Arrivals for the inbox gateway. The static connector below ships two items;
# swap it for `type: file` (with `dir:`) or `type: http` (with `url:`) later.
gateways:
  - node: inbox
    source_id: inbox
    poll: 30s
    connector:
      type: static
      id_field: id
      items:
        - { id: item-1, body: "the first item" }
        - id: item-2
          body: "the second item"
          tags: [urgent]
"#;

/// The scaffold's gateway contract.
pub(crate) const INBOX_PROSE: &str = "---
name: inbox
kind: gateway
---

# Inbox

### Goal
Take in the items that arrive from outside the project and hold them as one set
that other contracts can follow.

### Maintains
Every item accepted so far, identified by its `id`, with its body and any tags.
When an item arrived is immaterial.

#### items
The accepted items as an unordered set; each item's id, body and tags are material.

### Continuity
- external-driven: wake whenever a new item is staged at this gateway.
";

/// The scaffold's responsibility contract.
pub(crate) const DIGEST_PROSE: &str = "---
name: digest
kind: responsibility
---

# Digest

### Goal
Keep a short written digest of everything the inbox has accepted.

### Requires
- the accepted item set of the inbox

### Maintains
A digest of the accepted items: how many there are, then one line per item.
Postcondition: the digest names every accepted item id.

#### digest
The digest text. Material: its wording, with whitespace collapsed.

### Continuity
- input-driven: re-render when the accepted item set moves.
";

/// The scaffold's `.gitignore`.
pub(crate) const GITIGNORE: &str = "# reactor state: receipts, world-models, the compile cache
.reactor/
# provider keys
.env
";

/// The scaffold's `README.md`.
pub const README: &str = "# A reactor project

Two contracts keep each other true:

- `inbox.prose.md`: a gateway that accepts items from outside (facet `items`).
- `digest.prose.md`: a responsibility that follows the inbox and keeps a digest
  (facet `digest`); it re-renders only when the accepted items move.

## Next steps

1. Put a key where the provider in `reactor.yml` expects it:
   `export OPENROUTER_API_KEY=...` (or a line `OPENROUTER_API_KEY=...` in `.env`).
2. `reactor doctor` checks the environment; `reactor compile` turns the contracts
   into the compiled graph (cached under `.reactor/compile/`).
3. `reactor serve --http 8080` ingests the static items and keeps the graph true;
   `reactor trigger inbox --data '{\"id\":\"item-3\",\"body\":\"more\"}'` adds one.
4. `reactor status`, `reactor logs` and `reactor receipts verify` show what
   happened, offline and without a key; `reactor devtools .reactor` replays it.
";

/// The scaffold files in writing order.
pub(crate) const SCAFFOLD: [(&str, &str); 5] = [
    ("reactor.yml", REACTOR_YML),
    ("inbox.prose.md", INBOX_PROSE),
    ("digest.prose.md", DIGEST_PROSE),
    (".gitignore", GITIGNORE),
    ("README.md", README),
];

/// Parsed arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Args {
    /// The target directory.
    pub dir: Option<PathBuf>,
    /// `--force`.
    pub force: bool,
}

/// Parses `init` arguments.
pub fn parse(s: &mut ArgStream<'_>) -> Result<Args, HostError> {
    let mut a = Args::default();
    while let Some(arg) = s.next_arg()? {
        match arg {
            OwnedArg::Long(ref l) if l == "force" => {
                s.no_value("--force")?;
                a.force = true;
            }
            OwnedArg::Value(v) if a.dir.is_none() => {
                if v.is_empty() {
                    return Err(HostError::usage(
                        "the directory must not be empty",
                        Some("init"),
                    ));
                }
                a.dir = Some(PathBuf::from(v));
            }
            other => return Err(s.unexpected(&other)),
        }
    }
    Ok(a)
}

fn sorted_names(dir: &Path) -> Result<Vec<String>, HostError> {
    let rd = std::fs::read_dir(dir)
        .map_err(|e| HostError::input(format!("cannot read {}: {e}", dir.display())))?;
    let mut v: Vec<String> = rd
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    Ok(v)
}

/// The `init` report (HOST.md §8.1). JSON: `{"status": "scaffolded"|"exists"|"non-empty",
/// "dir", "written": [...], "skipped": [...], "existingEntries"?: [...]}`; a refusal prints the
/// same shape as its error document.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InitReport {
    /// `scaffolded`, `exists` or `non-empty`.
    pub status: &'static str,
    /// The directory.
    pub dir: String,
    /// Files written.
    pub written: Vec<String>,
    /// Scaffold files that already exist (a refusal).
    pub skipped: Vec<String>,
    /// Every entry of a non-empty directory (a refusal).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) existing_entries: Option<Vec<String>>,
}

impl VerbReport for InitReport {
    fn to_text(&self) -> String {
        let mut r = Report::new("init");
        r.line(2, format!("scaffolded into {}", self.dir));
        for n in &self.written {
            r.line(4, format!("+ {n}"));
        }
        r.blank();
        r.line(2, "Next:");
        r.line(4, "export OPENROUTER_API_KEY=...");
        r.line(4, "reactor compile");
        r.line(4, "reactor serve --http 8080");
        r.finish()
    }
}

fn refusal(
    status: &'static str,
    dir: &Path,
    message: String,
    skipped: Vec<String>,
    existing: Option<Vec<String>>,
) -> HostError {
    let doc = InitReport {
        status,
        dir: dir.display().to_string(),
        written: Vec::new(),
        skipped,
        existing_entries: existing,
    };
    HostError::input(message)
        .with_hint(
            "pass --force to write anyway (scaffold files are overwritten, nothing is deleted)",
        )
        .with_document(serde_json::to_value(&doc).unwrap_or_default())
}

/// Runs `init`.
pub fn exec(a: Args, g: &Globals) -> Result<ExitCode, HostError> {
    let target = a
        .dir
        .clone()
        .or_else(|| g.project.clone())
        .unwrap_or_else(|| PathBuf::from("."));
    let dir = absolute(&target);
    match std::fs::metadata(&dir) {
        Ok(m) if !m.is_dir() => {
            return Err(HostError::input(format!(
                "{} exists and is not a directory",
                dir.display()
            )));
        }
        Ok(_) => {}
        Err(_) => {
            crate::store::fsutil::create_dir_all_durable(&dir)
                .map_err(|e| HostError::input(format!("cannot create {}: {e}", dir.display())))?;
        }
    }
    let names = sorted_names(&dir)?;
    if !a.force {
        let existing_scaffold: Vec<String> = SCAFFOLD
            .iter()
            .map(|(n, _)| n.to_string())
            .filter(|n| names.contains(n))
            .collect();
        if !existing_scaffold.is_empty() {
            return Err(refusal(
                "exists",
                &dir,
                format!(
                    "refused: {} already contains scaffold files: {}",
                    dir.display(),
                    existing_scaffold.join(", ")
                ),
                existing_scaffold,
                None,
            ));
        }
        if !names.is_empty() {
            return Err(refusal(
                "non-empty",
                &dir,
                format!(
                    "refused: {} is not empty: {}",
                    dir.display(),
                    names.join(", ")
                ),
                Vec::new(),
                Some(names),
            ));
        }
    }
    let mut written = Vec::new();
    for (name, text) in SCAFFOLD {
        let path = dir.join(name);
        if path.is_dir() {
            return Err(HostError::input(format!(
                "cannot write {}: a directory of that name exists",
                path.display()
            )));
        }
        crate::store::fsutil::write_atomic(&path, text.as_bytes())
            .map_err(|e| HostError::input(format!("cannot write {}: {e}", path.display())))?;
        written.push(name.to_string());
    }
    let report = InitReport {
        status: "scaffolded",
        dir: dir.display().to_string(),
        written,
        skipped: Vec::new(),
        existing_entries: None,
    };
    print(&report, g.json)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{ContractSet, Kind};

    #[test]
    fn the_scaffold_loads_and_configures() {
        let d = tempfile::tempdir().unwrap();
        for (name, text) in SCAFFOLD {
            std::fs::write(d.path().join(name), text).unwrap();
        }
        let set = ContractSet::load(d.path()).unwrap();
        assert_eq!(set.len(), 2);
        let inbox = set.get("inbox").unwrap();
        assert_eq!(inbox.kind, Kind::Gateway);
        assert_eq!(inbox.facet_names(), vec!["items"]);
        let digest = set.get("digest").unwrap();
        assert_eq!(digest.kind, Kind::Responsibility);
        assert_eq!(digest.facet_names(), vec!["digest"]);
        assert!(!digest.body("Requires").is_empty());
        let cfg = crate::host::config::ReactorConfig::load(d.path())
            .unwrap()
            .unwrap();
        assert_eq!(cfg.gateways[0].node, "inbox");
        assert!(GITIGNORE.lines().any(|l| l == ".reactor/"));
    }
}
