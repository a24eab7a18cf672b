//! [`SafeTelemetry`]: telemetry that cannot break what it observes.

use std::sync::atomic::{AtomicU64, Ordering};

use super::backend::guarded;
use super::{Attributes, SpanId, Telemetry, TelemetryError};

/// Contains every error and panic of the wrapped backend.
///
/// No call ever returns `Err`: a failed event is dropped, a span whose
/// start failed gets [`SpanId::NOOP`] (ending it does nothing), and a
/// failed end is dropped. Each contained failure is counted
/// ([`SafeTelemetry::failures`]) so it stays visible; the edge may report
/// the count, since the failures' texts may carry unredacted material
/// from the backend and are not kept.
#[derive(Debug)]
pub struct SafeTelemetry<T> {
    inner: T,
    failures: AtomicU64,
}

impl<T: Telemetry> SafeTelemetry<T> {
    /// Wraps `inner`.
    pub fn new(inner: T) -> Self {
        Self {
            inner,
            failures: AtomicU64::new(0),
        }
    }

    /// How many failures (errors and panics) were contained so far.
    #[must_use]
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// The wrapped backend.
    #[must_use]
    pub fn inner(&self) -> &T {
        &self.inner
    }

    fn contain<R>(&self, f: impl FnOnce() -> Result<R, TelemetryError>) -> Option<R> {
        match guarded(self.inner.backend_name(), f) {
            Ok(value) => Some(value),
            Err(_) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }
}

impl<T: Telemetry> Telemetry for SafeTelemetry<T> {
    fn event(&self, name: &str, attrs: &Attributes) -> Result<(), TelemetryError> {
        if !self.wants_event(name) {
            return Ok(());
        }
        self.contain(|| self.inner.event(name, attrs));
        Ok(())
    }

    fn span_start(&self, name: &str, attrs: &Attributes) -> Result<SpanId, TelemetryError> {
        if !self.spans_enabled() {
            return Ok(SpanId::NOOP);
        }
        Ok(self
            .contain(|| self.inner.span_start(name, attrs))
            .unwrap_or(SpanId::NOOP))
    }

    fn span_end(
        &self,
        id: SpanId,
        attrs: &Attributes,
        error: Option<&str>,
    ) -> Result<(), TelemetryError> {
        if id != SpanId::NOOP {
            self.contain(|| self.inner.span_end(id, attrs, error));
        }
        Ok(())
    }

    fn backend_name(&self) -> &str {
        self.inner.backend_name()
    }

    fn spans_enabled(&self) -> bool {
        self.inner.spans_enabled()
    }

    /// A backend that panics answering is sent the event (and contained
    /// there as ever).
    fn wants_event(&self, name: &str) -> bool {
        guarded(self.inner.backend_name(), || {
            Ok(self.inner.wants_event(name))
        })
        .unwrap_or(true)
    }
}
