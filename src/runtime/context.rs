//! `PluginContext`: the only way a plugin creates effects.
//!
//! The context owns everything the plugin registers (capabilities, tools,
//! hooks), every task it starts and every cleanup it records, so the harness
//! can revert all of it on unload. `require` and `get` read the providers
//! resolved for *this* composition, never "whatever is current".

use crate::engine::secret::{SecretError, SecretProvider, SecretValue};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::hooks::{ErrorPolicy, HookEvent, HookHandler, HookMode, HookRegistration};
use super::route::{RouteHandler, RouteRegistration};
use super::scope::{BoxError, CleanupFn, OwnershipScope, ScopeClosed};
use super::tool::{Tool, ToolRegistration};
use super::value::CapabilityValue;
use crate::engine::model::{CapabilityName, ConfigValue, Manifest};
use crate::engine::policy::ToolPolicy;
use crate::engine::version::Version;

/// A capability a plugin registered during setup.
#[derive(Clone, Debug)]
pub struct CapabilityRegistration {
    /// Capability name.
    pub capability: CapabilityName,
    /// Registered version (its major is the contract generation).
    pub version: Version,
    /// The value consumers receive.
    pub value: CapabilityValue,
}

/// A provider bound to one of this plugin's requirements.
#[derive(Clone, Debug)]
pub struct Binding {
    /// Provider entry id.
    pub provider: String,
    /// The exact contract version bound.
    pub version: Version,
    /// The provider's value.
    pub value: CapabilityValue,
}

/// Why a context operation was refused.
#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    /// Setup is over (or the plugin unloaded): no new registrations.
    #[error("`{entry}` can no longer register effects: {reason}")]
    Sealed {
        /// Entry id.
        entry: String,
        /// Why.
        reason: String,
    },
    /// A version that does not parse.
    #[error("`{entry}` registered `{capability}` with a bad version: {message}")]
    BadVersion {
        /// Entry id.
        entry: String,
        /// Capability.
        capability: String,
        /// Parse error.
        message: String,
    },
    /// A capability name that is not valid.
    #[error("`{entry}` registered an invalid capability name `{capability}`")]
    BadCapability {
        /// Entry id.
        entry: String,
        /// The name.
        capability: String,
    },
    /// `require` of a capability nothing was bound to.
    #[error(
        "`{entry}` requires `{capability}`, but no provider is bound to it in this composition"
    )]
    NotBound {
        /// Entry id.
        entry: String,
        /// Capability.
        capability: String,
    },
    /// The bound value is not of the requested type.
    #[error(
        "`{entry}` read `{capability}` as `{expected}`, but the provider `{provider}` gave another type"
    )]
    WrongType {
        /// Entry id.
        entry: String,
        /// Capability.
        capability: String,
        /// Provider entry.
        provider: String,
        /// Requested Rust type.
        expected: &'static str,
    },
    /// A route that cannot be served.
    #[error("route `{method} {path}` of `{entry}`: {message}")]
    BadRoute {
        /// Entry id.
        entry: String,
        /// Method.
        method: String,
        /// Path.
        path: String,
        /// Why.
        message: String,
    },
    /// A tool policy that does not validate.
    #[error("tool `{tool}` of `{entry}` has an invalid policy: {message}")]
    BadPolicy {
        /// Entry id.
        entry: String,
        /// Tool name.
        tool: String,
        /// Validation error.
        message: String,
    },
}

/// Everything the plugin registered, in registration order.
#[derive(Clone, Debug, Default)]
pub struct Registrations {
    /// Capabilities.
    pub capabilities: Vec<CapabilityRegistration>,
    /// Tools.
    pub tools: Vec<ToolRegistration>,
    /// Hooks.
    pub hooks: Vec<HookRegistration>,
    /// HTTP routes (`chassis serve` answers them under `/plugins/{entry}`).
    pub routes: Vec<RouteRegistration>,
}

struct State {
    /// Shared once sealed, so generations and the control plane read it
    /// without copying; writes during setup go through `Arc::make_mut`.
    registrations: Arc<Registrations>,
    scope: OwnershipScope,
    sealed: Option<String>,
}

struct Inner {
    entry_id: String,
    instance_id: String,
    scope_path: String,
    manifest: Arc<Manifest>,
    config: Arc<ConfigValue>,
    bindings: BTreeMap<CapabilityName, Binding>,
    secrets: Arc<dyn SecretProvider>,
    state: Mutex<State>,
    hook_sequence: Arc<AtomicU64>,
    /// Health the plugin reported after setup (0: none).
    reported_health: Arc<AtomicU8>,
    tool_sets: super::tool_set::ToolSetReporter,
    restarts: RestartCounts,
    outside_run_policy: Arc<dyn crate::engine::policy::PolicyEngine>,
    setup_cancelled: super::tool::Cancellation,
}

/// A handle a plugin keeps to report its health while it runs (a
/// supervised server that crashed, recovered, or drifted). The harness
/// shows the last report for an active instance instead of the health its
/// lifecycle gave it, and counts the restarts it reports by entry.
#[derive(Clone, Debug)]
pub struct HealthReporter {
    health: Arc<AtomicU8>,
    entry_id: String,
    restarts: RestartCounts,
}

/// How many times each entry's plugin restarted what it supervises (a
/// crashed server started again), since the harness started: a counter
/// that only grows, whatever generation the instance belonged to.
#[derive(Clone, Debug, Default)]
pub struct RestartCounts(Arc<Mutex<BTreeMap<String, u64>>>);

impl RestartCounts {
    /// The counts by entry id.
    pub fn snapshot(&self) -> BTreeMap<String, u64> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn add(&self, entry_id: &str) {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(entry_id.to_owned())
            .or_default() += 1;
    }
}

impl HealthReporter {
    /// Report that what the plugin supervises was started again after it
    /// stopped (counted for `/metrics`).
    pub fn restarted(&self) {
        self.restarts.add(&self.entry_id);
    }

    /// Report that what the plugin supervises is down and will not come
    /// back by itself (its restarts are spent): unhealthy, and the next
    /// reconcile mounts a fresh instance instead of keeping this one. A
    /// passing `Unhealthy` (a crash about to be restarted) is `report`.
    pub fn down(&self) {
        self.health.store(DOWN, Ordering::Relaxed);
    }

    /// Report `health`.
    pub fn report(&self, health: super::lifecycle::Health) {
        use super::lifecycle::Health;
        let code = match health {
            Health::Unknown => 1,
            Health::Healthy => 2,
            Health::Degraded => 3,
            Health::Unhealthy => 4,
        };
        self.health.store(code, Ordering::Relaxed);
    }
}

/// The health code of a plugin down for good (beside 1–4, the `Health`s).
const DOWN: u8 = 5;

/// The context handed to `setup` (a cheap handle; clones share state).
#[derive(Clone)]
pub struct PluginContext {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for PluginContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginContext")
            .field("entry", &self.inner.entry_id)
            .field("instance", &self.inner.instance_id)
            .finish()
    }
}

impl std::fmt::Debug for ContextSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContextSpec")
            .field("entry_id", &self.entry_id)
            .field("instance_id", &self.instance_id)
            .finish_non_exhaustive()
    }
}

/// Identity and inputs of the instance a context belongs to.
#[derive(Clone)]
pub struct ContextSpec {
    /// Entry id.
    pub entry_id: String,
    /// Instance id.
    pub instance_id: String,
    /// Scope path of the entry.
    pub scope_path: String,
    /// Manifest.
    pub manifest: Arc<Manifest>,
    /// Configuration (secret references unresolved).
    pub config: Arc<ConfigValue>,
    /// Providers bound to the entry's requirements.
    pub bindings: BTreeMap<CapabilityName, Binding>,
    /// Where `ctx.secret(name)` resolves (a redacting provider: every value
    /// resolved is learned by the harness's redactor).
    pub secrets: Arc<dyn SecretProvider>,
    /// Where the plugin reports that its tools changed under its generation.
    pub tool_sets: super::tool_set::ToolSetSink,
    /// Where its restarts are counted.
    pub restarts: RestartCounts,
    /// What judges the permissions of what it does outside any run (a
    /// capability call from its setup, a background task, an HTTP route):
    /// see [`PluginContext::outside_run_policy`].
    pub outside_run_policy: Arc<dyn crate::engine::policy::PolicyEngine>,
    /// Fires when the harness unmounts what it is setting up (see
    /// [`PluginContext::setup_cancelled`]).
    pub setup_cancelled: super::tool::Cancellation,
}

impl PluginContext {
    /// A context for one mount. `hook_sequence` orders hooks across the
    /// harness; `task_timeout` bounds task shutdown.
    pub fn new(
        spec: ContextSpec,
        hook_sequence: Arc<AtomicU64>,
        task_timeout: std::time::Duration,
    ) -> Self {
        let scope = OwnershipScope::new(format!("plugin:{}", spec.entry_id), task_timeout);
        let tool_sets = spec.tool_sets.reporter(&spec.entry_id, &spec.instance_id);
        Self {
            inner: Arc::new(Inner {
                entry_id: spec.entry_id,
                instance_id: spec.instance_id,
                scope_path: spec.scope_path,
                manifest: spec.manifest,
                config: spec.config,
                bindings: spec.bindings,
                secrets: spec.secrets,
                state: Mutex::new(State {
                    registrations: Arc::default(),
                    scope,
                    sealed: None,
                }),
                hook_sequence,
                reported_health: Arc::new(AtomicU8::new(0)),
                outside_run_policy: spec.outside_run_policy,
                tool_sets,
                restarts: spec.restarts,
                setup_cancelled: spec.setup_cancelled,
            }),
        }
    }

    /// Fires when the harness unmounts this plugin while its setup may
    /// still run — an interrupt, a shutdown — so a setup that waits on
    /// something slow (a process still starting) stops it and fails
    /// instead of keeping the unmount waiting (see
    /// [`super::Plugin::heeds_setup_cancellation`]). Once fired it stays
    /// fired.
    pub fn setup_cancelled(&self) -> &super::tool::Cancellation {
        &self.inner.setup_cancelled
    }

    /// A handle to report that the tools this instance could offer differ
    /// from those its generation published (see [`super::tool_set`]).
    pub fn tool_set_reporter(&self) -> super::tool_set::ToolSetReporter {
        self.inner.tool_sets.clone()
    }

    /// A handle to report this instance's health from its tools and tasks.
    pub fn health_reporter(&self) -> HealthReporter {
        HealthReporter {
            health: Arc::clone(&self.inner.reported_health),
            entry_id: self.inner.entry_id.clone(),
            restarts: self.inner.restarts.clone(),
        }
    }

    /// The last health reported through [`Self::health_reporter`].
    pub fn reported_health(&self) -> Option<super::lifecycle::Health> {
        use super::lifecycle::Health;
        match self.inner.reported_health.load(Ordering::Relaxed) {
            1 => Some(Health::Unknown),
            2 => Some(Health::Healthy),
            3 => Some(Health::Degraded),
            4 | DOWN => Some(Health::Unhealthy),
            _ => None,
        }
    }

    /// Whether the plugin reported itself down for good
    /// ([`HealthReporter::down`]).
    pub fn reported_down(&self) -> bool {
        self.inner.reported_health.load(Ordering::Relaxed) == DOWN
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means a plugin panicked mid-registration; the
        // data is still a valid list of registrations.
        self.inner
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn open_state(&self) -> Result<MutexGuard<'_, State>, ContextError> {
        let state = self.state();
        if let Some(reason) = &state.sealed {
            return Err(ContextError::Sealed {
                entry: self.inner.entry_id.clone(),
                reason: reason.clone(),
            });
        }
        Ok(state)
    }

    /// The policy judging what the plugin does outside any run (inside one,
    /// the run's scope policy judges): the composition's `[policy]`, or
    /// failing closed in a scope a `policy` provider governs (it judges
    /// only inside runs).
    pub fn outside_run_policy(&self) -> Arc<dyn crate::engine::policy::PolicyEngine> {
        Arc::clone(&self.inner.outside_run_policy)
    }

    /// Entry id.
    pub fn entry_id(&self) -> &str {
        &self.inner.entry_id
    }

    /// Instance id.
    pub fn instance_id(&self) -> &str {
        &self.inner.instance_id
    }

    /// The entry's scope path.
    pub fn scope_path(&self) -> &str {
        &self.inner.scope_path
    }

    /// The plugin's manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.inner.manifest
    }

    /// The entry's configuration.
    pub fn config(&self) -> &ConfigValue {
        &self.inner.config
    }

    /// Resolve the secret `name` (e.g. the `{ secret = "NAME" }` of the
    /// configuration). The harness's redactor learns the value, so it never
    /// appears in any output; it leaves the [`SecretValue`] only through
    /// `reveal()`.
    pub fn secret(&self, name: &str) -> Result<SecretValue, SecretError> {
        self.inner.secrets.get(name)
    }

    /// Capability registration.
    pub fn capabilities(&self) -> Capabilities<'_> {
        Capabilities { ctx: self }
    }

    /// Tool registration.
    pub fn tools(&self) -> Tools<'_> {
        Tools { ctx: self }
    }

    /// Hook registration.
    pub fn hooks(&self) -> Hooks<'_> {
        Hooks { ctx: self }
    }

    /// HTTP route registration.
    pub fn routes(&self) -> Routes<'_> {
        Routes { ctx: self }
    }

    /// The provider value bound to `capability`, as `T`.
    pub fn require<T: std::any::Any + Send + Sync>(
        &self,
        capability: &str,
    ) -> Result<Arc<T>, ContextError> {
        let binding = self
            .binding(capability)
            .ok_or_else(|| ContextError::NotBound {
                entry: self.inner.entry_id.clone(),
                capability: capability.to_owned(),
            })?;
        binding
            .value
            .downcast::<T>()
            .ok_or_else(|| ContextError::WrongType {
                entry: self.inner.entry_id.clone(),
                capability: capability.to_owned(),
                provider: binding.provider.clone(),
                expected: std::any::type_name::<T>(),
            })
    }

    /// Like `require`, but `None` when nothing is bound (optional requirements).
    pub fn get<T: std::any::Any + Send + Sync>(&self, capability: &str) -> Option<Arc<T>> {
        self.binding(capability)
            .and_then(|b| b.value.downcast::<T>())
    }

    /// The binding of `capability`, if any.
    pub fn binding(&self, capability: &str) -> Option<&Binding> {
        self.inner
            .bindings
            .iter()
            .find(|(k, _)| k.as_str() == capability)
            .map(|(_, b)| b)
    }

    /// Start a task owned by the plugin: cancelled and awaited on unload;
    /// an error it returns is reported.
    pub fn create_task<F>(&self, name: &str, task: F) -> Result<String, ContextError>
    where
        F: Future<Output = Result<(), BoxError>> + Send + 'static,
    {
        let mut state = self.open_state()?;
        state
            .scope
            .spawn(Some(name.to_owned()), task)
            .map_err(|e| self.closed(e))
    }

    /// Record the inverse of an effect that has no registry (run LIFO on unload).
    pub fn cleanup(&self, description: &str, f: CleanupFn) -> Result<(), ContextError> {
        let mut state = self.open_state()?;
        state
            .scope
            .cleanup(description, f)
            .map_err(|e| self.closed(e))
    }

    fn closed(&self, e: ScopeClosed) -> ContextError {
        ContextError::Sealed {
            entry: self.inner.entry_id.clone(),
            reason: e.to_string(),
        }
    }

    /// Stop accepting registrations (after setup, or on unload).
    pub fn seal(&self, reason: &str) {
        let mut state = self.state();
        if state.sealed.is_none() {
            state.sealed = Some(reason.to_owned());
        }
    }

    /// What was registered so far (shared, not copied).
    pub fn registrations(&self) -> Arc<Registrations> {
        Arc::clone(&self.state().registrations)
    }

    /// Live effects in the ownership scope (tasks and cleanups).
    pub fn live_effects(&self) -> usize {
        self.state().scope.live_effects()
    }

    /// Seal and close the ownership scope: cancel tasks, unwind cleanups
    /// LIFO, drop registrations. Every failure is reported.
    pub async fn close(&self) -> Result<(), super::scope::EffectCleanupError> {
        let mut scope = {
            let mut state = self.state();
            state.sealed.get_or_insert_with(|| "unloaded".to_owned());
            state.registrations = Arc::default();
            std::mem::replace(
                &mut state.scope,
                OwnershipScope::new("closed", std::time::Duration::ZERO),
            )
        };
        let result = scope.close().await;
        let mut state = self.state();
        let mut placeholder = scope;
        std::mem::swap(&mut state.scope, &mut placeholder);
        result
    }
}

/// `ctx.capabilities()`.
pub struct Capabilities<'a> {
    ctx: &'a PluginContext,
}

impl Capabilities<'_> {
    /// Provide `capability` at `version` with `value`.
    pub fn provide(
        &self,
        capability: &str,
        value: CapabilityValue,
        version: &str,
    ) -> Result<(), ContextError> {
        let entry = || self.ctx.inner.entry_id.clone();
        let name = CapabilityName::new(capability).map_err(|_| ContextError::BadCapability {
            entry: entry(),
            capability: capability.to_owned(),
        })?;
        let version = Version::parse(version).map_err(|e| ContextError::BadVersion {
            entry: entry(),
            capability: capability.to_owned(),
            message: e.message,
        })?;
        let mut state = self.ctx.open_state()?;
        Arc::make_mut(&mut state.registrations)
            .capabilities
            .push(CapabilityRegistration {
                capability: name,
                version,
                value,
            });
        Ok(())
    }
}

/// `ctx.tools()`.
pub struct Tools<'a> {
    ctx: &'a PluginContext,
}

impl Tools<'_> {
    /// Register `tool` under `policy`; returns the registration id.
    pub fn register(
        &self,
        tool: Arc<dyn Tool>,
        policy: ToolPolicy,
    ) -> Result<String, ContextError> {
        let entry = self.ctx.inner.entry_id.clone();
        policy.validate().map_err(|e| ContextError::BadPolicy {
            entry: entry.clone(),
            tool: tool.name().to_owned(),
            message: e.to_string(),
        })?;
        let mut state = self.ctx.open_state()?;
        let id = format!("tool_{entry}_{}", state.registrations.tools.len() + 1);
        Arc::make_mut(&mut state.registrations)
            .tools
            .push(ToolRegistration {
                id: id.clone(),
                owner: entry,
                tool,
                policy,
            });
        Ok(id)
    }
}

/// `ctx.hooks()`.
pub struct Hooks<'a> {
    ctx: &'a PluginContext,
}

impl Hooks<'_> {
    /// Register `handler` for `event`.
    pub fn register(
        &self,
        event: HookEvent,
        handler: Arc<dyn HookHandler>,
        mode: HookMode,
        priority: i32,
    ) -> Result<String, ContextError> {
        self.register_with(event, handler, mode, priority, ErrorPolicy::Record)
    }

    /// Register with an explicit error policy.
    pub fn register_with(
        &self,
        event: HookEvent,
        handler: Arc<dyn HookHandler>,
        mode: HookMode,
        priority: i32,
        error_policy: ErrorPolicy,
    ) -> Result<String, ContextError> {
        let entry = self.ctx.inner.entry_id.clone();
        let mut state = self.ctx.open_state()?;
        let id = format!("hook_{entry}_{}", state.registrations.hooks.len() + 1);
        let sequence = self.ctx.inner.hook_sequence.fetch_add(1, Ordering::SeqCst);
        Arc::make_mut(&mut state.registrations)
            .hooks
            .push(HookRegistration {
                id: id.clone(),
                owner: entry,
                event,
                mode,
                priority,
                sequence,
                error_policy,
                handler,
            });
        Ok(id)
    }
}

/// `ctx.routes()`.
pub struct Routes<'a> {
    ctx: &'a PluginContext,
}

impl Routes<'_> {
    /// Register `handler` for `method` requests to `path` (under
    /// `/plugins/{entry}`): exact, or a prefix ending in `/*`.
    pub fn register(
        &self,
        method: &str,
        path: &str,
        handler: Arc<dyn RouteHandler>,
    ) -> Result<(), ContextError> {
        let entry = self.ctx.inner.entry_id.clone();
        let bad = |message: String| ContextError::BadRoute {
            entry: entry.clone(),
            method: method.to_owned(),
            path: path.to_owned(),
            message,
        };
        super::route::check(method, path).map_err(bad)?;
        let mut state = self.ctx.open_state()?;
        if state
            .registrations
            .routes
            .iter()
            .any(|r| r.method == method && r.path == path)
        {
            return Err(bad("registered twice".to_owned()));
        }
        Arc::make_mut(&mut state.registrations)
            .routes
            .push(RouteRegistration {
                owner: entry.clone(),
                method: method.to_owned(),
                path: path.to_owned(),
                handler,
            });
        Ok(())
    }
}
