//! Properties of tool-call argument handling in the render agent loop (RUNTIME.md §8.5–§8.6),
//! issue 7 §5: a scripted model sends generated tool calls — real and unknown tools, argument
//! text that is not JSON, wrong types, hostile paths (`..`, absolute, drive letters, NUL,
//! backslashes) — then finishes. The fuzz target `tool_args` explores the same ground without
//! bounds.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use reactor::agent::prompt::{NodeBrief, PostconditionBrief};
use reactor::agent::tools::tool_path;
use reactor::agent::{AgentRender, RenderSettings};
use reactor::core::render::{NotSubscribed, UpstreamReader};
use reactor::core::{Render, RenderContext, RenderOutcome};
use reactor::format::opwm::FileTree;
use reactor::format::receipt::{Wake, WakeSource};
use reactor::model::{
    Message, ModelClient, ModelError, ModelRequest, ModelResponse, ToolArguments, ToolCall,
};
use serde_json::{Value, json};

struct Upstream(Vec<String>);

impl UpstreamReader for Upstream {
    fn producers(&self) -> &[String] {
        &self.0
    }
    fn read(&self, producer: &str) -> Result<FileTree, NotSubscribed> {
        if self.0.iter().any(|p| p == producer) {
            Ok(vec![("u.txt".into(), b"up".to_vec())])
        } else {
            Err(NotSubscribed {
                producer: producer.into(),
            })
        }
    }
}

/// Answers with the scripted turns, then with text only; records every request.
struct Scripted {
    turns: Mutex<VecDeque<ModelResponse>>,
    seen: Mutex<Vec<ModelRequest>>,
}

impl ModelClient for Scripted {
    fn complete(&self, req: &ModelRequest) -> Result<ModelResponse, ModelError> {
        self.seen.lock().unwrap().push(req.clone());
        Ok(self
            .turns
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(ModelResponse {
                text: Some("thinking".into()),
                stop_reason: Some("stop".into()),
                ..Default::default()
            }))
    }
}

fn turn(calls: Vec<ToolCall>) -> ModelResponse {
    ModelResponse {
        tool_calls: calls,
        stop_reason: Some("tool_calls".into()),
        ..Default::default()
    }
}

fn hostile_path() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "a.txt",
            "notes/a.txt",
            "./notes//a.txt",
            "notes\\a.txt",
            "../up.txt",
            "a/../../b",
            "/etc/passwd",
            "\\x",
            "C:x",
            "c:\\x",
            "a\0b",
            "",
            ".",
            "./",
            "..",
            "bin.dat",
            "dir/",
            "é/\u{1F600}.md",
            "u.txt",
        ])
        .prop_map(str::to_string),
        "[a-z./\\\\]{1,12}",
    ]
}

/// Well-formed arguments of `tool` around `path` (RUNTIME.md §8.5 schemas).
fn well_formed(tool: &str, path: &str, offset: Value, encoding: Value, text: &str) -> Value {
    match tool {
        "ws_write" => json!({"path": path, "content": text, "encoding": encoding}),
        "ws_delete" => json!({"path": path}),
        "wm_read_upstream" => json!({"producer": "up", "path": path, "offset": offset}),
        "wm_list_upstream" => {
            json!({"producer": if text.is_empty() { json!(null) } else { json!(path) }})
        }
        "shell_exec" => json!({"command": text}),
        "finish" => json!({"status": text, "reason": path, "semantic_diff": null}),
        "wm_list" | "ws_list" => json!({}),
        _ => json!({"path": path, "offset": offset}),
    }
}

/// One generated call: a tool name and its arguments (well-formed around a hostile path,
/// wrongly typed, or text that is not JSON).
fn call() -> impl Strategy<Value = (String, ToolArguments)> {
    let tool = prop::sample::select(vec![
        "wm_list",
        "wm_read",
        "wm_list_upstream",
        "wm_read_upstream",
        "ws_list",
        "ws_read",
        "ws_write",
        "ws_delete",
        "shell_exec",
        "finish",
        "nope",
    ]);
    let offset = prop_oneof![
        Just(json!(null)),
        Just(json!(0)),
        Just(json!(3)),
        Just(json!(-1)),
        Just(json!(1.5)),
        Just(json!(1e300)),
        Just(json!("2"))
    ];
    let encoding = prop_oneof![
        Just(json!(null)),
        Just(json!("utf8")),
        Just(json!("base64")),
        Just(json!("latin1"))
    ];
    (tool, hostile_path(), offset, encoding, "\\PC{0,12}", 0u8..6).prop_map(
        |(tool, path, offset, encoding, text, shape)| {
            let args = match shape {
                0..=2 => ToolArguments::Json(well_formed(tool, &path, offset, encoding, &text)),
                3 => ToolArguments::Json(json!({"path": path, "offset": offset, "extra": 1})),
                4 => ToolArguments::Json(json!({"path": 7, "content": [path], "status": text})),
                _ => ToolArguments::from_text(&text),
            };
            (tool.to_string(), args)
        },
    )
}

fn files_under(dir: &Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p.display().to_string());
        }
    }
}

fn brief() -> NodeBrief {
    NodeBrief {
        id: "n".into(),
        name: "n".into(),
        kind: "responsibility".into(),
        contract_view: vec![("Maintains".into(), "Files.".into())],
        postconditions: vec![PostconditionBrief {
            id: "own-page".into(),
            source: "Postcondition: honest.".into(),
            attested: true,
        }],
        inbound: vec![("up".into(), "@atomic".into())],
        ..NodeBrief::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The render never panics or aborts; every call of the turn gets exactly one result, in
    /// order, each a JSON object (errors with an `error` string); a finished render publishes
    /// only normalized relative paths; nothing is written outside the work root, and the
    /// working directory is gone afterwards.
    #[test]
    fn generated_tool_calls_are_answered_and_confined(
        calls in prop::collection::vec(call(), 0..8),
        finish_done in any::<bool>(),
    ) {
        let calls: Vec<ToolCall> = calls
            .into_iter()
            .enumerate()
            .map(|(i, (name, arguments))| ToolCall { id: format!("c{i}"), name, arguments })
            .collect();
        let status = if finish_done { "done" } else { "failed" };
        let finish = ToolCall {
            id: "f".into(),
            name: "finish".into(),
            arguments: ToolArguments::Json(json!({
                "status": status, "reason": "because", "semantic_diff": null,
                "attestations": {"own-page": true}
            })),
        };
        let client = Arc::new(Scripted {
            turns: Mutex::new(VecDeque::from([turn(calls.clone()), turn(vec![finish])])),
            seen: Mutex::new(Vec::new()),
        });
        let root = tempfile::tempdir().unwrap();
        let outside = root.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("canary.txt"), b"canary").unwrap();
        let mut settings = RenderSettings::new("prop", "prop-model");
        settings.work_root = root.path().join("work");
        settings.keep_work = false;
        settings.max_turns = 4;
        let briefs = HashMap::from([("n".to_string(), brief())]);
        let agent = AgentRender::new(client.clone(), settings, "SYSTEM", briefs);
        let prior: FileTree = vec![
            ("bin.dat".into(), vec![0xff, 0, 0xfe]),
            ("notes/a.txt".into(), "héllo".into()),
        ];
        let upstream = Upstream(vec!["up".into()]);
        let wake = Wake::new(WakeSource::External);
        let inputs = vec!["sha256:u".to_string()];
        let ctx = RenderContext {
            node: "n",
            wake: &wake,
            contract_fingerprint: "sha256:c",
            input_fingerprints: &inputs,
            prior: &prior,
            upstream: &upstream,
        };
        let outcome = agent.render(&ctx);

        let seen = client.seen.lock().unwrap();
        if seen.len() >= 2 {
            let base = seen[0].messages.len();
            let results = &seen[1].messages[base + 1..];
            prop_assert_eq!(results.len(), calls.len().max(1));
            for (m, c) in results.iter().zip(&calls) {
                let Message::Tool { call_id, content, is_error } = m else {
                    return Err(TestCaseError::fail(format!("not a tool result: {m:?}")));
                };
                prop_assert_eq!(call_id, &c.id);
                let v: Value = serde_json::from_str(content).unwrap();
                prop_assert!(v.is_object(), "{}", content);
                if *is_error {
                    prop_assert!(v["error"].is_string(), "{}", content);
                }
            }
        }
        match &outcome {
            RenderOutcome::Done(product) => {
                for (p, _) in &product.files {
                    prop_assert_eq!(tool_path(p), Ok(p.clone()), "published {:?}", p);
                }
            }
            RenderOutcome::Failed(f) => prop_assert!(!f.reason.is_empty()),
        }
        if seen.len() == 2 && finish_done {
            prop_assert!(matches!(outcome, RenderOutcome::Done(_)), "{:?}", outcome);
        }
        let mut left = Vec::new();
        files_under(root.path(), &mut left);
        prop_assert_eq!(left, [outside.join("canary.txt").display().to_string()]);
    }
}
