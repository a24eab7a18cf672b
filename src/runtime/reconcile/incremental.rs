//! Reconciling a composition that resolves as the current one does.
//!
//! When the desired composition differs from the current generation's only
//! in some entries' configurations (or where they were declared), the scope
//! tree and the plan are shared, and so is everything an unchanged entry
//! contributes: its instance, its identity, its rows in the generation and
//! in the snapshot. Here only what can change is visited — the changed
//! entries, the entries whose identity may move without a change in the
//! composition (secret references, inactive instances), and, in activation
//! order, the consumers of whatever was mounted again — and the new
//! generation is derived from the current one by rewriting those rows. A
//! configuration change in a large composition then costs in proportion to
//! what it touches (the snapshot digests excepted: they cover the whole
//! record), and the outcome is the one placing every entry would reach
//! (debug builds build both and compare them).

use std::sync::Arc;

use super::{Attempt, PlaceError, ReconcileError};
use crate::engine::identity::GenerationId;
use crate::engine::model::{Composition, EntryId};
use crate::engine::resolve::{Consumer, Plan};
use crate::engine::snapshot::{SnapshotContext, rederive_snapshot};
use crate::engine::tree::ScopeTree;
use crate::runtime::generation::{Generation, Provider};
use crate::runtime::harness::{ControlState, Harness, InstanceByEntry};
use crate::runtime::identity::NodeImpact;
use crate::runtime::lifecycle::PluginState;

/// What placing the changed entries did.
pub(super) struct Placed {
    /// Entry id → instance id, every entry of the plan.
    pub(super) chosen: InstanceByEntry,
    /// The impact of each entry placed, sorted by entry id.
    pub(super) decided: Vec<NodeImpact>,
    /// Entry id → instance id before placing: every entry not in
    /// `decided` kept its instance.
    pub(super) kept: InstanceByEntry,
    /// Positions (in the activation order) of the entries mounted again.
    pub(super) remounted: Vec<usize>,
    /// Their previous instance ids.
    pub(super) displaced: Vec<Arc<str>>,
    /// Whether a remounted entry's old or new instance registered tools
    /// (the generation's tools may have changed: check them again).
    pub(super) tools_changed: bool,
    /// Whether one registered hooks (the hook order must be rebuilt).
    pub(super) hooks_changed: bool,
}

/// The position of `id` in the plan's activation order.
fn position(plan: &Plan, id: &EntryId) -> Option<usize> {
    plan.entries
        .get(id)
        .and_then(|p| p.order)
        .filter(|&i| plan.activation_order.get(i) == Some(id))
}

impl Harness {
    /// Place the entries of `composition` that may differ from the current
    /// generation — `changed` (entries whose configuration or declaration
    /// changed), entries referencing secrets, entries whose instance is not
    /// active, and the consumers of every entry mounted again — and reuse
    /// every other entry's current instance. `plan` is the current
    /// generation's (the caller checked: same resolution inputs), and every
    /// entry of it is placed in the current generation.
    pub(super) async fn place_changed(
        &self,
        control: &mut ControlState,
        composition: &Composition,
        plan: &Plan,
        changed: &[EntryId],
        with_secrets: &[EntryId],
        attempt: &mut Attempt,
    ) -> Result<Placed, PlaceError> {
        let n = plan.activation_order.len();
        let mut dirty = vec![false; n];
        for id in changed {
            if let Some(p) = position(plan, id) {
                dirty[p] = true;
            }
        }
        for id in with_secrets {
            if let Some(p) = position(plan, id) {
                dirty[p] = true;
            }
        }
        for m in control.instances.values() {
            if m.instance.state() == PluginState::Active {
                continue;
            }
            let current = control
                .current_by_entry
                .get(&m.instance.entry_id)
                .is_some_and(|iid| *iid == m.instance.instance_id);
            if current
                && let Some(p) = EntryId::new(&m.instance.entry_id)
                    .ok()
                    .and_then(|id| position(plan, &id))
            {
                dirty[p] = true;
            }
        }
        let mut chosen = control.current_by_entry.clone();
        let mut placed = Vec::new();
        let mut remounted = Vec::new();
        let mut displaced = Vec::new();
        let (mut tools_changed, mut hooks_changed) = (false, false);
        for p in 0..n {
            if !dirty[p] {
                continue;
            }
            let entry_id = &plan.activation_order[p];
            let old = control.current_by_entry.get(entry_id.as_str()).cloned();
            let decision = self
                .place(
                    control,
                    composition,
                    plan,
                    (
                        entry_id,
                        plan.resolutions_of(entry_id.as_str()),
                        super::Prepared::Nothing,
                    ),
                    &mut chosen,
                    attempt,
                )
                .await?;
            if decision.new_instance_id != decision.old_instance_id {
                remounted.push(p);
                displaced.extend(old.clone());
                for iid in old.iter().chain(&decision.new_instance_id) {
                    if let Some(m) = control.instances.get(iid) {
                        let regs = m.instance.registrations();
                        tools_changed |= !regs.tools.is_empty();
                        hooks_changed |= !regs.hooks.is_empty();
                    }
                }
                // Its consumers are bound to the new instance: their
                // identities change (they come later in the order).
                for r in attempt.selecting(plan, entry_id) {
                    if let Consumer::Entry(consumer) = &r.consumer
                        && let Some(c) = position(plan, consumer)
                    {
                        dirty[c] = true;
                    }
                }
            }
            placed.push(decision);
        }
        // Every other entry keeps its instance (`kept`, the map as it was).
        placed.sort_by(|a, b| a.entry_id.cmp(&b.entry_id));
        Ok(Placed {
            kept: control.current_by_entry.clone(),
            chosen,
            decided: placed,
            remounted,
            displaced,
            tools_changed,
            hooks_changed,
        })
    }

    /// The generation `build_generation` builds for `chosen`, derived from
    /// `previous` (the current generation, of the same tree and plan) by
    /// rewriting the rows of the entries at `remounted`. When a row does
    /// not line up, the composition is handed back (the caller builds the
    /// generation instead).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn derive_generation(
        &self,
        control: &ControlState,
        previous: &Generation,
        composition: Composition,
        tree: Arc<ScopeTree>,
        plan: Arc<Plan>,
        chosen: &InstanceByEntry,
        remounted: &[usize],
        sequence: u64,
    ) -> Result<Result<Generation, Composition>, ReconcileError> {
        let mut instances = previous.instances.clone();
        let mut capabilities = previous.capabilities.clone();
        let mut tools = previous.tools.clone();
        let mut mounts = previous.mounts.clone();
        for &p in remounted {
            let entry_id = &plan.activation_order[p];
            let (Some(row), Some(iid)) = (instances.get_mut(p), chosen.get(entry_id.as_str()))
            else {
                return Ok(Err(composition));
            };
            let (Some(old), Some(new)) = (
                control.instances.get(&*row.instance_id),
                control.instances.get(iid),
            ) else {
                return Ok(Err(composition));
            };
            if *row.entry_id != *entry_id.as_str() {
                return Ok(Err(composition));
            }
            row.instance_id = Arc::clone(iid);
            row.routes = new.instance.registrations().routes.as_slice().into();
            mounts.insert(entry_id.clone(), new.mount);
            // Capability providers: the old instance's rows out, the new
            // one's in at its place in the activation order (providers of
            // a capability are listed in that order).
            for reg in old.instance.registrations().capabilities.iter() {
                if let Some(list) = capabilities.get_mut(&reg.capability) {
                    let kept: Vec<Provider> = list
                        .iter()
                        .filter(|pr| *pr.entry_id != *entry_id.as_str())
                        .cloned()
                        .collect();
                    if kept.is_empty() {
                        capabilities.remove(&reg.capability);
                    } else {
                        *list = Arc::from(kept);
                    }
                }
            }
            for reg in new.instance.registrations().capabilities.iter() {
                let slot = capabilities
                    .entry(reg.capability.clone())
                    .or_insert_with(|| Arc::from([]));
                let mut list = slot.to_vec();
                let mut at = list.len();
                for (k, pr) in list.iter().enumerate() {
                    let later = EntryId::new(&pr.entry_id)
                        .ok()
                        .and_then(|id| position(&plan, &id))
                        .is_none_or(|q| q > p);
                    if later {
                        at = k;
                        break;
                    }
                }
                list.insert(
                    at,
                    Provider {
                        entry_id: Arc::clone(&row.entry_id),
                        instance_id: Arc::clone(&row.instance_id),
                        registration: reg.clone(),
                    },
                );
                *slot = Arc::from(list);
            }
            // Only the tools it still owns: an entry earlier in the order
            // may have taken the name over in this reconcile.
            for t in old.instance.registrations().tools.iter() {
                if tools
                    .get(t.tool.name())
                    .is_some_and(|r| r.owner == entry_id.as_str())
                {
                    tools.remove(t.tool.name());
                }
            }
            for t in new.instance.registrations().tools.iter().cloned() {
                super::insert_tool(&mut tools, &composition, t);
            }
        }
        let ctx = SnapshotContext {
            generation: GenerationId::from_sequence(sequence),
            mounts,
            ..SnapshotContext::default()
        };
        let snapshot = rederive_snapshot(
            &previous.snapshot,
            &composition,
            &tree,
            &plan,
            &ctx,
            remounted,
        )
        .map_err(|e| ReconcileError::Snapshot(e.to_string()))?;
        let semantic_text = Arc::ptr_eq(
            &snapshot.semantic_scopes,
            &previous.snapshot.semantic_scopes,
        )
        .then(|| previous.semantic_text());
        let digests = match &semantic_text {
            Some(text) => snapshot.digests_with_semantic_text(text),
            None => snapshot.digests(),
        }
        .map_err(|e| ReconcileError::Snapshot(e.to_string()))?;
        let generation = Generation::new(
            GenerationId::from_sequence(sequence),
            Arc::new(composition),
            tree,
            plan,
            instances,
            capabilities,
            tools,
            previous.hooks.clone(),
            snapshot,
            digests,
        )
        .with_mounts(ctx.mounts)
        .with_selecting_index_of(previous);
        Ok(Ok(match semantic_text {
            Some(text) => generation.with_semantic_text(text),
            None => generation,
        }))
    }
}

/// The parts of two generations that must agree when one was derived and
/// the other built for the same composition and instances (debug builds).
#[cfg(debug_assertions)]
pub(super) fn assert_same_generation(derived: &Generation, built: &Generation) {
    let instances = |g: &Generation| -> Vec<(String, String, String)> {
        g.instances
            .iter()
            .map(|i| {
                (
                    i.entry_id.to_string(),
                    i.instance_id.to_string(),
                    i.plugin.to_string(),
                )
            })
            .collect()
    };
    let providers = |g: &Generation| -> Vec<(String, String, String, String)> {
        g.capabilities
            .iter()
            .flat_map(|(cap, list)| {
                list.iter().map(move |p| {
                    (
                        cap.to_string(),
                        p.entry_id.to_string(),
                        p.instance_id.to_string(),
                        p.registration.version.to_string(),
                    )
                })
            })
            .collect()
    };
    let tools = |g: &Generation| -> Vec<(String, String, Vec<String>)> {
        g.tools
            .iter()
            .map(|(name, t)| (name.clone(), t.owner.clone(), t.policy.permissions.clone()))
            .collect()
    };
    assert_eq!(instances(derived), instances(built), "instances");
    assert_eq!(providers(derived), providers(built), "capability providers");
    assert_eq!(tools(derived), tools(built), "tools");
    assert_eq!(derived.mounts, built.mounts, "mounts");
    assert_eq!(derived.snapshot, built.snapshot, "snapshot");
    assert_eq!(derived.digests, built.digests, "digests");
}
