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
use std::sync::Arc;

use crate::engine::canonical::Canon;
use crate::engine::declared::config_leaves;
use crate::engine::identity::GenerationId;
use crate::engine::model::HostSettings;
use crate::engine::snapshot::{
    Envelope, EnvelopeView, SnapshotLoadError, SnapshotLoadReason, parse_document,
};
use crate::runtime::harness::{ConfigFingerprint, SeedNode, SeedState};
use crate::runtime::{Generation, ReconcileReport};
use crate::store::migrate::UNCLAIMED;
use crate::store::{
    DEFAULT_STATE, GenerationSummary, LineageSummary, NewRun, OpenMode, PublishRecord, Store,
    StoreError, StoredGeneration, StoredIdentity, StoredImpact, StoredNode, StoredRun, seed_state,
};

use super::error::{AppError, Problem};
use super::report::{Notice, Reporter};

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

/// The lineage the composition at `file` publishes into, in the store at
/// `store`: its `name = "…"`, else the root file's path relative to the
/// workspace (the folder holding the store's `.chassis/`; for a store
/// elsewhere, the deepest folder holding both), `/`-separated — so `composition.toml` and `quickstart.toml`
/// beside one store keep separate histories, and the same file reached
/// from another directory is the same lineage.
pub fn lineage_of(file: &Path, host: &HostSettings, store: &Path) -> String {
    if let Some(name) = &host.name {
        return name.value.clone();
    }
    let store = absolute(store);
    let file = absolute(file);
    let dir = store.parent().unwrap_or(Path::new("/"));
    let workspace = if dir.file_name().is_some_and(|n| n == ".chassis") {
        dir.parent().unwrap_or(dir).to_path_buf()
    } else {
        // A store elsewhere (`[store] path`, `--state`): the deepest folder
        // holding both it and the file.
        let mut common = PathBuf::new();
        for (a, b) in dir.components().zip(file.components()) {
            if a != b {
                break;
            }
            common.push(a);
        }
        common
    };
    let shown = file.strip_prefix(&workspace).unwrap_or(&file);
    shown
        .components()
        .map(|c| match c {
            // Joined below with `/`: a leading root needs no text of its own.
            std::path::Component::RootDir => String::new(),
            other => other.as_os_str().to_string_lossy().into_owned(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// `path` made absolute and normalised lexically (`.` and `..` resolved
/// without touching the file system: a store may not exist yet).
fn absolute(path: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(path)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Which lineage a read names: a composition file, or a lineage's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompositionRef {
    /// `--composition FILE`: the lineage that file publishes into (its
    /// store, by default, is the one beside it).
    File(PathBuf),
    /// `--composition NAME`.
    Name(String),
}

impl CompositionRef {
    /// `value` as given to `--composition`: an existing file, else a name.
    pub fn parse(value: &str) -> Self {
        if Path::new(value).is_file() {
            CompositionRef::File(PathBuf::from(value))
        } else {
            CompositionRef::Name(value.to_owned())
        }
    }

    /// The store a read uses: `state`, else the file's (its `[store]
    /// path`, else `.chassis/state.db` beside it), else the one here.
    pub fn state_path(this: Option<&Self>, state: Option<&Path>) -> PathBuf {
        match this {
            Some(CompositionRef::File(f)) => state_path_of(state, f, &declared_host(f)),
            _ => state_path(state, None),
        }
    }

    /// The lineage name, given the store at `store`.
    pub fn lineage(&self, store: &Path) -> String {
        match self {
            CompositionRef::Name(n) => n.clone(),
            CompositionRef::File(f) => lineage_of(f, &declared_host(f), store),
        }
    }
}

/// The host settings a history command needs of the composition file at
/// `file` — its `name` and `[store] path` — read without loading the
/// composition (a history command reads no plugin). A file that does not
/// parse has none.
fn declared_host(file: &Path) -> HostSettings {
    let table: Option<toml::Table> = std::fs::read_to_string(file)
        .ok()
        .and_then(|text| text.parse().ok());
    let text = |value: Option<&toml::Value>| {
        value
            .and_then(toml::Value::as_str)
            .map(|s| crate::engine::span::Located::new(s.to_owned(), None))
    };
    let Some(table) = table else {
        return HostSettings::default();
    };
    let store_path = text(table.get("store").and_then(|s| s.get("path")));
    HostSettings {
        name: text(table.get("name")),
        store: store_path.map(|path| crate::engine::model::StoreSettings { path: Some(path) }),
        serve: None,
    }
}

/// Which store a read opens, and whose history in it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoreSelection {
    /// `--state`.
    pub state: Option<PathBuf>,
    /// `--composition FILE|NAME`.
    pub composition: Option<CompositionRef>,
}

impl StoreSelection {
    /// From `--state` and `--composition`.
    pub fn new(state: Option<&Path>, composition: Option<&str>) -> Self {
        Self {
            state: state.map(Path::to_path_buf),
            composition: composition.map(CompositionRef::parse),
        }
    }

    /// The store's path: `--state`, else beside `--composition FILE`, else
    /// `.chassis/state.db` here.
    pub fn path(&self) -> PathBuf {
        CompositionRef::state_path(self.composition.as_ref(), self.state.as_deref())
    }

    /// Open the store to read.
    pub fn open(&self) -> Result<StateStore, AppError> {
        StateStore::open(&self.path(), OpenMode::ReadOnly)
    }

    /// The lineage it names, if any, in the store at `store`.
    pub fn lineage(&self, store: &Path) -> Option<String> {
        self.composition.as_ref().map(|c| c.lineage(store))
    }
}

/// A generation id as a read names it: `gen_0002`, or qualified by its
/// lineage, `NAME:gen_0002`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenerationRef {
    /// The lineage, when qualified.
    pub lineage: Option<String>,
    /// The id.
    pub id: GenerationId,
}

impl GenerationRef {
    /// Parse `text` (`None` when it names no generation).
    pub fn parse(text: &str) -> Option<Self> {
        if let Some(id) = GenerationId::parse(text) {
            return Some(Self { lineage: None, id });
        }
        let (lineage, id) = text.rsplit_once(':')?;
        Some(Self {
            lineage: Some(lineage.to_owned()),
            id: GenerationId::parse(id)?,
        })
    }
}

/// An open generation store.
pub struct StateStore {
    store: Box<dyn Store>,
    path: PathBuf,
    /// The lineage a composition operation reads and writes.
    lineage: String,
    /// Told once the first write of this lineage claims a migrated store's
    /// unclaimed history (see [`Self::writing_as`]).
    claim_notice: Option<Arc<dyn Reporter>>,
    /// The store was made in an empty file that was there before: a
    /// failure leaves that file empty again rather than removing it.
    found_empty: bool,
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
        let found_empty = std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() == 0);
        let store = crate::store::open(path, mode)?;
        Ok(Self {
            store: Box::new(store),
            path: path.to_path_buf(),
            lineage: String::new(),
            claim_notice: None,
            found_empty,
        })
    }

    /// For the composition of lineage `lineage` (what `seed`,
    /// `record_publication` and `record_run` use).
    #[must_use]
    pub fn in_lineage(mut self, lineage: String) -> Self {
        self.lineage = lineage;
        self
    }

    /// For the composition of lineage `lineage`, which publishes or runs:
    /// the first to record something in a store migrated from before
    /// lineages continues (and names) its unclaimed history — inside that
    /// write's transaction, so a refused or failed publish claims nothing —
    /// and `reporter` is told once it has.
    pub fn writing_as(
        self,
        lineage: String,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Self, AppError> {
        let mut this = self.in_lineage(lineage);
        let lineages = this.store.lineages()?;
        let claims = !lineages.iter().any(|l| l.name == this.lineage)
            && lineages.iter().any(|l| l.name == UNCLAIMED);
        if claims {
            this.claim_notice = Some(reporter);
        }
        Ok(this)
    }

    /// After a write: say that it claimed the unclaimed history, once.
    fn claimed(&mut self) {
        if let Some(reporter) = self.claim_notice.take() {
            reporter.notice(Notice::LineageClaimed {
                store: &self.path,
                lineage: &self.lineage,
            });
        }
    }

    /// The lineage of its composition.
    pub fn lineage(&self) -> &str {
        &self.lineage
    }

    /// Open the store at `path` to read, or `None` when there is none.
    pub fn open_existing(path: &Path) -> Result<Option<Self>, AppError> {
        Self::open_existing_as(path, OpenMode::ReadOnly)
    }

    /// [`Self::open_existing`] with [`OpenMode::Peek`] (or another mode).
    pub fn open_existing_as(path: &Path, mode: OpenMode) -> Result<Option<Self>, AppError> {
        match Self::open(path, mode) {
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
    /// fails leaves the directory as it found it — an empty file it made
    /// the store in is left empty. Anything else is kept.
    pub fn discard_if_unused(self) {
        if !self.created() || !matches!(self.store.lineages().map(|l| l.is_empty()), Ok(true)) {
            return;
        }
        let in_default_folder = self.in_default_folder();
        let found_empty = self.found_empty;
        let path = self.path.clone();
        drop(self);
        for suffix in ["-wal", "-shm", "-journal"] {
            let mut file = path.clone().into_os_string();
            file.push(suffix);
            let _ = std::fs::remove_file(file);
        }
        if found_empty {
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(&path);
            return;
        }
        let _ = std::fs::remove_file(&path);
        if in_default_folder && let Some(dir) = path.parent() {
            // Only when empty: `remove_dir` refuses anything else.
            let _ = std::fs::remove_dir(dir);
        }
    }

    /// A server's store: see [`crate::store::Store::keep_up_beside_writes`].
    pub fn keep_up_beside_writes(&mut self) {
        self.store.keep_up_beside_writes();
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
        Ok(seed_state(self.store.as_ref(), &self.lineage)?.0)
    }

    /// [`Self::seed`], and the agents' definitions the current generation
    /// recorded (its snapshot's `metadata.agents`), for saying which agents
    /// a publication changes.
    pub fn seed_and_agents(&self) -> Result<(SeedState, Option<Canon>), AppError> {
        let (seed, agents) = seed_state(self.store.as_ref(), &self.lineage)?;
        Ok((seed, agents.as_ref().map(Canon::from_json)))
    }

    /// Whether `seed`, read from this store earlier (by another
    /// connection), is still this lineage's head: the same current
    /// generation (a publish always adds one, and only a publish changes
    /// the nodes or the mount counters) under the same store key.
    pub fn still_current(&self, seed: &SeedState) -> Result<bool, AppError> {
        let latest = self.store.latest(&self.lineage)?;
        let same_head = match &latest {
            Some(g) => g.sequence == seed.sequence && seed.digest.as_ref() == Some(&g.digest),
            None => seed.sequence == 0 && seed.nodes.is_empty() && seed.mounts.is_empty(),
        };
        // A store deleted and published again anew has another key.
        let probe = "chassis:seed-probe";
        let same_key = seed
            .config_fingerprint
            .as_ref()
            .is_some_and(|f| f(probe) == (self.store.config_fingerprint())(probe));
        Ok(same_head && same_key)
    }

    /// The keyed configuration fingerprint of this store.
    pub fn config_fingerprint(&self) -> ConfigFingerprint {
        self.store.config_fingerprint()
    }

    /// Every lineage, by name.
    pub fn lineages(&self) -> Result<Vec<LineageSummary>, AppError> {
        Ok(self.store.lineages()?)
    }

    /// Refuse (unusable input, naming the store's compositions) a lineage
    /// `--composition` names that the store does not hold. A store with
    /// no lineage yet knows of no typo, and one migrated from before
    /// lineages reads its unclaimed history as any composition's.
    pub fn known_lineage(&self, lineage: &str) -> Result<(), AppError> {
        let lineages = self.store.lineages()?;
        if lineages.is_empty()
            || lineages
                .iter()
                .any(|l| l.name == lineage || l.name == UNCLAIMED)
        {
            return Ok(());
        }
        let names: Vec<String> = lineages.iter().map(|l| shown_lineage(&l.name)).collect();
        Err(Problem::input(format!(
            "the store `{}` has no composition `{lineage}`",
            self.store.location()
        ))
        .with_code("store::unknown-composition")
        .with_help(format!("its compositions are {}", names.join(", ")))
        .into())
    }

    /// The generations of `lineage` (every lineage's when `None`), by
    /// lineage, oldest first.
    pub fn list(&self, lineage: Option<&str>) -> Result<Vec<GenerationSummary>, AppError> {
        Ok(self.store.list(lineage)?)
    }

    /// The generation `text` names (`gen_0002` or `NAME:gen_0002`), in
    /// `composition`'s lineage when given. An unqualified id held by more
    /// than one lineage is ambiguous: unusable input, naming them. Its
    /// snapshot is read back as [`Self::generation_read_back`] does.
    pub fn generation(
        &self,
        text: &str,
        composition: Option<&CompositionRef>,
    ) -> Result<StoredGeneration, AppError> {
        self.generation_read_back(text, composition).map(|(g, _)| g)
    }

    /// [`Self::generation`] and its snapshot read back: its record parsed
    /// and hashed to the digests it was published with. A snapshot that
    /// does not read back is a damaged store (`store::damaged`, exit 2),
    /// as a chunk that fails its hash check is: every command that reads a
    /// stored generation refuses it alike, and prints none of it.
    pub fn generation_read_back(
        &self,
        text: &str,
        composition: Option<&CompositionRef>,
    ) -> Result<(StoredGeneration, Envelope), AppError> {
        let g = self.stored_generation(text, composition)?;
        let envelope = parse_document(&g.snapshot).map_err(|e| self.unreadable_snapshot(&g, &e))?;
        Ok((g, envelope))
    }

    /// Why the snapshot of `g` does not read back, naming none of it (a
    /// load error may quote a value).
    fn unreadable_snapshot(&self, g: &StoredGeneration, e: &SnapshotLoadError) -> AppError {
        let reason = match e.reason {
            SnapshotLoadReason::FutureVersion => {
                return Problem::input(format!(
                    "the snapshot of {} in the store `{}` has a format version this chassis does not read",
                    g.summary.id,
                    self.path.display()
                ))
                .with_code(crate::engine::diag::Code::SnapshotFutureVersion.as_str())
                .with_help("upgrade chassis to read it")
                .into();
            }
            SnapshotLoadReason::MalformedVersion => "its `format_version` is malformed",
            SnapshotLoadReason::Corrupted => {
                "its record does not read back as a snapshot that hashes to its digests"
            }
        };
        StoreError::Damaged {
            path: self.path.display().to_string(),
            lineage: g.summary.lineage.clone(),
            generation: g.summary.id.clone(),
            part: "snapshot",
            reason: reason.to_owned(),
        }
        .into()
    }

    fn stored_generation(
        &self,
        text: &str,
        composition: Option<&CompositionRef>,
    ) -> Result<StoredGeneration, AppError> {
        let Some(parsed) = GenerationRef::parse(text) else {
            return Err(Problem::input(format!("`{text}` is not a generation id"))
                .with_help(
                    "generation ids look like `gen_0001`, or `NAME:gen_0001` in a store that \
                     several compositions share (see `chassis generations list`)",
                )
                .into());
        };
        let lineages = self.store.lineages()?;
        let lineage = match (&parsed.lineage, composition) {
            (Some(l), _) => l.clone(),
            (None, Some(c)) => c.lineage(&self.path),
            (None, None) => {
                let holding: Vec<&LineageSummary> = lineages
                    .iter()
                    .filter(|l| l.generations >= parsed.id.sequence())
                    .collect();
                match holding.as_slice() {
                    [one] => one.name.clone(),
                    [] => return Err(self.no_such(text, None, &lineages)),
                    many => {
                        let names: Vec<String> = many
                            .iter()
                            .map(|l| format!("`{}:{}`", l.name, parsed.id))
                            .collect();
                        return Err(Problem::input(format!(
                            "`{text}` is ambiguous: {} compositions in the store `{}` have one",
                            many.len(),
                            self.path.display()
                        ))
                        .with_help(format!(
                            "name one: {}, or pass `--composition FILE|NAME`",
                            names.join(", ")
                        ))
                        .with_code("store::ambiguous-generation")
                        .into());
                    }
                }
            }
        };
        match self.store.generation(&lineage, &parsed.id)? {
            Some(g) => Ok(g),
            None => Err(self.no_such(text, Some(&lineage), &lineages)),
        }
    }

    fn no_such(&self, text: &str, lineage: Option<&str>, lineages: &[LineageSummary]) -> AppError {
        let held: Vec<String> = lineages
            .iter()
            .filter(|l| lineage.is_none_or(|n| n == l.name))
            .map(|l| {
                let range = match l.generations {
                    0 => "none".to_owned(),
                    1 => "gen_0001".to_owned(),
                    n => format!("gen_0001 … {}", GenerationId::from_sequence(n)),
                };
                if lineages.len() > 1 {
                    format!("{}: {range}", shown_lineage(&l.name))
                } else {
                    range
                }
            })
            .collect();
        let in_lineage = match lineage {
            Some(l) if lineages.len() > 1 || !lineages.iter().any(|x| x.name == l) => {
                format!(" for the composition `{l}`")
            }
            _ => String::new(),
        };
        let help = if held.is_empty() {
            let names: Vec<String> = lineages.iter().map(|l| shown_lineage(&l.name)).collect();
            format!("its compositions are {}", names.join(", "))
        } else {
            format!("it holds {}", held.join("; "))
        };
        Problem::input(format!(
            "the store `{}` has no generation `{text}`{in_lineage}",
            self.store.location()
        ))
        .with_code("store::unknown-generation")
        .with_help(help)
        .into()
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
        let id = self.store.record_run(&self.lineage, run)?;
        self.claimed();
        Ok(id)
    }

    /// Record a published generation (one transaction): true when it was
    /// recorded, false when another publish recorded the very same
    /// generation first (see [`Self::commit_publication`]).
    pub fn record_publication(&mut self, p: Publication<'_>) -> Result<bool, AppError> {
        let record = prepare_publication(p, &self.store.config_fingerprint())?;
        self.commit_publication(record)
    }

    /// Commit a publication [`prepare_publication`] built (one
    /// transaction): true when it was recorded. When another publish
    /// committed first (`store::conflict`) and the lineage's head is now
    /// this very generation — the same id and digests, as two publishes of
    /// one unchanged composition from one head compute —, nothing is
    /// written and the answer is false: the generation is there, reused.
    /// Any other head is still a conflict.
    pub fn commit_publication(&mut self, record: PublishRecord) -> Result<bool, AppError> {
        let id = record.generation_id.clone();
        let digests = record.digests.clone();
        match self.store.publish(&self.lineage, record) {
            Ok(_) => {
                self.claimed();
                Ok(true)
            }
            Err(e @ StoreError::Conflict { .. }) => {
                let head = self.store.latest(&self.lineage)?;
                let same_head = head.as_ref().is_some_and(|h| {
                    h.id == id.to_string()
                        && h.digest == digests.digest
                        && h.semantic_digest == digests.semantic_digest
                });
                let same = same_head
                    && self
                        .store
                        .generation(&self.lineage, &id)?
                        .is_some_and(|g| g.physical_digest == digests.physical_digest);
                if same { Ok(false) } else { Err(e.into()) }
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Refuse (exit 1, `store::served`) when a live `chassis serve` other
    /// than this process holds this lineage: its reload publishes, and two
    /// writers would race for the next generation.
    pub fn refuse_if_served(&self) -> Result<(), AppError> {
        let Some(h) = self.store.holder(&self.lineage)? else {
            return Ok(());
        };
        let fresh = crate::store::unix_now().saturating_sub(h.heartbeat) <= HOLD_FRESH_SECONDS
            && !crate::process::liveness::is_gone(&h.host, h.pid);
        let this_process =
            h.pid == std::process::id() && h.host == crate::process::liveness::host_name();
        if !fresh || this_process {
            return Ok(());
        }
        let at = if h.address.is_empty() {
            "(starting)".to_owned()
        } else {
            format!("at {}", h.address)
        };
        Err(Problem::new(
            super::error::ErrorKind::Negative,
            format!(
                "`{}` is served by `chassis serve` (pid {}) {at}",
                shown_lineage(&self.lineage),
                h.pid
            ),
        )
        .with_code("store::served")
        .with_help(if h.address.is_empty() {
            "wait for it to start, then reload it through it".to_owned()
        } else {
            format!(
                "publish through it: save the file (it is watched) or `curl -X POST {}/v1/reload`",
                h.address
            )
        })
        .with_help("or stop that server first")
        .into())
    }

    /// Mark the runs of this lineage that another server than `instance`
    /// left `running` as `interrupted`; how many.
    pub fn interrupt_runs(&mut self, instance: &str) -> Result<u64, AppError> {
        Ok(self
            .store
            .interrupt_runs(&self.lineage, instance, &crate::store::now_rfc3339())?)
    }

    /// Hold this lineage for a server (see [`Self::refuse_if_served`]).
    pub fn hold(&mut self, holder: &crate::store::Holder) -> Result<(), AppError> {
        self.store.hold(&self.lineage, holder)?;
        self.claimed();
        Ok(())
    }

    /// Beat the holder's heart (and set its address).
    pub fn heartbeat(&mut self, instance: &str, address: &str) -> Result<bool, AppError> {
        Ok(self.store.heartbeat(&self.lineage, instance, address)?)
    }

    /// Let go of this lineage.
    pub fn release(&mut self, instance: &str) -> Result<(), AppError> {
        Ok(self.store.release(&self.lineage, instance)?)
    }

    /// Session `id` of this lineage.
    pub fn session(&self, id: &str) -> Result<Option<crate::store::StoredSession>, AppError> {
        Ok(self.store.session(&self.lineage, id)?)
    }

    /// Save a session of this lineage whose new turn began from `turns`
    /// turns: unusable input (exit 2 / 409) when another turn was saved
    /// meanwhile — nothing is written over.
    pub fn save_session(
        &mut self,
        session: &crate::store::StoredSession,
        turns: usize,
    ) -> Result<(), AppError> {
        if !self.try_save_session(session, turns)? {
            return Err(session_moved_on(&session.id, super::error::ErrorKind::Input).into());
        }
        Ok(())
    }

    /// [`Self::save_session`], saying whether the turn was saved (false:
    /// another turn was saved meanwhile, and nothing was written).
    pub fn try_save_session(
        &mut self,
        session: &crate::store::StoredSession,
        turns: usize,
    ) -> Result<bool, AppError> {
        if !self.store.save_session(&self.lineage, session, turns)? {
            return Ok(false);
        }
        self.claimed();
        Ok(true)
    }

    /// Delete session `id` of this lineage; whether there was one.
    pub fn delete_session(&mut self, id: &str) -> Result<bool, AppError> {
        Ok(self.store.delete_session(&self.lineage, id)?)
    }

    /// Delete the sessions last updated more than `ttl_seconds` ago.
    pub fn expire_sessions(&mut self, ttl_seconds: u64) -> Result<u64, AppError> {
        let before =
            crate::store::format_unix(crate::store::unix_now().saturating_sub(ttl_seconds));
        Ok(self.store.expire_sessions(&self.lineage, &before)?)
    }

    /// Another connection to this store (same lineage), for a thread of
    /// its own: see [`crate::store::Store::beside`].
    pub fn beside(&self) -> Result<StateStore, AppError> {
        Ok(StateStore {
            store: self.store.beside()?,
            path: self.path.clone(),
            lineage: self.lineage.clone(),
            claim_notice: None,
            found_empty: false,
        })
    }

    /// Claim the turn of session `id` for run `run_id` of `instance` (this
    /// process, its heartbeat now): `None` when taken, else the claim
    /// `live` says still holds it (nothing written). See
    /// [`crate::store::Store::claim_session`].
    pub fn claim_session(
        &mut self,
        id: &str,
        run_id: &str,
        instance: &str,
        live: &dyn Fn(&crate::store::SessionClaim) -> bool,
    ) -> Result<Option<crate::store::SessionClaim>, AppError> {
        let claim = crate::store::SessionClaim {
            session: id.to_owned(),
            run_id: run_id.to_owned(),
            instance: instance.to_owned(),
            pid: std::process::id(),
            host: crate::process::liveness::host_name(),
            claimed_at: crate::store::now_rfc3339(),
            heartbeat: crate::store::unix_now(),
        };
        Ok(self.store.claim_session(&self.lineage, &claim, live)?)
    }

    /// The claim on the turn of session `id`, live or not.
    pub fn session_claim(&self, id: &str) -> Result<Option<crate::store::SessionClaim>, AppError> {
        Ok(self.store.session_claim(&self.lineage, id)?)
    }

    /// Beat the heart of `instance`'s session claims; how many it holds.
    pub fn beat_session_claims(&mut self, instance: &str) -> Result<u64, AppError> {
        Ok(self.store.beat_session_claims(&self.lineage, instance)?)
    }

    /// Let go of the claim on session `id` if run `run_id` holds it.
    pub fn release_session_claim(&mut self, id: &str, run_id: &str) -> Result<bool, AppError> {
        Ok(self
            .store
            .release_session_claim(&self.lineage, id, run_id)?)
    }

    /// Let go of every session claim of `instance`; how many.
    pub fn release_session_claims(&mut self, instance: &str) -> Result<u64, AppError> {
        Ok(self.store.release_session_claims(&self.lineage, instance)?)
    }

    /// Record runs in one transaction, their ids in order.
    pub fn record_runs(&mut self, runs: Vec<NewRun>) -> Result<Vec<String>, AppError> {
        let ids = self.store.record_runs(&self.lineage, runs)?;
        self.claimed();
        Ok(ids)
    }
}

/// What a publication writes, built without the store (only its
/// configuration fingerprint): the snapshot document and a row per node.
/// A server builds it outside its store lock, so runs being recorded wait
/// only for the transaction.
pub fn prepare_publication(
    p: Publication<'_>,
    fingerprint: &ConfigFingerprint,
) -> Result<PublishRecord, AppError> {
    let record = &p.generation.snapshot;
    let agents = record
        .metadata
        .get(crate::engine::agent::AGENTS)
        .map(|a| serde_json::to_string(a).unwrap_or_default());
    // Only the counters this publish raised: a one-entry publish writes
    // one row, not one per entry.
    let mut mounts: BTreeMap<String, u64> = BTreeMap::new();
    for n in p.nodes {
        if p.mounts.get(&n.entry_id).is_none_or(|m| *m < n.mount) {
            let m = mounts.entry(n.entry_id.clone()).or_default();
            *m = (*m).max(n.mount);
        }
    }
    // The snapshot's text on one core, the nodes' rows on the other (each
    // keyed fingerprint and configuration leaf is hashed: most of a
    // 100,000-entry publication's preparing).
    let (snapshot, nodes) = crate::engine::parallel::join(
        p.nodes.len(),
        || {
            crate::store::migrate::one_value_per_line(&EnvelopeView::with_digests(
                record,
                p.generation.digests.clone(),
            ))
        },
        || stored_nodes(p.nodes, &p.generation.composition, fingerprint),
    );
    let record = PublishRecord {
        generation_id: p.generation.id.clone(),
        expected_current: p.previous,
        snapshot,
        agents,
        digests: p.generation.digests.clone(),
        nodes,
        impact: p
            .report
            .impact
            .iter()
            .map(|i| StoredImpact::from(&i))
            .collect(),
        mounts,
        chunked: None,
    };
    Ok(record)
}

/// `nodes` as stored: identities under the store's keyed fingerprint,
/// with a fingerprint per configuration leaf.
fn stored_nodes(
    nodes: &[SeedNode],
    composition: &crate::engine::model::Composition,
    fingerprint: &ConfigFingerprint,
) -> Vec<StoredNode> {
    nodes
        .iter()
        .map(|n| {
            let identity = StoredIdentity::from_identity(&n.identity, Some(fingerprint));
            let leaves = crate::engine::model::EntryId::new(&n.entry_id)
                .ok()
                .and_then(|id| composition.entries.get(&id))
                .and_then(|e| config_leaves(&e.config).ok());
            StoredNode {
                entry_id: n.entry_id.clone(),
                instance_id: n.instance_id.clone(),
                mount: n.mount,
                identity: match leaves {
                    Some(leaves) => identity.with_config_leaves(leaves, fingerprint),
                    None => identity,
                },
            }
        })
        .collect()
}

/// Open the store at `path` to publish `file`'s lineage into it: created
/// when absent, and refused while a server holds that lineage.
pub fn open_to_publish(
    path: &Path,
    file: &Path,
    host: &HostSettings,
    reporter: Arc<dyn Reporter>,
) -> Result<StateStore, AppError> {
    let lineage = lineage_of(file, host, path);
    let store = StateStore::open(path, OpenMode::Create)?.writing_as(lineage, reporter)?;
    store.refuse_if_served()?;
    Ok(store)
}

/// Why a turn of session `id` was not saved: another turn of it was saved
/// while this one ran (`kind`: unusable input when it is found before the
/// turn ran, a failure once it ran).
pub fn session_moved_on(id: &str, kind: super::error::ErrorKind) -> Problem {
    Problem::new(
        kind,
        format!("session `{id}` took another turn while this one ran; this turn is not in its transcript"),
    )
    .with_code("store::session-moved-on")
    .with_help("a session answers one turn at a time: run the turn again")
}

/// How long a server's heartbeat keeps its lineage held, in seconds (it
/// beats every 5).
pub const HOLD_FRESH_SECONDS: u64 = 20;

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

/// How a lineage reads to a person: its name, or what the unnamed lineage
/// of a migrated store is.
pub fn shown_lineage(name: &str) -> String {
    if name.is_empty() {
        "(from before lineages)".to_owned()
    } else {
        name.to_owned()
    }
}

/// What lineage `lineage` of the store at `store` holds now: its seed and
/// agents, or nothing when there is no store. With [`OpenMode::Peek`] it
/// migrates, recovers and waits for nothing (a read beside a load, made
/// before the composition says which store it uses).
pub(crate) fn read_seed(
    store: &Path,
    lineage: &str,
    mode: OpenMode,
) -> Result<(Option<SeedState>, Option<Canon>), AppError> {
    match StateStore::open_existing_as(store, mode)? {
        Some(s) => {
            let (seed, agents) = s.in_lineage(lineage.to_owned()).seed_and_agents()?;
            Ok((Some(seed), agents))
        }
        None => Ok((None, None)),
    }
}

/// A store's seed read beside a load, before the composition said which
/// store and lineage it uses: a guess (the default ones) to check.
pub(crate) struct PeekedSeed {
    store: PathBuf,
    lineage: String,
    read: Result<(Option<SeedState>, Option<Canon>), AppError>,
}

impl PeekedSeed {
    /// What was read, when the guess was right (`store` and `lineage` are
    /// the composition's) and the peek succeeded.
    pub(crate) fn of(
        self,
        store: &Path,
        lineage: &str,
    ) -> Option<(Option<SeedState>, Option<Canon>)> {
        (self.store == store && self.lineage == lineage)
            .then_some(self.read.ok())
            .flatten()
    }
}

/// Load `file` and, on the other core, peek at the seed where a
/// composition without `[store] path` or `name` keeps it (`state` when
/// given): each takes ~0.35 s at 100,000 entries. The peek migrates,
/// recovers and waits for nothing (the composition may name another store,
/// or fail to load); the caller checks the guess with [`PeekedSeed::of`].
pub(crate) fn load_beside_seed(
    file: &Path,
    state: Option<&Path>,
    env: &super::env::RunEnv,
    reporter: &dyn Reporter,
) -> (Result<super::workspace::Workspace, AppError>, PeekedSeed) {
    let guessed = HostSettings::default();
    let store = state_path_of(state, file, &guessed);
    let lineage = lineage_of(file, &guessed, &store);
    let (ws, read) = crate::engine::parallel::join(
        crate::engine::parallel::PARALLEL_MIN_WORK,
        || super::workspace::load_file(file, env, reporter),
        || read_seed(&store, &lineage, OpenMode::Peek),
    );
    (
        ws,
        PeekedSeed {
            store,
            lineage,
            read,
        },
    )
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
