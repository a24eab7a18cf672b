//! The built-in tool-calling loop.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use super::plan::{CompiledPlan, PlanCache};
use super::record::{AgentEvent, AgentObserver, AgentResult, StopReason, ToolCallRecord};
use super::subagent::SubAgentTool;
use crate::engine::agent::{agent_sees, graph_definition_hash, prompt_hash};
use crate::engine::budget::{
    BudgetDimension, BudgetError, BudgetGovernor, BudgetLimits, Clock, EnforcementProfile,
    Usage as BudgetUsage,
};
use crate::engine::model::{AgentDecl, Entry, ScopePath};
use crate::engine::policy::ToolPolicy;
use crate::engine::resolve::{Consumer, Status};
use crate::engine::telemetry::{AttrValue, attributes};
use crate::runtime::executor::{
    ExecError, RunContext, ToolCall, ToolExecutor, ToolStatus, deadline,
};
use crate::runtime::generation::{AgentStamp, Generation};
use crate::runtime::hooks::{HookEvent, HookExecutionError};
use crate::runtime::model::{
    ChatMessage, ChatModel, ModelError, ModelHandle, ModelOptions, ModelRequest, ModelResponse,
    Role, ToolSpec, Usage,
};
use crate::runtime::scope::BoxFuture;
use crate::runtime::tool::{Cancellation, ToolRegistration};

/// One run's request.
#[derive(Clone, Debug)]
pub struct AgentRequest {
    /// The agent (a name in the generation's composition).
    pub agent: String,
    /// The user's input.
    pub input: String,
    /// A run id to use (one is made when absent).
    pub run_id: Option<String>,
    /// The conversation before this input (a session's earlier turns:
    /// user, assistant and tool messages, no system message), as the model
    /// saw it.
    pub history: Vec<crate::runtime::model::ChatMessage>,
}

/// Why a run could not start.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum AgentError {
    /// No such agent in the generation.
    #[error("no agent `{agent}` in {generation}; agents: {}", if available.is_empty() { "none (declare one with `[agents.<name>]`)".to_owned() } else { available.join(", ") })]
    UnknownAgent {
        /// Requested name.
        agent: String,
        /// The generation.
        generation: String,
        /// Agents it has.
        available: Vec<String>,
    },
    /// The agent's model requirement is not bound to a model.
    #[error("agent `{agent}` has no model: {reason}")]
    ModelUnavailable {
        /// Agent.
        agent: String,
        /// Why.
        reason: String,
    },
    /// The run's snapshot could not be built.
    #[error("cannot snapshot the run: {0}")]
    Snapshot(String),
    /// The request's own tools cannot join its generation.
    #[error(transparent)]
    RequestTools(#[from] crate::engine::request_tools::RequestToolsError),
}

/// How a model call is answered: live, or from a recording (replay).
#[async_trait::async_trait]
pub trait ModelBoundary: Send + Sync {
    /// Answer `request` for the model `model`; the flag says whether a
    /// recording answered it.
    async fn complete(
        &self,
        model: &dyn ChatModel,
        request: &ModelRequest,
        run: &RunContext,
    ) -> Result<(ModelResponse, bool), ModelError>;
}

/// Calls the model.
#[derive(Debug, Default)]
pub struct LiveModels;

#[async_trait::async_trait]
impl ModelBoundary for LiveModels {
    async fn complete(
        &self,
        model: &dyn ChatModel,
        request: &ModelRequest,
        _run: &RunContext,
    ) -> Result<(ModelResponse, bool), ModelError> {
        model.complete(request).await.map(|r| (r, false))
    }
}

/// Runs agents against generations.
pub struct AgentRunner {
    executor: ToolExecutor,
    clock: Arc<dyn Clock>,
    observer: Option<Arc<dyn AgentObserver>>,
    plans: Arc<PlanCache>,
    models: Arc<dyn ModelBoundary>,
    cancel: Cancellation,
    cursors: crate::runtime::model::TurnCursors,
}

impl std::fmt::Debug for AgentRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRunner").finish_non_exhaustive()
    }
}

static RUN_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh `run_<12hex>` id.
pub fn new_run_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = RUN_COUNTER.fetch_add(1, Ordering::Relaxed);
    let seed = format!("{nanos}:{n}:{}", std::process::id());
    let hex = crate::engine::canonical::sha256_hex(seed.as_bytes());
    format!("run_{}", &hex[..12])
}

/// What the loop knows about the agent it runs.
struct Bound {
    agent: AgentDecl,
    model: Arc<dyn ChatModel>,
    model_entry: String,
    plan: Arc<CompiledPlan>,
    snapshot_digest: String,
    semantic_digest: String,
    prompt_hash: String,
}

impl AgentRunner {
    /// A runner whose tool calls go through `executor`.
    pub fn new(executor: ToolExecutor, clock: Arc<dyn Clock>) -> Self {
        Self {
            executor,
            clock,
            observer: None,
            plans: Arc::new(PlanCache::default()),
            models: Arc::new(LiveModels),
            cancel: Cancellation::new(),
            cursors: crate::runtime::model::TurnCursors::new(),
        }
    }

    /// Send step events to `observer`.
    pub fn with_observer(mut self, observer: Arc<dyn AgentObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Share `plans` with other runners (a server makes a runner per run).
    #[must_use]
    pub fn with_plan_cache(mut self, plans: Arc<PlanCache>) -> Self {
        self.plans = plans;
        self
    }

    /// Answer model calls through `models` (record / replay).
    pub fn with_models(mut self, models: Arc<dyn ModelBoundary>) -> Self {
        self.models = models;
        self
    }

    /// The plan cache.
    pub fn plans(&self) -> &PlanCache {
        &self.plans
    }

    /// The executor.
    pub fn executor(&self) -> &ToolExecutor {
        &self.executor
    }

    /// Fires to interrupt every run of this runner (model calls in flight
    /// are cancelled; the run stops as failed).
    pub fn cancellation(&self) -> &Cancellation {
        &self.cancel
    }

    fn emit(&self, event: AgentEvent) {
        if let Some(o) = &self.observer {
            o.on_event(&event.redacted(&self.executor.services().redactor));
        }
    }

    /// Run `request` against `generation` (which the caller has leased).
    pub async fn run(
        self: &Arc<Self>,
        generation: &Arc<Generation>,
        request: AgentRequest,
    ) -> Result<AgentResult, AgentError> {
        self.run_capped(generation, request, &BudgetLimits::unlimited())
            .await
    }

    /// [`Self::run`] within `caps` as well as the agent's budget: a caller
    /// (a served request) may tighten the agent's limits, never loosen them.
    pub async fn run_capped(
        self: &Arc<Self>,
        generation: &Arc<Generation>,
        request: AgentRequest,
        caps: &BudgetLimits,
    ) -> Result<AgentResult, AgentError> {
        let agent = find_agent(generation, &request.agent)?;
        let budget = BudgetGovernor::with_profile(
            agent.budget.tightened(caps),
            Arc::clone(&self.clock),
            EnforcementProfile::owning_model_boundary(),
        );
        self.run_with_budget(Arc::clone(generation), request, budget, 0)
            .await
    }

    /// [`Self::run`] with tools the request brings (the Oracle runtime's
    /// `getRequestTools`): the run gets its own candidate generation, derived
    /// from `generation` with these tools added to the agent's view, and is
    /// stamped with that candidate's digest; `generation` itself never
    /// changes and no other run sees them.
    pub async fn run_with_request_tools(
        self: &Arc<Self>,
        generation: &Arc<Generation>,
        request: AgentRequest,
        tools: crate::runtime::request_tools::RequestTools,
    ) -> Result<AgentResult, AgentError> {
        if tools.is_empty() {
            return self.run(generation, request).await;
        }
        find_agent(generation, &request.agent)?;
        let candidate = crate::runtime::request_tools::candidate_for_request(
            generation,
            &request.agent,
            tools,
        )?;
        self.run(&candidate, request).await
    }

    /// Run with an existing budget allocation (a sub-agent's child budget).
    pub(crate) fn run_with_budget(
        self: &Arc<Self>,
        generation: Arc<Generation>,
        request: AgentRequest,
        budget: BudgetGovernor,
        depth: usize,
    ) -> BoxFuture<'static, Result<AgentResult, AgentError>> {
        let this = Arc::clone(self);
        Box::pin(async move { this.run_inner(generation, request, budget, depth).await })
    }

    fn bind(&self, g: &Arc<Generation>, agent: &AgentDecl) -> Result<Bound, AgentError> {
        // The model: the provider bound to the agent scope's requirement.
        let unavailable = |reason: String| AgentError::ModelUnavailable {
            agent: agent.name.clone(),
            reason,
        };
        let scope = agent.scope.as_str();
        let resolution = g
            .plan
            .resolutions_of(scope)
            .iter()
            .find(|r| {
                matches!(&r.consumer, Consumer::Scope(p) if p.as_str() == scope)
                    && r.capability() == &agent.model.capability
            })
            .ok_or_else(|| unavailable("the agent scope has no model requirement".into()))?;
        let selected = match (&resolution.status, &resolution.selected) {
            (Status::Resolved, Some(s)) => s,
            (status, _) => {
                let mut reason = format!(
                    "`{}` is {}",
                    resolution.requirement.render(),
                    status.as_str()
                );
                if !resolution.ambiguous_between.is_empty() {
                    let between: Vec<&str> = resolution
                        .ambiguous_between
                        .iter()
                        .map(|e| e.as_str())
                        .collect();
                    reason.push_str(&format!(
                        " between {}; set `prefer_model` on the agent",
                        between.join(", ")
                    ));
                }
                return Err(unavailable(reason));
            }
        };
        let model = g
            .capabilities
            .get(&agent.model.capability)
            .and_then(|providers| {
                providers
                    .iter()
                    .find(|p| *p.entry_id == *selected.entry.as_str())
            })
            .and_then(|p| p.registration.value.downcast::<ModelHandle>())
            .ok_or_else(|| {
                unavailable(format!(
                    "entry `{}` provides `{}` but not as a chat model (use a model plugin such as `scripted` or `openai`)",
                    selected.entry, agent.model.capability
                ))
            })?;
        // The snapshot of this run: the same for every run of this agent on
        // this generation, so computed once per generation.
        let stamp = g.agent_stamp(&agent.name, || {
            let active: Vec<&Entry> = g
                .plan
                .activation_order
                .iter()
                .filter_map(|id| g.composition.entries.get(id))
                .collect();
            let definition = graph_definition_hash(&g.composition, agent, &active)
                .map_err(|e| AgentError::Snapshot(e.to_string()))?;
            let prompt =
                prompt_hash(&agent.prompt).map_err(|e| AgentError::Snapshot(e.to_string()))?;
            let mut record = g.snapshot.clone();
            record.agent_runtime = crate::engine::agent::LOOP_RUNTIME.to_owned();
            record.agent = Some(agent.name.clone());
            record.agent_revision = Some(agent.revision.clone());
            record.graph_definition_hash = Some(definition.clone());
            record.prompt_hash = Some(prompt.clone());
            let digests = record
                .digests()
                .map_err(|e| AgentError::Snapshot(e.to_string()))?;
            Ok::<_, AgentError>(AgentStamp {
                definition_hash: definition,
                prompt_hash: prompt,
                digests,
            })
        })?;
        let plan = self.plans.get_or_compile(
            &agent.name,
            &stamp.definition_hash,
            self.executor.services().telemetry.as_ref(),
            || compile(g, agent, stamp.definition_hash.clone()),
        );
        // What the model answers is redacted as it comes in, so every
        // consumer (events, the conversation, a recording) sees one text.
        let model = crate::runtime::model::RedactingModel::new(
            Arc::clone(&model.0),
            self.executor.services().redactor.clone(),
        );
        Ok(Bound {
            agent: agent.clone(),
            model: Arc::new(model),
            model_entry: selected.entry.to_string(),
            plan,
            snapshot_digest: stamp.digests.digest.clone(),
            semantic_digest: stamp.digests.semantic_digest.clone(),
            prompt_hash: stamp.prompt_hash.clone(),
        })
    }

    async fn run_inner(
        self: Arc<Self>,
        g: Arc<Generation>,
        request: AgentRequest,
        budget: BudgetGovernor,
        depth: usize,
    ) -> Result<AgentResult, AgentError> {
        let agent = find_agent(&g, &request.agent)?;
        let bound = self.bind(&g, agent)?;
        let run_id = request.run_id.clone().unwrap_or_else(new_run_id);
        let services = self.executor.services().clone();
        let telemetry = Arc::clone(&services.telemetry);
        let redactor = services.redactor.clone();
        let generation_id = g.id.to_string();
        let started = tokio::time::Instant::now();

        // Sub-agents are tools of this run.
        let extra = (!agent.sub_agents.is_empty()).then(|| {
            let map: BTreeMap<String, ToolRegistration> = agent
                .sub_agents
                .iter()
                .filter_map(|name| g.composition.agents.get(name))
                .map(|sub| {
                    let tool = SubAgentTool::new(
                        Arc::downgrade(&self),
                        Arc::clone(&g),
                        sub,
                        budget.clone(),
                        depth + 1,
                    );
                    (
                        sub.name.clone(),
                        ToolRegistration {
                            id: format!("agent_{}", sub.name),
                            owner: format!("agent:{}", agent.name),
                            tool: Arc::new(tool),
                            policy: ToolPolicy::default(),
                        },
                    )
                })
                .collect();
            Arc::new(map)
        });
        let run = RunContext {
            run_id: run_id.clone(),
            generation: Arc::clone(&g),
            agent: Some(agent.name.clone()),
            scope: agent.scope.to_string(),
            budget: Some(budget.clone()),
            extra_tools: extra,
        };

        self.emit(AgentEvent::RunStarted {
            agent: agent.name.clone(),
            run_id: run_id.clone(),
            generation_id: generation_id.clone(),
            snapshot_digest: bound.snapshot_digest.clone(),
            depth,
        });
        let span = telemetry
            .span_start(
                "agent.run",
                &attributes([
                    ("agent", AttrValue::from(agent.name.clone())),
                    ("agent_revision", AttrValue::from(agent.revision.clone())),
                    ("generation_id", AttrValue::from(generation_id.clone())),
                    ("run_id", AttrValue::from(run_id.clone())),
                    (
                        "chassis_version",
                        AttrValue::from(crate::engine::snapshot::CHASSIS_VERSION),
                    ),
                    (
                        "snapshot_digest",
                        AttrValue::from(bound.snapshot_digest.clone()),
                    ),
                    (
                        "plugin_graph_hash",
                        AttrValue::from(g.snapshot.plugin_graph_hash.clone()),
                    ),
                    (
                        "graph_definition_hash",
                        AttrValue::from(bound.plan.definition_hash.clone()),
                    ),
                    (
                        "tool_schema_hash",
                        AttrValue::from(g.snapshot.tool_schema_hash.clone()),
                    ),
                ]),
            )
            .ok();

        let mut state = LoopState {
            messages: Vec::new(),
            tool_calls: Vec::new(),
            usage: Usage::default(),
            cost: 0.0,
            steps: 0,
            model: None,
            depth,
        };
        // Everything enters the conversation redacted: what the model
        // receives, what hooks see and what a recording keeps are one text.
        if !bound.plan.system_prompt.is_empty() {
            state.messages.push(ChatMessage::text(
                Role::System,
                redactor.redact(&bound.plan.system_prompt).into_owned(),
            ));
        }
        // A session's earlier turns, then this input.
        state.messages.extend(
            request
                .history
                .iter()
                .filter(|m| m.role != Role::System)
                .map(|m| redact_message(&redactor, m)),
        );
        state.messages.push(ChatMessage::text(
            Role::User,
            redactor.redact(&request.input).into_owned(),
        ));

        let base_payload = json!({
            "agent": agent.name, "agent_revision": agent.revision,
            "run_id": run_id, "generation_id": generation_id,
        });
        let stop = match self
            .hook(&g, HookEvent::BeforeAgentRun, || {
                let mut p = base_payload.clone();
                p["input"] = Value::String(redactor.redact(&request.input).into_owned());
                p
            })
            .await
        {
            Err(e) => StopReason::Failed {
                error: redactor.redact(&e.to_string()).into_owned(),
            },
            Ok(HookOutcome::Bailed(reason)) => StopReason::Refused { reason },
            Ok(_) => self.steps(&bound, &run, &budget, &mut state).await,
        }
        .redacted(&redactor);

        let (event, status) = match &stop {
            StopReason::Answered => (HookEvent::AfterAgentRun, "ok"),
            StopReason::StepLimit { .. } | StopReason::Refused { .. } => {
                (HookEvent::AfterAgentRun, "stopped")
            }
            _ => (HookEvent::AgentError, "error"),
        };
        let _ = self
            .hook(&g, event, || {
                let mut p = base_payload.clone();
                p["status"] = json!(status);
                p["stop"] = json!(stop.kind());
                p
            })
            .await;
        if let Some(id) = span {
            let error = (stop != StopReason::Answered).then(|| stop.describe());
            let _ = telemetry.span_end(
                id,
                &attributes([("status", AttrValue::from(stop.kind()))]),
                error.as_deref(),
            );
        }
        self.emit(AgentEvent::RunFinished {
            agent: agent.name.clone(),
            run_id: run_id.clone(),
            stop: stop.clone(),
            depth,
        });
        let answer = match &stop {
            StopReason::Answered => state
                .messages
                .last()
                .map(|m| redactor.redact(&m.content).into_owned()),
            _ => None,
        };
        let messages = state
            .messages
            .iter()
            .map(|m| redact_message(&redactor, m))
            .collect();
        Ok(AgentResult {
            agent: agent.name.clone(),
            agent_revision: agent.revision.clone(),
            run_id,
            generation_id,
            snapshot_digest: bound.snapshot_digest.clone(),
            semantic_digest: bound.semantic_digest.clone(),
            graph_definition_hash: bound.plan.definition_hash.clone(),
            prompt_hash: bound.prompt_hash.clone(),
            answer,
            stop,
            steps: state.steps,
            messages,
            tool_calls: state.tool_calls,
            usage: state.usage,
            estimated_cost: state.cost,
            model: state.model,
            budget: Some(budget.snapshot()),
            duration_seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// Dispatch `event` if anything listens (the payload is built only then).
    async fn hook(
        &self,
        g: &Generation,
        event: HookEvent,
        payload: impl FnOnce() -> Value,
    ) -> Result<HookOutcome, HookExecutionError> {
        if g.hooks.for_event(event).next().is_none() {
            return Ok(HookOutcome::Nobody);
        }
        let out = g.hooks.dispatch(event, payload()).await?;
        self.executor.hook_failures(&out.failures);
        Ok(match out.bailed {
            // The reason came from the hook: it names the hook, redacted.
            Some(bail) => HookOutcome::Bailed(
                self.executor
                    .services()
                    .redactor
                    .redact(&bail.to_string())
                    .into_owned(),
            ),
            None => HookOutcome::Payload(out.payload),
        })
    }

    /// The loop proper.
    async fn steps(
        &self,
        bound: &Bound,
        run: &RunContext,
        budget: &BudgetGovernor,
        state: &mut LoopState,
    ) -> StopReason {
        let agent = &bound.agent;
        let g = &run.generation;
        let redactor = &self.executor.services().redactor;
        let telemetry = &self.executor.services().telemetry;
        for step in 1..=agent.max_steps {
            state.steps = step;
            // Budget before the call: deadline, one more model call, tokens left.
            let mut max_tokens = agent.max_tokens;
            let pre = budget
                .check_deadline()
                .map_err(BudgetError::Exceeded)
                .and_then(|()| budget.check(BudgetDimension::ModelCalls, 1.0));
            if let Err(e) = pre {
                return self.exhausted(run, "model.call", &e);
            }
            if let Some(left) = budget.remaining(BudgetDimension::Tokens) {
                if left < 1.0
                    && let Err(e) = budget.check(BudgetDimension::Tokens, 1.0)
                {
                    return self.exhausted(run, "model.call", &e);
                }
                let cap = left as u64;
                max_tokens = Some(max_tokens.map_or(cap, |m| m.min(cap)));
            }

            // before_model_call: bail refuses, transform may replace messages.
            let model_name = bound.model.model_name().to_owned();
            match self
                .hook(g, HookEvent::BeforeModelCall, || {
                    json!({
                        "agent": agent.name, "step": step, "model": model_name,
                        "run_id": run.run_id, "generation_id": g.id.to_string(),
                        "messages": state.messages,
                    })
                })
                .await
            {
                Err(e) => {
                    return StopReason::Failed {
                        error: redactor.redact(&e.to_string()).into_owned(),
                    };
                }
                Ok(HookOutcome::Bailed(reason)) => return StopReason::Refused { reason },
                Ok(HookOutcome::Payload(p)) => {
                    if let Some(m) = p.get("messages") {
                        match serde_json::from_value::<Vec<ChatMessage>>(m.clone()) {
                            Ok(messages) => {
                                state.messages = messages
                                    .iter()
                                    .map(|m| redact_message(redactor, m))
                                    .collect();
                            }
                            Err(e) => {
                                return StopReason::Failed {
                                    error: format!(
                                        "a before_model_call hook returned invalid messages: {e}"
                                    ),
                                };
                            }
                        }
                    }
                }
                Ok(HookOutcome::Nobody) => {}
            }

            // An observer that watches the text gets it as it streams —
            // unless an after_model_call hook may still change the message:
            // then nothing leaves before the hook has had its say.
            let hooked = g
                .hooks
                .for_event(HookEvent::AfterModelCall)
                .next()
                .is_some();
            let text_stream = self
                .observer
                .as_ref()
                .filter(|o| o.wants_text() && !hooked)
                .map(|o| {
                    super::text_stream::TextStream::new(
                        Arc::clone(o),
                        self.executor.services().redactor.clone(),
                        agent.name.clone(),
                        step,
                        state.depth,
                    )
                });
            let request = ModelRequest {
                messages: &state.messages,
                tools: &bound.plan.tools,
                options: ModelOptions {
                    temperature: agent.temperature,
                    max_tokens,
                },
                cancel: self.cancel.clone(),
                cursors: self.cursors.clone(),
                deltas: text_stream
                    .as_ref()
                    .map(super::text_stream::TextStream::deltas),
                run_id: Some(&run.run_id),
            };
            self.emit(AgentEvent::ModelCallStarted {
                agent: agent.name.clone(),
                step,
                model: model_name.clone(),
            });
            let span = telemetry
                .span_start(
                    "model.call",
                    &attributes([
                        ("model", AttrValue::from(model_name.clone())),
                        ("entry_id", AttrValue::from(bound.model_entry.clone())),
                        ("generation_id", AttrValue::from(g.id.to_string())),
                        ("run_id", AttrValue::from(run.run_id.clone())),
                    ]),
                )
                .ok();
            let started = tokio::time::Instant::now();
            let answered = tokio::select! {
                r = self.models.complete(bound.model.as_ref(), &request, run) => r,
                () = self.cancel.cancelled() => Err(ModelError::Cancelled),
                exceeded = deadline(Some(budget)) => {
                    let e = BudgetError::Exceeded(exceeded);
                    if let Some(id) = span {
                        let _ = telemetry.span_end(
                            id,
                            &attributes([(
                                "duration_seconds",
                                AttrValue::from(started.elapsed().as_secs_f64()),
                            )]),
                            Some(&e.to_string()),
                        );
                    }
                    return self.exhausted(run, "model.call", &e);
                }
            };
            let duration = started.elapsed().as_secs_f64();
            if let (Some(t), Ok(_)) = (&text_stream, &answered) {
                t.finish();
            }
            let (response, replayed) = match answered {
                Ok(r) => r,
                Err(e) => {
                    let error = redactor.redact(&e.to_string()).into_owned();
                    if let Some(id) = span {
                        let _ = telemetry.span_end(
                            id,
                            &attributes([("duration_seconds", AttrValue::from(duration))]),
                            Some(&error),
                        );
                    }
                    return match e {
                        ModelError::Refused(reason) => StopReason::Refused {
                            reason: redactor.redact(&reason).into_owned(),
                        },
                        _ => StopReason::ModelFailed { error },
                    };
                }
            };
            if let Some(id) = span {
                let usage = response.usage.unwrap_or_default();
                let _ = telemetry.span_end(
                    id,
                    &attributes([
                        ("tokens", AttrValue::from(usage.total())),
                        ("prompt_tokens", AttrValue::from(usage.input_tokens)),
                        ("completion_tokens", AttrValue::from(usage.output_tokens)),
                        (
                            "finish_reason",
                            AttrValue::from(response.finish_reason.clone()),
                        ),
                        ("replayed", AttrValue::from(replayed)),
                        ("duration_seconds", AttrValue::from(duration)),
                    ]),
                    None,
                );
            }
            state.model = Some(response.model.clone());
            self.emit(AgentEvent::ModelCallFinished {
                agent: agent.name.clone(),
                step,
                duration_seconds: duration,
                usage: response.usage,
                finish_reason: response.finish_reason.clone(),
                tool_calls: response.message.tool_calls.len(),
                replayed,
            });
            // Charge what the call reported: it already happened, so the
            // call and its usage are spent in full along the whole chain of
            // budgets, past a limit if need be — a child's call counts on
            // its caller even when the child's own limit is crossed — and
            // a crossed limit stops the run (the outermost one crossed says
            // whose run: a caller's limit stops the caller too).
            let usage = response.usage.unwrap_or_default();
            state.usage.input_tokens = state.usage.input_tokens.saturating_add(usage.input_tokens);
            state.usage.output_tokens = state
                .usage
                .output_tokens
                .saturating_add(usage.output_tokens);
            let cost = response.estimated_cost.unwrap_or(0.0);
            state.cost += cost;
            // A report whose tokens cannot be counted exactly (a sum past
            // 2^53, or past u64) is refused whole: charging what it wraps
            // or rounds to would let it pass any `tokens` limit.
            let call_only = BudgetUsage {
                model_calls: 1.0,
                ..BudgetUsage::default()
            };
            let Some(tokens) = usage.counted_total() else {
                // The call is charged (it happened); its tokens cannot be.
                let _ = budget.spend(call_only);
                state
                    .messages
                    .push(redact_message(redactor, &response.message));
                return StopReason::ModelFailed {
                    error: format!(
                        "model entry `{}` reported a usage that cannot be counted: {} input and {} output tokens are more than {} together; the call is charged, its tokens are not",
                        bound.model_entry,
                        usage.input_tokens,
                        usage.output_tokens,
                        Usage::MAX_COUNTED
                    ),
                };
            };
            let charge = BudgetUsage {
                model_calls: 1.0,
                tokens: tokens as f64,
                estimated_cost: cost,
                tool_calls: None,
            };
            if let Err(e) = budget.spend(charge) {
                // An amount the budget cannot take (a cost that is not a
                // finite, non-negative number) charged nothing: the call
                // and its tokens still count, up the whole chain, and a
                // limit they cross says whose run stops.
                let e = match e.exceeded() {
                    Some(_) => e,
                    None => match budget.spend(BudgetUsage {
                        tokens: tokens as f64,
                        ..call_only
                    }) {
                        Err(crossed) if crossed.exceeded().is_some() => crossed,
                        _ => e,
                    },
                };
                state
                    .messages
                    .push(redact_message(redactor, &response.message));
                return self.exhausted(run, "model.call", &e);
            }

            // after_model_call: transform may replace the message.
            let mut message = redact_message(redactor, &response.message);
            match self
                .hook(g, HookEvent::AfterModelCall, || {
                    json!({
                        "agent": agent.name, "step": step, "model": response.model,
                        "run_id": run.run_id, "generation_id": g.id.to_string(),
                        "message": message, "usage": response.usage,
                        "finish_reason": response.finish_reason,
                    })
                })
                .await
            {
                Err(e) => {
                    return StopReason::Failed {
                        error: redactor.redact(&e.to_string()).into_owned(),
                    };
                }
                Ok(HookOutcome::Payload(p)) => {
                    if let Some(m) = p.get("message")
                        && let Ok(m) = serde_json::from_value::<ChatMessage>(m.clone())
                    {
                        message = redact_message(redactor, &m);
                    }
                }
                Ok(_) => {}
            }
            message.role = Role::Assistant;
            let calls = message.tool_calls.clone();
            state.messages.push(message);
            if calls.is_empty() {
                return StopReason::Answered;
            }
            if step == agent.max_steps {
                // No model call is left to read the results: do not run them.
                break;
            }
            for call in calls {
                if let Some(stop) = self.tool_call(run, step, call, state).await {
                    return stop;
                }
            }
        }
        StopReason::StepLimit {
            max_steps: agent.max_steps,
        }
    }

    /// One tool call through the executor; `Some` when the run must stop.
    async fn tool_call(
        &self,
        run: &RunContext,
        step: u32,
        call: crate::runtime::model::ModelToolCall,
        state: &mut LoopState,
    ) -> Option<StopReason> {
        let agent = run.agent.clone().unwrap_or_default();
        let redactor = &self.executor.services().redactor;
        let mut record = ToolCallRecord {
            step,
            name: call.name.clone(),
            call_id: call.id.clone(),
            status: "ok",
            refusal: None,
            error: None,
            duration_seconds: 0.0,
            replayed: false,
        };
        let content = if let Some(why) = &call.malformed {
            record.status = "malformed";
            let message = format!(
                "error: the arguments of `{}` could not be used: {why}; call it again with a JSON object matching its schema",
                call.name
            );
            record.error = Some(message.clone());
            message
        } else {
            self.emit(AgentEvent::ToolCallStarted {
                agent: agent.clone(),
                step,
                name: call.name.clone(),
                arguments: redactor.redact_json(&call.arguments),
            });
            let outcome = self
                .executor
                .execute(
                    run,
                    ToolCall {
                        name: call.name.clone(),
                        args: call.arguments.clone(),
                        call_id: Some(call.id.clone()),
                    },
                    false,
                )
                .await;
            match outcome {
                Ok(result) => {
                    record.duration_seconds = result.duration_seconds;
                    record.replayed = result.replayed;
                    match result.status {
                        ToolStatus::Ok => match &result.content {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        },
                        status => {
                            record.status = if status == ToolStatus::Timeout {
                                "timeout"
                            } else {
                                "error"
                            };
                            let e = result.error.clone().unwrap_or_default();
                            record.error = Some(e.clone());
                            format!("error: {e}")
                        }
                    }
                }
                Err(ExecError::Refused(r)) => {
                    record.status = "refused";
                    record.refusal = Some(r.kind());
                    let message = redactor.redact(&r.to_string()).into_owned();
                    record.error = Some(message.clone());
                    format!("refused ({}): {message}", r.kind())
                }
                Err(ExecError::Budget(e)) => {
                    record.status = "refused";
                    record.refusal = Some("budget");
                    record.error = Some(e.to_string());
                    state.tool_calls.push(record.clone());
                    self.emit(AgentEvent::ToolCallFinished { agent, record });
                    return Some(StopReason::BudgetExhausted {
                        dimension: e.dimension.as_str().to_owned(),
                        message: e.to_string(),
                        exceeded: Some(e),
                    });
                }
                Err(e @ (ExecError::Hook(_) | ExecError::Failed(_) | ExecError::Replay(_))) => {
                    let error = redactor.redact(&e.to_string()).into_owned();
                    record.status = "error";
                    record.error = Some(error.clone());
                    state.tool_calls.push(record.clone());
                    self.emit(AgentEvent::ToolCallFinished { agent, record });
                    return Some(StopReason::Failed { error });
                }
            }
        };
        // The executor redacted the output when it came back; a value the
        // call itself taught the redactor is caught here too.
        state.messages.push(ChatMessage::tool(
            call.id.clone(),
            call.name.clone(),
            redactor.redact(&content).into_owned(),
        ));
        state.tool_calls.push(record.clone());
        self.emit(AgentEvent::ToolCallFinished { agent, record });
        None
    }

    fn exhausted(&self, run: &RunContext, at: &str, e: &BudgetError) -> StopReason {
        let dimension = e
            .exceeded()
            .map_or("budget", |x| x.dimension.as_str())
            .to_owned();
        let _ = self.executor.services().telemetry.event(
            "budget.exhausted",
            &attributes([
                ("tool", AttrValue::from(at)),
                ("dimension", AttrValue::from(dimension.clone())),
                ("run_id", AttrValue::from(run.run_id.clone())),
                (
                    "generation_id",
                    AttrValue::from(run.generation.id.to_string()),
                ),
            ]),
        );
        StopReason::BudgetExhausted {
            dimension,
            message: e.to_string(),
            exceeded: e.exceeded().cloned(),
        }
    }
}

enum HookOutcome {
    Nobody,
    Bailed(String),
    Payload(Value),
}

struct LoopState {
    messages: Vec<ChatMessage>,
    tool_calls: Vec<ToolCallRecord>,
    usage: Usage,
    cost: f64,
    steps: u32,
    model: Option<String>,
    /// Nesting depth (0: the top-level run).
    depth: usize,
}

fn find_agent<'g>(g: &'g Generation, name: &str) -> Result<&'g AgentDecl, AgentError> {
    g.composition
        .agents
        .get(name)
        .ok_or_else(|| AgentError::UnknownAgent {
            agent: name.to_owned(),
            generation: g.id.to_string(),
            available: g.composition.agents.keys().cloned().collect(),
        })
}

fn redact_message(redactor: &crate::engine::secret::Redactor, m: &ChatMessage) -> ChatMessage {
    m.redacted(redactor)
}

/// The plan: the system prompt and the tools the agent's scope shows, with
/// its sub-agents.
pub(crate) fn compile(g: &Generation, agent: &AgentDecl, definition_hash: String) -> CompiledPlan {
    let scope = ScopePath::new(agent.scope.as_str()).ok();
    let ix = scope.as_ref().and_then(|p| g.tree.find(p));
    let mut tools: Vec<ToolSpec> = g
        .tools
        .iter()
        .filter(|(name, _)| {
            agent_sees(agent, name)
                && match (ix, crate::engine::model::ToolName::new(name)) {
                    (Some(ix), Ok(t)) => g.tree.shows_tool(ix, &t),
                    _ => false,
                }
        })
        .filter_map(|(name, reg)| {
            // The agent-facing guide of the tool and of its plugin.
            let manifest = crate::engine::model::EntryId::new(&reg.owner)
                .ok()
                .and_then(|id| g.composition.entries.get(&id))
                .map(|e| &e.manifest);
            let tool_guide = manifest.and_then(|m| {
                m.tools
                    .iter()
                    .find(|t| t.name.as_str() == name)
                    .and_then(|t| t.guide.as_ref())
            });
            let description = crate::engine::model::render_description(
                name,
                reg.tool.description(),
                tool_guide,
                manifest.and_then(|m| m.guide.as_ref()),
            )?;
            Some(ToolSpec {
                name: name.clone(),
                description,
                parameters: reg
                    .tool
                    .args_schema()
                    .cloned()
                    .unwrap_or_else(|| json!({ "type": "object" })),
            })
        })
        .collect();
    for sub in &agent.sub_agents {
        let description = g
            .composition
            .agents
            .get(sub)
            .map(|a| a.description.clone())
            .filter(|d| !d.is_empty())
            .unwrap_or_else(|| format!("Ask the agent `{sub}`."));
        tools.push(ToolSpec {
            name: sub.clone(),
            description,
            parameters: json!({
                "type": "object",
                "required": ["input"],
                "properties": { "input": { "type": "string", "description": "What to ask the agent." } },
                "additionalProperties": false
            }),
        });
    }
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    CompiledPlan {
        definition_hash,
        system_prompt: agent.prompt.clone(),
        tools,
    }
}
