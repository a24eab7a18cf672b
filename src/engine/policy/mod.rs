//! Tool policy: permissions, grants, deny rules, argument templates and
//! approval.
//!
//! Policy gates harness-mediated tool calls; it is not a sandbox. The
//! executor asks, for every permission a call requires, whether it is
//! allowed, then whether the call needs approval. This module is the pure
//! part of that: grammar, matching and decisions, no I/O.
//!
//! The design answers the reference's security weaknesses:
//!
//! * globs respect path segments (`*` stays in one segment, `**` crosses),
//!   and path resources are normalized before matching, so
//!   `/workspace/../etc/passwd` is not under `/workspace/**`
//!   ([`glob`]);
//! * deny rules exist and always win over grants ([`rules`]);
//! * grants may name a family (`filesystem.*`), and names have a grammar
//!   so that this is unambiguous ([`permission`]);
//! * permissions can depend on a call's arguments, so a grant on
//!   `/workspace/**` constrains what the tool is asked to touch, not just
//!   that it can touch something ([`template`]);
//! * a tool may only require what its plugin's manifest declares
//!   ([`tool_policy::check_declared`]);
//! * everything that cannot be decided fails closed: malformed resources,
//!   template errors, engine errors and the default approval gate all deny.
pub mod approval;
pub mod glob;
pub mod permission;
pub mod rules;
pub mod template;
pub mod tool_policy;

#[cfg(test)]
mod tests;

pub use approval::{
    ApprovalDecision, ApprovalGate, ApprovalRequest, ApproveListed, Deciding, DenyAllApprovals,
};
pub use glob::{ArgumentPattern, ResourceError, ResourcePattern, normalize_path};
pub use permission::{Permission, PermissionError};
pub use rules::{
    AllowAll, DenyAll, FailClosed, Grant, PROVIDER_FAILURE, PolicyDecision, PolicyEngine,
    PolicyError, PolicyRequest, PolicyRules, evaluate_or_deny,
};
pub use template::{JsonPointer, MAX_EXPANSIONS, PermissionTemplate, TemplateError, expand};
pub use tool_policy::{ToolPolicy, ToolPolicyError, check_declared};
