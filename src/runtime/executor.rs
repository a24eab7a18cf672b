//! The tool boundary: every tool call crosses it, in the seed's order.
//!
//! lookup (generation + tool view) → `before_tool_execute` hooks (bail
//! refuses, transform may replace the arguments) → argument schema check →
//! policy for every expanded permission (`policy_decision` hook and signal
//! per permission) → approval → budget and deadline → `tool.execute` span →
//! the tool under its timeout → normalized result → `after_tool_execute` or
//! `tool_error` hooks.
//!
//! A refusal (unknown tool, invalid arguments, policy, approval, hook bail)
//! is a [`ToolRefusal`] the model can read and correct; budget exhaustion is
//! [`ExecError::Budget`] and ends the run; a tool that ran and failed is a
//! normalized [`ToolResult`] with status `error` or `timeout`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::generation::{Generation, ScopeSystem};
use super::hooks::{HookEvent, HookExecutionError};
use super::tool::{Cancellation, ToolCallContext};
use crate::engine::budget::{BudgetDimension, BudgetError, BudgetExceeded, BudgetGovernor};
use crate::engine::policy::{
    ApprovalGate, ApprovalRequest, DenyAllApprovals, PolicyEngine, PolicyRequest, evaluate_or_deny,
};
use crate::engine::secret::{Redactor, SecretProvider};
use crate::engine::telemetry::{AttrValue, Attributes, NoopTelemetry, Telemetry, attributes};

/// The `permission` of the policy decision of a tool that declares none.
pub const NO_PERMISSION: &str = "(none)";

/// How long past the run's deadline a tool call may still take before it is
/// cut off (see [`ToolExecutor::execute`]).
const DEADLINE_GRACE: Duration = Duration::from_millis(100);

/// Resolves when `budget`'s wall-clock limit has been crossed, with the
/// refusal; never when no deadline is enforced. Raced against work in
/// flight (a model call), so a slow call cannot outlive the budget.
pub(crate) async fn deadline(budget: Option<&BudgetGovernor>) -> BudgetExceeded {
    let Some(budget) = budget else {
        return std::future::pending().await;
    };
    loop {
        let Some(left) = budget.time_left() else {
            return std::future::pending().await;
        };
        // Just past the limit: exactly at it is still allowed.
        tokio::time::sleep(left + Duration::from_millis(1)).await;
        if let Err(e) = budget.check_deadline() {
            return e;
        }
    }
}

/// The services a run's tool calls go through.
#[derive(Clone)]
pub struct ExecutorServices {
    /// The policy engine (fail closed on error).
    pub policy: Arc<dyn PolicyEngine>,
    /// The approval gate (the default denies).
    pub approvals: Arc<dyn ApprovalGate>,
    /// Telemetry (already wrapped safe + redacting by the caller).
    pub telemetry: Arc<dyn Telemetry>,
    /// The redactor shared with telemetry.
    pub redactor: Redactor,
    /// Timeout for tools whose policy sets none.
    pub default_timeout: Option<Duration>,
    /// Record or replay of tool calls (`--record` / `--replay`).
    pub replay: Option<Arc<super::replay::Replay>>,
    /// The default secrets of tool calls (a scope governed by a `secrets`
    /// provider uses that instead).
    pub secrets: Arc<dyn SecretProvider>,
    /// What a tool that declares no permission and is not read-only needs.
    pub ungoverned: Ungoverned,
    /// Resolves `filesystem.*` resources (relative ones against the
    /// composition's directory, symlinks followed) before policy judges
    /// them; `None` judges them as written.
    pub paths: Option<super::paths::PathResolver>,
}

/// What the boundary asks of an *ungoverned* tool — one that declares no
/// permission (so no policy can decide it) and is not read-only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ungoverned {
    /// It runs (the permissive services of tests and embedders).
    Runs,
    /// Every call needs approval (what a run from the command line or a
    /// server does: fail closed).
    NeedsApproval,
}

impl std::fmt::Debug for ExecutorServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecutorServices")
            .field("default_timeout", &self.default_timeout)
            .finish()
    }
}

impl ExecutorServices {
    /// Use the `[policy]` of `generation`'s composition, if it declares one
    /// (a run sees the policy of the generation it leased). It is the
    /// default: a scope governed by a `policy` provider uses that instead.
    pub fn with_generation_policy(mut self, generation: &Generation) -> Self {
        if let Some(p) = &generation.composition.policy {
            self.policy = Arc::new(p.rules.clone());
        }
        self
    }

    /// Allow-all policy, deny-all approvals, no telemetry.
    pub fn permissive() -> Self {
        Self {
            policy: Arc::new(crate::engine::policy::AllowAll),
            approvals: Arc::new(DenyAllApprovals),
            telemetry: Arc::new(NoopTelemetry::default()),
            redactor: Redactor::new(),
            default_timeout: None,
            replay: None,
            secrets: Arc::new(crate::engine::secret::StaticSecretProvider::new()),
            ungoverned: Ungoverned::Runs,
            paths: None,
        }
    }
}

/// What a live call gets from its run's scope: the secrets it resolves and
/// what it may do further on.
struct CallScope {
    secrets: Arc<dyn SecretProvider>,
    reach: super::tool::CallReach,
}

/// What a run knows when it calls a tool.
#[derive(Clone, Debug)]
pub struct RunContext {
    /// Run id.
    pub run_id: String,
    /// The leased generation.
    pub generation: Arc<Generation>,
    /// Agent name, for agent runs.
    pub agent: Option<String>,
    /// The consumer's scope path (its tool view applies).
    pub scope: String,
    /// The run's budget, if it has one.
    pub budget: Option<BudgetGovernor>,
    /// Tools that belong to this run rather than the generation (an agent's
    /// sub-agents); they cross the same boundary.
    pub extra_tools: Option<Arc<std::collections::BTreeMap<String, super::tool::ToolRegistration>>>,
}

/// One tool call as the model asked for it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    /// Tool name.
    pub name: String,
    /// Arguments.
    pub args: Value,
    /// The model's call id.
    pub call_id: Option<String>,
}

/// How a call that ran ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// It returned.
    Ok,
    /// It failed.
    Error,
    /// It exceeded its deadline and was cancelled.
    Timeout,
}

impl ToolStatus {
    /// The name in results and signals (`ok`, `error`, `timeout`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Timeout => "timeout",
        }
    }
}

/// A normalized result of a call that ran.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ToolResult {
    /// Tool name.
    pub name: String,
    /// Status.
    pub status: ToolStatus,
    /// Content the model reads.
    pub content: Value,
    /// Structured data kept beside the content.
    pub artifact: Option<Value>,
    /// The redacted error of a failed call.
    pub error: Option<String>,
    /// Wall time of the call.
    pub duration_seconds: f64,
    /// The model's call id.
    pub call_id: Option<String>,
    /// Generation.
    pub generation_id: String,
    /// Run.
    pub run_id: String,
    /// Whether a recording answered the call (replay).
    pub replayed: bool,
}

/// Why a call was refused before the tool ran. The model can read it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ToolRefusal {
    /// No such tool in the run's generation and scope.
    #[error("tool `{tool}` is not available here; available tools: {}", available.join(", "))]
    UnknownTool {
        /// Requested name.
        tool: String,
        /// Tools visible to the run.
        available: Vec<String>,
    },
    /// Arguments do not match the schema.
    #[error("invalid arguments for `{tool}`: {}", errors.join("; "))]
    InvalidArguments {
        /// Tool.
        tool: String,
        /// Violations (JSON Pointer: message).
        errors: Vec<String>,
    },
    /// A permission was denied.
    #[error("tool `{tool}` requires `{permission}`: {reason}")]
    PolicyDenied {
        /// Tool.
        tool: String,
        /// The permission (expanded).
        permission: String,
        /// Why.
        reason: String,
    },
    /// Approval was required and not given.
    #[error("tool `{tool}` needs approval: {reason}")]
    ApprovalDenied {
        /// Tool.
        tool: String,
        /// Why.
        reason: String,
    },
    /// A `before_tool_execute` hook refused.
    #[error("tool `{tool}` was refused by hook `{hook}` of `{owner}`: {reason}")]
    HookBail {
        /// Tool.
        tool: String,
        /// The hook's registration id.
        hook: String,
        /// Its owner entry.
        owner: String,
        /// The hook's reason.
        reason: String,
    },
}

impl ToolRefusal {
    /// Stable kind name, for the model message and telemetry.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::UnknownTool { .. } => "unknown_tool",
            Self::InvalidArguments { .. } => "invalid_arguments",
            Self::PolicyDenied { .. } => "policy_denied",
            Self::ApprovalDenied { .. } => "approval_denied",
            Self::HookBail { .. } => "hook",
        }
    }
}

/// Why a call ended without a result.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ExecError {
    /// Refused before running.
    #[error(transparent)]
    Refused(ToolRefusal),
    /// The run is over budget and must stop.
    #[error(transparent)]
    Budget(BudgetExceeded),
    /// A hook with the `raise` policy failed.
    #[error(transparent)]
    Hook(HookExecutionError),
    /// A replay had no recorded answer for the call.
    #[error("{0}")]
    Replay(String),
    /// The tool failed and the caller asked to raise.
    #[error("tool `{}` failed: {}", .0.name, .0.error.as_deref().unwrap_or(""))]
    Failed(Box<ToolResult>),
}

/// The executor (cheap to clone; clones share its attribute memos).
#[derive(Clone, Debug)]
pub struct ToolExecutor {
    services: ExecutorServices,
    memo: Arc<Memos>,
}

/// A borrowed attribute value, compared with a memoized one.
#[derive(Clone, Copy)]
enum Val<'a> {
    Str(&'a str),
    Bool(bool),
}

impl Val<'_> {
    fn matches(self, value: &AttrValue) -> bool {
        match (self, value) {
            (Val::Str(a), AttrValue::Str(b)) => a == b,
            (Val::Bool(a), AttrValue::Bool(b)) => a == *b,
            _ => false,
        }
    }

    fn owned(self) -> AttrValue {
        match self {
            Val::Str(s) => AttrValue::from(s),
            Val::Bool(b) => AttrValue::from(b),
        }
    }
}

/// The attributes of the last signal of one kind, reused while their values
/// repeat (a run calling one tool emits the same maps call after call), so a
/// call builds no map it already built.
#[derive(Default)]
struct AttrMemo(std::sync::Mutex<Option<Arc<Attributes>>>);

impl AttrMemo {
    /// Attributes holding exactly `pairs` (distinct keys in ascending order).
    fn get(&self, pairs: &[(&'static str, Val<'_>)]) -> Arc<Attributes> {
        debug_assert!(pairs.windows(2).all(|w| w[0].0 < w[1].0));
        let mut slot = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(cached) = slot.as_ref()
            && cached.len() == pairs.len()
            && cached
                .iter()
                .zip(pairs)
                .all(|((k, v), (key, val))| k == key && val.matches(v))
        {
            return Arc::clone(cached);
        }
        let fresh: Arc<Attributes> = Arc::new(
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.owned()))
                .collect(),
        );
        *slot = Some(Arc::clone(&fresh));
        fresh
    }
}

/// What the executor builds on every call, kept for the next one: one
/// attribute memo per signal it emits, the last `before_tool_execute`
/// payload (its keys and fixed values), policy request and generation id.
#[derive(Default)]
struct Memos {
    span_start: AttrMemo,
    span_end: AttrMemo,
    decision: AttrMemo,
    payload: std::sync::Mutex<Option<serde_json::Map<String, Value>>>,
    request: std::sync::Mutex<Option<PolicyRequest>>,
    generation: std::sync::Mutex<Option<(crate::engine::identity::GenerationId, String)>>,
}

fn locked<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Memos {
    /// `id` as text.
    fn generation_id(&self, id: &crate::engine::identity::GenerationId) -> String {
        let mut slot = locked(&self.generation);
        match slot.as_ref() {
            Some((cached, text)) if cached == id => text.clone(),
            _ => {
                let text = id.to_string();
                *slot = Some((id.clone(), text.clone()));
                text
            }
        }
    }

    /// The `before_tool_execute` payload: `tool`, `owner`, `args`,
    /// `generation_id`, `run_id` (the memoized map when the fixed values
    /// match, with `args` put in).
    fn before_payload(
        &self,
        reuse: bool,
        fixed: [(&str, &str); 4],
        args: Value,
    ) -> serde_json::Map<String, Value> {
        let cached = if reuse {
            locked(&self.payload).take()
        } else {
            None
        };
        let same = |m: &serde_json::Map<String, Value>| {
            m.len() == 5
                && fixed
                    .iter()
                    .all(|(k, v)| m.get(*k).and_then(Value::as_str) == Some(*v))
        };
        let mut map = match cached {
            Some(m) if same(&m) => m,
            _ => {
                let [tool, owner, generation_id, run_id] = fixed.map(|(_, v)| v);
                let mut m = serde_json::Map::new();
                m.insert("tool".into(), Value::from(tool));
                m.insert("owner".into(), Value::from(owner));
                m.insert("args".into(), Value::Null);
                m.insert("generation_id".into(), Value::from(generation_id));
                m.insert("run_id".into(), Value::from(run_id));
                m
            }
        };
        if let Some(slot) = map.get_mut("args") {
            *slot = args;
        }
        map
    }

    /// The request for `permission` on behalf of `tool` (subject
    /// `tool:<tool>`, context `owner` and `generation_id`).
    fn request(
        &self,
        tool: &str,
        permission: &crate::engine::policy::Permission,
        owner: &str,
        generation_id: &str,
    ) -> PolicyRequest {
        let cached = locked(&self.request).take();
        match cached {
            Some(r)
                if r.permission == *permission
                    && r.subject.strip_prefix("tool:") == Some(tool)
                    && r.context.len() == 2
                    && r.context.get("owner").map(String::as_str) == Some(owner)
                    && r.context.get("generation_id").map(String::as_str)
                        == Some(generation_id) =>
            {
                r
            }
            _ => PolicyRequest::for_tool(tool, permission.clone())
                .with_context("owner", owner)
                .with_context("generation_id", generation_id),
        }
    }
}

impl std::fmt::Debug for Memos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memos").finish_non_exhaustive()
    }
}

fn emit(telemetry: &dyn Telemetry, name: &str, attrs: &Attributes) {
    // Backends are wrapped safe by the caller; an error here is already
    // counted there and must not affect the call.
    let _ = telemetry.event(name, attrs);
}

impl ToolExecutor {
    /// An executor over `services`.
    pub fn new(services: ExecutorServices) -> Self {
        Self {
            services,
            memo: Arc::default(),
        }
    }

    /// The services.
    pub fn services(&self) -> &ExecutorServices {
        &self.services
    }

    /// Whether `run`'s scope sees the tool `name` through its tool views.
    fn is_visible(&self, run: &RunContext, name: &str) -> bool {
        let g = &run.generation;
        if g.tree.scopes().iter().all(|s| s.tools.is_none()) {
            return true;
        }
        let scope = crate::engine::model::ScopePath::new(&run.scope)
            .ok()
            .and_then(|p| g.tree.find(&p));
        match (scope, crate::engine::model::ToolName::new(name)) {
            (Some(ix), Ok(t)) => g.tree.shows_tool(ix, &t),
            _ => false,
        }
    }

    /// Names of the tools `run` can call.
    pub fn visible_tools(&self, run: &RunContext) -> Vec<String> {
        let g = &run.generation;
        let scope = g.tree.find(
            &crate::engine::model::ScopePath::new(&run.scope)
                .unwrap_or_else(|_| crate::engine::model::ScopePath::root()),
        );
        let mut names: Vec<String> = g
            .tools
            .keys()
            .filter(
                |name| match (scope, crate::engine::model::ToolName::new(name)) {
                    (Some(ix), Ok(t)) => g.tree.shows_tool(ix, &t),
                    _ => false,
                },
            )
            .cloned()
            .collect();
        if let Some(extra) = &run.extra_tools {
            names.extend(extra.keys().cloned());
            names.sort();
            names.dedup();
        }
        names
    }

    /// Execute `call` for `run`. `raise_on_error` turns a failed result into
    /// [`ExecError::Failed`].
    pub async fn execute(
        &self,
        run: &RunContext,
        call: ToolCall,
        raise_on_error: bool,
    ) -> Result<ToolResult, ExecError> {
        let s = &self.services;
        let g = &run.generation;
        let generation_id = self.memo.generation_id(&g.id);
        let refuse = |r: ToolRefusal| Err(ExecError::Refused(r));

        // 1. Lookup through the generation and the scope's tool view.
        // Only a refusal needs the whole visible list.
        let extra = run.extra_tools.as_ref().and_then(|t| t.get(&call.name));
        let Some(reg) = extra.or_else(|| {
            g.tools
                .get(&call.name)
                .filter(|_| self.is_visible(run, &call.name))
        }) else {
            return refuse(ToolRefusal::UnknownTool {
                tool: call.name.clone(),
                available: self.visible_tools(run),
            });
        };

        // 2. before_tool_execute: bail refuses; transform may replace args.
        let mut call = call;
        let mut args = std::mem::take(&mut call.args);
        if g.hooks
            .for_event(HookEvent::BeforeToolExecute)
            .next()
            .is_some()
        {
            // The payload takes the arguments and gives them back; only a
            // transform can replace the payload (and perhaps drop them), so
            // only then is a copy of the originals kept.
            let transforms = g
                .hooks
                .for_event(HookEvent::BeforeToolExecute)
                .any(|h| h.mode == super::hooks::HookMode::Transform);
            let original = transforms.then(|| args.clone());
            let payload = self.memo.before_payload(
                !transforms,
                [
                    ("tool", &call.name),
                    ("owner", &reg.owner),
                    ("generation_id", &generation_id),
                    ("run_id", &run.run_id),
                ],
                args,
            );
            let out = g
                .hooks
                .dispatch(HookEvent::BeforeToolExecute, Value::Object(payload))
                .await
                .map_err(ExecError::Hook)?;
            self.hook_failures(&out.failures);
            if let Some(bail) = out.bailed {
                return refuse(ToolRefusal::HookBail {
                    tool: call.name.clone(),
                    hook: bail.hook,
                    owner: bail.owner,
                    reason: bail.reason,
                });
            }
            let returned = match out.payload {
                // Unchanged (no transform): take the arguments back and keep
                // the map for the next call.
                Value::Object(mut m) if !transforms => {
                    let a = m.get_mut("args").map(std::mem::take);
                    *locked(&self.memo.payload) = Some(m);
                    a
                }
                Value::Object(mut m) => m.remove("args"),
                _ => None,
            };
            args = returned.or(original).unwrap_or(Value::Null);
        }

        // 3. Arguments against the schema (after transforms, before policy).
        if let Some(schema) = reg.tool.args_schema() {
            let errors: Vec<String> = match &*g.args_schema(&call.name, schema) {
                Ok(compiled) => compiled
                    .violations(&args)
                    .iter()
                    .map(ToString::to_string)
                    .collect(),
                Err(e) => vec![format!("the tool's argument schema does not compile: {e}")],
            };
            if !errors.is_empty() {
                return refuse(ToolRefusal::InvalidArguments {
                    tool: call.name.clone(),
                    errors,
                });
            }
        }

        // 4. Policy for every expanded permission.
        let permissions = match reg.policy.required_permissions(&args) {
            // A path is judged where the program will land, not as written.
            Ok(p) => match &s.paths {
                Some(paths) => p.iter().map(|p| paths.resolve(p)).collect(),
                None => p,
            },
            Err(e) => {
                return refuse(ToolRefusal::PolicyDenied {
                    tool: call.name.clone(),
                    permission: reg.policy.permissions.join(", "),
                    reason: format!("the permission cannot be derived from the arguments: {e}"),
                });
            }
        };
        let mut approval = reg.policy.approval_required;
        // A tool no permission governs: a read-only one runs, another needs
        // approval (its decision is a signal too, as for any call). A
        // sub-agent is governed by its own run's boundary, call by call.
        if permissions.is_empty() {
            let needs = s.ungoverned == Ungoverned::NeedsApproval
                && !reg.policy.is_read_only()
                && extra.is_none();
            let reason = if extra.is_some() {
                "a sub-agent: each call of its own run crosses the boundary"
            } else if reg.policy.is_read_only() {
                "read-only: declares no permission"
            } else if needs {
                "ungoverned: declares no permission and is not read-only; every call needs approval"
            } else {
                "declares no permission"
            };
            self.policy_decision(run, &call.name, &reg.owner, NO_PERMISSION, true, reason)
                .await;
            approval |= needs;
        }
        // The scope's policy and secrets providers, looked up once per call
        // and only when needed (a permission to decide, a live call).
        let mut system: Option<ScopeSystem> = None;
        // The scope's own policy provider, else the default.
        let policy = if permissions.is_empty() {
            s.policy.as_ref()
        } else {
            system
                .get_or_insert_with(|| g.system(&run.scope))
                .policy
                .as_deref()
                .unwrap_or(s.policy.as_ref())
        };
        for permission in &permissions {
            let request = self
                .memo
                .request(&call.name, permission, &reg.owner, &generation_id);
            let decision = evaluate_or_deny(policy, &request);
            *locked(&self.memo.request) = Some(request);
            let permission_text = permission.to_string();
            self.policy_decision(
                run,
                &call.name,
                &reg.owner,
                &permission_text,
                decision.allowed,
                &decision.reason,
            )
            .await;
            if !decision.allowed {
                return refuse(ToolRefusal::PolicyDenied {
                    tool: call.name.clone(),
                    permission: permission_text,
                    reason: decision.reason,
                });
            }
            approval |= decision.approval_required;
        }

        // 5. Approval.
        if approval {
            let request = ApprovalRequest {
                tool: call.name.clone(),
                permissions: permissions.clone(),
                arguments_redacted: s.redactor.redact_json(&args),
            };
            // Waiting for a person counts against the run's wall clock:
            // a run whose deadline passes while it waits stops there.
            let asking = s.approvals.decide(&request);
            let decided = match run.budget.as_ref().and_then(BudgetGovernor::time_left) {
                Some(left) => tokio::time::timeout(left, asking).await.ok(),
                None => Some(asking.await),
            };
            let Some(decision) = decided else {
                if let Some(Err(exceeded)) = run.budget.as_ref().map(BudgetGovernor::check_deadline)
                {
                    return Err(self.exhausted(run, &call.name, &generation_id, exceeded));
                }
                return refuse(ToolRefusal::ApprovalDenied {
                    tool: call.name.clone(),
                    reason: "the run's time ran out while the call waited for approval".into(),
                });
            };
            if !decision.approved {
                return refuse(ToolRefusal::ApprovalDenied {
                    tool: call.name.clone(),
                    reason: decision.reason,
                });
            }
        }

        // 6. Budget and deadline: propagate, the run must stop.
        if let Some(budget) = &run.budget {
            let charged = budget
                .consume(BudgetDimension::ToolCalls, 1.0)
                .and_then(|()| budget.check_deadline().map_err(BudgetError::Exceeded));
            if let Err(e) = charged {
                if let Some(exceeded) = e.exceeded().cloned() {
                    return Err(self.exhausted(run, &call.name, &generation_id, exceeded));
                }
                return refuse(ToolRefusal::PolicyDenied {
                    tool: call.name.clone(),
                    permission: "budget".into(),
                    reason: e.to_string(),
                });
            }
        }

        // 7. Replay answers what the tool returned (after policy, approval
        // and budget); otherwise the span, the call under its timeout,
        // normalization. A sub-agent is never answered as a tool: its run
        // replays (its model and tool calls answered from the recording),
        // so what it spends is charged on this run's budget as it was —
        // answered whole, its tokens went uncharged and every later call
        // of a run under a `tokens` budget (whose `max_tokens` the tokens
        // left cap) missed its record. Its answer is still recorded, for
        // whoever reads the file.
        let lookup = match &s.replay {
            Some(r) if extra.is_none() => r.tool_lookup(&call.name, &args, run),
            _ => super::replay::ToolLookup::Live,
        };
        let (status, content, artifact, error, duration_seconds, replayed) = match lookup {
            super::replay::ToolLookup::Miss(message) => return Err(ExecError::Replay(message)),
            super::replay::ToolLookup::Hit(rec) => {
                (rec.status, rec.content, rec.artifact, rec.error, 0.0, true)
            }
            super::replay::ToolLookup::Live => {
                // The tool takes the arguments; a recording keeps a copy.
                let recorded_args = s.replay.as_ref().map(|_| args.clone());
                // The scope's own secrets provider, else the default.
                let here = system.get_or_insert_with(|| g.system(&run.scope));
                let secrets = here
                    .secrets
                    .take()
                    .unwrap_or_else(|| Arc::clone(&s.secrets));
                // What the call may do further on (an invoke inside it) is
                // judged by the same scope policy.
                let reach = super::tool::CallReach::new(
                    here.policy.clone().unwrap_or_else(|| Arc::clone(&s.policy)),
                    &call.name,
                    &reg.owner,
                    &generation_id,
                );
                let (status, content, artifact, error, duration_seconds) = match self
                    .call_live(
                        run,
                        reg,
                        &call,
                        args,
                        CallScope { secrets, reach },
                        &generation_id,
                    )
                    .await
                {
                    Ok(done) => done,
                    // A sub-agent spent its caller's budget: the caller's
                    // run stops, as if it had been refused the charge.
                    Err(exceeded) => {
                        return Err(self.exhausted(run, &call.name, &generation_id, exceeded));
                    }
                };
                // A call cut off by the run's deadline ends the run; one that
                // finished stands (its hooks and record run), and the next
                // model call's check ends the run.
                if status == ToolStatus::Timeout
                    && let Some(Err(exceeded)) =
                        run.budget.as_ref().map(BudgetGovernor::check_deadline)
                {
                    return Err(self.exhausted(run, &call.name, &generation_id, exceeded));
                }
                if let (Some(r), Some(args)) = (&s.replay, &recorded_args) {
                    r.tool_record(
                        &call.name,
                        args,
                        &super::replay::RecordedTool {
                            status,
                            content: content.clone(),
                            artifact: artifact.clone(),
                            error: error.clone(),
                        },
                        run,
                    );
                }
                (status, content, artifact, error, duration_seconds, false)
            }
        };
        let result = ToolResult {
            name: call.name,
            status,
            content,
            artifact,
            error,
            duration_seconds,
            call_id: call.call_id,
            generation_id,
            run_id: run.run_id.clone(),
            replayed,
        };

        // 8. after_tool_execute on success, tool_error otherwise.
        let event = if status == ToolStatus::Ok {
            HookEvent::AfterToolExecute
        } else {
            HookEvent::ToolError
        };
        if g.hooks.for_event(event).next().is_some() {
            let payload = if status == ToolStatus::Ok {
                json!({ "tool": result.name, "status": "ok", "duration_seconds": duration_seconds, "run_id": run.run_id })
            } else {
                json!({ "tool": result.name, "error": result.error, "run_id": run.run_id })
            };
            let out = g
                .hooks
                .dispatch(event, payload)
                .await
                .map_err(ExecError::Hook)?;
            self.hook_failures(&out.failures);
        }
        if raise_on_error && status != ToolStatus::Ok {
            return Err(ExecError::Failed(Box::new(result)));
        }
        Ok(result)
    }

    /// The tool under its timeout, inside a `tool.execute` span.
    async fn call_live(
        &self,
        run: &RunContext,
        reg: &super::tool::ToolRegistration,
        call: &ToolCall,
        args: Value,
        scope: CallScope,
        generation_id: &str,
    ) -> Result<(ToolStatus, Value, Option<Value>, Option<String>, f64), BudgetExceeded> {
        let CallScope { secrets, mut reach } = scope;
        let s = &self.services;
        let span_attrs = self.memo.span_start.get(&[
            ("generation_id", Val::Str(generation_id)),
            ("idempotent", Val::Bool(reg.policy.idempotent)),
            ("owner", Val::Str(&reg.owner)),
            ("registration_id", Val::Str(&reg.id)),
            ("replayed", Val::Bool(false)),
            ("run_id", Val::Str(&run.run_id)),
            ("tool", Val::Str(&call.name)),
        ]);
        let span = s.telemetry.span_start("tool.execute", &span_attrs).ok();
        drop(span_attrs);
        let cancel = Cancellation::new();
        let timeout = reg
            .policy
            .timeout_seconds
            // Checked when registered (at most a day); a value that is not
            // a duration never panics here, it leaves the default.
            .and_then(|t| Duration::try_from_secs_f64(t).ok())
            .or(s.default_timeout);
        // No call outlives the run's wall-clock budget by more than a grace
        // period, in which a sub-agent (bound by the same deadline) ends its
        // own run cleanly first.
        let left = run
            .budget
            .as_ref()
            .and_then(BudgetGovernor::time_left)
            .map(|l| l + DEADLINE_GRACE);
        let timeout = match (timeout, left) {
            (Some(t), Some(l)) => Some(t.min(l)),
            (t, l) => t.or(l),
        };
        let started = tokio::time::Instant::now();
        reach.budget.clone_from(&run.budget);
        reach.deadline = timeout.map(|t| started + t);
        let ctx = ToolCallContext {
            run_id: run.run_id.clone(),
            generation_id: generation_id.to_owned(),
            agent: run.agent.clone(),
            scope: run.scope.clone(),
            cancel: cancel.clone(),
            secrets: super::tool::ToolSecrets::new(secrets, s.redactor.clone()),
            reach: Some(reach),
        };
        let tool = Arc::clone(&reg.tool);
        let work = tool.call(args, &ctx);
        let outcome = match timeout {
            Some(t) => match tokio::time::timeout(t, work).await {
                Ok(r) => Some(r),
                Err(_) => {
                    cancel.cancel();
                    None
                }
            },
            None => Some(work.await),
        };
        let duration_seconds = started.elapsed().as_secs_f64();
        let caller_budget = match &outcome {
            Some(Err(e)) => e
                .downcast_ref::<super::agent::CallerBudgetExhausted>()
                .map(|c| c.exceeded.clone())
                .or_else(|| {
                    e.downcast_ref::<super::tool::RunBudgetExhausted>()
                        .map(|c| c.exceeded.clone())
                }),
            _ => None,
        };
        let (status, content, artifact, error) = match outcome {
            // What came back enters the conversation, hooks and recordings
            // only redacted, keys included (numbered, so none is lost).
            Some(Ok(out)) => (
                ToolStatus::Ok,
                s.redactor.redact_foreign(&out.content),
                out.artifact.map(|a| s.redactor.redact_foreign(&a)),
                None,
            ),
            Some(Err(e)) => (
                ToolStatus::Error,
                Value::Null,
                None,
                Some(
                    s.redactor
                        .redact(&format!("tool `{}` failed: {e}", call.name))
                        .into_owned(),
                ),
            ),
            None => (
                ToolStatus::Timeout,
                Value::Null,
                None,
                Some(format!(
                    "tool `{}` exceeded its {:.3}s deadline",
                    call.name,
                    timeout.map_or(0.0, |t| t.as_secs_f64())
                )),
            ),
        };
        if let Some(id) = span {
            let end = self
                .memo
                .span_end
                .get(&[("status", Val::Str(status.as_str()))]);
            let _ = s.telemetry.span_end(id, &end, error.as_deref());
        }
        match caller_budget {
            Some(exceeded) => Err(exceeded),
            None => Ok((status, content, artifact, error, duration_seconds)),
        }
    }

    async fn policy_decision(
        &self,
        run: &RunContext,
        tool: &str,
        owner: &str,
        permission: &str,
        allowed: bool,
        reason: &str,
    ) {
        let attrs = self.memo.decision.get(&[
            ("allowed", Val::Bool(allowed)),
            ("permission", Val::Str(permission)),
            ("reason", Val::Str(reason)),
            ("tool", Val::Str(tool)),
        ]);
        emit(self.services.telemetry.as_ref(), "policy.decision", &attrs);
        drop(attrs);
        let hooks = &run.generation.hooks;
        if hooks.for_event(HookEvent::PolicyDecision).next().is_some() {
            let payload = json!({
                "tool": tool, "owner": owner, "permission": permission, "allowed": allowed, "reason": reason,
                "generation_id": run.generation.id.to_string(), "run_id": run.run_id,
            });
            if let Ok(out) = hooks.dispatch(HookEvent::PolicyDecision, payload).await {
                self.hook_failures(&out.failures);
            }
        }
    }

    /// The `budget.exhausted` signal for `tool`, and the error that ends
    /// the run.
    fn exhausted(
        &self,
        run: &RunContext,
        tool: &str,
        generation_id: &str,
        exceeded: BudgetExceeded,
    ) -> ExecError {
        let attrs = attributes([
            ("tool", tool.to_owned()),
            ("dimension", exceeded.dimension.as_str().to_owned()),
            ("run_id", run.run_id.clone()),
            ("generation_id", generation_id.to_owned()),
        ]);
        emit(self.services.telemetry.as_ref(), "budget.exhausted", &attrs);
        ExecError::Budget(exceeded)
    }

    pub(crate) fn hook_failures(&self, failures: &[super::hooks::HookFailure]) {
        for f in failures {
            let attrs = attributes([
                ("event", f.event.as_str().to_owned()),
                ("plane", "data".to_owned()),
                ("hook", f.hook.clone()),
                ("owner", f.owner.clone()),
                ("error_type", "hook_error".to_owned()),
                (
                    "description",
                    self.services.redactor.redact(&f.error).into_owned(),
                ),
            ]);
            emit(self.services.telemetry.as_ref(), "hook.failure", &attrs);
        }
    }
}
