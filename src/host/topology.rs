//! `reactor topology [--format text|dot|mermaid]` (HOST.md §8.6): the compiled graph from
//! `compile/topology.json` (envelope or flat) and `compile/manifest.json`.
//!
//! ```text
//! reactor topology
//!
//!   acyclic        yes
//!   entry points   inbox (ingress: inbox::ingress)
//!
//!   nodes:
//!     digest                       wake=input maintains=[digest]
//!     inbox                        wake=external maintains=[items]
//!
//!   edges:
//!     inbox.items -> digest
//! ```
//!
//! `dot` prints a Graphviz `digraph` and `mermaid` a Mermaid `flowchart LR`: one node per
//! topology node (entry points drawn with a double border and marked "entry point"), the phantom
//! ingress producer of each entry point dashed, and one edge per topology edge labelled with its
//! facet. `--format dot|mermaid` with `--json` is a usage error.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::ExitCode;

use serde::Serialize;

use crate::format::topology::{Topology, TopologyFile, TopologyIndex};
use crate::host::args::{ArgStream, Globals, OwnedArg};
use crate::host::error::{HostError, StateDirContext};
use crate::host::output::{self, Report};
use crate::host::report::{VerbReport, print};
use crate::replay::statedir::{self, ManifestRead};

/// `reactor topology --help`.
pub(crate) const HELP: &str = "reactor topology — print the compiled graph

Usage:
  reactor topology [--format text|dot|mermaid] [global flags]

Flags:
  --format <f>   text (default), dot (a Graphviz digraph) or mermaid (a Mermaid
                 flowchart); dot and mermaid cannot be combined with --json

Reads compile/topology.json and compile/manifest.json; needs no key.
";

/// The drawing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// The report (default).
    #[default]
    Text,
    /// Graphviz.
    Dot,
    /// Mermaid.
    Mermaid,
}

/// Parsed arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Args {
    /// `--format`.
    pub format: Format,
}

/// Parses `topology` arguments.
pub fn parse(s: &mut ArgStream<'_>) -> Result<Args, HostError> {
    let mut a = Args::default();
    while let Some(arg) = s.next_arg()? {
        match &arg {
            OwnedArg::Long(l) if l == "format" => {
                let v = s.value("--format")?;
                a.format = match v.as_str() {
                    "text" => Format::Text,
                    "dot" => Format::Dot,
                    "mermaid" => Format::Mermaid,
                    other => {
                        return Err(HostError::usage(
                            format!(
                                "invalid --format '{}' (expected text, dot or mermaid)",
                                crate::host::yaml::clip(other, 40)
                            ),
                            Some("topology"),
                        ));
                    }
                };
            }
            _ => return Err(s.unexpected(&arg)),
        }
    }
    if a.format != Format::Text && s.globals.json {
        return Err(HostError::usage(
            "--format dot and --format mermaid cannot be combined with --json",
            Some("topology"),
        ));
    }
    Ok(a)
}

/// A node of the drawing.
struct Drawn {
    id: String,
    wake: Option<String>,
    contract: Option<String>,
    maintains: Vec<String>,
}

fn describe(state_dir: &Path, ix: &TopologyIndex<'_>) -> Vec<Drawn> {
    ix.topology()
        .nodes
        .iter()
        .map(|n| Drawn {
            id: n.node.clone(),
            wake: n.wake_source.map(|w| w.as_str().to_string()),
            contract: n.contract_fingerprint.clone(),
            maintains: statedir::maintains(state_dir, ix, &n.node),
        })
        .collect()
}

/// Escapes a string for a double-quoted Graphviz id or label.
pub(crate) fn dot_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Escapes text for a quoted Mermaid label (entity codes for characters Mermaid treats
/// specially).
pub(crate) fn mermaid_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("#quot;"),
            '#' => out.push_str("#35;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '|' => out.push_str("#124;"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Phantom ingress producers to draw: producers of edges that are not topology nodes, plus
/// `<gw>::ingress` for each entry point without one. `(producer, gateway, has_edge)`.
fn phantoms(ix: &TopologyIndex<'_>) -> Vec<(String, String, bool)> {
    let t = ix.topology();
    let mut out: Vec<(String, String, bool)> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for e in &t.edges {
        if !ix.has_node(&e.producer) && seen.insert(e.producer.clone()) {
            out.push((e.producer.clone(), e.subscriber.clone(), true));
        }
    }
    for gw in &t.entry_points {
        let ing = statedir::ingress_of(ix, gw);
        if seen.insert(ing.clone()) {
            out.push((ing, gw.clone(), false));
        }
    }
    out
}

/// The Graphviz drawing.
pub(crate) fn render_dot(t: &Topology) -> String {
    let ix = t.index();
    let mut s = String::from("digraph reactor {\n  rankdir=LR;\n  node [shape=box];\n");
    for n in &t.nodes {
        if ix.is_entry_point(&n.node) {
            s.push_str(&format!(
                "  {} [peripheries=2, label={}];\n",
                dot_quote(&n.node),
                dot_quote(&format!("{}\n(entry point)", n.node))
            ));
        } else {
            s.push_str(&format!("  {};\n", dot_quote(&n.node)));
        }
    }
    let ph = phantoms(&ix);
    for (p, _, _) in &ph {
        s.push_str(&format!(
            "  {} [shape=ellipse, style=dashed];\n",
            dot_quote(p)
        ));
    }
    for (p, gw, has_edge) in &ph {
        if !has_edge {
            s.push_str(&format!(
                "  {} -> {} [style=dashed];\n",
                dot_quote(p),
                dot_quote(gw)
            ));
        }
    }
    for e in &t.edges {
        let style = if ix.has_node(&e.producer) {
            ""
        } else {
            ", style=dashed"
        };
        s.push_str(&format!(
            "  {} -> {} [label={}{style}];\n",
            dot_quote(&e.producer),
            dot_quote(&e.subscriber),
            dot_quote(&e.facet)
        ));
    }
    s.push_str("}\n");
    s
}

/// The Mermaid drawing. Node ids are generated (`n0`, `n1`, `p0`, …); labels carry the names.
pub(crate) fn render_mermaid(t: &Topology) -> String {
    let ix = t.index();
    let mut s = String::from("flowchart LR\n");
    // name → generated id; the first id given to a name wins.
    let mut ids: HashMap<String, String> = HashMap::new();
    let mut next_id = 0usize;
    for (i, n) in t.nodes.iter().enumerate() {
        let id = format!("n{i}");
        if ix.is_entry_point(&n.node) {
            s.push_str(&format!(
                "  {id}[[\"{} (entry point)\"]]\n",
                mermaid_text(&n.node)
            ));
        } else {
            s.push_str(&format!("  {id}[\"{}\"]\n", mermaid_text(&n.node)));
        }
        ids.entry(n.node.clone()).or_insert(id);
        next_id += 1;
    }
    let ph = phantoms(&ix);
    for (i, (p, _, _)) in ph.iter().enumerate() {
        let id = format!("p{i}");
        s.push_str(&format!("  {id}([\"{}\"])\n", mermaid_text(p)));
        ids.entry(p.clone()).or_insert(id);
        next_id += 1;
    }
    // Subscribers outside the node list (never written by the project) are drawn plainly.
    for e in &t.edges {
        if !ids.contains_key(&e.subscriber) {
            let id = format!("x{next_id}");
            s.push_str(&format!("  {id}[\"{}\"]\n", mermaid_text(&e.subscriber)));
            ids.insert(e.subscriber.clone(), id);
            next_id += 1;
        }
    }
    let id_of = |name: &str| ids.get(name).cloned().unwrap_or_default();
    for (p, gw, has_edge) in &ph {
        if !has_edge {
            s.push_str(&format!("  {} -.-> {}\n", id_of(p), id_of(gw)));
        }
    }
    for e in &t.edges {
        let arrow = if ix.has_node(&e.producer) {
            "-->"
        } else {
            "-.->"
        };
        s.push_str(&format!(
            "  {} {arrow}|\"{}\"| {}\n",
            id_of(&e.producer),
            mermaid_text(&e.facet),
            id_of(&e.subscriber)
        ));
    }
    if !ph.is_empty() {
        s.push_str("  classDef phantom stroke-dasharray: 5 5;\n");
        let list: Vec<String> = (0..ph.len()).map(|i| format!("p{i}")).collect();
        s.push_str(&format!("  class {} phantom;\n", list.join(",")));
    }
    s
}

/// One node of the `topology` report: JSON `{"node", "wake_source", "contract_fingerprint",
/// "maintains"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct NodeRow {
    /// The node id.
    pub node: String,
    /// Its wake source.
    pub wake_source: Option<String>,
    /// Its contract fingerprint (node entry, else the envelope's map).
    pub contract_fingerprint: Option<String>,
    /// Its declared facets (never `@atomic`).
    pub maintains: Vec<String>,
}

/// One edge: JSON `{"producer", "facet", "subscriber"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct EdgeRow {
    /// The producing node.
    pub producer: String,
    /// The facet.
    pub facet: String,
    /// The subscribing node.
    pub subscriber: String,
}

/// The `topology` report (HOST.md §8.6). JSON: `{"nodes": [...], "edges": [...],
/// "entry_points": [...], "acyclic"}`.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct TopologyReport {
    /// The nodes, in file order.
    pub nodes: Vec<NodeRow>,
    /// The edges, in file order.
    pub edges: Vec<EdgeRow>,
    /// The entry points.
    pub entry_points: Vec<String>,
    /// The acyclic flag.
    pub acyclic: bool,
    /// Each entry point's phantom ingress producer, index-aligned with `entry_points`.
    #[serde(skip)]
    pub ingress: Vec<String>,
    /// `compile/manifest.json` is absent (a replay fixture or a state dir written elsewhere).
    #[serde(skip)]
    pub(crate) no_manifest: bool,
}

impl VerbReport for TopologyReport {
    fn to_text(&self) -> String {
        let mut r = Report::new("topology");
        r.field("acyclic", if self.acyclic { "yes" } else { "no" });
        let entries: Vec<String> = self
            .entry_points
            .iter()
            .zip(&self.ingress)
            .map(|(gw, ing)| format!("{gw} (ingress: {ing})"))
            .collect();
        r.field(
            "entry points",
            if entries.is_empty() {
                "(none)".to_string()
            } else {
                entries.join(", ")
            },
        );
        r.blank();
        r.line(2, "nodes:");
        if self.nodes.is_empty() {
            r.line(4, "(none)");
        }
        for d in &self.nodes {
            let mut rest = format!("wake={}", d.wake_source.as_deref().unwrap_or("?"));
            if !d.maintains.is_empty() {
                rest.push_str(&format!(" maintains=[{}]", d.maintains.join(", ")));
            }
            r.node_row(&d.node, rest);
        }
        r.blank();
        r.line(2, "edges:");
        if self.edges.is_empty() {
            r.line(4, "(none)");
        }
        for e in &self.edges {
            r.line(4, format!("{}.{} -> {}", e.producer, e.facet, e.subscriber));
        }
        if self.no_manifest {
            r.blank();
            r.line(
                2,
                "note: no compile manifest (a replay fixture or a state dir written elsewhere)",
            );
        }
        r.finish()
    }
}

/// Gathers the `topology` report from a topology file.
fn gather(state_dir: &Path, file: &TopologyFile) -> TopologyReport {
    let t = &file.topology;
    let ix = t.index();
    // The envelope's map, first entry per node (file order) as a linear scan would find it.
    let mut envelope: HashMap<&str, &str> = HashMap::new();
    for (k, v) in file.contract_fingerprints.iter().flatten() {
        envelope.entry(k.as_str()).or_insert(v.as_str());
    }
    let nodes = describe(state_dir, &ix)
        .into_iter()
        .map(|d| NodeRow {
            contract_fingerprint: d
                .contract
                .filter(|c| !c.is_empty())
                .or_else(|| envelope.get(d.id.as_str()).map(|v| v.to_string())),
            node: d.id,
            wake_source: d.wake,
            maintains: d.maintains,
        })
        .collect();
    TopologyReport {
        nodes,
        edges: t
            .edges
            .iter()
            .map(|e| EdgeRow {
                producer: e.producer.clone(),
                facet: e.facet.clone(),
                subscriber: e.subscriber.clone(),
            })
            .collect(),
        entry_points: t.entry_points.clone(),
        acyclic: t.acyclic,
        ingress: t
            .entry_points
            .iter()
            .map(|gw| statedir::ingress_of(&ix, gw))
            .collect(),
        no_manifest: statedir::read_manifest(state_dir) == ManifestRead::Absent,
    }
}

/// Runs `topology`.
pub fn exec(a: Args, g: &Globals) -> Result<ExitCode, HostError> {
    let (_, reactor) = g.select_reader("topology")?;
    let state_dir = &reactor.state_dir;
    let Some(file) = statedir::read_topology(state_dir).in_state_dir(state_dir)? else {
        return Err(HostError::state(
            "no compiled IR — run `reactor compile` first",
        ));
    };
    match a.format {
        Format::Dot => output::write_stdout(&render_dot(&file.topology))?,
        Format::Mermaid => output::write_stdout(&render_mermaid(&file.topology))?,
        Format::Text => print(&gather(state_dir, &file), g.json)?,
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::receipt::WakeSource;
    use crate::format::topology::{Edge, TopologyNode};

    fn sample() -> Topology {
        let n = |id: &str, w| TopologyNode {
            node: id.into(),
            contract_fingerprint: None,
            wake_source: Some(w),
        };
        Topology {
            nodes: vec![
                n("digest", WakeSource::Input),
                n("in\"box", WakeSource::External),
            ],
            edges: vec![Edge::new("in\"box", "digest", "items")],
            entry_points: vec!["in\"box".into()],
            acyclic: true,
        }
    }

    #[test]
    fn dot_drawing() {
        let d = render_dot(&sample());
        assert!(d.starts_with("digraph reactor {\n"));
        assert!(
            d.contains("  \"in\\\"box\" [peripheries=2, label=\"in\\\"box\\n(entry point)\"];\n"),
            "{d}"
        );
        assert!(
            d.contains("  \"in\\\"box::ingress\" [shape=ellipse, style=dashed];\n"),
            "{d}"
        );
        assert!(
            d.contains("  \"in\\\"box::ingress\" -> \"in\\\"box\" [style=dashed];\n"),
            "{d}"
        );
        assert!(
            d.contains("  \"in\\\"box\" -> \"digest\" [label=\"items\"];\n"),
            "{d}"
        );
        assert!(d.ends_with("}\n"));
    }

    #[test]
    fn mermaid_drawing() {
        let m = render_mermaid(&sample());
        assert!(m.starts_with("flowchart LR\n"));
        assert!(m.contains("  n1[[\"in#quot;box (entry point)\"]]\n"), "{m}");
        assert!(m.contains("  p0([\"in#quot;box::ingress\"])\n"), "{m}");
        assert!(m.contains("  p0 -.-> n1\n"), "{m}");
        assert!(m.contains("  n1 -->|\"items\"| n0\n"), "{m}");
        assert!(m.contains("class p0 phantom;"), "{m}");
    }

    #[test]
    fn flat_topologies_draw_their_own_phantom_edges() {
        let mut t = sample();
        t.edges
            .insert(0, Edge::new("ingress.x", "in\"box", "inbox"));
        let d = render_dot(&t);
        assert!(
            d.contains("\"ingress.x\" [shape=ellipse, style=dashed]"),
            "{d}"
        );
        assert!(
            d.contains("\"ingress.x\" -> \"in\\\"box\" [label=\"inbox\", style=dashed];"),
            "{d}"
        );
        assert!(!d.contains("::ingress"), "{d}");
        let m = render_mermaid(&t);
        assert!(m.contains("  p0 -.->|\"inbox\"| n1\n"), "{m}");
    }
}
