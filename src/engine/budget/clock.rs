//! Time as an input: the [`Clock`] trait and a [`ManualClock`] for tests.
//!
//! The engine never reads the system clock — that would make deadline
//! behaviour untestable and non-deterministic. The edge supplies a real
//! monotonic clock; tests move a [`ManualClock`] by hand.
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// A monotonic source of time.
///
/// `now` is the time since an arbitrary, fixed epoch; only differences are
/// meaningful. Implementations must be monotonic: a clock that goes
/// backwards is treated as standing still (elapsed time saturates at zero).
pub trait Clock: Send + Sync {
    /// The time since this clock's epoch.
    fn now(&self) -> Duration;
}

/// A clock that moves only when told to; clones share the same time, so a
/// test keeps one handle and gives another to the governor.
#[derive(Clone, Debug, Default)]
pub struct ManualClock {
    now: Arc<Mutex<Duration>>,
}

impl ManualClock {
    /// A clock at its epoch (`now() == 0`).
    #[must_use]
    pub fn new() -> ManualClock {
        ManualClock::default()
    }

    /// Sets the current time.
    pub fn set(&self, now: Duration) {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner) = now;
    }

    /// Moves the clock forward by `by` (saturating).
    pub fn advance(&self, by: Duration) {
        let mut now = self.now.lock().unwrap_or_else(PoisonError::into_inner);
        *now = now.saturating_add(by);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
