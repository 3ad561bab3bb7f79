//! `*.prose.md` contracts (RUNTIME.md §2): the parser on raw bytes, directly and through a
//! contracts directory on disk, then the views built from a contract.
//!
//! Properties: a parsed contract has a valid id, unique non-empty trimmed sections, unique
//! facet names (none for non-node kinds), a `sha256:` fingerprint and postcondition sentences
//! that start with `Postcondition:`; the same text with CRLF line ends (and with a byte-order
//! mark) is the same contract; loading the file from a directory gives the same contract;
//! errors name the file.
#![no_main]

use std::collections::HashSet;

use libfuzzer_sys::fuzz_target;
use reactor::contract::{ContractSet, contract_view, js_trim, parse_contract, render_evidence};
use reactor_fuzz::temp_dir;

const PATH: &str = "fuzz.prose.md";

fuzz_target!(|bytes: &[u8]| {
    if bytes.len() as u64 > reactor::contract::MAX_CONTRACT_BYTES {
        return;
    }
    let parsed = parse_contract(bytes, PATH);
    let dir = temp_dir();
    std::fs::write(dir.path().join(PATH), bytes).unwrap();
    let loaded = ContractSet::load(dir.path());
    let c = match parsed {
        Err(e) => {
            assert!(e.to_string().starts_with(PATH), "{e}");
            assert!(
                loaded.is_err(),
                "the directory loads what the parser refuses"
            );
            return;
        }
        Ok(c) => c,
    };
    let set = loaded.expect("the directory loads what the parser accepts");
    assert_eq!(set.contracts(), std::slice::from_ref(&c));

    assert!(!c.id.is_empty() && !c.id.contains("::") && !c.id.starts_with('@'));
    let mut keys = HashSet::new();
    for s in &c.sections {
        assert!(keys.insert(s.key.as_str()), "duplicate section {}", s.key);
        assert!(!s.body.is_empty());
        assert_eq!(js_trim(&s.body), s.body);
    }
    let mut names = HashSet::new();
    for f in &c.facets {
        assert!(!f.name.is_empty() && !f.name.starts_with('@'));
        assert!(names.insert(f.name.as_str()), "duplicate facet {}", f.name);
    }
    assert!(c.is_node() || c.facets.is_empty());
    let fp = c.fingerprint();
    assert!(fp.starts_with("sha256:") && fp.len() == 71, "{fp}");
    for p in c.postconditions() {
        assert!(p.starts_with("Postcondition:"), "{p}");
    }
    let _ = contract_view(&c);
    let _ = render_evidence(&set);

    if !bytes.contains(&b'\r') {
        let crlf: Vec<u8> = bytes
            .iter()
            .flat_map(|&b| {
                if b == b'\n' {
                    vec![b'\r', b'\n']
                } else {
                    vec![b]
                }
            })
            .collect();
        assert_eq!(parse_contract(&crlf, PATH).expect("CRLF parses"), c);
    }
    if !bytes.starts_with(b"\xEF\xBB\xBF") {
        let with_bom = [b"\xEF\xBB\xBF".as_slice(), bytes].concat();
        assert_eq!(
            parse_contract(&with_bom, PATH).expect("a BOM is ignored"),
            c
        );
    }
});
