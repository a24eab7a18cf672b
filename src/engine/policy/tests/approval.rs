use std::collections::BTreeSet;

use futures_util::FutureExt;
use serde_json::json;

use crate::engine::policy::{
    ApprovalDecision, ApprovalGate, ApprovalRequest, ApproveListed, DenyAllApprovals, Permission,
};

/// A list's decision is ready at once.
fn decided(gate: &dyn ApprovalGate, request: &ApprovalRequest) -> ApprovalDecision {
    gate.decide(request)
        .now_or_never()
        .expect("a list answers at once")
}

fn request(tool: &str) -> ApprovalRequest {
    ApprovalRequest {
        tool: tool.into(),
        permissions: vec![Permission::parse("fs.write:/workspace/a").unwrap()],
        arguments_redacted: json!({"path": "/workspace/a", "token": "[REDACTED]"}),
    }
}

#[test]
fn default_gate_denies() {
    let d = decided(&DenyAllApprovals, &request("rm"));
    assert!(!d.approved);
    assert!(d.reason.contains("rm"));
}

#[test]
fn listed_tools_are_approved() {
    let gate = ApproveListed(BTreeSet::from(["write".to_owned()]));
    assert!(decided(&gate, &request("write")).approved);
    assert!(!decided(&gate, &request("rm")).approved);
    assert!(!decided(&gate, &request("Write")).approved);
}

#[test]
fn request_serializes_permissions_as_text() {
    let v = serde_json::to_value(request("rm")).unwrap();
    assert_eq!(v["permissions"], json!(["fs.write:/workspace/a"]));
}
