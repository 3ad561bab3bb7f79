//! A compile cache written against another base URL is used, with a warning.

use super::*;

#[test]
fn a_cache_compiled_elsewhere_is_used_with_a_warning() {
    let fake = FakeProvider::start();
    let a = fake.base_url();
    let Some(p) = project_with(&model_block("openrouter", &a, "")) else {
        return;
    };
    push_compile(&fake);
    let o = reactor(p.path(), &["-q", "compile"], &[]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stderr, "");
    fake.finish();
    // The manifest records the base URL as its last member (provider: cost.provider).
    let manifest_path = p.path().join(".reactor/compile/manifest.json");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
    let keys: Vec<&String> = manifest.as_object().unwrap().keys().collect();
    assert_eq!(keys.last().map(|k| k.as_str()), Some("base_url"));
    assert_eq!(manifest["base_url"], a);
    assert_eq!(manifest["cost"]["provider"], "openrouter");

    // Same endpoint: silent.
    let o = reactor(p.path(), &["compile", "--check"], &[]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));

    // Another endpoint: the cache is still fresh (not part of the key), with a warning.
    let dead = dead_base_url();
    std::fs::write(
        p.path().join("reactor.yml"),
        format!("model:\n{}", model_block("openrouter", &dead, "")),
    )
    .unwrap();
    let warning = format!(
        "reactor: warning: the compile cache was compiled against provider 'openrouter' at {a}, but the configured provider is 'openrouter' at {dead}; the cache is still used (provider and endpoint are not part of its key): run `reactor compile --force` to recompile against the configured one\n"
    );
    let o = reactor(p.path(), &["compile", "--check"], &[]);
    assert_eq!(o.code, 0);
    assert_eq!(o.stderr, warning);
    let o = reactor(p.path(), &["--json", "compile", "--check"], &[]);
    assert_eq!(o.code, 0);
    assert_eq!(o.stderr, warning);
    // The override back to the compiling endpoint silences it.
    let o = reactor(
        p.path(),
        &["compile", "--check"],
        &[("REACTOR_MODEL_BASE_URL", &a)],
    );
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));
    // run and serve warn too (offline: no request can reach the dead endpoint).
    let o = reactor(p.path(), &["--offline", "run"], &[]);
    assert!(o.stderr.starts_with(&warning), "{}", o.stderr);
    let mut c = Command::new(bin());
    c.arg("--project")
        .arg(p.path())
        .args(["--offline", "serve", "--poll-interval", "600000"])
        .env("FAKE_KEY", CANARY);
    for v in SCRUBBED {
        c.env_remove(v);
    }
    let mut serve = crate::host_serve::Serve::spawn(c, false);
    assert_eq!(serve.sigterm_and_wait(), 0);
    assert!(serve.stderr().contains(&warning));
    // serve --json carries it as a `warning` event before `ready`.
    let mut c = Command::new(bin());
    c.arg("--project")
        .arg(p.path())
        .args(["--json", "--offline", "serve", "--poll-interval", "600000"])
        .env("FAKE_KEY", CANARY)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    for v in SCRUBBED {
        c.env_remove(v);
    }
    let mut child = c.spawn().unwrap();
    let mut events: Vec<serde_json::Value> = Vec::new();
    for l in std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap())) {
        let v: serde_json::Value = serde_json::from_str(&l.unwrap()).unwrap();
        let ready = v["event"] == "ready";
        events.push(v);
        if ready {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let message = warning
        .strip_prefix("reactor: warning: ")
        .unwrap()
        .trim_end();
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "warning" && e["message"] == message),
        "{events:?}"
    );

    // Another provider.
    std::fs::write(
        p.path().join("reactor.yml"),
        format!("model:\n{}", model_block("acme", &a, "")),
    )
    .unwrap();
    let o = reactor(p.path(), &["compile", "--check"], &[]);
    assert_eq!(o.code, 0);
    assert!(
        o.stderr.starts_with(&format!(
            "reactor: warning: the compile cache was compiled against provider 'openrouter' at {a}, but the configured provider is 'acme' at {a};"
        )),
        "{}",
        o.stderr
    );

    // A manifest written before the base URL was recorded stays fresh and readable; only a
    // provider change can be told.
    let mut old = manifest.clone();
    old.as_object_mut().unwrap().remove("base_url");
    std::fs::write(
        &manifest_path,
        serde_json::to_string_pretty(&old).unwrap() + "\n",
    )
    .unwrap();
    std::fs::write(
        p.path().join("reactor.yml"),
        format!("model:\n{}", model_block("openrouter", &dead, "")),
    )
    .unwrap();
    let o = reactor(p.path(), &["compile", "--check"], &[]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));
}
