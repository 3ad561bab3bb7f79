//! Facts (RUNTIME.md §5.4): the flattening of a facet's reduced truth into named scalars.

use std::collections::BTreeMap;

use crate::core::canonicalizer::{CanonError, CompiledCanonicalizer};
use crate::format::json::{JsString, Value};

/// Fact name → scalar value (string, number, boolean or null), RUNTIME.md §5.4.
pub type Facts = BTreeMap<String, Value>;

/// Flattens a facet's reduced value (`None` = dropped facet, no facts) into facts
/// (RUNTIME.md §5.4): member `k` at prefix `x` is named `k` or `x.k`; an array at `x` gives
/// `x.length` and its elements at `x.0`, `x.1`, …; a scalar at `x` is the fact `x`; an actual
/// member beats a derived `.length`. See the module docs for collisions.
pub fn facts(reduced: Option<&Value>) -> Facts {
    let mut actual = Facts::new();
    let mut derived = Facts::new();
    if let Some(v) = reduced {
        let mut name = String::new();
        flatten(v, &mut name, &mut actual, &mut derived);
    }
    for (k, v) in derived {
        actual.entry(k).or_insert(v);
    }
    actual
}

fn push_segment(name: &mut String, seg: &str) {
    if !name.is_empty() {
        name.push('.');
    }
    name.push_str(seg);
}

fn flatten(v: &Value, name: &mut String, actual: &mut Facts, derived: &mut Facts) {
    let base = name.len();
    match v {
        Value::Object(o) => {
            let mut members: Vec<(&JsString, &Value)> = o.iter().collect();
            members.sort_by(|a, b| a.0.cmp_utf16(b.0));
            for (k, val) in members {
                let Some(k) = k.as_str() else { continue };
                push_segment(name, k);
                flatten(val, name, actual, derived);
                name.truncate(base);
            }
        }
        Value::Array(items) => {
            push_segment(name, "length");
            derived
                .entry(name.clone())
                .or_insert(Value::Number(items.len() as f64));
            name.truncate(base);
            for (i, item) in items.iter().enumerate() {
                push_segment(name, &i.to_string());
                flatten(item, name, actual, derived);
                name.truncate(base);
            }
        }
        scalar => {
            actual.entry(name.clone()).or_insert_with(|| scalar.clone());
        }
    }
}

/// The facts of `facet` (`@atomic` or a declared facet) of a structured truth.
///
/// Errors: the canonicalizer's ([`CanonError::UnknownFacet`], [`CanonError::NonFinite`], …).
pub fn facet_facts(
    canonicalizer: &CompiledCanonicalizer,
    truth: &Value,
    facet: &str,
) -> Result<Facts, CanonError> {
    Ok(facts(canonicalizer.reduced(truth, facet)?.as_ref()))
}
