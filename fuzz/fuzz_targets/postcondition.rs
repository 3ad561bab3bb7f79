//! Postconditions (RUNTIME.md §3.5, §5.4, §6): entries read from the input as JSON, and
//! generated flat pools decoded and evaluated over the facts of generated truth, then the
//! commit gate over a compiled canonicalizer.
//!
//! Properties: entries written and read again are the same entries (sorted by id); a decoded
//! predicate evaluates consistently with the connectives (`not` swaps tripped and not-tripped,
//! De Morgan's laws hold, a one-child `and`/`or` is its child) and an undecidable outcome
//! always says why; the gate fails exactly the deterministic entries whose predicate is not
//! `not-tripped` over their facet's facts, and its reason lists them.
#![no_main]

use std::collections::HashMap;

use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use reactor::core::canonicalizer::compile_node;
use reactor::core::postcondition::{
    CompiledPostconditions, FlatPredicate, Mode, Outcome, PostconditionEntry, Predicate,
    check_gate, decode, entries_from_value, entries_to_value, evaluate, evaluate_explained,
    facet_facts, facts, failure_reason,
};
use reactor::format::json::{self, utf16_cmp};
use reactor_fuzz::arb;

fn not(o: Outcome) -> Outcome {
    match o {
        Outcome::Tripped => Outcome::NotTripped,
        Outcome::NotTripped => Outcome::Tripped,
        Outcome::Indeterminate => Outcome::Indeterminate,
    }
}

fn connectives(p: &Predicate, q: &Predicate, f: &reactor::core::postcondition::Facts) {
    let (op, why) = evaluate_explained(p, f);
    assert_eq!(why.is_some(), op == Outcome::Indeterminate, "{why:?}");
    let oq = evaluate(q, f);
    let n = |x: &Predicate| Predicate::Not(Box::new(x.clone()));
    assert_eq!(evaluate(&n(p), f), not(op));
    assert_eq!(evaluate(&Predicate::And(vec![p.clone()]), f), op);
    assert_eq!(evaluate(&Predicate::Or(vec![p.clone()]), f), op);
    let and = Predicate::And(vec![p.clone(), q.clone()]);
    let or = Predicate::Or(vec![p.clone(), q.clone()]);
    assert_eq!(
        evaluate(&n(&and), f),
        evaluate(&Predicate::Or(vec![n(p), n(q)]), f)
    );
    assert_eq!(
        evaluate(&n(&or), f),
        evaluate(&Predicate::And(vec![n(p), n(q)]), f)
    );
    if op == Outcome::NotTripped || oq == Outcome::NotTripped {
        assert_eq!(evaluate(&and, f), Outcome::NotTripped);
    }
    if op == Outcome::Tripped || oq == Outcome::Tripped {
        assert_eq!(evaluate(&or, f), Outcome::Tripped);
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(v) = json::parse(data)
        && let Ok(entries) = entries_from_value(&v)
    {
        let mut sorted = entries.clone();
        sorted.sort_by(|a, b| utf16_cmp(&a.id, &b.id));
        let back = entries_from_value(&entries_to_value(&entries)).expect("written entries read");
        assert_eq!(back, sorted);
        let _ = CompiledPostconditions::compile("fuzz", &["f0".to_string()], entries);
    }

    let mut u = Unstructured::new(data);
    let (Ok(nodes), Ok(r1), Ok(r2), Ok(truth), Ok(spec)) = (
        arb::pool(&mut u),
        u.int_in_range(0..=8i64),
        u.int_in_range(0..=8i64),
        arb::value(&mut u, 3),
        arb::spec(&mut u),
    ) else {
        return;
    };
    let plain = facts(Some(&truth));
    if let (Ok(p), Ok(q)) = (decode(&nodes, r1), decode(&nodes, r2)) {
        connectives(&p, &q, &plain);
    }

    let Ok(canon) = compile_node(&spec) else {
        return;
    };
    let facet = canon.facets().last().cloned().unwrap_or_default();
    let entries: Vec<PostconditionEntry> = [r1, r2]
        .iter()
        .enumerate()
        .map(|(i, &root)| PostconditionEntry {
            id: format!("p{i}"),
            mode: Mode::Deterministic,
            facet: facet.clone(),
            source: format!("Postcondition: {i}."),
            predicate: Some(FlatPredicate {
                nodes: nodes.clone(),
                root,
            }),
        })
        .collect();
    let facets = canon.facets().to_vec();
    let Ok(set) = CompiledPostconditions::compile("fuzz", &facets, entries) else {
        return;
    };
    let failures = check_gate(&set, Some(&truth), Some(&canon), &HashMap::new());
    let expected: Vec<&str> = set
        .deterministic
        .iter()
        .filter(|d| match facet_facts(&canon, &truth, &d.facet) {
            Ok(f) => evaluate(&d.predicate, &f) != Outcome::NotTripped,
            Err(_) => true,
        })
        .map(|d| d.id.as_str())
        .collect();
    let failed: Vec<&str> = failures.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(failed, expected);
    match failure_reason(&failures) {
        None => assert!(failures.is_empty()),
        Some(reason) => {
            assert!(reason.starts_with("postconditions failed: "));
            for f in &failures {
                assert!(reason.contains(&f.id));
            }
        }
    }
});
