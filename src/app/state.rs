//! The one way the application layer reaches the generation store.
//!
//! Why it exists: every operation that reads or writes generations and
//! runs — `publish`, `plan`, `run --state`, the history and `diff` of ids —
//! goes through [`StateStore`], so where a store is, how it is opened, how
//! its failures read and how a publication is recorded are decided once,
//! over the backend-neutral [`Store`] trait (SQLite today; a server and a
//! second backend plug in here).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::engine::agent::AGENTS;
use crate::engine::canonical::Canon;
use crate::engine::declared::config_leaves;
use crate::engine::identity::GenerationId;
use crate::engine::model::HostSettings;
use crate::engine::snapshot::envelope;
use crate::runtime::harness::{ConfigFingerprint, SeedNode, SeedState};
use crate::runtime::{Generation, ReconcileReport};
use crate::store::{
    DEFAULT_STATE, GenerationSummary, NewRun, OpenMode, PublishRecord, Store, StoreError,
    StoredGeneration, StoredIdentity, StoredImpact, StoredNode, StoredRun, seed_state,
    seed_state_at,
};

use super::error::{AppError, Problem};

/// The store path: `state`, else `.chassis/state.db` beside `file` (or in
/// the current directory).
pub fn state_path(state: Option<&Path>, file: Option<&Path>) -> PathBuf {
    match (state, file) {
        (Some(s), _) => s.to_path_buf(),
        (None, Some(f)) => crate::store::default_path(f),
        (None, None) => PathBuf::from(DEFAULT_STATE),
    }
}

/// The store of the composition at `file`: `state` (`--state`), else its
/// `[store] path` (relative to the file's directory), else
/// `.chassis/state.db` beside it.
pub fn state_path_of(state: Option<&Path>, file: &Path, host: &HostSettings) -> PathBuf {
    match (state, host.store.as_ref().and_then(|s| s.path.as_ref())) {
        (Some(s), _) => s.to_path_buf(),
        (None, Some(path)) => file.parent().unwrap_or(Path::new("")).join(&path.value),
        (None, None) => crate::store::default_path(file),
    }
}

/// An open generation store.
pub struct StateStore {
    store: Box<dyn Store>,
    path: PathBuf,
}

impl StateStore {
    /// Open the store at `path` (`Create` makes it when absent).
    pub fn open(path: &Path, mode: OpenMode) -> Result<Self, AppError> {
        if let Some(scheme) = url_scheme(path) {
            return Err(AppError::input(format!(
                "the store `{}` is a `{scheme}://` URL, which this chassis does not support: a store is a SQLite file path (for example `.chassis/state.db`)",
                path.display()
            )));
        }
        let store = crate::store::open(path, mode)?;
        Ok(Self {
            store: Box::new(store),
            path: path.to_path_buf(),
        })
    }

    /// Open the store at `path` to read, or `None` when there is none.
    pub fn open_existing(path: &Path) -> Result<Option<Self>, AppError> {
        match Self::open(path, OpenMode::ReadOnly) {
            Ok(s) => Ok(Some(s)),
            Err(AppError::Store(StoreError::Missing { .. })) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether opening it created it.
    pub fn created(&self) -> bool {
        self.store.created()
    }

    /// After a failure: a store this operation created and never recorded
    /// anything in is removed again (with its SQLite side files, and the
    /// `.chassis/` folder when that is left empty), so a first publish that
    /// fails leaves the directory as it found it. Anything else is kept.
    pub fn discard_if_unused(self) {
        if !self.created() || !matches!(self.store.current(), Ok(None)) {
            return;
        }
        let in_default_folder = self.in_default_folder();
        let path = self.path.clone();
        drop(self);
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut file = path.clone().into_os_string();
            file.push(suffix);
            let _ = std::fs::remove_file(file);
        }
        if in_default_folder && let Some(dir) = path.parent() {
            // Only when empty: `remove_dir` refuses anything else.
            let _ = std::fs::remove_dir(dir);
        }
    }

    /// Whether it is in the default `.chassis/` folder.
    pub fn in_default_folder(&self) -> bool {
        self.path
            .parent()
            .and_then(|p| p.file_name())
            .is_some_and(|n| n == ".chassis")
    }

    /// The harness seed: the current generation's nodes, mount counters,
    /// sequence, digest and the store's configuration fingerprint.
    pub fn seed(&self) -> Result<SeedState, AppError> {
        Ok(seed_state(self.store.as_ref())?)
    }

    /// [`Self::seed`], and the agents' definitions the current generation
    /// recorded (its snapshot's `metadata.agents`), for saying which agents
    /// a publication changes.
    pub fn seed_and_agents(&self) -> Result<(SeedState, Option<Canon>), AppError> {
        let current = self.store.current()?;
        let seed = seed_state_at(self.store.as_ref(), current.as_ref())?;
        let agents = current
            .as_ref()
            .and_then(|g| g.snapshot.pointer(&format!("/snapshot/metadata/{AGENTS}")))
            .map(Canon::from_json);
        Ok((seed, agents))
    }

    /// The keyed configuration fingerprint of this store.
    pub fn config_fingerprint(&self) -> ConfigFingerprint {
        self.store.config_fingerprint()
    }

    /// Every generation, oldest first.
    pub fn list(&self) -> Result<Vec<GenerationSummary>, AppError> {
        Ok(self.store.list()?)
    }

    /// Generation `id` (unusable input when it is not an id or not here).
    pub fn generation(&self, id: &str) -> Result<StoredGeneration, AppError> {
        let parsed = parse_id(id)?;
        match self.store.generation(&parsed)? {
            Some(g) => Ok(g),
            None => {
                let known: Vec<String> = self
                    .store
                    .list()
                    .map(|l| l.into_iter().map(|g| g.id).collect())
                    .unwrap_or_default();
                let range = match (known.first(), known.last()) {
                    (Some(a), Some(b)) if a != b => format!("{a} … {b}"),
                    (Some(a), _) => a.clone(),
                    _ => "none".into(),
                };
                Err(Problem::input(format!(
                    "the store `{}` has no generation `{id}`",
                    self.store.location()
                ))
                .with_help(format!("it holds {range}"))
                .into())
            }
        }
    }

    /// Every recorded run, in the order they were recorded.
    pub fn runs(&self) -> Result<Vec<StoredRun>, AppError> {
        Ok(self.store.runs()?)
    }

    /// Run `id` (unusable input when it is not here).
    pub fn run(&self, id: &str) -> Result<StoredRun, AppError> {
        self.store.run(id)?.ok_or_else(|| {
            Problem::input(format!(
                "the store `{}` has no run `{id}`",
                self.path.display()
            ))
            .with_help("see `chassis runs list`")
            .into()
        })
    }

    /// Record a run under its own id (returned).
    pub fn record_run(&mut self, run: NewRun) -> Result<String, AppError> {
        Ok(self.store.record_run(run)?)
    }

    /// Record a published generation (one transaction).
    pub fn record_publication(&mut self, p: Publication<'_>) -> Result<(), AppError> {
        let snapshot = envelope(&p.generation.snapshot)
            .map(|c| c.to_json())
            .map_err(|e| AppError::failure(e.to_string()))?;
        let mut mounts = p.mounts;
        for n in p.nodes {
            let m = mounts.entry(n.entry_id.clone()).or_default();
            *m = (*m).max(n.mount);
        }
        let fingerprint = self.store.config_fingerprint();
        let record = PublishRecord {
            generation_id: p.generation.id.clone(),
            expected_current: p.previous,
            snapshot,
            digests: p.generation.digests.clone(),
            nodes: p
                .nodes
                .iter()
                .map(|n| {
                    let identity = StoredIdentity::from_identity(&n.identity, Some(&fingerprint));
                    let leaves = crate::engine::model::EntryId::new(&n.entry_id)
                        .ok()
                        .and_then(|id| p.generation.composition.entries.get(&id))
                        .and_then(|e| config_leaves(&e.config).ok());
                    StoredNode {
                        entry_id: n.entry_id.clone(),
                        instance_id: n.instance_id.clone(),
                        mount: n.mount,
                        identity: match leaves {
                            Some(leaves) => identity.with_config_leaves(leaves, &fingerprint),
                            None => identity,
                        },
                    }
                })
                .collect(),
            impact: p
                .report
                .impact
                .iter()
                .map(|i| StoredImpact::from(&i))
                .collect(),
            mounts,
        };
        self.store.publish(record)?;
        Ok(())
    }
}

/// One publication to record.
pub struct Publication<'a> {
    /// What the reconcile did.
    pub report: &'a ReconcileReport,
    /// The harness's nodes after it.
    pub nodes: &'a [SeedNode],
    /// The published generation.
    pub generation: &'a Generation,
    /// The generation it was computed against (`None` on an empty store).
    pub previous: Option<GenerationId>,
    /// Mount counters before it.
    pub mounts: BTreeMap<String, u64>,
}

/// Parse a generation id (unusable input when it is not one).
pub fn parse_id(id: &str) -> Result<GenerationId, AppError> {
    GenerationId::parse(id).ok_or_else(|| {
        Problem::input(format!("`{id}` is not a generation id"))
            .with_help("generation ids look like `gen_0001` (see `chassis generations list`)")
            .into()
    })
}

/// The generation a seed was taken at (`None` for an empty store).
pub fn previous_of(seed: &SeedState) -> Option<GenerationId> {
    (seed.sequence > 0).then(|| GenerationId::from_sequence(seed.sequence))
}

/// The scheme of `path` when it is written as a URL (`postgres://…`), which
/// would otherwise be taken as a directory called `postgres:`.
fn url_scheme(path: &Path) -> Option<&str> {
    let text = path.to_str()?;
    let (scheme, _) = text.split_once("://")?;
    let mut chars = scheme.chars();
    (chars.next()?.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some(scheme)
}
