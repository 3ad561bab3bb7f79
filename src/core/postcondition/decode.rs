//! `decode` (RUNTIME.md §3.5.3): rebuilding the recursive predicate from a flat pool, with the
//! pool, depth, size and cycle limits.

use super::{
    Comparison, FlatNode, Kind, MAX_DECODED_BYTES, MAX_DECODED_NODES, MAX_LEVELS, MAX_POOL,
    Predicate,
};
use crate::format::json::Value;

/// Why a flat predicate does not decode (RUNTIME.md §3.5.3). Node numbers are pool indices.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// More than [`MAX_POOL`] nodes.
    #[error("predicate pool has {len} nodes (at most {MAX_POOL})")]
    PoolTooLarge {
        /// Pool length.
        len: usize,
    },
    /// `root` outside the pool.
    #[error("predicate root index {root} is out of range (pool has {len} nodes)")]
    RootOutOfRange {
        /// The root index given.
        root: i64,
        /// Pool length.
        len: usize,
    },
    /// A `children`/`child` index outside the pool.
    #[error("predicate node {node}: index {index} is out of range (pool has {len} nodes)")]
    IndexOutOfRange {
        /// The referring node.
        node: usize,
        /// The bad index.
        index: i64,
        /// Pool length.
        len: usize,
    },
    /// `and`/`or` without a non-empty `children` list.
    #[error("predicate node {node}: '{}' needs a non-empty children list", kind.as_str())]
    EmptyChildren {
        /// The node.
        node: usize,
        /// `and` or `or`.
        kind: Kind,
    },
    /// `not` without `child`.
    #[error("predicate node {node}: 'not' needs a child")]
    MissingChild {
        /// The node.
        node: usize,
    },
    /// A leaf without a non-empty `fact`.
    #[error("predicate node {node}: leaf '{}' needs a non-empty fact", kind.as_str())]
    MissingFact {
        /// The node.
        node: usize,
        /// The leaf kind.
        kind: Kind,
    },
    /// An index reachable from itself; `cycle` lists the indices from the first repeated node
    /// back to itself.
    #[error("predicate cycle: node {} is reachable from itself ({})", cycle[0], cycle.iter().map(usize::to_string).collect::<Vec<_>>().join(" -> "))]
    Cycle {
        /// The cycle, first node repeated at the end.
        cycle: Vec<usize>,
    },
    /// Deeper than [`MAX_LEVELS`] levels.
    #[error("predicate is {levels} levels deep (at most {MAX_LEVELS})")]
    TooDeep {
        /// Levels of the decoded tree (root = 1).
        levels: usize,
    },
    /// Larger than [`MAX_DECODED_NODES`] nodes or [`MAX_DECODED_BYTES`] bytes once shared
    /// entries are decoded once per parent.
    #[error(
        "decoded predicate is too large ({nodes} nodes, {bytes} bytes of facts and values; at most {MAX_DECODED_NODES} nodes and {MAX_DECODED_BYTES} bytes)"
    )]
    TooLarge {
        /// Decoded node count (saturating).
        nodes: usize,
        /// Decoded bytes (saturating).
        bytes: usize,
    },
}

struct Decoder<'a> {
    nodes: &'a [FlatNode],
    state: Vec<u8>,
    levels: Vec<usize>,
    count: Vec<usize>,
    bytes: Vec<usize>,
    path: Vec<usize>,
}

fn in_range(i: i64, len: usize) -> Option<usize> {
    usize::try_from(i).ok().filter(|&u| u < len)
}

fn value_bytes(v: &Value) -> usize {
    match v {
        Value::String(s) => s.utf16_len(),
        _ => 0,
    }
}

impl Decoder<'_> {
    /// Depth-first check of everything reachable from `i`: shapes, indices, cycles; fills the
    /// levels, node count and byte weight of each subtree. Recursion depth is bounded by the
    /// pool size (no node is entered twice on one path).
    fn visit(&mut self, i: usize) -> Result<(), DecodeError> {
        let len = self.nodes.len();
        self.state[i] = 1;
        self.path.push(i);
        let node = &self.nodes[i];
        let mut kids: Vec<usize> = Vec::new();
        let mut own_bytes = 0;
        match node.kind {
            Kind::And | Kind::Or => {
                let list = match &node.children {
                    Some(c) if !c.is_empty() => c,
                    _ => {
                        return Err(DecodeError::EmptyChildren {
                            node: i,
                            kind: node.kind,
                        });
                    }
                };
                for &c in list {
                    kids.push(in_range(c, len).ok_or(DecodeError::IndexOutOfRange {
                        node: i,
                        index: c,
                        len,
                    })?);
                }
            }
            Kind::Not => {
                let c = node.child.ok_or(DecodeError::MissingChild { node: i })?;
                kids.push(in_range(c, len).ok_or(DecodeError::IndexOutOfRange {
                    node: i,
                    index: c,
                    len,
                })?);
            }
            _ => match &node.fact {
                Some(f) if !f.is_empty() => {
                    own_bytes = f.len() + node.value.as_ref().map_or(0, value_bytes)
                }
                _ => {
                    return Err(DecodeError::MissingFact {
                        node: i,
                        kind: node.kind,
                    });
                }
            },
        }
        let mut levels = 0;
        let mut count: usize = 1;
        let mut bytes: usize = own_bytes;
        for &k in &kids {
            match self.state[k] {
                1 => {
                    let start = self.path.iter().position(|&p| p == k).unwrap_or(0);
                    let mut cycle = self.path[start..].to_vec();
                    cycle.push(k);
                    return Err(DecodeError::Cycle { cycle });
                }
                0 => self.visit(k)?,
                _ => {}
            }
            levels = levels.max(self.levels[k]);
            count = count.saturating_add(self.count[k]);
            bytes = bytes.saturating_add(self.bytes[k]);
        }
        self.levels[i] = levels + 1;
        self.count[i] = count;
        self.bytes[i] = bytes;
        self.state[i] = 2;
        self.path.pop();
        Ok(())
    }

    /// Builds the tree below `i` (checked by `visit`; depth at most `MAX_LEVELS`).
    fn build(&self, i: usize) -> Predicate {
        let node = &self.nodes[i];
        let len = self.nodes.len();
        let kids = || -> Vec<Predicate> {
            node.children
                .iter()
                .flatten()
                .filter_map(|&c| in_range(c, len))
                .map(|k| self.build(k))
                .collect()
        };
        match node.kind {
            Kind::And => Predicate::And(kids()),
            Kind::Or => Predicate::Or(kids()),
            Kind::Not => Predicate::Not(Box::new(
                node.child
                    .and_then(|c| in_range(c, len))
                    .map(|k| self.build(k))
                    // Unreachable after `visit`; an empty `and` evaluates indeterminate.
                    .unwrap_or(Predicate::And(Vec::new())),
            )),
            Kind::Equals | Kind::NotEquals | Kind::GreaterThanOrEqual | Kind::LessThan => {
                Predicate::Leaf {
                    kind: node.kind.comparison().unwrap_or(Comparison::Equals),
                    fact: node.fact.clone().unwrap_or_default(),
                    value: node.value.clone().unwrap_or(Value::Null),
                }
            }
        }
    }
}

/// Rebuilds the recursive predicate from a flat pool (RUNTIME.md §3.5.3).
///
/// Checks, in this order: the pool has at most [`MAX_POOL`] nodes; `root` is in range; then,
/// depth-first from the root in child order, every reachable node has its members (`and`/`or`
/// a non-empty `children`, `not` a `child`, leaves a non-empty `fact`), every index is in range
/// and no index is reachable from itself; finally the tree is at most [`MAX_LEVELS`] levels
/// deep and within [`MAX_DECODED_NODES`] / [`MAX_DECODED_BYTES`]. Unreferenced pool entries are
/// ignored (not even checked); an index referenced by two parents is decoded twice.
///
/// Errors: the first [`DecodeError`] found.
pub fn decode(nodes: &[FlatNode], root: i64) -> Result<Predicate, DecodeError> {
    let len = nodes.len();
    if len > MAX_POOL {
        return Err(DecodeError::PoolTooLarge { len });
    }
    let r = in_range(root, len).ok_or(DecodeError::RootOutOfRange { root, len })?;
    let mut d = Decoder {
        nodes,
        state: vec![0; len],
        levels: vec![0; len],
        count: vec![0; len],
        bytes: vec![0; len],
        path: Vec::new(),
    };
    d.visit(r)?;
    if d.levels[r] > MAX_LEVELS {
        return Err(DecodeError::TooDeep {
            levels: d.levels[r],
        });
    }
    if d.count[r] > MAX_DECODED_NODES || d.bytes[r] > MAX_DECODED_BYTES {
        return Err(DecodeError::TooLarge {
            nodes: d.count[r],
            bytes: d.bytes[r],
        });
    }
    Ok(d.build(r))
}
