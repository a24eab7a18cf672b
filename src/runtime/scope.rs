//! Ownership scopes: every effect a plugin creates is recorded here and
//! reverted when the plugin unloads.
//!
//! Closing a scope cancels its tasks and waits for them (bounded), then runs
//! cleanups in LIFO order. A failing step never stops the unwind: every
//! failure is collected into one [`EffectCleanupError`].

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A boxed error from plugin code.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A cleanup: the inverse of an effect that has no registry of its own.
pub type CleanupFn = Box<dyn FnOnce() -> BoxFuture<'static, Result<(), BoxError>> + Send>;

/// Why new work was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("scope `{scope}` is {state} and accepts no new effects")]
pub struct ScopeClosed {
    /// Scope name.
    pub scope: String,
    /// `closing` or `closed`.
    pub state: &'static str,
}

/// One failure met while closing a scope.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CleanupFailure {
    /// What was being undone (`task heartbeat`, a cleanup's description).
    pub description: String,
    /// The error, rendered.
    pub error: String,
}

/// Every failure met while closing a scope.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("closing `{scope}` met {} failure(s): {}", failures.len(), failures.iter().map(|f| format!("{} -> {}", f.description, f.error)).collect::<Vec<_>>().join("; "))]
pub struct EffectCleanupError {
    /// Scope name.
    pub scope: String,
    /// Failures in the order they happened.
    pub failures: Vec<CleanupFailure>,
}

enum Effect {
    Cleanup {
        description: String,
        f: CleanupFn,
    },
    Task {
        name: String,
        handle: tokio::task::JoinHandle<()>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ScopeState {
    Open,
    Closing,
    Closed,
}

/// Where finished tasks report failures.
type FailureSink = Arc<Mutex<Vec<CleanupFailure>>>;

/// A LIFO stack of reversible effects and owned tasks.
pub struct OwnershipScope {
    name: String,
    state: ScopeState,
    effects: Vec<Effect>,
    task_failures: FailureSink,
    task_timeout: Duration,
    task_count: usize,
}

impl std::fmt::Debug for OwnershipScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnershipScope")
            .field("name", &self.name)
            .field("effects", &self.effects.len())
            .finish()
    }
}

impl OwnershipScope {
    /// An open scope; tasks get `task_timeout` to finish after cancellation.
    pub fn new(name: impl Into<String>, task_timeout: Duration) -> Self {
        Self {
            name: name.into(),
            state: ScopeState::Open,
            effects: Vec::new(),
            task_failures: Arc::new(Mutex::new(Vec::new())),
            task_timeout,
            task_count: 0,
        }
    }

    /// The scope's name (`plugin:<entry>`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Live effects (cleanups and tasks).
    pub fn live_effects(&self) -> usize {
        self.effects.len()
    }

    fn check_open(&self) -> Result<(), ScopeClosed> {
        match self.state {
            ScopeState::Open => Ok(()),
            ScopeState::Closing => Err(ScopeClosed {
                scope: self.name.clone(),
                state: "closing",
            }),
            ScopeState::Closed => Err(ScopeClosed {
                scope: self.name.clone(),
                state: "closed",
            }),
        }
    }

    /// Record a cleanup to run when the scope closes.
    pub fn cleanup(
        &mut self,
        description: impl Into<String>,
        f: CleanupFn,
    ) -> Result<(), ScopeClosed> {
        self.check_open()?;
        self.effects.push(Effect::Cleanup {
            description: description.into(),
            f,
        });
        Ok(())
    }

    /// Spawn a task owned by this scope: cancelled and awaited on close; an
    /// error it returns is reported as a failure (cancellation is not).
    pub fn spawn<F>(&mut self, name: Option<String>, task: F) -> Result<String, ScopeClosed>
    where
        F: Future<Output = Result<(), BoxError>> + Send + 'static,
    {
        self.check_open()?;
        self.task_count += 1;
        let name = name.unwrap_or_else(|| format!("{}#{}", self.name, self.task_count));
        let sink = Arc::clone(&self.task_failures);
        let label = name.clone();
        let handle = tokio::spawn(async move {
            if let Err(e) = task.await
                && let Ok(mut failures) = sink.lock()
            {
                failures.push(CleanupFailure {
                    description: format!("task {label}"),
                    error: e.to_string(),
                });
            }
        });
        self.effects.push(Effect::Task {
            name: name.clone(),
            handle,
        });
        Ok(name)
    }

    /// Close: cancel and await tasks (each bounded by the task timeout),
    /// then run cleanups newest first. Idempotent.
    pub async fn close(&mut self) -> Result<(), EffectCleanupError> {
        if self.state == ScopeState::Closed {
            return Ok(());
        }
        self.state = ScopeState::Closing;
        let mut failures = Vec::new();
        let effects = std::mem::take(&mut self.effects);
        let mut cleanups = Vec::new();
        for effect in effects {
            match effect {
                Effect::Task { name, handle } => {
                    handle.abort();
                    match tokio::time::timeout(self.task_timeout, handle).await {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) if e.is_cancelled() => {}
                        Ok(Err(e)) => failures.push(CleanupFailure {
                            description: format!("task {name}"),
                            error: e.to_string(),
                        }),
                        Err(_) => failures.push(CleanupFailure {
                            description: format!("task {name}"),
                            error: format!(
                                "did not stop within {:?} (straggler)",
                                self.task_timeout
                            ),
                        }),
                    }
                }
                cleanup @ Effect::Cleanup { .. } => cleanups.push(cleanup),
            }
        }
        if let Ok(mut reported) = self.task_failures.lock() {
            failures.splice(0..0, reported.drain(..));
        }
        for effect in cleanups.into_iter().rev() {
            if let Effect::Cleanup { description, f } = effect
                && let Err(e) = f().await
            {
                failures.push(CleanupFailure {
                    description,
                    error: e.to_string(),
                });
            }
        }
        self.state = ScopeState::Closed;
        if failures.is_empty() {
            Ok(())
        } else {
            Err(EffectCleanupError {
                scope: self.name.clone(),
                failures,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cleanup_pushing(
        log: &Arc<Mutex<Vec<String>>>,
        label: &'static str,
        fail: bool,
    ) -> CleanupFn {
        let log = Arc::clone(log);
        Box::new(move || {
            Box::pin(async move {
                log.lock().unwrap().push(label.to_owned());
                if fail {
                    Err(format!("{label} broke").into())
                } else {
                    Ok(())
                }
            })
        })
    }

    #[tokio::test]
    async fn cleanups_unwind_lifo_and_aggregate_every_failure() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut scope = OwnershipScope::new("plugin:x", Duration::from_millis(200));
        scope
            .cleanup("first", cleanup_pushing(&log, "first", true))
            .unwrap();
        scope
            .cleanup("second", cleanup_pushing(&log, "second", false))
            .unwrap();
        scope
            .cleanup("third", cleanup_pushing(&log, "third", true))
            .unwrap();
        let err = scope.close().await.unwrap_err();
        assert_eq!(*log.lock().unwrap(), ["third", "second", "first"]);
        let described: Vec<&str> = err
            .failures
            .iter()
            .map(|f| f.description.as_str())
            .collect();
        assert_eq!(described, ["third", "first"]);
        assert!(scope.close().await.is_ok(), "close is idempotent");
        assert!(
            scope
                .cleanup("late", cleanup_pushing(&log, "late", false))
                .is_err()
        );
    }

    #[tokio::test]
    async fn tasks_are_cancelled_and_their_failures_reported() {
        let mut scope = OwnershipScope::new("plugin:t", Duration::from_millis(200));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        scope
            .spawn(Some("heartbeat".into()), async move {
                let _keep = tx;
                std::future::pending::<()>().await;
                Ok(())
            })
            .unwrap();
        scope
            .spawn(Some("doomed".into()), async { Err("exploded".into()) })
            .unwrap();
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(10)).await;
        let err = scope.close().await.unwrap_err();
        assert_eq!(err.failures.len(), 1, "{err}");
        assert!(err.failures[0].description.contains("doomed"));
        // The cancelled task dropped its sender.
        assert!(rx.await.is_err());
    }
}
