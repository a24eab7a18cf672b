//! The JSON documents of `explain` (requirement, scope, budgets), shared by
//! `chassis explain --format json` and `chassis serve`'s `/v1/explain/…`.

use crate::engine::budget::{BudgetDimension, EnforcementProfile};
use crate::engine::explain::{RequirementReport, ScopeReport};
use crate::engine::leaf_diff::{toml_key, toml_string};
use crate::engine::model::{AgentDecl, ConfigValue, EntryId};
use crate::engine::resolve::{Resolution, SelectionReason, Status};
use crate::engine::system::Governing;

/// A resolution as JSON.
pub fn resolution_json(r: &Resolution) -> serde_json::Value {
    resolution_json_naming(r, &r.ambiguous_between)
}

/// A resolution as JSON, naming `between` as its ambiguous candidates.
fn resolution_json_naming(r: &Resolution, between: &[EntryId]) -> serde_json::Value {
    serde_json::json!({
        "consumer": r.consumer.name(),
        "consumer_kind": r.consumer.kind(),
        "scope": r.scope.as_str(),
        "capability": r.requirement.capability.as_str(),
        "requirement": r.requirement.render(),
        "optional": r.requirement.optional,
        "status": r.status.as_str(),
        "reason": r.reason.map(|x| x.as_str()),
        "selected": r.selected.as_ref().map(|s| serde_json::json!({
            "provider": s.entry.as_str(),
            "version": s.version.to_string(),
            "scope": s.scope.as_str(),
            "origin": s.origin.as_str(),
        })),
        "ambiguous_between": between.iter().map(|e| e.as_str()).collect::<Vec<_>>(),
    })
}

/// A resolution as JSON in a document about many (`check`, a scope's
/// requirements): an ambiguous one names at most
/// [`LISTED_CANDIDATES`](crate::engine::findings::LISTED_CANDIDATES) of its
/// candidates in `ambiguous_between`, with `candidates_total` counting them
/// all (N consumers among N providers would otherwise be N² names; `explain
/// requirement` lists them all).
pub fn resolution_json_listed(r: &Resolution) -> serde_json::Value {
    let (shown, _) = crate::engine::findings::listed(&r.ambiguous_between);
    let mut v = resolution_json_naming(r, shown);
    if r.status == Status::Ambiguous
        && let Some(row) = v.as_object_mut()
    {
        row.insert(
            "candidates_total".to_owned(),
            r.ambiguous_between.len().into(),
        );
    }
    v
}

/// A configuration value as JSON (secret references as `{"secret": NAME}`).
pub fn config_json(v: &ConfigValue) -> serde_json::Value {
    v.to_json()
}

/// For an ambiguous requirement: the preferences that would choose, as
/// TOML to paste — for this consumer, and for every consumer.
pub fn preference_snippets(report: &RequirementReport) -> Option<[String; 2]> {
    let r = &report.resolution;
    if r.status != Status::Ambiguous {
        return None;
    }
    let first = r.ambiguous_between.first()?;
    let (key, value) = (
        toml_key(r.requirement.capability.as_str()),
        toml_string(first.as_str()),
    );
    let table = match &r.consumer {
        crate::engine::resolve::Consumer::Entry(id) => {
            format!("[entries.{}]", toml_key(id.as_str()))
        }
        crate::engine::resolve::Consumer::Scope(path) => {
            format!("[scopes.{}]", toml_string(path.as_str()))
        }
    };
    Some([
        format!("{table}\nprefer = {{ {key} = {value} }}"),
        format!("[prefer]\n{key} = {value}"),
    ])
}

/// JSON for `explain requirement`.
pub fn requirement_json(report: &RequirementReport) -> serde_json::Value {
    let mut v = resolution_json(&report.resolution);
    let candidates: Vec<serde_json::Value> = report
        .candidates
        .iter()
        .map(|c| {
            serde_json::json!({
                "entry": c.entry.as_str(),
                "name": c.name,
                "version": c.version.to_string(),
                "versions": c.versions.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "scope": c.scope.as_str(),
                "origin": c.origin.as_str(),
                "visible": c.visible,
                "eligible": c.qualifies,
                "active": c.active,
                "why": c.why,
                "selected": c.selected,
                "rejection": c.rejection.map(|r| r.as_str()),
            })
        })
        .collect();
    if let Some(obj) = v.as_object_mut() {
        // 2: `eligible` says whether the candidate qualifies for this
        // requirement (1 said whether the provider activates, now `active`).
        obj.insert("format_version".into(), 2.into());
        obj.insert("candidates".into(), candidates.into());
        if let Some(snippets) = preference_snippets(report) {
            obj.insert("prefer_snippets".into(), snippets.to_vec().into());
        }
    }
    v
}

fn governing_json(g: &Governing) -> serde_json::Value {
    match g {
        Governing::Default => serde_json::json!({ "status": "default" }),
        Governing::Provider {
            entry,
            origin,
            reason,
        } => serde_json::json!({
            "status": "provider",
            "entry": entry.as_str(),
            "origin": origin.as_str(),
            "selection_reason": reason.as_str(),
            "preference_level": match reason {
                SelectionReason::ExplicitPreference(level) => Some(level.as_str()),
                SelectionReason::OnlyEligible => None,
            },
        }),
        Governing::FailClosed(failure) => {
            serde_json::json!({ "status": "fail_closed", "reason": failure.to_string() })
        }
    }
}

/// JSON for `explain scope`.
pub fn scope_json(r: &ScopeReport) -> serde_json::Value {
    let providers = |m: &std::collections::BTreeMap<
        crate::engine::model::CapabilityName,
        Vec<crate::engine::model::EntryId>,
    >| {
        m.iter()
            .map(|(k, v)| {
                (
                    k.to_string(),
                    serde_json::Value::from(v.iter().map(|e| e.to_string()).collect::<Vec<_>>()),
                )
            })
            .collect::<serde_json::Map<_, _>>()
    };
    serde_json::json!({
        "format_version": 1,
        "path": r.path.as_str(),
        "name": r.name,
        "parent": r.parent.as_ref().map(|p| p.as_str()),
        "children": r.children.iter().map(|c| c.as_str()).collect::<Vec<_>>(),
        "implied": r.implied,
        "capabilities": r.capabilities.as_ref().map(|v| v.iter().map(|c| c.as_str()).collect::<Vec<_>>()),
        "tools": r.tools,
        "entries": r.entries.iter().map(|e| serde_json::json!({"id": e.id.as_str(), "plugin": e.plugin, "eligible": e.eligible})).collect::<Vec<_>>(),
        "local_providers": providers(&r.local_providers),
        "inherited_providers": providers(&r.inherited_providers),
        "visible_providers": providers(&r.visible_providers()),
        "requirements": r.requirements.iter().map(resolution_json_listed).collect::<Vec<_>>(),
        "unresolved": r.unresolved().map(resolution_json_listed).collect::<Vec<_>>(),
        "local_tools": r.local_tools,
        "visible_tools": r.visible_tools,
        "system": r.system.iter().map(|(s, g)| (s.name().to_owned(), governing_json(g))).collect::<serde_json::Map<_, _>>(),
        "effective_policy": r.policy.as_ref().map(|p| serde_json::json!({
            "source": p.source,
            "grants": p.rules.grants.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "deny": p.rules.deny.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "approval_required": p.rules.approval_required,
        })),
        "metadata": r.metadata.iter().map(|(k, v)| (k.clone(), config_json(v))).collect::<serde_json::Map<_, _>>(),
    })
}
/// Where the built-in loop enforces dimension `d`.
pub fn budget_enforcement_site(d: BudgetDimension) -> &'static str {
    match d {
        BudgetDimension::WallClockSeconds => "checked at every model and tool boundary",
        BudgetDimension::ToolCalls => "charged at the tool boundary before the tool runs",
        BudgetDimension::ChildRuns => "charged when a sub-agent run starts",
        BudgetDimension::ModelCalls => "checked before and charged after each model call",
        BudgetDimension::Tokens => {
            "caps max_tokens of each call to what is left; charged from reported usage"
        }
        BudgetDimension::EstimatedCost => "charged from the cost each model call reports",
    }
}

/// The built-in loop owns the model boundary: every dimension enforced.
pub fn budget_profile() -> EnforcementProfile {
    EnforcementProfile::owning_model_boundary()
}

/// `explain budgets --format json`.
pub fn budgets_json(agents: &[AgentDecl]) -> serde_json::Value {
    let profile = budget_profile();
    let list: Vec<serde_json::Value> = agents
        .iter()
        .map(|a| {
            serde_json::json!({
                "agent": a.name,
                "runtime": crate::engine::agent::LOOP_RUNTIME,
                "max_steps": a.max_steps,
                "dimensions": BudgetDimension::ALL.iter().map(|&d| serde_json::json!({
                    "dimension": d.as_str(),
                    "limit": a.budget.get(d),
                    "enforcement": profile.get(d).as_str(),
                    "where": budget_enforcement_site(d),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::json!({ "format_version": 1, "agents": list })
}
