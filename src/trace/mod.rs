//! Telemetry backends that touch the outside world: a JSON-lines file
//! (`--trace FILE`) and a bridge to `tracing` (what `-v` shows).
//!
//! Both implement the engine's `Telemetry` contract and are meant to be
//! wrapped by `engine::telemetry::harness_chain` (safe + redacting) like
//! every backend, so they never see an unredacted value and never break
//! the operation they observe.

use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::engine::telemetry::{Attributes, SpanId, SpanIdSource, Telemetry, TelemetryError};

fn backend_error(e: impl std::fmt::Display) -> TelemetryError {
    TelemetryError::Backend {
        backend: "jsonl".into(),
        message: e.to_string(),
    }
}

/// Writes one JSON object per signal: `{"seq", "type": "event"|"span_start"|"span_end", "name", "span", "attrs", "error"}`.
pub struct JsonLinesTelemetry {
    out: Mutex<std::io::BufWriter<std::fs::File>>,
    ids: SpanIdSource,
    seq: AtomicU64,
    names: Mutex<std::collections::HashMap<u64, String>>,
}

impl std::fmt::Debug for JsonLinesTelemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonLinesTelemetry").finish_non_exhaustive()
    }
}

impl JsonLinesTelemetry {
    /// Create (truncate) `path`.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        let file = std::fs::File::create(path)?;
        Ok(Self {
            out: Mutex::new(std::io::BufWriter::new(file)),
            ids: SpanIdSource::default(),
            seq: AtomicU64::new(1),
            names: Mutex::new(std::collections::HashMap::new()),
        })
    }

    fn write(&self, line: serde_json::Value) -> Result<(), TelemetryError> {
        let mut out = self.out.lock().map_err(backend_error)?;
        serde_json::to_writer(&mut *out, &line).map_err(backend_error)?;
        out.write_all(b"\n").map_err(backend_error)?;
        out.flush().map_err(backend_error)
    }

    fn next(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::SeqCst)
    }
}

impl Telemetry for JsonLinesTelemetry {
    fn event(&self, name: &str, attrs: &Attributes) -> Result<(), TelemetryError> {
        self.write(serde_json::json!({ "seq": self.next(), "type": "event", "name": name, "attrs": attrs }))
    }

    fn span_start(&self, name: &str, attrs: &Attributes) -> Result<SpanId, TelemetryError> {
        let id = self.ids.next_id();
        if let Ok(mut names) = self.names.lock() {
            names.insert(id.0, name.to_owned());
        }
        self.write(serde_json::json!({ "seq": self.next(), "type": "span_start", "name": name, "span": id.0, "attrs": attrs }))?;
        Ok(id)
    }

    fn span_end(
        &self,
        id: SpanId,
        attrs: &Attributes,
        error: Option<&str>,
    ) -> Result<(), TelemetryError> {
        let name = self
            .names
            .lock()
            .ok()
            .and_then(|mut n| n.remove(&id.0))
            .ok_or(TelemetryError::UnknownSpan { id })?;
        self.write(serde_json::json!({ "seq": self.next(), "type": "span_end", "name": name, "span": id.0, "attrs": attrs, "error": error }))
    }

    fn backend_name(&self) -> &str {
        "jsonl"
    }
}

/// The event [`WarnHookFailures`] says to the user.
const HOOK_FAILURE: &str = "hook.failure";

/// Forwards every signal to `inner`, and says on stderr (a `tracing`
/// warning, target `chassis::hook`) when a hook failed: a failure under the
/// default `error_policy` never fails the operation, so without this it
/// would pass unseen unless a trace was written.
pub struct WarnHookFailures<T> {
    inner: T,
    warn: Box<dyn Fn(&str) + Send + Sync>,
}

impl<T> WarnHookFailures<T> {
    /// Wrap `inner`; `warn` says one failure (already redacted) to the user,
    /// of either plane: a control-plane hook (`plugin_mounted`,
    /// `generation_published`, …) never fails the transition, so without
    /// this its failure would be seen only in a trace.
    pub fn new(inner: T, warn: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Self {
            inner,
            warn: Box::new(warn),
        }
    }
}

impl<T: Telemetry> Telemetry for WarnHookFailures<T> {
    fn event(&self, name: &str, attrs: &Attributes) -> Result<(), TelemetryError> {
        let text = |key: &str| match attrs.get(key) {
            Some(crate::engine::telemetry::AttrValue::Str(s)) => s.as_str(),
            _ => "?",
        };
        if name == HOOK_FAILURE {
            (self.warn)(&format!(
                "hook `{}` of `{}` failed on `{}`: {}",
                text("hook"),
                text("owner"),
                text("event"),
                text("description")
            ));
        }
        self.inner.event(name, attrs)
    }

    fn spans_enabled(&self) -> bool {
        self.inner.spans_enabled()
    }

    fn wants_event(&self, name: &str) -> bool {
        name == HOOK_FAILURE || self.inner.wants_event(name)
    }

    fn span_start(&self, name: &str, attrs: &Attributes) -> Result<SpanId, TelemetryError> {
        self.inner.span_start(name, attrs)
    }

    fn span_end(
        &self,
        id: SpanId,
        attrs: &Attributes,
        error: Option<&str>,
    ) -> Result<(), TelemetryError> {
        self.inner.span_end(id, attrs, error)
    }

    fn backend_name(&self) -> &str {
        self.inner.backend_name()
    }
}

/// Forwards signals to `tracing` at debug level (target `chassis::signal`).
#[derive(Debug, Default)]
pub struct TracingTelemetry {
    ids: SpanIdSource,
}

impl Telemetry for TracingTelemetry {
    fn event(&self, name: &str, attrs: &Attributes) -> Result<(), TelemetryError> {
        if !self.wants_event(name) {
            return Ok(());
        }
        let attrs = serde_json::to_string(attrs).unwrap_or_default();
        tracing::debug!(target: "chassis::signal", signal = name, attrs = attrs.as_str(), "event");
        Ok(())
    }

    /// Spans are logged at debug level on `chassis::signal`: below it
    /// they go nowhere.
    fn spans_enabled(&self) -> bool {
        tracing::enabled!(target: "chassis::signal", tracing::Level::DEBUG)
    }

    /// Events too: below debug level nothing is serialized.
    fn wants_event(&self, _: &str) -> bool {
        self.spans_enabled()
    }

    fn span_start(&self, name: &str, attrs: &Attributes) -> Result<SpanId, TelemetryError> {
        let id = self.ids.next_id();
        if !self.spans_enabled() {
            return Ok(id);
        }
        let attrs = serde_json::to_string(attrs).unwrap_or_default();
        tracing::debug!(target: "chassis::signal", signal = name, span = id.0, attrs = attrs.as_str(), "span start");
        Ok(id)
    }

    fn span_end(
        &self,
        id: SpanId,
        attrs: &Attributes,
        error: Option<&str>,
    ) -> Result<(), TelemetryError> {
        if !self.spans_enabled() {
            return Ok(());
        }
        let attrs = serde_json::to_string(attrs).unwrap_or_default();
        tracing::debug!(target: "chassis::signal", span = id.0, attrs = attrs.as_str(), error = error.unwrap_or(""), "span end");
        Ok(())
    }

    fn backend_name(&self) -> &str {
        "tracing"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::secret::{Redactor, SecretValue};
    use crate::engine::telemetry::{attributes, harness_chain};
    use std::sync::Arc;

    #[test]
    fn tracing_spans_are_enabled_only_when_debug_signals_are_logged() {
        let t = harness_chain(TracingTelemetry::default(), Redactor::new());
        let quiet = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::INFO)
            .with_writer(std::io::sink)
            .finish();
        tracing::subscriber::with_default(quiet, || assert!(!t.spans_enabled()));
        let loud = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_writer(std::io::sink)
            .finish();
        tracing::subscriber::with_default(loud, || assert!(t.spans_enabled()));
        // A trace file takes every span.
        let dir = tempfile::tempdir().unwrap();
        let file = JsonLinesTelemetry::create(&dir.path().join("t.jsonl")).unwrap();
        assert!(harness_chain(file, Redactor::new()).spans_enabled());
    }

    #[test]
    fn below_debug_only_a_hook_failure_is_scrubbed_and_it_is_still_said_redacted() {
        let said = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let sink = Arc::clone(&said);
        let warn = move |text: &str| sink.lock().unwrap().push(text.to_owned());
        let redactor = Redactor::new();
        redactor.learn(&SecretValue::new("sk-hook-canary-42"));
        let t = harness_chain(
            WarnHookFailures::new(TracingTelemetry::default(), warn),
            redactor,
        );
        let quiet = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::INFO)
            .with_writer(std::io::sink)
            .finish();
        tracing::subscriber::with_default(quiet, || {
            assert!(!t.wants_event("policy.decision"));
            assert!(t.wants_event(HOOK_FAILURE));
            assert_eq!(
                t.span_start("agent.run", &attributes([("agent", "a")]))
                    .unwrap(),
                SpanId::NOOP,
                "no span is opened that goes nowhere"
            );
            t.event(
                HOOK_FAILURE,
                &attributes([
                    ("hook", "h"),
                    ("owner", "o"),
                    ("event", "tool_call"),
                    ("description", "denied sk-hook-canary-42"),
                ]),
            )
            .unwrap();
        });
        assert_eq!(
            *said.lock().unwrap(),
            ["hook `h` of `o` failed on `tool_call`: denied <redacted>"]
        );
        let loud = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_writer(std::io::sink)
            .finish();
        tracing::subscriber::with_default(loud, || assert!(t.wants_event("policy.decision")));
    }

    #[test]
    fn jsonl_lines_are_redacted_through_the_harness_chain() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.jsonl");
        let redactor = Redactor::new();
        redactor.learn(&SecretValue::new("sk-trace-canary-99"));
        let t = harness_chain(JsonLinesTelemetry::create(&path).unwrap(), redactor);
        t.event(
            "policy.decision",
            &attributes([("tool", "x"), ("reason", "token sk-trace-canary-99")]),
        )
        .unwrap();
        let span = t
            .span_start(
                "tool.execute",
                &attributes([("tool", "x"), ("generation_id", "gen_0001")]),
            )
            .unwrap();
        t.span_end(span, &attributes([("status", "ok")]), None)
            .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 3, "{text}");
        assert!(!text.contains("sk-trace-canary-99"), "{text}");
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert!(v["seq"].is_u64());
        }
    }
}
