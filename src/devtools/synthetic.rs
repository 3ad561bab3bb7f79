//! Synthetic state directories for the viewer's scale benchmarks and browser tests: a layered
//! topology of `N` nodes and a ledger of `M` receipts with valid per-node hash chains, written by
//! the project's own ledger writer (FORMATS.md §7 chains, §11 `receipts.json`, §15.1
//! `compile/topology.json`, §15.2 `compile/labels.json`).
//!
//! The generator is deterministic (a seeded xorshift; no clock): the same [`SyntheticSpec`]
//! always writes the same bytes. The receipts replay plausible drains: an entry point renders on
//! an external wake, the subscribers of the facets it moved wake on `input` in layer order and
//! render (moving some facets), skip or fail, and so on downstream; now and then a node ticks
//! itself (`self`). Costs follow the fixtures' model (VIEWER.md §9): a render of `u` units costs
//! `fresh = 180 × u`, `reused = 240 + 40 × u`; skips and failures cost 0/0.
//!
//! Used by `examples/gen_ledger.rs` (the benchmark's generator) and by the browser test.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use crate::format::address::address;
use crate::format::json::{Object, Value};
use crate::format::receipt::{Cost, Fingerprints, Receipt, Status, Wake, WakeSource};
use crate::format::topology::{Edge, Topology, TopologyNode, write_envelope};
use crate::store::ledger::{Ledger, SyncPolicy};

/// Largest node count [`write_synthetic_state_dir`] accepts.
pub(crate) const MAX_NODES: usize = 100_000;
/// Largest receipt count [`write_synthetic_state_dir`] accepts.
pub(crate) const MAX_RECEIPTS: usize = 20_000_000;

/// The shape of a generated state directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyntheticSpec {
    /// Topology nodes (2 ..= [`MAX_NODES`]).
    pub nodes: usize,
    /// Receipts to append (0 ..= [`MAX_RECEIPTS`]).
    pub receipts: usize,
    /// Seed of the deterministic generator.
    pub seed: u64,
}

/// What [`write_synthetic_state_dir`] wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyntheticLedger {
    /// Topology nodes.
    pub nodes: usize,
    /// Topology edges.
    pub edges: usize,
    /// Layers of the DAG (the longest path plus one).
    pub layers: usize,
    /// Receipts appended.
    pub receipts: usize,
    /// Size of `receipts.json`, bytes.
    pub bytes: u64,
}

/// Why a synthetic state directory could not be written.
#[derive(Debug, thiserror::Error)]
pub enum SyntheticError {
    /// `nodes` or `receipts` is outside the accepted range.
    #[error("{0}")]
    Spec(String),
    /// The target exists and is not an empty directory.
    #[error("{0} exists and is not an empty directory")]
    NotEmpty(String),
    /// A file could not be written.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The ledger writer refused an append or a sync.
    #[error("ledger: {0}")]
    Ledger(String),
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng((seed ^ 0x9e37_79b9_7f4a_7c15) | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// True with probability `p`.
    fn chance(&mut self, p: f64) -> bool {
        ((self.next() >> 11) as f64 / ((1u64 << 53) as f64)) < p
    }
}

const KINDS: [&str; 5] = [
    "finding",
    "analysis",
    "review",
    "synthesis",
    "responsibility",
];
const WORDS: [&str; 16] = [
    "pricing", "zoning", "waitlist", "budget", "traffic", "vacancy", "permits", "transit",
    "staffing", "demand", "supply", "risk", "schedule", "quality", "audit", "forecast",
];
const FACETS: [&str; 8] = [
    "summary",
    "risks",
    "numbers",
    "status",
    "timeline",
    "sources",
    "open-questions",
    "verdict",
];

struct Graph {
    ids: Vec<String>,
    layer_of: Vec<usize>,
    layers: usize,
    /// Per node: its facets, `@atomic` first.
    facets: Vec<Vec<String>>,
    /// Per node: `(subscriber, facet index)` of its out-edges.
    out: Vec<Vec<(usize, usize)>>,
    /// Per node: `(producer, facet index)` of its in-edges, in edge order (the input slots).
    inputs: Vec<Vec<(usize, usize)>>,
    edges: Vec<Edge>,
}

fn build_graph(n: usize, rng: &mut Rng) -> Graph {
    let layers = ((n as f64).sqrt() / 1.65).round().clamp(2.0, 60.0) as usize;
    let layers = layers.min(n);
    // Layer 0 (the entry points) is half as tall as the others.
    let weight = |l: usize| if l == 0 { 1.0 } else { 2.0 };
    let total: f64 = (0..layers).map(weight).sum();
    let mut sizes: Vec<usize> = (0..layers)
        .map(|l| ((n as f64) * weight(l) / total).floor().max(1.0) as usize)
        .collect();
    let mut assigned: usize = sizes.iter().sum();
    let mut l = layers - 1;
    while assigned < n {
        sizes[l] += 1;
        assigned += 1;
        l = if l <= 1 { layers - 1 } else { l - 1 };
    }
    while assigned > n {
        let big = (0..layers).max_by_key(|&l| sizes[l]).unwrap_or(0);
        sizes[big] -= 1;
        assigned -= 1;
    }
    let mut ids = Vec::with_capacity(n);
    let mut layer_of = Vec::with_capacity(n);
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); layers];
    for (l, &size) in sizes.iter().enumerate() {
        for _ in 0..size {
            let i = ids.len();
            let word = WORDS[rng.below(WORDS.len())];
            let id = if l == 0 {
                format!("gateway.{word}-{i:04}")
            } else {
                format!("{}.{word}-{i:04}", KINDS[(l - 1) % KINDS.len()])
            };
            ids.push(id);
            layer_of.push(l);
            members[l].push(i);
        }
    }
    let mut facets = Vec::with_capacity(n);
    for _ in 0..n {
        let mut f = vec!["@atomic".to_string()];
        let k = 1 + rng.below(3);
        let start = rng.below(FACETS.len());
        for j in 0..k {
            f.push(FACETS[(start + j * 3) % FACETS.len()].to_string());
        }
        facets.push(f);
    }
    let mut out = vec![Vec::new(); n];
    let mut inputs = vec![Vec::new(); n];
    let mut edges = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let pick_near = |rng: &mut Rng, layer: usize, rel: f64, jitter: usize| -> usize {
        let m = &members[layer];
        let centre = (rel * m.len() as f64) as isize;
        let off = rng.below(2 * jitter + 1) as isize - jitter as isize;
        m[(centre + off).clamp(0, m.len() as isize - 1) as usize]
    };
    for (l, m) in members.iter().enumerate().skip(1) {
        for (row, &s) in m.iter().enumerate() {
            let rel = (row as f64 + 0.5) / m.len() as f64;
            let extra = usize::from(rng.chance(0.6)) + usize::from(rng.chance(0.3));
            let mut producers = vec![pick_near(rng, l - 1, rel, 2)];
            for _ in 0..extra {
                let pl = if l >= 2 && rng.chance(0.4) {
                    rng.below(l - 1)
                } else {
                    l - 1
                };
                producers.push(pick_near(rng, pl, rel, 4));
            }
            for p in producers {
                let fi = if rng.chance(0.4) {
                    0
                } else {
                    1 + rng.below(facets[p].len() - 1)
                };
                if !seen.insert((p, s, fi)) {
                    continue;
                }
                out[p].push((s, fi));
                inputs[s].push((p, fi));
                edges.push(Edge::new(&ids[p], &ids[s], &facets[p][fi]));
            }
        }
    }
    Graph {
        ids,
        layer_of,
        layers,
        facets,
        out,
        inputs,
        edges,
    }
}

/// Writes a synthetic state directory into `dir` (absent or empty): `compile/topology.json`,
/// `compile/labels.json` (every third node labelled) and `receipts.json`.
///
/// Errors: [`SyntheticError::Spec`] for counts outside the limits, [`SyntheticError::NotEmpty`],
/// I/O and ledger errors. On error the directory may hold a partial state directory.
pub fn write_synthetic_state_dir(
    dir: &Path,
    spec: &SyntheticSpec,
) -> Result<SyntheticLedger, SyntheticError> {
    if spec.nodes < 2 || spec.nodes > MAX_NODES {
        return Err(SyntheticError::Spec(format!(
            "nodes must be between 2 and {MAX_NODES} (got {})",
            spec.nodes
        )));
    }
    if spec.receipts > MAX_RECEIPTS {
        return Err(SyntheticError::Spec(format!(
            "receipts must be at most {MAX_RECEIPTS} (got {})",
            spec.receipts
        )));
    }
    let io = |context: String| move |source| SyntheticError::Io { context, source };
    match std::fs::read_dir(dir) {
        Ok(mut it) => {
            if it.next().is_some() {
                return Err(SyntheticError::NotEmpty(dir.display().to_string()));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            return Err(SyntheticError::NotEmpty(dir.display().to_string()));
        }
        Err(e) => return Err(io(format!("cannot read {}", dir.display()))(e)),
    }
    let compile = dir.join("compile");
    std::fs::create_dir_all(&compile)
        .map_err(io(format!("cannot create {}", compile.display())))?;

    let mut rng = Rng::new(spec.seed);
    let g = build_graph(spec.nodes, &mut rng);
    let n = g.ids.len();
    let topo = Topology {
        nodes: g
            .ids
            .iter()
            .enumerate()
            .map(|(i, id)| TopologyNode {
                node: id.clone(),
                contract_fingerprint: Some(address(format!("contract:{id}").as_bytes())),
                wake_source: Some(if g.layer_of[i] == 0 {
                    WakeSource::External
                } else {
                    WakeSource::Input
                }),
            })
            .collect(),
        edges: g.edges.clone(),
        entry_points: (0..n)
            .filter(|&i| g.layer_of[i] == 0)
            .map(|i| g.ids[i].clone())
            .collect(),
        acyclic: true,
    };
    let topo_path = compile.join("topology.json");
    std::fs::write(&topo_path, write_envelope(&topo))
        .map_err(io(format!("cannot write {}", topo_path.display())))?;
    let mut labels = Object::new();
    for (i, id) in g.ids.iter().enumerate().filter(|(i, _)| i % 3 == 0) {
        let short = id.split_once('.').map_or(id.as_str(), |(_, s)| s);
        let mut chars = short.chars();
        let title: String = chars
            .next()
            .map(|c| c.to_uppercase().chain(chars).collect())
            .unwrap_or_default();
        labels.push_unique(
            id.as_str(),
            Value::str(format!("{} · L{}", title.replace('-', " "), g.layer_of[i])),
        );
    }
    let labels_path = compile.join("labels.json");
    let mut text = crate::format::json::compact_string(&Value::Object(labels));
    text.push('\n');
    std::fs::write(&labels_path, text)
        .map_err(io(format!("cannot write {}", labels_path.display())))?;

    let ledger_err = |e: crate::store::ledger::LedgerError| SyntheticError::Ledger(e.to_string());
    let (mut ledger, _) = Ledger::open(dir).map_err(ledger_err)?;
    ledger.set_policy(SyncPolicy::Group);
    let mut sim = Sim {
        g: &g,
        tokens: (0..n).map(|i| vec![0u64; g.facets[i].len()]).collect(),
        last_hash: vec![None; n],
        contract: g
            .ids
            .iter()
            .map(|id| address(format!("contract:{id}").as_bytes()))
            .collect(),
        ledger: &mut ledger,
        count: 0,
        target: spec.receipts,
        rng,
    };
    sim.run().map_err(ledger_err)?;
    ledger.sync().map_err(ledger_err)?;
    let bytes = std::fs::metadata(dir.join("receipts.json"))
        .map(|m| m.len())
        .unwrap_or(0);
    Ok(SyntheticLedger {
        nodes: n,
        edges: g.edges.len(),
        layers: g.layers,
        receipts: spec.receipts,
        bytes,
    })
}

struct Sim<'a> {
    g: &'a Graph,
    /// Per node, per facet: the revision counter behind its fingerprint token.
    tokens: Vec<Vec<u64>>,
    last_hash: Vec<Option<String>>,
    contract: Vec<String>,
    ledger: &'a mut Ledger,
    count: usize,
    target: usize,
    rng: Rng,
}

impl Sim<'_> {
    fn token(&self, node: usize, facet: usize) -> String {
        address(
            format!(
                "{}#{}@{}",
                self.g.ids[node], self.g.facets[node][facet], self.tokens[node][facet]
            )
            .as_bytes(),
        )
    }

    fn run(&mut self) -> Result<(), crate::store::ledger::LedgerError> {
        let entries: Vec<usize> = (0..self.g.ids.len())
            .filter(|&i| self.g.layer_of[i] == 0)
            .collect();
        while self.count < self.target {
            if self.count > 0 && self.rng.chance(0.05) {
                let node = self.rng.below(self.g.ids.len());
                if self.last_hash[node].is_some() {
                    let status = if self.rng.chance(0.7) {
                        Status::Skipped
                    } else {
                        Status::Rendered
                    };
                    self.emit(node, status, WakeSource::SelfWake, None, &[])?;
                    continue;
                }
            }
            let entry = entries[self.rng.below(entries.len())];
            self.drain(entry)?;
        }
        Ok(())
    }

    /// One drain from `entry`: external render, then the woken subscribers in layer order.
    fn drain(&mut self, entry: usize) -> Result<(), crate::store::ledger::LedgerError> {
        let mut queue: BTreeSet<(usize, usize)> = BTreeSet::new();
        let mut waker: HashMap<usize, usize> = HashMap::new();
        let moved = self.moves(entry, 0.7);
        self.emit(entry, Status::Rendered, WakeSource::External, None, &moved)?;
        self.wake(entry, &moved, &mut queue, &mut waker);
        while let Some((_, node)) = queue.pop_first() {
            if self.count >= self.target {
                break;
            }
            let by = waker.get(&node).copied();
            let r = self.rng.next() % 100;
            let (status, moved) = if r < 4 {
                (Status::Failed, Vec::new())
            } else if r < 34 {
                (Status::Skipped, Vec::new())
            } else {
                (Status::Rendered, self.moves(node, 0.5))
            };
            self.emit(node, status, WakeSource::Input, by, &moved)?;
            if status == Status::Rendered {
                self.wake(node, &moved, &mut queue, &mut waker);
            }
        }
        Ok(())
    }

    /// Facets a render moves: `@atomic` always, each named facet with probability `p`.
    fn moves(&mut self, node: usize, p: f64) -> Vec<usize> {
        let mut out = vec![0];
        for f in 1..self.g.facets[node].len() {
            if self.rng.chance(p) {
                out.push(f);
            }
        }
        out
    }

    fn wake(
        &self,
        node: usize,
        moved: &[usize],
        queue: &mut BTreeSet<(usize, usize)>,
        waker: &mut HashMap<usize, usize>,
    ) {
        for &(sub, fi) in &self.g.out[node] {
            if moved.contains(&fi) && queue.insert((self.g.layer_of[sub], sub)) {
                waker.insert(sub, node);
            }
        }
    }

    fn emit(
        &mut self,
        node: usize,
        status: Status,
        source: WakeSource,
        by: Option<usize>,
        moved: &[usize],
    ) -> Result<(), crate::store::ledger::LedgerError> {
        for &f in moved {
            self.tokens[node][f] += 1;
        }
        let fingerprints = Fingerprints(
            (0..self.g.facets[node].len())
                .map(|f| (self.g.facets[node][f].clone(), self.token(node, f)))
                .collect(),
        );
        let input_fingerprints = self.g.inputs[node]
            .iter()
            .map(|&(p, fi)| self.token(p, fi))
            .collect();
        let mut diff = Object::new();
        let (fresh, reused) = match status {
            Status::Rendered => {
                let units = if self.rng.chance(0.01) {
                    30 + self.rng.below(20) as u64
                } else {
                    1 + self.rng.below(9) as u64
                };
                let names: Vec<Value> = moved
                    .iter()
                    .map(|&f| Value::str(self.g.facets[node][f].clone()))
                    .collect();
                diff.insert("moved", Value::Array(names));
                diff.insert(
                    "summary",
                    Value::str(format!("revision {} of {}", self.count, self.g.ids[node])),
                );
                (180 * units, 240 + 40 * units)
            }
            Status::Failed => {
                diff.insert(
                    "failure_reason",
                    Value::str("postconditions failed: has-sources (synthetic)"),
                );
                (0, 0)
            }
            Status::Skipped => (0, 0),
        };
        let refs = by
            .and_then(|p| self.last_hash[p].clone())
            .into_iter()
            .collect();
        let billed = fresh > 0;
        let receipt = Receipt {
            node: self.g.ids[node].clone(),
            contract_fingerprint: self.contract[node].clone(),
            status,
            wake: Wake { source, refs },
            input_fingerprints,
            fingerprints,
            semantic_diff: diff,
            prev: None,
            cost: Cost {
                provider: if billed { "fixture" } else { "none" }.into(),
                model: if billed { "deterministic-fake" } else { "none" }.into(),
                fresh,
                reused,
                surprise_cause: source,
            },
            content_hash: String::new(),
        };
        let stamped = self.ledger.append(receipt)?;
        self.last_hash[node] = Some(stamped.content_hash);
        self.count += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_chain_valid_layered_ledger() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("s");
        let spec = SyntheticSpec {
            nodes: 60,
            receipts: 500,
            seed: 7,
        };
        let out = write_synthetic_state_dir(&dir, &spec).unwrap();
        assert_eq!((out.nodes, out.receipts), (60, 500));
        assert!(out.edges >= 59, "every non-entry node has a producer");
        let opened = crate::replay::open::open_state_dir(&dir, &Default::default()).unwrap();
        assert_eq!(opened.raw.len(), 500);
        let snap = crate::replay::snapshot::build_snapshot(&opened);
        assert!(snap.chain_verify.ok, "{:?}", snap.chain_verify.errors);
        assert_eq!(snap.nodes.len(), 60);
        assert_eq!(snap.edges.len(), out.edges);
        assert!(snap.frames.iter().any(|f| !f.edges_to_light.is_empty()));
        // Deterministic: the same spec writes the same bytes.
        let again = d.path().join("t");
        write_synthetic_state_dir(&again, &spec).unwrap();
        assert_eq!(
            std::fs::read(dir.join("receipts.json")).unwrap(),
            std::fs::read(again.join("receipts.json")).unwrap()
        );
    }

    #[test]
    fn refuses_bad_specs_and_non_empty_targets() {
        let d = tempfile::tempdir().unwrap();
        let bad = |nodes, receipts| SyntheticSpec {
            nodes,
            receipts,
            seed: 1,
        };
        for spec in [
            bad(1, 10),
            bad(MAX_NODES + 1, 10),
            bad(10, MAX_RECEIPTS + 1),
        ] {
            let e = write_synthetic_state_dir(&d.path().join("x"), &spec).unwrap_err();
            assert!(matches!(e, SyntheticError::Spec(_)), "{e}");
        }
        std::fs::write(d.path().join("file"), b"x").unwrap();
        let e = write_synthetic_state_dir(d.path(), &bad(10, 10)).unwrap_err();
        assert!(matches!(e, SyntheticError::NotEmpty(_)), "{e}");
        let e = write_synthetic_state_dir(&d.path().join("file"), &bad(10, 10)).unwrap_err();
        assert!(matches!(e, SyntheticError::NotEmpty(_)), "{e}");
        assert!(
            !d.path().join("x").exists(),
            "nothing written for a bad spec"
        );
    }
}
