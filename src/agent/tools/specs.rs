//! The tool specifications offered to the model, with their JSON Schemas (RUNTIME.md §8.5),
//! and the `finish` schema of a node (§8.6).

use serde_json::{Map, Value, json};

use super::{
    FINISH, SHELL_EXEC, WM_LIST, WM_LIST_UPSTREAM, WM_READ, WM_READ_UPSTREAM, WS_DELETE, WS_LIST,
    WS_READ, WS_WRITE,
};
use crate::model::types::ToolSpec;

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
pub(crate) fn finish_schema(attested: &[String]) -> Value {
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
pub(crate) fn tool_specs(attested: &[String], shell: bool) -> Vec<ToolSpec> {
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
