use std::collections::BTreeSet;

use serde_json::json;

use crate::engine::policy::{
    ApprovalGate, ApprovalRequest, ApproveListed, DenyAllApprovals, Permission,
};

fn request(tool: &str) -> ApprovalRequest {
    ApprovalRequest {
        tool: tool.into(),
        permissions: vec![Permission::parse("fs.write:/workspace/a").unwrap()],
        arguments_redacted: json!({"path": "/workspace/a", "token": "[REDACTED]"}),
    }
}

#[test]
fn default_gate_denies() {
    let d = DenyAllApprovals.decide(&request("rm"));
    assert!(!d.approved);
    assert!(d.reason.contains("rm"));
}

#[test]
fn listed_tools_are_approved() {
    let gate = ApproveListed(BTreeSet::from(["write".to_owned()]));
    assert!(gate.decide(&request("write")).approved);
    assert!(!gate.decide(&request("rm")).approved);
    let gate: &dyn ApprovalGate = &gate;
    assert!(!gate.decide(&request("Write")).approved);
}

#[test]
fn request_serializes_permissions_as_text() {
    let v = serde_json::to_value(request("rm")).unwrap();
    assert_eq!(v["permissions"], json!(["fs.write:/workspace/a"]));
}
