//! The `reactor` command line (HOST.md §2): every verb's parser on argument lists split from
//! the input at NUL bytes (so arguments may be any bytes, not only UTF-8), plus `--data` text.
//!
//! Properties: every parse failure is a usage error (exit 2) with a message; global flags are
//! taken out wherever they appear; after `--` a node argument is taken literally, whatever it
//! looks like; a `--data=<text>` value reaches the parser unchanged; inline `--data` parses as
//! JSON or is an input error (exit 1), and the payload line stays within 200 characters plus
//! the ellipsis.
#![no_main]

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use libfuzzer_sys::fuzz_target;
use reactor::host::args::{ArgStream, Globals};
use reactor::host::{
    compile, doctor, init, inspect, logs, receipts, run, serve, status, topology, trace, trigger,
};

fn parser(args: &[OsString]) -> lexopt::Parser {
    lexopt::Parser::from_args(args.to_vec())
}

fuzz_target!(|data: &[u8]| {
    let args: Vec<OsString> = data
        .split(|&b| b == 0)
        .take(12)
        .map(|a| OsString::from_vec(a.to_vec()))
        .collect();
    macro_rules! check {
        ($($m:ident),*) => {$({
            let mut p = parser(&args);
            let mut s = ArgStream::new(&mut p, Globals::default(), stringify!($m));
            if let Err(e) = $m::parse(&mut s) {
                assert_eq!(e.exit_code(), 2, "{}: {}", stringify!($m), e.message);
                assert!(!e.message.is_empty());
            }
        })*};
    }
    check!(
        init, doctor, compile, topology, status, inspect, logs, trace, receipts, run, trigger,
        serve
    );

    let Some(first) = args.first().and_then(|a| a.to_str()) else {
        return;
    };
    let literal: Vec<OsString> = vec!["--json".into(), "--".into(), first.into()];
    let mut p = parser(&literal);
    let mut s = ArgStream::new(&mut p, Globals::default(), "inspect");
    let a = inspect::parse(&mut s).expect("a literal node after --");
    assert_eq!(a.node, first);
    assert!(s.globals.json);
    let mut p = parser(&literal);
    let mut s = ArgStream::new(&mut p, Globals::default(), "trigger");
    assert_eq!(trigger::parse(&mut s).expect("a literal node").node, first);

    let with_data: Vec<OsString> = vec![format!("--data={first}").into(), "n".into()];
    let mut p = parser(&with_data);
    let mut s = ArgStream::new(&mut p, Globals::default(), "trigger");
    assert_eq!(
        trigger::parse(&mut s).expect("--data=").data.as_deref(),
        Some(first)
    );
    if !first.starts_with('@') {
        match trigger::parse_data(first) {
            Ok(v) => assert!(trigger::payload_line(&v).chars().count() <= 201),
            Err(e) => assert_eq!(e.exit_code(), 1, "{}", e.message),
        }
    }
});
