//! Unit tests of the JSON value, parser and writers.

use super::*;

fn canon(text: &str) -> String {
    canonical_string(&parse_str(text).unwrap()).unwrap()
}

#[test]
fn worked_examples_formats_3_3() {
    assert_eq!(canon("1e21"), "1e+21");
    assert_eq!(canon("1e-7"), "1e-7");
    assert_eq!(canon("0.1"), "0.1");
    assert_eq!(canon("-0"), "0");
    assert_eq!(canon("123.0"), "123");
    assert_eq!(
        canon("[1E2, 2.50, 0.1e1, 1e-6, 0.30000000000000004]"),
        "[100,2.5,1,0.000001,0.30000000000000004]"
    );
    assert_eq!(
        canon("[100000000000000000000, 123456789012345680000, 12345678901234567890]"),
        "[100000000000000000000,123456789012345680000,12345678901234567000]"
    );
    assert_eq!(
        canon("[9007199254740993, 5e-324, 1.7976931348623157e308, -3.25e-10]"),
        "[9007199254740992,5e-324,1.7976931348623157e+308,-3.25e-10]"
    );
    assert_eq!(
        canon(r#"{ "z": { "y": [1, {"b": null, "a": true}], "x": "s" }, "a": [] }"#),
        r#"{"a":[],"z":{"x":"s","y":[1,{"a":true,"b":null}]}}"#
    );
    assert_eq!(canon(r#"{"a": 1, "a": 2}"#), r#"{"a":2}"#);
    assert_eq!(canon("{}"), "{}");
    assert_eq!(canon("[]"), "[]");
}

#[test]
fn more_numbers() {
    for (input, want) in [
        ("1e20", "100000000000000000000"),
        ("1.5", "1.5"),
        ("123.456", "123.456"),
        ("0.000001", "0.000001"),
        ("1.5e-10", "1.5e-10"),
        ("-1e21", "-1e+21"),
        ("123456789012345", "123456789012345"),
        ("1234567890123456", "1234567890123456"),
        ("-5", "-5"),
        ("0.5", "0.5"),
        ("2e-7", "2e-7"),
        ("1.2e+21", "1.2e+21"),
    ] {
        assert_eq!(canon(input), want, "{input}");
    }
    assert!(canonical_string(&parse_str("1e400").unwrap()).is_err());
    assert_eq!(
        parse_str("-1e400").unwrap(),
        Value::Number(f64::NEG_INFINITY)
    );
}

#[test]
fn key_order_utf16() {
    let text =
        "{\"b\":1,\"a\":2,\"10\":3,\"9\":4,\"Z\":5,\"\u{1F600}\":6,\"\u{E000}\":7,\"\":0,\"B\":8}";
    assert_eq!(
        canon(text),
        "{\"\":0,\"10\":3,\"9\":4,\"B\":8,\"Z\":5,\"a\":2,\"b\":1,\"\u{1F600}\":6,\"\u{E000}\":7}"
    );
}

#[test]
fn string_escaping() {
    let input = r#""q\"b\\n\n\t\u0001\u001f\u000b\u007f\u00e9\u2028\ud83d\ude00\ud800""#;
    let want = "\"q\\\"b\\\\n\\n\\t\\u0001\\u001f\\u000b\u{7f}é\u{2028}😀\\ud800\"";
    assert_eq!(canon(input), want);
    // A lone low surrogate and an escaped slash.
    assert_eq!(canon(r#""\/\uDC00x""#), "\"/\\udc00x\"");
}

#[test]
fn lone_surrogates_are_preserved_and_distinct() {
    let a = parse_str(r#""\ud800""#).unwrap();
    let b = parse_str(r#""\ud801""#).unwrap();
    assert_ne!(a, b);
    assert_eq!(canonical_string(&a).unwrap(), r#""\ud800""#);
    // A valid pair written as escapes is ordinary Unicode.
    assert_eq!(parse_str(r#""\ud83d\ude00""#).unwrap(), Value::str("😀"));
}

#[test]
fn errors_and_eof() {
    for torn in [
        "[", "{\"a\":", "\"abc", "[1,", "tru", "-", "1.", "1e", "{\"a\"", "\"\\u12",
    ] {
        let e = parse_str(torn).unwrap_err();
        assert!(e.is_eof(), "{torn}: {e:?}");
    }
    for bad in [
        "[1,]",
        "{,}",
        "01",
        "[1 2]",
        "{\"a\" 1}",
        "nul1",
        "\"\\x\"",
        "[\"\u{1}\"]",
        "1 2",
        "+1",
        ".5",
    ] {
        let e = parse_str(bad).unwrap_err();
        assert!(!e.is_eof(), "{bad}: {e:?}");
    }
    let deep = "[".repeat(MAX_DEPTH + 1);
    assert_eq!(parse_str(&deep).unwrap_err().kind, ParseErrorKind::TooDeep);
}

#[test]
fn duplicate_keys_keep_first_position_last_value() {
    let v = parse_str(r#"{"a":1,"b":2,"a":3}"#).unwrap();
    assert_eq!(compact_string(&v), r#"{"a":3,"b":2}"#);
    // Large objects use the index path.
    let mut text = String::from("{");
    for i in 0..100 {
        text.push_str(&format!("\"k{i}\":{i},"));
    }
    text.push_str("\"k5\":\"last\"}");
    let v = parse_str(&text).unwrap();
    assert_eq!(v.as_object().unwrap().len(), 100);
    assert_eq!(v.get("k5").unwrap().as_str(), Some("last"));
}

#[test]
fn pretty_matches_json_stringify() {
    let v = parse_str(r#"{"a":[1,{"b":[]},{}],"c":"x","d":{}}"#).unwrap();
    assert_eq!(
        pretty_string(&v),
        "{\n  \"a\": [\n    1,\n    {\n      \"b\": []\n    },\n    {}\n  ],\n  \"c\": \"x\",\n  \"d\": {}\n}\n"
    );
}

#[test]
fn serde_formatters_print_js_numbers() {
    #[derive(serde::Serialize)]
    struct T {
        a: f64,
        b: f64,
        c: u64,
        d: Vec<u8>,
    }
    let t = T {
        a: 0.0,
        b: 1e21,
        c: 3,
        d: vec![],
    };
    assert_eq!(
        String::from_utf8(to_js_compact(&t)).unwrap(),
        r#"{"a":0,"b":1e+21,"c":3,"d":[]}"#
    );
    assert_eq!(
        String::from_utf8(to_js_pretty(&t)).unwrap(),
        "{\n  \"a\": 0,\n  \"b\": 1e+21,\n  \"c\": 3,\n  \"d\": []\n}\n"
    );
}

#[test]
fn utf16_cmp_agrees_with_unit_comparison() {
    let samples = [
        "",
        "a",
        "ab",
        "b",
        "\u{E000}",
        "\u{FFFF}",
        "\u{1F600}",
        "é",
        "\u{10000}",
        "z\u{1F600}",
        "z\u{E000}",
    ];
    for a in samples {
        for b in samples {
            let want = a.encode_utf16().cmp(b.encode_utf16());
            assert_eq!(utf16_cmp(a, b), want, "{a:?} vs {b:?}");
        }
    }
}

#[test]
fn invalid_utf8_is_replaced() {
    let v = parse(b"\"a\xffb\"").unwrap();
    assert_eq!(v.as_str(), Some("a\u{fffd}b"));
}

// ---- serde: Deserializer and Serializer --------------------------------------------------------

mod serde_support {
    use super::super::*;
    use serde::{Deserialize, Serialize};

    #[derive(Debug, PartialEq, Deserialize, Serialize)]
    #[serde(rename_all = "lowercase")]
    enum Order {
        Ordered,
        Set,
    }

    #[derive(Debug, PartialEq, Deserialize, Serialize)]
    struct Inner {
        flag: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        order: Option<Order>,
    }

    #[derive(Debug, PartialEq, Deserialize, Serialize)]
    struct Outer {
        name: String,
        items: Vec<Inner>,
        count: u32,
        extra: Option<Value>,
    }

    fn outer(text: &str) -> Result<Outer, DeError> {
        from_value(&parse_str(text).unwrap())
    }

    #[test]
    fn derived_structs_read_and_write_values() {
        let o = outer(r#"{"count": 2, "zzz": [1], "items": [{"flag": true, "order": "set"}, {"flag": false, "order": null}], "name": "n"}"#).unwrap();
        assert_eq!(o.name, "n");
        assert_eq!(o.count, 2);
        assert_eq!(o.items[0].order, Some(Order::Set));
        assert_eq!(o.items[1].order, None);
        assert_eq!(o.extra, None);
        let v = to_value(&o).unwrap();
        assert_eq!(
            compact_string(&v),
            r#"{"name":"n","items":[{"flag":true,"order":"set"},{"flag":false}],"count":2,"extra":null}"#
        );
        assert_eq!(from_value::<Outer>(&v).unwrap(), o);
    }

    #[test]
    fn errors_name_the_path_and_follow_declaration_order() {
        let cases: &[(&str, &str)] = &[
            ("[]", "expected an object, found array"),
            (
                r#"{"items": [], "count": 1}"#,
                "name: required member is missing",
            ),
            // `name` is declared first: its absence is reported before the later type error.
            (
                r#"{"count": "x", "items": []}"#,
                "name: required member is missing",
            ),
            (
                r#"{"name": "n", "items": [{"flag": true}, {"flag": 1}], "count": 1}"#,
                "items[1].flag: expected a boolean, found number",
            ),
            (
                r#"{"name": "n", "items": [{"flag": true, "order": "bag"}], "count": 1}"#,
                r#"items[0].order: expected "ordered", "set" or null, found "bag""#,
            ),
            (
                r#"{"name": "n", "items": [{"flag": true, "order": 3}], "count": 1}"#,
                "items[0].order: expected a string, found number",
            ),
            (
                r#"{"name": "n", "items": {}, "count": 1}"#,
                "items: expected an array, found object",
            ),
            (
                r#"{"name": "n", "items": [], "count": 1.5}"#,
                "count: expected an integer, found number",
            ),
            (
                r#"{"name": "n", "items": [], "count": -1}"#,
                "count: expected an integer, found number",
            ),
            (
                r#"{"name": "\ud800", "items": [], "count": 1}"#,
                "name: string holds a lone surrogate (not valid Unicode)",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(outer(input).unwrap_err().to_string(), *want, "{input}");
        }
        let e = outer(r#"{"name": "n", "items": [7], "count": 1}"#).unwrap_err();
        assert_eq!(e.path_from("root"), "root.items[0]");
        assert_eq!(
            e.message(TypeNames::WithArticle),
            "expected an object, found a number"
        );
        assert_eq!(
            e.kind(),
            &DeErrorKind::Type {
                expected: "an object".into(),
                found: Found::Number
            }
        );
    }

    #[test]
    fn values_keep_lone_surrogates_and_numbers() {
        let text = r#"{"a\udc00": ["\ud800x", 1e400, -0, null, {"k": true}]}"#;
        let v = parse_str(text).unwrap();
        let back: Value = from_value(&v).unwrap();
        assert_eq!(back, v);
        // The project's serializer builds the same value back, lone surrogates (in keys and
        // strings) and the infinity included; serde_json gets U+FFFD and null.
        let built = crate::format::json::to_value(&v).unwrap();
        assert_eq!(built, v);
        assert!(canonical_string(&built).is_err());
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            "{\"a\u{fffd}\":[\"\u{fffd}x\",null,0,null,{\"k\":true}]}"
        );
        // Through serde_json, integers arrive as integers and become doubles.
        let s: Value = serde_json::from_str(r#"{"n": 9007199254740993, "f": 0.5}"#).unwrap();
        assert_eq!(compact_string(&s), r#"{"n":9007199254740992,"f":0.5}"#);
    }

    #[test]
    fn expecting_replaces_the_type_error_text_at_its_position_only() {
        fn nums<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
            expecting(d, expect!("an array of small numbers"))
        }
        #[derive(Debug, Deserialize)]
        struct T {
            #[serde(deserialize_with = "nums")]
            #[allow(dead_code)]
            n: Vec<u8>,
        }
        let err = |text: &str| {
            from_value::<T>(&parse_str(text).unwrap())
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(r#"{"n": "x"}"#),
            "n: expected an array of small numbers, found string"
        );
        assert_eq!(
            err(r#"{"n": [1, "x"]}"#),
            "n[1]: expected an integer, found string"
        );
        assert_eq!(
            err(r#"{"n": [300]}"#),
            "n[0]: expected an integer, found number"
        );
        assert_eq!(err("{}"), "n: required member is missing");
        // Other deserializers ignore the expectation.
        let t: T = serde_json::from_str(r#"{"n": [1, 2]}"#).unwrap();
        assert_eq!(t.n, vec![1, 2]);
    }

    #[test]
    fn hostile_values_error_without_panicking() {
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        let v = parse_str(&deep).unwrap();
        assert!(from_value::<Value>(&v).is_ok());
        assert!(from_value::<Outer>(&v).is_err());
        let wide = format!("[{}1]", "1,".repeat(100_000));
        let v = parse_str(&wide).unwrap();
        assert_eq!(from_value::<Vec<u8>>(&v).unwrap().len(), 100_001);
        let e = from_value::<Vec<bool>>(&v).unwrap_err();
        assert_eq!(e.to_string(), "[0]: expected a boolean, found number");
        assert!(to_value(&std::collections::HashMap::from([(vec![1u8], 1)])).is_err());
    }
}
