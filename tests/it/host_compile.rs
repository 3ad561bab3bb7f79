//! `reactor compile` and `reactor doctor` end to end (HOST.md §8.2, §8.3, §11.2–§11.4): the real
//! binary as a child process over temporary copies of `../shared/contracts/*`, with its real HTTP
//! clients talking to the loopback fake provider (`model.base_url` → the fake,
//! `model.api_key_env: FAKE_KEY`, `REACTOR_HTTP_BACKOFF_MS=0`).
//!
//! Proven here: every shared project loads; a compile writes the cache (2 nodes, 1 edge
//! `weekly-brief ⟵ competitor-monitor` on `funding`) and prints the compiled report; a second
//! compile is a cache hit with no request and no lock; `--check` exits 0/1 without the network
//! or the lock; `--force` recompiles; model, contract, prompt and artifact changes make the cache
//! stale; a fresh process reloads the cache keylessly with the fake stopped; every provider
//! failure (401, 402, 429, 500, timeout, malformed body, schema-invalid answers) is one line,
//! exit 1, no partial cache and no key anywhere; the wire shapes of both protocols; `init` then
//! `compile --check`; several reactors; and `doctor` (text, JSON, missing key, config error,
//! `--live` ok and failing).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use reactor::compile::load_ir;
use reactor::contract::ContractSet;
use reactor::core::ir::{IngressMode, mount};
use reactor::store::lock::StateLock;
use serde_json::{Value, json};

use crate::support::bin;
use crate::support::fake_provider::{self as fake, Entry, FakeProvider, FakeUsage, Protocol};
use crate::support::smallest::{
    brief_canonicalizer, forme_answer, monitor_canonicalizer, monitor_postconditions,
};

/// The key given to the child. It has none of the shapes the generic redaction recognises, so
/// only exact-value redaction with the configured key keeps it out of every output.
const CANARY: &str = "canary.KEY.5d41402abc4b2a76b9719d911017c592";

/// Variables a child must not inherit.
const SCRUBBED: &[&str] = &[
    "OPENROUTER_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "FAKE_KEY",
    "REACTOR_OFFLINE",
    "REACTOR_ENV_PATH",
    "REACTOR_DEBUG",
    "REACTOR_SKILL_PATH",
    "REACTOR_MODEL_RECORD",
    "REACTOR_MODEL_BASE_URL",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "REACTOR_KEEP_WORK",
];

/// `../shared/contracts`, or `None` (with a loud note) when missing and not required; with
/// `REACTOR_REQUIRE_COMPAT=1` a missing tree fails the test.
fn shared_contracts() -> Option<PathBuf> {
    let d = crate::support::shared_dir().join("contracts");
    if d.join("smallest-project").is_dir() {
        return Some(d);
    }
    if std::env::var("REACTOR_REQUIRE_COMPAT").as_deref() == Ok("1") {
        panic!("{} is missing (REACTOR_REQUIRE_COMPAT=1)", d.display());
    }
    eprintln!(
        "SKIPPED: {} is missing; set up ../shared beside the repository to run this test",
        d.display()
    );
    None
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not one JSON document ({e}):\n{}", self.stdout))
    }
}

/// Runs the binary with `args` and `env` (plus `REACTOR_HTTP_BACKOFF_MS=0`), nothing else
/// inherited from the key variables.
fn reactor(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut cmd = Command::new(bin());
    cmd.args(args).current_dir(cwd);
    for v in SCRUBBED {
        cmd.env_remove(v);
    }
    cmd.env("REACTOR_HTTP_BACKOFF_MS", "0");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run reactor");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

const WITH_KEY: &[(&str, &str)] = &[("FAKE_KEY", CANARY)];

/// A temporary project holding copies of the `.prose.md` files of a shared project, and a
/// `reactor.yml` pointing at `base_url` with `FAKE_KEY`.
struct Proj {
    dir: tempfile::TempDir,
}

impl Proj {
    fn new(shared: &Path, name: &str, provider: &str, base_url: &str) -> Proj {
        let dir = tempfile::tempdir().unwrap();
        for e in std::fs::read_dir(shared.join(name)).unwrap() {
            let e = e.unwrap();
            let n = e.file_name().to_string_lossy().into_owned();
            if n.ends_with(".prose.md") {
                std::fs::copy(e.path(), dir.path().join(&n)).unwrap();
            }
        }
        let p = Proj { dir };
        p.configure(provider, base_url, "compile-model", "");
        p
    }

    fn configure(&self, provider: &str, base_url: &str, compile_model: &str, extra: &str) {
        std::fs::write(
            self.path().join("reactor.yml"),
            format!(
                "state:\n  dir: ./.reactor\nmodel:\n  provider: {provider}\n  base_url: {base_url}\n  api_key_env: FAKE_KEY\n  render_model: render-model\n  compile_model: {compile_model}\n{extra}"
            ),
        )
        .unwrap();
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn state(&self) -> PathBuf {
        self.path().join(".reactor")
    }

    fn arg(&self) -> String {
        self.path().display().to_string()
    }

    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Out {
        let project = self.arg();
        let mut all = vec!["--project", project.as_str()];
        all.extend_from_slice(args);
        reactor(self.path(), &all, env)
    }

    fn fingerprint(&self) -> String {
        ContractSet::load(self.path()).unwrap().fingerprint()
    }

    fn edit_brief(&self) {
        let file = self.path().join("weekly-brief.prose.md");
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(
            &file,
            text.replace("### Goal\n", "### Goal\n\nEvery Monday. "),
        )
        .unwrap();
    }
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p.clone());
                out.insert(p, Vec::new());
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// The key appears in no output and in no file under `dir`.
fn assert_no_key(out: &Out, dir: &Path) {
    assert!(
        !out.stdout.contains(CANARY),
        "key on stdout: {}",
        out.stdout
    );
    assert!(
        !out.stderr.contains(CANARY),
        "key on stderr: {}",
        out.stderr
    );
    for (path, bytes) in snapshot(dir) {
        assert!(
            !String::from_utf8_lossy(&bytes).contains(CANARY),
            "key stored in {}",
            path.display()
        );
    }
}

fn usage(input: u64, cached: u64, output: u64) -> FakeUsage {
    FakeUsage {
        input,
        output,
        cached,
        cache_write: 0,
    }
}

/// The five session purposes of the smallest project, in session order.
const PURPOSES: [&str; 5] = [
    "compile:forme",
    "compile:canonicalizer:competitor-monitor",
    "compile:postcondition:competitor-monitor",
    "compile:canonicalizer:weekly-brief",
    "compile:postcondition:weekly-brief",
];

/// The usage of each scripted answer (Chat: fresh = input − cached + output).
const USAGES: [(u64, u64, u64); 5] = [
    (2000, 0, 300),
    (1500, 1000, 200),
    (1400, 1000, 90),
    (1300, 1000, 80),
    (1200, 1000, 20),
];

fn answers() -> [(Value, &'static str); 5] {
    [
        (forme_answer(), "forme_output"),
        (monitor_canonicalizer(), "canonicalizer_output"),
        (monitor_postconditions(), "postcondition_output"),
        (brief_canonicalizer(), "canonicalizer_output"),
        (json!({"postconditions": []}), "postcondition_output"),
    ]
}

/// A successful compile of the smallest project in `protocol`.
fn script(protocol: Protocol) -> Vec<Entry> {
    answers()
        .into_iter()
        .zip(PURPOSES)
        .zip(USAGES)
        .map(|(((answer, schema), purpose), (i, c, o))| {
            let e = match protocol {
                Protocol::Chat => fake::chat_json(&answer),
                Protocol::Messages => fake::messages_submit(schema, answer),
            };
            e.when_purpose(purpose).with_usage(usage(i, c, o))
        })
        .collect()
}

fn push_all(fake: &FakeProvider, entries: Vec<Entry>) {
    for e in entries {
        fake.push(e);
    }
}

/// The compiled report of the smallest project over Chat Completions.
fn compiled_report(p: &Proj) -> String {
    format!(
        "reactor compile

  status         compiled (sessions ran)
  contract-set   {}
  sdk            reactor-rs/0.2.0
  model          compile-model
  state-dir      {}

  nodes          2
  edges          1
  entry points   (none)
  acyclic        yes

  cost (tokens, surprise_cause: self):
    forme                        fresh=2300 reused=0
    canonicalizer:competitor-monitor fresh=700 reused=1000
    postcondition:competitor-monitor fresh=490 reused=1000
    canonicalizer:weekly-brief   fresh=380 reused=1000
    postcondition:weekly-brief   fresh=220 reused=1000

  total cost     fresh=4090 reused=4000
",
        p.fingerprint(),
        p.state().display()
    )
}

fn cache_hit_report(p: &Proj) -> String {
    format!(
        "reactor compile

  status         cache hit (zero session cost)
  contract-set   {}
  sdk            reactor-rs/0.2.0
  model          compile-model
  state-dir      {}

  nodes          2
  edges          1
  entry points   (none)
  acyclic        yes

  total cost     fresh=0 reused=0
",
        p.fingerprint(),
        p.state().display()
    )
}

const STALE_HINT: &str = "hint: run `reactor compile` (needs a model key) to refresh the cache\n";

// ---------------------------------------------------------------------------------------------
// Loading every shared project; init then --check
// ---------------------------------------------------------------------------------------------

#[test]
fn every_shared_project_loads_and_checks_stale_without_a_key() {
    let Some(shared) = shared_contracts() else {
        return;
    };
    let mut seen = 0;
    for e in std::fs::read_dir(&shared).unwrap() {
        let e = e.unwrap();
        if !e.file_type().unwrap().is_dir() {
            continue;
        }
        seen += 1;
        let name = e.file_name().to_string_lossy().into_owned();
        // A copy of every file (contracts and the project's own reactor.yml).
        let dir = tempfile::tempdir().unwrap();
        for f in std::fs::read_dir(e.path()).unwrap() {
            let f = f.unwrap();
            std::fs::copy(f.path(), dir.path().join(f.file_name())).unwrap();
        }
        let project = dir.path().display().to_string();
        let o = reactor(
            dir.path(),
            &["--project", &project, "compile", "--check"],
            &[],
        );
        assert_eq!(o.code, 1, "{name}: {}", o.stderr);
        assert!(
            o.stdout.contains(
                "  status         STALE (re-compile needed)\n  reason         no compile cache\n"
            ),
            "{name}: {}",
            o.stdout
        );
        assert_eq!(o.stderr, STALE_HINT, "{name}");
        let o = reactor(
            dir.path(),
            &["--project", &project, "--json", "compile", "--check"],
            &[],
        );
        assert_eq!(o.code, 1, "{name}");
        let j = o.json();
        assert_eq!(j["status"], "stale", "{name}");
        assert_eq!(
            j["contract_set_fingerprint"],
            ContractSet::load(dir.path())
                .unwrap()
                .fingerprint()
                .as_str(),
            "{name}"
        );
        let expected_model = match name.as_str() {
            "agent-observatory" => "gpt-5.4",
            _ => "google/gemini-3.5-flash",
        };
        assert_eq!(j["model"], expected_model, "{name}");
        assert_eq!(j["cached"], Value::Null);
        assert!(o.stderr.is_empty(), "{name}: --json omits the hint");
        // --check creates nothing, not even the state directory.
        assert!(!dir.path().join(".reactor").exists(), "{name}");
    }
    assert!(seen >= 4, "only {seen} shared projects");
}

#[test]
fn init_then_check_is_stale_with_the_hint() {
    let d = tempfile::tempdir().unwrap();
    let o = reactor(d.path(), &["init", "demo"], &[]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let o = reactor(d.path(), &["--project", "demo", "compile", "--check"], &[]);
    assert_eq!(o.code, 1);
    let demo = d.path().join("demo");
    assert_eq!(
        o.stdout,
        format!(
            "reactor compile

  status         STALE (re-compile needed)
  reason         no compile cache
  contract-set   {}
  sdk            reactor-rs/0.2.0
  model          google/gemini-3.5-flash
  state-dir      {}

  total cost     fresh=0 reused=0
",
            ContractSet::load(&demo).unwrap().fingerprint(),
            demo.join(".reactor").display()
        )
    );
    assert_eq!(o.stderr, STALE_HINT);
    // Without --check the same stale project needs the key (none here).
    let o = reactor(d.path(), &["--project", "demo", "compile"], &[]);
    assert_eq!(o.code, 1);
    assert_eq!(
        o.stderr,
        format!(
            "reactor: error: the configured 'openrouter' provider needs OPENROUTER_API_KEY, but it is not set in the environment or in {}\nhint: set OPENROUTER_API_KEY, or change model.provider / model.api_key_env in reactor.yml\nhint: run `reactor doctor` to check the environment\n",
            demo.join(".env").display()
        )
    );
    // Offline: the spec'd refusal, and nothing is created.
    let o = reactor(
        d.path(),
        &["--project", "demo", "--offline", "compile"],
        &[],
    );
    assert_eq!(o.code, 1);
    assert_eq!(
        o.stderr,
        "reactor: error: the compile cache is stale (no compile cache) and offline mode forbids model calls\n"
    );
    assert!(!demo.join(".reactor").exists());
    // --check with --force is a usage error.
    let o = reactor(
        d.path(),
        &[
            "--project",
            "demo",
            "--json",
            "compile",
            "--check",
            "--force",
        ],
        &[],
    );
    assert_eq!(o.code, 2);
    assert_eq!(
        o.json()["message"],
        "--check and --force cannot be used together; hint: try 'reactor compile --help'"
    );
    // No contracts.
    let empty = tempfile::tempdir().unwrap();
    let o = reactor(empty.path(), &["compile", "--check"], &[]);
    assert_eq!(o.code, 1);
    assert_eq!(
        o.stderr,
        format!(
            "reactor: error: no .prose.md contracts found under {}\n",
            reactor::host::project::absolute(empty.path()).display()
        )
    );
}

// ---------------------------------------------------------------------------------------------
// Compile, cache hit, --check, --force, staleness, keyless reload
// ---------------------------------------------------------------------------------------------

#[test]
fn compile_writes_the_cache_then_hits_checks_forces_and_reloads_keylessly() {
    let Some(shared) = shared_contracts() else {
        return;
    };
    let fake = FakeProvider::with_entries(script(Protocol::Chat));
    let p = Proj::new(&shared, "smallest-project", "openrouter", &fake.base_url());

    // 1. The fresh compile. stderr is not a terminal: one plain progress line per finished
    // session, with its tokens (issue 8 item 2).
    let o = p.run(&["compile"], WITH_KEY);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout, compiled_report(&p));
    let lines: Vec<&str> = o.stderr.lines().collect();
    let expected = [
        ("1/5 forme", 2300, 0),
        ("2/5 canonicalizer:competitor-monitor", 700, 1000),
        ("3/5 postcondition:competitor-monitor", 490, 1000),
        ("4/5 canonicalizer:weekly-brief", 380, 1000),
        ("5/5 postcondition:weekly-brief", 220, 1000),
    ];
    assert_eq!(lines.len(), expected.len(), "{}", o.stderr);
    for (line, (what, fresh, reused)) in lines.iter().zip(expected) {
        let (head, tail) = line
            .split_once(" done in ")
            .unwrap_or_else(|| panic!("{line}"));
        assert_eq!(head, format!("reactor: compile: session {what}"));
        assert!(
            tail.ends_with(&format!("s (fresh={fresh} reused={reused})")),
            "{line}"
        );
    }
    assert_no_key(&o, p.path());
    let requests = fake.requests();
    assert_eq!(requests.len(), 5);

    // The wire: Chat Completions with a bearer key and a json_schema response format.
    let schemas = [
        "forme_output",
        "canonicalizer_output",
        "postcondition_output",
        "canonicalizer_output",
        "postcondition_output",
    ];
    for ((r, purpose), schema) in requests.iter().zip(PURPOSES).zip(schemas) {
        assert_eq!(r.method, "POST");
        assert_eq!(r.path, "/v1/chat/completions");
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {CANARY}").as_str())
        );
        assert_eq!(r.header("x-api-key"), None);
        assert_eq!(r.header("anthropic-version"), None);
        assert_eq!(r.header("x-reactor-purpose"), Some(purpose));
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(r.header("user-agent"), Some("reactor/0.2.0"));
        assert_eq!(r.header("x-title"), Some("reactor"));
        let body = r.json();
        assert_eq!(body["model"], "compile-model");
        assert_eq!(body["stream"], false);
        assert!(body.get("temperature").is_none());
        assert!(body.get("reasoning_effort").is_none());
        assert!(body.get("tools").is_none());
        let rf = &body["response_format"];
        assert_eq!(rf["type"], "json_schema");
        assert_eq!(rf["json_schema"]["name"], schema);
        assert_eq!(rf["json_schema"]["strict"], true);
        assert_eq!(rf["json_schema"]["schema"]["type"], "object");
        assert_eq!(rf["json_schema"]["schema"]["additionalProperties"], false);
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[0]["role"], "system");
        assert_eq!(
            messages[0]["content"].as_str().unwrap(),
            format!(
                "{}\n\n---\n\n{}",
                reactor::agent::prompt::EMBEDDED_SYSTEM_PROMPT.trim_end(),
                reactor::compile::prompts::PREAMBLE.trim_end()
            )
        );
        assert_eq!(messages[1]["role"], "user");
        assert_eq!(
            messages[1]["content"],
            requests[0].json()["messages"][1]["content"]
        );
    }

    // The cache on disk: 2 nodes, 1 edge weekly-brief ⟵ competitor-monitor on funding.
    let topo: Value =
        serde_json::from_slice(&std::fs::read(p.state().join("compile/topology.json")).unwrap())
            .unwrap();
    let t = &topo["topology"];
    assert_eq!(
        t["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["node"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["competitor-monitor", "weekly-brief"]
    );
    assert_eq!(
        t["edges"],
        json!([{"subscriber": "weekly-brief", "producer": "competitor-monitor", "facet": "funding"}])
    );
    assert_eq!(t["acyclic"], true);
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(p.state().join("compile/manifest.json")).unwrap())
            .unwrap();
    assert_eq!(
        manifest["contract_set_fingerprint"],
        p.fingerprint().as_str()
    );
    assert_eq!(manifest["sdk_version"], "reactor-rs/0.2.0");
    assert_eq!(manifest["model"], "compile-model");
    assert_eq!(
        manifest["cost"],
        json!({"provider": "openrouter", "model": "compile-model",
               "tokens": {"fresh": 4090, "reused": 4000}, "surprise_cause": "self"})
    );
    assert_eq!(
        (manifest["nodes"].as_u64(), manifest["edges"].as_u64()),
        (Some(2), Some(1))
    );
    // The writer recorded its pid in .lock (and released it on exit).
    let lock = std::fs::read_to_string(p.state().join(".lock")).unwrap();
    assert!(
        lock.ends_with('\n') && lock.trim().parse::<u32>().is_ok(),
        "{lock:?}"
    );

    // 2. A second compile is a cache hit: no request, no lock. Hold the lock here to prove it.
    let compile_dir = snapshot(&p.state().join("compile"));
    let held = StateLock::acquire(&p.state()).expect("lock free after the compile exited");
    let o = p.run(&["compile"], WITH_KEY);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout, cache_hit_report(&p));
    let o = p.run(&["--json", "compile"], WITH_KEY);
    assert_eq!(o.code, 0);
    let j = o.json();
    assert_eq!(j["status"], "cache-hit");
    assert_eq!(j["cost"], json!({"fresh": 0, "reused": 0}));
    assert_eq!(j["step_costs"], json!([]));
    assert_eq!(j["diagnostics"], json!([]));
    assert_eq!(
        (j["nodes"].as_u64(), j["edges"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(j["entry_points"], json!([]));
    assert_eq!(j["acyclic"], true);
    assert!(j.get("reason").is_none() && j.get("cached").is_none());
    // --check: fresh → the cache-hit report, exit 0, no key needed.
    let o = p.run(&["compile", "--check"], &[]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout, cache_hit_report(&p));
    assert_eq!(o.stderr, "");
    // --force needs the lock: another writer holds it.
    let o = p.run(&["compile", "--force"], WITH_KEY);
    assert_eq!(o.code, 1);
    assert_eq!(
        o.stderr,
        format!(
            "reactor: error: state dir {} is in use by another writer (pid {})\nhint: stop that process first, or use `reactor trigger` to reach a running daemon\n",
            p.state().display(),
            std::process::id()
        )
    );
    drop(held);
    assert_eq!(
        fake.request_count(),
        5,
        "a cache hit and --check send nothing"
    );
    assert_eq!(snapshot(&p.state().join("compile")), compile_dir);

    // 3. --check never touches the network, even with an unreachable base_url; changing the
    //    compile model or any contract makes the cache stale.
    p.configure("openrouter", "http://127.0.0.1:9/v1", "compile-model", "");
    let o = p.run(&["compile", "--check"], WITH_KEY);
    assert_eq!(
        o.code, 0,
        "the base URL is not part of the key: {}",
        o.stdout
    );
    p.configure("openrouter", "http://127.0.0.1:9/v1", "another-model", "");
    let o = p.run(&["compile", "--check"], WITH_KEY);
    assert_eq!(o.code, 1);
    assert!(
        o.stdout
            .contains("  reason         compile model changed\n"),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains("  model          another-model\n"));
    assert_eq!(o.stderr, STALE_HINT);
    let o = p.run(&["--json", "compile", "--check"], &[]);
    assert_eq!(o.code, 1);
    let j = o.json();
    assert_eq!(j["status"], "stale");
    assert_eq!(j["reason"], "compile model changed");
    assert_eq!(j["model"], "another-model");
    assert_eq!(
        j["cached"],
        json!({"contract_set_fingerprint": p.fingerprint(), "sdk_version": "reactor-rs/0.2.0",
               "model": "compile-model"})
    );
    assert_eq!(
        (j["nodes"].as_u64(), j["edges"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(j["acyclic"], true);
    // A replaced system prompt changes the SDK version.
    p.configure("openrouter", "http://127.0.0.1:9/v1", "compile-model", "");
    let skill = p.path().join("SKILL.md");
    std::fs::write(&skill, "A replacement system prompt.\n").unwrap();
    let o = p.run(
        &["--json", "compile", "--check"],
        &[("REACTOR_SKILL_PATH", skill.to_str().unwrap())],
    );
    assert_eq!(o.code, 1);
    assert_eq!(o.json()["reason"], "reactor version changed");
    assert!(
        o.json()["sdk_version"]
            .as_str()
            .unwrap()
            .starts_with("reactor-rs/0.2.0+skill.")
    );
    // A deleted artifact.
    let monitor = format!(
        "compile/nodes/{}.json",
        reactor::format::address::hex(b"competitor-monitor")
    );
    let saved = std::fs::read(p.state().join(&monitor)).unwrap();
    std::fs::remove_file(p.state().join(&monitor)).unwrap();
    let o = p.run(&["--json", "compile", "--check"], &[]);
    assert_eq!(o.code, 1);
    assert_eq!(
        o.json()["reason"],
        format!("cache incomplete: {monitor} missing")
    );
    std::fs::write(p.state().join(&monitor), &saved).unwrap();
    // A contract edit.
    let original = std::fs::read(p.path().join("weekly-brief.prose.md")).unwrap();
    p.edit_brief();
    let o = p.run(&["compile", "--check"], &[]);
    assert_eq!(o.code, 1);
    assert!(
        o.stdout.contains("  reason         contract set changed\n"),
        "{}",
        o.stdout
    );
    std::fs::write(p.path().join("weekly-brief.prose.md"), &original).unwrap();
    assert_eq!(p.run(&["compile", "--check"], &[]).code, 0);
    assert_eq!(fake.request_count(), 5);

    // 4. --force recompiles (JSON report), even over a fresh cache.
    p.configure("openrouter", &fake.base_url(), "compile-model", "");
    push_all(&fake, script(Protocol::Chat));
    let o = p.run(&["--json", "compile", "--force"], WITH_KEY);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(fake.request_count(), 10);
    let j = o.json();
    assert_eq!(j["status"], "compiled");
    assert_eq!(j["contract_set_fingerprint"], p.fingerprint().as_str());
    assert_eq!(j["sdk_version"], "reactor-rs/0.2.0");
    assert_eq!(j["model"], "compile-model");
    assert_eq!(
        (j["nodes"].as_u64(), j["edges"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(j["entry_points"], json!([]));
    assert_eq!(j["acyclic"], true);
    assert_eq!(j["diagnostics"], json!([]));
    assert_eq!(j["lints"], json!([]));
    assert_eq!(j["cost"], json!({"fresh": 4090, "reused": 4000}));
    assert_eq!(
        j["step_costs"],
        json!([
            {"step": "forme", "fresh": 2300, "reused": 0},
            {"step": "canonicalizer", "node": "competitor-monitor", "fresh": 700, "reused": 1000},
            {"step": "postcondition", "node": "competitor-monitor", "fresh": 490, "reused": 1000},
            {"step": "canonicalizer", "node": "weekly-brief", "fresh": 380, "reused": 1000},
            {"step": "postcondition", "node": "weekly-brief", "fresh": 220, "reused": 1000}
        ])
    );
    assert_eq!(j["state_dir"], p.state().display().to_string());
    assert_no_key(&o, p.path());
    fake.finish();

    // 5. A fresh process reloads the cache keylessly with the fake stopped.
    let o = p.run(&["status"], &[]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.contains("  compiled       yes (fresh)\n"),
        "{}",
        o.stdout
    );
    let o = p.run(&["topology"], &[]);
    assert_eq!(o.code, 0);
    assert!(
        o.stdout
            .contains("  edges:\n    competitor-monitor.funding -> weekly-brief\n"),
        "{}",
        o.stdout
    );
    let o = p.run(&["compile"], &[]);
    assert_eq!(
        (o.code, o.stdout.clone()),
        (0, cache_hit_report(&p)),
        "{}",
        o.stderr
    );
    let o = p.run(&["--offline", "compile"], &[]);
    assert_eq!(o.code, 0, "a cache hit needs neither key nor network");
    // … and the loaded rules fingerprint a world-model (library level, same files).
    let loaded = load_ir(&p.state()).expect("keyless load of the CLI-written cache");
    let ir = loaded.ir.to_ir();
    let mounted = mount(&ir, IngressMode::Host).expect("mounts");
    assert_eq!(mounted.nodes, ["competitor-monitor", "weekly-brief"]);
    let rules = &ir.nodes["competitor-monitor"].rules;
    let truth = |v: Value| vec![("truth.json".to_string(), v.to_string().into_bytes())];
    let a = truth(json!({"fetched_at": "t1", "funding": [
        {"round": "Series  A", "amount": 5, "date": "2026-01-02", "request_id": "r1"},
        {"round": "seed", "amount": 1, "date": "2025-03-01"}]}));
    let b = truth(json!({"fetched_at": "t2", "funding": [
        {"round": "seed", "amount": 1, "date": "2025-03-01", "request_id": "r9"},
        {"round": "series a", "amount": 5, "date": "2026-01-02"}]}));
    let c = truth(json!({"funding": [
        {"round": "seed", "amount": 2, "date": "2025-03-01"},
        {"round": "series a", "amount": 5, "date": "2026-01-02"}]}));
    let fa = rules.fingerprint(&a, "sha256:a").unwrap().0;
    assert_eq!(fa, rules.fingerprint(&b, "sha256:b").unwrap().0);
    assert_ne!(
        fa.get("funding"),
        rules.fingerprint(&c, "sha256:c").unwrap().0.get("funding")
    );
}

#[test]
fn compile_over_anthropic_messages_uses_forced_submit_tools() {
    let Some(shared) = shared_contracts() else {
        return;
    };
    let fake = FakeProvider::with_entries(script(Protocol::Messages));
    let p = Proj::new(&shared, "smallest-project", "anthropic", &fake.base_url());
    let o = p.run(&["compile"], WITH_KEY);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout
            .contains("  status         compiled (sessions ran)\n")
    );
    // Messages: fresh = input + cache writes + output, reused = cache reads.
    assert!(
        o.stdout
            .contains("    canonicalizer:competitor-monitor fresh=1700 reused=1000\n"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .contains("  total cost     fresh=8090 reused=4000\n")
    );
    assert_no_key(&o, p.path());
    let requests = fake.requests();
    fake.finish();
    let schemas = [
        "forme_output",
        "canonicalizer_output",
        "postcondition_output",
        "canonicalizer_output",
        "postcondition_output",
    ];
    assert_eq!(requests.len(), 5);
    for ((r, purpose), schema) in requests.iter().zip(PURPOSES).zip(schemas) {
        assert_eq!(r.method, "POST");
        assert_eq!(r.path, "/v1/messages");
        assert_eq!(r.header("x-api-key"), Some(CANARY));
        assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(r.header("authorization"), None);
        assert_eq!(r.header("x-title"), None);
        assert_eq!(r.header("x-reactor-purpose"), Some(purpose));
        let body = r.json();
        assert_eq!(body["model"], "compile-model");
        assert_eq!(body["max_tokens"], 16384);
        assert!(body.get("response_format").is_none());
        assert!(body.get("stream").is_none());
        let tool = format!("submit_{schema}");
        assert_eq!(body["tools"].as_array().unwrap().len(), 1);
        assert_eq!(body["tools"][0]["name"], tool.as_str());
        assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
        assert_eq!(body["tool_choice"], json!({"type": "tool", "name": tool}));
        assert_eq!(
            body["system"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert_eq!(
            body["system"][1]["text"],
            reactor::compile::prompts::PREAMBLE.trim_end()
        );
        let content = body["messages"][0]["content"].as_array().unwrap();
        assert_eq!(content.len(), 2);
    }
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(p.state().join("compile/manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["cost"]["provider"], "anthropic");
}

// ---------------------------------------------------------------------------------------------
// Failures: one line, exit 1, no partial cache, no key
// ---------------------------------------------------------------------------------------------

struct Failure {
    label: &'static str,
    protocol: Protocol,
    entries: Vec<Entry>,
    env: Vec<(&'static str, &'static str)>,
    /// Extra `model:` lines of reactor.yml.
    yml: &'static str,
    /// The message after `reactor: error: compile failed: ` (`{base}` = the fake's base URL).
    message: String,
    /// A prefix is enough (transport errors carry the OS wording).
    prefix_only: bool,
    spent: (u64, u64),
    requests: usize,
}

fn forme_ok() -> Entry {
    fake::chat_json(&forme_answer())
        .when_purpose("compile:forme")
        .with_usage(usage(2000, 0, 300))
}

fn failures() -> Vec<Failure> {
    let chat = Protocol::Chat;
    let many = |e: fn() -> Entry| (0..4).map(|_| e()).collect::<Vec<_>>();
    vec![
        Failure {
            label: "401",
            protocol: chat,
            entries: vec![fake::error_401(chat).when_purpose("compile:forme")],
            env: vec![],
            yml: "",
            message: "openrouter rejected the key in FAKE_KEY (HTTP 401): check FAKE_KEY".into(),
            prefix_only: false,
            spent: (0, 0),
            requests: 1,
        },
        Failure {
            label: "401 anthropic",
            protocol: Protocol::Messages,
            entries: vec![fake::error_401(Protocol::Messages)],
            env: vec![],
            yml: "",
            message: "anthropic rejected the key in FAKE_KEY (HTTP 401): check FAKE_KEY".into(),
            prefix_only: false,
            spent: (0, 0),
            requests: 1,
        },
        Failure {
            label: "402 after forme",
            protocol: chat,
            entries: vec![
                forme_ok(),
                fake::error_402(chat).when_purpose("compile:canonicalizer:competitor-monitor"),
            ],
            env: vec![],
            yml: "",
            message: "insufficient credits on the openrouter account behind FAKE_KEY (HTTP 402): top it up".into(),
            prefix_only: false,
            spent: (2300, 0),
            requests: 2,
        },
        Failure {
            label: "429 retried",
            protocol: chat,
            entries: {
                let mut v = vec![fake::error_429(chat, Some("0"))];
                v.extend((0..3).map(|_| fake::error_429(chat, None)));
                v
            },
            env: vec![],
            yml: "",
            message: "rate limited by openrouter (HTTP 429) after 4 attempts: retry shortly or lower --concurrency".into(),
            prefix_only: false,
            spent: (0, 0),
            requests: 4,
        },
        Failure {
            label: "500 retried",
            protocol: chat,
            entries: many(|| fake::error_500(Protocol::Chat)),
            env: vec![],
            yml: "",
            message: "openrouter unavailable (HTTP 500) after 4 attempts".into(),
            prefix_only: false,
            spent: (0, 0),
            requests: 4,
        },
        Failure {
            label: "timeout",
            protocol: chat,
            // A timed-out attempt is retried once, then the call ends (issue 8 item 4).
            entries: (0..2)
                .map(|_| fake::chat_json(&forme_answer()).delayed(Duration::from_millis(1500)))
                .collect(),
            env: vec![],
            yml: "  timeout: 250ms\n",
            message: "openrouter accepted the request at {base} but sent no complete response within 250 ms (2 attempts): check the endpoint, or raise model.timeout in reactor.yml".into(),
            prefix_only: false,
            spent: (0, 0),
            requests: 2,
        },
        Failure {
            label: "malformed body",
            protocol: chat,
            entries: vec![fake::malformed(chat, "<html>gateway says {{key}}</html>")],
            env: vec![],
            yml: "",
            message: "unexpected response from openrouter: ".into(),
            prefix_only: true,
            spent: (0, 0),
            requests: 1,
        },
        Failure {
            label: "schema-invalid answers",
            protocol: chat,
            // Three answers (the first plus two repair turns) that fail the schema; each quotes
            // the key back, to prove the error list is redacted.
            entries: (0..3)
                .map(|_| {
                    fake::chat_text(
                        r#"{"nodes": [{"id": "{{key}}", "kind": "responsibility", "wake_source": "self", "requires": [], "maintains": []}], "matches": []}"#,
                    )
                        .when_purpose("compile:forme")
                        .with_usage(usage(100, 0, 10))
                })
                .collect(),
            env: vec![],
            yml: "",
            message: "the forme answer is still invalid after 2 repair turns: ".into(),
            prefix_only: true,
            spent: (330, 0),
            requests: 3,
        },
    ]
}

#[test]
fn provider_failures_exit_1_leave_no_partial_cache_and_never_leak_the_key() {
    let Some(shared) = shared_contracts() else {
        return;
    };
    // A project with a previous cache, compiled once.
    let base_fake = FakeProvider::with_entries(script(Protocol::Chat));
    let base = Proj::new(
        &shared,
        "smallest-project",
        "openrouter",
        &base_fake.base_url(),
    );
    assert_eq!(base.run(&["compile"], WITH_KEY).code, 0);
    base_fake.finish();

    for (i, f) in failures().into_iter().enumerate() {
        let fake = FakeProvider::with_entries(f.entries);
        let provider = match f.protocol {
            Protocol::Chat => "openrouter",
            Protocol::Messages => "anthropic",
        };
        // Case 0 starts from nothing; the others from a copy of the compiled project whose
        // contract was then edited (so the previous cache is stale and must stand).
        let p = if i == 0 {
            Proj::new(&shared, "smallest-project", provider, &fake.base_url())
        } else {
            let p = Proj::new(&shared, "smallest-project", provider, &fake.base_url());
            copy_tree(&base.state(), &p.state());
            p.edit_brief();
            p
        };
        if !f.yml.is_empty() {
            p.configure(provider, &fake.base_url(), "compile-model", f.yml);
        }
        let before = snapshot(&p.state().join("compile"));
        let mut env = f.env.clone();
        env.push(("FAKE_KEY", CANARY));
        let json_mode = i % 2 == 1;
        let args: &[&str] = if json_mode {
            &["--json", "compile"]
        } else {
            &["-q", "compile"]
        };
        let o = p.run(args, &env);
        let label = f.label;
        if label == "schema-invalid answers" {
            // The error list quotes the model's answer, key included: redacted by value.
            assert!(
                o.stderr
                    .contains("$.nodes[0].id: '[redacted]' is not a loaded contract"),
                "{}",
                o.stderr
            );
        }
        assert_eq!(o.code, 1, "{label}: {}{}", o.stdout, o.stderr);
        let message = f.message.replace("{base}", &fake.base_url());
        let lines: Vec<&str> = o.stderr.lines().collect();
        // The spent-tokens hint only when a token was spent (issue 8 item 7).
        let spent_any = f.spent != (0, 0);
        assert_eq!(
            lines.len(),
            if spent_any { 2 } else { 1 },
            "{label}: {}",
            o.stderr
        );
        let first = format!("reactor: error: compile failed: {message}");
        if f.prefix_only {
            assert!(lines[0].starts_with(&first), "{label}: {}", lines[0]);
            assert!(lines[0].len() > first.len(), "{label}: a detail follows");
        } else {
            assert_eq!(lines[0], first, "{label}");
        }
        if spent_any {
            assert_eq!(
                lines[1],
                format!(
                    "hint: tokens already spent: fresh={} reused={}",
                    f.spent.0, f.spent.1
                ),
                "{label}"
            );
        }
        assert!(!o.stderr.contains("fresh=0 reused=0"), "{label}");
        if json_mode {
            let j = o.json();
            assert_eq!(j["status"], "error");
            assert_eq!(j["ok"], false);
            let m = j["message"].as_str().unwrap();
            assert!(
                m.starts_with(&format!("compile failed: {message}")),
                "{label}: {m}"
            );
            assert_eq!(
                m.ends_with(&format!(
                    "; hint: tokens already spent: fresh={} reused={}",
                    f.spent.0, f.spent.1
                )),
                spent_any,
                "{label}: {m}"
            );
        } else {
            assert_eq!(o.stdout, "", "{label}");
        }
        assert_eq!(fake.request_count(), f.requests, "{label}");
        if i == 0 {
            assert!(
                !p.state().join("compile").exists(),
                "{label}: no cache at all"
            );
        } else {
            assert_eq!(
                snapshot(&p.state().join("compile")),
                before,
                "{label}: cache untouched"
            );
            assert!(!before.is_empty());
        }
        assert_no_key(&o, p.path());
        fake.finish();
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

#[test]
fn a_retried_500_then_an_answer_compiles() {
    let Some(shared) = shared_contracts() else {
        return;
    };
    let mut entries = vec![fake::error_500(Protocol::Chat).when_purpose("compile:forme")];
    entries.extend(script(Protocol::Chat));
    let fake = FakeProvider::with_entries(entries);
    let p = Proj::new(&shared, "smallest-project", "openrouter", &fake.base_url());
    let o = p.run(&["compile"], WITH_KEY);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout, compiled_report(&p));
    assert_eq!(fake.request_count(), 6);
    assert_no_key(&o, p.path());
    fake.finish();
}

// ---------------------------------------------------------------------------------------------
// Several reactors
// ---------------------------------------------------------------------------------------------

#[test]
fn several_reactors_report_each_and_exit_with_the_worst() {
    let Some(shared) = shared_contracts() else {
        return;
    };
    let fake = FakeProvider::with_entries(script(Protocol::Chat));
    let d = tempfile::tempdir().unwrap();
    for sub in ["alpha", "beta"] {
        std::fs::create_dir(d.path().join(sub)).unwrap();
    }
    for e in std::fs::read_dir(shared.join("smallest-project")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), d.path().join("alpha").join(e.file_name())).unwrap();
    }
    std::fs::write(
        d.path().join("reactor.yml"),
        format!(
            "model:\n  provider: openrouter\n  base_url: {}\n  api_key_env: FAKE_KEY\n  render_model: r\n  compile_model: compile-model\nreactors:\n  - name: alpha\n    project: ./alpha\n  - name: beta\n    project: ./beta\n",
            fake.base_url()
        ),
    )
    .unwrap();
    let project = d.path().display().to_string();
    let run = |args: &[&str]| {
        let mut all = vec!["--project", project.as_str()];
        all.extend_from_slice(args);
        reactor(d.path(), &all, WITH_KEY)
    };
    // beta has no contracts: alpha compiles, beta fails, exit 1.
    let o = run(&["--quiet", "compile"]);
    assert_eq!(o.code, 1);
    assert!(
        o.stdout.starts_with(
            "reactor compile\n\n  reactor        alpha\n  status         compiled (sessions ran)\n"
        ),
        "{}",
        o.stdout
    );
    assert_eq!(
        o.stderr,
        format!(
            "reactor: error: reactor 'beta': no .prose.md contracts found under {}\n",
            d.path().join("beta").display()
        )
    );
    assert_eq!(fake.request_count(), 5);
    // Give beta the same contracts: --check reports alpha fresh and beta stale (worst: 1).
    for e in std::fs::read_dir(shared.join("smallest-project")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), d.path().join("beta").join(e.file_name())).unwrap();
    }
    let o = run(&["--json", "compile", "--check"]);
    assert_eq!(o.code, 1);
    let j = o.json();
    let reports = j["reactors"].as_array().unwrap();
    assert_eq!(reports.len(), 2);
    assert_eq!(
        (
            reports[0]["reactor"].as_str(),
            reports[0]["status"].as_str()
        ),
        (Some("alpha"), Some("cache-hit"))
    );
    assert_eq!(
        (
            reports[1]["reactor"].as_str(),
            reports[1]["status"].as_str()
        ),
        (Some("beta"), Some("stale"))
    );
    assert_eq!(
        reports[1]["state_dir"],
        d.path().join(".reactor/beta").display().to_string()
    );
    // --reactor picks one.
    let o = run(&["--reactor", "alpha", "compile", "--check"]);
    assert_eq!(o.code, 0);
    assert!(
        o.stdout
            .contains("  reactor        alpha\n  status         cache hit (zero session cost)\n")
    );
    // Compile beta too: both reports, exit 0.
    push_all(&fake, script(Protocol::Chat));
    let o = run(&["compile"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout.matches("reactor compile\n").count(), 2);
    assert!(
        o.stdout
            .contains("  reactor        beta\n  status         compiled (sessions ran)\n")
    );
    assert_eq!(fake.request_count(), 10);
    fake.finish();
}

// ---------------------------------------------------------------------------------------------
// doctor
// ---------------------------------------------------------------------------------------------

fn doctor_report(p: &Proj, base_url: &str, key: &str, state: &str, ir: &str, tail: &str) -> String {
    format!(
        "reactor doctor

  version        reactor 0.2.0
  config         {} (ok)
  provider       openrouter (chat-completions, {base_url})
  sources        provider reactor.yml, base_url reactor.yml, api_key_env reactor.yml, render_model reactor.yml, compile_model reactor.yml
  live key       {key}
  offline mode   not forced
  system prompt  embedded
  sandbox        mode none
  state dir      {} {state}
  writer         none
  compiled IR    {ir}
{tail}",
        p.path().join("reactor.yml").display(),
        p.state().display(),
    )
}

#[test]
fn doctor_reports_text_and_json() {
    let Some(shared) = shared_contracts() else {
        return;
    };
    let fake = FakeProvider::with_entries(script(Protocol::Chat));
    let p = Proj::new(&shared, "smallest-project", "openrouter", &fake.base_url());
    let base = fake.base_url();

    // Before any compile: nothing is created by doctor.
    let o = p.run(&["doctor"], WITH_KEY);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        o.stdout,
        doctor_report(
            &p,
            &base,
            "present (FAKE_KEY)",
            "(absent; parent writable)",
            "not compiled — run `reactor compile`",
            "\n  status: healthy-for-offline\n  live:   ready\n"
        )
    );
    assert!(!p.state().exists(), "doctor creates nothing");

    // A fresh compiled project.
    assert_eq!(p.run(&["compile"], WITH_KEY).code, 0);
    let o = p.run(&["doctor"], WITH_KEY);
    assert_eq!(o.code, 0);
    let expected = |key: &str, tail: &str| {
        doctor_report(
            &p,
            &base,
            key,
            "(writable)",
            "fresh (2 nodes, 1 edges)",
            tail,
        )
    };
    assert_eq!(
        o.stdout,
        expected(
            "present (FAKE_KEY)",
            "\n  status: healthy-for-offline\n  live:   ready\n"
        )
    );
    let o = p.run(&["--json", "doctor"], WITH_KEY);
    assert_eq!(o.code, 0);
    let j = o.json();
    assert_eq!(
        j,
        json!({
            "version": "0.2.0",
            "config": {"path": p.path().join("reactor.yml").display().to_string(),
                       "present": true, "ok": true},
            "provider": "openrouter",
            "transport": "chat-completions",
            "baseUrl": base,
            "apiKeyEnv": "FAKE_KEY",
            "endpoint": format!("{base}/chat/completions"),
            "sources": {"provider": "reactor.yml", "base_url": "reactor.yml",
                        "api_key_env": "reactor.yml", "render_model": "reactor.yml",
                        "compile_model": "reactor.yml"},
            "liveKeyPresent": true,
            "offlineForced": false,
            "systemPrompt": {"source": "embedded", "ok": true},
            "sandbox": {"mode": "none"},
            "stateDir": {"path": p.state().display().to_string(), "exists": true, "writable": true},
            "writer": null,
            "ir": {"freshness": "fresh", "contracts": 2, "nodes": 2, "edges": 1},
            "notes": [],
            "healthyForOffline": true,
            "healthyForLive": true
        })
    );

    // A missing key: healthy for offline, not ready for live.
    let o = p.run(&["doctor"], &[]);
    assert_eq!(o.code, 0);
    assert_eq!(
        o.stdout,
        expected(
            "absent (FAKE_KEY)",
            "\n  status: healthy-for-offline\n  live:   not ready — no key in FAKE_KEY\n"
        )
    );
    let j = p.run(&["--json", "doctor"], &[]).json();
    assert_eq!(
        (
            &j["liveKeyPresent"],
            &j["healthyForOffline"],
            &j["healthyForLive"]
        ),
        (&json!(false), &json!(true), &json!(false))
    );
    // The key in the project's .env counts (the clients' lookup), and is never printed.
    std::fs::write(
        p.path().join(".env"),
        format!("export FAKE_KEY=\"{CANARY}\"\n"),
    )
    .unwrap();
    let o = p.run(&["doctor"], &[]);
    assert!(o.stdout.contains("  live key       present (FAKE_KEY)\n"));
    assert!(!o.stdout.contains(CANARY));
    std::fs::remove_file(p.path().join(".env")).unwrap();

    // A stale cache, the current writer and the offline switch.
    let original = std::fs::read(p.path().join("weekly-brief.prose.md")).unwrap();
    p.edit_brief();
    let held = StateLock::acquire(&p.state()).unwrap();
    let o = p.run(
        &["doctor"],
        &[("FAKE_KEY", CANARY), ("REACTOR_OFFLINE", "1")],
    );
    assert_eq!(o.code, 0, "stale is not unhealthy");
    assert!(
        o.stdout
            .contains("  compiled IR    STALE (contract set changed) — run `reactor compile`\n")
    );
    assert!(
        o.stdout
            .contains(&format!("  writer         pid {}\n", std::process::id()))
    );
    assert!(
        o.stdout
            .contains("  offline mode   forced (REACTOR_OFFLINE)\n")
    );
    assert!(
        o.stdout
            .ends_with("  live:   not ready — offline mode is forced\n"),
        "{}",
        o.stdout
    );
    let j = p.run(&["--json", "--offline", "doctor"], WITH_KEY).json();
    assert_eq!(
        j["writer"],
        json!({"pid": std::process::id(), "daemon": false})
    );
    assert_eq!(
        j["ir"],
        json!({"freshness": "stale", "reason": "contract set changed", "contracts": 2,
               "nodes": 2, "edges": 1})
    );
    assert_eq!(j["offlineForced"], true);
    drop(held);
    std::fs::write(p.path().join("weekly-brief.prose.md"), &original).unwrap();

    // Notes: telemetry, a JavaScript connector plugin, a missing system prompt file.
    p.configure(
        "openrouter",
        &base,
        "compile-model",
        "telemetry:\n  enabled: false\n",
    );
    std::fs::write(p.path().join("connectors.js"), "module.exports = {}\n").unwrap();
    let o = p.run(
        &["doctor"],
        &[
            ("FAKE_KEY", CANARY),
            ("REACTOR_SKILL_PATH", "/nonexistent/SKILL.md"),
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stdout);
    assert!(
        o.stdout
            .contains("  system prompt  MISSING at /nonexistent/SKILL.md\n"),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains(
        "  telemetry      keys present in reactor.yml (ignored: no telemetry is sent)\n"
    ));
    assert!(o.stdout.contains(&format!(
        "  connectors.js  {} present (unsupported: JavaScript connector plugins are not loaded)\n",
        p.path().join("connectors.js").display()
    )));
    assert!(
        o.stdout.contains(
            "  compiled IR    unknown (REACTOR_SKILL_PATH: cannot read /nonexistent/SKILL.md"
        ),
        "{}",
        o.stdout
    );
    assert!(o.stdout.ends_with(
        "  live:   not ready — the system prompt file /nonexistent/SKILL.md is unusable\n"
    ));
    std::fs::remove_file(p.path().join("connectors.js")).unwrap();
    fake.finish();
}

#[test]
fn doctor_reports_a_config_error_and_no_contracts_with_exit_1() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("reactor.yml"),
        "model:\n  provider: openrouter\n  temprature: 0\n",
    )
    .unwrap();
    let o = reactor(d.path(), &["doctor"], &[]);
    assert_eq!(o.code, 1);
    let first = "reactor.yml:3:3: model.temprature: unknown key (expected one of: provider, render_model, compile_model, temperature, reasoning_effort, max_turns, base_url, api_key_env, max_tokens, timeout, connect_timeout, parallel_renders)";
    let cwd = reactor::host::project::absolute(d.path());
    assert!(
        o.stdout.contains(&format!(
            "  config         {} (ERROR: {first})\n",
            cwd.join("reactor.yml").display()
        )),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .contains(&format!("\n  status: UNHEALTHY — {first}\n")),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .ends_with("  live:   not ready — the configuration is invalid\n")
    );
    assert_eq!(o.stderr, "");
    let o = reactor(d.path(), &["--json", "doctor"], &[]);
    assert_eq!(o.code, 1);
    let j = o.json();
    assert_eq!(j["config"]["ok"], false);
    assert_eq!(j["config"]["error"], first);
    assert_eq!(j["provider"], Value::Null);
    assert_eq!(j["healthyForOffline"], false);

    // A provider that needs model ids it was not given.
    std::fs::write(d.path().join("reactor.yml"), "model:\n  provider: openai\n").unwrap();
    let o = reactor(d.path(), &["doctor"], &[]);
    assert_eq!(o.code, 1);
    assert!(
        o.stdout.contains(
            "(ERROR: reactor.yml:2:13: model.compile_model is required for provider 'openai')"
        ),
        "{}",
        o.stdout
    );

    // No contracts.
    std::fs::write(d.path().join("reactor.yml"), "state:\n  dir: ./st\n").unwrap();
    let o = reactor(d.path(), &["doctor"], &[]);
    assert_eq!(o.code, 1);
    assert!(o.stdout.contains("  config         "));
    assert!(
        o.stdout
            .contains("  compiled IR    no .prose.md contracts found in this project\n")
    );
    assert!(
        o.stdout
            .contains("  status: UNHEALTHY — no .prose.md contracts found in this project\n")
    );
    assert!(!d.path().join("st").exists());
    // Usage errors stay usage errors.
    let o = reactor(d.path(), &["doctor", "--bogus"], &[]);
    assert_eq!(o.code, 2);
    let o = reactor(d.path(), &["--project", "nope", "doctor"], &[]);
    assert_eq!(o.code, 2);
}

#[test]
fn doctor_live_sends_one_small_request() {
    let Some(shared) = shared_contracts() else {
        return;
    };
    // OK over Chat Completions.
    let fake = FakeProvider::with_entries([fake::chat_text("ok").when_purpose("doctor:live")]);
    let p = Proj::new(&shared, "smallest-project", "openrouter", &fake.base_url());
    let o = p.run(&["doctor", "--live"], WITH_KEY);
    assert_eq!(o.code, 0, "{}", o.stdout);
    let line = o
        .stdout
        .lines()
        .find(|l| l.starts_with("  live smoke     "))
        .expect("a live smoke line");
    let ms = line
        .strip_prefix("  live smoke     ok (")
        .and_then(|r| r.strip_suffix(" ms)"))
        .unwrap_or_else(|| panic!("{line}"));
    assert!(ms.parse::<u64>().is_ok(), "{line}");
    assert!(o.stdout.ends_with("  live:   ready\n"));
    let requests = fake.requests();
    fake.finish();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(
        r.header("authorization"),
        Some(format!("Bearer {CANARY}").as_str())
    );
    let body = r.json();
    assert_eq!(body["model"], "render-model");
    assert_eq!(body["max_tokens"], 64);
    assert!(body.get("tools").is_none() && body.get("response_format").is_none());
    assert_eq!(body["messages"].as_array().unwrap().len(), 1);
    assert_eq!(body["messages"][0]["role"], "user");

    // A 401: FAILED with the hint, exit 1, the key nowhere.
    let fake = FakeProvider::with_entries([
        fake::error_401(Protocol::Chat).when_purpose("doctor:live"),
        fake::error_401(Protocol::Chat).when_purpose("doctor:live"),
    ]);
    p.configure("openrouter", &fake.base_url(), "compile-model", "");
    let o = p.run(&["doctor", "--live"], WITH_KEY);
    assert_eq!(o.code, 1);
    assert!(
        o.stdout.contains(
            "  live smoke     FAILED — openrouter rejected the key in FAKE_KEY (HTTP 401): check FAKE_KEY\n"
        ),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains("  status: healthy-for-offline\n"));
    assert!(
        o.stdout
            .ends_with("  live:   not ready — the live smoke request failed\n")
    );
    assert_no_key(&o, p.path());
    let o = p.run(&["--json", "doctor", "--live"], WITH_KEY);
    assert_eq!(o.code, 1);
    let j = o.json();
    assert_eq!(
        j["live"],
        json!({"ran": true, "ok": false,
               "detail": "openrouter rejected the key in FAKE_KEY (HTTP 401): check FAKE_KEY"})
    );
    assert_eq!(j["healthyForLive"], false);
    assert_eq!(j["healthyForOffline"], true);
    assert_no_key(&o, p.path());
    assert_eq!(fake.request_count(), 2, "a 401 is not retried");
    fake.finish();

    // No key: nothing is sent.
    let fake = FakeProvider::start();
    p.configure("openrouter", &fake.base_url(), "compile-model", "");
    let o = p.run(&["doctor", "--live"], &[]);
    assert_eq!(o.code, 1);
    assert!(
        o.stdout
            .contains("  live smoke     FAILED — FAKE_KEY is not set\n"),
        "{}",
        o.stdout
    );
    assert_eq!(fake.request_count(), 0);
    fake.finish();

    // Anthropic Messages: max_tokens 64, x-api-key.
    let fake = FakeProvider::with_entries([fake::messages_text("ok").when_purpose("doctor:live")]);
    p.configure(
        "anthropic",
        &fake.base_url(),
        "compile-model",
        "  reasoning_effort: low\n",
    );
    let o = p.run(&["doctor", "--live"], WITH_KEY);
    assert_eq!(o.code, 0, "{}", o.stdout);
    assert!(o.stdout.contains(&format!(
        "  provider       anthropic (messages, {})\n",
        fake.base_url()
    )));
    assert!(o.stdout.contains(
        "  reasoning_effort set with the anthropic provider (ignored: Messages requests do not carry it)\n"
    ), "{}", o.stdout);
    let requests = fake.requests();
    fake.finish();
    let r = &requests[0];
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.header("x-api-key"), Some(CANARY));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(r.json()["max_tokens"], 64);
    assert!(r.json().get("tools").is_none());
}

#[test]
fn diagnostics_and_lints_are_reported() {
    let Some(shared) = shared_contracts() else {
        return;
    };
    // Forme finds no producer for the brief's need (unsatisfied: no edge), and the monitor's
    // postcondition session compiles nothing for its one Postcondition: sentence (a lint).
    let mut forme = forme_answer();
    forme["matches"] = json!([]);
    let fake = FakeProvider::with_entries([
        fake::chat_json(&forme).when_purpose("compile:forme"),
        fake::chat_json(&monitor_canonicalizer())
            .when_purpose("compile:canonicalizer:competitor-monitor"),
        fake::chat_json(&json!({"postconditions": []}))
            .when_purpose("compile:postcondition:competitor-monitor"),
        fake::chat_json(&brief_canonicalizer()).when_purpose("compile:canonicalizer:weekly-brief"),
        fake::chat_json(&json!({"postconditions": []}))
            .when_purpose("compile:postcondition:weekly-brief"),
    ]);
    let p = Proj::new(&shared, "smallest-project", "openrouter", &fake.base_url());
    let o = p.run(&["compile"], WITH_KEY);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.contains(
            "  edges          0\n  entry points   (none)\n  acyclic        yes\n\n  Forme diagnostics:\n    - unsatisfied (weekly-brief: \"a current view of competitor fundraising activity\")\n\n  lints:\n    - competitor-monitor: 0 postcondition entries compiled for 1 Postcondition: sentence in Maintains\n\n  cost (tokens, surprise_cause: self):\n"
        ),
        "{}",
        o.stdout
    );
    // A second compile is a hit: diagnostics are not persisted, so none are shown.
    let o = p.run(&["--json", "compile"], WITH_KEY);
    assert_eq!(o.code, 0);
    let j = o.json();
    assert_eq!(j["status"], "cache-hit");
    assert_eq!(j["diagnostics"], json!([]));
    assert_eq!(j["lints"], json!([]));
    assert_eq!(j["edges"], 0);
    // The JSON of the compiled report, through --force.
    push_all(
        &fake,
        vec![
            fake::chat_json(&forme).when_purpose("compile:forme"),
            fake::chat_json(&monitor_canonicalizer())
                .when_purpose("compile:canonicalizer:competitor-monitor"),
            fake::chat_json(&json!({"postconditions": []}))
                .when_purpose("compile:postcondition:competitor-monitor"),
            fake::chat_json(&brief_canonicalizer())
                .when_purpose("compile:canonicalizer:weekly-brief"),
            fake::chat_json(&json!({"postconditions": []}))
                .when_purpose("compile:postcondition:weekly-brief"),
        ],
    );
    let j = p.run(&["--json", "compile", "--force"], WITH_KEY).json();
    assert_eq!(
        j["diagnostics"],
        json!([{"kind": "unsatisfied", "subscriber": "weekly-brief",
                "requirement": "a current view of competitor fundraising activity"}])
    );
    assert_eq!(
        j["lints"],
        json!([{"node": "competitor-monitor", "code": "postcondition-count",
                "message": "0 postcondition entries compiled for 1 Postcondition: sentence in Maintains"}])
    );
    fake.finish();
}

#[test]
fn doctor_reports_docker_availability_through_path() {
    let Some(shared) = shared_contracts() else {
        return;
    };
    let p = Proj::new(
        &shared,
        "smallest-project",
        "openrouter",
        "http://127.0.0.1:9/v1",
    );
    p.configure(
        "openrouter",
        "http://127.0.0.1:9/v1",
        "compile-model",
        "sandbox:\n  mode: docker\n",
    );
    // A `docker` first on PATH: a link to `true` (answers) or `false` (no daemon). A link, not
    // a freshly written script, so no exec can race a writer (ETXTBSY).
    for (target, line, ready) in [
        (
            "true",
            "  sandbox        mode docker (docker available)\n",
            true,
        ),
        (
            "false",
            "  sandbox        mode docker (docker NOT available)\n",
            false,
        ),
    ] {
        let Some(exe) = ["/bin", "/usr/bin"]
            .iter()
            .map(|d| Path::new(d).join(target))
            .find(|p| p.exists())
        else {
            eprintln!("SKIPPED: no {target} executable in /bin or /usr/bin");
            return;
        };
        let bin_dir = tempfile::tempdir().unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(&exe, bin_dir.path().join("docker")).unwrap();
        let path = format!(
            "{}:{}",
            bin_dir.path().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let o = p.run(&["doctor"], &[("FAKE_KEY", CANARY), ("PATH", &path)]);
        assert_eq!(o.code, 0, "{}", o.stdout);
        assert!(o.stdout.contains(line), "{}", o.stdout);
        if ready {
            assert!(o.stdout.ends_with("  live:   ready\n"), "{}", o.stdout);
        } else {
            assert!(
                o.stdout.ends_with(
                    "  live:   not ready — Docker is not available (sandbox.mode docker)\n"
                ),
                "{}",
                o.stdout
            );
        }
        let j = p
            .run(
                &["--json", "doctor"],
                &[("FAKE_KEY", CANARY), ("PATH", &path)],
            )
            .json();
        assert_eq!(
            j["sandbox"],
            json!({"mode": "docker", "dockerAvailable": ready})
        );
    }
    // unix-local: a warning on the sandbox line.
    p.configure(
        "openrouter",
        "http://127.0.0.1:9/v1",
        "compile-model",
        "sandbox:\n  mode: unix-local\n",
    );
    let o = p.run(&["doctor"], WITH_KEY);
    assert!(o.stdout.contains(
        "  sandbox        mode unix-local (WARNING: shell_exec runs on this host without isolation)\n"
    ), "{}", o.stdout);
}
