//! A serde `Serializer` that builds the project's JSON [`Value`] from any `Serialize` type, so
//! spec types can `#[derive(Serialize)]` and still be written with the canonical, compact or
//! pretty writers (FORMATS.md §3).
//!
//! Members keep the order the type serializes them in (declaration order for derived structs).
//! Integers become doubles (beyond 2^53 they round, as in JavaScript); `None` and unit become
//! `null`; unit variants become their name; other enum variants become `{variant: value}`; map
//! keys must serialize to strings (numbers and booleans are written as their text). Strings are
//! Rust strings, so a lone surrogate in a [`Value`] being serialized comes out as U+FFFD.

use std::fmt;

use serde::ser::{self, Serialize};

use super::{JsString, Object, Value, number_to_string};

/// Builds the [`Value`] of `t`.
///
/// Errors: [`SerError`] when a map key is not a string, number or boolean, or when `t`'s own
/// `Serialize` fails.
pub fn to_value<T: Serialize + ?Sized>(t: &T) -> Result<Value, SerError> {
    t.serialize(ValueSerializer)
}

/// [`to_value`] for types whose `Serialize` cannot fail: derived structs and enums with string
/// member names, `Option`s, sequences and string-keyed maps of such types. For any other type,
/// a failure (a non-string map key) gives `null`; use [`to_value`] to see it.
pub fn value_of<T: Serialize + ?Sized>(t: &T) -> Value {
    to_value(t).unwrap_or(Value::Null)
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
pub struct ValueSerializer;

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
        _name: &'static str,
        v: &T,
    ) -> Result<Value, SerError> {
        v.serialize(self)
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
        self.items.push(v.serialize(ValueSerializer)?);
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
}

impl MapBuilder {
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
        self.key = Some(key_text(key.serialize(ValueSerializer)?)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), SerError> {
        let key = self
            .key
            .take()
            .ok_or_else(|| SerError("a map value was serialized before its key".into()))?;
        self.object.insert(key, v.serialize(ValueSerializer)?);
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
                self.object.insert(key, v.serialize(ValueSerializer)?);
                Ok(())
            }
            fn end(self) -> Result<Value, SerError> {
                Ok(self.finish())
            }
        }
    )*};
}

struct_builder!(SerializeStruct, SerializeStructVariant);
