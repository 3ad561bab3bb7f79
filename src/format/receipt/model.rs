//! The receipt model (FORMATS.md §4): wake, status, fingerprints, cost and the receipt the
//! project builds, its derived wire form (`Serialize`) and its content address (§5).

use serde::{Deserialize, Serialize};

use super::decode;
use crate::format::address::address;
use crate::format::json::{self, NonFinite, Object, Value};

/// `schema` literal.
pub const SCHEMA: &str = "openprose.receipt";
/// `hash_algorithm` literal.
pub const HASH_ALGORITHM: &str = "sha256";
/// The null signer's reason the project writes.
pub const NULL_SIGNER_REASON: &str = "no-signer-adapter-configured";

/// The 13 pinned top-level keys, in canonical order (FORMATS.md §4.1).
pub const RECEIPT_KEYS: [&str; 13] = [
    "content_hash",
    "contract_fingerprint",
    "cost",
    "fingerprints",
    "hash_algorithm",
    "input_fingerprints",
    "node",
    "prev",
    "schema",
    "semantic_diff",
    "sig",
    "status",
    "wake",
];

/// Why a node was reconciled (FORMATS.md §4.1 `wake.source`). Merge precedence:
/// `External` > `Input` > `SelfWake`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WakeSource {
    /// `self`
    SelfWake,
    /// `input`
    Input,
    /// `external`
    External,
}

impl WakeSource {
    /// The wire form.
    pub fn as_str(self) -> &'static str {
        match self {
            WakeSource::Input => "input",
            WakeSource::SelfWake => "self",
            WakeSource::External => "external",
        }
    }
    /// Parses the wire form.
    pub fn parse(s: &str) -> Option<WakeSource> {
        match s {
            "input" => Some(WakeSource::Input),
            "self" => Some(WakeSource::SelfWake),
            "external" => Some(WakeSource::External),
            _ => None,
        }
    }
    /// The fixed order `input`, `self`, `external` used by rollups.
    pub(crate) const ROLLUP_ORDER: [WakeSource; 3] = [
        WakeSource::Input,
        WakeSource::SelfWake,
        WakeSource::External,
    ];
}

/// A receipt's disposition (FORMATS.md §4.1 `status`; the wire form is the lowercase name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// The node rendered and committed.
    Rendered,
    /// The memo key was unchanged; no render.
    Skipped,
    /// The render failed; nothing committed.
    Failed,
}

impl Status {
    /// The wire form.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Rendered => "rendered",
            Status::Skipped => "skipped",
            Status::Failed => "failed",
        }
    }
    /// Parses the wire form.
    pub fn parse(s: &str) -> Option<Status> {
        match s {
            "rendered" => Some(Status::Rendered),
            "skipped" => Some(Status::Skipped),
            "failed" => Some(Status::Failed),
            _ => None,
        }
    }
}

/// `{refs, source}`: why a node is being reconciled (FORMATS.md §4.1, RUNTIME.md §7.2).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wake {
    /// Content addresses of the receipts that caused the wake.
    pub refs: Vec<String>,
    /// The wake source.
    pub source: WakeSource,
}

impl Wake {
    /// A wake with no refs.
    pub fn new(source: WakeSource) -> Wake {
        Wake {
            source,
            refs: Vec::new(),
        }
    }
    /// Merges `incoming` into `self` (RUNTIME.md §7.2): the higher-precedence source wins and
    /// refs become the ordered union.
    pub fn merge(&mut self, incoming: &Wake) {
        if incoming.source > self.source {
            self.source = incoming.source;
        }
        for r in &incoming.refs {
            if !self.refs.contains(r) {
                self.refs.push(r.clone());
            }
        }
    }
}

/// An ordered facet → token map (FORMATS.md §8.1). Order matters for `published.json`
/// (`@atomic` first, then declared facets) and for moved-facet iteration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fingerprints(pub Vec<(String, String)>);

impl Fingerprints {
    /// `{"@atomic": token}`.
    pub fn atomic(token: impl Into<String>) -> Fingerprints {
        Fingerprints(vec![("@atomic".to_string(), token.into())])
    }
    /// The token of `facet`.
    pub fn get(&self, facet: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == facet)
            .map(|(_, v)| v.as_str())
    }
    /// The `@atomic` token.
    pub fn atomic_token(&self) -> Option<&str> {
        self.get("@atomic")
    }
    /// Resolves an edge facet for an input slot (FORMATS.md §8.3): the facet's own token, else
    /// the `@atomic` token.
    pub fn resolve(&self, facet: &str) -> Option<&str> {
        self.get(facet).or_else(|| self.atomic_token())
    }
    /// Reads a JSON object of strings (keys with a lone surrogate get U+FFFD); `None` if any
    /// value is not a valid Unicode string. The strict form of the derived `Deserialize`.
    pub fn from_value(v: &Value) -> Option<Fingerprints> {
        json::from_value(v).ok()
    }
    /// The JSON object, members in this map's order.
    pub fn to_value(&self) -> Value {
        json::value_of(self)
    }
    /// Facet names in order.
    pub fn facets(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(k, _)| k.as_str())
    }
}

impl Serialize for Fingerprints {
    /// A JSON object of strings, members in this map's order.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

/// The receipt `cost` object (FORMATS.md §4.1), flattened: on the wire the token counts sit in
/// `cost.tokens` ([`CostWire`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "CostWire", from = "CostWire")]
pub struct Cost {
    /// Provider label (`none` for skips, `connector` for ingress).
    pub provider: String,
    /// Model id (`none` for skips).
    pub model: String,
    /// Fresh tokens (non-negative safe integer).
    pub fresh: u64,
    /// Reused (cached) tokens.
    pub reused: u64,
    /// Always equal to the wake source.
    pub surprise_cause: WakeSource,
}

impl Cost {
    /// `none`/`none`/0/0 with the given cause (skipped receipts, usage-less failures).
    pub fn none(cause: WakeSource) -> Cost {
        Cost {
            provider: "none".into(),
            model: "none".into(),
            fresh: 0,
            reused: 0,
            surprise_cause: cause,
        }
    }
}

/// The wire form of [`Cost`] (FORMATS.md §4.1), members in canonical order. `provider` and
/// `model` are read leniently (a lone surrogate becomes U+FFFD).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CostWire {
    /// Model id.
    #[serde(deserialize_with = "decode::lossy_string")]
    pub model: String,
    /// Provider label.
    #[serde(deserialize_with = "decode::lossy_string")]
    pub provider: String,
    /// Always equal to the wake source.
    pub surprise_cause: WakeSource,
    /// The token counts.
    pub tokens: TokenCounts,
}

/// `cost.tokens` (FORMATS.md §4.1): two non-negative safe integers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenCounts {
    /// Fresh tokens.
    #[serde(deserialize_with = "decode::safe_count")]
    pub fresh: u64,
    /// Reused (cached) tokens.
    #[serde(deserialize_with = "decode::safe_count")]
    pub reused: u64,
}

impl From<CostWire> for Cost {
    fn from(w: CostWire) -> Cost {
        Cost {
            provider: w.provider,
            model: w.model,
            fresh: w.tokens.fresh,
            reused: w.tokens.reused,
            surprise_cause: w.surprise_cause,
        }
    }
}

impl From<Cost> for CostWire {
    fn from(c: Cost) -> CostWire {
        CostWire {
            model: c.model,
            provider: c.provider,
            surprise_cause: c.surprise_cause,
            tokens: TokenCounts {
                fresh: c.fresh,
                reused: c.reused,
            },
        }
    }
}

/// A receipt as the project builds it (FORMATS.md §4.3). `schema`, `hash_algorithm` and `sig`
/// are the fixed literals; `content_hash` is computed by [`Receipt::stamp`].
///
/// `Serialize` writes the stamped receipt; `Deserialize` reads the members the reconciler needs
/// (unknown members, the literals and `content_hash` are skipped: see [`Receipt::from_value`]).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Receipt {
    /// Node id.
    pub node: String,
    /// Memo-key first half.
    pub contract_fingerprint: String,
    /// Disposition.
    pub status: Status,
    /// The (merged) wake.
    pub wake: Wake,
    /// Memo-key second half: one slot per inbound edge in mounted order.
    pub input_fingerprints: Vec<String>,
    /// Facet → token.
    pub fingerprints: Fingerprints,
    /// Free-form diff object (`{}` for skips).
    pub semantic_diff: Object,
    /// Content hash of the node's previous receipt.
    pub prev: Option<String>,
    /// Cost.
    pub cost: Cost,
    /// The content address (empty until stamped).
    #[serde(skip)]
    pub content_hash: String,
}

impl Receipt {
    /// The receipt as a JSON value (its derived wire form, members in canonical order);
    /// `content_hash` included only when `with_hash`.
    pub fn to_value(&self, with_hash: bool) -> Value {
        json::value_of(&ReceiptBody::of(self, with_hash))
    }

    /// Computes and sets `content_hash` (FORMATS.md §5). Errors only if the semantic diff holds
    /// a non-finite number.
    pub(crate) fn stamp(&mut self) -> Result<&str, NonFinite> {
        let body = json::canonical_string(&self.to_value(false))?;
        self.content_hash = address(body.as_bytes());
        Ok(&self.content_hash)
    }

    /// The canonical JSON of the stamped receipt (one ledger element).
    pub(crate) fn canonical_bytes(&self) -> Result<Vec<u8>, NonFinite> {
        let mut out = Vec::with_capacity(900);
        json::write_canonical(&self.to_value(true), &mut out)?;
        Ok(out)
    }
}

impl Serialize for Receipt {
    /// The stamped receipt's 13 members (FORMATS.md §4.1), `content_hash` included.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ReceiptBody::of(self, true).serialize(s)
    }
}

/// The wire form of a [`Receipt`] (FORMATS.md §4.1): members in canonical order, the fixed
/// literals filled in.
#[derive(Serialize)]
struct ReceiptBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    content_hash: Option<&'a str>,
    contract_fingerprint: &'a str,
    cost: &'a Cost,
    fingerprints: &'a Fingerprints,
    hash_algorithm: &'static str,
    input_fingerprints: &'a [String],
    node: &'a str,
    prev: Option<&'a str>,
    schema: &'static str,
    semantic_diff: &'a Object,
    sig: NullSigner,
    status: Status,
    wake: &'a Wake,
}

impl<'a> ReceiptBody<'a> {
    fn of(r: &'a Receipt, with_hash: bool) -> ReceiptBody<'a> {
        ReceiptBody {
            content_hash: with_hash.then_some(r.content_hash.as_str()),
            contract_fingerprint: &r.contract_fingerprint,
            cost: &r.cost,
            fingerprints: &r.fingerprints,
            hash_algorithm: HASH_ALGORITHM,
            input_fingerprints: &r.input_fingerprints,
            node: &r.node,
            prev: r.prev.as_deref(),
            schema: SCHEMA,
            semantic_diff: &r.semantic_diff,
            sig: NullSigner {
                null_reason: NULL_SIGNER_REASON,
                scheme: "none",
            },
            status: r.status,
            wake: &r.wake,
        }
    }
}

/// `sig` of the null signer, the only one that exists (FORMATS.md §4.1).
#[derive(Serialize)]
struct NullSigner {
    null_reason: &'static str,
    scheme: &'static str,
}

/// The content address recomputed from a raw receipt value: SHA-256 over the canonical JSON of
/// the object without `content_hash` (FORMATS.md §5.1). Errors: [`NonFinite`]; a non-object
/// hashes as its canonical text.
pub fn recompute_content_hash(v: &Value) -> Result<String, NonFinite> {
    let mut out = Vec::with_capacity(1024);
    match v {
        Value::Object(o) => json::write_canonical_object_except(o, "content_hash", &mut out)?,
        other => json::write_canonical(other, &mut out)?,
    }
    Ok(address(&out))
}

/// True for an integral double in `0..=2^53-1`.
pub fn is_safe_nonneg_int(n: f64) -> bool {
    n.is_finite() && n.fract() == 0.0 && (0.0..=9_007_199_254_740_991.0).contains(&n)
}
impl Serialize for WakeSource {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for WakeSource {
    /// The wire form (`input`, `self`, `external`).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<WakeSource, D::Error> {
        let s = String::deserialize(d)?;
        WakeSource::parse(&s)
            .ok_or_else(|| serde::de::Error::unknown_variant(&s, &["input", "self", "external"]))
    }
}
