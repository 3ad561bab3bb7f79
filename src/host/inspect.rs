//! `reactor inspect <node> [--version <v>] [--strict]` (HOST.md §8.8): one node in detail — its
//! place in the compiled topology, its published world-model pointer, its receipts, cost and
//! chain verdict, and what a render produced: the node's world-model files at its published
//! version, or at `--version <v>` (a version address, or an `@atomic` fingerprint from one of its
//! receipts; looked up as FORMATS.md §14.9 says). `truth.json` and `index.md` are shown in full
//! (JSON pretty-printed, at most [`SHOWN_LINES`] lines each in the text form), every other file
//! by name and size.
//!
//! A node outside the topology but present in the ledger (a phantom ingress producer, a removed
//! node) shows `known          no (not in the compiled topology)`; a node in neither is
//! `unknown node '<node>'` (exit 1). `--strict` exits 1 on a broken chain.
//!
//! `last render    frame <i>: <cause>` (JSON `lastRender: {"frame", "why"}` or `null`) names the
//! node's latest rendered or failed receipt (`frame` is its ledger position) and why it happened
//! ([`crate::replay::why`], issue 9).

use std::process::ExitCode;

use serde::Serialize;

use crate::format::address::is_content_address;
use crate::format::json::Value;
use crate::format::topology::TopologyFile;
use crate::host::args::{ArgStream, Globals, OwnedArg};
use crate::host::error::{HostError, StateDirContext};
use crate::host::logs::unknown_node;
use crate::host::output::Report;
use crate::host::report::{ChainReport, FacetMap, VerbReport, print};
use crate::host::rollup::CostRollup;
use crate::replay::statedir::{self, VersionFile};
use crate::replay::trail::TrailRead;
use crate::replay::why::Why;

/// `reactor inspect --help`.
pub(crate) const HELP: &str = "reactor inspect — one node in detail

Usage:
  reactor inspect <node> [--version <v>] [--strict] [global flags]

Flags:
  --version <v>   Show the world-model files at this version: a sha256:… version, or an
                  @atomic fingerprint from one of the node's receipts (default: the
                  published version)
  --strict        Exit 1 when the node's receipt chain is broken

Shows the node's wake source, contract fingerprint, facets, subscriptions, published
fingerprints and version, receipts, cost, last status, the cause of its last render
(which producers' fingerprints moved its memo key, a contract change, a retry or a
bare wake) and chain verdict, then the world-model files: truth.json and index.md in
full, other files by name and size.
";

/// Lines of `truth.json` / `index.md` shown in the text form (the JSON form has them whole).
pub(crate) const SHOWN_LINES: usize = 40;

/// Parsed arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Args {
    /// The node.
    pub node: String,
    /// `--strict`.
    pub strict: bool,
    /// `--version`: the world-model version to show.
    pub version: Option<String>,
}

/// Parses `inspect` arguments.
pub fn parse(s: &mut ArgStream<'_>) -> Result<Args, HostError> {
    let mut node: Option<String> = None;
    let mut strict = false;
    let mut version = None;
    while let Some(arg) = s.next_arg()? {
        match &arg {
            OwnedArg::Long(l) if l == "strict" => {
                s.no_value("--strict")?;
                strict = true;
            }
            OwnedArg::Long(l) if l == "version" => {
                let v = s.value("--version")?;
                if v.trim().is_empty() {
                    return Err(HostError::usage(
                        "--version needs a non-empty value",
                        Some("inspect"),
                    ));
                }
                version = Some(v);
            }
            OwnedArg::Value(v) if node.is_none() => {
                node = Some(s.positional(v.clone(), "<node>")?);
            }
            _ => return Err(s.unexpected(&arg)),
        }
    }
    match node {
        Some(node) => Ok(Args {
            node,
            strict,
            version,
        }),
        None => Err(s.missing("<node>")),
    }
}

/// `sha256:` + 8 hex digits + `…` for a content address; other tokens as they are (clipped).
pub(crate) fn short_token(s: &str) -> String {
    if is_content_address(s) {
        format!("{}…", &s[..15])
    } else {
        crate::host::yaml::clip(s, 60)
    }
}

fn contract_of(t: &TopologyFile, node: &str) -> Option<String> {
    t.topology
        .nodes
        .iter()
        .find(|n| n.node == node)
        .and_then(|n| n.contract_fingerprint.clone())
        .filter(|f| !f.is_empty())
        .or_else(|| {
            t.contract_fingerprints
                .as_ref()?
                .iter()
                .find(|(k, _)| k == node)
                .map(|(_, v)| v.clone())
        })
}

/// One subscription: JSON `{"facet", "producer"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Subscription {
    /// The facet.
    pub facet: String,
    /// The producing node.
    pub producer: String,
}

/// The node's latest rendered or failed receipt and its cause: JSON `{"frame", "why"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct LastRender {
    /// Its position in the ledger.
    pub frame: usize,
    /// Why it rendered ([`crate::replay::why::Why`]).
    pub why: Why,
}

/// The `inspect` report (HOST.md §8.8). JSON: `{"node", "known", "wake_source",
/// "contract_fingerprint", "maintains", "subscribesTo": [{"facet", "producer"}],
/// "publishedFingerprints", "publishedVersion", "lastReceipt", "receipts", "cost": <cost
/// rollup>, "chain": {"ok", "head"?, "length"?, "errors"?}, "lastRender": {"frame", "why"} |
/// null, "worldModel": {"version", "published", "files"} | null}`.
#[derive(Clone, Debug, Serialize)]
pub struct InspectReport {
    /// The node.
    pub node: String,
    /// True when the node is in the compiled topology.
    pub known: bool,
    /// Its wake source (topology nodes only).
    pub wake_source: Option<String>,
    /// Its contract fingerprint (topology nodes only).
    pub contract_fingerprint: Option<String>,
    /// Its declared facets.
    pub maintains: Vec<String>,
    /// What it subscribes to.
    #[serde(rename = "subscribesTo")]
    pub subscribes_to: Vec<Subscription>,
    /// The fingerprints of `published.json` (`null` before the first commit).
    #[serde(rename = "publishedFingerprints")]
    pub published_fingerprints: Option<FacetMap>,
    /// The published version (`null` before the first commit).
    #[serde(rename = "publishedVersion")]
    pub(crate) published_version: Option<String>,
    /// The node's last receipt as stored.
    #[serde(rename = "lastReceipt")]
    pub last_receipt: Option<Value>,
    /// Its receipt count.
    pub receipts: usize,
    /// Its cost rollup.
    pub cost: CostRollup,
    /// Its chain verdict.
    pub chain: ChainReport,
    /// Its latest rendered or failed receipt and why (`null` when it has none).
    #[serde(rename = "lastRender")]
    pub(crate) last_render: Option<LastRender>,
    /// Its world-model files at the published or requested version (`null` for a cold node
    /// without `--version`, or a published version whose file cannot be read).
    #[serde(rename = "worldModel")]
    pub(crate) world_model: Option<WorldModelFiles>,
    /// The `version` line's detail: `(<n> files)`, `(version file missing)` or
    /// `(unreadable: <error>)`.
    #[serde(skip)]
    pub(crate) version_detail: Option<String>,
    /// The last receipt's status and failure reason.
    #[serde(skip)]
    pub last: Option<(String, Option<String>)>,
}

impl VerbReport for InspectReport {
    fn to_text(&self) -> String {
        let mut r = Report::new(&format!("inspect {}", self.node));
        if self.known {
            r.field("wake source", self.wake_source.as_deref().unwrap_or("?"));
            r.field(
                "contract",
                self.contract_fingerprint.as_deref().unwrap_or("?"),
            );
            r.field("maintains", format!("[{}]", self.maintains.join(", ")));
            r.line(2, "subscribes to:");
            if self.subscribes_to.is_empty() {
                r.line(4, "(none)");
            }
            for s in &self.subscribes_to {
                r.line(4, format!("{} <- {}", s.facet, s.producer));
            }
        } else {
            r.field("known", "no (not in the compiled topology)");
        }
        r.line(2, "published:");
        match &self.published_fingerprints {
            Some(fps) => {
                for (facet, token) in &fps.0 {
                    r.sub_field(facet, short_token(token));
                }
            }
            None => {
                r.line(4, "(none — cold)");
            }
        }
        if let (Some(v), Some(detail)) = (&self.published_version, &self.version_detail) {
            r.field("version", format!("{} {detail}", short_token(v)));
        }
        r.field("receipts", self.receipts.to_string());
        r.field("cost", self.cost.total.pair());
        r.field(
            "last status",
            self.last
                .as_ref()
                .map(|(s, _)| s.as_str())
                .unwrap_or("(none)"),
        );
        if let Some(reason) = self.last.as_ref().and_then(|(_, r)| r.as_deref()) {
            r.field("last reason", reason);
        }
        if let Some(l) = &self.last_render {
            r.field("last render", format!("frame {}: {}", l.frame, l.why.text));
        }
        if self.chain.ok {
            r.field("chain", format!("ok ({} receipts)", self.chain.length));
        } else {
            r.field("chain", "BROKEN");
            for e in &self.chain.errors {
                r.line(4, format!("! {e}"));
            }
        }
        if let Some(wm) = &self.world_model {
            r.blank();
            wm.write(&mut r);
        }
        r.finish()
    }
}

/// The node's place in the compiled topology: wake source, contract fingerprint, facets and
/// subscriptions.
fn topology_part(
    state_dir: &std::path::Path,
    t: &TopologyFile,
    node: &str,
) -> (
    Option<String>,
    Option<String>,
    Vec<String>,
    Vec<Subscription>,
) {
    let wake = t
        .topology
        .nodes
        .iter()
        .find(|n| n.node == node)
        .and_then(|n| n.wake_source)
        .map(|w| w.as_str().to_string());
    let subs = t
        .topology
        .edges
        .iter()
        .filter(|e| e.subscriber == node)
        .map(|e| Subscription {
            facet: e.facet.clone(),
            producer: e.producer.clone(),
        })
        .collect();
    (
        wake,
        contract_of(t, node),
        statedir::maintains(state_dir, &t.topology.index(), node),
        subs,
    )
}

/// Gathers the `inspect` report of `node` (HOST.md §8.8), with its world-model files at
/// `version` (default: the published version).
///
/// Errors: an unknown node; a `version` the node's store does not hold (input, exit 1).
pub fn gather(
    state_dir: &std::path::Path,
    node: &str,
    version: Option<&str>,
) -> Result<InspectReport, HostError> {
    let trail = crate::host::logs::read_trail_with(
        state_dir,
        &TrailRead {
            why: true,
            why_of: Some(node),
            last_raw_of: Some(node),
            entries_of: Some(node),
        },
    )?;
    let topo = statedir::read_topology(state_dir).in_state_dir(state_dir)?;
    let in_topology = topo.as_ref().is_some_and(|t| t.topology.has_node(node));
    if !in_topology && !trail.has_node(node) {
        let e = unknown_node(node);
        return Err(if topo.is_none() {
            e.with_hint("this state dir has no compiled topology; run `reactor compile` first")
        } else {
            e
        });
    }
    let published = statedir::published(state_dir, node);
    let (wake, contract, maintains, subs) = match (&topo, in_topology) {
        (Some(t), true) => topology_part(state_dir, t, node),
        _ => (None, None, Vec::new(), Vec::new()),
    };
    let version_detail =
        published.as_ref().map(
            |p| match statedir::version_file(state_dir, node, &p.version) {
                VersionFile::Files(n) => format!("({n} files)"),
                VersionFile::Missing => "(version file missing)".to_string(),
                VersionFile::Invalid(e) => format!("(unreadable: {e})"),
            },
        );
    let world_model = match (version, &published) {
        (Some(v), _) => Some(
            WorldModelFiles::read(state_dir, node, v, published.as_ref())
                .ok_or_else(|| no_such_version(node, v))?,
        ),
        (None, Some(p)) => WorldModelFiles::read(state_dir, node, &p.version, Some(p)),
        (None, None) => None,
    };
    let last = trail.entries_of(node).last();
    let last_render = trail
        .last_render(node)
        .map(|(frame, why)| LastRender { frame, why });
    Ok(InspectReport {
        node: node.to_string(),
        known: in_topology,
        wake_source: wake,
        contract_fingerprint: contract,
        maintains,
        subscribes_to: subs,
        published_fingerprints: published
            .as_ref()
            .map(|p| FacetMap(p.fingerprints.0.clone())),
        published_version: published.as_ref().map(|p| p.version.clone()),
        last_receipt: trail.last_raw(node).cloned(),
        receipts: trail.count_of(node),
        cost: CostRollup::of_trail(&trail, Some(node)),
        chain: ChainReport::from(&trail.verify_chain(node)),
        last_render,
        world_model,
        version_detail,
        last: last.map(|e| (e.status.clone(), e.reason.clone())),
    })
}

/// `node '<node>' has no world-model version '<v>'` (exit 1).
fn no_such_version(node: &str, v: &str) -> HostError {
    HostError::input(format!(
        "node '{node}' has no world-model version '{}'",
        crate::host::yaml::clip(v, 120)
    ))
    .with_hint(format!(
        "give a sha256:… version or the @atomic fingerprint of one of its receipts (receipts.json; `reactor inspect {node} --json` shows the last), or leave --version out for the published one"
    ))
}

/// One world-model file: JSON `{"path", "bytes", "text"?}`; `text` (the whole file) for
/// `truth.json` and `index.md` when they are UTF-8.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct WorldModelFile {
    /// The normalized path inside the world-model.
    pub path: String,
    /// Its size in bytes.
    pub bytes: usize,
    /// Its text (`truth.json` and `index.md` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// A node's world-model at one version: JSON `{"version", "published", "files": [...]}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct WorldModelFiles {
    /// The artifact version the files come from.
    pub version: String,
    /// It is the node's current published version.
    pub published: bool,
    /// The files, in artifact (path) order.
    pub files: Vec<WorldModelFile>,
}

/// The files whose contents `inspect` shows.
const SHOWN_FILES: [&str; 2] = ["truth.json", "index.md"];

impl WorldModelFiles {
    /// Reads `node` at `requested` (FORMATS.md §14.9); `None` when the store does not hold it.
    fn read(
        state_dir: &std::path::Path,
        node: &str,
        requested: &str,
        published: Option<&crate::store::worldmodel::Published>,
    ) -> Option<WorldModelFiles> {
        let store = crate::replay::worldmodel::open_world_models(state_dir)?;
        let (version, tree) = store.read_version(node, requested)?;
        Some(WorldModelFiles {
            published: published.is_some_and(|p| p.version == version),
            version,
            files: tree
                .into_iter()
                .map(|(path, content)| WorldModelFile {
                    text: SHOWN_FILES
                        .contains(&path.as_str())
                        .then(|| String::from_utf8(content.clone()).ok())
                        .flatten(),
                    bytes: content.len(),
                    path,
                })
                .collect(),
        })
    }

    /// The text block: a `world-model` line, then per file `    <path> <n> bytes` and, for
    /// `truth.json` and `index.md`, the contents indented six spaces.
    fn write(&self, r: &mut Report) {
        let which = if self.published {
            "published"
        } else {
            "not the published version"
        };
        let n = self.files.len();
        let plural = if n == 1 { "" } else { "s" };
        r.field(
            "world-model",
            format!("{} ({which}, {n} file{plural})", short_token(&self.version)),
        );
        if self.files.is_empty() {
            r.line(4, "(no files)");
        }
        for f in &self.files {
            r.sub_field(&f.path, format!("{} bytes", f.bytes));
            if SHOWN_FILES.contains(&f.path.as_str()) {
                match &f.text {
                    Some(t) => shown_lines(r, t, f.path.ends_with(".json")),
                    None => {
                        r.line(6, "(not UTF-8 text)");
                    }
                }
            }
        }
    }
}

/// Writes `text` indented six spaces: JSON pretty-printed, control characters replaced by
/// spaces (model-written text must not drive the terminal), at most [`SHOWN_LINES`] lines.
fn shown_lines(r: &mut Report, text: &str, json: bool) {
    let pretty = json
        .then(|| crate::format::json::parse_str(text).ok())
        .flatten()
        .map(|v| String::from_utf8_lossy(&crate::format::json::to_js_pretty(&v)).into_owned());
    let body = pretty.as_deref().unwrap_or(text);
    let lines: Vec<&str> = body.trim_end().lines().collect();
    if lines.is_empty() {
        r.line(6, "(empty)");
    }
    for l in lines.iter().take(SHOWN_LINES) {
        let clean: String = l
            .chars()
            .map(|c| if c.is_control() && c != '\t' { ' ' } else { c })
            .collect();
        match clean.trim_end() {
            "" => r.line(0, ""),
            shown => r.line(6, shown),
        };
    }
    if lines.len() > SHOWN_LINES {
        r.line(
            6,
            format!(
                "… {} more lines (`--json` has the whole file)",
                lines.len() - SHOWN_LINES
            ),
        );
    }
}

/// Runs `inspect`.
pub fn exec(a: Args, g: &Globals) -> Result<ExitCode, HostError> {
    let (_, reactor) = g.select_reader("inspect")?;
    let report = gather(&reactor.state_dir, &a.node, a.version.as_deref())?;
    print(&report, g.json)?;
    Ok(ExitCode::from(u8::from(a.strict && !report.chain.ok)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_shortened() {
        assert_eq!(
            short_token("sha256:59e80454aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
            "sha256:59e80454…"
        );
        assert_eq!(short_token("inbox:2"), "inbox:2");
    }
}
