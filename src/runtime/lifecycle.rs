//! The plugin state machine and health, exactly as the reference defines
//! them: pending → loading → active → unloading → disposed, with failed as
//! a retryable state. Health is orthogonal to state.

use std::fmt;

/// Where a plugin instance is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PluginState {
    /// Created, not yet set up.
    Pending,
    /// `setup` is running.
    Loading,
    /// Set up; its registrations can be published.
    Active,
    /// `teardown` and the effect unwind are running.
    Unloading,
    /// Gone; nothing it registered remains.
    Disposed,
    /// `setup` failed (its effects were rolled back); it may be retried.
    Failed,
}

impl PluginState {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Loading => "loading",
            Self::Active => "active",
            Self::Unloading => "unloading",
            Self::Disposed => "disposed",
            Self::Failed => "failed",
        }
    }

    /// Whether `self → next` is allowed. Staying in the same state is a
    /// no-op and always allowed.
    pub fn can_become(self, next: PluginState) -> bool {
        use PluginState::*;
        self == next
            || matches!(
                (self, next),
                (Pending, Loading)
                    | (Pending, Disposed)
                    | (Loading, Active)
                    | (Loading, Failed)
                    | (Active, Unloading)
                    | (Active, Failed)
                    | (Unloading, Disposed)
                    | (Failed, Loading)
                    | (Failed, Disposed)
            )
    }
}

impl fmt::Display for PluginState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a plugin is doing, independent of its state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Health {
    /// Not known yet.
    Unknown,
    /// Working.
    Healthy,
    /// Working with problems.
    Degraded,
    /// Not working.
    Unhealthy,
}

impl Health {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unknown => "unknown",
            Self::Healthy => "healthy",
            Self::Degraded => "degraded",
            Self::Unhealthy => "unhealthy",
        }
    }
}

/// An illegal state transition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a plugin cannot go from `{current}` to `{requested}`")]
pub struct StateError {
    /// The state it is in.
    pub current: PluginState,
    /// The state that was asked for.
    pub requested: PluginState,
}

/// A state cell that only allows the machine's transitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateMachine {
    state: PluginState,
}

impl Default for StateMachine {
    fn default() -> Self {
        Self {
            state: PluginState::Pending,
        }
    }
}

impl StateMachine {
    /// The current state.
    pub fn state(&self) -> PluginState {
        self.state
    }

    /// Move to `next`, or refuse without changing anything.
    pub fn transition(&mut self, next: PluginState) -> Result<(), StateError> {
        if !self.state.can_become(next) {
            return Err(StateError {
                current: self.state,
                requested: next,
            });
        }
        self.state = next;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use PluginState::*;

    #[test]
    fn only_the_reference_transitions_are_allowed() {
        let all = [Pending, Loading, Active, Unloading, Disposed, Failed];
        let allowed = [
            (Pending, Loading),
            (Pending, Disposed),
            (Loading, Active),
            (Loading, Failed),
            (Active, Unloading),
            (Active, Failed),
            (Unloading, Disposed),
            (Failed, Loading),
            (Failed, Disposed),
        ];
        for a in all {
            for b in all {
                let expected = a == b || allowed.contains(&(a, b));
                assert_eq!(a.can_become(b), expected, "{a} -> {b}");
            }
        }
    }

    #[test]
    fn an_illegal_transition_changes_nothing() {
        let mut m = StateMachine::default();
        let err = m.transition(Active).unwrap_err();
        assert_eq!(
            err,
            StateError {
                current: Pending,
                requested: Active
            }
        );
        assert_eq!(m.state(), Pending);
        m.transition(Loading).unwrap();
        m.transition(Failed).unwrap();
        m.transition(Loading).unwrap();
        m.transition(Active).unwrap();
        assert_eq!(m.state(), Active);
    }
}
