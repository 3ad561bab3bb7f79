//! `Deserialize` for [`Value`] itself: any JSON value, numbers as doubles, and (from this
//! module's deserializer) strings with lone surrogates intact.

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use crate::format::json::{JsString, Object, Value};

/// Reads any JSON value. Numbers become doubles; from this module's deserializer, strings with
/// lone surrogates arrive intact (as UTF-16LE bytes).
struct ValueVisitor;

fn string_from_bytes(b: &[u8]) -> JsString {
    let units: Vec<u16> = b
        .chunks(2)
        .map(|c| u16::from_le_bytes([c[0], c.get(1).copied().unwrap_or(0)]))
        .collect();
    JsString::from_utf16(units)
}

/// Reads a member key the way [`ValueVisitor`] reads strings.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = JsString;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<JsString, D::Error> {
        struct K;
        impl Visitor<'_> for K {
            type Value = JsString;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<JsString, E> {
                Ok(JsString::Utf8(s.to_string()))
            }
            fn visit_bytes<E: de::Error>(self, b: &[u8]) -> Result<JsString, E> {
                Ok(string_from_bytes(b))
            }
        }
        d.deserialize_any(K)
    }
}

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        de::Deserialize::deserialize(d)
    }
    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Number(n as f64))
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Value, E> {
        Ok(Value::Number(n as f64))
    }
    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Value, E> {
        Ok(Value::Number(n))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Value, E> {
        Ok(Value::str(s))
    }
    fn visit_bytes<E: de::Error>(self, b: &[u8]) -> Result<Value, E> {
        Ok(Value::String(string_from_bytes(b)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(v) = seq.next_element()? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut o = Object::new();
        while let Some(k) = map.next_key_seed(KeySeed)? {
            let v: Value = map.next_value()?;
            o.insert(k, v);
        }
        Ok(Value::Object(o))
    }
}

impl<'de> de::Deserialize<'de> for Value {
    /// Any JSON value: numbers become doubles; from this module's deserializer, strings with lone
    /// surrogates arrive intact (as UTF-16LE bytes).
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

impl<'de> de::Deserialize<'de> for Object {
    /// A JSON object, read as [`Value`] reads one (type errors say `expected an object`).
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Object, D::Error> {
        match d.deserialize_map(ValueVisitor)? {
            Value::Object(o) => Ok(o),
            other => Err(de::Error::invalid_type(
                de::Unexpected::Other(other.type_name()),
                &"an object",
            )),
        }
    }
}
