//! The embedded store: one SQLite file (bundled SQLite, write-ahead log).
//!
//! A publish is one `BEGIN IMMEDIATE` transaction under a busy timeout: the
//! write lock is taken first, the sequence number is allocated inside it,
//! and a process killed anywhere before `COMMIT` leaves the previous state
//! (the log's uncommitted frames are ignored on the next open; a store
//! still in the rollback journal rolls its hot journal back). Reading commands
//! open the file only to read (`query_only`). The layout is [`super::migrate`]'s; a
//! generation's documents are chunk trees ([`super::chunks`]), so it costs
//! what changed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};

use super::chunks;
use super::failpoint::failpoint;
use super::key::StoreKey;
use super::migrate::{self, Documents, UNCLAIMED};
use super::{
    GenerationSummary, Head, Holder, LineageSummary, NewRun, OpenMode, PublishRecord, SessionClaim,
    Store, StoreError, StoredGeneration, StoredImpact, StoredNode, StoredRun, StoredSession,
    fingerprint_fn, now_rfc3339, unreadable_json,
};
use crate::engine::identity::GenerationId;
use crate::runtime::harness::{ConfigFingerprint, SeedNode};

/// How long a publish waits for another writer.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// A generation row: its summary and where its documents are.
struct Row {
    summary: GenerationSummary,
    physical_digest: String,
    snapshot_root: String,
    nodes_root: String,
    impact_root: String,
}

/// The SQLite store.
pub struct SqliteStore {
    conn: Connection,
    path: PathBuf,
    key: StoreKey,
    created: bool,
    /// Dropped with the store: the checkpointer ([`Store::keep_up_beside_writes`])
    /// then stops.
    checkpointer: Option<std::sync::mpsc::Sender<()>>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

fn i64_of(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn u64_of(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

impl SqliteStore {
    /// Open (or, with [`OpenMode::Create`], create) the store at `path`,
    /// migrating an older schema (one transaction; a read-only open of an
    /// older store migrates it read-write first).
    pub fn open(path: &Path, mode: OpenMode) -> Result<Self, StoreError> {
        let shown = path.display().to_string();
        let backend = |e: &dyn std::fmt::Display| StoreError::Backend {
            path: shown.clone(),
            message: e.to_string(),
        };
        // What is there decides before SQLite opens anything: SQLite would
        // take a directory for a file it cannot open (a failure, exit 3)
        // and garbage for a database until it read it.
        let found = Found::at(path)?;
        if mode != OpenMode::Create && found != Found::Database {
            // An empty file is no store yet (see [`Found::Empty`]).
            return Err(StoreError::Missing { path: shown });
        }
        if mode == OpenMode::Create
            && found == Found::Absent
            && let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        {
            std::fs::create_dir_all(dir).map_err(|e| backend(&e))?;
        }
        let conn = match mode {
            OpenMode::Create => Connection::open_with_flags(
                not_a_uri(path),
                OpenFlags::SQLITE_OPEN_READ_WRITE
                    | OpenFlags::SQLITE_OPEN_CREATE
                    | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .map_err(|e| backend(&e))?,
            OpenMode::ReadOnly => open_read_only(path).map_err(|e| backend(&e))?,
            OpenMode::Peek => open_reading(path).map_err(|e| backend(&e))?,
        };
        let wait = if mode == OpenMode::Peek {
            Duration::ZERO
        } else {
            BUSY_TIMEOUT
        };
        conn.busy_timeout(wait).map_err(|e| backend(&e))?;
        let mut store = Self {
            conn,
            path: path.to_path_buf(),
            key: StoreKey::from_bytes(&[0; 32]).expect("32 bytes"),
            created: false,
            checkpointer: None,
        };
        if mode == OpenMode::Create {
            store.created = store.initialize()?;
        }
        if store.schema_version()? < migrate::latest() {
            if mode == OpenMode::Peek {
                return Err(backend(&"the store needs a migration; a peek makes none"));
            }
            if mode == OpenMode::ReadOnly {
                let mut rw = Self::open(path, OpenMode::Create)?;
                rw.upgrade()?;
                drop(rw);
                return Self::open(path, OpenMode::ReadOnly);
            }
            store.upgrade()?;
        }
        // Only a store this chassis reads: a newer one is left as it is. A
        // store that cannot move to the log now (another process reads an
        // old journal store, and the move needs it alone) keeps its
        // journal: it is moved by a later write.
        if mode == OpenMode::Create
            && let Err(e) = write_ahead(&store.conn)
        {
            tracing::debug!(error = %e, "the store keeps its rollback journal for now");
        }
        store.key = store.load_key()?;
        Ok(store)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `PRAGMA integrity_check` (`ok` when sound).
    pub fn integrity_check(&self) -> Result<String, StoreError> {
        self.conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(|e| self.backend(e))
    }

    /// A pragma's value as text (the tests check the journal).
    #[cfg(test)]
    pub(crate) fn pragma(&self, name: &str) -> String {
        self.conn
            .query_row(&format!("PRAGMA {name}"), [], |r| {
                r.get::<_, rusqlite::types::Value>(0)
            })
            .map(|v| match v {
                rusqlite::types::Value::Text(t) => t,
                rusqlite::types::Value::Integer(i) => i.to_string(),
                other => format!("{other:?}"),
            })
            .unwrap_or_else(|e| e.to_string())
    }

    /// Bytes the chunks hold (what generations share).
    pub fn chunk_bytes(&self) -> Result<u64, StoreError> {
        self.conn
            .query_row(
                "SELECT coalesce(sum(length(body)), 0) FROM chunks",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map(u64_of)
            .map_err(|e| self.backend(e))
    }

    /// Run `f` in one `BEGIN IMMEDIATE` transaction (the write lock taken
    /// first, under the busy timeout), committed when `f` succeeds and
    /// rolled back otherwise; `f` maps SQLite failures with the `backend`
    /// it is given.
    fn write<T>(
        &mut self,
        f: impl FnOnce(
            &rusqlite::Transaction<'_>,
            &dyn Fn(rusqlite::Error) -> StoreError,
        ) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let path = self.path.display().to_string();
        let backend = move |e: rusqlite::Error| StoreError::Backend {
            path: path.clone(),
            message: e.to_string(),
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&backend)?;
        let out = f(&tx, &backend)?;
        tx.commit().map_err(&backend)?;
        Ok(out)
    }

    fn backend(&self, e: impl std::fmt::Display) -> StoreError {
        StoreError::Backend {
            path: self.path.display().to_string(),
            message: e.to_string(),
        }
    }

    fn not_a_store(&self, reason: impl Into<String>) -> StoreError {
        StoreError::NotAStore {
            path: self.path.display().to_string(),
            reason: reason.into(),
        }
    }

    /// Create the base tables, key and every migration in an empty file;
    /// `true` when it did.
    fn initialize(&mut self) -> Result<bool, StoreError> {
        let path = self.path.clone();
        let backend = |e: &dyn std::fmt::Display| StoreError::Backend {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| backend(&e))?;
        let tables: i64 = tx
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
            .map_err(|e| not_a_store_err(&path, e))?;
        if tables > 0 {
            return Ok(false);
        }
        let key = StoreKey::generate()
            .map_err(|e| backend(&format!("cannot read /dev/urandom for the store key: {e}")))?;
        let result = (|| -> rusqlite::Result<()> {
            tx.execute_batch(migrate::BASE)?;
            tx.execute(
                "INSERT INTO meta (key, value) VALUES ('created_by', ?1)",
                params![format!("chassis {}", env!("CARGO_PKG_VERSION"))],
            )?;
            tx.execute(
                "INSERT INTO store_key (id, key) VALUES (1, ?1)",
                params![key.bytes().as_slice()],
            )?;
            migrate::migrate(&tx, 0)?;
            Ok(())
        })();
        result.map_err(|e| backend(&e))?;
        tx.commit().map_err(|e| backend(&e))?;
        Ok(true)
    }

    /// Apply the migrations past the store's version, in one transaction.
    fn upgrade(&mut self) -> Result<(), StoreError> {
        let path = self.path.clone();
        let backend = |e: &dyn std::fmt::Display| StoreError::Backend {
            path: path.display().to_string(),
            message: format!("migrating the store: {e}"),
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| backend(&e))?;
        // Read again under the write lock: another process may have won.
        let from = read_schema_version(&tx, &path)?;
        if from < migrate::latest() {
            migrate::migrate(&tx, from).map_err(|e| backend(&e))?;
            failpoint("migrate.before_commit");
        }
        tx.commit().map_err(|e| backend(&e))
    }

    fn schema_version(&self) -> Result<i64, StoreError> {
        read_schema_version(&self.conn, &self.path)
    }

    fn load_key(&self) -> Result<StoreKey, StoreError> {
        let bytes: Vec<u8> = self
            .conn
            .query_row("SELECT key FROM store_key WHERE id = 1", [], |r| r.get(0))
            .map_err(|e| not_a_store_err(&self.path, e))?;
        StoreKey::from_bytes(&bytes).ok_or_else(|| self.not_a_store("its key is not 32 bytes"))
    }

    /// The lineage `name` stands for: its own, else the unclaimed one a
    /// version 1 store's generations moved into (which its first publish
    /// claims).
    fn lineage_id(&self, name: &str) -> Result<Option<i64>, StoreError> {
        lineage_id(&self.conn, name).map_err(|e| self.backend(e))
    }

    /// The row of the current generation of `lineage`, with the
    /// lineage's row id.
    fn latest_row(&self, lineage: &str) -> Result<Option<(i64, Row)>, StoreError> {
        let Some(id) = self.lineage_id(lineage)? else {
            return Ok(None);
        };
        Ok(self
            .summaries(
                "WHERE g.lineage_id = ?1 AND g.sequence =
                   (SELECT max(sequence) FROM generations WHERE lineage_id = ?1)",
                &[&id],
            )?
            .pop()
            .map(|row| (id, row)))
    }

    fn summaries(
        &self,
        filter: &str,
        args: &[&dyn rusqlite::ToSql],
    ) -> Result<Vec<Row>, StoreError> {
        let sql = format!(
            "SELECT l.name, g.sequence, g.state, g.created_at, g.semantic_digest, g.digest,
                    g.node_count, g.physical_digest, g.snapshot_root, g.nodes_root,
                    g.impact_root
             FROM generations g JOIN lineages l ON l.id = g.lineage_id
             {filter} ORDER BY l.name, g.sequence"
        );
        let mut stmt = self
            .conn
            .prepare_cached(&sql)
            .map_err(|e| self.backend(e))?;
        let rows = stmt
            .query_map(args, |r| {
                let sequence = u64_of(r.get(1)?);
                Ok(Row {
                    summary: GenerationSummary {
                        lineage: r.get(0)?,
                        id: GenerationId::from_sequence(sequence).to_string(),
                        sequence,
                        state: r.get(2)?,
                        created_at: r.get(3)?,
                        semantic_digest: r.get(4)?,
                        digest: r.get(5)?,
                        nodes: usize::try_from(r.get::<_, i64>(6)?).unwrap_or(0),
                    },
                    physical_digest: r.get(7)?,
                    snapshot_root: r.get(8)?,
                    nodes_root: r.get(9)?,
                    impact_root: r.get(10)?,
                })
            })
            .map_err(|e| self.backend(e))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(|e| self.backend(e))
    }

    /// `part` of generation `g` is damaged (see [`StoreError::Damaged`]).
    fn damaged(
        &self,
        g: &GenerationSummary,
        part: &'static str,
        reason: impl Into<String>,
    ) -> StoreError {
        StoreError::Damaged {
            path: self.path.display().to_string(),
            lineage: g.lineage.clone(),
            generation: g.id.clone(),
            part,
            reason: reason.into(),
        }
    }

    /// The text of the chunk tree at `root`: `part` of generation `g`.
    fn document(
        &self,
        root: &str,
        g: &GenerationSummary,
        part: &'static str,
    ) -> Result<String, StoreError> {
        migrate::read_document(&self.conn, root).map_err(|e| match e {
            chunks::ReadError::Fetch(e) => self.backend(e),
            other => self.damaged(g, part, other.to_string()),
        })
    }

    fn full(&self, row: Row) -> Result<StoredGeneration, StoreError> {
        let g = &row.summary;
        let snapshot = self.document(&row.snapshot_root, g, "snapshot")?;
        let snapshot: serde_json::Value = serde_json::from_str(&snapshot)
            .map_err(|e| self.damaged(g, "snapshot", unreadable_json(&e, "a snapshot", None)))?;
        // The envelope's digests are the generation's (what was published
        // as it): a cheap check that the document is this generation's
        // and whole (a reader that needs its record checks it hashes to
        // them, see `parse_document`).
        let digests = snapshot.get("digests");
        let digest = |key: &str| digests.and_then(|d| d.get(key)).and_then(|v| v.as_str());
        if digest("digest") != Some(g.digest.as_str())
            || digest("semantic_digest") != Some(g.semantic_digest.as_str())
            || digest("physical_digest") != Some(row.physical_digest.as_str())
        {
            return Err(self.damaged(
                g,
                "snapshot",
                "its digests are not the ones the generation was published with",
            ));
        }
        let mut nodes = self.lines::<StoredNode>(&row.nodes_root, g, "nodes", "a node")?;
        if nodes.len() != g.nodes {
            return Err(self.damaged(
                g,
                "nodes",
                format!(
                    "{} are listed where the generation was published with {}",
                    nodes.len(),
                    g.nodes
                ),
            ));
        }
        // Kept by entry id (`StoredGeneration::node` searches them).
        nodes.sort_by(|a, b| a.entry_id.cmp(&b.entry_id));
        let impact = migrate::with_implied(
            self.lines::<StoredImpact>(&row.impact_root, g, "impact", "an impact row")?,
            &nodes,
        );
        Ok(StoredGeneration {
            summary: row.summary,
            physical_digest: row.physical_digest,
            snapshot,
            nodes,
            impact,
        })
    }

    /// `part` of generation `g`, one `what` per line.
    fn lines<T: serde::de::DeserializeOwned>(
        &self,
        root: &str,
        g: &GenerationSummary,
        part: &'static str,
        what: &str,
    ) -> Result<Vec<T>, StoreError> {
        self.document(root, g, part)?
            .lines()
            .enumerate()
            .map(|(i, line)| {
                serde_json::from_str(line)
                    .map_err(|e| self.damaged(g, part, unreadable_json(&e, what, Some(i + 1))))
            })
            .collect()
    }
}

/// What a store's path holds, before SQLite opens it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Found {
    /// Nothing (or nothing chassis may look at): a reading command says
    /// the store is missing, a publish creates it.
    Absent,
    /// An empty file: no store yet. SQLite reads it as an empty database,
    /// and it is what a first publish killed before its first commit
    /// leaves (SQLite creates the file when it opens it), so a publish
    /// makes the store in it and a reading command finds no store.
    Empty,
    /// An SQLite database (a chassis store or not: its tables say).
    Database,
}

impl Found {
    /// What is at `path`; something that can never be a store — a
    /// directory, a FIFO, a file that is not an SQLite database — is
    /// refused as [`StoreError::NotAStore`], and never written.
    fn at(path: &Path) -> Result<Self, StoreError> {
        use std::io::Read;
        let not_a_store = |reason: &str| StoreError::NotAStore {
            path: path.display().to_string(),
            reason: reason.to_owned(),
        };
        let Ok(meta) = std::fs::metadata(path) else {
            return Ok(Found::Absent);
        };
        if meta.is_dir() {
            return Err(not_a_store("it is a directory, and a store is a file"));
        }
        if !meta.is_file() {
            return Err(not_a_store(
                "it is not a regular file (a store is an SQLite file)",
            ));
        }
        if meta.len() == 0 {
            // Unless its log holds what was written (never left by
            // chassis, which writes the file before it starts a log).
            let mut log = path.as_os_str().to_owned();
            log.push("-wal");
            let logged = std::fs::metadata(&log).is_ok_and(|m| m.len() > 0);
            return Ok(if logged {
                Found::Database
            } else {
                Found::Empty
            });
        }
        let mut head = [0_u8; 16];
        match std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head)) {
            Ok(()) if &head == b"SQLite format 3\0" => Ok(Found::Database),
            Ok(()) => Err(not_a_store("it is not an SQLite database")),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                Err(not_a_store("it is not an SQLite database"))
            }
            // Unreadable (its permissions): SQLite says why when it opens it.
            Err(_) => Ok(Found::Database),
        }
    }
}

fn lineage_id(conn: &Connection, name: &str) -> rusqlite::Result<Option<i64>> {
    conn.query_row(
        "SELECT id FROM lineages WHERE name IN (?1, ?2)
         ORDER BY name = ?1 DESC LIMIT 1",
        params![name, UNCLAIMED],
        |r| r.get(0),
    )
    .optional()
}

fn read_schema_version(conn: &Connection, path: &Path) -> Result<i64, StoreError> {
    let not_a_store = |reason: String| StoreError::NotAStore {
        path: path.display().to_string(),
        reason,
    };
    let version: Option<String> = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .optional()
        .map_err(|e| match e {
            rusqlite::Error::SqliteFailure(_, Some(m)) if m.starts_with("no such table") => {
                not_a_store(
                    "it is an SQLite database, but not chassis's (it has no `meta` table)".into(),
                )
            }
            e => not_a_store_err(path, e),
        })?;
    let Some(version) = version else {
        return Err(not_a_store("it has no schema_version".into()));
    };
    let found: i64 = version
        .parse()
        .map_err(|_| not_a_store(format!("its schema_version `{version}` is not a number")))?;
    if found > migrate::latest() {
        return Err(StoreError::FutureSchema {
            path: path.display().to_string(),
            found,
            supported: migrate::latest(),
        });
    }
    if found < 1 {
        return Err(not_a_store(format!("schema_version {found}")));
    }
    Ok(found)
}

fn not_a_store_err(path: &Path, e: impl std::fmt::Display) -> StoreError {
    StoreError::NotAStore {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

/// Put a read-write connection's store in write-ahead-log mode, with
/// `synchronous = NORMAL`.
///
/// Why: in the rollback journal a commit syncs the disk two or three times
/// (about 1.2 ms on this VM), and a server's run writer commits a group of
/// run records every time one finishes — every served run waited for
/// those syncs. In the log a commit appends and syncs nothing; the log is
/// synced when it is copied back into the file (a checkpoint, and when the
/// last connection closes). A process that dies loses nothing committed; a
/// power cut may lose the last commits before a checkpoint, never the
/// file's consistency. Readers no longer wait for a writer either. The mode
/// is kept in the file, so a store opened read-only later reads the log. A
/// file system without shared memory keeps the journal it has (SQLite
/// answers with the mode it kept).
fn write_ahead(conn: &Connection) -> rusqlite::Result<()> {
    let _mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    conn.pragma_update(None, "synchronous", "NORMAL")
}

/// `path` as SQLite must be given it to open that file: SQLite (built to
/// read URIs) takes a name that begins with `file:` as a URI, so
/// `--state file:x.db` wrote `x.db` (then never found `file:x.db` again)
/// and `file::memory:` stored nothing. Such a relative path is given as
/// `./file:…`: the same file, never a URI.
fn not_a_uri(path: &Path) -> std::borrow::Cow<'_, Path> {
    if path.as_os_str().as_encoded_bytes().starts_with(b"file:") {
        std::borrow::Cow::Owned(Path::new(".").join(path))
    } else {
        std::borrow::Cow::Borrowed(path)
    }
}

/// How a reading connection opens: read-write where the file allows
/// (read-only where it is write-protected), with every write refused
/// (`query_only`; see [`open_reading`]).
const READING: OpenFlags = OpenFlags::SQLITE_OPEN_READ_WRITE.union(OpenFlags::SQLITE_OPEN_NO_MUTEX);

/// A connection that only reads.
///
/// Why not a read-only one: reading a store in the log makes SQLite keep
/// its side files (`-wal`, `-shm`), and only a connection that may write
/// removes them when it is the last to close — a read-only one left an
/// empty log and a 32 KiB index beside the store after every `generations
/// list`. `query_only` refuses every statement that would write.
fn open_reading(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(not_a_uri(path), READING)?;
    conn.pragma_update(None, "query_only", true)?;
    Ok(conn)
}

/// Open read-only. A store left with a hot journal (a publish was killed),
/// or a log whose index must be rebuilt, cannot be recovered read-only, so
/// it is recovered once read-write — which restores the last committed
/// state and changes nothing else.
fn open_read_only(path: &Path) -> rusqlite::Result<Connection> {
    let conn = open_reading(path)?;
    match conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
        r.get::<_, i64>(0)
    }) {
        Ok(_) => Ok(conn),
        Err(e) if is_read_only_rollback(&e) => {
            drop(conn);
            let rw = Connection::open_with_flags(
                not_a_uri(path),
                OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )?;
            rw.busy_timeout(BUSY_TIMEOUT)?;
            let recovered = rw.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
                r.get::<_, i64>(0)
            });
            drop(rw);
            match recovered {
                Ok(_) => open_reading(path),
                // Nothing here may be written — not the store, not the side
                // files beside it (a store published by another user, an
                // archived one): read the file as it stands.
                Err(e) if is_read_only_rollback(&e) => open_unwritable(path),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// Open a store its reader may not write at all: the file as it stands
/// (SQLite's `immutable`: no lock, no side files). What a writer has not
/// yet copied from its log into the file is not seen — a store read this
/// way is one nobody is publishing to (another user's, an archive).
fn open_unwritable(path: &Path) -> rusqlite::Result<Connection> {
    let mut uri = String::from("file:");
    for &b in path.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || b"/._-~".contains(&b) {
            uri.push(char::from(b));
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push_str("?immutable=1");
    Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
}

fn is_read_only_rollback(e: &rusqlite::Error) -> bool {
    matches!(
        e,
        rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::ReadOnly
    )
}

/// How often a server's checkpointer copies the log into the file.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(500);

/// Copy the log at `path` back into the file every [`CHECKPOINT_EVERY`]
/// from a connection of its own, until `stop` is dropped or sent to.
///
/// Why: with the default, the connection whose commit passes 1,000 log
/// pages copies them (and syncs) inside that commit, and a server's run
/// writer is that connection — every run waiting on its group waited for
/// the copy too (p99 26–34 ms against 22–27 ms without, at 200 clients).
/// A passive checkpoint takes no lock a writer or reader waits on; it
/// copies what no reader still needs, and the log starts over from the
/// top once all of it was copied.
fn checkpoint_beside(path: &Path, stop: std::sync::mpsc::Receiver<()>) -> rusqlite::Result<()> {
    let conn = Connection::open_with_flags(
        not_a_uri(path),
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(Duration::ZERO)?;
    std::thread::Builder::new()
        .name("chassis-checkpoint".into())
        .spawn(move || {
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                stop.recv_timeout(CHECKPOINT_EVERY)
            {
                if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
                    tracing::debug!(error = %e, "a checkpoint of the store's log failed; the next one tries again");
                }
            }
        })
        .map_err(|e| {
            rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
                Some(format!("cannot start the checkpointer: {e}")),
            )
        })?;
    Ok(())
}

impl Store for SqliteStore {
    fn beside(&self) -> Result<Box<dyn Store>, StoreError> {
        // Straight to SQLite, as the checkpointer's: [`Found::at`] reads
        // the file with a descriptor of its own, and closing that drops
        // every lock this process holds on it — the other connection's
        // too, whose log another process would then take for unused.
        let conn = Connection::open_with_flags(
            not_a_uri(&self.path),
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| self.backend(e))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| self.backend(e))?;
        Ok(Box::new(SqliteStore {
            conn,
            path: self.path.clone(),
            key: self.key.clone(),
            created: false,
            checkpointer: None,
        }))
    }

    fn keep_up_beside_writes(&mut self) {
        if self.checkpointer.is_some() {
            return;
        }
        let (stop, stopped) = std::sync::mpsc::channel();
        match checkpoint_beside(&self.path, stopped) {
            // Only then: a log nobody copies would grow without end.
            Ok(()) => match self.conn.pragma_update(None, "wal_autocheckpoint", 0) {
                Ok(()) => self.checkpointer = Some(stop),
                Err(e) => tracing::debug!(error = %e, "the store checkpoints its log itself"),
            },
            Err(e) => tracing::debug!(error = %e, "the store checkpoints its log itself"),
        }
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn created(&self) -> bool {
        self.created
    }

    fn lineages(&self) -> Result<Vec<LineageSummary>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT l.name, count(g.sequence), max(g.sequence)
                 FROM lineages l LEFT JOIN generations g ON g.lineage_id = l.id
                 GROUP BY l.id ORDER BY l.name",
            )
            .map_err(|e| self.backend(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(LineageSummary {
                    name: r.get(0)?,
                    generations: u64_of(r.get(1)?),
                    current: r
                        .get::<_, Option<i64>>(2)?
                        .map(|s| GenerationId::from_sequence(u64_of(s)).to_string()),
                })
            })
            .map_err(|e| self.backend(e))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(|e| self.backend(e))
    }

    fn current(&self, lineage: &str) -> Result<Option<StoredGeneration>, StoreError> {
        let Some(id) = self.lineage_id(lineage)? else {
            return Ok(None);
        };
        let last = self
            .summaries(
                "WHERE g.lineage_id = ?1 AND g.sequence =
                   (SELECT max(sequence) FROM generations WHERE lineage_id = ?1)",
                &[&id],
            )?
            .pop();
        last.map(|s| self.full(s)).transpose()
    }

    fn head(&self, lineage: &str) -> Result<Option<Head>, StoreError> {
        let Some((id, row)) = self.latest_row(lineage)? else {
            return Ok(None);
        };
        let mut nodes: Vec<SeedNode> = self
            .lines::<super::SeedRow>(&row.nodes_root, &row.summary, "nodes", "a node")?
            .into_iter()
            .map(SeedNode::from)
            .collect();
        nodes.sort_by(|a, b| a.entry_id.cmp(&b.entry_id));
        let agents: Option<String> = self
            .conn
            .prepare_cached(
                "SELECT agents FROM generations WHERE lineage_id = ?1 AND sequence = ?2",
            )
            .and_then(|mut st| {
                st.query_row(params![id, i64_of(row.summary.sequence)], |r| r.get(0))
            })
            .map_err(|e| self.backend(e))?;
        let agents = agents
            .map(|a| serde_json::from_str(&a))
            .transpose()
            .map_err(|e| {
                self.damaged(
                    &row.summary,
                    "agents",
                    unreadable_json(&e, "a list of agents", None),
                )
            })?;
        Ok(Some(Head {
            summary: row.summary,
            nodes,
            agents,
        }))
    }

    fn generation(
        &self,
        lineage: &str,
        id: &GenerationId,
    ) -> Result<Option<StoredGeneration>, StoreError> {
        // As `current` reads it: a lineage not recorded yet stands for the
        // unclaimed history of a migrated store.
        let Some(lineage_id) = self.lineage_id(lineage)? else {
            return Ok(None);
        };
        let found = self
            .summaries(
                "WHERE g.lineage_id = ?1 AND g.sequence = ?2",
                &[&lineage_id, &i64_of(id.sequence())],
            )?
            .pop();
        found.map(|s| self.full(s)).transpose()
    }

    fn latest(&self, lineage: &str) -> Result<Option<GenerationSummary>, StoreError> {
        Ok(self.latest_row(lineage)?.map(|(_, r)| r.summary))
    }

    fn list(&self, lineage: Option<&str>) -> Result<Vec<GenerationSummary>, StoreError> {
        let rows = match lineage {
            Some(name) => match self.lineage_id(name)? {
                Some(id) => self.summaries("WHERE g.lineage_id = ?1", &[&id])?,
                None => Vec::new(),
            },
            None => self.summaries("", &[])?,
        };
        Ok(rows.into_iter().map(|r| r.summary).collect())
    }

    fn entry_mounts(&self, lineage: &str) -> Result<BTreeMap<String, u64>, StoreError> {
        let Some(id) = self.lineage_id(lineage)? else {
            return Ok(BTreeMap::new());
        };
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT entry_id, mount FROM entry_mounts WHERE lineage_id = ?1 ORDER BY entry_id",
            )
            .map_err(|e| self.backend(e))?;
        let rows = stmt
            .query_map(params![id], |r| {
                Ok((r.get::<_, String>(0)?, u64_of(r.get(1)?)))
            })
            .map_err(|e| self.backend(e))?;
        rows.collect::<rusqlite::Result<BTreeMap<_, _>>>()
            .map_err(|e| self.backend(e))
    }

    fn config_fingerprint(&self) -> ConfigFingerprint {
        fingerprint_fn(self.key.clone())
    }

    fn publish(
        &mut self,
        lineage: &str,
        mut record: PublishRecord,
    ) -> Result<GenerationId, StoreError> {
        // By entry id: how nodes are searched and impact rows implied.
        record.nodes.sort_by(|a, b| a.entry_id.cmp(&b.entry_id));
        self.write(|tx, backend| {
            failpoint("publish.after_begin");
            let lineage_id = claim_lineage(tx, lineage).map_err(backend)?;
            let current: Option<i64> = tx
                .query_row(
                    "SELECT max(sequence) FROM generations WHERE lineage_id = ?1",
                    params![lineage_id],
                    |r| r.get(0),
                )
                .map_err(backend)?;
            let found = current.map(|s| GenerationId::from_sequence(u64_of(s)).to_string());
            let expected = record.expected_current.as_ref().map(ToString::to_string);
            let sequence = current.map_or(0, u64_of) + 1;
            if found != expected || sequence != record.generation_id.sequence() {
                return Err(StoreError::Conflict {
                    expected: expected.unwrap_or_else(|| "none".into()),
                    found: found.unwrap_or_else(|| "none".into()),
                });
            }
            let id = GenerationId::from_sequence(sequence);
            tx.execute(
                "UPDATE generations SET state = 'superseded'
             WHERE lineage_id = ?1 AND state = 'active'",
                params![lineage_id],
            )
            .map_err(backend)?;
            let roots = match &record.chunked {
                Some(chunked) => chunked.write(tx),
                None => Documents {
                    snapshot: &record.snapshot,
                    nodes: &record.nodes,
                    impact: &record.impact,
                }
                .write(tx),
            }
            .map_err(backend)?;
            failpoint("publish.after_nodes");
            tx.execute(
                "INSERT INTO generations
               (lineage_id, sequence, state, created_at, semantic_digest, digest, physical_digest,
                node_count, snapshot_root, nodes_root, impact_root, agents)
             VALUES (?1, ?2, 'active', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![
                    lineage_id,
                    i64_of(sequence),
                    now_rfc3339(),
                    record.digests.semantic_digest,
                    record.digests.digest,
                    record.digests.physical_digest,
                    i64_of(record.nodes.len() as u64),
                    roots[0],
                    roots[1],
                    roots[2],
                    record.agents,
                ],
            )
            .map_err(backend)?;
            failpoint("publish.after_generation_row");
            {
                let mut mount = tx
                    .prepare_cached(
                        "INSERT INTO entry_mounts (lineage_id, entry_id, mount) VALUES (?1, ?2, ?3)
                     ON CONFLICT (lineage_id, entry_id) DO UPDATE
                     SET mount = max(mount, excluded.mount)
                     WHERE excluded.mount > mount",
                    )
                    .map_err(backend)?;
                for (entry, m) in &record.mounts {
                    mount
                        .execute(params![lineage_id, entry, i64_of(*m)])
                        .map_err(backend)?;
                }
            }
            failpoint("publish.before_commit");
            Ok(id)
        })
    }

    fn record_runs(&mut self, lineage: &str, runs: Vec<NewRun>) -> Result<Vec<String>, StoreError> {
        self.write(|tx, backend| {
            let lineage_id = claim_lineage(tx, lineage).map_err(backend)?;
            let mut insert = tx
                .prepare_cached(
                    // A served run is recorded when it starts and again
                    // when it ends: the second write finishes the first.
                    "INSERT INTO runs (id, lineage_id, sequence, agent, status, started_at, finished_at, instance)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                     ON CONFLICT (id) DO UPDATE SET status = excluded.status, finished_at = excluded.finished_at
                     WHERE runs.status = 'running'",
                )
                .map_err(backend)?;
            let mut ids = Vec::with_capacity(runs.len());
            for run in runs {
                let sequence = GenerationId::parse(&run.generation_id).map_or(0, |g| g.sequence());
                let changed = insert
                    .execute(params![
                        run.id,
                        lineage_id,
                        i64_of(sequence),
                        run.agent,
                        run.status,
                        run.started_at,
                        run.finished_at,
                        run.instance
                    ])
                    .map_err(backend)?;
                // Only a `running` record is finished by a second write; a
                // finished run (one another server marked interrupted) is
                // never written over, and the rest of the group still is.
                if changed == 0 {
                    tracing::warn!(
                        run = %run.id,
                        status = %run.status,
                        "the run is recorded as finished already; its record is left as it is"
                    );
                }
                ids.push(run.id);
            }
            Ok(ids)
        })
    }

    fn runs(&self) -> Result<Vec<StoredRun>, StoreError> {
        self.query_runs("", &[])
    }

    fn interrupt_runs(
        &mut self,
        lineage: &str,
        instance: &str,
        at: &str,
    ) -> Result<u64, StoreError> {
        let Some(lineage_id) = self.lineage_id(lineage)? else {
            return Ok(0);
        };
        self.write(|tx, backend| {
            let n = tx
                .execute(
                    "UPDATE runs SET status = 'interrupted', finished_at = ?3
                     WHERE lineage_id = ?1 AND status = 'running' AND COALESCE(instance, '') <> ?2",
                    params![lineage_id, instance, at],
                )
                .map_err(backend)?;
            Ok(n as u64)
        })
    }

    fn holder(&self, lineage: &str) -> Result<Option<Holder>, StoreError> {
        let Some(lineage_id) = self.lineage_id(lineage)? else {
            return Ok(None);
        };
        self.conn
            .query_row(
                "SELECT instance, pid, address, started_at, heartbeat, host FROM holders
                 WHERE lineage_id = ?1",
                params![lineage_id],
                |r| {
                    Ok(Holder {
                        instance: r.get(0)?,
                        pid: u32::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
                        address: r.get(2)?,
                        started_at: r.get(3)?,
                        heartbeat: u64_of(r.get(4)?),
                        host: r.get(5)?,
                    })
                },
            )
            .optional()
            .map_err(|e| self.backend(e))
    }

    fn hold(&mut self, lineage: &str, holder: &Holder) -> Result<(), StoreError> {
        self.write(|tx, backend| {
            let lineage_id = claim_lineage(tx, lineage).map_err(backend)?;
            tx.execute(
                "INSERT OR REPLACE INTO holders (lineage_id, instance, pid, address, started_at, heartbeat, host)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    lineage_id,
                    holder.instance,
                    i64::from(holder.pid),
                    holder.address,
                    holder.started_at,
                    i64_of(holder.heartbeat),
                    holder.host
                ],
            )
            .map_err(backend)?;
            Ok(())
        })
    }

    fn heartbeat(
        &mut self,
        lineage: &str,
        instance: &str,
        address: &str,
    ) -> Result<bool, StoreError> {
        let Some(lineage_id) = self.lineage_id(lineage)? else {
            return Ok(false);
        };
        self.write(|tx, backend| {
            tx.execute(
                "UPDATE holders SET heartbeat = ?3, address = ?4
                 WHERE lineage_id = ?1 AND instance = ?2",
                params![lineage_id, instance, i64_of(unix_now()), address],
            )
            .map(|n| n > 0)
            .map_err(backend)
        })
    }

    fn release(&mut self, lineage: &str, instance: &str) -> Result<(), StoreError> {
        let Some(lineage_id) = self.lineage_id(lineage)? else {
            return Ok(());
        };
        self.write(|tx, backend| {
            tx.execute(
                "DELETE FROM holders WHERE lineage_id = ?1 AND instance = ?2",
                params![lineage_id, instance],
            )
            .map(|_| ())
            .map_err(backend)
        })
    }

    fn session(&self, lineage: &str, id: &str) -> Result<Option<StoredSession>, StoreError> {
        let Some(lineage_id) = self.lineage_id(lineage)? else {
            return Ok(None);
        };
        let row: Option<(String, String, String, String)> = self
            .conn
            .query_row(
                "SELECT agent, created_at, updated_at, transcript FROM sessions
                 WHERE lineage_id = ?1 AND id = ?2",
                params![lineage_id, id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()
            .map_err(|e| self.backend(e))?;
        row.map(|(agent, created_at, updated_at, transcript)| {
            Ok(StoredSession {
                id: id.to_owned(),
                agent,
                created_at,
                updated_at,
                transcript: serde_json::from_str(&transcript).map_err(|e| self.backend(e))?,
            })
        })
        .transpose()
    }

    fn save_session(
        &mut self,
        lineage: &str,
        session: &StoredSession,
        turns: usize,
    ) -> Result<bool, StoreError> {
        let transcript = session.transcript.to_string();
        self.write(|tx, backend| {
            let lineage_id = claim_lineage(tx, lineage).map_err(backend)?;
            // Written only over the transcript the turn began from (its
            // number of turns): two turns at once never lose one.
            let changed = tx
                .execute(
                    "INSERT INTO sessions (lineage_id, id, agent, created_at, updated_at, transcript)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                     ON CONFLICT (lineage_id, id) DO UPDATE
                     SET agent = excluded.agent, updated_at = excluded.updated_at,
                         transcript = excluded.transcript
                     WHERE COALESCE(json_array_length(sessions.transcript, '$.turns'), 0) = ?7",
                    params![
                        lineage_id,
                        session.id,
                        session.agent,
                        session.created_at,
                        session.updated_at,
                        transcript,
                        i64::try_from(turns).unwrap_or(i64::MAX)
                    ],
                )
                .map_err(backend)?;
            Ok(changed > 0)
        })
    }

    fn delete_session(&mut self, lineage: &str, id: &str) -> Result<bool, StoreError> {
        let Some(lineage_id) = self.lineage_id(lineage)? else {
            return Ok(false);
        };
        self.write(|tx, backend| {
            tx.execute(
                "DELETE FROM sessions WHERE lineage_id = ?1 AND id = ?2",
                params![lineage_id, id],
            )
            .map(|n| n > 0)
            .map_err(backend)
        })
    }

    fn expire_sessions(&mut self, lineage: &str, before: &str) -> Result<u64, StoreError> {
        let Some(lineage_id) = self.lineage_id(lineage)? else {
            return Ok(0);
        };
        self.write(|tx, backend| {
            tx.execute(
                "DELETE FROM sessions WHERE lineage_id = ?1 AND updated_at < ?2",
                params![lineage_id, before],
            )
            .map(|n| n as u64)
            .map_err(backend)
        })
    }

    fn session_claim(&self, lineage: &str, id: &str) -> Result<Option<SessionClaim>, StoreError> {
        read_session_claim(&self.conn, lineage, id).map_err(|e| self.backend(e))
    }

    fn claim_session(
        &mut self,
        lineage: &str,
        claim: &SessionClaim,
        live: &dyn Fn(&SessionClaim) -> bool,
    ) -> Result<Option<SessionClaim>, StoreError> {
        self.write(|tx, backend| {
            // Read and written under the write lock: of two claims at once,
            // the second sees the first.
            if let Some(held) = read_session_claim(tx, lineage, &claim.session).map_err(backend)?
                && live(&held)
            {
                return Ok(Some(held));
            }
            tx.execute(
                "INSERT OR REPLACE INTO session_claims
                   (lineage, session_id, run_id, instance, pid, host, claimed_at, heartbeat)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    lineage,
                    claim.session,
                    claim.run_id,
                    claim.instance,
                    i64::from(claim.pid),
                    claim.host,
                    claim.claimed_at,
                    i64_of(claim.heartbeat)
                ],
            )
            .map_err(backend)?;
            Ok(None)
        })
    }

    fn beat_session_claims(&mut self, lineage: &str, instance: &str) -> Result<u64, StoreError> {
        self.write(|tx, backend| {
            tx.execute(
                "UPDATE session_claims SET heartbeat = ?3 WHERE lineage = ?1 AND instance = ?2",
                params![lineage, instance, i64_of(unix_now())],
            )
            .map(|n| n as u64)
            .map_err(backend)
        })
    }

    fn release_session_claim(
        &mut self,
        lineage: &str,
        id: &str,
        run_id: &str,
    ) -> Result<bool, StoreError> {
        self.write(|tx, backend| {
            tx.execute(
                "DELETE FROM session_claims WHERE lineage = ?1 AND session_id = ?2 AND run_id = ?3",
                params![lineage, id, run_id],
            )
            .map(|n| n > 0)
            .map_err(backend)
        })
    }

    fn release_session_claims(&mut self, lineage: &str, instance: &str) -> Result<u64, StoreError> {
        self.write(|tx, backend| {
            tx.execute(
                "DELETE FROM session_claims WHERE lineage = ?1 AND instance = ?2",
                params![lineage, instance],
            )
            .map(|n| n as u64)
            .map_err(backend)
        })
    }

    fn run(&self, id: &str) -> Result<Option<StoredRun>, StoreError> {
        Ok(self.query_runs("WHERE r.id = ?1", &[&id])?.pop())
    }
}

/// The claim on the turn of session `id` of `lineage`, if any.
fn read_session_claim(
    conn: &Connection,
    lineage: &str,
    id: &str,
) -> rusqlite::Result<Option<SessionClaim>> {
    conn.prepare_cached(
        "SELECT run_id, instance, pid, host, claimed_at, heartbeat FROM session_claims
         WHERE lineage = ?1 AND session_id = ?2",
    )?
    .query_row(params![lineage, id], |r| {
        Ok(SessionClaim {
            session: id.to_owned(),
            run_id: r.get(0)?,
            instance: r.get(1)?,
            pid: u32::try_from(r.get::<_, i64>(2)?).unwrap_or(0),
            host: r.get(3)?,
            claimed_at: r.get(4)?,
            heartbeat: u64_of(r.get(5)?),
        })
    })
    .optional()
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The id of lineage `name` inside a write: its own; else the unclaimed
/// lineage of a migrated store, which it claims (renames); else a new one.
fn claim_lineage(tx: &rusqlite::Transaction<'_>, name: &str) -> rusqlite::Result<i64> {
    // Cached: a server's run writer asks once per commit group.
    if let Some(id) = tx
        .prepare_cached("SELECT id FROM lineages WHERE name = ?1")?
        .query_row(params![name], |r| r.get(0))
        .optional()?
    {
        return Ok(id);
    }
    let claimed = tx.execute(
        "UPDATE lineages SET name = ?1 WHERE name = ?2",
        params![name, UNCLAIMED],
    )?;
    if claimed == 0 {
        tx.execute(
            "INSERT INTO lineages (name, created_at) VALUES (?1, ?2)",
            params![name, now_rfc3339()],
        )?;
    }
    tx.query_row(
        "SELECT id FROM lineages WHERE name = ?1",
        params![name],
        |r| r.get(0),
    )
}

impl SqliteStore {
    fn query_runs(
        &self,
        filter: &str,
        args: &[&dyn rusqlite::ToSql],
    ) -> Result<Vec<StoredRun>, StoreError> {
        let sql = format!(
            "SELECT r.id, l.name, r.sequence, r.agent, r.status, r.started_at, r.finished_at
             FROM runs r JOIN lineages l ON l.id = r.lineage_id {filter} ORDER BY r.rowid"
        );
        let mut stmt = self
            .conn
            .prepare_cached(&sql)
            .map_err(|e| self.backend(e))?;
        let rows = stmt
            .query_map(args, |r| {
                Ok(StoredRun {
                    id: r.get(0)?,
                    lineage: r.get(1)?,
                    generation_id: GenerationId::from_sequence(u64_of(r.get(2)?)).to_string(),
                    agent: r.get(3)?,
                    status: r.get(4)?,
                    started_at: r.get(5)?,
                    finished_at: r.get(6)?,
                })
            })
            .map_err(|e| self.backend(e))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(|e| self.backend(e))
    }
}
