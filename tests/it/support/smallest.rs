//! Scripted compile-session answers for `../shared/contracts/smallest-project`
//! (competitor-monitor → weekly-brief on `funding`), shared by the compile suites.

use serde_json::{Value, json};

pub fn forme_answer() -> Value {
    json!({
        "nodes": [
            {"id": "competitor-monitor", "kind": "responsibility", "wake_source": "self",
             "requires": [], "maintains": ["funding"]},
            {"id": "weekly-brief", "kind": "responsibility", "wake_source": "input",
             "requires": [{"facet": "a current view of competitor fundraising activity",
                           "fan_in": false}],
             "maintains": ["brief"]}
        ],
        "matches": [{"subscriber": "weekly-brief",
                     "requirement": "a current view of competitor fundraising activity",
                     "producer": "competitor-monitor", "facet": "funding"}]
    })
}

pub fn monitor_canonicalizer() -> Value {
    json!({
        "fields": [
            {"path": "funding", "material": true, "text": null, "number": null,
             "collection": "set"},
            {"path": "funding.round", "material": true,
             "text": {"collapse_whitespace": true, "case_insensitive": true},
             "number": null, "collection": null},
            {"path": "funding.amount", "material": true, "text": null,
             "number": {"quantum": null}, "collection": null},
            {"path": "funding.date", "material": true, "text": null, "number": null,
             "collection": null},
            {"path": "funding.request_id", "material": false, "text": null, "number": null,
             "collection": null},
            {"path": "fetched_at", "material": false, "text": null, "number": null,
             "collection": null}
        ],
        "default_material": true,
        "facets": [{"facet": "funding", "paths": ["funding"]}]
    })
}

pub fn monitor_postconditions() -> Value {
    json!({"postconditions": [
        {"id": "cites-source", "mode": "render-attested", "facet": "funding", "predicate": null,
         "source": "Postcondition: every funding event cites a corroborating source."}
    ]})
}

pub fn brief_canonicalizer() -> Value {
    json!({
        "fields": [{"path": "brief", "material": true,
                    "text": {"collapse_whitespace": true, "case_insensitive": false},
                    "number": null, "collection": null}],
        "default_material": true,
        "facets": [{"facet": "brief", "paths": ["brief"]}]
    })
}
