//! The agent's compiled plan, cached by its definition.
//!
//! Compiling is cheap here (the tool specs the model sees and the system
//! prompt), but the cache is the contract the reference's graph cache has:
//! keyed by `graph_definition_hash`, so a run after swapping the model
//! provider reuses the plan and a run after a tool-contract change compiles
//! a new one; `graph.compile` and `graph.cache` signals say which happened.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use crate::engine::agent::LOOP_DEFINITION_VERSION;
use crate::engine::telemetry::{AttrValue, Telemetry, attributes};
use crate::runtime::model::ToolSpec;

/// What the loop needs from an agent's definition.
#[derive(Debug)]
pub struct CompiledPlan {
    /// `graph_definition_hash`.
    pub definition_hash: String,
    /// The system prompt.
    pub system_prompt: String,
    /// The tools the model is offered, sorted by name.
    pub tools: Vec<ToolSpec>,
}

/// An LRU of compiled plans (32 by default; 0 disables caching).
#[derive(Debug)]
pub struct PlanCache {
    capacity: usize,
    plans: Mutex<VecDeque<Arc<CompiledPlan>>>,
}

impl Default for PlanCache {
    fn default() -> Self {
        Self::new(32)
    }
}

impl PlanCache {
    /// A cache holding up to `capacity` plans.
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            plans: Mutex::new(VecDeque::new()),
        }
    }

    /// The plan for `definition_hash`, compiling it with `compile` on a
    /// miss. Emits `graph.cache` (and `graph.compile` on a miss).
    pub fn get_or_compile(
        &self,
        agent: &str,
        definition_hash: &str,
        telemetry: &dyn Telemetry,
        compile: impl FnOnce() -> CompiledPlan,
    ) -> Arc<CompiledPlan> {
        let cached = {
            let mut plans = self.plans.lock().unwrap_or_else(|e| e.into_inner());
            let pos = plans
                .iter()
                .position(|p| p.definition_hash == definition_hash);
            pos.and_then(|i| plans.remove(i)).inspect(|plan| {
                plans.push_front(Arc::clone(plan));
            })
        };
        let result = if cached.is_some() { "hit" } else { "miss" };
        let _ = telemetry.event(
            "graph.cache",
            &attributes([
                ("result", AttrValue::from(result)),
                ("agent", AttrValue::from(agent)),
                (
                    "definition_version",
                    AttrValue::from(LOOP_DEFINITION_VERSION as i64),
                ),
                ("cache_key", AttrValue::from(definition_hash)),
            ]),
        );
        if let Some(plan) = cached {
            return plan;
        }
        let plan = Arc::new(compile());
        let tools: Vec<String> = plan.tools.iter().map(|t| t.name.clone()).collect();
        let _ = telemetry.event(
            "graph.compile",
            &attributes([
                ("agent", AttrValue::from(agent)),
                (
                    "definition_version",
                    AttrValue::from(LOOP_DEFINITION_VERSION as i64),
                ),
                ("cache_key", AttrValue::from(definition_hash)),
                ("tools", AttrValue::from(tools)),
            ]),
        );
        if self.capacity > 0 {
            let mut plans = self.plans.lock().unwrap_or_else(|e| e.into_inner());
            plans.push_front(Arc::clone(&plan));
            plans.truncate(self.capacity);
        }
        plan
    }

    /// Plans held.
    pub fn len(&self) -> usize {
        self.plans.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether no plan is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
