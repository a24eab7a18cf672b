use std::collections::BTreeMap;

use crate::engine::policy::{
    AllowAll, DenyAll, Grant, Permission, PolicyDecision, PolicyEngine, PolicyError, PolicyRequest,
    PolicyRules, evaluate_or_deny,
};

fn rules(grants: &[&str], deny: &[&str], approval: &[&str]) -> PolicyRules {
    PolicyRules {
        grants: grants.iter().map(|g| Grant::parse(g).unwrap()).collect(),
        deny: deny.iter().map(|g| Grant::parse(g).unwrap()).collect(),
        approval_required: approval.iter().map(|s| (*s).to_owned()).collect(),
    }
}

fn req(permission: &str) -> PolicyRequest {
    PolicyRequest::for_tool("t", Permission::parse(permission).unwrap())
}

fn allowed(r: &PolicyRules, permission: &str) -> bool {
    r.evaluate(&req(permission)).allowed
}

#[test]
fn subject_and_context() {
    let r = req("fs.read").with_context("owner", "plugin-1");
    assert_eq!(r.subject, "tool:t");
    assert_eq!(
        r.context,
        BTreeMap::from([("owner".into(), "plugin-1".into())])
    );
}

#[test]
fn no_grant_denies_with_reason() {
    let d = rules(&[], &[], &[]).evaluate(&req("fs.read:/etc/passwd"));
    assert_eq!(
        d,
        PolicyDecision::deny("no grant covers `fs.read:/etc/passwd`")
    );
}

#[test]
fn grant_allows_and_reports_match() {
    let r = rules(&["fs.read:/workspace/**"], &[], &[]);
    let d = r.evaluate(&req("fs.read:/workspace/a"));
    assert!(d.allowed);
    assert!(!d.approval_required);
    assert_eq!(d.matched.as_deref(), Some("fs.read:/workspace/**"));
    assert!(!allowed(&r, "fs.write:/workspace/a"));
    assert!(!allowed(&r, "fs.read:/workspace/../etc/passwd"));
    assert!(allowed(&r, "fs.read:/workspace/a/../b"));
}

#[test]
fn deny_beats_grant() {
    let r = rules(
        &["fs.read", "fs.read:/workspace/**"],
        &["fs.read:/workspace/secrets/**"],
        &[],
    );
    assert!(allowed(&r, "fs.read:/workspace/a"));
    let d = r.evaluate(&req("fs.read:/workspace/secrets/key"));
    assert!(!d.allowed);
    assert_eq!(d.matched.as_deref(), Some("fs.read:/workspace/secrets/**"));
    // Normalization applies to deny rules too.
    assert!(!allowed(&r, "fs.read:/workspace/x/../secrets/key"));
    // Order of rules does not matter: deny wins.
    let r = rules(&["fs.*"], &["fs.write"], &[]);
    assert!(allowed(&r, "fs.read:/x"));
    assert!(!allowed(&r, "fs.write:/x"));
    assert!(!allowed(&r, "fs.write"));
}

#[test]
fn scoped_versus_unscoped() {
    // An unscoped grant covers any resource of that name.
    let r = rules(&["net.fetch"], &[], &[]);
    assert!(allowed(&r, "net.fetch"));
    assert!(allowed(&r, "net.fetch:api.example.com"));
    assert!(allowed(&r, "net.fetch:/anything"));
    // A scoped grant never covers an unscoped request.
    let r = rules(&["net.fetch:*.example.com"], &[], &[]);
    assert!(!allowed(&r, "net.fetch"));
    assert!(allowed(&r, "net.fetch:api.example.com"));
    // A scoped deny rule does apply to an unscoped request (it may touch
    // anything, including the denied resources).
    let r = rules(&["net.fetch"], &["net.fetch:evil.example.com"], &[]);
    assert!(!allowed(&r, "net.fetch"));
    assert!(allowed(&r, "net.fetch:good.example.com"));
}

#[test]
fn malformed_resources_are_denied_even_by_unscoped_grants() {
    let r = rules(&["fs.read"], &[], &[]);
    for res in ["/../x", "/workspace/%2e%2e/x", "a/../b", "/a\\b"] {
        let d = r.evaluate(&req(&format!("fs.read:{res}")));
        assert!(!d.allowed, "{res}");
        assert!(d.reason.contains("matches nothing"), "{}", d.reason);
    }
}

#[test]
fn name_wildcards() {
    let r = rules(&["fs.*"], &[], &[]);
    assert!(allowed(&r, "fs.read"));
    assert!(allowed(&r, "fs.read.meta:/x"));
    assert!(!allowed(&r, "fs"));
    assert!(!allowed(&r, "fsx.read"));
    let g = Grant::parse("fs.*").unwrap();
    assert!(g.matches_name("fs.write"));
    assert!(!g.matches_name("fs."));
}

#[test]
fn approval_by_name() {
    let r = rules(&["fs.*", "net.fetch", "net"], &[], &["fs.write", "net.*"]);
    assert!(r.evaluate(&req("fs.write:/x")).approval_required);
    assert!(!r.evaluate(&req("fs.read:/x")).approval_required);
    assert!(r.evaluate(&req("net.fetch")).approval_required);
    assert!(!r.evaluate(&req("net")).approval_required);
    assert!(r.requires_approval("net.fetch.x"));
    // Denied decisions never ask for approval.
    assert!(
        !rules(&[], &[], &["fs.write"])
            .evaluate(&req("fs.write"))
            .approval_required
    );
    assert!(r.validate().is_ok());
    assert!(rules(&[], &[], &["Bad"]).validate().is_err());
}

#[test]
fn engines() {
    let request = req("fs.read:/etc/passwd");
    assert!(AllowAll.evaluate(&request).unwrap().allowed);
    assert!(!DenyAll.evaluate(&request).unwrap().allowed);
    let r = rules(&["fs.read"], &[], &[]);
    let engine: &dyn PolicyEngine = &r;
    assert!(engine.evaluate(&request).unwrap().allowed);
}

struct Broken;

impl PolicyEngine for Broken {
    fn evaluate(&self, _request: &PolicyRequest) -> Result<PolicyDecision, PolicyError> {
        Err(PolicyError {
            message: "backend down".into(),
        })
    }
}

#[test]
fn engine_failure_fails_closed() {
    let d = evaluate_or_deny(&Broken, &req("fs.read"));
    assert!(!d.allowed);
    assert_eq!(d.reason, "policy provider failure");
    assert!(evaluate_or_deny(&AllowAll, &req("fs.read")).allowed);
}

#[test]
fn rules_deserialize() {
    let r: PolicyRules = serde_json::from_value(serde_json::json!({
        "grants": ["fs.read:/workspace/**"],
        "deny": ["fs.read:/workspace/.git/**"],
    }))
    .unwrap();
    assert!(allowed(&r, "fs.read:/workspace/a"));
    assert!(!allowed(&r, "fs.read:/workspace/.git/config"));
    assert!(serde_json::from_value::<PolicyRules>(serde_json::json!({"grant": []})).is_err());
    assert!(serde_json::from_value::<PolicyRules>(serde_json::json!({"grants": ["/x"]})).is_err());
}
