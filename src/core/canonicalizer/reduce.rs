//! Applying a compiled canonicalizer (RUNTIME.md §4.3–§4.7): rule resolution, facet
//! restriction, reduction, normalization and the digest.

use super::compile::{DOT, at_or_under, strict_ancestor};
use super::normalize::normalize_text;
use super::{CanonError, CompiledCanonicalizer};
use crate::format::address::address;
use crate::format::json::{self, JsString, Object, Value, utf16_cmp};
use crate::format::receipt::Fingerprints;

/// Where a position stands: its governing rule, the rule with exactly its path, and whether it
/// lies at or under a facet path of the current restriction (so every descendant takes part).
#[derive(Clone, Copy)]
struct Pos {
    rule: Option<usize>,
    exact: Option<usize>,
    inside: bool,
}

impl CompiledCanonicalizer {
    /// The fingerprint map of `value` (RUNTIME.md §4.6): `@atomic` (the whole reduction) first,
    /// then each declared facet in spec order; each token is `sha256:<hex>` of the canonical JSON
    /// of the reduced value
    /// ([`NULL_ADDRESS`](crate::format::address::NULL_ADDRESS) for a dropped root).
    ///
    /// Errors: [`CanonError::NonFinite`] when a kept number is not finite (after quantization);
    /// [`CanonError::TooDeep`] beyond [`json::MAX_DEPTH`] nested containers.
    pub fn apply(&self, value: &Value) -> Result<Fingerprints, CanonError> {
        let mut out = Vec::with_capacity(self.facets.len());
        for (i, facet) in self.facets.iter().enumerate() {
            let text = self.serialize_at(value, i)?;
            out.push((facet.clone(), address(text.as_bytes())));
        }
        Ok(Fingerprints(out))
    }

    /// The canonical JSON text of `value` reduced for `facet` (`@atomic` or a declared facet):
    /// the exact bytes a token digests; `null` for a dropped root.
    ///
    /// Errors: as [`apply`](Self::apply), plus [`CanonError::UnknownFacet`].
    pub fn serialize(&self, value: &Value, facet: &str) -> Result<String, CanonError> {
        let i = self.facet_index(facet)?;
        self.serialize_at(value, i)
    }

    /// The reduced, normalized value of `value` for `facet` (`None` when the root is dropped):
    /// the input of the facts of RUNTIME.md §5.4.
    ///
    /// Errors: as [`serialize`](Self::serialize).
    pub fn reduced(&self, value: &Value, facet: &str) -> Result<Option<Value>, CanonError> {
        let i = self.facet_index(facet)?;
        self.reduce_at(value, i)
    }

    /// The token of one facet (`sha256:<hex>`), without computing the others.
    ///
    /// Errors: as [`serialize`](Self::serialize).
    pub fn token(&self, value: &Value, facet: &str) -> Result<String, CanonError> {
        Ok(address(self.serialize(value, facet)?.as_bytes()))
    }

    fn facet_index(&self, facet: &str) -> Result<usize, CanonError> {
        self.facets
            .iter()
            .position(|f| f == facet)
            .ok_or_else(|| CanonError::UnknownFacet {
                node: self.spec.node.clone(),
                facet: facet.to_string(),
            })
    }

    fn serialize_at(&self, value: &Value, i: usize) -> Result<String, CanonError> {
        match self.reduce_at(value, i)? {
            None => Ok("null".to_string()),
            // Every kept number was checked finite during reduction.
            Some(v) => json::canonical_string(&v).map_err(|_| CanonError::NonFinite {
                path: String::new(),
                quantum: None,
            }),
        }
    }

    /// `i` indexes [`facets`](Self::facets): 0 is `@atomic` (no restriction).
    fn reduce_at(&self, value: &Value, i: usize) -> Result<Option<Value>, CanonError> {
        let restrict = if i == 0 {
            None
        } else {
            self.facet_paths.get(i - 1).map(Vec::as_slice)
        };
        let mut walk = Walk {
            c: self,
            restrict,
            path: Vec::new(),
        };
        let root = Pos {
            rule: None,
            exact: None,
            inside: restrict.is_none(),
        };
        walk.reduce(value, root, 0)
    }

    fn lookup(&self, path: &[u16]) -> Option<usize> {
        if path.len() > self.max_rule_len || path.is_empty() {
            return None;
        }
        self.by_path.get(path).copied()
    }
}

struct Walk<'a> {
    c: &'a CompiledCanonicalizer,
    restrict: Option<&'a [Vec<u16>]>,
    /// The current position's path as UTF-16 code units (a shared buffer).
    path: Vec<u16>,
}

impl Walk<'_> {
    fn path_text(&self) -> String {
        String::from_utf16_lossy(&self.path)
    }

    /// The position of the member whose path is `self.path`, given its parent's position and
    /// where the member's key starts in the buffer. `None` when facet restriction drops it.
    fn child_pos(&self, parent: Pos, key_start: usize) -> Option<Pos> {
        let path = &self.path[..];
        let inside = if parent.inside {
            true
        } else if path.is_empty() {
            false
        } else {
            let restrict = self.restrict.unwrap_or(&[]);
            if restrict.iter().any(|q| at_or_under(path, q)) {
                true
            } else if restrict.iter().any(|q| strict_ancestor(path, q)) {
                false
            } else {
                return None;
            }
        };
        let exact = self.c.lookup(path);
        let mut rule = exact;
        if rule.is_none() {
            // Dotted prefixes ending inside the key itself (a key containing '.'), longest first.
            let lim = path.len().min(self.c.max_rule_len + 1);
            let mut i = lim;
            while i > key_start {
                i -= 1;
                if path[i] == DOT
                    && let Some(r) = self.c.lookup(&path[..i])
                {
                    rule = Some(r);
                    break;
                }
            }
        }
        Some(Pos {
            rule: rule.or(parent.rule),
            exact,
            inside,
        })
    }

    fn reduce(&mut self, v: &Value, pos: Pos, depth: usize) -> Result<Option<Value>, CanonError> {
        let rule = pos.rule.map(|i| &self.c.rules[i]);
        let material = rule.map_or(self.c.spec.default_material, |r| r.material);
        match v {
            Value::Null | Value::Bool(_) => Ok(material.then(|| v.clone())),
            Value::Number(x) => {
                if !material {
                    return Ok(None);
                }
                let quantum = rule.and_then(|r| r.quantum);
                let y = match quantum {
                    Some(q) => quantize(*x, q),
                    None => *x,
                };
                if !y.is_finite() {
                    return Err(CanonError::NonFinite {
                        path: self.path_text(),
                        quantum,
                    });
                }
                Ok(Some(Value::Number(y)))
            }
            Value::String(s) => {
                if !material {
                    return Ok(None);
                }
                Ok(Some(Value::String(normalize_text(
                    s,
                    rule.and_then(|r| r.text),
                ))))
            }
            Value::Array(items) => {
                if depth >= json::MAX_DEPTH {
                    return Err(CanonError::TooDeep {
                        path: self.path_text(),
                    });
                }
                let mut out = Vec::new();
                for item in items {
                    if let Some(r) = self.reduce(item, pos, depth + 1)? {
                        out.push(r);
                    }
                }
                if out.is_empty() && !material {
                    return Ok(None);
                }
                if rule.is_some_and(|r| r.set) {
                    out = sort_dedup(out)?;
                }
                Ok(Some(Value::Array(out)))
            }
            Value::Object(obj) => {
                if depth >= json::MAX_DEPTH {
                    return Err(CanonError::TooDeep {
                        path: self.path_text(),
                    });
                }
                let mut out = Object::new();
                let base = self.path.len();
                for (k, val) in obj.iter() {
                    if base > 0 {
                        self.path.push(DOT);
                    }
                    let key_start = self.path.len();
                    match k {
                        JsString::Utf8(s) => self.path.extend(s.encode_utf16()),
                        JsString::Wtf16(u) => self.path.extend_from_slice(u),
                    }
                    let reduced = match self.child_pos(pos, key_start) {
                        Some(child) => self.reduce(val, child, depth + 1),
                        None => Ok(None),
                    };
                    self.path.truncate(base);
                    if let Some(r) = reduced? {
                        out.push_unique(k.clone(), r);
                    }
                }
                if !out.is_empty() {
                    return Ok(Some(Value::Object(out)));
                }
                // The root has the empty path and no rule has it, so `exact` is `None` there.
                let kept_empty = pos.exact.is_some_and(|i| self.c.rules[i].material);
                Ok(kept_empty.then_some(Value::Object(out)))
            }
        }
    }
}

/// JavaScript `Math.round(x / q) * q` with `-0` mapped to `0` (RUNTIME.md §4.5).
pub(super) fn quantize(x: f64, q: f64) -> f64 {
    let y = js_round(x / q) * q;
    if y == 0.0 { 0.0 } else { y }
}

/// `Math.round`: the integral value nearest to `v`, ties toward +∞. Exact: `v - floor(v)` is
/// representable for every finite double.
pub(super) fn js_round(v: f64) -> f64 {
    if !v.is_finite() {
        return v;
    }
    let f = v.floor();
    if v - f >= 0.5 { f + 1.0 } else { f }
}

/// Sorts by canonical serialization in UTF-16 order and removes duplicates (RUNTIME.md §4.5).
fn sort_dedup(items: Vec<Value>) -> Result<Vec<Value>, CanonError> {
    let mut keyed = Vec::with_capacity(items.len());
    for v in items {
        let text = json::canonical_string(&v).map_err(|_| CanonError::NonFinite {
            path: String::new(),
            quantum: None,
        })?;
        keyed.push((text, v));
    }
    keyed.sort_by(|a, b| utf16_cmp(&a.0, &b.0));
    keyed.dedup_by(|a, b| a.0 == b.0);
    Ok(keyed.into_iter().map(|(_, v)| v).collect())
}
