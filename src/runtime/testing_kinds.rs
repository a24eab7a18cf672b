//! `testing.*` plugin kinds, present in every build, that make failure paths
//! reachable from TOML (and so from the CLI's golden tests):
//!
//! | kind | behaviour (entry `config` keys) |
//! | --- | --- |
//! | `testing.liar` | promises its manifest but registers `register = "nothing"` (default) or `register = "<capability>@<version>"` instead |
//! | `testing.failing-setup` | registers its promises, then fails with `message` |
//! | `testing.slow-teardown` | provides its promises; teardown sleeps `teardown_ms` and fails when `fail = true` |
//! | `testing.task` | provides its promises and starts a task that runs until it is cancelled |
//! | `testing.secret-echo` | provides its promises; each declared tool reads the secret named by its `name` argument through `ctx.secrets` and answers `{ "echo": <value>, "length": <chars> }` (the secret canary's tool: only the run's redactor stands between the value and every output) |

use std::sync::Arc;
use std::time::Duration;

use super::catalog::Catalog;
use super::context::PluginContext;
use super::declared::provide_declared;
use super::plugin::Plugin;
use super::scope::BoxError;
use super::tool::{Tool, ToolCallContext, ToolOutput};
use super::value::CapabilityValue;
use crate::engine::model::{ConfigValue, Entry, Manifest};
use crate::engine::policy::ToolPolicy;
use crate::engine::secret::SecretProvider;

fn config_str<'a>(config: &'a ConfigValue, key: &str) -> Option<&'a str> {
    match config {
        ConfigValue::Table(t) => match t.get(key) {
            Some(ConfigValue::Str(s)) => Some(s),
            _ => None,
        },
        _ => None,
    }
}

fn config_int(config: &ConfigValue, key: &str) -> Option<i64> {
    match config {
        ConfigValue::Table(t) => match t.get(key) {
            Some(ConfigValue::Int(i)) => Some(*i),
            _ => None,
        },
        _ => None,
    }
}

fn config_bool(config: &ConfigValue, key: &str) -> bool {
    matches!(config, ConfigValue::Table(t) if matches!(t.get(key), Some(ConfigValue::Bool(true))))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Behaviour {
    Liar,
    FailingSetup,
    SlowTeardown,
    Task,
    SecretEcho,
}

/// A `testing.secret-echo` tool: the secret named by `name`, read through
/// the call's context, echoed back unredacted (and its length, so a test
/// can tell the value arrived once the output has redacted it).
struct SecretEcho {
    name: String,
    description: String,
    args_schema: Option<serde_json::Value>,
}

#[async_trait::async_trait]
impl Tool for SecretEcho {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn args_schema(&self) -> Option<&serde_json::Value> {
        self.args_schema.as_ref()
    }

    async fn call(
        &self,
        args: serde_json::Value,
        ctx: &ToolCallContext,
    ) -> Result<ToolOutput, BoxError> {
        let name = args
            .get("name")
            .and_then(serde_json::Value::as_str)
            .ok_or("`name` (the secret to read) must be a string")?;
        let value = ctx.secrets.get(name)?;
        let value = value.reveal();
        Ok(ToolOutput::content(serde_json::json!({
            "echo": value,
            "length": value.chars().count(),
        })))
    }
}

struct TestingPlugin {
    manifest: Arc<Manifest>,
    config: ConfigValue,
    behaviour: Behaviour,
}

#[async_trait::async_trait]
impl Plugin for TestingPlugin {
    fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    async fn setup(&self, ctx: PluginContext) -> Result<(), BoxError> {
        match self.behaviour {
            Behaviour::Liar => {
                let register = config_str(&self.config, "register").unwrap_or("nothing");
                if register != "nothing" {
                    let (cap, version) = register
                        .split_once('@')
                        .ok_or_else(|| format!("`register` must be `nothing` or `<capability>@<version>`, not `{register}`"))?;
                    ctx.capabilities()
                        .provide(cap, CapabilityValue::unit(), version)?;
                }
                Ok(())
            }
            Behaviour::FailingSetup => {
                provide_declared(&ctx, &self.manifest)?;
                let message =
                    config_str(&self.config, "message").unwrap_or("setup failed on purpose");
                Err(message.to_owned().into())
            }
            Behaviour::SlowTeardown => provide_declared(&ctx, &self.manifest),
            Behaviour::SecretEcho => {
                for (cap, provided) in &self.manifest.provides {
                    for version in &provided.versions {
                        ctx.capabilities().provide(
                            cap.as_str(),
                            CapabilityValue::unit(),
                            version.as_str(),
                        )?;
                    }
                }
                for tool in &self.manifest.tools {
                    ctx.tools().register(
                        Arc::new(SecretEcho {
                            name: tool.name.to_string(),
                            description: tool.description.clone(),
                            args_schema: tool.args_schema.clone(),
                        }),
                        ToolPolicy::default(),
                    )?;
                }
                Ok(())
            }
            Behaviour::Task => {
                provide_declared(&ctx, &self.manifest)?;
                ctx.create_task("until-cancelled", async {
                    std::future::pending::<()>().await;
                    Ok(())
                })?;
                Ok(())
            }
        }
    }

    async fn teardown(&self, _ctx: PluginContext) -> Result<(), BoxError> {
        if self.behaviour == Behaviour::SlowTeardown {
            let ms = config_int(&self.config, "teardown_ms")
                .unwrap_or(50)
                .clamp(0, 60_000);
            tokio::time::sleep(Duration::from_millis(ms.unsigned_abs())).await;
            if config_bool(&self.config, "fail") {
                return Err("teardown failed on purpose".into());
            }
        }
        Ok(())
    }
}

/// Register the `testing.*` kinds into `catalog`.
pub fn register(catalog: &mut Catalog) {
    for (name, behaviour) in [
        ("testing.liar", Behaviour::Liar),
        ("testing.failing-setup", Behaviour::FailingSetup),
        ("testing.slow-teardown", Behaviour::SlowTeardown),
        ("testing.task", Behaviour::Task),
        ("testing.secret-echo", Behaviour::SecretEcho),
    ] {
        catalog.register(
            name,
            Arc::new(move |entry: &Entry| {
                Ok(Arc::new(TestingPlugin {
                    manifest: Arc::clone(&entry.manifest),
                    config: (*entry.config).clone(),
                    behaviour,
                }) as Arc<dyn Plugin>)
            }),
        );
    }
}
