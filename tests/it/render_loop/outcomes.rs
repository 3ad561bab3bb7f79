//! How a render ends: the final signal and its attestations, invalid tool calls, model errors
//! and cancellation.

use super::*;

// ---------------------------------------------------------------------------------------------
// The final signal

#[test]
fn attestations_and_semantic_diff_pass_through_after_an_invalid_finish() {
    let root = tempfile::tempdir().unwrap();
    let s = settings(root.path());
    let fx = Fixture::new(Vec::new());
    let base = base_request(&s, None, &fx, "price-watch");
    // The finish tool's schema lists the attested id.
    let finish = base.tools.iter().find(|t| t.name == "finish").unwrap();
    assert_eq!(
        finish.parameters["properties"]["attestations"],
        json!({"type": "object", "additionalProperties": false, "required": ["own-page"],
               "properties": {"own-page": {"type": "boolean"}}})
    );
    let truth = r#"{"prices":[1,2]}"#;
    let recs = records(
        &base,
        vec![
            (
                turn(
                    vec![
                        call(
                            "w",
                            "ws_write",
                            json!({"path": "truth.json", "content": truth, "encoding": "utf8"}),
                        ),
                        call("f1", "finish", finish_done()),
                    ],
                    usage(10, 0, 1),
                ),
                vec![
                    res("w", json!({"path": "truth.json", "bytes": truth.len()})),
                    res_err(
                        "f1",
                        "invalid finish signal: $: missing required property \"attestations\"",
                    ),
                ],
            ),
            (
                turn(
                    vec![
                        call(
                            "f2",
                            "finish",
                            json!({"status": "done", "reason": null,
                                   "semantic_diff": {"summary": format!("two prices {CANARY}"),
                                                     "notes": ["n1", "n2"]},
                                   "attestations": {"own-page": true}}),
                        ),
                        call(
                            "late",
                            "ws_write",
                            json!({"path": "after.txt", "content": "x", "encoding": null}),
                        ),
                    ],
                    usage(10, 0, 1),
                ),
                vec![],
            ),
        ],
    );
    let client = Arc::new(ReplayClient::new(recs));
    let p = done(agent(client.clone(), &s, None).render(&fx.ctx("price-watch")));
    assert_eq!(client.remaining(), 0);
    assert_eq!(
        p.files,
        vec![file("truth.json", truth)],
        "calls after finish never run"
    );
    assert_eq!(
        p.attestations,
        HashMap::from([("own-page".to_string(), true)])
    );
    assert_eq!(
        js::compact_string(&js::Value::Object(p.semantic_diff)),
        r#"{"summary":"two prices [redacted]","notes":["n1","n2"]}"#
    );
}

#[test]
fn failed_signals_carry_their_reason_or_the_default() {
    let root = tempfile::tempdir().unwrap();
    let s = settings(root.path());
    let fx = Fixture::new(Vec::new());
    let base = base_request(&s, None, &fx, "price-watch");
    for (args, want) in [
        (
            json!({"status": "failed", "reason": "  upstream is empty\n", "semantic_diff": null}),
            "upstream is empty",
        ),
        (json!({"status": "failed"}), NO_REASON),
        (json!({"status": "failed", "reason": "   "}), NO_REASON),
    ] {
        let recs = records(
            &base,
            vec![(
                turn(vec![call("f", "finish", args)], usage(5, 0, 5)),
                vec![],
            )],
        );
        let f = failed(
            agent(Arc::new(ReplayClient::new(recs)), &s, None).render(&fx.ctx("price-watch")),
        );
        assert_eq!(f.reason, want);
        assert_eq!(cost(&f.usage), (10, 0), "failed renders keep their cost");
    }
    assert_eq!(NO_REASON, "render reported failed without a reason");
}

#[test]
fn invalid_tool_calls_get_error_results_and_never_abort() {
    let root = tempfile::tempdir().unwrap();
    let s = settings(root.path());
    let fx = Fixture::new(Vec::new());
    let base = base_request(&s, None, &fx, "plain");
    let names = base
        .tools
        .iter()
        .map(|t| t.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let recs = records(
        &base,
        vec![
            (
                turn(
                    vec![
                        ToolCall {
                            id: "r".into(),
                            name: "wm_read".into(),
                            arguments: ToolArguments::Raw("{path:".into()),
                        },
                        call("u", "nope", json!({})),
                        call("t", "wm_read", json!({"path": 7, "offset": null})),
                        call("m", "ws_write", json!({"path": "x"})),
                        call("s", "shell_exec", json!({"command": "ls"})),
                        call("n", "wm_read", json!({"path": "a", "offset": -1})),
                        call(
                            "e",
                            "wm_read",
                            json!({"path": "a", "offset": null, "extra": 1}),
                        ),
                        call("o", "ws_list", json!([])),
                        call(
                            "b",
                            "ws_write",
                            json!({"path": "x.bin", "content": "@@not base64@@", "encoding": "base64"}),
                        ),
                        call(
                            "l",
                            "ws_write",
                            json!({"path": "x.txt", "content": "x", "encoding": "latin1"}),
                        ),
                        call("d", "wm_read", json!({"path": "../up.txt", "offset": null})),
                        call(
                            "a",
                            "wm_read",
                            json!({"path": "/etc/passwd", "offset": null}),
                        ),
                        call("z", "ws_read", json!({"path": "./", "offset": null})),
                    ],
                    usage(1, 0, 1),
                ),
                vec![
                    res_err("r", "arguments of wm_read are not valid JSON"),
                    res_err(
                        "u",
                        &format!("unknown tool \"nope\"; available tools: {names}"),
                    ),
                    res_err(
                        "t",
                        "invalid arguments for wm_read: $.path: expected string, got integer",
                    ),
                    res_err(
                        "m",
                        "invalid arguments for ws_write: $: missing required property \"content\"",
                    ),
                    res_err(
                        "s",
                        "unknown tool 'shell_exec': command execution is disabled (sandbox.mode is none)",
                    ),
                    res_err(
                        "n",
                        "invalid arguments for wm_read: offset must be a non-negative integer",
                    ),
                    res_err(
                        "e",
                        "invalid arguments for wm_read: $: unknown property \"extra\"",
                    ),
                    res_err(
                        "o",
                        "invalid arguments for ws_list: $: expected object, got array",
                    ),
                    res_err("b", "content is not valid base64"),
                    res_err(
                        "l",
                        "invalid arguments for ws_write: $.encoding: expected one of \"utf8\", \"base64\", null",
                    ),
                    res_err(
                        "d",
                        "path \"../up.txt\" leaves the workspace (contains '..')",
                    ),
                    res_err(
                        "a",
                        "path \"/etc/passwd\" is absolute; use a path relative to the workspace",
                    ),
                    res_err("z", "path \"./\" is empty after normalization"),
                ],
            ),
            (
                turn(vec![call("f", "finish", finish_done())], usage(1, 0, 1)),
                vec![],
            ),
        ],
    );
    let client = Arc::new(ReplayClient::new(recs));
    let p = done(agent(client.clone(), &s, None).render(&fx.ctx("plain")));
    assert!(p.files.is_empty());
    assert_eq!(client.remaining(), 0);
    assert!(!base.tools.iter().any(|t| t.name == "shell_exec"));
}

// ---------------------------------------------------------------------------------------------
// Model errors, cancellation, unknown nodes

#[test]
fn model_errors_fail_the_render_and_keep_the_spent_cost() {
    let root = tempfile::tempdir().unwrap();
    let s = settings(root.path());
    let fx = Fixture::new(Vec::new());
    let base = base_request(&s, None, &fx, "plain");
    let recs = records(
        &base,
        vec![(
            turn(vec![call("a", "ws_list", json!({}))], usage(40, 0, 2)),
            vec![],
        )],
    );
    let f = failed(agent(Arc::new(ReplayClient::new(recs)), &s, None).render(&fx.ctx("plain")));
    assert_eq!(f.reason, "model call failed: no remaining records");
    assert_eq!(cost(&f.usage), (42, 0));
    let f = failed(agent(Arc::new(OfflineClient), &s, None).render(&fx.ctx("plain")));
    assert_eq!(f.reason, "offline mode: model calls are disabled");
    assert_eq!(f.usage, None);
    let f = failed(agent(Arc::new(OfflineClient), &s, None).render(&fx.ctx("ghost")));
    assert!(
        f.reason.starts_with("no contract view for node 'ghost'"),
        "{}",
        f.reason
    );
}

struct CancelAfterFirst {
    inner: ReplayClient,
    flag: Arc<AtomicBool>,
}

impl ModelClient for CancelAfterFirst {
    fn complete(&self, req: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let r = self.inner.complete(req);
        self.flag.store(true, Ordering::SeqCst);
        r
    }
}

#[test]
fn cancellation_is_observed_between_turns() {
    let root = tempfile::tempdir().unwrap();
    let s = settings(root.path());
    let fx = Fixture::new(Vec::new());
    let base = base_request(&s, None, &fx, "plain");
    let recs = records(
        &base,
        vec![(
            turn(vec![call("a", "ws_list", json!({}))], usage(5, 0, 5)),
            vec![res("a", json!({"files": []}))],
        )],
    );
    let flag = Arc::new(AtomicBool::new(false));
    let client = Arc::new(CancelAfterFirst {
        inner: ReplayClient::new(recs),
        flag: flag.clone(),
    });
    let r = agent(client, &s, None).with_cancel(flag);
    let f = failed(r.render(&fx.ctx("plain")));
    assert_eq!(f.reason, CANCELLED);
    assert_eq!(cost(&f.usage), (10, 0));
}
