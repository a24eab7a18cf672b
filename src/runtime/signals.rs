//! What the control plane tells the outside: telemetry signals and
//! control-plane hooks at the lifecycle boundaries it owns.
//!
//! Control-plane hooks are dispatched against the live registry (every
//! active instance's hooks); their failures join the transition's report and
//! never abort it. Signals go to the harness's telemetry, which the caller
//! wraps safe + redacting.

use serde_json::{Value, json};

use super::harness::{ControlState, Harness};
use super::hooks::{HookEvent, HookSet};
use super::instance::{PluginInstance, PluginSetupError};
use super::scope::{CleanupFailure, EffectCleanupError};
use crate::engine::telemetry::{AttrValue, Attributes, SpanId};

/// Attributes from `(key, value)` pairs.
pub(crate) fn attrs<const N: usize>(pairs: [(&str, AttrValue); N]) -> Attributes {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

impl Harness {
    pub(crate) fn event(&self, name: &str, attributes: Attributes) {
        let _ = self.shared.options.telemetry.event(name, &attributes);
    }

    /// Start a span when spans are recorded; `attributes` is called only
    /// then (a mount and an unmount per entry built theirs for nothing).
    pub(crate) fn span_start(
        &self,
        name: &str,
        attributes: impl FnOnce() -> Attributes,
    ) -> Option<SpanId> {
        if !self.shared.options.telemetry.spans_enabled() {
            return None;
        }
        self.shared
            .options
            .telemetry
            .span_start(name, &attributes())
            .ok()
    }

    pub(crate) fn span_end(
        &self,
        span: Option<SpanId>,
        attributes: Attributes,
        error: Option<&str>,
    ) {
        if let Some(id) = span {
            let _ = self
                .shared
                .options
                .telemetry
                .span_end(id, &attributes, error);
        }
    }

    /// Hooks of every active managed instance, in dispatch order.
    pub(crate) fn live_hooks(&self, control: &ControlState) -> HookSet {
        HookSet::new(
            control
                .hooked
                .iter()
                .filter_map(|id| control.instances.get(id))
                .flat_map(|m| m.instance.registrations().hooks.clone())
                .collect(),
        )
    }

    /// Dispatch a control-plane event; failures are returned, never raised.
    pub(crate) async fn control_hook(
        &self,
        hooks: &HookSet,
        event: HookEvent,
        payload: impl FnOnce() -> Value,
    ) -> Vec<CleanupFailure> {
        // Built only when a hook will read it: a mount without hooks (most
        // of a 100,000-entry publish) builds no JSON.
        if hooks.for_event(event).next().is_none() {
            return Vec::new();
        }
        match hooks.dispatch(event, payload()).await {
            Ok(out) => out
                .failures
                .into_iter()
                .map(|f| {
                    self.event(
                        "hook.failure",
                        attrs([
                            ("event", f.event.as_str().into()),
                            ("plane", "control".into()),
                            ("hook", f.hook.clone().into()),
                            ("owner", f.owner.clone().into()),
                            ("error_type", "hook_error".into()),
                            ("description", f.error.clone().into()),
                        ]),
                    );
                    CleanupFailure {
                        description: format!("hook {} ({})", f.hook, event.as_str()),
                        error: f.error,
                    }
                })
                .collect(),
            // Control-plane dispatch never raises; keep the shape total.
            Err(e) => vec![CleanupFailure {
                description: format!("hook {}", e.hook),
                error: e.error,
            }],
        }
    }

    /// Mount `instance` with lifecycle hooks and a `plugin.mount` span.
    pub(crate) async fn mount_observed(
        &self,
        control: &ControlState,
        instance: &mut PluginInstance,
        spec: super::context::ContextSpec,
        revision: u64,
    ) -> Result<Vec<CleanupFailure>, PluginSetupError> {
        let hooks = self.live_hooks(control);
        let plugin = spec.manifest.name.clone();
        let mut failures = self
            .control_hook(&hooks, HookEvent::PluginMounting, || {
                let requirements: Vec<String> = spec
                    .manifest
                    .requires
                    .values()
                    .map(|r| r.render())
                    .collect();
                json!({ "plugin": plugin, "entry_id": instance.entry_id, "revision": revision, "requirements": requirements })
            })
            .await;
        let span = self.span_start("plugin.mount", || {
            attrs([
                ("plugin", plugin.clone().into()),
                ("entry_id", instance.entry_id.clone().into()),
                (
                    "revision",
                    AttrValue::from(i64::try_from(revision).unwrap_or(i64::MAX)),
                ),
                ("instance_id", instance.instance_id.clone().into()),
            ])
        });
        let result = instance
            .mount(
                spec,
                std::sync::Arc::clone(&self.shared.hook_sequence),
                self.shared.options.task_timeout,
            )
            .await;
        self.span_end(
            span,
            Attributes::new(),
            result.as_ref().err().map(|e| e.error.as_str()),
        );
        result?;
        let hooks = self.live_hooks(control);
        let mut mounted_hooks = hooks.clone();
        // The new instance's own hooks observe its own `plugin_mounted`.
        let own = instance.registrations().hooks.clone();
        if !own.is_empty() {
            let mut all: Vec<_> = control
                .hooked
                .iter()
                .filter_map(|id| control.instances.get(id))
                .flat_map(|m| m.instance.registrations().hooks.clone())
                .collect();
            all.extend(own);
            mounted_hooks = HookSet::new(all);
        }
        failures.extend(
            self.control_hook(&mounted_hooks, HookEvent::PluginMounted, || json!({ "plugin": plugin, "entry_id": instance.entry_id, "instance_id": instance.instance_id, "scope_id": format!("plugin:{}", instance.entry_id) }),
            )
            .await,
        );
        Ok(failures)
    }

    /// Unmount with lifecycle hooks, a `plugin.unmount` span and
    /// `cleanup.failure` events; every failure is returned.
    pub(crate) async fn unmount_observed(
        &self,
        hooks: &HookSet,
        instance: &mut PluginInstance,
    ) -> Vec<CleanupFailure> {
        let plugin = instance.plugin_name().to_owned();
        let plugin = plugin.as_str();
        let mut failures = self
            .control_hook(hooks, HookEvent::PluginUnmounting, || json!({ "plugin": plugin, "entry_id": instance.entry_id, "instance_id": instance.instance_id, "scope_id": format!("plugin:{}", instance.entry_id) }),
            )
            .await;
        let span = self.span_start("plugin.unmount", || {
            attrs([
                ("plugin", plugin.into()),
                ("entry_id", instance.entry_id.clone().into()),
                ("instance_id", instance.instance_id.clone().into()),
                ("state", instance.state().as_str().into()),
            ])
        });
        let result: Result<(), EffectCleanupError> = instance.unmount().await;
        let error = result.as_ref().err().map(ToString::to_string);
        self.span_end(span, Attributes::new(), error.as_deref());
        if let Err(e) = result {
            for f in &e.failures {
                self.event(
                    "cleanup.failure",
                    attrs([
                        ("error_type", "cleanup_error".into()),
                        ("entry_id", instance.entry_id.clone().into()),
                        ("description", f.description.clone().into()),
                    ]),
                );
            }
            failures.extend(e.failures);
        }
        failures.extend(
            self.control_hook(hooks, HookEvent::PluginUnmounted, || json!({ "plugin": plugin, "entry_id": instance.entry_id, "instance_id": instance.instance_id }),
            )
            .await,
        );
        failures
    }
}
