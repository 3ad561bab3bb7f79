//! The compile cache: exact bytes (FORMATS.md §15), freshness reasons in the order of HOST.md
//! §6.4, the keyless load, and the rules a loaded node mounts.

use super::*;

/// The expected bytes of `price-watch`'s compile file (FORMATS.md §15.5).
fn watch_file_text() -> String {
    let fp = pair().get("price-watch").unwrap().fingerprint();
    format!(
        r#"{{
  "node": "price-watch",
  "contract_fingerprint": "{fp}",
  "canonicalizer": {{
    "node": "price-watch",
    "fields": [
      {{
        "path": "prices",
        "material": true,
        "collection": "set"
      }},
      {{
        "path": "prices.vendor",
        "material": true,
        "text": {{
          "collapse_whitespace": true,
          "case_insensitive": true
        }}
      }},
      {{
        "path": "prices.price",
        "material": true,
        "number": {{
          "quantum": 0.01
        }}
      }},
      {{
        "path": "prices.checked_at",
        "material": false
      }},
      {{
        "path": "prices.source",
        "material": false
      }},
      {{
        "path": "checked_at",
        "material": false
      }}
    ],
    "default_material": true,
    "facets": [
      {{
        "facet": "prices",
        "paths": [
          "prices"
        ]
      }}
    ]
  }},
  "postconditions": [
    {{
      "id": "has-prices",
      "mode": "deterministic",
      "facet": "prices",
      "source": "Postcondition: every entry has a positive price.",
      "predicate": {{
        "nodes": [
          {{
            "kind": "less-than",
            "fact": "prices.length",
            "value": 1
          }}
        ],
        "root": 0
      }}
    }},
    {{
      "id": "own-page",
      "mode": "render-attested",
      "facet": "prices",
      "source": "Postcondition: every price was read from the vendor's own pricing page."
    }}
  ],
  "contract_view": {{
    "Maintains": "The current list price of each tracked vendor. Each entry carries a stable\n`vendor` key. `checked_at` and the page `source` are immaterial.\nPostcondition: every entry has a positive price.\nPostcondition: every price was read from the vendor's own pricing page.\n\n#### prices\nThe set of vendor prices (unordered), material to the cent.",
    "Continuity": "- self-driven: re-check once a day."
  }}
}}
"#
    )
}

#[test]
fn node_files_and_topology_have_the_exact_bytes_of_formats_15() {
    let dir = tempfile::tempdir().unwrap();
    compiled().write_cache(dir.path(), ts()).unwrap();
    let read = |p: &str| std::fs::read_to_string(dir.path().join(p)).unwrap();
    let watch = read(&format!("compile/nodes/{}.json", hex_of("price-watch")));
    assert_eq!(watch, watch_file_text());
    let brief = read(&format!("compile/nodes/{}.json", hex_of("price-brief")));
    assert!(brief.contains(
        "  \"canonicalizer\": {\n    \"node\": \"price-brief\",\n    \"fields\": [],\n    \"default_material\": true,\n    \"facets\": []\n  },\n  \"postconditions\": [],\n  \"contract_view\": {\n    \"Requires\": \"- the current vendor prices\",\n"
    ));
    let topology = read("compile/topology.json");
    assert!(topology.starts_with(
        "{\n  \"topology\": {\n    \"nodes\": [\n      {\n        \"node\": \"price-brief\",\n"
    ));
    assert!(topology.contains("\"edges\": [\n      {\n        \"subscriber\": \"price-brief\",\n        \"producer\": \"price-watch\",\n        \"facet\": \"prices\"\n      }\n    ],\n    \"entry_points\": [],\n    \"acyclic\": true\n  },\n  \"contract_fingerprints\": {\n"));
}

#[test]
fn the_manifest_has_the_exact_bytes_of_formats_15_4() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = compiled().write_cache(dir.path(), ts()).unwrap();
    let read = |p: &str| std::fs::read_to_string(dir.path().join(p)).unwrap();
    let node = |id: &str| read(&format!("compile/nodes/{}.json", hex_of(id)));
    let (topology, brief, watch) = (
        read("compile/topology.json"),
        node("price-brief"),
        node("price-watch"),
    );
    let d = |text: &str| format!("blake3:{}", blake3::hash(text.as_bytes()).to_hex());
    assert_eq!(
        read("compile/manifest.json"),
        format!(
            r#"{{
  "contract_set_fingerprint": "{}",
  "sdk_version": "reactor-rs/{}",
  "model": "compile-model",
  "cost": {{
    "provider": "openrouter",
    "model": "compile-model",
    "tokens": {{
      "fresh": 2140,
      "reused": 700
    }},
    "surprise_cause": "self"
  }},
  "nodes": 2,
  "edges": 1,
  "compiled_at": "2026-06-02T18:00:00.123Z",
  "format": 1,
  "topology": "{}",
  "artifacts": {{
    "price-brief": "{}",
    "price-watch": "{}"
  }}
}}
"#,
            pair().fingerprint(),
            crate::version::VERSION,
            d(&topology),
            d(&brief),
            d(&watch)
        )
    );
    assert_eq!(manifest.artifacts.len(), 2);
    assert_eq!(manifest.compiled_at, "2026-06-02T18:00:00.123Z");
}

fn hex_of(id: &str) -> String {
    crate::format::address::hex(id.as_bytes())
}

fn written() -> (tempfile::TempDir, CacheKey) {
    let dir = tempfile::tempdir().unwrap();
    let c = compiled();
    c.write_cache(dir.path(), ts()).unwrap();
    (dir, c.key)
}

fn reason(dir: &Path, key: &CacheKey) -> String {
    match freshness(dir, key) {
        Freshness::Fresh(_) => "fresh".to_string(),
        other => other.reason().unwrap().to_string(),
    }
}

/// Rewrites a compile file and re-signs the manifest so only the keyless load can object.
fn replace_signed(dir: &Path, rel: &str, text: &str) {
    std::fs::write(dir.join(rel), text).unwrap();
    let mpath = dir.join("compile/manifest.json");
    let mut m: Sj = serde_json::from_str(&std::fs::read_to_string(&mpath).unwrap()).unwrap();
    let digest = format!("blake3:{}", blake3::hash(text.as_bytes()).to_hex());
    if rel == "compile/topology.json" {
        m["topology"] = json!(digest);
    } else {
        let hexname = rel
            .trim_start_matches("compile/nodes/")
            .trim_end_matches(".json");
        let node = String::from_utf8(crate::format::address::unhex(hexname).unwrap()).unwrap();
        m["artifacts"][node] = json!(digest);
    }
    std::fs::write(&mpath, serde_json::to_string_pretty(&m).unwrap()).unwrap();
}

#[test]
fn a_written_cache_is_fresh_and_loads_keylessly() {
    let (dir, key) = written();
    let Freshness::Fresh(loaded) = freshness(dir.path(), &key) else {
        panic!("{:?}", freshness(dir.path(), &key).reason());
    };
    let c = compiled();
    assert_eq!(loaded.manifest.key, key);
    assert_eq!(loaded.manifest.cost, c.cost);
    assert_eq!((loaded.manifest.nodes, loaded.manifest.edges), (2, 1));
    assert_eq!(loaded.ir.topology, c.ir.topology);
    for (a, b) in loaded.ir.nodes.iter().zip(&c.ir.nodes) {
        assert_eq!(a.file_bytes(), b.file_bytes());
        assert_eq!(a.wake_source, b.wake_source);
    }
    let keyless = load_ir(dir.path()).unwrap();
    let mounted = mount(&keyless.ir.to_ir(), IngressMode::Host).unwrap();
    assert_eq!(mounted.edges.len(), 1);
    assert_eq!(mounted.heights["price-brief"], 1);
    // A stray file in compile/nodes/ is ignored by readers and removed by the next compile.
    let stray = dir.path().join("compile/nodes/6e6f6e65.json");
    std::fs::write(&stray, "{}").unwrap();
    assert!(freshness(dir.path(), &key).is_fresh());
    compiled().write_cache(dir.path(), ts()).unwrap();
    assert!(!stray.exists());
    assert!(freshness(dir.path(), &key).is_fresh());
}

#[test]
fn key_triple_reasons_in_order() {
    let (dir, key) = written();
    let d = dir.path();
    // Key triple, in order: contract set, then version, then model.
    let other = CacheKey {
        contract_set_fingerprint: "sha256:00".into(),
        sdk_version: "reactor-rs/9.9.9".into(),
        model: "other".into(),
    };
    assert_eq!(reason(d, &other), "contract set changed");
    let k2 = CacheKey {
        contract_set_fingerprint: key.contract_set_fingerprint.clone(),
        ..other.clone()
    };
    assert_eq!(reason(d, &k2), "reactor version changed");
    let k3 = CacheKey {
        model: "other".into(),
        ..key.clone()
    };
    assert_eq!(reason(d, &k3), "compile model changed");
    match freshness(d, &k3) {
        Freshness::Stale {
            cached, topology, ..
        } => {
            assert_eq!(cached, Some(key.clone()));
            assert_eq!(topology.unwrap().nodes, 2);
        }
        other => panic!("{:?}", other.reason()),
    }
    // A contract edit in a section renders never see still changes the key.
    let edited = pair_with(&PRICE_WATCH.replace("every tracked vendor.", "every vendor."));
    assert_eq!(
        reason(d, &settings().cache_key(&edited)),
        "contract set changed"
    );
    let skill = CacheKey {
        sdk_version: sdk_version(Some("my prompt")),
        ..key.clone()
    };
    assert_eq!(reason(d, &skill), "reactor version changed");
}

#[test]
fn incomplete_beats_corrupt_and_both_follow_the_key() {
    let (dir, key) = written();
    let d = dir.path();
    let watch = format!("compile/nodes/{}.json", hex_of("price-watch"));
    let brief = format!("compile/nodes/{}.json", hex_of("price-brief"));
    let original_watch = std::fs::read_to_string(d.join(&watch)).unwrap();
    let original_topology = std::fs::read_to_string(d.join("compile/topology.json")).unwrap();

    // Corrupt: a byte changed in a node file, then in topology.json.
    std::fs::write(d.join(&watch), original_watch.replace("0.01", "0.02")).unwrap();
    assert_eq!(
        reason(d, &key),
        format!("cache corrupt: {watch} does not match the manifest")
    );
    std::fs::write(
        d.join("compile/topology.json"),
        original_topology.replace("true", "false"),
    )
    .unwrap();
    assert_eq!(
        reason(d, &key),
        "cache corrupt: compile/topology.json does not match the manifest"
    );
    // Incomplete beats corrupt: a missing node file, then a missing topology.
    std::fs::remove_file(d.join(&brief)).unwrap();
    assert_eq!(
        reason(d, &key),
        format!("cache incomplete: {brief} missing")
    );
    std::fs::remove_file(d.join("compile/topology.json")).unwrap();
    assert_eq!(
        reason(d, &key),
        "cache incomplete: compile/topology.json missing"
    );
    assert_eq!(
        load_ir(d).unwrap_err(),
        StaleReason::Incomplete {
            file: "compile/topology.json".into()
        }
    );
}

#[test]
fn manifest_problems_come_before_the_files_once_the_key_matches() {
    let (dir, key) = written();
    let d = dir.path();
    let mpath = d.join("compile/manifest.json");
    let good = std::fs::read_to_string(&mpath).unwrap();
    for (text, want) in [
        ("{not json", "manifest unreadable: not valid JSON: "),
        (
            "[1]",
            "manifest unreadable: manifest.json must hold a JSON object",
        ),
        (
            "{\"sdk_version\": \"x\"}",
            "manifest unreadable: missing member 'contract_set_fingerprint'",
        ),
    ] {
        std::fs::write(&mpath, text).unwrap();
        let r = reason(d, &key);
        assert!(r.starts_with(want), "{r}");
    }
    let mut m: Sj = serde_json::from_str(&good).unwrap();
    m["model"] = json!(7);
    std::fs::write(&mpath, m.to_string()).unwrap();
    assert_eq!(
        reason(d, &key),
        "manifest unreadable: member 'model' must be a string"
    );
    for (member, value, want) in [
        (
            "nodes",
            json!(-1),
            "member 'nodes' must be a non-negative integer",
        ),
        ("format", json!(2), "unsupported format 2 (expected 1)"),
        (
            "topology",
            json!("blake3:xyz"),
            "member 'topology' must be a blake3 digest",
        ),
        (
            "artifacts",
            json!({"a": 1}),
            "member 'artifacts' must map node ids to blake3 digests",
        ),
        (
            "cost",
            json!({"provider": "p", "model": "m", "tokens": {"fresh": 1.5, "reused": 0}}),
            "member 'cost.tokens.fresh' must be a non-negative integer",
        ),
    ] {
        let mut m: Sj = serde_json::from_str(&good).unwrap();
        m[member] = value;
        std::fs::write(&mpath, m.to_string()).unwrap();
        assert_eq!(reason(d, &key), format!("manifest unreadable: {want}"));
    }
    // A reference manifest (no project additions, another SDK) is simply another version.
    let mut m: Sj = serde_json::from_str(&good).unwrap();
    for k in ["format", "topology", "artifacts"] {
        m.as_object_mut().unwrap().remove(k);
    }
    m["sdk_version"] = json!("0.3.1");
    std::fs::write(&mpath, m.to_string()).unwrap();
    assert_eq!(reason(d, &key), "reactor version changed");
    std::fs::remove_file(&mpath).unwrap();
    match freshness(d, &key) {
        Freshness::Absent { topology } => assert_eq!(topology.unwrap().edges, 1),
        other => panic!("{:?}", other.reason()),
    }
    assert_eq!(reason(d, &key), "no compile cache");
    assert_eq!(load_ir(d).unwrap_err(), StaleReason::NoCache);
}

#[test]
fn files_that_do_not_load_keylessly_are_invalid() {
    let watch = format!("compile/nodes/{}.json", hex_of("price-watch"));
    let topo = "compile/topology.json".to_string();
    type Edit = Box<dyn Fn(&str) -> String>;
    let cases: Vec<(String, Edit, String)> = vec![
        (
            topo.clone(),
            Box::new(|t: &str| {
                let v: Sj = serde_json::from_str(t).unwrap();
                serde_json::to_string_pretty(&v["topology"]).unwrap()
            }),
            "cache invalid: compile/topology.json is a flat topology without contract fingerprints".into(),
        ),
        (
            topo.clone(),
            Box::new(|t: &str| {
                let mut v: Sj = serde_json::from_str(t).unwrap();
                v["contract_fingerprints"].as_object_mut().unwrap().remove("price-brief");
                v.to_string()
            }),
            "cache invalid: node 'price-brief' has no contract fingerprint".into(),
        ),
        (
            topo.clone(),
            Box::new(|t: &str| t.replace("\"facet\": \"prices\"", "\"facet\": \"volume\"")),
            "cache invalid: compile/topology.json: edge price-watch → price-brief uses facet 'volume', which price-watch does not declare".into(),
        ),
        (
            topo.clone(),
            Box::new(|t: &str| t.replace("\"wake_source\": \"self\"", "\"wake_source\": \"sometimes\"")),
            "cache invalid: node 'price-watch' has no valid wake_source".into(),
        ),
        (
            topo.clone(),
            Box::new(|_: &str| "{\"nope\": true}".into()),
            "cache invalid: compile/topology.json holds no topology".into(),
        ),
        (
            topo.clone(),
            Box::new(|_: &str| "{\"topology\": ".into()),
            "cache invalid: compile/topology.json is not valid JSON: ".into(),
        ),
        (
            watch.clone(),
            Box::new(|t: &str| t.replace("\"quantum\": 0.01", "\"quantum\": -1")),
            format!("cache invalid: {watch}: invalid canonicalization spec for node 'price-watch': fields[2].number.quantum must be null, 0, or a finite number greater than 0 (found -1)"),
        ),
        (
            watch.clone(),
            Box::new(|t: &str| t.replace("\"root\": 0", "\"root\": 3")),
            format!("cache invalid: {watch}: invalid postconditions for node 'price-watch': postconditions[0] ('has-prices'): predicate root index 3 is out of range (pool has 1 nodes)"),
        ),
        (
            watch.clone(),
            Box::new(|t: &str| {
                let mut v: Sj = serde_json::from_str(t).unwrap();
                v.as_object_mut().unwrap().remove("contract_fingerprint");
                v.to_string()
            }),
            "cache invalid: node 'price-watch' has no contract fingerprint".into(),
        ),
        (
            watch.clone(),
            Box::new(|t: &str| t.replacen("\"node\": \"price-watch\"", "\"node\": \"other\"", 1)),
            format!("cache invalid: {watch}: belongs to node 'other', not 'price-watch'"),
        ),
        (
            watch.clone(),
            Box::new(|t: &str| {
                let mut v: Sj = serde_json::from_str(t).unwrap();
                v["contract_view"] = json!({"Maintains": 3});
                v.to_string()
            }),
            format!("cache invalid: {watch}: member 'contract_view' must map headings to text"),
        ),
        (
            watch.clone(),
            Box::new(|_: &str| "[]".into()),
            format!("cache invalid: {watch}: must hold a JSON object"),
        ),
    ];
    for (rel, edit, want) in cases {
        let (dir, key) = written();
        let text = std::fs::read_to_string(dir.path().join(&rel)).unwrap();
        replace_signed(dir.path(), &rel, &edit(&text));
        let got = reason(dir.path(), &key);
        assert!(got.starts_with(&want), "{rel}: got {got:?}, want {want:?}");
        assert!(load_ir(dir.path()).is_err());
    }
}

#[test]
fn a_reference_compile_dir_reads_as_absent_and_manifest_counts_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let key = compiled().key;
    assert!(matches!(
        freshness(dir.path(), &key),
        Freshness::Absent { topology: None }
    ));
    std::fs::create_dir_all(dir.path().join("compile")).unwrap();
    std::fs::write(
        dir.path().join("compile/topology.json"),
        r#"{"nodes":[{"node":"a"}],"edges":[{"subscriber":"a","producer":"ingress.a","facet":"inbox"}],"entry_points":["a"]}"#,
    )
    .unwrap();
    match freshness(dir.path(), &key) {
        Freshness::Absent { topology } => assert_eq!(
            topology,
            Some(TopologySummary {
                nodes: 1,
                edges: 1,
                entry_points: vec!["a".into()],
                acyclic: true
            })
        ),
        other => panic!("{:?}", other.reason()),
    }
    // A manifest whose counts disagree with topology.json.
    let (dir, key) = written();
    let mpath = dir.path().join("compile/manifest.json");
    let mut m: Sj = serde_json::from_str(&std::fs::read_to_string(&mpath).unwrap()).unwrap();
    m["edges"] = json!(5);
    std::fs::write(&mpath, m.to_string()).unwrap();
    assert_eq!(
        reason(dir.path(), &key),
        "cache invalid: the manifest counts 2 nodes and 5 edges but compile/topology.json holds 2 and 1"
    );
    // A manifest listing a compile file for a node the topology does not have.
    let mut m: Sj = serde_json::from_str(&std::fs::read_to_string(&mpath).unwrap()).unwrap();
    m["edges"] = json!(1);
    let some = m["artifacts"]["price-brief"].clone();
    m["artifacts"]["ghost"] = some.clone();
    std::fs::write(
        dir.path()
            .join(format!("compile/nodes/{}.json", hex_of("ghost"))),
        std::fs::read(
            dir.path()
                .join(format!("compile/nodes/{}.json", hex_of("price-brief"))),
        )
        .unwrap(),
    )
    .unwrap();
    std::fs::write(&mpath, m.to_string()).unwrap();
    assert_eq!(
        reason(dir.path(), &key),
        "cache invalid: the manifest lists a compile file for 'ghost', which is not a topology node"
    );
}

#[test]
fn compiled_rules_fingerprint_and_gate() {
    let c = compiled();
    let ir = c.ir.to_ir();
    let watch = &ir.nodes["price-watch"].rules;
    assert_eq!(watch.facets(), ["prices"]);
    let truth = |prices: Sj| {
        vec![(
            "truth.json".to_string(),
            json!({"prices": prices, "checked_at": "now"})
                .to_string()
                .into_bytes(),
        )]
    };
    let a = truth(
        json!([{"vendor": "Acme  Corp", "price": 10.001, "checked_at": 1},
                         {"vendor": "beta", "price": 7.5}]),
    );
    let b = truth(json!([{"vendor": "beta", "price": 7.5},
                         {"vendor": "acme corp", "price": 10.0, "checked_at": 2}]));
    let (fa, warnings) = watch.fingerprint(&a, "sha256:v1").unwrap();
    let (fb, _) = watch.fingerprint(&b, "sha256:v2").unwrap();
    assert!(warnings.is_empty());
    assert_eq!(fa, fb, "immaterial and normalized differences move nothing");
    assert_ne!(fa.atomic_token(), Some("sha256:v1"));
    let mut att = HashMap::new();
    assert_eq!(
        watch.gate(&a, &att).unwrap_err().to_string(),
        "postconditions failed: own-page (attestation missing)"
    );
    att.insert("own-page".to_string(), true);
    assert_eq!(watch.gate(&a, &att), Ok(()));
    let empty = truth(json!([]));
    assert_eq!(
        watch.gate(&empty, &att).unwrap_err().to_string(),
        "postconditions failed: has-prices (tripped)"
    );
    assert!(
        watch
            .fingerprint(&Vec::new(), "sha256:v")
            .unwrap_err()
            .to_string()
            .starts_with("structured truth missing")
    );
    let brief = &ir.nodes["price-brief"].rules;
    let v = address(b"x");
    let (fp, _) = brief
        .fingerprint(&vec![("brief.md".into(), b"hi".to_vec())], &v)
        .unwrap();
    assert_eq!(fp.atomic_token(), Some(v.as_str()));
    assert_eq!(brief.gate(&Vec::new(), &HashMap::new()), Ok(()));
}
