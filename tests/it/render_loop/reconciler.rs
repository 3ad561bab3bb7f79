//! End to end through the real reconciler, replayed twice (I7, agent-loop variant).

use super::*;

// ---------------------------------------------------------------------------------------------
// End to end through the reconciler

/// Answers with queued responses whatever the request, logging the requests.
struct ScriptClient {
    queue: Mutex<VecDeque<ModelResponse>>,
    log: Mutex<Vec<ModelRequest>>,
}

impl ModelClient for ScriptClient {
    fn complete(&self, req: &ModelRequest) -> Result<ModelResponse, ModelError> {
        self.log.lock().unwrap().push(req.clone());
        self.queue
            .lock()
            .unwrap()
            .pop_front()
            .ok_or(ModelError::ReplayExhausted)
    }
}

fn pair_ir() -> Ir {
    let mut ir = Ir::default();
    for (id, ws, rules) in [
        (
            "price-watch",
            WakeSource::SelfWake,
            Arc::new(TopKeyRules {
                facets: vec!["prices".into()],
            }) as Arc<dyn reactor::core::NodeRules>,
        ),
        ("price-brief", WakeSource::Input, Arc::new(AtomicRules)),
    ] {
        ir.topology.nodes.push(TopologyNode {
            node: id.into(),
            contract_fingerprint: Some(format!("contract:{id}")),
            wake_source: Some(ws),
        });
        ir.nodes.insert(
            id.into(),
            NodeIr {
                id: id.into(),
                contract_fingerprint: format!("contract:{id}"),
                wake_source: ws,
                rules,
            },
        );
    }
    ir.topology.edges = vec![Edge::new("price-watch", "price-brief", "prices")];
    ir.topology.acyclic = true;
    ir
}

fn pair_script() -> Vec<ModelResponse> {
    let truth = r#"{"prices":[{"vendor":"a","price":3}],"checked":"today"}"#;
    vec![
        turn(
            vec![call(
                "w1",
                "ws_write",
                json!({"path": "truth.json", "content": truth, "encoding": null}),
            )],
            usage(1000, 800, 50),
        ),
        turn(
            vec![call(
                "f1",
                "finish",
                json!({"status": "done", "reason": null,
                       "semantic_diff": {"summary": "one price", "notes": null},
                       "attestations": {"own-page": true}}),
            )],
            usage(1100, 1000, 20),
        ),
        turn(
            vec![call(
                "r1",
                "wm_read_upstream",
                json!({"producer": "price-watch", "path": "truth.json", "offset": null}),
            )],
            usage(500, 0, 10),
        ),
        turn(
            vec![
                call(
                    "w2",
                    "ws_write",
                    json!({"path": "brief.md", "content": "a: 3\n", "encoding": null}),
                ),
                call("f2", "finish", finish_done()),
            ],
            usage(600, 500, 30),
        ),
    ]
}

fn run_pair(state: &Path, work: &Path, client: Arc<dyn ModelClient>) -> Reactor {
    let mut s = settings(work);
    s.max_turns = 5;
    let render = Arc::new(real_agent(client, &s));
    let (r, _) = Reactor::open(state, pair_ir(), render, ReactorOptions::default()).unwrap();
    let results = r
        .ingest("price-watch", Wake::new(WakeSource::External))
        .unwrap();
    let got: Vec<(String, Disposition)> = results
        .iter()
        .map(|x| (x.node.clone(), x.disposition))
        .collect();
    assert_eq!(
        got,
        [
            ("price-watch".to_string(), Disposition::Rendered),
            ("price-brief".to_string(), Disposition::Rendered)
        ],
        "{:?}",
        results.iter().map(|x| x.reason.clone()).collect::<Vec<_>>()
    );
    r
}

#[test]
fn reconciler_commits_agent_renders_and_replay_is_deterministic() {
    let work = tempfile::tempdir().unwrap();
    let state1 = tempfile::tempdir().unwrap();
    let script = Arc::new(ScriptClient {
        queue: Mutex::new(pair_script().into()),
        log: Mutex::new(Vec::new()),
    });
    let r1 = run_pair(state1.path(), work.path(), script.clone());
    let requests = script.log.lock().unwrap().clone();
    assert_eq!(requests.len(), 4);
    let watch = r1.last_receipt("price-watch").unwrap();
    assert_eq!(watch.status, Status::Rendered);
    assert_eq!(watch.cost.provider, "openrouter");
    assert_eq!(watch.cost.model, "render-model");
    // (200 + 50) + (100 + 20) fresh; 800 + 1000 reused.
    assert_eq!((watch.cost.fresh, watch.cost.reused), (370, 1800));
    assert_eq!(watch.cost.surprise_cause, WakeSource::External);
    assert_eq!(
        js::compact_string(&js::Value::Object(watch.semantic_diff.clone())),
        r#"{"summary":"one price"}"#
    );
    let brief = r1.last_receipt("price-brief").unwrap();
    assert_eq!((brief.cost.fresh, brief.cost.reused), (510 + 130, 500));
    assert_eq!(brief.wake.source, WakeSource::Input);
    assert!(brief.semantic_diff.is_empty());
    // The brief's wake header names the producer receipt that woke it and the input slot.
    assert_eq!(requests[2].purpose, "render:price-brief");
    assert!(
        requests[2].system[2].contains(&format!("`{}`", watch.content_hash)),
        "{}",
        requests[2].system[2]
    );
    assert!(requests[2].system[2].contains("`price-watch` · `prices` → `sha256:"));
    // The upstream read returned the committed truth.
    let Message::Tool {
        content, is_error, ..
    } = &requests[3].messages[2]
    else {
        panic!("expected a tool result: {:?}", requests[3].messages);
    };
    assert!(!is_error);
    assert!(content.contains(r#"\"vendor\":\"a\""#), "{content}");
    assert_eq!(
        r1.store().published_files("price-brief"),
        vec![file("brief.md", "a: 3\n")]
    );
    assert_eq!(r1.store().published_files("price-watch").len(), 1);
    // Replay the logged exchanges on a fresh state directory: identical receipts.
    let recs: Vec<ModelRecord> = requests
        .into_iter()
        .zip(pair_script())
        .enumerate()
        .map(|(i, (request, response))| ModelRecord {
            id: json!(i + 1),
            request,
            response,
        })
        .collect();
    let replay = Arc::new(ReplayClient::new(recs));
    let state2 = tempfile::tempdir().unwrap();
    let _r2 = run_pair(state2.path(), work.path(), replay.clone());
    assert_eq!(replay.remaining(), 0);
    assert_eq!(
        std::fs::read(state1.path().join("receipts.json")).unwrap(),
        std::fs::read(state2.path().join("receipts.json")).unwrap()
    );
    assert!(
        files_under(work.path()).is_empty(),
        "working directories are removed"
    );
}
