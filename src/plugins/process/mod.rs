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
//! promise is broken. Its tools are forwarded as `tools/call`, its hooks
//! as `hooks/dispatch`, its capabilities' methods as `capability/invoke`;
//! a crash restarts it with backoff; unmounting sends `teardown`, then ends
//! the process group.
//!
//! Layout: [`protocol`] holds the message types (and generates the
//! schemas), [`rpc`] the JSON-RPC connection, [`start`] the spawn and
//! handshake, [`supervise`] the restarts, [`invoke`] capabilities across
//! processes (under the tool call that made them, [`calls`]), [`tool`] the
//! forwarded tools, [`pin`] and [`probe`] what `chassis.lock` pins.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::BuiltinEnv;
use crate::engine::model::{Entry, Manifest};
use crate::engine::secret::Redactor;
use crate::runtime::{BoxError, CapabilityValue, Catalog, Plugin, PluginContext};

pub mod calls;
pub mod hook;
pub mod invoke;
pub mod model;
pub mod pin;
pub mod probe;
pub mod protocol;
pub mod route;
pub mod rpc;
pub mod start;
pub mod supervise;
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

    fn heeds_setup_cancellation(&self) -> bool {
        true
    }

    async fn setup(&self, ctx: PluginContext) -> Result<(), BoxError> {
        // The providers bound to this plugin that are processes: what its
        // `capability/invoke` requests may reach.
        let bound: BTreeMap<String, invoke::Bound> = self
            .manifest
            .requires
            .keys()
            .filter_map(|cap| {
                let b = ctx.binding(cap.as_str())?;
                let value = match b.value.downcast::<invoke::ProcessCapability>() {
                    Some(p) => invoke::Bound::Process(p),
                    None => invoke::Bound::Model(
                        b.value.downcast::<crate::runtime::model::ModelHandle>()?,
                    ),
                };
                Some((cap.to_string(), value))
            })
            .collect();
        // The tool calls in flight, shared by the tools (which enter
        // them) and the handler (whose invokes name them).
        let calls = Arc::new(calls::InFlight::default());
        let handler = invoke::consumer_handler(
            ctx.entry_id().to_owned(),
            bound,
            self.manifest.permissions.clone(),
            Arc::clone(&calls),
            self.redactor.clone(),
            ctx.outside_run_policy(),
        );
        let launch = start::prepare(&ctx, &self.manifest, &self.redactor, handler)?;
        // Unmounted while it starts (an interrupt, a shutdown): `$/cancel`
        // for the request in flight, `teardown`, and the process group
        // ended within the grace period — never a wait for its setup.
        let (process, registered) = start::launch_unless(&launch, Some(ctx.setup_cancelled()))
            .await
            .map_err(start::LaunchError::into_setup_error)?;
        let supervisor =
            supervise::Supervisor::new(launch, process, registered, Some(ctx.health_reporter()));
        {
            let supervisor = Arc::clone(&supervisor);
            ctx.cleanup(
                "stop the plugin process",
                Box::new(move || {
                    Box::pin(async move {
                        supervisor.stop().await;
                        Ok(())
                    })
                }),
            )?;
        }
        {
            let supervisor = Arc::clone(&supervisor);
            ctx.create_task("restart the plugin process when it stops", async move {
                supervisor.watch().await;
                Ok(())
            })?;
        }
        register(&ctx, &supervisor, &calls, &self.redactor)?;
        Ok(())
    }
}

/// Register what the plugin answered to `setup` through `ctx`.
fn register(
    ctx: &PluginContext,
    supervisor: &Arc<supervise::Supervisor>,
    calls: &Arc<calls::InFlight>,
    redactor: &Redactor,
) -> Result<(), BoxError> {
    let registered = supervisor.registered();
    for c in &registered.capabilities {
        // A model provider: the loop drives it through `complete`.
        if c.key == crate::runtime::model::MODEL_CAPABILITY {
            if !c.methods.iter().any(|m| m.name == model::COMPLETE) {
                return Err(format!(
                    "the plugin provides `model` without a `{}` method; a model provider answers `complete` with one assistant turn",
                    model::COMPLETE
                )
                .into());
            }
            let name = c
                .value
                .as_ref()
                .and_then(|v| v.get("name"))
                .and_then(serde_json::Value::as_str)
                .map_or_else(|| ctx.manifest().name.clone(), str::to_owned);
            let handle = crate::runtime::model::ModelHandle(Arc::new(model::ProcessModel {
                name,
                provider: Arc::clone(supervisor),
            }));
            ctx.capabilities()
                .provide(&c.key, CapabilityValue::new(handle), &c.version)?;
            continue;
        }
        // Shared state (the Oracle runtime's `getSharedState`): a value
        // and no methods is read-only state, provided exactly as the
        // built-in `shared-state` kind provides it, so a Rust consumer
        // reads it as `SharedState` and a process consumer as its value.
        // Redacted as what comes from outside is: a secret chassis knows
        // (the provider's configuration referenced it) does not reach a
        // consumer that did not reference it; keys are data.
        if c.methods.is_empty()
            && let Some(value) = &c.value
        {
            let state =
                crate::plugins::shared::SharedState(Arc::new(redactor.redact_foreign(value)));
            ctx.capabilities()
                .provide(&c.key, CapabilityValue::new(state), &c.version)?;
            continue;
        }
        let value = invoke::ProcessCapability::new(
            &c.key,
            c.value.clone(),
            &c.methods,
            Arc::clone(supervisor),
            Arc::clone(calls),
        )?;
        ctx.capabilities()
            .provide(&c.key, CapabilityValue::new(value), &c.version)?;
    }
    for t in &registered.tools {
        let p = &t.policy;
        let policy = crate::engine::policy::ToolPolicy::from(p);
        let tool = tool::ProcessTool {
            name: t.name.clone(),
            description: t.description.clone(),
            schema: t.input_schema.clone(),
            // Validated by the registration below; never a panic here.
            deadline: p
                .timeout_seconds
                .and_then(|s| std::time::Duration::try_from_secs_f64(s).ok()),
            supervisor: Arc::clone(supervisor),
            calls: Arc::clone(calls),
        };
        ctx.tools().register(Arc::new(tool), policy)?;
    }
    for (index, h) in registered.hooks.iter().enumerate() {
        use crate::runtime::{ErrorPolicy, HookEvent, HookMode};
        use protocol::{ErrorPolicyWire, HookModeWire};
        let event = HookEvent::parse(&h.event).ok_or_else(|| {
            let known: Vec<&str> = HookEvent::ALL.iter().map(|e| e.as_str()).collect();
            format!(
                "the plugin registered a hook for the unknown event `{}`; events: {}",
                h.event,
                known.join(", ")
            )
        })?;
        let mode = match h.mode {
            HookModeWire::Observe => HookMode::Observe,
            HookModeWire::Transform => HookMode::Transform,
            HookModeWire::Bail => HookMode::Bail,
        };
        let error_policy = match h.error_policy {
            ErrorPolicyWire::Record => ErrorPolicy::Record,
            ErrorPolicyWire::Raise => ErrorPolicy::Raise,
        };
        let handler = hook::ProcessHook {
            index,
            supervisor: Arc::clone(supervisor),
        };
        ctx.hooks()
            .register_with(event, Arc::new(handler), mode, h.priority, error_policy)?;
    }
    for (index, r) in registered.routes.iter().enumerate() {
        let handler = route::ProcessRoute {
            index,
            supervisor: Arc::clone(supervisor),
        };
        ctx.routes()
            .register(&r.method, &r.path, Arc::new(handler))?;
    }
    Ok(())
}

/// The plugin implementing `manifest` (a manifest with a `command`): what
/// the catalog instantiates, and what `chassis::testing` installs.
pub fn plugin(manifest: Arc<Manifest>, redactor: Redactor) -> impl Plugin {
    ProcessPlugin { manifest, redactor }
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
