use serde_json::json;

use crate::engine::policy::tool_policy::MAX_TIMEOUT_SECONDS;
use crate::engine::policy::{Permission, ToolPolicy, ToolPolicyError, check_declared};

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn default_is_valid_and_conservative() {
    let p = ToolPolicy::default();
    assert!(p.permissions.is_empty());
    assert!(!p.idempotent);
    assert!(!p.approval_required);
    assert_eq!(p.timeout_seconds, None);
    p.validate().unwrap();
}

#[test]
fn timeout_validation() {
    for ok in [0.001, 30.0, MAX_TIMEOUT_SECONDS] {
        let p = ToolPolicy {
            timeout_seconds: Some(ok),
            ..ToolPolicy::default()
        };
        p.validate().unwrap();
    }
    // Longer than a day is refused: 1e20 s is past what a duration holds,
    // and used to panic when a call started.
    for bad in [
        0.0,
        -1.0,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        86_400.001,
        1e9,
        1e20,
        1e300,
    ] {
        let p = ToolPolicy {
            timeout_seconds: Some(bad),
            ..ToolPolicy::default()
        };
        assert!(
            matches!(p.validate(), Err(ToolPolicyError::Timeout(_))),
            "{bad}"
        );
    }
}

#[test]
fn permission_and_label_validation() {
    let p = ToolPolicy {
        permissions: strings(&["fs.read:{/path}", "Bad"]),
        ..ToolPolicy::default()
    };
    assert!(matches!(
        p.validate(),
        Err(ToolPolicyError::Permission { index: 1, .. })
    ));
    let p = ToolPolicy {
        side_effects: strings(&["destructive", " "]),
        ..ToolPolicy::default()
    };
    assert_eq!(p.validate(), Err(ToolPolicyError::BlankSideEffect(1)));
    let p = ToolPolicy {
        cost_class: Some(String::new()),
        ..ToolPolicy::default()
    };
    assert_eq!(p.validate(), Err(ToolPolicyError::BlankCostClass));
}

#[test]
fn deserializes_and_rejects_bool_timeout() {
    let p: ToolPolicy = serde_json::from_value(json!({
        "permissions": ["filesystem.write:/workspace/**"],
        "side_effects": ["destructive"],
        "timeout_seconds": 30.0,
        "cost_class": "expensive",
        "approval_required": true,
    }))
    .unwrap();
    p.validate().unwrap();
    assert!(p.approval_required);
    assert!(serde_json::from_value::<ToolPolicy>(json!({"timeout_seconds": true})).is_err());
    assert!(serde_json::from_value::<ToolPolicy>(json!({"permission": []})).is_err());
}

#[test]
fn required_permissions_expand_all_templates() {
    let p = ToolPolicy {
        permissions: strings(&["fs.read:{/src}", "fs.write:{/dst}", "fs.read:{/src}"]),
        ..ToolPolicy::default()
    };
    let got = p
        .required_permissions(&json!({"src": "/a", "dst": "/b"}))
        .unwrap();
    assert_eq!(
        got,
        [
            Permission::parse("fs.read:/a").unwrap(),
            Permission::parse("fs.write:/b").unwrap()
        ]
    );
    assert!(p.required_permissions(&json!({"src": "/a"})).is_err());
}

#[test]
fn declared_by_name_and_resource() {
    let manifest = strings(&["network.fetch", "filesystem.write:/workspace/**", "db.*"]);
    check_declared(
        &strings(&[
            "network.fetch",
            "network.fetch:api.example.com",
            "filesystem.write:/workspace/**",
            "filesystem.write:/workspace/out/{/name}",
            "db.query:orders",
        ]),
        &manifest,
    )
    .unwrap();
    let problems = check_declared(
        &strings(&[
            "filesystem.read:/workspace/a",
            "filesystem.write",
            "filesystem.write:/etc/passwd",
            "filesystem.write:{/path}",
            "filesystem.write:/workspace/../etc/x",
            "Bad",
        ]),
        &manifest,
    )
    .unwrap_err();
    assert_eq!(problems.len(), 6, "{problems:#?}");
    assert!(problems[0].contains("not declared"), "{}", problems[0]);
    assert!(problems[5].contains("invalid"), "{}", problems[5]);
    let problems = check_declared(&strings(&["a.b"]), &strings(&["Nope"])).unwrap_err();
    assert_eq!(problems.len(), 2);
    assert!(problems[1].contains("declared: nothing"), "{}", problems[1]);
}
