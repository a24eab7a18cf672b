//! `chassis::testing`: a real harness with deterministic doubles, so plugin
//! authors test the way the seed's "Testing" section shows.
//!
//! ```
//! use std::sync::Arc;
//! use chassis::testing::TestHarness;
//! use chassis::runtime::{plugin_fn, PluginContext, CapabilityValue};
//! use chassis::engine::model::Manifest;
//! use chassis::engine::version::Version;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let mut manifest = Manifest::new("memory", Version::parse("2.1.0").unwrap());
//! let mut h = TestHarness::new();
//! h.require(&mut manifest, "database", ">=1,<2");
//! h.install(plugin_fn(manifest, |_ctx: PluginContext| async move { Ok(()) }));
//! h.reconcile().await.unwrap();
//! assert!(h.instance("plugin-1").await.is_none(), "pending until a database exists");
//! h.provide("database", CapabilityValue::new("dsn"), "1.0.0");
//! h.reconcile().await.unwrap();
//! assert_eq!(h.instance("plugin-1").await.unwrap().as_str(), "active");
//! # });
//! ```
//!
//! Doubles: recording telemetry (strict: every signal is validated against
//! the contract when emitted), an in-memory secret provider, an explicit
//! policy (no grants: permissioned tools are denied until you grant them),
//! approvals that deny unless a tool is approved, and `install_tool` for
//! fake tools.

pub mod generate;

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;

use crate::engine::model::{
    CapabilityName, Composition, Entry, EntryId, Manifest, Provided, Requirement,
};
use crate::engine::policy::{ApproveListed, Grant, PolicyRules, ToolPolicy};
use crate::engine::secret::{Redactor, SecretValue, StaticSecretProvider};
use crate::engine::specifier::Specifier;
use crate::engine::telemetry::RecordingTelemetry;
use crate::engine::version::Version;
use crate::runtime::{
    CapabilityValue, Catalog, ExecError, ExecutorServices, Harness, HarnessOptions, Plugin,
    PluginContext, PluginState, ReconcileError, ReconcileReport, RunContext, Tool, ToolCall,
    ToolExecutor, ToolResult,
};

/// The entry id of application-provided values.
pub const SERVICES_ENTRY: &str = "chassis-services";

type Installed = Arc<std::sync::RwLock<std::collections::BTreeMap<String, Arc<dyn Plugin>>>>;

struct Provided1 {
    capability: String,
    version: String,
    value: CapabilityValue,
}

/// A harness for tests.
pub struct TestHarness {
    harness: Option<Harness>,
    installed: Installed,
    plugins: Vec<Arc<dyn Plugin>>,
    tools: Vec<(Arc<dyn Tool>, ToolPolicy)>,
    provided: Vec<Provided1>,
    /// Every signal emitted, validated at emission.
    pub telemetry: Arc<RecordingTelemetry>,
    /// The in-memory secret provider.
    pub secrets: StaticSecretProvider,
    /// The redactor shared with telemetry.
    pub redactor: Redactor,
    /// The explicit policy (starts with no grants).
    pub policy: PolicyRules,
    approved: BTreeSet<String>,
}

impl Default for TestHarness {
    fn default() -> Self {
        Self::new()
    }
}

impl TestHarness {
    /// An empty test harness.
    pub fn new() -> Self {
        Self {
            harness: None,
            installed: Arc::default(),
            plugins: Vec::new(),
            tools: Vec::new(),
            provided: Vec::new(),
            telemetry: Arc::new(RecordingTelemetry::strict()),
            secrets: StaticSecretProvider::new(),
            redactor: Redactor::new(),
            policy: PolicyRules::default(),
            approved: BTreeSet::new(),
        }
    }

    /// Add a hard requirement to `manifest` (a helper for building manifests
    /// in tests).
    pub fn require(&self, manifest: &mut Manifest, capability: &str, spec: &str) {
        if let (Ok(cap), Ok(spec)) = (CapabilityName::new(capability), Specifier::parse(spec)) {
            manifest
                .requires
                .insert(cap.clone(), Requirement::hard(cap, spec));
        }
    }

    /// Install a plugin as `plugin-N` (N counts from 1).
    pub fn install(&mut self, plugin: impl Plugin + 'static) -> String {
        self.plugins.push(Arc::new(plugin));
        format!("plugin-{}", self.plugins.len())
    }

    /// Install the process plugin (Python, TypeScript…) that `file`
    /// declares — its `plugin.toml`, or a composition with one
    /// `[plugins.X]` that has a `command` — as `plugin-N`. It is started,
    /// mounted and torn down as chassis does in a run; its entry's
    /// configuration is empty.
    ///
    /// # Errors
    ///
    /// The file does not load, or declares no process plugin or several.
    pub fn install_process(&mut self, file: &std::path::Path) -> Result<String, String> {
        let loaded = crate::load::load(&crate::load::FsSource, file);
        let composition = loaded.composition.ok_or_else(|| {
            let messages: Vec<String> = loaded
                .diagnostics
                .iter()
                .map(|d| d.message.clone())
                .collect();
            format!(
                "`{}` does not load: {}",
                file.display(),
                messages.join("; ")
            )
        })?;
        let mut found = composition
            .entries
            .values()
            .map(|e| &e.manifest)
            .filter(|m| m.process.is_some());
        let manifest = match (found.next(), found.next()) {
            (Some(m), None) => Arc::clone(m),
            (None, _) => {
                return Err(format!(
                    "`{}` has no entry of a process plugin (a `[plugins.X]` with a `command`)",
                    file.display()
                ));
            }
            (Some(_), Some(_)) => {
                return Err(format!("`{}` has several process plugins", file.display()));
            }
        };
        Ok(self.install(crate::plugins::process::plugin(
            manifest,
            self.redactor.clone(),
        )))
    }

    /// Unmount everything, in reverse activation order (teardowns and
    /// cleanups run; a process plugin's process ends); the failures met.
    pub async fn shutdown(&mut self) -> Vec<crate::runtime::scope::CleanupFailure> {
        match self.harness.take() {
            Some(h) => h.shutdown().await,
            None => Vec::new(),
        }
    }

    /// Install a fake tool (owned by the `toolbox` entry, which also
    /// provides `tools@1`).
    pub fn install_tool(&mut self, tool: impl Tool + 'static, policy: ToolPolicy) {
        self.tools.push((Arc::new(tool), policy));
    }

    /// Provide a capability from the application (entry `chassis-services`).
    pub fn provide(&mut self, capability: &str, value: CapabilityValue, version: &str) {
        self.provided.retain(|p| p.capability != capability);
        self.provided.push(Provided1 {
            capability: capability.to_owned(),
            version: version.to_owned(),
            value,
        });
    }

    /// Make a secret available (and teach the redactor its value).
    pub fn provide_secret(&mut self, name: &str, value: &str) {
        let v = SecretValue::new(value);
        self.redactor.learn(&v);
        self.secrets.insert(name, v);
    }

    /// Grant a permission (`name[:resource-pattern]`).
    pub fn grant(&mut self, grant: &str) -> Result<(), crate::engine::policy::PermissionError> {
        self.policy.grants.push(Grant::parse(grant)?);
        Ok(())
    }

    /// Approve calls of `tool`.
    pub fn approve(&mut self, tool: &str) {
        self.approved.insert(tool.to_owned());
    }

    fn composition(&self) -> Result<(Composition, BTreeMapPlugins), ReconcileError> {
        let mut catalog = BTreeMapPlugins::new();
        let mut c = Composition::new();
        let entry = |id: &str, manifest: Manifest| {
            EntryId::new(id)
                .map(|eid| Entry::new(eid, Arc::new(manifest)))
                .map_err(|e| ReconcileError::Snapshot(e.to_string()))
        };
        for (i, plugin) in self.plugins.iter().enumerate() {
            let id = format!("plugin-{}", i + 1);
            let mut e = entry(&id, plugin.manifest().clone())?;
            e.plugin.value.clone_from(&id);
            catalog.insert(id, Arc::clone(plugin));
            c.insert_entry(e);
        }
        if !self.provided.is_empty() {
            let mut manifest = Manifest::new(SERVICES_ENTRY, version("1.0.0"));
            for p in &self.provided {
                if let Ok(cap) = CapabilityName::new(&p.capability) {
                    manifest.provides.insert(
                        cap.clone(),
                        Provided {
                            capability: cap,
                            versions: vec![version(&p.version)],
                            origin: None,
                        },
                    );
                }
            }
            let values: Vec<(String, String, CapabilityValue)> = self
                .provided
                .iter()
                .map(|p| (p.capability.clone(), p.version.clone(), p.value.clone()))
                .collect();
            let services =
                crate::runtime::plugin_fn(manifest.clone(), move |ctx: PluginContext| {
                    let values = values.clone();
                    async move {
                        for (cap, v, value) in values {
                            ctx.capabilities().provide(&cap, value, &v)?;
                        }
                        Ok(())
                    }
                });
            catalog.insert(SERVICES_ENTRY.to_owned(), Arc::new(services));
            c.insert_entry(entry(SERVICES_ENTRY, manifest)?);
        }
        if !self.tools.is_empty() {
            let mut manifest = Manifest::new("chassis-toolbox", version("1.0.0"));
            if let Ok(cap) = CapabilityName::new("tools") {
                manifest.provides.insert(
                    cap.clone(),
                    Provided {
                        capability: cap,
                        versions: vec![version("1.0.0")],
                        origin: None,
                    },
                );
            }
            let tools = self.tools.clone();
            let toolbox = crate::runtime::plugin_fn(manifest.clone(), move |ctx: PluginContext| {
                let tools = tools.clone();
                async move {
                    ctx.capabilities()
                        .provide("tools", CapabilityValue::unit(), "1.0.0")?;
                    for (tool, policy) in tools {
                        ctx.tools().register(tool, policy)?;
                    }
                    Ok(())
                }
            });
            catalog.insert("toolbox".to_owned(), Arc::new(toolbox));
            let mut e = entry("toolbox", manifest)?;
            e.plugin.value = "toolbox".into();
            c.insert_entry(e);
        }
        Ok((c, catalog))
    }

    /// Reconcile the harness to what was installed and provided.
    ///
    /// The catalog is rebuilt from the installed plugins on every call;
    /// instances whose identity is unchanged are reused.
    pub async fn reconcile(&mut self) -> Result<ReconcileReport, ReconcileError> {
        let (composition, plugins) = self.composition()?;
        *self
            .installed
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = plugins;
        let installed = Arc::clone(&self.installed);
        let harness = self.harness.get_or_insert_with(|| {
            let mut catalog = Catalog::new();
            catalog.set_resolver(Arc::new(move |entry: &Entry| {
                let map = installed
                    .read()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                map.get(entry.plugin.value.as_str())
                    .map(|p| Ok(Arc::clone(p)))
            }));
            Harness::new(catalog, HarnessOptions::default())
        });
        harness.reconcile(composition).await
    }

    /// The underlying harness (after the first reconcile).
    pub fn harness(&self) -> Option<&Harness> {
        self.harness.as_ref()
    }

    /// State of the current instance of `entry`, if it is mounted.
    pub async fn instance(&self, entry: &str) -> Option<PluginState> {
        self.harness
            .as_ref()?
            .instance_state(entry)
            .await
            .map(|(s, _)| s)
    }

    /// Tool names of the current generation.
    pub fn tool_names(&self) -> Vec<String> {
        self.harness
            .as_ref()
            .map(Harness::tool_names)
            .unwrap_or_default()
    }

    /// Call a tool through the real boundary (policy, approval, hooks,
    /// telemetry) as a run at the root scope.
    pub async fn call_tool(&self, name: &str, args: Value) -> Result<ToolResult, ExecError> {
        let harness = self.harness.as_ref().ok_or_else(|| {
            ExecError::Refused(crate::runtime::ToolRefusal::UnknownTool {
                tool: name.to_owned(),
                available: Vec::new(),
            })
        })?;
        let lease = harness.acquire().map_err(|_| {
            ExecError::Refused(crate::runtime::ToolRefusal::UnknownTool {
                tool: name.to_owned(),
                available: Vec::new(),
            })
        })?;
        let services = ExecutorServices {
            policy: Arc::new(self.policy.clone()),
            approvals: Arc::new(ApproveListed(self.approved.clone())),
            telemetry: Arc::clone(&self.telemetry) as Arc<dyn crate::engine::telemetry::Telemetry>,
            redactor: self.redactor.clone(),
            default_timeout: None,
            replay: None,
            secrets: Arc::new(self.secrets.clone()),
            // As a run does: a tool without permissions that is not
            // read-only needs approval.
            ungoverned: crate::runtime::Ungoverned::NeedsApproval,
            paths: None,
        };
        let run = RunContext {
            run_id: "run_test".into(),
            generation: Arc::clone(lease.generation()),
            agent: None,
            scope: "/".into(),
            budget: None,
            extra_tools: None,
        };
        ToolExecutor::new(services)
            .execute(
                &run,
                ToolCall {
                    name: name.to_owned(),
                    args,
                    call_id: None,
                },
                false,
            )
            .await
    }
}

type BTreeMapPlugins = std::collections::BTreeMap<String, Arc<dyn Plugin>>;

fn version(text: &str) -> Version {
    Version::parse(text).unwrap_or_else(|_| Version::from_semver(semver::Version::new(1, 0, 0)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::{ToolCallContext, ToolOutput, plugin_fn};
    use serde_json::json;

    struct Search;

    #[async_trait::async_trait]
    impl Tool for Search {
        fn name(&self) -> &str {
            "search"
        }
        fn description(&self) -> &str {
            "Search."
        }
        async fn call(
            &self,
            args: Value,
            _ctx: &ToolCallContext,
        ) -> Result<ToolOutput, crate::runtime::BoxError> {
            Ok(ToolOutput::content(json!({ "hits": [args["q"].clone()] })))
        }
    }

    #[tokio::test]
    async fn a_plugin_registers_its_tool() {
        let mut h = TestHarness::new();
        h.install(plugin_fn(
            Manifest {
                permissions: vec!["network.fetch".into()],
                ..Manifest::new("search", version("1.0.0"))
            },
            |ctx: PluginContext| async move {
                ctx.tools().register(
                    Arc::new(Search),
                    ToolPolicy {
                        permissions: vec!["network.fetch".into()],
                        ..ToolPolicy::default()
                    },
                )?;
                Ok(())
            },
        ));
        h.reconcile().await.unwrap();
        assert_eq!(h.tool_names(), ["search"]);
        let denied = h.call_tool("search", json!({"q": "x"})).await;
        assert!(denied.is_err(), "no grant yet");
        h.grant("network.fetch").unwrap();
        let ok = h.call_tool("search", json!({"q": "x"})).await.unwrap();
        assert_eq!(ok.content, json!({"hits": ["x"]}));
        assert!(
            h.telemetry.violations().is_empty(),
            "{:?}",
            h.telemetry.violations()
        );
    }

    #[tokio::test]
    async fn a_plugin_activates_when_its_dependency_appears() {
        let mut h = TestHarness::new();
        let mut manifest = Manifest::new("memory", version("2.1.0"));
        h.require(&mut manifest, "database", ">=1,<2");
        let id = h.install(plugin_fn(manifest, |ctx: PluginContext| async move {
            let dsn = ctx.require::<&'static str>("database")?;
            assert_eq!(*dsn, "postgres://test");
            Ok(())
        }));
        assert_eq!(id, "plugin-1");
        h.reconcile().await.unwrap();
        assert_eq!(h.instance("plugin-1").await, None);
        h.provide("database", CapabilityValue::new("postgres://test"), "1.0.0");
        h.reconcile().await.unwrap();
        assert_eq!(h.instance("plugin-1").await, Some(PluginState::Active));
    }

    #[tokio::test]
    async fn fake_tools_cross_the_boundary_and_secrets_are_redacted() {
        let mut h = TestHarness::new();
        h.provide_secret("API_TOKEN", "tok-0123456789");
        let read_only = ToolPolicy {
            idempotent: true,
            ..ToolPolicy::default()
        };
        h.install_tool(Search, read_only);
        h.reconcile().await.unwrap();
        let out = h
            .call_tool("search", json!({"q": "tok-0123456789"}))
            .await
            .unwrap();
        assert_eq!(out.status, crate::runtime::ToolStatus::Ok);
        assert!(!h.telemetry.mentions("tok-0123456789"));
    }

    #[tokio::test]
    async fn a_tool_without_permissions_that_is_not_read_only_needs_approval() {
        let mut h = TestHarness::new();
        h.install_tool(Search, ToolPolicy::default());
        h.reconcile().await.unwrap();
        let refused = h.call_tool("search", json!({"q": "x"})).await;
        assert!(
            matches!(
                refused,
                Err(ExecError::Refused(
                    crate::runtime::ToolRefusal::ApprovalDenied { .. }
                ))
            ),
            "{refused:?}"
        );
        h.approve("search");
        let out = h.call_tool("search", json!({"q": "x"})).await.unwrap();
        assert_eq!(out.status, crate::runtime::ToolStatus::Ok);
    }
}
