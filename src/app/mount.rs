//! What operations that mount plugins are given: the environment (with an
//! env file on top), the secrets plugins read, and the catalog of built-in
//! kinds configured for the composition's folder.

use std::path::Path;
use std::sync::Arc;

use crate::engine::secret::{
    EnvSecretProvider, MIN_SECRET_LEN, RedactingSecretProvider, Redactor, SecretProvider,
    SecretValue,
};
use crate::engine::telemetry::Telemetry;
use crate::plugins::BuiltinEnv;
use crate::runtime::{Catalog, HarnessOptions};

use super::env::RunEnv;
use super::error::AppError;
use super::workspace::base_dir;

/// The process environment with `env_file` on top (unusable input when the
/// file is).
pub fn run_env(env_file: Option<&Path>) -> Result<RunEnv, AppError> {
    match env_file {
        None => Ok(RunEnv::process()),
        Some(path) => RunEnv::with_file(path).map_err(|e| AppError::input(e.to_string())),
    }
}

/// The secrets of operations that start plugins: `env`, each value learned
/// by `redactor` as it is resolved.
pub fn secret_provider(redactor: &Redactor, env: &RunEnv) -> Arc<dyn SecretProvider> {
    // Values from an env file are secrets-in-waiting: learn them now, so
    // one a plugin never asks for still cannot leak through a tool's output.
    for value in env.file_vars().values() {
        if value.len() >= MIN_SECRET_LEN {
            redactor.learn(&SecretValue::new(value.clone()));
        }
    }
    Arc::new(RedactingSecretProvider::new(
        EnvSecretProvider::new(env.clone()),
        redactor.clone(),
    ))
}

/// Harness options for operations that mount plugins: `telemetry`, and
/// [`secret_provider`].
pub fn harness_options(
    telemetry: Arc<dyn Telemetry>,
    redactor: &Redactor,
    env: &RunEnv,
) -> HarnessOptions {
    HarnessOptions {
        telemetry,
        secrets: secret_provider(redactor, env),
        ..HarnessOptions::default()
    }
}

/// The runtime catalog for a composition at `file`: the built-in kinds,
/// with relative paths in their configuration resolved beside the file,
/// scrubbing with `redactor` (the one the harness's secrets learn into),
/// `secrets.env` entries reading `env`; and the built-in kinds' environment
/// it was built with (a candidate generation sets a new lock there).
pub fn catalog(file: &Path, redactor: &Redactor, env: &RunEnv) -> (Catalog, BuiltinEnv) {
    // The loader already refused an unreadable lock; here it is only read.
    let lock = super::lock::read_lock(file);
    let mut catalog = Catalog::new();
    let builtin = BuiltinEnv::new(base_dir(file))
        .with_lock(lock)
        .with_redactor(redactor.clone())
        .with_env(Arc::new(env.clone()));
    crate::plugins::register_builtins(&mut catalog, &builtin);
    (catalog, builtin)
}
