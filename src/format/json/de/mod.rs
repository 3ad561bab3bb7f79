//! A serde `Deserializer` over the project's JSON [`Value`] (FORMATS.md §3.1), so that spec
//! types can `#[derive(Deserialize)]` and still report errors the way the specification's
//! readers do: with the JSON path of the offending member and in JavaScript terms.
//!
//! Semantics, beyond serde's data model:
//!
//! * **Numbers** are doubles: `deserialize_any` visits `f64`; integer types accept integral
//!   doubles within their range.
//! * **Structs read their members in declaration order**, whatever the input order, so the
//!   first error reported does not depend on how the input orders its members. A declared
//!   member that is absent reads like `null` for an `Option` (and for `IgnoredAny`) and is
//!   [`DeErrorKind::Missing`] for every other type; unknown members come last, in input order
//!   (ignored unless the type denies them). `#[serde(default)]` on a non-`Option` member and
//!   `#[serde(alias)]` are therefore not supported by this deserializer.
//! * **Strings with a lone surrogate** ([`JsString::Wtf16`]) are
//!   [`DeErrorKind::LoneSurrogate`] for every string type. Only [`Value`]'s own `Deserialize`
//!   keeps them: `deserialize_any` hands them over as UTF-16LE bytes (`visit_bytes`), the one
//!   lossless path through serde's data model.
//! * **Enums** are unit variants spelled as strings (or `{variant: value}` objects). An unknown
//!   spelling is [`DeErrorKind::UnknownVariant`]; under an `Option` the alternatives also list
//!   `null`.
//! * **Type errors** name what the position accepts: `a boolean`, `a number`, `an integer`,
//!   `a string`, `an array`, `an object`, `null`, or a visitor's own expectation. [`expecting`]
//!   lets a member replace that text for its own position (`an object or null`).
//!
//! Errors ([`DeError`]) carry the path from the root (`fields[1].text.case_insensitive`) and a
//! [`DeErrorKind`]; callers format them in their own message style.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{
    self, DeserializeSeed, Deserializer as _, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};
use serde::forward_to_deserialize_any;

use super::{JsString, Object, Value};

mod error;
mod value;

pub use error::{DeError, DeErrorKind, Found, PathSegment, TypeNames};

/// Deserializes a `T` from `v` (see the module docs for the semantics).
///
/// Errors: [`DeError`] naming the path of the first offending member.
pub fn from_value<'de, T: de::Deserialize<'de>>(v: &'de Value) -> Result<T, DeError> {
    T::deserialize(ValueDeserializer::new(v))
}

/// Prefix of the newtype-struct names [`expecting`] uses to pass an expectation to this
/// deserializer (other deserializers ignore newtype names and see `T` directly).
const EXPECT_PREFIX: &str = "$reactor::json::expecting:";

/// Builds the `&'static str` [`expecting`] takes: `expect!("an object or null")`.
#[macro_export]
#[doc(hidden)]
macro_rules! __json_expect {
    ($text:literal) => {
        concat!("$reactor::json::expecting:", $text)
    };
}
pub use crate::__json_expect as expect;

/// Deserializes a `T` whose type errors at this very position say `expected <text>` instead of
/// the default (`an object`, `an array`, …). `tag` is built with [`expect!`]. Deserializers other
/// than this one deserialize `T` unchanged.
///
/// Use it as a member's `deserialize_with` target through a small wrapper function.
pub fn expecting<'de, D, T>(d: D, tag: &'static str) -> Result<T, D::Error>
where
    D: de::Deserializer<'de>,
    T: de::Deserialize<'de>,
{
    struct Inner<T>(PhantomData<T>);
    impl<'de, T: de::Deserialize<'de>> Visitor<'de> for Inner<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a value")
        }
        fn visit_newtype_struct<D2: de::Deserializer<'de>>(self, d: D2) -> Result<T, D2::Error> {
            T::deserialize(d)
        }
    }
    d.deserialize_newtype_struct(tag, Inner(PhantomData))
}

/// The deserializer over one position of a [`Value`]: a present value, or a declared struct
/// member that is absent. Build it with [`ValueDeserializer::new`]; most callers want
/// [`from_value`].
#[derive(Clone, Copy, Debug)]
pub struct ValueDeserializer<'de> {
    input: Option<&'de Value>,
    /// The expectation [`expecting`] set for this position.
    expect: Option<&'static str>,
}

impl<'de> ValueDeserializer<'de> {
    /// A deserializer over `v`.
    pub fn new(v: &'de Value) -> ValueDeserializer<'de> {
        ValueDeserializer {
            input: Some(v),
            expect: None,
        }
    }

    fn missing() -> ValueDeserializer<'de> {
        ValueDeserializer {
            input: None,
            expect: None,
        }
    }

    fn value(&self) -> Result<&'de Value, DeError> {
        self.input.ok_or_else(|| DeError::new(DeErrorKind::Missing))
    }

    fn mismatch(&self, default: &str, v: &Value) -> DeError {
        DeError::type_error(self.expect.unwrap_or(default), Found::of(v))
    }

    /// An integral double within `[min, max]` (both exact in `f64` terms).
    fn integer<V: Visitor<'de>>(self, visitor: V, min: f64, max: f64) -> Result<V::Value, DeError> {
        let v = self.value()?;
        match v {
            Value::Number(n) if n.fract() == 0.0 && *n >= min && *n <= max => {
                if *n < 0.0 {
                    visitor.visit_i64(*n as i64)
                } else {
                    visitor.visit_u64(*n as u64)
                }
            }
            _ => Err(self.mismatch("an integer", v)),
        }
    }
}

fn utf16le(units: &[u16]) -> Vec<u8> {
    units.iter().flat_map(|u| u.to_le_bytes()).collect()
}

impl<'de> de::Deserializer<'de> for ValueDeserializer<'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.value()? {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => visitor.visit_f64(*n),
            Value::String(JsString::Utf8(s)) => visitor.visit_borrowed_str(s),
            Value::String(JsString::Wtf16(u)) => visitor.visit_byte_buf(utf16le(u)),
            Value::Array(items) => visitor.visit_seq(Seq::new(items)),
            Value::Object(o) => visitor.visit_map(Members::input_order(o)),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.value()? {
            Value::Bool(b) => visitor.visit_bool(*b),
            other => Err(self.mismatch("a boolean", other)),
        }
    }

    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.integer(visitor, f64::from(i8::MIN), f64::from(i8::MAX))
    }
    fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.integer(visitor, f64::from(i16::MIN), f64::from(i16::MAX))
    }
    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.integer(visitor, f64::from(i32::MIN), f64::from(i32::MAX))
    }
    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.integer(visitor, -(2f64.powi(63)), 2f64.powi(63) - 1024.0)
    }
    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.integer(visitor, 0.0, f64::from(u8::MAX))
    }
    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.integer(visitor, 0.0, f64::from(u16::MAX))
    }
    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.integer(visitor, 0.0, f64::from(u32::MAX))
    }
    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.integer(visitor, 0.0, 2f64.powi(64) - 2048.0)
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.value()? {
            Value::Number(n) => visitor.visit_f64(*n),
            other => Err(self.mismatch("a number", other)),
        }
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.value()? {
            Value::String(JsString::Utf8(s)) => visitor.visit_borrowed_str(s),
            Value::String(JsString::Wtf16(_)) => Err(DeError::new(DeErrorKind::LoneSurrogate)),
            other => Err(self.mismatch("a string", other)),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_any(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_any(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.input {
            None | Some(Value::Null) => visitor.visit_none(),
            Some(_) => visitor.visit_some(self).map_err(|mut e| {
                if e.rev_path.is_empty()
                    && let DeErrorKind::UnknownVariant { alternatives, .. } = &mut e.kind
                {
                    alternatives.push("null".to_string());
                }
                e
            }),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.value()? {
            Value::Null => visitor.visit_unit(),
            other => Err(self.mismatch("null", other)),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        let expect = name.strip_prefix(EXPECT_PREFIX).or(self.expect);
        visitor.visit_newtype_struct(ValueDeserializer {
            input: self.input,
            expect,
        })
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.value()? {
            Value::Array(items) => visitor.visit_seq(Seq::new(items)),
            other => Err(self.mismatch("an array", other)),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.value()? {
            Value::Object(o) => visitor.visit_map(Members::input_order(o)),
            other => Err(self.mismatch("an object", other)),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        match self.value()? {
            Value::Object(o) => visitor.visit_map(Members::declared_order(o, fields)),
            other => Err(self.mismatch("an object", other)),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        match self.value()? {
            Value::String(JsString::Utf8(s)) => visitor.visit_enum(s.as_str().into_deserializer()),
            Value::String(JsString::Wtf16(_)) => Err(DeError::new(DeErrorKind::LoneSurrogate)),
            Value::Object(o) if o.len() == 1 => visitor.visit_enum(Variant { object: o }),
            other => Err(self.mismatch("a string", other)),
        }
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_unit()
    }
}

/// Array elements, each error prefixed with its index.
struct Seq<'de> {
    items: std::slice::Iter<'de, Value>,
    index: usize,
}

impl<'de> Seq<'de> {
    fn new(items: &'de [Value]) -> Seq<'de> {
        Seq {
            items: items.iter(),
            index: 0,
        }
    }
}

impl<'de> SeqAccess<'de> for Seq<'de> {
    type Error = DeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DeError> {
        let Some(item) = self.items.next() else {
            return Ok(None);
        };
        let i = self.index;
        self.index += 1;
        seed.deserialize(ValueDeserializer::new(item))
            .map(Some)
            .map_err(|e| e.under(PathSegment::Index(i)))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

/// Object members: in input order (maps), or declared fields first, absent ones included,
/// then the undeclared members in input order (structs).
struct Members<'de> {
    object: &'de Object,
    fields: &'static [&'static str],
    next_field: usize,
    rest: std::slice::Iter<'de, (JsString, Value)>,
    /// The member whose key was just handed out.
    current: Option<(&'de str, ValueDeserializer<'de>)>,
}

impl<'de> Members<'de> {
    fn input_order(object: &'de Object) -> Members<'de> {
        Members::declared_order(object, &[])
    }

    fn declared_order(object: &'de Object, fields: &'static [&'static str]) -> Members<'de> {
        Members {
            object,
            fields,
            next_field: 0,
            rest: object.entries.iter(),
            current: None,
        }
    }
}

impl<'de> MapAccess<'de> for Members<'de> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        if let Some(&field) = self.fields.get(self.next_field) {
            self.next_field += 1;
            let input = match self.object.get(field) {
                Some(v) => ValueDeserializer::new(v),
                None => ValueDeserializer::missing(),
            };
            self.current = Some((field, input));
            return seed
                .deserialize(de::value::BorrowedStrDeserializer::<DeError>::new(field))
                .map(Some);
        }
        for (key, value) in self.rest.by_ref() {
            if matches!(key, JsString::Utf8(k) if self.fields.contains(&k.as_str())) {
                continue;
            }
            let label = match key {
                JsString::Utf8(k) => k.as_str(),
                JsString::Wtf16(_) => "\u{fffd}",
            };
            self.current = Some((label, ValueDeserializer::new(value)));
            return seed.deserialize(Key(key)).map(Some);
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        let (key, input) = self
            .current
            .take()
            .ok_or_else(|| de::Error::custom("a member value was asked for before its key"))?;
        seed.deserialize(input)
            .map_err(|e| e.under(PathSegment::Key(key.to_string())))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.fields.len() + self.object.len())
    }
}

/// An object key: a string, or (with a lone surrogate) UTF-16LE bytes for `deserialize_any`.
struct Key<'de>(&'de JsString);

impl<'de> de::Deserializer<'de> for Key<'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.0 {
            JsString::Utf8(s) => visitor.visit_borrowed_str(s),
            JsString::Wtf16(u) => visitor.visit_byte_buf(utf16le(u)),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.0 {
            JsString::Utf8(s) => visitor.visit_borrowed_str(s),
            JsString::Wtf16(_) => Err(DeError::new(DeErrorKind::LoneSurrogate)),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

/// An externally tagged variant `{variant: value}`.
struct Variant<'de> {
    object: &'de Object,
}

impl<'de> de::EnumAccess<'de> for Variant<'de> {
    type Error = DeError;
    type Variant = ValueDeserializer<'de>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, ValueDeserializer<'de>), DeError> {
        let (key, value) = &self.object.entries[0];
        let tag = seed.deserialize(Key(key))?;
        Ok((tag, ValueDeserializer::new(value)))
    }
}

impl<'de> de::VariantAccess<'de> for ValueDeserializer<'de> {
    type Error = DeError;

    fn unit_variant(self) -> Result<(), DeError> {
        de::Deserialize::deserialize(self)
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, DeError> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_seq(visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_struct("", fields, visitor)
    }
}
