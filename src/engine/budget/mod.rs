//! Budgets: six dimensions, enforcement modes, hierarchical governors.
//!
//! A budget bounds what a run may spend — time, tool calls, nested runs,
//! model calls, tokens, cost — and says honestly who keeps each bound: a
//! dimension is [`Enforcement::Enforced`] where chassis owns the boundary
//! that consumes it and [`Enforcement::Accounted`] where an integration must
//! report usage ([`EnforcementProfile`] lets a runtime that owns the model
//! boundary enforce those too).
//!
//! The module is pure: no I/O, no environment, no printing, and no direct
//! clock. Time arrives through the [`Clock`] trait so deadlines are
//! deterministic under test ([`ManualClock`]); the edge supplies a real
//! monotonic clock. Wall-clock enforcement is cooperative: it holds at the
//! boundaries that call [`BudgetGovernor::check_deadline`], and nothing here
//! preempts running work.
//!
//! - [`dimension`]: [`BudgetDimension`], [`Enforcement`], [`EnforcementProfile`].
//! - [`limits`]: validated [`BudgetLimits`] and their description for
//!   `explain budgets`.
//! - [`governor`]: [`BudgetGovernor`], the hierarchical, atomic charger, and
//!   its [`BudgetReport`].
//! - [`error`]: [`BudgetError`] and [`BudgetExceeded`].
//! - [`clock`]: [`Clock`] and [`ManualClock`].

pub mod clock;
pub mod dimension;
pub mod error;
pub mod governor;
pub mod limits;

#[cfg(test)]
mod tests;

pub use clock::{Clock, ManualClock};
pub use dimension::{BudgetDimension, Enforcement, EnforcementProfile};
pub use error::{BudgetError, BudgetExceeded, InvalidReason};
pub use governor::{BudgetGovernor, BudgetReport, COST_TOLERANCE, DimensionReport, Usage};
pub use limits::{BudgetLimits, BudgetLimitsBuilder, LimitDescription, LimitsDescription};
