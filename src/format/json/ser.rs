//! A serde `Serializer` that builds the project's JSON [`Value`] from any `Serialize` type, so
//! spec types can `#[derive(Serialize)]` and still be written with the canonical, compact or
//! pretty writers (FORMATS.md §3).
//!
//! Members keep the order the type serializes them in (declaration order for derived structs).
//! Integers become doubles (beyond 2^53 they round, as in JavaScript); `None` and unit become
//! `null`; unit variants become their name; other enum variants become `{variant: value}`; map
//! keys must serialize to strings (numbers and booleans are written as their text).
//!
//! A [`Value`] serialized here comes back exactly, lone surrogates ([`JsString::Wtf16`]) and
//! non-finite numbers included: `Value`'s `Serialize` passes those two through a newtype struct
//! named [`WTF16_STRING`] or [`NON_FINITE`], whose content is the exact form for a serializer
//! that is not human-readable (this one, inside those newtypes) and the lossy form (U+FFFD,
//! `null`) for every other serializer, such as `serde_json`'s.

use std::collections::HashMap;
use std::fmt;

use serde::ser::{self, Serialize};

use super::{JsString, Object, Value, number_to_string};

/// Builds the [`Value`] of `t`.
///
/// Errors: [`SerError`] when a map key is not a string, number or boolean, or when `t`'s own
/// `Serialize` fails.
pub fn to_value<T: Serialize + ?Sized>(t: &T) -> Result<Value, SerError> {
    t.serialize(ValueSerializer::new())
}

/// [`to_value`] for types whose `Serialize` cannot fail: derived structs and enums with string
/// member names, `Option`s, sequences and string-keyed maps of such types. For any other type,
/// a failure (a non-string map key) gives `null`; use [`to_value`] to see it.
pub fn value_of<T: Serialize + ?Sized>(t: &T) -> Value {
    to_value(t).unwrap_or(Value::Null)
}

/// Newtype-struct name of a string holding a lone surrogate (content: UTF-16LE bytes here, the
/// lossy string elsewhere).
pub(crate) const WTF16_STRING: &str = "$reactor::json::wtf16";
/// Newtype-struct name of a non-finite number (content: the `f64` here, `null` elsewhere).
pub(crate) const NON_FINITE: &str = "$reactor::json::non-finite";

/// The two parts of a [`Value`] that serde's data model cannot carry losslessly, each written
/// inside its newtype struct ([`WTF16_STRING`], [`NON_FINITE`]).
pub(super) enum Exact<'a> {
    /// UTF-16 code units with a lone surrogate.
    Wtf16(&'a [u16]),
    /// NaN or an infinity.
    NonFinite(f64),
}

impl Serialize for Exact<'_> {
    fn serialize<S: ser::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match (self, s.is_human_readable()) {
            (Exact::Wtf16(u), true) => s.serialize_str(&String::from_utf16_lossy(u)),
            (Exact::Wtf16(u), false) => {
                let bytes: Vec<u8> = u.iter().flat_map(|c| c.to_le_bytes()).collect();
                s.serialize_bytes(&bytes)
            }
            (Exact::NonFinite(_), true) => s.serialize_unit(),
            (Exact::NonFinite(n), false) => s.serialize_f64(*n),
        }
    }
}

impl Exact<'_> {
    /// Writes `self` inside its newtype struct.
    pub(super) fn serialize_in<S: ser::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let name = match self {
            Exact::Wtf16(_) => WTF16_STRING,
            Exact::NonFinite(_) => NON_FINITE,
        };
        s.serialize_newtype_struct(name, self)
    }
}

/// Why a value could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SerError(String);

impl ser::Error for SerError {
    fn custom<T: fmt::Display>(msg: T) -> SerError {
        SerError(msg.to_string())
    }
}

/// The serializer; see the module docs.
#[derive(Clone, Copy, Debug, Default)]
pub struct ValueSerializer {
    /// Inside a [`WTF16_STRING`] or [`NON_FINITE`] newtype: not human-readable, and bytes are
    /// UTF-16LE code units of a string.
    exact: bool,
}

impl ValueSerializer {
    /// The serializer.
    pub fn new() -> ValueSerializer {
        ValueSerializer::default()
    }
}

fn object_of(name: &str, v: Value) -> Value {
    let mut o = Object::new();
    o.push_unique(name, v);
    Value::Object(o)
}

impl ser::Serializer for ValueSerializer {
    type Ok = Value;
    type Error = SerError;
    type SerializeSeq = SeqBuilder;
    type SerializeTuple = SeqBuilder;
    type SerializeTupleStruct = SeqBuilder;
    type SerializeTupleVariant = SeqBuilder;
    type SerializeMap = MapBuilder;
    type SerializeStruct = MapBuilder;
    type SerializeStructVariant = MapBuilder;

    fn serialize_bool(self, v: bool) -> Result<Value, SerError> {
        Ok(Value::Bool(v))
    }
    fn serialize_i8(self, v: i8) -> Result<Value, SerError> {
        Ok(Value::Number(f64::from(v)))
    }
    fn serialize_i16(self, v: i16) -> Result<Value, SerError> {
        Ok(Value::Number(f64::from(v)))
    }
    fn serialize_i32(self, v: i32) -> Result<Value, SerError> {
        Ok(Value::Number(f64::from(v)))
    }
    fn serialize_i64(self, v: i64) -> Result<Value, SerError> {
        Ok(Value::Number(v as f64))
    }
    fn serialize_u8(self, v: u8) -> Result<Value, SerError> {
        Ok(Value::Number(f64::from(v)))
    }
    fn serialize_u16(self, v: u16) -> Result<Value, SerError> {
        Ok(Value::Number(f64::from(v)))
    }
    fn serialize_u32(self, v: u32) -> Result<Value, SerError> {
        Ok(Value::Number(f64::from(v)))
    }
    fn serialize_u64(self, v: u64) -> Result<Value, SerError> {
        Ok(Value::Number(v as f64))
    }
    fn serialize_f32(self, v: f32) -> Result<Value, SerError> {
        Ok(Value::Number(f64::from(v)))
    }
    fn serialize_f64(self, v: f64) -> Result<Value, SerError> {
        Ok(Value::Number(v))
    }
    fn serialize_char(self, v: char) -> Result<Value, SerError> {
        Ok(Value::str(v.to_string()))
    }
    fn serialize_str(self, v: &str) -> Result<Value, SerError> {
        Ok(Value::str(v))
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<Value, SerError> {
        if self.exact {
            let units = v
                .chunks(2)
                .map(|c| u16::from_le_bytes([c[0], c.get(1).copied().unwrap_or(0)]))
                .collect();
            return Ok(Value::String(JsString::from_utf16(units)));
        }
        Ok(Value::Array(
            v.iter().map(|b| Value::Number(f64::from(*b))).collect(),
        ))
    }
    fn serialize_none(self) -> Result<Value, SerError> {
        Ok(Value::Null)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<Value, SerError> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<Value, SerError> {
        Ok(Value::Null)
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<Value, SerError> {
        Ok(Value::Null)
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<Value, SerError> {
        Ok(Value::str(variant))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        v: &T,
    ) -> Result<Value, SerError> {
        let exact = name == WTF16_STRING || name == NON_FINITE;
        v.serialize(ValueSerializer { exact })
    }
    fn is_human_readable(&self) -> bool {
        !self.exact
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<Value, SerError> {
        Ok(object_of(variant, v.serialize(self)?))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<SeqBuilder, SerError> {
        Ok(SeqBuilder {
            items: Vec::with_capacity(len.unwrap_or(0).min(4096)),
            variant: None,
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<SeqBuilder, SerError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<SeqBuilder, SerError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<SeqBuilder, SerError> {
        let mut b = self.serialize_seq(Some(len))?;
        b.variant = Some(variant);
        Ok(b)
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<MapBuilder, SerError> {
        Ok(MapBuilder::default())
    }
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<MapBuilder, SerError> {
        Ok(MapBuilder::default())
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<MapBuilder, SerError> {
        Ok(MapBuilder {
            variant: Some(variant),
            ..MapBuilder::default()
        })
    }
}

/// Collects array elements (and the variant name of a tuple variant).
pub struct SeqBuilder {
    items: Vec<Value>,
    variant: Option<&'static str>,
}

impl SeqBuilder {
    fn push<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), SerError> {
        self.items.push(v.serialize(ValueSerializer::new())?);
        Ok(())
    }
    fn finish(self) -> Value {
        let array = Value::Array(self.items);
        match self.variant {
            Some(name) => object_of(name, array),
            None => array,
        }
    }
}

/// The four sequence-like traits share one body.
macro_rules! seq_builder {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for SeqBuilder {
            type Ok = Value;
            type Error = SerError;
            fn $method<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), SerError> {
                self.push(v)
            }
            fn end(self) -> Result<Value, SerError> {
                Ok(self.finish())
            }
        }
    )*};
}

seq_builder!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

/// Collects object members (and the variant name of a struct variant).
#[derive(Default)]
pub struct MapBuilder {
    object: Object,
    key: Option<JsString>,
    variant: Option<&'static str>,
    /// Key → position, built once a map grows past [`INDEXED_FROM`] members, so that building a
    /// large object stays linear.
    index: Option<HashMap<JsString, usize>>,
}

/// Member count from which [`MapBuilder`] indexes keys instead of scanning them.
const INDEXED_FROM: usize = 32;

impl MapBuilder {
    /// Sets `key` (the last value wins, at the position of the first occurrence).
    fn put(&mut self, key: JsString, value: Value) {
        let entries = &mut self.object.entries;
        if entries.len() < INDEXED_FROM && self.index.is_none() {
            self.object.insert(key, value);
            return;
        }
        let index = self.index.get_or_insert_with(|| {
            entries
                .iter()
                .enumerate()
                .map(|(i, (k, _))| (k.clone(), i))
                .collect()
        });
        match index.get(&key) {
            Some(&i) => entries[i].1 = value,
            None => {
                index.insert(key.clone(), entries.len());
                entries.push((key, value));
            }
        }
    }

    fn finish(self) -> Value {
        let object = Value::Object(self.object);
        match self.variant {
            Some(name) => object_of(name, object),
            None => object,
        }
    }
}

/// The text of a map key: strings as they are, numbers and booleans as JavaScript prints them.
fn key_text(v: Value) -> Result<JsString, SerError> {
    match v {
        Value::String(s) => Ok(s),
        Value::Number(n) => Ok(JsString::Utf8(number_to_string(n))),
        Value::Bool(b) => Ok(JsString::Utf8(b.to_string())),
        other => Err(SerError(format!(
            "an object key must be a string, not {}",
            other.type_name()
        ))),
    }
}

impl ser::SerializeMap for MapBuilder {
    type Ok = Value;
    type Error = SerError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), SerError> {
        self.key = Some(key_text(key.serialize(ValueSerializer::new())?)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), SerError> {
        let key = self
            .key
            .take()
            .ok_or_else(|| SerError("a map value was serialized before its key".into()))?;
        let v = v.serialize(ValueSerializer::new())?;
        self.put(key, v);
        Ok(())
    }
    fn end(self) -> Result<Value, SerError> {
        Ok(self.finish())
    }
}

/// Struct members and struct-variant members are written alike.
macro_rules! struct_builder {
    ($($trait:ident),*) => {$(
        impl ser::$trait for MapBuilder {
            type Ok = Value;
            type Error = SerError;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                v: &T,
            ) -> Result<(), SerError> {
                let v = v.serialize(ValueSerializer::new())?;
                self.put(JsString::Utf8(key.to_string()), v);
                Ok(())
            }
            fn end(self) -> Result<Value, SerError> {
                Ok(self.finish())
            }
        }
    )*};
}

struct_builder!(SerializeStruct, SerializeStructVariant);
