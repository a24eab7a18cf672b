//! The [`Telemetry`] trait, span ids and errors.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::Attributes;

/// Identifies a started span to the backend that started it.
///
/// [`SpanId::NOOP`] (zero) is never handed out by a [`SpanIdSource`]: a
/// wrapper returns it for a span whose start failed, and ending it does
/// nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SpanId(pub u64);

impl SpanId {
    /// The span that was never started.
    pub const NOOP: Self = Self(0);
}

impl std::fmt::Display for SpanId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "span#{}", self.0)
    }
}

/// Hands out span ids 1, 2, 3, … from an atomic counter, so a backend
/// shared across threads needs no lock for them.
#[derive(Debug)]
pub struct SpanIdSource(AtomicU64);

impl Default for SpanIdSource {
    fn default() -> Self {
        Self(AtomicU64::new(1))
    }
}

impl SpanIdSource {
    /// A source starting at 1.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The next id; never [`SpanId::NOOP`].
    pub fn next_id(&self) -> SpanId {
        SpanId(self.0.fetch_add(1, Ordering::Relaxed))
    }
}

/// A telemetry backend failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TelemetryError {
    /// The backend reported an error.
    #[error("telemetry backend `{backend}` failed: {message}")]
    Backend {
        /// The backend's name ([`Telemetry::backend_name`]).
        backend: String,
        /// What it said.
        message: String,
    },
    /// The backend panicked; the panic was contained.
    #[error("telemetry backend `{backend}` panicked: {message}")]
    Panicked {
        /// The backend's name.
        backend: String,
        /// The panic message, when it was a string.
        message: String,
    },
    /// A span was ended that the backend never started (or already ended).
    #[error("no open span {id}")]
    UnknownSpan {
        /// The id that was ended.
        id: SpanId,
    },
}

/// Where signals go: a backend, or a wrapper around one.
///
/// Chassis calls these synchronously, from any thread; a backend that
/// exports over the network buffers. Implementations may fail or even
/// panic: the harness wraps every backend in [`super::SafeTelemetry`].
pub trait Telemetry: Send + Sync {
    /// Emits the event `name`.
    ///
    /// # Errors
    ///
    /// The backend's failure.
    fn event(&self, name: &str, attrs: &Attributes) -> Result<(), TelemetryError>;

    /// Starts the span `name`; the id ends it.
    ///
    /// # Errors
    ///
    /// The backend's failure.
    fn span_start(&self, name: &str, attrs: &Attributes) -> Result<SpanId, TelemetryError>;

    /// Ends span `id`, adding `attrs` and recording `error` when the
    /// observed operation failed.
    ///
    /// # Errors
    ///
    /// The backend's failure, or [`TelemetryError::UnknownSpan`].
    fn span_end(
        &self,
        id: SpanId,
        attrs: &Attributes,
        error: Option<&str>,
    ) -> Result<(), TelemetryError>;

    /// A short name for the backend, used in failure reports; wrappers
    /// report the wrapped backend's.
    fn backend_name(&self) -> &str {
        "telemetry"
    }

    /// Whether spans go anywhere. `false` lets a caller skip building,
    /// redacting and sending them: publishing 100,000 entries opens two
    /// spans an entry (mount, unmount) that a log below debug level drops.
    /// Events are always sent (hook failures are reported through them).
    fn spans_enabled(&self) -> bool {
        true
    }

    /// Whether the event `name` goes anywhere. `false` lets the redaction
    /// boundary skip scrubbing and sending it: a served run emits events
    /// that a log below debug level drops, and scrubbing each attribute
    /// was a tenth of the server's work. A backend that acts on some
    /// events (a hook failure said to the user) wants those whatever its
    /// log keeps.
    fn wants_event(&self, name: &str) -> bool {
        let _ = name;
        true
    }
}

macro_rules! forward {
    ($($ty:ty),*) => {$(
        impl<T: Telemetry + ?Sized> Telemetry for $ty {
            fn event(&self, name: &str, attrs: &Attributes) -> Result<(), TelemetryError> {
                (**self).event(name, attrs)
            }
            fn span_start(&self, name: &str, attrs: &Attributes) -> Result<SpanId, TelemetryError> {
                (**self).span_start(name, attrs)
            }
            fn span_end(
                &self,
                id: SpanId,
                attrs: &Attributes,
                error: Option<&str>,
            ) -> Result<(), TelemetryError> {
                (**self).span_end(id, attrs, error)
            }
            fn backend_name(&self) -> &str {
                (**self).backend_name()
            }
            fn spans_enabled(&self) -> bool {
                (**self).spans_enabled()
            }
            fn wants_event(&self, name: &str) -> bool {
                (**self).wants_event(name)
            }
        }
    )*};
}

forward!(&T, Box<T>, Arc<T>);

/// Discards every signal.
#[derive(Debug, Default)]
pub struct NoopTelemetry {
    ids: SpanIdSource,
}

impl Telemetry for NoopTelemetry {
    fn event(&self, _: &str, _: &Attributes) -> Result<(), TelemetryError> {
        Ok(())
    }

    fn span_start(&self, _: &str, _: &Attributes) -> Result<SpanId, TelemetryError> {
        Ok(self.ids.next_id())
    }

    fn span_end(&self, _: SpanId, _: &Attributes, _: Option<&str>) -> Result<(), TelemetryError> {
        Ok(())
    }

    fn backend_name(&self) -> &str {
        "noop"
    }

    fn spans_enabled(&self) -> bool {
        false
    }

    fn wants_event(&self, _: &str) -> bool {
        false
    }
}

/// Runs `f`, turning a panic into [`TelemetryError::Panicked`].
///
/// The backend is not used again by `f`'s caller in a way that could
/// observe broken invariants beyond what the backend itself guards (its
/// own locks poison or recover), hence `AssertUnwindSafe`.
pub(super) fn guarded<R>(
    backend: &str,
    f: impl FnOnce() -> Result<R, TelemetryError>,
) -> Result<R, TelemetryError> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a non-string panic payload".to_owned());
        Err(TelemetryError::Panicked {
            backend: backend.to_owned(),
            message,
        })
    })
}
