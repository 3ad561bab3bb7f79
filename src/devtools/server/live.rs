//! The viewer's state behind the routes and its live follow (VIEWER.md §6.6): the opened
//! state directory, the replay session, the cached snapshot, and one poll of the watched files.

use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;

use crate::devtools::pages::{PageSource, SnapshotView};
use crate::format::json::{self, Value};
use crate::http::{SseEvent, SseHub};
use crate::replay::ledger::{LedgerReadError, read_growth, read_ledger_file};
use crate::replay::open::{OpenedStateDir, project_receipt};
use crate::replay::open_stream::{Served, serve_state_dir};
use crate::replay::raw::{RawStore, RawText};
use crate::replay::snapshot::{
    LabelMap, ReplaySession, ReplaySnapshot, snapshot_from_session, snapshot_head,
};
use crate::replay::why::WhySlots;

/// The served state: the opened directory without its receipts (they are in `raw`: ranges of
/// the ledger file, or text), the session with every frame, and the serialized snapshot once asked for.
pub(super) struct Live {
    pub(super) opened: OpenedStateDir,
    pub(super) raw: RawStore,
    pub(super) session: ReplaySession,
    /// The body of `GET /api/state`, built on the first request after a change.
    pub(super) cache: Option<Arc<Vec<u8>>>,
    /// Input slots of the topology (frame causes).
    slots: WhySlots,
    /// (len, mtime, inode) of receipts.json, topology, labels, beats at the last read.
    pub(super) stamps: Vec<Option<(u64, std::time::SystemTime, u64)>>,
}

impl Live {
    pub(super) fn new(served: Served) -> Live {
        let Served {
            opened,
            raw,
            session,
        } = served;
        let stamps = stamps(&opened);
        Live {
            slots: WhySlots::new(opened.topology.as_ref()),
            raw,
            opened,
            session,
            cache: None,
            stamps,
        }
    }

    /// The paged-frame view of this state ([`crate::devtools::pages`]).
    pub(super) fn pages(&self) -> PageSource<'_> {
        PageSource {
            opened: &self.opened,
            session: &self.session,
            slots: &self.slots,
            raw: &self.raw,
        }
    }

    /// The snapshot (built on demand; the server keeps only its serialized form).
    pub(super) fn snapshot(&self) -> ReplaySnapshot {
        snapshot_from_session(&self.opened, &self.session)
    }

    /// The body of `GET /api/state`: the snapshot serialized straight from the session, once
    /// per change.
    pub(super) fn state_bytes(&mut self) -> Arc<Vec<u8>> {
        if let Some(c) = &self.cache {
            return c.clone();
        }
        let head = snapshot_head(&self.opened, &self.session);
        let view = SnapshotView::new(&head, &self.session.frames, None);
        let bytes = Arc::new(json::to_js_compact(&view));
        self.cache = Some(bytes.clone());
        bytes
    }

    fn label(&self) -> impl Fn(&str) -> String + '_ {
        let labels = LabelMap::new(&self.opened.labels, !self.opened.labels.is_empty());
        move |id: &str| labels.label(id)
    }

    pub(super) fn summary_event(&self) -> SseEvent {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Summary<'a> {
            frames: usize,
            cost_rollup: &'a crate::replay::snapshot::CostRollupView,
            chain_verify: crate::replay::snapshot::ChainVerifyView,
        }
        let label = self.label();
        let s = Summary {
            frames: self.session.frames.len(),
            cost_rollup: &self.session.rollup,
            chain_verify: self.session.chain_verify(&label),
        };
        SseEvent::named(
            "summary",
            &String::from_utf8_lossy(&json::to_js_compact(&s)),
        )
    }

    pub(super) fn frame_event(&self, i: usize) -> SseEvent {
        let data = json::to_js_compact(&self.session.frames[i]);
        SseEvent::new(
            Some("frame"),
            Some(&i.to_string()),
            &String::from_utf8_lossy(&data),
        )
    }
}

const WATCHED: [&str; 4] = [
    "receipts.json",
    "compile/topology.json",
    "compile/labels.json",
    "beats.json",
];

fn stamps(opened: &OpenedStateDir) -> Vec<Option<(u64, std::time::SystemTime, u64)>> {
    use std::os::unix::fs::MetadataExt;
    let Some(root) = opened.source.disk_root() else {
        return vec![None; WATCHED.len()];
    };
    WATCHED
        .iter()
        .map(|rel| {
            std::fs::metadata(root.join(rel)).ok().map(|m| {
                (
                    m.len(),
                    m.modified().unwrap_or(std::time::UNIX_EPOCH),
                    m.ino(),
                )
            })
        })
        .collect()
}

pub(super) struct Shared {
    pub(super) live: Mutex<Live>,
    pub(super) hub: SseHub,
    pub(super) live_enabled: bool,
    /// The body of `GET /api/ledger` (fixed for the server's lifetime).
    pub(super) ledger: Vec<u8>,
}

/// The body of `GET /api/ledger` (project): which ledger this viewer shows, so the SPA can name
/// it (title, top bar, a "synthetic sample" banner) without changing a byte of `/api/state`.
/// JSON, key order as listed: `{"stateDir": string, "path": string|null, "example": string|null,
/// "synthetic": boolean}` — `stateDir` as in the snapshot (VIEWER.md §4.1: the directory as given
/// or `example:<name>`), `path` the canonical absolute directory (null for a bundled example, the
/// given path when it cannot be canonicalized), `example` the bundled fixture's name (§2.7).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LedgerInfo {
    state_dir: String,
    path: Option<String>,
    example: Option<String>,
    synthetic: bool,
}

pub(super) fn ledger_info(opened: &OpenedStateDir) -> Vec<u8> {
    let example = if opened.synthetic {
        opened
            .state_dir
            .strip_prefix("example:")
            .map(str::to_string)
    } else {
        None
    };
    let path = opened.source.disk_root().map(|p| {
        std::fs::canonicalize(p)
            .unwrap_or_else(|_| p.to_path_buf())
            .to_string_lossy()
            .into_owned()
    });
    json::to_js_compact(&LedgerInfo {
        state_dir: opened.state_dir.clone(),
        path,
        example,
        synthetic: opened.synthetic,
    })
}

pub(super) fn lock(m: &Mutex<Live>) -> MutexGuard<'_, Live> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One live-follow poll (VIEWER.md §6.6).
pub(super) fn poll_once(shared: &Shared) {
    let mut live = lock(&shared.live);
    let now = stamps(&live.opened);
    if now == live.stamps {
        return;
    }
    let Some(root) = live.opened.source.disk_root().map(|p| p.to_path_buf()) else {
        return;
    };
    let aux_changed = now[1..] != live.stamps[1..];
    let reset = |live: &mut MutexGuard<'_, Live>, reason: &str| {
        let state_dir = live.opened.state_dir.clone();
        let opts = live.opened.options;
        match serve_state_dir(&root, &opts) {
            Ok(mut o) => {
                o.opened.state_dir = state_dir;
                **live = Live::new(o);
                let frames = live.session.frames.len();
                let data = format!(
                    "{{\"reason\":{},\"frames\":{frames}}}",
                    json::compact_string(&Value::str(reason))
                );
                shared.hub.broadcast(&SseEvent::named("reset", &data));
            }
            Err(_) => {
                // Keep the last good snapshot; retry on the next poll.
            }
        }
    };
    if aux_changed {
        let which = WATCHED[1..]
            .iter()
            .zip(now[1..].iter().zip(&live.stamps[1..]))
            .find(|(_, (a, b))| a != b)
            .map(|(n, _)| *n)
            .unwrap_or("compile/topology.json");
        reset(&mut live, &format!("{which} changed"));
        return;
    }
    let known = live.raw.len();
    let same_inode = now[0].map(|s| s.2) == live.stamps[0].map(|s| s.2);
    let grew = now[0].map(|s| s.0).unwrap_or(0) >= live.stamps[0].map(|s| s.0).unwrap_or(0);
    let path = root.join(crate::format::layout::RECEIPTS_FILE);
    let growing = same_inode && grew && now[0].is_some() && known > 0;
    let (new, end): (Vec<Value>, usize) = match live.opened.ledger_identity {
        Some(identity) if growing => {
            // Appended in place: parse only the bytes after the known complete prefix, up to
            // one snapshot length (the one reader, replay::ledger).
            match read_growth(&path, identity, live.opened.end_of_complete, true) {
                Ok(Some(g)) => (g.receipts, g.end_of_complete),
                // Replaced or gone since: the next poll sees the new file.
                Ok(None) => return,
                Err(LedgerReadError::Content(_)) => {
                    reset(&mut live, "receipts.json was rewritten");
                    return;
                }
                Err(LedgerReadError::Io { .. }) => return,
            }
        }
        _ => {
            // Replaced or shrunk (the reference rewrites the whole file): re-read and check that
            // the known receipts are still a prefix.
            let Ok(read) = read_ledger_file(&path) else {
                return;
            };
            if read.receipts.len() < known {
                reset(&mut live, "receipts.json was rewritten");
                return;
            }
            let hashes = crate::replay::open::recompute_all(&read.receipts[..known]);
            let same = hashes
                .iter()
                .zip(&live.session.frames)
                .all(|(h, f)| h.as_deref().unwrap_or_default() == f.content_hash);
            if !same {
                reset(&mut live, "receipts.json was rewritten");
                return;
            }
            live.opened.ledger_identity = read.identity;
            let end = read.end_of_complete;
            let mut all = read.receipts;
            (all.split_off(known), end)
        }
    };
    let mut projected = Vec::with_capacity(new.len());
    for v in &new {
        match project_receipt(v) {
            Ok(p) => projected.push(p),
            Err(_) => return, // keep the last good snapshot; retry later
        }
    }
    if live.opened.topology.is_none() && projected.iter().any(|p| !live.session.has_chain(&p.node))
    {
        reset(&mut live, "a new node appeared (node-only fallback)");
        return;
    }
    let hashes = crate::replay::open::recompute_all(&new);
    let mut events = Vec::with_capacity(new.len() + 1);
    for ((v, p), h) in new.into_iter().zip(projected).zip(hashes) {
        live.session.push(&v, &p, &h);
        live.raw.push(RawText::of(&v));
        let i = live.session.frames.len() - 1;
        events.push(live.frame_event(i));
    }
    live.opened.end_of_complete = end;
    live.stamps = now;
    live.cache = None;
    if !events.is_empty() {
        events.push(live.summary_event());
        shared.hub.broadcast_all(&events);
    }
}
