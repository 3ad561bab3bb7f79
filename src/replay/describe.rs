//! `reactor-devtools --describe` (VIEWER.md §5): the headless run summary, as text and as JSON.

use serde::Serialize;

use crate::format::receipt::{Status, WakeSource};
use crate::replay::open::OpenedStateDir;
use crate::replay::snapshot::{
    Bucket, ByCause, LabelMap, ReceiptFrame, ReplaySession, build_session,
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

/// The describe JSON document (VIEWER.md §5.6), keys in order.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribeData {
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
    pub frames: Vec<DescribeFrame>,
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
    describe_session(opened, &session, opts)
}

/// [`describe_state_dir`] over an already built session.
pub(crate) fn describe_session(
    opened: &OpenedStateDir,
    session: &ReplaySession,
    opts: &DescribeOptions,
) -> DescribeResult {
    let use_labels = opts.use_labels.unwrap_or(!opened.labels.is_empty());
    let labels = LabelMap::new(&opened.labels, use_labels);
    let frames = &session.frames;
    let mut lines: Vec<String> = Vec::new();
    let topology = header(&mut lines, opened, session, opts);
    if frames.is_empty() {
        return empty_ledger(lines, opened, opts, topology);
    }
    let (disp, by_wake) = tally(frames);
    cost_rollup(&mut lines, session, &disp, &by_wake, &labels);
    let (nodes, errors) = per_node(&mut lines, session, &labels);
    let chain_ok = errors.is_empty();
    chain_verify(&mut lines, &errors);
    let frame_rows = frame_lines(&mut lines, frames, &labels);
    let mut text = lines.join("\n");
    text.push('\n');
    let roll = &session.rollup;
    DescribeResult {
        text,
        chain_ok,
        empty: false,
        data: DescribeData {
            tool: "reactor-devtools",
            state_dir: opened.state_dir.clone(),
            empty: false,
            synthetic: opts.synthetic,
            topology,
            receipts: frames.len(),
            dispositions: disp,
            by_surprise_cause: CountMap(by_wake),
            cost_rollup: DescribeRollup {
                by_surprise_cause: Some(roll.by_cause.clone()),
                total: roll.total.clone(),
            },
            nodes,
            frames: frame_rows,
            chain_verify: DescribeChain {
                ok: chain_ok,
                errors,
            },
        },
    }
}

/// The first lines (tool, state-dir, topology, receipts) and the topology summary.
fn header(
    lines: &mut Vec<String>,
    opened: &OpenedStateDir,
    session: &ReplaySession,
    opts: &DescribeOptions,
) -> DescribeTopology {
    let (n_nodes, n_edges, acyclic) = match &opened.topology {
        Some(t) => (t.nodes.len(), t.edges.len(), t.acyclic),
        None => (session.chains.len(), 0, true),
    };
    lines.push("reactor-devtools --describe".into());
    if opts.synthetic {
        lines
            .push("  (synthetic sample ledger — token counts are illustrative, not a bill)".into());
    }
    lines.push(format!("  state-dir   {}", opened.state_dir));
    lines.push(format!(
        "  topology    {} · {n_nodes} nodes · {n_edges} edges · acyclic={acyclic}",
        if opened.topology.is_some() {
            "yes"
        } else {
            "no (node-only fallback)"
        }
    ));
    lines.push(format!("  receipts    {} frames", session.frames.len()));
    DescribeTopology {
        present: opened.topology.is_some(),
        nodes: n_nodes,
        edges: n_edges,
        acyclic,
    }
}

/// The report of a ledger without receipts (VIEWER.md §5, `LEDGER EMPTY`).
fn empty_ledger(
    mut lines: Vec<String>,
    opened: &OpenedStateDir,
    opts: &DescribeOptions,
    topology: DescribeTopology,
) -> DescribeResult {
    for l in [
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
    ] {
        lines.push(l.to_string());
    }
    let mut text = lines.join("\n");
    text.push('\n');
    DescribeResult {
        text,
        chain_ok: true,
        empty: true,
        data: DescribeData {
            tool: "reactor-devtools",
            state_dir: opened.state_dir.clone(),
            empty: true,
            synthetic: opts.synthetic,
            topology,
            receipts: 0,
            dispositions: Dispositions::default(),
            by_surprise_cause: CountMap::default(),
            cost_rollup: DescribeRollup {
                by_surprise_cause: None,
                total: Bucket::default(),
            },
            nodes: Vec::new(),
            frames: Vec::new(),
            chain_verify: DescribeChain {
                ok: true,
                errors: Vec::new(),
            },
        },
    }
}

/// Dispositions, and receipts per wake source in order of first appearance.
fn tally(frames: &[ReceiptFrame]) -> (Dispositions, Vec<(String, u64)>) {
    let mut disp = Dispositions::default();
    let mut by_wake: Vec<(String, u64)> = Vec::new();
    for f in frames {
        match f.status {
            Status::Rendered => disp.rendered += 1,
            Status::Skipped => disp.skipped += 1,
            Status::Failed => disp.failed += 1,
        }
        let k = f.wake_source.as_str();
        match by_wake.iter_mut().find(|(c, _)| c == k) {
            Some((_, n)) => *n += 1,
            None => by_wake.push((k.to_string(), 1)),
        }
    }
    (disp, by_wake)
}

/// The dispositions line, the surprise causes and the `COST ROLLUP` block.
fn cost_rollup(
    lines: &mut Vec<String>,
    session: &ReplaySession,
    disp: &Dispositions,
    by_wake: &[(String, u64)],
    labels: &LabelMap,
) {
    lines.push(format!(
        "  dispositions rendered={} · skipped={} · failed={}",
        disp.rendered, disp.skipped, disp.failed
    ));
    lines.push(format!(
        "  surprise-cause  {}  (a.k.a. wake-cause)",
        by_wake
            .iter()
            .map(|(k, n)| format!("{k}={n}"))
            .collect::<Vec<_>>()
            .join(" · ")
    ));
    lines.push(String::new());
    let roll = &session.rollup;
    lines.push("COST ROLLUP  (tokens)".into());
    lines.push(format!(
        "  memo-skips  {}  (Reactor renders skipped — zero fresh tokens each)",
        disp.skipped
    ));
    lines.push(format!(
        "  total       fresh={} tokens · reused={} tokens",
        roll.total.fresh, roll.total.reused
    ));
    lines.push(format!(
        "  prompt-cache reuse  {}%  (provider-reported; can be 0% on the default model)",
        reuse_percent(roll.total.fresh, roll.total.reused)
    ));
    for c in WakeSource::ROLLUP_ORDER {
        let b = roll.by_cause.get(c);
        if b.receipts > 0 {
            lines.push(format!(
                "    {} receipts={} fresh={} tokens reused={} tokens",
                pad(c.as_str(), 9),
                pad(&b.receipts.to_string(), 3),
                pad(&b.fresh.to_string(), 7),
                b.reused
            ));
        }
    }
    let mut peak: Option<&ReceiptFrame> = None;
    for f in &session.frames {
        if f.cost.fresh > 0 && peak.is_none_or(|p| f.cost.fresh > p.cost.fresh) {
            peak = Some(f);
        }
    }
    if let Some(p) = peak {
        lines.push(format!(
            "  peak fresh  {} tokens at frame {} ({})",
            p.cost.fresh,
            p.index,
            labels.label(&p.node)
        ));
    }
    lines.push(String::new());
}

/// The `PER-NODE` block; returns the node rows and the chain error lines.
fn per_node(
    lines: &mut Vec<String>,
    session: &ReplaySession,
    labels: &LabelMap,
) -> (Vec<DescribeNode>, Vec<String>) {
    lines.push("PER-NODE".into());
    let mut node_rows = Vec::new();
    let mut error_lines = Vec::new();
    for (c, off) in session.chains_in_report_order() {
        let ok = c.chain.errors.is_empty();
        if off && ok {
            continue;
        }
        let lab = labels.label(&c.node);
        let shown = if off {
            format!("{lab} (off-topology)")
        } else {
            lab.clone()
        };
        lines.push(format!(
            "  {} r={} s={} f={} fresh={} tokens chain{}",
            pad(&shown, 26),
            pad(&c.rendered.to_string(), 2),
            pad(&c.skipped.to_string(), 2),
            pad(&c.failed.to_string(), 2),
            pad(&c.fresh.to_string(), 7),
            if ok { "✓" } else { "✗" }
        ));
        if !ok {
            error_lines.push(format!("{shown}: {}", c.chain.errors.join("; ")));
        }
        node_rows.push(DescribeNode {
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
    lines.push(String::new());
    (node_rows, error_lines)
}

/// The `CHAIN-VERIFY` block.
fn chain_verify(lines: &mut Vec<String>, error_lines: &[String]) {
    if error_lines.is_empty() {
        lines.extend(CHAIN_OK_BLOCK.iter().map(|s| s.to_string()));
    } else {
        lines.push(
            "CHAIN-VERIFY  FAILED — one or more node chains are tampered or inconsistent".into(),
        );
        lines.extend(error_lines.iter().map(|e| format!("  {e}")));
    }
    lines.push(String::new());
}

/// The `FRAMES` block; returns the frame rows.
fn frame_lines(
    lines: &mut Vec<String>,
    frames: &[ReceiptFrame],
    labels: &LabelMap,
) -> Vec<DescribeFrame> {
    lines.push(
        "FRAMES  (frame  node  status  moved[output facets that changed]  fresh tokens  woke[…])"
            .into(),
    );
    let mut frame_rows = Vec::with_capacity(frames.len());
    for f in frames {
        let lab = labels.label(&f.node);
        let moved = if f.moved_facets.is_empty() {
            "—".to_string()
        } else {
            f.moved_facets.join(",")
        };
        let woke_labels: Vec<String> = f
            .woken_subscribers
            .iter()
            .map(|s| labels.label(s))
            .collect();
        let woke = if woke_labels.is_empty() {
            "—".to_string()
        } else {
            woke_labels.join(",")
        };
        lines.push(format!(
            "  {} {} {} moved[{}] fresh {} tokens woke[{}]",
            pad(&f.index.to_string(), 3),
            pad(&lab, 26),
            pad(f.status.as_str(), 8),
            pad(&moved, 22),
            pad(&f.cost.fresh.to_string(), 6),
            woke
        ));
        frame_rows.push(DescribeFrame {
            index: f.index,
            node: f.node.clone(),
            label: lab,
            status: f.status,
            wake_source: f.wake_source,
            moved_facets: f.moved_facets.clone(),
            fresh: f.cost.fresh,
            reused: f.cost.reused,
            surprise_cause: f.cost.surprise_cause,
            woken_subscribers: woke_labels,
        });
    }
    frame_rows
}

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
