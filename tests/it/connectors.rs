//! The `http` gateway connector against a loopback server (RUNTIME.md §9.4, HOST.md §4.3):
//! JSON arrays, `{as_of}` substitution, `${NAME}` headers, non-2xx failures, bodies that are
//! not JSON, and the timeout.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use reactor::host::connectors::{Connector, ConnectorKind, FetchError};

/// Request URL and headers, as the server saw them.
type Seen = Arc<Mutex<Vec<(String, Vec<(String, String)>)>>>;

/// Serves one canned answer per request and records the URL and headers it saw.
fn server(status: u16, body: &'static str, delay: Duration) -> (String, Seen) {
    let s = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let addr = s.server_addr().to_ip().unwrap().to_string();
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for rq in s.incoming_requests() {
            let headers = rq
                .headers()
                .iter()
                .map(|h| (h.field.to_string(), h.value.to_string()))
                .collect();
            log.lock().unwrap().push((rq.url().to_string(), headers));
            std::thread::sleep(delay);
            let _ = rq.respond(tiny_http::Response::from_string(body).with_status_code(status));
        }
    });
    (format!("http://{addr}"), seen)
}

fn http(url: String, headers: Vec<(String, String)>, timeout: Duration) -> Connector {
    Connector {
        kind: ConnectorKind::Http {
            url,
            headers,
            connect_timeout: Duration::from_secs(2),
            timeout,
        },
        id_field: "id".into(),
    }
}

#[test]
fn fetches_arrays_with_substitution_and_headers() {
    let (base, seen) = server(200, r#"[{"id":"a"},{"id":"b"}]"#, Duration::ZERO);
    // `${NAME}` names an environment variable that every test process has.
    let c = http(
        format!("{base}/items?since={{as_of}}"),
        vec![
            ("X-Home".into(), "${HOME}".into()),
            ("X-Plain".into(), "v".into()),
        ],
        Duration::from_secs(5),
    );
    let (els, warnings) = c.fetch("2026-06-02T18:00:00.000Z").unwrap();
    assert_eq!(els.len(), 2);
    assert!(warnings.is_empty());
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0].0, "/items?since=2026-06-02T18%3A00%3A00.000Z");
    let h = |n: &str| {
        seen[0]
            .1
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(n))
            .map(|(_, v)| v.clone())
    };
    assert_eq!(h("x-home"), std::env::var("HOME").ok());
    assert_eq!(h("x-plain").as_deref(), Some("v"));
}

#[test]
fn failures_are_clear() {
    let (base, _) = server(503, "down", Duration::ZERO);
    let e = http(format!("{base}/x"), vec![], Duration::from_secs(5))
        .fetch("t")
        .unwrap_err();
    assert_eq!(
        e,
        FetchError::Failed(format!("connector(http): GET {base}/x → 503"))
    );
    let (base, _) = server(200, "{not json", Duration::ZERO);
    let e = http(format!("{base}/x"), vec![], Duration::from_secs(5))
        .fetch("t")
        .unwrap_err();
    assert!(e.to_string().contains("the body is not JSON"), "{e}");
    let (base, _) = server(200, r#"{"id":"not an array"}"#, Duration::ZERO);
    let (els, warnings) = http(format!("{base}/x"), vec![], Duration::from_secs(5))
        .fetch("t")
        .unwrap();
    assert!(els.is_empty());
    assert_eq!(warnings.len(), 1);
    let (base, _) = server(200, "[]", Duration::from_secs(3));
    let t = std::time::Instant::now();
    let e = http(format!("{base}/x"), vec![], Duration::from_millis(300))
        .fetch("t")
        .unwrap_err();
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "the timeout was not applied"
    );
    assert!(e.to_string().starts_with("connector(http): GET"), "{e}");
}
