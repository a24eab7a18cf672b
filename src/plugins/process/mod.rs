//! Process plugins: a `[plugins.X]` with a `command`, run as a program
//! speaking the plugin protocol (`docs/plugin-protocol.md`).
//!
//! Why it exists: users write plugins in Python and TypeScript. chassis
//! starts the program (argv only, never a shell; a cleared environment
//! with an allow-list), negotiates the protocol version and checks the
//! plugin's own declaration against the TOML manifest at `initialize`,
//! mounts it with `setup` (its configuration, secrets resolved only where
//! referenced, and the providers bound to its requirements), and registers
//! what it answers through the plugin context — so publication validates
//! it exactly like a built-in plugin and rolls the candidate back when a
//! promise is broken. Its tools are forwarded as `tools/call`; unmounting
//! sends `teardown`, then ends the process group after a grace period.
//!
//! Layout: [`protocol`] holds the message types (and generates the
//! schemas), [`rpc`] the JSON-RPC connection, [`start`] the spawn and
//! handshake, [`tool`] the forwarded tools.

use std::sync::Arc;

use super::BuiltinEnv;
use crate::engine::model::{Entry, Manifest};
use crate::engine::secret::Redactor;
use crate::runtime::{BoxError, Catalog, Plugin, PluginContext};

pub mod protocol;
pub mod rpc;
pub mod start;
pub mod tool;

pub use crate::engine::model::PROCESS_KIND as KIND;

struct ProcessPlugin {
    manifest: Arc<Manifest>,
    redactor: Redactor,
}

#[async_trait::async_trait]
impl Plugin for ProcessPlugin {
    fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    async fn setup(&self, ctx: PluginContext) -> Result<(), BoxError> {
        let running = start::mount(&ctx, &self.manifest, &self.redactor).await?;
        let running = Arc::new(running);
        {
            let running = Arc::clone(&running);
            ctx.cleanup(
                "stop the plugin process",
                Box::new(move || {
                    Box::pin(async move {
                        running.stop().await;
                        Ok(())
                    })
                }),
            )?;
        }
        running.register(&ctx)?;
        Ok(())
    }
}

/// Install the kind; stderr lines of plugins are scrubbed by `redactor`.
pub fn register_with(catalog: &mut Catalog, _env: &Arc<BuiltinEnv>, redactor: Redactor) {
    catalog.register(
        KIND,
        Arc::new(move |entry: &Entry| {
            Ok(Arc::new(ProcessPlugin {
                manifest: Arc::clone(&entry.manifest),
                redactor: redactor.clone(),
            }) as Arc<dyn Plugin>)
        }),
    );
}
