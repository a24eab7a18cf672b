//! A process plugin's tool as a chassis [`Tool`].
//!
//! Every call crosses the executor first (hooks, policy, approval, budget,
//! telemetry, replay); this adapter forwards it as `tools/call`, with a
//! `call_id` the plugin's invokes name to run under the call's run. A result
//! with `is_error` and a JSON-RPC error are tool failures the model sees;
//! a dead process fails the call with the reason. The executor's deadline
//! or a cancelled run drops the request, which sends `$/cancel`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::calls::InFlight;
use super::protocol::{ToolCallParams, ToolCallResult, method};
use super::rpc::RpcError;
use super::supervise::Supervisor;
use crate::runtime::{BoxError, RunBudgetExhausted, Tool, ToolCallContext, ToolOutput};

/// A mounted tool of a process plugin.
pub struct ProcessTool {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Argument schema.
    pub schema: Value,
    /// The policy's deadline, told to the plugin.
    pub deadline: Option<Duration>,
    /// The plugin's process.
    pub supervisor: Arc<Supervisor>,
    /// The plugin's calls in flight (what its invokes run under).
    pub calls: Arc<InFlight>,
}

impl std::fmt::Debug for ProcessTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessTool")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl Tool for ProcessTool {
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
        // Left when the call ends, however it ends.
        let entered = self.calls.enter(ctx);
        let token = entered.as_ref().map(|e| e.token.clone());
        // Inside a run (the call entered its scope), the run's trace.
        let meta = entered.as_ref().map(|_| {
            super::protocol::RequestMeta::in_run(&ctx.run_id, &format!("tool:{}", self.name))
        });
        let params = ToolCallParams {
            meta,
            call_id: token,
            name: self.name.clone(),
            arguments: args,
            run_id: ctx.run_id.clone(),
            generation_id: ctx.generation_id.clone(),
            // The call's own deadline (its policy's, or the run's time
            // left) when it runs in one, else the policy's.
            deadline_ms: ctx
                .reach
                .as_ref()
                .and_then(crate::runtime::CallReach::time_left)
                .or(self.deadline)
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        };
        let conn = self
            .supervisor
            .connection(Some(&ctx.cancel))
            .await
            .map_err(|e| -> BoxError { e.into() })?;
        let reply = conn
            .request(
                method::TOOLS_CALL,
                serde_json::to_value(&params)?,
                None,
                Some(&ctx.cancel),
            )
            .await;
        // An invoke the run's budget refused fails the call as out of
        // budget, whatever the plugin made of the refusal.
        if let Some(exceeded) = entered.as_ref().and_then(|e| e.scope.take_exhausted()) {
            return Err(Box::new(RunBudgetExhausted {
                tool: self.name.clone(),
                exceeded,
            }));
        }
        let reply = reply.map_err(|e| -> BoxError {
            match e {
                // Which plugin, how its process ended, what it said last.
                RpcError::Closed(reason) => self
                    .supervisor
                    .gone(&conn, method::TOOLS_CALL, &reason)
                    .into(),
                other => other.to_string().into(),
            }
        })?;
        let result: ToolCallResult = serde_json::from_value(reply)
            .map_err(|e| format!("the plugin answered `tools/call` with the wrong shape: {e}"))?;
        if result.is_error {
            let text = match &result.content {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            return Err(text.into());
        }
        Ok(ToolOutput {
            content: result.content,
            artifact: result.artifact,
        })
    }
}
