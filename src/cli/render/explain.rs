//! `explain` output.

use std::fmt::Write;

use crate::engine::explain::{RequirementReport, ScopeReport};
use crate::engine::resolve::{SelectionReason, Status};
use crate::engine::system::Governing;

use super::{config_json, config_text, resolution_json};
use crate::engine::leaf_diff::{toml_key, toml_string};

/// Text close to the reference's `to_text`.
pub fn requirement_text(report: &RequirementReport) -> String {
    let r = &report.resolution;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "requirement  {} -> {}",
        r.consumer.name(),
        r.requirement.render()
    );
    let _ = writeln!(
        out,
        "consumer     {} `{}` in scope {}",
        r.consumer.kind(),
        r.consumer.name(),
        r.scope
    );
    let reason = match r.reason {
        Some(SelectionReason::ExplicitPreference(level)) => {
            format!(" (explicit_preference, {} level)", level.as_str())
        }
        Some(reason) => format!(" ({})", reason.as_str()),
        None => String::new(),
    };
    let _ = writeln!(out, "status       {}{reason}", r.status.as_str());
    match &r.selected {
        Some(s) if r.status == Status::Resolved => {
            let _ = writeln!(
                out,
                "selected     {} {} from {} ({})",
                s.entry,
                s.version,
                s.scope,
                s.origin.as_str()
            );
        }
        _ => {
            let _ = writeln!(out, "selected     none");
        }
    }
    if report.candidates.is_empty() {
        let _ = writeln!(
            out,
            "candidates   none: nothing provides `{}`",
            r.requirement.capability
        );
        return out;
    }
    let _ = writeln!(out, "candidates");
    let w_id = report
        .candidates
        .iter()
        .map(|c| c.entry.as_str().len())
        .max()
        .unwrap_or(0);
    let w_v = report
        .candidates
        .iter()
        .map(|c| c.version.as_str().len())
        .max()
        .unwrap_or(0);
    let w_s = report
        .candidates
        .iter()
        .map(|c| c.scope.as_str().len())
        .max()
        .unwrap_or(0);
    for c in &report.candidates {
        let verdict = match c.rejection {
            None => "selected".to_owned(),
            Some(rej) => format!("rejected: {}", rej.as_str()),
        };
        let _ = writeln!(
            out,
            "  {:w_id$}  {:w_v$}  {:w_s$}  {:9}  {:11}  {:8}  {verdict}",
            c.entry.as_str(),
            c.version.as_str(),
            c.scope.as_str(),
            c.origin.as_str(),
            if c.visible { "visible" } else { "not visible" },
            if c.active { "active" } else { "pending" },
        );
        let _ = writeln!(out, "      {}", c.why);
    }
    if let Some(help) = preference_help(report) {
        let _ = write!(out, "\n{help}");
    }
    out
}

/// For an ambiguous requirement: the preferences that would choose, as
/// TOML to paste — for this consumer, and for every consumer.
fn preference_snippets(report: &RequirementReport) -> Option<[String; 2]> {
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

/// The preferences that would choose, laid out to paste (never wrapped).
fn preference_help(report: &RequirementReport) -> Option<String> {
    let [consumer, global] = preference_snippets(report)?;
    let indent = |s: &str| s.lines().map(|l| format!("    {l}\n")).collect::<String>();
    Some(format!(
        "help: choose one with a preference for this consumer:\n\n{}\n  or for every consumer of `{}`:\n\n{}",
        indent(&consumer),
        report.resolution.requirement.capability,
        indent(&global)
    ))
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

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

/// Text for `explain scope`.
pub fn scope_text(r: &ScopeReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "scope        {}{}",
        r.path,
        if r.implied {
            " (implied by a descendant)"
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "parent       {}",
        r.parent
            .as_ref()
            .map_or("none".to_owned(), ToString::to_string)
    );
    let _ = writeln!(
        out,
        "children     {}",
        list(
            &r.children
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
        )
    );
    let _ = writeln!(
        out,
        "capabilities {}",
        r.capabilities
            .as_ref()
            .map_or("all (no view on the lineage)".to_owned(), |v| list(
                &v.iter().map(ToString::to_string).collect::<Vec<_>>()
            ))
    );
    let _ = writeln!(
        out,
        "tool view    {}",
        r.tools.as_ref().map_or("all".to_owned(), |v| list(v))
    );
    let entries: Vec<String> = r
        .entries
        .iter()
        .map(|e| format!("{}{}", e.id, if e.eligible { "" } else { " (pending)" }))
        .collect();
    let _ = writeln!(out, "entries      {}", list(&entries));
    let _ = writeln!(out, "providers");
    let visible = r.visible_providers();
    if visible.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for (cap, ids) in &visible {
        let tagged: Vec<String> = ids
            .iter()
            .map(|id| {
                let local = r.local_providers.get(cap).is_some_and(|l| l.contains(id));
                format!("{id} ({})", if local { "local" } else { "inherited" })
            })
            .collect();
        let _ = writeln!(out, "  {cap}: {}", tagged.join(", "));
    }
    let _ = writeln!(out, "requirements");
    if r.requirements.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for q in &r.requirements {
        let by = q
            .selected
            .as_ref()
            .filter(|_| q.status == Status::Resolved)
            .map(|s| format!(" by {}", s.entry))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  {} -> {}: {}{by}",
            q.consumer.name(),
            q.requirement.render(),
            q.status.as_str()
        );
    }
    let unresolved: Vec<String> = r
        .unresolved()
        .map(|q| format!("{} -> {}", q.consumer.name(), q.requirement.capability))
        .collect();
    let _ = writeln!(out, "unresolved   {}", list(&unresolved));
    for (system, governing) in &r.system {
        let _ = writeln!(out, "{:<12} {}", system.name(), governing_text(governing));
        if *system == crate::engine::system::SystemCapability::Policy
            && let Some(p) = &r.policy
        {
            out.push_str(&effective_policy_text(p));
        }
    }
    let _ = writeln!(out, "tools        {}", list(&r.local_tools));
    let _ = writeln!(out, "visible tools {}", list(&r.visible_tools));
    if !r.metadata.is_empty() {
        let _ = writeln!(out, "metadata");
        for (k, v) in &r.metadata {
            let _ = writeln!(out, "  {k} = {}", config_text(v));
        }
    }
    out
}

/// The rules that decide the scope's calls, each with where it comes from;
/// what no grant covers is refused.
fn effective_policy_text(p: &crate::engine::explain::EffectivePolicy) -> String {
    let mut out = String::new();
    let rules = &p.rules;
    if rules.grants.is_empty() {
        let _ = writeln!(
            out,
            "  grants     none: every permission is refused (`chassis run --grant PERM` widens the default for one run)"
        );
    }
    for g in &rules.grants {
        let _ = writeln!(out, "  grant      {g}  ({})", p.source);
    }
    for d in &rules.deny {
        let _ = writeln!(out, "  deny       {d}  ({})", p.source);
    }
    for a in &rules.approval_required {
        let _ = writeln!(out, "  approval   {a}  ({})", p.source);
    }
    out
}

/// What governs a scope's `policy` or `secrets`, in words.
pub(crate) fn governing_text(g: &Governing) -> String {
    match g {
        Governing::Default => "harness default".to_owned(),
        Governing::Provider {
            entry,
            origin,
            reason,
        } => {
            let by = match reason {
                SelectionReason::OnlyEligible => String::new(),
                SelectionReason::ExplicitPreference(level) => {
                    format!(", {} preference", level.as_str())
                }
            };
            format!("{entry} ({}{by})", origin.as_str())
        }
        Governing::FailClosed(failure) => format!("fail closed: {failure}"),
    }
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
        "requirements": r.requirements.iter().map(resolution_json).collect::<Vec<_>>(),
        "unresolved": r.unresolved().map(resolution_json).collect::<Vec<_>>(),
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
