//! `chassis explain budgets`: each agent's limits and who enforces them.

use std::fmt::Write as _;
use std::path::PathBuf;

use crate::engine::budget::{BudgetDimension, EnforcementProfile};

use super::super::exit::ExitStatus;
use super::super::ui::{Format, Ui};
use super::super::workspace::load_file;

/// Arguments of `explain budgets`.
#[derive(Debug, clap::Args)]
pub struct BudgetsArgs {
    /// Composition file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Only this agent.
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
}

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

/// Run `explain budgets`.
pub fn run(ui: &Ui, args: &BudgetsArgs) -> Result<ExitStatus, ExitStatus> {
    let resolved = load_file(ui, &args.file)?;
    let agents: Vec<_> = resolved
        .composition
        .agents
        .values()
        .filter(|a| args.agent.as_deref().is_none_or(|n| n == a.name))
        .collect();
    if let Some(name) = &args.agent
        && agents.is_empty()
    {
        return Err(super::super::workspace::unknown_agent(ui, &resolved, name));
    }
    // The built-in loop owns the model boundary: every dimension enforced.
    let profile = EnforcementProfile::owning_model_boundary();
    if ui.format == Format::Json {
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
        ui.out_json(&serde_json::json!({ "format_version": 1, "agents": list }));
        return Ok(ExitStatus::Success);
    }
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
                .map_or_else(|| "unlimited".to_owned(), crate::cli::render::amount);
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
    ui.out(out.trim_end());
    Ok(ExitStatus::Success)
}
