//! The budget governor: hierarchical, atomic charging against limits.
//!
//! # Why one lock per tree
//!
//! A charge must be checked against the governor's own limit and every
//! ancestor's, then added to all of them, as one step: two runs sharing a
//! parent must not both pass the check and together overdraw it. Rather
//! than one mutex per node (which needs a strict root→leaf lock order to
//! avoid deadlock), a root governor and all its descendants share a single
//! `Arc<Mutex<Tree>>` with the nodes in a `Vec`. A governor handle is that
//! `Arc` plus a node index, so it is cheap to clone, `Send + Sync`, and
//! deadlock-free by construction: every operation takes exactly one lock.
//! Nodes are never removed; a tree lives as long as its longest-lived
//! handle, and its size is the number of runs started in it.
//!
//! # Fixes relative to the reference
//!
//! - `record` is atomic across dimensions and across the chain: if any part
//!   of a report would cross any limit, nothing is charged anywhere (the
//!   reference charged the dimensions before the failing one).
//! - The deadline compares elapsed time with the limit instead of reserving a
//!   whole second per check, so limits below one second work; elapsed time
//!   exactly at the limit is allowed.
//!
//! Counts are exact (validated integral, at most 2^53). Estimated cost is a
//! real number: sums such as `0.1 + 0.2` land a few ULPs above `0.3`, so a
//! charge of a non-count dimension is allowed if it crosses the limit by at
//! most a relative [`COST_TOLERANCE`] — representation error, not spending.
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::clock::Clock;
use super::dimension::{BudgetDimension, Enforcement, EnforcementProfile};
use super::error::{BudgetError, BudgetExceeded, InvalidReason};
use super::limits::{Amount, BudgetLimits};

/// Relative slack allowed when a real-valued (non-count) charge meets its
/// limit, absorbing floating-point representation error.
pub const COST_TOLERANCE: f64 = 1e-9;

/// Whether `used + amount` stays within `limit` for `dimension`.
pub(crate) fn fits(dimension: BudgetDimension, used: f64, amount: f64, limit: f64) -> bool {
    let total = used + amount;
    total <= limit || (!dimension.is_count() && total - limit <= limit * COST_TOLERANCE)
}

/// Usage reported by an integration where it owns a model call.
///
/// Fields left at zero (or `None`) are not charged. Amounts are validated
/// like limits: non-negative, finite, integral for counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Usage {
    /// Model invocations.
    pub model_calls: f64,
    /// Tokens consumed.
    pub tokens: f64,
    /// Estimated cost, in the integration's unit.
    pub estimated_cost: f64,
    /// Tool calls made inside the execution engine, if it reports them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<f64>,
}

impl Usage {
    /// The `(dimension, amount)` pairs of this report, zeros included.
    fn charges(&self) -> [(BudgetDimension, f64); 4] {
        [
            (BudgetDimension::ModelCalls, self.model_calls),
            (BudgetDimension::Tokens, self.tokens),
            (BudgetDimension::EstimatedCost, self.estimated_cost),
            (BudgetDimension::ToolCalls, self.tool_calls.unwrap_or(0.0)),
        ]
    }
}

/// A handle on one run's budget allocation inside a tree of allocations.
///
/// Clones are the same allocation. See the [module docs](self) for the
/// locking design.
#[derive(Clone)]
pub struct BudgetGovernor {
    shared: Arc<Shared>,
    node: usize,
}

struct Shared {
    clock: Arc<dyn Clock>,
    profile: EnforcementProfile,
    tree: Mutex<Tree>,
}

struct Tree {
    nodes: Vec<Node>,
}

struct Node {
    parent: Option<usize>,
    limits: BudgetLimits,
    used: [f64; 6],
    start: Duration,
}

impl Tree {
    /// `(ancestor level, node index)` from `node` up to the root.
    fn chain(&self, node: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        std::iter::successors(Some(node), |&n| self.nodes[n].parent).enumerate()
    }

    /// Checks charging `amount` of `dimension` at `node` against the chain.
    fn check(
        &self,
        node: usize,
        dimension: BudgetDimension,
        amount: f64,
        now: Duration,
    ) -> Result<(), BudgetExceeded> {
        self.chain(node)
            .try_for_each(|(ancestor, n)| self.check_one(n, ancestor, dimension, amount, now))
    }

    /// Checks charging `amount` of `dimension` against the limit of the
    /// node `n` alone, `ancestor` levels up from where it is charged.
    fn check_one(
        &self,
        n: usize,
        ancestor: usize,
        dimension: BudgetDimension,
        amount: f64,
        now: Duration,
    ) -> Result<(), BudgetExceeded> {
        let node = &self.nodes[n];
        let Some(limit) = node.limits.get(dimension) else {
            return Ok(());
        };
        let exceeded = |used| BudgetExceeded {
            dimension,
            limit,
            used,
            requested: amount,
            ancestor,
        };
        if dimension == BudgetDimension::WallClockSeconds {
            let elapsed = now.saturating_sub(node.start);
            if elapsed.saturating_add(to_duration(amount)) > to_duration(limit) {
                return Err(exceeded(elapsed.as_secs_f64()));
            }
        } else if amount > 0.0 && !fits(dimension, node.used[dimension.index()], amount, limit) {
            return Err(exceeded(node.used[dimension.index()]));
        }
        Ok(())
    }

    /// Add `charges` to `node` and every ancestor.
    fn add(&mut self, node: usize, charges: &[(BudgetDimension, f64)]) {
        let mut next = Some(node);
        while let Some(n) = next {
            let node = &mut self.nodes[n];
            for &(dimension, amount) in charges {
                node.used[dimension.index()] += amount;
            }
            next = node.parent;
        }
    }

    /// Add `charges` along the chain whatever the limits say, then report
    /// the outermost limit they crossed (checked before adding, as `charge`
    /// would have refused it; of one level, the first dimension): the run
    /// that must stop is the highest one whose budget is now spent, so a
    /// child whose use crossed its caller's limit stops the caller too.
    fn spend(
        &mut self,
        node: usize,
        charges: &[(BudgetDimension, f64)],
        now: Duration,
    ) -> Result<(), BudgetExceeded> {
        let mut verdict: Option<BudgetExceeded> = None;
        for (ancestor, n) in self.chain(node) {
            let crossed = charges.iter().find_map(|&(dimension, amount)| {
                self.check_one(n, ancestor, dimension, amount, now).err()
            });
            if crossed.is_some() {
                verdict = crossed;
            }
        }
        self.add(node, charges);
        verdict.map_or(Ok(()), Err)
    }

    /// Checks every charge against the chain, then applies all or none.
    fn charge(
        &mut self,
        node: usize,
        charges: &[(BudgetDimension, f64)],
        now: Duration,
    ) -> Result<(), BudgetExceeded> {
        for &(dimension, amount) in charges {
            self.check(node, dimension, amount, now)?;
        }
        self.add(node, charges);
        Ok(())
    }

    fn used(&self, node: usize, dimension: BudgetDimension, now: Duration) -> f64 {
        let node = &self.nodes[node];
        if dimension == BudgetDimension::WallClockSeconds {
            now.saturating_sub(node.start).as_secs_f64()
        } else {
            node.used[dimension.index()]
        }
    }

    fn remaining(&self, node: usize, dimension: BudgetDimension, now: Duration) -> Option<f64> {
        self.chain(node)
            .filter_map(|(_, n)| {
                let limit = self.nodes[n].limits.get(dimension)?;
                Some((limit - self.used(n, dimension, now)).max(0.0))
            })
            .reduce(f64::min)
    }
}

/// `seconds` (validated finite and non-negative) as a duration, saturating.
fn to_duration(seconds: f64) -> Duration {
    Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX)
}

fn validate(dimension: BudgetDimension, value: f64) -> Result<(), BudgetError> {
    InvalidReason::check(dimension, value).map_err(|reason| BudgetError::InvalidAmount {
        dimension,
        value,
        reason,
    })
}

impl BudgetGovernor {
    /// A root governor under the default [`EnforcementProfile`]; its wall
    /// clock starts now.
    #[must_use]
    pub fn new(limits: BudgetLimits, clock: Arc<dyn Clock>) -> BudgetGovernor {
        BudgetGovernor::with_profile(limits, clock, EnforcementProfile::default())
    }

    /// A root governor whose runtime enforces dimensions as `profile` says;
    /// children inherit the profile.
    #[must_use]
    pub fn with_profile(
        limits: BudgetLimits,
        clock: Arc<dyn Clock>,
        profile: EnforcementProfile,
    ) -> BudgetGovernor {
        let start = clock.now();
        let root = Node {
            parent: None,
            limits,
            used: [0.0; 6],
            start,
        };
        BudgetGovernor {
            shared: Arc::new(Shared {
                clock,
                profile,
                tree: Mutex::new(Tree { nodes: vec![root] }),
            }),
            node: 0,
        }
    }

    /// The tree's state. Every mutation is validated before it is applied,
    /// so a poisoned lock (a panic elsewhere while holding it) still guards
    /// consistent data and is recovered.
    fn tree(&self) -> MutexGuard<'_, Tree> {
        self.shared
            .tree
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts a nested run's allocation: charges one `child_runs` here and on
    /// every ancestor, and links a child with its own `limits` whose wall
    /// clock starts now. The child can never use more than the chain has
    /// left.
    ///
    /// # Errors
    /// [`BudgetExceeded`] for `child_runs` if any governor on the chain has
    /// no child run left; nothing is charged then.
    pub fn child(&self, limits: BudgetLimits) -> Result<BudgetGovernor, BudgetExceeded> {
        let now = self.shared.clock.now();
        let mut tree = self.tree();
        tree.charge(self.node, &[(BudgetDimension::ChildRuns, 1.0)], now)?;
        let node = tree.nodes.len();
        tree.nodes.push(Node {
            parent: Some(self.node),
            limits,
            used: [0.0; 6],
            start: now,
        });
        Ok(BudgetGovernor {
            shared: Arc::clone(&self.shared),
            node,
        })
    }

    /// Whether `amount` of `dimension` could be charged now, without
    /// charging it. For `wall_clock_seconds`, whether `amount` more seconds
    /// fit before every deadline on the chain.
    ///
    /// # Errors
    /// [`BudgetError::InvalidAmount`] or [`BudgetError::Exceeded`].
    pub fn check(&self, dimension: BudgetDimension, amount: f64) -> Result<(), BudgetError> {
        validate(dimension, amount)?;
        let now = self.shared.clock.now();
        Ok(self.tree().check(self.node, dimension, amount, now)?)
    }

    /// Charges `amount` of `dimension` here and on every ancestor, or nothing
    /// if any limit on the chain would be crossed.
    ///
    /// # Errors
    /// [`BudgetError::InvalidAmount`], [`BudgetError::NotConsumable`] for
    /// `wall_clock_seconds`, or [`BudgetError::Exceeded`].
    pub fn consume(&self, dimension: BudgetDimension, amount: f64) -> Result<(), BudgetError> {
        if dimension == BudgetDimension::WallClockSeconds {
            return Err(BudgetError::NotConsumable { dimension });
        }
        validate(dimension, amount)?;
        let now = self.shared.clock.now();
        Ok(self.tree().charge(self.node, &[(dimension, amount)], now)?)
    }

    /// Charges a usage report atomically: every non-zero dimension here and
    /// on every ancestor, or nothing at all if any amount is invalid or any
    /// dimension would cross any limit on the chain.
    ///
    /// # Errors
    /// [`BudgetError::InvalidAmount`] (first invalid field) or
    /// [`BudgetError::Exceeded`] (first dimension that does not fit).
    pub fn record(&self, usage: Usage) -> Result<(), BudgetError> {
        let charges = usage.charges();
        for (dimension, amount) in charges {
            validate(dimension, amount)?;
        }
        let now = self.shared.clock.now();
        Ok(self.tree().charge(self.node, &charges, now)?)
    }

    /// Records usage that already happened (what a model call reports it
    /// used): charged in full along the chain even past a limit — what was
    /// spent is spent, so an ancestor's budget sees its children's real use
    /// and stops them — and the outermost limit it crossed is returned
    /// (`ancestor` says whose: the run that must stop).
    ///
    /// # Errors
    /// A validation error for a negative or non-finite amount (nothing
    /// is charged); [`BudgetError::Exceeded`] for the outermost limit
    /// crossed (everything is charged).
    pub fn spend(&self, usage: Usage) -> Result<(), BudgetError> {
        let charges = usage.charges();
        for (dimension, amount) in charges {
            validate(dimension, amount)?;
        }
        let now = self.shared.clock.now();
        Ok(self.tree().spend(self.node, &charges, now)?)
    }

    /// Checks the deadline: fails if the elapsed time of this governor or of
    /// any ancestor is beyond its `wall_clock_seconds` limit. Elapsed exactly
    /// at the limit is allowed. Charges nothing.
    ///
    /// # Errors
    /// [`BudgetExceeded`] for `wall_clock_seconds`, `requested` zero.
    pub fn check_deadline(&self) -> Result<(), BudgetExceeded> {
        let now = self.shared.clock.now();
        self.tree()
            .check(self.node, BudgetDimension::WallClockSeconds, 0.0, now)
    }

    /// How long until the tightest `wall_clock_seconds` limit on the chain is
    /// reached (zero once it has passed), when this runtime enforces the
    /// deadline: what an operation in flight may still take.
    #[must_use]
    pub fn time_left(&self) -> Option<Duration> {
        let dimension = BudgetDimension::WallClockSeconds;
        if self.profile().get(dimension) != Enforcement::Enforced {
            return None;
        }
        let left = self.remaining(dimension)?;
        Duration::try_from_secs_f64(left.max(0.0)).ok()
    }

    /// What this allocation has used of `dimension`, including its
    /// descendants; for `wall_clock_seconds`, seconds since it started.
    #[must_use]
    pub fn used(&self, dimension: BudgetDimension) -> f64 {
        let now = self.shared.clock.now();
        self.tree().used(self.node, dimension, now)
    }

    /// What can still be charged here: the minimum over the chain of limit
    /// minus used, `None` if no governor on the chain limits `dimension`.
    #[must_use]
    pub fn remaining(&self, dimension: BudgetDimension) -> Option<f64> {
        let now = self.shared.clock.now();
        self.tree().remaining(self.node, dimension, now)
    }

    /// This allocation's own limits (ancestors may be tighter; see
    /// [`remaining`](Self::remaining)).
    #[must_use]
    pub fn limits(&self) -> BudgetLimits {
        self.tree().nodes[self.node].limits
    }

    /// The enforcement profile of the runtime this tree belongs to.
    #[must_use]
    pub fn profile(&self) -> EnforcementProfile {
        self.shared.profile
    }

    /// Time since this allocation started, by the tree's clock.
    #[must_use]
    pub fn elapsed(&self) -> Duration {
        let now = self.shared.clock.now();
        now.saturating_sub(self.tree().nodes[self.node].start)
    }

    /// The parent allocation, `None` for a root.
    #[must_use]
    pub fn parent(&self) -> Option<BudgetGovernor> {
        let parent = self.tree().nodes[self.node].parent?;
        Some(BudgetGovernor {
            shared: Arc::clone(&self.shared),
            node: parent,
        })
    }

    /// How many ancestors this allocation has (0 for a root).
    #[must_use]
    pub fn depth(&self) -> usize {
        self.tree().chain(self.node).count() - 1
    }

    /// Every dimension's limit, usage, remaining amount and enforcement, read
    /// under one lock so the rows are consistent with each other.
    #[must_use]
    pub fn snapshot(&self) -> BudgetReport {
        let now = self.shared.clock.now();
        let tree = self.tree();
        let node = &tree.nodes[self.node];
        BudgetReport {
            depth: tree.chain(self.node).count() - 1,
            dimensions: BudgetDimension::ALL
                .into_iter()
                .map(|dimension| DimensionReport {
                    dimension,
                    enforcement: self.shared.profile.get(dimension),
                    limit: node.limits.get(dimension),
                    used: tree.used(self.node, dimension, now),
                    remaining: tree.remaining(self.node, dimension, now),
                })
                .collect(),
        }
    }
}

impl fmt::Debug for BudgetGovernor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BudgetGovernor")
            .field("node", &self.node)
            .field("limits", &self.limits())
            .finish_non_exhaustive()
    }
}

/// A consistent view of one allocation, for reports and telemetry.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BudgetReport {
    /// How many ancestors the allocation has (0 for a root).
    pub depth: usize,
    /// One row per dimension, in report order.
    pub dimensions: Vec<DimensionReport>,
}

impl BudgetReport {
    /// The row of `dimension`.
    #[must_use]
    pub fn get(&self, dimension: BudgetDimension) -> &DimensionReport {
        &self.dimensions[dimension.index()]
    }
}

/// One dimension of a [`BudgetReport`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DimensionReport {
    /// The dimension.
    pub dimension: BudgetDimension,
    /// Who keeps it within its limit under the tree's profile.
    pub enforcement: Enforcement,
    /// The allocation's own limit, `None` when unlimited.
    pub limit: Option<f64>,
    /// What the allocation and its descendants used (elapsed seconds for the
    /// wall clock).
    pub used: f64,
    /// Minimum over the chain of limit minus used, `None` when unlimited on
    /// the whole chain.
    pub remaining: Option<f64>,
}

impl Serialize for DimensionReport {
    /// Counts serialize as integers.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let d = self.dimension;
        let mut s = serializer.serialize_struct("DimensionReport", 5)?;
        s.serialize_field("dimension", &d)?;
        s.serialize_field("enforcement", &self.enforcement)?;
        s.serialize_field("limit", &self.limit.map(|v| Amount(d, v)))?;
        s.serialize_field("used", &Amount(d, self.used))?;
        s.serialize_field("remaining", &self.remaining.map(|v| Amount(d, v)))?;
        s.end()
    }
}
