//! The host cost rollup (FORMATS.md §16.4, RUNTIME.md §11): totals, per node (first
//! appearance), per surprise cause (`input`, `self`, `external`, only those present) and
//! dispositions, plus its one-line form.

use serde::Serialize;
use serde::ser::SerializeMap;

use crate::format::receipt::{Receipt, Status, WakeSource};

/// `{fresh, reused}`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Tokens {
    /// Fresh tokens.
    pub fresh: u64,
    /// Reused (cached) tokens.
    pub reused: u64,
}

impl Tokens {
    fn add(&mut self, fresh: u64, reused: u64) {
        self.fresh += fresh;
        self.reused += reused;
    }
}

/// Counts of receipt statuses; `other` counts coalesced dispositions (no receipt).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DispositionCounts {
    /// `rendered`
    pub rendered: u64,
    /// `skipped`
    pub skipped: u64,
    /// `failed`
    pub failed: u64,
    /// coalesced (0 for a ledger rollup)
    pub other: u64,
}

/// The rollup of a set of receipts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CostRollup {
    /// All receipts.
    pub total: Tokens,
    /// Per node, first-appearance order.
    pub by_node: Vec<(String, Tokens)>,
    /// Per cause (index 0 input, 1 self, 2 external); `None` when absent.
    by_cause: [Option<Tokens>; 3],
    /// Dispositions.
    pub dispositions: DispositionCounts,
    /// Receipts counted.
    pub receipts: u64,
}

fn cause_index(c: WakeSource) -> usize {
    match c {
        WakeSource::Input => 0,
        WakeSource::SelfWake => 1,
        WakeSource::External => 2,
    }
}

impl CostRollup {
    /// An empty rollup.
    pub fn new() -> CostRollup {
        CostRollup::default()
    }

    /// Adds one receipt's figures.
    pub fn add(&mut self, node: &str, status: Status, cause: WakeSource, fresh: u64, reused: u64) {
        self.total.add(fresh, reused);
        match self.by_node.iter_mut().find(|(n, _)| n == node) {
            Some((_, t)) => t.add(fresh, reused),
            None => self
                .by_node
                .push((node.to_string(), Tokens { fresh, reused })),
        }
        self.by_cause[cause_index(cause)]
            .get_or_insert_with(Tokens::default)
            .add(fresh, reused);
        match status {
            Status::Rendered => self.dispositions.rendered += 1,
            Status::Skipped => self.dispositions.skipped += 1,
            Status::Failed => self.dispositions.failed += 1,
        }
        self.receipts += 1;
    }

    /// Adds a typed receipt.
    pub fn add_receipt(&mut self, r: &Receipt) {
        self.add(
            &r.node,
            r.status,
            r.cost.surprise_cause,
            r.cost.fresh,
            r.cost.reused,
        );
    }

    /// Counts a coalesced disposition (no receipt).
    pub fn add_coalesced(&mut self) {
        self.dispositions.other += 1;
    }

    /// The causes present, in the order `input`, `self`, `external`.
    pub fn by_cause(&self) -> Vec<(WakeSource, Tokens)> {
        WakeSource::ROLLUP_ORDER
            .iter()
            .filter_map(|c| self.by_cause[cause_index(*c)].map(|t| (*c, t)))
            .collect()
    }

    /// `cost: fresh=F reused=R (rendered=a skipped=b[ failed=c]) receipts=N`.
    pub fn one_line(&self) -> String {
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

    /// Serializes the members (`total`, `byNode`, `bySurpriseCause`, `dispositions`,
    /// `receipts`) into an already open map (the daemon's `/cost` puts `reactor` first).
    pub fn serialize_members<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        struct ByNode<'a>(&'a [(String, Tokens)]);
        impl Serialize for ByNode<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(Some(self.0.len()))?;
                for (k, v) in self.0 {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
        }
        struct ByCause(Vec<(WakeSource, Tokens)>);
        impl Serialize for ByCause {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(Some(self.0.len()))?;
                for (k, v) in &self.0 {
                    m.serialize_entry(k.as_str(), v)?;
                }
                m.end()
            }
        }
        m.serialize_entry("total", &self.total)?;
        m.serialize_entry("byNode", &ByNode(&self.by_node))?;
        m.serialize_entry("bySurpriseCause", &ByCause(self.by_cause()))?;
        m.serialize_entry("dispositions", &self.dispositions)?;
        m.serialize_entry("receipts", &self.receipts)?;
        Ok(())
    }
}

impl Serialize for CostRollup {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(5))?;
        self.serialize_members(&mut m)?;
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_and_one_line() {
        let mut r = CostRollup::new();
        r.add(
            "price-watch",
            Status::Rendered,
            WakeSource::SelfWake,
            4100,
            1800,
        );
        r.add("price-brief", Status::Rendered, WakeSource::Input, 1110, 0);
        r.add("price-watch", Status::Skipped, WakeSource::SelfWake, 0, 0);
        let json = String::from_utf8(crate::format::json::to_js_compact(&r)).unwrap();
        assert_eq!(
            json,
            r#"{"total":{"fresh":5210,"reused":1800},"byNode":{"price-watch":{"fresh":4100,"reused":1800},"price-brief":{"fresh":1110,"reused":0}},"bySurpriseCause":{"input":{"fresh":1110,"reused":0},"self":{"fresh":4100,"reused":1800}},"dispositions":{"rendered":2,"skipped":1,"failed":0,"other":0},"receipts":3}"#
        );
        assert_eq!(
            r.one_line(),
            "cost: fresh=5210 reused=1800 (rendered=2 skipped=1) receipts=3"
        );
        r.add("x", Status::Failed, WakeSource::External, 5, 0);
        assert_eq!(
            r.one_line(),
            "cost: fresh=5215 reused=1800 (rendered=2 skipped=1 failed=1) receipts=4"
        );
    }
}
