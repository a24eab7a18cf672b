//! Read-only views of the control plane for diagnostics and tests.

use super::harness::Harness;
use super::lifecycle::{Health, PluginState};

/// One managed instance as diagnostics show it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct InstanceView {
    /// Entry id.
    pub entry_id: String,
    /// Instance id.
    pub instance_id: String,
    /// State.
    pub state: &'static str,
    /// Health.
    pub health: &'static str,
    /// Whether the current generation uses it.
    pub current: bool,
    /// Live owned effects (tasks and cleanups).
    pub effects: usize,
}

impl Harness {
    /// Every managed instance (current and retained), by instance id.
    pub async fn instances(&self) -> Vec<InstanceView> {
        let control = self.shared.control.lock().await;
        let mut views: Vec<InstanceView> = control
            .instances
            .iter()
            .map(|(iid, m)| InstanceView {
                entry_id: m.instance.entry_id.to_string(),
                instance_id: iid.to_string(),
                state: m.instance.state().as_str(),
                health: m.instance.health().as_str(),
                current: control.current_by_entry.get(&m.instance.entry_id) == Some(iid),
                effects: m
                    .instance
                    .context()
                    .map_or(0, super::context::PluginContext::live_effects),
            })
            .collect();
        // The map is hashed: listed by instance id, as promised.
        views.sort_unstable_by(|a, b| a.instance_id.cmp(&b.instance_id));
        views
    }

    /// State and health of the instance the current generation uses for
    /// `entry_id`.
    pub async fn instance_state(&self, entry_id: &str) -> Option<(PluginState, Health)> {
        let control = self.shared.control.lock().await;
        let iid = control.current_by_entry.get(entry_id)?;
        let m = control.instances.get(iid)?;
        Some((m.instance.state(), m.instance.health()))
    }

    /// Tool names of the current generation, sorted.
    pub fn tool_names(&self) -> Vec<String> {
        self.current()
            .map(|g| g.tools.keys().cloned().collect())
            .unwrap_or_default()
    }
}
