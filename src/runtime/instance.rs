//! A mounted plugin: one entry's implementation, its context and its state.
//!
//! A panic in `setup` (or `teardown`) is caught and contained as a setup
//! (teardown) failure instead of taking the harness down. A failed setup rolls
//! back its own effects and leaves a retryable `failed` instance.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use super::context::{ContextSpec, PluginContext, Registrations};
use super::lifecycle::{Health, PluginState, StateMachine};
use super::plugin::Plugin;
use super::scope::{CleanupFailure, EffectCleanupError};

/// Why a setup dropped by the harness failed (see
/// [`PluginContext::setup_cancelled`]).
pub const SETUP_CANCELLED: &str =
    "its setup was cancelled: chassis is unmounting it (an interrupt, a shutdown)";

/// What a plugin's `setup` returns when what it registers breaks a
/// promise it cannot keep by trying again (a process plugin whose
/// registrations differ from its TOML manifest or from `chassis.lock`):
/// the reconcile reports it as a [`super::PluginContractError`], not as a
/// setup failure.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{promise}: {}", actual.join("; "))]
pub struct RegistrationBreach {
    /// The broken promise, as a phrase after the plugin's name
    /// (`registers something else than chassis.lock pins`).
    pub promise: String,
    /// What was promised (`chassis.lock`, `the TOML manifest`).
    pub promised: String,
    /// The differences, one per line.
    pub actual: Vec<String>,
}

/// A plugin's setup failed; its effects were rolled back.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("plugin `{plugin}` (entry `{entry_id}`) failed to set up: {error}{}", if cleanup_failures.is_empty() { String::new() } else { format!(" ({} cleanup failure(s) while rolling back)", cleanup_failures.len()) })]
pub struct PluginSetupError {
    /// Manifest name.
    pub plugin: String,
    /// Entry id.
    pub entry_id: String,
    /// Instance id.
    pub instance_id: String,
    /// The error, rendered.
    pub error: String,
    /// Failures met while rolling back.
    pub cleanup_failures: Vec<CleanupFailure>,
    /// Set when setup refused a broken promise ([`RegistrationBreach`]).
    pub breach: Option<RegistrationBreach>,
}

/// A plugin's `setup` or `teardown` panicked.
struct Panicked;

/// Run a plugin's future here, a panic in it caught as [`Panicked`]: a
/// panicking plugin fails its own setup or teardown, never the harness.
/// (Run in place rather than as a task of its own: a publish of 100,000
/// entries would otherwise start 200,000 tasks.)
async fn contained<T>(future: impl std::future::Future<Output = T>) -> Result<T, Panicked> {
    use futures_util::FutureExt as _;
    std::panic::AssertUnwindSafe(future)
        .catch_unwind()
        .await
        .map_err(|_| Panicked)
}

/// One mounted (or mountable) plugin.
pub struct PluginInstance {
    /// Entry id.
    pub entry_id: Arc<str>,
    /// Instance id.
    pub instance_id: Arc<str>,
    plugin: Arc<dyn Plugin>,
    machine: StateMachine,
    health: Health,
    context: Option<PluginContext>,
    last_error: Option<String>,
}

impl std::fmt::Debug for PluginInstance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginInstance")
            .field("entry_id", &self.entry_id)
            .field("instance_id", &self.instance_id)
            .field("state", &self.machine.state())
            .finish()
    }
}

impl PluginInstance {
    /// A pending instance of `plugin` for `entry_id`.
    pub fn new(entry_id: Arc<str>, instance_id: Arc<str>, plugin: Arc<dyn Plugin>) -> Self {
        Self {
            entry_id,
            instance_id,
            plugin,
            machine: StateMachine::default(),
            health: Health::Unknown,
            context: None,
            last_error: None,
        }
    }

    /// The implementation's manifest.
    pub fn manifest(&self) -> &crate::engine::model::Manifest {
        self.plugin.manifest()
    }

    /// The implementation's manifest name.
    pub fn plugin_name(&self) -> &str {
        &self.plugin.manifest().name
    }

    /// Current state.
    pub fn state(&self) -> PluginState {
        self.machine.state()
    }

    /// Current health: what an active plugin last reported, else what its
    /// lifecycle gave it.
    pub fn health(&self) -> Health {
        match (&self.context, self.machine.state()) {
            (Some(ctx), PluginState::Active) => ctx.reported_health().unwrap_or(self.health),
            _ => self.health,
        }
    }

    /// Whether the active plugin reported itself down for good: the next
    /// reconcile mounts a fresh instance instead of keeping it.
    pub fn down(&self) -> bool {
        matches!(
            (&self.context, self.machine.state()),
            (Some(ctx), PluginState::Active) if ctx.reported_down()
        )
    }

    /// The last setup or teardown error.
    pub fn last_error(&self) -> Option<&str> {
        self.last_error.as_deref()
    }

    /// What the instance registered (empty unless active).
    pub fn registrations(&self) -> std::sync::Arc<Registrations> {
        self.context
            .as_ref()
            .map(PluginContext::registrations)
            .unwrap_or_default()
    }

    /// The live context, while active.
    pub fn context(&self) -> Option<&PluginContext> {
        self.context.as_ref()
    }

    /// Run setup (cancelled when the harness unmounts what it is setting
    /// up, see [`PluginContext::setup_cancelled`]). On failure every effect
    /// is rolled back and the instance is
    /// left `failed` (and may be mounted again).
    pub async fn mount(
        &mut self,
        spec: ContextSpec,
        hook_sequence: Arc<AtomicU64>,
        task_timeout: Duration,
    ) -> Result<(), PluginSetupError> {
        // The context takes the spec; only the plugin's name is kept for
        // errors (cloning the whole spec — configuration, bindings — per
        // mount showed in a publish of 10,000 entries).
        let plugin = spec.manifest.name.clone();
        let fail = |error: String, cleanup_failures, breach| PluginSetupError {
            plugin: plugin.clone(),
            entry_id: self.entry_id.to_string(),
            instance_id: self.instance_id.to_string(),
            error,
            cleanup_failures,
            breach,
        };
        if let Err(e) = self.machine.transition(PluginState::Loading) {
            return Err(fail(e.to_string(), Vec::new(), None));
        }
        let ctx = PluginContext::new(spec, hook_sequence, task_timeout);
        let mut breach = None;
        // Unmounted while it sets up (an interrupt, a shutdown): a plugin
        // that heeds the cancellation ends its setup itself; any other
        // setup is dropped here, and what it registered rolled back below.
        let heeds = self.plugin.heeds_setup_cancellation();
        let cancelled = ctx.setup_cancelled().clone();
        let setup = contained(self.plugin.setup(ctx.clone()));
        let error = tokio::select! {
            r = setup => match r {
                Ok(Ok(())) => None,
                Ok(Err(e)) => {
                    breach = e.downcast_ref::<RegistrationBreach>().cloned();
                    Some(e.to_string())
                }
                Err(Panicked) => Some("setup panicked".to_owned()),
            },
            () = cancelled.cancelled(), if !heeds => Some(SETUP_CANCELLED.to_owned()),
        };
        match error {
            None => {
                ctx.seal("setup has finished");
                self.context = Some(ctx);
                self.health = Health::Healthy;
                self.last_error = None;
                let _ = self.machine.transition(PluginState::Active);
                Ok(())
            }
            Some(error) => {
                let cleanup = ctx
                    .close()
                    .await
                    .err()
                    .map(|e| e.failures)
                    .unwrap_or_default();
                let _ = self.machine.transition(PluginState::Failed);
                self.health = Health::Unhealthy;
                self.last_error = Some(error.clone());
                Err(fail(error, cleanup, breach))
            }
        }
    }

    /// Tear down and dispose: `teardown`, then the LIFO unwind. Failures are
    /// aggregated, never stop the unwind, and mark the instance unhealthy.
    pub async fn unmount(&mut self) -> Result<(), EffectCleanupError> {
        let scope = format!("plugin:{}", self.entry_id);
        let mut failures = Vec::new();
        if self.machine.state() == PluginState::Active {
            let _ = self.machine.transition(PluginState::Unloading);
            if let Some(ctx) = &self.context {
                let error = match contained(self.plugin.teardown(ctx.clone())).await {
                    Ok(Ok(())) => None,
                    Ok(Err(e)) => Some(e.to_string()),
                    Err(Panicked) => Some("teardown panicked".to_owned()),
                };
                if let Some(error) = error {
                    self.health = Health::Unhealthy;
                    failures.push(CleanupFailure {
                        description: "teardown".into(),
                        error,
                    });
                }
                if let Err(e) = ctx.close().await {
                    failures.extend(e.failures);
                }
            }
        }
        self.context = None;
        let _ = self.machine.transition(PluginState::Disposed);
        if failures.is_empty() {
            Ok(())
        } else {
            Err(EffectCleanupError { scope, failures })
        }
    }
}
