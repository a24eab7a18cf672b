//! Contract, wrapper and fan-out tests.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::*;
use crate::engine::secret::{Redactor, SecretValue};

/// The seed's signal table: name, kind, required attributes.
const SEED: [(&str, SignalKind, &[&str]); 25] = {
    use SignalKind::{Event as E, Span as S};
    [
        ("harness.reconcile", S, &["harness"]),
        ("harness.shutdown", S, &["harness"]),
        ("plugin.mount", S, &["plugin", "entry_id"]),
        ("plugin.unmount", S, &["plugin", "entry_id", "instance_id"]),
        ("tool.execute", S, &["tool", "generation_id"]),
        (
            "agent.run",
            S,
            &["agent", "agent_revision", "generation_id"],
        ),
        (
            "dependency.resolve",
            E,
            &["eligible", "pending", "cycles", "edges", "scopes"],
        ),
        ("generation.build", E, &["plugins", "mounted"]),
        (
            "generation.publish",
            E,
            &["generation_id", "sequence", "previous", "plugins"],
        ),
        ("generation.acquire", E, &["generation_id", "sequence"]),
        ("generation.release", E, &["generation_id", "leases"]),
        (
            "generation.draining",
            E,
            &["generation_id", "successor", "leases"],
        ),
        ("generation.retired", E, &["generation_id"]),
        ("generation.impact", E, &[]),
        ("policy.decision", E, &["tool", "allowed"]),
        ("budget.exhausted", E, &["tool", "dimension"]),
        ("replay.hit", E, &["kind"]),
        ("replay.miss", E, &["kind"]),
        ("replay.exhausted", E, &["kind"]),
        ("graph.compile", E, &["agent", "definition_version"]),
        ("graph.cache", E, &["result"]),
        ("graph.cache.invalidate", E, &["agent", "entries"]),
        ("hook.failure", E, &["event", "error_type"]),
        ("cleanup.failure", E, &["error_type"]),
        ("telemetry.failure", E, &["operation", "signal"]),
    ]
};

#[test]
fn signals_match_the_seed_table() {
    let names: Vec<&str> = SIGNALS.iter().map(|s| s.name).collect();
    let unique: BTreeSet<&str> = names.iter().copied().collect();
    assert_eq!(unique.len(), names.len(), "names are unique");
    assert_eq!(SIGNALS.len(), SEED.len() + 1);
    for (i, (name, kind, required)) in SEED.iter().enumerate() {
        let spec = &SIGNALS[i];
        assert_eq!(spec.name, *name);
        assert_eq!(spec.kind, *kind, "{name}");
        assert_eq!(spec.required, *required, "{name}");
        assert_eq!(signal(name), Some(spec));
        for key in spec.optional {
            assert!(!spec.required.contains(key), "{name}: {key} twice");
        }
    }
    let model = signal("model.call").expect("the extension");
    assert_eq!(model.kind, SignalKind::Span);
    assert_eq!(
        model.required,
        ["model", "entry_id", "generation_id", "run_id"]
    );
    assert!(model.declares("duration_seconds") && model.declares("model"));
    assert!(!model.declares("prompt"));
    // Optional attributes from the reference's contract.
    let agent = signal("agent.run").expect("declared");
    assert!(agent.declares("snapshot_digest") && agent.declares("thread_id"));
    let tool = signal("tool.execute").expect("declared");
    for key in ["registration_id", "run_id", "replayed", "tool_call_id"] {
        assert!(tool.declares(key), "{key}");
    }
    assert_eq!(
        signal("telemetry.failure").expect("declared").optional,
        ["backend"]
    );
    // The reference's six decisions, and chassis's `pending`.
    assert_eq!(
        signal("generation.impact")
            .expect("declared")
            .optional
            .len(),
        7
    );
    assert!(signal("generation.drain").is_none(), "renamed in 0.9.0");

    assert_eq!(CORRELATION_FIELDS.len(), 10);
    let fields: BTreeSet<&str> = CORRELATION_FIELDS.iter().copied().collect();
    assert_eq!(fields.len(), 10);
    assert_eq!((ATTRIBUTE_STRING_LIMIT, ATTRIBUTE_ITEMS_LIMIT), (512, 32));
}

#[test]
fn validation_reports_every_violation_kind() {
    let ok = attributes([("tool", "search"), ("allowed", "yes")]);
    assert_eq!(
        validate_signal("policy.decision", SignalKind::Event, &ok),
        Ok(())
    );
    // Extra keys are allowed.
    let mut extra = ok.clone();
    extra.insert("whatever".into(), AttrValue::Null);
    assert_eq!(
        validate_signal("policy.decision", SignalKind::Event, &extra),
        Ok(())
    );

    let err = validate_signal("no.such", SignalKind::Event, &Attributes::new()).expect_err("");
    assert_eq!(
        err,
        [Violation::UnknownSignal {
            signal: "no.such".into()
        }]
    );

    let err = validate_signal("agent.run", SignalKind::Event, &Attributes::new()).expect_err("");
    assert_eq!(
        err[0],
        Violation::WrongKind {
            signal: "agent.run".into(),
            expected: SignalKind::Span,
            actual: SignalKind::Event,
        }
    );
    assert_eq!(err.len(), 4, "wrong kind and three missing keys: {err:?}");
    assert_eq!(
        err[0].to_string(),
        "`agent.run` is declared as a span, emitted as a event"
    );

    let mut attrs = attributes([("tool", "x")]);
    attrs.insert("reason".into(), AttrValue::Str("é".repeat(513)));
    attrs.insert("permissions".into(), AttrValue::from(vec![0_i64; 33]));
    attrs.insert(
        "more".into(),
        AttrValue::List(vec![Scalar::Str("y".repeat(600)), Scalar::Null]),
    );
    attrs.insert("edge".into(), AttrValue::Str("z".repeat(512)));
    let err = validate_signal("policy.decision", SignalKind::Event, &attrs).expect_err("");
    assert_eq!(
        err,
        [
            Violation::MissingAttribute {
                signal: "policy.decision".into(),
                key: "allowed".into()
            },
            Violation::StringTooLong {
                signal: "policy.decision".into(),
                key: "more".into(),
                chars: 600
            },
            Violation::TooManyItems {
                signal: "policy.decision".into(),
                key: "permissions".into(),
                items: 33
            },
            Violation::StringTooLong {
                signal: "policy.decision".into(),
                key: "reason".into(),
                chars: 513
            },
        ]
    );
}

#[test]
fn truncation_enforces_the_limits() {
    let mut attrs = attributes([
        ("long", AttrValue::Str("ä".repeat(1000))),
        ("exact", AttrValue::Str("b".repeat(512))),
        ("list", AttrValue::from(vec!["c".repeat(513); 40])),
        ("n", AttrValue::Int(7)),
    ]);
    assert_eq!(truncate(&mut attrs), 2);
    assert!(validate_limits("x", &attrs).is_empty());
    let AttrValue::Str(long) = &attrs["long"] else {
        panic!("a string")
    };
    assert_eq!(long.chars().count(), 512);
    assert!(long.ends_with("ä…"));
    assert_eq!(attrs["exact"], AttrValue::Str("b".repeat(512)));
    let AttrValue::List(items) = &attrs["list"] else {
        panic!("a list")
    };
    assert_eq!(items.len(), 32);
    assert!(matches!(&items[31], Scalar::Str(s) if s.chars().count() == 512));
    assert_eq!(truncate(&mut attrs), 0, "idempotent");
    // Values serialize as plain JSON.
    let json = serde_json::to_value(attributes([
        (
            "a",
            AttrValue::from(vec![Scalar::Null, 1_i64.into(), "x".into()]),
        ),
        ("b", AttrValue::from(Option::<i64>::None)),
    ]))
    .expect("serializes");
    assert_eq!(json, serde_json::json!({"a": [null, 1, "x"], "b": null}));
}

#[test]
fn strict_recording_checks_spans_at_both_ends() {
    let rec = RecordingTelemetry::strict();
    let id = rec
        .span_start("plugin.mount", &attributes([("plugin", "p")]))
        .expect("started");
    rec.span_end(id, &attributes([("entry_id", "e")]), None)
        .expect("ended");
    assert!(rec.violations().is_empty(), "{:?}", rec.violations());
    let id = rec
        .span_start("plugin.mount", &attributes([("plugin", "p")]))
        .expect("started");
    rec.span_end(id, &Attributes::new(), Some("boom"))
        .expect("ended");
    rec.event("plugin.mount", &Attributes::new())
        .expect("recorded");
    let v = rec.violations();
    assert_eq!(v.len(), 4, "{v:?}"); // missing entry_id; wrong kind + 2 missing
    assert_eq!(
        rec.span_end(id, &Attributes::new(), None),
        Err(TelemetryError::UnknownSpan { id })
    );
    let spans = rec.spans();
    assert_eq!(spans.len(), 2);
    assert!(spans[0].ended && spans[0].attrs.contains_key("entry_id"));
    assert_eq!(spans[1].error.as_deref(), Some("boom"));
    assert_eq!(rec.events().len(), 1);
    assert_eq!(rec.records().len(), 5);
    // A lax recorder records without checking.
    let lax = RecordingTelemetry::new();
    lax.event("no.such", &Attributes::new()).expect("recorded");
    assert!(lax.violations().is_empty());
}

const CANARY: &str = "sk-canary-8c1f2e";

#[test]
fn redaction_removes_a_learned_canary_everywhere() {
    let redactor = Redactor::new();
    redactor.learn(&SecretValue::new(CANARY));
    redactor.learn(&SecretValue::new("987654321"));
    let rec = RecordingTelemetry::strict();
    let chain = harness_chain(rec.clone(), redactor.clone());

    chain
        .event(
            "policy.decision",
            &attributes([
                ("tool", AttrValue::from(format!("call {CANARY}"))),
                ("allowed", AttrValue::Bool(false)),
                ("reason", AttrValue::from(vec![CANARY, "ok"])),
                ("api_key", AttrValue::Int(12)),
                ("tokens", AttrValue::Int(12)),
                ("pin", AttrValue::Int(9_876_543_210)),
                (CANARY, AttrValue::Null),
            ]),
        )
        .expect("never fails");
    let id = chain
        .span_start(
            "tool.execute",
            &attributes([
                ("tool", AttrValue::from("search")),
                ("generation_id", AttrValue::from("gen_0001")),
                (
                    "owner",
                    AttrValue::from(format!("{}{CANARY}", "x".repeat(508))),
                ),
                ("url", AttrValue::from("https://bot:hunter2@example.com/x")),
            ]),
        )
        .expect("never fails");
    chain
        .span_end(
            id,
            &attributes([("run_id", format!("run-{CANARY}"))]),
            Some(&format!("AuthError: key {CANARY} rejected")),
        )
        .expect("never fails");
    let id = chain
        .span_start("harness.shutdown", &attributes([("harness", "h")]))
        .expect("never fails");
    chain
        .span_end(id, &Attributes::new(), Some(&format!("{CANARY}: oops")))
        .expect("never fails");

    assert!(!rec.mentions(CANARY), "{:?}", rec.records());
    assert!(!rec.mentions("hunter2"));
    assert!(!rec.mentions("987654321"));
    assert!(rec.violations().is_empty(), "{:?}", rec.violations());
    let (_, attrs) = &rec.events()[0];
    assert_eq!(attrs["tool"], AttrValue::from("call <redacted>"));
    assert_eq!(attrs["api_key"], AttrValue::from("<redacted>"));
    // `tokens` is a declared attribute (of `model.call`): kept.
    assert_eq!(attrs["tokens"], AttrValue::Int(12));
    assert_eq!(attrs["pin"], AttrValue::from("<redacted>"));
    assert!(attrs.contains_key("<redacted>"));
    let spans = rec.spans();
    assert_eq!(
        spans[0].error.as_deref(),
        Some("AuthError: key <redacted> rejected")
    );
    assert_eq!(spans[1].error.as_deref(), Some("<redacted>: oops"));
    // Scrubbed before truncation: the long value ends in the marker's head,
    // not in half of the canary.
    let AttrValue::Str(owner) = &spans[0].attrs["owner"] else {
        panic!("a string")
    };
    assert_eq!(owner.chars().count(), 512);
    assert!(owner.starts_with(&"x".repeat(508)), "{owner}");
    assert!(owner.ends_with("<re…"), "{owner}");
    assert_eq!(chain.failures(), 0);
}

#[test]
fn redact_error_removes_the_secret_not_the_message() {
    let r = Redactor::new();
    r.learn(&SecretValue::new("SecretType"));
    for (error, want) in [
        ("TimeoutError: after 30s", "TimeoutError: after 30s"),
        ("connection refused", "connection refused"),
        ("SecretType: x", "<redacted>: x"),
        (
            "cannot reach postgres://u:pw@db/x",
            "cannot reach postgres://u:<redacted>@db/x",
        ),
        ("", ""),
    ] {
        assert_eq!(redact_error(&r, error), want, "{error}");
    }
}

/// A backend that fails, or panics, on every call, counting the calls.
#[derive(Default)]
struct Faulty {
    panic: bool,
    calls: AtomicU64,
}

impl Faulty {
    fn fail(&self) -> TelemetryError {
        self.calls.fetch_add(1, Ordering::Relaxed);
        assert!(!self.panic, "backend exploded");
        TelemetryError::Backend {
            backend: "faulty".into(),
            message: "down".into(),
        }
    }
}

impl Telemetry for Faulty {
    fn event(&self, _: &str, _: &Attributes) -> Result<(), TelemetryError> {
        Err(self.fail())
    }
    fn span_start(&self, _: &str, _: &Attributes) -> Result<SpanId, TelemetryError> {
        Err(self.fail())
    }
    fn span_end(&self, _: SpanId, _: &Attributes, _: Option<&str>) -> Result<(), TelemetryError> {
        Err(self.fail())
    }
    fn backend_name(&self) -> &str {
        "faulty"
    }
}

#[test]
fn safe_contains_errors_and_panics() {
    let attrs = attributes([("harness", "h")]);
    for panic in [false, true] {
        let safe = harness_chain(
            Faulty {
                panic,
                ..Faulty::default()
            },
            Redactor::new(),
        );
        assert_eq!(safe.event("harness.shutdown", &attrs), Ok(()));
        let id = safe
            .span_start("harness.shutdown", &attrs)
            .expect("contained");
        assert_eq!(id, SpanId::NOOP);
        assert_eq!(safe.span_end(id, &attrs, None), Ok(()));
        assert_eq!(safe.span_end(SpanId(5), &attrs, Some("e")), Ok(()));
        assert_eq!(safe.failures(), 3, "panic={panic}");
        assert_eq!(safe.inner().inner().calls.load(Ordering::Relaxed), 3);
        assert_eq!(safe.backend_name(), "faulty");
    }
    // A healthy backend passes through, and unknown-span errors are
    // contained too.
    let rec = RecordingTelemetry::new();
    let safe = SafeTelemetry::new(rec.clone());
    let id = safe.span_start("harness.shutdown", &attrs).expect("ok");
    assert_ne!(id, SpanId::NOOP);
    safe.span_end(id, &attrs, None).expect("ok");
    safe.span_end(id, &attrs, None).expect("contained");
    assert_eq!(safe.failures(), 1);
    assert_eq!(rec.spans().len(), 1);
}

#[test]
fn tee_keeps_delivering_and_announces_failures() {
    let first = RecordingTelemetry::strict();
    let last = RecordingTelemetry::strict();
    let faulty = Arc::new(Faulty {
        panic: true,
        ..Faulty::default()
    });
    let tee = TeeTelemetry::new(vec![Box::new(first.clone()), Box::new(Arc::clone(&faulty))])
        .with(last.clone());
    assert_eq!(tee.len(), 3);

    let attrs = attributes([("harness", "h")]);
    tee.event("generation.impact", &Attributes::new())
        .expect("others accepted");
    let id = tee
        .span_start("harness.reconcile", &attrs)
        .expect("started");
    tee.span_end(id, &Attributes::new(), None).expect("ended");
    assert_eq!(
        tee.span_end(id, &Attributes::new(), None),
        Err(TelemetryError::UnknownSpan { id })
    );

    for rec in [&first, &last] {
        let names: Vec<String> = rec.records().iter().map(|r| r.name().to_owned()).collect();
        assert_eq!(
            names,
            [
                "generation.impact",
                "telemetry.failure",
                "harness.reconcile",
                "telemetry.failure",
                "harness.reconcile",
            ]
        );
        let failures: Vec<Attributes> = rec
            .events()
            .into_iter()
            .filter(|(n, _)| n == "telemetry.failure")
            .map(|(_, a)| a)
            .collect();
        assert_eq!(failures[0]["operation"], AttrValue::from("event"));
        assert_eq!(failures[0]["signal"], AttrValue::from("generation.impact"));
        assert_eq!(failures[0]["backend"], AttrValue::from("faulty"));
        assert_eq!(failures[0]["backend_index"], AttrValue::Int(1));
        assert_eq!(failures[1]["operation"], AttrValue::from("span_start"));
        assert!(rec.violations().is_empty(), "{:?}", rec.violations());
        assert!(rec.spans()[0].ended);
    }
    // The event and the span start failed; the span end was not attempted
    // on a backend whose start failed.
    assert_eq!(tee.failures(), 2);
    assert_eq!(faulty.calls.load(Ordering::Relaxed), 2);

    // Every backend failing is reported, so an outer Safe counts it.
    let all_down = TeeTelemetry::new(vec![Box::new(Faulty::default())]);
    assert!(
        all_down
            .event("generation.impact", &Attributes::new())
            .is_err()
    );
    let safe = SafeTelemetry::new(all_down);
    safe.event("generation.impact", &Attributes::new())
        .expect("contained");
    assert_eq!(safe.failures(), 1);
    assert!(
        TeeTelemetry::new(Vec::new())
            .event("x", &Attributes::new())
            .is_ok()
    );
}

#[test]
fn noop_and_span_ids() {
    let ids = SpanIdSource::new();
    assert_eq!(ids.next_id(), SpanId(1));
    assert_eq!(ids.next_id().to_string(), "span#2");
    let noop = NoopTelemetry::default();
    let id = noop.span_start("x", &Attributes::new()).expect("ok");
    assert_ne!(id, SpanId::NOOP);
    assert!(noop.span_end(id, &Attributes::new(), None).is_ok());
    assert!(noop.event("x", &Attributes::new()).is_ok());
}

#[test]
fn wrappers_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<SafeTelemetry<RedactingTelemetry<RecordingTelemetry>>>();
    check::<TeeTelemetry>();
    check::<Redactor>();
    check::<Box<dyn Telemetry>>();
}
