//! Validated budget limits and their description for `explain budgets`.
//!
//! Limits are validated once, at construction, so a governor never has to
//! wonder whether a limit is NaN or whether `1.5` tool calls means one or
//! two: a value that is not a non-negative finite number, or a fractional
//! count, is a typed [`BudgetError::InvalidLimit`] and never silently
//! truncated.
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::dimension::{BudgetDimension, Enforcement, EnforcementProfile};
use super::error::{BudgetError, InvalidReason};

/// A limit per dimension; `None` means unlimited.
///
/// Built with [`BudgetLimits::new`] or [`BudgetLimits::builder`], both of
/// which validate; [`BudgetLimits::default`] is unlimited everywhere.
/// Serializes as a map of the configured dimensions (counts as integers) and
/// deserializes through the same validation.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BudgetLimits {
    values: [Option<f64>; 6],
}

impl BudgetLimits {
    /// Limits from `(dimension, value)` pairs (any map or array of pairs).
    ///
    /// # Errors
    /// [`BudgetError::InvalidLimit`] for the first invalid value and
    /// [`BudgetError::DuplicateLimit`] if a dimension appears twice.
    pub fn new(
        limits: impl IntoIterator<Item = (BudgetDimension, f64)>,
    ) -> Result<BudgetLimits, BudgetError> {
        let mut values = [None; 6];
        for (dimension, value) in limits {
            InvalidReason::check(dimension, value).map_err(|reason| BudgetError::InvalidLimit {
                dimension,
                value,
                reason,
            })?;
            let slot = &mut values[dimension.index()];
            if slot.is_some() {
                return Err(BudgetError::DuplicateLimit { dimension });
            }
            *slot = Some(value);
        }
        Ok(BudgetLimits { values })
    }

    /// No limit on any dimension.
    #[must_use]
    pub const fn unlimited() -> BudgetLimits {
        BudgetLimits { values: [None; 6] }
    }

    /// A builder with one setter per dimension; validation happens in
    /// [`BudgetLimitsBuilder::build`].
    #[must_use]
    pub fn builder() -> BudgetLimitsBuilder {
        BudgetLimitsBuilder::default()
    }

    /// The limit of `dimension`, `None` when unlimited.
    #[must_use]
    pub const fn get(&self, dimension: BudgetDimension) -> Option<f64> {
        self.values[dimension.index()]
    }

    /// These limits tightened by `caps`: per dimension the smaller of the
    /// two, a cap where these have none. A cap never loosens a limit.
    #[must_use]
    pub fn tightened(&self, caps: &BudgetLimits) -> BudgetLimits {
        let mut values = self.values;
        for (slot, cap) in values.iter_mut().zip(caps.values) {
            *slot = match (*slot, cap) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        BudgetLimits { values }
    }

    /// Whether no dimension is limited.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.values.iter().all(Option::is_none)
    }

    /// The configured `(dimension, limit)` pairs in report order.
    pub fn iter(&self) -> impl Iterator<Item = (BudgetDimension, f64)> + '_ {
        BudgetDimension::ALL
            .into_iter()
            .filter_map(|d| self.get(d).map(|v| (d, v)))
    }

    /// Configured dimensions that `profile` enforces.
    #[must_use]
    pub fn enforced_dimensions(&self, profile: &EnforcementProfile) -> Vec<BudgetDimension> {
        self.configured_with(profile, Enforcement::Enforced)
    }

    /// Configured dimensions that `profile` only accounts: their limits fire
    /// only when an integration reports usage.
    #[must_use]
    pub fn accounted_dimensions(&self, profile: &EnforcementProfile) -> Vec<BudgetDimension> {
        self.configured_with(profile, Enforcement::Accounted)
    }

    /// Whether any configured limit depends on an integration reporting
    /// usage under `profile`.
    #[must_use]
    pub fn requires_accounting(&self, profile: &EnforcementProfile) -> bool {
        !self.accounted_dimensions(profile).is_empty()
    }

    fn configured_with(
        &self,
        profile: &EnforcementProfile,
        mode: Enforcement,
    ) -> Vec<BudgetDimension> {
        self.iter()
            .map(|(d, _)| d)
            .filter(|&d| profile.get(d) == mode)
            .collect()
    }

    /// Every dimension with its limit and enforcement under `profile`, the
    /// data behind `explain budgets`.
    #[must_use]
    pub fn describe(&self, profile: &EnforcementProfile) -> LimitsDescription {
        LimitsDescription {
            dimensions: BudgetDimension::ALL
                .into_iter()
                .map(|dimension| LimitDescription {
                    dimension,
                    enforcement: profile.get(dimension),
                    overridden: profile.is_overridden(dimension),
                    limit: self.get(dimension),
                })
                .collect(),
            requires_accounting: self.requires_accounting(profile),
        }
    }
}

impl Serialize for BudgetLimits {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter().map(|(d, v)| (d, Amount(d, v))))
    }
}

impl<'de> Deserialize<'de> for BudgetLimits {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = BTreeMap::<BudgetDimension, f64>::deserialize(deserializer)?;
        BudgetLimits::new(map).map_err(serde::de::Error::custom)
    }
}

/// Collects limits one dimension at a time; [`build`](Self::build) validates.
#[derive(Clone, Debug, Default)]
pub struct BudgetLimitsBuilder {
    entries: Vec<(BudgetDimension, f64)>,
}

impl BudgetLimitsBuilder {
    /// Sets the limit of `dimension` (setting one twice is an error at
    /// [`build`](Self::build)).
    #[must_use]
    pub fn limit(mut self, dimension: BudgetDimension, value: f64) -> Self {
        self.entries.push((dimension, value));
        self
    }

    /// Sets `wall_clock_seconds`.
    #[must_use]
    pub fn wall_clock_seconds(self, seconds: f64) -> Self {
        self.limit(BudgetDimension::WallClockSeconds, seconds)
    }

    /// Sets `tool_calls`.
    #[must_use]
    pub fn tool_calls(self, count: f64) -> Self {
        self.limit(BudgetDimension::ToolCalls, count)
    }

    /// Sets `child_runs`.
    #[must_use]
    pub fn child_runs(self, count: f64) -> Self {
        self.limit(BudgetDimension::ChildRuns, count)
    }

    /// Sets `model_calls`.
    #[must_use]
    pub fn model_calls(self, count: f64) -> Self {
        self.limit(BudgetDimension::ModelCalls, count)
    }

    /// Sets `tokens`.
    #[must_use]
    pub fn tokens(self, count: f64) -> Self {
        self.limit(BudgetDimension::Tokens, count)
    }

    /// Sets `estimated_cost`.
    #[must_use]
    pub fn estimated_cost(self, cost: f64) -> Self {
        self.limit(BudgetDimension::EstimatedCost, cost)
    }

    /// Validates and returns the limits.
    ///
    /// # Errors
    /// As [`BudgetLimits::new`].
    pub fn build(self) -> Result<BudgetLimits, BudgetError> {
        BudgetLimits::new(self.entries)
    }
}

/// What `explain budgets` shows: every dimension, limited or not.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LimitsDescription {
    /// One row per dimension, in report order.
    pub dimensions: Vec<LimitDescription>,
    /// Whether a configured limit fires only if an integration reports usage.
    pub requires_accounting: bool,
}

/// One dimension of a [`LimitsDescription`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LimitDescription {
    /// The dimension.
    pub dimension: BudgetDimension,
    /// Who keeps it within its limit under the runtime's profile.
    pub enforcement: Enforcement,
    /// Whether the profile changed the dimension's default enforcement.
    pub overridden: bool,
    /// The configured limit, `None` when unlimited.
    pub limit: Option<f64>,
}

impl Serialize for LimitDescription {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("LimitDescription", 4)?;
        s.serialize_field("dimension", &self.dimension)?;
        s.serialize_field("enforcement", &self.enforcement)?;
        s.serialize_field("overridden", &self.overridden)?;
        s.serialize_field("limit", &self.limit.map(|v| Amount(self.dimension, v)))?;
        s.end()
    }
}

/// An amount of a dimension for serialization: counts as integers (`5`, not
/// `5.0`), everything else as a float.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Amount(pub(crate) BudgetDimension, pub(crate) f64);

impl Serialize for Amount {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Amount(dimension, value) = *self;
        // Counts are validated integral and ≤ 2^53, so the cast is exact.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        if dimension.is_count()
            && value.fract() == 0.0
            && (0.0..=InvalidReason::MAX_COUNT).contains(&value)
        {
            serializer.serialize_u64(value as u64)
        } else {
            serializer.serialize_f64(value)
        }
    }
}
