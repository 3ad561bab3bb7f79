//! Parallel renders and the outside world (issue 10 item 4): agent renders running at once
//! never share a working directory, concurrent `shell_exec`s get distinct container names, and
//! a 429 holds every request of the provider client.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reactor::core::{Disposition, Reactor, ReactorOptions};

use crate::parallel::{IDS, small_ir, wait_until};
use reactor::agent::prompt::NodeBrief;
use reactor::agent::sandbox::{DockerRunner, SandboxRunner};
use reactor::agent::{AgentRender, RenderSettings};
use reactor::model::{
    Message, ModelClient, ModelError, ModelRequest, ModelResponse, ToolArguments, ToolCall, Usage,
};
use serde_json::json;
use std::collections::HashMap;

/// A model that, for `render:<node>`, writes `owner.txt` = node, lists the workspace, reads
/// the file back and finishes; it records every listing or read that shows another node's
/// files. Each answer takes 20 ms so that the renders overlap.
struct OwnerModel {
    violations: Mutex<Vec<String>>,
}

fn call(id: &str, name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: ToolArguments::Json(args),
    }
}

impl ModelClient for OwnerModel {
    fn complete(&self, req: &ModelRequest) -> Result<ModelResponse, ModelError> {
        std::thread::sleep(Duration::from_millis(20));
        let node = req
            .purpose
            .strip_prefix("render:")
            .unwrap_or("")
            .to_string();
        let results: Vec<String> = req
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::Tool { content, .. } => Some(content.clone()),
                _ => None,
            })
            .collect();
        for r in &results {
            for other in IDS {
                if other != node && r.contains(&format!("owner of {other};")) {
                    self.violations
                        .lock()
                        .unwrap()
                        .push(format!("{node} saw {other}: {r}"));
                }
            }
        }
        let calls = match results.len() {
            0 => vec![call(
                "w",
                "ws_write",
                json!({"path": "owner.txt", "content": format!("owner of {node};"), "encoding": null}),
            )],
            1 => vec![call("l", "ws_list", json!({}))],
            2 => vec![call(
                "r",
                "ws_read",
                json!({"path": "owner.txt", "offset": null}),
            )],
            _ => vec![call(
                "f",
                "finish",
                json!({"status": "done", "reason": null, "semantic_diff": null}),
            )],
        };
        Ok(ModelResponse {
            text: None,
            tool_calls: calls,
            usage: Usage {
                input: 10,
                cached_input: 0,
                cache_write: 0,
                output: 5,
            },
            stop_reason: Some("tool_calls".into()),
        })
    }
}

/// Issue 10 item 4: eight agent renders at once, each in its own working directory.
#[test]
fn parallel_agent_renders_never_share_a_working_directory() {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let ids: Vec<&str> = IDS[..8].to_vec();
    let model = Arc::new(OwnerModel {
        violations: Mutex::new(Vec::new()),
    });
    let mut settings = RenderSettings::new("openrouter", "render-model");
    settings.work_root = work.path().to_path_buf();
    settings.keep_work = false;
    let briefs: HashMap<String, NodeBrief> = ids
        .iter()
        .map(|id| {
            (
                id.to_string(),
                NodeBrief {
                    id: id.to_string(),
                    name: id.to_string(),
                    kind: "responsibility".into(),
                    contract_view: vec![("Maintains".into(), "A file.".into())],
                    ..NodeBrief::default()
                },
            )
        })
        .collect();
    let render = AgentRender::new(model.clone(), settings, "SYSTEM", briefs);
    let mut ir = small_ir(&ids, &[]);
    for n in ir.nodes.values_mut() {
        n.rules = Arc::new(reactor::core::ir::AtomicRules);
    }
    let (r, _) = Reactor::open(
        state.path(),
        ir,
        Arc::new(render),
        ReactorOptions {
            parallel_renders: 8,
            ..ReactorOptions::default()
        },
    )
    .unwrap();
    let t = Instant::now();
    let results = r.boot().unwrap();
    let took = t.elapsed();
    assert!(
        results
            .iter()
            .all(|x| x.disposition == Disposition::Rendered),
        "{:?}",
        results.iter().map(|x| &x.reason).collect::<Vec<_>>()
    );
    assert_eq!(
        model.violations.lock().unwrap().clone(),
        Vec::<String>::new()
    );
    for id in &ids {
        assert_eq!(
            r.store().published_files(id),
            vec![(
                "owner.txt".to_string(),
                format!("owner of {id};").into_bytes()
            )],
            "{id}"
        );
    }
    eprintln!("8 agent renders of 4 turns × 20 ms took {took:?} with parallel_renders 8");
}

/// Issue 10 item 4: container names stay unique under concurrent `shell_exec`s (a stand-in
/// `docker` executable records the `--name` of every run).
#[cfg(unix)]
#[test]
fn concurrent_sandbox_runs_get_distinct_container_names() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("names.log");
    let docker = d.path().join("docker");
    std::fs::write(
        &docker,
        format!("#!/bin/sh\necho \"$4\" >> '{}'\n", log.display()),
    )
    .unwrap();
    std::fs::set_permissions(&docker, std::fs::Permissions::from_mode(0o755)).unwrap();
    let runner = Arc::new(DockerRunner::new("img", "none").with_executable(&docker));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let runner = runner.clone();
            let cwd = d.path().to_path_buf();
            std::thread::spawn(move || {
                for _ in 0..10 {
                    runner.exec("true", &cwd, Duration::from_secs(20)).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let names: Vec<&str> = text.lines().collect();
    assert_eq!(names.len(), 80);
    let distinct: std::collections::HashSet<&str> = names.iter().copied().collect();
    assert_eq!(distinct.len(), 80, "a container name repeated: {names:?}");
    assert!(
        names
            .iter()
            .all(|n| n.starts_with(&format!("reactor-sandbox-{}-", std::process::id())))
    );
}

/// Issue 10 item 4: one 429 with `Retry-After: 1` holds every request of the client — the
/// renders beside the refused one send nothing until the hold ends — then all succeed.
#[test]
fn a_429_holds_every_request_of_the_provider_client() {
    use crate::support::fake_provider::{self as fake, FakeProvider, Protocol};
    use reactor::model::{ApiKey, HttpSettings, ProviderClient, ProviderConfig, ProviderSettings};
    let fake = FakeProvider::with_entries([
        fake::error_429(Protocol::Chat, Some("1")).when_purpose("render:first"),
        fake::chat_text("ok").when_purpose("render:first"),
        fake::chat_text("ok").when_purpose("render:second"),
        fake::chat_text("ok").when_purpose("render:third"),
    ]);
    let config = ProviderConfig::resolve(&ProviderSettings {
        provider: Some("openrouter".into()),
        base_url: Some(fake.base_url()),
        api_key_env: Some("FAKE_KEY".into()),
        render_model: Some("render-model".into()),
        compile_model: Some("compile-model".into()),
        ..ProviderSettings::default()
    })
    .unwrap();
    let client = Arc::new(ProviderClient::new(
        config,
        ApiKey::new("sk-test-shared-backoff-0000"),
        HttpSettings {
            backoff_base: Duration::from_millis(1),
            connect_timeout: Duration::from_secs(2),
            attempt_timeout: Duration::from_secs(10),
            ..HttpSettings::default()
        },
    ));
    let send = |purpose: &str| {
        let client = client.clone();
        let req = ModelRequest {
            purpose: purpose.into(),
            model: "render-model".into(),
            messages: vec![Message::user("go")],
            ..ModelRequest::default()
        };
        std::thread::spawn(move || client.complete(&req).map(|r| r.text))
    };
    let first = send("render:first");
    wait_until("the 429 sets the hold", || {
        client.shared_backoff().not_before().is_some()
    });
    let hold = client.shared_backoff().not_before().unwrap();
    let others = [send("render:second"), send("render:third")];
    let check_at = hold - Duration::from_millis(250);
    let now = Instant::now();
    if now < check_at {
        std::thread::sleep(check_at - now);
        assert_eq!(
            fake.request_count(),
            1,
            "a request was sent during the hold"
        );
    } else {
        eprintln!("SKIPPED the in-hold check: the machine was too slow to look in time");
    }
    assert_eq!(first.join().unwrap().unwrap().as_deref(), Some("ok"));
    for o in others {
        assert_eq!(o.join().unwrap().unwrap().as_deref(), Some("ok"));
    }
    assert!(Instant::now() >= hold);
    assert_eq!(fake.request_count(), 4);
    fake.finish();
}
