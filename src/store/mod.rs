//! The generation store: published generations and runs, persisted.
//!
//! Leases, draining, disposal and generation pressure live inside one
//! process; the store keeps what outlives it: each generation's record
//! (snapshot envelope and digests), its nodes (entry, instance id, mount
//! number, identity) and the runs made on it. Across processes "reused"
//! means a node's stored instance id and identity carry over and the plugin
//! is mounted afresh ([`seed_state`] feeds a [`Harness`](crate::runtime::Harness)).
//!
//! The store is an edge adapter behind [`Store`]; the embedded SQLite one
//! ([`sqlite::SqliteStore`], `.chassis/state.db` beside the composition) is
//! the default, and another backend (PostgreSQL) fits behind the same trait.
//! Identities hold hashes only, and the configuration part is kept as a
//! keyed fingerprint (HMAC under a random per-store key, [`key`]), never a
//! configuration value.

pub mod chunks;
pub mod failpoint;
pub mod key;
pub mod migrate;
pub mod sqlite;
mod time;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::engine::identity::GenerationId;
use crate::engine::snapshot::Digests;
use crate::runtime::harness::{ConfigFingerprint, SeedNode, SeedState};
use crate::runtime::identity::{Decision, NodeIdentity, NodeImpact};

pub use key::StoreKey;
pub use sqlite::{SqliteStore, unix_now};
pub use time::{format_unix, now_rfc3339};

/// The schema version this chassis writes (and the newest it reads).
pub fn schema_version() -> i64 {
    migrate::latest()
}

/// Where the store lives by default, relative to the composition's folder.
pub const DEFAULT_STATE: &str = ".chassis/state.db";

/// The purpose label of configuration fingerprints.
pub const CONFIG_PURPOSE: &str = "chassis.identity.config.v1";

/// The default store path for the composition at `file`.
pub fn default_path(file: &Path) -> PathBuf {
    file.parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
        .join(DEFAULT_STATE)
}

/// A store operation failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// There is no store at the path (reading commands never create one).
    #[error("no generation store at `{path}`")]
    Missing {
        /// Path.
        path: String,
    },
    /// The store was written by a newer chassis.
    #[error(
        "the store `{path}` has schema version {found}; this chassis reads versions up to {supported}"
    )]
    FutureSchema {
        /// Path.
        path: String,
        /// Its schema version.
        found: i64,
        /// The newest this build reads.
        supported: i64,
    },
    /// The file is not a chassis store.
    #[error("`{path}` is not a chassis store: {reason}")]
    NotAStore {
        /// Path.
        path: String,
        /// Why.
        reason: String,
    },
    /// What a chassis store holds is damaged: a chunk that fails its hash
    /// check or is missing, a stored document that does not read back.
    /// Found on reading; nothing is written to such a store.
    #[error(
        "the store `{path}` is damaged: the {part} of {generation} ({}): {reason}",
        shown_lineage(lineage)
    )]
    Damaged {
        /// Path.
        path: String,
        /// The lineage the generation belongs to (as stored; empty for the
        /// unclaimed history of a migrated store).
        lineage: String,
        /// The generation (`gen_0002`).
        generation: String,
        /// What of it is damaged: `snapshot`, `nodes`, `impact`, `agents`.
        part: &'static str,
        /// How, naming no contents (a chunk's hash, a line and column).
        reason: String,
    },
    /// Another publish won the race.
    #[error(
        "the store moved on while publishing: expected the current generation to be {expected}, found {found}"
    )]
    Conflict {
        /// What the publish was computed against.
        expected: String,
        /// What the store has.
        found: String,
    },
    /// SQLite or the file system failed.
    #[error("store `{path}`: {message}")]
    Backend {
        /// Path.
        path: String,
        /// The failure.
        message: String,
    },
}

impl StoreError {
    /// A stable code for diagnostics.
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::Missing { .. } => "store::missing",
            StoreError::FutureSchema { .. } => "store::future-schema",
            StoreError::NotAStore { .. } => "store::not-a-store",
            StoreError::Damaged { .. } => "store::damaged",
            StoreError::Conflict { .. } => "store::conflict",
            StoreError::Backend { .. } => "store::backend",
        }
    }

    /// A hint for a person.
    pub fn help(&self) -> Option<&'static str> {
        match self {
            StoreError::Missing { .. } => {
                Some("run `chassis publish FILE` first, or point at a store with `--state PATH`")
            }
            StoreError::FutureSchema { .. } => Some("upgrade chassis to read this store"),
            StoreError::NotAStore { .. } => Some(
                "point `--state` (or `[store] path`) at a chassis store, or at a path where none is yet for a new one; chassis never writes over what is there",
            ),
            StoreError::Damaged { .. } => Some(
                "restore the store from a backup, or publish into a fresh store with `--state NEW_PATH`; chassis changes nothing in a damaged store",
            ),
            StoreError::Conflict { .. } => {
                Some("another publish committed first; run publish again")
            }
            _ => None,
        }
    }
}

/// How a lineage is named in a message: its name, or what the unclaimed
/// history of a migrated store is.
fn shown_lineage(name: &str) -> String {
    if name.is_empty() {
        "from before lineages".to_owned()
    } else {
        format!("composition `{name}`")
    }
}

/// Why a stored JSON document does not read back as `what` (`a
/// snapshot`), naming no contents: serde's own message may quote a value
/// (`invalid type: string "…"`), so only its category and position are
/// kept. `line` is the line of a document read one line at a time.
pub fn unreadable_json(e: &serde_json::Error, what: &str, line: Option<usize>) -> String {
    use serde_json::error::Category;
    let at = format!("line {}, column {}", line.unwrap_or(e.line()), e.column());
    match e.classify() {
        Category::Syntax | Category::Eof => format!("it is not JSON at {at}"),
        Category::Data => format!("it does not have the shape of {what} at {at}"),
        Category::Io => format!("it cannot be read at {at}"),
    }
}

/// A node identity as stored: hashes only, configuration as a keyed
/// fingerprint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredIdentity {
    /// Implementation hash.
    pub implementation: String,
    /// Contracts hash.
    pub contracts: String,
    /// Keyed fingerprint of the configuration hash.
    pub config: String,
    /// Scope path.
    pub scope: String,
    /// Bindings hash.
    pub dependencies: String,
    /// One keyed fingerprint per configuration leaf, by its path below
    /// `config` (a JSON array of keys): enough to name every changed key
    /// between two generations, never a value. A leaf that may hold a
    /// credential is listed with an empty fingerprint (present, never
    /// fingerprinted). Empty for a configuration without leaves, and in
    /// stores written before they were kept.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub config_leaves: BTreeMap<String, String>,
}

impl StoredIdentity {
    /// `identity` as stored (`config` already fingerprinted when `fingerprint`
    /// is `None`).
    pub fn from_identity(identity: &NodeIdentity, fingerprint: Option<&ConfigFingerprint>) -> Self {
        Self {
            implementation: identity.implementation.clone(),
            contracts: identity.contracts.clone(),
            config: fingerprint.map_or_else(|| identity.config.clone(), |f| f(&identity.config)),
            scope: identity.scope.clone(),
            dependencies: identity.dependencies.clone(),
            config_leaves: BTreeMap::new(),
        }
    }

    /// With the fingerprints of each configuration leaf, fingerprinted
    /// with `fingerprint` (a leaf without a hash is listed unfingerprinted).
    #[must_use]
    pub fn with_config_leaves(
        mut self,
        leaves: Vec<crate::engine::declared::ConfigLeaf>,
        fingerprint: &ConfigFingerprint,
    ) -> Self {
        self.config_leaves = leaves
            .into_iter()
            .map(|leaf| {
                (
                    serde_json::to_string(&leaf.path).unwrap_or_default(),
                    leaf.hash.map(|h| fingerprint(&h)).unwrap_or_default(),
                )
            })
            .collect();
        self
    }

    /// Back to a [`NodeIdentity`] whose `config` is the fingerprint.
    pub fn to_identity(&self) -> NodeIdentity {
        NodeIdentity {
            implementation: self.implementation.clone(),
            contracts: self.contracts.clone(),
            config: self.config.clone(),
            scope: self.scope.clone(),
            dependencies: self.dependencies.clone(),
        }
    }
}

/// One node of a stored generation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredNode {
    /// Entry id.
    pub entry_id: String,
    /// Instance id.
    pub instance_id: String,
    /// Mount number.
    pub mount: u64,
    /// Identity.
    pub identity: StoredIdentity,
}

/// A stored node read as a harness is seeded with it: its identity's
/// hashes, its configuration leaves skipped unread. At 100,000 entries a
/// leaf map per node was a fifth of reading a store's head, and a seed
/// never compares leaves.
#[derive(Deserialize)]
pub(crate) struct SeedRow {
    entry_id: String,
    instance_id: String,
    mount: u64,
    identity: SeedIdentityRow,
}

/// The hashes of a [`SeedRow`]'s identity (`config_leaves` is skipped).
#[derive(Deserialize)]
struct SeedIdentityRow {
    implementation: String,
    contracts: String,
    config: String,
    scope: String,
    dependencies: String,
}

impl From<SeedRow> for SeedNode {
    fn from(r: SeedRow) -> Self {
        let i = r.identity;
        Self {
            entry_id: r.entry_id,
            instance_id: r.instance_id,
            mount: r.mount,
            identity: NodeIdentity {
                implementation: i.implementation,
                contracts: i.contracts,
                config: i.config,
                scope: i.scope,
                dependencies: i.dependencies,
            },
        }
    }
}

/// What a publish did with one node (removed nodes included).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredImpact {
    /// Entry id.
    pub entry_id: String,
    /// `added`, `removed`, `reused`, `unchanged`, `rewired`, `rebuilt`.
    pub decision: String,
    /// Reasons.
    pub reasons: Vec<String>,
    /// Old instance id.
    pub old_instance_id: Option<String>,
    /// New instance id.
    pub new_instance_id: Option<String>,
}

impl From<&NodeImpact> for StoredImpact {
    fn from(i: &NodeImpact) -> Self {
        Self {
            entry_id: i.entry_id.to_string(),
            decision: decision_name(i.decision).to_owned(),
            reasons: i.reasons.iter().map(|r| (*r).to_owned()).collect(),
            old_instance_id: i.old_instance_id.as_deref().map(str::to_owned),
            new_instance_id: i.new_instance_id.as_deref().map(str::to_owned),
        }
    }
}

/// The snake_case name of a decision.
pub fn decision_name(d: Decision) -> &'static str {
    match d {
        Decision::Added => "added",
        Decision::Removed => "removed",
        Decision::Pending => "pending",
        Decision::Reused => "reused",
        Decision::Unchanged => "unchanged",
        Decision::Rewired => "rewired",
        Decision::Rebuilt => "rebuilt",
    }
}

/// A lineage as listed: one composition's history in a shared store.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LineageSummary {
    /// Its name (the root file's path in the workspace, or the
    /// composition's `name`); empty for generations a version 1 store held
    /// before lineages, until a composition publishes and claims them.
    pub name: String,
    /// How many generations it holds.
    pub generations: u64,
    /// Its current generation.
    pub current: Option<String>,
}

/// A generation as listed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GenerationSummary {
    /// The lineage it belongs to.
    pub lineage: String,
    /// Id (`gen_0001`).
    pub id: String,
    /// Sequence.
    pub sequence: u64,
    /// `active` (the current one) or `superseded`.
    pub state: String,
    /// When it was published (RFC 3339, UTC).
    pub created_at: String,
    /// Semantic digest.
    pub semantic_digest: String,
    /// Full digest.
    pub digest: String,
    /// Node count.
    pub nodes: usize,
}

/// A stored generation in full.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredGeneration {
    /// Summary fields.
    pub summary: GenerationSummary,
    /// Physical digest.
    pub physical_digest: String,
    /// The snapshot envelope (`{format_version, snapshot, digests}`).
    pub snapshot: serde_json::Value,
    /// Nodes, by entry id.
    pub nodes: Vec<StoredNode>,
    /// What its publish did, by entry id.
    pub impact: Vec<StoredImpact>,
}

impl StoredGeneration {
    /// Its id.
    pub fn id(&self) -> GenerationId {
        GenerationId::from_sequence(self.summary.sequence)
    }

    /// The node of `entry` (nodes are kept by entry id).
    pub fn node(&self, entry: &str) -> Option<&StoredNode> {
        self.nodes
            .binary_search_by(|n| n.entry_id.as_str().cmp(entry))
            .ok()
            .map(|i| &self.nodes[i])
    }
}

/// Everything one publish writes.
#[derive(Clone, Debug, PartialEq)]
pub struct PublishRecord {
    /// The id the generation was built as (its snapshot carries it).
    pub generation_id: GenerationId,
    /// The current generation it was computed against.
    pub expected_current: Option<GenerationId>,
    /// The snapshot envelope as stored: JSON with one value per line
    /// ([`migrate::one_value_per_line`]), written from the record without a
    /// tree of it.
    pub snapshot: String,
    /// The snapshot's `metadata.agents`, as JSON (`None` without agents):
    /// what `generations list` shows without reading the snapshot.
    pub agents: Option<String>,
    /// Its digests.
    pub digests: Digests,
    /// Its nodes.
    pub nodes: Vec<StoredNode>,
    /// What the publish did per node.
    pub impact: Vec<StoredImpact>,
    /// Entry id -> mounts so far, for the entries whose counter this
    /// publish raised (a counter never goes down).
    pub mounts: BTreeMap<String, u64>,
    /// The documents already cut into chunks ([`PublishRecord::chunk`]),
    /// so the store's transaction only inserts them; cut inside it when
    /// `None`.
    pub chunked: Option<migrate::Chunked>,
}

impl PublishRecord {
    /// Cut the documents into chunks now, outside any store lock (a
    /// server's run records wait on the store while a publication holds
    /// it). Sorts the nodes by entry id, as the store keeps them.
    pub fn chunk(&mut self) {
        self.nodes.sort_by(|a, b| a.entry_id.cmp(&b.entry_id));
        self.chunked = Some(
            migrate::Documents {
                snapshot: &self.snapshot,
                nodes: &self.nodes,
                impact: &self.impact,
            }
            .chunked(),
        );
    }
}

/// A run to record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewRun {
    /// The run's own id (`run_<12 hex>`): what its result, trace and
    /// telemetry carry, so the record is found by the id the run printed.
    pub id: String,
    /// The generation it ran on.
    pub generation_id: String,
    /// Agent name.
    pub agent: String,
    /// Status (`succeeded`, `no_answer`, `failed`).
    pub status: String,
    /// Start (RFC 3339).
    pub started_at: String,
    /// End (RFC 3339), when finished.
    pub finished_at: Option<String>,
    /// The `chassis serve` instance that runs it (none for `chassis run`).
    pub instance: Option<String>,
}

/// A recorded run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StoredRun {
    /// Id (`run_<12 hex>`, the run's own).
    pub id: String,
    /// The lineage of its generation.
    pub lineage: String,
    /// Generation id.
    pub generation_id: String,
    /// Agent.
    pub agent: String,
    /// Status.
    pub status: String,
    /// Start.
    pub started_at: String,
    /// End.
    pub finished_at: Option<String>,
}

/// A server holding a lineage (`chassis serve`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    /// The server process's instance id.
    pub instance: String,
    /// Its process id.
    pub pid: u32,
    /// Where it listens (`http://127.0.0.1:7300`; empty before it binds).
    pub address: String,
    /// When it started.
    pub started_at: String,
    /// Its last heartbeat, in seconds since the Unix epoch.
    pub heartbeat: u64,
    /// The host it runs on (its pid means something only there).
    pub host: String,
}

/// A conversation with one agent, as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredSession {
    /// Its id (`[A-Za-z0-9._-]{1,128}`).
    pub id: String,
    /// The agent it belongs to.
    pub agent: String,
    /// When its first turn ended.
    pub created_at: String,
    /// When its last turn ended.
    pub updated_at: String,
    /// Its turns and messages (JSON, redacted).
    pub transcript: serde_json::Value,
}

/// The claim of one run on a session's turn ([`Store::claim_session`]):
/// which run takes it, in which process, and when that process last said
/// it was still taking it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionClaim {
    /// The session.
    pub session: String,
    /// The run taking the turn (`run_<12 hex>`, the run's own id).
    pub run_id: String,
    /// Who beats its heart ([`Store::beat_session_claims`]): the
    /// `chassis serve` instance (`srv_<12 hex>`) for a served run, the run
    /// id for `chassis run`.
    pub instance: String,
    /// The process that runs it.
    pub pid: u32,
    /// The host it runs on (its pid means something only there).
    pub host: String,
    /// When the turn was claimed (RFC 3339).
    pub claimed_at: String,
    /// Its last heartbeat, in seconds since the Unix epoch.
    pub heartbeat: u64,
}

/// How a command opens a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenMode {
    /// Create it (and its folder) when absent; read-write.
    Create,
    /// It must exist; read-only.
    ReadOnly,
    /// It must exist; read-only, and opening it writes nothing and waits
    /// for nothing: a store that needs a migration or a recovery (a killed
    /// publish's journal), or that a writer holds, is an error instead —
    /// for a read made on a guess, which the caller then makes again with
    /// [`OpenMode::ReadOnly`] if it needs it.
    Peek,
}

/// A generation store: lineages (one per composition) of generations, and
/// the runs made on them. A lineage named by a composition that has none
/// yet stands for the unclaimed lineage of a migrated store, if any.
pub trait Store: Send {
    /// Where it is.
    fn location(&self) -> String;
    /// Whether opening it created it.
    fn created(&self) -> bool;
    /// Every lineage, by name.
    fn lineages(&self) -> Result<Vec<LineageSummary>, StoreError>;
    /// The current (latest published) generation of `lineage`.
    fn current(&self, lineage: &str) -> Result<Option<StoredGeneration>, StoreError>;
    /// What a publish needs of the current generation of `lineage`.
    fn head(&self, lineage: &str) -> Result<Option<Head>, StoreError>;
    /// The summary of the current generation of `lineage` alone (one row:
    /// whether a head read earlier is still the head).
    fn latest(&self, lineage: &str) -> Result<Option<GenerationSummary>, StoreError>;
    /// One generation of `lineage`.
    fn generation(
        &self,
        lineage: &str,
        id: &GenerationId,
    ) -> Result<Option<StoredGeneration>, StoreError>;
    /// The generations of `lineage` (every lineage's when `None`), by
    /// lineage, oldest first.
    fn list(&self, lineage: Option<&str>) -> Result<Vec<GenerationSummary>, StoreError>;
    /// Entry id -> mounts so far, in `lineage`.
    fn entry_mounts(&self, lineage: &str) -> Result<BTreeMap<String, u64>, StoreError>;
    /// The keyed configuration fingerprint of this store.
    fn config_fingerprint(&self) -> ConfigFingerprint;
    /// Record a generation of `lineage` atomically; its sequence is
    /// allocated inside the transaction and must be the one the record was
    /// built as.
    fn publish(&mut self, lineage: &str, record: PublishRecord)
    -> Result<GenerationId, StoreError>;
    /// Record a run on a generation of `lineage` under its own id (returned).
    fn record_run(&mut self, lineage: &str, run: NewRun) -> Result<String, StoreError> {
        let mut ids = self.record_runs(lineage, vec![run])?;
        ids.pop().ok_or_else(|| StoreError::Backend {
            path: String::new(),
            message: "a run was not recorded".into(),
        })
    }
    /// Record runs of `lineage` in one transaction (a server commits the
    /// runs that finished together as one group), their ids in order.
    fn record_runs(&mut self, lineage: &str, runs: Vec<NewRun>) -> Result<Vec<String>, StoreError>;
    /// Every run, in the order they were recorded.
    fn runs(&self) -> Result<Vec<StoredRun>, StoreError>;
    /// Mark the runs of `lineage` still `running` under another server
    /// than `instance` as `interrupted` (finished `at`); how many.
    fn interrupt_runs(
        &mut self,
        lineage: &str,
        instance: &str,
        at: &str,
    ) -> Result<u64, StoreError>;
    /// The server holding `lineage`, whatever its heartbeat.
    fn holder(&self, lineage: &str) -> Result<Option<Holder>, StoreError>;
    /// Record `holder` as the server of `lineage` (replacing any other),
    /// its heartbeat now.
    fn hold(&mut self, lineage: &str, holder: &Holder) -> Result<(), StoreError>;
    /// Beat `instance`'s heart (and set its address); false when it no
    /// longer holds `lineage`.
    fn heartbeat(
        &mut self,
        lineage: &str,
        instance: &str,
        address: &str,
    ) -> Result<bool, StoreError>;
    /// Let go of `lineage` if `instance` holds it.
    fn release(&mut self, lineage: &str, instance: &str) -> Result<(), StoreError>;
    /// Session `id` of `lineage`.
    fn session(&self, lineage: &str, id: &str) -> Result<Option<StoredSession>, StoreError>;
    /// Write a session of `lineage` that had `turns` turns when its new
    /// turn began (0: a new session): false, and nothing written, when it
    /// has another number now (another turn was saved meanwhile).
    fn save_session(
        &mut self,
        lineage: &str,
        session: &StoredSession,
        turns: usize,
    ) -> Result<bool, StoreError>;
    /// Delete session `id` of `lineage`; whether there was one.
    fn delete_session(&mut self, lineage: &str, id: &str) -> Result<bool, StoreError>;
    /// Delete the sessions of `lineage` last updated before `before` (RFC
    /// 3339); how many.
    fn expire_sessions(&mut self, lineage: &str, before: &str) -> Result<u64, StoreError>;
    /// The claim on the turn of session `id` of `lineage`, live or not.
    fn session_claim(&self, lineage: &str, id: &str) -> Result<Option<SessionClaim>, StoreError>;
    /// Claim the turn of session `claim.session` of `lineage` for
    /// `claim.run_id`, in one transaction: taken (`None`) when no claim is
    /// there or when `live` says the one there is not (its heartbeat is
    /// stale, its process gone), and then written over; otherwise the live
    /// claim is returned and nothing is written.
    fn claim_session(
        &mut self,
        lineage: &str,
        claim: &SessionClaim,
        live: &dyn Fn(&SessionClaim) -> bool,
    ) -> Result<Option<SessionClaim>, StoreError>;
    /// Beat the heart of every session claim of `instance` in `lineage`;
    /// how many it holds.
    fn beat_session_claims(&mut self, lineage: &str, instance: &str) -> Result<u64, StoreError>;
    /// Let go of the claim on session `id` of `lineage` if run `run_id`
    /// holds it (a claim taken over since is left alone); whether it did.
    fn release_session_claim(
        &mut self,
        lineage: &str,
        id: &str,
        run_id: &str,
    ) -> Result<bool, StoreError>;
    /// Let go of every session claim of `instance` in `lineage` (a server
    /// that stops); how many.
    fn release_session_claims(&mut self, lineage: &str, instance: &str) -> Result<u64, StoreError>;
    /// One run.
    fn run(&self, id: &str) -> Result<Option<StoredRun>, StoreError>;
    /// Another connection to this store, for a thread of its own (a
    /// session turn's heartbeat). Never a second [`open`] of the same file
    /// in one process: that looks at the file first, which lets go of the
    /// locks this process's SQLite holds on it.
    fn beside(&self) -> Result<Box<dyn Store>, StoreError>;
    /// A long-running host's store: housekeeping that would stall a write
    /// (SQLite copying its log back into the file) is done beside the
    /// writes from now on, for as long as the store is open. Nothing to do
    /// by default.
    fn keep_up_beside_writes(&mut self) {}
}

/// Open the default backend (SQLite) at `path`.
pub fn open(path: &Path, mode: OpenMode) -> Result<SqliteStore, StoreError> {
    SqliteStore::open(path, mode)
}

/// The fingerprint function of `key`.
pub fn fingerprint_fn(key: StoreKey) -> ConfigFingerprint {
    let key = Arc::new(key);
    Arc::new(move |hash: &str| key.fingerprint(CONFIG_PURPOSE, hash))
}

/// What a publish needs of a lineage's current generation: its summary,
/// its nodes and the agents its snapshot recorded — without the rest of
/// the snapshot.
#[derive(Clone, Debug, PartialEq)]
pub struct Head {
    /// Summary fields.
    pub summary: GenerationSummary,
    /// Nodes, by entry id, as a harness is seeded with them: identities
    /// without their configuration leaves (a seed never compares them).
    pub nodes: Vec<SeedNode>,
    /// The snapshot's `metadata.agents`, when it has one.
    pub agents: Option<serde_json::Value>,
}

/// The harness seed for `lineage` in `store` (its current generation's
/// nodes, the mount counters, the sequence and digest, and the store's
/// fingerprint), and the agents that generation recorded.
pub fn seed_state(
    store: &dyn Store,
    lineage: &str,
) -> Result<(SeedState, Option<serde_json::Value>), StoreError> {
    let head = store.head(lineage)?;
    let mounts = store.entry_mounts(lineage)?;
    let (summary, nodes, agents) = match head {
        Some(h) => (Some(h.summary), h.nodes, h.agents),
        None => (None, Vec::new(), None),
    };
    let mut seed = SeedState {
        sequence: summary.as_ref().map_or(0, |g| g.sequence),
        digest: summary.map(|g| g.digest),
        mounts,
        nodes,
        config_fingerprint: Some(store.config_fingerprint()),
    };
    seed.sort();
    Ok((seed, agents))
}

#[cfg(test)]
mod tests;
