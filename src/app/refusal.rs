//! Why a composition cannot be published as it stands, found before
//! anything is mounted: `check` reports it, and `publish`, `run` and `plan`
//! refuse alike (exit 1, a negative answer).

use crate::engine::diag::{Code, Diagnostic};
use crate::engine::findings::refusal_diagnostics;
use crate::engine::model::{CapabilityName, Composition, EntryId};
use crate::engine::resolve::{PendingReason, Plan, Status};

/// What a refusal is mainly about: the first of these that applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefusalReason {
    /// Entries require each other in a cycle.
    DependencyCycle,
    /// A tool cannot be published (a name two entries declare, a
    /// permission its plugin does not declare, an `mcp` entry's tools not
    /// pinned).
    ToolProblems,
    /// A hard requirement does not resolve.
    PendingRequirements,
}

impl RefusalReason {
    /// `dependency_cycle`, `tool_problems`, `pending_requirements`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DependencyCycle => "dependency_cycle",
            Self::ToolProblems => "tool_problems",
            Self::PendingRequirements => "pending_requirements",
        }
    }
}

/// One pending hard requirement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingRequirement {
    /// The entry that holds it.
    pub entry: EntryId,
    /// What it requires.
    pub capability: CapabilityName,
    /// Why it does not resolve.
    pub status: Status,
}

/// Why a composition is refused before anything runs.
#[derive(Clone, Debug, Default)]
pub struct Refusal {
    /// Cycles as `a -> b -> a` (provider -> consumer).
    pub cycles: Vec<String>,
    /// Pending hard requirements.
    pub pending: Vec<PendingRequirement>,
    /// Tools that cannot be published (a name two entries declare, a
    /// permission the plugin does not declare, an `mcp` entry whose tools
    /// are not pinned in `chassis.lock`), as `check` reports them.
    pub problems: Vec<Diagnostic>,
}

impl Refusal {
    /// What the refusal is mainly about.
    pub fn reason(&self) -> RefusalReason {
        if !self.cycles.is_empty() {
            RefusalReason::DependencyCycle
        } else if !self.problems.is_empty() {
            RefusalReason::ToolProblems
        } else {
            RefusalReason::PendingRequirements
        }
    }

    /// Whether a problem is tools not pinned in `chassis.lock`
    /// (`--update-lock` fixes it).
    pub fn needs_lock_update(&self) -> bool {
        self.problems.iter().any(|d| {
            matches!(
                d.code,
                Code::McpLockMissing
                    | Code::McpLockStale
                    | Code::McpExpectedToolMissing
                    | Code::UnknownTool
                    | Code::BadLock
            ) && !d.is_error()
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
                    pending.push(PendingRequirement {
                        entry: entry.clone(),
                        capability: capability.clone(),
                        status: *status,
                    });
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

/// A pending entry with its first reason, for `reject` lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingEntry {
    /// The entry.
    pub entry: EntryId,
    /// Its first reason.
    pub reason: Option<PendingReason>,
}

/// Every pending entry with its first reason.
pub fn pending_entries(plan: &Plan) -> Vec<PendingEntry> {
    plan.pending
        .iter()
        .map(|e| PendingEntry {
            entry: e.clone(),
            reason: plan.entries.get(e).and_then(|p| p.pending.first()).cloned(),
        })
        .collect()
}
