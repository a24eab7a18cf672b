//! Keeping a mounted plugin process alive for its generation.
//!
//! Why it exists: after mount, a plugin process may crash. The calls in
//! flight fail at once (the model sees a tool error saying so), and the
//! process is started again with a growing pause (200 ms, doubling: 0.2,
//! 0.4, 0.8, 1.6, 3.2 s; never more than [`MAX_BACKOFF`]) — at most
//! [`MAX_RESTARTS`] times in [`RESTART_WINDOW`];
//! after that the instance is unhealthy until the next generation. A
//! generation is immutable, so a restarted process must register exactly
//! what the generation published; otherwise its tools answer with an error
//! saying a new generation is needed. Calls that arrive while a restart is
//! under way wait for it (within their own deadline).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::protocol::SetupResult;
use super::rpc::Connection;
use super::start::{Launch, Process, launch};
use crate::runtime::{Cancellation, Health, HealthReporter};

/// The first pause before a restart.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(200);
/// The longest pause before a restart.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// The most restarts within [`RESTART_WINDOW`].
pub const MAX_RESTARTS: usize = 5;
/// The window [`MAX_RESTARTS`] counts in.
pub const RESTART_WINDOW: Duration = Duration::from_secs(300);

/// Restart attempts in the last window: the pause before the next one,
/// or none left.
#[derive(Debug, Default)]
pub struct RestartBudget {
    attempts: VecDeque<Instant>,
}

impl RestartBudget {
    /// The pause before an attempt at `now` (which is recorded), or `None`
    /// when [`MAX_RESTARTS`] attempts were made in the window.
    pub fn next(&mut self, now: Instant) -> Option<Duration> {
        while self
            .attempts
            .front()
            .is_some_and(|t| now.duration_since(*t) >= RESTART_WINDOW)
        {
            self.attempts.pop_front();
        }
        if self.attempts.len() >= MAX_RESTARTS {
            return None;
        }
        let doublings = u32::try_from(self.attempts.len()).unwrap_or(u32::MAX);
        self.attempts.push_back(now);
        Some(
            FIRST_BACKOFF
                .saturating_mul(2u32.saturating_pow(doublings))
                .min(MAX_BACKOFF),
        )
    }
}

#[derive(Clone)]
enum Status {
    Up(Arc<Connection>),
    Restarting,
    Down(String),
}

/// One mounted plugin's process, supervised.
pub struct Supervisor {
    launch: Launch,
    /// What the generation published.
    registered: SetupResult,
    status: watch::Sender<Status>,
    current: tokio::sync::Mutex<Option<Arc<Process>>>,
    budget: Mutex<RestartBudget>,
    stopping: AtomicBool,
    health: Option<HealthReporter>,
}

impl std::fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supervisor")
            .field("entry", &self.launch.entry)
            .finish_non_exhaustive()
    }
}

impl Supervisor {
    /// Supervise `process`, mounted with `registered`.
    pub fn new(
        launch: Launch,
        process: Process,
        registered: SetupResult,
        health: Option<HealthReporter>,
    ) -> Arc<Self> {
        let (status, _) = watch::channel(Status::Up(Arc::clone(&process.conn)));
        Arc::new(Self {
            launch,
            registered,
            status,
            current: tokio::sync::Mutex::new(Some(Arc::new(process))),
            budget: Mutex::new(RestartBudget::default()),
            stopping: AtomicBool::new(false),
            health,
        })
    }

    /// What the generation published.
    pub fn registered(&self) -> &SetupResult {
        &self.registered
    }

    /// The entry.
    pub fn entry(&self) -> &str {
        &self.launch.entry
    }

    /// What a request the process stopped answering (`method`) fails
    /// with: the entry and its program, why the connection closed (how
    /// the process ended: "the process exited with code 7", or the
    /// protocol violation), and the last lines it wrote to stderr
    /// (redacted), as a failure at start says them.
    pub fn gone(&self, conn: &Connection, method: &str, reason: &str) -> String {
        super::start::failure(
            &self.launch.manifest,
            &self.launch.entry,
            &self.launch.program.display().to_string(),
            format_args!("is gone while answering `{method}`: {reason}; chassis is restarting it"),
            &conn.last_stderr(),
        )
    }

    /// The instance is down for this generation: tell the calls waiting,
    /// and the harness (its next reconcile mounts a fresh instance).
    fn went_down(&self, status: Status) {
        if let Some(h) = &self.health {
            h.down();
        }
        self.status.send_replace(status);
    }

    fn report(&self, health: Health) {
        if let Some(h) = &self.health {
            h.report(health);
        }
    }

    /// A live connection for one request: the current one, or the one a
    /// restart under way brings (waiting until `cancel` fires).
    pub async fn connection(
        &self,
        cancel: Option<&Cancellation>,
    ) -> Result<Arc<Connection>, String> {
        let mut rx = self.status.subscribe();
        loop {
            let status = rx.borrow_and_update().clone();
            match status {
                Status::Up(c) if c.closed_reason().is_none() => return Ok(c),
                Status::Down(reason) => return Err(reason),
                Status::Up(_) | Status::Restarting => {}
            }
            let cancelled = async {
                match cancel {
                    Some(c) => c.cancelled().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                changed = rx.changed() => {
                    if changed.is_err() {
                        return Err("the plugin was unmounted".into());
                    }
                }
                () = cancelled => return Err("cancelled while the plugin restarted".into()),
            }
        }
    }

    /// Follow the process until the instance stops: restart it when it
    /// dies (see the module docs).
    pub async fn watch(self: Arc<Self>) {
        loop {
            let conn = match &*self.status.borrow() {
                Status::Up(c) => Arc::clone(c),
                _ => return,
            };
            conn.wait_closed().await;
            if self.stopping.load(Ordering::SeqCst) {
                return;
            }
            conn.stderr_drained(Duration::from_millis(500)).await;
            let reason = conn.closed_reason().unwrap_or_default();
            tracing::warn!(
                target: "chassis::plugin",
                entry = %self.launch.entry,
                "the plugin process stopped: {reason}; last stderr: {}",
                conn.last_stderr().join(" | ")
            );
            self.report(Health::Unhealthy);
            self.status.send_replace(Status::Restarting);
            if let Some(old) = self.current.lock().await.take() {
                old.group.stop(Duration::ZERO).await;
            }
            if !self.restart().await {
                return;
            }
        }
    }

    /// Restart until it works or the budget is spent; `false` when the
    /// instance is down for this generation.
    async fn restart(&self) -> bool {
        loop {
            let pause = self
                .budget
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .next(Instant::now());
            let Some(pause) = pause else {
                self.went_down(Status::Down(format!(
                    "the plugin process of entry `{}` stopped {MAX_RESTARTS} times within {} minutes; it stays down until the next generation",
                    self.launch.entry,
                    RESTART_WINDOW.as_secs() / 60
                )));
                return false;
            };
            tokio::time::sleep(pause).await;
            if self.stopping.load(Ordering::SeqCst) {
                return false;
            }
            match launch(&self.launch).await {
                Ok((process, registered)) if registered == self.registered => {
                    if let Some(h) = &self.health {
                        h.restarted();
                    }
                    let conn = Arc::clone(&process.conn);
                    *self.current.lock().await = Some(Arc::new(process));
                    self.report(Health::Healthy);
                    self.status.send_replace(Status::Up(conn));
                    return true;
                }
                Ok((process, _)) => {
                    // Tell the waiting calls first: the teardown may take
                    // its grace period.
                    self.went_down(Status::Down(format!(
                        "the restarted plugin process of entry `{}` registers something other than this generation published; publish a new generation",
                        self.launch.entry
                    )));
                    process.stop(&self.launch.entry).await;
                    return false;
                }
                Err(e) if e.mismatch() => {
                    self.went_down(Status::Down(format!(
                        "the restarted plugin process of entry `{}` no longer matches this generation; publish a new generation: {e}",
                        self.launch.entry
                    )));
                    return false;
                }
                Err(e) => {
                    tracing::warn!(target: "chassis::plugin", entry = %self.launch.entry, "restart failed: {e}");
                }
            }
        }
    }

    /// Unmount: `teardown`, then end the process group.
    pub async fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        let current = self.current.lock().await.take();
        if let Some(p) = current {
            p.stop(&self.launch.entry).await;
        }
        let _ = self
            .status
            .send(Status::Down("the plugin was unmounted".into()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_doubles_and_the_window_allows_five() {
        let mut b = RestartBudget::default();
        let t0 = Instant::now();
        let pauses: Vec<Option<Duration>> = (0..6)
            .map(|i| b.next(t0 + Duration::from_secs(i)))
            .collect();
        assert_eq!(
            pauses,
            vec![
                Some(Duration::from_millis(200)),
                Some(Duration::from_millis(400)),
                Some(Duration::from_millis(800)),
                Some(Duration::from_millis(1600)),
                Some(Duration::from_millis(3200)),
                None
            ]
        );
        // Five minutes after the first attempt, one more is allowed.
        assert!(b.next(t0 + RESTART_WINDOW).is_some());
    }
}
