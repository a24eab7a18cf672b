//! `explain budgets` output: each agent's limits per dimension and where
//! the built-in loop enforces them.

use std::fmt::Write as _;

use crate::engine::budget::{BudgetDimension, EnforcementProfile};
use crate::engine::model::AgentDecl;

fn why(d: BudgetDimension) -> &'static str {
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
fn profile() -> EnforcementProfile {
    EnforcementProfile::owning_model_boundary()
}

/// `explain budgets --format json`.
pub fn json(agents: &[AgentDecl]) -> serde_json::Value {
    let profile = profile();
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
                    "where": why(d),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::json!({ "format_version": 1, "agents": list })
}

/// `explain budgets`.
pub fn text(agents: &[AgentDecl]) -> String {
    let profile = profile();
    let mut out = String::new();
    if agents.is_empty() {
        out.push_str("no agents are declared\n");
    }
    for a in agents {
        let _ = writeln!(
            out,
            "agent {} (runtime {}, max_steps {})",
            a.name,
            crate::engine::agent::LOOP_RUNTIME,
            a.max_steps
        );
        for d in BudgetDimension::ALL {
            let limit = a
                .budget
                .get(d)
                .map_or_else(|| "unlimited".to_owned(), super::amount);
            let _ = writeln!(
                out,
                "  {:<20} {:<10} {:<9} {}",
                d.as_str(),
                limit,
                profile.get(d).as_str(),
                why(d)
            );
        }
    }
    out.trim_end().to_owned()
}
