//! Running local executables under the harness's process rules.
//!
//! Command tools, `hook-command` hooks and (later) MCP stdio servers all
//! start programs the composition names. A program a model can trigger
//! must not be able to take the harness down, leak the harness's
//! environment, or outlive its call, so every spawn goes through
//! [`run`], which:
//!
//! - runs `argv` directly, never through a shell;
//! - resolves `argv[0]` in the *parent* against the chassis process's
//!   `PATH` ([`resolve_program`]): the child's environment is cleared and
//!   holds only the allow-listed variables, so without this a child would
//!   not even find `wc` unless `PATH` were allow-listed. (A program the
//!   child itself starts is looked up with the child's environment: allow
//!   `PATH` when a script needs it.) A program containing a `/` is used as
//!   is, relative to the working directory;
//! - pipes stdin, stdout and stderr explicitly (CI has no terminal and no
//!   stdin; an inherited one would hang or leak): stdin is `/dev/null` or
//!   the given bytes, written then closed;
//! - puts the child in a process group of its own, so a timeout, a
//!   [`Cancellation`], exceeding the output limit, or dropping the future
//!   (the executor drops a call on its deadline) kills the *whole group*
//!   with `SIGKILL`, grandchildren included. When the program exits, what
//!   it left running in its group is killed too: nothing outlives the call;
//! - reads stdout and stderr concurrently (a child blocked on a full pipe
//!   never deadlocks the runner), stdout up to a byte limit (beyond it the
//!   group is killed), stderr keeping its last bytes.
//!
//! A process that escaped its group (`setsid`) and kept the pipes open is
//! not waited for beyond [`PIPE_GRACE`] after the group died; where chassis
//! adopts orphans ([`orphans`]) it is killed when the call ends.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use crate::runtime::Cancellation;

pub mod group;
pub mod liveness;
pub mod orphans;
#[cfg(test)]
pub(crate) mod tests;

/// How long the output of a killed or exited group is still read, for a
/// descendant that left the group and kept the pipes open.
pub const PIPE_GRACE: Duration = Duration::from_secs(2);

/// One process to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessSpec {
    /// The program (resolved with [`resolve_program`]).
    pub program: String,
    /// Its arguments (after `argv[0]`).
    pub args: Vec<String>,
    /// Working directory.
    pub cwd: PathBuf,
    /// The child's whole environment (see [`allowed_env`]).
    pub env: Vec<(OsString, OsString)>,
    /// Bytes written to stdin, then closed; `None` is `/dev/null`.
    pub stdin: Option<Vec<u8>>,
    /// Hard timeout; `None` runs until exit or cancellation.
    pub timeout: Option<Duration>,
    /// The most stdout bytes kept; a process writing more is killed.
    pub max_stdout_bytes: usize,
    /// How many trailing stderr bytes are kept.
    pub max_stderr_bytes: usize,
}

impl ProcessSpec {
    /// A spec for `program args…` in `cwd` with an empty environment, no
    /// stdin, no timeout, 1 MiB of stdout and 64 KiB of stderr.
    pub fn new(program: impl Into<String>, args: Vec<String>, cwd: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args,
            cwd: cwd.into(),
            env: Vec::new(),
            stdin: None,
            timeout: None,
            max_stdout_bytes: 1 << 20,
            max_stderr_bytes: 64 << 10,
        }
    }
}

/// How a process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this code.
    Code(i32),
    /// It was terminated by this signal.
    Signal(i32),
}

impl Exit {
    /// Whether it exited with code 0.
    pub fn success(self) -> bool {
        self == Exit::Code(0)
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(c) => write!(f, "exit code {c}"),
            Exit::Signal(s) => match nix::sys::signal::Signal::try_from(*s) {
                Ok(sig) => write!(f, "signal {s} ({})", sig.as_str()),
                Err(_) => write!(f, "signal {s}"),
            },
        }
    }
}

/// Why the runner killed the process group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KillReason {
    /// The timeout elapsed.
    Timeout(Duration),
    /// The caller's cancellation fired.
    Cancelled,
    /// Stdout exceeded the limit.
    OutputLimit(usize),
}

impl std::fmt::Display for KillReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KillReason::Timeout(t) => write!(f, "timed out after {:.3}s", t.as_secs_f64()),
            KillReason::Cancelled => f.write_str("cancelled"),
            KillReason::OutputLimit(n) => write!(f, "wrote more than {n} bytes to stdout"),
        }
    }
}

/// What a finished process left.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessOutput {
    /// How it ended.
    pub exit: Exit,
    /// Stdout (at most the limit).
    pub stdout: Vec<u8>,
    /// The last bytes of stderr.
    pub stderr: Vec<u8>,
    /// Whether stderr lost its beginning.
    pub stderr_truncated: bool,
    /// Wall time from spawn to exit.
    pub duration: Duration,
    /// Set when the runner killed the group.
    pub killed: Option<KillReason>,
}

impl ProcessOutput {
    /// Exited with code 0 and was not killed.
    pub fn success(&self) -> bool {
        self.killed.is_none() && self.exit.success()
    }

    /// How it ended, for messages: `exit code 2`, `killed: timed out after 0.500s`.
    pub fn describe(&self) -> String {
        match self.killed {
            Some(reason) => format!("killed ({reason})"),
            None => self.exit.to_string(),
        }
    }

    /// Stderr as text (lossy), with a `…` in front when it was cut.
    pub fn stderr_text(&self) -> String {
        let text = String::from_utf8_lossy(&self.stderr);
        if self.stderr_truncated {
            format!("…{text}")
        } else {
            text.into_owned()
        }
    }
}

/// Why a process could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// `argv[0]` was not found on `PATH`, or the path does not exist.
    #[error("program `{program}` was not found{}", if *.searched { " on PATH" } else { "" })]
    NotFound {
        /// The program as configured.
        program: String,
        /// Whether `PATH` was searched (no `/` in the name).
        searched: bool,
    },
    /// The file exists but is not an executable file.
    #[error("program `{}` is not an executable file", .path.display())]
    NotExecutable {
        /// The resolved path.
        path: PathBuf,
    },
    /// The working directory is missing or not a directory.
    #[error("working directory `{}` does not exist or is not a directory", .cwd.display())]
    BadCwd {
        /// The directory.
        cwd: PathBuf,
    },
    /// The operating system refused.
    #[error("cannot start `{}`: {source}", .path.display())]
    Os {
        /// The resolved path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// The values of the allow-listed variables `names` in this process's
/// environment (absent ones are skipped): the child's whole environment.
pub fn allowed_env<S: AsRef<str>>(names: &[S]) -> Vec<(OsString, OsString)> {
    names
        .iter()
        .filter_map(|n| {
            let n = n.as_ref();
            std::env::var_os(n).map(|v| (OsString::from(n), v))
        })
        .collect()
}

fn is_executable_file(path: &Path) -> Option<bool> {
    let meta = std::fs::metadata(path).ok()?;
    Some(meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// Resolve `program`: with a `/`, relative to `cwd`; otherwise the first
/// executable file named so in `path` (the chassis process's `PATH`).
pub fn resolve_program(
    program: &str,
    cwd: &Path,
    path: Option<&OsStr>,
) -> Result<PathBuf, SpawnError> {
    if program.is_empty() {
        return Err(SpawnError::NotFound {
            program: program.to_owned(),
            searched: false,
        });
    }
    if program.contains('/') {
        let p = cwd.join(program);
        return match is_executable_file(&p) {
            Some(true) => Ok(p),
            Some(false) => Err(SpawnError::NotExecutable { path: p }),
            None => Err(SpawnError::NotFound {
                program: program.to_owned(),
                searched: false,
            }),
        };
    }
    let mut not_executable = None;
    for dir in std::env::split_paths(path.unwrap_or_default()) {
        // An empty PATH element means the current directory; it is not
        // honoured (a tool name must not pick up a file from the cwd).
        if dir.as_os_str().is_empty() || !dir.is_absolute() {
            continue;
        }
        let candidate = dir.join(program);
        match is_executable_file(&candidate) {
            Some(true) => return Ok(candidate),
            Some(false) => {
                not_executable.get_or_insert(candidate);
            }
            None => {}
        }
    }
    match not_executable {
        Some(path) => Err(SpawnError::NotExecutable { path }),
        None => Err(SpawnError::NotFound {
            program: program.to_owned(),
            searched: true,
        }),
    }
}

/// Kills a process group with `SIGKILL` when dropped, unless disarmed.
struct GroupGuard {
    pgid: Option<nix::unistd::Pid>,
}

impl GroupGuard {
    fn kill(&self) {
        if let Some(pgid) = self.pgid {
            // ESRCH (the group is already gone) is the expected outcome
            // when nothing is left; nothing else can be done on failure.
            let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
        }
    }

    fn disarm(&mut self) {
        self.pgid = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn read_capped<R: AsyncRead + Unpin>(
    mut r: R,
    buf: &mut Vec<u8>,
    limit: usize,
    guard: &GroupGuard,
) -> bool {
    let mut chunk = [0u8; 8192];
    loop {
        match r.read(&mut chunk).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => {
                let room = limit.saturating_sub(buf.len());
                buf.extend_from_slice(&chunk[..n.min(room)]);
                if n > room {
                    guard.kill();
                    return true;
                }
            }
        }
    }
}

async fn read_tail<R: AsyncRead + Unpin>(mut r: R, buf: &mut Vec<u8>, keep: usize) -> bool {
    let mut chunk = [0u8; 8192];
    let mut truncated = false;
    loop {
        match r.read(&mut chunk).await {
            Ok(0) | Err(_) => return truncated,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                if buf.len() > keep {
                    let cut = buf.len() - keep;
                    buf.drain(..cut);
                    truncated = true;
                }
            }
        }
    }
}

/// Run `spec` to completion, or until its timeout, `cancel`, or the
/// output limit kills its process group. Dropping the future kills the
/// group too. Only a failure to start is an error: a non-zero exit, a
/// signal or a kill is reported in the [`ProcessOutput`].
pub async fn run(spec: &ProcessSpec, cancel: &Cancellation) -> Result<ProcessOutput, SpawnError> {
    if !spec.cwd.is_dir() {
        return Err(SpawnError::BadCwd {
            cwd: spec.cwd.clone(),
        });
    }
    let path = std::env::var_os("PATH");
    let program = resolve_program(&spec.program, &spec.cwd, path.as_deref())?;
    let mut cmd = tokio::process::Command::new(&program);
    cmd.args(&spec.args)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let started = tokio::time::Instant::now();
    let (mut child, registered) =
        orphans::spawn(&mut cmd).map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => SpawnError::NotFound {
                program: spec.program.clone(),
                searched: false,
            },
            std::io::ErrorKind::PermissionDenied => SpawnError::NotExecutable {
                path: program.clone(),
            },
            _ => SpawnError::Os {
                path: program.clone(),
                source,
            },
        })?;
    // With `process_group(0)` the child's pid is its group id.
    let mut guard = GroupGuard {
        pgid: child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(nix::unistd::Pid::from_raw),
    };
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();

    let mut out = Vec::new();
    let mut err = Vec::new();
    let mut killed: Option<KillReason> = None;
    let (exit, overflow, err_truncated) = {
        let feed = async {
            if let (Some(mut w), Some(data)) = (stdin, spec.stdin.as_ref()) {
                // A child that exits without reading gives EPIPE: not an error.
                let _ = w.write_all(data).await;
                let _ = w.shutdown().await;
            }
        };
        let guard_ref = &guard;
        let out_ref = &mut out;
        let err_ref = &mut err;
        let io = async {
            let (_, overflow, truncated) = tokio::join!(
                feed,
                async {
                    match stdout {
                        Some(s) => read_capped(s, out_ref, spec.max_stdout_bytes, guard_ref).await,
                        None => false,
                    }
                },
                async {
                    match stderr {
                        Some(s) => read_tail(s, err_ref, spec.max_stderr_bytes).await,
                        None => false,
                    }
                },
            );
            (overflow, truncated)
        };
        let mut io = std::pin::pin!(io);
        let stop = async {
            match spec.timeout {
                Some(t) => tokio::select! {
                    () = tokio::time::sleep(t) => KillReason::Timeout(t),
                    () = cancel.cancelled() => KillReason::Cancelled,
                },
                None => {
                    cancel.cancelled().await;
                    KillReason::Cancelled
                }
            }
        };
        let mut stop = std::pin::pin!(stop);
        let mut io_result: Option<(bool, bool)> = None;
        let status = loop {
            tokio::select! {
                status = child.wait() => break status,
                r = &mut io, if io_result.is_none() => io_result = Some(r),
                reason = &mut stop, if killed.is_none() => {
                    guard_ref.kill();
                    killed = Some(reason);
                }
            }
        };
        // The leader is gone: kill what it left in its group so the pipes
        // close, then stop signalling (the pid may be reused from now on).
        guard_ref.kill();
        let io_result = match io_result {
            Some(r) => r,
            None => tokio::time::timeout(PIPE_GRACE, &mut io)
                .await
                .unwrap_or((false, false)),
        };
        let exit = match status {
            Ok(s) => match (s.code(), s.signal()) {
                (Some(c), _) => Exit::Code(c),
                (None, Some(sig)) => Exit::Signal(sig),
                (None, None) => Exit::Code(-1),
            },
            Err(_) => Exit::Code(-1),
        };
        (exit, io_result.0, io_result.1)
    };
    guard.disarm();
    // The leader was waited for: what escaped its group (a `setsid`) is
    // an orphan of chassis now, and goes.
    drop(registered);
    orphans::sweep_async().await;
    if overflow && killed.is_none() {
        killed = Some(KillReason::OutputLimit(spec.max_stdout_bytes));
    }
    Ok(ProcessOutput {
        exit,
        stdout: out,
        stderr: err,
        stderr_truncated: err_truncated,
        duration: started.elapsed(),
        killed,
    })
}
