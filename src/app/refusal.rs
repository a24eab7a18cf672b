//! Why a composition cannot be published as it stands, found before
//! anything is mounted: `publish`, `run` and `plan` refuse alike.

use crate::engine::resolve::{PendingReason, Plan};

/// Why a composition is refused before anything runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// Cycles as `a -> b -> a`.
    pub cycles: Vec<String>,
    /// `(entry, capability, status)` of pending hard requirements.
    pub pending: Vec<(String, String, String)>,
}

impl Refusal {
    /// `dependency_cycle` or `pending_requirements`.
    pub fn reason(&self) -> &'static str {
        if self.cycles.is_empty() {
            "pending_requirements"
        } else {
            "dependency_cycle"
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
        })
    }
}

/// The refusal for `plan`: cycles always, pending requirements unless
/// allowed.
pub fn refusal(plan: &Plan, allow_pending: bool) -> Option<Refusal> {
    let cycles: Vec<String> = plan
        .cycle_paths
        .iter()
        .map(|c| {
            let mut names: Vec<&str> = c.iter().map(|e| e.as_str()).collect();
            names.extend(c.first().map(|e| e.as_str()));
            names.join(" -> ")
        })
        .collect();
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
    (!cycles.is_empty() || !pending.is_empty()).then_some(Refusal { cycles, pending })
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
