//! The one receipt decoder (FORMATS.md §4.1): `Deserialize` for [`Receipt`] and for the member
//! types its projections share, over the project's JSON value ([`json::from_value`]).
//!
//! The writer's index reads a whole [`Receipt`] ([`Receipt::from_value`]); the viewer's frame
//! projection (`replay::open::ProjectedReceipt`, VIEWER.md §3.2) and the offline verbs' display
//! projection (`replay::trail::TrailEntry`) derive their member subsets from the types here:
//! [`Text`] and [`NonEmptyText`] (strings, lone surrogates replaced), [`SafeCount`] (token
//! counts), [`Lenient`] (a member that may be unreadable) and the lossy [`Fingerprints`] form.
//! The collect-all verifier (`verify.rs`) stays hand-written: its message order is specified
//! (FORMATS.md §7.1).

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};

use super::model::{Fingerprints, Receipt, is_safe_nonneg_int, recompute_content_hash};
use crate::format::json::{self, DeError, NonFinite, TypeNames, Value};

/// Why a raw value could not be read as a [`Receipt`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReceiptDecodeError {
    /// The value holds a non-finite number, so it has no content address.
    #[error("receipt cannot be canonicalized: {0}")]
    Canonicalize(#[from] NonFinite),
    /// A member the reconciler needs is absent or of the wrong shape.
    #[error("{}: {}", .0.path_from("receipt"), .0.message(TypeNames::WithArticle))]
    Shape(#[from] DeError),
}

impl Receipt {
    /// Reads a receipt from a raw value for a writer's index. Only the members the reconciler
    /// needs must be well formed (unknown members and the literals are not checked: the caller
    /// verified the receipt first); `content_hash` is **recomputed from the values**
    /// (FORMATS.md §7.3), so `prev` links to the value-derived address even after a hand edit.
    ///
    /// Errors: [`ReceiptDecodeError`] naming the first problem.
    pub fn from_value(v: &Value) -> Result<Receipt, ReceiptDecodeError> {
        let content_hash = recompute_content_hash(v)?;
        Receipt::from_value_hashed(v, content_hash)
    }

    /// [`Receipt::from_value`] when the caller already recomputed the value's content address
    /// (`content_hash`, from [`recompute_content_hash`]): saves hashing the receipt twice.
    ///
    /// Errors: [`ReceiptDecodeError::Shape`].
    pub(crate) fn from_value_hashed(
        v: &Value,
        content_hash: String,
    ) -> Result<Receipt, ReceiptDecodeError> {
        let mut r: Receipt = json::from_value(v)?;
        r.content_hash = content_hash;
        Ok(r)
    }
}

/// Reads any string, replacing lone surrogates with U+FFFD (the lossless path of the project's
/// deserializer hands such strings over as UTF-16LE bytes).
struct TextVisitor;

impl Visitor<'_> for TextVisitor {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<String, E> {
        Ok(s.to_string())
    }
    fn visit_string<E: de::Error>(self, s: String) -> Result<String, E> {
        Ok(s)
    }
    fn visit_bytes<E: de::Error>(self, b: &[u8]) -> Result<String, E> {
        let units: Vec<u16> = b
            .chunks(2)
            .map(|c| u16::from_le_bytes([c[0], c.get(1).copied().unwrap_or(0)]))
            .collect();
        Ok(String::from_utf16_lossy(&units))
    }
}

/// `deserialize_with` form of [`Text`]: any string, lone surrogates replaced.
pub fn lossy_string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    d.deserialize_any(TextVisitor)
}

/// Any JSON string, lone surrogates replaced with U+FFFD.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Text(pub String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Text, D::Error> {
        lossy_string(d).map(Text)
    }
}

/// A non-empty JSON string (a node id as readers take it), lone surrogates replaced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NonEmptyText(pub String);

impl<'de> Deserialize<'de> for NonEmptyText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<NonEmptyText, D::Error> {
        let s = lossy_string(d)?;
        if s.is_empty() {
            return Err(de::Error::custom("expected a non-empty string"));
        }
        Ok(NonEmptyText(s))
    }
}

/// A token count: a non-negative safe integer (FORMATS.md §4.1 `cost.tokens`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SafeCount(pub u64);

impl<'de> Deserialize<'de> for SafeCount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<SafeCount, D::Error> {
        let n = f64::deserialize(d)?;
        if !is_safe_nonneg_int(n) {
            return Err(de::Error::custom("expected a non-negative safe integer"));
        }
        Ok(SafeCount(n as u64))
    }
}

/// `deserialize_with` form of [`SafeCount`].
pub fn safe_count<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    SafeCount::deserialize(d).map(|c| c.0)
}

/// A member read leniently: `None` when it is absent or cannot be read as `T`.
///
/// Only for the project's deserializer ([`json::from_value`]), which reads each position
/// independently, so a failed read leaves nothing behind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lenient<T>(pub Option<T>);

impl<T> Default for Lenient<T> {
    fn default() -> Lenient<T> {
        Lenient(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Lenient<T>, D::Error> {
        Ok(Lenient(T::deserialize(d).ok()))
    }
}

/// Reads an object of string tokens, in member order; keys with a lone surrogate get U+FFFD,
/// values too when `LOSSY`, else they are an error.
struct FingerprintsVisitor<const LOSSY: bool>;

impl<'de, const LOSSY: bool> Visitor<'de> for FingerprintsVisitor<LOSSY> {
    type Value = Fingerprints;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of strings")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fingerprints, A::Error> {
        let mut out = Vec::with_capacity(map.size_hint().unwrap_or(0).min(256));
        while let Some(Text(facet)) = map.next_key()? {
            let token = if LOSSY {
                map.next_value::<Text>()?.0
            } else {
                map.next_value::<String>()?
            };
            out.push((facet, token));
        }
        Ok(Fingerprints(out))
    }
}

impl<'de> Deserialize<'de> for Fingerprints {
    /// A JSON object of strings (FORMATS.md §8.1), in member order. Keys with a lone surrogate
    /// get U+FFFD; a value must be a valid Unicode string.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Fingerprints, D::Error> {
        d.deserialize_map(FingerprintsVisitor::<false>)
    }
}

impl Fingerprints {
    /// `deserialize_with` form for readers that display tokens (VIEWER.md §3.2): like the
    /// derived `Deserialize`, but a token with a lone surrogate gets U+FFFD too.
    pub(crate) fn deserialize_lossy<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Fingerprints, D::Error> {
        d.deserialize_map(FingerprintsVisitor::<true>)
    }
}
