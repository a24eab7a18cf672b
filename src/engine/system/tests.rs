use super::*;
use crate::engine::build::CompositionBuilder as B;
use crate::engine::model::ScopePath;
use crate::engine::resolve::resolve;

fn governs(c: &Composition, scope: &str, system: SystemCapability) -> Governing {
    let tree = ScopeTree::new(c);
    let plan = resolve(c);
    let ix = tree
        .find(&ScopePath::new(scope).expect("path"))
        .expect("scope");
    governing(c, &tree, &plan, ix, system)
}

fn provider(g: &Governing) -> Option<&str> {
    match g {
        Governing::Provider { entry, .. } => Some(entry.as_str()),
        _ => None,
    }
}

/// `/finance` declares a policy; `/finance/reports` inherits it; `/support`
/// is its sibling.
fn tree_with_scope_policy() -> B {
    B::new()
        .scope("/finance", None)
        .scope("/finance/reports", None)
        .scope("/support", None)
        .entry("finance-policy")
        .in_scope("/finance")
        .provides("policy", &["1.0.0"])
}

#[test]
fn a_scope_provider_governs_its_subtree_and_not_its_siblings() {
    let c = tree_with_scope_policy().build().expect("valid");
    let p = SystemCapability::Policy;
    let local = governs(&c, "/finance", p);
    assert_eq!(provider(&local), Some("finance-policy"));
    assert!(matches!(
        local,
        Governing::Provider {
            origin: ProviderOrigin::Local,
            reason: SelectionReason::OnlyEligible,
            ..
        }
    ));
    let below = governs(&c, "/finance/reports", p);
    assert!(matches!(
        below,
        Governing::Provider {
            origin: ProviderOrigin::Inherited,
            ..
        }
    ));
    // The reference's leak: a sibling and the root keep the default.
    assert_eq!(governs(&c, "/support", p), Governing::Default);
    assert_eq!(governs(&c, "/", p), Governing::Default);
    // Secrets are another capability.
    assert_eq!(
        governs(&c, "/finance", SystemCapability::Secrets),
        Governing::Default
    );
}

#[test]
fn a_capability_view_hiding_a_provider_fails_closed_instead_of_widening() {
    let c = tree_with_scope_policy()
        .scope("/finance/sandbox", Some(&["model"]))
        .scope("/elsewhere", Some(&["model"]))
        .build()
        .expect("valid");
    let g = governs(&c, "/finance/sandbox", SystemCapability::Policy);
    let Governing::FailClosed(failure) = &g else {
        panic!("a child must not escape its parent's policy through a view: {g:?}")
    };
    assert!(
        failure.to_string().contains("hides finance-policy"),
        "{failure}"
    );
    // A view with no provider on the scope's lineage keeps the default.
    assert_eq!(
        governs(&c, "/elsewhere", SystemCapability::Policy),
        Governing::Default
    );
}

#[test]
fn several_providers_fail_closed_until_a_preference_chooses() {
    let base = || {
        tree_with_scope_policy()
            .entry("global-policy")
            .provides("policy", &["1.2.0"])
    };
    let c = base().build().expect("valid");
    let g = governs(&c, "/finance", SystemCapability::Policy);
    let Governing::FailClosed(failure) = &g else {
        panic!("{g:?}")
    };
    assert_eq!(
        failure.to_string(),
        "ambiguous between finance-policy, global-policy (name one in the scope's `prefer` or in `[prefer]`)"
    );
    // Only the root's provider is visible from a sibling.
    assert_eq!(
        provider(&governs(&c, "/support", SystemCapability::Policy)),
        Some("global-policy")
    );

    let c = base()
        .prefer_global("policy", "global-policy")
        .build()
        .expect("valid");
    let g = governs(&c, "/finance", SystemCapability::Policy);
    assert_eq!(provider(&g), Some("global-policy"));
    assert!(matches!(
        g,
        Governing::Provider {
            reason: SelectionReason::ExplicitPreference(PreferenceLevel::Global),
            ..
        }
    ));

    // The scope's own preference wins over the global one.
    let c = B::new()
        .scope("/finance", None)
        .scope_prefer("policy", "finance-policy")
        .entry("finance-policy")
        .in_scope("/finance")
        .provides("policy", &["1.0.0"])
        .entry("global-policy")
        .provides("policy", &["1.2.0"])
        .prefer_global("policy", "global-policy")
        .build()
        .expect("valid");
    let g = governs(&c, "/finance", SystemCapability::Policy);
    assert!(matches!(
        &g,
        Governing::Provider {
            reason: SelectionReason::ExplicitPreference(PreferenceLevel::Scope),
            entry,
            ..
        } if entry.as_str() == "finance-policy"
    ));
}

#[test]
fn another_contract_generation_fails_closed() {
    let c = B::new()
        .entry("next-policy")
        .provides("policy", &["2.0.0"])
        .build()
        .expect("valid");
    let g = governs(&c, "/", SystemCapability::Policy);
    assert_eq!(
        g,
        Governing::FailClosed(SystemFailure::ContractMismatch {
            providers: vec![EntryId::new("next-policy").expect("id")]
        })
    );
    // A generation-1 provider beside it is chosen.
    let c = B::new()
        .entry("next-policy")
        .provides("policy", &["2.0.0"])
        .entry("policy")
        .provides("policy", &["1.0.0"])
        .build()
        .expect("valid");
    assert_eq!(
        provider(&governs(&c, "/", SystemCapability::Policy)),
        Some("policy")
    );
}

#[test]
fn a_pending_provider_fails_closed_instead_of_falling_back() {
    let c = B::new()
        .entry("vault")
        .provides("secrets", &["1.0.0"])
        .requires("missing", "")
        .build()
        .expect("valid");
    assert_eq!(
        governs(&c, "/", SystemCapability::Secrets),
        Governing::FailClosed(SystemFailure::Pending {
            entry: EntryId::new("vault").expect("id")
        })
    );
}

#[test]
fn any_provider_sees_system_capabilities_only() {
    assert!(any_provider(
        &tree_with_scope_policy().build().expect("valid")
    ));
    let c = B::new()
        .entry("db")
        .provides("database", &["1.0.0"])
        .build()
        .expect("valid");
    assert!(!any_provider(&c));
}

#[test]
fn check_reports_each_fail_closed_failure_once_with_its_scopes() {
    let c = tree_with_scope_policy()
        .entry("other-policy")
        .in_scope("/finance")
        .provides("policy", &["1.0.0"])
        .scope("/support/sandbox", Some(&["model"]))
        .entry("support-secrets")
        .in_scope("/support")
        .provides("secrets", &["1.0.0"])
        .entry("cache")
        .provides("cache", &["1.0.0"])
        .prefer_global("secrets", "cache")
        .build()
        .expect("valid");
    let tree = ScopeTree::new(&c);
    let plan = resolve(&c);
    let found: Vec<(String, String)> =
        crate::engine::findings::system_diagnostics(&c, &tree, &plan)
            .iter()
            .map(|d| (d.code.as_str().to_owned(), d.message.clone()))
            .collect();
    assert_eq!(
        found,
        [
            (
                "resolve::system-preference-not-provider".to_owned(),
                "[prefer] prefers `cache` for `secrets`, which it does not provide".to_owned()
            ),
            (
                "resolve::system-fail-closed".to_owned(),
                "`policy` fails closed in scope `/finance` and 1 more (`/finance/reports`): ambiguous between finance-policy, other-policy (name one in the scope's `prefer` or in `[prefer]`)".to_owned()
            ),
            (
                "resolve::system-fail-closed".to_owned(),
                "`secrets` fails closed in scope `/support/sandbox`: a capability view hides support-secrets from this scope (list the capability in the view, or move the provider)".to_owned()
            ),
        ]
    );
    // Nothing to say about a composition whose scopes all resolve.
    let fine = tree_with_scope_policy().build().expect("valid");
    let tree = ScopeTree::new(&fine);
    assert!(crate::engine::findings::system_diagnostics(&fine, &tree, &resolve(&fine)).is_empty());
}
