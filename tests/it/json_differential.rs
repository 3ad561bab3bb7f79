//! Canonical JSON against Node.js (issue 7 §5; FORMATS.md §3): generated JSON texts — varied
//! whitespace, escapes (lone surrogates included), duplicate keys, integer-like and astral
//! keys, numbers in every syntax, some texts made invalid by one edit — go through the
//! project's parser and canonical writer and through `JSON.parse` plus `JSON.stringify` with
//! sorted keys (`tests/node/canonical_json.mjs`). Both sides must accept the same texts, refuse
//! to canonicalize the same values (non-finite numbers) and print byte-identical canonical text.
//!
//! Needs `node` on `PATH`; without it the test skips loudly, and fails instead when
//! `REACTOR_REQUIRE_NODE=1` (as `.ci/run` sets). The fuzz target `canonical_json` runs the same
//! differential without bounds.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use proptest::prelude::*;
use reactor::format::json;

/// What one side made of one text.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Canonical {
    Text(String),
    NonFinite,
    Rejected,
}

fn ours(text: &str) -> Canonical {
    match json::parse_str(text) {
        Err(_) => Canonical::Rejected,
        Ok(v) => match json::canonical_string(&v) {
            Ok(c) => Canonical::Text(c),
            Err(_) => Canonical::NonFinite,
        },
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// True when `node` runs; otherwise skips loudly, or panics under `REACTOR_REQUIRE_NODE=1`.
fn node_available() -> bool {
    if Command::new("node").arg("--version").output().is_ok() {
        return true;
    }
    if std::env::var("REACTOR_REQUIRE_NODE").as_deref() == Ok("1") {
        panic!("node is not on PATH (REACTOR_REQUIRE_NODE=1)");
    }
    eprintln!("SKIPPED: node is not on PATH; the canonical JSON differential needs Node.js");
    false
}

/// Node's answers for `texts`, one child process for the batch.
fn theirs(texts: &[String]) -> Vec<Canonical> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/node/canonical_json.mjs");
    let mut child = Command::new("node")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("node starts");
    let mut input = String::new();
    for t in texts {
        input.push_str(&hex(t.as_bytes()));
        input.push('\n');
    }
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().expect("node answers");
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "node failed: {out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| match l.split_once(' ') {
            Some(("ok", h)) => Canonical::Text(String::from_utf8(unhex(h)).unwrap()),
            _ if l == "nonfinite" => Canonical::NonFinite,
            _ if l == "rejected" => Canonical::Rejected,
            _ => panic!("unexpected line from node: {l:?}"),
        })
        .collect()
}

fn ws() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["", "", "", " ", "\n", "\t ", "\r\n  "])
}

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| format!("{f:e}")),
        any::<i64>().prop_map(|i| i.to_string()),
        prop::sample::select(vec![
            "-0",
            "0.0",
            "-0.0e0",
            "1e400",
            "-1E+400",
            "1e-400",
            "5e-324",
            "1.7976931348623157e308",
            "9007199254740993",
            "123456789012345678901234567890",
            "0.1",
            "1E21",
            "1e20",
            "1e-7",
            "0.000001",
            "2.5",
            "01",
            "1.",
            ".5",
            "-",
            "+1",
            "1e",
            "0x10",
            "Infinity",
            "NaN",
        ])
        .prop_map(str::to_string),
        "-?[0-9]{1,3}(\\.[0-9]{1,17})?([eE][+-]?[0-9]{1,3})?",
    ]
}

/// String text: raw characters, short escapes and `\u` escapes (surrogates and pairs included).
fn string() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        prop::sample::select(vec![
            "a",
            "Z",
            "10",
            "9",
            "é",
            "e\u{301}",
            "\u{1F600}",
            "\u{FF61}",
            "\u{2028}",
            "\u{7F}",
            " ",
            "/",
            "\\\"",
            "\\\\",
            "\\/",
            "\\b",
            "\\f",
            "\\n",
            "\\r",
            "\\t",
            "\\u0000",
            "\\u001f",
            "\\u00E9",
            "\\uD83D\\uDE00",
            "\\ud800",
            "\\uDC00x",
            "\\uFFFF",
        ])
        .prop_map(str::to_string),
        (0u32..0x1_0000).prop_map(|u| format!("\\u{u:04x}")),
        "[ -~&&[^\"\\\\]]{1,3}",
    ];
    prop::collection::vec(piece, 0..5).prop_map(|p| format!("\"{}\"", p.concat()))
}

/// Object keys: mostly ones whose UTF-16 order differs from code-point order (an astral
/// character, raw or escaped as a pair, sorts before U+FF61 and U+FFFF) or from numeric order.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec![
            "\"a\"", "\"B\"", "\"10\"", "\"9\"", "\"\"", "\"\u{FF61}\"", "\"\u{1F600}\"",
            "\"\\uD83D\\uDE00\"", "\"\\uffff\"", "\"\\ud800\"", "\"é\"", "\"e\u{301}\"",
        ])
        .prop_map(str::to_string),
        1 => string(),
    ]
}

fn value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_string()),
        Just("true".to_string()),
        Just("false".to_string()),
        number(),
        string(),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            (prop::collection::vec((inner.clone(), ws()), 0..4), ws()).prop_map(|(items, w)| {
                let items: Vec<String> = items
                    .into_iter()
                    .map(|(v, w)| format!("{w}{v}{w}"))
                    .collect();
                format!("[{w}{}]", items.join(","))
            }),
            (
                prop::collection::vec((key(), inner, ws()), 0..5),
                any::<bool>()
            )
                .prop_map(|(members, dup)| {
                    let mut m: Vec<String> = members
                        .iter()
                        .map(|(k, v, w)| format!("{w}{k}{w}:{w}{v}"))
                        .collect();
                    if dup && let Some((k, _, _)) = members.first() {
                        m.push(format!("{k}:\"last\""));
                    }
                    format!("{{{}}}", m.join(","))
                }),
        ]
    })
}

/// A JSON text, sometimes broken by one deleted or inserted character.
fn text() -> impl Strategy<Value = String> {
    (
        value(),
        ws(),
        prop::option::of((
            any::<usize>(),
            prop::sample::select(vec!["", ",", "}", "]", "\"", ":", "\\", "0", "\u{FEFF}"]),
        )),
    )
        .prop_map(|(v, w, edit)| {
            let mut t = format!("{w}{v}{w}");
            if let Some((at, s)) = edit {
                let mut cut = at % (t.len() + 1);
                while !t.is_char_boundary(cut) {
                    cut -= 1;
                }
                if s.is_empty() {
                    let next = t[cut..].chars().next().map_or(0, char::len_utf8);
                    t.replace_range(cut..cut + next, "");
                } else {
                    t.insert_str(cut, s);
                }
            }
            t
        })
}

/// Generated texts, 12 batches of 48, one Node.js process per batch (checked once for
/// availability, so a missing `node` skips with one note).
#[test]
fn canonical_json_matches_node() {
    if !node_available() {
        return;
    }
    let config = ProptestConfig {
        cases: 12,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let mut runner = proptest::test_runner::TestRunner::new(config);
    let result = runner.run(&prop::collection::vec(text(), 48), |texts| {
        let answers = theirs(&texts);
        prop_assert_eq!(answers.len(), texts.len());
        for (t, theirs) in texts.iter().zip(answers) {
            prop_assert_eq!(ours(t), theirs, "text {:?}", t);
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// The differential sees the cases that matter: sorted integer-like and astral keys, a lone
/// surrogate, `-0`, exponent thresholds, a duplicate key and a non-finite number.
#[test]
fn canonical_json_matches_node_on_the_worked_cases() {
    if !node_available() {
        return;
    }
    let texts: Vec<String> = [
        r#"{"b":1,"a":2,"10":3,"9":4,"\uff61":5,"😀":6}"#,
        r#"["\ud800","\u2028",-0,1e21,1e-7,123456789012345678901,0.1]"#,
        r#"{"a":1,"a":2}"#,
        "[1e400]",
        "{\"a\":1,}",
    ]
    .map(String::from)
    .into();
    let answers = theirs(&texts);
    assert_eq!(
        answers[0],
        Canonical::Text(r#"{"10":3,"9":4,"a":2,"b":1,"😀":6,"｡":5}"#.into())
    );
    assert_eq!(
        answers[1],
        Canonical::Text("[\"\\ud800\",\"\u{2028}\",0,1e+21,1e-7,123456789012345680000,0.1]".into())
    );
    assert_eq!(answers[3], Canonical::NonFinite);
    assert_eq!(answers[4], Canonical::Rejected);
    for (t, a) in texts.iter().zip(answers) {
        assert_eq!(ours(t), a, "{t}");
    }
}
