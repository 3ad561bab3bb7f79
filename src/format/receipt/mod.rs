//! Receipts (FORMATS.md §4–§7): the typed receipt the project writes, its content hash, and the
//! verifiers `verify_receipt` (§7.1) and `verify_receipt_chain` (§7.2), which work on raw parsed
//! values so that reference-written and tampered ledgers are judged exactly.

use crate::format::address::{address, is_content_address};
use crate::format::json::{self, JsString, NonFinite, Object, Value};

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
    pub const ROLLUP_ORDER: [WakeSource; 3] = [
        WakeSource::Input,
        WakeSource::SelfWake,
        WakeSource::External,
    ];
}

/// A receipt's disposition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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

/// `{source, refs}`: why a node is being reconciled (FORMATS.md §4.1, RUNTIME.md §7.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wake {
    /// The wake source.
    pub source: WakeSource,
    /// Content addresses of the receipts that caused the wake.
    pub refs: Vec<String>,
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
    /// Reads a JSON object of strings; `None` if any value is not a string.
    pub fn from_value(v: &Value) -> Option<Fingerprints> {
        let o = v.as_object()?;
        let mut out = Vec::with_capacity(o.len());
        for (k, v) in o.iter() {
            out.push((k.to_lossy().into_owned(), v.as_str()?.to_string()));
        }
        Some(Fingerprints(out))
    }
    /// The JSON object, members in this map's order.
    pub fn to_value(&self) -> Value {
        let mut o = Object::new();
        for (k, v) in &self.0 {
            o.push_unique(k.as_str(), Value::str(v.clone()));
        }
        Value::Object(o)
    }
    /// Facet names in order.
    pub fn facets(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(k, _)| k.as_str())
    }
}

/// The receipt `cost` object (FORMATS.md §4.1).
#[derive(Clone, Debug, PartialEq, Eq)]
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

/// A receipt as the project builds it (FORMATS.md §4.3). `schema`, `hash_algorithm` and `sig`
/// are the fixed literals; `content_hash` is computed by [`Receipt::stamp`].
#[derive(Clone, Debug, PartialEq)]
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
    pub content_hash: String,
}

impl Receipt {
    /// The receipt as a JSON value with keys in canonical order; `content_hash` included only
    /// when `with_hash`.
    pub fn to_value(&self, with_hash: bool) -> Value {
        let mut o = Object::new();
        if with_hash {
            o.push_unique("content_hash", Value::str(self.content_hash.clone()));
        }
        o.push_unique(
            "contract_fingerprint",
            Value::str(self.contract_fingerprint.clone()),
        );
        let mut tokens = Object::new();
        tokens.push_unique("fresh", Value::Number(self.cost.fresh as f64));
        tokens.push_unique("reused", Value::Number(self.cost.reused as f64));
        let mut cost = Object::new();
        cost.push_unique("model", Value::str(self.cost.model.clone()));
        cost.push_unique("provider", Value::str(self.cost.provider.clone()));
        cost.push_unique(
            "surprise_cause",
            Value::str(self.cost.surprise_cause.as_str()),
        );
        cost.push_unique("tokens", Value::Object(tokens));
        o.push_unique("cost", Value::Object(cost));
        o.push_unique("fingerprints", self.fingerprints.to_value());
        o.push_unique("hash_algorithm", Value::str(HASH_ALGORITHM));
        o.push_unique(
            "input_fingerprints",
            Value::Array(
                self.input_fingerprints
                    .iter()
                    .map(|s| Value::str(s.clone()))
                    .collect(),
            ),
        );
        o.push_unique("node", Value::str(self.node.clone()));
        o.push_unique(
            "prev",
            match &self.prev {
                Some(p) => Value::str(p.clone()),
                None => Value::Null,
            },
        );
        o.push_unique("schema", Value::str(SCHEMA));
        o.push_unique("semantic_diff", Value::Object(self.semantic_diff.clone()));
        let mut sig = Object::new();
        sig.push_unique("null_reason", Value::str(NULL_SIGNER_REASON));
        sig.push_unique("scheme", Value::str("none"));
        o.push_unique("sig", Value::Object(sig));
        o.push_unique("status", Value::str(self.status.as_str()));
        let mut wake = Object::new();
        wake.push_unique(
            "refs",
            Value::Array(
                self.wake
                    .refs
                    .iter()
                    .map(|s| Value::str(s.clone()))
                    .collect(),
            ),
        );
        wake.push_unique("source", Value::str(self.wake.source.as_str()));
        o.push_unique("wake", Value::Object(wake));
        Value::Object(o)
    }

    /// Computes and sets `content_hash` (FORMATS.md §5). Errors only if the semantic diff holds
    /// a non-finite number.
    pub fn stamp(&mut self) -> Result<&str, NonFinite> {
        let body = json::canonical_string(&self.to_value(false))?;
        self.content_hash = address(body.as_bytes());
        Ok(&self.content_hash)
    }

    /// The canonical JSON of the stamped receipt (one ledger element).
    pub fn canonical_bytes(&self) -> Result<Vec<u8>, NonFinite> {
        let mut out = Vec::with_capacity(900);
        json::write_canonical(&self.to_value(true), &mut out)?;
        Ok(out)
    }

    /// Reads a receipt from a raw value for a writer's index. Only the fields the reconciler
    /// needs must be well formed; `content_hash` is **recomputed from the values** (FORMATS.md
    /// §7.3), so `prev` links to the value-derived address even after a hand edit.
    ///
    /// Errors: a one-line description of the first problem.
    pub fn from_value(v: &Value) -> Result<Receipt, String> {
        let content_hash = recompute_content_hash(v)
            .map_err(|e| format!("receipt cannot be canonicalized: {e}"))?;
        Receipt::from_value_hashed(v, content_hash)
    }

    /// [`Receipt::from_value`] when the caller already recomputed the value's content address
    /// (`content_hash`, from [`recompute_content_hash`]): saves hashing the receipt twice.
    pub fn from_value_hashed(v: &Value, content_hash: String) -> Result<Receipt, String> {
        let o = v.as_object().ok_or("receipt must be an object")?;
        let s = |k: &str| -> Result<String, String> {
            o.get(k)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| format!("receipt.{k} must be a string"))
        };
        let node = s("node")?;
        let contract_fingerprint = s("contract_fingerprint")?;
        let status = Status::parse(&s("status")?)
            .ok_or("receipt.status must be one of rendered | skipped | failed")?;
        let wake_v = o.get("wake").ok_or("receipt.wake is required")?;
        let source = wake_v
            .get("source")
            .and_then(Value::as_str)
            .and_then(WakeSource::parse)
            .ok_or("receipt.wake.source must be one of input | self | external")?;
        let refs = wake_v
            .get("refs")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|r| r.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let input_fingerprints = o
            .get("input_fingerprints")
            .and_then(Value::as_array)
            .ok_or("receipt.input_fingerprints must be an array")?
            .iter()
            .map(|x| {
                x.as_str()
                    .map(str::to_string)
                    .ok_or("receipt.input_fingerprints[] must be strings".to_string())
            })
            .collect::<Result<Vec<_>, _>>()?;
        let fingerprints = o
            .get("fingerprints")
            .and_then(Fingerprints::from_value)
            .ok_or("receipt.fingerprints must be an object of strings")?;
        let semantic_diff = o
            .get("semantic_diff")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let prev = match o.get("prev") {
            Some(Value::String(p)) => Some(p.to_lossy().into_owned()),
            _ => None,
        };
        let cost_v = o.get("cost").ok_or("receipt.cost is required")?;
        let tok = |k: &str| {
            cost_v
                .get("tokens")
                .and_then(|t| t.get(k))
                .and_then(Value::as_f64)
                .filter(|n| is_safe_nonneg_int(*n))
                .map(|n| n as u64)
                .ok_or_else(|| {
                    format!("receipt.cost.tokens.{k} must be a non-negative safe integer")
                })
        };
        let cost = Cost {
            provider: cost_v
                .get("provider")
                .and_then(Value::as_str)
                .unwrap_or("none")
                .to_string(),
            model: cost_v
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or("none")
                .to_string(),
            fresh: tok("fresh")?,
            reused: tok("reused")?,
            surprise_cause: cost_v
                .get("surprise_cause")
                .and_then(Value::as_str)
                .and_then(WakeSource::parse)
                .unwrap_or(source),
        };
        Ok(Receipt {
            node,
            contract_fingerprint,
            status,
            wake: Wake { source, refs },
            input_fingerprints,
            fingerprints,
            semantic_diff,
            prev,
            cost,
            content_hash,
        })
    }
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

/// The outcome of [`verify_receipt`] (FORMATS.md §7.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReceiptVerdict {
    /// True when there are no errors.
    pub ok: bool,
    /// The stored content hash (when ok).
    pub content_hash: Option<String>,
    /// Every problem, in the documented order.
    pub errors: Vec<String>,
    /// The recomputed address, when the receipt could be canonicalized.
    pub expected_content_hash: Option<String>,
    /// The stored `content_hash`, when it is a string.
    pub actual_content_hash: Option<String>,
}

fn key_label(k: &JsString) -> String {
    k.to_lossy().into_owned()
}

fn non_empty_str(v: Option<&Value>) -> bool {
    matches!(v, Some(Value::String(s)) if !s.is_empty())
}

/// Verifies one raw receipt value (FORMATS.md §7.1), collecting every problem.
pub fn verify_receipt(value: &Value) -> ReceiptVerdict {
    verify_receipt_with(value, None)
}

/// [`verify_receipt`] with a precomputed recomputed address (saves a second hash when the
/// caller already has it).
pub fn verify_receipt_with(
    value: &Value,
    recomputed: Option<&Result<String, NonFinite>>,
) -> ReceiptVerdict {
    let Some(o) = value.as_object() else {
        return ReceiptVerdict {
            ok: false,
            content_hash: None,
            errors: vec!["receipt must be an object".to_string()],
            expected_content_hash: None,
            actual_content_hash: None,
        };
    };
    let mut errors: Vec<String> = Vec::new();
    // 1. unknown keys
    for (k, _) in o.iter() {
        if !RECEIPT_KEYS.iter().any(|p| *k == **p) {
            errors.push(format!(
                "receipt.{} is not pinned in the receipt shape",
                key_label(k)
            ));
        }
    }
    // 2. field checks
    let req = |errors: &mut Vec<String>, k: &str| -> Option<&Value> {
        let v = o.get(k);
        if v.is_none() {
            errors.push(format!("receipt.{k} is required"));
        }
        v
    };
    if let Some(v) = req(&mut errors, "schema")
        && v.as_str() != Some(SCHEMA)
    {
        errors.push("receipt.schema must be \"openprose.receipt\"".into());
    }
    if let Some(v) = req(&mut errors, "hash_algorithm")
        && v.as_str() != Some(HASH_ALGORITHM)
    {
        errors.push("receipt.hash_algorithm must be \"sha256\"".into());
    }
    if let Some(v) = req(&mut errors, "node")
        && !non_empty_str(Some(v))
    {
        errors.push("receipt.node must be a non-empty string".into());
    }
    if let Some(v) = req(&mut errors, "contract_fingerprint")
        && !non_empty_str(Some(v))
    {
        errors.push("receipt.contract_fingerprint must be a non-empty string".into());
    }
    let status = req(&mut errors, "status").and_then(|v| {
        let s = v.as_str().and_then(Status::parse);
        if s.is_none() {
            errors.push("receipt.status must be one of rendered | skipped | failed".into());
        }
        s
    });
    let mut wake_source: Option<&str> = None;
    if let Some(w) = req(&mut errors, "wake") {
        match w.as_object() {
            None => errors.push("receipt.wake must be an object".into()),
            Some(wo) => {
                for (k, _) in wo.iter() {
                    if !(*k == *"refs" || *k == *"source") {
                        errors.push(format!(
                            "receipt.wake.{} is not pinned in the wake shape",
                            key_label(k)
                        ));
                    }
                }
                match wo.get("source") {
                    None => errors.push("receipt.wake.source is required".into()),
                    Some(s) => {
                        if let Value::String(js) = s {
                            wake_source = js.as_str();
                        }
                        if s.as_str().and_then(WakeSource::parse).is_none() {
                            errors.push(
                                "receipt.wake.source must be one of input | self | external".into(),
                            );
                        }
                    }
                }
                match wo.get("refs") {
                    None => errors.push("receipt.wake.refs is required".into()),
                    Some(Value::Array(refs)) => {
                        for (i, r) in refs.iter().enumerate() {
                            if !r.as_str().is_some_and(is_content_address) {
                                errors.push(format!(
                                    "receipt.wake.refs[{i}] must be a sha256 content address"
                                ));
                            }
                        }
                    }
                    Some(_) => errors.push("receipt.wake.refs must be an array".into()),
                }
            }
        }
    }
    if let Some(v) = req(&mut errors, "input_fingerprints") {
        match v {
            Value::Array(items) => {
                for (i, x) in items.iter().enumerate() {
                    if !non_empty_str(Some(x)) {
                        errors.push(format!(
                            "receipt.input_fingerprints[{i}] must be a non-empty string"
                        ));
                    }
                }
            }
            _ => errors.push("receipt.input_fingerprints must be an array".into()),
        }
    }
    if let Some(v) = req(&mut errors, "fingerprints") {
        match v.as_object() {
            None => errors.push("receipt.fingerprints must be an object".into()),
            Some(fo) => {
                if !fo.contains_key("@atomic") {
                    errors.push("receipt.fingerprints must contain \"@atomic\"".into());
                }
                for (k, x) in fo.iter() {
                    if !non_empty_str(Some(x)) {
                        errors.push(format!(
                            "receipt.fingerprints[\"{}\"] must be a non-empty string",
                            key_label(k)
                        ));
                    }
                }
            }
        }
    }
    let diff = req(&mut errors, "semantic_diff");
    if let Some(v) = diff
        && v.as_object().is_none()
    {
        errors.push("receipt.semantic_diff must be an object".into());
    }
    if let Some(v) = req(&mut errors, "prev") {
        let ok = match v {
            Value::Null => true,
            other => other.as_str().is_some_and(is_content_address),
        };
        if !ok {
            errors.push("receipt.prev must be null or a sha256 content address".into());
        }
    }
    if let Some(v) = req(&mut errors, "sig") {
        match v.as_object() {
            None => errors.push("receipt.sig must be an object".into()),
            Some(so) => {
                for (k, _) in so.iter() {
                    if !(*k == *"scheme" || *k == *"null_reason") {
                        errors.push(format!(
                            "receipt.sig.{} is not pinned in the sig shape",
                            key_label(k)
                        ));
                    }
                }
                if so.get("scheme").and_then(Value::as_str) != Some("none") {
                    errors.push(
                        "receipt.sig.scheme must be \"none\" (only the null signer is supported)"
                            .into(),
                    );
                }
                if !non_empty_str(so.get("null_reason")) {
                    errors.push("receipt.sig.null_reason must be a non-empty string".into());
                }
            }
        }
    }
    let mut surprise: Option<&str> = None;
    let mut fresh: Option<f64> = None;
    if let Some(v) = req(&mut errors, "cost") {
        match v.as_object() {
            None => errors.push("receipt.cost must be an object".into()),
            Some(co) => {
                if !non_empty_str(co.get("provider")) {
                    errors.push("receipt.cost.provider must be a non-empty string".into());
                }
                if !non_empty_str(co.get("model")) {
                    errors.push("receipt.cost.model must be a non-empty string".into());
                }
                match co.get("tokens").and_then(Value::as_object) {
                    None => errors.push("receipt.cost.tokens must be an object".into()),
                    Some(t) => {
                        for k in ["fresh", "reused"] {
                            let n = t.get(k).and_then(Value::as_f64);
                            if !n.is_some_and(is_safe_nonneg_int) {
                                errors.push(format!(
                                    "receipt.cost.tokens.{k} must be a non-negative safe integer"
                                ));
                            }
                            if k == "fresh" {
                                fresh = n;
                            }
                        }
                    }
                }
                match co.get("surprise_cause") {
                    Some(Value::String(s)) if s.as_str().and_then(WakeSource::parse).is_some() => {
                        surprise = s.as_str();
                    }
                    Some(Value::String(s)) => {
                        surprise = s.as_str();
                        errors.push(
                            "receipt.cost.surprise_cause must be one of input | self | external"
                                .into(),
                        );
                    }
                    _ => errors.push(
                        "receipt.cost.surprise_cause must be one of input | self | external".into(),
                    ),
                }
            }
        }
    }
    // 3. cross-field
    if let (Some(c), Some(w)) = (surprise, wake_source)
        && c != w
    {
        errors.push("receipt.cost.surprise_cause must match wake.source".into());
    }
    if status == Some(Status::Skipped) {
        if let Some(d) = diff.and_then(Value::as_object)
            && !d.is_empty()
        {
            errors.push("skipped receipt must carry an empty semantic_diff".into());
        }
        if let Some(f) = fresh
            && f != 0.0
        {
            errors.push("skipped receipt must spend zero fresh tokens".into());
        }
    }
    // 4. canonicalization
    let owned;
    let recomputed = match recomputed {
        Some(r) => r,
        None => {
            owned = recompute_content_hash(value);
            &owned
        }
    };
    let expected = match recomputed {
        Ok(h) => Some(h.clone()),
        Err(e) => {
            errors.push(format!("receipt cannot be canonicalized: {e}"));
            None
        }
    };
    // 5. content hash
    let actual = match o.get("content_hash") {
        Some(Value::String(s)) => Some(s.to_lossy().into_owned()),
        _ => None,
    };
    match &actual {
        None => errors.push("content_hash must be a sha256 content address".into()),
        Some(a) if !is_content_address(a) => {
            errors.push("content_hash must use sha256:<64 lowercase hex>".into())
        }
        Some(a) => {
            if expected.as_ref().is_some_and(|e| e != a) {
                errors.push("content_hash does not match canonical receipt payload".into());
            }
        }
    }
    let ok = errors.is_empty();
    ReceiptVerdict {
        ok,
        content_hash: if ok { actual.clone() } else { None },
        errors,
        expected_content_hash: expected,
        actual_content_hash: actual,
    }
}

/// The outcome of [`verify_receipt_chain`] (FORMATS.md §7.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainVerdict {
    /// True when there are no errors.
    pub ok: bool,
    /// Content hash of the last receipt (when ok and non-empty).
    pub head: Option<String>,
    /// Number of receipts (when ok).
    pub length: usize,
    /// Every problem, in order.
    pub errors: Vec<String>,
    /// Positions (within the chain) of receipts that were invalid, broke the node-scoped ledger
    /// or had a `prev` mismatch.
    pub invalid_positions: Vec<usize>,
}

/// Verifies one node's receipts in order (FORMATS.md §7.2).
pub fn verify_receipt_chain(chain: &[Value]) -> ChainVerdict {
    verify_chain_iter(chain.iter().map(|v| (v, None)))
}

/// [`verify_receipt_chain`] over `(value, precomputed address)` pairs.
pub fn verify_chain_iter<'a>(
    chain: impl Iterator<Item = (&'a Value, Option<&'a Result<String, NonFinite>>)>,
) -> ChainVerdict {
    let mut state = ChainState::default();
    for (v, pre) in chain {
        state.push(v, pre);
    }
    state.verdict()
}

/// Incremental chain verification (FORMATS.md §7.2): push one node's receipts in order, then
/// read the verdict. Used by the viewer to extend a verdict as a ledger grows.
#[derive(Clone, Debug, Default)]
pub struct ChainState {
    expected_prev: Option<String>,
    chain_node: Option<String>,
    /// Receipts pushed so far.
    pub length: usize,
    /// Problems so far.
    pub errors: Vec<String>,
    /// Chain positions of invalid, foreign or mislinked receipts.
    pub invalid_positions: Vec<usize>,
    last_hash: Option<String>,
}

impl ChainState {
    /// Verifies the next receipt of the chain. Returns false when it was flagged.
    pub fn push(&mut self, v: &Value, pre: Option<&Result<String, NonFinite>>) -> bool {
        let i = self.length;
        self.length += 1;
        let verdict = verify_receipt_with(v, pre);
        if !verdict.ok {
            self.errors.push(format!(
                "chain[{i}] is not a valid receipt: {}",
                verdict.errors.join("; ")
            ));
            self.invalid_positions.push(i);
            return false;
        }
        let node = v
            .get("node")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        match &self.chain_node {
            None => self.chain_node = Some(node),
            Some(cn) if *cn != node => {
                self.errors.push(format!(
                    "chain[{i}].node \"{node}\" breaks node-scoped ledger \"{cn}\""
                ));
                self.invalid_positions.push(i);
                return false;
            }
            Some(_) => {}
        }
        let prev = v.get("prev").and_then(Value::as_str).map(str::to_string);
        let mut ok = true;
        if prev != self.expected_prev {
            self.errors.push(format!(
                "chain[{i}].prev must be {} to chain the ledger",
                self.expected_prev.as_deref().unwrap_or("null (cold start)")
            ));
            self.invalid_positions.push(i);
            ok = false;
        }
        self.expected_prev = verdict.content_hash.clone();
        self.last_hash = verdict.content_hash;
        ok
    }

    /// The verdict so far.
    pub fn verdict(&self) -> ChainVerdict {
        let ok = self.errors.is_empty();
        ChainVerdict {
            ok,
            head: if ok { self.last_hash.clone() } else { None },
            length: self.length,
            errors: self.errors.clone(),
            invalid_positions: self.invalid_positions.clone(),
        }
    }
}

impl serde::Serialize for WakeSource {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for WakeSource {
    /// The wire form (`input`, `self`, `external`).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<WakeSource, D::Error> {
        let s = String::deserialize(d)?;
        WakeSource::parse(&s)
            .ok_or_else(|| serde::de::Error::unknown_variant(&s, &["input", "self", "external"]))
    }
}

impl serde::Serialize for Status {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::json::parse_str;

    const MASKED_FIRST: &str = r#"{"content_hash":"sha256:ddfa6a7c5575954aa83ceec1cf93497e80b2e3852defae19727226216b4d0b57","contract_fingerprint":"contract:ingress.signal-inbox@ingress","cost":{"model":"none","provider":"none","surprise_cause":"external","tokens":{"fresh":0,"reused":0}},"fingerprints":{"@atomic":"sha256:4b8dc041b829d799da5ebed390c0f7a58edc2ce1be03907a16d10ea5b96c4e43","inbox":"sha256:0d347a3656cbf09e7e918bbf56b3207d39dbadbb5b5bd58f368cd523750e5c19"},"hash_algorithm":"sha256","input_fingerprints":[],"node":"ingress.signal-inbox","prev":null,"schema":"openprose.receipt","semantic_diff":{},"sig":{"null_reason":"no-signer-adapter-configured","scheme":"none"},"status":"rendered","wake":{"refs":[],"source":"external"}}"#;

    #[test]
    fn worked_example_5_2() {
        let v = parse_str(MASKED_FIRST).unwrap();
        let mut body = Vec::new();
        json::write_canonical_object_except(v.as_object().unwrap(), "content_hash", &mut body)
            .unwrap();
        assert_eq!(body.len(), 617);
        let verdict = verify_receipt(&v);
        assert!(verdict.ok, "{:?}", verdict.errors);
        assert_eq!(
            verdict.content_hash.as_deref(),
            Some("sha256:ddfa6a7c5575954aa83ceec1cf93497e80b2e3852defae19727226216b4d0b57")
        );
        // The typed reader and writer reproduce the exact bytes.
        let r = Receipt::from_value(&v).unwrap();
        assert_eq!(r.canonical_bytes().unwrap(), MASKED_FIRST.as_bytes());
    }

    #[test]
    fn synthetic_example_5_2() {
        let mut r = Receipt {
            node: "alpha".into(),
            contract_fingerprint: format!("sha256:{}", "0".repeat(64)),
            status: Status::Skipped,
            wake: Wake::new(WakeSource::External),
            input_fingerprints: vec![],
            fingerprints: Fingerprints::atomic(crate::format::address::EMPTY_TREE_ADDRESS),
            semantic_diff: Object::new(),
            prev: None,
            cost: Cost::none(WakeSource::External),
            content_hash: String::new(),
        };
        assert_eq!(
            r.stamp().unwrap(),
            "sha256:047c238269abc2d8cb03a730710f386e3b8d4eb23f3a2989996c009507461b61"
        );
        let v = parse_str(std::str::from_utf8(&r.canonical_bytes().unwrap()).unwrap()).unwrap();
        assert!(verify_receipt(&v).ok);
    }

    #[test]
    fn every_error_message_in_order() {
        let v = parse_str(
            r#"{"extra":1,"schema":"x","hash_algorithm":"md5","node":"","contract_fingerprint":3,
            "status":"done","wake":{"source":"later","refs":["nope"],"why":1},
            "input_fingerprints":[""],"fingerprints":{"a":""},"semantic_diff":[],
            "prev":"abc","sig":{"scheme":"rsa","extra":true},
            "cost":{"provider":"","model":"","tokens":{"fresh":-1,"reused":1.5},"surprise_cause":"input"},
            "content_hash":"sha256:XYZ"}"#,
        )
        .unwrap();
        let verdict = verify_receipt(&v);
        assert!(!verdict.ok);
        assert_eq!(
            verdict.errors,
            vec![
                "receipt.extra is not pinned in the receipt shape",
                "receipt.schema must be \"openprose.receipt\"",
                "receipt.hash_algorithm must be \"sha256\"",
                "receipt.node must be a non-empty string",
                "receipt.contract_fingerprint must be a non-empty string",
                "receipt.status must be one of rendered | skipped | failed",
                "receipt.wake.why is not pinned in the wake shape",
                "receipt.wake.source must be one of input | self | external",
                "receipt.wake.refs[0] must be a sha256 content address",
                "receipt.input_fingerprints[0] must be a non-empty string",
                "receipt.fingerprints must contain \"@atomic\"",
                "receipt.fingerprints[\"a\"] must be a non-empty string",
                "receipt.semantic_diff must be an object",
                "receipt.prev must be null or a sha256 content address",
                "receipt.sig.extra is not pinned in the sig shape",
                "receipt.sig.scheme must be \"none\" (only the null signer is supported)",
                "receipt.sig.null_reason must be a non-empty string",
                "receipt.cost.provider must be a non-empty string",
                "receipt.cost.model must be a non-empty string",
                "receipt.cost.tokens.fresh must be a non-negative safe integer",
                "receipt.cost.tokens.reused must be a non-negative safe integer",
                "receipt.cost.surprise_cause must match wake.source",
                "content_hash must use sha256:<64 lowercase hex>",
            ]
        );
        assert!(verdict.expected_content_hash.is_some());
        assert_eq!(verdict.actual_content_hash.as_deref(), Some("sha256:XYZ"));
    }

    #[test]
    fn missing_keys_and_non_objects() {
        assert_eq!(
            verify_receipt(&Value::Array(vec![])).errors,
            vec!["receipt must be an object"]
        );
        let v = verify_receipt(&parse_str("{}").unwrap());
        assert_eq!(v.errors.first().unwrap(), "receipt.schema is required");
        assert!(v.errors.contains(&"receipt.prev is required".to_string()));
        assert_eq!(
            v.errors.last().unwrap(),
            "content_hash must be a sha256 content address"
        );
    }

    #[test]
    fn skipped_rules_and_non_finite() {
        let mut v = parse_str(MASKED_FIRST).unwrap();
        if let Value::Object(o) = &mut v {
            o.insert("status", Value::str("skipped"));
            let mut d = Object::new();
            d.insert("x", Value::Number(f64::INFINITY));
            o.insert("semantic_diff", Value::Object(d));
        }
        let e = verify_receipt(&v).errors;
        assert!(e.contains(&"skipped receipt must carry an empty semantic_diff".to_string()));
        assert!(e.contains(
            &"receipt cannot be canonicalized: cannot canonicalize non-finite number".to_string()
        ));
    }

    #[test]
    fn hash_mismatch() {
        let text = MASKED_FIRST.replace("\"status\":\"rendered\"", "\"status\":\"failed\"");
        let v = verify_receipt(&parse_str(&text).unwrap());
        assert_eq!(
            v.errors,
            vec!["content_hash does not match canonical receipt payload"]
        );
    }

    fn mk(node: &str, prev: Option<String>) -> Receipt {
        let mut r = Receipt {
            node: node.into(),
            contract_fingerprint: "c".into(),
            status: Status::Rendered,
            wake: Wake::new(WakeSource::External),
            input_fingerprints: vec![],
            fingerprints: Fingerprints::atomic("t"),
            semantic_diff: Object::new(),
            prev,
            cost: Cost::none(WakeSource::External),
            content_hash: String::new(),
        };
        r.stamp().unwrap();
        r
    }

    #[test]
    fn chains() {
        assert_eq!(verify_receipt_chain(&[]).length, 0);
        let a = mk("a", None);
        let b = mk("a", Some(a.content_hash.clone()));
        let vals: Vec<Value> = [&a, &b].iter().map(|r| r.to_value(true)).collect();
        let ok = verify_receipt_chain(&vals);
        assert!(ok.ok);
        assert_eq!(ok.head.as_deref(), Some(b.content_hash.as_str()));
        assert_eq!(ok.length, 2);
        // A suffix does not verify.
        let suffix = verify_receipt_chain(&vals[1..]);
        assert_eq!(
            suffix.errors,
            vec!["chain[0].prev must be null (cold start) to chain the ledger"]
        );
        // Another node breaks the ledger.
        let c = mk("z", Some(b.content_hash.clone()));
        let vals3 = vec![vals[0].clone(), vals[1].clone(), c.to_value(true)];
        let bad = verify_receipt_chain(&vals3);
        assert_eq!(
            bad.errors,
            vec!["chain[2].node \"z\" breaks node-scoped ledger \"a\""]
        );
        assert_eq!(bad.invalid_positions, vec![2]);
    }

    #[test]
    fn wake_merge_i10() {
        let h = |c: char| format!("sha256:{}", c.to_string().repeat(64));
        let mut w = Wake {
            source: WakeSource::SelfWake,
            refs: vec![h('a')],
        };
        w.merge(&Wake {
            source: WakeSource::Input,
            refs: vec![h('b')],
        });
        assert_eq!(w.source, WakeSource::Input);
        assert_eq!(w.refs, vec![h('a'), h('b')]);
        w.merge(&Wake {
            source: WakeSource::External,
            refs: vec![h('b'), h('c')],
        });
        assert_eq!(w.source, WakeSource::External);
        assert_eq!(w.refs, vec![h('a'), h('b'), h('c')]);
        let before = w.clone();
        w.merge(&before.clone());
        assert_eq!(w, before);
    }
}
