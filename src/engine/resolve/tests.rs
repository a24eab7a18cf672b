use super::*;
use crate::engine::build::CompositionBuilder as B;

fn status(plan: &Plan, consumer: &str, cap: &str) -> Status {
    plan.resolution(consumer, cap)
        .unwrap_or_else(|| panic!("no resolution {consumer}/{cap}"))
        .status
}

fn selected(plan: &Plan, consumer: &str, cap: &str) -> Option<String> {
    plan.resolution(consumer, cap)?
        .selected
        .as_ref()
        .map(|s| s.entry.to_string())
}

#[test]
fn flat_composition_resolves_and_orders_providers_first() {
    let c = B::new()
        .entry("app")
        .requires("database", ">=1,<2")
        .entry("postgres")
        .provides("database", &["1.4.2"])
        .build()
        .unwrap();
    let plan = resolve(&c);
    assert_eq!(status(&plan, "app", "database"), Status::Resolved);
    assert_eq!(
        selected(&plan, "app", "database").as_deref(),
        Some("postgres")
    );
    let order: Vec<&str> = plan.activation_order.iter().map(|e| e.as_str()).collect();
    assert_eq!(order, ["postgres", "app"]);
    assert!(plan.is_complete());
    assert_eq!(plan.edges.len(), 1);
}

#[test]
fn two_providers_are_ambiguous_until_a_preference_selects() {
    let base = || {
        B::new()
            .entry("db-primary")
            .provides("database", &["1.0.0"])
            .entry("db-replica")
            .provides("database", &["1.1.0"])
            .entry("reporting")
            .requires("database", ">=1,<2")
    };
    let plan = resolve(&base().build().unwrap());
    assert_eq!(status(&plan, "reporting", "database"), Status::Ambiguous);
    assert_eq!(plan.pending.len(), 1);
    let r = plan.resolution("reporting", "database").unwrap();
    assert_eq!(r.ambiguous_between.len(), 2);

    let plan = resolve(&base().prefer("database", "db-replica").build().unwrap());
    assert_eq!(
        selected(&plan, "reporting", "database").as_deref(),
        Some("db-replica")
    );
    assert_eq!(
        plan.resolution("reporting", "database").unwrap().reason,
        Some(SelectionReason::ExplicitPreference(
            PreferenceLevel::Consumer
        ))
    );
}

#[test]
fn preference_precedence_is_consumer_then_scope_then_global() {
    let c = B::new()
        .scope("/ops", None)
        .scope_prefer("database", "b")
        .entry("a")
        .provides("database", &["1.0.0"])
        .entry("b")
        .provides("database", &["1.0.0"])
        .entry("c")
        .provides("database", &["1.0.0"])
        .entry("w1")
        .in_scope("/ops")
        .requires("database", "")
        .prefer("database", "a")
        .entry("w2")
        .in_scope("/ops")
        .requires("database", "")
        .entry("w3")
        .requires("database", "")
        .prefer_global("database", "c")
        .build()
        .unwrap();
    let plan = resolve(&c);
    assert_eq!(selected(&plan, "w1", "database").as_deref(), Some("a"));
    assert_eq!(selected(&plan, "w2", "database").as_deref(), Some("b"));
    assert_eq!(selected(&plan, "w3", "database").as_deref(), Some("c"));
}

#[test]
fn multi_contract_provider_is_one_candidate_binding_the_highest_accepted() {
    let c = B::new()
        .entry("dual")
        .provides("database", &["1.0.0", "2.0.0"])
        .entry("legacy")
        .requires("database", ">=1,<2")
        .entry("modern")
        .requires("database", ">=2,<3")
        .entry("neutral")
        .requires("database", ">=1,<3")
        .build()
        .unwrap();
    let plan = resolve(&c);
    for consumer in ["legacy", "modern", "neutral"] {
        assert_eq!(
            status(&plan, consumer, "database"),
            Status::Resolved,
            "{consumer}"
        );
    }
    let v = |c: &str| {
        plan.resolution(c, "database")
            .unwrap()
            .selected
            .as_ref()
            .unwrap()
            .version
            .to_string()
    };
    assert_eq!(v("legacy"), "1.0.0");
    assert_eq!(v("modern"), "2.0.0");
    assert_eq!(v("neutral"), "2.0.0");
}

#[test]
fn statuses_cover_the_reference_vocabulary() {
    let c = B::new()
        .scope("/hidden", None)
        .scope("/narrow", Some(&["model"]))
        .entry("old-db")
        .provides("database", &["1.0.0"])
        .entry("hidden-cache")
        .in_scope("/hidden")
        .provides("cache", &["1.0.0"])
        .entry("wants-v2")
        .requires("database", ">=2,<3")
        .entry("wants-cache")
        .requires("cache", "")
        .entry("narrow-db")
        .in_scope("/narrow")
        .requires("database", "")
        .entry("selfish")
        .provides("queue", &["1.0.0"])
        .requires("queue", "")
        .entry("lonely")
        .requires("nothing", "")
        .entry("blocked")
        .provides("report", &["1.0.0"])
        .requires("nothing", "")
        .entry("downstream")
        .requires("report", "")
        .build()
        .unwrap();
    let plan = resolve(&c);
    assert_eq!(
        status(&plan, "wants-v2", "database"),
        Status::VersionMismatch
    );
    assert_eq!(status(&plan, "wants-cache", "cache"), Status::NotVisible);
    assert_eq!(status(&plan, "narrow-db", "database"), Status::NotVisible);
    assert_eq!(status(&plan, "selfish", "queue"), Status::SelfReference);
    assert_eq!(status(&plan, "lonely", "nothing"), Status::NoProvider);
    assert_eq!(
        status(&plan, "downstream", "report"),
        Status::ProviderPending
    );
    assert!(!plan.is_eligible(&EntryId::new("downstream").unwrap()));
}

#[test]
fn cycles_are_reported_with_members_and_cascade() {
    let c = B::new()
        .entry("a")
        .provides("x", &["1.0.0"])
        .requires("y", "")
        .entry("b")
        .provides("y", &["1.0.0"])
        .requires("x", "")
        .entry("c")
        .requires("x", "")
        .build()
        .unwrap();
    let plan = resolve(&c);
    assert_eq!(plan.cycles.len(), 1);
    let cycle: Vec<&str> = plan.cycles[0].iter().map(|e| e.as_str()).collect();
    assert_eq!(cycle, ["a", "b"]);
    assert_eq!(plan.pending.len(), 3);
    assert!(plan.activation_order.is_empty());
}

#[test]
fn optional_requirements_bind_but_never_gate() {
    let c = B::new()
        .entry("app")
        .optional("vector", ">=2")
        .optional("cache", "")
        .entry("redis")
        .provides("cache", &["1.0.0"])
        .build()
        .unwrap();
    let plan = resolve(&c);
    assert!(plan.is_complete());
    assert_eq!(status(&plan, "app", "vector"), Status::NoProvider);
    assert_eq!(status(&plan, "app", "cache"), Status::Resolved);
    assert_eq!(plan.edges.len(), 1);
}

#[test]
fn scope_requirements_are_explained_never_gating() {
    let c = B::new()
        .scope("/ops", None)
        .scope_requires("vector", "")
        .entry("w")
        .in_scope("/ops")
        .build()
        .unwrap();
    let plan = resolve(&c);
    assert!(plan.is_complete());
    assert_eq!(status(&plan, "/ops", "vector"), Status::NoProvider);
    assert_eq!(
        plan.resolution("/ops", "vector").unwrap().consumer.kind(),
        "scope"
    );
}

#[test]
fn preferences_that_choose_nothing_are_reported() {
    let c = B::new()
        .entry("a")
        .provides("database", &["1.0.0"])
        .entry("b")
        .provides("cache", &["1.0.0"])
        .entry("app")
        .requires("database", "")
        .prefer("database", "b")
        .prefer("model", "a")
        .prefer_global("queue", "a")
        .build()
        .unwrap();
    let plan = resolve(&c);
    assert_eq!(selected(&plan, "app", "database").as_deref(), Some("a"));
    let kinds: Vec<&str> = plan
        .preference_findings
        .iter()
        .map(|f| match f {
            PreferenceFinding::NotCandidate { .. } => "not_candidate",
            PreferenceFinding::Unused { .. } => "unused",
            PreferenceFinding::Disabled { .. } => "disabled",
        })
        .collect();
    assert_eq!(kinds, ["not_candidate", "unused", "unused"]);
}

#[test]
fn views_hide_local_providers_too() {
    let c = B::new()
        .scope("/r", Some(&["model"]))
        .entry("db")
        .in_scope("/r")
        .provides("database", &["1.0.0"])
        .entry("app")
        .in_scope("/r")
        .requires("database", "")
        .build()
        .unwrap();
    let plan = resolve(&c);
    assert_eq!(status(&plan, "app", "database"), Status::NotVisible);
}

#[test]
fn local_and_inherited_providers_are_ambiguous() {
    let c = B::new()
        .scope("/ops", None)
        .entry("postgres")
        .provides("database", &["1.0.0"])
        .entry("tenant-db")
        .in_scope("/ops")
        .provides("database", &["1.5.0"])
        .entry("worker")
        .in_scope("/ops")
        .requires("database", ">=1,<2")
        .build()
        .unwrap();
    let plan = resolve(&c);
    assert_eq!(status(&plan, "worker", "database"), Status::Ambiguous);
}

#[test]
fn an_optional_loop_never_orders_a_consumer_before_its_hard_provider() {
    let c = B::new()
        .entry("z")
        .provides("h", &["1.0.0"])
        .optional("o", "")
        .entry("b")
        .provides("o", &["1.0.0"])
        .requires("h", "")
        .build()
        .unwrap();
    let plan = resolve(&c);
    let order: Vec<&str> = plan.activation_order.iter().map(|e| e.as_str()).collect();
    assert_eq!(order, ["z", "b"]);
}

/// Large enough that gathering and the published rows run in two parts on
/// two cores (where the machine has them): a chain of 6,000 entries, the
/// entries spread over nested scopes, with a hole at 3,000 — every answer
/// is known, so the joined halves are checked row by row.
#[test]
fn a_large_chain_split_over_two_cores_resolves_row_by_row() {
    let n = 6_000;
    let hole = 3_000;
    let id = |i: usize| format!("e{i:05}");
    // Scopes /a, /a/b, /a/b/c and /d: a provider is visible from its own
    // scope and below, so the chain runs down /a → /a/b → /a/b/c; /d
    // holds consumers of `shared` (from /a: not visible there).
    let mut b = B::new()
        .scope("/a", None)
        .scope("/a/b", None)
        .scope("/a/b/c", None)
        .scope("/d", None)
        .entry("shared-db")
        .in_scope("/a")
        .provides("shared", &["1.0.0"]);
    for i in 0..n {
        let scope = match i * 3 / n {
            0 => "/a",
            1 => "/a/b",
            _ => "/a/b/c",
        };
        b = b.entry(&id(i)).in_scope(scope);
        if i + 1 != hole {
            b = b.provides(&format!("cap{i}"), &["1.0.0"]);
        }
        if i > 0 {
            b = b.requires(&format!("cap{}", i - 1), ">=1,<2");
        }
    }
    for k in 0..50 {
        b = b
            .entry(&format!("z{k:02}"))
            .in_scope("/d")
            .requires("shared", ">=1");
    }
    let c = b.build().unwrap();
    let plan = resolve(&c);
    assert_eq!(plan.resolutions.len(), n - 1 + 50);
    for (i, r) in plan.resolutions.iter().take(n - 1).enumerate() {
        let i = i + 1;
        assert_eq!(r.consumer.name(), id(i), "row {i}");
        let (status, provider) = match i {
            _ if i < hole => (Status::Resolved, Some(id(i - 1))),
            _ if i == hole => (Status::NoProvider, None),
            _ => (Status::ProviderPending, None),
        };
        assert_eq!(r.status, status, "{}", id(i));
        assert_eq!(
            r.selected.as_ref().map(|s| s.entry.to_string()),
            provider,
            "{}",
            id(i)
        );
    }
    for (k, r) in plan.resolutions.iter().skip(n - 1).enumerate() {
        assert_eq!(r.consumer.name(), format!("z{k:02}"));
        assert_eq!(r.status, Status::NotVisible);
    }
    let edges: Vec<(String, String)> = (1..hole).map(|i| (id(i - 1), id(i))).collect();
    let got: Vec<(String, String)> = plan
        .edges
        .iter()
        .map(|(p, c)| (p.to_string(), c.to_string()))
        .collect();
    assert_eq!(got, edges);
    let pending: Vec<String> = plan.pending.iter().map(ToString::to_string).collect();
    let expected: Vec<String> = (hole..n)
        .map(id)
        .chain((0..50).map(|k| format!("z{k:02}")))
        .collect();
    assert_eq!(pending, expected);
    let reasons = |e: &str| plan.entries[&EntryId::new(e).unwrap()].pending.clone();
    assert_eq!(
        reasons(&id(hole)),
        [PendingReason::Requirement {
            capability: crate::engine::model::CapabilityName::new(&format!("cap{}", hole - 1))
                .unwrap(),
            status: Status::NoProvider,
        }]
    );
    assert_eq!(
        reasons(&id(n - 1)),
        [PendingReason::Requirement {
            capability: crate::engine::model::CapabilityName::new(&format!("cap{}", n - 2))
                .unwrap(),
            status: Status::ProviderPending,
        }]
    );
    // Every eligible entry, each provider before its consumer.
    let order: Vec<String> = plan
        .activation_order
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(order.len(), hole + 1);
    let at: std::collections::HashMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(k, e)| (e.as_str(), k))
        .collect();
    assert!(at.contains_key("shared-db"));
    assert!((1..hole).all(|i| at[id(i - 1).as_str()] < at[id(i).as_str()]));
}

/// A composition large enough to choose selections beside the cycle search
/// (on two cores): with a cycle, what was chosen as if there were none is
/// dropped and chosen again; without one, it stands.
#[test]
fn large_compositions_with_and_without_cycles() {
    let build = |cycle: bool| {
        let mut b = B::new()
            .entry("db")
            .provides("database", &["1.0.0"])
            .provides("cache", &["1.0.0"]);
        for k in 0..3000 {
            b = b
                .entry(&format!("app-{k:04}"))
                .requires("database", ">=1,<2");
        }
        // `loop-a` and `loop-b` need each other; `user` needs `loop-a`.
        if cycle {
            b = b
                .entry("loop-a")
                .provides("alpha", &["1.0.0"])
                .requires("beta", ">=1")
                .entry("loop-b")
                .provides("beta", &["1.0.0"])
                .requires("alpha", ">=1");
        } else {
            b = b
                .entry("loop-a")
                .provides("alpha", &["1.0.0"])
                .entry("loop-b")
                .provides("beta", &["1.0.0"])
                .requires("alpha", ">=1");
        }
        b.entry("user").requires("alpha", ">=1").build().unwrap()
    };
    let plan = resolve(&build(true));
    assert!(
        plan.resolutions.len() + plan.entries.len() >= crate::engine::parallel::PARALLEL_MIN_WORK
    );
    assert_eq!(plan.cycles.len(), 1);
    assert_eq!(
        plan.cycles[0]
            .iter()
            .map(|e| e.as_str())
            .collect::<Vec<_>>(),
        ["loop-a", "loop-b"]
    );
    for pending in ["loop-a", "loop-b", "user"] {
        assert!(
            !plan.is_eligible(&EntryId::new(pending).unwrap()),
            "{pending}"
        );
    }
    assert_eq!(status(&plan, "user", "alpha"), Status::ProviderPending);
    assert_eq!(status(&plan, "app-2999", "database"), Status::Resolved);
    let plan = resolve(&build(false));
    assert!(plan.cycles.is_empty());
    assert!(plan.is_complete());
    assert_eq!(selected(&plan, "user", "alpha").as_deref(), Some("loop-a"));
}
