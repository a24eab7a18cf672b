//! Generations: immutable published compositions, and the leases runs hold
//! on them.
//!
//! A generation is built once (instances, capability providers, tools,
//! hooks, scope tree, snapshot) and never changes; only its accounting
//! (state and lease table) does. Acquiring a lease is atomic with respect to
//! publication: the harness swaps the current generation and marks the old
//! one draining under one write lock, and leases are taken under the read
//! side, so a run sees the old complete generation or the new complete one.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use tokio::time::Instant;

use super::context::CapabilityRegistration;
use super::hooks::HookSet;
use super::tool::ToolRegistration;
use crate::engine::identity::GenerationId;
use crate::engine::model::{CapabilityName, Composition};
use crate::engine::policy::{FailClosed, PolicyEngine};
use crate::engine::resolve::Plan;
use crate::engine::secret::{SecretProvider, UnavailableSecrets};
use crate::engine::snapshot::{Digests, SnapshotRecord};
use crate::engine::system::{Governing, SystemCapability, governing};
use crate::engine::tree::ScopeTree;

/// Indexes into a plan's `resolutions` of the resolved ones, by the entry
/// they selected: which consumers a provider serves.
pub(crate) type SelectingIndex =
    std::collections::HashMap<crate::engine::model::EntryId, Vec<usize>>;

/// The [`SelectingIndex`] of `plan`.
pub(crate) fn selecting_index(plan: &Plan) -> SelectingIndex {
    let mut m = SelectingIndex::new();
    for (i, r) in plan.resolutions.iter().enumerate() {
        if let (crate::engine::resolve::Status::Resolved, Some(sel)) = (r.status, &r.selected) {
            m.entry(sel.entry.clone()).or_default().push(i);
        }
    }
    m
}

/// Where a generation is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum GenerationState {
    /// Being assembled.
    Building,
    /// The current generation: new runs lease it.
    Active,
    /// Superseded; in-flight runs finish on it.
    Draining,
    /// No lease left; its instances may be disposed.
    Retired,
}

impl GenerationState {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Building => "building",
            Self::Active => "active",
            Self::Draining => "draining",
            Self::Retired => "retired",
        }
    }
}

/// A mounted instance as a generation sees it.
#[derive(Clone, Debug)]
pub struct GenerationInstance {
    /// Entry id.
    pub entry_id: Arc<str>,
    /// Instance id.
    pub instance_id: Arc<str>,
    /// Manifest name.
    pub plugin: Arc<str>,
    /// The HTTP routes it registered (read without the control plane's
    /// lock, so a reload in progress never holds a request up).
    pub routes: Arc<[super::route::RouteRegistration]>,
}

/// A provider of a capability in a generation.
#[derive(Clone, Debug)]
pub struct Provider {
    /// Entry id.
    pub entry_id: Arc<str>,
    /// Instance id.
    pub instance_id: Arc<str>,
    /// The registration.
    pub registration: CapabilityRegistration,
}

#[derive(Debug)]
struct Accounting {
    state: GenerationState,
    leases: BTreeMap<u64, Instant>,
}

/// Capability → its providers in a generation (a persistent map: see
/// [`Generation::capabilities`]).
pub type ProvidersByCapability = imbl::OrdMap<CapabilityName, Arc<[Provider]>>;

/// What a run of one agent on a generation is stamped with.
#[derive(Clone, Debug)]
pub struct AgentStamp {
    /// The agent's graph definition hash.
    pub definition_hash: String,
    /// Its prompt's hash.
    pub prompt_hash: String,
    /// The digests of the generation's snapshot as this agent sees it.
    pub digests: Digests,
}

/// An immutable published composition.
#[derive(Debug)]
pub struct Generation {
    /// Id (`gen_0001`).
    pub id: GenerationId,
    /// The composition it was built from.
    pub composition: Arc<Composition>,
    /// Its scope tree.
    pub tree: Arc<ScopeTree>,
    /// Its resolution plan.
    pub plan: Arc<Plan>,
    /// Instances in activation order.
    pub instances: Vec<GenerationInstance>,
    /// Capability → providers (registration order within each provider).
    /// Persistent and each list shared, so a generation derived from this
    /// one shares every row it does not rewrite.
    pub capabilities: ProvidersByCapability,
    /// Tools by name (unique in a generation).
    pub tools: BTreeMap<String, ToolRegistration>,
    /// Hooks in dispatch order.
    pub hooks: HookSet,
    /// The snapshot record.
    pub snapshot: SnapshotRecord,
    /// Its digests (computed once, at publication).
    pub digests: Digests,
    /// When it was built.
    pub created_at: Instant,
    /// The mount number of each entry's instance (what its snapshot's
    /// instance ids were computed from).
    pub mounts: crate::engine::snapshot::MountNumbers,
    /// The `policy` and `secrets` of each scope, bound on first use.
    system: OnceLock<SystemIndex>,
    /// The canonical text of the snapshot's semantic scope tree, written
    /// when a generation of the same resolution is derived from this one
    /// and handed on to it (the tree is shared, so is its text).
    semantic_text: OnceLock<Arc<crate::engine::snapshot::ScopesText>>,
    /// The plan's [`SelectingIndex`], built on first use and handed on to
    /// generations derived from this one with the same plan (an
    /// incremental reconcile then looks consumers up instead of scanning
    /// every resolution).
    selecting: OnceLock<Arc<SelectingIndex>>,
    /// What runs of each agent are stamped with, computed at its first run
    /// (hashing the agent's view of the whole snapshot is the cost of a run
    /// that grows with the composition; a server runs many).
    agent_stamps: Mutex<BTreeMap<String, Arc<AgentStamp>>>,
    /// Each tool's argument schema, compiled at its first call in this
    /// generation (`Err`: it does not compile, and every call is refused).
    schemas: Mutex<BTreeMap<String, CompiledSchema>>,
    accounting: Mutex<Accounting>,
}

/// A tool's compiled argument schema, or why it does not compile.
pub type CompiledSchema = Arc<Result<crate::engine::args_schema::ArgsSchema, String>>;

/// The `policy` and `secrets` a scope's tool calls use: the values of the
/// providers that govern the scope ([`crate::engine::system`]), `None` for
/// the harness default. What cannot be resolved or bound is a fail-closed
/// stand-in (a policy denying everything, secrets failing every lookup,
/// both with the reason).
#[derive(Clone, Default)]
pub struct ScopeSystem {
    /// The scope's policy engine, unless it has the default.
    pub policy: Option<Arc<dyn PolicyEngine>>,
    /// The scope's secret provider, unless it has the default.
    pub secrets: Option<Arc<dyn SecretProvider>>,
}

impl std::fmt::Debug for ScopeSystem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScopeSystem")
            .field("policy", &self.policy.is_some())
            .field("secrets", &self.secrets.is_some())
            .finish()
    }
}

/// Per-scope [`ScopeSystem`]s, each bound when a run first asks.
#[derive(Debug)]
struct SystemIndex {
    /// Whether any entry provides a system capability: when none does,
    /// every scope has the defaults and nothing is looked up.
    any: bool,
    /// By scope index.
    scopes: Vec<OnceLock<ScopeSystem>>,
}

/// A lease id was not held.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("lease {lease} is not held on {generation}")]
pub struct UnknownLease {
    /// Generation id.
    pub generation: String,
    /// Lease id.
    pub lease: u64,
}

/// One generation's lease and age figures.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct GenerationPressure {
    /// Id.
    pub generation_id: String,
    /// Sequence.
    pub sequence: u64,
    /// State.
    pub state: &'static str,
    /// Whether it is current.
    pub is_current: bool,
    /// Age in seconds.
    pub age_seconds: f64,
    /// Live leases.
    pub leases: usize,
    /// Age of the oldest lease.
    pub oldest_lease_age_seconds: f64,
    /// Instance ids it retains.
    pub retained_plugins: Vec<String>,
}

impl Generation {
    /// The same generation, recording the mount numbers its snapshot used.
    #[must_use]
    pub fn with_mounts(mut self, mounts: crate::engine::snapshot::MountNumbers) -> Self {
        self.mounts = mounts;
        self
    }

    /// The same generation, with the canonical text of its snapshot's
    /// semantic scope tree (handed on by the generation it was derived
    /// from).
    #[must_use]
    pub(crate) fn with_semantic_text(self, text: Arc<crate::engine::snapshot::ScopesText>) -> Self {
        debug_assert_eq!(*text, self.snapshot.semantic_scopes.text());
        let _ = self.semantic_text.set(text);
        self
    }

    /// The canonical text of the snapshot's semantic scope tree, written
    /// once.
    pub(crate) fn semantic_text(&self) -> Arc<crate::engine::snapshot::ScopesText> {
        Arc::clone(
            self.semantic_text
                .get_or_init(|| Arc::new(self.snapshot.semantic_scopes.text())),
        )
    }

    /// The compiled argument schema of `tool` (`schema`), compiled once per
    /// generation.
    pub fn args_schema(&self, tool: &str, schema: &serde_json::Value) -> CompiledSchema {
        let mut schemas = self
            .schemas
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(compiled) = schemas.get(tool) {
            return Arc::clone(compiled);
        }
        let compiled = Arc::new(crate::engine::args_schema::compile(schema).map(|c| c.schema));
        schemas.insert(tool.to_owned(), Arc::clone(&compiled));
        compiled
    }

    /// The plan's [`SelectingIndex`] (built at the first call).
    pub(crate) fn selecting_index(&self) -> Arc<SelectingIndex> {
        Arc::clone(
            self.selecting
                .get_or_init(|| Arc::new(selecting_index(&self.plan))),
        )
    }

    /// The [`SelectingIndex`] if it was built or handed on (tests).
    #[cfg(test)]
    pub(crate) fn selecting_index_if_built(&self) -> Option<&Arc<SelectingIndex>> {
        self.selecting.get()
    }

    /// This generation, with `previous`'s [`SelectingIndex`] when it was
    /// built for the same plan (the same `Arc`).
    pub(crate) fn with_selecting_index_of(self, previous: &Generation) -> Self {
        if Arc::ptr_eq(&self.plan, &previous.plan)
            && let Some(index) = previous.selecting.get()
        {
            let _ = self.selecting.set(Arc::clone(index));
        }
        self
    }

    /// Let go of a handle on a generation. When it was the last one, the
    /// generation's plain data (composition, scope tree, plan, snapshot,
    /// tables of ids, the selecting index) is freed on the reaper thread and what plugins gave
    /// (capability values, tools, hooks, bound scope systems) here.
    pub(crate) fn let_go(generation: Arc<Self>) {
        let Some(g) = Arc::into_inner(generation) else {
            return;
        };
        // Moved out field by field; the rest drops here.
        super::reaper::free_later((
            g.composition,
            g.tree,
            g.plan,
            g.instances,
            g.snapshot,
            g.mounts,
            g.semantic_text,
            g.selecting,
        ));
    }

    /// What runs of `agent` on this generation are stamped with: computed
    /// by `compute` at the first run, then shared.
    pub fn agent_stamp<E>(
        &self,
        agent: &str,
        compute: impl FnOnce() -> Result<AgentStamp, E>,
    ) -> Result<Arc<AgentStamp>, E> {
        if let Some(stamp) = self
            .agent_stamps
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(agent)
        {
            return Ok(Arc::clone(stamp));
        }
        let stamp = Arc::new(compute()?);
        self.agent_stamps
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(agent.to_owned(), Arc::clone(&stamp));
        Ok(stamp)
    }

    /// Assemble a generation in the building state.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: GenerationId,
        composition: Arc<Composition>,
        tree: Arc<ScopeTree>,
        plan: Arc<Plan>,
        instances: Vec<GenerationInstance>,
        capabilities: ProvidersByCapability,
        tools: BTreeMap<String, ToolRegistration>,
        hooks: HookSet,
        snapshot: SnapshotRecord,
        digests: Digests,
    ) -> Self {
        Self {
            id,
            composition,
            tree,
            plan,
            instances,
            capabilities,
            tools,
            hooks,
            snapshot,
            digests,
            created_at: Instant::now(),
            mounts: crate::engine::snapshot::MountNumbers::new(),
            system: OnceLock::new(),
            semantic_text: OnceLock::new(),
            selecting: OnceLock::new(),
            agent_stamps: Mutex::new(BTreeMap::new()),
            schemas: Mutex::new(BTreeMap::new()),
            accounting: Mutex::new(Accounting {
                state: GenerationState::Building,
                leases: BTreeMap::new(),
            }),
        }
    }

    /// The `policy` and `secrets` governing runs in `scope` (a scope path),
    /// resolved once per scope through the scope tree and capability views
    /// ([`crate::engine::system::governing`]) and bound to the providers'
    /// registered values. A scope outside the tree fails closed when the
    /// composition has any such provider.
    pub fn system(&self, scope: &str) -> ScopeSystem {
        let index = self.system.get_or_init(|| SystemIndex {
            any: crate::engine::system::any_provider(&self.composition),
            scopes: std::iter::repeat_with(OnceLock::new)
                .take(self.tree.len())
                .collect(),
        });
        if !index.any {
            return ScopeSystem::default();
        }
        match self.tree.find_str(scope) {
            Some(ix) => index.scopes[ix]
                .get_or_init(|| self.bind_system(ix))
                .clone(),
            None => {
                let why = |system: SystemCapability| {
                    format!(
                        "{} resolution failed for scope {scope}: the scope is not in generation {}",
                        system.name(),
                        self.id
                    )
                };
                ScopeSystem {
                    policy: Some(Arc::new(FailClosed {
                        reason: why(SystemCapability::Policy),
                    })),
                    secrets: Some(Arc::new(UnavailableSecrets {
                        reason: why(SystemCapability::Secrets),
                    })),
                }
            }
        }
    }

    fn bind_system(&self, ix: crate::engine::tree::ScopeIx) -> ScopeSystem {
        let path = &self.tree.get(ix).path;
        let why = |system: SystemCapability, reason: String| {
            format!(
                "{} resolution failed for scope {path}: {reason}",
                system.name()
            )
        };
        ScopeSystem {
            policy: self
                .bind::<dyn PolicyEngine>(ix, SystemCapability::Policy, "a policy engine")
                .map(|bound| {
                    bound.unwrap_or_else(|reason| {
                        Arc::new(FailClosed {
                            reason: why(SystemCapability::Policy, reason),
                        })
                    })
                }),
            secrets: self
                .bind::<dyn SecretProvider>(ix, SystemCapability::Secrets, "a secret provider")
                .map(|bound| {
                    bound.unwrap_or_else(|reason| {
                        Arc::new(UnavailableSecrets {
                            reason: why(SystemCapability::Secrets, reason),
                        })
                    })
                }),
        }
    }

    /// The `@1` value (an `Arc<T>`) of the entry governing `system` in
    /// scope `ix`: `None` for the default, `Some(Err(why))` when the scope
    /// fails closed.
    fn bind<T: ?Sized + Send + Sync + 'static>(
        &self,
        ix: crate::engine::tree::ScopeIx,
        system: SystemCapability,
        what: &str,
    ) -> Option<Result<Arc<T>, String>> {
        let entry = match governing(&self.composition, &self.tree, &self.plan, ix, system) {
            Governing::Default => return None,
            Governing::FailClosed(failure) => return Some(Err(failure.to_string())),
            Governing::Provider { entry, .. } => entry,
        };
        let registered = self
            .capabilities
            .get(system.name())
            .into_iter()
            .flat_map(|list| list.iter())
            .find(|p| {
                *p.entry_id == *entry.as_str()
                    && p.registration.version.major() == SystemCapability::CONTRACT
            });
        Some(match registered {
            None => Err(format!("{entry} registered no {}@1", system.name())),
            Some(p) => p
                .registration
                .value
                .downcast::<Arc<T>>()
                .map(|value| Arc::clone(value.as_ref()))
                .ok_or_else(|| format!("the value {entry} provides is not {what}")),
        })
    }

    fn accounting(&self) -> MutexGuard<'_, Accounting> {
        self.accounting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Current state.
    pub fn state(&self) -> GenerationState {
        self.accounting().state
    }

    pub(crate) fn set_state(&self, state: GenerationState) {
        self.accounting().state = state;
    }

    /// Live lease count.
    pub fn leases(&self) -> usize {
        self.accounting().leases.len()
    }

    pub(crate) fn add_lease(&self, id: u64) {
        self.accounting().leases.insert(id, Instant::now());
    }

    /// Release lease `id`; returns the remaining count and state.
    pub(crate) fn remove_lease(&self, id: u64) -> Result<(usize, GenerationState), UnknownLease> {
        let mut acc = self.accounting();
        if acc.leases.remove(&id).is_none() {
            return Err(UnknownLease {
                generation: self.id.to_string(),
                lease: id,
            });
        }
        Ok((acc.leases.len(), acc.state))
    }

    /// Instance ids this generation reaches.
    pub fn instance_ids(&self) -> impl Iterator<Item = &str> {
        self.instances.iter().map(|i| &*i.instance_id)
    }

    /// Pressure figures at `now`.
    pub fn pressure(&self, now: Instant, is_current: bool) -> GenerationPressure {
        let acc = self.accounting();
        let age = |t: Instant| now.saturating_duration_since(t).as_secs_f64();
        GenerationPressure {
            generation_id: self.id.to_string(),
            sequence: self.id.sequence(),
            state: acc.state.as_str(),
            is_current,
            age_seconds: age(self.created_at),
            leases: acc.leases.len(),
            oldest_lease_age_seconds: acc.leases.values().map(|&t| age(t)).fold(0.0, f64::max),
            retained_plugins: self
                .instances
                .iter()
                .map(|i| i.instance_id.to_string())
                .collect(),
        }
    }
}

/// The whole pressure report, with the seed's metric names.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PressureReport {
    /// Current generation id.
    pub current_generation_id: Option<String>,
    /// Live (current + draining) generations.
    pub generations: Vec<GenerationPressure>,
    /// Instances retained by more than one live generation.
    pub shared_resources: usize,
}

impl PressureReport {
    /// Gauges: `chassis.generations.{live,draining,leases,oldest_lease_age_seconds}`
    /// and `chassis.resources.shared`.
    pub fn metrics(&self) -> BTreeMap<&'static str, f64> {
        let live = self.generations.len() as f64;
        let draining = self
            .generations
            .iter()
            .filter(|g| g.state == "draining")
            .count() as f64;
        let leases = self.generations.iter().map(|g| g.leases).sum::<usize>() as f64;
        let oldest = self
            .generations
            .iter()
            .map(|g| g.oldest_lease_age_seconds)
            .fold(0.0, f64::max);
        BTreeMap::from([
            ("chassis.generations.live", live),
            ("chassis.generations.draining", draining),
            ("chassis.generations.leases", leases),
            ("chassis.generations.oldest_lease_age_seconds", oldest),
            ("chassis.resources.shared", self.shared_resources as f64),
        ])
    }
}

/// How long a draining generation may wait for its leases at shutdown.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(30);
