//! The streaming reader against the whole-file reader: same elements, torn tail, offsets and
//! errors on every input, at every window, batch and worker size.

use super::*;
use crate::store::ledger::read_ledger;
use proptest::prelude::*;

/// What a read yields, comparable across the two readers.
#[derive(Debug, PartialEq)]
enum Verdict {
    Read {
        receipts: Vec<Value>,
        torn: Option<TornTail>,
        end_of_complete: usize,
        zero_length: bool,
    },
    Error(String),
}

fn whole(bytes: &[u8]) -> Verdict {
    match read_ledger(bytes) {
        Ok(r) => Verdict::Read {
            receipts: r.receipts,
            torn: r.torn,
            end_of_complete: r.end_of_complete,
            zero_length: r.zero_length,
        },
        Err(e) => Verdict::Error(e.to_string()),
    }
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

fn streamed(bytes: &[u8], window: Window, workers: usize) -> Verdict {
    // Each element comes with its exact byte range: those bytes, and only they, parse to it.
    let digest = |v: Value, span: std::ops::Range<usize>| {
        let elem = &bytes[span.clone()];
        assert!(
            !elem.is_empty() && !is_ws(elem[0]) && !is_ws(elem[elem.len() - 1]),
            "{span:?}"
        );
        assert_eq!(
            crate::format::json::parse(elem).ok().as_ref(),
            Some(&v),
            "{span:?}"
        );
        v
    };
    let mut start = Vec::new;
    let mut fold = |s: &mut Vec<Value>, i: usize, v: Value| {
        assert_eq!(i, s.len(), "elements fold in order");
        s.push(v);
    };
    let mut reader = Reader {
        digest: &digest,
        start: &mut start,
        fold: &mut fold,
        window,
        workers: Some(workers),
    };
    let mut sink = Vec::new();
    match stream_once(Bytes::Memory(bytes), bytes.len(), &mut reader, &mut sink) {
        Ok(end) => {
            assert_eq!(end.count, sink.len());
            Verdict::Read {
                receipts: sink,
                torn: end.torn,
                end_of_complete: end.end_of_complete,
                zero_length: end.zero_length,
            }
        }
        Err(Failure::Content(e)) => Verdict::Error(e.to_string()),
        Err(Failure::Io(e)) => panic!("memory read failed: {e}"),
    }
}

/// Tiny windows and batches cross every boundary; the default ones read in one go.
fn windows() -> Vec<(Window, usize)> {
    vec![
        (
            Window {
                chunk: 1,
                exact: 1,
                batch: 1,
            },
            3,
        ),
        (
            Window {
                chunk: 7,
                exact: 3,
                batch: 40,
            },
            2,
        ),
        (
            Window {
                chunk: 64,
                exact: 16,
                batch: 100,
            },
            1,
        ),
        (Window::default(), 2),
    ]
}

fn check(bytes: &[u8]) {
    let want = whole(bytes);
    for (w, n) in windows() {
        let got = streamed(bytes, w, n);
        assert_eq!(
            got,
            want,
            "{w:?} × {n} workers on {:?}",
            String::from_utf8_lossy(bytes)
        );
    }
}

#[test]
fn hand_picked_inputs() {
    let deep = format!("[{}{}]", "[".repeat(600), "]".repeat(600));
    let cases: Vec<&[u8]> = vec![
        b"",
        b"   ",
        b"\0\0\0",
        b" \n\0",
        b"{}",
        b"x",
        b"[",
        b"[ ",
        b"[]",
        b" [ ] \n",
        b"[]x",
        b"[] ]",
        b"[1]",
        b"[1",
        b"[12",
        b"[1.",
        b"[1.5e",
        b"[-",
        b"[tru",
        b"[truex]",
        b"[true,",
        b"[true , ",
        b"[1,]",
        b"[,1]",
        b"[1 2]",
        b"[1]\0\0\0",
        b"[1]\n\0\0",
        b"[1\0\0]",
        b"[{\"a\":1}]{",
        b"[{\"a\":1},}]\n",
        b"[{\"a\" 1}]\n",
        b"[{\"a\":1}]\n{\"b\":2}]\n",
        b"[{\"a\":\"x]}\\\"[{\",\"b\":[1,{\"c\":\"\\\\\"}]}]\n",
        b"[\"]\",\"}\",\"\\\"\",\"\\\\\"]",
        b"[\"\\u005d\", \"\\ud800\", \"\\u00\"]",
        b"[{\"a\":1]]",
        b"[[1},2]",
        b"[\"ctrl \x01 \"]",
        b"[\"unterminated]",
        b"[{\"a\":\"\\",
        b"[01]",
        b"[1e5,-0,0.25,1E+2]",
        b"[\xff\xfe]",
        b"[\"\xc3\xa9\xe2\x82\xac\"]",
        deep.as_bytes(),
    ];
    for c in cases {
        check(c);
    }
}

/// Elements that are valid, invalid, or full of brackets and escapes inside strings.
fn element() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        r#"{"node":"a","status":"rendered","n":1}"#,
        r#"{"s":"x]}\"[{","t":[1,2,{"u":"\\\\"}],"v":null}"#,
        r#""str ] } [ { \" \\ \/ \u005d""#,
        r#"{"a":{"b":{"c":[[],[{}],"]]]"]}}}"#,
        "123",
        "-1.5e3",
        "true",
        "false",
        "null",
        "[]",
        "{}",
        r#"{"k":"\ud800\udc00\ud800"}"#,
        r#"{"dup":1,"dup":2}"#,
        r#"{"a" 1}"#,
        "tru",
        "1.",
        "]",
        "}",
        ":",
        r#"{"a":1"#,
        r#""open"#,
        "0x1",
    ])
    .prop_map(str::to_string)
}

fn separator() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![",", " , ", "\n,\n", ",\t", ""])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Random arrays of tricky elements, then cut, NUL-filled, edited or extended: the streamed
    /// verdict is the whole-file verdict, at every window and worker count.
    #[test]
    fn streaming_equals_the_whole_file_reader(
        lead in prop::sample::select(vec!["", " ", "\n\t"]),
        elems in prop::collection::vec((element(), separator()), 0..12),
        close in prop::sample::select(vec!["]\n", "]", " ] ", "", "]x", "]]"]),
        nuls in 0usize..4,
        cut in prop::option::of(0usize..400),
        edits in prop::collection::vec((0usize..400, any::<u8>()), 0..3),
    ) {
        let mut text = format!("{lead}[");
        for (k, (e, sep)) in elems.iter().enumerate() {
            if k > 0 {
                text.push_str(sep);
            }
            text.push_str(e);
        }
        text.push_str(close);
        let mut bytes = text.into_bytes();
        bytes.extend(std::iter::repeat_n(0u8, nuls));
        for (at, b) in &edits {
            if !bytes.is_empty() {
                let at = at % bytes.len();
                bytes[at] = *b;
            }
        }
        if let Some(c) = cut {
            bytes.truncate(c % (bytes.len() + 1));
        }
        check(&bytes);
    }

    /// Arbitrary bytes behind an opening bracket.
    #[test]
    fn arbitrary_bytes(tail in prop::collection::vec(any::<u8>(), 0..64)) {
        let mut bytes = b"[".to_vec();
        bytes.extend(&tail);
        check(&bytes);
    }
}

/// A file read goes through the same rules (and a NUL-filled file is blank).
#[test]
fn files_read_as_their_bytes() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("receipts.json");
    for bytes in [
        &b"[{\"a\":1},{\"b\":[2,\"]\"]}]\n"[..],
        b"[{\"a\":1},{\"b\"",
        b"\0\0\0\0",
        b"[1]x",
    ] {
        std::fs::write(&p, bytes).unwrap();
        let digest = |v: Value, _: std::ops::Range<usize>| v;
        let mut start = Vec::new;
        let mut fold = |s: &mut Vec<Value>, _: usize, v: Value| s.push(v);
        let mut reader = Reader::new(&digest, &mut start, &mut fold);
        let got = match stream_ledger_file(&p, &mut reader) {
            Ok((receipts, end)) => {
                assert!(end.exists && end.identity.is_some());
                Verdict::Read {
                    receipts,
                    torn: end.torn,
                    end_of_complete: end.end_of_complete,
                    zero_length: end.zero_length,
                }
            }
            Err(e) => Verdict::Error(e.to_string()),
        };
        assert_eq!(got, whole(bytes), "{bytes:?}");
    }
    std::fs::remove_file(&p).unwrap();
    let digest = |v: Value, _: std::ops::Range<usize>| v;
    let mut start = Vec::new;
    let mut fold = |s: &mut Vec<Value>, _: usize, v: Value| s.push(v);
    let mut reader = Reader::new(&digest, &mut start, &mut fold);
    let (receipts, end) = stream_ledger_file(&p, &mut reader).unwrap();
    assert!(receipts.is_empty() && !end.exists);
}

/// A large ledger in many batches keeps file order across the workers.
#[test]
fn many_batches_fold_in_order() {
    let mut text = String::from("[");
    for i in 0..5000 {
        if i > 0 {
            text.push(',');
        }
        text.push_str(&format!("{{\"i\":{i},\"pad\":\"{}\"}}", "]".repeat(i % 50)));
    }
    text.push_str("]\n");
    let w = Window {
        chunk: 4096,
        exact: 64,
        batch: 512,
    };
    match streamed(text.as_bytes(), w, 4) {
        Verdict::Read { receipts, .. } => {
            assert_eq!(receipts.len(), 5000);
            for (i, v) in receipts.iter().enumerate() {
                assert_eq!(v.get("i").and_then(Value::as_f64), Some(i as f64));
            }
        }
        other => panic!("{other:?}"),
    }
}

/// A snapshot that fails to parse is not a verdict until a second snapshot of the same file
/// and length fails alike: here the "writer" finishes its append (in place, as the ledger
/// writer does) after the first snapshot's bytes were read, and the read starts over with a
/// fresh accumulator and sees both receipts.
#[test]
fn a_torn_snapshot_is_read_again() {
    use std::os::unix::fs::FileExt;
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("receipts.json");
    std::fs::write(&p, b"[{\"a\":1}]{").unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    let digest = |v: Value, _: std::ops::Range<usize>| v;
    let mut starts = 0;
    let mut start = || {
        starts += 1;
        Vec::new()
    };
    let mut fold = |s: &mut Vec<Value>, _: usize, v: Value| {
        if s.is_empty() {
            // The first element of each snapshot: bytes already read; complete the append.
            file.write_all_at(b",{\"b\":2}]\n", 8).unwrap();
        }
        s.push(v);
    };
    let mut reader = Reader::new(&digest, &mut start, &mut fold);
    let (receipts, end) = stream_ledger_file(&p, &mut reader).unwrap();
    assert_eq!(receipts.len(), 2);
    assert!(end.torn.is_none());
    assert_eq!(starts, 2);
    // Stable corruption is reported after the confirming snapshot, at its offset.
    std::fs::write(&p, b"[{\"a\":1},}]\n").unwrap();
    let mut starts = 0;
    let mut start = || {
        starts += 1;
        Vec::new()
    };
    let mut fold = |s: &mut Vec<Value>, _: usize, v: Value| s.push(v);
    let mut reader = Reader::new(&digest, &mut start, &mut fold);
    let e = stream_ledger_file(&p, &mut reader).unwrap_err();
    assert_eq!(
        e.to_string(),
        "receipts.json is corrupt at byte 9: unexpected character '}'"
    );
    assert_eq!(starts, 2);
}

/// Streamed reads of a ledger that spans many windows, back to back, while the ledger writer
/// appends groups of receipts in place: every read succeeds (an append caught mid-read is
/// growth, never corruption), sees a chain-valid prefix, and never fewer receipts than the
/// read before.
#[test]
fn streamed_reads_next_to_the_writer() {
    use crate::format::json::Object;
    use crate::format::receipt::{Cost, Fingerprints, Receipt, Status, Wake, WakeSource};
    use crate::store::ledger::{Ledger, SyncPolicy};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let receipt = |i: u64| {
        let mut diff = Object::new();
        diff.insert(
            "pad",
            Value::str("]}\"\\".repeat(1 + (i as usize * 13) % 200)),
        );
        Receipt {
            node: ["a", "b", "c"][(i % 3) as usize].into(),
            contract_fingerprint: "c".into(),
            status: Status::Rendered,
            wake: Wake::new(WakeSource::External),
            input_fingerprints: vec![],
            fingerprints: Fingerprints::atomic(format!("t{i}")),
            semantic_diff: diff,
            prev: None,
            cost: Cost::none(WakeSource::External),
            content_hash: String::new(),
        }
    };
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().to_path_buf();
    {
        let (mut l, _) = Ledger::open(&dir).unwrap();
        l.set_policy(SyncPolicy::Group);
        for i in 0..300 {
            l.append(receipt(i)).unwrap();
        }
        l.sync().unwrap();
    }
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (done, dir) = (done.clone(), dir.clone());
        std::thread::spawn(move || {
            let (mut l, _) = Ledger::open(&dir).unwrap();
            l.set_policy(SyncPolicy::Group);
            for g in 0..100u64 {
                for k in 0..3 {
                    l.append(receipt(300 + g * 3 + k)).unwrap();
                }
                l.sync().unwrap();
                std::thread::sleep(std::time::Duration::from_millis(3));
            }
            done.store(true, Ordering::SeqCst);
        })
    };
    let path = dir.join("receipts.json");
    let digest =
        |v: Value, _: std::ops::Range<usize>| crate::format::receipt::verify_receipt(&v).ok;
    let mut start = Vec::new;
    let mut fold = |s: &mut Vec<bool>, _: usize, ok: bool| s.push(ok);
    let (mut last, mut reads) = (0usize, 0usize);
    while !done.load(Ordering::SeqCst) || reads == 0 {
        let mut reader = Reader {
            digest: &digest,
            start: &mut start,
            fold: &mut fold,
            window: Window {
                chunk: 4096,
                exact: 64,
                batch: 8192,
            },
            workers: Some(2),
        };
        let (oks, _) = stream_ledger_file(&path, &mut reader)
            .unwrap_or_else(|e| panic!("read {reads}: a growing ledger was read as {e}"));
        assert!(oks.len() >= last, "read {reads} went backwards");
        assert!(oks.iter().all(|ok| *ok), "read {reads}: an invalid receipt");
        last = oks.len();
        reads += 1;
    }
    writer.join().unwrap();
    eprintln!("streamed reader: {reads} reads next to 300 appended receipts, the last saw {last}");
    assert!(last >= 300 && reads > 1, "{reads} reads, {last} receipts");
}

/// The byte parser's path ([`exact`]) gives each element's exact range too, whitespace and
/// separators left out, at every window size.
#[test]
fn exact_reads_give_each_element_its_range() {
    let bytes: &[u8] = b"[ 1 ,\n  {\"a\": [2, \"]\"]} ,\"x\"\t,\r\n-0.5e3  ]\n";
    let end = content_end(Bytes::Memory(bytes), bytes.len(), Window::default()).unwrap();
    for exact_window in [1, 2, 5, 64] {
        let window = Window {
            exact: exact_window,
            ..Window::default()
        };
        let mut got: Vec<(Value, std::ops::Range<usize>)> = Vec::new();
        let ending = exact(Bytes::Memory(bytes), end, 2, 1, window, &mut |v, span| {
            got.push((v, span))
        })
        .unwrap();
        assert!(
            matches!(ending, ExactEnding::Closed { end_of_complete } if end_of_complete == 38),
            "{ending:?}"
        );
        let texts: Vec<&[u8]> = got.iter().map(|(_, s)| &bytes[s.clone()]).collect();
        assert_eq!(
            texts,
            [&b"1"[..], b"{\"a\": [2, \"]\"]}", b"\"x\"", b"-0.5e3"],
            "window {exact_window}"
        );
        for (v, span) in &got {
            assert_eq!(
                crate::format::json::parse(&bytes[span.clone()])
                    .ok()
                    .as_ref(),
                Some(v)
            );
        }
    }
}
