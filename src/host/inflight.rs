//! Renders in flight as the host shows them (issue 10): the `inFlight` member of `GET /status`,
//! and `<state-dir>/in-flight.json`, which every writer (`run`, `trigger`, `serve`) keeps while
//! a drain renders so that `reactor status` — an offline verb, which opens no network
//! connection — can show them.
//!
//! Both list the renders in the drain's commit order (height, then node id). In `/status`, an
//! element is `{"node", "elapsedMs", "awaitingCommit"}`; in the file, `{"node", "startedAt",
//! "awaitingCommit"}` with `startedAt` an ISO-8601 UTC instant with milliseconds. The file is
//! `{"pid": <writer pid>, "inFlight": [...]}` in compact JSON plus `\n`, replaced (temp file +
//! rename, no fsync: it is advisory and never read back by a writer) whenever the list changes,
//! and removed when the list empties and when the writer takes the lock. A reader trusts it only
//! while `.lock` names the same, live pid. `awaitingCommit` is true once the render returned and
//! its receipt waits for an earlier node of the drain.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::core::{InFlight, Reactor};

/// The file name inside the state directory.
pub(crate) const IN_FLIGHT_FILE: &str = "in-flight.json";

/// One render in flight (the `inFlight` element of `GET /status`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InFlightJson {
    /// The node id.
    pub node: String,
    /// Milliseconds since its render started.
    pub(crate) elapsed_ms: u64,
    /// The render returned; its receipt waits for its turn in the commit order.
    pub awaiting_commit: bool,
}

/// The renders in flight of a reactor, in its drain's commit order.
pub(crate) fn in_flight_json(r: &Reactor) -> Vec<InFlightJson> {
    r.in_flight()
        .into_iter()
        .map(|f| InFlightJson {
            elapsed_ms: millis(f.since.elapsed()),
            node: f.node,
            awaiting_commit: f.awaiting_commit,
        })
        .collect()
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// One element of `in-flight.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedRender {
    /// The node id.
    pub node: String,
    /// When the render started: `YYYY-MM-DDTHH:MM:SS.mmmZ`.
    pub started_at: String,
    /// The render returned; its receipt waits for its turn in the commit order.
    pub awaiting_commit: bool,
}

/// `in-flight.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InFlightRecord {
    /// The writer's pid.
    pub pid: u32,
    /// The renders, in commit order.
    pub in_flight: Vec<RecordedRender>,
}

fn iso(t: SystemTime) -> String {
    jiff::Timestamp::try_from(t)
        .map(crate::compile::cache::iso_millis)
        .unwrap_or_default()
}

/// Keeps `<state_dir>/in-flight.json` in step with `reactor`'s renders in flight (the caller
/// holds the state-dir lock). Removes a file a previous writer left behind first.
pub(crate) fn record_in_flight(reactor: &Reactor) {
    let path: PathBuf = reactor.state_dir().join(IN_FLIGHT_FILE);
    let _ = std::fs::remove_file(&path);
    let pid = std::process::id();
    reactor.on_in_flight(move |list: &[InFlight]| {
        if list.is_empty() {
            let _ = std::fs::remove_file(&path);
            return;
        }
        let now = SystemTime::now();
        let record = InFlightRecord {
            pid,
            in_flight: list
                .iter()
                .map(|f| RecordedRender {
                    node: f.node.clone(),
                    started_at: iso(now.checked_sub(f.since.elapsed()).unwrap_or(now)),
                    awaiting_commit: f.awaiting_commit,
                })
                .collect(),
        };
        let mut bytes = crate::format::json::to_js_compact(&record);
        bytes.push(b'\n');
        // Advisory: a failed write only leaves `status` without the line.
        let _ = crate::store::fsutil::write_atomic_deferred(&path, &bytes);
    });
}

/// Removes `<state_dir>/in-flight.json` (a writer's clean exit).
#[cfg(test)]
pub(crate) fn remove_record(state_dir: &Path) {
    let _ = std::fs::remove_file(state_dir.join(IN_FLIGHT_FILE));
}

/// The renders in flight of the live writer `pid` (from `.lock`), read from `in-flight.json`:
/// empty when the file is absent, unreadable, malformed or written by another process.
pub(crate) fn read_record(state_dir: &Path, pid: u32) -> Vec<RecordedRender> {
    std::fs::read(state_dir.join(IN_FLIGHT_FILE))
        .ok()
        .and_then(|b| serde_json::from_slice::<InFlightRecord>(&b).ok())
        .filter(|r| r.pid == pid)
        .map(|r| r.in_flight)
        .unwrap_or_default()
}

/// `none`, or `<n> render(s): a (since 18:00:05), b (since 18:00:07, awaiting commit)`
/// (the UTC time of day of `startedAt`).
pub fn describe(list: &[RecordedRender]) -> String {
    if list.is_empty() {
        return "none".into();
    }
    let items: Vec<String> = list
        .iter()
        .map(|f| {
            let time = f
                .started_at
                .get(11..19)
                .filter(|_| f.started_at.is_char_boundary(11) && f.started_at.len() >= 19)
                .unwrap_or(&f.started_at);
            if f.awaiting_commit {
                format!("{} (since {time}, awaiting commit)", f.node)
            } else {
                format!("{} (since {time})", f.node)
            }
        })
        .collect();
    let noun = if list.len() == 1 { "render" } else { "renders" };
    format!("{} {noun}: {}", list.len(), items.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(node: &str, at: &str, waiting: bool) -> RecordedRender {
        RecordedRender {
            node: node.into(),
            started_at: at.into(),
            awaiting_commit: waiting,
        }
    }

    #[test]
    fn describe_lists_in_order() {
        assert_eq!(describe(&[]), "none");
        let list = [
            rec("a", "2026-06-02T18:00:05.120Z", false),
            rec("b", "2026-06-02T18:00:07.000Z", true),
        ];
        assert_eq!(
            describe(&list),
            "2 renders: a (since 18:00:05), b (since 18:00:07, awaiting commit)"
        );
        assert_eq!(describe(&list[..1]), "1 render: a (since 18:00:05)");
        assert_eq!(describe(&[rec("x", "é", false)]), "1 render: x (since é)");
    }

    #[test]
    fn a_record_is_trusted_only_for_its_pid_and_when_well_formed() {
        let d = tempfile::tempdir().unwrap();
        assert!(read_record(d.path(), 7).is_empty());
        let p = d.path().join(IN_FLIGHT_FILE);
        std::fs::write(
            &p,
            r#"{"inFlight":[{"awaitingCommit":false,"node":"a","startedAt":"2026-06-02T18:00:05.120Z"}],"pid":7}"#,
        )
        .unwrap();
        assert_eq!(
            read_record(d.path(), 7),
            vec![rec("a", "2026-06-02T18:00:05.120Z", false)]
        );
        assert!(read_record(d.path(), 8).is_empty());
        for bad in [
            "",
            "[]",
            "{\"pid\":7}",
            "{\"pid\":7,\"inFlight\":[{\"node\":1}]}",
            "{\"pid\":-7,\"inFlight\":[]}",
            "\u{0}\u{1}",
        ] {
            std::fs::write(&p, bad).unwrap();
            assert!(read_record(d.path(), 7).is_empty(), "{bad:?}");
        }
        remove_record(d.path());
        assert!(!p.exists());
        remove_record(d.path());
    }
}
