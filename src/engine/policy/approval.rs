//! Approval: a human (or a host) confirming a call the policy allowed.
//!
//! Approval runs after policy and only for calls that need it (the tool's
//! flag, or any allowed permission flagged by the engine). The default gate
//! denies everything, so a tool that needs approval never runs unattended
//! by accident.
use std::collections::BTreeSet;
use std::future::{Future, ready};
use std::pin::Pin;

use serde_json::Value;

use super::permission::Permission;

/// What the gate is asked to approve.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ApprovalRequest {
    /// The tool name.
    pub tool: String,
    /// The expanded permissions the call requires.
    pub permissions: Vec<Permission>,
    /// The call's arguments with secrets already redacted by the caller.
    pub arguments_redacted: Value,
}

/// The gate's answer.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ApprovalDecision {
    /// Whether the call may proceed.
    pub approved: bool,
    /// Why, in words.
    pub reason: String,
}

impl ApprovalDecision {
    /// An approval.
    pub fn approve(reason: impl Into<String>) -> Self {
        Self {
            approved: true,
            reason: reason.into(),
        }
    }

    /// A refusal.
    pub fn deny(reason: impl Into<String>) -> Self {
        Self {
            approved: false,
            reason: reason.into(),
        }
    }
}

/// A decision on its way: ready at once for a list, later when a person
/// (at a terminal, or a client of `chassis serve`) is asked.
pub type Deciding<'a> = Pin<Box<dyn Future<Output = ApprovalDecision> + Send + 'a>>;

/// Decides approval requests.
pub trait ApprovalGate: Send + Sync {
    /// Approve or refuse `request`. The call waits for the answer; a gate
    /// that asks someone bounds the wait itself.
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> Deciding<'a>;
}

/// The default gate: refuses every request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DenyAllApprovals;

impl ApprovalGate for DenyAllApprovals {
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> Deciding<'a> {
        Box::pin(ready(ApprovalDecision::deny(format!(
            "no approval gate is configured to approve `{}`",
            request.tool
        ))))
    }
}

/// Approves exactly the listed tool names, refuses the rest.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApproveListed(pub BTreeSet<String>);

impl ApprovalGate for ApproveListed {
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> Deciding<'a> {
        Box::pin(ready(if self.0.contains(&request.tool) {
            ApprovalDecision::approve(format!("tool `{}` is on the approval list", request.tool))
        } else {
            ApprovalDecision::deny(format!(
                "tool `{}` is not on the approval list",
                request.tool
            ))
        }))
    }
}
