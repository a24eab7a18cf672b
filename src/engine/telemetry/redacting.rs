//! [`RedactingTelemetry`]: the redaction boundary in front of a backend.

use crate::engine::redact::{REDACTED, is_sensitive_key};
use crate::engine::secret::Redactor;

use super::{
    AttrValue, Attributes, CORRELATION_FIELDS, SIGNALS, Scalar, SpanId, Telemetry, TelemetryError,
    truncate,
};

/// Whether `key` is declared by some signal or is a correlation field.
fn is_contract_key(key: &str) -> bool {
    CORRELATION_FIELDS.contains(&key) || SIGNALS.iter().any(|s| s.declares(key))
}

/// Scrubs every signal before the wrapped backend sees it.
///
/// * A value under a sensitive key ([`is_sensitive_key`]) becomes
///   `"<redacted>"`, whatever its type, unless the key is part of the
///   contract (declared by a signal in [`SIGNALS`], or a correlation
///   field): the contract's keys are reviewed vocabulary, and `tokens` (a
///   count on `model.call`) is not a credential. Their values are still
///   scrubbed as below.
/// * Every other string (list items, keys and the signal name too) has
///   each learned secret and URL password replaced, as by
///   [`Redactor::redact`]; a number whose text contains a learned secret
///   becomes `"<redacted>"`.
/// * The limits are then enforced ([`truncate`]). Scrubbing comes first, so
///   a secret is never cut in two and half of it let through.
/// * A recorded error keeps only its type: see [`redact_error`].
#[derive(Debug, Clone)]
pub struct RedactingTelemetry<T> {
    inner: T,
    redactor: Redactor,
}

impl<T: Telemetry> RedactingTelemetry<T> {
    /// Wraps `inner`, scrubbing with `redactor`.
    pub fn new(inner: T, redactor: Redactor) -> Self {
        Self { inner, redactor }
    }

    /// The wrapped backend.
    #[must_use]
    pub fn inner(&self) -> &T {
        &self.inner
    }

    /// The redactor in use.
    #[must_use]
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// A scrubbed, limit-respecting copy of `attrs`.
    #[must_use]
    pub fn scrub(&self, attrs: &Attributes) -> Attributes {
        let mut out: Attributes = attrs
            .iter()
            .map(|(key, value)| {
                let value = if is_sensitive_key(key) && !is_contract_key(key) {
                    AttrValue::Str(REDACTED.to_owned())
                } else {
                    self.scrub_value(value)
                };
                (self.redactor.redact(key).into_owned(), value)
            })
            .collect();
        truncate(&mut out);
        out
    }

    fn scrub_text(&self, s: &str) -> String {
        self.redactor.redact(s).into_owned()
    }

    fn number_leaks(&self, text: &str) -> bool {
        self.redactor.contains_secret(text)
    }

    fn scrub_value(&self, value: &AttrValue) -> AttrValue {
        let redacted = || AttrValue::Str(REDACTED.to_owned());
        match value {
            AttrValue::Str(s) => AttrValue::Str(self.scrub_text(s)),
            AttrValue::Int(i) if self.number_leaks(&i.to_string()) => redacted(),
            AttrValue::Float(f) if self.number_leaks(&f.to_string()) => redacted(),
            AttrValue::List(items) => AttrValue::List(
                items
                    .iter()
                    .map(|item| match item {
                        Scalar::Str(s) => Scalar::Str(self.scrub_text(s)),
                        Scalar::Int(i) if self.number_leaks(&i.to_string()) => {
                            Scalar::Str(REDACTED.to_owned())
                        }
                        Scalar::Float(f) if self.number_leaks(&f.to_string()) => {
                            Scalar::Str(REDACTED.to_owned())
                        }
                        other => other.clone(),
                    })
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

/// What a recorded error becomes: the message with every known secret
/// value and URL password replaced by `<redacted>`, and nothing else
/// removed.
///
/// The reference drops the whole message (`TimeoutError: <redacted>`), so a
/// trace says that something failed but never what; chassis keeps what the
/// user needs to act on (`tool \`read\` failed: exit code 2; stderr: no such
/// file`) and removes what must not leave (the values it knows are secret,
/// as everywhere else).
///
/// | error | recorded |
/// | --- | --- |
/// | `TimeoutError: after 30s` | `TimeoutError: after 30s` |
/// | `auth failed for sk-live-1234` (known) | `auth failed for <redacted>` |
/// | `cannot reach postgres://u:pw@db/x` | `cannot reach postgres://u:<redacted>@db/x` |
#[must_use]
pub fn redact_error(redactor: &Redactor, error: &str) -> String {
    redactor.redact(error).into_owned()
}

impl<T: Telemetry> Telemetry for RedactingTelemetry<T> {
    fn event(&self, name: &str, attrs: &Attributes) -> Result<(), TelemetryError> {
        self.inner
            .event(&self.redactor.redact(name), &self.scrub(attrs))
    }

    fn spans_enabled(&self) -> bool {
        self.inner.spans_enabled()
    }

    /// Asked with the name as the caller gave it: the answer decides
    /// whether anything is scrubbed and sent, and leaves nothing.
    fn wants_event(&self, name: &str) -> bool {
        self.inner.wants_event(name)
    }

    fn span_start(&self, name: &str, attrs: &Attributes) -> Result<SpanId, TelemetryError> {
        self.inner
            .span_start(&self.redactor.redact(name), &self.scrub(attrs))
    }

    fn span_end(
        &self,
        id: SpanId,
        attrs: &Attributes,
        error: Option<&str>,
    ) -> Result<(), TelemetryError> {
        let error = error.map(|e| redact_error(&self.redactor, e));
        self.inner
            .span_end(id, &self.scrub(attrs), error.as_deref())
    }

    fn backend_name(&self) -> &str {
        self.inner.backend_name()
    }
}
