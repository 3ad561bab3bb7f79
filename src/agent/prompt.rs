//! Render instructions (RUNTIME.md §8.3–§8.4): the embedded system prompt and its
//! `REACTOR_SKILL_PATH` override (§8.3.1, HOST.md §2.2), the per-node brief a render is given,
//! the node-contract layer (§8.3.2), the wake header (§8.3.3), the pointer input (§8.4) and the
//! reminder sent after a turn without tool calls (§8.7).
//!
//! Everything here is a pure function of its inputs (no clock, no paths, no process id), so the
//! requests of a render are reproducible and record/replay (RUNTIME.md §13.2) works.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::contract::section_key;
use crate::format::opwm::FileTree;
use crate::format::receipt::Wake;

/// The variable naming a replacement system prompt: a file, or a directory holding `SKILL.md`
/// (HOST.md §2.2).
pub(crate) const SKILL_PATH_ENV: &str = "REACTOR_SKILL_PATH";

/// The file looked up inside a `REACTOR_SKILL_PATH` directory.
pub(crate) const SKILL_FILE: &str = "SKILL.md";

/// Largest replacement system prompt read, in bytes (1 MiB).
pub(crate) const MAX_SKILL_BYTES: u64 = 1024 * 1024;

/// The project's own system prompt, embedded in the binary (RUNTIME.md §8.3.1).
pub const EMBEDDED_SYSTEM_PROMPT: &str = include_str!("prompts/system.md");

/// Where the system prompt came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PromptSource {
    /// The embedded text ([`EMBEDDED_SYSTEM_PROMPT`]).
    Embedded,
    /// A file named by `REACTOR_SKILL_PATH` (the resolved file, `SKILL.md` included for a
    /// directory).
    File(PathBuf),
}

/// The system prompt (layer 1 of RUNTIME.md §8.3), shared by renders and compile sessions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemPrompt {
    /// The text, trailing whitespace removed.
    pub text: String,
    /// Its origin.
    pub source: PromptSource,
}

/// Why a `REACTOR_SKILL_PATH` system prompt cannot be used (HOST.md §2.2); `Display` is one
/// line starting `REACTOR_SKILL_PATH: `. Paths are shown as given (`<dir>/SKILL.md` for a
/// directory).
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    /// The file cannot be read.
    #[error("{SKILL_PATH_ENV}: cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// Not a regular file.
    #[error("{SKILL_PATH_ENV}: cannot read {0}: not a regular file")]
    NotRegularFile(String),
    /// Larger than [`MAX_SKILL_BYTES`].
    #[error("{SKILL_PATH_ENV}: {0} is larger than 1 MiB")]
    TooLarge(String),
    /// Not UTF-8.
    #[error("{SKILL_PATH_ENV}: {0} is not valid UTF-8")]
    NotUtf8(String),
    /// Only whitespace.
    #[error("{SKILL_PATH_ENV}: {0} is empty")]
    Empty(String),
}

impl SkillError {
    /// The file the error is about, as shown in the message (`<dir>/SKILL.md` for a directory).
    pub fn path(&self) -> &str {
        match self {
            SkillError::Read { path, .. } => path,
            SkillError::NotRegularFile(path)
            | SkillError::TooLarge(path)
            | SkillError::NotUtf8(path)
            | SkillError::Empty(path) => path,
        }
    }
}

/// The system prompt for this process: the file named by `REACTOR_SKILL_PATH` when the variable
/// is set and non-empty, otherwise the embedded text.
///
/// Errors: [`SkillError`] (see [`system_prompt_from`]).
pub fn system_prompt() -> Result<SystemPrompt, SkillError> {
    let var = std::env::var_os(SKILL_PATH_ENV).filter(|v| !v.is_empty());
    system_prompt_from(var.as_deref().map(Path::new))
}

/// [`system_prompt`] with the override given explicitly (`None`: embedded).
///
/// Errors: [`SkillError`]: `REACTOR_SKILL_PATH: cannot read <path>: <io error>`,
/// `REACTOR_SKILL_PATH: <path> is larger than 1 MiB`,
/// `REACTOR_SKILL_PATH: <path> is not valid UTF-8`, `REACTOR_SKILL_PATH: <path> is empty`.
/// A directory without a readable `SKILL.md` is a read error naming `<dir>/SKILL.md`.
pub fn system_prompt_from(skill_path: Option<&Path>) -> Result<SystemPrompt, SkillError> {
    let Some(path) = skill_path else {
        return Ok(SystemPrompt {
            text: EMBEDDED_SYSTEM_PROMPT.trim_end().to_string(),
            source: PromptSource::Embedded,
        });
    };
    let file = if path.is_dir() {
        path.join(SKILL_FILE)
    } else {
        path.to_path_buf()
    };
    let shown = file.display().to_string();
    let read = |source| SkillError::Read {
        path: shown.clone(),
        source,
    };
    let meta = std::fs::metadata(&file).map_err(read)?;
    if !meta.is_file() {
        return Err(SkillError::NotRegularFile(shown));
    }
    if meta.len() > MAX_SKILL_BYTES {
        return Err(SkillError::TooLarge(shown));
    }
    let bytes = std::fs::read(&file).map_err(read)?;
    let Ok(text) = String::from_utf8(bytes) else {
        return Err(SkillError::NotUtf8(shown));
    };
    let text = text.replace("\r\n", "\n");
    let text = text.trim_end();
    if text.trim().is_empty() {
        return Err(SkillError::Empty(shown));
    }
    Ok(SystemPrompt {
        text: text.to_string(),
        source: PromptSource::File(file),
    })
}

/// A facet of a faceted node and its `truth.json` paths (from the compiled canonicalizer spec,
/// RUNTIME.md §4.1).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct FacetLayout {
    /// The facet name as declared.
    pub name: String,
    /// Its material paths inside `truth.json`, in spec order.
    pub paths: Vec<String>,
}

/// One compiled postcondition as shown to a render (RUNTIME.md §3.5.4).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct PostconditionBrief {
    /// The postcondition id (`has-prices`).
    pub id: String,
    /// The source sentence from the contract.
    pub source: String,
    /// `true` for a render-attested obligation (attested in `finish`), `false` for a
    /// deterministic predicate (checked mechanically after `finish`).
    pub attested: bool,
}

/// What a render knows about its node beyond the [`RenderContext`](crate::core::RenderContext):
/// identity, the persisted contract view, the facet layout, the compiled postconditions and the
/// inbound slots. The host builds one per node from the contract set and the compile cache.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct NodeBrief {
    /// The node id.
    pub id: String,
    /// The contract name (the id when the contract names none).
    pub name: String,
    /// `responsibility` or `gateway`.
    pub kind: String,
    /// The contract view (FORMATS.md §15.5): `(heading as written, body)` for the `Requires`,
    /// `Maintains`, `Continuity`, `Execution` and `Criteria` sections present.
    pub contract_view: Vec<(String, String)>,
    /// The facet layout; empty for an atomic-only node.
    pub facets: Vec<FacetLayout>,
    /// The compiled postconditions, deterministic and render-attested, in compiled order.
    pub postconditions: Vec<PostconditionBrief>,
    /// The inbound slots `(producer, facet)` in mounted edge order: the same order as the
    /// context's `input_fingerprints` (RUNTIME.md §7.3). Used for the wake header and for the
    /// facet lists of `wm_list_upstream`.
    pub inbound: Vec<(String, String)>,
}

impl NodeBrief {
    /// The ids of the render-attested postconditions, in order (the `finish` schema's
    /// `attestations` properties, RUNTIME.md §8.6).
    pub fn attested_ids(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for p in self.postconditions.iter().filter(|p| p.attested) {
            if !out.contains(&p.id) {
                out.push(p.id.clone());
            }
        }
        out
    }

    /// The facets a producer is subscribed on, in slot order, without duplicates.
    pub(crate) fn facets_of(&self, producer: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (p, f) in &self.inbound {
            if p == producer && !out.contains(f) {
                out.push(f.clone());
            }
        }
        out
    }

    fn section(&self, key: &str) -> Option<&(String, String)> {
        self.contract_view
            .iter()
            .find(|(heading, _)| section_key(heading) == key)
    }
}

/// The prior truth as described to a render: its OPWM1 version (`None` when there are no files)
/// and its file count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PriorSummary {
    /// `sha256:<hex>` of the prior tree's OPWM1 artifact, `None` when the tree is empty.
    pub version: Option<String>,
    /// Number of files.
    pub files: usize,
}

impl PriorSummary {
    /// Summarizes a published tree (see [`tree_version`]).
    pub(crate) fn of(tree: &FileTree) -> PriorSummary {
        PriorSummary {
            version: tree_version(tree),
            files: tree.len(),
        }
    }
}

/// The OPWM1 version (`sha256:<hex>`, FORMATS.md §14.2) of a published tree, `None` for an
/// empty tree (a cold node, or one whose truth holds no file) or a tree that cannot be encoded.
pub fn tree_version(tree: &FileTree) -> Option<String> {
    if tree.is_empty() {
        return None;
    }
    crate::format::opwm::encode(tree.clone())
        .ok()
        .map(|a| crate::format::opwm::version(&a))
}

fn heading_line(out: &mut String, heading: &str, body: &str) {
    let _ = write!(out, "\n\n### {heading}\n\n{body}");
}

/// Layer 2 of the instructions (RUNTIME.md §8.3.2): the node contract, its facet layout and its
/// compiled postconditions, in the project's words.
pub fn node_contract(brief: &NodeBrief) -> String {
    let mut out = String::new();
    let name = if brief.name.is_empty() {
        brief.id.as_str()
    } else {
        brief.name.as_str()
    };
    let kind = if brief.kind.is_empty() {
        "responsibility"
    } else {
        brief.kind.as_str()
    };
    let _ = write!(
        out,
        "# Node contract: {name} (id `{}`, kind {kind})\n\n\
         This is the contract you answer to. Leave every Maintains postcondition true. Read the \
         upstream truth your Requires section names by reference, through the upstream tools; \
         never invent it.",
        brief.id
    );
    match brief.section("Requires") {
        Some((h, b)) => heading_line(&mut out, h, b),
        None => heading_line(&mut out, "Requires", "This node has no inputs."),
    }
    match brief.section("Maintains") {
        Some((h, b)) => heading_line(&mut out, h, b),
        None => heading_line(
            &mut out,
            "Maintains",
            "The contract declares no Maintains text.",
        ),
    }
    if let Some((h, b)) = brief.section("Continuity") {
        heading_line(&mut out, h, b);
    }
    if let Some((h, b)) = brief.section("Execution") {
        out.push_str(
            "\n\nThe Execution section below is your render body: follow it directly, step by \
             step.",
        );
        heading_line(&mut out, h, b);
    }
    if let Some((h, b)) = brief.section("Criteria") {
        heading_line(&mut out, h, b);
    }
    out.push_str("\n\n## Structured truth\n\n");
    if brief.facets.is_empty() {
        out.push_str(
            "This node is atomic-only: it declares no facets, so its whole file set is one unit \
             and `truth.json` is optional.",
        );
    } else {
        out.push_str(
            "This node is faceted. `truth.json` is required: leave it in the workspace as one \
             JSON object whose top-level keys carry each facet's material along these paths. A \
             render without a valid `truth.json` fails.\n",
        );
        for f in &brief.facets {
            let paths = if f.paths.is_empty() {
                "(no paths)".to_string()
            } else {
                f.paths
                    .iter()
                    .map(|p| format!("`{p}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let _ = write!(out, "\n- facet `{}`: {paths}", f.name);
        }
    }
    out.push_str("\n\n## Compiled postconditions\n\n");
    let deterministic: Vec<&PostconditionBrief> = brief
        .postconditions
        .iter()
        .filter(|p| !p.attested)
        .collect();
    let attested: Vec<&PostconditionBrief> =
        brief.postconditions.iter().filter(|p| p.attested).collect();
    if deterministic.is_empty() && attested.is_empty() {
        out.push_str("None were compiled: the Maintains text above is your whole obligation.");
    }
    if !deterministic.is_empty() {
        out.push_str(
            "Checked mechanically against your files after `finish`; if one does not hold, \
             nothing is committed:\n",
        );
        for p in &deterministic {
            let _ = write!(out, "\n- `{}`: {}", p.id, p.source);
        }
    }
    if !attested.is_empty() {
        if !deterministic.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(
            "Attest each of these in `finish` under `attestations.<id>`: `true` only when it \
             holds in the truth you leave:\n",
        );
        for p in &attested {
            let _ = write!(out, "\n- `{}`: {}", p.id, p.source);
        }
    }
    out
}

/// Layer 3 of the instructions (RUNTIME.md §8.3.3): this render's node, contract fingerprint,
/// wake, input slots and prior truth, and how to proceed.
///
/// `input_tokens` are the context's `input_fingerprints`; they are paired with
/// `brief.inbound` when both have the same length, otherwise listed by position.
pub(crate) fn wake_header(
    brief: &NodeBrief,
    contract_fingerprint: &str,
    wake: &Wake,
    input_tokens: &[String],
    prior: &PriorSummary,
) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "# This render\n\n- Node: `{}`\n- Contract fingerprint: `{contract_fingerprint}`\n- Wake \
         source: {}\n- Waking receipts: ",
        brief.id,
        wake.source.as_str()
    );
    if wake.refs.is_empty() {
        out.push_str("none");
    } else {
        out.push_str(
            &wake
                .refs
                .iter()
                .map(|r| format!("`{r}`"))
                .collect::<Vec<_>>()
                .join(", "),
        );
    }
    out.push_str("\n- Input slots (producer · facet → token):");
    if input_tokens.is_empty() {
        out.push_str(" none");
    } else if brief.inbound.len() == input_tokens.len() {
        for ((p, f), t) in brief.inbound.iter().zip(input_tokens) {
            let _ = write!(out, "\n  - `{p}` · `{f}` → `{t}`");
        }
    } else {
        for (i, t) in input_tokens.iter().enumerate() {
            let _ = write!(out, "\n  - slot {} → `{t}`", i + 1);
        }
    }
    out.push_str("\n- Prior truth: ");
    match &prior.version {
        None => out.push_str("cold start, your workspace is empty."),
        Some(v) => {
            let _ = write!(
                out,
                "version `{v}`, {} file{}. It has already been copied into your workspace; it is \
                 not in this conversation, so read what you need with `wm_read` or `ws_read`.",
                prior.files,
                if prior.files == 1 { "" } else { "s" }
            );
        }
    }
    out.push_str(
        "\n\nHow to render:\n\n\
         1. Read your prior truth and your upstream truth with the tools.\n\
         2. Do the work your contract asks for.\n\
         3. Write the complete new world-model into the workspace, one file at a time with \
         `ws_write` (delete what no longer belongs with `ws_delete`). Never return file contents \
         in a message.\n\
         4. Call `finish`.",
    );
    out
}

/// The pointer input, the first user message (RUNTIME.md §8.4): never the truth itself.
pub(crate) fn pointer_input(node: &str, wake: &Wake, prior: &PriorSummary) -> String {
    let state = match &prior.version {
        None => "Your published world-model is empty (cold start).".to_string(),
        Some(v) => format!(
            "Your prior world-model is version `{v}` ({} file{}), already copied into your \
             workspace.",
            prior.files,
            if prior.files == 1 { "" } else { "s" }
        ),
    };
    format!(
        "Node `{node}` has been woken (wake source: {}). {state} Follow your Maintains \
         postconditions: write your files to the workspace, then call `finish`.",
        wake.source.as_str()
    )
}

/// The user message appended after a response without any tool call (RUNTIME.md §8.7).
pub const CONTINUE_REMINDER: &str = "Plain text is not read by the harness. Continue with the \
tools: write your files to the workspace, then call `finish` with status `done` or `failed`.";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::receipt::WakeSource;

    fn brief() -> NodeBrief {
        NodeBrief {
            id: "price-brief".into(),
            name: "Price brief".into(),
            kind: "responsibility".into(),
            contract_view: vec![
                ("Requires".into(), "- vendor prices".into()),
                ("Maintains (facets)".into(), "#### summary\nA brief.".into()),
                ("Execution".into(), "1. read\n2. write".into()),
            ],
            facets: vec![FacetLayout {
                name: "summary".into(),
                paths: vec!["summary".into()],
            }],
            postconditions: vec![
                PostconditionBrief {
                    id: "has-summary".into(),
                    source: "Postcondition: the summary is not empty.".into(),
                    attested: false,
                },
                PostconditionBrief {
                    id: "own-page".into(),
                    source: "Postcondition: the page is our own.".into(),
                    attested: true,
                },
            ],
            inbound: vec![("price-watch".into(), "prices".into())],
        }
    }

    #[test]
    fn embedded_prompt_covers_the_required_points() {
        let p = system_prompt_from(None).unwrap();
        assert_eq!(p.source, PromptSource::Embedded);
        for needle in [
            "published truth",
            "Maintains",
            "by reference",
            "Never invent upstream content",
            "truth.json",
            "byte-identical",
            "Call `finish` exactly once",
            "attest",
            "secrets",
            "turns are limited",
        ] {
            assert!(p.text.contains(needle), "missing {needle:?}");
        }
        assert_eq!(p.text, p.text.trim_end());
    }

    #[test]
    fn skill_path_file_directory_and_errors() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("prompt.md");
        std::fs::write(&f, "custom\r\nprompt\n\n").unwrap();
        let p = system_prompt_from(Some(&f)).unwrap();
        assert_eq!(p.text, "custom\nprompt");
        assert_eq!(p.source, PromptSource::File(f.clone()));
        std::fs::write(d.path().join(SKILL_FILE), "from dir").unwrap();
        let p = system_prompt_from(Some(d.path())).unwrap();
        assert_eq!(p.text, "from dir");
        let empty = tempfile::tempdir().unwrap();
        let err = system_prompt_from(Some(empty.path())).unwrap_err();
        // The error names the file it is about: `<dir>/SKILL.md` for a directory.
        let missing = empty.path().join(SKILL_FILE).display().to_string();
        assert_eq!(err.path(), missing);
        let e = err.to_string();
        assert!(e.starts_with("REACTOR_SKILL_PATH: cannot read "), "{e}");
        assert!(e.contains(&missing), "{e}");
        let e = system_prompt_from(Some(Path::new("/nonexistent/skill.md")))
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot read /nonexistent/skill.md"), "{e}");
        std::fs::write(&f, [0xff, 0xfe, 0x00]).unwrap();
        assert!(
            system_prompt_from(Some(&f))
                .unwrap_err()
                .to_string()
                .ends_with("is not valid UTF-8")
        );
        assert_eq!(
            system_prompt_from(Some(&f)).unwrap_err().path(),
            f.display().to_string()
        );
        std::fs::write(&f, " \n\t\n").unwrap();
        assert!(
            system_prompt_from(Some(&f))
                .unwrap_err()
                .to_string()
                .ends_with("is empty")
        );
        std::fs::write(&f, vec![b'a'; (MAX_SKILL_BYTES + 1) as usize]).unwrap();
        assert!(
            system_prompt_from(Some(&f))
                .unwrap_err()
                .to_string()
                .ends_with("is larger than 1 MiB")
        );
    }

    #[test]
    fn node_contract_shows_view_facets_and_postconditions() {
        let text = node_contract(&brief());
        assert!(
            text.starts_with(
                "# Node contract: Price brief (id `price-brief`, kind responsibility)"
            )
        );
        assert!(text.contains("### Requires\n\n- vendor prices"));
        assert!(text.contains("### Maintains (facets)\n\n#### summary\nA brief."));
        assert!(text.contains("render body"));
        assert!(text.contains("### Execution\n\n1. read\n2. write"));
        assert!(text.contains("- facet `summary`: `summary`"));
        assert!(text.contains("`truth.json` is required"));
        assert!(text.contains("- `has-summary`: Postcondition: the summary is not empty."));
        assert!(text.contains("- `own-page`: Postcondition: the page is our own."));
        assert!(!text.contains("### Continuity"));
        let bare = node_contract(&NodeBrief {
            id: "x".into(),
            ..NodeBrief::default()
        });
        assert!(bare.contains("### Requires\n\nThis node has no inputs."));
        assert!(bare.contains("atomic-only"));
        assert!(bare.contains("None were compiled"));
        assert_eq!(brief().attested_ids(), vec!["own-page".to_string()]);
    }

    #[test]
    fn wake_header_and_pointer_describe_the_render() {
        let wake = Wake {
            source: WakeSource::Input,
            refs: vec!["sha256:aa".into()],
        };
        let cold = PriorSummary {
            version: None,
            files: 0,
        };
        let h = wake_header(&brief(), "sha256:cf", &wake, &["sha256:t1".into()], &cold);
        assert!(h.contains("- Node: `price-brief`"));
        assert!(h.contains("- Contract fingerprint: `sha256:cf`"));
        assert!(h.contains("- Wake source: input"));
        assert!(h.contains("- Waking receipts: `sha256:aa`"));
        assert!(h.contains("  - `price-watch` · `prices` → `sha256:t1`"));
        assert!(h.contains("cold start, your workspace is empty."));
        assert!(h.contains("4. Call `finish`."));
        let warm = PriorSummary {
            version: Some("sha256:v".into()),
            files: 2,
        };
        let h = wake_header(&brief(), "c", &wake, &["a".into(), "b".into()], &warm);
        assert!(h.contains("  - slot 2 → `b`"));
        assert!(h.contains("version `sha256:v`, 2 files. It has already been copied"));
        let p = pointer_input("price-brief", &wake, &cold);
        assert!(p.starts_with("Node `price-brief` has been woken (wake source: input)."));
        assert!(p.contains("empty (cold start)"));
        assert!(p.contains("`finish`"));
        let p = pointer_input("n", &wake, &warm);
        assert!(p.contains("version `sha256:v` (2 files)"));
    }

    #[test]
    fn tree_versions() {
        assert_eq!(tree_version(&Vec::new()), None);
        let v = tree_version(&vec![("a".into(), b"x".to_vec())]).unwrap();
        assert!(v.starts_with("sha256:") && v.len() == 71);
    }
}
