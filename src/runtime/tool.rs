//! Tools: the contract a model sees (name, description, argument schema)
//! and the call behind it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;

use super::scope::BoxError;
use crate::engine::policy::ToolPolicy;
use crate::engine::secret::{RedactingSecretProvider, SecretProvider};

/// A cancellation signal handed to a running tool.
#[derive(Clone, Debug, Default)]
pub struct Cancellation {
    flag: Arc<AtomicBool>,
    notify: Arc<tokio::sync::Notify>,
}

impl Cancellation {
    /// A signal that has not fired.
    pub fn new() -> Self {
        Self::default()
    }

    /// Fire it.
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    /// Whether it fired.
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// Wait until it fires.
    pub async fn cancelled(&self) {
        while !self.is_cancelled() {
            let notified = self.notify.notified();
            if self.is_cancelled() {
                break;
            }
            notified.await;
        }
    }
}

/// The secrets a tool call resolves: its scope's provider (or the
/// harness default), teaching the run's redactor every value it hands out.
///
/// Only lookups are offered: a tool cannot reach the provider behind it,
/// so no value leaves it without the redactor learning it first.
#[derive(Clone)]
pub struct ToolSecrets(RedactingSecretProvider<Arc<dyn SecretProvider>>);

impl std::fmt::Debug for ToolSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ToolSecrets(..)")
    }
}

impl ToolSecrets {
    /// Secrets from `provider`, every value taught to `redactor`.
    pub fn new(
        provider: Arc<dyn SecretProvider>,
        redactor: crate::engine::secret::Redactor,
    ) -> Self {
        Self(RedactingSecretProvider::new(provider, redactor))
    }

    /// Like [`SecretProvider::get`], also reporting what the redactor did
    /// (a value too short to redact is refused).
    ///
    /// # Errors
    ///
    /// The provider's error.
    pub fn get_learned(
        &self,
        name: &str,
    ) -> Result<
        (
            crate::engine::secret::SecretValue,
            crate::engine::secret::Learned,
        ),
        crate::engine::secret::SecretError,
    > {
        self.0.get_learned(name)
    }
}

impl SecretProvider for ToolSecrets {
    fn get(
        &self,
        name: &str,
    ) -> Result<crate::engine::secret::SecretValue, crate::engine::secret::SecretError> {
        self.0.get(name)
    }

    fn source(&self, name: &str) -> (String, Option<String>) {
        self.0.source(name)
    }
}

/// What a tool call may spend and do on behalf of its run when it reaches
/// further than its own code — a process plugin's tool calling another
/// plugin's capability (`capability/invoke`) or the model (`chat`): the
/// run's budget, the call's deadline, and the policy of the run's scope.
#[derive(Clone)]
pub struct CallReach {
    /// The run's budget, if it has one.
    pub budget: Option<crate::engine::budget::BudgetGovernor>,
    /// When the call is cut off, if it has a deadline.
    pub deadline: Option<tokio::time::Instant>,
    policy: Arc<dyn crate::engine::policy::PolicyEngine>,
    tool: String,
    owner: String,
    generation_id: String,
}

impl CallReach {
    /// The reach of a call of `tool` (registered by `owner`) under
    /// `policy`.
    pub fn new(
        policy: Arc<dyn crate::engine::policy::PolicyEngine>,
        tool: &str,
        owner: &str,
        generation_id: &str,
    ) -> Self {
        Self {
            budget: None,
            deadline: None,
            policy,
            tool: tool.to_owned(),
            owner: owner.to_owned(),
            generation_id: generation_id.to_owned(),
        }
    }

    /// What the scope's policy decides for `permission` (`name[:resource]`)
    /// asked on behalf of the call's tool through `via` (a capability
    /// method, `database.insert`). A permission that does not parse, or an
    /// engine that fails, is denied.
    pub fn decide(&self, permission: &str, via: &str) -> crate::engine::policy::PolicyDecision {
        decide_permission(
            self.policy.as_ref(),
            &self.tool,
            permission,
            &[
                ("owner", &self.owner),
                ("generation_id", &self.generation_id),
                ("via", via),
            ],
        )
    }

    /// The time left before the deadline (`None`: no deadline).
    pub fn time_left(&self) -> Option<std::time::Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(tokio::time::Instant::now()))
    }
}

/// What `policy` decides for `permission` (`name[:resource]`) asked on
/// behalf of `tool`, with `context` (owner, via, …) for engines that read
/// it. A permission that does not parse, or an engine that fails, is
/// denied.
pub fn decide_permission(
    policy: &dyn crate::engine::policy::PolicyEngine,
    tool: &str,
    permission: &str,
    context: &[(&str, &str)],
) -> crate::engine::policy::PolicyDecision {
    use crate::engine::policy::{Permission, PolicyDecision, PolicyRequest, evaluate_or_deny};
    match Permission::parse(permission) {
        Ok(p) => evaluate_or_deny(
            policy,
            &context
                .iter()
                .fold(PolicyRequest::for_tool(tool, p), |r, (k, v)| {
                    r.with_context(*k, *v)
                }),
        ),
        Err(e) => PolicyDecision::deny(format!("`{permission}` is not a permission: {e}")),
    }
}

impl std::fmt::Debug for CallReach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallReach")
            .field("tool", &self.tool)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

/// A call that reached further (a `chat` inside a tool call) was refused
/// a charge by its run's budget: the run stops as out of budget, as when
/// the loop itself is refused the charge.
#[derive(Debug, thiserror::Error)]
#[error("tool `{tool}` ran out of its run's budget: {exceeded}")]
pub struct RunBudgetExhausted {
    /// The tool whose call spent it.
    pub tool: String,
    /// The refused charge.
    pub exceeded: crate::engine::budget::BudgetExceeded,
}

/// What a tool receives besides its arguments.
#[derive(Clone)]
pub struct ToolCallContext {
    /// The run.
    pub run_id: String,
    /// The generation the run leased.
    pub generation_id: String,
    /// The agent, for agent runs.
    pub agent: Option<String>,
    /// The consumer's scope.
    pub scope: String,
    /// Fires when the call is cancelled (timeout, shutdown).
    pub cancel: Cancellation,
    /// The secrets of the run's scope: `ctx.secrets.get("db.password")`
    /// (a scope whose secrets provider cannot be resolved fails every
    /// lookup).
    pub secrets: ToolSecrets,
    /// What the call may spend and do beyond its own code, inside a run.
    pub reach: Option<CallReach>,
}

impl ToolCallContext {
    /// A context outside any run (direct calls, tests, benchmarks): no
    /// agent, no secrets, a cancellation that has not fired.
    pub fn detached(run_id: &str, generation_id: &str, scope: &str) -> Self {
        Self {
            run_id: run_id.to_owned(),
            generation_id: generation_id.to_owned(),
            agent: None,
            scope: scope.to_owned(),
            cancel: Cancellation::new(),
            secrets: ToolSecrets::new(
                Arc::new(crate::engine::secret::StaticSecretProvider::new()),
                crate::engine::secret::Redactor::new(),
            ),
            reach: None,
        }
    }
}

impl std::fmt::Debug for ToolCallContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCallContext")
            .field("run_id", &self.run_id)
            .field("generation_id", &self.generation_id)
            .field("agent", &self.agent)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// What a tool returns.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolOutput {
    /// The content the model reads.
    pub content: Value,
    /// Structured data kept beside the content.
    pub artifact: Option<Value>,
}

impl ToolOutput {
    /// Content only.
    pub fn content(content: impl Into<Value>) -> Self {
        Self {
            content: content.into(),
            artifact: None,
        }
    }
}

/// A callable tool.
#[async_trait::async_trait]
pub trait Tool: Send + Sync {
    /// Name the model uses.
    fn name(&self) -> &str;
    /// Description the model reads.
    fn description(&self) -> &str;
    /// JSON Schema of the arguments.
    fn args_schema(&self) -> Option<&Value> {
        None
    }
    /// Run the tool.
    async fn call(&self, args: Value, ctx: &ToolCallContext) -> Result<ToolOutput, BoxError>;
}

/// A registered tool with its policy.
#[derive(Clone)]
pub struct ToolRegistration {
    /// `tool_<entry>_<n>`.
    pub id: String,
    /// Owning entry.
    pub owner: String,
    /// The tool.
    pub tool: Arc<dyn Tool>,
    /// Its policy.
    pub policy: ToolPolicy,
}

impl std::fmt::Debug for ToolRegistration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistration")
            .field("id", &self.id)
            .field("owner", &self.owner)
            .field("tool", &self.tool.name())
            .finish()
    }
}

/// The failure a declared tool without an implementation returns.
#[derive(Debug, thiserror::Error)]
#[error("tool `{tool}` is declared but not implemented (tool_not_implemented)")]
pub struct ToolNotImplemented {
    /// Tool name.
    pub tool: String,
}

/// A tool declared in TOML: a contract, answering with its static `result`
/// if it has one and a normalized `tool_not_implemented` failure otherwise.
#[derive(Debug, Clone)]
pub struct DeclaredTool {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Argument schema.
    pub args_schema: Option<Value>,
    /// Static result, if declared.
    pub result: Option<Value>,
}

#[async_trait::async_trait]
impl Tool for DeclaredTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn args_schema(&self) -> Option<&Value> {
        self.args_schema.as_ref()
    }
    async fn call(&self, _args: Value, _ctx: &ToolCallContext) -> Result<ToolOutput, BoxError> {
        match &self.result {
            Some(result) => Ok(ToolOutput::content(result.clone())),
            None => Err(Box::new(ToolNotImplemented {
                tool: self.name.clone(),
            })),
        }
    }
}

#[cfg(test)]
mod tool_secrets_tests {
    use super::*;
    use crate::engine::secret::{Redactor, StaticSecretProvider};

    #[test]
    fn a_lookup_teaches_the_runs_redactor_before_the_value_is_returned() {
        let redactor = Redactor::new();
        let secrets = ToolSecrets::new(
            Arc::new(StaticSecretProvider::new().with("db.password", "hunter2-canary")),
            redactor.clone(),
        );
        assert!(!redactor.contains_secret("hunter2-canary"));
        let value = secrets.get("db.password").expect("present");
        assert_eq!(value.reveal(), "hunter2-canary");
        assert!(redactor.contains_secret("echo hunter2-canary"));
        assert_eq!(format!("{secrets:?}"), "ToolSecrets(..)");
        assert!(secrets.get("missing").is_err());
    }
}
