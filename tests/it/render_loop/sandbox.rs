//! The sandbox runners: the local unix shell and docker mode (through a fake `docker`).

use super::*;

#[cfg(unix)]
#[test]
fn unix_local_shell_exec_runs_in_the_workspace() {
    let root = tempfile::tempdir().unwrap();
    let s = settings(root.path());
    let fx = Fixture::new(vec![file("in.txt", "seeded")]);
    let runner: Arc<dyn SandboxRunner> = Arc::new(LocalRunner::new());
    let base = base_request(&s, Some(runner.clone()), &fx, "plain");
    let recs = records(
        &base,
        vec![
            (
                turn(
                    vec![call(
                        "s",
                        "shell_exec",
                        json!({"command": "cat in.txt > out.txt; printf made; echo oops >&2; exit 4"}),
                    )],
                    usage(1, 0, 1),
                ),
                vec![res(
                    "s",
                    json!({"exit_code": 4, "stdout": "made", "stderr": "oops\n", "timed_out": false}),
                )],
            ),
            (
                turn(vec![call("f", "finish", finish_done())], usage(1, 0, 1)),
                vec![],
            ),
        ],
    );
    let client = Arc::new(ReplayClient::new(recs));
    let p = done(agent(client.clone(), &s, Some(runner)).render(&fx.ctx("plain")));
    assert_eq!(client.remaining(), 0);
    assert_eq!(
        p.files,
        vec![file("in.txt", "seeded"), file("out.txt", "seeded")]
    );
}

/// Writes a fake `docker` executable that logs its arguments to `log`, and for `run` executes
/// the trailing `sh -c <command>` inside the mounted directory.
#[cfg(unix)]
fn fake_docker(dir: &Path, log: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("docker");
    let script = format!(
        r#"#!/bin/sh
printf '%s\n' "$*" >> '{log}'
if [ "$1" = kill ]; then exit 0; fi
shift
vol=
while [ $# -gt 0 ]; do
  case "$1" in
    --rm) shift ;;
    --name|--network|-w) shift 2 ;;
    -v) vol="$2"; shift 2 ;;
    *) break ;;
  esac
done
shift
cd "${{vol%:/workspace}}" || exit 125
exec "$@"
"#,
        log = log.display()
    );
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[cfg(unix)]
#[test]
fn docker_mode_runs_commands_through_docker_run() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    let log = bin.path().join("docker.log");
    let docker = fake_docker(bin.path(), &log);
    let s = settings(root.path());
    let fx = Fixture::new(Vec::new());
    let runner: Arc<dyn SandboxRunner> =
        Arc::new(DockerRunner::new("img:test", "none").with_executable(&docker));
    let p = done(shell_then_finish(
        &s,
        runner,
        &fx,
        "printf ok; ls -a",
        json!({"exit_code": 0, "stdout": "ok.\n..\n", "stderr": "", "timed_out": false}),
    ))
    .files;
    assert!(p.is_empty());
    let logged = std::fs::read_to_string(&log).unwrap();
    let line = logged.lines().next().unwrap();
    let dir = work_dir(root.path(), "default", "plain");
    assert!(
        line.starts_with("run --rm --name reactor-sandbox-"),
        "{line}"
    );
    assert!(
        line.ends_with(&format!(
            " --network none -v {}:/workspace -w /workspace img:test sh -c printf ok; ls -a",
            dir.display()
        )),
        "{line}"
    );
}

#[cfg(unix)]
#[test]
fn docker_mode_writes_files_times_out_and_reports_a_missing_docker() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    let log = bin.path().join("docker.log");
    let docker = fake_docker(bin.path(), &log);
    let mut s = settings(root.path());
    s.shell_timeout = Duration::from_millis(400);
    let fx = Fixture::new(Vec::new());
    let runner: Arc<dyn SandboxRunner> =
        Arc::new(DockerRunner::new("img:test", "bridge").with_executable(&docker));
    let base = base_request(&s, Some(runner.clone()), &fx, "plain");
    let recs = records(
        &base,
        vec![
            (
                turn(
                    vec![
                        call(
                            "a",
                            "shell_exec",
                            json!({"command": "echo from-container > c.txt"}),
                        ),
                        call("b", "shell_exec", json!({"command": "sleep 20"})),
                    ],
                    usage(1, 0, 1),
                ),
                vec![
                    res(
                        "a",
                        json!({"exit_code": 0, "stdout": "", "stderr": "", "timed_out": false}),
                    ),
                    res(
                        "b",
                        json!({"exit_code": null, "stdout": "", "stderr": "", "timed_out": true}),
                    ),
                ],
            ),
            (
                turn(vec![call("f", "finish", finish_done())], usage(1, 0, 1)),
                vec![],
            ),
        ],
    );
    let started = std::time::Instant::now();
    let p =
        done(agent(Arc::new(ReplayClient::new(recs)), &s, Some(runner)).render(&fx.ctx("plain")));
    assert!(started.elapsed() < Duration::from_secs(15));
    assert_eq!(p.files, vec![file("c.txt", "from-container\n")]);
    let logged = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = logged.lines().collect();
    assert!(lines[1].contains("--network bridge"), "{logged}");
    assert!(lines[1].ends_with("sh -c sleep 20"), "{logged}");
    let name = lines[1].split(' ').nth(3).unwrap();
    assert!(
        lines.contains(&format!("kill {name}").as_str()),
        "the container is killed on timeout: {logged}"
    );
    // Without docker the render fails with a clear reason and keeps its cost.
    let missing: Arc<dyn SandboxRunner> =
        Arc::new(DockerRunner::new("img", "none").with_executable("/nonexistent/docker"));
    let base = base_request(&s, Some(missing.clone()), &fx, "plain");
    let recs = records(
        &base,
        vec![(
            turn(
                vec![call("s", "shell_exec", json!({"command": "true"}))],
                usage(3, 0, 1),
            ),
            vec![],
        )],
    );
    let f = failed(
        agent(Arc::new(ReplayClient::new(recs)), &s, Some(missing)).render(&fx.ctx("plain")),
    );
    assert!(
        f.reason.starts_with(
            "sandbox unavailable: docker is not available (cannot run '/nonexistent/docker'"
        ),
        "{}",
        f.reason
    );
    assert_eq!(cost(&f.usage), (4, 0));
}
