//! [`TeeTelemetry`]: one signal, several backends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use super::backend::guarded;
use super::{AttrValue, Attributes, SpanId, SpanIdSource, Telemetry, TelemetryError};

/// The signal announcing a contained backend failure to the others.
const FAILURE_SIGNAL: &str = "telemetry.failure";

/// Sends every signal to each of several backends.
///
/// Each backend is guarded (errors and panics are contained), so a failing
/// backend never stops the signal reaching the others. Each failure is
/// counted ([`TeeTelemetry::failures`]) and announced to every other
/// backend as a `telemetry.failure` event carrying `operation`
/// (`event`, `span_start` or `span_end`), `signal`, `backend` (the
/// failing backend's [`Telemetry::backend_name`]) and `backend_index`. A
/// failing announcement is counted but not announced again.
///
/// A call returns `Err` only when *every* backend failed (and no backend
/// means nothing to fail), so an outer [`super::SafeTelemetry`] sees a
/// total loss. Span ids are the tee's own, mapped to each backend's.
pub struct TeeTelemetry {
    backends: Vec<Box<dyn Telemetry>>,
    spans: Mutex<HashMap<SpanId, TeeSpan>>,
    ids: SpanIdSource,
    failures: AtomicU64,
}

struct TeeSpan {
    name: String,
    /// Each backend's id, `None` where the start failed.
    ids: Vec<Option<SpanId>>,
}

impl std::fmt::Debug for TeeTelemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TeeTelemetry")
            .field(
                "backends",
                &self
                    .backends
                    .iter()
                    .map(|b| b.backend_name())
                    .collect::<Vec<_>>(),
            )
            .field("failures", &self.failures())
            .finish()
    }
}

impl TeeTelemetry {
    /// Fans out to `backends`, in order.
    #[must_use]
    pub fn new(backends: Vec<Box<dyn Telemetry>>) -> Self {
        Self {
            backends,
            spans: Mutex::new(HashMap::new()),
            ids: SpanIdSource::new(),
            failures: AtomicU64::new(0),
        }
    }

    /// Adds a backend.
    #[must_use]
    pub fn with(mut self, backend: impl Telemetry + 'static) -> Self {
        self.backends.push(Box::new(backend));
        self
    }

    /// How many backends there are.
    #[must_use]
    pub fn len(&self) -> usize {
        self.backends.len()
    }

    /// Whether there is no backend.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.backends.is_empty()
    }

    /// How many backend failures (announcements included) were contained.
    #[must_use]
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    fn call<R>(
        &self,
        index: usize,
        f: impl FnOnce(&dyn Telemetry) -> Result<R, TelemetryError>,
    ) -> Option<R> {
        let backend = self.backends[index].as_ref();
        match guarded(backend.backend_name(), || f(backend)) {
            Ok(value) => Some(value),
            Err(_) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// Tells every backend but the failed ones' own about each failure.
    fn announce(&self, operation: &str, signal: &str, failed: &[usize]) {
        for &index in failed {
            let attrs: Attributes = [
                ("operation".to_owned(), AttrValue::from(operation)),
                ("signal".to_owned(), AttrValue::from(signal)),
                (
                    "backend".to_owned(),
                    AttrValue::from(self.backends[index].backend_name()),
                ),
                ("backend_index".to_owned(), AttrValue::from(index)),
            ]
            .into();
            for other in (0..self.backends.len()).filter(|&j| j != index) {
                self.call(other, |b| b.event(FAILURE_SIGNAL, &attrs));
            }
        }
    }

    fn outcome(&self, attempted: usize, failed: usize) -> Result<(), TelemetryError> {
        if attempted > 0 && failed == attempted {
            Err(TelemetryError::Backend {
                backend: "tee".to_owned(),
                message: format!("all {attempted} backends failed"),
            })
        } else {
            Ok(())
        }
    }
}

impl Telemetry for TeeTelemetry {
    fn event(&self, name: &str, attrs: &Attributes) -> Result<(), TelemetryError> {
        let failed: Vec<usize> = (0..self.backends.len())
            .filter(|&i| self.call(i, |b| b.event(name, attrs)).is_none())
            .collect();
        self.announce("event", name, &failed);
        self.outcome(self.backends.len(), failed.len())
    }

    fn span_start(&self, name: &str, attrs: &Attributes) -> Result<SpanId, TelemetryError> {
        let ids: Vec<Option<SpanId>> = (0..self.backends.len())
            .map(|i| self.call(i, |b| b.span_start(name, attrs)))
            .collect();
        let failed: Vec<usize> = (0..ids.len()).filter(|&i| ids[i].is_none()).collect();
        self.announce("span_start", name, &failed);
        self.outcome(ids.len(), failed.len())?;
        let id = self.ids.next_id();
        self.spans
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                id,
                TeeSpan {
                    name: name.to_owned(),
                    ids,
                },
            );
        Ok(id)
    }

    fn span_end(
        &self,
        id: SpanId,
        attrs: &Attributes,
        error: Option<&str>,
    ) -> Result<(), TelemetryError> {
        let span = self
            .spans
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id)
            .ok_or(TelemetryError::UnknownSpan { id })?;
        let mut attempted = 0;
        let mut failed = Vec::new();
        for (index, inner) in span.ids.iter().enumerate() {
            let Some(inner) = *inner else { continue };
            attempted += 1;
            if self
                .call(index, |b| b.span_end(inner, attrs, error))
                .is_none()
            {
                failed.push(index);
            }
        }
        self.announce("span_end", &span.name, &failed);
        self.outcome(attempted, failed.len())
    }

    fn backend_name(&self) -> &str {
        "tee"
    }
}
