//! [`RecordingTelemetry`]: keeps every signal, for tests and the contract
//! checks.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::attrs::{validate_limits, validate_name, validate_required};
use super::{AttrValue, Attributes, Scalar, SignalKind, SpanId, SpanIdSource, Telemetry};
use super::{TelemetryError, Violation};

/// One recorded call, in emission order.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// An event.
    Event {
        /// The signal name.
        name: String,
        /// Its attributes.
        attrs: Attributes,
    },
    /// A span started.
    SpanStart {
        /// The id it was given.
        id: SpanId,
        /// The signal name.
        name: String,
        /// The attributes given at the start.
        attrs: Attributes,
    },
    /// A span ended.
    SpanEnd {
        /// The span's id.
        id: SpanId,
        /// The signal name (from its start).
        name: String,
        /// The attributes given at the end.
        attrs: Attributes,
        /// The recorded error.
        error: Option<String>,
    },
}

impl Record {
    /// The signal name.
    #[must_use]
    pub fn name(&self) -> &str {
        match self {
            Self::Event { name, .. }
            | Self::SpanStart { name, .. }
            | Self::SpanEnd { name, .. } => name,
        }
    }

    /// The attributes carried by this call.
    #[must_use]
    pub fn attrs(&self) -> &Attributes {
        match self {
            Self::Event { attrs, .. }
            | Self::SpanStart { attrs, .. }
            | Self::SpanEnd { attrs, .. } => attrs,
        }
    }
}

/// A span with its start and end attributes merged (end wins).
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedSpan {
    /// The span's id.
    pub id: SpanId,
    /// The signal name.
    pub name: String,
    /// Start and end attributes together.
    pub attrs: Attributes,
    /// The recorded error.
    pub error: Option<String>,
    /// Whether it was ended.
    pub ended: bool,
}

#[derive(Default)]
struct State {
    records: Vec<Record>,
    /// Open spans: the index of their `SpanStart` in `records`.
    open: BTreeMap<SpanId, usize>,
    violations: Vec<Violation>,
}

/// Stores every signal in memory. Clones share the store, so a test keeps
/// one clone and hands the other to the code under test.
///
/// In [strict](RecordingTelemetry::strict) mode every emission is checked
/// against the contract when it happens: an event completely, a span's
/// name, kind and limits at its start and its required keys (over start
/// and end attributes together) at its end. Violations are recorded, not
/// returned, so the code under test runs on and the test sees all of them.
#[derive(Clone, Default)]
pub struct RecordingTelemetry {
    state: Arc<Mutex<State>>,
    ids: Arc<SpanIdSource>,
    strict: bool,
}

impl std::fmt::Debug for RecordingTelemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("RecordingTelemetry")
            .field("records", &state.records.len())
            .field("violations", &state.violations.len())
            .field("strict", &self.strict)
            .finish()
    }
}

impl RecordingTelemetry {
    /// A recorder that accepts anything.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A recorder that checks every emission against the contract.
    #[must_use]
    pub fn strict() -> Self {
        Self {
            strict: true,
            ..Self::default()
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Every call, in order.
    #[must_use]
    pub fn records(&self) -> Vec<Record> {
        self.lock().records.clone()
    }

    /// Every event as `(name, attributes)`, in order.
    #[must_use]
    pub fn events(&self) -> Vec<(String, Attributes)> {
        self.lock()
            .records
            .iter()
            .filter_map(|r| match r {
                Record::Event { name, attrs } => Some((name.clone(), attrs.clone())),
                _ => None,
            })
            .collect()
    }

    /// Every span, in start order, with merged attributes.
    #[must_use]
    pub fn spans(&self) -> Vec<RecordedSpan> {
        let state = self.lock();
        let mut spans: Vec<RecordedSpan> = Vec::new();
        for record in &state.records {
            match record {
                Record::SpanStart { id, name, attrs } => spans.push(RecordedSpan {
                    id: *id,
                    name: name.clone(),
                    attrs: attrs.clone(),
                    error: None,
                    ended: false,
                }),
                Record::SpanEnd {
                    id, attrs, error, ..
                } => {
                    if let Some(span) = spans.iter_mut().find(|s| s.id == *id) {
                        span.attrs.extend(attrs.clone());
                        span.error.clone_from(error);
                        span.ended = true;
                    }
                }
                Record::Event { .. } => {}
            }
        }
        spans
    }

    /// The contract violations seen in strict mode, in order.
    #[must_use]
    pub fn violations(&self) -> Vec<Violation> {
        self.lock().violations.clone()
    }

    /// Whether `needle` occurs anywhere in what was recorded: names, keys,
    /// string values (list items too), number texts and errors. Tests use
    /// it to assert that secret material is absent.
    #[must_use]
    pub fn mentions(&self, needle: &str) -> bool {
        let in_attrs = |attrs: &Attributes| {
            attrs.iter().any(|(key, value)| {
                key.contains(needle)
                    || match value {
                        AttrValue::Str(s) => s.contains(needle),
                        AttrValue::Int(i) => i.to_string().contains(needle),
                        AttrValue::Float(f) => f.to_string().contains(needle),
                        AttrValue::List(items) => items.iter().any(|item| match item {
                            Scalar::Str(s) => s.contains(needle),
                            Scalar::Int(i) => i.to_string().contains(needle),
                            Scalar::Float(f) => f.to_string().contains(needle),
                            Scalar::Null | Scalar::Bool(_) => false,
                        }),
                        AttrValue::Null | AttrValue::Bool(_) => false,
                    }
            })
        };
        self.lock().records.iter().any(|record| {
            record.name().contains(needle)
                || in_attrs(record.attrs())
                || matches!(record, Record::SpanEnd { error: Some(e), .. } if e.contains(needle))
        })
    }
}

impl Telemetry for RecordingTelemetry {
    fn event(&self, name: &str, attrs: &Attributes) -> Result<(), TelemetryError> {
        let mut state = self.lock();
        if self.strict {
            let mut found = validate_name(name, SignalKind::Event);
            found.extend(validate_required(name, attrs));
            found.extend(validate_limits(name, attrs));
            state.violations.extend(found);
        }
        state.records.push(Record::Event {
            name: name.to_owned(),
            attrs: attrs.clone(),
        });
        Ok(())
    }

    fn span_start(&self, name: &str, attrs: &Attributes) -> Result<SpanId, TelemetryError> {
        let id = self.ids.next_id();
        let mut state = self.lock();
        if self.strict {
            let mut found = validate_name(name, SignalKind::Span);
            found.extend(validate_limits(name, attrs));
            state.violations.extend(found);
        }
        let index = state.records.len();
        state.open.insert(id, index);
        state.records.push(Record::SpanStart {
            id,
            name: name.to_owned(),
            attrs: attrs.clone(),
        });
        Ok(id)
    }

    fn span_end(
        &self,
        id: SpanId,
        attrs: &Attributes,
        error: Option<&str>,
    ) -> Result<(), TelemetryError> {
        let mut state = self.lock();
        let Some(index) = state.open.remove(&id) else {
            return Err(TelemetryError::UnknownSpan { id });
        };
        let Some(Record::SpanStart {
            name,
            attrs: started,
            ..
        }) = state.records.get(index)
        else {
            // An open span always indexes its start record.
            return Err(TelemetryError::UnknownSpan { id });
        };
        let name = name.clone();
        if self.strict {
            let mut merged = started.clone();
            merged.extend(attrs.iter().map(|(k, v)| (k.clone(), v.clone())));
            let mut found = validate_required(&name, &merged);
            found.extend(validate_limits(&name, attrs));
            state.violations.extend(found);
        }
        state.records.push(Record::SpanEnd {
            id,
            name,
            attrs: attrs.clone(),
            error: error.map(str::to_owned),
        });
        Ok(())
    }

    fn backend_name(&self) -> &str {
        "recording"
    }
}
