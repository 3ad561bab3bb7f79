//! `reactor-devtools --describe` (VIEWER.md §5): the headless run summary, as text and as JSON.

use std::io::{self, Write};

use serde::Serialize;

use crate::format::json::JsPrettyFormatter;
use crate::format::receipt::{Status, WakeSource};
use crate::format::topology::Topology;
use crate::replay::describe_rows::DescribeTally;
use crate::replay::open::OpenedStateDir;
use crate::replay::snapshot::{
    Bucket, ByCause, CostRollupView, LabelMap, ReplaySession, build_session,
};

/// Options of [`describe_state_dir`].
#[derive(Clone, Copy, Debug, Default)]
pub struct DescribeOptions {
    /// Overrides "labels are in use" (default: iff `labels.json` has an entry).
    pub use_labels: Option<bool>,
    /// Prints the synthetic banner (`--example`).
    pub synthetic: bool,
}

/// `topology` member of the describe JSON.
#[derive(Clone, Debug, Serialize)]
pub struct DescribeTopology {
    /// A usable topology was read.
    pub present: bool,
    /// Snapshot node count.
    pub nodes: usize,
    /// Snapshot edge count.
    pub edges: usize,
    /// The acyclicity flag.
    pub acyclic: bool,
}

/// `dispositions` member.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Dispositions {
    /// Rendered frames.
    pub rendered: u64,
    /// Skipped frames.
    pub skipped: u64,
    /// Failed frames.
    pub failed: u64,
}

/// Frame counts by wake source, first-seen order.
#[derive(Clone, Debug, Default)]
pub struct CountMap(pub Vec<(String, u64)>);

impl Serialize for CountMap {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// `costRollup` of the describe JSON: all three causes, or `{}` for an empty ledger.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribeRollup {
    /// Buckets per `cost.surprise_cause` (absent members for an empty ledger).
    pub(crate) by_surprise_cause: Option<ByCause>,
    /// All receipts.
    pub total: Bucket,
}

impl DescribeRollup {
    fn serialize_cause<S: serde::Serializer>(v: &Option<ByCause>, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match v {
            Some(b) => b.serialize(s),
            None => s.serialize_map(Some(0))?.end(),
        }
    }
}

/// A PER-NODE row.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribeNode {
    /// Node id.
    pub node: String,
    /// Label (without the off-topology suffix).
    pub label: String,
    /// Rendered frames.
    pub rendered: u64,
    /// Skipped frames.
    pub skipped: u64,
    /// Failed frames.
    pub failed: u64,
    /// Fresh tokens.
    pub fresh: u64,
    /// The node's chain verified.
    pub chain_ok: bool,
    /// The node is not a topology node (listed only when its chain fails).
    pub(crate) off_topology: bool,
}

/// A FRAMES row.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribeFrame {
    /// Frame index.
    pub index: usize,
    /// Node id.
    pub node: String,
    /// Label.
    pub label: String,
    /// Disposition.
    pub status: Status,
    /// `wake.source`.
    pub wake_source: WakeSource,
    /// Moved facets.
    pub moved_facets: Vec<String>,
    /// Fresh tokens.
    pub fresh: u64,
    /// Reused tokens.
    pub reused: u64,
    /// `cost.surprise_cause`.
    pub surprise_cause: WakeSource,
    /// Labels (not ids) of the woken subscribers.
    pub woken_subscribers: Vec<String>,
}

/// `chainVerify` of the describe JSON.
#[derive(Clone, Debug, Serialize)]
pub struct DescribeChain {
    /// Every chain verified.
    pub ok: bool,
    /// Error lines without indentation.
    pub errors: Vec<String>,
}

/// The describe JSON document (VIEWER.md §5.6), keys in order. `F` is the `frames` member: the
/// rows themselves, or a view that builds them while serializing
/// ([`crate::replay::describe_rows::FramesJson`]).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribeData<F = Vec<DescribeFrame>> {
    /// `"reactor-devtools"`.
    pub tool: &'static str,
    /// The state-dir string.
    pub state_dir: String,
    /// True iff 0 receipts.
    pub empty: bool,
    /// True only via `--example`.
    pub synthetic: bool,
    /// Topology counts.
    pub topology: DescribeTopology,
    /// Frame count.
    pub receipts: usize,
    /// Dispositions.
    pub dispositions: Dispositions,
    /// Frames by wake source, first-seen order.
    pub by_surprise_cause: CountMap,
    /// The rollup.
    #[serde(serialize_with = "serialize_rollup")]
    pub cost_rollup: DescribeRollup,
    /// PER-NODE rows.
    pub nodes: Vec<DescribeNode>,
    /// FRAMES rows.
    pub frames: F,
    /// Chain verdict.
    pub chain_verify: DescribeChain,
}

fn serialize_rollup<S: serde::Serializer>(r: &DescribeRollup, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeStruct;
    struct Causes<'a>(&'a Option<ByCause>);
    impl Serialize for Causes<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            DescribeRollup::serialize_cause(self.0, s)
        }
    }
    let mut st = s.serialize_struct("costRollup", 2)?;
    st.serialize_field("bySurpriseCause", &Causes(&r.by_surprise_cause))?;
    st.serialize_field("total", &r.total)?;
    st.end()
}

/// The result of [`describe_state_dir`].
#[derive(Clone, Debug)]
pub struct DescribeResult {
    /// The text form, ending with `\n`.
    pub text: String,
    /// Every chain verified (true for an empty ledger).
    pub chain_ok: bool,
    /// 0 receipts.
    pub empty: bool,
    /// The JSON form's data.
    pub data: DescribeData,
}

/// `<x:N>`: right-pads to at least `n` UTF-16 code units.
fn pad(s: &str, n: usize) -> String {
    let w: usize = s.chars().map(char::len_utf16).sum();
    let mut out = s.to_string();
    for _ in w..n {
        out.push(' ');
    }
    out
}

/// `round(TR / (TF + TR) × 100)`, halves up, 0 when both are 0 (FORMATS.md §16.3).
pub fn reuse_percent(fresh: u64, reused: u64) -> u64 {
    let total = fresh as f64 + reused as f64;
    if total == 0.0 {
        return 0;
    }
    (reused as f64 / total * 100.0 + 0.5).floor() as u64
}

const CHAIN_OK_BLOCK: [&str; 6] = [
    "CHAIN-VERIFY  ok — meaning-layer chain-consistency",
    "  (each receipt's content_hash matches its canonical payload and links its",
    "   prev — NOT a cryptographic signature. v1 has a null signer, so this is",
    "   tamper-EVIDENT against accidental / independent edits, NOT against a forge",
    "   that re-stamps the trail with the public content-hash. Meaning-layer",
    "   tamper-evidence, not byte-level non-repudiation.)",
];

/// Builds the describe text and JSON (VIEWER.md §5) from an opened state directory.
pub fn describe_state_dir(opened: &OpenedStateDir, opts: &DescribeOptions) -> DescribeResult {
    let session = build_session(opened);
    let mut tally = DescribeTally::default();
    for f in &session.frames {
        tally.add(f.clone());
    }
    let ctx = DescribeContext {
        state_dir: &opened.state_dir,
        topology: opened.topology.as_ref(),
        labels: &opened.labels,
    };
    DescribeReport::new(&ctx, &session, &tally, opts).result()
}

/// What a describe report reads besides the receipts: the state-dir string as shown, the
/// topology, and `labels.json`.
pub(crate) struct DescribeContext<'a> {
    /// `state-dir` as given (or `example:<name>`).
    pub(crate) state_dir: &'a str,
    /// The usable topology, if any.
    pub(crate) topology: Option<&'a Topology>,
    /// `compile/labels.json`, file order.
    pub(crate) labels: &'a [(String, String)],
}

/// A describe report (VIEWER.md §5): every section's data, printed as text
/// ([`DescribeReport::write_text`]) or JSON ([`DescribeReport::write_json`]) without building
/// either whole, or materialized as a [`DescribeResult`].
pub(crate) struct DescribeReport<'a> {
    state_dir: String,
    synthetic: bool,
    topology: DescribeTopology,
    labels: LabelMap<'a>,
    tally: &'a DescribeTally,
    rollup: &'a CostRollupView,
    nodes: Vec<DescribeNode>,
    /// The PER-NODE rows as shown (label plus the off-topology suffix).
    shown: Vec<String>,
    errors: Vec<String>,
}

impl<'a> DescribeReport<'a> {
    /// The report of a session whose frames went through `tally` in order.
    pub(crate) fn new(
        ctx: &DescribeContext<'a>,
        session: &'a ReplaySession,
        tally: &'a DescribeTally,
        opts: &DescribeOptions,
    ) -> DescribeReport<'a> {
        let use_labels = opts.use_labels.unwrap_or(!ctx.labels.is_empty());
        let labels = LabelMap::new(ctx.labels, use_labels);
        let (n_nodes, n_edges, acyclic) = match ctx.topology {
            Some(t) => (t.nodes.len(), t.edges.len(), t.acyclic),
            None => (session.chains.len(), 0, true),
        };
        let mut nodes = Vec::new();
        let mut shown = Vec::new();
        let mut errors = Vec::new();
        for (c, off) in session.chains_in_report_order() {
            let ok = c.chain.errors.is_empty();
            if off && ok {
                continue;
            }
            let lab = labels.label(&c.node);
            let s = if off {
                format!("{lab} (off-topology)")
            } else {
                lab.clone()
            };
            if !ok {
                errors.push(format!("{s}: {}", c.chain.errors.join("; ")));
            }
            shown.push(s);
            nodes.push(DescribeNode {
                node: c.node.clone(),
                label: lab,
                rendered: c.rendered,
                skipped: c.skipped,
                failed: c.failed,
                fresh: c.fresh,
                chain_ok: ok,
                off_topology: off,
            });
        }
        DescribeReport {
            state_dir: ctx.state_dir.to_string(),
            synthetic: opts.synthetic,
            topology: DescribeTopology {
                present: ctx.topology.is_some(),
                nodes: n_nodes,
                edges: n_edges,
                acyclic,
            },
            labels,
            tally,
            rollup: &session.rollup,
            nodes,
            shown,
            errors,
        }
    }

    /// True for a ledger without receipts.
    pub(crate) fn empty(&self) -> bool {
        self.tally.len() == 0
    }

    /// Every chain verified (true for an empty ledger).
    pub(crate) fn chain_ok(&self) -> bool {
        self.errors.is_empty()
    }

    /// The text and the JSON data, whole.
    pub(crate) fn result(&self) -> DescribeResult {
        let mut text = Vec::new();
        // Writing into memory cannot fail.
        let _ = self.write_text(&mut text);
        let frames = (0..self.tally.len())
            .map(|i| self.tally.frame(i, &self.labels))
            .collect();
        DescribeResult {
            text: String::from_utf8(text).unwrap_or_default(),
            chain_ok: self.chain_ok(),
            empty: self.empty(),
            data: self.data_with(frames),
        }
    }

    /// The JSON form (VIEWER.md §5.6): pretty, two-space indent, one trailing `\n`, frames
    /// serialized one at a time. Byte-identical to the pretty JSON of [`DescribeResult::data`].
    pub(crate) fn write_json(&self, out: &mut dyn Write) -> io::Result<()> {
        let data = self.data_with(self.tally.frames_json(&self.labels));
        let mut ser =
            serde_json::Serializer::with_formatter(&mut *out, JsPrettyFormatter::default());
        data.serialize(&mut ser).map_err(io::Error::other)?;
        out.write_all(b"\n")
    }

    fn data_with<F>(&self, frames: F) -> DescribeData<F> {
        let empty = self.empty();
        DescribeData {
            tool: "reactor-devtools",
            state_dir: self.state_dir.clone(),
            empty,
            synthetic: self.synthetic,
            topology: self.topology.clone(),
            receipts: self.tally.len(),
            dispositions: self.tally.disp.clone(),
            by_surprise_cause: CountMap(self.tally.by_wake.clone()),
            cost_rollup: DescribeRollup {
                by_surprise_cause: (!empty).then(|| self.rollup.by_cause.clone()),
                total: if empty {
                    Bucket::default()
                } else {
                    self.rollup.total.clone()
                },
            },
            nodes: self.nodes.clone(),
            frames,
            chain_verify: DescribeChain {
                ok: self.chain_ok(),
                errors: self.errors.clone(),
            },
        }
    }

    /// The text form (VIEWER.md §5.1–§5.5), line by line.
    pub(crate) fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        self.header(out)?;
        if self.empty() {
            for l in EMPTY_BLOCK {
                writeln!(out, "{l}")?;
            }
            return Ok(());
        }
        self.cost_rollup(out)?;
        self.per_node(out)?;
        self.chain_verify(out)?;
        self.frame_lines(out)
    }

    /// The first lines (tool, state-dir, topology, receipts).
    fn header(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "reactor-devtools --describe")?;
        if self.synthetic {
            writeln!(
                out,
                "  (synthetic sample ledger — token counts are illustrative, not a bill)"
            )?;
        }
        writeln!(out, "  state-dir   {}", self.state_dir)?;
        let t = &self.topology;
        writeln!(
            out,
            "  topology    {} · {} nodes · {} edges · acyclic={}",
            if t.present {
                "yes"
            } else {
                "no (node-only fallback)"
            },
            t.nodes,
            t.edges,
            t.acyclic
        )?;
        writeln!(out, "  receipts    {} frames", self.tally.len())
    }

    /// The dispositions line, the surprise causes and the `COST ROLLUP` block.
    fn cost_rollup(&self, out: &mut dyn Write) -> io::Result<()> {
        let disp = &self.tally.disp;
        writeln!(
            out,
            "  dispositions rendered={} · skipped={} · failed={}",
            disp.rendered, disp.skipped, disp.failed
        )?;
        let causes: Vec<String> = self
            .tally
            .by_wake
            .iter()
            .map(|(k, n)| format!("{k}={n}"))
            .collect();
        writeln!(
            out,
            "  surprise-cause  {}  (a.k.a. wake-cause)",
            causes.join(" · ")
        )?;
        writeln!(out)?;
        let roll = &self.rollup;
        writeln!(out, "COST ROLLUP  (tokens)")?;
        writeln!(
            out,
            "  memo-skips  {}  (Reactor renders skipped — zero fresh tokens each)",
            disp.skipped
        )?;
        writeln!(
            out,
            "  total       fresh={} tokens · reused={} tokens",
            roll.total.fresh, roll.total.reused
        )?;
        writeln!(
            out,
            "  prompt-cache reuse  {}%  (provider-reported; can be 0% on the default model)",
            reuse_percent(roll.total.fresh, roll.total.reused)
        )?;
        for c in WakeSource::ROLLUP_ORDER {
            let b = roll.by_cause.get(c);
            if b.receipts > 0 {
                writeln!(
                    out,
                    "    {} receipts={} fresh={} tokens reused={} tokens",
                    pad(c.as_str(), 9),
                    pad(&b.receipts.to_string(), 3),
                    pad(&b.fresh.to_string(), 7),
                    b.reused
                )?;
            }
        }
        if let Some((fresh, index, node)) = &self.tally.peak {
            writeln!(
                out,
                "  peak fresh  {fresh} tokens at frame {index} ({})",
                self.labels.label(node)
            )?;
        }
        writeln!(out)
    }

    /// The `PER-NODE` block.
    fn per_node(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "PER-NODE")?;
        for (n, shown) in self.nodes.iter().zip(&self.shown) {
            writeln!(
                out,
                "  {} r={} s={} f={} fresh={} tokens chain{}",
                pad(shown, 26),
                pad(&n.rendered.to_string(), 2),
                pad(&n.skipped.to_string(), 2),
                pad(&n.failed.to_string(), 2),
                pad(&n.fresh.to_string(), 7),
                if n.chain_ok { "✓" } else { "✗" }
            )?;
        }
        writeln!(out)
    }

    /// The `CHAIN-VERIFY` block.
    fn chain_verify(&self, out: &mut dyn Write) -> io::Result<()> {
        if self.errors.is_empty() {
            for l in CHAIN_OK_BLOCK {
                writeln!(out, "{l}")?;
            }
        } else {
            writeln!(
                out,
                "CHAIN-VERIFY  FAILED — one or more node chains are tampered or inconsistent"
            )?;
            for e in &self.errors {
                writeln!(out, "  {e}")?;
            }
        }
        writeln!(out)
    }

    /// The `FRAMES` block.
    fn frame_lines(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(
            out,
            "FRAMES  (frame  node  status  moved[output facets that changed]  fresh tokens  woke[…])"
        )?;
        for i in 0..self.tally.len() {
            let f = self.tally.frame(i, &self.labels);
            let moved = if f.moved_facets.is_empty() {
                "—".to_string()
            } else {
                f.moved_facets.join(",")
            };
            let woke = if f.woken_subscribers.is_empty() {
                "—".to_string()
            } else {
                f.woken_subscribers.join(",")
            };
            writeln!(
                out,
                "  {} {} {} moved[{}] fresh {} tokens woke[{}]",
                pad(&f.index.to_string(), 3),
                pad(&f.label, 26),
                pad(f.status.as_str(), 8),
                pad(&moved, 22),
                pad(&f.fresh.to_string(), 6),
                woke
            )?;
        }
        Ok(())
    }
}

/// The report of a ledger without receipts (VIEWER.md §5, `LEDGER EMPTY`), after the header.
const EMPTY_BLOCK: [&str; 13] = [
    "",
    "LEDGER EMPTY",
    "  No receipts yet — this state-dir is compiled-but-unrun (the most common",
    "  first-run state). Run a reactor to populate the ledger, or replay a",
    "  shipped fixture:",
    "",
    "    reactor run                 # populate <state-dir>/receipts.json",
    "    reactor-devtools <state-dir> --describe",
    "",
    "  Or replay the sample ledger that ships with this package (no path):",
    "",
    "    reactor-devtools --example masked-relay --describe",
    "",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_and_percent() {
        assert_eq!(pad("ab", 4), "ab  ");
        assert_eq!(pad("abcdef", 4), "abcdef");
        assert_eq!(pad("😀", 3), "😀 ");
        assert_eq!(reuse_percent(27180, 12840), 32);
        assert_eq!(reuse_percent(0, 0), 0);
        assert_eq!(reuse_percent(1, 1), 50);
        assert_eq!(reuse_percent(800, 640), 44);
        assert_eq!(reuse_percent(199, 1), 1); // 0.5 rounds up
    }
}
