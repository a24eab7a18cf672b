//! The `model` capability: what an agent's model provider hands the loop.
//!
//! A model provider plugin (`scripted`, `openai`, or a Rust plugin) provides
//! the capability `model` with a [`ModelHandle`] value. The agent loop sends
//! a [`ModelRequest`] (the conversation so far and the tools the agent may
//! call) and receives one assistant turn: text, tool calls, or both, with the
//! usage the provider reported. The types serialize in a provider-neutral
//! form that record/replay keys and `--format json` share.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::tool::Cancellation;
use crate::engine::secret::Redactor;

/// The capability name model providers provide.
pub const MODEL_CAPABILITY: &str = "model";

/// The contract version of the `model` capability this chassis speaks.
pub const MODEL_CONTRACT_VERSION: &str = "1.0.0";

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The agent's instructions.
    System,
    /// The person (or caller) asking.
    User,
    /// The model.
    Assistant,
    /// A tool's answer to one tool call.
    Tool,
}

/// A tool call the model asked for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelToolCall {
    /// The model's id for the call (echoed in the tool message).
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Parsed arguments (`null` when they did not parse).
    pub arguments: Value,
    /// Why the arguments could not be used, for a malformed call: the loop
    /// answers it with an error tool message the model can correct.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub malformed: Option<String>,
}

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Author.
    pub role: Role,
    /// Text content (may be empty for a turn with only tool calls).
    pub content: String,
    /// Tool calls of an assistant turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ModelToolCall>,
    /// For a tool message: the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For a tool message: the tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl ChatMessage {
    /// A message of `role` with text only.
    pub fn text(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
        }
    }

    /// A tool message answering `call_id`.
    pub fn tool(call_id: impl Into<String>, name: impl Into<String>, content: String) -> Self {
        Self {
            role: Role::Tool,
            content,
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.into()),
            name: Some(name.into()),
        }
    }

    /// The message with every text in it passed through `redactor`: its
    /// content, each tool call's id, name, arguments (as
    /// [`Redactor::redact_json`] does) and the reason it is malformed,
    /// and a tool message's call id and name. What enters the
    /// conversation, from a model or anywhere else, is this.
    #[must_use]
    pub fn redacted(&self, redactor: &Redactor) -> Self {
        let r = |text: &str| redactor.redact(text).into_owned();
        Self {
            role: self.role,
            content: r(&self.content),
            tool_calls: self
                .tool_calls
                .iter()
                .map(|c| ModelToolCall {
                    id: r(&c.id),
                    name: r(&c.name),
                    arguments: redactor.redact_json(&c.arguments),
                    malformed: c.malformed.as_deref().map(r),
                })
                .collect(),
            tool_call_id: self.tool_call_id.as_deref().map(r),
            name: self.name.as_deref().map(r),
        }
    }
}

/// A tool as the model sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Name.
    pub name: String,
    /// Description (with the agent-facing manifest rendered in).
    pub description: String,
    /// JSON Schema of the arguments (`{"type":"object"}` when none).
    pub parameters: Value,
}

/// Generation options.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelOptions {
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Upper bound on generated tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
}

/// One request to a model. It borrows the conversation and the tool specs
/// from the loop, so a step copies neither.
#[derive(Clone, Debug)]
pub struct ModelRequest<'a> {
    /// The conversation so far, system message first.
    pub messages: &'a [ChatMessage],
    /// Tools the model may call.
    pub tools: &'a [ToolSpec],
    /// Options.
    pub options: ModelOptions,
    /// Fires when the run is interrupted or out of time.
    pub cancel: Cancellation,
    /// Where each scripted model stands in this top-level run.
    pub cursors: TurnCursors,
    /// Told each piece of the answer's text as a provider that streams
    /// receives it (`None`: the caller does not watch; answer whole).
    pub deltas: Option<TextDeltas>,
    /// The run the call belongs to, when there is one: a provider in
    /// another process gets the run's trace context from it.
    pub run_id: Option<&'a str>,
}

/// Where the pieces of a streamed answer go, in order.
#[derive(Clone)]
pub struct TextDeltas(pub Arc<dyn Fn(&str) + Send + Sync>);

impl TextDeltas {
    /// Hand on one piece.
    pub fn send(&self, piece: &str) {
        if !piece.is_empty() {
            (self.0)(piece);
        }
    }
}

impl std::fmt::Debug for TextDeltas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TextDeltas")
    }
}

/// Where each scripted model stands in one top-level run: how many turns of
/// it the run (with its sub-agents) has used, by key.
///
/// Why it exists: a model instance serves every run of its generation (a
/// server runs many at once), so a script's position belongs to the run,
/// not to the instance. A runner makes one per top-level run and shares it
/// with that run's sub-agents, so a script read top to bottom is one run's
/// conversation. Dropped with the run.
#[derive(Clone, Debug, Default)]
pub struct TurnCursors(std::sync::Arc<std::sync::Mutex<BTreeMap<String, usize>>>);

impl TurnCursors {
    /// No turn used yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The position under `key` (starting at 0), then advance it.
    pub fn advance(&self, key: &str) -> usize {
        let mut map = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let slot = map.entry(key.to_owned()).or_insert(0);
        let at = *slot;
        *slot += 1;
        at
    }
}

/// Token usage a provider reported.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
}

impl Usage {
    /// The most tokens one report may count: every whole number up to 2^53
    /// is exact where a budget keeps it.
    pub const MAX_COUNTED: u64 = 1 << 53;

    /// Input plus output, saturating at `u64::MAX` (what to show: a sum
    /// that wraps would read as a few tokens).
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// Input plus output when a budget can charge it exactly (at most
    /// [`Self::MAX_COUNTED`]); `None` for a report that does not fit.
    pub fn counted_total(&self) -> Option<u64> {
        self.input_tokens
            .checked_add(self.output_tokens)
            .filter(|&t| t <= Self::MAX_COUNTED)
    }
}

/// One assistant turn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelResponse {
    /// The assistant message (role `assistant`).
    pub message: ChatMessage,
    /// Usage, when the provider reported it (near-compatible servers omit it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The provider's finish reason (`stop`, `tool_calls`, `length`, …), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// The model that answered, as the provider names it.
    pub model: String,
    /// Estimated cost in the provider's currency unit, when it knows prices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_cost: Option<f64>,
}

impl ModelResponse {
    /// The turn with every text a provider wrote into it passed through
    /// `redactor`: the message ([`ChatMessage::redacted`]), the finish
    /// reason and the model's name.
    #[must_use]
    pub fn redacted(self, redactor: &Redactor) -> Self {
        let r = |text: String| redactor.redact(&text).into_owned();
        Self {
            message: self.message.redacted(redactor),
            usage: self.usage,
            finish_reason: self.finish_reason.map(r),
            model: r(self.model),
            estimated_cost: self.estimated_cost,
        }
    }
}

/// Why a model call failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// The endpoint could not be reached or the connection broke.
    #[error("model transport error: {0}")]
    Transport(String),
    /// The endpoint answered with an HTTP error status.
    #[error("model endpoint answered HTTP {status}: {message}")]
    Http {
        /// Status code.
        status: u16,
        /// Redacted message or body excerpt.
        message: String,
    },
    /// The answer could not be understood.
    #[error("model answer could not be parsed: {0}")]
    Protocol(String),
    /// The model refused the request in a way the loop cannot recover from.
    #[error("the model refused: {0}")]
    Refused(String),
    /// The call exceeded its deadline.
    #[error("model call timed out after {0:.1}s")]
    Timeout(f64),
    /// The run was cancelled.
    #[error("model call cancelled")]
    Cancelled,
    /// A replay had no recorded answer.
    #[error("{0}")]
    Replay(String),
    /// A scripted model ran out of turns or was told to fail.
    #[error("{0}")]
    Scripted(String),
}

/// A chat model with tool calling.
#[async_trait::async_trait]
pub trait ChatModel: Send + Sync {
    /// The model's name as recorded in signals and replay keys.
    fn model_name(&self) -> &str;
    /// The provider kind (`scripted`, `openai`, …).
    fn provider(&self) -> &str;
    /// One assistant turn for `request`.
    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError>;
}

/// A model whose every answer is redacted where it enters chassis.
///
/// Why at the boundary: a provider writes text into more than the answer
/// — the model's name, a tool call's name and id, the finish reason — and
/// each is then shown in many places (progress events, the result
/// document, a recording, the conversation sent back to the model,
/// `/metrics` labels). Redacted once here, every consumer sees the same
/// text: what the model is sent next is what a recording keeps. The name
/// the provider goes by (its configuration, a process plugin's
/// capability value) is redacted too.
pub struct RedactingModel {
    inner: Arc<dyn ChatModel>,
    name: String,
    redactor: Redactor,
}

impl RedactingModel {
    /// `inner`, its answers and name passed through `redactor`.
    pub fn new(inner: Arc<dyn ChatModel>, redactor: Redactor) -> Self {
        let name = redactor.redact(inner.model_name()).into_owned();
        Self {
            inner,
            name,
            redactor,
        }
    }
}

#[async_trait::async_trait]
impl ChatModel for RedactingModel {
    fn model_name(&self) -> &str {
        &self.name
    }

    fn provider(&self) -> &str {
        self.inner.provider()
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        self.inner
            .complete(request)
            .await
            .map(|r| r.redacted(&self.redactor))
    }
}

/// The value of the `model` capability.
#[derive(Clone)]
pub struct ModelHandle(pub Arc<dyn ChatModel>);

impl std::fmt::Debug for ModelHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ModelHandle")
            .field(&self.0.model_name())
            .finish()
    }
}
