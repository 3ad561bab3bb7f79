//! Reduction, normalization, quantization and facet restriction (RUNTIME.md §4.3–§4.6).

use super::*;
use crate::core::canonicalizer::reduce::{js_round, quantize};

#[test]
fn scalars_follow_materiality() {
    let c = compiled(
        r#"{"node":"n","fields":[{"path":"gone","material":false},{"path":"kept","material":true}],
        "default_material":false,"facets":[]}"#,
    );
    assert_eq!(
        ser(&c, r#"{"gone":1,"kept":null,"other":true}"#, "@atomic"),
        r#"{"kept":null}"#
    );
    assert_eq!(ser(&c, r#"{"kept":false}"#, "@atomic"), r#"{"kept":false}"#);
    // A scalar root is governed by default_material.
    assert_eq!(ser(&c, "5", "@atomic"), "null");
    let c2 = compiled(r#"{"node":"n","fields":[],"default_material":true,"facets":[]}"#);
    assert_eq!(ser(&c2, "5", "@atomic"), "5");
    assert_eq!(ser(&c2, "null", "@atomic"), "null");
}

#[test]
fn array_rules() {
    let c = compiled(
        r#"{"node":"n","fields":[
          {"path":"m","material":true},
          {"path":"i","material":false},
          {"path":"i.keep","material":true}
        ],"default_material":false,"facets":[]}"#,
    );
    // Material empty array stays [].
    assert_eq!(ser(&c, r#"{"m":[]}"#, "@atomic"), r#"{"m":[]}"#);
    // Immaterial array with no survivors is dropped; with survivors it keeps them.
    assert_eq!(ser(&c, r#"{"i":[1,2]}"#, "@atomic"), "null");
    assert_eq!(ser(&c, r#"{"i":[]}"#, "@atomic"), "null");
    assert_eq!(
        ser(&c, r#"{"i":[{"keep":1,"x":2},{"x":3},5]}"#, "@atomic"),
        r#"{"i":[{"keep":1}]}"#
    );
    // Array elements share the array's path: nested arrays too.
    assert_eq!(
        ser(&c, r#"{"m":[[1,[2]],{"a":3}]}"#, "@atomic"),
        r#"{"m":[[1,[2]],{"a":3}]}"#
    );
}

#[test]
fn object_rules() {
    let c = compiled(
        r#"{"node":"n","fields":[
          {"path":"a","material":false},
          {"path":"a.b","material":true},
          {"path":"rec","material":true},
          {"path":"rec.t","material":false},
          {"path":"under","material":true}
        ],"default_material":false,"facets":[]}"#,
    );
    // Immaterial parent with a material child rule keeps {"a":{"b":…}}.
    assert_eq!(
        ser(&c, r#"{"a":{"b":{"x":1},"c":2}}"#, "@atomic"),
        r#"{"a":{"b":{"x":1}}}"#
    );
    // Exactly-pathed material rule keeps an emptied object as {}.
    assert_eq!(
        ser(&c, r#"{"rec":{"t":"now"}}"#, "@atomic"),
        r#"{"rec":{}}"#
    );
    assert_eq!(ser(&c, r#"{"rec":{}}"#, "@atomic"), r#"{"rec":{}}"#);
    // A record governed by a prefix rule (no exact rule) is not kept empty; its parent,
    // which has an exact material rule, is.
    assert_eq!(
        ser(&c, r#"{"under":{"x":{}}}"#, "@atomic"),
        r#"{"under":{}}"#
    );
    let c2 = compiled(
        r#"{"node":"n","fields":[{"path":"under","material":true}],
        "default_material":true,"facets":[]}"#,
    );
    assert_eq!(
        ser(&c2, r#"{"under":{"x":{}}}"#, "@atomic"),
        r#"{"under":{}}"#
    );
    // Immaterial exact rule does not keep {}.
    assert_eq!(ser(&c, r#"{"a":{"c":1}}"#, "@atomic"), "null");
    // Empty objects inside material arrays without an exact rule vanish.
    let c3 = compiled(r#"{"node":"n","fields":[],"default_material":true,"facets":[]}"#);
    assert_eq!(
        ser(&c3, r#"{"l":[{},{"a":{}},1]}"#, "@atomic"),
        r#"{"l":[1]}"#
    );
}

#[test]
fn longest_prefix_rule_wins_and_dotted_keys_match_textually() {
    let c = compiled(
        r#"{"node":"n","fields":[
          {"path":"a","material":true},
          {"path":"a.b","material":false},
          {"path":"a.b.c","material":true},
          {"path":"ab","material":false}
        ],"default_material":true,"facets":[]}"#,
    );
    assert_eq!(
        ser(
            &c,
            r#"{"a":{"b":{"c":1,"d":2},"e":3},"ab":4,"abc":5}"#,
            "@atomic"
        ),
        r#"{"a":{"b":{"c":1},"e":3},"abc":5}"#
    );
    // A top-level key literally named "a.b" is governed by rule a.b (dropped); "a.b.c" by a.b.c.
    assert_eq!(
        ser(&c, r#"{"a.b":1,"a.b.c":2,"a.bx":3,"a.b.d":4}"#, "@atomic"),
        r#"{"a.b.c":2,"a.bx":3}"#
    );
    // Mixed: member "b.c" of "a" has path a.b.c.
    assert_eq!(
        ser(&c, r#"{"a":{"b.c":7,"b.z":8}}"#, "@atomic"),
        r#"{"a":{"b.c":7}}"#
    );
}

#[test]
fn set_sorting_dedup_and_utf16_order() {
    let c = compiled(
        r#"{"node":"n","fields":[{"path":"s","material":true,"collection":"set"}],
        "default_material":true,"facets":[]}"#,
    );
    // U+1F600 (D83D DE00) sorts before U+E000 in UTF-16 order.
    assert_eq!(
        ser(
            &c,
            "{\"s\":[\"\u{e000}\",\"\u{1f600}\",\"a\",\"a\",\"\u{e000}\"]}",
            "@atomic"
        ),
        "{\"s\":[\"a\",\"\u{1f600}\",\"\u{e000}\"]}"
    );
    // Elements of every type ordered by their canonical text; objects by canonical JSON.
    assert_eq!(
        ser(
            &c,
            r#"{"s":[{"b":1,"a":2},"x",10,9,true,null,{"a":2,"b":1},[2,1]]}"#,
            "@atomic"
        ),
        r#"{"s":["x",10,9,[1,2],null,true,{"a":2,"b":1}]}"#
    );
    // Nested arrays at the same path are sets too.
    assert_eq!(
        ser(&c, r#"{"s":[[3,1,3],[2]]}"#, "@atomic"),
        r#"{"s":[[1,3],[2]]}"#
    );
    // Equal after normalization: -0 and 0 dedup to one.
    assert_eq!(ser(&c, r#"{"s":[0,-0,0.0]}"#, "@atomic"), r#"{"s":[0]}"#);
    // Ordered keeps input order (and duplicates).
    let o = compiled(
        r#"{"node":"n","fields":[{"path":"s","material":true,"collection":"ordered"}],"default_material":true,"facets":[]}"#,
    );
    assert_eq!(ser(&o, r#"{"s":[2,1,2]}"#, "@atomic"), r#"{"s":[2,1,2]}"#);
}

#[test]
fn set_dedup_after_normalization() {
    let c = compiled(
        r#"{"node":"n","fields":[{"path":"s","material":true,"collection":"set",
          "text":{"collapse_whitespace":true,"case_insensitive":true}}],
        "default_material":true,"facets":[]}"#,
    );
    assert_eq!(
        ser(&c, r#"{"s":["B  x"," b x ","a"]}"#, "@atomic"),
        r#"{"s":["a","b x"]}"#
    );
}

#[test]
fn text_normalization() {
    let c = compiled(
        r#"{"node":"n","fields":[
          {"path":"c","material":true,"text":{"collapse_whitespace":true,"case_insensitive":false}},
          {"path":"l","material":true,"text":{"collapse_whitespace":false,"case_insensitive":true}},
          {"path":"n","material":true,"text":{"collapse_whitespace":true,"case_insensitive":true}},
          {"path":"r","material":true}
        ],"default_material":true,"facets":[]}"#,
    );
    let v = Value::Object({
        let mut o = Object::new();
        o.insert(
            "c",
            Value::str("\u{feff}\t a\u{a0}\u{2003}\u{3000}b\r\n\u{85}c \u{200b} "),
        );
        o.insert(
            "l",
            Value::str("  \u{c0}B \u{39f}\u{394}\u{39f}\u{3a3} \u{130} "),
        );
        o.insert(
            "n",
            Value::str(" X\u{2028}\u{2029}\u{202f}\u{205f}\u{1680}Y "),
        );
        o.insert("r", Value::str(" Raw  Text "));
        o
    });
    assert_eq!(
        c.serialize(&v, "@atomic").unwrap(),
        // U+0085 and U+200B are not JavaScript whitespace; the rest collapse.
        "{\"c\":\"a b \u{85}c \u{200b}\",\"l\":\"  \u{e0}b \u{3bf}\u{3b4}\u{3bf}\u{3c2} i\u{307} \",\"n\":\"x y\",\"r\":\" Raw  Text \"}"
    );
    // Text options on a number and number options on a string are ignored.
    let c = compiled(
        r#"{"node":"n","fields":[
          {"path":"t","material":true,"text":{"case_insensitive":true},"number":{"quantum":1}},
          {"path":"o","material":true,"collection":"set"}
        ],"default_material":true,"facets":[]}"#,
    );
    assert_eq!(
        ser(&c, r#"{"t":[" A ",1.6],"o":{"b":1,"a":2}}"#, "@atomic"),
        r#"{"o":{"a":2,"b":1},"t":["a",2]}"#
    );
}

#[test]
fn nfc_equivalence() {
    let c = compile_node(&spec_41()).unwrap();
    let composed = r#"{"prices":[{"vendor":"Caf\u00e9","price":1}],"k\u00e9":"\u00e9"}"#;
    let decomposed = r#"{"prices":[{"vendor":"Cafe\u0301","price":1}],"k\u00e9":"e\u0301"}"#;
    let a = c.apply(&parse_str(composed).unwrap()).unwrap();
    let b = c.apply(&parse_str(decomposed).unwrap()).unwrap();
    assert_eq!(a, b);
    // Without any text option NFC still applies; keys are not normalized.
    let id = compile_node(&CanonicalizerSpec::identity("x")).unwrap();
    assert_eq!(
        ser(&id, r#"{"e\u0301":"e\u0301"}"#, "@atomic"),
        "{\"e\u{301}\":\"\u{e9}\"}"
    );
}

#[test]
fn lone_surrogates_survive_normalization() {
    let c = compiled(
        r#"{"node":"n","fields":[{"path":"s","material":true,"text":{"case_insensitive":true}}],
        "default_material":true,"facets":[]}"#,
    );
    assert_eq!(
        ser(&c, r#"{"s":"  A\ud800  Be\u0301 "}"#, "@atomic"),
        "{\"s\":\"a\\ud800 b\u{e9}\"}"
    );
}

#[test]
fn quantization() {
    let c = compiled(
        r#"{"node":"n","fields":[
          {"path":"q","material":true,"number":{"quantum":0.5}},
          {"path":"z","material":true,"number":{"quantum":0}},
          {"path":"c","material":true,"number":{"quantum":0.01}}
        ],"default_material":true,"facets":[]}"#,
    );
    assert_eq!(
        ser(
            &c,
            r#"{"q":[1.2,1.25,-1.25,-0.2,2.74,0.49999999999999994],"z":1.2345}"#,
            "@atomic"
        ),
        r#"{"q":[1,1.5,-1,0,2.5,0.5],"z":1.2345}"#
    );
    assert_eq!(js_round(0.49999999999999994), 0.0);
    assert_eq!(js_round(-2.5), -2.0);
    assert_eq!(js_round(2.5), 3.0);
    assert_eq!(js_round(4503599627370497.0), 4503599627370497.0);
    // -0 becomes 0 after quantization.
    assert!(quantize(-0.001, 0.5).is_sign_positive());
    // A non-finite result is an error naming the path.
    let err = ser_err(&c, r#"{"c":1e308}"#);
    assert_eq!(
        err.to_string(),
        "number at path 'c' is not finite after quantization by 0.01"
    );
    // A non-finite input number without quantum is an error too; dropped ones are fine.
    let id = compile_node(&CanonicalizerSpec::identity("x")).unwrap();
    let err = id
        .apply(&parse_str(r#"{"a":{"b":1e400}}"#).unwrap())
        .unwrap_err();
    assert_eq!(err.to_string(), "number at path 'a.b' is not finite");
    let drop = compiled(
        r#"{"node":"n","fields":[{"path":"a","material":false}],"default_material":true,"facets":[]}"#,
    );
    assert!(
        drop.apply(&parse_str(r#"{"a":1e400,"b":1}"#).unwrap())
            .is_ok()
    );
}

fn ser_err(c: &CompiledCanonicalizer, truth: &str) -> CanonError {
    c.serialize(&parse_str(truth).unwrap(), "@atomic")
        .unwrap_err()
}

#[test]
fn facet_restriction() {
    let c = compiled(
        r#"{"node":"n","fields":[
          {"path":"r","material":true},
          {"path":"r.t","material":false}
        ],"default_material":true,"facets":[
          {"facet":"deep","paths":["a.b"]},
          {"facet":"top","paths":["a","x"]},
          {"facet":"rec","paths":["r.t"]},
          {"facet":"dot","paths":["k.v"]}
        ]}"#,
    );
    let v = r#"{"a":{"b":{"c":1},"d":2},"ab":3,"x":[{"y":1}],"r":{"t":1,"u":2},"k.v":5,"k":{"v":6,"w":7}}"#;
    // Ancestor positions take part but only their related members survive.
    assert_eq!(ser(&c, v, "deep"), r#"{"a":{"b":{"c":1}}}"#);
    assert_eq!(
        ser(&c, v, "top"),
        r#"{"a":{"b":{"c":1},"d":2},"x":[{"y":1}]}"#
    );
    // Inside the relation but immaterial: r.t dropped, but rule r (exact, material) keeps {}.
    assert_eq!(ser(&c, v, "rec"), r#"{"r":{}}"#);
    // A dotted key matches textually as well as the nested member.
    assert_eq!(ser(&c, v, "dot"), r#"{"k":{"v":6},"k.v":5}"#);
    // Absent paths give the null token.
    let fp = c.apply(&parse_str(r#"{"zz":1}"#).unwrap()).unwrap();
    assert_eq!(
        fp.facets().collect::<Vec<_>>(),
        ["@atomic", "deep", "top", "rec", "dot"]
    );
    assert_eq!(fp.get("deep"), Some(NULL_ADDRESS));
    assert_ne!(fp.get("@atomic"), Some(NULL_ADDRESS));
}

#[test]
fn empty_key_member_has_the_root_path() {
    let c = compiled(
        r#"{"node":"n","fields":[],"default_material":true,
        "facets":[{"facet":"f","paths":["a"]}]}"#,
    );
    assert_eq!(
        ser(&c, r#"{"":{"a":1,"b":2},"b":3}"#, "f"),
        r#"{"":{"a":1}}"#
    );
}

#[test]
fn hostile_values_do_not_panic() {
    let id = compile_node(&CanonicalizerSpec::identity("x")).unwrap();
    // Maximum parser depth is accepted.
    let deep = "[".repeat(json::MAX_DEPTH) + &"]".repeat(json::MAX_DEPTH);
    assert_eq!(
        id.serialize(&parse_str(&deep).unwrap(), "@atomic").unwrap(),
        deep
    );
    // Deeper hand-built values are an error, not a stack overflow.
    let mut v = Value::Null;
    for _ in 0..(json::MAX_DEPTH + 10) {
        let mut o = Object::new();
        o.insert("k", v);
        v = Value::Object(o);
    }
    let err = id.apply(&v).unwrap_err();
    assert!(matches!(err, CanonError::TooDeep { .. }), "{err:?}");
    drop_deep(v);
    // Huge set arrays.
    let c = compiled(
        r#"{"node":"n","fields":[{"path":"s","material":true,"collection":"set"}],
        "default_material":true,"facets":[{"facet":"f","paths":["s"]}]}"#,
    );
    let big: Vec<Value> = (0..200_000)
        .rev()
        .map(|i| Value::Number(f64::from(i % 1000)))
        .collect();
    let mut o = Object::new();
    o.insert("s", Value::Array(big));
    let out = c.reduced(&Value::Object(o), "f").unwrap().unwrap();
    let s = out.get("s").unwrap().as_array().unwrap();
    assert_eq!(s.len(), 1000);
    assert_eq!(s[0], Value::Number(0.0));
    assert_eq!(s[1], Value::Number(1.0));
    assert_eq!(s[2], Value::Number(10.0));
    // Long dotted keys at depth with many rules stay cheap.
    let fields: Vec<FieldRule> = (0..2000)
        .map(|i| FieldRule::new(format!("r{i}.x"), i % 2 == 0))
        .collect();
    let c = compile_node(&spec_with(fields, vec![facet("f", &["r0.x"])])).unwrap();
    let key = "k.".repeat(5000);
    let mut v = Value::Number(1.0);
    for _ in 0..400 {
        let mut o = Object::new();
        o.insert(key.as_str(), v);
        v = Value::Object(o);
    }
    assert!(c.apply(&v).is_ok());
    drop_deep(v);
}

/// Drops a deeply nested value iteratively (the derived drop recurses).
fn drop_deep(mut v: Value) {
    loop {
        match v {
            Value::Object(mut o) => {
                let next = o.iter().next().map(|(k, _)| k.to_lossy().into_owned());
                match next.and_then(|k| o.remove(&k)) {
                    Some(inner) => v = inner,
                    None => return,
                }
            }
            _ => return,
        }
    }
}

#[test]
fn whitespace_class_is_exactly_the_js_one() {
    let js: Vec<u32> = (0..=0xFFFFu32).filter(|&c| is_js_whitespace(c)).collect();
    let mut want: Vec<u32> = vec![
        0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000,
        0xFEFF,
    ];
    want.extend(0x2000..=0x200A);
    want.sort_unstable();
    assert_eq!(js, want);
}
