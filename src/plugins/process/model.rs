//! Models across the process boundary, both ways.
//!
//! Why it exists: a model provider can be written in Python — a process
//! plugin that provides `model@1` with a method `complete` — and a process
//! plugin can call the model its composition binds it to. The first is a
//! [`ProcessModel`], the [`ChatModel`] behind the `model` capability such a
//! plugin registers, so the agent loop drives it like `openai` or
//! `scripted` (its answers are recorded, replayed and budgeted alike). The
//! second is the `chat` method chassis answers for a consumer bound to any
//! model provider ([`chat`]). Both exchange the provider-neutral
//! conversation the loop already uses: `{messages, tools, options}` in, an
//! assistant turn `{message, usage?, finish_reason?, model}` out.

use std::sync::Arc;

use serde_json::{Value, json};

use super::invoke::DEFAULT_DEADLINE;
use super::protocol::{InvokeResult, ProviderInvokeParams, method};
use super::rpc::RpcError;
use super::supervise::Supervisor;
use crate::runtime::Cancellation;
use crate::runtime::model::{
    ChatMessage, ChatModel, MODEL_CAPABILITY, ModelError, ModelHandle, ModelOptions, ModelRequest,
    ModelResponse, ToolSpec, TurnCursors,
};

/// The method a process model provider implements.
pub const COMPLETE: &str = "complete";

/// The method chassis answers for a consumer bound to a model.
pub const CHAT: &str = "chat";

/// A model provided by a process plugin.
pub struct ProcessModel {
    /// The model's name (the capability value's `name`, else the plugin's).
    pub name: String,
    /// The provider's process.
    pub provider: Arc<Supervisor>,
}

#[async_trait::async_trait]
impl ChatModel for ProcessModel {
    fn model_name(&self) -> &str {
        &self.name
    }

    fn provider(&self) -> &str {
        "process"
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let conn = self
            .provider
            .connection(Some(&request.cancel))
            .await
            .map_err(ModelError::Transport)?;
        let params = ProviderInvokeParams {
            key: MODEL_CAPABILITY.to_owned(),
            method: COMPLETE.to_owned(),
            arguments: json!({
                "messages": request.messages,
                "tools": request.tools,
                "options": request.options,
            }),
            caller: "chassis".to_owned(),
            deadline_ms: u64::try_from(DEFAULT_DEADLINE.as_millis()).unwrap_or(u64::MAX),
            run_id: request.run_id.map(str::to_owned),
            // A model call is charged as one; what the model plugin
            // invokes while completing is its own business.
            call_id: None,
            // Inside a run, the provider's spans join the run's trace.
            meta: request
                .run_id
                .map(|run| super::protocol::RequestMeta::in_run(run, "model:complete")),
        };
        let reply = conn
            .request(
                method::CAPABILITY_INVOKE,
                serde_json::to_value(params).map_err(|e| ModelError::Protocol(e.to_string()))?,
                Some(DEFAULT_DEADLINE),
                Some(&request.cancel),
            )
            .await
            .map_err(|e| match e {
                RpcError::Cancelled => ModelError::Cancelled,
                RpcError::Timeout(t) => ModelError::Timeout(t.as_secs_f64()),
                RpcError::Closed(reason) => ModelError::Transport(self.provider.gone(
                    &conn,
                    method::CAPABILITY_INVOKE,
                    &reason,
                )),
                other => ModelError::Transport(format!("the model plugin: {other}")),
            })?;
        let InvokeResult { mut result } = serde_json::from_value(reply)
            .map_err(|e| ModelError::Protocol(format!("`complete` answered: {e}")))?;
        if let Some(obj) = result.as_object_mut() {
            obj.entry("model")
                .or_insert_with(|| Value::String(self.name.clone()));
        }
        serde_json::from_value(result).map_err(|e| {
            ModelError::Protocol(format!(
                "`complete` must answer {{message: {{role, content, tool_calls?}}, usage?, finish_reason?}}: {e}"
            ))
        })
    }
}

/// The arguments of `chat`.
#[derive(serde::Deserialize)]
struct ChatArguments {
    messages: Vec<ChatMessage>,
    #[serde(default)]
    tools: Vec<ToolSpec>,
    #[serde(default)]
    options: ModelOptions,
}

/// `chat`: one turn of `model` for a plugin that requires `model`, within
/// `deadline` and until `cancel` fires; `run_id` when it is asked inside a
/// tool call of that run.
pub async fn chat(
    model: &ModelHandle,
    arguments: Value,
    deadline: std::time::Duration,
    cancel: &Cancellation,
    run_id: Option<&str>,
) -> Result<ModelResponse, String> {
    let args: ChatArguments = serde_json::from_value(arguments).map_err(|e| {
        format!("`chat` takes {{messages: [{{role, content}}], tools?, options?}}: {e}")
    })?;
    let request = ModelRequest {
        messages: &args.messages,
        tools: &args.tools,
        options: args.options,
        cancel: cancel.clone(),
        cursors: TurnCursors::new(),
        deltas: None,
        run_id,
    };
    tokio::time::timeout(deadline, model.0.complete(&request))
        .await
        .map_err(|_| {
            cancel.cancel();
            format!(
                "the model did not answer within {:.1}s",
                deadline.as_secs_f64()
            )
        })?
        .map_err(|e| e.to_string())
}
