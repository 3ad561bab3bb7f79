//! Verbs gather, printers print (issue 8 item 1): every verb's `--json` document is its typed
//! report serialized, and keeps the members HOST.md §8 lists, in that order.

use serde_json::Value;

use super::{example_copy, keys_of, run_in};

const ROLLUP: [&str; 5] = [
    "total",
    "byNode",
    "bySurpriseCause",
    "dispositions",
    "receipts",
];

const INSPECT: [&str; 14] = [
    "node",
    "known",
    "wake_source",
    "contract_fingerprint",
    "maintains",
    "subscribesTo",
    "publishedFingerprints",
    "publishedVersion",
    "lastReceipt",
    "receipts",
    "cost",
    "chain",
    "lastRender",
    "worldModel",
];

const TRACE_STEP: [&str; 7] = [
    "index",
    "wake_source",
    "status",
    "surprise_cause",
    "cost",
    "content_hash",
    "prev",
];

/// A frame's cause (`replay::why::Why`): `lastRender.why` of `inspect`, `why` of `trace --why`.
const WHY: [&str; 8] = [
    "causes",
    "wake",
    "prior",
    "priorStatus",
    "contract",
    "inputs",
    "refs",
    "text",
];

/// `(path into the document, members)`: `""` is the document itself, `a/0/b` walks objects and
/// arrays.
type Shape<'a> = &'a [(&'a str, &'a [&'a str])];

fn check(doc: &Value, shape: Shape<'_>, what: &str) {
    for (path, members) in shape {
        let mut v = doc;
        for step in path.split('/').filter(|s| !s.is_empty()) {
            v = match step.parse::<usize>() {
                Ok(i) => &v[i],
                Err(_) => &v[step],
            };
        }
        assert_eq!(keys_of(v), *members, "{what} {path}");
    }
}

#[test]
fn offline_verbs_keep_their_members_in_order() {
    let d = tempfile::tempdir().unwrap();
    example_copy(d.path());
    let inspect_shape: [(&str, &[&str]); 6] = [
        ("", &INSPECT),
        ("chain", &["ok", "head", "length"]),
        ("cost", &ROLLUP),
        ("lastRender", &["frame", "why"]),
        ("lastRender/why", &WHY),
        ("worldModel", &["version", "published", "files"]),
    ];
    let mut why_step = TRACE_STEP.to_vec();
    why_step.push("why");
    let trace_why_shape: [(&str, &[&str]); 2] = [
        ("traces/0/steps/0", &why_step),
        ("traces/0/steps/0/why", &WHY),
    ];
    let mut cost_members = ROLLUP.to_vec();
    cost_members.extend(["node", "rate", "dollars"]);
    let cost_shape: [(&str, &[&str]); 3] = [
        ("", &cost_members),
        ("rate", &["usdPerToken", "label"]),
        ("dollars", &["total", "fresh", "reused"]),
    ];
    let cases: Vec<(Vec<&str>, Shape<'_>)> = vec![
        (
            vec!["status"],
            &[
                (
                    "",
                    &[
                        "stateDir",
                        "compiled",
                        "freshness",
                        "compile",
                        "writer",
                        "run",
                        "inFlight",
                    ],
                ),
                (
                    "compile",
                    &["nodes", "edges", "compiledAt", "cost", "model"],
                ),
                ("run", &ROLLUP),
            ],
        ),
        (
            vec!["topology"],
            &[
                ("", &["nodes", "edges", "entry_points", "acyclic"]),
                (
                    "nodes/0",
                    &["node", "wake_source", "contract_fingerprint", "maintains"],
                ),
                ("edges/0", &["producer", "facet", "subscriber"]),
            ],
        ),
        (
            vec!["inspect", "responsibility.viewport-masker"],
            &inspect_shape,
        ),
        (
            vec!["logs"],
            &[
                ("", &["receipts", "entries"]),
                (
                    "entries/0",
                    &[
                        "index",
                        "node",
                        "status",
                        "wake_source",
                        "cost",
                        "content_hash",
                    ],
                ),
            ],
        ),
        (
            vec!["trace"],
            &[
                ("traces/0", &["node", "steps", "chain"]),
                ("traces/0/steps/0", &TRACE_STEP),
            ],
        ),
        (vec!["trace", "--why"], &trace_why_shape),
        (
            vec!["receipts", "verify"],
            &[
                ("", &["nodes", "ok", "receipts", "cost", "worldModels"]),
                (
                    "nodes/0",
                    &["node", "receipts", "ok", "head", "errors", "cost"],
                ),
                ("worldModels", &["ok", "versions", "errors"]),
            ],
        ),
        (
            vec![
                "receipts",
                "cost",
                "--rate",
                "$3/Mtok",
                "--node",
                "responsibility.expander-1",
            ],
            &cost_shape,
        ),
    ];
    for (args, shape) in cases {
        let mut a = args.clone();
        a.extend(["--state-dir", "sd", "--json"]);
        let (_, stdout, stderr) = run_in(d.path(), &a);
        let doc: Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("{a:?}: {e}: {stdout}{stderr}"));
        check(&doc, shape, &args.join(" "));
    }
}

#[test]
fn doctor_and_compile_check_keep_their_members_in_order() {
    let d = tempfile::tempdir().unwrap();
    example_copy(d.path());
    let (_, stdout, _) = run_in(d.path(), &["doctor", "--state-dir", "sd", "--json"]);
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    let top: &[&str] = &[
        "version",
        "config",
        "provider",
        "transport",
        "baseUrl",
        "apiKeyEnv",
        "endpoint",
        "sources",
        "liveKeyPresent",
        "offlineForced",
        "systemPrompt",
        "sandbox",
        "stateDir",
        "writer",
        "ir",
        "notes",
        "healthyForOffline",
        "healthyForLive",
    ];
    check(
        &doc,
        &[
            ("", top),
            ("config", &["path", "present", "ok"]),
            (
                "sources",
                &[
                    "provider",
                    "base_url",
                    "api_key_env",
                    "render_model",
                    "compile_model",
                ],
            ),
            ("systemPrompt", &["source", "ok"]),
            ("stateDir", &["path", "exists", "writable"]),
        ],
        "doctor",
    );
    // compile --check over contracts without a cache: the stale report.
    let Some(src) = crate::host_serve::quickstart() else {
        return;
    };
    let proj = d.path().join("proj");
    std::fs::create_dir(&proj).unwrap();
    for f in ["inbox.prose.md", "digest.prose.md"] {
        std::fs::copy(src.join(f), proj.join(f)).unwrap();
    }
    let (code, stdout, stderr) = run_in(&proj, &["compile", "--check", "--json"]);
    assert_eq!(code, 1, "{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    let stale: &[&str] = &[
        "status",
        "reason",
        "contract_set_fingerprint",
        "sdk_version",
        "model",
        "nodes",
        "edges",
        "entry_points",
        "acyclic",
        "diagnostics",
        "lints",
        "cost",
        "step_costs",
        "state_dir",
        "cached",
    ];
    check(&doc, &[("", stale)], "compile --check");
}
