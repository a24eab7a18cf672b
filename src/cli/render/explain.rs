//! `explain` output.

use std::fmt::Write;

use crate::engine::explain::{RequirementReport, ScopeReport};
use crate::engine::resolve::{SelectionReason, Status};
use crate::engine::system::Governing;

use crate::app::explain_documents::preference_snippets;
pub use crate::app::explain_documents::{requirement_json, scope_json};

use super::config_text;

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
