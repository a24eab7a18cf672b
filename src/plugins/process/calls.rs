//! The tool calls in flight in one process plugin, by token.
//!
//! Why it exists: a tool written in Python may call another plugin's
//! capability, or the model, while it handles a call. Such an invoke
//! belongs to the run the call belongs to: it must stop at the call's
//! deadline, be cancelled with it, be judged by the policy of the run's
//! scope and — for a model — be charged to the run's budget. chassis gives
//! each `tools/call` a `call_id` token; an invoke that names it is looked
//! up here and runs under that call's [`CallReach`]. A provider answering
//! such an invoke gets a token of its own for the same call, so a chain
//! tool → provider → `chat` stays in the run. An invoke naming no call
//! (during `setup`, from a background task) runs outside any run.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::engine::budget::BudgetExceeded;
use crate::runtime::{CallReach, Cancellation, ToolCallContext};

/// One call in flight: what its invokes run under.
#[derive(Debug)]
pub struct CallScope {
    /// The run.
    pub run_id: String,
    /// Its budget, deadline and scope policy.
    pub reach: CallReach,
    /// Fires when the call is cancelled (its deadline, the run's end).
    pub cancel: Cancellation,
    /// A charge the run's budget refused during the call: the call then
    /// fails as out of budget, whatever the plugin answered.
    exceeded: Mutex<Option<BudgetExceeded>>,
}

impl CallScope {
    /// Record a refused charge.
    pub fn exhausted(&self, exceeded: BudgetExceeded) {
        let mut slot = self.exceeded.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(exceeded);
    }

    /// The refused charge, if there was one.
    pub fn take_exhausted(&self) -> Option<BudgetExceeded> {
        self.exceeded
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }
}

/// The calls in flight of one plugin (its tools share it with the handler
/// of its requests).
#[derive(Debug, Default)]
pub struct InFlight {
    next: AtomicU64,
    calls: Mutex<HashMap<String, Arc<CallScope>>>,
}

/// A call entered in [`InFlight`]; leaves it when dropped.
pub struct Entered {
    /// The token the plugin passes back as `call_id`.
    pub token: String,
    /// What the call's invokes run under.
    pub scope: Arc<CallScope>,
    inflight: Arc<InFlight>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        self.inflight
            .calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.token);
    }
}

impl InFlight {
    /// Enter the call of `ctx`; `None` outside a run (no reach).
    pub fn enter(self: &Arc<Self>, ctx: &ToolCallContext) -> Option<Entered> {
        let reach = ctx.reach.clone()?;
        Some(self.enter_scope(Arc::new(CallScope {
            run_id: ctx.run_id.clone(),
            reach,
            cancel: ctx.cancel.clone(),
            exceeded: Mutex::new(None),
        })))
    }

    /// Enter a call already in flight elsewhere under a token of this
    /// plugin: a provider answering an invoke made inside a tool call, so
    /// that what it invokes in turn (a `chat`, another provider) runs under
    /// the same run, deadline and budget, and a refused charge fails the
    /// tool call that started the chain.
    pub fn enter_scope(self: &Arc<Self>, scope: Arc<CallScope>) -> Entered {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let token = format!("call-{n}");
        self.calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(token.clone(), Arc::clone(&scope));
        Entered {
            token,
            scope,
            inflight: Arc::clone(self),
        }
    }

    /// The call `token` names, while it is in flight.
    pub fn get(&self, token: &str) -> Option<Arc<CallScope>> {
        self.calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(token)
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::policy::AllowAll;

    #[test]
    fn a_call_is_found_by_its_token_until_it_ends_and_a_detached_call_is_not_entered() {
        let inflight = Arc::new(InFlight::default());
        let detached = ToolCallContext::detached("r", "g", "/");
        assert!(inflight.enter(&detached).is_none());
        let mut ctx = ToolCallContext::detached("run-1", "g", "/");
        ctx.reach = Some(CallReach::new(Arc::new(AllowAll), "t", "e", "g"));
        let entered = inflight.enter(&ctx).unwrap();
        let found = inflight.get(&entered.token).unwrap();
        assert_eq!(found.run_id, "run-1");
        let other = inflight.enter(&ctx).unwrap();
        assert_ne!(other.token, entered.token);
        let token = entered.token.clone();
        drop(entered);
        assert!(inflight.get(&token).is_none());
        assert!(inflight.get(&other.token).is_some());
    }
}
