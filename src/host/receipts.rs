//! `reactor receipts [list | verify | cost]` (HOST.md §8.11).
//!
//! * `list [--node <node>]`: the `logs` listing under the header `reactor receipts`.
//! * `verify`: every receipt against its stored `content_hash` with the full rule set, every
//!   per-node chain on the raw file (FORMATS.md §7), and the world-model store (every version
//!   file decodes as OPWM1 and hashes to its name; every `published.json` parses and points to
//!   an existing version). Any problem, or an empty trail, exits 1.
//! * `cost [--node <node>] [--rate <rate>]`: the ledger part of the `status` body, optionally
//!   scoped to one node, with dollar figures at a flat rate.

use std::process::ExitCode;

use serde::Serialize;

use crate::format::json::number_to_string;
use crate::host::args::{ArgStream, Globals, OwnedArg};
use crate::host::error::HostError;
use crate::host::logs;
use crate::host::output::Report;
use crate::host::report::{VerbReport, print};
use crate::host::rollup::{CostRollup, Tokens};
use crate::replay::statedir::check_world_models;

/// `reactor receipts --help`.
pub(crate) const HELP: &str = "reactor receipts — ledger listing, verification and cost

Usage:
  reactor receipts [list] [--node <node>]
  reactor receipts verify
  reactor receipts cost [--node <node>] [--rate <rate>]

Subcommands:
  list     One line per receipt (the default; same as `reactor logs`)
  verify   Check every receipt's content_hash and rule set, every per-node chain,
           and the world-model files; exits 1 on any problem or an empty ledger
  cost     Token totals by surprise cause and by node

Flags:
  --node <node>   Only this node (list, cost)
  --rate <rate>   Dollar figures at a flat rate (cost): N, $N, N/Mtok or $N/Mtok
                  (dollars per million tokens), Ntpd or \"N tokens-per-dollar\";
                  reused tokens are billed at the same rate
";

/// The subcommand.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Sub {
    /// `list` (the default).
    #[default]
    List,
    /// `verify`.
    Verify,
    /// `cost`.
    Cost,
}

/// A flat token price.
#[derive(Clone, Debug, PartialEq)]
pub struct Rate {
    /// Dollars per token (fresh and reused alike).
    pub(crate) usd_per_token: f64,
    /// How the rate prints (`$3/Mtok`, `250000 tokens-per-dollar`).
    pub label: String,
}

/// Parses a `--rate` value (HOST.md §8.11): `N`, `$N`, `N/Mtok` or `$N/Mtok` are dollars per
/// million tokens (N ≥ 0); `Ntpd` or `N tokens-per-dollar` are tokens per dollar (N > 0).
/// `None` when unparseable.
pub(crate) fn parse_rate(s: &str) -> Option<Rate> {
    fn num(t: &str) -> Option<f64> {
        let t = t.trim();
        if t.is_empty()
            || !t.bytes().all(|b| b.is_ascii_digit() || b == b'.')
            || t.bytes().filter(|b| *b == b'.').count() > 1
            || t == "."
            || t.ends_with('.')
        {
            return None;
        }
        t.parse::<f64>().ok().filter(|n| n.is_finite())
    }
    let s = s.trim();
    let per_dollar = s
        .strip_suffix("tokens-per-dollar")
        .or_else(|| s.strip_suffix("tpd"));
    if let Some(n) = per_dollar {
        let n = num(n)?;
        if n <= 0.0 {
            return None;
        }
        return Some(Rate {
            usd_per_token: 1.0 / n,
            label: format!("{} tokens-per-dollar", number_to_string(n)),
        });
    }
    let body = s.strip_prefix('$').unwrap_or(s);
    let body = body.strip_suffix("/Mtok").unwrap_or(body);
    let n = num(body)?;
    Some(Rate {
        usd_per_token: n / 1_000_000.0,
        label: format!("${}/Mtok", number_to_string(n)),
    })
}

/// Parsed arguments.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Args {
    /// The subcommand.
    pub sub: Sub,
    /// `--node`.
    pub node: Option<String>,
    /// `--rate`.
    pub rate: Option<Rate>,
}

/// Parses `receipts` arguments.
pub fn parse(s: &mut ArgStream<'_>) -> Result<Args, HostError> {
    let mut a = Args::default();
    let mut sub: Option<Sub> = None;
    let mut rate_given = false;
    while let Some(arg) = s.next_arg()? {
        match &arg {
            OwnedArg::Long(l) if l == "node" => a.node = Some(s.value("--node")?),
            OwnedArg::Long(l) if l == "rate" => {
                let v = s.value("--rate")?;
                a.rate = Some(parse_rate(&v).ok_or_else(|| {
                    HostError::usage(
                        format!(
                            "invalid --rate '{}' (expected N, $N, N/Mtok, $N/Mtok, Ntpd or \"N tokens-per-dollar\")",
                            crate::host::yaml::clip(&v, 40)
                        ),
                        Some("receipts"),
                    )
                })?);
                rate_given = true;
            }
            OwnedArg::Value(v) if sub.is_none() => {
                let name = v.to_string_lossy();
                sub = Some(match name.as_ref() {
                    "list" => Sub::List,
                    "verify" => Sub::Verify,
                    "cost" => Sub::Cost,
                    other => {
                        return Err(HostError::usage(
                            format!(
                                "unknown subcommand '{}' for 'receipts' (expected list, verify or cost)",
                                crate::host::yaml::clip(other, 40)
                            ),
                            Some("receipts"),
                        ));
                    }
                });
            }
            _ => return Err(s.unexpected(&arg)),
        }
    }
    a.sub = sub.unwrap_or_default();
    if rate_given && a.sub != Sub::Cost {
        return Err(HostError::usage(
            "--rate only applies to 'receipts cost'",
            Some("receipts"),
        ));
    }
    if a.node.is_some() && a.sub == Sub::Verify {
        return Err(HostError::usage(
            "--node does not apply to 'receipts verify' (it checks the whole ledger)",
            Some("receipts"),
        ));
    }
    Ok(a)
}

/// Dollars with four decimals: `$0.0210`.
pub fn dollars(x: f64) -> String {
    format!("${x:.4}")
}

/// Appends the ledger part of the `status` body (HOST.md §8.7): `receipts`, `run cost`,
/// `dispositions`, the optional rate lines, then the blocks by surprise cause and by node
/// (omitted when there are no receipts).
pub(crate) fn write_ledger_body(r: &mut Report, rollup: &CostRollup, rate: Option<&Rate>) {
    r.field("receipts", rollup.receipts.to_string());
    r.field("run cost", rollup.total.pair());
    let d = &rollup.dispositions;
    r.field(
        "dispositions",
        format!(
            "rendered={} skipped={} failed={}",
            d.rendered, d.skipped, d.failed
        ),
    );
    if let Some(rate) = rate {
        let f = rollup.total.fresh as f64 * rate.usd_per_token;
        let u = rollup.total.reused as f64 * rate.usd_per_token;
        r.field("rate", &rate.label);
        r.field(
            "cost (USD)",
            format!(
                "total={} fresh={} reused={}",
                dollars(f + u),
                dollars(f),
                dollars(u)
            ),
        );
    }
    if rollup.receipts == 0 {
        return;
    }
    r.blank();
    r.line(2, "cost by surprise cause:");
    for (c, t) in rollup.by_surprise_cause() {
        r.sub_field(c.as_str(), t.pair());
    }
    r.blank();
    r.line(2, "cost by node:");
    for (n, t) in &rollup.by_node {
        r.node_row(n, t.pair());
    }
}

/// `--rate` in the `receipts cost` JSON: `{"usdPerToken", "label"}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RateJson {
    /// Dollars per token.
    pub(crate) usd_per_token: f64,
    /// How the rate prints.
    pub label: String,
}

/// Dollar amounts: `{"total", "fresh", "reused"}`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub(crate) struct Dollars {
    /// Fresh plus reused.
    pub total: f64,
    /// Fresh tokens at the rate.
    pub fresh: f64,
    /// Reused tokens at the rate.
    pub reused: f64,
}

/// The `receipts cost` report (HOST.md §8.11). JSON: the cost rollup's members, then
/// `"node"?`, `"rate"?: {"usdPerToken", "label"}` and `"dollars"?: {"total", "fresh",
/// "reused"}`.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct CostReport {
    /// The rollup (whole ledger or one node).
    #[serde(flatten)]
    pub(crate) rollup: CostRollup,
    /// `--node`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// `--rate`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<RateJson>,
    /// The dollar figures at that rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dollars: Option<Dollars>,
}

impl VerbReport for CostReport {
    fn to_text(&self) -> String {
        let mut r = Report::new("receipts cost");
        if let Some(n) = &self.node {
            r.field("node", n);
        }
        let rate = self.rate.as_ref().map(|x| Rate {
            usd_per_token: x.usd_per_token,
            label: x.label.clone(),
        });
        write_ledger_body(&mut r, &self.rollup, rate.as_ref());
        r.finish()
    }
}

fn exec_cost(a: &Args, g: &Globals, state_dir: &std::path::Path) -> Result<ExitCode, HostError> {
    let (trail, rollup) = logs::read_trail_rollup(state_dir, a.node.as_deref())?;
    if let Some(n) = &a.node
        && !logs::is_known_node(state_dir, &trail, n)
    {
        return Err(logs::unknown_node(n));
    }
    let dollars = a.rate.as_ref().map(|rate| {
        let f = rollup.total.fresh as f64 * rate.usd_per_token;
        let u = rollup.total.reused as f64 * rate.usd_per_token;
        Dollars {
            total: f + u,
            fresh: f,
            reused: u,
        }
    });
    let report = CostReport {
        rollup,
        node: a.node.clone(),
        rate: a.rate.as_ref().map(|r| RateJson {
            usd_per_token: r.usd_per_token,
            label: r.label.clone(),
        }),
        dollars,
    };
    print(&report, g.json)?;
    Ok(ExitCode::SUCCESS)
}

/// One node of `receipts verify`: JSON `{"node", "receipts", "ok", "head", "errors", "cost"}`.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct NodeVerdict {
    /// The node.
    pub node: String,
    /// Its receipt count.
    pub receipts: usize,
    /// True when its chain verifies.
    pub ok: bool,
    /// The chain head (when ok).
    pub head: Option<String>,
    /// Every problem.
    pub errors: Vec<String>,
    /// Its tokens.
    pub cost: Tokens,
}

/// The world-model part of `receipts verify`: `{"ok", "versions", "errors"}`.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct WorldModelVerdict {
    /// No problem found.
    pub ok: bool,
    /// Version files checked.
    pub versions: usize,
    /// Every problem.
    pub errors: Vec<String>,
}

/// The `receipts verify` report (HOST.md §8.11). JSON: `{"nodes": [...], "ok", "receipts",
/// "cost": <cost rollup>, "worldModels": {"ok", "versions", "errors"}, "empty"?: true}`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct VerifyReport {
    /// Per node, in order of first appearance.
    pub nodes: Vec<NodeVerdict>,
    /// Every chain and the world-model store verify, and the ledger is not empty.
    pub ok: bool,
    /// The number of receipts.
    pub receipts: usize,
    /// The whole ledger's rollup.
    pub cost: CostRollup,
    /// The world-model store.
    pub world_models: WorldModelVerdict,
    /// `true` for an empty ledger.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub empty: Option<bool>,
}

impl VerbReport for VerifyReport {
    fn to_text(&self) -> String {
        let mut r = Report::new("receipts verify");
        if self.empty.is_some() {
            r.line(2, "no receipts found in this state dir — nothing to verify");
            return r.finish();
        }
        let chains_ok = self.nodes.iter().all(|n| n.ok);
        r.field("receipts", self.receipts.to_string());
        r.field("total cost", self.cost.total.pair());
        r.field("chain", if chains_ok { "ALL OK" } else { "BROKEN" });
        if self.world_models.ok {
            r.field(
                "world-models",
                format!("ok ({} versions)", self.world_models.versions),
            );
        } else {
            r.field("world-models", "BROKEN");
            for e in &self.world_models.errors {
                r.line(4, format!("! {e}"));
            }
        }
        r.blank();
        r.line(2, "per node:");
        for n in &self.nodes {
            let summary = format!("{} receipts, {}", n.receipts, n.cost.pair());
            if n.ok {
                r.node_row(&n.node, format!("ok ({summary})"));
            } else {
                r.node_row(&n.node, format!("BROKEN ({summary})"));
                for e in &n.errors {
                    r.line(6, format!("! {e}"));
                }
            }
        }
        r.finish()
    }
}

fn exec_verify(g: &Globals, state_dir: &std::path::Path) -> Result<ExitCode, HostError> {
    let (trail, rollup) = logs::read_trail_rollup(state_dir, None)?;
    let wm = check_world_models(state_dir);
    let nodes: Vec<NodeVerdict> = trail
        .nodes()
        .into_iter()
        .map(|node| {
            let verdict = trail.verify_chain(node);
            NodeVerdict {
                node: node.to_string(),
                receipts: trail.count_of(node),
                ok: verdict.ok,
                head: verdict.head,
                errors: verdict.errors,
                cost: rollup.node(node),
            }
        })
        .collect();
    let empty = trail.is_empty();
    let report = VerifyReport {
        ok: nodes.iter().all(|n| n.ok) && wm.ok() && !empty,
        nodes,
        receipts: trail.len(),
        cost: rollup,
        world_models: WorldModelVerdict {
            ok: wm.ok(),
            versions: wm.versions,
            errors: wm.errors,
        },
        empty: empty.then_some(true),
    };
    print(&report, g.json)?;
    Ok(ExitCode::from(u8::from(!report.ok)))
}

/// Runs `receipts`.
pub fn exec(a: Args, g: &Globals) -> Result<ExitCode, HostError> {
    let (_, reactor) = g.select_reader("receipts")?;
    match a.sub {
        Sub::List => {
            print(
                &logs::listing("receipts", &reactor.state_dir, a.node.as_deref())?,
                g.json,
            )?;
            Ok(ExitCode::SUCCESS)
        }
        Sub::Verify => exec_verify(g, &reactor.state_dir),
        Sub::Cost => exec_cost(&a, g, &reactor.state_dir),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_grammar() {
        for (s, per_token, label) in [
            ("3", 3e-6, "$3/Mtok"),
            ("$3", 3e-6, "$3/Mtok"),
            ("3/Mtok", 3e-6, "$3/Mtok"),
            ("$3.50/Mtok", 3.5e-6, "$3.5/Mtok"),
            ("0", 0.0, "$0/Mtok"),
            ("250000tpd", 4e-6, "250000 tokens-per-dollar"),
            ("250000 tokens-per-dollar", 4e-6, "250000 tokens-per-dollar"),
        ] {
            let r = parse_rate(s).unwrap_or_else(|| panic!("{s}"));
            assert!((r.usd_per_token - per_token).abs() < 1e-15, "{s}");
            assert_eq!(r.label, label, "{s}");
        }
        for bad in [
            "", "abc", "$", "-3", "3/Ktok", "0tpd", "1e3", "3.", ".", "1.2.3", "$$3", "NaN", "inf",
        ] {
            assert!(parse_rate(bad).is_none(), "{bad}");
        }
    }

    proptest::proptest! {
        /// Any rate text parses to a finite, non-negative price or is refused.
        #[test]
        fn rate_parsing_is_total(s in "\\PC{0,24}") {
            if let Some(r) = parse_rate(&s) {
                proptest::prop_assert!(r.usd_per_token.is_finite() && r.usd_per_token >= 0.0);
            }
        }
    }

    #[test]
    fn dollars_have_four_decimals() {
        let r = parse_rate("$3/Mtok").unwrap();
        assert_eq!(dollars(7010.0 * r.usd_per_token), "$0.0210");
        assert_eq!(dollars(5210.0 * r.usd_per_token), "$0.0156");
        assert_eq!(dollars(1800.0 * r.usd_per_token), "$0.0054");
        assert_eq!(dollars(0.0), "$0.0000");
    }

    #[test]
    fn ledger_body_layout() {
        let mut rollup = CostRollup::new();
        rollup.add("price-watch", "rendered", "self", 4100, 1800);
        rollup.add("price-brief", "rendered", "input", 1110, 0);
        let mut r = Report::new("receipts cost");
        write_ledger_body(&mut r, &rollup, parse_rate("$3/Mtok").as_ref());
        assert_eq!(
            r.finish(),
            "reactor receipts cost\n\n  receipts       2\n  run cost       fresh=5210 reused=1800\n  dispositions   rendered=2 skipped=0 failed=0\n  rate           $3/Mtok\n  cost (USD)     total=$0.0210 fresh=$0.0156 reused=$0.0054\n\n  cost by surprise cause:\n    input        fresh=1110 reused=0\n    self         fresh=4100 reused=1800\n\n  cost by node:\n    price-watch                  fresh=4100 reused=1800\n    price-brief                  fresh=1110 reused=0\n"
        );
    }
}
