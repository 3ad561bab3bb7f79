//! Workspace seeding and harvesting, with size limits.

use super::*;

/// Wraps a client and snapshots the node's working directory at every call.
struct Probe {
    inner: Arc<dyn ModelClient>,
    dir: PathBuf,
    seen: Mutex<Vec<Vec<String>>>,
}

impl ModelClient for Probe {
    fn complete(&self, req: &ModelRequest) -> Result<ModelResponse, ModelError> {
        self.seen.lock().unwrap().push(files_under(&self.dir));
        self.inner.complete(req)
    }
}

// ---------------------------------------------------------------------------------------------
// Workspace seeding and harvesting

#[test]
fn workspace_is_seeded_with_prior_truth_and_harvested() {
    let root = tempfile::tempdir().unwrap();
    let s = settings(root.path());
    let prior = vec![file("a.txt", "alpha"), file("dir/b.txt", "beta")];
    let fx = Fixture::new(prior.clone());
    let base = base_request(&s, None, &fx, "plain");
    assert!(base.system[2].contains("2 files. It has already been copied into your workspace"));
    let page = |path: &str, content: &str| {
        json!({"path": path, "bytes": content.len(), "encoding": "utf8", "content": content,
               "truncated": false})
    };
    let recs = records(
        &base,
        vec![
            (
                turn(
                    vec![
                        call("l", "wm_list", json!({})),
                        call("r", "ws_read", json!({"path": "dir/b.txt", "offset": null})),
                        call(
                            "m",
                            "wm_read",
                            json!({"path": "missing.txt", "offset": null}),
                        ),
                    ],
                    usage(1, 0, 1),
                ),
                vec![
                    res(
                        "l",
                        json!({"version": tree_version(&prior), "files": [
                            {"path": "a.txt", "bytes": 5}, {"path": "dir/b.txt", "bytes": 4}]}),
                    ),
                    res("r", page("dir/b.txt", "beta")),
                    res_err("m", "not found: missing.txt"),
                ],
            ),
            (
                turn(
                    vec![
                        call(
                            "w",
                            "ws_write",
                            json!({"path": "./new//n.txt", "content": "bmV3", "encoding": "base64"}),
                        ),
                        call("d", "ws_delete", json!({"path": "a.txt"})),
                        call("d2", "ws_delete", json!({"path": "a.txt"})),
                        call(
                            "x",
                            "ws_write",
                            json!({"path": "../escape.txt", "content": "x", "encoding": null}),
                        ),
                        call(
                            "y",
                            "ws_write",
                            json!({"path": "/tmp/abs.txt", "content": "x", "encoding": null}),
                        ),
                        call(
                            "z",
                            "ws_read",
                            json!({"path": "dir/../../x", "offset": null}),
                        ),
                        call("p", "wm_read", json!({"path": "a.txt", "offset": null})),
                        call("q", "ws_list", json!({})),
                    ],
                    usage(1, 0, 1),
                ),
                vec![
                    res("w", json!({"path": "new/n.txt", "bytes": 3})),
                    res("d", json!({"path": "a.txt", "deleted": true})),
                    res("d2", json!({"path": "a.txt", "deleted": false})),
                    res_err(
                        "x",
                        "path \"../escape.txt\" leaves the workspace (contains '..')",
                    ),
                    res_err(
                        "y",
                        "path \"/tmp/abs.txt\" is absolute; use a path relative to the workspace",
                    ),
                    res_err(
                        "z",
                        "path \"dir/../../x\" leaves the workspace (contains '..')",
                    ),
                    res("p", page("a.txt", "alpha")),
                    res(
                        "q",
                        json!({"files": [{"path": "dir/b.txt", "bytes": 4},
                                         {"path": "new/n.txt", "bytes": 3}]}),
                    ),
                ],
            ),
            (
                turn(vec![call("f", "finish", finish_done())], usage(1, 0, 1)),
                vec![],
            ),
        ],
    );
    let dir = work_dir(root.path(), "default", "plain");
    assert_eq!(dir, root.path().join("default").join("706c61696e"));
    let probe = Arc::new(Probe {
        inner: Arc::new(ReplayClient::new(recs)),
        dir: dir.clone(),
        seen: Mutex::new(Vec::new()),
    });
    let p = done(agent(probe.clone(), &s, None).render(&fx.ctx("plain")));
    assert_eq!(
        p.files,
        vec![file("dir/b.txt", "beta"), file("new/n.txt", "new")]
    );
    let seen = probe.seen.lock().unwrap().clone();
    assert_eq!(
        seen[0],
        ["a.txt", "dir/b.txt"],
        "seeded before the first turn"
    );
    assert_eq!(seen[2], ["dir/b.txt", "new/n.txt"]);
    assert!(
        !dir.exists(),
        "the working directory is removed after harvesting"
    );
    assert!(!root.path().join("default").join("escape.txt").exists());
}

#[test]
fn keep_work_keeps_the_directory_and_seeding_clears_stale_files() {
    let root = tempfile::tempdir().unwrap();
    let mut s = settings(root.path());
    s.keep_work = true;
    s.reactor = "second".into();
    let fx = Fixture::new(vec![file("kept.txt", "k")]);
    let base = base_request(&s, None, &fx, "plain");
    let recs = || {
        records(
            &base,
            vec![(
                turn(vec![call("f", "finish", finish_done())], usage(1, 0, 0)),
                vec![],
            )],
        )
    };
    let dir = work_dir(root.path(), "second", "plain");
    done(agent(Arc::new(ReplayClient::new(recs())), &s, None).render(&fx.ctx("plain")));
    assert_eq!(files_under(&dir), ["kept.txt"]);
    std::fs::write(dir.join("stale.txt"), "old").unwrap();
    let probe = Arc::new(Probe {
        inner: Arc::new(ReplayClient::new(recs())),
        dir: dir.clone(),
        seen: Mutex::new(Vec::new()),
    });
    done(agent(probe.clone(), &s, None).render(&fx.ctx("plain")));
    assert_eq!(probe.seen.lock().unwrap()[0], ["kept.txt"]);
    // A failure keeps it too, and removes it without REACTOR_KEEP_WORK.
    let f = failed(agent(Arc::new(OfflineClient), &s, None).render(&fx.ctx("plain")));
    assert_eq!(f.reason, "offline mode: model calls are disabled");
    assert!(dir.exists());
    s.keep_work = false;
    let f = failed(agent(Arc::new(OfflineClient), &s, None).render(&fx.ctx("plain")));
    assert!(f.usage.is_none(), "no turn completed: no usage");
    assert!(!dir.exists());
}

/// A sandbox runner that writes straight into the working directory, bypassing ws_write's
/// checks, as a shell command could.
struct Writer(fn(&Path));

impl SandboxRunner for Writer {
    fn exec(
        &self,
        command: &str,
        cwd: &Path,
        _timeout: Duration,
    ) -> Result<ExecOutput, SandboxError> {
        (self.0)(cwd);
        Ok(ExecOutput {
            exit_code: Some(0),
            stdout: format!("ran {command}").into_bytes(),
            stderr: Vec::new(),
            timed_out: false,
        })
    }
}

#[test]
fn harvest_size_limits_fail_the_render_with_cost() {
    let root = tempfile::tempdir().unwrap();
    let s = settings(root.path());
    let fx = Fixture::new(Vec::new());
    let ran = json!({"exit_code": 0, "stdout": "ran go", "stderr": "", "timed_out": false});
    let f = failed(shell_then_finish(
        &s,
        Arc::new(Writer(|cwd| {
            let f = std::fs::File::create(cwd.join("huge.bin")).unwrap();
            f.set_len(64 * 1024 * 1024 + 1).unwrap();
        })),
        &fx,
        "go",
        ran.clone(),
    ));
    assert_eq!(f.reason, "world-model too large: more than 64 MiB in total");
    assert_eq!(cost(&f.usage), (20, 0));
    let f = failed(shell_then_finish(
        &s,
        Arc::new(Writer(|cwd| {
            for i in 0..10_001 {
                std::fs::write(cwd.join(format!("f{i:05}")), b"").unwrap();
            }
        })),
        &fx,
        "go",
        ran.clone(),
    ));
    assert_eq!(f.reason, "world-model too large: more than 10000 files");
    // Exactly at the limits is fine.
    let p = done(shell_then_finish(
        &s,
        Arc::new(Writer(|cwd| {
            std::fs::create_dir(cwd.join("d")).unwrap();
            std::fs::write(cwd.join("d/x.txt"), b"x").unwrap();
            #[cfg(unix)]
            std::os::unix::fs::symlink("/etc/hostname", cwd.join("link")).unwrap();
        })),
        &fx,
        "go",
        ran,
    ));
    assert_eq!(
        p.files,
        vec![file("d/x.txt", "x")],
        "symbolic links are ignored"
    );
}
