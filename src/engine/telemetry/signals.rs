//! The signal contract as data.

use serde::Serialize;

/// Whether a signal is a span (has a duration) or an event (a point).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SignalKind {
    /// Started and ended; attributes may arrive at either end.
    Span,
    /// A single point in time.
    Event,
}

impl std::fmt::Display for SignalKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Span => "span",
            Self::Event => "event",
        })
    }
}

/// One declared signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SignalSpec {
    /// The stable name, e.g. `harness.reconcile`.
    pub name: &'static str,
    /// Span or event.
    pub kind: SignalKind,
    /// Attribute keys every emission carries (for a span: by its end).
    pub required: &'static [&'static str],
    /// Declared attribute keys an emission may carry; others are allowed
    /// too, but these are the ones downstream systems can rely on.
    pub optional: &'static [&'static str],
}

impl SignalSpec {
    /// Whether `key` is one of the declared (required or optional) keys.
    #[must_use]
    pub fn declares(&self, key: &str) -> bool {
        self.required.contains(&key) || self.optional.contains(&key)
    }
}

/// The longest string attribute value, in characters.
pub const ATTRIBUTE_STRING_LIMIT: usize = 512;

/// The most items a list attribute value may hold.
pub const ATTRIBUTE_ITEMS_LIMIT: usize = 32;

/// The fields downstream systems join on; each is attached by the boundary
/// that owns the fact (`agent.run` carries the snapshot digest and revision,
/// `tool.execute` the generation, run and registration ids, `plugin.*` the
/// entry and instance ids).
pub const CORRELATION_FIELDS: &[&str] = &[
    "run_id",
    "thread_id",
    "generation_id",
    "snapshot_digest",
    "agent",
    "agent_revision",
    "entry_id",
    "instance_id",
    "registration_id",
    "scope_id",
];

const fn span(
    name: &'static str,
    required: &'static [&'static str],
    optional: &'static [&'static str],
) -> SignalSpec {
    SignalSpec {
        name,
        kind: SignalKind::Span,
        required,
        optional,
    }
}

const fn event(
    name: &'static str,
    required: &'static [&'static str],
    optional: &'static [&'static str],
) -> SignalSpec {
    SignalSpec {
        name,
        kind: SignalKind::Event,
        required,
        optional,
    }
}

/// Every signal chassis emits: the reference's 25, names stable since its
/// 0.9.0, then chassis's documented extension `model.call`.
pub const SIGNALS: &[SignalSpec] = &[
    span(
        "harness.reconcile",
        &["harness"],
        &[
            "desired",
            "generation_id",
            "mounted",
            "reused",
            "disposed",
            "failures",
            "rebuilt",
        ],
    ),
    span("harness.shutdown", &["harness"], &[]),
    span(
        "plugin.mount",
        &["plugin", "entry_id"],
        &["revision", "instance_id"],
    ),
    span(
        "plugin.unmount",
        &["plugin", "entry_id", "instance_id"],
        &["state"],
    ),
    span(
        "tool.execute",
        &["tool", "generation_id"],
        &[
            "owner",
            "idempotent",
            "replayed",
            "registration_id",
            "run_id",
            "tool_call_id",
        ],
    ),
    span(
        "agent.run",
        &["agent", "agent_revision", "generation_id"],
        &[
            "thread_id",
            "chassis_version",
            "snapshot_digest",
            "plugin_graph_hash",
            "graph_definition_hash",
            "tool_schema_hash",
            "run_id",
        ],
    ),
    event(
        "dependency.resolve",
        &["eligible", "pending", "cycles", "edges", "scopes"],
        &[],
    ),
    event("generation.build", &["plugins", "mounted"], &[]),
    event(
        "generation.publish",
        &["generation_id", "sequence", "previous", "plugins"],
        &[],
    ),
    event(
        "generation.acquire",
        &["generation_id", "sequence"],
        &["run_id"],
    ),
    event(
        "generation.release",
        &["generation_id", "leases"],
        &["run_id"],
    ),
    event(
        "generation.draining",
        &["generation_id", "successor", "leases"],
        &[],
    ),
    event("generation.retired", &["generation_id"], &["leases"]),
    event(
        "generation.impact",
        &[],
        &[
            "added",
            "removed",
            "reused",
            "rebuilt",
            "rewired",
            "unchanged",
            "pending",
        ],
    ),
    event(
        "policy.decision",
        &["tool", "allowed"],
        &["permission", "permissions", "reason"],
    ),
    event(
        "budget.exhausted",
        &["tool", "dimension"],
        &["run_id", "generation_id"],
    ),
    event(
        "replay.hit",
        &["kind"],
        &["tool", "key", "run_id", "generation_id"],
    ),
    event("replay.miss", &["kind"], &["tool", "fallback", "key"]),
    event("replay.exhausted", &["kind"], &["tool", "key"]),
    event(
        "graph.compile",
        &["agent", "definition_version"],
        &["cache_key", "tools"],
    ),
    event(
        "graph.cache",
        &["result"],
        &["agent", "definition_version", "cache_key"],
    ),
    event("graph.cache.invalidate", &["agent", "entries"], &[]),
    event("hook.failure", &["event", "error_type"], &["description"]),
    event(
        "cleanup.failure",
        &["error_type"],
        &["entry_id", "scope", "description"],
    ),
    event("telemetry.failure", &["operation", "signal"], &["backend"]),
    span(
        "model.call",
        &["model", "entry_id", "generation_id", "run_id"],
        &[
            "tokens",
            "prompt_tokens",
            "completion_tokens",
            "finish_reason",
            "replayed",
            "duration_seconds",
        ],
    ),
];

/// The declared signal called `name`.
#[must_use]
pub fn signal(name: &str) -> Option<&'static SignalSpec> {
    SIGNALS.iter().find(|s| s.name == name)
}
