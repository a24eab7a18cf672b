//! A long-lived child's process group, killed whole when dropped.
//!
//! Why it exists: a program chassis keeps running across calls (an MCP
//! stdio server, a process plugin) lives in a process group of its own.
//! Ending it must end everything it started, and a chassis that drops it
//! on any path (an error, a panic in a task, a shutdown) must not leave it
//! behind: this type owns the group, asks the leader to exit within a
//! grace period on [`ProcessGroup::stop`], and `SIGKILL`s the group
//! otherwise and on drop.

use std::time::Duration;

use super::orphans::Started;

/// A child's process group (the child leads it: spawn it with
/// `process_group(0)`).
#[derive(Debug)]
pub struct ProcessGroup {
    /// The group's id until the leader was reaped (0 after: the id may be
    /// another process's by then, so nothing is signalled any more).
    pgid: std::sync::atomic::AtomicI32,
    child: tokio::sync::Mutex<Option<tokio::process::Child>>,
    /// Registered as started by chassis until the leader was waited for.
    registered: std::sync::Mutex<Option<Started>>,
}

impl ProcessGroup {
    /// The group led by `child`, registered as started by `registered`.
    pub fn new(child: tokio::process::Child, registered: Started) -> Self {
        Self {
            pgid: std::sync::atomic::AtomicI32::new(
                child.id().and_then(|p| i32::try_from(p).ok()).unwrap_or(0),
            ),
            child: tokio::sync::Mutex::new(Some(child)),
            registered: std::sync::Mutex::new(Some(registered)),
        }
    }

    /// The leader's pid, until it was reaped.
    pub fn pid(&self) -> Option<i32> {
        let pgid = self.pgid.load(std::sync::atomic::Ordering::SeqCst);
        (pgid > 0).then_some(pgid)
    }

    /// `SIGKILL` the whole group now.
    pub fn kill(&self) {
        if let Some(pgid) = self.pid() {
            // ESRCH (the group is already gone) is the expected outcome
            // when nothing is left.
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pgid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }

    /// Wait up to `grace` for the leader to exit, then kill the group and
    /// reap what escaped it.
    pub async fn stop(&self, grace: Duration) {
        self.stop_with_status(grace).await;
    }

    /// [`ProcessGroup::stop`], answering how the leader ended when it
    /// exited on its own within `grace` (`None` when it had to be killed,
    /// or was reaped before).
    pub async fn stop_with_status(&self, grace: Duration) -> Option<std::process::ExitStatus> {
        let mut child = self.child.lock().await;
        let mut status = None;
        if let Some(c) = child.as_mut() {
            status = tokio::time::timeout(grace, c.wait())
                .await
                .ok()
                .and_then(Result::ok);
        }
        self.kill();
        if let Some(mut c) = child.take() {
            let _ = c.wait().await;
        }
        // Reaped: the id is free for the system to reuse.
        self.pgid.store(0, std::sync::atomic::Ordering::SeqCst);
        // What escaped the group is an orphan of chassis now.
        drop(
            self.registered
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take(),
        );
        super::orphans::sweep_async().await;
        status
    }

    /// The leader's exit status once it exits, waiting at most `timeout`
    /// (`None` when it is still running then, or was reaped by a stop).
    /// As with [`ProcessGroup::exited`], once it has exited what is left
    /// of its group is killed and the id is no longer signalled.
    pub async fn wait_exited(&self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let mut child = self.child.lock().await;
        let c = child.as_mut()?;
        let status = tokio::time::timeout(timeout, c.wait())
            .await
            .ok()
            .and_then(Result::ok);
        if status.is_some() {
            self.kill();
            self.pgid.store(0, std::sync::atomic::Ordering::SeqCst);
        }
        status
    }

    /// The leader's exit status if it has exited (without waiting). Once
    /// it has (and is reaped), what is left of its group is killed and the
    /// id is no longer signalled.
    pub async fn exited(&self) -> Option<std::process::ExitStatus> {
        let mut child = self.child.lock().await;
        let status = child.as_mut().and_then(|c| c.try_wait().ok().flatten());
        if status.is_some() {
            self.kill();
            self.pgid.store(0, std::sync::atomic::Ordering::SeqCst);
        }
        status
    }
}

/// How a process ended, in words: "exited with code 7", "was ended by
/// signal 9 (SIGKILL)".
pub fn how_it_ended(status: &std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with code {code}"),
        (None, Some(signal)) => format!(
            "was ended by signal {signal}{}",
            nix::sys::signal::Signal::try_from(signal)
                .map(|s| format!(" ({s})"))
                .unwrap_or_default()
        ),
        (None, None) => format!("ended ({status})"),
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}
