//! Read isolation (I16), bounded renders (I17) and cost mapping (I18).

use super::*;

fn text_turn(text: &str, u: Usage) -> ModelResponse {
    ModelResponse {
        text: Some(text.into()),
        tool_calls: Vec::new(),
        usage: u,
        stop_reason: Some("stop".into()),
    }
}

// ---------------------------------------------------------------------------------------------
// I16: read isolation

#[test]
fn i16_upstream_tools_only_see_subscribed_producers() {
    let root = tempfile::tempdir().unwrap();
    let s = settings(root.path());
    let truth = r#"{"prices":[{"vendor":"a","price":3}]}"#;
    let mut fx = Fixture::new(Vec::new());
    fx.wake = Wake {
        source: WakeSource::Input,
        refs: vec!["sha256:waker".into()],
    };
    fx.inputs = vec!["sha256:token-prices".into()];
    fx.upstream.producers = vec!["price-watch".into()];
    let watch_tree = vec![file("truth.json", truth)];
    fx.upstream
        .trees
        .insert("price-watch".into(), watch_tree.clone());
    fx.upstream
        .trees
        .insert("events".into(), vec![file("secret.txt", "not yours")]);
    let base = base_request(&s, None, &fx, "price-brief");
    let recs = records(
        &base,
        vec![
            (
                turn(
                    vec![
                        call("c1", "wm_list_upstream", json!({"producer": null})),
                        call(
                            "c2",
                            "wm_read_upstream",
                            json!({"producer": "events", "path": "secret.txt", "offset": null}),
                        ),
                        call("c3", "wm_list_upstream", json!({"producer": "events"})),
                        call(
                            "c4",
                            "wm_read_upstream",
                            json!({"producer": "price-watch", "path": "truth.json", "offset": null}),
                        ),
                    ],
                    usage(100, 0, 10),
                ),
                vec![
                    res(
                        "c1",
                        json!({"producers": [{"producer": "price-watch", "facets": ["prices"],
                                "version": tree_version(&watch_tree)}]}),
                    ),
                    res_err(
                        "c2",
                        "producer 'events' is not an input of node 'price-brief'",
                    ),
                    res_err(
                        "c3",
                        "producer 'events' is not an input of node 'price-brief'",
                    ),
                    res(
                        "c4",
                        json!({"path": "truth.json", "bytes": truth.len(), "encoding": "utf8",
                               "content": truth, "truncated": false}),
                    ),
                ],
            ),
            (
                turn(
                    vec![
                        call(
                            "c5",
                            "ws_write",
                            json!({"path": "brief.md", "content": "a: 3\n", "encoding": null}),
                        ),
                        call(
                            "c6",
                            "finish",
                            json!({"status": "done", "reason": null,
                                   "semantic_diff": {"summary": "first brief", "notes": null}}),
                        ),
                    ],
                    usage(200, 100, 20),
                ),
                vec![],
            ),
        ],
    );
    let client = Arc::new(ReplayClient::new(recs));
    let r = agent(client.clone(), &s, None);
    let p = done(r.render(&fx.ctx("price-brief")));
    assert_eq!(client.remaining(), 0, "every record consumed");
    assert_eq!(p.files, vec![file("brief.md", "a: 3\n")]);
    assert_eq!(
        js::compact_string(&js::Value::Object(p.semantic_diff.clone())),
        r#"{"summary":"first brief"}"#
    );
    assert!(p.attestations.is_empty());
    // The isolation error was produced by the harness: the reader never saw `events`.
    let reads = fx.upstream.reads.lock().unwrap().clone();
    assert_eq!(
        reads,
        vec!["price-watch".to_string()],
        "cached after one read"
    );
    // The error results were flagged as errors, in call order.
    let second = &client.calls()[1];
    let flags: Vec<(String, bool)> = second
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool {
                call_id, is_error, ..
            } => Some((call_id.clone(), *is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(
        flags,
        [
            ("c1".to_string(), false),
            ("c2".to_string(), true),
            ("c3".to_string(), true),
            ("c4".to_string(), false)
        ]
    );
    // The wake header names the slot and the waking receipt.
    assert!(base.system[2].contains("`price-watch` · `prices` → `sha256:token-prices`"));
    assert!(base.system[2].contains("`sha256:waker`"));
    assert_eq!(base.purpose, "render:price-brief");
    assert_eq!(cost(&p.usage), (110 + 120, 100));
}

// ---------------------------------------------------------------------------------------------
// I17: bounded renders

#[test]
fn i17_turn_cap_fails_and_keeps_the_summed_cost() {
    let root = tempfile::tempdir().unwrap();
    let mut s = settings(root.path());
    s.max_turns = 3;
    let fx = Fixture::new(Vec::new());
    let base = base_request(&s, None, &fx, "plain");
    let usages = [usage(100, 0, 10), usage(200, 50, 20), usage(300, 300, 5)];
    let turns = usages
        .iter()
        .enumerate()
        .map(|(i, u)| {
            let id = format!("c{i}");
            (
                turn(vec![call(&id, "ws_list", json!({}))], *u),
                vec![res(&id, json!({"files": []}))],
            )
        })
        .collect();
    let client = Arc::new(ReplayClient::new(records(&base, turns)));
    let f = failed(agent(client.clone(), &s, None).render(&fx.ctx("plain")));
    assert_eq!(f.reason, "render exceeded the turn cap (3 turns)");
    assert_eq!(client.remaining(), 0);
    assert_eq!(client.calls().len(), 3, "no fourth request");
    // (100 + 10) + (150 + 20) + (0 + 5) fresh; 0 + 50 + 300 reused.
    assert_eq!(cost(&f.usage), (285, 350));
    let u = f.usage.unwrap();
    assert_eq!(
        (u.provider.as_str(), u.model.as_str()),
        ("openrouter", "render-model")
    );
}

#[test]
fn i17_two_text_only_turns_end_without_a_signal() {
    let root = tempfile::tempdir().unwrap();
    let s = settings(root.path());
    let fx = Fixture::new(Vec::new());
    let base = base_request(&s, None, &fx, "plain");
    let recs = records(
        &base,
        vec![
            (
                text_turn("Let me think about it.", usage(10, 0, 1)),
                vec![Message::user(CONTINUE_REMINDER)],
            ),
            (text_turn("Here is my answer.", usage(20, 0, 2)), vec![]),
        ],
    );
    let client = Arc::new(ReplayClient::new(recs));
    let f = failed(agent(client.clone(), &s, None).render(&fx.ctx("plain")));
    assert_eq!(f.reason, NO_SIGNAL);
    assert_eq!(f.reason, "render produced no structured done/failed signal");
    assert_eq!(client.remaining(), 0);
    assert_eq!(cost(&f.usage), (33, 0));
}

#[test]
fn text_turns_that_are_not_consecutive_do_not_end_the_render() {
    let root = tempfile::tempdir().unwrap();
    let s = settings(root.path());
    let fx = Fixture::new(Vec::new());
    let base = base_request(&s, None, &fx, "plain");
    let recs = records(
        &base,
        vec![
            (
                text_turn("thinking", usage(1, 0, 1)),
                vec![Message::user(CONTINUE_REMINDER)],
            ),
            (
                turn(vec![call("a", "ws_list", json!({}))], usage(1, 0, 1)),
                vec![res("a", json!({"files": []}))],
            ),
            (
                text_turn("still thinking", usage(1, 0, 1)),
                vec![Message::user(CONTINUE_REMINDER)],
            ),
            (
                turn(vec![call("b", "finish", finish_done())], usage(1, 0, 1)),
                vec![],
            ),
        ],
    );
    let client = Arc::new(ReplayClient::new(recs));
    let p = done(agent(client.clone(), &s, None).render(&fx.ctx("plain")));
    assert!(p.files.is_empty());
    assert!(p.semantic_diff.is_empty());
    assert_eq!(cost(&p.usage), (8, 0));
    assert_eq!(client.remaining(), 0);
}

// ---------------------------------------------------------------------------------------------
// I18: cost mapping

#[test]
fn i18_usage_maps_to_fresh_and_reused_tokens() {
    let root = tempfile::tempdir().unwrap();
    let fx = Fixture::new(Vec::new());
    // Chat Completions: prompt 1000 of which 800 cached, completion 50.
    // Anthropic Messages (normalized by the client): input_tokens 150, cache_creation 50,
    // cache_read 800, output 50 → input 1000, cached 800, cache_write 50.
    for (provider, u) in [
        ("openrouter", usage(1000, 800, 50)),
        (
            "anthropic",
            Usage {
                input: 1000,
                cached_input: 800,
                cache_write: 50,
                output: 50,
            },
        ),
    ] {
        let mut s = settings(root.path());
        s.provider = provider.into();
        let base = base_request(&s, None, &fx, "plain");
        let recs = records(
            &base,
            vec![(turn(vec![call("f", "finish", finish_done())], u), vec![])],
        );
        let p = done(agent(Arc::new(ReplayClient::new(recs)), &s, None).render(&fx.ctx("plain")));
        let u = p.usage.unwrap();
        assert_eq!((u.fresh, u.reused), (250, 800), "{provider}");
        assert_eq!(u.provider, provider);
        assert_eq!(u.model, "render-model");
    }
}
