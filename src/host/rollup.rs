//! The host cost rollup (FORMATS.md §16.4, RUNTIME.md §11): tokens summed over a set of
//! receipts, by node and by surprise cause, with disposition counts and its one-line form.
//!
//! ```json
//! {"total": {"fresh": F, "reused": R},
//!  "byNode": {"<node>": {"fresh": f, "reused": r}},
//!  "bySurpriseCause": {"<cause>": {"fresh": f, "reused": r}},
//!  "dispositions": {"rendered": a, "skipped": b, "failed": c, "other": d},
//!  "receipts": N}
//! ```
//!
//! `byNode` is in first-appearance order; `bySurpriseCause` lists only causes present, in the
//! order `input`, `self`, `external`; `other` counts coalesced results (0 over a ledger).

use std::collections::HashMap;

use crate::format::receipt::{Receipt, Status, WakeSource};

/// A `{fresh, reused}` token pair.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Tokens {
    /// Fresh (uncached) tokens.
    pub fresh: u64,
    /// Reused (provider-cached) tokens.
    pub reused: u64,
}

impl Tokens {
    /// Adds another pair (saturating).
    pub(crate) fn add(&mut self, fresh: u64, reused: u64) {
        self.fresh = self.fresh.saturating_add(fresh);
        self.reused = self.reused.saturating_add(reused);
    }

    /// `fresh=<n> reused=<n>`.
    pub(crate) fn pair(&self) -> String {
        crate::host::output::pair(self.fresh, self.reused)
    }
}

/// Disposition counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Dispositions {
    /// `rendered` receipts.
    pub rendered: u64,
    /// `skipped` receipts.
    pub skipped: u64,
    /// `failed` receipts.
    pub failed: u64,
    /// Coalesced results (no receipt) and receipts whose status is not one of the three.
    pub other: u64,
}

/// The host rollup (FORMATS.md §16.4).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CostRollup {
    /// Sum over every receipt.
    pub total: Tokens,
    /// Per node, in first-appearance order.
    pub by_node: Vec<(String, Tokens)>,
    node_index: HashMap<String, usize>,
    /// Per surprise cause, indexed in the order of [`WakeSource::ROLLUP_ORDER`]; `None` when
    /// no receipt had that cause.
    by_cause: [Option<Tokens>; 3],
    /// Disposition counts.
    pub dispositions: Dispositions,
    /// Number of receipts added.
    pub receipts: u64,
}

fn cause_slot(c: WakeSource) -> usize {
    WakeSource::ROLLUP_ORDER
        .iter()
        .position(|x| *x == c)
        .unwrap_or(0)
}

impl CostRollup {
    /// An empty rollup.
    pub(crate) fn new() -> CostRollup {
        CostRollup::default()
    }

    /// Adds one receipt given by its fields. `status` and `cause` are the raw strings; values
    /// outside their enums count under `other` and under no cause.
    pub(crate) fn add(&mut self, node: &str, status: &str, cause: &str, fresh: u64, reused: u64) {
        self.receipts += 1;
        self.total.add(fresh, reused);
        let i = match self.node_index.get(node) {
            Some(i) => *i,
            None => {
                self.by_node.push((node.to_string(), Tokens::default()));
                self.node_index
                    .insert(node.to_string(), self.by_node.len() - 1);
                self.by_node.len() - 1
            }
        };
        self.by_node[i].1.add(fresh, reused);
        if let Some(c) = WakeSource::parse(cause) {
            self.by_cause[cause_slot(c)]
                .get_or_insert_with(Tokens::default)
                .add(fresh, reused);
        }
        match Status::parse(status) {
            Some(Status::Rendered) => self.dispositions.rendered += 1,
            Some(Status::Skipped) => self.dispositions.skipped += 1,
            Some(Status::Failed) => self.dispositions.failed += 1,
            None => self.dispositions.other += 1,
        }
    }

    /// Adds one trail entry.
    pub(crate) fn add_entry(&mut self, e: &crate::replay::trail::TrailEntry) {
        self.add(&e.node, &e.status, &e.surprise_cause, e.fresh, e.reused);
    }

    /// The rollup of a trail's receipts, or of one node's (in O(that node's receipts)).
    pub(crate) fn of_trail(trail: &crate::replay::trail::Trail, node: Option<&str>) -> CostRollup {
        let mut r = CostRollup::new();
        let mut add = |e: &crate::replay::trail::TrailEntry| r.add_entry(e);
        match node {
            Some(n) => trail.entries_of(n).for_each(&mut add),
            None => trail.entries.iter().for_each(&mut add),
        }
        r
    }

    /// Adds one receipt.
    pub(crate) fn add_receipt(&mut self, r: &Receipt) {
        self.add(
            &r.node,
            r.status.as_str(),
            r.cost.surprise_cause.as_str(),
            r.cost.fresh,
            r.cost.reused,
        );
    }

    /// The causes present, in the order `input`, `self`, `external`.
    pub(crate) fn by_surprise_cause(&self) -> Vec<(WakeSource, Tokens)> {
        WakeSource::ROLLUP_ORDER
            .iter()
            .filter_map(|c| self.by_cause[cause_slot(*c)].map(|t| (*c, t)))
            .collect()
    }

    /// The tokens of one node (zero when absent).
    pub(crate) fn node(&self, node: &str) -> Tokens {
        self.node_index
            .get(node)
            .map(|i| self.by_node[*i].1)
            .unwrap_or_default()
    }

    /// `cost: fresh=F reused=R (rendered=a skipped=b failed=c) receipts=N`, with ` failed=c`
    /// only when `c > 0` (FORMATS.md §16.4).
    pub(crate) fn one_line(&self) -> String {
        let failed = if self.dispositions.failed > 0 {
            format!(" failed={}", self.dispositions.failed)
        } else {
            String::new()
        };
        format!(
            "cost: fresh={} reused={} (rendered={} skipped={}{failed}) receipts={}",
            self.total.fresh,
            self.total.reused,
            self.dispositions.rendered,
            self.dispositions.skipped,
            self.receipts
        )
    }
}

/// The JSON shape of FORMATS.md §16.4: `{"total", "byNode", "bySurpriseCause",
/// "dispositions", "receipts"}`, `byNode` in first-appearance order and `bySurpriseCause` with the
/// causes present in the order `input`, `self`, `external`.
impl serde::Serialize for CostRollup {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeStruct};
        struct ByNode<'a>(&'a [(String, Tokens)]);
        impl serde::Serialize for ByNode<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(Some(self.0.len()))?;
                for (node, t) in self.0 {
                    m.serialize_entry(node, t)?;
                }
                m.end()
            }
        }
        struct ByCause(Vec<(WakeSource, Tokens)>);
        impl serde::Serialize for ByCause {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(Some(self.0.len()))?;
                for (cause, t) in &self.0 {
                    m.serialize_entry(cause.as_str(), t)?;
                }
                m.end()
            }
        }
        let mut st = s.serialize_struct("CostRollup", 5)?;
        st.serialize_field("total", &self.total)?;
        st.serialize_field("byNode", &ByNode(&self.by_node))?;
        st.serialize_field("bySurpriseCause", &ByCause(self.by_surprise_cause()))?;
        st.serialize_field("dispositions", &self.dispositions)?;
        st.serialize_field("receipts", &self.receipts)?;
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runtime_example() {
        let mut r = CostRollup::new();
        r.add("price-watch", "rendered", "self", 4100, 1800);
        r.add("price-brief", "rendered", "input", 1110, 0);
        r.add("price-watch", "skipped", "self", 0, 0);
        assert_eq!(
            crate::host::output::json_document(&r),
            r#"{
  "total": {
    "fresh": 5210,
    "reused": 1800
  },
  "byNode": {
    "price-watch": {
      "fresh": 4100,
      "reused": 1800
    },
    "price-brief": {
      "fresh": 1110,
      "reused": 0
    }
  },
  "bySurpriseCause": {
    "input": {
      "fresh": 1110,
      "reused": 0
    },
    "self": {
      "fresh": 4100,
      "reused": 1800
    }
  },
  "dispositions": {
    "rendered": 2,
    "skipped": 1,
    "failed": 0,
    "other": 0
  },
  "receipts": 3
}
"#
        );
        assert_eq!(
            r.one_line(),
            "cost: fresh=5210 reused=1800 (rendered=2 skipped=1) receipts=3"
        );
        r.add("x", "failed", "external", 90, 0);
        r.add("y", "bogus", "nope", 1, 1);
        assert_eq!(
            r.one_line(),
            "cost: fresh=5301 reused=1801 (rendered=2 skipped=1 failed=1) receipts=5"
        );
        assert_eq!(r.dispositions.other, 1);
        assert_eq!(
            r.node("x"),
            Tokens {
                fresh: 90,
                reused: 0
            }
        );
        assert_eq!(r.node("zzz"), Tokens::default());
        let causes: Vec<&str> = r
            .by_surprise_cause()
            .iter()
            .map(|(c, _)| c.as_str())
            .collect();
        assert_eq!(causes, vec!["input", "self", "external"]);
    }

    #[test]
    fn empty_rollup_shape() {
        let r = CostRollup::new();
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["byNode"], serde_json::json!({}));
        assert_eq!(v["bySurpriseCause"], serde_json::json!({}));
        assert_eq!(v["receipts"], 0);
        assert_eq!(
            r.one_line(),
            "cost: fresh=0 reused=0 (rendered=0 skipped=0) receipts=0"
        );
    }
}
