//! The composition's `[policy]` section: grants, deny rules, approval names,
//! and per-tool policy overrides.

use std::collections::BTreeMap;

use crate::engine::policy::{PolicyRules, ToolPolicy};
use crate::engine::span::Origin;

/// The declared policy. Absent means the harness default (allow-all with
/// approval gates still denying unapproved calls).
#[derive(Clone, Debug, Default)]
pub struct PolicyDecl {
    /// Grants, deny rules and approval-required permission names.
    pub rules: PolicyRules,
    /// Tool name → the policy that replaces the tool's registered one.
    pub tools: BTreeMap<String, ToolPolicy>,
    /// Where `[policy]` was declared.
    pub origin: Option<Origin>,
}

eq_but_origin!(PolicyDecl { rules, tools });
