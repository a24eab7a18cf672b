//! `explain budgets` output: each agent's limits per dimension and where
//! the built-in loop enforces them.

use std::fmt::Write as _;

use crate::engine::budget::BudgetDimension;
use crate::engine::model::AgentDecl;

pub use crate::app::explain_documents::budgets_json as json;
use crate::app::explain_documents::{budget_enforcement_site as why, budget_profile as profile};

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
