//! The sandbox runner seam behind the render tool `shell_exec` (RUNTIME.md §8.5, §13;
//! HOST.md §4.2): run one shell command with the render's working directory as its current
//! directory, bounded by a timeout, capturing at most [`MAX_STREAM_BYTES`] of each stream.
//!
//! - `sandbox.mode: none` — no runner, and renders get no `shell_exec` tool at all.
//! - `sandbox.mode: unix-local` — [`LocalRunner`]: `sh -c <command>` directly on the host in the
//!   working directory, with no isolation (provider key variables are removed from the child's
//!   environment).
//! - `sandbox.mode: docker` — [`DockerRunner`]: `docker run --rm --name <name> --network
//!   <network> -v <workdir>:/workspace -w /workspace <image> sh -c <command>`; on timeout the
//!   container is killed with `docker kill <name>`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Largest captured size of stdout and of stderr, each (64 KiB, RUNTIME.md §8.5). Output beyond
/// it is read and discarded so the command never blocks on a full pipe.
pub(crate) const MAX_STREAM_BYTES: usize = 64 * 1024;

/// The default `sandbox.shell_timeout_ms` (300 000 ms, HOST.md §4.2).
pub(crate) const DEFAULT_SHELL_TIMEOUT: Duration = Duration::from_millis(300_000);

/// The variables never passed to a `unix-local` command: the built-in provider keys
/// (HOST.md §2.2). A configured `model.api_key_env` is added by the host through
/// [`LocalRunner::hide_env`].
pub(crate) const PROVIDER_KEY_VARS: [&str; 4] = [
    "OPENROUTER_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
];

/// What one command produced.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ExecOutput {
    /// The exit code; `None` when the process was killed by a signal (a timeout included).
    pub exit_code: Option<i32>,
    /// Captured stdout, at most [`MAX_STREAM_BYTES`].
    pub stdout: Vec<u8>,
    /// Captured stderr, at most [`MAX_STREAM_BYTES`].
    pub stderr: Vec<u8>,
    /// Whether the timeout expired and the command was killed.
    pub timed_out: bool,
}

/// Why a command could not run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SandboxError {
    /// The sandbox itself is missing or broken (no `docker` executable, no daemon): the render
    /// fails with `sandbox unavailable: <detail>`.
    #[error("sandbox unavailable: {0}")]
    Unavailable(String),
    /// This command could not be started; the model gets an error result.
    #[error("{0}")]
    Failed(String),
}

/// Runs shell commands for renders (RUNTIME.md §13 "Sandbox runner"). Shared between worker
/// threads.
pub trait SandboxRunner: Send + Sync {
    /// Runs `command` with `cwd` (the render's working directory) as its current directory,
    /// killing it after `timeout`.
    fn exec(
        &self,
        command: &str,
        cwd: &Path,
        timeout: Duration,
    ) -> Result<ExecOutput, SandboxError>;
}

/// `sandbox.mode` (HOST.md §4.2).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum SandboxMode {
    /// No command execution at all (the default).
    #[default]
    None,
    /// Commands run in a disposable docker container.
    Docker {
        /// `sandbox.image`.
        image: String,
        /// `sandbox.network`.
        network: String,
    },
    /// Commands run directly on the host, without isolation.
    UnixLocal,
}

impl SandboxMode {
    /// The runner for this mode; `None` for [`SandboxMode::None`]. `hidden_env` names extra
    /// variables kept from `unix-local` commands (the configured key variable).
    pub fn runner(&self, hidden_env: &[String]) -> Option<Arc<dyn SandboxRunner>> {
        match self {
            SandboxMode::None => None,
            SandboxMode::UnixLocal => {
                let mut r = LocalRunner::new();
                for v in hidden_env {
                    r = r.hide_env(v);
                }
                Some(Arc::new(r))
            }
            SandboxMode::Docker { image, network } => {
                Some(Arc::new(DockerRunner::new(image.clone(), network.clone())))
            }
        }
    }
}

/// Reads a stream to its end, keeping the first `cap` bytes.
fn capped_reader<R: Read + Send + 'static>(
    mut r: R,
    cap: usize,
) -> crossbeam_channel::Receiver<Vec<u8>> {
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            match r.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let room = cap.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = tx.send(kept);
    });
    rx
}

/// Spawns `cmd` with piped output and waits for it up to `timeout`; on expiry calls `kill`
/// (which must end the command) and marks the output as timed out.
fn run_bounded(
    mut cmd: Command,
    timeout: Duration,
    kill: &dyn Fn(&mut Child),
) -> Result<ExecOutput, std::io::Error> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn()?;
    let out_rx = child
        .stdout
        .take()
        .map(|s| capped_reader(s, MAX_STREAM_BYTES));
    let err_rx = child
        .stderr
        .take()
        .map(|s| capped_reader(s, MAX_STREAM_BYTES));
    let deadline = Instant::now() + timeout;
    let mut timed_out = false;
    let status = loop {
        match child.try_wait()? {
            Some(status) => break status,
            None if Instant::now() >= deadline => {
                timed_out = true;
                kill(&mut child);
                let _ = child.kill();
                break child.wait()?;
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    // A grandchild that escaped the kill may hold the pipes open; do not wait for it forever.
    let grace = Duration::from_secs(2);
    let collect = |rx: Option<crossbeam_channel::Receiver<Vec<u8>>>| {
        rx.and_then(|rx| rx.recv_timeout(grace).ok())
            .unwrap_or_default()
    };
    Ok(ExecOutput {
        exit_code: if timed_out { None } else { status.code() },
        stdout: collect(out_rx),
        stderr: collect(err_rx),
        timed_out,
    })
}

/// `sandbox.mode: unix-local`: `sh -c <command>` on the host, in its own process group (killed
/// as a group on timeout), with the provider key variables removed from its environment.
#[derive(Clone, Debug)]
pub struct LocalRunner {
    shell: PathBuf,
    hidden: Vec<String>,
    /// Variables set on every command before the hidden ones are removed (tests).
    preset: Vec<(String, String)>,
}

impl Default for LocalRunner {
    fn default() -> Self {
        LocalRunner::new()
    }
}

impl LocalRunner {
    /// A runner using `sh` from `PATH`, hiding [`PROVIDER_KEY_VARS`].
    pub fn new() -> LocalRunner {
        LocalRunner {
            shell: PathBuf::from("sh"),
            hidden: PROVIDER_KEY_VARS.iter().map(|s| s.to_string()).collect(),
            preset: Vec::new(),
        }
    }

    #[cfg(test)]
    fn preset_env(mut self, var: &str, value: &str) -> LocalRunner {
        self.preset.push((var.to_string(), value.to_string()));
        self
    }

    /// Also removes `var` from the commands' environment.
    pub(crate) fn hide_env(mut self, var: &str) -> LocalRunner {
        if !self.hidden.iter().any(|v| v == var) {
            self.hidden.push(var.to_string());
        }
        self
    }
}

#[cfg(unix)]
fn kill_group(child: &mut Child) {
    // The child leads its own process group (process_group(0)); kill the whole group so
    // background jobs of the command die too.
    let _ = Command::new("sh")
        .arg("-c")
        .arg("kill -s KILL -- -\"$1\" 2>/dev/null")
        .arg("sh")
        .arg(child.id().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

#[cfg(not(unix))]
fn kill_group(child: &mut Child) {
    let _ = child.kill();
}

impl SandboxRunner for LocalRunner {
    fn exec(
        &self,
        command: &str,
        cwd: &Path,
        timeout: Duration,
    ) -> Result<ExecOutput, SandboxError> {
        let mut cmd = Command::new(&self.shell);
        cmd.arg("-c").arg(command).current_dir(cwd);
        for (k, v) in &self.preset {
            cmd.env(k, v);
        }
        for v in &self.hidden {
            cmd.env_remove(v);
        }
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
        }
        run_bounded(cmd, timeout, &kill_group).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                SandboxError::Unavailable(format!("cannot run '{}': {e}", self.shell.display()))
            } else {
                SandboxError::Failed(format!("cannot run the command: {e}"))
            }
        })
    }
}

/// `sandbox.mode: docker`: each command in a disposable container (HOST.md §4.2).
#[derive(Clone, Debug)]
pub struct DockerRunner {
    docker: PathBuf,
    image: String,
    network: String,
}

static CONTAINER_SEQ: AtomicU64 = AtomicU64::new(0);

impl DockerRunner {
    /// A runner using `docker` from `PATH` with `image` and `network`.
    pub fn new(image: impl Into<String>, network: impl Into<String>) -> DockerRunner {
        DockerRunner {
            docker: PathBuf::from("docker"),
            image: image.into(),
            network: network.into(),
        }
    }

    /// Uses another docker executable.
    pub fn with_executable(mut self, docker: impl Into<PathBuf>) -> DockerRunner {
        self.docker = docker.into();
        self
    }

    /// The arguments of `docker` for one command (without the executable).
    pub fn args(&self, name: &str, command: &str, cwd: &Path) -> Vec<String> {
        vec![
            "run".into(),
            "--rm".into(),
            "--name".into(),
            name.into(),
            "--network".into(),
            self.network.clone(),
            "-v".into(),
            format!("{}:/workspace", cwd.display()),
            "-w".into(),
            "/workspace".into(),
            self.image.clone(),
            "sh".into(),
            "-c".into(),
            command.into(),
        ]
    }
}

/// Whether a `docker run` exit status 125 comes from docker itself (daemon, image, options)
/// rather than from the command.
fn docker_itself_failed(out: &ExecOutput) -> bool {
    if out.exit_code != Some(125) {
        return false;
    }
    let err = String::from_utf8_lossy(&out.stderr);
    err.contains("Cannot connect to the Docker daemon")
        || err.lines().any(|l| l.trim_start().starts_with("docker:"))
}

impl SandboxRunner for DockerRunner {
    fn exec(
        &self,
        command: &str,
        cwd: &Path,
        timeout: Duration,
    ) -> Result<ExecOutput, SandboxError> {
        let name = format!(
            "reactor-sandbox-{}-{}",
            std::process::id(),
            CONTAINER_SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let mut cmd = Command::new(&self.docker);
        cmd.args(self.args(&name, command, cwd));
        let docker = self.docker.clone();
        let kill = move |_: &mut Child| {
            let _ = Command::new(&docker)
                .arg("kill")
                .arg(&name)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        };
        let out = run_bounded(cmd, timeout, &kill).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                SandboxError::Unavailable(format!(
                    "docker is not available (cannot run '{}': {e})",
                    self.docker.display()
                ))
            } else {
                SandboxError::Unavailable(format!("cannot run docker: {e}"))
            }
        })?;
        if docker_itself_failed(&out) {
            let err = String::from_utf8_lossy(&out.stderr);
            let line = err
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("no detail");
            return Err(SandboxError::Unavailable(format!(
                "docker could not start the container: {line}"
            )));
        }
        Ok(out)
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn local_runner_runs_in_cwd_and_caps_output() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("f.txt"), "hello").unwrap();
        let r = LocalRunner::new();
        let out = r
            .exec(
                "cat f.txt; echo err >&2; exit 3",
                d.path(),
                Duration::from_secs(10),
            )
            .unwrap();
        assert_eq!(out.exit_code, Some(3));
        assert_eq!(out.stdout, b"hello");
        assert_eq!(out.stderr, b"err\n");
        assert!(!out.timed_out);
        let out = r
            .exec(
                "head -c 200000 /dev/zero | tr '\\0' a",
                d.path(),
                Duration::from_secs(10),
            )
            .unwrap();
        assert_eq!(out.stdout.len(), MAX_STREAM_BYTES);
        assert_eq!(out.exit_code, Some(0));
    }

    #[test]
    fn local_runner_times_out_and_kills_the_group() {
        let d = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let out = LocalRunner::new()
            .exec(
                "sleep 30 & sleep 30; echo never",
                d.path(),
                Duration::from_millis(300),
            )
            .unwrap();
        assert!(out.timed_out);
        assert_eq!(out.exit_code, None);
        assert!(out.stdout.is_empty());
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn local_runner_hides_provider_keys() {
        let d = tempfile::tempdir().unwrap();
        // The variables are preset on the child only, so this process is never touched.
        let out = LocalRunner::new()
            .preset_env("ANTHROPIC_API_KEY", "sk-ant-secret-1")
            .preset_env("FAKE_KEY_VAR_FOR_TEST", "secret-2")
            .preset_env("VISIBLE_VAR_FOR_TEST", "shown")
            .hide_env("FAKE_KEY_VAR_FOR_TEST")
            .exec(
                "echo \"[${ANTHROPIC_API_KEY:-}][${FAKE_KEY_VAR_FOR_TEST:-}][${VISIBLE_VAR_FOR_TEST:-}]\"",
                d.path(),
                Duration::from_secs(10),
            )
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "[][][shown]\n");
    }

    #[test]
    fn docker_args_follow_host_4_2() {
        let r = DockerRunner::new("img:1", "none");
        assert_eq!(
            r.args("n1", "ls -la", Path::new("/tmp/w")),
            [
                "run",
                "--rm",
                "--name",
                "n1",
                "--network",
                "none",
                "-v",
                "/tmp/w:/workspace",
                "-w",
                "/workspace",
                "img:1",
                "sh",
                "-c",
                "ls -la"
            ]
        );
    }

    #[test]
    fn missing_docker_is_unavailable() {
        let d = tempfile::tempdir().unwrap();
        let e = DockerRunner::new("img", "none")
            .with_executable("/nonexistent/docker")
            .exec("true", d.path(), Duration::from_secs(5))
            .unwrap_err();
        assert!(matches!(e, SandboxError::Unavailable(_)), "{e:?}");
        assert!(
            e.to_string()
                .starts_with("sandbox unavailable: docker is not available")
        );
    }

    #[test]
    fn docker_125_from_docker_itself_is_unavailable() {
        let out = ExecOutput {
            exit_code: Some(125),
            stderr: b"docker: Error response from daemon: pull access denied.\n".to_vec(),
            ..Default::default()
        };
        assert!(docker_itself_failed(&out));
        let out = ExecOutput {
            exit_code: Some(125),
            stderr: b"my command failed\n".to_vec(),
            ..Default::default()
        };
        assert!(!docker_itself_failed(&out));
    }

    #[test]
    fn modes_build_runners() {
        assert!(SandboxMode::None.runner(&[]).is_none());
        assert!(SandboxMode::UnixLocal.runner(&["X".into()]).is_some());
        assert!(
            SandboxMode::Docker {
                image: "node:22-bookworm-slim".into(),
                network: "none".into()
            }
            .runner(&[])
            .is_some()
        );
    }
}
