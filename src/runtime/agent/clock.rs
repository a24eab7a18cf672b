//! The real clock budgets use at run time (the engine only sees [`Clock`]).

use std::time::Duration;

use crate::engine::budget::Clock;

/// Monotonic time since the clock was created (tokio's clock, so paused
/// test time applies).
#[derive(Debug, Clone, Copy)]
pub struct MonotonicClock {
    epoch: tokio::time::Instant,
}

impl MonotonicClock {
    /// A clock starting now.
    pub fn new() -> Self {
        Self {
            epoch: tokio::time::Instant::now(),
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for MonotonicClock {
    fn now(&self) -> Duration {
        self.epoch.elapsed()
    }
}
