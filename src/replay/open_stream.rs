//! Reading a state directory for the viewer through the streaming reader
//! ([`crate::replay::stream`]): each receipt is projected (VIEWER.md §3.2), hashed (FORMATS.md
//! §6) and verified (§7.1) on a worker thread ([`check_receipt`]); the caller's thread folds the
//! results in file order into a [`ReplaySession`] (chains, rollup) and, for `--describe`, a
//! [`DescribeTally`] (one compact row per frame) — the receipts themselves are dropped as soon
//! as they are checked.
//!
//! Errors are reported in the order [`crate::replay::open::open_state_dir`] reports them: the
//! ledger's (not an array, corrupt), then the first receipt that cannot be projected, then an
//! invalid topology file.

use std::path::Path;
use std::sync::Arc;

use crate::format::json::{NonFinite, Value};
use crate::format::receipt::{ReceiptCheck, recompute_content_hash};
use crate::format::topology::Topology;
use crate::replay::describe::{DescribeContext, DescribeOptions, DescribeReport};
use crate::replay::describe_rows::DescribeTally;
use crate::replay::open::{
    OpenError, OpenStateDirOptions, OpenedStateDir, ProjectedReceipt, ProjectionError, beats_from,
    is_reactor_state_dir, labels_from, project_receipt, read_topology_from,
};
use crate::replay::raw::{RawStore, RawText};
use crate::replay::snapshot::ReplaySession;
use crate::replay::stream::{Reader, StreamEnd, stream_ledger_from};
use crate::store::source::{DiskSource, StateSource};

/// One receipt, checked: its projection, its recomputed content address, and what its chain
/// needs ([`ReceiptCheck`]).
pub(crate) type Checked = (ProjectedReceipt, Result<String, NonFinite>, ReceiptCheck);

/// The per-receipt work of the viewer (on a worker thread). Errors: the first projection
/// problem (VIEWER.md §3.2); nothing else is computed then.
pub(crate) fn check_receipt(v: &Value) -> Result<Checked, ProjectionError> {
    let p = project_receipt(v)?;
    let recomputed = recompute_content_hash(v);
    let check = ReceiptCheck::of(v, Some(&recomputed));
    Ok((p, recomputed, check))
}

/// The fold of `--describe`: the session without its frames, and the describe rows.
struct DescribeFold {
    session: ReplaySession,
    tally: DescribeTally,
    /// The first receipt that could not be projected (nothing is folded after it).
    failed: Option<(usize, ProjectionError)>,
}

impl DescribeFold {
    fn take(&mut self, index: usize, item: Result<Checked, ProjectionError>) {
        if self.failed.is_some() {
            return;
        }
        match item {
            Ok((p, recomputed, check)) => {
                let frame = self.session.advance(p, &recomputed, check);
                self.tally.add(frame);
            }
            Err(e) => self.failed = Some((index, e)),
        }
    }
}

/// Everything `--describe` reads of a state directory, the receipts folded away.
pub(crate) struct DescribeInput {
    /// `state-dir` as shown.
    pub(crate) state_dir: String,
    /// The usable topology, if any.
    pub(crate) topology: Option<Topology>,
    /// `compile/labels.json`, file order.
    pub(crate) labels: Vec<(String, String)>,
    /// Chains, counts and rollup (no frames kept).
    pub(crate) session: ReplaySession,
    /// The describe rows.
    pub(crate) tally: DescribeTally,
    /// How the ledger snapshot ended (torn tail, zero length).
    pub(crate) end: StreamEnd,
}

impl DescribeInput {
    /// The report to print.
    pub(crate) fn report(&self, opts: &DescribeOptions) -> DescribeReport<'_> {
        let ctx = DescribeContext {
            state_dir: &self.state_dir,
            topology: self.topology.as_ref(),
            labels: &self.labels,
        };
        DescribeReport::new(&ctx, &self.session, &self.tally, opts)
    }
}

/// Reads a state directory for `--describe` (VIEWER.md §5) in one streamed pass over its
/// ledger. `state_dir` is the string the report shows.
///
/// Errors: as [`crate::replay::open::open_state_dir`] (the ledger's, then the first receipt
/// that cannot be projected, then an invalid topology file).
pub(crate) fn read_for_describe(
    src: &dyn StateSource,
    state_dir: String,
    opts: &OpenStateDirOptions,
) -> Result<DescribeInput, OpenError> {
    let topology = read_topology_from(src);
    let (fold, end) = {
        let usable = topology.as_ref().ok().and_then(Option::as_ref);
        let digest = |v: Value, _: std::ops::Range<usize>| check_receipt(&v);
        let mut start = || DescribeFold {
            session: ReplaySession::new(usable, opts.fresh_rate, opts.reused_rate),
            tally: DescribeTally::default(),
            failed: None,
        };
        let mut fold = |f: &mut DescribeFold, i: usize, item| f.take(i, item);
        stream_ledger_from(src, &mut Reader::new(&digest, &mut start, &mut fold))?
    };
    if let Some((index, e)) = fold.failed {
        return Err(OpenError::ReceiptProjection {
            index,
            problem: e.to_string(),
        });
    }
    Ok(DescribeInput {
        state_dir,
        topology: topology?,
        labels: labels_from(src),
        session: fold.session,
        tally: fold.tally,
        end,
    })
}

/// A state directory as the viewer's server holds it: the opened directory without its
/// receipts (`raw`, `projected` and `recomputed` are empty), the receipts' store (byte ranges
/// in the ledger file, or compact text for an embedded ledger; [`RawStore`]), and the session
/// with every frame.
#[derive(Debug)]
pub(crate) struct Served {
    /// Everything but the receipts.
    pub(crate) opened: OpenedStateDir,
    /// The receipts, read back on demand.
    pub(crate) raw: RawStore,
    /// Frames, chains and rollup.
    pub(crate) session: ReplaySession,
}

/// The fold of the server's open.
struct ServeFold {
    session: ReplaySession,
    raw: RawStore,
    failed: Option<(usize, ProjectionError)>,
}

/// Opens a state directory for the viewer's server (VIEWER.md §3) in one streamed pass: each
/// receipt is checked on a worker (and, for an embedded ledger, written compact), then becomes
/// a frame of the session.
/// `state_dir` is the string the snapshot shows.
///
/// Errors: as [`crate::replay::open::open_state_dir`], in the same order.
pub(crate) fn read_for_serving(
    source: Arc<dyn StateSource>,
    state_dir: String,
    synthetic: bool,
    opts: &OpenStateDirOptions,
) -> Result<Served, OpenError> {
    let src = source.as_ref();
    let topology = read_topology_from(src);
    let (fold, end) = {
        let usable = topology.as_ref().ok().and_then(Option::as_ref);
        // A ledger on disk is read back by range; an embedded one is kept as text.
        let on_disk = src.disk_root().is_some();
        let digest = |v: Value, span: std::ops::Range<usize>| {
            check_receipt(&v).map(|c| {
                let raw = if on_disk {
                    RawText::in_file(&v, span)
                } else {
                    RawText::of(&v)
                };
                (c, raw)
            })
        };
        let mut start = || ServeFold {
            session: ReplaySession::new(usable, opts.fresh_rate, opts.reused_rate),
            raw: RawStore::default(),
            failed: None,
        };
        let mut fold = |f: &mut ServeFold, i: usize, item: Result<(Checked, RawText), _>| {
            if f.failed.is_some() {
                return;
            }
            match item {
                Ok(((p, recomputed, check), text)) => {
                    f.raw.push(text);
                    f.session.push_checked(p, &recomputed, check);
                }
                Err(e) => f.failed = Some((i, e)),
            }
        };
        stream_ledger_from(src, &mut Reader::new(&digest, &mut start, &mut fold))?
    };
    if let Some((index, e)) = fold.failed {
        return Err(OpenError::ReceiptProjection {
            index,
            problem: e.to_string(),
        });
    }
    let topology = topology?;
    let labels = labels_from(src);
    let beats = beats_from(src);
    let opened = OpenedStateDir {
        state_dir,
        source,
        raw: Vec::new(),
        projected: Vec::new(),
        recomputed: Vec::new(),
        topology,
        labels,
        beats,
        synthetic,
        torn: end.torn,
        zero_length: end.zero_length,
        end_of_complete: end.end_of_complete,
        ledger_identity: end.identity,
        options: *opts,
    };
    let mut raw = fold.raw;
    raw.set_file(end.file);
    Ok(Served {
        opened,
        raw,
        session: fold.session,
    })
}

/// [`read_for_serving`] for a directory on disk (`dir` is echoed as given).
///
/// Errors: [`OpenError::NotAStateDir`], then as [`read_for_serving`].
pub(crate) fn serve_state_dir(dir: &Path, opts: &OpenStateDirOptions) -> Result<Served, OpenError> {
    if !is_reactor_state_dir(dir) {
        return Err(OpenError::NotAStateDir(dir.display().to_string()));
    }
    read_for_serving(
        Arc::new(DiskSource::new(dir)),
        dir.display().to_string(),
        false,
        opts,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devtools::examples::{SHIPPED_EXAMPLES, example_source, open_example};
    use crate::format::json::to_js_pretty;
    use crate::replay::describe::describe_state_dir;
    use crate::replay::open::open_state_dir;
    use crate::store::source::DiskSource;

    /// The streamed report prints byte for byte what the whole-ledger report holds.
    fn same_report(src: &dyn StateSource, opened: &crate::replay::OpenedStateDir, synthetic: bool) {
        let opts = DescribeOptions {
            use_labels: None,
            synthetic,
        };
        let whole = describe_state_dir(opened, &opts);
        let input = read_for_describe(src, opened.state_dir.clone(), &opened.options).unwrap();
        let report = input.report(&opts);
        let (mut text, mut json) = (Vec::new(), Vec::new());
        report.write_text(&mut text).unwrap();
        report.write_json(&mut json).unwrap();
        assert_eq!(String::from_utf8(text).unwrap(), whole.text);
        assert_eq!(json, to_js_pretty(&whole.data));
        assert_eq!(report.chain_ok(), whole.chain_ok);
        assert_eq!(input.tally.len(), opened.raw.len());
    }

    #[test]
    fn streamed_describe_matches_the_opened_one() {
        for name in SHIPPED_EXAMPLES {
            let opened = open_example(name, &OpenStateDirOptions::default()).unwrap();
            same_report(example_source(name).unwrap().as_ref(), &opened, true);
        }
        // A tampered, torn ledger with an off-topology node and labels in use.
        let d = tempfile::tempdir().unwrap();
        crate::devtools::examples::copy_example("masked-relay", d.path(), false).unwrap();
        let p = d.path().join("receipts.json");
        let mut v = crate::format::json::parse(&std::fs::read(&p).unwrap()).unwrap();
        let Value::Array(items) = &mut v else {
            panic!("not an array")
        };
        for (i, key, new) in [(5, "node", "ghost.node"), (9, "status", "skipped")] {
            if let Some(Value::Object(o)) = items.get_mut(i) {
                o.insert(key, Value::str(new));
            }
        }
        let mut bytes = crate::format::json::compact_string(&v).into_bytes();
        bytes.truncate(bytes.len() - 40);
        std::fs::write(&p, &bytes).unwrap();
        std::fs::write(
            d.path().join("compile/labels.json"),
            br#"{"gateway.signal-inbox":"Inbox \ud800","ghost.node":""}"#,
        )
        .unwrap();
        let opened = open_state_dir(d.path(), &OpenStateDirOptions::default()).unwrap();
        assert!(opened.torn.is_some());
        same_report(&DiskSource::new(d.path()), &opened, false);
    }
}
