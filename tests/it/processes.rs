//! Nothing a tool starts outlives chassis: a descendant that leaves its
//! call's process group with `setsid` is killed when the call ends, and a
//! SIGHUP (a closed terminal) ends a run as Ctrl-C does, tools killed.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::run_in;

fn composition(tool_script: &str) -> String {
    format!(
        r#"version = 1
[entries.tools]
plugin = "command"
[[entries.tools.config.tools]]
name = "work"
description = "Works."
args = {{ type = "object" }}
argv = ["sh", "-c", {script}]
input = "none"
idempotent = true
timeout_seconds = 600

[entries.model]
plugin = "scripted"
[[entries.model.config.turns]]
tool_calls = [{{ name = "work", args = {{}} }}]
[[entries.model.config.turns]]
text = "done"

[agents.a]
prompt = "p"
default_input = "go"
"#,
        script = serde_json::to_string(tool_script).unwrap()
    )
}

/// The pid written to `file` once it appears.
fn wait_for_pid(file: &Path) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(text) = std::fs::read_to_string(file)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `pid` is a live (not zombie) process.
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z")
    })
}

fn gone_within(pid: i32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn kill(pid: i32) {
    let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
}

#[test]
fn a_descendant_that_calls_setsid_does_not_outlive_its_call() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("c.toml"),
        // The tool returns only once the escapee is in its own session.
        composition(
            "setsid sh -c 'echo $$ > escaped.pid; exec sleep 300' </dev/null >/dev/null 2>&1 & \
             while [ ! -s escaped.pid ]; do sleep 0.01; done",
        ),
    )
    .unwrap();
    let r = run_in(dir.path(), &["run", "c.toml"], &[]);
    let pid = wait_for_pid(&dir.path().join("escaped.pid"));
    let gone = gone_within(pid, Duration::from_secs(5));
    if !gone {
        kill(pid);
    }
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(gone, "the escaped `sleep` ({pid}) outlived chassis");
}

#[test]
fn sighup_ends_a_run_like_ctrl_c_and_kills_its_tools() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("c.toml"),
        composition("echo $$ > tool.pid; exec sleep 300"),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_chassis"))
        .args(["--color", "never", "run", "c.toml"])
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let tool = wait_for_pid(&dir.path().join("tool.pid"));
    let chassis = i32::try_from(child.id()).unwrap();
    Command::new("kill")
        .args(["-HUP", &chassis.to_string()])
        .status()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            kill(tool);
            panic!("chassis did not end on SIGHUP");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.wait_with_output().unwrap();
    let gone = gone_within(tool, Duration::from_secs(5));
    if !gone {
        kill(tool);
    }
    assert_eq!(
        status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(gone, "the tool ({tool}) outlived chassis");
}
