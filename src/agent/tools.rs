//! The render tool set (RUNTIME.md §8.5–§8.6): tool specifications with their JSON Schemas, the
//! harness's own argument validation, the private workspace (seeding, path confinement, reads
//! with paging, writes, deletes, harvesting with the limits of §8.2) and the `finish` signal.
//!
//! Every tool answers with a JSON object as text; failures are `{"error": "<message>"}` results
//! (flagged as errors), never aborts.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::format::jsonschema::{self, MemberOrder, Options, ViolationKind};
use crate::format::opwm::{FileTree, OpwmError, normalize_path, normalize_tree};

use crate::model::types::ToolSpec;

/// Largest content returned by one read, in bytes (256 KiB; longer content is paged with
/// `offset`). Base64 pages hold at most 3/4 of it in raw bytes so the encoded text fits.
pub const MAX_READ_BYTES: usize = 256 * 1024;

/// Largest decoded content of one `ws_write`, in bytes (4 MiB).
pub const MAX_WRITE_BYTES: usize = 4 * 1024 * 1024;

/// Most files a harvested world-model may hold (10,000, RUNTIME.md §8.2).
pub const MAX_FILES: usize = 10_000;

/// Largest total size of a harvested world-model, in bytes (64 MiB, RUNTIME.md §8.2).
pub const MAX_TOTAL_BYTES: u64 = 64 * 1024 * 1024;

/// Deepest directory nesting walked in a workspace.
pub const MAX_DEPTH: usize = 128;

/// Tool names, in the order they are offered.
pub const WM_LIST: &str = "wm_list";
/// See [`WM_LIST`].
pub const WM_READ: &str = "wm_read";
/// See [`WM_LIST`].
pub const WM_LIST_UPSTREAM: &str = "wm_list_upstream";
/// See [`WM_LIST`].
pub const WM_READ_UPSTREAM: &str = "wm_read_upstream";
/// See [`WM_LIST`].
pub const WS_LIST: &str = "ws_list";
/// See [`WM_LIST`].
pub const WS_READ: &str = "ws_read";
/// See [`WM_LIST`].
pub const WS_WRITE: &str = "ws_write";
/// See [`WM_LIST`].
pub const WS_DELETE: &str = "ws_delete";
/// See [`WM_LIST`].
pub const SHELL_EXEC: &str = "shell_exec";
/// See [`WM_LIST`].
pub const FINISH: &str = "finish";

fn object_schema(props: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": required,
        "properties": props,
    })
}

fn spec(name: &str, description: &str, parameters: Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: description.into(),
        parameters,
    }
}

/// The `finish` parameters schema for a node whose render-attested postcondition ids are
/// `attested` (RUNTIME.md §8.6): `attestations` appears only when there is at least one id,
/// with exactly one required boolean per id.
pub fn finish_schema(attested: &[String]) -> Value {
    let mut props = Map::new();
    props.insert(
        "status".into(),
        json!({"type": "string", "enum": ["done", "failed"]}),
    );
    props.insert("reason".into(), json!({"type": ["string", "null"]}));
    props.insert(
        "semantic_diff".into(),
        json!({
            "type": ["object", "null"], "additionalProperties": false,
            "required": ["summary", "notes"],
            "properties": {
                "summary": {"type": ["string", "null"]},
                "notes": {"type": ["array", "null"], "items": {"type": "string"}}
            }
        }),
    );
    let mut required = vec!["status", "reason", "semantic_diff"];
    if !attested.is_empty() {
        let mut att = Map::new();
        for id in attested {
            att.insert(id.clone(), json!({"type": "boolean"}));
        }
        props.insert(
            "attestations".into(),
            json!({
                "type": "object", "additionalProperties": false,
                "required": attested, "properties": Value::Object(att)
            }),
        );
        required.push("attestations");
    }
    object_schema(Value::Object(props), &required)
}

/// The tools offered to a render, in order: `wm_list`, `wm_read`, `wm_list_upstream`,
/// `wm_read_upstream`, `ws_list`, `ws_read`, `ws_write`, `ws_delete`, then `shell_exec` when
/// `shell` is true (a sandbox runner is configured), then `finish` (RUNTIME.md §8.5).
pub fn tool_specs(attested: &[String], shell: bool) -> Vec<ToolSpec> {
    let offset = json!({"type": ["integer", "null"]});
    let mut tools = vec![
        spec(
            WM_LIST,
            "List your prior published files (your truth before this render): returns the \
             version and each file's path and size in bytes.",
            object_schema(json!({}), &[]),
        ),
        spec(
            WM_READ,
            "Read one of your prior published files. Returns at most 256 KiB of content; when \
             `truncated` is true, call again with `offset` set to `next_offset`. Unaffected by \
             workspace edits.",
            object_schema(
                json!({"path": {"type": "string"}, "offset": offset}),
                &["path", "offset"],
            ),
        ),
        spec(
            WM_LIST_UPSTREAM,
            "With producer null: list the producers you subscribe to, with the facets you \
             watch and their current version. With a producer: list that producer's published \
             files.",
            object_schema(
                json!({"producer": {"type": ["string", "null"]}}),
                &["producer"],
            ),
        ),
        spec(
            WM_READ_UPSTREAM,
            "Read a file of a producer's current published truth (only producers you \
             subscribe to). Paged like wm_read.",
            object_schema(
                json!({"producer": {"type": "string"}, "path": {"type": "string"}, "offset": offset}),
                &["producer", "path", "offset"],
            ),
        ),
        spec(
            WS_LIST,
            "List the files currently in your workspace (what will be published when you \
             finish with done).",
            object_schema(json!({}), &[]),
        ),
        spec(
            WS_READ,
            "Read a file of your workspace. Paged like wm_read.",
            object_schema(
                json!({"path": {"type": "string"}, "offset": offset}),
                &["path", "offset"],
            ),
        ),
        spec(
            WS_WRITE,
            "Create or replace one workspace file (parent directories are created). `content` \
             is text, or base64 when `encoding` is \"base64\". At most 4 MiB per call.",
            object_schema(
                json!({
                    "path": {"type": "string"},
                    "content": {"type": "string"},
                    "encoding": {"type": ["string", "null"], "enum": ["utf8", "base64", null]}
                }),
                &["path", "content", "encoding"],
            ),
        ),
        spec(
            WS_DELETE,
            "Delete one workspace file; it will be absent from your next truth.",
            object_schema(json!({"path": {"type": "string"}}), &["path"]),
        ),
    ];
    if shell {
        tools.push(spec(
            SHELL_EXEC,
            "Run a shell command with the workspace as the current directory. Returns the exit \
             code, stdout and stderr (each capped at 64 KiB) and whether it timed out.",
            object_schema(json!({"command": {"type": "string"}}), &["command"]),
        ));
    }
    tools.push(spec(
        FINISH,
        "End the render, exactly once. status \"done\" publishes the workspace as your new \
         truth; \"failed\" keeps your prior truth and needs a one-line reason. semantic_diff \
         describes what changed in one line plus optional notes. Attest every listed \
         obligation honestly. Never put file contents here.",
        finish_schema(attested),
    ));
    tools
}

/// The type name of a value in error results (`integer` for integers, `number` otherwise).
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Validates `value` against a tool schema with the project's JSON-Schema-subset validator
/// ([`crate::format::jsonschema`]; absent nullable members count as `null`, RUNTIME.md §8.6).
/// Members are checked required-first: absent required members, unknown members, then the
/// members in argument order.
///
/// Errors: the first violation, one line naming the JSON path
/// (`$.status: expected one of "done", "failed"`).
pub fn validate(schema: &Value, value: &Value) -> Result<(), String> {
    let options = Options {
        order: MemberOrder::RequiredFirst,
        max_items: None,
        max_violations: 1,
    };
    let report = jsonschema::check(schema, value, &options);
    let Some(v) = report.violations.first() else {
        return Ok(());
    };
    Err(match &v.kind {
        ViolationKind::Type { expected, found } => format!(
            "{}: expected {}, got {}",
            v.path,
            expected.join(" or "),
            type_name(found)
        ),
        ViolationKind::Enum { allowed, .. } => {
            let shown: Vec<String> = allowed.iter().map(Value::to_string).collect();
            format!("{}: expected one of {}", v.path, shown.join(", "))
        }
        ViolationKind::Missing { key } => format!(
            "{}: missing required property {}",
            v.path,
            Value::String(key.to_string())
        ),
        ViolationKind::Unknown { key } => format!(
            "{}: unknown property {}",
            v.path,
            Value::String(key.to_string())
        ),
        ViolationKind::TooManyItems { len, max } => {
            format!("{}: has {len} items (at most {max})", v.path)
        }
    })
}

/// The outcome claimed by `finish`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinishStatus {
    /// `done`: harvest and commit.
    Done,
    /// `failed`: a failed receipt with the reason.
    Failed,
}

/// A valid final signal (RUNTIME.md §8.6).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FinishSignal {
    /// The claimed outcome.
    pub status: FinishStatus,
    /// The reason, when given (not trimmed).
    pub reason: Option<String>,
    /// `semantic_diff.summary`, when given.
    pub summary: Option<String>,
    /// `semantic_diff.notes`, when given.
    pub notes: Option<Vec<String>>,
    /// Attested values by postcondition id.
    pub attestations: HashMap<String, bool>,
}

/// Validates and decodes `finish` arguments for a node with the render-attested ids `attested`.
///
/// Lenient where the outcome is unambiguous: a `failed` signal may omit `attestations` (or send
/// `null`), and a node without attested ids accepts an absent, `null` or empty `attestations`.
///
/// Errors: the schema violation (see [`validate`]).
pub fn parse_finish(args: &Value, attested: &[String]) -> Result<FinishSignal, String> {
    let mut args = args.clone();
    let mut schema = finish_schema(attested);
    if let Value::Object(obj) = &mut args {
        let att = obj.get("attestations");
        let vacuous = match att {
            None | Some(Value::Null) => true,
            Some(Value::Object(o)) => o.is_empty(),
            _ => false,
        };
        let failed = obj.get("status").and_then(Value::as_str) == Some("failed");
        if attested.is_empty() && vacuous {
            obj.remove("attestations");
        } else if failed && matches!(att, None | Some(Value::Null)) {
            obj.remove("attestations");
            if let Some(Value::Array(req)) = schema.get_mut("required") {
                req.retain(|r| r != "attestations");
            }
        }
    }
    validate(&schema, &args)?;
    let get_str = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let status = match args.get("status").and_then(Value::as_str) {
        Some("done") => FinishStatus::Done,
        _ => FinishStatus::Failed,
    };
    let diff = args.get("semantic_diff").filter(|d| d.is_object());
    let summary = get_str(diff.and_then(|d| d.get("summary")));
    let notes = diff
        .and_then(|d| d.get("notes"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        });
    let attestations = args
        .get("attestations")
        .and_then(Value::as_object)
        .map(|o| {
            o.iter()
                .filter_map(|(k, v)| v.as_bool().map(|b| (k.clone(), b)))
                .collect()
        })
        .unwrap_or_default();
    Ok(FinishSignal {
        status,
        reason: get_str(args.get("reason")),
        summary,
        notes,
        attestations,
    })
}

/// One page of a file as a read result: `{"path", "bytes", "encoding", "content", "truncated",
/// "next_offset"?}`. `bytes` is the whole file's size; `offset` and `next_offset` count bytes.
/// A file that is valid UTF-8 is returned as text (pages end on character boundaries); any
/// other file as base64 of the raw bytes.
///
/// Errors: an offset past the end, or inside a UTF-8 character.
pub fn read_page(path: &str, bytes: &[u8], offset: Option<u64>) -> Result<Value, String> {
    let total = bytes.len();
    let off = offset.unwrap_or(0);
    if off > total as u64 {
        return Err(format!(
            "offset {off} is past the end of {path} ({total} bytes)"
        ));
    }
    let off = off as usize;
    let (encoding, content, end) = match std::str::from_utf8(bytes) {
        Ok(text) => {
            if !text.is_char_boundary(off) {
                return Err(format!(
                    "offset {off} is inside a UTF-8 character of {path}; use a next_offset value"
                ));
            }
            let mut end = (off + MAX_READ_BYTES).min(total);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            ("utf8", text[off..end].to_string(), end)
        }
        Err(_) => {
            let end = (off + MAX_READ_BYTES / 4 * 3).min(total);
            (
                "base64",
                base64::engine::general_purpose::STANDARD.encode(&bytes[off..end]),
                end,
            )
        }
    };
    let mut out = Map::new();
    out.insert("path".into(), json!(path));
    out.insert("bytes".into(), json!(total));
    out.insert("encoding".into(), json!(encoding));
    out.insert("content".into(), json!(content));
    out.insert("truncated".into(), json!(end < total));
    if end < total {
        out.insert("next_offset".into(), json!(end));
    }
    Ok(Value::Object(out))
}

/// `[{"path", "bytes"}]` for a file list.
pub fn file_list(files: &[(String, u64)]) -> Value {
    Value::Array(
        files
            .iter()
            .map(|(p, n)| json!({"path": p, "bytes": n}))
            .collect(),
    )
}

/// Why harvesting failed; `Display` is the failed receipt's reason (RUNTIME.md §8.2).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HarvestError {
    /// More than [`MAX_FILES`] files or [`MAX_TOTAL_BYTES`] bytes.
    #[error("world-model too large: {0}")]
    TooLarge(String),
    /// A file name that is not valid UTF-8.
    #[error("workspace file name is not valid UTF-8: {0}")]
    BadName(String),
    /// A path rejected by normalization (collision after normalization, …).
    #[error("render produced an invalid file tree: {0}")]
    Invalid(OpwmError),
    /// Nesting deeper than [`MAX_DEPTH`].
    #[error("workspace is nested deeper than {MAX_DEPTH} directories")]
    TooDeep,
    /// An I/O error while walking or reading.
    #[error("cannot harvest the workspace: {0}")]
    Io(String),
}

/// Normalizes a path given to a tool (RUNTIME.md §8.2, §8.5): `\` → `/`, empty and `.`
/// segments dropped.
///
/// Errors: empty, NUL, absolute (`/x`, `\x`, `C:…`) and `..` paths, with a message for the
/// model.
pub fn tool_path(raw: &str) -> Result<String, String> {
    let quoted = || Value::String(raw.to_string());
    if raw.is_empty() {
        return Err("path is empty".into());
    }
    if raw.contains('\0') {
        return Err("path contains a NUL character".into());
    }
    let b = raw.as_bytes();
    let drive = b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':';
    if raw.starts_with('/') || raw.starts_with('\\') || drive {
        return Err(format!(
            "path {} is absolute; use a path relative to the workspace",
            quoted()
        ));
    }
    normalize_path(raw).map_err(|e| match e {
        OpwmError::DotDot(_) => format!("path {} leaves the workspace (contains '..')", quoted()),
        OpwmError::EmptyPath(_) => format!("path {} is empty after normalization", quoted()),
        other => other.to_string(),
    })
}

/// A regular file found by a workspace walk.
struct Found {
    rel: String,
    abs: PathBuf,
    len: u64,
}

/// A render's private working directory (RUNTIME.md §8.2). Tool paths are confined to it: no
/// absolute paths, no `..`, never through a symbolic link.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
}

fn io_text(e: &std::io::Error) -> String {
    e.to_string()
}

impl Workspace {
    /// Removes `root` if it exists, recreates it and fills it with `prior` (normalized relative
    /// paths). Errors: one line for the failed receipt.
    pub fn seed(root: &Path, prior: &FileTree) -> Result<Workspace, String> {
        remove_path(root).map_err(|e| format!("cannot clear {}: {e}", root.display()))?;
        std::fs::create_dir_all(root)
            .map_err(|e| format!("cannot create {}: {e}", root.display()))?;
        let ws = Workspace {
            root: root.to_path_buf(),
        };
        for (path, bytes) in prior {
            let (norm, abs) = ws.resolve(path)?;
            ws.prepare(&norm, true)?;
            std::fs::write(&abs, bytes).map_err(|e| format!("cannot write {norm}: {e}"))?;
        }
        Ok(ws)
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Removes the directory (best effort).
    pub fn remove(&self) {
        let _ = remove_path(&self.root);
    }

    /// Resolves a tool path to `(normalized path, absolute path)` (see [`tool_path`]).
    pub fn resolve(&self, raw: &str) -> Result<(String, PathBuf), String> {
        let norm = tool_path(raw)?;
        let mut abs = self.root.clone();
        for seg in norm.split('/') {
            abs.push(seg);
        }
        Ok((norm, abs))
    }

    /// Checks every component of `norm` (never a symbolic link; intermediate components must be
    /// directories) and, with `create`, creates missing parent directories.
    fn prepare(&self, norm: &str, create: bool) -> Result<(), String> {
        let segs: Vec<&str> = norm.split('/').collect();
        let mut cur = self.root.clone();
        for (i, seg) in segs.iter().enumerate() {
            cur.push(seg);
            let last = i + 1 == segs.len();
            let shown = segs[..=i].join("/");
            match std::fs::symlink_metadata(&cur) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(format!(
                        "path {} goes through a symbolic link ({shown})",
                        Value::String(norm.to_string())
                    ));
                }
                Ok(m) if !last && !m.is_dir() => {
                    return Err(format!("{shown} is a file, not a directory"));
                }
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    if last {
                        return Ok(());
                    }
                    if !create {
                        return Ok(());
                    }
                    std::fs::create_dir(&cur)
                        .map_err(|e| format!("cannot create directory {shown}: {}", io_text(&e)))?;
                }
                Err(e) => return Err(format!("cannot inspect {shown}: {}", io_text(&e))),
            }
        }
        Ok(())
    }

    fn walk(&self) -> Result<Vec<Found>, HarvestError> {
        let mut out = Vec::new();
        let mut total: u64 = 0;
        self.walk_dir(&self.root, "", 0, &mut out, &mut total)?;
        Ok(out)
    }

    fn walk_dir(
        &self,
        dir: &Path,
        prefix: &str,
        depth: usize,
        out: &mut Vec<Found>,
        total: &mut u64,
    ) -> Result<(), HarvestError> {
        if depth > MAX_DEPTH {
            return Err(HarvestError::TooDeep);
        }
        let io = |e: std::io::Error| HarvestError::Io(e.to_string());
        let mut entries: Vec<(Vec<u8>, std::fs::DirEntry)> = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(io)? {
            let entry = entry.map_err(io)?;
            let name = entry.file_name();
            entries.push((name.as_encoded_bytes().to_vec(), entry));
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        for (_, entry) in entries {
            let name_os = entry.file_name();
            let ft = entry.file_type().map_err(io)?;
            if ft.is_symlink() || !(ft.is_file() || ft.is_dir()) {
                continue;
            }
            let Some(name) = name_os.to_str() else {
                return Err(HarvestError::BadName(format!(
                    "{prefix}{}",
                    name_os.to_string_lossy()
                )));
            };
            let rel = format!("{prefix}{name}");
            if ft.is_dir() {
                self.walk_dir(&entry.path(), &format!("{rel}/"), depth + 1, out, total)?;
                continue;
            }
            let len = entry.metadata().map_err(io)?.len();
            if out.len() >= MAX_FILES {
                return Err(HarvestError::TooLarge(format!(
                    "more than {MAX_FILES} files"
                )));
            }
            *total = total.saturating_add(len);
            if *total > MAX_TOTAL_BYTES {
                return Err(HarvestError::TooLarge(format!(
                    "more than {} MiB in total",
                    MAX_TOTAL_BYTES / (1024 * 1024)
                )));
            }
            out.push(Found {
                rel,
                abs: entry.path(),
                len,
            });
        }
        Ok(())
    }

    /// The workspace's regular files as `(path, bytes)` in walk order.
    ///
    /// Errors: as [`Workspace::harvest`], as one line.
    pub fn list(&self) -> Result<Vec<(String, u64)>, String> {
        Ok(self
            .walk()
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(|f| (f.rel, f.len))
            .collect())
    }

    /// Reads a workspace file. Errors: `not found: <path>`, a directory, a symbolic link, a
    /// file larger than the world-model limit.
    pub fn read(&self, raw: &str) -> Result<(String, Vec<u8>), String> {
        let (norm, abs) = self.resolve(raw)?;
        self.prepare(&norm, false)?;
        match std::fs::symlink_metadata(&abs) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!("not found: {norm}")),
            Err(e) => Err(format!("cannot read {norm}: {}", io_text(&e))),
            Ok(m) if m.is_dir() => Err(format!("{norm} is a directory")),
            Ok(m) if !m.is_file() => Err(format!("{norm} is not a regular file")),
            Ok(m) if m.len() > MAX_TOTAL_BYTES => Err(format!(
                "{norm} is larger than {} MiB",
                MAX_TOTAL_BYTES / (1024 * 1024)
            )),
            Ok(_) => std::fs::read(&abs)
                .map(|b| (norm.clone(), b))
                .map_err(|e| format!("cannot read {norm}: {}", io_text(&e))),
        }
    }

    /// Creates or replaces a file, creating parent directories; returns `(path, size)`.
    ///
    /// Errors: content over [`MAX_WRITE_BYTES`]; a write that would take the workspace past
    /// [`MAX_FILES`] or [`MAX_TOTAL_BYTES`]; a directory in the way; confinement errors.
    pub fn write(&self, raw: &str, bytes: &[u8]) -> Result<(String, u64), String> {
        if bytes.len() > MAX_WRITE_BYTES {
            return Err(format!(
                "content is {} bytes; at most {} MiB per ws_write",
                bytes.len(),
                MAX_WRITE_BYTES / (1024 * 1024)
            ));
        }
        let (norm, abs) = self.resolve(raw)?;
        self.prepare(&norm, false)?;
        let existing = match std::fs::symlink_metadata(&abs) {
            Ok(m) if m.is_dir() => return Err(format!("{norm} is a directory")),
            Ok(m) if m.is_file() => Some(m.len()),
            Ok(_) => return Err(format!("{norm} is not a regular file")),
            Err(_) => None,
        };
        let files = self.walk().map_err(|e| e.to_string())?;
        let count = files.len() + usize::from(existing.is_none());
        let total: u64 = files
            .iter()
            .map(|f| f.len)
            .sum::<u64>()
            .saturating_sub(existing.unwrap_or(0))
            .saturating_add(bytes.len() as u64);
        if count > MAX_FILES {
            return Err(format!(
                "the workspace would hold more than {MAX_FILES} files"
            ));
        }
        if total > MAX_TOTAL_BYTES {
            return Err(format!(
                "the workspace would exceed {} MiB",
                MAX_TOTAL_BYTES / (1024 * 1024)
            ));
        }
        self.prepare(&norm, true)?;
        std::fs::write(&abs, bytes).map_err(|e| format!("cannot write {norm}: {}", io_text(&e)))?;
        Ok((norm, bytes.len() as u64))
    }

    /// Deletes a file; `(path, false)` when it did not exist.
    ///
    /// Errors: a directory, a symbolic link, confinement errors.
    pub fn delete(&self, raw: &str) -> Result<(String, bool), String> {
        let (norm, abs) = self.resolve(raw)?;
        self.prepare(&norm, false)?;
        match std::fs::symlink_metadata(&abs) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok((norm, false)),
            Err(e) => Err(format!("cannot delete {norm}: {}", io_text(&e))),
            Ok(m) if m.is_dir() => Err(format!(
                "{norm} is a directory; delete its files one by one"
            )),
            Ok(_) => std::fs::remove_file(&abs)
                .map(|_| (norm.clone(), true))
                .map_err(|e| format!("cannot delete {norm}: {}", io_text(&e))),
        }
    }

    /// Collects every regular file (symbolic links and special files ignored) in a
    /// deterministic walk, normalizes the paths and returns the tree sorted by path bytes
    /// (RUNTIME.md §8.2).
    pub fn harvest(&self) -> Result<FileTree, HarvestError> {
        let found = self.walk()?;
        let mut files = Vec::with_capacity(found.len());
        for f in found {
            let bytes = std::fs::read(&f.abs).map_err(|e| HarvestError::Io(e.to_string()))?;
            files.push((f.rel, bytes));
        }
        let total: u64 = files.iter().map(|(_, b)| b.len() as u64).sum();
        if total > MAX_TOTAL_BYTES {
            return Err(HarvestError::TooLarge(format!(
                "more than {} MiB in total",
                MAX_TOTAL_BYTES / (1024 * 1024)
            )));
        }
        normalize_tree(files).map_err(HarvestError::Invalid)
    }
}

/// Removes a file, a symbolic link or a directory tree; absent is fine.
fn remove_path(p: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(p) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(p),
        Ok(_) => std::fs::remove_file(p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validator_follows_the_schemas() {
        let s = finish_schema(&["own-page".into()]);
        let ok = json!({"status": "done", "attestations": {"own-page": true}});
        assert_eq!(validate(&s, &ok), Ok(()));
        assert_eq!(
            validate(
                &s,
                &json!({"status": "maybe", "attestations": {"own-page": true}})
            ),
            Err("$.status: expected one of \"done\", \"failed\"".into())
        );
        assert_eq!(
            validate(&s, &json!({"status": "done"})),
            Err("$: missing required property \"attestations\"".into())
        );
        assert_eq!(
            validate(&s, &json!({"status": "done", "attestations": {}})),
            Err("$.attestations: missing required property \"own-page\"".into())
        );
        assert_eq!(
            validate(
                &s,
                &json!({"status": "done", "attestations": {"own-page": "yes"}})
            ),
            Err("$.attestations.own-page: expected boolean, got string".into())
        );
        assert_eq!(
            validate(
                &s,
                &json!({"status": "done", "attestations": {"own-page": true}, "files": []})
            ),
            Err("$: unknown property \"files\"".into())
        );
        assert_eq!(
            validate(
                &s,
                &json!({"status": "done", "attestations": {"own-page": true},
                        "semantic_diff": {"summary": 3}})
            ),
            Err("$.semantic_diff.summary: expected string or null, got integer".into())
        );
        assert_eq!(
            validate(
                &s,
                &json!({"status": "done", "attestations": {"own-page": true},
                        "semantic_diff": {"notes": ["a", 1]}})
            ),
            Err("$.semantic_diff.notes[1]: expected string, got integer".into())
        );
        assert_eq!(
            validate(&s, &json!([1])),
            Err("$: expected object, got array".into())
        );
        let offset = json!({"type": ["integer", "null"]});
        assert!(validate(&offset, &json!(3)).is_ok());
        assert!(validate(&offset, &json!(3.0)).is_ok());
        assert!(validate(&offset, &json!(3.5)).is_err());
        assert!(validate(&offset, &json!(null)).is_ok());
    }

    #[test]
    fn finish_parsing_and_leniency() {
        let ids = vec!["own-page".to_string()];
        let f = parse_finish(
            &json!({"status": "done", "reason": null,
                    "semantic_diff": {"summary": "two prices", "notes": ["a"]},
                    "attestations": {"own-page": false}}),
            &ids,
        )
        .unwrap();
        assert_eq!(f.status, FinishStatus::Done);
        assert_eq!(f.summary.as_deref(), Some("two prices"));
        assert_eq!(f.notes, Some(vec!["a".to_string()]));
        assert_eq!(f.attestations.get("own-page"), Some(&false));
        let f = parse_finish(&json!({"status": "failed", "reason": "no data"}), &ids).unwrap();
        assert_eq!(f.status, FinishStatus::Failed);
        assert_eq!(f.reason.as_deref(), Some("no data"));
        assert!(parse_finish(&json!({"status": "done"}), &ids).is_err());
        let f = parse_finish(&json!({"status": "done", "attestations": {}}), &[]).unwrap();
        assert!(f.attestations.is_empty());
        assert!(
            parse_finish(&json!({"status": "done", "attestations": {"x": true}}), &[]).is_err()
        );
        assert!(parse_finish(&json!("done"), &[]).is_err());
    }

    #[test]
    fn tool_list_and_shell_toggle() {
        let names = |t: &[ToolSpec]| t.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
        assert_eq!(
            names(&tool_specs(&[], false)),
            [
                "wm_list",
                "wm_read",
                "wm_list_upstream",
                "wm_read_upstream",
                "ws_list",
                "ws_read",
                "ws_write",
                "ws_delete",
                "finish"
            ]
        );
        let with_shell = tool_specs(&[], true);
        assert_eq!(with_shell[8].name, "shell_exec");
        let finish = &tool_specs(&["a".into()], false)[8];
        assert_eq!(
            finish.parameters["required"],
            json!(["status", "reason", "semantic_diff", "attestations"])
        );
        assert!(
            tool_specs(&[], false)[8].parameters["properties"]
                .get("attestations")
                .is_none()
        );
    }

    #[test]
    fn pages_text_and_binary() {
        let v = read_page("a.txt", b"hello", None).unwrap();
        assert_eq!(
            v,
            json!({"path": "a.txt", "bytes": 5, "encoding": "utf8", "content": "hello", "truncated": false})
        );
        let v = read_page("a.txt", b"hello", Some(5)).unwrap();
        assert_eq!(v["content"], "");
        assert!(read_page("a.txt", b"hello", Some(6)).is_err());
        assert!(read_page("e.txt", "é".as_bytes(), Some(1)).is_err());
        // A long text splits on a character boundary.
        let mut long = "a".repeat(MAX_READ_BYTES - 1);
        long.push('é');
        long.push_str("tail");
        let v = read_page("l.txt", long.as_bytes(), None).unwrap();
        assert_eq!(v["truncated"], true);
        let next = v["next_offset"].as_u64().unwrap();
        assert_eq!(next as usize, MAX_READ_BYTES - 1);
        let v2 = read_page("l.txt", long.as_bytes(), Some(next)).unwrap();
        assert_eq!(v2["content"], "étail");
        assert_eq!(v2["truncated"], false);
        let bin = [0xffu8, 0, 1];
        let v = read_page("b.bin", &bin, None).unwrap();
        assert_eq!(v["encoding"], "base64");
        assert_eq!(v["content"], "/wAB");
    }

    #[test]
    fn workspace_confinement_and_limits() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("w");
        let ws = Workspace::seed(&root, &vec![("dir/a.txt".into(), b"A".to_vec())]).unwrap();
        assert_eq!(std::fs::read(root.join("dir/a.txt")).unwrap(), b"A");
        for bad in [
            "/etc/passwd",
            "\\x",
            "C:/x",
            "../x",
            "a/../../x",
            "",
            ".",
            "a\0b",
        ] {
            assert!(ws.resolve(bad).is_err(), "{bad:?}");
        }
        assert_eq!(ws.resolve("./a//b\\c").unwrap().0, "a/b/c");
        assert_eq!(
            ws.write("n/e/w.txt", b"xy").unwrap(),
            ("n/e/w.txt".into(), 2)
        );
        assert!(ws.write("dir/a.txt/sub", b"x").is_err());
        assert!(
            ws.write("dir", b"x")
                .unwrap_err()
                .contains("is a directory")
        );
        assert!(
            ws.write("big", &vec![0u8; MAX_WRITE_BYTES + 1])
                .unwrap_err()
                .contains("at most 4 MiB")
        );
        assert_eq!(ws.read("missing").unwrap_err(), "not found: missing");
        assert_eq!(ws.delete("missing").unwrap(), ("missing".into(), false));
        assert_eq!(ws.delete("dir/a.txt").unwrap(), ("dir/a.txt".into(), true));
        #[cfg(unix)]
        {
            let outside = d.path().join("outside");
            std::fs::create_dir(&outside).unwrap();
            std::fs::write(outside.join("secret"), b"S").unwrap();
            std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
            std::os::unix::fs::symlink(outside.join("secret"), root.join("flink")).unwrap();
            assert!(
                ws.read("link/secret")
                    .unwrap_err()
                    .contains("symbolic link")
            );
            assert!(
                ws.write("link/new", b"x")
                    .unwrap_err()
                    .contains("symbolic link")
            );
            assert!(ws.read("flink").unwrap_err().contains("symbolic link"));
            assert!(!outside.join("new").exists());
            // Harvest ignores the links.
            let tree = ws.harvest().unwrap();
            assert_eq!(tree, vec![("n/e/w.txt".to_string(), b"xy".to_vec())]);
        }
        ws.remove();
        assert!(!root.exists());
    }

    #[test]
    fn harvest_limits() {
        let d = tempfile::tempdir().unwrap();
        let ws = Workspace::seed(&d.path().join("w"), &Vec::new()).unwrap();
        // Bypass ws_write's own checks to simulate a shell that wrote too much.
        for i in 0..=MAX_FILES {
            std::fs::write(ws.root().join(format!("f{i}")), b"").unwrap();
        }
        assert_eq!(
            ws.harvest().unwrap_err().to_string(),
            "world-model too large: more than 10000 files"
        );
        assert!(
            ws.write("one-more", b"x")
                .unwrap_err()
                .contains("10000 files")
        );
        let ws = Workspace::seed(&d.path().join("w"), &Vec::new()).unwrap();
        assert!(
            ws.list().unwrap().is_empty(),
            "seeding clears the directory"
        );
        let f = std::fs::File::create(ws.root().join("huge")).unwrap();
        f.set_len(MAX_TOTAL_BYTES + 1).unwrap();
        assert_eq!(
            ws.harvest().unwrap_err().to_string(),
            "world-model too large: more than 64 MiB in total"
        );
        assert!(ws.write("x", b"x").unwrap_err().contains("64 MiB"));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn harvest_rejects_non_utf8_names_and_collisions() {
        use std::os::unix::ffi::OsStrExt;
        let d = tempfile::tempdir().unwrap();
        let ws = Workspace::seed(&d.path().join("w"), &Vec::new()).unwrap();
        let bad = std::ffi::OsStr::from_bytes(b"bad\xff");
        std::fs::write(ws.root().join(bad), b"x").unwrap();
        assert!(
            ws.harvest()
                .unwrap_err()
                .to_string()
                .starts_with("workspace file name is not valid UTF-8: bad")
        );
        let ws = Workspace::seed(&d.path().join("w2"), &Vec::new()).unwrap();
        std::fs::create_dir(ws.root().join("a")).unwrap();
        std::fs::write(ws.root().join("a/b"), b"1").unwrap();
        std::fs::write(ws.root().join("a\\b"), b"2").unwrap();
        assert!(
            ws.harvest()
                .unwrap_err()
                .to_string()
                .starts_with("render produced an invalid file tree: duplicate path")
        );
    }
}
