//! Transactional reconcile: resolve, mount what changed in activation order,
//! validate each provider's registrations right after it mounts, and publish
//! an immutable generation — or roll back every mount of the attempt and
//! leave the current generation untouched.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::Serialize;

use super::context::{Binding, ContextSpec};
use super::generation::{
    Generation, GenerationInstance, GenerationState, Provider, SelectingIndex, selecting_index,
};
use super::harness::{ControlState, Harness, InstanceByEntry, Managed, SeedState};
use super::hooks::HookSet;
use super::identity::{
    Decision, IdentityBasis, ManifestHashes, NodeIdentity, NodeImpact, NodeImpacts, changes,
};
use super::instance::{PluginInstance, PluginSetupError};
use super::scope::CleanupFailure;
use super::signals;
use crate::engine::identity::{GenerationId, instance_id, instance_id_arc};
use crate::engine::model::{Composition, Entry, EntryId};
use crate::engine::policy::{FailClosed, PolicyEngine};
use crate::engine::resolve::{
    Plan, Resolution, Selected, Status, resolve_with_tree, with_origins_of,
};
use crate::engine::snapshot::{
    Digests, MountNumbers, SnapshotContext, SnapshotRecord, build_snapshot_digested,
};
use crate::engine::tree::ScopeTree;

mod compare;
mod incremental;

use compare::{Compared, Sameness, compare_compositions, same_entry};

/// A provider's registrations break its manifest's promise.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("plugin `{provider_name}` (entry `{provider}`) {promise}; it registered [{}]; consumers affected: [{}]; rolled back: [{}]", actual.join(", "), consumers.join(", "), rolled_back.join(", "))]
pub struct PluginContractError {
    /// Provider entry id.
    pub provider: String,
    /// Provider manifest name.
    pub provider_name: String,
    /// The broken promise, e.g. `promised database@1 but its registrations do not provide it`.
    pub promise: String,
    /// The promised contract (`database@1`) or requirement text.
    pub promised: String,
    /// What it actually registered (`<capability> <version>`).
    pub actual: Vec<String>,
    /// Consumers bound to the provider.
    pub consumers: Vec<String>,
    /// Entries whose mounts were rolled back, most recent first.
    pub rolled_back: Vec<String>,
    /// Failures met while rolling back.
    pub rollback_failures: Vec<String>,
}

/// Why a reconcile published nothing.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReconcileError {
    /// Entries require each other in a cycle; nothing was mounted.
    #[error("dependency cycle: {}", cycles.join("; "))]
    Cycle {
        /// Cycles as `a -> b -> a`.
        cycles: Vec<String>,
    },
    /// An implementation could not be instantiated.
    #[error("entry `{entry}` cannot be instantiated: {error}; rolled back: [{}]", rolled_back.join(", "))]
    Instantiate {
        /// Entry id.
        entry: String,
        /// Error.
        error: String,
        /// Rolled back entries.
        rolled_back: Vec<String>,
    },
    /// A setup failed.
    #[error("{error}; rolled back: [{}]", rolled_back.join(", "))]
    Setup {
        /// The failure.
        error: Box<PluginSetupError>,
        /// Rolled back entries, most recent first.
        rolled_back: Vec<String>,
    },
    /// A provider broke its contract.
    #[error(transparent)]
    Contract(Box<PluginContractError>),
    /// Two tools share a name in one generation.
    #[error("tool `{tool}` is registered by several entries ({}); tool names are unique in a generation; rolled back: [{}]", owners.join(", "), rolled_back.join(", "))]
    DuplicateTool {
        /// Tool name.
        tool: String,
        /// Owners.
        owners: Vec<String>,
        /// Rolled back entries.
        rolled_back: Vec<String>,
    },
    /// A tool requires a permission its plugin's manifest does not declare.
    #[error("tool `{tool}` of `{entry}` requires permissions its plugin does not declare: {}; rolled back: [{}]", undeclared.join("; "), rolled_back.join(", "))]
    UndeclaredPermission {
        /// Entry id.
        entry: String,
        /// Tool name.
        tool: String,
        /// What is not declared.
        undeclared: Vec<String>,
        /// Rolled back entries.
        rolled_back: Vec<String>,
    },
    /// The snapshot could not be built (a non-finite float in a tool schema).
    #[error("the snapshot cannot be built: {0}")]
    Snapshot(String),
    /// The harness is stopping.
    #[error("the harness is stopping")]
    Stopping,
}

/// What a reconcile did.
#[derive(Clone, Debug, PartialEq)]
pub struct ReconcileReport {
    /// The current generation after the reconcile.
    pub generation_id: String,
    /// Whether a new generation was published (false: identical composition).
    pub published: bool,
    /// Entries mounted in this reconcile.
    pub mounted: Vec<Arc<str>>,
    /// Entries pending (not mounted).
    pub pending: Vec<String>,
    /// Instances disposed.
    pub disposed: Vec<String>,
    /// Per-node impact, sorted by entry id.
    pub impact: NodeImpacts,
    /// Cleanup failures met while reclaiming.
    pub failures: Vec<CleanupFailure>,
    /// Entries quarantined by `on_failure = "skip"`, with their error.
    pub quarantined: Vec<(String, String)>,
}

impl ReconcileReport {
    /// The entries whose instances were reused, in entry id order.
    #[must_use]
    pub fn reused(&self) -> Vec<Arc<str>> {
        self.impact.reused()
    }
}

/// Serialized with `reused` listed (as when it was a field).
impl Serialize for ReconcileReport {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("ReconcileReport", 9)?;
        s.serialize_field("generation_id", &self.generation_id)?;
        s.serialize_field("published", &self.published)?;
        s.serialize_field("mounted", &self.mounted)?;
        s.serialize_field("reused", &self.reused())?;
        s.serialize_field("pending", &self.pending)?;
        s.serialize_field("disposed", &self.disposed)?;
        s.serialize_field("impact", &self.impact)?;
        s.serialize_field("failures", &self.failures)?;
        s.serialize_field("quarantined", &self.quarantined)?;
        s.end()
    }
}

struct Attempt {
    /// (entry id, instance id) of every instance mounted so far.
    mounted: Vec<(Arc<str>, Arc<str>)>,
    /// Instance ids of the entries placed without mounting
    /// ([`super::HarnessOptions::publish_only`]).
    unmounted: Vec<Arc<str>>,
    /// Each mounted entry's mount count before the mount, in mount order
    /// (an undo log, replayed backwards on rollback so the earliest value
    /// wins: an attempt that mounts one entry does not copy every entry's
    /// count).
    mounts_before: Vec<(Arc<str>, Option<u64>)>,
    /// Control-plane hook failures met while mounting.
    hook_failures: Vec<CleanupFailure>,
    /// Indexes into `plan.resolutions` of the resolved ones, by the entry
    /// they selected: the current generation's when the plan is its own,
    /// else built after a few scans (so checking every provider stays
    /// linear in resolutions).
    selecting: Option<Arc<SelectingIndex>>,
    /// Lookups answered by scanning so far.
    scans: usize,
    /// What each manifest alone decides of a node identity, hashed once.
    hashes: ManifestHashes,
    /// The policy of what plugins do outside runs, by scope.
    outside: OutsideRunPolicy,
    /// Whether an entry that needs no mount may be placed without one: a
    /// publish-only harness's first publication
    /// ([`super::HarnessOptions::publish_only`]).
    may_skip_mounts: bool,
}

/// The policy judging what a plugin does outside any run (a capability
/// call from its setup, a background task, an HTTP route), by scope: the
/// composition's `[policy]` rules, or — in a scope a `policy` provider
/// governs, which judges only inside runs — failing closed.
struct OutsideRunPolicy {
    rules: Arc<dyn PolicyEngine>,
    /// Where the entries providing `policy` sit (almost always none): a
    /// scope at or under one is governed by it.
    providers_at: Vec<crate::engine::tree::ScopeIx>,
    tree: Arc<ScopeTree>,
}

impl OutsideRunPolicy {
    fn new(composition: &Composition, tree: Arc<ScopeTree>) -> Self {
        let policy = crate::engine::system::SystemCapability::Policy.capability();
        let providers_at = composition
            .entries
            .values()
            .filter(|e| e.manifest.provides.contains_key(&policy))
            .filter_map(|e| tree.find(&e.scope.value))
            .collect();
        Self {
            rules: Arc::new(
                composition
                    .policy
                    .as_ref()
                    .map(|p| p.rules.clone())
                    .unwrap_or_default(),
            ),
            providers_at,
            tree,
        }
    }

    fn of(&self, scope: &str) -> Arc<dyn PolicyEngine> {
        if self.providers_at.is_empty() {
            return Arc::clone(&self.rules);
        }
        let governed = match self.tree.find_str(scope) {
            Some(ix) => self
                .providers_at
                .iter()
                .any(|&at| self.tree.is_ancestor_or_self(at, ix)),
            None => true,
        };
        if governed {
            Arc::new(FailClosed {
                reason: format!(
                    "a `policy` provider governs scope {scope}; it judges capability calls only inside a run: make this one from a tool call"
                ),
            })
        } else {
            Arc::clone(&self.rules)
        }
    }
}

impl Attempt {
    /// The instances this attempt mounted become current: no longer stale
    /// (each was recorded stale when mounted, so an attempt whose future is
    /// dropped before it publishes or rolls back leaves nothing undisposable).
    fn publish_mounts(&self, control: &mut ControlState) {
        for (_, iid) in &self.mounted {
            control.stale.remove(iid);
        }
    }

    /// Lookups answered by scanning the resolutions before the index is
    /// built: an attempt that mounts a few entries (a configuration change)
    /// never pays for indexing every resolution.
    const SCANS_BEFORE_INDEX: usize = 8;

    fn selecting<'p>(&mut self, plan: &'p Plan, provider: &EntryId) -> Vec<&'p Resolution> {
        if self.selecting.is_none() && self.scans < Self::SCANS_BEFORE_INDEX {
            self.scans += 1;
            return plan
                .resolutions
                .iter()
                .filter(|r| {
                    r.status == Status::Resolved
                        && r.selected.as_ref().is_some_and(|s| s.entry == *provider)
                })
                .collect();
        }
        let index = self
            .selecting
            .get_or_insert_with(|| Arc::new(selecting_index(plan)));
        index
            .get(provider)
            .map(|ix| ix.iter().map(|&i| &plan.resolutions[i]).collect())
            .unwrap_or_default()
    }
}

impl Harness {
    /// Reconcile the harness to `composition`, inside a `harness.reconcile`
    /// span (failures recorded on it).
    pub async fn reconcile(
        &self,
        composition: Composition,
    ) -> Result<ReconcileReport, ReconcileError> {
        self.reconcile_with(composition, None).await
    }

    /// [`Self::reconcile`] of a composition already resolved: `tree` and
    /// `plan` are its [`ScopeTree::new`] and [`resolve_with_tree`] (as a
    /// workspace's load built them), so they are not built again.
    pub async fn reconcile_resolved(
        &self,
        composition: Composition,
        tree: Arc<ScopeTree>,
        plan: Arc<Plan>,
    ) -> Result<ReconcileReport, ReconcileError> {
        // Checked in debug builds (the test suite): both are what this
        // composition builds afresh.
        #[cfg(debug_assertions)]
        {
            let fresh = ScopeTree::new(&composition);
            debug_assert_eq!(
                format!("{:?}", *tree),
                format!("{fresh:?}"),
                "the scope tree given is the composition's"
            );
            debug_assert!(
                *plan == resolve_with_tree(&composition, &fresh),
                "the plan given is the composition's"
            );
        }
        self.reconcile_with(composition, Some((tree, plan))).await
    }

    async fn reconcile_with(
        &self,
        composition: Composition,
        resolved: Option<(Arc<ScopeTree>, Arc<Plan>)>,
    ) -> Result<ReconcileReport, ReconcileError> {
        use crate::engine::telemetry::AttrValue;
        let desired = i64::try_from(composition.entries.len()).unwrap_or(i64::MAX);
        let span = self.span_start("harness.reconcile", || {
            signals::attrs([("harness", "chassis".into()), ("desired", desired.into())])
        });
        let result = self.reconcile_quarantining(composition, resolved).await;
        let count = |v: usize| AttrValue::from(i64::try_from(v).unwrap_or(i64::MAX));
        match &result {
            Ok(r) => {
                self.span_end(
                    span,
                    signals::attrs([
                        ("generation_id", r.generation_id.clone().into()),
                        ("mounted", count(r.mounted.len())),
                        ("reused", count(r.impact.count(Decision::Reused))),
                        ("disposed", count(r.disposed.len())),
                        ("failures", count(r.failures.len())),
                    ]),
                    None,
                );
                if r.published {
                    let n = |d: Decision| count(r.impact.count(d));
                    self.event(
                        "generation.impact",
                        signals::attrs([
                            ("added", n(Decision::Added)),
                            ("removed", n(Decision::Removed)),
                            ("reused", n(Decision::Reused)),
                            ("rebuilt", n(Decision::Rebuilt)),
                            ("rewired", n(Decision::Rewired)),
                            ("unchanged", n(Decision::Unchanged)),
                            ("pending", n(Decision::Pending)),
                        ]),
                    );
                }
            }
            Err(e) => self.span_end(span, Default::default(), Some(&e.to_string())),
        }
        result
    }

    /// Reconcile; an entry with `on_failure = "skip"` whose instantiation
    /// or setup fails is quarantined (removed, its consumers go pending, its
    /// failure recorded) and the attempt is made again without it — after
    /// the failed attempt rolled back, so the current generation is never
    /// touched by a failure.
    async fn reconcile_quarantining(
        &self,
        composition: Composition,
        mut resolved: Option<(Arc<ScopeTree>, Arc<Plan>)>,
    ) -> Result<ReconcileReport, ReconcileError> {
        if composition.skip_on_failure.is_empty() {
            return self.reconcile_attempt(composition, resolved).await;
        }
        let mut composition = composition;
        let mut quarantined = Vec::new();
        loop {
            // What was resolved is the first attempt's composition's only.
            let result = self
                .reconcile_attempt(composition.clone(), resolved.take())
                .await;
            let failed = match &result {
                Err(ReconcileError::Setup { error, .. }) => {
                    Some((error.entry_id.clone(), error.error.clone(), "setup_failed"))
                }
                Err(ReconcileError::Instantiate { entry, error, .. }) => {
                    Some((entry.clone(), error.clone(), "instantiate_failed"))
                }
                _ => None,
            };
            let skippable = failed.and_then(|(entry, error, kind)| {
                let id = crate::engine::model::EntryId::new(&entry).ok()?;
                composition
                    .quarantines_on_failure(&id)
                    .then_some((id, entry, error, kind))
            });
            let Some((id, entry, error, kind)) = skippable else {
                return result.map(|mut r| {
                    r.quarantined = quarantined;
                    r
                });
            };
            composition.entries.remove(&id);
            composition.quarantined.insert(id, kind.to_owned());
            quarantined.push((entry, error));
        }
    }

    async fn reconcile_attempt(
        &self,
        composition: Composition,
        resolved: Option<(Arc<ScopeTree>, Arc<Plan>)>,
    ) -> Result<ReconcileReport, ReconcileError> {
        if self
            .shared
            .stopping
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            return Err(ReconcileError::Stopping);
        }
        let mut control = self.shared.control.lock().await;
        // The current generation only changes under the control lock.
        let current = self.current();
        // Resolution depends on what the composition says, never on an
        // entry's configuration or where anything was declared (`==` ignores
        // origins): a composition that is the current one, or differs from
        // it only in those, shares the current generation's tree and plan. A
        // composition that only moved declarations is the current one: the
        // current generation stays, its origins pointing into the text it
        // was built from.
        let Compared {
            sameness,
            changed,
            requirements_moved,
            with_secrets,
        } = current.as_ref().map_or_else(Compared::different, |c| {
            compare_compositions(&c.composition, &composition)
        });
        let same_composition = sameness == Sameness::Identical;
        #[cfg(test)]
        let shortcut = !self
            .shared
            .always_place
            .load(std::sync::atomic::Ordering::SeqCst);
        #[cfg(not(test))]
        let shortcut = true;
        let (tree, plan) = match &current {
            Some(c) if sameness != Sameness::Different => {
                (Arc::clone(&c.tree), Arc::clone(&c.plan))
            }
            _ => resolved.unwrap_or_else(|| {
                let tree = ScopeTree::new(&composition);
                let plan = resolve_with_tree(&composition, &tree);
                (Arc::new(tree), Arc::new(plan))
            }),
        };
        {
            let n = |v: usize| {
                crate::engine::telemetry::AttrValue::from(i64::try_from(v).unwrap_or(i64::MAX))
            };
            self.event(
                "dependency.resolve",
                signals::attrs([
                    ("eligible", n(plan.activation_order.len())),
                    ("pending", n(plan.pending.len())),
                    ("cycles", n(plan.cycles.len())),
                    ("edges", n(plan.edges.len())),
                    ("scopes", n(tree.len())),
                ]),
            );
        }
        if let Some(cycle) = cycle_error(&plan) {
            return Err(cycle);
        }
        if same_composition
            && shortcut
            && let Some(current) = &current
            && let Some(report) = self.unchanged(&control, current, &plan, &with_secrets)
        {
            #[cfg(test)]
            self.shared
                .shortcuts
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            return Ok(report);
        }
        // The shared plan says where the current composition declared each
        // requirement; the new generation points into the desired one.
        let plan = match sameness {
            Sameness::Different => plan,
            _ if !requirements_moved => plan,
            _ => with_origins_of(&plan, &composition).map_or(plan, Arc::new),
        };
        let mut attempt = Attempt {
            mounted: Vec::new(),
            unmounted: Vec::new(),
            mounts_before: Vec::new(),
            hook_failures: Vec::new(),
            selecting: None,
            scans: 0,
            hashes: ManifestHashes::default(),
            outside: OutsideRunPolicy::new(&composition, Arc::clone(&tree)),
            may_skip_mounts: self.shared.options.publish_only && current.is_none(),
        };
        // Resolving as the current generation does: place only what may
        // differ, and derive the generation from the current one.
        let incremental = match &current {
            Some(c)
                if sameness == Sameness::SameResolution
                    && shortcut
                    && control.seed.is_none()
                    && c.instances.len() == plan.activation_order.len()
                    && control.current_by_entry.len() == c.instances.len() =>
            {
                Some(Arc::clone(c))
            }
            _ => None,
        };
        // Consumers are looked up in the current generation's index when
        // the plan is the same one (built once, then handed on).
        attempt.selecting = incremental
            .as_ref()
            .filter(|c| Arc::ptr_eq(&c.plan, &plan))
            .map(|c| c.selecting_index());
        let mut chosen = InstanceByEntry::new();
        let mut impact = Vec::new();
        let mut kept = None;
        let mut remounted = None;
        let mut displaced = None;
        let mut tools_changed = true;
        if incremental.is_some() {
            match self
                .place_changed(
                    &mut control,
                    &composition,
                    &plan,
                    &changed,
                    &with_secrets,
                    &mut attempt,
                )
                .await
            {
                Ok(placed) => {
                    chosen = placed.chosen;
                    impact = placed.decided;
                    kept = Some(placed.kept);
                    tools_changed = placed.tools_changed;
                    displaced = Some(placed.displaced);
                    remounted = (!placed.hooks_changed).then_some(placed.remounted);
                }
                Err(e) => {
                    let rolled_back = self.roll_back(&mut control, attempt).await;
                    return Err(e.with_rollback(rolled_back));
                }
            }
        } else {
            // Every entry is placed: its resolutions hashed once, and what
            // each entry alone decides of its identity computed first, on
            // both cores, unless its current instance was placed from the
            // same entry (then its identity is kept, not hashed again).
            let resolutions = plan.resolution_index();
            let placed_from_same: Vec<bool> = plan
                .activation_order
                .iter()
                .map(|id| {
                    let previous = control
                        .current_by_entry
                        .get(id.as_str())
                        .and_then(|iid| control.instances.get(iid))
                        .and_then(|p| p.inputs.as_ref());
                    // As `place` decides to keep an identity (with the
                    // same bindings, which only placing knows).
                    previous.is_some_and(|(e, _)| {
                        composition
                            .entries
                            .get(id)
                            .is_some_and(|entry| keeps_identity_inputs(e, entry))
                    })
                })
                .collect();
            let bases = if placed_from_same.iter().all(|same| *same) {
                vec![None; placed_from_same.len()]
            } else {
                identity_bases(
                    &composition,
                    &plan.activation_order,
                    |i| !placed_from_same[i],
                    &self.shared.catalog,
                    Some(self.shared.options.secrets.as_ref()),
                )
            };
            let prepared = bases
                .into_iter()
                .zip(&placed_from_same)
                .map(|(basis, same)| match (basis, same) {
                    (Some(basis), _) => Prepared::Basis(basis),
                    (None, true) => Prepared::SameEntry,
                    (None, false) => Prepared::Nothing,
                });
            for (entry_id, prepared) in plan.activation_order.iter().zip(prepared) {
                let result = self
                    .place(
                        &mut control,
                        &composition,
                        &plan,
                        (entry_id, resolutions.of(entry_id.as_str()), prepared),
                        &mut chosen,
                        &mut attempt,
                    )
                    .await;
                match result {
                    Ok(decision) => impact.push(decision),
                    Err(e) => {
                        let rolled_back = self.roll_back(&mut control, attempt).await;
                        return Err(e.with_rollback(rolled_back));
                    }
                }
            }
        }
        // Unchanged tools (no remounted instance registers any) were
        // checked when the current generation was published.
        let (duplicate, undeclared) = if tools_changed {
            tool_problems(&control, &chosen, &composition)
        } else {
            (None, None)
        };
        if let Some(dup) = duplicate {
            let rolled_back = self.roll_back(&mut control, attempt).await;
            return Err(ReconcileError::DuplicateTool {
                tool: dup.0,
                owners: dup.1,
                rolled_back: rolled_back.0,
            });
        }
        if let Some((entry, tool, undeclared)) = undeclared {
            let rolled_back = self.roll_back(&mut control, attempt).await;
            return Err(ReconcileError::UndeclaredPermission {
                entry,
                tool,
                undeclared,
                rolled_back: rolled_back.0,
            });
        }
        // The incremental path places every current entry (none removed)
        // and lists the impact sorted.
        if incremental.is_none() {
            let seeded_nodes = control
                .seed
                .iter()
                .flat_map(|s| s.nodes.iter().map(|n| (&*n.entry_id, &*n.instance_id)));
            let current = control.current_by_entry.iter().map(|(e, i)| (&**e, &**i));
            for (entry, iid) in current.chain(seeded_nodes) {
                if !chosen.contains_key(entry) {
                    impact.push(left_out(&composition, &plan, entry, iid));
                }
            }
            impact.sort_by(|a, b| a.entry_id.cmp(&b.entry_id));
        }
        let mounted: Vec<Arc<str>> = attempt.mounted.iter().map(|(e, _)| e.clone()).collect();
        // The incremental path decided for a few entries; every other one
        // keeps its instance (listed when the report is read).
        let impact = match kept {
            Some(kept) => NodeImpacts::with_kept(impact, kept),
            None => NodeImpacts::from_sorted(impact),
        };
        let pending: Vec<String> = plan.pending.iter().map(ToString::to_string).collect();

        // An identical composition publishes nothing and keeps its digest.
        if let Some(current) = &current
            && same_composition
        {
            let same_instances = current
                .instances
                .iter()
                .map(|i| (&*i.entry_id, &*i.instance_id))
                .eq(plan
                    .activation_order
                    .iter()
                    .map(|e| (e.as_str(), chosen.get(e.as_str()).map_or("", |i| &**i))));
            if same_instances {
                attempt.publish_mounts(&mut control);
                control.set_current(chosen, None);
                return Ok(ReconcileReport {
                    quarantined: Vec::new(),
                    generation_id: current.id.to_string(),
                    published: false,
                    mounted,
                    pending,
                    disposed: Vec::new(),
                    impact,
                    failures: Vec::new(),
                });
            }
        }

        // Seeded from a store: rebuilding exactly the stored generation
        // publishes nothing; the harness adopts it (fresh mounts, same ids).
        // The snapshot it is compared with is the adopted generation's, and
        // what the chosen instances registered is gathered once.
        let (adopted, registered) = match (&control.seed, &current) {
            (Some(seed), None)
                if seed.sequence > 0 && impact.iter().all(|i| i.decision == Decision::Reused) =>
            {
                let registered = Registered::of(&control, &composition, &plan, &chosen);
                let ctx = SnapshotContext {
                    generation: GenerationId::from_sequence(seed.sequence),
                    mounts: registered.mounts.clone(),
                    ..SnapshotContext::default()
                };
                let adopted = build_snapshot_digested(&composition, &tree, &plan, &ctx)
                    .ok()
                    .filter(|(_, digests)| seed.digest.as_ref() == Some(&digests.digest));
                (adopted, Some(registered))
            }
            _ => (None, None),
        };
        let adopt = adopted.is_some();
        let sequence = if adopt {
            control.sequence
        } else {
            control.sequence + 1
        };
        let built = match (&incremental, &remounted) {
            (Some(previous), Some(remounted)) => {
                #[cfg(debug_assertions)]
                let check = composition.clone();
                let derived = self.derive_generation(
                    &control,
                    previous,
                    composition,
                    Arc::clone(&tree),
                    Arc::clone(&plan),
                    &chosen,
                    remounted,
                    sequence,
                );
                match derived {
                    Ok(Ok(derived)) => {
                        #[cfg(test)]
                        self.shared
                            .derived
                            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        // Debug builds (the test suite) check it against
                        // the generation placing every entry builds.
                        #[cfg(debug_assertions)]
                        incremental::assert_same_generation(
                            &derived,
                            &Self::build_generation(
                                Registered::of(&control, &check, &plan, &chosen),
                                check,
                                tree,
                                plan,
                                sequence,
                            )
                            .expect("the built generation"),
                        );
                        Ok(derived)
                    }
                    Ok(Err(composition)) => Self::build_generation(
                        Registered::of(&control, &composition, &plan, &chosen),
                        composition,
                        tree,
                        plan,
                        sequence,
                    ),
                    Err(e) => Err(e),
                }
            }
            // Adopted: the snapshot compared is the generation's.
            _ => match (adopted, registered) {
                (Some(built), Some(registered)) => {
                    Ok(registered.into_generation(composition, tree, plan, sequence, built))
                }
                (_, registered) => {
                    let registered = registered
                        .unwrap_or_else(|| Registered::of(&control, &composition, &plan, &chosen));
                    Self::build_generation(registered, composition, tree, plan, sequence)
                }
            },
        };
        let generation = match built {
            Ok(g) => Arc::new(g),
            Err(e) => {
                let _ = self.roll_back(&mut control, attempt).await;
                return Err(e);
            }
        };
        control.sequence = sequence;
        control.seed = None;
        let n = |v: usize| {
            crate::engine::telemetry::AttrValue::from(i64::try_from(v).unwrap_or(i64::MAX))
        };
        self.event(
            "generation.build",
            signals::attrs([
                ("plugins", n(generation.instances.len())),
                ("mounted", n(mounted.len())),
            ]),
        );
        let mut previous: Option<Arc<Generation>> = None;
        {
            let mut current = self
                .shared
                .current
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(old) = current.take() {
                old.set_state(GenerationState::Draining);
                previous = Some(Arc::clone(&old));
                self.shared
                    .draining
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(old);
            }
            generation.set_state(GenerationState::Active);
            *current = Some(Arc::clone(&generation));
        }
        // The incremental path knows what it displaced: the old instances
        // of what it mounted again.
        let displaced = displaced.filter(|_| incremental.is_some());
        attempt.publish_mounts(&mut control);
        control.set_current(chosen, displaced);
        let mut hook_failures = std::mem::take(&mut attempt.hook_failures);
        let gen_id = generation.id.to_string();
        if let Some(old) = &previous {
            let leases = n(old.leases());
            self.event(
                "generation.draining",
                signals::attrs([
                    ("generation_id", old.id.to_string().into()),
                    ("successor", gen_id.clone().into()),
                    ("leases", leases),
                ]),
            );
            let payload = serde_json::json!({ "generation_id": old.id.to_string(), "sequence": old.id.sequence(), "successor": gen_id, "leases": old.leases(), "shutdown": false });
            hook_failures.extend(
                self.control_hook(
                    &generation.hooks,
                    super::hooks::HookEvent::GenerationDraining,
                    move || payload,
                )
                .await,
            );
        }
        let previous_id = previous.as_ref().map(|g| g.id.to_string());
        self.event(
            "generation.publish",
            signals::attrs([
                ("generation_id", gen_id.clone().into()),
                (
                    "sequence",
                    crate::engine::telemetry::AttrValue::from(
                        i64::try_from(generation.id.sequence()).unwrap_or(i64::MAX),
                    ),
                ),
                (
                    "previous",
                    previous_id
                        .clone()
                        .map_or(crate::engine::telemetry::AttrValue::Null, Into::into),
                ),
                ("plugins", n(generation.instances.len())),
            ]),
        );
        let payload = serde_json::json!({ "generation_id": gen_id, "sequence": generation.id.sequence(), "previous": previous_id, "plugins": generation.instances.len() });
        hook_failures.extend(
            self.control_hook(
                &generation.hooks,
                super::hooks::HookEvent::GenerationPublished,
                move || payload,
            )
            .await,
        );
        let mut failures = hook_failures;
        let (reclaim_failures, mut disposed) = self.reclaim(&mut control).await;
        failures.extend(reclaim_failures);
        disposed.sort_unstable();
        // This reconcile's handles on the previous generation: once it is
        // retired, the last one frees it off this path.
        [previous, current, incremental]
            .into_iter()
            .flatten()
            .for_each(Generation::let_go);
        Ok(ReconcileReport {
            quarantined: Vec::new(),
            generation_id: generation.id.to_string(),
            published: !adopt,
            mounted,
            pending,
            disposed,
            impact,
            failures,
        })
    }

    /// The report of a reconcile that changes nothing, or `None` when one
    /// might: the composition is the current generation's (the caller
    /// checked), nothing is seeded from a store, every managed instance is
    /// active, and every entry whose configuration references secrets
    /// still has its identity with their current values. With the
    /// composition and plan unchanged and every provider reused, every
    /// binding is the one the identity was computed with, so this is exactly
    /// the outcome of placing every entry — reached by looking up only the
    /// entries `with_secrets` lists (what the compare found referencing
    /// secrets), so a no-op reconcile stays cheap at 10,000 entries.
    fn unchanged(
        &self,
        control: &ControlState,
        current: &Generation,
        plan: &Plan,
        with_secrets: &[EntryId],
    ) -> Option<ReconcileReport> {
        let placed = &control.current_by_entry;
        // The first two cannot hold while a generation is current (a seed
        // is dropped at the first publication; a generation places every
        // entry of its plan): cheap guards, not cases.
        if control.seed.is_some()
            || current.instances.len() != plan.activation_order.len()
            || placed.len() != current.instances.len()
            || control.instances.values().any(|m| !keeps_instance(m))
        {
            return None;
        }
        // `current_by_entry` is assigned the map the current generation was
        // built from, together with it, on every path that publishes or
        // keeps a generation; checked in debug builds (the test suite).
        debug_assert!({
            let mut in_generation: Vec<(&str, &str)> = current
                .instances
                .iter()
                .map(|i| (&*i.entry_id, &*i.instance_id))
                .collect();
            in_generation.sort_unstable();
            in_generation
                .into_iter()
                .eq(placed.iter().map(|(e, i)| (&**e, &**i)))
                && placed.values().all(|i| control.instances.contains_key(i))
        });
        // Only an entry whose configuration references secrets can have
        // another identity now (the compare listed them).
        let mut hashes = ManifestHashes::default();
        for id in with_secrets {
            let Some(iid) = placed.get(id.as_str()) else {
                // Referencing secrets but not placed: pending, as before.
                continue;
            };
            let entry = current.composition.entries.get(id)?;
            let managed = control.instances.get(iid)?;
            let bindings = bindings_of(plan.resolutions_of(id.as_str()), placed);
            if self.identity_of(&mut hashes, entry, &bindings) != managed.identity {
                return None;
            }
        }
        Some(ReconcileReport {
            quarantined: Vec::new(),
            generation_id: current.id.to_string(),
            published: false,
            mounted: Vec::new(),
            pending: plan.pending.iter().map(ToString::to_string).collect(),
            disposed: Vec::new(),
            // Every entry reused with its current instance.
            impact: NodeImpacts::with_kept(Vec::new(), placed.clone()),
            failures: Vec::new(),
        })
    }

    /// The identity of `entry` with these bindings and the current values
    /// of the secrets its configuration references.
    fn identity_of(
        &self,
        hashes: &mut ManifestHashes,
        entry: &crate::engine::model::Entry,
        bindings: &[(String, String, String)],
    ) -> NodeIdentity {
        node_identity(
            hashes,
            entry,
            self.shared.catalog.implementation(entry),
            bindings,
            Some(self.shared.options.secrets.as_ref()),
        )
    }

    /// Reuse or mount one entry (with its resolutions in `plan`, and what
    /// it alone decides of its identity when that was computed beforehand);
    /// validate a new mount's contract.
    async fn place(
        &self,
        control: &mut ControlState,
        composition: &Composition,
        plan: &Plan,
        (entry_id, resolutions, prepared): (&EntryId, &[Resolution], Prepared),
        chosen: &mut InstanceByEntry,
        attempt: &mut Attempt,
    ) -> Result<NodeImpact, PlaceError> {
        let entry = &composition.entries[entry_id];
        let id = Arc::clone(entry_id.as_arc());
        let previous = control
            .current_by_entry
            .get(&*id)
            .and_then(|iid| control.instances.get(iid));
        // Unchanged inputs keep the identity without hashing again (or
        // building the bindings), unless the configuration references
        // secrets (their values may rotate).
        let unchanged_inputs = match &prepared {
            // Its identity was computed because it could not be kept.
            Prepared::Basis(_) => false,
            Prepared::SameEntry => previous
                .and_then(|p| p.inputs.as_ref())
                .is_some_and(|(_, b)| same_bindings(b, resolutions, chosen)),
            Prepared::Nothing => previous
                .and_then(|p| p.inputs.as_ref())
                .is_some_and(|(e, b)| {
                    keeps_identity_inputs(e, entry) && same_bindings(b, resolutions, chosen)
                }),
        };
        let mut bindings = None;
        let identity = match previous {
            Some(p) if unchanged_inputs => std::borrow::Cow::Borrowed(&p.identity),
            _ => {
                let built = bindings_of(resolutions, chosen);
                let identity = match prepared {
                    Prepared::Basis(basis) => basis.bind(&built),
                    Prepared::SameEntry | Prepared::Nothing => {
                        self.identity_of(&mut attempt.hashes, entry, &built)
                    }
                };
                bindings = Some(built);
                std::borrow::Cow::Owned(identity)
            }
        };
        if let Some(prev) = previous
            && prev.identity == *identity
            && keeps_instance(prev)
        {
            let iid = prev.instance.instance_id.clone();
            chosen.insert(id.clone(), iid.clone());
            return Ok(NodeImpact::reused(id, iid));
        }
        let identity = identity.into_owned();
        // What a mount binds: the providers' registered capabilities.
        let mut bound = BTreeMap::new();
        for (r, sel, provider_iid) in placed_selections(resolutions, chosen) {
            let registration = control.registrations(provider_iid).and_then(|regs| {
                regs.capabilities
                    .iter()
                    .find(|c| {
                        c.capability == r.requirement.capability
                            && c.version.major() == sel.version.major()
                    })
                    .cloned()
            });
            if let Some(reg) = registration {
                bound.insert(
                    r.requirement.capability.clone(),
                    Binding {
                        provider: sel.entry.to_string(),
                        version: reg.version,
                        value: reg.value,
                    },
                );
            }
        }
        let seeded = match previous {
            None => control
                .seed
                .as_ref()
                .and_then(|seed| seed_decision(seed, &id, &identity)),
            Some(_) => None,
        };
        let (decision, reasons, old_iid, keep_mount) = match (previous, seeded) {
            (None, Some(seeded)) => seeded,
            (None, None) => (Decision::Added, vec!["entry_added"], None, None),
            (Some(prev), _) => {
                let (decision, reasons) = classify(&prev.identity, &identity);
                (
                    decision,
                    if !reasons.is_empty() {
                        reasons
                    } else if prev.instance.state() == super::lifecycle::PluginState::Active {
                        vec!["instance_down"]
                    } else {
                        vec!["instance_inactive"]
                    },
                    Some(prev.instance.instance_id.clone()),
                    None,
                )
            }
        };
        let plugin = self
            .shared
            .catalog
            .instantiate(entry, entry.manifest.kind.as_deref())
            .map_err(|e| PlaceError::Instantiate {
                entry: id.to_string(),
                error: e.to_string(),
            })?;
        // Every secret the configuration references is resolved before the
        // plugin mounts (fail closed: a missing secret stops the attempt),
        // so the redactor knows the values whether or not the plugin reads
        // them.
        for secret in entry.config.secret_refs() {
            if let Err(e) = self.shared.options.secrets.get(&secret.name) {
                return Err(PlaceError::Instantiate {
                    entry: id.to_string(),
                    error: e.to_string(),
                });
            }
        }
        let mounted_so_far = control.mounts.get(&*id).copied();
        let mount = keep_mount.unwrap_or(mounted_so_far.unwrap_or(0) + 1);
        let iid: Arc<str> = instance_id_arc(entry_id, mount);
        // Not while a plugin's hooks are live: they observe every mount
        // (and, newest first, every unmount at shutdown), so an entry
        // placed before any hook registers is the only one they would not
        // have seen.
        if attempt.may_skip_mounts
            && control.hooked.is_empty()
            && let Some(registrations) = plugin.registrations_unmounted(&id)
        {
            // Placed without mounting: its registrations are checked as a
            // mount's are, and nothing needs undoing but its mount count.
            let selecting = attempt.selecting(plan, entry_id);
            validate_contract(composition, &selecting, entry_id, &registrations)
                .map_err(PlaceError::Contract)?;
            attempt.mounts_before.push((id.clone(), mounted_so_far));
            control
                .mounts
                .insert(id.clone(), mount.max(mounted_so_far.unwrap_or(0)));
            attempt.unmounted.push(iid.clone());
            control.unmounted.insert(
                iid.clone(),
                Box::new(super::harness::Unmounted {
                    manifest: Arc::clone(&entry.manifest),
                    identity,
                    mount,
                    registrations: Arc::new(registrations),
                }),
            );
            chosen.insert(id.clone(), iid.clone());
            return Ok(NodeImpact {
                entry_id: id,
                decision,
                reasons,
                old_instance_id: old_iid,
                new_instance_id: Some(iid),
            });
        }
        let spec = ContextSpec {
            entry_id: id.to_string(),
            instance_id: iid.to_string(),
            scope_path: entry.scope.value.to_string(),
            manifest: Arc::clone(&entry.manifest),
            config: entry.config.clone(),
            bindings: bound,
            secrets: Arc::clone(&self.shared.options.secrets),
            tool_sets: self.shared.tool_sets.clone(),
            restarts: self.shared.restarts.clone(),
            outside_run_policy: attempt.outside.of(entry.scope.value.as_str()),
            setup_cancelled: self.shared.setups_cancelled.clone(),
        };
        let mut instance = PluginInstance::new(id.clone(), iid.clone(), plugin);
        let mounted = self
            .mount_observed(control, &mut instance, spec, mount)
            .await;
        let selecting = attempt.selecting(plan, entry_id);
        let hook_failures = match mounted {
            Ok(f) => f,
            // Setup refused registrations that break a promise: a
            // contract error, like one found after setup.
            Err(mut e) => {
                return Err(match e.breach.take() {
                    Some(b) => {
                        PlaceError::Contract(breach_error(composition, &selecting, entry_id, b, e))
                    }
                    None => PlaceError::Setup(e),
                });
            }
        };
        attempt.hook_failures.extend(hook_failures);
        if let Err(mut contract) =
            validate_contract(composition, &selecting, entry_id, &instance.registrations())
        {
            let hooks = self.live_hooks(control);
            let failures = self.unmount_observed(&hooks, &mut instance).await;
            contract.rollback_failures.extend(
                failures
                    .into_iter()
                    .map(|f| format!("{} -> {}", f.description, f.error)),
            );
            contract.rolled_back.push(id.to_string());
            return Err(PlaceError::Contract(contract));
        }
        attempt.mounts_before.push((id.clone(), mounted_so_far));
        control
            .mounts
            .insert(id.clone(), mount.max(mounted_so_far.unwrap_or(0)));
        let order = control.next_order;
        control.next_order += 1;
        if !instance.registrations().hooks.is_empty() {
            control.hooked.insert(iid.clone());
        }
        // Stale until the attempt publishes (see `Attempt::publish_mounts`).
        control.stale.insert(iid.clone());
        control.instances.insert(
            iid.clone(),
            Box::new(Managed {
                identity: identity.clone(),
                inputs: Some((
                    entry.clone(),
                    bindings.unwrap_or_else(|| bindings_of(resolutions, chosen)),
                )),
                mount,
                order,
                instance,
            }),
        );
        attempt.mounted.push((id.clone(), iid.clone()));
        chosen.insert(id.clone(), iid.clone());
        Ok(NodeImpact {
            entry_id: id,
            decision,
            reasons,
            old_instance_id: old_iid,
            new_instance_id: Some(iid),
        })
    }

    /// Unmount every instance mounted by the attempt, newest first.
    async fn roll_back(
        &self,
        control: &mut ControlState,
        attempt: Attempt,
    ) -> (Vec<String>, Vec<String>) {
        let mut rolled = Vec::new();
        let mut failures = Vec::new();
        for (entry, iid) in attempt.mounted.into_iter().rev() {
            if let Some(mut managed) = control.instances.remove(&iid) {
                control.stale.remove(&iid);
                control.hooked.remove(&iid);
                let hooks = self.live_hooks(control);
                let met = self.unmount_observed(&hooks, &mut managed.instance).await;
                failures.extend(
                    met.into_iter()
                        .map(|f| format!("{} -> {}", f.description, f.error)),
                );
            }
            rolled.push(entry.to_string());
        }
        for iid in &attempt.unmounted {
            control.unmounted.remove(iid);
        }
        for (entry, before) in attempt.mounts_before.into_iter().rev() {
            match before {
                Some(n) => control.mounts.insert(entry, n),
                None => control.mounts.remove(&entry),
            };
        }
        (rolled, failures)
    }

    fn build_generation(
        registered: Registered,
        composition: Composition,
        tree: Arc<ScopeTree>,
        plan: Arc<Plan>,
        sequence: u64,
    ) -> Result<Generation, ReconcileError> {
        let ctx = SnapshotContext {
            generation: GenerationId::from_sequence(sequence),
            mounts: registered.mounts.clone(),
            ..SnapshotContext::default()
        };
        let built = build_snapshot_digested(&composition, &tree, &plan, &ctx)
            .map_err(|e| ReconcileError::Snapshot(e.to_string()))?;
        Ok(registered.into_generation(composition, tree, plan, sequence, built))
    }
}

/// What the chosen instances registered, gathered for a generation, with
/// their mount numbers (the snapshot's).
struct Registered {
    instances: Vec<GenerationInstance>,
    capabilities: BTreeMap<crate::engine::model::CapabilityName, Vec<Provider>>,
    tools: BTreeMap<String, super::tool::ToolRegistration>,
    hooks: Vec<super::hooks::HookRegistration>,
    mounts: MountNumbers,
}

impl Registered {
    fn of(
        control: &ControlState,
        composition: &Composition,
        plan: &Plan,
        chosen: &InstanceByEntry,
    ) -> Self {
        let mut r = Self {
            instances: Vec::new(),
            capabilities: BTreeMap::new(),
            tools: BTreeMap::new(),
            hooks: Vec::new(),
            mounts: MountNumbers::new(),
        };
        for entry_id in &plan.activation_order {
            let Some((instance_id, (regs, mount))) = chosen
                .get(entry_id.as_str())
                .and_then(|iid| Some((Arc::clone(iid), control.placed(iid)?)))
            else {
                continue;
            };
            r.mounts.insert(entry_id.clone(), mount);
            for c in regs.capabilities.iter().cloned() {
                r.capabilities
                    .entry(c.capability.clone())
                    .or_default()
                    .push(Provider {
                        entry_id: Arc::clone(entry_id.as_arc()),
                        instance_id: Arc::clone(&instance_id),
                        registration: c,
                    });
            }
            r.instances.push(GenerationInstance {
                entry_id: Arc::clone(entry_id.as_arc()),
                instance_id,
                plugin: composition.entries[entry_id].manifest.name.as_str().into(),
                routes: regs.routes.as_slice().into(),
            });
            for t in regs.tools.iter().cloned() {
                insert_tool(&mut r.tools, composition, t);
            }
            r.hooks.extend(regs.hooks.iter().cloned());
        }
        r
    }

    /// The generation, with its snapshot (built with `self.mounts`).
    fn into_generation(
        self,
        composition: Composition,
        tree: Arc<ScopeTree>,
        plan: Arc<Plan>,
        sequence: u64,
        (snapshot, digests): (SnapshotRecord, Digests),
    ) -> Generation {
        Generation::new(
            GenerationId::from_sequence(sequence),
            Arc::new(composition),
            tree,
            plan,
            self.instances,
            self.capabilities
                .into_iter()
                .map(|(k, v)| (k, Arc::from(v)))
                .collect(),
            self.tools,
            HookSet::new(self.hooks),
            snapshot,
            digests,
        )
        .with_mounts(self.mounts)
    }
}

enum PlaceError {
    Instantiate { entry: String, error: String },
    Setup(PluginSetupError),
    Contract(Box<PluginContractError>),
}

impl PlaceError {
    fn with_rollback(self, (rolled_back, failures): (Vec<String>, Vec<String>)) -> ReconcileError {
        match self {
            PlaceError::Instantiate { entry, error } => ReconcileError::Instantiate {
                entry,
                error,
                rolled_back,
            },
            PlaceError::Setup(error) => ReconcileError::Setup {
                error: Box::new(error),
                rolled_back,
            },
            PlaceError::Contract(mut c) => {
                c.rolled_back.extend(rolled_back);
                c.rollback_failures.extend(failures);
                ReconcileError::Contract(c)
            }
        }
    }
}

/// The identity of `entry` with these bindings and, when `secrets` is
/// given, the current values of the secrets its configuration references
/// (one computation for what `publish` mounts and what `plan` predicts).
fn node_identity(
    hashes: &mut ManifestHashes,
    entry: &crate::engine::model::Entry,
    implementation: super::identity::Implementation<'_>,
    bindings: &[(String, String, String)],
    secrets: Option<&dyn crate::engine::secret::SecretProvider>,
) -> NodeIdentity {
    hashes.identity(
        entry,
        implementation,
        bindings,
        secrets
            .and_then(|s| super::identity::secret_fingerprint(entry, s))
            .as_deref(),
    )
}

/// Whether a managed instance may serve the next generation as it is:
/// active, and not down for good (a process plugin whose restarts are
/// spent, which the user is told a new generation brings back). A passing
/// `Unhealthy` (a crash being restarted) keeps it.
fn keeps_instance(m: &Managed) -> bool {
    m.instance.state() == super::lifecycle::PluginState::Active && !m.instance.down()
}

/// Whether an instance placed from `placed_from` keeps its identity for
/// `entry` without hashing it again, given the same bindings: the same
/// entry, whose configuration references no secret (their values may
/// rotate).
fn keeps_identity_inputs(placed_from: &Entry, entry: &Entry) -> bool {
    same_entry(placed_from, entry) && !entry.config.has_secret_refs()
}

/// What was worked out for an entry before placing it.
pub(crate) enum Prepared {
    /// Nothing: placing works out whether its identity is kept.
    Nothing,
    /// Its current instance was placed from the same entry, which
    /// references no secret: the identity is kept if the bindings are the
    /// same.
    SameEntry,
    /// What it alone decides of its identity (it cannot be kept).
    Basis(IdentityBasis),
}

/// What each entry of `order` alone decides of its node identity
/// (implementation, contracts, configuration, scope), for the positions
/// `wanted` picks (`None` for the others), half the entries on each core:
/// on 100,000 built-in entries, a third of placing them all. Binding each
/// to its providers' instances is left to the caller, in activation order.
fn identity_bases(
    composition: &Composition,
    order: &[EntryId],
    wanted: impl Fn(usize) -> bool + Sync,
    catalog: &super::Catalog,
    secrets: Option<&dyn crate::engine::secret::SecretProvider>,
) -> Vec<Option<IdentityBasis>> {
    let bases_of = |ids: &[EntryId], offset: usize| -> Vec<Option<IdentityBasis>> {
        let mut hashes = ManifestHashes::default();
        ids.iter()
            .enumerate()
            .map(|(i, id)| {
                if !wanted(offset + i) {
                    return None;
                }
                let entry = composition.entries.get(id)?;
                Some(
                    hashes.basis(
                        entry,
                        catalog.implementation(entry),
                        secrets
                            .and_then(|s| super::identity::secret_fingerprint(entry, s))
                            .as_deref(),
                    ),
                )
            })
            .collect()
    };
    let half = order.len() / 2;
    let (first, second) = order.split_at(half);
    let (mut bases, rest) = crate::engine::parallel::join(
        order.len(),
        || bases_of(first, 0),
        || bases_of(second, half),
    );
    bases.extend(rest);
    bases
}

/// What an entry's identity binds: (capability, provider instance id,
/// selected version) for each of its resolved requirements whose provider
/// is placed in `chosen` (entry id → instance id).
fn bindings_of<'p>(
    resolutions: impl IntoIterator<Item = &'p Resolution>,
    chosen: &impl Placed,
) -> Vec<(String, String, String)> {
    placed_selections(resolutions, chosen)
        .map(|(r, sel, provider_iid)| {
            (
                r.requirement.capability.as_str().to_owned(),
                provider_iid.to_string(),
                sel.version.to_string(),
            )
        })
        .collect()
}

/// The resolved requirements among `resolutions` whose selected provider is
/// placed in `chosen`, with the selection and the provider's instance id.
fn placed_selections<'p, 'c, C: Placed>(
    resolutions: impl IntoIterator<Item = &'p Resolution>,
    chosen: &'c C,
) -> impl Iterator<Item = (&'p Resolution, &'p Selected, &'c Arc<str>)> {
    resolutions.into_iter().filter_map(move |r| {
        let (Status::Resolved, Some(sel)) = (r.status, &r.selected) else {
            return None;
        };
        Some((r, sel, chosen.placed(sel.entry.as_str())?))
    })
}

/// Where each placed entry's instance is found: the harness's map, or a
/// hash map of one pass (`predict`: a lookup per binding, 100,000 times).
trait Placed {
    /// The instance id `entry` is placed as.
    fn placed(&self, entry: &str) -> Option<&Arc<str>>;
}

impl Placed for InstanceByEntry {
    fn placed(&self, entry: &str) -> Option<&Arc<str>> {
        self.get(entry)
    }
}

impl Placed for HashMap<&str, Arc<str>> {
    fn placed(&self, entry: &str) -> Option<&Arc<str>> {
        self.get(entry)
    }
}

/// Whether `stored` are the bindings [`bindings_of`] would build, compared
/// in place (a reused entry allocates nothing for its bindings).
fn same_bindings<'p>(
    stored: &[(String, String, String)],
    resolutions: impl IntoIterator<Item = &'p Resolution>,
    chosen: &InstanceByEntry,
) -> bool {
    let mut stored = stored.iter();
    for (r, sel, provider_iid) in placed_selections(resolutions, chosen) {
        match stored.next() {
            Some((capability, iid, version))
                if capability == r.requirement.capability.as_str()
                    && **iid == **provider_iid
                    && version == sel.version.as_str() => {}
            _ => return false,
        }
    }
    stored.next().is_none()
}

/// Add a registered tool to a generation's tools, the composition's
/// `[policy.tools.<name>]` replacing the policy the plugin registered.
fn insert_tool(
    tools: &mut BTreeMap<String, super::tool::ToolRegistration>,
    composition: &Composition,
    mut t: super::tool::ToolRegistration,
) {
    if let Some(p) = composition
        .policy
        .as_ref()
        .and_then(|p| p.tools.get(t.tool.name()))
    {
        t.policy = p.clone();
    }
    tools.insert(t.tool.name().to_owned(), t);
}

/// The contract error of an entry whose setup refused `breach` (its
/// effects already rolled back by the failed setup).
fn breach_error(
    composition: &Composition,
    selecting: &[&Resolution],
    entry_id: &EntryId,
    breach: super::RegistrationBreach,
    setup: PluginSetupError,
) -> Box<PluginContractError> {
    let entry = &composition.entries[entry_id];
    let mut consumers: Vec<String> = selecting
        .iter()
        .map(|r| r.consumer.name().to_owned())
        .collect();
    consumers.sort();
    consumers.dedup();
    Box::new(PluginContractError {
        provider: entry_id.to_string(),
        provider_name: entry.manifest.name.clone(),
        promise: breach.promise,
        promised: breach.promised,
        actual: breach.actual,
        consumers,
        rolled_back: vec![entry_id.to_string()],
        rollback_failures: setup
            .cleanup_failures
            .into_iter()
            .map(|f| format!("{} -> {}", f.description, f.error))
            .collect(),
    })
}

/// Check a freshly mounted provider against its manifest and its consumers.
fn validate_contract(
    composition: &Composition,
    selecting: &[&Resolution],
    entry_id: &EntryId,
    all: &super::context::Registrations,
) -> Result<(), Box<PluginContractError>> {
    let entry = &composition.entries[entry_id];
    let regs = &all.capabilities;
    // Rendered only for an error: the success path formats nothing.
    let actual = || -> Vec<String> {
        regs.iter()
            .map(|r| format!("{} {}", r.capability, r.version))
            .collect()
    };
    let consumers_of = |cap: &str| -> Vec<String> {
        selecting
            .iter()
            .filter(|r| r.requirement.capability.as_str() == cap)
            .map(|r| r.consumer.name().to_owned())
            .collect()
    };
    let error = |promise: String, promised: String, consumers: Vec<String>| {
        Box::new(PluginContractError {
            provider: entry_id.to_string(),
            provider_name: entry.manifest.name.clone(),
            promise,
            promised,
            actual: actual(),
            consumers,
            rolled_back: Vec::new(),
            rollback_failures: Vec::new(),
        })
    };
    for (cap, provided) in &entry.manifest.provides {
        for v in &provided.versions {
            let promised = format!("{cap}@{}", v.major());
            if !regs
                .iter()
                .any(|r| &r.capability == cap && r.version.major() == v.major())
            {
                return Err(error(
                    format!("promised {promised} but its registrations do not provide it"),
                    promised,
                    consumers_of(cap.as_str()),
                ));
            }
        }
    }
    // Tools are promises too: the manifest's tools are what the pure
    // commands hashed and showed, so each must be registered.
    // So are the tools it promises by name only (`expect_tools`).
    let declared = entry.manifest.tools.iter().map(|t| (&t.name, ""));
    let expected = entry
        .manifest
        .expected_tools
        .iter()
        .map(|n| (n, " (expect_tools)"));
    for (name, why) in declared.chain(expected) {
        if !all.tools.iter().any(|r| r.tool.name() == name.as_str()) {
            let promised = format!("tool `{name}`");
            let mut registered: Vec<String> = all
                .tools
                .iter()
                .map(|r| format!("tool `{}`", r.tool.name()))
                .collect();
            registered.sort();
            let mut broken = error(
                format!("promised {promised}{why} but did not register it"),
                promised,
                Vec::new(),
            );
            broken.actual.extend(registered);
            return Err(broken);
        }
    }
    for r in selecting {
        let Some(sel) = &r.selected else {
            continue;
        };
        let ok = regs.iter().any(|reg| {
            reg.capability == r.requirement.capability
                && reg.version.major() == sel.version.major()
                && r.requirement.accepts(&reg.version)
        });
        if !ok {
            let req = r.requirement.render();
            return Err(error(
                format!(
                    "was selected for `{}`'s `{req}`, but its registrations cannot satisfy it",
                    r.consumer.name()
                ),
                req,
                vec![r.consumer.name().to_owned()],
            ));
        }
    }
    Ok(())
}

/// A tool name and the entries registering it.
type DuplicateTool = (String, Vec<String>);
/// An entry, its tool, and the permissions its manifest does not declare.
type UndeclaredPermission = (String, String, Vec<String>);

/// The first tool name registered by two chosen instances, with its owners;
/// and the first tool that requires a permission its plugin's manifest does
/// not declare (after `[policy.tools]` overrides): `(entry, tool, problems)`.
/// One pass over the chosen instances' registrations.
fn tool_problems(
    control: &ControlState,
    chosen: &InstanceByEntry,
    composition: &Composition,
) -> (Option<DuplicateTool>, Option<UndeclaredPermission>) {
    let mut owners: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut undeclared = None;
    for (entry, iid) in chosen {
        let (registrations, manifest) = match control.instances.get(iid) {
            Some(m) => (m.instance.registrations(), m.instance.manifest()),
            None => match control.unmounted.get(iid) {
                Some(u) => (Arc::clone(&u.registrations), &*u.manifest),
                None => continue,
            },
        };
        for t in registrations.tools.iter() {
            owners
                .entry(t.tool.name().to_owned())
                .or_default()
                .push(entry.to_string());
            if undeclared.is_some() {
                continue;
            }
            let policy = composition
                .policy
                .as_ref()
                .and_then(|p| p.tools.get(t.tool.name()))
                .unwrap_or(&t.policy);
            if let Err(problems) =
                crate::engine::policy::check_declared(&policy.permissions, &manifest.permissions)
            {
                undeclared = Some((entry.to_string(), t.tool.name().to_owned(), problems));
            }
        }
    }
    let duplicate = owners.into_iter().find(|(_, o)| o.len() > 1);
    (duplicate, undeclared)
}

/// The impact on a node of the current generation that the new one does
/// not mount: `pending` with the statuses of its unresolved requirements
/// (`no_provider`, `provider_pending`…) when the composition still declares
/// it, else `removed` — because it is disabled (`entry_disabled`), its
/// `enabled_if` does not hold (`entry_skipped`), or it is gone
/// (`entry_removed`).
fn left_out(composition: &Composition, plan: &Plan, entry: &str, iid: &str) -> NodeImpact {
    let id = EntryId::new(entry).ok();
    let declared = id.clone().filter(|id| composition.entries.contains_key(id));
    let pending = declared.and_then(|id| plan.entries.get(&id)).map(|p| {
        let mut reasons: Vec<&'static str> = Vec::new();
        for reason in &p.pending {
            let r = match reason {
                crate::engine::resolve::PendingReason::Requirement { status, .. } => {
                    status.as_str()
                }
                crate::engine::resolve::PendingReason::Cycle { .. } => "dependency_cycle",
            };
            if !reasons.contains(&r) {
                reasons.push(r);
            }
        }
        reasons
    });
    let gone = match id {
        Some(id) if composition.disabled.contains_key(&id) => "entry_disabled",
        Some(id) if composition.skipped.contains_key(&id) => "entry_skipped",
        _ => "entry_removed",
    };
    let (decision, reasons) = match pending {
        Some(reasons) if !reasons.is_empty() => (Decision::Pending, reasons),
        _ => (Decision::Removed, vec![gone]),
    };
    NodeImpact {
        entry_id: Arc::from(entry),
        decision,
        reasons,
        old_instance_id: Some(Arc::from(iid)),
        new_instance_id: None,
    }
}

/// The cycle refusal for `plan`, when it has cycles.
fn cycle_error(plan: &Plan) -> Option<ReconcileError> {
    if plan.cycles.is_empty() {
        return None;
    }
    Some(ReconcileError::Cycle {
        cycles: plan.cycle_texts(),
    })
}

/// Decision and reasons for an old and a new identity of one entry.
fn classify(old: &NodeIdentity, new: &NodeIdentity) -> (Decision, Vec<&'static str>) {
    let reasons = changes(old, new);
    let decision = if reasons.is_empty() {
        Decision::Unchanged
    } else if reasons == ["dependency_changed"] {
        Decision::Rewired
    } else {
        Decision::Rebuilt
    };
    (decision, reasons)
}

type SeedDecision = (Decision, Vec<&'static str>, Option<Arc<str>>, Option<u64>);

/// How `entry` relates to its stored node: reused (keeping the stored mount
/// number, hence instance id) when the identities are equal, else rebuilt
/// or rewired with the reasons. `None` when the seed has no such node.
fn seed_decision(seed: &SeedState, entry: &str, identity: &NodeIdentity) -> Option<SeedDecision> {
    seed_decision_of(seed, seed.node(entry)?, identity)
}

/// [`seed_decision`] once the stored node is found.
fn seed_decision_of(
    seed: &SeedState,
    node: &super::harness::SeedNode,
    identity: &NodeIdentity,
) -> Option<SeedDecision> {
    if seed.sees_as(identity, &node.identity) {
        return Some((
            Decision::Reused,
            vec![],
            Some(Arc::from(node.instance_id.as_str())),
            Some(node.mount),
        ));
    }
    let (decision, reasons) = classify(&node.identity, &seed.view(identity));
    Some((
        decision,
        reasons,
        Some(Arc::from(node.instance_id.as_str())),
        None,
    ))
}

/// What a reconcile would do, computed without mounting anything.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prediction {
    /// The generation it would publish, or the stored one it would keep.
    pub generation_id: String,
    /// Whether a new generation would be published.
    pub published: bool,
    /// Per-node impact, sorted by entry id (as [`ReconcileReport::impact`]).
    pub impact: Vec<NodeImpact>,
    /// Raw identities of the nodes it would mount, by entry id.
    pub identities: BTreeMap<String, NodeIdentity>,
    /// Mount number per node it would mount.
    pub mounts: BTreeMap<String, u64>,
    /// Digests of the generation it would publish (or keep).
    pub digests: Digests,
}

/// Predict what [`Harness::reconcile`] of `composition` does on a harness
/// seeded with `seed` (`None`: an empty store), without mounting: the same
/// cycle refusal, identities, decisions, instance ids, generation id and
/// digests. Failures only a mount can reveal (setup errors, broken
/// contracts) are not predicted; duplicate declared tool names are.
/// `secrets` resolves the values that enter node identities (as the
/// harness's provider does); without it, secret values are not compared.
/// `catalog` says what implements each entry, as the harness's does.
pub fn predict(
    composition: &Composition,
    tree: &ScopeTree,
    plan: &Plan,
    seed: Option<&SeedState>,
    secrets: Option<&dyn crate::engine::secret::SecretProvider>,
    catalog: &super::Catalog,
) -> Result<Prediction, ReconcileError> {
    if let Some(cycle) = cycle_error(plan) {
        return Err(cycle);
    }
    let empty = SeedState::default();
    let seed = seed.unwrap_or(&empty);
    // Looked up once per entry or binding, 100,000 times for as many
    // entries: hashed once here rather than searched in sorted lists.
    let resolutions = plan.resolution_index();
    let seeded: HashMap<&str, &super::harness::SeedNode> = seed
        .nodes
        .iter()
        .map(|n| (n.entry_id.as_str(), n))
        .collect();
    let order = &plan.activation_order;
    let mut chosen: HashMap<&str, Arc<str>> = HashMap::with_capacity(order.len());
    let mut entry_mounts = Vec::with_capacity(order.len());
    let mut identities = Vec::with_capacity(order.len());
    let mut impact = Vec::with_capacity(order.len());
    let mut tool_owners: BTreeMap<String, Vec<String>> = BTreeMap::new();
    // Each entry's identity is bound, in order, to its providers' instances.
    let bases = identity_bases(composition, order, |_| true, catalog, secrets);
    for (entry_id, basis) in order.iter().zip(bases) {
        let entry = &composition.entries[entry_id];
        let id = entry_id.as_str();
        let bindings = bindings_of(resolutions.of(id), &chosen);
        let identity = match basis {
            Some(basis) => basis.bind(&bindings),
            None => node_identity(
                &mut ManifestHashes::default(),
                entry,
                catalog.implementation(entry),
                &bindings,
                secrets,
            ),
        };
        let (decision, reasons, old_iid, keep_mount) = seeded
            .get(id)
            .and_then(|node| seed_decision_of(seed, node, &identity))
            .unwrap_or((Decision::Added, vec!["entry_added"], None, None));
        // A reused node keeps its mount; another mounts once more than the
        // store counted (each entry is placed once).
        let mount = keep_mount.unwrap_or_else(|| seed.mounts.get(id).copied().unwrap_or(0) + 1);
        let iid: Arc<str> = instance_id(entry_id, mount).into();
        for t in &entry.manifest.tools {
            tool_owners
                .entry(t.name.to_string())
                .or_default()
                .push(id.to_owned());
        }
        let entry_arc = Arc::clone(entry_id.as_arc());
        chosen.insert(id, Arc::clone(&iid));
        entry_mounts.push((entry_id.clone(), mount));
        identities.push((id.to_owned(), identity));
        impact.push(NodeImpact {
            entry_id: entry_arc,
            decision,
            reasons,
            old_instance_id: old_iid,
            new_instance_id: Some(iid),
        });
    }
    if let Some((tool, mut owners)) = tool_owners.into_iter().find(|(_, o)| o.len() > 1) {
        owners.sort();
        return Err(ReconcileError::DuplicateTool {
            tool,
            owners,
            rolled_back: Vec::new(),
        });
    }
    for n in &seed.nodes {
        if !chosen.contains_key(n.entry_id.as_str()) {
            impact.push(left_out(composition, plan, &n.entry_id, &n.instance_id));
        }
    }
    // Sorted once, then built in order.
    entry_mounts.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    identities.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let entry_mounts: MountNumbers = entry_mounts.into_iter().collect();
    let identities: BTreeMap<String, NodeIdentity> = identities.into_iter().collect();
    impact.sort_by(|a, b| a.entry_id.cmp(&b.entry_id));
    let snapshot_at = |sequence: u64| -> Result<Digests, ReconcileError> {
        let ctx = SnapshotContext {
            generation: GenerationId::from_sequence(sequence),
            mounts: entry_mounts.clone(),
            ..SnapshotContext::default()
        };
        build_snapshot_digested(composition, tree, plan, &ctx)
            .map(|(_, digests)| digests)
            .map_err(|e| ReconcileError::Snapshot(e.to_string()))
    };
    if seed.sequence > 0 && impact.iter().all(|i| i.decision == Decision::Reused) {
        let kept = snapshot_at(seed.sequence)?;
        if seed.digest.as_deref() == Some(kept.digest.as_str()) {
            return Ok(Prediction {
                generation_id: GenerationId::from_sequence(seed.sequence).to_string(),
                published: false,
                impact,
                identities,
                mounts: entry_mounts
                    .iter()
                    .map(|(k, v)| (k.to_string(), *v))
                    .collect(),
                digests: kept,
            });
        }
    }
    Ok(Prediction {
        generation_id: GenerationId::from_sequence(seed.sequence + 1).to_string(),
        published: true,
        impact,
        identities,
        mounts: entry_mounts
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect(),
        digests: snapshot_at(seed.sequence + 1)?,
    })
}
