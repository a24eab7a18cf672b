//! The `shared-state` adapter: provides the configured values, read-only.

use std::sync::Arc;

use serde_json::Value;

use crate::engine::builtin;
use crate::engine::model::{Entry, Manifest};
use crate::runtime::{BoxError, CapabilityValue, Catalog, Plugin, PluginContext};

/// The value of a `shared-state` capability: an immutable JSON table.
#[derive(Clone, Debug, PartialEq)]
pub struct SharedState(pub Arc<Value>);

impl SharedState {
    /// The value at `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }
}

struct SharedPlugin {
    manifest: Arc<Manifest>,
}

#[async_trait::async_trait]
impl Plugin for SharedPlugin {
    fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    async fn setup(&self, ctx: PluginContext) -> Result<(), BoxError> {
        let state = SharedState(Arc::new(values_of(ctx.config())));
        for (capability, provided) in &self.manifest.provides {
            for version in &provided.versions {
                ctx.capabilities().provide(
                    capability.as_str(),
                    CapabilityValue::new(state.clone()),
                    version.as_str(),
                )?;
            }
        }
        Ok(())
    }
}

/// The table a `shared-state` entry with `config` provides (its `values`;
/// a secret cannot be among them, the kind's schema refuses it). Also what
/// a probe for `chassis.lock` hands a process plugin that requires it.
pub fn values_of(config: &crate::engine::model::ConfigValue) -> Value {
    config
        .get("values")
        .map_or(Value::Object(Default::default()), |v| v.to_json())
}

/// Install the kind.
pub fn register(catalog: &mut Catalog) {
    catalog.register(
        builtin::shared::KIND.name,
        Arc::new(|entry: &Entry| {
            Ok(Arc::new(SharedPlugin {
                manifest: Arc::clone(&entry.manifest),
            }) as Arc<dyn Plugin>)
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::{Harness, HarnessOptions, plugin_fn};

    #[tokio::test]
    async fn consumers_read_the_values_through_the_capability() {
        let text = r#"version = 1
[entries.settings]
plugin = "shared-state"
config = { capability = "settings", version = "1.2.0", values = { region = "eu-west-1", max_results = 20 } }
[plugins.reader]
version = "1.0.0"
requires = { settings = ">=1,<2" }
[entries.reader]
"#;
        let composition = crate::load::load_str("c.toml", text)
            .composition
            .expect("loads");
        let seen = Arc::new(std::sync::Mutex::new(None));
        let sink = Arc::clone(&seen);
        let mut catalog = Catalog::new();
        crate::plugins::register_builtins(&mut catalog, &crate::plugins::BuiltinEnv::new("."));
        catalog.register_plugin(
            "reader",
            Arc::new(plugin_fn(
                Manifest::new(
                    "reader",
                    crate::engine::version::Version::parse("1.0.0").unwrap(),
                ),
                move |ctx: PluginContext| {
                    let sink = Arc::clone(&sink);
                    async move {
                        let state = ctx.require::<SharedState>("settings")?;
                        *sink.lock().unwrap() = state.get("region").cloned();
                        Ok(())
                    }
                },
            )),
        );
        let h = Harness::new(catalog, HarnessOptions::default());
        h.reconcile(composition).await.expect("publishes");
        assert_eq!(*seen.lock().unwrap(), Some(Value::from("eu-west-1")));
        h.shutdown().await;
    }

    #[test]
    fn secrets_cannot_be_shared() {
        let l = crate::load::load_str(
            "c.toml",
            "version = 1\n[entries.s]\nplugin = \"shared-state\"\nconfig = { capability = \"s\", values = { k = { secret = \"X\" } } }\n",
        );
        assert!(l.has_errors());
        assert!(
            l.diagnostics
                .iter()
                .any(|d| d.message.contains("cannot hold secret references")),
            "{:?}",
            l.diagnostics
        );
    }
}
