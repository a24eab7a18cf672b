//! The agent runtime: the built-in tool-calling loop, sub-agents as tools,
//! and the model-call boundary.
//!
//! A run leases a generation, pins its agent's revision from that
//! generation, and loops: model → tool calls through the [`ToolExecutor`]
//! (hooks, policy, approval, budget, tracing) → tool messages → model … until
//! a final answer, the step limit, a refusal it cannot recover from, or
//! budget exhaustion. Every model call crosses a boundary of its own:
//! `before_model_call` / `after_model_call` hooks (observe, transform,
//! bail — there is no around mode: a wrapping hook is a before/after pair),
//! a `model.call` span, and budgets `model_calls`, `tokens` and
//! `estimated_cost` enforced there.
//!
//! [`ToolExecutor`]: super::ToolExecutor

mod clock;
mod plan;
mod record;
mod run;
mod subagent;
mod text_stream;

pub use clock::MonotonicClock;
pub use plan::{CompiledPlan, PlanCache};
pub use record::{AgentEvent, AgentObserver, AgentResult, StopReason, Streaming, ToolCallRecord};
pub use run::{AgentError, AgentRequest, AgentRunner, LiveModels, ModelBoundary, new_run_id};
pub use subagent::CallerBudgetExhausted;

#[cfg(test)]
mod tests;
