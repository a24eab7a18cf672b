//! Tests of the budget core: validation, enforcement, hierarchy, atomicity,
//! deadlines, concurrency, and a model-based property test.
use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use serde_json::json;

use super::governor::fits;
use super::*;

use BudgetDimension as D;

fn clock() -> (ManualClock, Arc<dyn Clock>) {
    let clock = ManualClock::new();
    (clock.clone(), Arc::new(clock))
}

fn governor(limits: BudgetLimits) -> (ManualClock, BudgetGovernor) {
    let (manual, clock) = clock();
    (manual, BudgetGovernor::new(limits, clock))
}

fn limits(pairs: &[(BudgetDimension, f64)]) -> BudgetLimits {
    BudgetLimits::new(pairs.iter().copied()).expect("valid limits")
}

fn exceeded(result: Result<(), BudgetError>) -> BudgetExceeded {
    match result {
        Err(BudgetError::Exceeded(e)) => e,
        other => panic!("expected BudgetExceeded, got {other:?}"),
    }
}

// ---------------------------------------------------------------- dimensions

#[test]
fn budget_dimension_names_counts_and_defaults() {
    let table = [
        (
            D::WallClockSeconds,
            "wall_clock_seconds",
            false,
            Enforcement::Enforced,
        ),
        (D::ToolCalls, "tool_calls", true, Enforcement::Enforced),
        (D::ChildRuns, "child_runs", true, Enforcement::Enforced),
        (D::ModelCalls, "model_calls", true, Enforcement::Accounted),
        (D::Tokens, "tokens", true, Enforcement::Accounted),
        (
            D::EstimatedCost,
            "estimated_cost",
            false,
            Enforcement::Accounted,
        ),
    ];
    assert_eq!(D::ALL.len(), table.len());
    for (i, (dim, name, count, enforcement)) in table.into_iter().enumerate() {
        assert_eq!(D::ALL[i], dim);
        assert_eq!(dim.as_str(), name);
        assert_eq!(dim.to_string(), name);
        assert_eq!(D::from_name(name), Some(dim));
        assert_eq!(dim.is_count(), count, "{name}");
        assert_eq!(dim.default_enforcement(), enforcement, "{name}");
        assert_eq!(serde_json::to_value(dim).unwrap(), json!(name));
        assert_eq!(
            serde_json::from_value::<BudgetDimension>(json!(name)).unwrap(),
            dim
        );
    }
    assert_eq!(D::from_name("wall_clock"), None);
}

#[test]
fn budget_enforcement_profiles() {
    let default = EnforcementProfile::default();
    for dim in D::ALL {
        assert_eq!(default.get(dim), dim.default_enforcement());
        assert!(!default.is_overridden(dim));
    }
    let owning = EnforcementProfile::owning_model_boundary();
    for dim in D::ALL {
        assert_eq!(owning.get(dim), Enforcement::Enforced, "{dim}");
    }
    assert!(owning.is_overridden(D::Tokens));
    assert!(!owning.is_overridden(D::ToolCalls));
    let custom = default.with(D::ToolCalls, Enforcement::Accounted);
    assert_eq!(custom.get(D::ToolCalls), Enforcement::Accounted);
    assert_eq!(
        serde_json::to_value(owning).unwrap(),
        json!({
            "wall_clock_seconds": "enforced", "tool_calls": "enforced", "child_runs": "enforced",
            "model_calls": "enforced", "tokens": "enforced", "estimated_cost": "enforced",
        })
    );
}

// ---------------------------------------------------------------- limits

#[test]
fn budget_limit_validation_table() {
    use InvalidReason as R;
    let max = InvalidReason::MAX_COUNT;
    let table: &[(BudgetDimension, f64, Option<InvalidReason>)] = &[
        (D::ToolCalls, 0.0, None),
        (D::ToolCalls, 5.0, None),
        (D::ToolCalls, max, None),
        (D::ToolCalls, max * 2.0, Some(R::TooLarge)),
        (D::ToolCalls, 1.5, Some(R::Fractional)),
        (D::Tokens, 0.000_1, Some(R::Fractional)),
        (D::ChildRuns, -1.0, Some(R::Negative)),
        (D::ModelCalls, f64::NAN, Some(R::NotANumber)),
        (D::ModelCalls, f64::INFINITY, Some(R::NotFinite)),
        (D::EstimatedCost, f64::NEG_INFINITY, Some(R::NotFinite)),
        (D::EstimatedCost, 1.5, None),
        (D::EstimatedCost, 0.0, None),
        (D::EstimatedCost, -0.01, Some(R::Negative)),
        (D::EstimatedCost, f64::NAN, Some(R::NotANumber)),
        (D::WallClockSeconds, 0.5, None),
        (D::WallClockSeconds, 1e12, None),
        (D::WallClockSeconds, -0.5, Some(R::Negative)),
        (D::WallClockSeconds, f64::INFINITY, Some(R::NotFinite)),
    ];
    for &(dimension, value, expected) in table {
        let result = BudgetLimits::new([(dimension, value)]);
        match expected {
            None => {
                let limits = result.unwrap_or_else(|e| panic!("{dimension}={value}: {e}"));
                assert_eq!(limits.get(dimension), Some(value));
            }
            Some(reason) => match result {
                Err(BudgetError::InvalidLimit {
                    dimension: d,
                    value: v,
                    reason: r,
                }) => {
                    assert_eq!((d, r), (dimension, reason), "{dimension}={value}");
                    assert!(v.to_bits() == value.to_bits(), "value kept as given");
                }
                other => panic!("{dimension}={value}: expected {reason:?}, got {other:?}"),
            },
        }
    }
    let err = BudgetLimits::new([(D::ToolCalls, 1.5)]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid tool_calls limit 1.5: must be a whole number for a count dimension"
    );
}

#[test]
fn budget_limits_duplicates_builder_and_unlimited() {
    assert_eq!(
        BudgetLimits::new([(D::Tokens, 1.0), (D::Tokens, 2.0)]),
        Err(BudgetError::DuplicateLimit {
            dimension: D::Tokens
        })
    );
    let built = BudgetLimits::builder()
        .wall_clock_seconds(30.0)
        .tool_calls(5.0)
        .child_runs(2.0)
        .model_calls(10.0)
        .tokens(1000.0)
        .estimated_cost(0.5)
        .build()
        .unwrap();
    assert_eq!(built.iter().count(), 6);
    assert_eq!(built.get(D::Tokens), Some(1000.0));
    assert!(BudgetLimits::builder().tool_calls(2.5).build().is_err());
    assert!(BudgetLimits::default().is_empty());
    assert_eq!(BudgetLimits::unlimited(), BudgetLimits::default());
}

#[test]
fn budget_enforced_vs_accounted_dimensions() {
    let default = EnforcementProfile::default();
    let tokens_only = limits(&[(D::Tokens, 1000.0)]);
    assert_eq!(tokens_only.accounted_dimensions(&default), vec![D::Tokens]);
    assert!(tokens_only.enforced_dimensions(&default).is_empty());
    assert!(tokens_only.requires_accounting(&default));

    let mixed = limits(&[
        (D::EstimatedCost, 1.0),
        (D::ToolCalls, 3.0),
        (D::WallClockSeconds, 9.0),
    ]);
    assert_eq!(
        mixed.enforced_dimensions(&default),
        vec![D::WallClockSeconds, D::ToolCalls]
    );
    assert_eq!(mixed.accounted_dimensions(&default), vec![D::EstimatedCost]);

    let owning = EnforcementProfile::owning_model_boundary();
    assert!(!tokens_only.requires_accounting(&owning));
    assert_eq!(tokens_only.enforced_dimensions(&owning), vec![D::Tokens]);
    assert!(
        BudgetLimits::default()
            .accounted_dimensions(&default)
            .is_empty()
    );
}

#[test]
fn budget_describe_serializes_every_dimension() {
    let description = limits(&[(D::ToolCalls, 5.0), (D::EstimatedCost, 0.25)])
        .describe(&EnforcementProfile::default().with(D::Tokens, Enforcement::Enforced));
    assert_eq!(description.dimensions.len(), 6);
    assert_eq!(
        serde_json::to_value(&description).unwrap(),
        json!({
            "dimensions": [
                {"dimension": "wall_clock_seconds", "enforcement": "enforced", "overridden": false, "limit": null},
                {"dimension": "tool_calls", "enforcement": "enforced", "overridden": false, "limit": 5},
                {"dimension": "child_runs", "enforcement": "enforced", "overridden": false, "limit": null},
                {"dimension": "model_calls", "enforcement": "accounted", "overridden": false, "limit": null},
                {"dimension": "tokens", "enforcement": "enforced", "overridden": true, "limit": null},
                {"dimension": "estimated_cost", "enforcement": "accounted", "overridden": false, "limit": 0.25},
            ],
            "requires_accounting": true,
        })
    );
}

#[test]
fn budget_limits_serde_roundtrip_validates() {
    let l = limits(&[(D::ToolCalls, 5.0), (D::WallClockSeconds, 1.5)]);
    let value = serde_json::to_value(l).unwrap();
    assert_eq!(value, json!({"wall_clock_seconds": 1.5, "tool_calls": 5}));
    assert_eq!(serde_json::from_value::<BudgetLimits>(value).unwrap(), l);
    let err = serde_json::from_value::<BudgetLimits>(json!({"tool_calls": 1.5})).unwrap_err();
    assert!(err.to_string().contains("whole number"), "{err}");
    assert!(serde_json::from_value::<BudgetLimits>(json!({"tool_calls": -1})).is_err());
    assert!(serde_json::from_value::<BudgetLimits>(json!({"turns": 1})).is_err());
}

// ---------------------------------------------------------------- governor

#[test]
fn budget_governor_is_send_sync_and_cheap_to_clone() {
    fn assert_send_sync<T: Send + Sync + Clone>() {}
    assert_send_sync::<BudgetGovernor>();
    assert_send_sync::<ManualClock>();
    let (_, g) = governor(limits(&[(D::ToolCalls, 2.0)]));
    let h = g.clone();
    h.consume(D::ToolCalls, 1.0).unwrap();
    assert_eq!(g.used(D::ToolCalls), 1.0, "clones are the same allocation");
}

#[test]
fn budget_check_and_consume_against_limit() {
    let (_, g) = governor(limits(&[(D::ToolCalls, 3.0)]));
    g.check(D::ToolCalls, 3.0).unwrap();
    assert_eq!(g.used(D::ToolCalls), 0.0, "check charges nothing");
    g.consume(D::ToolCalls, 2.0).unwrap();
    g.consume(D::ToolCalls, 1.0).unwrap();
    assert_eq!(g.remaining(D::ToolCalls), Some(0.0));
    g.consume(D::ToolCalls, 0.0).unwrap();
    let e = exceeded(g.consume(D::ToolCalls, 1.0));
    assert_eq!(
        e,
        BudgetExceeded {
            dimension: D::ToolCalls,
            limit: 3.0,
            used: 3.0,
            requested: 1.0,
            ancestor: 0
        }
    );
    assert_eq!(
        e.to_string(),
        "tool_calls budget exceeded: 3 used of 3, 1 more requested"
    );
    assert_eq!(g.used(D::ToolCalls), 3.0);
    // Unlimited dimensions accept anything and report no remaining amount.
    g.consume(D::Tokens, 1e9).unwrap();
    assert_eq!(g.remaining(D::Tokens), None);
}

#[test]
fn budget_amounts_are_validated() {
    let (_, g) = governor(BudgetLimits::default());
    let cases = [
        (D::ToolCalls, 1.5, InvalidReason::Fractional),
        (D::Tokens, -1.0, InvalidReason::Negative),
        (D::EstimatedCost, f64::NAN, InvalidReason::NotANumber),
        (D::EstimatedCost, f64::INFINITY, InvalidReason::NotFinite),
    ];
    for (dimension, value, reason) in cases {
        for result in [g.check(dimension, value), g.consume(dimension, value)] {
            match result {
                Err(BudgetError::InvalidAmount {
                    dimension: d,
                    reason: r,
                    ..
                }) => {
                    assert_eq!((d, r), (dimension, reason));
                }
                other => panic!("{dimension}={value}: {other:?}"),
            }
        }
    }
    assert_eq!(
        g.consume(D::WallClockSeconds, 1.0),
        Err(BudgetError::NotConsumable {
            dimension: D::WallClockSeconds
        })
    );
    for dim in D::ALL {
        assert_eq!(g.used(dim), 0.0);
    }
}

#[test]
fn budget_child_consumption_propagates_to_every_ancestor() {
    let (_, root) = governor(BudgetLimits::default());
    let child = root.child(BudgetLimits::default()).unwrap();
    let grandchild = child.child(BudgetLimits::default()).unwrap();
    assert_eq!((root.depth(), child.depth(), grandchild.depth()), (0, 1, 2));
    grandchild.consume(D::ToolCalls, 2.0).unwrap();
    child.consume(D::Tokens, 7.0).unwrap();
    grandchild
        .record(Usage {
            model_calls: 1.0,
            estimated_cost: 0.5,
            ..Usage::default()
        })
        .unwrap();
    assert_eq!(grandchild.used(D::ToolCalls), 2.0);
    assert_eq!(child.used(D::ToolCalls), 2.0);
    assert_eq!(root.used(D::ToolCalls), 2.0);
    assert_eq!(
        (root.used(D::Tokens), grandchild.used(D::Tokens)),
        (7.0, 0.0)
    );
    assert_eq!(root.used(D::ModelCalls), 1.0);
    assert_eq!(root.used(D::EstimatedCost), 0.5);
    // child_runs: root charged for both nested runs, child for its own.
    assert_eq!(
        (root.used(D::ChildRuns), child.used(D::ChildRuns)),
        (2.0, 1.0)
    );
    assert!(root.parent().is_none());
    assert_eq!(grandchild.parent().unwrap().depth(), 1);
}

#[test]
fn budget_child_cannot_overdraw_parent() {
    let (_, parent) = governor(limits(&[(D::ToolCalls, 5.0)]));
    parent.consume(D::ToolCalls, 3.0).unwrap();
    let child = parent.child(limits(&[(D::ToolCalls, 10.0)])).unwrap();
    assert_eq!(
        child.remaining(D::ToolCalls),
        Some(2.0),
        "min over the chain"
    );
    child.consume(D::ToolCalls, 1.0).unwrap();
    child.consume(D::ToolCalls, 1.0).unwrap();
    let e = exceeded(child.consume(D::ToolCalls, 1.0));
    assert_eq!((e.limit, e.used, e.ancestor), (5.0, 5.0, 1));
    assert_eq!(
        e.to_string(),
        "tool_calls budget exceeded: 5 used of 5, 1 more requested (limit of the parent run)"
    );
    assert_eq!(
        (child.used(D::ToolCalls), parent.used(D::ToolCalls)),
        (2.0, 5.0)
    );
    // A tighter child limit binds the child without touching the parent.
    let (_, parent) = governor(limits(&[(D::Tokens, 100.0)]));
    let child = parent.child(limits(&[(D::Tokens, 10.0)])).unwrap();
    assert_eq!(exceeded(child.consume(D::Tokens, 11.0)).ancestor, 0);
    parent.consume(D::Tokens, 90.0).unwrap();
    assert_eq!(child.remaining(D::Tokens), Some(10.0));
}

#[test]
fn budget_child_runs_charged_on_creation_and_refused_when_exhausted() {
    let (_, root) = governor(limits(&[(D::ChildRuns, 2.0)]));
    let a = root.child(BudgetLimits::default()).unwrap();
    assert_eq!(root.used(D::ChildRuns), 1.0);
    // A grandchild counts against the root's child_runs too.
    let _b = a.child(BudgetLimits::default()).unwrap();
    assert_eq!(root.used(D::ChildRuns), 2.0);
    let e = root.child(BudgetLimits::default()).unwrap_err();
    assert_eq!(
        (e.dimension, e.limit, e.used, e.requested),
        (D::ChildRuns, 2.0, 2.0, 1.0)
    );
    let e = a.child(BudgetLimits::default()).unwrap_err();
    assert_eq!(e.ancestor, 1);
    assert_eq!(
        (root.used(D::ChildRuns), a.used(D::ChildRuns)),
        (2.0, 1.0),
        "refusal charges nothing"
    );
    // A zero limit refuses the first nested run.
    let (_, none) = governor(limits(&[(D::ChildRuns, 0.0)]));
    assert!(none.child(BudgetLimits::default()).is_err());
}

#[test]
fn budget_record_is_atomic_across_dimensions_and_chain() {
    // Own level: tokens fit, model_calls do not → nothing charged.
    let (_, g) = governor(limits(&[(D::ModelCalls, 1.0), (D::Tokens, 1000.0)]));
    g.record(Usage {
        model_calls: 1.0,
        tokens: 400.0,
        ..Usage::default()
    })
    .unwrap();
    let e = exceeded(g.record(Usage {
        model_calls: 1.0,
        tokens: 100.0,
        ..Usage::default()
    }));
    assert_eq!((e.dimension, e.ancestor), (D::ModelCalls, 0));
    assert_eq!((g.used(D::ModelCalls), g.used(D::Tokens)), (1.0, 400.0));

    // Ancestor level: the last dimension fails at the root → nothing at any level.
    let (_, root) = governor(limits(&[(D::EstimatedCost, 1.0)]));
    let mid = root.child(limits(&[(D::Tokens, 500.0)])).unwrap();
    let leaf = mid.child(BudgetLimits::default()).unwrap();
    let usage = Usage {
        model_calls: 2.0,
        tokens: 300.0,
        estimated_cost: 1.5,
        tool_calls: Some(1.0),
    };
    let e = exceeded(leaf.record(usage));
    assert_eq!((e.dimension, e.ancestor), (D::EstimatedCost, 2));
    for g in [&root, &mid, &leaf] {
        for dim in [D::ModelCalls, D::Tokens, D::EstimatedCost, D::ToolCalls] {
            assert_eq!(g.used(dim), 0.0, "{dim} at depth {}", g.depth());
        }
    }
    // Middle level failing on tokens: also nothing.
    let e = exceeded(leaf.record(Usage {
        tokens: 501.0,
        model_calls: 1.0,
        ..Usage::default()
    }));
    assert_eq!((e.dimension, e.ancestor), (D::Tokens, 1));
    assert_eq!(root.used(D::ModelCalls), 0.0);
    // The same report within limits is charged everywhere.
    leaf.record(Usage {
        estimated_cost: 0.75,
        ..usage
    })
    .unwrap();
    for g in [&root, &mid, &leaf] {
        assert_eq!(g.used(D::ToolCalls), 1.0);
        assert_eq!(g.used(D::EstimatedCost), 0.75);
    }
}

#[test]
fn budget_record_validates_every_amount_before_charging() {
    let (_, g) = governor(BudgetLimits::default());
    let bad = Usage {
        model_calls: 1.0,
        tokens: 10.0,
        estimated_cost: -0.1,
        tool_calls: None,
    };
    assert!(matches!(
        g.record(bad),
        Err(BudgetError::InvalidAmount {
            dimension: D::EstimatedCost,
            reason: InvalidReason::Negative,
            ..
        })
    ));
    let fractional = Usage {
        tool_calls: Some(0.5),
        ..Usage::default()
    };
    assert!(matches!(
        g.record(fractional),
        Err(BudgetError::InvalidAmount {
            dimension: D::ToolCalls,
            ..
        })
    ));
    assert_eq!((g.used(D::ModelCalls), g.used(D::Tokens)), (0.0, 0.0));
    // Zeros are a no-op even against an exhausted limit.
    let (_, g) = governor(limits(&[(D::Tokens, 0.0)]));
    g.record(Usage {
        model_calls: 3.0,
        ..Usage::default()
    })
    .unwrap();
    assert_eq!(g.used(D::ModelCalls), 3.0);
    let usage: Usage = serde_json::from_value(json!({"model_calls": 1, "tokens": 12})).unwrap();
    assert_eq!(
        usage,
        Usage {
            model_calls: 1.0,
            tokens: 12.0,
            ..Usage::default()
        }
    );
}

#[test]
fn budget_wall_clock_compares_elapsed_with_limit() {
    let (clock, g) = governor(limits(&[(D::WallClockSeconds, 0.5)]));
    g.check_deadline()
        .expect("a sub-second limit admits work at the start");
    g.check(D::WallClockSeconds, 0.0).unwrap();
    clock.advance(Duration::from_millis(400));
    g.check_deadline().expect("0.4 s of 0.5 s");
    assert_eq!(g.used(D::WallClockSeconds), 0.4);
    assert!((g.remaining(D::WallClockSeconds).unwrap() - 0.1).abs() < 1e-12);
    assert!(g.check(D::WallClockSeconds, 0.1).is_ok());
    assert!(
        g.check(D::WallClockSeconds, 0.2).is_err(),
        "0.4 + 0.2 > 0.5"
    );
    clock.set(Duration::from_millis(500));
    g.check_deadline().expect("exactly at the limit is allowed");
    clock.set(Duration::from_millis(600));
    let e = g.check_deadline().unwrap_err();
    assert_eq!(
        (e.dimension, e.limit, e.used, e.requested),
        (D::WallClockSeconds, 0.5, 0.6, 0.0)
    );
    assert_eq!(
        e.to_string(),
        "wall_clock_seconds budget exceeded: 0.6s elapsed of a 0.5s limit"
    );
    assert_eq!(g.remaining(D::WallClockSeconds), Some(0.0));
    // A clock that goes backwards is treated as standing still.
    clock.set(Duration::ZERO);
    g.check_deadline().unwrap();
    assert_eq!(g.elapsed(), Duration::ZERO);
}

#[test]
fn budget_wall_clock_children_start_later_but_obey_ancestors() {
    let (clock, root) = governor(limits(&[(D::WallClockSeconds, 10.0)]));
    clock.set(Duration::from_secs(4));
    let child = root.child(limits(&[(D::WallClockSeconds, 8.0)])).unwrap();
    assert_eq!(child.elapsed(), Duration::ZERO);
    assert_eq!(
        child.remaining(D::WallClockSeconds),
        Some(6.0),
        "the parent's deadline binds"
    );
    clock.set(Duration::from_secs(11));
    let e = child.check_deadline().unwrap_err();
    assert_eq!((e.ancestor, e.used), (1, 11.0));
    // Unlimited governors never miss a deadline.
    let (clock, free) = governor(BudgetLimits::default());
    clock.set(Duration::from_secs(1_000_000));
    free.check_deadline().unwrap();
    assert_eq!(free.remaining(D::WallClockSeconds), None);
}

#[test]
fn budget_cost_tolerates_representation_error_only() {
    let (_, g) = governor(limits(&[(D::EstimatedCost, 0.3)]));
    g.consume(D::EstimatedCost, 0.1).unwrap();
    g.consume(D::EstimatedCost, 0.1).unwrap();
    g.consume(D::EstimatedCost, 0.1)
        .expect("0.1 + 0.1 + 0.1 is 0.3, not an overspend");
    assert!(g.consume(D::EstimatedCost, 1e-6).is_err());
    assert!(!fits(D::ToolCalls, 3.0, 1.0, 3.0));
    assert!(
        !fits(D::EstimatedCost, 0.0, 1e-12, 0.0),
        "a zero limit is exact"
    );
}

#[test]
fn budget_snapshot_reports_every_dimension() {
    let (manual, root) = governor(limits(&[(D::ToolCalls, 5.0), (D::WallClockSeconds, 2.0)]));
    root.consume(D::ToolCalls, 3.0).unwrap();
    let child = root
        .child(limits(&[(D::ToolCalls, 10.0), (D::EstimatedCost, 1.0)]))
        .unwrap();
    child
        .record(Usage {
            tokens: 42.0,
            estimated_cost: 0.25,
            ..Usage::default()
        })
        .unwrap();
    manual.advance(Duration::from_millis(1500));
    let report = child.snapshot();
    assert_eq!(report.get(D::ToolCalls).remaining, Some(2.0));
    assert_eq!(
        serde_json::to_value(&report).unwrap(),
        json!({
            "depth": 1,
            "dimensions": [
                {"dimension": "wall_clock_seconds", "enforcement": "enforced", "limit": null, "used": 1.5, "remaining": 0.5},
                {"dimension": "tool_calls", "enforcement": "enforced", "limit": 10, "used": 0, "remaining": 2},
                {"dimension": "child_runs", "enforcement": "enforced", "limit": null, "used": 0, "remaining": null},
                {"dimension": "model_calls", "enforcement": "accounted", "limit": null, "used": 0, "remaining": null},
                {"dimension": "tokens", "enforcement": "accounted", "limit": null, "used": 42, "remaining": null},
                {"dimension": "estimated_cost", "enforcement": "accounted", "limit": 1.0, "used": 0.25, "remaining": 0.75},
            ],
        })
    );
    let (_, clock2) = clock();
    let owning = BudgetGovernor::with_profile(
        BudgetLimits::default(),
        clock2,
        EnforcementProfile::owning_model_boundary(),
    );
    let child = owning.child(BudgetLimits::default()).unwrap();
    assert_eq!(child.profile(), EnforcementProfile::owning_model_boundary());
    assert_eq!(
        child.snapshot().get(D::Tokens).enforcement,
        Enforcement::Enforced
    );
}

#[test]
fn budget_concurrent_consumers_never_exceed_the_limit() {
    const LIMIT: f64 = 1000.0;
    let (_, root) = governor(limits(&[(D::ToolCalls, LIMIT)]));
    let children: Vec<_> = (0..4)
        .map(|_| root.child(limits(&[(D::ToolCalls, 400.0)])).unwrap())
        .collect();
    let successes: usize = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                // Half the threads charge the root directly, half a child.
                let g = if i % 2 == 0 {
                    root.clone()
                } else {
                    children[i / 2].clone()
                };
                scope.spawn(move || {
                    (0..500)
                        .filter(|_| g.consume(D::ToolCalls, 1.0).is_ok())
                        .count()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert_eq!(
        successes, 1000,
        "every unit of the limit is handed out exactly once"
    );
    assert_eq!(root.used(D::ToolCalls), LIMIT);
    let child_total: f64 = children.iter().map(|c| c.used(D::ToolCalls)).sum();
    for c in &children {
        assert!(c.used(D::ToolCalls) <= 400.0);
    }
    assert!(child_total <= LIMIT);
}

// ---------------------------------------------------------------- property

/// One step of the property test; `at` picks a governor modulo the count.
#[derive(Clone, Debug)]
enum Op {
    Consume {
        at: usize,
        dimension: BudgetDimension,
        amount: f64,
    },
    Record {
        at: usize,
        usage: Usage,
    },
    Child {
        at: usize,
        limits: BudgetLimits,
    },
}

const CHARGED: [BudgetDimension; 5] = [
    D::ToolCalls,
    D::ChildRuns,
    D::ModelCalls,
    D::Tokens,
    D::EstimatedCost,
];

fn amount(dimension: BudgetDimension) -> BoxedStrategy<f64> {
    if dimension.is_count() {
        (0u8..4).prop_map(f64::from).boxed()
    } else {
        prop::sample::select(vec![0.0, 0.1, 0.2, 0.25, 0.3, 0.7, 1.0]).boxed()
    }
}

fn limit_strategy() -> impl Strategy<Value = BudgetLimits> {
    let limit = |d: BudgetDimension| {
        let value: BoxedStrategy<f64> = if d.is_count() {
            (0u8..12).prop_map(f64::from).boxed()
        } else {
            prop::sample::select(vec![0.0, 0.3, 0.5, 1.0, 2.5]).boxed()
        };
        prop::option::weighted(0.6, value)
    };
    (
        limit(D::ToolCalls),
        limit(D::ChildRuns),
        limit(D::ModelCalls),
        limit(D::Tokens),
        limit(D::EstimatedCost),
    )
        .prop_map(|(a, b, c, d, e)| {
            let pairs = [
                (D::ToolCalls, a),
                (D::ChildRuns, b),
                (D::ModelCalls, c),
                (D::Tokens, d),
                (D::EstimatedCost, e),
            ];
            BudgetLimits::new(pairs.into_iter().filter_map(|(k, v)| v.map(|v| (k, v)))).unwrap()
        })
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let consume = (any::<usize>(), prop::sample::select(CHARGED.to_vec())).prop_flat_map(
        |(at, dimension)| {
            amount(dimension).prop_map(move |amount| Op::Consume {
                at,
                dimension,
                amount,
            })
        },
    );
    let record = (
        any::<usize>(),
        amount(D::ModelCalls),
        amount(D::Tokens),
        amount(D::EstimatedCost),
        prop::option::of(amount(D::ToolCalls)),
    )
        .prop_map(
            |(at, model_calls, tokens, estimated_cost, tool_calls)| Op::Record {
                at,
                usage: Usage {
                    model_calls,
                    tokens,
                    estimated_cost,
                    tool_calls,
                },
            },
        );
    let child =
        (any::<usize>(), limit_strategy()).prop_map(|(at, limits)| Op::Child { at, limits });
    prop_oneof![3 => consume, 3 => record, 2 => child]
}

/// A reference model of the tree: parents, limits and expected usage.
struct Model {
    parent: Vec<Option<usize>>,
    limits: Vec<BudgetLimits>,
    used: Vec<[f64; 6]>,
}

impl Model {
    fn chain(&self, node: usize) -> Vec<usize> {
        std::iter::successors(Some(node), |&n| self.parent[n]).collect()
    }

    /// Whether every non-zero charge fits everywhere on the chain; applies
    /// them all if so.
    fn charge(&mut self, node: usize, charges: &[(BudgetDimension, f64)]) -> bool {
        let chain = self.chain(node);
        let ok = charges.iter().all(|&(d, a)| {
            a == 0.0
                || chain.iter().all(|&n| {
                    self.limits[n]
                        .get(d)
                        .is_none_or(|l| fits(d, self.used[n][d.index()], a, l))
                })
        });
        if ok {
            for &n in &chain {
                for &(d, a) in charges {
                    self.used[n][d.index()] += a;
                }
            }
        }
        ok
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn budget_property_limits_hold_and_charges_propagate(
        root_limits in limit_strategy(),
        ops in prop::collection::vec(op_strategy(), 1..60),
    ) {
        let (_, root) = governor(root_limits);
        let mut handles = vec![root];
        let mut model = Model { parent: vec![None], limits: vec![root_limits], used: vec![[0.0; 6]] };
        for op in ops {
            match op {
                Op::Consume { at, dimension, amount } => {
                    let at = at % handles.len();
                    let expected = model.charge(at, &[(dimension, amount)]);
                    let result = handles[at].consume(dimension, amount);
                    prop_assert_eq!(result.is_ok(), expected, "{:?} {} {}", result, dimension, amount);
                }
                Op::Record { at, usage } => {
                    let at = at % handles.len();
                    let charges = [
                        (D::ModelCalls, usage.model_calls),
                        (D::Tokens, usage.tokens),
                        (D::EstimatedCost, usage.estimated_cost),
                        (D::ToolCalls, usage.tool_calls.unwrap_or(0.0)),
                    ];
                    let expected = model.charge(at, &charges);
                    let result = handles[at].record(usage);
                    prop_assert_eq!(result.is_ok(), expected, "{:?} {:?}", result, usage);
                }
                Op::Child { at, limits } => {
                    let at = at % handles.len();
                    let expected = model.charge(at, &[(D::ChildRuns, 1.0)]);
                    let result = handles[at].child(limits);
                    prop_assert_eq!(result.is_ok(), expected);
                    if let Ok(child) = result {
                        prop_assert_eq!(child.depth(), model.chain(at).len());
                        handles.push(child);
                        model.parent.push(Some(at));
                        model.limits.push(limits);
                        model.used.push([0.0; 6]);
                    }
                }
            }
            // Every node matches the model (so every success is visible in
            // every ancestor and every refusal charged nothing), and no node
            // is ever over its limit.
            for (n, g) in handles.iter().enumerate() {
                for d in CHARGED {
                    let used = g.used(d);
                    prop_assert_eq!(used, model.used[n][d.index()], "node {} {}", n, d);
                    if let Some(limit) = model.limits[n].get(d) {
                        prop_assert!(fits(d, used, 0.0, limit), "node {} {} used {} > {}", n, d, used, limit);
                        if d.is_count() {
                            prop_assert!(used <= limit);
                        }
                    }
                    let remaining = g.remaining(d);
                    let expected_remaining = model
                        .chain(n)
                        .into_iter()
                        .filter_map(|m| model.limits[m].get(d).map(|l| (l - model.used[m][d.index()]).max(0.0)))
                        .reduce(f64::min);
                    prop_assert_eq!(remaining, expected_remaining);
                }
            }
        }
    }
}

/// Usage that already happened is charged in full, past a limit, along the
/// whole chain: a parent sees what its child really spent and stops.
#[test]
fn spent_usage_is_charged_in_full_and_reaches_the_parent() {
    let (_clock, parent) = governor(limits(&[(D::Tokens, 250.0)]));
    let child = parent.child(BudgetLimits::default()).unwrap();
    let usage = Usage {
        model_calls: 1.0,
        tokens: 300.0,
        estimated_cost: 0.0,
        tool_calls: None,
    };
    let e = exceeded(child.spend(usage));
    assert_eq!((e.dimension, e.used, e.requested), (D::Tokens, 0.0, 300.0));
    assert_eq!(child.used(D::Tokens), 300.0);
    assert_eq!(parent.used(D::Tokens), 300.0);
    assert_eq!(parent.remaining(D::Tokens), Some(0.0));
    // `record` keeps its all-or-nothing contract.
    let (_clock, g) = governor(limits(&[(D::Tokens, 10.0)]));
    assert!(g.record(usage).is_err());
    assert_eq!(g.used(D::Tokens), 0.0);
    // An invalid amount is refused and charges nothing.
    let bad = Usage {
        tokens: -1.0,
        ..usage
    };
    assert!(g.spend(bad).is_err_and(|e| e.exceeded().is_none()));
    assert_eq!(g.used(D::ModelCalls), 0.0);
}

#[test]
fn caps_only_tighten() {
    let agent = BudgetLimits::builder()
        .limit(BudgetDimension::ModelCalls, 4.0)
        .limit(BudgetDimension::Tokens, 1000.0)
        .build()
        .unwrap();
    let caps = BudgetLimits::builder()
        .limit(BudgetDimension::ModelCalls, 1.0)
        .limit(BudgetDimension::Tokens, 5000.0)
        .limit(BudgetDimension::ToolCalls, 2.0)
        .build()
        .unwrap();
    let both = agent.tightened(&caps);
    assert_eq!(both.get(BudgetDimension::ModelCalls), Some(1.0));
    assert_eq!(both.get(BudgetDimension::Tokens), Some(1000.0));
    assert_eq!(both.get(BudgetDimension::ToolCalls), Some(2.0));
    assert_eq!(both.get(BudgetDimension::ChildRuns), None);
    assert_eq!(agent.tightened(&BudgetLimits::unlimited()), agent);
    assert_eq!(BudgetLimits::unlimited().tightened(&caps), caps);
}
