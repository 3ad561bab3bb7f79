//! Record/replay (RUNTIME.md §13.2), the fake provider itself, and the transport chosen by the
//! provider label.

use super::*;

// ---------------------------------------------------------------------------------------------
// Record / replay
// ---------------------------------------------------------------------------------------------

#[test]
fn record_then_replay_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("records.json");
    let fake = FakeProvider::with_entries([
        fake::chat_tool_calls(&[("wm_read", json!({"path": "a", "offset": null}))]).with_usage(
            FakeUsage {
                input: 40,
                output: 4,
                cached: 10,
                cache_write: 0,
            },
        ),
        fake::chat_json(&json!({"nodes": ["a"]})),
    ]);
    let recorder = RecordingClient::new(chat_client(&fake), &path);
    let render = render_request();
    let compile = compile_request();
    let live1 = recorder.complete(&render).unwrap();
    let live2 = recorder.complete(&compile).unwrap();
    fake.finish();

    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.ends_with('\n'));
    let file = parse_record_file(&text).unwrap();
    assert_eq!(file.format, RECORD_FORMAT);
    assert_eq!(file.records.len(), 2);
    assert_eq!(file.records[0].id, json!(1));
    assert_eq!(recorder.records(), file.records);

    let replay = ReplayClient::load(&path).unwrap();
    assert_eq!(replay.remaining(), 2);
    assert_eq!(replay.complete(&render).unwrap(), live1);
    // A mismatch names the record and the first differing path, and consumes nothing.
    let mut other = compile.clone();
    other.messages[1] = Message::user("A DIFFERENT TASK");
    let err = replay.complete(&other).unwrap_err();
    assert_eq!(
        err.to_string(),
        "request mismatch at record 2: first difference at $.messages[1].text: expected \"TASK\", got \"A DIFFERENT TASK\""
    );
    let mut other = compile.clone();
    other.temperature = Some(0.5);
    assert_eq!(
        replay.complete(&other).unwrap_err().to_string(),
        "request mismatch at record 2: first difference at $.temperature: expected nothing, got 0.5"
    );
    assert_eq!(replay.remaining(), 1);
    assert_eq!(replay.complete(&compile).unwrap(), live2);
    assert_eq!(replay.remaining(), 0);
    assert_eq!(
        replay.complete(&compile).unwrap_err().to_string(),
        "no remaining records"
    );
    assert_eq!(replay.calls().len(), 5);
    assert_eq!(
        live1.usage.tokens(),
        TokenCost {
            fresh: 34,
            reused: 10
        }
    );
}

#[test]
fn recording_skips_failed_calls() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rec.json");
    let fake = FakeProvider::with_entries([fake::error_401(Protocol::Chat), fake::chat_text("ok")]);
    let recorder = RecordingClient::new(chat_client(&fake), &path);
    assert!(recorder.complete(&render_request()).is_err());
    assert!(!path.exists());
    recorder.complete(&render_request()).unwrap();
    let file = parse_record_file(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(file.records.len(), 1);
    assert!(!std::fs::read_to_string(&path).unwrap().contains(CANARY));
    fake.finish();
}

// ---------------------------------------------------------------------------------------------
// The fake itself
// ---------------------------------------------------------------------------------------------

#[test]
fn fake_reports_unmatched_requests_and_unconsumed_entries() {
    let fake = FakeProvider::with_entries([fake::messages_text("never").when_purpose("render:z")]);
    let client = ProviderClient::new(
        config("openrouter", &fake.base_url()),
        ApiKey::new(CANARY),
        HttpSettings {
            max_attempts: 1,
            ..fast_settings()
        },
    );
    let err = client.complete(&render_request()).unwrap_err();
    // The fake's 500 carries an explanatory message (visible through the rejected hint path
    // only for 4xx; a 500 reports unavailability).
    assert_eq!(
        err.to_string(),
        "openrouter unavailable (HTTP 500) after 1 attempt"
    );
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].matched, None);
    let problems = fake.verify().unwrap_err();
    assert!(
        problems.contains("unmatched request POST /v1/chat/completions"),
        "{problems}"
    );
    assert!(
        problems.contains("unconsumed entry 'messages text'"),
        "{problems}"
    );
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fake.finish()));
    assert!(result.is_err(), "finish() must fail on leftovers");
}

#[test]
fn transport_follows_the_provider_label() {
    let c = config("anthropic", "http://127.0.0.1:1/v1/");
    assert_eq!(c.transport, Transport::Messages);
    assert_eq!(c.endpoint(), "http://127.0.0.1:1/v1/messages");
    let c = config("openrouter", "http://127.0.0.1:1/v1");
    assert_eq!(c.endpoint(), "http://127.0.0.1:1/v1/chat/completions");
}
