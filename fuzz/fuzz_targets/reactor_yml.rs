//! `reactor.yml` (HOST.md §4): the YAML layer and the strict configuration reader, on text
//! given directly and through a real file.
//!
//! Properties: parsing is deterministic; an error names `reactor.yml` and a position inside
//! the text (a line at most one past the last); reading the same bytes from
//! `<project>/reactor.yml` gives the same result, and bytes that are not UTF-8 are a read
//! error, not a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use reactor::host::config::{ConfigFileError, ReactorConfig};
use reactor_fuzz::temp_dir;

fuzz_target!(|bytes: &[u8]| {
    if bytes.len() > reactor::host::yaml::MAX_YAML_BYTES {
        return;
    }
    let dir = temp_dir();
    std::fs::write(dir.path().join("reactor.yml"), bytes).unwrap();
    let loaded = ReactorConfig::load(dir.path());
    let Ok(text) = std::str::from_utf8(bytes) else {
        assert!(
            matches!(loaded, Err(ConfigFileError::Read { .. })),
            "{loaded:?}"
        );
        return;
    };
    let parsed = ReactorConfig::parse(text, dir.path());
    assert_eq!(
        parsed,
        ReactorConfig::parse(text, dir.path()),
        "not deterministic"
    );
    match (&parsed, &loaded) {
        (Ok(p), Ok(Some(l))) => assert_eq!(p, l),
        (Err(e), Err(f)) => assert_eq!(e.to_string(), f.to_string()),
        _ => panic!("parse {parsed:?} but load {loaded:?}"),
    }
    if let Err(e) = &parsed {
        let message = e.to_string();
        assert!(message.starts_with("reactor.yml:"), "{message}");
        // YAML line breaks: LF, CRLF and a lone CR.
        let lines = text.replace("\r\n", "\n").split(['\n', '\r']).count() as u64;
        if let ConfigFileError::Yaml { line, .. } | ConfigFileError::Invalid { line, .. } = e {
            assert!(*line <= lines + 1, "line {line} of {lines}: {message}");
        }
    }
});
