//! The canonicalizer (RUNTIME.md §4): `compile_node` on generated specs (and on the input read
//! as spec JSON), then reduction, normalization and digests of generated values.
//!
//! Properties: the spec's JSON form reads back as the same spec; every facet's serialization is
//! canonical JSON of its reduced value (`null` for a dropped root) and its token is the address
//! of those bytes; canonicalizing the reduced value again changes nothing (idempotence); tokens
//! do not depend on object member order; `apply` lists `@atomic` then the declared facets.
#![no_main]

use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use reactor::core::canonicalizer::{CanonicalizerSpec, compile_node};
use reactor::format::address::address;
use reactor::format::json;
use reactor_fuzz::arb;

fuzz_target!(|data: &[u8]| {
    if let Ok(v) = json::parse(data)
        && let Ok(spec) = CanonicalizerSpec::from_value(&v)
    {
        let _ = compile_node(&spec);
    }
    let mut u = Unstructured::new(data);
    let (Ok(spec), Ok(value)) = (arb::spec(&mut u), arb::value(&mut u, 4)) else {
        return;
    };
    assert_eq!(
        CanonicalizerSpec::from_value(&spec.to_value()).expect("the JSON form reads"),
        spec
    );
    let Ok(c) = compile_node(&spec) else { return };
    let Ok(fingerprints) = c.apply(&value) else {
        return;
    };
    let facets: Vec<&str> = fingerprints.facets().collect();
    assert_eq!(facets[0], "@atomic");
    assert_eq!(facets.len(), spec.facets.len() + 1);
    let reversed = arb::reverse_members(&value);
    assert_eq!(
        c.apply(&reversed).expect("member order is irrelevant"),
        fingerprints
    );
    for facet in facets {
        let text = c.serialize(&value, facet).expect("apply succeeded");
        let reparsed = json::parse_str(&text).expect("a serialization parses");
        assert_eq!(json::canonical_string(&reparsed).unwrap(), text);
        match c.reduced(&value, facet).expect("apply succeeded") {
            None => assert_eq!(text, "null"),
            Some(r) => assert_eq!(json::canonical_string(&r).unwrap(), text),
        }
        assert_eq!(
            fingerprints.get(facet),
            Some(address(text.as_bytes()).as_str())
        );
        if text != "null" {
            let again = c.serialize(&reparsed, facet).expect("a reduction reduces");
            assert_eq!(
                again, text,
                "canonicalization is not idempotent for {facet}"
            );
        }
    }
});
