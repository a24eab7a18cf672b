//! `check` output.

use std::fmt::Write;

use crate::app::check::CheckReport;
use crate::engine::resolve::Status;
use crate::engine::system::{Governing, SystemCapability, governing};

use super::explain::governing_text;
use crate::app::explain_documents::resolution_json_listed;
use crate::engine::findings::listed;

/// The text summary of one checked composition.
pub fn check_text(report: &CheckReport) -> String {
    let r = &report.workspace;
    let plan = &r.plan;
    let entries = r.composition.entries.len();
    let active = plan.activation_order.len();
    let hard: Vec<_> = plan
        .resolutions
        .iter()
        .filter(|x| !x.requirement.optional && x.consumer.kind() == "plugin")
        .collect();
    let resolved = hard.iter().filter(|x| x.status == Status::Resolved).count();
    let optional: Vec<_> = plan
        .resolutions
        .iter()
        .filter(|x| x.requirement.optional && x.consumer.kind() == "plugin")
        .collect();
    let optional_text = if optional.is_empty() {
        String::new()
    } else {
        format!(
            ", {}/{} optional bound",
            optional
                .iter()
                .filter(|x| x.status == Status::Resolved)
                .count(),
            optional.len()
        )
    };
    let mut out = String::new();
    let verdict = report.verdict.as_str();
    let _ = writeln!(
        out,
        "{}: {verdict} — {entries} entr{} ({active} active), {} scope{}, {resolved}/{} requirements resolved{optional_text}",
        r.display,
        if entries == 1 { "y" } else { "ies" },
        r.composition.scopes.len(),
        if r.composition.scopes.len() == 1 {
            ""
        } else {
            "s"
        },
        hard.len()
    );
    if !r.composition.disabled.is_empty() {
        let names: Vec<&str> = r.composition.disabled.keys().map(|e| e.as_str()).collect();
        let _ = writeln!(out, "  disabled  {}", names.join(", "));
    }
    for (id, s) in &r.composition.skipped {
        let _ = writeln!(
            out,
            "  skipped   {id}: enabled_if {} (not set: {})",
            s.condition.describe(),
            s.unset.join(", ")
        );
    }
    for x in hard.iter().filter(|x| x.status != Status::Resolved) {
        let detail = if x.status == Status::Ambiguous {
            // One line per consumer: N consumers among N providers would
            // print N² names.
            let (shown, more) = listed(&x.ambiguous_between);
            let mut c: Vec<String> = shown.iter().map(ToString::to_string).collect();
            if more > 0 {
                c.push(format!("… and {more} more"));
            }
            format!("ambiguous between {}", c.join(", "))
        } else {
            x.status.as_str().to_owned()
        };
        let _ = writeln!(
            out,
            "  pending   {}: `{}` {detail}",
            x.consumer.name(),
            x.requirement.render()
        );
    }
    for cycle in plan.cycle_texts() {
        let _ = writeln!(out, "  cycle     {cycle} (provider -> consumer)");
    }
    for agent in r.composition.agents.values() {
        let scope = agent.scope.as_str();
        let model = plan
            .resolutions_of(scope)
            .iter()
            .find(|x| x.capability() == &agent.model.capability);
        let wiring = match model {
            Some(x) if x.status == Status::Resolved => {
                x.selected.as_ref().map_or_else(String::new, |s| {
                    format!("{} -> {}", x.requirement.render(), s.entry)
                })
            }
            Some(x) => format!("{} {}", x.requirement.render(), x.status.as_str()),
            None => "no model requirement".to_owned(),
        };
        let tools = agent.tools.as_ref().map_or_else(
            || "every visible tool".to_owned(),
            |t| {
                if t.is_empty() {
                    "no tools".to_owned()
                } else {
                    t.iter().map(|t| t.as_str()).collect::<Vec<_>>().join(", ")
                }
            },
        );
        // A scope-level policy or secrets provider, when one governs.
        let system: String = r
            .tree
            .find(&agent.scope)
            .map(|ix| {
                SystemCapability::ALL
                    .into_iter()
                    .filter_map(|s| match governing(&r.composition, &r.tree, plan, ix, s) {
                        Governing::Default => None,
                        g => Some(format!("; {}: {}", s.name(), governing_text(&g))),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  agent     {} ({scope}): {wiring}; tools: {tools}{system}",
            agent.name
        );
    }
    if !plan.activation_order.is_empty() {
        // A person reads the start of a long order; `--format json` has it all.
        let n = plan.activation_order.len();
        let order: Vec<&str> = plan
            .activation_order
            .iter()
            .take(ORDER_SHOWN)
            .map(|e| e.as_str())
            .collect();
        let more = if n > ORDER_SHOWN {
            format!(", … ({} more; `--format json` lists all)", n - ORDER_SHOWN)
        } else {
            String::new()
        };
        let _ = writeln!(out, "  order     {}{more}", order.join(", "));
    }
    out
}

/// How many entries of the activation order the text report shows.
const ORDER_SHOWN: usize = 50;

/// The JSON report of one checked composition.
pub fn check_json(report: &CheckReport) -> serde_json::Value {
    let r = &report.workspace;
    let plan = &r.plan;
    let findings: Vec<serde_json::Value> = report
        .findings
        .iter()
        .map(|d| crate::cli::ui::diagnostic_json(d, &r.sources))
        .collect();
    serde_json::json!({
        "file": r.display,
        "loaded": true,
        "ok": !report.is_negative(),
        "verdict": report.verdict.as_str(),
        "lock_findings": report.lock_findings(),
        "entries": r.composition.entries.len(),
        "disabled": r.composition.disabled.keys().map(|e| e.as_str()).collect::<Vec<_>>(),
        "skipped": r.composition.skipped.iter().map(|(id, s)| serde_json::json!({
            "entry_id": id.as_str(),
            "condition": s.condition.describe(),
            "unset": s.unset,
        })).collect::<Vec<_>>(),
        "scopes": r.composition.scopes.len(),
        "activation_order": plan.activation_order.iter().map(|e| e.as_str()).collect::<Vec<_>>(),
        "pending": plan.pending.iter().map(|e| e.as_str()).collect::<Vec<_>>(),
        "cycles": plan.cycles.iter().map(|c| c.iter().map(|e| e.as_str()).collect::<Vec<_>>()).collect::<Vec<_>>(),
        "edges": plan.edges.iter().map(|(p, c)| [p.as_str(), c.as_str()]).collect::<Vec<_>>(),
        "requirements": plan.resolutions.iter().map(resolution_json_listed).collect::<Vec<_>>(),
        "findings": findings,
    })
}
