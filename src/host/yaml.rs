//! A YAML 1.2 document as a tree of located nodes, read with `serde-saphyr` (HOST.md §4.1).
//!
//! The library parses the text (YAML 1.2 core schema with `strict_booleans`, so `yes`/`no` stay
//! strings; duplicate keys are errors; alias expansion is budgeted) and serde hands every node to
//! [`YamlNode`] together with its line and column and its resolved tag. `reactor.yml` validation
//! then walks the tree with full key paths (see [`crate::host::config`]).
//!
//! Two things YAML allows are refused here because they have no JSON meaning (HOST.md §4.3):
//! explicit tags (`!foo x`, `!!str 5`; the library reports each node's tag) and non-finite
//! numbers (`.inf`, `.nan`, `1e400`; the library refuses them in untyped positions and names
//! the source text).

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// Largest `reactor.yml` read, in bytes (1 MiB).
pub const MAX_YAML_BYTES: usize = 1024 * 1024;

/// A 1-based line and column (characters), as the YAML library reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Pos {
    /// 1-based line.
    pub line: u64,
    /// 1-based column (characters).
    pub(crate) column: u64,
}

/// The value of a node. Integers keep their YAML integer type; floats are finite.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum YamlValue {
    /// `null`, `~` or an empty value.
    Null,
    /// `true` / `false` (YAML 1.2 core schema).
    Bool(bool),
    /// A non-negative integer.
    UInt(u64),
    /// A negative integer.
    Int(i64),
    /// A finite float.
    Float(f64),
    /// A string (plain, quoted or block scalar).
    Str(String),
    /// A sequence.
    Seq(Vec<YamlNode>),
    /// A mapping, in document order (keys are nodes: YAML allows non-string keys).
    Map(Vec<(YamlNode, YamlNode)>),
}

/// A node and where it is referenced in the document.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct YamlNode {
    /// The value.
    pub value: YamlValue,
    /// Where the node is used (for an alias: the alias).
    pub(crate) pos: Pos,
    /// The node's explicit tag as the library resolved it (`!foo`, `tag:yaml.org,2002:str`),
    /// `None` when untagged. [`parse_document`] refuses any tag.
    tag: Option<String>,
}

impl YamlNode {
    /// The string, when the node is one.
    pub(crate) fn as_str(&self) -> Option<&str> {
        match &self.value {
            YamlValue::Str(s) => Some(s),
            _ => None,
        }
    }

    /// True for `null`.
    pub(crate) fn is_null(&self) -> bool {
        matches!(self.value, YamlValue::Null)
    }

    /// A short description of the node's type and value for error messages
    /// (`a mapping`, `a list`, `a number (5)`, `a string ('x')`, `a boolean (true)`, `null`).
    pub(crate) fn describe(&self) -> String {
        match &self.value {
            YamlValue::Null => "null".to_string(),
            YamlValue::Bool(b) => format!("a boolean ({b})"),
            YamlValue::UInt(n) => format!("a number ({n})"),
            YamlValue::Int(n) => format!("a number ({n})"),
            YamlValue::Float(f) => {
                format!("a number ({})", crate::format::json::number_to_string(*f))
            }
            YamlValue::Str(s) => format!("a string ('{}')", clip(s, 60)),
            YamlValue::Seq(_) => "a list".to_string(),
            YamlValue::Map(_) => "a mapping".to_string(),
        }
    }
}

pub(crate) use crate::format::sanitize::clip;

/// A YAML error with its position.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{column}: {message}")]
pub(crate) struct YamlError {
    /// 1-based line (0 when the library gave none).
    pub line: u64,
    /// 1-based column (0 when the library gave none).
    pub(crate) column: u64,
    /// The problem, without position.
    pub message: String,
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = YamlValue;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<YamlValue, E> {
        Ok(YamlValue::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<YamlValue, E> {
        Ok(YamlValue::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<YamlValue, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
    fn visit_bool<E: de::Error>(self, b: bool) -> Result<YamlValue, E> {
        Ok(YamlValue::Bool(b))
    }
    fn visit_i64<E: de::Error>(self, n: i64) -> Result<YamlValue, E> {
        Ok(if n >= 0 {
            YamlValue::UInt(n as u64)
        } else {
            YamlValue::Int(n)
        })
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<YamlValue, E> {
        Ok(YamlValue::UInt(n))
    }
    fn visit_f64<E: de::Error>(self, f: f64) -> Result<YamlValue, E> {
        Ok(YamlValue::Float(f))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<YamlValue, E> {
        Ok(YamlValue::Str(s.to_string()))
    }
    fn visit_string<E: de::Error>(self, s: String) -> Result<YamlValue, E> {
        Ok(YamlValue::Str(s))
    }
    fn visit_bytes<E: de::Error>(self, b: &[u8]) -> Result<YamlValue, E> {
        Err(E::custom(format!(
            "binary values are not supported ({} bytes)",
            b.len()
        )))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<YamlValue, A::Error> {
        let mut items = Vec::new();
        while let Some(n) = a.next_element::<YamlNode>()? {
            items.push(n);
        }
        Ok(YamlValue::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<YamlValue, A::Error> {
        let mut entries = Vec::new();
        while let Some(k) = a.next_key::<YamlNode>()? {
            let v = a.next_value::<YamlNode>()?;
            entries.push((k, v));
        }
        Ok(YamlValue::Map(entries))
    }
}

impl<'de> Deserialize<'de> for YamlValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<YamlValue, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

impl<'de> Deserialize<'de> for YamlNode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<YamlNode, D::Error> {
        let s = serde_saphyr::Spanned::<serde_saphyr::Tagged<YamlValue>>::deserialize(d)?;
        let serde_saphyr::Tagged(value, tag) = s.value;
        Ok(YamlNode {
            value,
            pos: Pos {
                line: s.referenced.line(),
                column: s.referenced.column(),
            },
            tag,
        })
    }
}

/// Parses one YAML document into a located tree (an empty document is `null`).
///
/// Errors: syntax errors, duplicate keys, several documents, alias bombs (the library's
/// budget), input over [`MAX_YAML_BYTES`], explicit tags and non-finite numbers — each with the
/// position of the problem.
pub(crate) fn parse_document(text: &str) -> Result<YamlNode, YamlError> {
    if text.len() > MAX_YAML_BYTES {
        return Err(YamlError {
            line: 0,
            column: 0,
            message: format!("the file is larger than {} KiB", MAX_YAML_BYTES / 1024),
        });
    }
    let options = serde_saphyr::options! {
        strict_booleans: true,
        with_snippet: false,
        non_finite_float_policy: serde_saphyr::NonFiniteFloatPolicy::Reject,
    };
    let root: YamlNode = serde_saphyr::from_str_with_options(text, options).map_err(|e| {
        let (line, column) = e
            .location()
            .map(|l| (l.line(), l.column()))
            .unwrap_or((0, 0));
        YamlError {
            line,
            column,
            message: library_message(&e),
        }
    })?;
    refuse_tags(&root)?;
    Ok(root)
}

/// The library's error as one line without position (the caller adds it). Three are worded
/// here: a non-finite number (in JSON terms), and a duplicate key and several documents, whose
/// library wording ends in advice about the library's own API.
fn library_message(e: &serde_saphyr::Error) -> String {
    use serde_saphyr::{DefaultMessageFormatter, Error, MessageFormatter};
    let mut e = e;
    while let Error::AliasError { error, .. } | Error::WithSnippet { error, .. } = e {
        e = error;
    }
    let message = match e {
        Error::NonFiniteFloat { value, .. } => format!(
            "non-finite number '{}' (JSON numbers must be finite)",
            clip(value, 40)
        ),
        Error::DuplicateMappingKey { key: Some(k), .. } => {
            format!("duplicate mapping key: {}", clip(k, 60))
        }
        Error::DuplicateMappingKey { key: None, .. } => "duplicate mapping key".to_string(),
        Error::MultipleDocuments { .. } => {
            "multiple YAML documents detected (expected one)".to_string()
        }
        other => DefaultMessageFormatter.format_message(other).into_owned(),
    };
    clip(message.lines().next().unwrap_or("").trim(), 300)
}

/// Refuses the first tagged node in document order, at the node's position.
fn refuse_tags(node: &YamlNode) -> Result<(), YamlError> {
    if let Some(tag) = &node.tag {
        return Err(YamlError {
            line: node.pos.line,
            column: node.pos.column,
            message: format!(
                "YAML tags are not supported ('{}')",
                clip(&tag_spelling(tag), 40)
            ),
        });
    }
    match &node.value {
        YamlValue::Seq(items) => items.iter().try_for_each(refuse_tags),
        YamlValue::Map(entries) => entries.iter().try_for_each(|(k, v)| {
            refuse_tags(k)?;
            refuse_tags(v)
        }),
        _ => Ok(()),
    }
}

/// A resolved tag in its usual short spelling: the YAML core namespace is written `!!`.
fn tag_spelling(tag: &str) -> String {
    match tag.strip_prefix("tag:yaml.org,2002:") {
        Some(core) => format!("!!{core}"),
        None => tag.to_string(),
    }
}

/// Converts a node to a JSON value (HOST.md §4.3): mappings with string keys become objects,
/// sequences arrays, integers and finite floats numbers, booleans and null map directly.
/// Errors name the offending node: a non-string key. (Tags and non-finite numbers were refused
/// by [`parse_document`].)
pub(crate) fn to_json(node: &YamlNode) -> Result<crate::format::json::Value, (Pos, String)> {
    use crate::format::json::{Object, Value};
    Ok(match &node.value {
        YamlValue::Null => Value::Null,
        YamlValue::Bool(b) => Value::Bool(*b),
        YamlValue::UInt(n) => Value::Number(*n as f64),
        YamlValue::Int(n) => Value::Number(*n as f64),
        YamlValue::Float(f) => Value::Number(*f),
        YamlValue::Str(s) => Value::str(s.clone()),
        YamlValue::Seq(items) => Value::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        YamlValue::Map(entries) => {
            let mut o = Object::new();
            for (k, v) in entries {
                let Some(key) = k.as_str() else {
                    return Err((
                        k.pos,
                        format!("mapping keys must be strings, got {}", k.describe()),
                    ));
                };
                o.insert(key, to_json(v)?);
            }
            Value::Object(o)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> YamlError {
        parse_document(text).unwrap_err()
    }

    #[test]
    fn core_schema_values_and_positions() {
        let n = parse_document(
            "a: yes\nb: true\nc: 0x1F\nd: -3\ne: 1.50\nf: ~\ng: \"q\"\nh: [1, {x: 2}]\n",
        )
        .unwrap();
        let YamlValue::Map(m) = &n.value else {
            panic!()
        };
        let v: Vec<&YamlValue> = m.iter().map(|(_, v)| &v.value).collect();
        assert_eq!(v[0], &YamlValue::Str("yes".into()));
        assert_eq!(v[1], &YamlValue::Bool(true));
        assert_eq!(v[2], &YamlValue::UInt(31));
        assert_eq!(v[3], &YamlValue::Int(-3));
        assert_eq!(v[4], &YamlValue::Float(1.5));
        assert_eq!(v[5], &YamlValue::Null);
        assert_eq!(v[6], &YamlValue::Str("q".into()));
        assert_eq!(m[7].1.pos, Pos { line: 8, column: 4 });
        assert_eq!(m[0].0.pos, Pos { line: 1, column: 1 });
        assert!(parse_document("").unwrap().is_null());
        assert!(parse_document("# only a comment\n").unwrap().is_null());
    }

    #[test]
    fn library_errors_carry_positions() {
        let e = err("a: 1\na: 2\n");
        assert_eq!((e.line, e.column), (2, 1));
        assert!(e.message.contains("duplicate"), "{e:?}");
        assert!(!e.message.contains("at line"), "{e:?}");
        let e = err("a: [1,\n");
        assert_eq!(e.line, 1);
        let e = err("a: 1\n---\nb: 2\n");
        assert_eq!(e.line, 3);
        let e = err("a: b: c\n");
        assert_eq!((e.line, e.column), (1, 5));
        // Messages carry no advice about the library's API.
        assert_eq!(err("a: 1\na: 2\n").message, "duplicate mapping key: a");
        assert_eq!(
            err("a: 1\n---\nb: 2\n").message,
            "multiple YAML documents detected (expected one)"
        );
        let e = err("a: *nope\n");
        assert_eq!((e.line, e.column), (1, 4));
        assert!(e.message.contains("unknown anchor"), "{e:?}");
    }

    #[test]
    fn tags_are_refused() {
        for (text, line) in [
            ("a: !foo x\n", 1),
            ("a: !!str 5\n", 1),
            ("a: [1, !t 2]\n", 1),
            ("a: &x !t {b: 1}\n", 1),
            ("a: !t\n  b: 1\n", 2),
            ("a:\n  - !t x\n", 2),
            ("!t\nb: 1\n", 2),
            ("a: !<tag:yaml.org,2002:str> x\n", 1),
            ("a: !!float 0.5\n", 1),
            ("a: [x, &y !!int 1]\nb: *y\n", 1),
            ("? !k a\n: b\n", 1),
        ] {
            let e = err(text);
            assert!(
                e.message.contains("YAML tags are not supported"),
                "{text:?}: {e:?}"
            );
            assert_eq!(e.line, line, "{text:?}");
        }
        // The message spells the tag as written for the core namespace and local tags, and
        // gives the resolved form for a `%TAG` handle.
        assert_eq!(
            err("a: !!str 5\n").message,
            "YAML tags are not supported ('!!str')"
        );
        assert_eq!(
            err("a: !<tag:yaml.org,2002:str> x\n").message,
            "YAML tags are not supported ('!!str')"
        );
        assert_eq!(
            err("a:\n  b: !custom x\n").to_string(),
            "2:14: YAML tags are not supported ('!custom')"
        );
        assert_eq!(
            err("%TAG !e! tag:example.com,2000:\n---\na: !e!foo x\n").message,
            "YAML tags are not supported ('tag:example.com,2000:foo')"
        );
        // Exclamation marks inside values are not tags.
        for ok in [
            "a: foo !bar\nb: 1\n",
            "a: \"x !y\"\nb: 1\n",
            "a: b # !c\nd:\n  e: 1\n",
            "a: |\n  hello !x\nw: 1\n",
            "a: hi!\n",
            "a: [x!, y]\n",
            "a: \"foo, !bar\"\nb: 1\n",
            "a: 'foo, !bar'\nb:\n  c: 1\n",
        ] {
            assert!(
                parse_document(ok).is_ok(),
                "{ok:?}: {:?}",
                parse_document(ok)
            );
        }
    }

    #[test]
    fn non_finite_numbers_are_refused_but_quoted_text_is_a_string() {
        for (text, col) in [
            ("a: .inf\n", 4),
            ("a: -.Inf\n", 4),
            ("a: .NaN\n", 4),
            ("a: 1e400\n", 4),
            ("a: [.nan]\n", 5),
        ] {
            let e = err(text);
            assert!(e.message.contains("non-finite number"), "{text:?}: {e:?}");
            assert_eq!((e.line, e.column), (1, col), "{text:?}");
        }
        assert_eq!(
            err("a: 1e400\n").message,
            "non-finite number '1e400' (JSON numbers must be finite)"
        );
        let n = parse_document("a: \".inf\"\nb: '.nan'\nc: -.nan\n").unwrap();
        let YamlValue::Map(m) = &n.value else {
            panic!()
        };
        assert_eq!(m[0].1.value, YamlValue::Str(".inf".into()));
        assert_eq!(m[1].1.value, YamlValue::Str(".nan".into()));
        // YAML 1.2's core schema has no signed NaN: `-.nan` is plain text.
        assert_eq!(m[2].1.value, YamlValue::Str("-.nan".into()));
    }

    #[test]
    fn json_conversion() {
        let n = parse_document(
            "- {id: a, n: 1, f: 0.5, t: [x, true, null], m: {k: -2}}\n- id: b\n  body: \"two\"\n",
        )
        .unwrap();
        let v = to_json(&n).unwrap();
        assert_eq!(
            crate::format::json::compact_string(&v),
            r#"[{"id":"a","n":1,"f":0.5,"t":["x",true,null],"m":{"k":-2}},{"id":"b","body":"two"}]"#
        );
        let n = parse_document("- {1: a}\n").unwrap();
        let (pos, msg) = to_json(&n).unwrap_err();
        assert_eq!(pos, Pos { line: 1, column: 4 });
        assert_eq!(msg, "mapping keys must be strings, got a number (1)");
        let n = parse_document("? [a]\n: b\n").unwrap();
        assert!(to_json(&n).unwrap_err().1.contains("got a list"));
    }

    #[test]
    fn hostile_documents_fail_cleanly() {
        // An alias bomb is stopped by the library's budget.
        let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 0..12 {
            let prev = if i == 0 {
                "a".to_string()
            } else {
                format!("b{}", i - 1)
            };
            bomb.push_str(&format!(
                "b{i}: &b{i} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"
            ));
        }
        assert!(parse_document(&bomb).is_err());
        // Deep nesting and oversized input.
        let deep = "[".repeat(100_000);
        assert!(parse_document(&deep).is_err());
        let big = "#".repeat(MAX_YAML_BYTES + 1);
        assert!(err(&big).message.contains("larger than"));
        for junk in [
            "\u{0}",
            "a: \"unterminated\n",
            "- a\nb: 1\n",
            "{a: 1",
            "a:\n\t- b\n",
            "&a a: *a\n",
        ] {
            let _ = parse_document(junk);
        }
    }
}
