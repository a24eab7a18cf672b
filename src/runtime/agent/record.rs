//! What a run reports: step events while it runs, one result at the end.

use serde::Serialize;
use serde_json::Value;

use crate::engine::budget::BudgetReport;
use crate::runtime::model::{ChatMessage, Usage};

/// How a tool call the model asked for ended.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolCallRecord {
    /// The step (model call number) that asked for it.
    pub step: u32,
    /// Tool name.
    pub name: String,
    /// The model's call id.
    pub call_id: String,
    /// `ok`, `error`, `timeout`, `refused` or `malformed`.
    pub status: &'static str,
    /// For a refusal: its kind (`policy_denied`, `unknown_tool`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refusal: Option<&'static str>,
    /// The redacted error or refusal message the model read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Wall time of the call.
    pub duration_seconds: f64,
    /// Whether a recording answered it.
    pub replayed: bool,
}

/// Why a run stopped.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StopReason {
    /// The model gave a final answer.
    Answered,
    /// The step limit was reached while the model still asked for tools.
    StepLimit {
        /// The limit.
        max_steps: u32,
    },
    /// The model refused, or a hook refused the run or a model call.
    Refused {
        /// Why.
        reason: String,
    },
    /// A budget dimension ran out.
    BudgetExhausted {
        /// The dimension.
        dimension: String,
        /// The message.
        message: String,
        /// The refused charge, when one was refused: its `ancestor` says
        /// whose limit it was (0: this run's own, 1: its caller's, …), so
        /// a sub-agent that ran out of its caller's budget stops the caller
        /// too.
        #[serde(skip)]
        exceeded: Option<crate::engine::budget::BudgetExceeded>,
    },
    /// The model provider failed (transport, protocol, timeout).
    ModelFailed {
        /// The redacted error.
        error: String,
    },
    /// A tool or hook failed in a way that ends the run.
    Failed {
        /// The redacted error.
        error: String,
    },
}

impl StopReason {
    /// The same reason with its text passed through `redactor` (every
    /// progress event and result carries this form).
    #[must_use]
    pub fn redacted(self, redactor: &crate::engine::secret::Redactor) -> Self {
        let r = |text: String| redactor.redact(&text).into_owned();
        match self {
            Self::Refused { reason } => Self::Refused { reason: r(reason) },
            Self::BudgetExhausted {
                dimension,
                message,
                exceeded,
            } => Self::BudgetExhausted {
                dimension,
                message: r(message),
                exceeded,
            },
            Self::ModelFailed { error } => Self::ModelFailed { error: r(error) },
            Self::Failed { error } => Self::Failed { error: r(error) },
            done @ (Self::Answered | Self::StepLimit { .. }) => done,
        }
    }

    /// Stable name.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Answered => "answered",
            Self::StepLimit { .. } => "step_limit",
            Self::Refused { .. } => "refused",
            Self::BudgetExhausted { .. } => "budget_exhausted",
            Self::ModelFailed { .. } => "model_failed",
            Self::Failed { .. } => "failed",
        }
    }

    /// A one-line description for people.
    pub fn describe(&self) -> String {
        match self {
            Self::Answered => "answered".into(),
            Self::StepLimit { max_steps } => {
                format!("stopped at the step limit ({max_steps}) without an answer")
            }
            Self::Refused { reason } => format!("refused: {reason}"),
            Self::BudgetExhausted { message, .. } => format!("budget exhausted: {message}"),
            Self::ModelFailed { error } => format!("the model failed: {error}"),
            Self::Failed { error } => format!("failed: {error}"),
        }
    }
}

/// The result of one run, stamped with what it ran against.
#[derive(Clone, Debug, Serialize)]
pub struct AgentResult {
    /// Agent name.
    pub agent: String,
    /// The revision pinned from the generation.
    pub agent_revision: String,
    /// Run id (`run_<12hex>`).
    pub run_id: String,
    /// The leased generation.
    pub generation_id: String,
    /// The digest of the run's snapshot (`chassis snapshot --agent` agrees).
    pub snapshot_digest: String,
    /// The semantic digest of the composition.
    pub semantic_digest: String,
    /// `graph_definition_hash` of the agent.
    pub graph_definition_hash: String,
    /// `prompt_hash` of the agent.
    pub prompt_hash: String,
    /// The final answer, when there is one.
    pub answer: Option<String>,
    /// Why the run stopped.
    pub stop: StopReason,
    /// Model calls made.
    pub steps: u32,
    /// The conversation (system prompt, input, turns, tool messages),
    /// redacted.
    pub messages: Vec<ChatMessage>,
    /// Every tool call the model asked for.
    pub tool_calls: Vec<ToolCallRecord>,
    /// Token usage reported by the model, summed.
    pub usage: Usage,
    /// Estimated cost reported, summed.
    pub estimated_cost: f64,
    /// The model that answered (as the provider names it).
    pub model: Option<String>,
    /// Budget per dimension: limit, used, enforcement.
    #[serde(skip)]
    pub budget: Option<BudgetReport>,
    /// Wall time of the run.
    pub duration_seconds: f64,
}

/// A step event, in the order things happen.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum AgentEvent {
    /// A run started (nested runs have `depth > 0`).
    RunStarted {
        /// Agent.
        agent: String,
        /// Run id.
        run_id: String,
        /// Generation id.
        generation_id: String,
        /// The digest of the agent's snapshot (what the run is stamped
        /// with).
        snapshot_digest: String,
        /// Nesting depth.
        depth: usize,
    },
    /// A model call is about to be made.
    ModelCallStarted {
        /// Agent.
        agent: String,
        /// Step number (1-based).
        step: u32,
        /// Model name.
        model: String,
    },
    /// A model call returned.
    ModelCallFinished {
        /// Agent.
        agent: String,
        /// Step.
        step: u32,
        /// Wall time.
        duration_seconds: f64,
        /// Reported usage.
        usage: Option<Usage>,
        /// Finish reason.
        finish_reason: Option<String>,
        /// Tool calls asked for.
        tool_calls: usize,
        /// Whether a recording answered it.
        replayed: bool,
    },
    /// A piece of the model's answer as it streams in (already passed
    /// through a streaming redactor: a secret split across two pieces is
    /// caught). Only for observers that [`AgentObserver::wants_text`].
    TextDelta {
        /// Agent.
        agent: String,
        /// Step.
        step: u32,
        /// Nesting depth (0: the top-level run).
        depth: usize,
        /// The piece.
        text: String,
    },
    /// A tool call is about to cross the boundary.
    ToolCallStarted {
        /// Agent.
        agent: String,
        /// Step.
        step: u32,
        /// Tool.
        name: String,
        /// Redacted arguments.
        arguments: Value,
    },
    /// A tool call ended.
    ToolCallFinished {
        /// Agent.
        agent: String,
        /// The record.
        record: ToolCallRecord,
    },
    /// A run ended.
    RunFinished {
        /// Agent.
        agent: String,
        /// Run id.
        run_id: String,
        /// Why.
        stop: StopReason,
        /// Nesting depth.
        depth: usize,
    },
}

impl AgentEvent {
    /// The event with every text that came from outside (arguments, error
    /// and refusal reasons, a finish reason, a model's, a tool call's name
    /// and id) passed through `redactor`: what every observer is handed.
    #[must_use]
    pub fn redacted(self, redactor: &crate::engine::secret::Redactor) -> Self {
        let r = |text: String| redactor.redact(&text).into_owned();
        match self {
            Self::ModelCallFinished {
                agent,
                step,
                duration_seconds,
                usage,
                finish_reason,
                tool_calls,
                replayed,
            } => Self::ModelCallFinished {
                agent,
                step,
                duration_seconds,
                usage,
                finish_reason: finish_reason.map(r),
                tool_calls,
                replayed,
            },
            Self::ToolCallStarted {
                agent,
                step,
                name,
                arguments,
            } => Self::ToolCallStarted {
                agent,
                step,
                name: r(name),
                arguments: redactor.redact_json(&arguments),
            },
            Self::ToolCallFinished { agent, mut record } => {
                record.error = record.error.map(r);
                record.name = r(record.name);
                record.call_id = r(record.call_id);
                Self::ToolCallFinished { agent, record }
            }
            Self::ModelCallStarted { agent, step, model } => Self::ModelCallStarted {
                agent,
                step,
                model: r(model),
            },
            Self::RunFinished {
                agent,
                run_id,
                stop,
                depth,
            } => Self::RunFinished {
                agent,
                run_id,
                stop: stop.redacted(redactor),
                depth,
            },
            Self::TextDelta {
                agent,
                step,
                depth,
                text,
            } => Self::TextDelta {
                agent,
                step,
                depth,
                text: r(text),
            },
            started @ Self::RunStarted { .. } => started,
        }
    }
}

/// Receives step events (a progress display, a stream, a test).
pub trait AgentObserver: Send + Sync {
    /// One event.
    fn on_event(&self, event: &AgentEvent);
    /// Whether it wants the answer's text as it is generated
    /// ([`AgentEvent::TextDelta`]): a model that can stream then streams.
    fn wants_text(&self) -> bool {
        false
    }
}

/// An observer that wants the answer's text as it streams (a served run's
/// Server-Sent Events, a terminal).
pub struct Streaming<F>(pub F);

impl<F: Fn(&AgentEvent) + Send + Sync> AgentObserver for Streaming<F> {
    fn on_event(&self, event: &AgentEvent) {
        (self.0)(event);
    }
    fn wants_text(&self) -> bool {
        true
    }
}

impl<F: Fn(&AgentEvent) + Send + Sync> AgentObserver for F {
    fn on_event(&self, event: &AgentEvent) {
        self(event);
    }
}
