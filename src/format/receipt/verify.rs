//! The collect-all receipt verifier (FORMATS.md §7.1): every problem of one raw receipt value,
//! in the specified order (unknown keys; each member in key order; cross-member rules; the
//! canonical form; the content hash). Hand-written on purpose: a derived decoder stops at the
//! first problem, and the messages and their order are part of the format.

use super::model::{
    HASH_ALGORITHM, RECEIPT_KEYS, SCHEMA, Status, WakeSource, is_safe_nonneg_int,
    recompute_content_hash,
};
use crate::format::address::is_content_address;
use crate::format::json::{JsString, NonFinite, Object, Value};

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
    let mut c = Checks {
        o,
        errors: Vec::new(),
    };
    // 1. unknown keys
    c.unknown_keys();
    // 2. member checks, in key order
    c.literals_and_ids();
    let status = c.status();
    let wake_source = c.wake();
    c.input_fingerprints();
    c.fingerprints();
    let diff = c.semantic_diff();
    c.prev();
    c.sig();
    let (surprise, fresh) = c.cost();
    // 3. cross-member rules
    c.cross_member(status, wake_source, surprise, fresh, diff);
    // 4. canonicalization
    let expected = c.canonical_address(value, recomputed);
    // 5. content hash
    let actual = c.content_hash(expected.as_deref());
    let ok = c.errors.is_empty();
    ReceiptVerdict {
        ok,
        content_hash: if ok { actual.clone() } else { None },
        errors: c.errors,
        expected_content_hash: expected,
        actual_content_hash: actual,
    }
}

/// The verifier's state: the receipt object and the problems found so far.
struct Checks<'a> {
    o: &'a Object,
    errors: Vec<String>,
}

impl<'a> Checks<'a> {
    fn push(&mut self, message: impl Into<String>) {
        self.errors.push(message.into());
    }

    /// The member `k`, or `receipt.<k> is required`.
    fn required(&mut self, k: &str) -> Option<&'a Value> {
        let v = self.o.get(k);
        if v.is_none() {
            self.push(format!("receipt.{k} is required"));
        }
        v
    }

    fn unknown_keys(&mut self) {
        for (k, _) in self.o.iter() {
            if !RECEIPT_KEYS.iter().any(|p| *k == **p) {
                self.push(format!(
                    "receipt.{} is not pinned in the receipt shape",
                    key_label(k)
                ));
            }
        }
    }

    /// `schema`, `hash_algorithm`, `node`, `contract_fingerprint`.
    fn literals_and_ids(&mut self) {
        if let Some(v) = self.required("schema")
            && v.as_str() != Some(SCHEMA)
        {
            self.push("receipt.schema must be \"openprose.receipt\"");
        }
        if let Some(v) = self.required("hash_algorithm")
            && v.as_str() != Some(HASH_ALGORITHM)
        {
            self.push("receipt.hash_algorithm must be \"sha256\"");
        }
        for k in ["node", "contract_fingerprint"] {
            if let Some(v) = self.required(k)
                && !non_empty_str(Some(v))
            {
                self.push(format!("receipt.{k} must be a non-empty string"));
            }
        }
    }

    fn status(&mut self) -> Option<Status> {
        let v = self.required("status")?;
        let s = v.as_str().and_then(Status::parse);
        if s.is_none() {
            self.push("receipt.status must be one of rendered | skipped | failed");
        }
        s
    }

    /// Returns `wake.source` when it is a valid Unicode string (for the cross-member rule).
    fn wake(&mut self) -> Option<&'a str> {
        let w = self.required("wake")?;
        let Some(wo) = w.as_object() else {
            self.push("receipt.wake must be an object");
            return None;
        };
        for (k, _) in wo.iter() {
            if !(*k == *"refs" || *k == *"source") {
                self.push(format!(
                    "receipt.wake.{} is not pinned in the wake shape",
                    key_label(k)
                ));
            }
        }
        let mut wake_source = None;
        match wo.get("source") {
            None => self.push("receipt.wake.source is required"),
            Some(s) => {
                if let Value::String(js) = s {
                    wake_source = js.as_str();
                }
                if s.as_str().and_then(WakeSource::parse).is_none() {
                    self.push("receipt.wake.source must be one of input | self | external");
                }
            }
        }
        match wo.get("refs") {
            None => self.push("receipt.wake.refs is required"),
            Some(Value::Array(refs)) => {
                for (i, r) in refs.iter().enumerate() {
                    if !r.as_str().is_some_and(is_content_address) {
                        self.push(format!(
                            "receipt.wake.refs[{i}] must be a sha256 content address"
                        ));
                    }
                }
            }
            Some(_) => self.push("receipt.wake.refs must be an array"),
        }
        wake_source
    }

    fn input_fingerprints(&mut self) {
        match self.required("input_fingerprints") {
            None => {}
            Some(Value::Array(items)) => {
                for (i, x) in items.iter().enumerate() {
                    if !non_empty_str(Some(x)) {
                        self.push(format!(
                            "receipt.input_fingerprints[{i}] must be a non-empty string"
                        ));
                    }
                }
            }
            Some(_) => self.push("receipt.input_fingerprints must be an array"),
        }
    }

    fn fingerprints(&mut self) {
        let Some(v) = self.required("fingerprints") else {
            return;
        };
        let Some(fo) = v.as_object() else {
            self.push("receipt.fingerprints must be an object");
            return;
        };
        if !fo.contains_key("@atomic") {
            self.push("receipt.fingerprints must contain \"@atomic\"");
        }
        for (k, x) in fo.iter() {
            if !non_empty_str(Some(x)) {
                self.push(format!(
                    "receipt.fingerprints[\"{}\"] must be a non-empty string",
                    key_label(k)
                ));
            }
        }
    }

    fn semantic_diff(&mut self) -> Option<&'a Value> {
        let diff = self.required("semantic_diff");
        if let Some(v) = diff
            && v.as_object().is_none()
        {
            self.push("receipt.semantic_diff must be an object");
        }
        diff
    }

    fn prev(&mut self) {
        if let Some(v) = self.required("prev") {
            let ok = match v {
                Value::Null => true,
                other => other.as_str().is_some_and(is_content_address),
            };
            if !ok {
                self.push("receipt.prev must be null or a sha256 content address");
            }
        }
    }

    fn sig(&mut self) {
        let Some(v) = self.required("sig") else {
            return;
        };
        let Some(so) = v.as_object() else {
            self.push("receipt.sig must be an object");
            return;
        };
        for (k, _) in so.iter() {
            if !(*k == *"scheme" || *k == *"null_reason") {
                self.push(format!(
                    "receipt.sig.{} is not pinned in the sig shape",
                    key_label(k)
                ));
            }
        }
        if so.get("scheme").and_then(Value::as_str) != Some("none") {
            self.push("receipt.sig.scheme must be \"none\" (only the null signer is supported)");
        }
        if !non_empty_str(so.get("null_reason")) {
            self.push("receipt.sig.null_reason must be a non-empty string");
        }
    }

    /// Returns `cost.surprise_cause` (when a valid Unicode string) and `cost.tokens.fresh` (when
    /// a number), for the cross-member rules.
    fn cost(&mut self) -> (Option<&'a str>, Option<f64>) {
        let Some(v) = self.required("cost") else {
            return (None, None);
        };
        let Some(co) = v.as_object() else {
            self.push("receipt.cost must be an object");
            return (None, None);
        };
        for k in ["provider", "model"] {
            if !non_empty_str(co.get(k)) {
                self.push(format!("receipt.cost.{k} must be a non-empty string"));
            }
        }
        let mut fresh = None;
        match co.get("tokens").and_then(Value::as_object) {
            None => self.push("receipt.cost.tokens must be an object"),
            Some(t) => {
                for k in ["fresh", "reused"] {
                    let n = t.get(k).and_then(Value::as_f64);
                    if !n.is_some_and(is_safe_nonneg_int) {
                        self.push(format!(
                            "receipt.cost.tokens.{k} must be a non-negative safe integer"
                        ));
                    }
                    if k == "fresh" {
                        fresh = n;
                    }
                }
            }
        }
        let surprise = match co.get("surprise_cause") {
            Some(Value::String(s)) => s.as_str(),
            _ => None,
        };
        let valid = matches!(co.get("surprise_cause"), Some(Value::String(s))
            if s.as_str().and_then(WakeSource::parse).is_some());
        if !valid {
            self.push("receipt.cost.surprise_cause must be one of input | self | external");
        }
        (surprise, fresh)
    }

    fn cross_member(
        &mut self,
        status: Option<Status>,
        wake_source: Option<&str>,
        surprise: Option<&str>,
        fresh: Option<f64>,
        diff: Option<&Value>,
    ) {
        if let (Some(c), Some(w)) = (surprise, wake_source)
            && c != w
        {
            self.push("receipt.cost.surprise_cause must match wake.source");
        }
        if status == Some(Status::Skipped) {
            if let Some(d) = diff.and_then(Value::as_object)
                && !d.is_empty()
            {
                self.push("skipped receipt must carry an empty semantic_diff");
            }
            if let Some(f) = fresh
                && f != 0.0
            {
                self.push("skipped receipt must spend zero fresh tokens");
            }
        }
    }

    /// The recomputed content address, or `receipt cannot be canonicalized`.
    fn canonical_address(
        &mut self,
        value: &Value,
        recomputed: Option<&Result<String, NonFinite>>,
    ) -> Option<String> {
        let owned;
        let recomputed = match recomputed {
            Some(r) => r,
            None => {
                owned = recompute_content_hash(value);
                &owned
            }
        };
        match recomputed {
            Ok(h) => Some(h.clone()),
            Err(e) => {
                self.push(format!("receipt cannot be canonicalized: {e}"));
                None
            }
        }
    }

    /// The stored `content_hash` (when a valid Unicode string), checked against `expected`.
    fn content_hash(&mut self, expected: Option<&str>) -> Option<String> {
        let actual = match self.o.get("content_hash") {
            Some(Value::String(s)) => Some(s.to_lossy().into_owned()),
            _ => None,
        };
        match &actual {
            None => self.push("content_hash must be a sha256 content address"),
            Some(a) if !is_content_address(a) => {
                self.push("content_hash must use sha256:<64 lowercase hex>")
            }
            Some(a) => {
                if expected.is_some_and(|e| e != a) {
                    self.push("content_hash does not match canonical receipt payload");
                }
            }
        }
        actual
    }
}
