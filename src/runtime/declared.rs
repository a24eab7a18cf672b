//! The declared plugin kind: a manifest written in TOML, provided as is.
//!
//! It registers every capability it declares (as an opaque unit value, at
//! each declared version) and every declared tool as a contract that answers
//! with its static result or `tool_not_implemented`.

use std::sync::Arc;

use super::context::{CapabilityRegistration, PluginContext, Registrations};
use super::plugin::Plugin;
use super::scope::BoxError;
use super::tool::{DeclaredTool, ToolRegistration};
use super::value::CapabilityValue;
use crate::engine::model::{Entry, Manifest};
use crate::engine::policy::ToolPolicy;

/// A plugin whose behaviour is its manifest.
#[derive(Debug, Clone)]
pub struct DeclaredPlugin {
    manifest: Arc<Manifest>,
}

impl DeclaredPlugin {
    /// The declared plugin of `entry`.
    pub fn new(entry: &Entry) -> Self {
        Self {
            manifest: Arc::clone(&entry.manifest),
        }
    }
}

/// Register everything `manifest` promises, as the declared kind does.
pub fn provide_declared(ctx: &PluginContext, manifest: &Manifest) -> Result<(), BoxError> {
    for (cap, provided) in &manifest.provides {
        for version in &provided.versions {
            ctx.capabilities()
                .provide(cap.as_str(), CapabilityValue::unit(), version.as_str())?;
        }
    }
    for tool in &manifest.tools {
        ctx.tools()
            .register(Arc::new(declared_tool(tool)), ToolPolicy::default())?;
    }
    Ok(())
}

/// The tool the declared kind registers for a manifest's tool.
fn declared_tool(tool: &crate::engine::model::ToolDecl) -> DeclaredTool {
    DeclaredTool {
        name: tool.name.to_string(),
        description: tool.description.clone(),
        args_schema: tool.args_schema.clone(),
        result: tool.result.clone(),
    }
}

/// What [`provide_declared`] registers for `entry_id`, computed without a
/// context (so without mounting): the same capabilities, tools, ids and
/// policies in the same order (the versions the manifest parsed are the
/// ones registering their text parses to).
pub fn declared_registrations(entry_id: &str, manifest: &Manifest) -> Registrations {
    let mut registrations = Registrations::default();
    for (cap, provided) in &manifest.provides {
        for version in &provided.versions {
            registrations.capabilities.push(CapabilityRegistration {
                capability: cap.clone(),
                version: version.clone(),
                value: CapabilityValue::unit(),
            });
        }
    }
    for (n, tool) in manifest.tools.iter().enumerate() {
        registrations.tools.push(ToolRegistration {
            id: format!("tool_{entry_id}_{}", n + 1),
            owner: entry_id.to_owned(),
            tool: Arc::new(declared_tool(tool)),
            policy: ToolPolicy::default(),
        });
    }
    registrations
}

#[async_trait::async_trait]
impl Plugin for DeclaredPlugin {
    fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    async fn setup(&self, ctx: PluginContext) -> Result<(), BoxError> {
        provide_declared(&ctx, &self.manifest)
    }

    fn registrations_unmounted(&self, entry_id: &str) -> Option<Registrations> {
        Some(declared_registrations(entry_id, &self.manifest))
    }
}
