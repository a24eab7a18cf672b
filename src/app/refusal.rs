//! Why a composition cannot be published as it stands, found before
//! anything is mounted: `check` reports it, and `publish`, `run` and `plan`
//! refuse alike (exit 1, a negative answer).

use crate::engine::diag::Diagnostic;
use crate::engine::findings::refusal_diagnostics;
use crate::engine::model::Composition;
use crate::engine::resolve::{PendingReason, Plan};

/// Why a composition is refused before anything runs.
#[derive(Clone, Debug, Default)]
pub struct Refusal {
    /// Cycles as `a -> b -> a`.
    pub cycles: Vec<String>,
    /// `(entry, capability, status)` of pending hard requirements.
    pub pending: Vec<(String, String, String)>,
    /// Tools that cannot be published (a name two entries declare, a
    /// permission the plugin does not declare, an `mcp` entry whose tools
    /// are not pinned in `chassis.lock`), as `check` reports them.
    pub problems: Vec<Diagnostic>,
}

impl Refusal {
    /// `dependency_cycle`, `tool_problems` or `pending_requirements`: the
    /// first that applies.
    pub fn reason(&self) -> &'static str {
        if !self.cycles.is_empty() {
            "dependency_cycle"
        } else if !self.problems.is_empty() {
            "tool_problems"
        } else {
            "pending_requirements"
        }
    }

    /// The refusal as JSON (`plan`'s `refusal`).
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "reason": self.reason(),
            "cycles": self.cycles,
            "pending": self.pending.iter().map(|(e, c, s)| serde_json::json!({
                "entry_id": e, "capability": c, "status": s,
            })).collect::<Vec<_>>(),
            "problems": self.problems.iter().map(|d| serde_json::json!({
                "code": d.code.as_str(), "message": d.message,
            })).collect::<Vec<_>>(),
        })
    }
}

/// The refusal of `composition` resolved as `plan`: cycles and tool
/// problems always, pending requirements unless allowed.
pub fn refusal(composition: &Composition, plan: &Plan, allow_pending: bool) -> Option<Refusal> {
    let cycles = plan.cycle_texts();
    let mut pending = Vec::new();
    if !allow_pending {
        for entry in &plan.pending {
            for reason in plan.entries.get(entry).map_or(&[][..], |p| &p.pending[..]) {
                if let PendingReason::Requirement { capability, status } = reason {
                    pending.push((
                        entry.to_string(),
                        capability.to_string(),
                        status.as_str().to_owned(),
                    ));
                }
            }
        }
    }
    let problems = refusal_diagnostics(composition, plan);
    (!cycles.is_empty() || !pending.is_empty() || !problems.is_empty()).then_some(Refusal {
        cycles,
        pending,
        problems,
    })
}

/// Pending entries with their first reason, for `reject` lines.
pub fn pending_lines(plan: &Plan) -> Vec<(String, String)> {
    plan.pending
        .iter()
        .map(|e| {
            let why = plan
                .entries
                .get(e)
                .and_then(|p| p.pending.first())
                .map_or_else(
                    || "pending".to_owned(),
                    |p| match p {
                        PendingReason::Requirement { capability, status } => {
                            format!("pending: {capability} {}", status.as_str())
                        }
                        PendingReason::Cycle { .. } => "dependency_cycle".to_owned(),
                    },
                );
            (e.to_string(), why)
        })
        .collect()
}
