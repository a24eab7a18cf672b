//! The six budget dimensions and who keeps each one within its limit.
//!
//! A limit is only as good as the boundary that charges it. Chassis owns the
//! tool boundary, nested-run creation and the deadline check, so those
//! dimensions are [`Enforcement::Enforced`] by default; model calls happen
//! inside an execution engine that chassis cannot observe, so their limits
//! are [`Enforcement::Accounted`] — intent until an integration reports usage.
//! A runtime that does own the model boundary says so with an
//! [`EnforcementProfile`] instead of the API pretending otherwise.
use std::fmt;

use serde::{Deserialize, Serialize};

/// One dimension of a budget.
///
/// Ordering (and [`BudgetDimension::ALL`]) follows the declaration order of
/// the seed's table, which is also the order of every report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetDimension {
    /// Seconds since the governor was created; checked at boundaries
    /// ([`super::BudgetGovernor::check_deadline`]), never charged.
    WallClockSeconds,
    /// Tool executions through the harness boundary.
    ToolCalls,
    /// Nested runs started from inside a run (charged on
    /// [`super::BudgetGovernor::child`]).
    ChildRuns,
    /// Model invocations reported through [`super::BudgetGovernor::record`].
    ModelCalls,
    /// Tokens reported through [`super::BudgetGovernor::record`].
    Tokens,
    /// Estimated monetary cost reported through
    /// [`super::BudgetGovernor::record`]; a real number, unit chosen by the
    /// integration.
    EstimatedCost,
}

impl BudgetDimension {
    /// Every dimension, in report order.
    pub const ALL: [BudgetDimension; 6] = [
        BudgetDimension::WallClockSeconds,
        BudgetDimension::ToolCalls,
        BudgetDimension::ChildRuns,
        BudgetDimension::ModelCalls,
        BudgetDimension::Tokens,
        BudgetDimension::EstimatedCost,
    ];

    /// The snake_case name used in compositions, reports and messages.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            BudgetDimension::WallClockSeconds => "wall_clock_seconds",
            BudgetDimension::ToolCalls => "tool_calls",
            BudgetDimension::ChildRuns => "child_runs",
            BudgetDimension::ModelCalls => "model_calls",
            BudgetDimension::Tokens => "tokens",
            BudgetDimension::EstimatedCost => "estimated_cost",
        }
    }

    /// The dimension named `name` (the [`as_str`](Self::as_str) spelling).
    #[must_use]
    pub fn from_name(name: &str) -> Option<BudgetDimension> {
        BudgetDimension::ALL
            .into_iter()
            .find(|d| d.as_str() == name)
    }

    /// Whether limits and amounts of this dimension are integer counts
    /// (tool calls, child runs, model calls, tokens); fractions are rejected,
    /// never truncated.
    #[must_use]
    pub const fn is_count(self) -> bool {
        matches!(
            self,
            BudgetDimension::ToolCalls
                | BudgetDimension::ChildRuns
                | BudgetDimension::ModelCalls
                | BudgetDimension::Tokens
        )
    }

    /// Who keeps this dimension within its limit when no runtime says
    /// otherwise: enforced for wall clock, tool calls and child runs,
    /// accounted for model calls, tokens and estimated cost.
    #[must_use]
    pub const fn default_enforcement(self) -> Enforcement {
        match self {
            BudgetDimension::WallClockSeconds
            | BudgetDimension::ToolCalls
            | BudgetDimension::ChildRuns => Enforcement::Enforced,
            BudgetDimension::ModelCalls
            | BudgetDimension::Tokens
            | BudgetDimension::EstimatedCost => Enforcement::Accounted,
        }
    }

    /// Position in [`BudgetDimension::ALL`]; indexes per-dimension arrays.
    pub(crate) const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for BudgetDimension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who keeps a dimension within its limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Enforcement {
    /// Chassis owns the boundary where the dimension is consumed, so the
    /// limit is a guarantee there.
    Enforced,
    /// The work happens where chassis cannot see it; the limit fires only
    /// when an integration reports usage.
    Accounted,
}

impl Enforcement {
    /// The snake_case name used in reports.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Enforcement::Enforced => "enforced",
            Enforcement::Accounted => "accounted",
        }
    }
}

impl fmt::Display for Enforcement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Enforcement per dimension for one runtime.
///
/// [`EnforcementProfile::default`] is every dimension's
/// [`BudgetDimension::default_enforcement`];
/// [`EnforcementProfile::owning_model_boundary`] is the profile of a built-in
/// runtime that makes model calls itself and therefore enforces model calls,
/// tokens and estimated cost too.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EnforcementProfile {
    modes: [Enforcement; 6],
}

impl EnforcementProfile {
    /// Every dimension at its default enforcement.
    #[must_use]
    pub const fn new() -> EnforcementProfile {
        let mut modes = [Enforcement::Enforced; 6];
        let mut i = 0;
        while i < BudgetDimension::ALL.len() {
            modes[i] = BudgetDimension::ALL[i].default_enforcement();
            i += 1;
        }
        EnforcementProfile { modes }
    }

    /// The profile of a runtime that owns the model boundary: every
    /// dimension enforced.
    #[must_use]
    pub const fn owning_model_boundary() -> EnforcementProfile {
        EnforcementProfile::new()
            .with(BudgetDimension::ModelCalls, Enforcement::Enforced)
            .with(BudgetDimension::Tokens, Enforcement::Enforced)
            .with(BudgetDimension::EstimatedCost, Enforcement::Enforced)
    }

    /// This profile with `dimension` set to `enforcement`.
    #[must_use]
    pub const fn with(mut self, dimension: BudgetDimension, enforcement: Enforcement) -> Self {
        self.modes[dimension.index()] = enforcement;
        self
    }

    /// The enforcement of `dimension` under this profile.
    #[must_use]
    pub const fn get(&self, dimension: BudgetDimension) -> Enforcement {
        self.modes[dimension.index()]
    }

    /// Whether `dimension` differs from its default enforcement.
    #[must_use]
    pub const fn is_overridden(&self, dimension: BudgetDimension) -> bool {
        !matches!(
            (self.get(dimension), dimension.default_enforcement()),
            (Enforcement::Enforced, Enforcement::Enforced)
                | (Enforcement::Accounted, Enforcement::Accounted)
        )
    }

    /// `(dimension, enforcement)` pairs in report order.
    pub fn iter(&self) -> impl Iterator<Item = (BudgetDimension, Enforcement)> + '_ {
        BudgetDimension::ALL.into_iter().map(|d| (d, self.get(d)))
    }
}

impl Default for EnforcementProfile {
    fn default() -> Self {
        EnforcementProfile::new()
    }
}

impl Serialize for EnforcementProfile {
    /// A map from dimension name to enforcement, in report order.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}
