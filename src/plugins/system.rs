//! The `policy` and `secrets.env` adapters: they provide `policy@1` and
//! `secrets@1` values for the scopes that see them (the harness binds them
//! per scope, see [`crate::runtime::Generation::system`]).

use std::sync::Arc;

use super::BuiltinEnv;
use super::command::problems_error;
use crate::engine::builtin::{self, ConfigProblem};
use crate::engine::model::{Entry, Manifest};
use crate::engine::secret::{EnvLookup, EnvSecretProvider, RedactingSecretProvider};
use crate::runtime::{BoxError, CapabilityValue, Catalog, Plugin, PluginContext};

struct SystemPlugin {
    manifest: Arc<Manifest>,
    /// The capability it provides (at 1.0.0) and the value.
    provides: (&'static str, CapabilityValue),
}

#[async_trait::async_trait]
impl Plugin for SystemPlugin {
    fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    async fn setup(&self, ctx: PluginContext) -> Result<(), BoxError> {
        let (capability, value) = &self.provides;
        ctx.capabilities()
            .provide(capability, value.clone(), "1.0.0")?;
        Ok(())
    }
}

/// A configuration a built-in's schema let through but its derivation
/// refuses (the loader reports these with spans first) fails the mount.
fn plugin(
    entry: &Entry,
    kind: &str,
    capability: &'static str,
    value: Result<CapabilityValue, Vec<ConfigProblem>>,
) -> Result<Arc<dyn Plugin>, BoxError> {
    let value = value.map_err(|problems| problems_error(kind, &problems))?;
    Ok(Arc::new(SystemPlugin {
        manifest: Arc::clone(&entry.manifest),
        provides: (capability, value),
    }))
}

/// Install `policy` and `secrets.env`; `secrets.env` reads `env`'s
/// environment and teaches its redactor.
pub fn register(catalog: &mut Catalog, env: &Arc<BuiltinEnv>) {
    catalog.register(
        builtin::system::POLICY.name,
        Arc::new(|entry: &Entry| {
            let rules = builtin::system::policy_rules(&entry.config);
            plugin(
                entry,
                builtin::system::POLICY.name,
                "policy",
                rules.map(CapabilityValue::policy),
            )
        }),
    );
    let env = Arc::clone(env);
    catalog.register(
        builtin::system::SECRETS_ENV.name,
        Arc::new(move |entry: &Entry| {
            let provider = builtin::system::secrets_env_config(&entry.config).map(
                |builtin::system::EnvSecrets { prefix, aliases }| {
                    let mut p = EnvSecretProvider::new(Arc::clone(&env.env));
                    if let Some(prefix) = prefix {
                        p = p.with_prefix(prefix);
                    }
                    for (name, variable) in aliases {
                        p = p.with_alias(name, variable);
                    }
                    CapabilityValue::secrets(RedactingSecretProvider::new(p, env.redactor.clone()))
                },
            );
            plugin(
                entry,
                builtin::system::SECRETS_ENV.name,
                "secrets",
                provider,
            )
        }),
    );
}

/// The process environment (what `secrets.env` reads unless the edge
/// gives it another, e.g. with `run --env-file` on top).
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcessEnv;

impl EnvLookup for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}
