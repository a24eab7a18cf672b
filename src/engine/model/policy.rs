//! The composition's `[policy]` section: grants, deny rules, approval names,
//! and per-tool policy overrides.

use std::collections::{BTreeMap, BTreeSet};

use crate::engine::canonical::Canon;
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

/// The snapshot's `metadata` key of the composition's `[policy]` (see
/// [`PolicyDecl::to_canon`]).
pub const POLICY: &str = "policy";

impl PolicyDecl {
    /// What this policy decides, as the snapshot records it (and the
    /// semantic digest hashes, so CI's `diff --exit-code` sees a widened
    /// grant or a dropped deny rule): each rule list sorted and without
    /// repeats — the order of rules decides nothing (a deny wins over every
    /// grant; which covering grant is reported is not a decision) — and
    /// each tool's policy by tool name.
    pub fn to_canon(&self) -> Canon {
        let sorted = |items: Vec<String>| {
            Canon::list(
                items
                    .into_iter()
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .map(Canon::Str),
            )
        };
        let rules = &self.rules;
        let tools = self
            .tools
            .iter()
            .map(|(name, policy)| {
                let value = serde_json::to_value(policy).unwrap_or(serde_json::Value::Null);
                let mut canon = Canon::from_json(&value);
                // Opaque extra data is hashed, never shown: what it holds
                // is the tool author's, not a rule a reviewer reads.
                if let Canon::Map(fields) = &mut canon
                    && let Some(extra) = fields.get_mut("metadata")
                    && !matches!(extra, Canon::Map(m) if m.is_empty())
                {
                    *extra = Canon::Str(
                        crate::engine::canonical::stable_hash(extra).unwrap_or_default(),
                    );
                }
                (name.clone(), canon)
            })
            .collect::<BTreeMap<_, _>>();
        Canon::map([
            ("approval_required", sorted(rules.approval_required.clone())),
            (
                "deny",
                sorted(rules.deny.iter().map(ToString::to_string).collect()),
            ),
            (
                "grants",
                sorted(rules.grants.iter().map(ToString::to_string).collect()),
            ),
            ("tools", Canon::Map(tools)),
        ])
    }

    /// Whether it decides nothing: no rule and no tool policy — as if
    /// there were no `[policy]` (the default fails closed either way).
    pub fn is_empty(&self) -> bool {
        self.rules.grants.is_empty()
            && self.rules.deny.is_empty()
            && self.rules.approval_required.is_empty()
            && self.tools.is_empty()
    }

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
