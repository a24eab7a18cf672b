//! Process runner tests with real processes (`sh`, `cat`, `sleep`).

use std::time::{Duration, Instant};

use super::*;

fn sh(script: &str) -> ProcessSpec {
    ProcessSpec::new("sh", vec!["-c".into(), script.into()], std::env::temp_dir())
}

/// Whether `pid` is gone (absent, or a zombie waiting for a reaper that may
/// not exist in a container).
pub(crate) fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Poll `gone` for up to 10 s.
pub(crate) async fn wait_gone(pid: u32) -> bool {
    for _ in 0..100 {
        if gone(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

async fn read_pid(file: &Path) -> u32 {
    for _ in 0..100 {
        if let Ok(text) = std::fs::read_to_string(file)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no pid in {}", file.display());
}

#[tokio::test]
async fn stdin_is_written_and_closed_stdout_and_stderr_are_read() {
    let mut spec = ProcessSpec::new("cat", vec![], std::env::temp_dir());
    spec.stdin = Some(b"hello\nworld".to_vec());
    let out = run(&spec, &Cancellation::new()).await.unwrap();
    assert!(out.success(), "{}", out.describe());
    assert_eq!(out.stdout, b"hello\nworld");

    let out = run(&sh("echo out; echo err >&2; exit 3"), &Cancellation::new())
        .await
        .unwrap();
    assert_eq!(out.exit, Exit::Code(3));
    assert!(!out.success());
    assert_eq!(out.stdout, b"out\n");
    assert_eq!(out.stderr_text(), "err\n");
    assert_eq!(out.describe(), "exit code 3");
}

#[tokio::test]
async fn without_stdin_the_child_reads_end_of_file() {
    let out = run(
        &ProcessSpec::new("cat", vec![], std::env::temp_dir()),
        &Cancellation::new(),
    )
    .await
    .unwrap();
    assert!(out.success());
    assert!(out.stdout.is_empty());
}

#[tokio::test]
async fn the_environment_is_only_the_allow_list() {
    // HOME is set in any test environment; it is not allowed here.
    assert!(std::env::var_os("HOME").is_some());
    let mut spec = sh("echo ${HOME-unset} ${X_ALLOWED-unset}");
    spec.env = vec![("X_ALLOWED".into(), "yes".into())];
    let out = run(&spec, &Cancellation::new()).await.unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "unset yes\n");
    let env = allowed_env(&["HOME", "CHASSIS_SURELY_UNSET_VARIABLE"]);
    assert_eq!(env.len(), 1);
    assert_eq!(env[0].0, "HOME");
}

#[tokio::test]
async fn programs_are_resolved_on_the_parent_path() {
    let cwd = std::env::temp_dir();
    let path = std::env::var_os("PATH");
    let sh_path = resolve_program("sh", &cwd, path.as_deref()).unwrap();
    assert!(sh_path.is_absolute());
    let err = resolve_program("chassis-no-such-program", &cwd, path.as_deref()).unwrap_err();
    assert!(
        matches!(err, SpawnError::NotFound { searched: true, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("not found on PATH"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("data.txt"), "x").unwrap();
    let err = resolve_program("./data.txt", dir.path(), None).unwrap_err();
    assert!(matches!(err, SpawnError::NotExecutable { .. }), "{err}");
    let err = run(
        &ProcessSpec::new("./missing", vec![], dir.path()),
        &Cancellation::new(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, SpawnError::NotFound { .. }), "{err}");
    let err = run(
        &ProcessSpec::new("sh", vec![], dir.path().join("nope")),
        &Cancellation::new(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, SpawnError::BadCwd { .. }), "{err}");
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let mut spec = sh(&format!(
        "sleep 30 & echo $! > '{}'; sleep 30",
        pidfile.display()
    ));
    // Long enough for a loaded machine to start the background sleep.
    spec.timeout = Some(Duration::from_secs(2));
    let started = Instant::now();
    let out = run(&spec, &Cancellation::new()).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(
        out.killed,
        Some(KillReason::Timeout(Duration::from_secs(2)))
    );
    assert_eq!(out.exit, Exit::Signal(9));
    assert!(out.describe().contains("timed out"), "{}", out.describe());
    let grandchild = read_pid(&pidfile).await;
    assert!(wait_gone(grandchild).await, "the background sleep survived");
}

#[tokio::test]
async fn cancellation_and_dropping_the_future_kill_the_group() {
    let cancel = Cancellation::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        c.cancel();
    });
    let started = Instant::now();
    let out = run(&sh("sleep 30"), &cancel).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(out.killed, Some(KillReason::Cancelled));

    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let spec = sh(&format!(
        "sleep 30 & echo $! > '{}'; sleep 30",
        pidfile.display()
    ));
    let never = Cancellation::new();
    // Drop the run as soon as the grandchild exists (as the executor drops
    // a call on its deadline).
    tokio::select! {
        r = run(&spec, &never) => panic!("the run ended by itself: {r:?}"),
        _ = read_pid(&pidfile) => {}
    }
    let grandchild = read_pid(&pidfile).await;
    assert!(
        wait_gone(grandchild).await,
        "the background sleep survived the drop"
    );
}

#[tokio::test]
async fn background_processes_do_not_outlive_a_normal_exit() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    // The background sleep keeps stdout open: without killing the group
    // the runner would wait for it.
    let spec = sh(&format!(
        "sleep 30 & echo $! > '{}'; echo done",
        pidfile.display()
    ));
    let started = Instant::now();
    let out = run(&spec, &Cancellation::new()).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(out.success(), "{}", out.describe());
    assert_eq!(out.stdout, b"done\n");
    assert!(wait_gone(read_pid(&pidfile).await).await);
}

#[tokio::test]
async fn a_signal_is_reported_and_output_limits_hold() {
    let out = run(&sh("kill -SEGV $$"), &Cancellation::new())
        .await
        .unwrap();
    assert_eq!(out.exit, Exit::Signal(11));
    assert_eq!(out.killed, None);
    assert!(out.describe().contains("SIGSEGV"), "{}", out.describe());

    let mut spec = sh("while :; do echo yyyyyyyyyyyyyyyyyyyyyyyyy; done");
    spec.max_stdout_bytes = 1000;
    spec.timeout = Some(Duration::from_secs(20));
    let started = Instant::now();
    let out = run(&spec, &Cancellation::new()).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(out.killed, Some(KillReason::OutputLimit(1000)));
    assert_eq!(out.stdout.len(), 1000);

    let mut spec = sh("i=0; while [ $i -lt 300 ]; do echo line-$i >&2; i=$((i+1)); done");
    spec.max_stderr_bytes = 64;
    let out = run(&spec, &Cancellation::new()).await.unwrap();
    assert!(out.success());
    assert!(out.stderr_truncated);
    assert_eq!(out.stderr.len(), 64);
    assert!(out.stderr_text().starts_with('…'));
    assert!(out.stderr_text().ends_with("line-299\n"));
}
