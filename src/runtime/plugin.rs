//! The plugin API: a manifest plus `setup` (and optional `teardown`), in a
//! trait form and a closure form.
//!
//! ```
//! use std::sync::Arc;
//! use chassis::runtime::{plugin_fn, PluginContext, CapabilityValue};
//! use chassis::engine::model::Manifest;
//! use chassis::engine::version::Version;
//!
//! let manifest = Manifest::new("web-search", Version::parse("1.2.0").unwrap());
//! let plugin = plugin_fn(manifest, |ctx: PluginContext| async move {
//!     ctx.capabilities().provide("tools", CapabilityValue::unit(), "1.0.0")?;
//!     Ok(())
//! });
//! # let _ = plugin;
//! ```

use std::future::Future;
use std::sync::Arc;

use super::context::PluginContext;
use super::scope::{BoxError, BoxFuture};
use crate::engine::model::Manifest;

/// A plugin implementation.
#[async_trait::async_trait]
pub trait Plugin: Send + Sync {
    /// What the plugin provides and requires.
    fn manifest(&self) -> &Manifest;

    /// Create the plugin's effects through `ctx`. Everything registered is
    /// reverted when the plugin unloads; a failure rolls back what was done.
    async fn setup(&self, ctx: PluginContext) -> Result<(), BoxError>;

    /// Graceful, ordering-sensitive shutdown (flushing, draining), before the
    /// plugin's scope unwinds. Ordinary cleanup belongs in `ctx.cleanup`.
    async fn teardown(&self, ctx: PluginContext) -> Result<(), BoxError> {
        let _ = ctx;
        Ok(())
    }

    /// What [`Self::setup`] would register as `entry_id`, when that is a
    /// function of the manifest alone: setup reads no configuration,
    /// secret or provider, starts nothing, registers no hook or route, and
    /// has no effect beyond its registrations. A harness that only
    /// publishes ([`super::HarnessOptions::publish_only`]) then places the
    /// entry without mounting it (while no other plugin's hooks are live to
    /// observe the mount), and checks these registrations as it checks a
    /// mount's. `None` (the default): the plugin must be mounted.
    fn registrations_unmounted(&self, entry_id: &str) -> Option<super::context::Registrations> {
        let _ = entry_id;
        None
    }

    /// Whether [`Self::setup`] ends by itself, soon, once
    /// [`PluginContext::setup_cancelled`] fires (the harness unmounts what
    /// it is setting up: an interrupt, a shutdown): it stops what it
    /// started — a process plugin sends `$/cancel` and `teardown` and ends
    /// its process group within its grace period — and fails. `false` (the
    /// default): the harness drops a setup in flight when the cancellation
    /// fires, which ends at once what the setup holds (a process group is
    /// killed when dropped), and rolls back what it registered.
    fn heeds_setup_cancellation(&self) -> bool {
        false
    }
}

type SetupFn = dyn Fn(PluginContext) -> BoxFuture<'static, Result<(), BoxError>> + Send + Sync;

/// A plugin from a manifest and a setup closure.
pub struct FnPlugin {
    manifest: Manifest,
    setup: Arc<SetupFn>,
}

impl std::fmt::Debug for FnPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnPlugin")
            .field("manifest", &self.manifest.identity())
            .finish()
    }
}

/// The function form: `plugin_fn(manifest, |ctx| async move { … })`.
pub fn plugin_fn<F, Fut>(manifest: Manifest, setup: F) -> FnPlugin
where
    F: Fn(PluginContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
{
    FnPlugin {
        manifest,
        setup: Arc::new(move |ctx| Box::pin(setup(ctx))),
    }
}

#[async_trait::async_trait]
impl Plugin for FnPlugin {
    fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    async fn setup(&self, ctx: PluginContext) -> Result<(), BoxError> {
        (self.setup)(ctx).await
    }
}
