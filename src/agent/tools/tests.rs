//! Unit tests of the render tool set.

use super::*;
use crate::model::types::ToolSpec;
use serde_json::{Value, json};

// The checks as the model reads them: errors as their one-line text.
fn validate(schema: &Value, value: &Value) -> Result<(), String> {
    super::validate(schema, value).map_err(|e| e.to_string())
}
fn parse_finish(args: &Value, attested: &[String]) -> Result<FinishSignal, String> {
    super::parse_finish(args, attested).map_err(|e| e.to_string())
}
fn tool_path(raw: &str) -> Result<String, String> {
    super::tool_path(raw).map_err(|e| e.to_string())
}
fn read_page(path: &str, bytes: &[u8], offset: Option<u64>) -> Result<Value, String> {
    super::read_page(path, bytes, offset).map_err(|e| e.to_string())
}

#[test]
fn validator_follows_the_schemas() {
    let s = finish_schema(&["own-page".into()]);
    let ok = json!({"status": "done", "attestations": {"own-page": true}});
    assert_eq!(validate(&s, &ok), Ok(()));
    assert_eq!(
        validate(
            &s,
            &json!({"status": "maybe", "attestations": {"own-page": true}})
        ),
        Err("$.status: expected one of \"done\", \"failed\"".into())
    );
    assert_eq!(
        validate(&s, &json!({"status": "done"})),
        Err("$: missing required property \"attestations\"".into())
    );
    assert_eq!(
        validate(&s, &json!({"status": "done", "attestations": {}})),
        Err("$.attestations: missing required property \"own-page\"".into())
    );
    assert_eq!(
        validate(
            &s,
            &json!({"status": "done", "attestations": {"own-page": "yes"}})
        ),
        Err("$.attestations.own-page: expected boolean, got string".into())
    );
    assert_eq!(
        validate(
            &s,
            &json!({"status": "done", "attestations": {"own-page": true}, "files": []})
        ),
        Err("$: unknown property \"files\"".into())
    );
    assert_eq!(
        validate(
            &s,
            &json!({"status": "done", "attestations": {"own-page": true},
                    "semantic_diff": {"summary": 3}})
        ),
        Err("$.semantic_diff.summary: expected string or null, got integer".into())
    );
    assert_eq!(
        validate(
            &s,
            &json!({"status": "done", "attestations": {"own-page": true},
                    "semantic_diff": {"notes": ["a", 1]}})
        ),
        Err("$.semantic_diff.notes[1]: expected string, got integer".into())
    );
    assert_eq!(
        validate(&s, &json!([1])),
        Err("$: expected object, got array".into())
    );
    let offset = json!({"type": ["integer", "null"]});
    assert!(validate(&offset, &json!(3)).is_ok());
    assert!(validate(&offset, &json!(3.0)).is_ok());
    assert!(validate(&offset, &json!(3.5)).is_err());
    assert!(validate(&offset, &json!(null)).is_ok());
}

#[test]
fn finish_parsing_and_leniency() {
    let ids = vec!["own-page".to_string()];
    let f = parse_finish(
        &json!({"status": "done", "reason": null,
                "semantic_diff": {"summary": "two prices", "notes": ["a"]},
                "attestations": {"own-page": false}}),
        &ids,
    )
    .unwrap();
    assert_eq!(f.status, FinishStatus::Done);
    assert_eq!(f.summary.as_deref(), Some("two prices"));
    assert_eq!(f.notes, Some(vec!["a".to_string()]));
    assert_eq!(f.attestations.get("own-page"), Some(&false));
    let f = parse_finish(&json!({"status": "failed", "reason": "no data"}), &ids).unwrap();
    assert_eq!(f.status, FinishStatus::Failed);
    assert_eq!(f.reason.as_deref(), Some("no data"));
    assert!(parse_finish(&json!({"status": "done"}), &ids).is_err());
    let f = parse_finish(&json!({"status": "done", "attestations": {}}), &[]).unwrap();
    assert!(f.attestations.is_empty());
    assert!(parse_finish(&json!({"status": "done", "attestations": {"x": true}}), &[]).is_err());
    assert!(parse_finish(&json!("done"), &[]).is_err());
}

#[test]
fn tool_list_and_shell_toggle() {
    let names = |t: &[ToolSpec]| t.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&tool_specs(&[], false)),
        [
            "wm_list",
            "wm_read",
            "wm_list_upstream",
            "wm_read_upstream",
            "ws_list",
            "ws_read",
            "ws_write",
            "ws_delete",
            "finish"
        ]
    );
    let with_shell = tool_specs(&[], true);
    assert_eq!(with_shell[8].name, "shell_exec");
    let finish = &tool_specs(&["a".into()], false)[8];
    assert_eq!(
        finish.parameters["required"],
        json!(["status", "reason", "semantic_diff", "attestations"])
    );
    assert!(
        tool_specs(&[], false)[8].parameters["properties"]
            .get("attestations")
            .is_none()
    );
}

#[test]
fn pages_text_and_binary() {
    let v = read_page("a.txt", b"hello", None).unwrap();
    assert_eq!(
        v,
        json!({"path": "a.txt", "bytes": 5, "encoding": "utf8", "content": "hello", "truncated": false})
    );
    let v = read_page("a.txt", b"hello", Some(5)).unwrap();
    assert_eq!(v["content"], "");
    assert!(read_page("a.txt", b"hello", Some(6)).is_err());
    assert!(read_page("e.txt", "é".as_bytes(), Some(1)).is_err());
    // A long text splits on a character boundary.
    let mut long = "a".repeat(MAX_READ_BYTES - 1);
    long.push('é');
    long.push_str("tail");
    let v = read_page("l.txt", long.as_bytes(), None).unwrap();
    assert_eq!(v["truncated"], true);
    let next = v["next_offset"].as_u64().unwrap();
    assert_eq!(next as usize, MAX_READ_BYTES - 1);
    let v2 = read_page("l.txt", long.as_bytes(), Some(next)).unwrap();
    assert_eq!(v2["content"], "étail");
    assert_eq!(v2["truncated"], false);
    let bin = [0xffu8, 0, 1];
    let v = read_page("b.bin", &bin, None).unwrap();
    assert_eq!(v["encoding"], "base64");
    assert_eq!(v["content"], "/wAB");
}

#[test]
fn workspace_confinement_and_limits() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("w");
    let ws = Workspace::seed(&root, &vec![("dir/a.txt".into(), b"A".to_vec())]).unwrap();
    assert_eq!(std::fs::read(root.join("dir/a.txt")).unwrap(), b"A");
    for bad in [
        "/etc/passwd",
        "\\x",
        "C:/x",
        "../x",
        "a/../../x",
        "",
        ".",
        "a\0b",
    ] {
        assert!(ws.resolve(bad).is_err(), "{bad:?}");
    }
    assert_eq!(ws.resolve("./a//b\\c").unwrap().0, "a/b/c");
    assert_eq!(
        ws.write("n/e/w.txt", b"xy").unwrap(),
        ("n/e/w.txt".into(), 2)
    );
    assert!(ws.write("dir/a.txt/sub", b"x").is_err());
    assert!(
        ws.write("dir", b"x")
            .unwrap_err()
            .to_string()
            .contains("is a directory")
    );
    assert!(
        ws.write("big", &vec![0u8; MAX_WRITE_BYTES + 1])
            .unwrap_err()
            .to_string()
            .contains("at most 4 MiB")
    );
    assert_eq!(
        ws.read("missing").unwrap_err().to_string(),
        "not found: missing"
    );
    assert_eq!(ws.delete("missing").unwrap(), ("missing".into(), false));
    assert_eq!(ws.delete("dir/a.txt").unwrap(), ("dir/a.txt".into(), true));
    #[cfg(unix)]
    {
        let outside = d.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("secret"), b"S").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
        std::os::unix::fs::symlink(outside.join("secret"), root.join("flink")).unwrap();
        assert!(
            ws.read("link/secret")
                .unwrap_err()
                .to_string()
                .contains("symbolic link")
        );
        assert!(
            ws.write("link/new", b"x")
                .unwrap_err()
                .to_string()
                .contains("symbolic link")
        );
        assert!(
            ws.read("flink")
                .unwrap_err()
                .to_string()
                .contains("symbolic link")
        );
        assert!(!outside.join("new").exists());
        // Harvest ignores the links.
        let tree = ws.harvest().unwrap();
        assert_eq!(tree, vec![("n/e/w.txt".to_string(), b"xy".to_vec())]);
    }
    ws.remove();
    assert!(!root.exists());
}

#[test]
fn harvest_limits() {
    let d = tempfile::tempdir().unwrap();
    let ws = Workspace::seed(&d.path().join("w"), &Vec::new()).unwrap();
    // Bypass ws_write's own checks to simulate a shell that wrote too much.
    for i in 0..=MAX_FILES {
        std::fs::write(ws.root().join(format!("f{i}")), b"").unwrap();
    }
    assert_eq!(
        ws.harvest().unwrap_err().to_string(),
        "world-model too large: more than 10000 files"
    );
    assert!(
        ws.write("one-more", b"x")
            .unwrap_err()
            .to_string()
            .contains("10000 files")
    );
    let ws = Workspace::seed(&d.path().join("w"), &Vec::new()).unwrap();
    assert!(
        ws.list().unwrap().is_empty(),
        "seeding clears the directory"
    );
    let f = std::fs::File::create(ws.root().join("huge")).unwrap();
    f.set_len(MAX_TOTAL_BYTES + 1).unwrap();
    assert_eq!(
        ws.harvest().unwrap_err().to_string(),
        "world-model too large: more than 64 MiB in total"
    );
    assert!(
        ws.write("x", b"x")
            .unwrap_err()
            .to_string()
            .contains("64 MiB")
    );
}

#[cfg(target_os = "linux")]
#[test]
fn harvest_rejects_non_utf8_names_and_collisions() {
    use std::os::unix::ffi::OsStrExt;
    let d = tempfile::tempdir().unwrap();
    let ws = Workspace::seed(&d.path().join("w"), &Vec::new()).unwrap();
    let bad = std::ffi::OsStr::from_bytes(b"bad\xff");
    std::fs::write(ws.root().join(bad), b"x").unwrap();
    assert!(
        ws.harvest()
            .unwrap_err()
            .to_string()
            .starts_with("workspace file name is not valid UTF-8: bad")
    );
    let ws = Workspace::seed(&d.path().join("w2"), &Vec::new()).unwrap();
    std::fs::create_dir(ws.root().join("a")).unwrap();
    std::fs::write(ws.root().join("a/b"), b"1").unwrap();
    std::fs::write(ws.root().join("a\\b"), b"2").unwrap();
    assert!(
        ws.harvest()
            .unwrap_err()
            .to_string()
            .starts_with("render produced an invalid file tree: duplicate path")
    );
}

#[test]
fn tool_paths_are_confined_with_a_message_for_the_model() {
    assert_eq!(tool_path("a\\b/./c//d").unwrap(), "a/b/c/d");
    assert_eq!(tool_path("").unwrap_err(), "path is empty");
    assert_eq!(
        tool_path("a\0b").unwrap_err(),
        "path contains a NUL character"
    );
    for abs in ["/etc/passwd", "\\x", "C:x"] {
        assert_eq!(
            tool_path(abs).unwrap_err(),
            format!(
                "path {} is absolute; use a path relative to the workspace",
                Value::String(abs.into())
            )
        );
    }
    assert_eq!(
        tool_path("a/../../b").unwrap_err(),
        "path \"a/../../b\" leaves the workspace (contains '..')"
    );
    assert_eq!(
        tool_path("./.").unwrap_err(),
        "path \"./.\" is empty after normalization"
    );
}
