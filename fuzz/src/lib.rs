//! Helpers shared by the fuzz targets: splitting one input into several pieces, comparing JSON
//! values up to member order, a stamped receipt, and the Node.js differential of canonical JSON.
//!
//! Every target asserts properties with `assert!`, so a violated property is a crash that
//! libFuzzer saves as a reproducer (`fuzz/artifacts/<target>/`).

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use reactor::format::json::{JsString, Value};
use reactor::format::receipt::{Cost, Fingerprints, Receipt, Status, Wake, WakeSource};

/// Splits `data` into at most `n` pieces at the byte sequence `\n--\n`; missing pieces are
/// empty. Lets one input carry several files while staying readable for a human.
pub fn pieces(data: &[u8], n: usize) -> Vec<&[u8]> {
    const SEP: &[u8] = b"\n--\n";
    let mut out = Vec::with_capacity(n);
    let mut rest = data;
    while out.len() + 1 < n {
        match rest.windows(SEP.len()).position(|w| w == SEP) {
            Some(i) => {
                out.push(&rest[..i]);
                rest = &rest[i + SEP.len()..];
            }
            None => break,
        }
    }
    out.push(rest);
    out.resize(n, &[][..]);
    out
}

/// True when `a` and `b` are the same JSON value with objects compared as sets of members
/// (member order ignored; numbers compared as doubles, so `-0` equals `0`).
pub fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter().all(|(k, v)| {
                    y.iter()
                        .find(|(k2, _)| *k2 == k)
                        .is_some_and(|(_, v2)| same_value(v, v2))
                })
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same_value(v, w))
        }
        _ => a == b,
    }
}

/// True when `v` holds a NaN or infinite number anywhere.
pub fn has_non_finite(v: &Value) -> bool {
    match v {
        Value::Number(n) => !n.is_finite(),
        Value::Array(a) => a.iter().any(has_non_finite),
        Value::Object(o) => o.iter().any(|(_, v)| has_non_finite(v)),
        _ => false,
    }
}

/// True when `v` holds a string or key with a lone surrogate anywhere.
pub fn has_lone_surrogate(v: &Value) -> bool {
    match v {
        Value::String(JsString::Wtf16(_)) => true,
        Value::Array(a) => a.iter().any(has_lone_surrogate),
        Value::Object(o) => o
            .iter()
            .any(|(k, v)| matches!(k, JsString::Wtf16(_)) || has_lone_surrogate(v)),
        _ => false,
    }
}

/// An unstamped `rendered` receipt of `node` with the atomic fingerprint `token`.
pub fn receipt(node: &str, token: &str) -> Receipt {
    Receipt {
        node: node.into(),
        contract_fingerprint: "sha256:contract".into(),
        status: Status::Rendered,
        wake: Wake::new(WakeSource::External),
        input_fingerprints: Vec::new(),
        fingerprints: Fingerprints::atomic(token),
        semantic_diff: Default::default(),
        prev: None,
        cost: Cost::none(WakeSource::External),
        content_hash: String::new(),
    }
}

/// The repository root (the fuzz package's parent).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// What `JSON.parse` then the sorted-keys `JSON.stringify` form made of one text in Node.js.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeCanonical {
    /// The canonical text.
    Text(String),
    /// The text parsed but holds a number that is not finite (JSON.stringify would print
    /// `null`; canonical JSON refuses it).
    NonFinite,
    /// `JSON.parse` rejected the text.
    Rejected,
}

/// A long-lived `node tests/node/canonical_json.mjs` child answering one line per request
/// (hex of the UTF-8 text in, `ok <hex>` / `nonfinite` / `rejected` out).
pub struct NodeDiff {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

impl NodeDiff {
    /// Starts the child, or `None` when `node` cannot be run.
    pub fn start() -> Option<NodeDiff> {
        let script = repo_root().join("tests/node/canonical_json.mjs");
        let mut child = Command::new("node")
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .ok()?;
        let stdin = child.stdin.take()?;
        let stdout = BufReader::new(child.stdout.take()?);
        Some(NodeDiff {
            child,
            stdin,
            stdout,
        })
    }

    /// Node's canonical form of `text`.
    ///
    /// Panics when the child stops answering (the fuzz run then stops with the reason).
    pub fn canonical(&mut self, text: &str) -> NodeCanonical {
        writeln!(self.stdin, "{}", hex(text.as_bytes())).expect("node child accepts input");
        self.stdin.flush().expect("node child accepts input");
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .expect("node child answers");
        let line = line.trim_end();
        match line.split_once(' ') {
            Some(("ok", h)) => NodeCanonical::Text(
                String::from_utf8(unhex(h).expect("hex from node")).expect("UTF-8 from node"),
            ),
            _ if line == "nonfinite" => NodeCanonical::NonFinite,
            _ if line == "rejected" => NodeCanonical::Rejected,
            _ => panic!("unexpected answer from node: {line:?}"),
        }
    }
}

impl Drop for NodeDiff {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A fresh temporary directory, on `/dev/shm` when it exists (fsync is free there, so the
/// writer targets run at fuzzing speed), else in the system's temporary directory.
pub fn temp_dir() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    let builder = tempfile::Builder::new().prefix("reactor-fuzz-").to_owned();
    if shm.is_dir()
        && let Ok(d) = builder.tempdir_in(shm)
    {
        return d;
    }
    builder.tempdir().expect("a temporary directory")
}

/// Generators of structured values from fuzz bytes: small alphabets of keys, paths, strings
/// and numbers that hit the interesting cases (dotted keys, whitespace, case, composing
/// characters, lone surrogates, `-0`, quantization ties, huge and non-finite numbers).
pub mod arb {
    use libfuzzer_sys::arbitrary::{Result, Unstructured};
    use reactor::core::canonicalizer::{
        CanonicalizerSpec, Collection, FacetSpec, FieldRule, NumberRule, TextRule,
    };
    use reactor::core::postcondition::{FlatNode, Kind};
    use reactor::format::json::{JsString, Object, Value};

    /// Keys and dotted paths.
    pub const KEYS: &[&str] = &["a", "b", "a.b", "c", "items", "x.y.z", "", "10", "9", "É"];
    const STRINGS: &[&str] = &[
        "",
        "x",
        "X",
        " a  b ",
        "\t\n",
        "e\u{301}",
        "\u{e9}",
        "İ",
        "ΟΔΟΣ",
        "\u{1F600}",
        "a\u{0}b",
        "\u{2028}",
        "1",
    ];
    const NUMBERS: &[f64] = &[
        0.0,
        -0.0,
        0.5,
        -0.5,
        1.5,
        2.5,
        1e21,
        1e-7,
        123.456,
        9007199254740993.0,
        -1.0,
        0.1,
        f64::INFINITY,
        1e308,
    ];

    /// One of the keys, or (sometimes) an arbitrary short string.
    pub fn key(u: &mut Unstructured<'_>) -> Result<String> {
        if u.ratio(1, 8)? {
            return u.arbitrary::<String>();
        }
        Ok(u.choose(KEYS)?.to_string())
    }

    /// A JSON value at most `depth` containers deep.
    pub fn value(u: &mut Unstructured<'_>, depth: u32) -> Result<Value> {
        let pick = if depth == 0 {
            u.int_in_range(0..=4)?
        } else {
            u.int_in_range(0..=6)?
        };
        Ok(match pick {
            0 => Value::Null,
            1 => Value::Bool(u.arbitrary()?),
            2 => Value::Number(if u.ratio(1, 4)? {
                u.arbitrary::<f64>()?
            } else {
                *u.choose(NUMBERS)?
            }),
            3 => Value::str(u.choose(STRINGS)?.to_string()),
            4 => {
                if u.ratio(1, 6)? {
                    Value::String(JsString::from_utf16(vec![
                        0xD800,
                        u16::from(u.arbitrary::<u8>()?),
                    ]))
                } else {
                    Value::str(u.arbitrary::<String>()?)
                }
            }
            5 => {
                let n = u.int_in_range(0..=4)?;
                Value::Array((0..n).map(|_| value(u, depth - 1)).collect::<Result<_>>()?)
            }
            _ => {
                let mut o = Object::new();
                for _ in 0..u.int_in_range(0..=4)? {
                    let k = key(u)?;
                    let v = value(u, depth - 1)?;
                    o.insert(k, v);
                }
                Value::Object(o)
            }
        })
    }

    /// The same value with every object's members in reverse order.
    pub fn reverse_members(v: &Value) -> Value {
        match v {
            Value::Array(a) => Value::Array(a.iter().map(reverse_members).collect()),
            Value::Object(o) => {
                let mut members: Vec<_> = o.iter().collect();
                members.reverse();
                let mut out = Object::new();
                for (k, v) in members {
                    out.push_unique(k.clone(), reverse_members(v));
                }
                Value::Object(out)
            }
            other => other.clone(),
        }
    }

    /// A canonicalization spec over [`KEYS`] (not necessarily valid).
    pub fn spec(u: &mut Unstructured<'_>) -> Result<CanonicalizerSpec> {
        let mut fields = Vec::new();
        for _ in 0..u.int_in_range(0..=5)? {
            let mut rule = FieldRule::new(u.choose(KEYS)?.to_string(), u.arbitrary()?);
            if u.arbitrary()? {
                rule.text = Some(TextRule {
                    collapse_whitespace: u.arbitrary()?,
                    case_insensitive: u.arbitrary()?,
                });
            }
            if u.arbitrary()? {
                let quantum =
                    *u.choose(&[None, Some(0.0), Some(0.5), Some(0.1), Some(3.0), Some(-1.0)])?;
                rule.number = Some(NumberRule { quantum });
            }
            rule.collection =
                *u.choose(&[None, Some(Collection::Ordered), Some(Collection::Set)])?;
            fields.push(rule);
        }
        let mut facets = Vec::new();
        for i in 0..u.int_in_range(0..=3)? {
            let n = u.int_in_range(0..=2)?;
            facets.push(FacetSpec {
                facet: format!("f{i}"),
                paths: (0..n)
                    .map(|_| u.choose(KEYS).map(|k| k.to_string()))
                    .collect::<Result<_>>()?,
            });
        }
        Ok(CanonicalizerSpec {
            node: "fuzz".into(),
            fields,
            default_material: u.arbitrary()?,
            facets,
        })
    }

    /// Fact names the predicates of [`pool`] compare.
    pub const FACTS: &[&str] = &[
        "a",
        "b",
        "a.b",
        "items.length",
        "items.0",
        "c",
        "x.y.z",
        "É",
    ];

    /// A flat predicate pool of up to 8 nodes with indices that may be out of range, shared or
    /// cyclic (RUNTIME.md §3.5.2).
    pub fn pool(u: &mut Unstructured<'_>) -> Result<Vec<FlatNode>> {
        let n = u.int_in_range(1..=8)?;
        let index = |u: &mut Unstructured<'_>| -> Result<i64> {
            Ok(if u.ratio(1, 16)? {
                u.arbitrary()?
            } else {
                u.int_in_range(0..=n as i64)?
            })
        };
        let mut nodes = Vec::with_capacity(n);
        for _ in 0..n {
            let kind = *u.choose(&Kind::ALL)?;
            let mut node = FlatNode {
                kind,
                fact: None,
                value: None,
                children: None,
                child: None,
            };
            match kind {
                Kind::And | Kind::Or => {
                    let k = u.int_in_range(0..=3)?;
                    node.children = Some((0..k).map(|_| index(u)).collect::<Result<_>>()?);
                }
                Kind::Not => node.child = Some(index(u)?),
                _ => {
                    node.fact = Some(u.choose(FACTS)?.to_string());
                    node.value = Some(value(u, 0)?);
                }
            }
            nodes.push(node);
        }
        Ok(nodes)
    }
}
