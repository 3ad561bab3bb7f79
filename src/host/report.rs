//! Verbs gather, printers print: every verb builds one typed report, and its text form
//! ([`VerbReport::to_text`]) and its `--json` document (the report's derived `Serialize`, HOST.md
//! §3.2) are both rendered from that value. This module holds the trait and the fragments
//! several reports share: dispositions (HOST.md §8), chain verdicts (§8.8, §8.10), the current
//! writer (§8.2, §8.7) and the `compile` member of `run` / `trigger` (§8.4).

use serde::Serialize;

use crate::core::ReconcileResult;
use crate::format::receipt::ChainVerdict;
use crate::host::boot::CompileOutcome;
use crate::host::error::HostError;
use crate::host::output::{self, Report};
use crate::host::rollup::Tokens;
use crate::replay::statedir::Writer;

/// A verb's report. `Serialize` gives the `--json` document (members in field order);
/// [`VerbReport::to_text`] gives the text report of HOST.md §3.1.
pub trait VerbReport: Serialize {
    /// The text report, ending with a newline.
    fn to_text(&self) -> String;
}

/// Prints `report` on stdout: its JSON document with `--json`, else its text.
pub fn print<R: VerbReport>(report: &R, json: bool) -> Result<(), HostError> {
    if json {
        output::print_json(report)
    } else {
        output::write_stdout(&report.to_text())
    }
}

/// One reconcile result: JSON `{"node", "disposition", "reason"?}` (HOST.md §8).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DispositionRow {
    /// The node.
    pub node: String,
    /// `rendered`, `skipped`, `failed` or `coalesced`.
    pub disposition: &'static str,
    /// The sanitized failure reason (failed only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl DispositionRow {
    /// The rows of reconcile results, in firing order.
    pub fn of(results: &[ReconcileResult]) -> Vec<DispositionRow> {
        results
            .iter()
            .map(|x| DispositionRow {
                node: x.node.clone(),
                disposition: x.disposition.as_str(),
                reason: x.reason.clone(),
            })
            .collect()
    }

    /// True for a `failed` row.
    pub fn failed(&self) -> bool {
        self.disposition == crate::core::Disposition::Failed.as_str()
    }
}

/// A dispositions block: `    <node:28> <disposition>` and, under a failed one,
/// `      reason: <reason>` (HOST.md §8).
pub(crate) fn dispositions_block(r: &mut Report, rows: &[DispositionRow]) {
    for x in rows {
        r.node_row(&x.node, x.disposition);
        if let Some(reason) = &x.reason {
            r.line(6, format!("reason: {reason}"));
        }
    }
}

/// A chain verdict: JSON `{"ok": true, "head", "length"}` or `{"ok": false, "errors"}`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChainReport {
    /// True when the chain verifies.
    pub ok: bool,
    /// The last receipt's content hash (when ok; `null` for an empty chain).
    pub head: Option<String>,
    /// The number of receipts (when ok).
    pub length: usize,
    /// Every problem, in order (when broken).
    pub errors: Vec<String>,
}

impl From<&ChainVerdict> for ChainReport {
    fn from(v: &ChainVerdict) -> Self {
        ChainReport {
            ok: v.ok,
            head: v.head.clone(),
            length: v.length,
            errors: v.errors.clone(),
        }
    }
}

impl Serialize for ChainReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("ChainReport", 3)?;
        st.serialize_field("ok", &self.ok)?;
        if self.ok {
            st.serialize_field("head", &self.head)?;
            st.serialize_field("length", &self.length)?;
        } else {
            st.serialize_field("errors", &self.errors)?;
        }
        st.end()
    }
}

/// Facet → fingerprint pairs in file order, serialized as one JSON object (a `published.json`'s
/// `fingerprints`, FORMATS.md §14.4).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FacetMap(pub Vec<(String, String)>);

impl Serialize for FacetMap {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// The current writer of a state directory: JSON `{"pid", "daemon", "url"?}` (HOST.md §7.1).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WriterInfo {
    /// The pid recorded in `.lock`.
    pub pid: u32,
    /// True when `serve.json` names the same pid.
    pub daemon: bool,
    /// The daemon's URL, when it has an HTTP surface.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `pid <pid>` or `reactor serve (pid <pid>) at <url>`.
    #[serde(skip)]
    pub text: String,
}

impl From<&Writer> for WriterInfo {
    fn from(w: &Writer) -> Self {
        WriterInfo {
            pid: w.pid,
            daemon: w.daemon,
            url: w.url.clone(),
            text: w.describe(),
        }
    }
}

/// The `writer` line: `none` or [`WriterInfo::text`].
pub(crate) fn writer_line(w: Option<&WriterInfo>) -> String {
    w.map_or_else(|| "none".to_string(), |w| w.text.clone())
}

/// The `compile` member of `run` and `trigger`: JSON `{"status": "cache-hit"|"compiled",
/// "cost": {"fresh", "reused"}}` (HOST.md §8.4).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct CompileStep {
    /// `cache-hit` or `compiled`.
    pub status: &'static str,
    /// The session tokens of this invocation's compile (zero for a hit).
    pub cost: Tokens,
}

impl From<&CompileOutcome> for CompileStep {
    fn from(o: &CompileOutcome) -> Self {
        match o {
            CompileOutcome::CacheHit { .. } => CompileStep {
                status: "cache-hit",
                cost: Tokens::default(),
            },
            CompileOutcome::Compiled(c) => CompileStep {
                status: "compiled",
                cost: Tokens {
                    fresh: c.cost.tokens.fresh,
                    reused: c.cost.tokens.reused,
                },
            },
        }
    }
}

impl CompileStep {
    /// True when the sessions ran.
    pub(crate) fn compiled(&self) -> bool {
        self.status == "compiled"
    }

    /// `cache hit (zero session cost)` or `compiled (sessions ran) fresh=<n> reused=<n>`.
    pub(crate) fn line(&self) -> String {
        if self.compiled() {
            format!("compiled (sessions ran) {}", self.cost.pair())
        } else {
            "cache hit (zero session cost)".to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_shapes() {
        let ok = ChainReport {
            ok: true,
            head: None,
            length: 0,
            errors: vec![],
        };
        assert_eq!(
            serde_json::to_string(&ok).unwrap(),
            r#"{"ok":true,"head":null,"length":0}"#
        );
        let broken = ChainReport {
            ok: false,
            head: Some("h".into()),
            length: 2,
            errors: vec!["e".into()],
        };
        assert_eq!(
            serde_json::to_string(&broken).unwrap(),
            r#"{"ok":false,"errors":["e"]}"#
        );
    }

    #[test]
    fn disposition_rows() {
        let rows = vec![
            DispositionRow {
                node: "a".into(),
                disposition: "rendered",
                reason: None,
            },
            DispositionRow {
                node: "b".into(),
                disposition: "failed",
                reason: Some("model call failed: x".into()),
            },
        ];
        assert_eq!(
            serde_json::to_string(&rows).unwrap(),
            r#"[{"node":"a","disposition":"rendered"},{"node":"b","disposition":"failed","reason":"model call failed: x"}]"#
        );
        assert!(rows[1].failed() && !rows[0].failed());
        let mut r = Report::new("run");
        dispositions_block(&mut r, &rows);
        assert_eq!(
            r.finish(),
            "reactor run\n\n    a                            rendered\n    b                            failed\n      reason: model call failed: x\n"
        );
    }
}
