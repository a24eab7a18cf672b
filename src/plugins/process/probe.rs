//! Reading what a process plugin registers, for `chassis.lock`
//! (`chassis tools --live/--update-lock`, `publish`/`run --update-lock`).
//!
//! Why it exists: the lock pins a process plugin's registrations so the
//! pure commands see them, and someone must start the plugin to read them.
//! The probe starts it alone — the entry's configuration (secrets resolved
//! where referenced), its scope, and for each requirement the bound
//! provider's value when one can be read without a mount, its methods
//! answering -32002 — runs `initialize` and `setup`
//! with the same checks as a mount against the TOML manifest (its
//! declaration, its declared tools), records what it registered, and ends
//! it with `teardown`. A plugin that calls a provider during `setup`
//! cannot be probed alone; the error says so.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::protocol::{BoundProvider, CapabilityRegistration, SetupParams, code, method};
use super::rpc::Handler;
use super::start::{self, Launch, Pins};
use crate::engine::model::Manifest;
use crate::engine::secret::Redactor;
use crate::lock::LockEntry;

/// A handler for a plugin started alone: a provider call answers -32002
/// with `why`, anything else -32601.
pub fn alone(why: &'static str) -> Handler {
    Arc::new(move |m: String, _| {
        Box::pin(async move {
            if m == method::CAPABILITY_INVOKE {
                Err((code::PROVIDER_UNAVAILABLE, why.to_owned()))
            } else {
                Err((
                    code::METHOD_NOT_FOUND,
                    format!("chassis has no method `{m}`"),
                ))
            }
        })
    })
}

/// What a probe read: the lock entry, and the capabilities the plugin
/// provided (their values go to the plugins that require them, when those
/// are probed in turn).
pub struct Probe {
    /// What `chassis.lock` pins.
    pub entry: LockEntry,
    /// What its `setup` provided.
    pub capabilities: Vec<CapabilityRegistration>,
}

/// What to probe: one entry of a process plugin.
pub struct ProbeTarget<'a> {
    /// Entry id.
    pub entry: &'a str,
    /// Its scope path.
    pub scope: &'a str,
    /// Its manifest (the loader's, possibly with pinned tools).
    pub manifest: &'a Manifest,
    /// Its configuration with secrets resolved.
    pub config: Value,
    /// Per requirement, the provider the composition binds: its entry id,
    /// version and value (a value the probe could read without a mount —
    /// a process plugin's, probed first, or a `shared-state` table — else
    /// none). Its methods answer nothing here.
    pub requirements: BTreeMap<String, BoundProvider>,
}

/// Start the plugin of `target` alone and read what it registers.
pub async fn probe(target: ProbeTarget<'_>, redactor: &Redactor) -> Result<Probe, String> {
    // Held to its TOML only: what the lock pinned before is what this
    // probe replaces.
    let mut manifest = target.manifest.clone();
    manifest.tools.retain(|t| t.origin.is_some());
    if let Some(p) = manifest.process.as_mut() {
        Arc::make_mut(p).pinned = None;
    }
    let program = start::resolve(&manifest, target.entry)?;
    let launch = Launch {
        manifest: Arc::new(manifest),
        entry: target.entry.to_owned(),
        program,
        setup: SetupParams {
            entry: target.entry.to_owned(),
            scope: target.scope.to_owned(),
            config: target.config,
            requirements: target.requirements,
        },
        redactor: redactor.clone(),
        handler: alone(
            "chassis starts the plugin alone to read its registrations for `chassis.lock`: no provider answers during the probe",
        ),
    };
    let (process, init, registered) = start::start_checked(&launch, Pins::Read)
        .await
        .map_err(|e| e.message)?;
    process.stop(target.entry).await;
    super::pin::validate(&registered)?;
    Ok(Probe {
        entry: super::pin::lock_entry(&init, &registered),
        capabilities: registered.capabilities,
    })
}
