//! Running the binary with a pinned environment and capturing everything.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The crate root: tests run from here so paths in output are relative.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// What one run produced.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// One text for a golden snapshot: exit code, stdout, stderr.
    pub fn transcript(&self) -> String {
        // The checkout's location differs between machines.
        let root = root().display().to_string();
        let text = format!(
            "exit: {}\n--- stdout\n{}\n--- stderr\n{}\n",
            self.code,
            self.stdout.trim_end(),
            self.stderr.trim_end()
        );
        text.replace(&root, "[ROOT]")
    }
}

/// Run `chassis ARGS` in `dir` with a pinned environment.
pub fn run_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_chassis"));
    cmd.args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("COLUMNS", "100")
        .env("NO_COLOR", "1")
        .env("LANG", "C.UTF-8");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("the chassis binary runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Run `chassis --color never ARGS` from the crate root.
pub fn run(args: &[&str]) -> Run {
    let mut all = vec!["--color", "never"];
    all.extend_from_slice(args);
    run_in(&root(), &all, &[])
}

/// The interpreter behind `python3` (not a pyenv shim: tests run chassis
/// with `HOME` pointing at a temporary folder, where a shim finds no
/// pyenv). Panics when there is none: the tests that need it never skip.
pub fn python() -> String {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 is installed (the MCP and process-plugin tests need it)");
    assert!(out.status.success(), "python3 -c failed");
    String::from_utf8(out.stdout)
        .expect("a path")
        .trim()
        .to_owned()
}

/// Whether a process whose command line (arguments joined by spaces)
/// contains `needle` is running.
pub fn running(needle: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|p| {
        std::fs::read(p.path().join("cmdline"))
            .map(|c| {
                String::from_utf8_lossy(&c)
                    .replace('\0', " ")
                    .contains(needle)
            })
            .unwrap_or(false)
    })
}

/// Start `chassis ARGS` in `dir`, wait (20 s at most) until a process
/// whose command line contains `needle` runs, let it settle for
/// `settle`, send chassis `signal`, and return what it printed and how it
/// ended.
pub fn signal_once_running(
    dir: &Path,
    args: &[&str],
    needle: &str,
    settle: std::time::Duration,
    signal: nix::sys::signal::Signal,
) -> std::process::Output {
    let child = Command::new(env!("CARGO_BIN_EXE_chassis"))
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !running(needle) {
        assert!(
            std::time::Instant::now() < deadline,
            "`{needle}` never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(settle);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
        signal,
    )
    .unwrap();
    child.wait_with_output().unwrap()
}
