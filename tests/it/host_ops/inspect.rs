//! What a render produced (issue 8 item 9): `inspect <node> [--version <v>]` shows the node's
//! world-model files, checked against the artifacts decoded with the library's OPWM1 reader.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{example_copy, run_in};

const NODE: &str = "responsibility.viewport-masker";

/// `world-models/<hex(node)>` of a state dir.
fn node_dir(sd: &Path) -> PathBuf {
    sd.join("world-models")
        .join(reactor::format::layout::node_segment(NODE))
}

/// The files of the node's artifact `version`: `(path, bytes)` in artifact order.
fn artifact_files(sd: &Path, version: &str) -> Vec<(String, Vec<u8>)> {
    let hex = version.strip_prefix("sha256:").unwrap();
    let path = node_dir(sd)
        .join("versions")
        .join(format!("sha256_{hex}.bin"));
    reactor::format::opwm::decode(&std::fs::read(path).unwrap()).unwrap()
}

/// `inspect NODE … --state-dir <sd> [--json]`: exit code and stdout (stderr on failure).
fn inspect(dir: &Path, sd: &Path, extra: &[&str], json: bool) -> (i32, String) {
    let mut args = vec!["inspect", NODE, "--state-dir", sd.to_str().unwrap()];
    args.extend(extra);
    if json {
        args.push("--json");
    }
    let (code, stdout, stderr) = run_in(dir, &args);
    (code, if code == 0 { stdout } else { stderr })
}

#[test]
fn inspect_shows_the_published_world_model_by_default() {
    let d = tempfile::tempdir().unwrap();
    let sd = example_copy(d.path());
    let published: Value =
        serde_json::from_slice(&std::fs::read(node_dir(&sd).join("published.json")).unwrap())
            .unwrap();
    let current = published["version"].as_str().unwrap().to_string();
    // JSON: every file with its size, truth.json whole; `worldModel` is the last member.
    let (code, stdout) = inspect(d.path(), &sd, &[], true);
    assert_eq!(code, 0, "{stdout}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys.last().map(|k| k.as_str()), Some("worldModel"));
    let wm = &v["worldModel"];
    assert_eq!(wm["version"], json!(current));
    assert_eq!(wm["published"], json!(true));
    let files = artifact_files(&sd, &current);
    assert_eq!(wm["files"].as_array().unwrap().len(), files.len());
    for (f, (path, bytes)) in wm["files"].as_array().unwrap().iter().zip(&files) {
        assert_eq!(f["path"], json!(path));
        assert_eq!(f["bytes"], json!(bytes.len()));
        if path == "truth.json" {
            assert_eq!(f["text"], json!(String::from_utf8(bytes.clone()).unwrap()));
        }
    }
    // Text: the block after the chain line, truth.json pretty-printed and cut at 40 lines.
    let (code, text) = inspect(d.path(), &sd, &[], false);
    assert_eq!(code, 0);
    let truth = &files.iter().find(|(p, _)| p == "truth.json").unwrap().1;
    assert!(
        text.contains(&format!(
            "\n\n  world-model    {}… (published, 1 file)\n    truth.json   {} bytes\n      {{\n        \"view_e1\": {{\n",
            &current[..15],
            truth.len()
        )),
        "{text}"
    );
    let block = &text[text.find("  world-model").unwrap()..];
    assert_eq!(block.lines().count(), 2 + 40 + 1, "{block}");
    assert!(
        text.ends_with(" more lines (`--json` has the whole file)\n"),
        "{text}"
    );
}

#[test]
fn inspect_version_takes_an_atomic_fingerprint_or_a_version() {
    let d = tempfile::tempdir().unwrap();
    let sd = example_copy(d.path());
    // The @atomic fingerprint of the node's first render names an older version.
    let ledger: Vec<Value> =
        serde_json::from_slice(&std::fs::read(sd.join("receipts.json")).unwrap()).unwrap();
    let first = ledger
        .iter()
        .find(|r| r["node"] == json!(NODE) && r["status"] == json!("rendered"))
        .unwrap();
    let token = first["fingerprints"]["@atomic"].as_str().unwrap();
    let (code, stdout) = inspect(d.path(), &sd, &["--version", token], true);
    assert_eq!(code, 0, "{stdout}");
    let wm = serde_json::from_str::<Value>(&stdout).unwrap()["worldModel"].clone();
    assert_eq!(wm["published"], json!(false));
    let older = wm["version"].as_str().unwrap().to_string();
    let old_files = artifact_files(&sd, &older);
    assert_eq!(
        wm["files"][0]["text"],
        json!(String::from_utf8(old_files[0].1.clone()).unwrap())
    );
    // The resolved version itself, given with `--version=`, reads the same files.
    let (_, again) = inspect(d.path(), &sd, &[&format!("--version={older}")], true);
    assert_eq!(
        serde_json::from_str::<Value>(&again).unwrap()["worldModel"],
        wm
    );
    // Unknown versions are errors; `inspect --version` alone still prints the version.
    let (code, stderr) = inspect(d.path(), &sd, &["--version", "sha256:00"], false);
    assert_eq!(code, 1);
    assert!(
        stderr.starts_with(&format!(
            "reactor: error: node '{NODE}' has no world-model version 'sha256:00'\nhint: "
        )),
        "{stderr}"
    );
    let (code, stdout, _) = run_in(d.path(), &["inspect", "--version"]);
    assert_eq!((code, stdout.as_str()), (0, "reactor 0.2.0\n"));
}

#[test]
fn inspect_shows_index_md_and_sizes_of_other_files() {
    let d = tempfile::tempdir().unwrap();
    let sd = example_copy(d.path());
    // A version holding index.md and another file, written with the library's encoder.
    let artifact = reactor::format::opwm::encode(vec![
        (
            "truth.json".into(),
            br#"{"view_e1":{"lenses":[]},"view_e2":{"lenses":[]}}"#.to_vec(),
        ),
        (
            "index.md".into(),
            b"# Viewports\n\nNothing masked yet.\n".to_vec(),
        ),
        ("raw/capture.bin".into(), vec![0u8, 159, 146, 150, 255]),
    ])
    .unwrap();
    let version = reactor::format::opwm::version(&artifact);
    let hex = version.strip_prefix("sha256:").unwrap();
    std::fs::write(
        node_dir(&sd)
            .join("versions")
            .join(format!("sha256_{hex}.bin")),
        &artifact,
    )
    .unwrap();
    let (code, text) = inspect(d.path(), &sd, &["--version", &version], false);
    assert_eq!(code, 0, "{text}");
    let block = &text[text.find("  world-model").unwrap()..];
    assert_eq!(
        block,
        format!(
            "  world-model    {}… (not the published version, 3 files)\n    index.md     33 bytes\n      # Viewports\n\n      Nothing masked yet.\n    raw/capture.bin 5 bytes\n    truth.json   49 bytes\n      {{\n        \"view_e1\": {{\n          \"lenses\": []\n        }},\n        \"view_e2\": {{\n          \"lenses\": []\n        }}\n      }}\n",
            &version[..15]
        )
    );
    let (_, stdout) = inspect(d.path(), &sd, &["--version", &version], true);
    let wm = serde_json::from_str::<Value>(&stdout).unwrap()["worldModel"].clone();
    assert_eq!(
        wm["files"],
        json!([
            {"path": "index.md", "bytes": 33, "text": "# Viewports\n\nNothing masked yet.\n"},
            {"path": "raw/capture.bin", "bytes": 5},
            {"path": "truth.json", "bytes": 49, "text": "{\"view_e1\":{\"lenses\":[]},\"view_e2\":{\"lenses\":[]}}"}
        ])
    );
}

#[test]
fn a_cold_node_has_no_world_model_block() {
    let d = tempfile::tempdir().unwrap();
    let sd = example_copy(d.path());
    std::fs::remove_file(node_dir(&sd).join("published.json")).unwrap();
    let (_, stdout) = inspect(d.path(), &sd, &[], true);
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["publishedVersion"], Value::Null);
    assert_eq!(v["worldModel"], Value::Null);
    let (_, text) = inspect(d.path(), &sd, &[], false);
    assert!(text.contains("  published:\n    (none — cold)\n"), "{text}");
    assert!(!text.contains("world-model"), "{text}");
}
