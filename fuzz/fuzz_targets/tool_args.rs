//! Tool-call arguments of the render agent loop (RUNTIME.md §8.5–§8.6): a scripted model asks
//! for up to eight tool calls whose names and argument texts come from the input (pieces at
//! `\n--\n`; the first byte of a piece picks the tool, the rest is the argument text, or with
//! the high bit set, the `path` of otherwise well-formed arguments), then finishes.
//!
//! Properties: the render never panics or aborts (there is no sandbox); every call of a turn
//! gets exactly one result, in order, and every result is a JSON object (an error result holds
//! an `error` string); a finished render publishes only normalized relative paths; nothing is
//! written outside the work root, and the working directory is removed afterwards.
#![no_main]

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex};

use libfuzzer_sys::fuzz_target;
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
use reactor_fuzz::{pieces, temp_dir};
use serde_json::{Value, json};

const TOOLS: &[&str] = &[
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
];

struct Upstream {
    producers: Vec<String>,
    tree: FileTree,
}

impl UpstreamReader for Upstream {
    fn producers(&self) -> &[String] {
        &self.producers
    }
    fn read(&self, producer: &str) -> Result<FileTree, NotSubscribed> {
        if self.producers.iter().any(|p| p == producer) {
            Ok(self.tree.clone())
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
                text: Some("…".into()),
                stop_reason: Some("stop".into()),
                ..Default::default()
            }))
    }
}

fn arguments(tool: &str, path: &str) -> Value {
    match tool {
        "ws_write" => json!({"path": path, "content": path, "encoding": null}),
        "ws_delete" => json!({"path": path}),
        "wm_read_upstream" => json!({"producer": "up", "path": path, "offset": null}),
        "wm_list_upstream" => json!({"producer": path}),
        "finish" => json!({
            "status": path, "reason": path,
            "semantic_diff": {"summary": path, "notes": [path]},
            "attestations": {"own-page": true}
        }),
        "shell_exec" => json!({"command": path}),
        "wm_list" | "ws_list" => json!({}),
        _ => json!({"path": path, "offset": null}),
    }
}

fn call(i: usize, piece: &[u8]) -> ToolCall {
    let (first, rest) = piece.split_first().map_or((0, &[][..]), |(f, r)| (*f, r));
    let name = TOOLS[(first & 0x7f) as usize % TOOLS.len()];
    let text = String::from_utf8_lossy(rest);
    let arguments = if first & 0x80 != 0 {
        ToolArguments::Json(arguments(name, &text))
    } else {
        ToolArguments::from_text(&text)
    };
    ToolCall {
        id: format!("c{i}"),
        name: name.into(),
        arguments,
    }
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

fuzz_target!(|data: &[u8]| {
    let calls: Vec<ToolCall> = pieces(data, 8)
        .into_iter()
        .filter(|p| !p.is_empty())
        .enumerate()
        .map(|(i, p)| call(i, p))
        .collect();
    let finish = ToolCall {
        id: "f".into(),
        name: "finish".into(),
        arguments: ToolArguments::Json(json!({
            "status": "done", "reason": null, "semantic_diff": null,
            "attestations": {"own-page": true}
        })),
    };
    let turn = |calls: Vec<ToolCall>| ModelResponse {
        tool_calls: calls,
        stop_reason: Some("tool_calls".into()),
        ..Default::default()
    };
    let client = Arc::new(Scripted {
        turns: Mutex::new(VecDeque::from([turn(calls.clone()), turn(vec![finish])])),
        seen: Mutex::new(Vec::new()),
    });

    let root = temp_dir();
    let outside = root.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("canary.txt"), b"canary").unwrap();
    let mut settings = RenderSettings::new("fuzz", "fuzz-model");
    settings.work_root = root.path().join("work");
    settings.keep_work = false;
    settings.max_turns = 4;
    let brief = NodeBrief {
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
    };
    let agent = AgentRender::new(
        client.clone(),
        settings,
        "SYSTEM",
        HashMap::from([("n".to_string(), brief)]),
    );
    let prior: FileTree = vec![
        ("bin.dat".into(), vec![0xff, 0, 0xfe]),
        ("notes/a.txt".into(), "héllo".into()),
    ];
    let upstream = Upstream {
        producers: vec!["up".into()],
        tree: vec![("u.txt".into(), b"up".to_vec())],
    };
    let wake = Wake::new(WakeSource::External);
    let ctx = RenderContext {
        node: "n",
        wake: &wake,
        contract_fingerprint: "sha256:c",
        input_fingerprints: &["sha256:u".to_string()],
        prior: &prior,
        upstream: &upstream,
    };
    let outcome = agent.render(&ctx);

    let seen = client.seen.lock().unwrap();
    if seen.len() >= 2 {
        // The second request: base messages, the first turn, then one result per call.
        let base = seen[0].messages.len();
        let results = &seen[1].messages[base + 1..];
        assert_eq!(results.len(), calls.len().max(1));
        for (m, c) in results.iter().zip(&calls) {
            let Message::Tool {
                call_id,
                content,
                is_error,
            } = m
            else {
                panic!("not a tool result: {m:?}");
            };
            assert_eq!(call_id, &c.id);
            let v: Value = serde_json::from_str(content).expect("a JSON result");
            assert!(v.is_object(), "{content}");
            if *is_error {
                assert!(v["error"].is_string(), "{content}");
            }
        }
    }
    if let RenderOutcome::Done(product) = &outcome {
        for (p, _) in &product.files {
            assert_eq!(tool_path(p).as_deref(), Ok(p.as_str()), "published {p:?}");
        }
    } else if let RenderOutcome::Failed(f) = &outcome {
        assert!(!f.reason.is_empty());
    }
    let mut left = Vec::new();
    files_under(root.path(), &mut left);
    assert_eq!(left, [outside.join("canary.txt").display().to_string()]);
    assert_eq!(
        std::fs::read(outside.join("canary.txt")).unwrap(),
        b"canary"
    );
});
