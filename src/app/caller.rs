//! What the caller of an operation provides: where notices go, the
//! redactor that learns every secret the operation resolves, and what
//! interrupts it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::engine::secret::Redactor;

use super::report::{Notice, Reporter};

/// A future that completes when the operation should stop (a signal, a
/// client that went away, a server draining).
type Stop = Pin<Box<dyn Future<Output = ()> + Send>>;

/// What interrupts an operation: each wait starts afresh.
#[derive(Clone)]
pub struct Interrupt(Arc<dyn Fn() -> Stop + Send + Sync>);

impl std::fmt::Debug for Interrupt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Interrupt")
    }
}

impl Interrupt {
    /// Interrupted when a future made by `wait` completes.
    pub fn new<F>(wait: impl Fn() -> F + Send + Sync + 'static) -> Self
    where
        F: Future<Output = ()> + Send + 'static,
    {
        Self(Arc::new(move || Box::pin(wait())))
    }

    /// Never interrupted.
    pub fn never() -> Self {
        Self::new(std::future::pending::<()>)
    }

    /// Completes when the operation should stop.
    pub async fn wait(&self) {
        (self.0)().await;
    }
}

/// The caller's side of an operation.
#[derive(Clone)]
pub struct Caller {
    /// Where notices go.
    pub reporter: Arc<dyn Reporter>,
    /// Learns every secret the operation resolves; scrubs what it reports
    /// and records. A process shares one with its log writer.
    pub redactor: Redactor,
    /// What stops an operation that mounts plugins.
    pub interrupt: Interrupt,
}

impl Caller {
    /// A caller with `reporter`, a fresh redactor, never interrupted.
    pub fn new(reporter: Arc<dyn Reporter>) -> Self {
        Self {
            reporter,
            redactor: Redactor::new(),
            interrupt: Interrupt::never(),
        }
    }

    /// Say `notice`.
    pub fn notice(&self, notice: Notice<'_>) {
        self.reporter.notice(notice);
    }
}
