//! The `mcp` kind: an MCP server's tools mounted as chassis tools.
//!
//! The engine half ([`crate::engine::builtin::mcp`]) owns the configuration
//! schema, the filter and prefix, the policy defaults from annotations and
//! the manifest, whose tools come from `chassis.lock`. This adapter starts
//! or connects to the server at mount, lists its tools, and checks them
//! against the lock: a generation publishes exactly the tools the pure
//! commands saw, so a server offering anything else (a new tool, a changed
//! schema) fails publication with the tool diff; a locked tool the server
//! no longer offers is not registered, which the reconcile's contract check
//! reports as a broken promise (`PluginContractError`) and rolls back; so is
//! an `expect_tools` name (a manifest promise by name). Once mounted, the
//! supervisor ([`server`]) reports a changed list through the context's
//! tool-set reporter, from which the harness's owner builds a candidate
//! generation.
//!
//! Layout: [`client`] is the seam (our trait and data types),
//! [`rmcp_session`] the only module naming rmcp, [`spec`] reads the
//! configuration, [`live`] turns a live list into lock terms, [`server`]
//! supervises, [`tool`] forwards calls.

use std::sync::Arc;

use super::BuiltinEnv;
use crate::engine::builtin::mcp::{self as kind, tool_policy};
use crate::engine::model::{Entry, Manifest};
use crate::engine::secret::Redactor;
use crate::lock::{LOCK_FILE, ToolChange, diff_tools};
use crate::runtime::{BoxError, Catalog, Plugin, PluginContext};

pub mod client;
pub mod live;
pub mod rmcp_session;
pub mod server;
pub mod spec;
pub mod tool;

pub use live::probe;

struct McpPlugin {
    manifest: Arc<Manifest>,
    env: Arc<BuiltinEnv>,
    redactor: Redactor,
}

#[async_trait::async_trait]
impl Plugin for McpPlugin {
    fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    async fn setup(&self, ctx: PluginContext) -> Result<(), BoxError> {
        let entry = ctx.entry_id().to_owned();
        let config = ctx.config().to_json();
        let locked = self
            .env
            .lock()
            .and_then(|l| l.entries.get(&entry).cloned())
            .ok_or_else(|| {
                format!(
                    "the `mcp` entry `{entry}` has no tools in `{LOCK_FILE}`; run `chassis tools FILE --update-lock` (or publish with `--update-lock`) to pin them"
                )
            })?;
        let secret = |name: &str| ctx.secret(name).map_err(|e| e.to_string());
        let spec = spec::server_spec(&entry, &config, &self.env, &secret, &self.redactor)?;
        let (session, tools) = live::start(&spec, &self.redactor).await?;
        let close_on_error = |e: String| {
            let session = Arc::clone(&session);
            async move {
                session.close().await;
                e
            }
        };
        let live = match live::lock_entry(session.identity(), &tools, &config, &self.redactor) {
            Ok(l) => l,
            Err(e) => return Err(close_on_error(e).await.into()),
        };
        // `expect_tools` are manifest promises: a server that lacks one
        // registers what it has and the reconcile's contract check fails
        // the mount with a `PluginContractError`.
        let changes = diff_tools(&locked, &live);
        let unexpected: Vec<String> = changes
            .iter()
            .filter(|c| !matches!(c, ToolChange::Removed { .. }))
            .map(ToString::to_string)
            .collect();
        if !unexpected.is_empty() {
            let all: Vec<String> = changes.iter().map(ToString::to_string).collect();
            return Err(close_on_error(format!(
                "the server's tools differ from `{LOCK_FILE}`: {}; review the change and run with `--update-lock` to accept it",
                all.join(", ")
            ))
            .await
            .into());
        }
        if live.server_version != locked.server_version
            || live.protocol_version != locked.protocol_version
        {
            tracing::info!(
                target: "chassis::mcp",
                entry = %entry,
                "server {} {} speaks {} (locked: {} {}, {}); the tools are unchanged",
                live.server_name, live.server_version, live.protocol_version,
                locked.server_name, locked.server_version, locked.protocol_version
            );
        }
        let server = Arc::new(
            server::Server::new(
                spec,
                config.clone(),
                live.clone(),
                self.redactor.clone(),
                Arc::clone(&session),
            )
            .with_health(ctx.health_reporter())
            .with_tool_sets(ctx.tool_set_reporter()),
        );
        {
            let server = Arc::clone(&server);
            ctx.create_task("follow the MCP server's tool list", async move {
                server.watch().await;
                Ok(())
            })?;
        }
        {
            let server = Arc::clone(&server);
            ctx.cleanup(
                "stop the MCP server",
                Box::new(move || {
                    Box::pin(async move {
                        server.close().await;
                        Ok(())
                    })
                }),
            )?;
        }
        for t in &live.tools {
            let policy = tool_policy(&config, &t.remote_name, t.annotations_json().as_ref());
            let tool = tool::McpTool {
                name: t.name.clone(),
                remote: t.remote_name.clone(),
                description: t.description.clone(),
                schema: t.input_schema_json(),
                server: Arc::clone(&server),
            };
            ctx.tools().register(Arc::new(tool), policy)?;
        }
        Ok(())
    }
}

/// Install the kind; stderr lines of servers are scrubbed by `redactor`
/// (which also learns the secrets each server is started with).
pub fn register_with(catalog: &mut Catalog, env: &Arc<BuiltinEnv>, redactor: Redactor) {
    let env = Arc::clone(env);
    catalog.register(
        kind::KIND.name,
        Arc::new(move |entry: &Entry| {
            Ok(Arc::new(McpPlugin {
                manifest: Arc::clone(&entry.manifest),
                env: Arc::clone(&env),
                redactor: redactor.clone(),
            }) as Arc<dyn Plugin>)
        }),
    );
}
