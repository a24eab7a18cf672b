//! Ctrl-C, SIGTERM and SIGHUP as a future, for the commands that start
//! plugins.
//!
//! Why it exists: a command that mounts plugins may be starting server
//! processes in their own process groups, which a terminal's Ctrl-C does
//! not reach. Every such command races its work against [`signalled`]:
//! dropping the work drops the half-started sessions (their process
//! groups are killed on drop), the harness is shut down, and the command
//! exits 130 instead of dying with children left running.

use tokio::signal::unix::{SignalKind, signal};

/// Completes on the first SIGINT, SIGTERM or SIGHUP (installing the
/// handlers on first use, so the default "die now" no longer applies: a
/// closed terminal or an `ssh` that drops ends the work as Ctrl-C does,
/// its processes killed, instead of leaving them running).
pub async fn signalled() {
    let on = |kind: SignalKind| async move {
        match signal(kind) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = on(SignalKind::terminate()) => {}
        () = on(SignalKind::hangup()) => {}
    }
}
