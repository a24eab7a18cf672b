//! Every tool a composition mounts, with the policy each call will run
//! under — what a user writing `[policy]` needs to see (`chassis tools`).
//!
//! Why it exists: a tool's effective policy comes from three places — the
//! composition's `[policy.tools.<name>]` (which replaces everything), the
//! plugin's registration (a `command` tool's configured policy, an `mcp`
//! tool's defaults from its server's annotations plus the entry's
//! `config.policy`), or nothing (a declared tool). The runtime merges them
//! at publication; this module derives the same answer from the
//! composition and the lock, without starting anything, so it can be shown
//! and reviewed before a run.

use serde::Serialize;

use super::builtin::{command, mcp};
use super::model::{Composition, EntryId, ToolName};
use super::policy::ToolPolicy;
use super::resolve::Plan;
use super::tree::ScopeTree;
use crate::lock::Lock;

/// Where a tool's effective policy came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicySource {
    /// The composition's `[policy.tools.<name>]` replaced it.
    Override,
    /// The `command` entry's tool configuration.
    Config,
    /// An `mcp` server's annotations with the entry's `config.policy`.
    Annotations,
    /// Nothing: the default policy (a declared tool).
    Default,
    /// What a process plugin registered, as `chassis.lock` pins it.
    Lock,
    /// Registered by the plugin at mount; not known before it runs (the
    /// `testing.*` kinds).
    Runtime,
}

impl PolicySource {
    /// The name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Override => "override",
            Self::Config => "config",
            Self::Annotations => "annotations",
            Self::Default => "default",
            Self::Lock => "lock",
            Self::Runtime => "runtime",
        }
    }
}

/// One tool of the composition.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ListedTool {
    /// The name a model calls.
    pub name: String,
    /// The entry that registers it.
    pub entry: String,
    /// The entry's catalog kind (`mcp`, `command`, `declared`, …).
    pub kind: String,
    /// The server's name for it (`mcp` tools).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_name: Option<String>,
    /// Description.
    pub description: String,
    /// Whether the entry is eligible for publication (not pending).
    pub active: bool,
    /// The policy calls run under.
    pub policy: ToolPolicy,
    /// Where [`Self::policy`] came from.
    pub policy_source: PolicySource,
    /// Whether it declares no permission and is not read-only: every call
    /// needs approval.
    pub ungoverned: bool,
}

/// The tools one scope sees.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScopeTools {
    /// The scope's path.
    pub scope: String,
    /// Whether a tool view on its lineage restricts it.
    pub restricted: bool,
    /// Names of the tools it sees, sorted.
    pub tools: Vec<String>,
}

/// Every tool of `composition` (the `mcp` entries' from `lock`), sorted by
/// name then entry.
pub fn list_tools(composition: &Composition, plan: &Plan, lock: Option<&Lock>) -> Vec<ListedTool> {
    let mut out = Vec::new();
    // Looked up per entry: a scan of the order per entry was quadratic.
    let active_ids: std::collections::BTreeSet<&EntryId> = plan.activation_order.iter().collect();
    for (id, entry) in &composition.entries {
        if entry.manifest.tools.is_empty() {
            continue;
        }
        let kind = entry.manifest.kind.as_deref().unwrap_or("declared");
        let active = active_ids.contains(id);
        // A loaded `command` entry's tools carry the policies its
        // configuration gives them (kept from deriving its manifest); the
        // configuration is read only where they do not, or where an `mcp`
        // entry's policies come from it.
        let is_command = kind == command::KIND.name;
        let kept = is_command && entry.manifest.tools.iter().all(|t| t.policy.is_some());
        let config = if kind == mcp::KIND.name || (is_command && !kept) {
            entry.config.to_json()
        } else {
            serde_json::Value::Null
        };
        let commands = (is_command && !kept)
            .then(|| command::parse_checked(&config).ok())
            .flatten();
        let locked = (kind == mcp::KIND.name)
            .then(|| lock.and_then(|l| l.entries.get(id.as_str())))
            .flatten();
        for t in &entry.manifest.tools {
            let (policy, source, remote_name) = if kind == mcp::KIND.name {
                let lt = locked.and_then(|l| l.tools.iter().find(|x| x.name == t.name.as_str()));
                let remote = lt.map_or_else(|| t.name.to_string(), |x| x.remote_name.clone());
                let annotations = lt.and_then(|x| x.annotations_json());
                (
                    mcp::tool_policy(&config, &remote, annotations.as_ref()),
                    PolicySource::Annotations,
                    Some(remote),
                )
            } else if let (true, Some(policy)) = (kept, &t.policy) {
                (policy.as_ref().clone(), PolicySource::Config, None)
            } else if let Some(c) = &commands {
                match c.tools.iter().find(|x| x.name == t.name) {
                    Some(spec) => (spec.policy.clone(), PolicySource::Config, None),
                    None => (ToolPolicy::default(), PolicySource::Default, None),
                }
            } else if kind == "declared" {
                (ToolPolicy::default(), PolicySource::Default, None)
            } else if let Some(policy) = pinned_policy(entry, t.name.as_str()) {
                (policy, PolicySource::Lock, None)
            } else {
                (ToolPolicy::default(), PolicySource::Runtime, None)
            };
            let (policy, source) = match composition
                .policy
                .as_ref()
                .and_then(|p| p.tools.get(t.name.as_str()))
            {
                Some(o) => (o.clone(), PolicySource::Override),
                None => (policy, source),
            };
            out.push(ListedTool {
                name: t.name.to_string(),
                entry: id.to_string(),
                kind: kind.to_owned(),
                remote_name,
                description: t.description.clone(),
                active,
                ungoverned: policy.is_ungoverned(),
                policy,
                policy_source: source,
            });
        }
    }
    out.sort_by(|a, b| (&a.name, &a.entry).cmp(&(&b.name, &b.entry)));
    out
}

/// The policy `chassis.lock` pins for the tool `name` of a process
/// plugin's entry.
fn pinned_policy(entry: &super::model::Entry, name: &str) -> Option<ToolPolicy> {
    let pinned = entry.manifest.process.as_ref()?.pinned.as_ref()?;
    let tool = pinned.tools.iter().find(|t| t.name == name)?;
    serde_json::from_value(tool.policy_json()?).ok()
}

/// For every scope of `tree`, the active tools of `tools` its tool views
/// show (a generation's tools are visible everywhere unless a view on the
/// scope's lineage restricts them).
pub fn scope_tools(tree: &ScopeTree, tools: &[ListedTool]) -> Vec<ScopeTools> {
    tree.scopes()
        .iter()
        .enumerate()
        .map(|(ix, s)| {
            let mut names: Vec<String> = tools
                .iter()
                .filter(|t| t.active)
                .filter(|t| ToolName::new(&t.name).is_ok_and(|n| tree.shows_tool(ix, &n)))
                .map(|t| t.name.clone())
                .collect();
            names.dedup();
            ScopeTools {
                scope: s.path.to_string(),
                restricted: s.tools.is_some(),
                tools: names,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::build::CompositionBuilder;
    use crate::engine::resolve::resolve_with_tree;

    #[test]
    fn overrides_win_and_views_restrict() {
        let mut comp = CompositionBuilder::new()
            .scope("/sub", None)
            .tool_view(&["search"])
            .entry("a")
            .tool("write", "writes", None)
            .tool("search", "finds", None)
            .build()
            .unwrap();
        let over = ToolPolicy {
            approval_required: true,
            ..ToolPolicy::default()
        };
        comp.policy = Some(crate::engine::model::PolicyDecl {
            tools: [("write".to_owned(), over.clone())].into(),
            ..Default::default()
        });
        let tree = ScopeTree::new(&comp);
        let plan = resolve_with_tree(&comp, &tree);
        let tools = list_tools(&comp, &plan, None);
        let names: Vec<(&str, PolicySource)> = tools
            .iter()
            .map(|t| (t.name.as_str(), t.policy_source))
            .collect();
        assert_eq!(
            names,
            [
                ("search", PolicySource::Default),
                ("write", PolicySource::Override)
            ]
        );
        assert_eq!(tools[1].policy, over);
        let scopes = scope_tools(&tree, &tools);
        assert_eq!(scopes[0].tools, ["search", "write"]);
        assert!(!scopes[0].restricted);
        assert_eq!(scopes[1].scope, "/sub");
        assert_eq!(scopes[1].tools, ["search"]);
        assert!(scopes[1].restricted);
    }

    /// A `command` entry's tools list the policies its configuration
    /// gives them, whether they come from its derived manifest or from
    /// reading the configuration again.
    #[test]
    fn command_policies_come_from_the_configuration_either_way() {
        let config = crate::engine::builtin::test_config(serde_json::json!({
            "tools": [
                { "name": "save", "description": "s", "argv": ["tee", "{/path}"],
                  "permissions": ["filesystem.write:{/path}"], "approval_required": true },
                { "name": "count", "description": "c", "argv": ["wc"], "idempotent": true,
                  "timeout_seconds": 5 }
            ]
        }));
        let manifest = command::KIND.derive(&config).unwrap();
        assert!(manifest.tools.iter().all(|t| t.policy.is_some()));
        let mut comp = CompositionBuilder::new()
            .entry("cmd")
            .config(config)
            .build()
            .unwrap();
        let entry = comp.entries.values_mut().next().unwrap();
        entry.manifest = std::sync::Arc::new(manifest);
        let tree = ScopeTree::new(&comp);
        let plan = resolve_with_tree(&comp, &tree);
        let kept = list_tools(&comp, &plan, None);
        let policies: Vec<(&str, bool, bool, Option<f64>, PolicySource)> = kept
            .iter()
            .map(|t| {
                (
                    t.name.as_str(),
                    t.policy.approval_required,
                    t.policy.idempotent,
                    t.policy.timeout_seconds,
                    t.policy_source,
                )
            })
            .collect();
        assert_eq!(
            policies,
            [
                ("count", false, true, Some(5.0), PolicySource::Config),
                ("save", true, false, Some(30.0), PolicySource::Config)
            ]
        );
        assert_eq!(kept[1].policy.permissions, ["filesystem.write:{/path}"]);
        // Without the kept policies, the configuration is read again.
        let entry = comp.entries.values_mut().next().unwrap();
        let mut bare = (*entry.manifest).clone();
        for t in &mut bare.tools {
            t.policy = None;
        }
        entry.manifest = std::sync::Arc::new(bare);
        assert_eq!(list_tools(&comp, &plan, None), kept);
    }
}
