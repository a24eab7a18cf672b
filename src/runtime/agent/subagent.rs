//! Sub-agents as tools (the Oracle runtime's `getSubAgents`).
//!
//! Calling one starts a nested run of the sub-agent on the same generation,
//! with a child budget: `child_runs` is charged on the parent chain when the
//! child starts, and every charge of the child counts against its parent, so
//! the parent can never be overdrawn through its children.
//!
//! How a child ends decides what its caller does. A child that exhausts
//! only its own budget is a failed tool call the caller's model reads and
//! can work around. A child refused a charge by a limit *above* its own
//! (the caller's, or higher) — or whose model call, charged in full once
//! it happened, crossed such a limit — and a child that cannot start because the
//! caller's `child_runs` are spent, mean the caller is out of budget: the
//! call fails with [`CallerBudgetExhausted`], which the executor turns into
//! the caller's own `budget_exhausted` stop — no more paid model calls.

use std::sync::{Arc, Weak};

use serde_json::{Value, json};

use super::run::{AgentRequest, AgentRunner};
use crate::engine::budget::{BudgetExceeded, BudgetGovernor};
use crate::engine::model::AgentDecl;
use crate::runtime::agent::StopReason;
use crate::runtime::generation::Generation;
use crate::runtime::scope::BoxError;
use crate::runtime::tool::{Tool, ToolCallContext, ToolOutput};

/// A sub-agent offered to its parent as a tool.
pub struct SubAgentTool {
    runner: Weak<AgentRunner>,
    generation: Arc<Generation>,
    name: String,
    description: String,
    schema: Value,
    parent_budget: BudgetGovernor,
    depth: usize,
}

impl SubAgentTool {
    /// The tool for `agent`, nested under a run with `parent_budget`.
    pub fn new(
        runner: Weak<AgentRunner>,
        generation: Arc<Generation>,
        agent: &AgentDecl,
        parent_budget: BudgetGovernor,
        depth: usize,
    ) -> Self {
        Self {
            runner,
            generation,
            name: agent.name.clone(),
            description: agent.description.clone(),
            schema: json!({
                "type": "object",
                "required": ["input"],
                "properties": { "input": { "type": "string" } },
                "additionalProperties": false
            }),
            parent_budget,
            depth,
        }
    }
}

/// The caller's own budget ran out inside (or at the start of) a
/// sub-agent call: `exceeded` is relative to the caller's allocation
/// (`ancestor` 0 is the caller's own limit).
#[derive(Debug, thiserror::Error)]
#[error("sub-agent `{agent}` ran out of its caller's budget: {exceeded}")]
pub struct CallerBudgetExhausted {
    /// The sub-agent.
    pub agent: String,
    /// The refused charge, seen from the caller.
    pub exceeded: BudgetExceeded,
}

/// A nested run that ended without an answer.
#[derive(Debug, thiserror::Error)]
#[error("sub-agent `{agent}` {why}")]
struct SubAgentFailed {
    agent: String,
    why: String,
}

#[async_trait::async_trait]
impl Tool for SubAgentTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn args_schema(&self) -> Option<&Value> {
        Some(&self.schema)
    }

    async fn call(&self, args: Value, ctx: &ToolCallContext) -> Result<ToolOutput, BoxError> {
        let fail = |why: String| -> BoxError {
            Box::new(SubAgentFailed {
                agent: self.name.clone(),
                why,
            })
        };
        if self.depth > 8 {
            return Err(fail("is nested too deeply (more than 8 levels)".into()));
        }
        let runner = self
            .runner
            .upgrade()
            .ok_or_else(|| fail("cannot run: the runner is gone".into()))?;
        let limits = self
            .generation
            .composition
            .agents
            .get(&self.name)
            .map(|a| a.budget)
            .unwrap_or_default();
        let budget = self.parent_budget.child(limits).map_err(|exceeded| {
            Box::new(CallerBudgetExhausted {
                agent: self.name.clone(),
                exceeded,
            }) as BoxError
        })?;
        let input = args
            .get("input")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let request = AgentRequest {
            agent: self.name.clone(),
            input,
            run_id: Some(format!("{}.{}", ctx.run_id, self.name)),
            history: Vec::new(),
        };
        let result = runner
            .run_with_budget(Arc::clone(&self.generation), request, budget, self.depth)
            .await
            .map_err(|e| fail(e.to_string()))?;
        if let StopReason::BudgetExhausted {
            exceeded: Some(exceeded),
            ..
        } = &result.stop
            && exceeded.ancestor > 0
        {
            return Err(Box::new(CallerBudgetExhausted {
                agent: self.name.clone(),
                exceeded: BudgetExceeded {
                    ancestor: exceeded.ancestor - 1,
                    ..exceeded.clone()
                },
            }));
        }
        match result.answer {
            Some(answer) => Ok(ToolOutput {
                content: Value::String(answer),
                artifact: Some(json!({
                    "run_id": result.run_id,
                    "steps": result.steps,
                    "tool_calls": result.tool_calls.len(),
                })),
            }),
            None => Err(fail(result.stop.describe())),
        }
    }
}
