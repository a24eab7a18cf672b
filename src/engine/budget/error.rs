//! Budget errors: invalid limits and amounts, and exhaustion.
//!
//! Exhaustion ([`BudgetExceeded`]) is its own type because it is not a bug
//! in the caller: it is the expected way a run learns it must stop, and the
//! edge renders it differently from a malformed limit.
use std::fmt;

use serde::Serialize;

use super::dimension::BudgetDimension;

/// Why a limit or an amount was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InvalidReason {
    /// The value is NaN.
    NotANumber,
    /// The value is infinite.
    NotFinite,
    /// The value is below zero.
    Negative,
    /// A count dimension got a fractional value (rejected, never truncated).
    Fractional,
    /// A count above 2^53, which `f64` cannot count exactly.
    TooLarge,
}

impl InvalidReason {
    /// Largest count accepted: every integer up to 2^53 is exact in `f64`.
    pub const MAX_COUNT: f64 = 9_007_199_254_740_992.0;

    /// Validates `value` for `dimension`: finite, non-negative, and for count
    /// dimensions integral and at most [`InvalidReason::MAX_COUNT`].
    ///
    /// # Errors
    /// The first rule `value` breaks, in the order of the variants.
    pub fn check(dimension: BudgetDimension, value: f64) -> Result<(), InvalidReason> {
        if value.is_nan() {
            Err(InvalidReason::NotANumber)
        } else if value.is_infinite() {
            Err(InvalidReason::NotFinite)
        } else if value < 0.0 {
            Err(InvalidReason::Negative)
        } else if dimension.is_count() && value.fract() != 0.0 {
            Err(InvalidReason::Fractional)
        } else if dimension.is_count() && value > InvalidReason::MAX_COUNT {
            Err(InvalidReason::TooLarge)
        } else {
            Ok(())
        }
    }
}

impl fmt::Display for InvalidReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            InvalidReason::NotANumber => "must be a number, not NaN",
            InvalidReason::NotFinite => "must be finite",
            InvalidReason::Negative => "must not be negative",
            InvalidReason::Fractional => "must be a whole number for a count dimension",
            InvalidReason::TooLarge => "must be at most 2^53 for a count dimension",
        })
    }
}

/// A budget operation the caller got wrong, or a budget that ran out.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum BudgetError {
    /// A configured limit is not acceptable for its dimension.
    #[error("invalid {dimension} limit {value}: {reason}")]
    InvalidLimit {
        /// The dimension the limit was declared for.
        dimension: BudgetDimension,
        /// The rejected value.
        value: f64,
        /// Which rule it breaks.
        reason: InvalidReason,
    },
    /// The same dimension was given two limits.
    #[error("{dimension} limit declared more than once")]
    DuplicateLimit {
        /// The dimension declared twice.
        dimension: BudgetDimension,
    },
    /// An amount passed to check, consume or record is not acceptable.
    #[error("invalid {dimension} amount {value}: {reason}")]
    InvalidAmount {
        /// The dimension being charged.
        dimension: BudgetDimension,
        /// The rejected amount.
        value: f64,
        /// Which rule it breaks.
        reason: InvalidReason,
    },
    /// `wall_clock_seconds` is measured by the clock, never consumed.
    #[error("{dimension} is measured by the clock and cannot be consumed; use check_deadline")]
    NotConsumable {
        /// The dimension that was consumed.
        dimension: BudgetDimension,
    },
    /// The operation would cross a limit; nothing was charged.
    #[error(transparent)]
    Exceeded(#[from] BudgetExceeded),
}

impl BudgetError {
    /// The exhaustion this error reports, if it is one.
    #[must_use]
    pub fn exceeded(&self) -> Option<&BudgetExceeded> {
        match self {
            BudgetError::Exceeded(e) => Some(e),
            _ => None,
        }
    }
}

/// A charge (or the deadline) would cross a limit somewhere on the chain.
///
/// Nothing is charged when this is returned. For `wall_clock_seconds`,
/// `used` is the elapsed time and `requested` the time asked for (zero for
/// [`super::BudgetGovernor::check_deadline`]).
#[derive(Clone, Debug, PartialEq, Serialize, thiserror::Error)]
pub struct BudgetExceeded {
    /// The dimension that ran out.
    pub dimension: BudgetDimension,
    /// The limit that would be crossed.
    pub limit: f64,
    /// What was already used against that limit.
    pub used: f64,
    /// What the refused operation asked for.
    pub requested: f64,
    /// Where the limit lives: 0 for the governor that was asked, `n` for its
    /// `n`-th ancestor.
    pub ancestor: usize,
}

impl fmt::Display for BudgetExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            dimension,
            limit,
            used,
            requested,
            ancestor,
        } = self;
        if *dimension == BudgetDimension::WallClockSeconds && *requested == 0.0 {
            write!(
                f,
                "{dimension} budget exceeded: {used}s elapsed of a {limit}s limit"
            )?;
        } else {
            write!(
                f,
                "{dimension} budget exceeded: {used} used of {limit}, {requested} more requested"
            )?;
        }
        match ancestor {
            0 => Ok(()),
            1 => f.write_str(" (limit of the parent run)"),
            n => write!(f, " (limit of the run {n} levels up)"),
        }
    }
}
