//! The harness: one control plane that reconciles compositions into
//! generations, and a data plane that leases them.
//!
//! Reconciles are serialized by one async lock; runs never take it. A run
//! acquires a [`Lease`] on the current generation synchronously and sees
//! that generation only. An instance is disposed only when no live
//! generation (current or draining) reaches it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use super::catalog::Catalog;
use super::generation::{Generation, GenerationState, PressureReport, UnknownLease};
use super::identity::NodeIdentity;
use super::instance::PluginInstance;
use super::scope::CleanupFailure;

/// Harness settings.
#[derive(Clone)]
pub struct HarnessOptions {
    /// How long a cancelled plugin task may take to stop.
    pub task_timeout: Duration,
    /// How long shutdown waits for leases.
    pub shutdown_grace: Duration,
    /// Where control-plane signals go (wrap it with
    /// `engine::telemetry::harness_chain`).
    pub telemetry: Arc<dyn crate::engine::telemetry::Telemetry>,
    /// Where plugins resolve secrets (wrap it in a
    /// `RedactingSecretProvider` sharing the telemetry's redactor). The
    /// default knows no secrets.
    pub secrets: Arc<dyn crate::engine::secret::SecretProvider>,
    /// A harness that publishes once and is shut down (a one-shot
    /// `publish`): an entry whose plugin registers what its manifest alone
    /// decides ([`super::Plugin::registrations_unmounted`], the declared
    /// kind) is placed without mounting, its registrations checked as a
    /// mount's are, since mounting it would prove nothing more — unless a
    /// mounted plugin's hooks are live, since they observe mounts. Such a
    /// harness publishes once and runs nothing: its generation holds no
    /// instance of those entries, and a second reconcile mounts every
    /// entry, the unmounted ones counted as new.
    pub publish_only: bool,
}

impl std::fmt::Debug for HarnessOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HarnessOptions")
            .field("task_timeout", &self.task_timeout)
            .field("shutdown_grace", &self.shutdown_grace)
            .finish_non_exhaustive()
    }
}

impl Default for HarnessOptions {
    fn default() -> Self {
        Self {
            task_timeout: Duration::from_secs(5),
            shutdown_grace: super::generation::DEFAULT_SHUTDOWN_GRACE,
            telemetry: Arc::new(crate::engine::telemetry::NoopTelemetry::default()),
            secrets: Arc::new(crate::engine::secret::StaticSecretProvider::new()),
            publish_only: false,
        }
    }
}

/// An entry and its bindings `(capability, provider instance, version)`.
pub(crate) type IdentityInputs = (crate::engine::model::Entry, Vec<(String, String, String)>);

/// An instance the harness manages, with the identity it was mounted with.
pub(crate) struct Managed {
    pub(crate) identity: NodeIdentity,
    /// The inputs the identity was computed from: an unchanged entry with
    /// unchanged bindings has an unchanged identity, so a no-op reconcile
    /// compares instead of hashing.
    pub(crate) inputs: Option<IdentityInputs>,
    pub(crate) mount: u64,
    /// Global mount order: later mounts are torn down first.
    pub(crate) order: u64,
    pub(crate) instance: PluginInstance,
}

/// Entry id → the instance it runs. Persistent (structurally shared): each
/// reconcile starts from the current map and changes a few rows, and the
/// previous map stays valid for what still reads it.
pub(crate) type InstanceByEntry = imbl::OrdMap<Arc<str>, Arc<str>>;

/// Everything the control plane mutates, under one async lock.
#[derive(Default)]
pub(crate) struct ControlState {
    /// Instance id → managed instance (current and retained ones). Hashed,
    /// not sorted: a publish inserts every entry's in activation order,
    /// and a B-tree's string comparisons on those inserts and lookups were
    /// a quarter of placing 100,000 entries; whatever lists them sorts
    /// (by mount order, or by id). Boxed, so a rehash moves pointers, not
    /// `Managed`s of several hundred bytes.
    pub(crate) instances: HashMap<Arc<str>, Box<Managed>>,
    /// Entry id → the instance the current generation uses.
    pub(crate) current_by_entry: InstanceByEntry,
    /// Entry id → mounts so far (instance ids derive from it); hashed,
    /// as `instances`.
    pub(crate) mounts: HashMap<Arc<str>, u64>,
    /// Last published sequence.
    pub(crate) sequence: u64,
    /// Next global mount order.
    pub(crate) next_order: u64,
    /// Instance ids whose plugin registered hooks (the live hook set is
    /// built from these only, so mounting stays linear).
    pub(crate) hooked: std::collections::BTreeSet<Arc<str>>,
    /// State carried over from a store, until the first publication.
    pub(crate) seed: Option<SeedState>,
    /// Instance ids the current generation does not use: displaced by a
    /// publication, or mounted by an attempt that has not published (one
    /// whose future was dropped midway leaves them here). The only
    /// candidates for disposal, so reclaiming after a small change stays
    /// small.
    /// Hashed: disposal sorts them newest first.
    pub(crate) stale: HashSet<Arc<str>>,
    /// Instance id → an entry placed without mounting
    /// ([`HarnessOptions::publish_only`]).
    pub(crate) unmounted: crate::engine::tree::FxHashMap<Arc<str>, Box<Unmounted>>,
}

/// An entry a publish-only harness placed without mounting: what a mount
/// would have registered, and the identity and mount number it was placed
/// with.
pub(crate) struct Unmounted {
    pub(crate) manifest: Arc<crate::engine::model::Manifest>,
    pub(crate) identity: NodeIdentity,
    pub(crate) mount: u64,
    pub(crate) registrations: Arc<super::context::Registrations>,
}

impl ControlState {
    /// What instance `iid` registered, mounted or not.
    pub(crate) fn registrations(&self, iid: &str) -> Option<Arc<super::context::Registrations>> {
        match self.instances.get(iid) {
            Some(m) => Some(m.instance.registrations()),
            None => self
                .unmounted
                .get(iid)
                .map(|u| Arc::clone(&u.registrations)),
        }
    }

    /// What instance `iid` registered and the mount number it was placed
    /// with, mounted or not.
    pub(crate) fn placed(&self, iid: &str) -> Option<(Arc<super::context::Registrations>, u64)> {
        match self.instances.get(iid) {
            Some(m) => Some((m.instance.registrations(), m.mount)),
            None => self
                .unmounted
                .get(iid)
                .map(|u| (Arc::clone(&u.registrations), u.mount)),
        }
    }

    /// Make `chosen` (entry id → instance id) the current instances,
    /// recording the instances it displaces as stale. `displaced` lists
    /// them when the caller knows them (it placed only some entries);
    /// otherwise both maps are walked side by side (both are sorted by
    /// entry id).
    pub(crate) fn set_current(
        &mut self,
        chosen: InstanceByEntry,
        displaced: Option<Vec<Arc<str>>>,
    ) {
        match displaced {
            Some(displaced) => self.stale.extend(displaced),
            None => {
                let mut new = chosen.iter().peekable();
                for (entry, iid) in &self.current_by_entry {
                    while new.next_if(|(e, _)| *e < entry).is_some() {}
                    if new.peek().is_none_or(|(e, i)| *e != entry || *i != iid) {
                        self.stale.insert(iid.clone());
                    }
                }
            }
        }
        self.current_by_entry = chosen;
        debug_assert!(
            self.instances.keys().all(|iid| self.stale.contains(iid)
                || self
                    .instances
                    .get(iid)
                    .is_some_and(|m| self.current_by_entry.get(&m.instance.entry_id) == Some(iid))),
            "every instance is current or stale"
        );
    }

    /// Instance ids, newest mount first (consumers before their providers).
    pub(crate) fn newest_first(&self, ids: impl IntoIterator<Item = Arc<str>>) -> Vec<Arc<str>> {
        let mut ids: Vec<Arc<str>> = ids.into_iter().collect();
        ids.sort_by_cached_key(|id| {
            std::cmp::Reverse(self.instances.get(id).map_or(0, |m| m.order))
        });
        ids
    }

    /// Every instance id, newest mount first: [`Self::newest_first`] of
    /// them all, read off the map in one pass (mount orders are unique)
    /// instead of looking each one up to sort it.
    pub(crate) fn all_newest_first(&self) -> Vec<Arc<str>> {
        let mut order: Vec<(u64, Arc<str>)> = self
            .instances
            .iter()
            .map(|(id, m)| (m.order, Arc::clone(id)))
            .collect();
        order.sort_unstable_by_key(|(o, _)| std::cmp::Reverse(*o));
        order.into_iter().map(|(_, id)| id).collect()
    }
}

/// How long a reconcile whose setups were cancelled ([`Harness::cancel_setups`])
/// is given to roll back before it is dropped: a process plugin's cancelled
/// setup ends within its teardown grace period (5 s), and the rest is
/// prompt.
pub const SETUP_CANCEL_GRACE: Duration = Duration::from_secs(7);

pub(crate) struct Shared {
    pub(crate) catalog: Catalog,
    pub(crate) options: HarnessOptions,
    pub(crate) current: RwLock<Option<Arc<Generation>>>,
    pub(crate) draining: Mutex<Vec<Arc<Generation>>>,
    pub(crate) control: tokio::sync::Mutex<ControlState>,
    pub(crate) next_lease: AtomicU64,
    pub(crate) hook_sequence: Arc<AtomicU64>,
    pub(crate) stopping: std::sync::atomic::AtomicBool,
    /// Where mounted plugins report tool-set changes.
    pub(crate) tool_sets: super::tool_set::ToolSetSink,
    /// Where mounted plugins count their restarts.
    pub(crate) restarts: super::context::RestartCounts,
    /// Fired when the harness unmounts what it may be setting up (an
    /// interrupt, a shutdown): see [`Harness::cancel_setups`].
    pub(crate) setups_cancelled: super::tool::Cancellation,
    /// Tests only: place every entry even when nothing changed, so the
    /// no-op shortcut can be compared with what it stands for.
    #[cfg(test)]
    pub(crate) always_place: std::sync::atomic::AtomicBool,
    /// Tests only: how many reconciles the no-op shortcut answered.
    #[cfg(test)]
    pub(crate) shortcuts: AtomicU64,
    /// Tests only: generations derived from the current one (the
    /// incremental path) rather than built.
    #[cfg(test)]
    pub(crate) derived: AtomicU64,
}

/// The harness (a cheap handle).
#[derive(Clone)]
pub struct Harness {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for Harness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Harness")
            .field("current", &self.current().map(|g| g.id.to_string()))
            .finish()
    }
}

/// Turns a computed configuration hash into the form a store keeps (a
/// keyed fingerprint), so computed and stored identities compare.
pub type ConfigFingerprint = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// A node of a stored generation, as a harness is seeded with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeedNode {
    /// Entry id.
    pub entry_id: String,
    /// The instance id it had.
    pub instance_id: String,
    /// Its mount number (the instance id derives from it).
    pub mount: u64,
    /// Its identity, `config` already fingerprinted when the seed has a
    /// [`SeedState::config_fingerprint`].
    pub identity: NodeIdentity,
}

/// What a harness in a new process starts from: the store's current
/// generation. Across processes, "reused" means the stored instance id and
/// identity carry over and the plugin is mounted afresh.
#[derive(Clone, Default)]
pub struct SeedState {
    /// The last published sequence (numbering continues after it).
    pub sequence: u64,
    /// The stored current generation's full digest: a reconcile that would
    /// rebuild exactly it publishes nothing.
    pub digest: Option<String>,
    /// Entry id -> mounts so far (kept for removed entries too).
    pub mounts: BTreeMap<String, u64>,
    /// The stored current generation's nodes, sorted by entry id (as the
    /// store and [`Harness::seed`] keep them; see [`SeedState::sort`]).
    pub nodes: Vec<SeedNode>,
    /// Applied to a computed identity's `config` before comparing.
    pub config_fingerprint: Option<ConfigFingerprint>,
}

impl std::fmt::Debug for SeedState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SeedState")
            .field("sequence", &self.sequence)
            .field("digest", &self.digest)
            .field("mounts", &self.mounts)
            .field("nodes", &self.nodes)
            .finish_non_exhaustive()
    }
}

impl SeedState {
    /// The stored node of `entry` (a binary search: called once per entry
    /// of a reconcile, a scan made every publish against a store
    /// quadratic).
    pub fn node(&self, entry: &str) -> Option<&SeedNode> {
        self.nodes
            .binary_search_by(|n| n.entry_id.as_str().cmp(entry))
            .ok()
            .map(|i| &self.nodes[i])
    }

    /// Sort the nodes by entry id, as [`Self::node`] needs.
    pub fn sort(&mut self) {
        self.nodes.sort_by(|a, b| a.entry_id.cmp(&b.entry_id));
    }

    /// Whether `identity`, as the store would keep it, is `stored` (what
    /// [`Self::view`] and `==` say, without copying the identity).
    pub fn sees_as(&self, identity: &NodeIdentity, stored: &NodeIdentity) -> bool {
        let NodeIdentity {
            implementation,
            contracts,
            config,
            scope,
            dependencies,
        } = identity;
        *implementation == stored.implementation
            && *contracts == stored.contracts
            && *scope == stored.scope
            && *dependencies == stored.dependencies
            && match &self.config_fingerprint {
                Some(fp) => fp(config) == stored.config,
                None => *config == stored.config,
            }
    }

    /// `identity` as the store would keep it.
    pub fn view(&self, identity: &NodeIdentity) -> NodeIdentity {
        let mut seen = identity.clone();
        if let Some(fp) = &self.config_fingerprint {
            seen.config = fp(&identity.config);
        }
        seen
    }
}

/// A harness that already published cannot be seeded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the harness already has generation {current}; seed it before its first reconcile")]
pub struct SeedError {
    /// Its current generation.
    pub current: String,
}

/// No generation can be leased.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AcquireError {
    /// Nothing was published yet.
    #[error("no runtime generation is available: reconcile a composition first")]
    NoGeneration,
    /// The harness is stopping.
    #[error("the harness is stopping and accepts no new runs")]
    Stopping,
}

/// A run's hold on one generation. Dropping it releases it.
#[derive(Debug)]
pub struct Lease {
    generation: Arc<Generation>,
    id: u64,
    released: bool,
    harness: Weak<Shared>,
}

impl Lease {
    /// The leased generation.
    pub fn generation(&self) -> &Arc<Generation> {
        &self.generation
    }

    /// Lease id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Release explicitly (also done on drop).
    pub fn release(mut self) -> Result<(), UnknownLease> {
        self.released = true;
        release(&self.harness, &self.generation, self.id)
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if !self.released {
            let _ = release(&self.harness, &self.generation, self.id);
        }
    }
}

fn release(
    harness: &Weak<Shared>,
    generation: &Arc<Generation>,
    id: u64,
) -> Result<(), UnknownLease> {
    let (remaining, state) = generation.remove_lease(id)?;
    if let Some(shared) = harness.upgrade() {
        let attrs = super::signals::attrs([
            ("generation_id", generation.id.to_string().into()),
            (
                "leases",
                i64::try_from(remaining).unwrap_or(i64::MAX).into(),
            ),
        ]);
        let _ = shared.options.telemetry.event("generation.release", &attrs);
    }
    if remaining == 0 && state == GenerationState::Draining {
        generation.set_state(GenerationState::Retired);
        if let Some(shared) = harness.upgrade() {
            let attrs =
                super::signals::attrs([("generation_id", generation.id.to_string().into())]);
            let _ = shared.options.telemetry.event("generation.retired", &attrs);
        }
        // Disposal needs the control lock; do it in the background when a
        // runtime is there, else at the next reconcile.
        if let (Some(shared), Ok(handle)) =
            (harness.upgrade(), tokio::runtime::Handle::try_current())
        {
            handle.spawn(async move {
                let harness = Harness { shared };
                let mut control = harness.shared.control.lock().await;
                let _ = harness.reclaim(&mut control).await;
            });
        }
    }
    Ok(())
}

impl Harness {
    /// Every tool-set change a mounted plugin reports from now on (an MCP
    /// server that restarted with other tools, or announced a new list):
    /// the owner of the harness builds a candidate generation from it; the
    /// generations already published never change.
    pub fn tool_set_changes(
        &self,
    ) -> tokio::sync::broadcast::Receiver<super::tool_set::ToolSetChange> {
        self.shared.tool_sets.subscribe()
    }

    /// A harness over `catalog`.
    pub fn new(catalog: Catalog, options: HarnessOptions) -> Self {
        Self {
            shared: Arc::new(Shared {
                catalog,
                options,
                current: RwLock::new(None),
                draining: Mutex::new(Vec::new()),
                control: tokio::sync::Mutex::new(ControlState::default()),
                next_lease: AtomicU64::new(1),
                hook_sequence: Arc::new(AtomicU64::new(1)),
                stopping: std::sync::atomic::AtomicBool::new(false),
                tool_sets: super::tool_set::ToolSetSink::default(),
                restarts: super::context::RestartCounts::default(),
                setups_cancelled: super::tool::Cancellation::new(),
                #[cfg(test)]
                always_place: std::sync::atomic::AtomicBool::new(false),
                #[cfg(test)]
                shortcuts: AtomicU64::new(0),
                #[cfg(test)]
                derived: AtomicU64::new(0),
            }),
        }
    }

    /// Start from stored state (before the first reconcile): generation
    /// numbering continues from `seed.sequence`, mount numbers from
    /// `seed.mounts`, and an entry whose identity equals its stored one keeps
    /// its stored instance id (mounted afresh, decision `reused`).
    pub async fn seed(&self, mut seed: SeedState) -> Result<(), SeedError> {
        seed.sort();
        let mut control = self.shared.control.lock().await;
        if let Some(current) = self.current() {
            return Err(SeedError {
                current: current.id.to_string(),
            });
        }
        control.sequence = seed.sequence;
        control.mounts = seed
            .mounts
            .iter()
            .map(|(entry, &n)| (Arc::from(entry.as_str()), n))
            .collect();
        control.seed = Some(seed);
        Ok(())
    }

    /// The nodes of the current generation (entry, instance, mount, raw
    /// identity), in entry order.
    pub async fn nodes(&self) -> Vec<SeedNode> {
        let control = self.shared.control.lock().await;
        control
            .current_by_entry
            .iter()
            .filter_map(|(entry, iid)| {
                let (mount, identity) = match control.instances.get(iid) {
                    Some(m) => (m.mount, &m.identity),
                    None => control.unmounted.get(iid).map(|u| (u.mount, &u.identity))?,
                };
                Some(SeedNode {
                    entry_id: entry.to_string(),
                    instance_id: iid.to_string(),
                    mount,
                    identity: identity.clone(),
                })
            })
            .collect()
    }

    /// The current generation.
    pub fn current(&self) -> Option<Arc<Generation>> {
        self.shared
            .current
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Lease the current generation (atomic with respect to publication).
    pub fn acquire(&self) -> Result<Lease, AcquireError> {
        if self.shared.stopping.load(Ordering::SeqCst) {
            return Err(AcquireError::Stopping);
        }
        let guard = self
            .shared
            .current
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let generation = guard.as_ref().ok_or(AcquireError::NoGeneration)?.clone();
        let id = self.shared.next_lease.fetch_add(1, Ordering::SeqCst);
        generation.add_lease(id);
        drop(guard);
        self.event(
            "generation.acquire",
            super::signals::attrs([
                ("generation_id", generation.id.to_string().into()),
                (
                    "sequence",
                    i64::try_from(generation.id.sequence())
                        .unwrap_or(i64::MAX)
                        .into(),
                ),
            ]),
        );
        Ok(Lease {
            generation,
            id,
            released: false,
            harness: Arc::downgrade(&self.shared),
        })
    }

    /// Live generations: the current one, then draining ones.
    pub fn live_generations(&self) -> Vec<Arc<Generation>> {
        let mut out: Vec<Arc<Generation>> = self.current().into_iter().collect();
        out.extend(self.draining().iter().cloned());
        out
    }

    fn draining(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Generation>>> {
        self.shared
            .draining
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How many times each entry's plugin restarted what it supervises
    /// since this harness started (a counter that only grows).
    pub fn plugin_restarts(&self) -> std::collections::BTreeMap<String, u64> {
        self.shared.restarts.snapshot()
    }

    /// Generation pressure: reads state only, never awaits.
    pub fn generation_pressure(&self) -> PressureReport {
        let now = tokio::time::Instant::now();
        let current = self.current();
        let live = self.live_generations();
        let mut reach: BTreeMap<&str, usize> = BTreeMap::new();
        for g in &live {
            for id in g.instance_ids() {
                *reach.entry(id).or_default() += 1;
            }
        }
        PressureReport {
            current_generation_id: current.as_ref().map(|g| g.id.to_string()),
            generations: live
                .iter()
                .map(|g| g.pressure(now, current.as_ref().is_some_and(|c| Arc::ptr_eq(c, g))))
                .collect(),
            shared_resources: reach.values().filter(|&&n| n > 1).count(),
        }
    }

    /// Retire draining generations without leases and dispose instances no
    /// live generation reaches (consumers first). Failures are collected;
    /// the disposed instance ids are returned with them.
    pub(crate) async fn reclaim(
        &self,
        control: &mut ControlState,
    ) -> (Vec<CleanupFailure>, Vec<String>) {
        {
            let mut draining = self.draining();
            for g in draining.iter() {
                if g.leases() == 0 && g.state() != GenerationState::Retired {
                    g.set_state(GenerationState::Retired);
                    self.event(
                        "generation.retired",
                        super::signals::attrs([("generation_id", g.id.to_string().into())]),
                    );
                }
            }
            let (retired, live): (Vec<_>, Vec<_>) = std::mem::take(&mut *draining)
                .into_iter()
                .partition(|g| g.state() == GenerationState::Retired);
            *draining = live;
            drop(draining);
            retired.into_iter().for_each(Generation::let_go);
        }
        // Stale instances still current (cannot happen: instance ids never
        // come back) or reached by a draining generation are kept.
        let draining = self.draining().clone();
        let reachable: HashSet<&str> = if control.stale.is_empty() {
            HashSet::new()
        } else {
            draining.iter().flat_map(|g| g.instance_ids()).collect()
        };
        let doomed: Vec<Arc<str>> = control
            .stale
            .iter()
            .filter(|iid| {
                let current = control.instances.get(*iid).is_some_and(|m| {
                    control.current_by_entry.get(&m.instance.entry_id) == Some(*iid)
                });
                !current && !reachable.contains(&***iid)
            })
            .cloned()
            .collect();
        drop(reachable);
        drop(draining);
        // Gone without being disposed here (rolled back): forget them.
        control
            .stale
            .retain(|iid| control.instances.contains_key(iid));
        let doomed = control.newest_first(doomed);
        let mut failures = Vec::new();
        let mut disposed = Vec::with_capacity(doomed.len());
        for id in doomed {
            // Forgotten as stale only as it goes: a reclaim cut short (its
            // future dropped) leaves the rest stale for the next one.
            if let Some(mut managed) = control.instances.remove(&id) {
                control.stale.remove(&id);
                control.hooked.remove(&id);
                let hooks = self.live_hooks(control);
                failures.extend(self.unmount_observed(&hooks, &mut managed.instance).await);
                disposed.push(id.to_string());
            }
        }
        (failures, disposed)
    }

    /// Cancel every setup in flight, and every setup to come: the harness
    /// is unmounting (an interrupt; [`Self::shutdown`] does it first). A
    /// reconcile under way fails at the setup it is in, and rolls back,
    /// without waiting for that setup to answer: a plugin that heeds the
    /// cancellation (a process plugin: `$/cancel`, `teardown`, its process
    /// group ended within its grace period) ends it, any other setup is
    /// dropped (see [`super::Plugin::heeds_setup_cancellation`]).
    pub fn cancel_setups(&self) {
        self.shared.setups_cancelled.cancel();
    }

    /// Run `work` (a reconcile of this harness) unless `interrupted`
    /// completes first; then cancel the setups ([`Self::cancel_setups`])
    /// and give the reconcile [`SETUP_CANCEL_GRACE`] to roll back (what it
    /// has not finished by then is dropped: the process groups it holds are
    /// killed, and [`Self::shutdown`] unmounts what it mounted). `None`
    /// when interrupted.
    pub async fn unless_interrupted<T>(
        &self,
        work: impl std::future::Future<Output = T>,
        interrupted: impl std::future::Future<Output = ()>,
    ) -> Option<T> {
        tokio::pin!(work);
        tokio::select! {
            r = &mut work => return Some(r),
            () = interrupted => {}
        }
        self.cancel_setups();
        let _ = tokio::time::timeout(SETUP_CANCEL_GRACE, work).await;
        None
    }

    /// Stop: cancel the setups in flight ([`Self::cancel_setups`]), refuse
    /// new runs, drain (bounded by the grace period), dispose everything
    /// consumers-first. Failures are aggregated.
    pub async fn shutdown(&self) -> Vec<CleanupFailure> {
        let span = self.span_start("harness.shutdown", || {
            super::signals::attrs([("harness", "chassis".into())])
        });
        let failures = self.shutdown_inner().await;
        let n = i64::try_from(failures.len()).unwrap_or(i64::MAX);
        self.span_end(span, super::signals::attrs([("failures", n.into())]), None);
        failures
    }

    async fn shutdown_inner(&self) -> Vec<CleanupFailure> {
        self.shared.stopping.store(true, Ordering::SeqCst);
        // A reconcile under way holds the control state while a plugin sets
        // up: its setup is cancelled rather than waited for (a process
        // plugin's could take its whole startup timeout).
        self.cancel_setups();
        let mut control = self.shared.control.lock().await;
        if let Some(old) = self
            .shared
            .current
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        {
            old.set_state(GenerationState::Draining);
            self.draining().push(old);
        }
        let deadline = tokio::time::Instant::now() + self.shared.options.shutdown_grace;
        while self.draining().iter().any(|g| g.leases() > 0)
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let mut failures = Vec::new();
        for g in self.draining().drain(..) {
            if g.leases() > 0 {
                failures.push(CleanupFailure {
                    description: format!("generation {}", g.id),
                    error: format!(
                        "{} lease(s) still held after the shutdown grace period",
                        g.leases()
                    ),
                });
            }
            g.set_state(GenerationState::Retired);
        }
        control.current_by_entry.clear();
        control.stale.clear();
        control.unmounted.clear();
        // Newest first. Each instance leaves the map as it is unmounted,
        // under the hooks still live (rebuilt when a hook-registering one
        // leaves), so a shutdown cut short leaves the rest mounted and known.
        let mut hooks = self.live_hooks(&control);
        for id in control.all_newest_first() {
            if let Some(mut managed) = control.instances.remove(&id) {
                if control.hooked.remove(&id) {
                    hooks = self.live_hooks(&control);
                }
                failures.extend(self.unmount_observed(&hooks, &mut managed.instance).await);
            }
        }
        failures
    }
}
