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
    /// Where each `[policy.tools.NAME]` was declared, by tool name.
    pub tool_origins: BTreeMap<String, Origin>,
}

impl PolicyDecl {
    /// Where the policy of tool `name` was declared, else `[policy]`.
    pub fn tool_origin(&self, name: &str) -> Option<Origin> {
        self.tool_origins.get(name).copied().or(self.origin)
    }
}

/// Equal when the rules and tool policies are: where they were written
/// (`origin`, `tool_origins`) is not part of what a policy is.
impl PartialEq for PolicyDecl {
    fn eq(&self, other: &Self) -> bool {
        let Self {
            rules,
            tools,
            origin: _,
            tool_origins: _,
        } = self;
        *rules == other.rules && *tools == other.tools
    }
}

impl Eq for PolicyDecl {}
