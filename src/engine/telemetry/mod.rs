//! The telemetry signal contract, and the backends and wrappers that carry
//! it.
//!
//! Chassis instruments only the operations it owns (reconcile, mounts,
//! generations, policy, budgets, replay, graph caching) and leaves model,
//! tool and graph internals to whatever runtime executes them. What it
//! emits is fixed as data ([`SIGNALS`]): each signal's name, kind and
//! required and optional attribute keys, plus the payload limits. Backends
//! transport these signals; they never reshape them. Keeping the contract
//! as data means tests can check every emission against it
//! ([`RecordingTelemetry::strict`]), which the reference never does at
//! emission time.
//!
//! Telemetry must never break what it observes, and must never leak a
//! secret. The standard chain, [`harness_chain`], is therefore
//! `SafeTelemetry(RedactingTelemetry(backend))`: the redacting layer scrubs
//! learned secrets and sensitive keys and enforces the limits (after
//! scrubbing, so a secret is never cut in half and half-leaked), and the
//! safe layer contains every error and panic of the backend. For several
//! backends, [`TeeTelemetry`] fans out so that one failing backend can
//! neither abort the operation nor silence another.
//!
//! Everything here is pure: backends that export (OpenTelemetry, files)
//! live at the edge and implement [`Telemetry`].
#![warn(missing_docs)]

mod attrs;
mod backend;
mod recording;
mod redacting;
mod safe;
mod signals;
mod tee;

pub use attrs::{
    AttrValue, Attributes, Scalar, Violation, attributes, truncate, validate_limits,
    validate_signal,
};
pub use backend::{NoopTelemetry, SpanId, SpanIdSource, Telemetry, TelemetryError};
pub use recording::{Record, RecordedSpan, RecordingTelemetry};
pub use redacting::{RedactingTelemetry, redact_error};
pub use safe::SafeTelemetry;
pub use signals::{
    ATTRIBUTE_ITEMS_LIMIT, ATTRIBUTE_STRING_LIMIT, CORRELATION_FIELDS, SIGNALS, SignalKind,
    SignalSpec, signal,
};
pub use tee::TeeTelemetry;

use crate::engine::secret::Redactor;

/// Wraps `backend` the way the harness wraps every backend:
/// `SafeTelemetry(RedactingTelemetry(backend))`.
///
/// Signals are scrubbed with `redactor` and held to the limits before the
/// backend sees them, and no error or panic of the backend escapes.
pub fn harness_chain<T: Telemetry>(
    backend: T,
    redactor: Redactor,
) -> SafeTelemetry<RedactingTelemetry<T>> {
    SafeTelemetry::new(RedactingTelemetry::new(backend, redactor))
}

#[cfg(test)]
mod tests;
