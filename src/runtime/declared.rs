//! The declared plugin kind: a manifest written in TOML, provided as is.
//!
//! It registers every capability it declares (as an opaque unit value, at
//! each declared version) and every declared tool as a contract that answers
//! with its static result or `tool_not_implemented`.

use std::sync::Arc;

use super::context::PluginContext;
use super::plugin::Plugin;
use super::scope::BoxError;
use super::tool::DeclaredTool;
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
        let declared = DeclaredTool {
            name: tool.name.to_string(),
            description: tool.description.clone(),
            args_schema: tool.args_schema.clone(),
            result: tool.result.clone(),
        };
        ctx.tools()
            .register(Arc::new(declared), ToolPolicy::default())?;
    }
    Ok(())
}

#[async_trait::async_trait]
impl Plugin for DeclaredPlugin {
    fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    async fn setup(&self, ctx: PluginContext) -> Result<(), BoxError> {
        provide_declared(&ctx, &self.manifest)
    }
}
