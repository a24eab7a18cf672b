//! The embedded store: one SQLite file (bundled SQLite, rollback journal).
//!
//! A publish is one `BEGIN IMMEDIATE` transaction under a busy timeout: the
//! write lock is taken first, the sequence number is allocated inside it,
//! and a process killed anywhere before `COMMIT` leaves the previous state
//! (SQLite rolls the hot journal back on the next open). Reading commands
//! open the file read-only.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};

use super::failpoint::failpoint;
use super::key::StoreKey;
use super::{
    GenerationSummary, NewRun, OpenMode, PublishRecord, SCHEMA_VERSION, Store, StoreError,
    StoredGeneration, StoredIdentity, StoredImpact, StoredNode, StoredRun, fingerprint_fn,
    now_rfc3339,
};
use crate::engine::identity::GenerationId;
use crate::runtime::harness::ConfigFingerprint;

/// How long a publish waits for another writer.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

const SCHEMA: &str = "
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE store_key (
    id  INTEGER PRIMARY KEY CHECK (id = 1),
    key BLOB NOT NULL
);
CREATE TABLE generations (
    id              TEXT PRIMARY KEY,
    sequence        INTEGER NOT NULL UNIQUE,
    state           TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    snapshot        TEXT NOT NULL,
    semantic_digest TEXT NOT NULL,
    digest          TEXT NOT NULL,
    physical_digest TEXT NOT NULL,
    impact          TEXT NOT NULL
);
CREATE TABLE nodes (
    generation_id TEXT NOT NULL REFERENCES generations(id),
    entry_id      TEXT NOT NULL,
    instance_id   TEXT NOT NULL,
    mount         INTEGER NOT NULL,
    identity      TEXT NOT NULL,
    PRIMARY KEY (generation_id, entry_id)
);
CREATE TABLE entry_mounts (
    entry_id TEXT PRIMARY KEY,
    mount    INTEGER NOT NULL
);
CREATE TABLE runs (
    id            TEXT PRIMARY KEY,
    generation_id TEXT NOT NULL REFERENCES generations(id),
    agent         TEXT NOT NULL,
    status        TEXT NOT NULL,
    started_at    TEXT NOT NULL,
    finished_at   TEXT
);
";

/// The SQLite store.
pub struct SqliteStore {
    conn: Connection,
    path: PathBuf,
    key: StoreKey,
    created: bool,
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
    /// Open (or, with [`OpenMode::Create`], create) the store at `path`.
    pub fn open(path: &Path, mode: OpenMode) -> Result<Self, StoreError> {
        let shown = path.display().to_string();
        let backend = |e: &dyn std::fmt::Display| StoreError::Backend {
            path: shown.clone(),
            message: e.to_string(),
        };
        let exists = path.is_file();
        if mode == OpenMode::ReadOnly && !exists {
            return Err(StoreError::Missing { path: shown });
        }
        if mode == OpenMode::Create
            && !exists
            && let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        {
            std::fs::create_dir_all(dir).map_err(|e| backend(&e))?;
        }
        let conn = match mode {
            OpenMode::Create => Connection::open(path).map_err(|e| backend(&e))?,
            OpenMode::ReadOnly => open_read_only(path).map_err(|e| backend(&e))?,
        };
        conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| backend(&e))?;
        let mut store = Self {
            conn,
            path: path.to_path_buf(),
            key: StoreKey::from_bytes(&[0; 32]).expect("32 bytes"),
            created: false,
        };
        if mode == OpenMode::Create {
            store.created = store.initialize()?;
        }
        store.check_schema()?;
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

    /// Create the schema and key in an empty file; `true` when it did.
    fn initialize(&mut self) -> Result<bool, StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| StoreError::Backend {
                path: self.path.display().to_string(),
                message: e.to_string(),
            })?;
        let tables: i64 = tx
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
            .map_err(|e| not_a_store_err(&self.path, e))?;
        if tables > 0 {
            return Ok(false);
        }
        let key = StoreKey::generate().map_err(|e| StoreError::Backend {
            path: self.path.display().to_string(),
            message: format!("cannot read /dev/urandom for the store key: {e}"),
        })?;
        let result = (|| -> rusqlite::Result<()> {
            tx.execute_batch(SCHEMA)?;
            tx.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?1)",
                params![SCHEMA_VERSION.to_string()],
            )?;
            tx.execute(
                "INSERT INTO meta (key, value) VALUES ('created_by', ?1)",
                params![format!("chassis {}", env!("CARGO_PKG_VERSION"))],
            )?;
            tx.execute(
                "INSERT INTO store_key (id, key) VALUES (1, ?1)",
                params![key.bytes().as_slice()],
            )?;
            Ok(())
        })();
        result.map_err(|e| StoreError::Backend {
            path: self.path.display().to_string(),
            message: e.to_string(),
        })?;
        tx.commit().map_err(|e| StoreError::Backend {
            path: self.path.display().to_string(),
            message: e.to_string(),
        })?;
        Ok(true)
    }

    fn check_schema(&self) -> Result<(), StoreError> {
        let version: Option<String> = self
            .conn
            .query_row(
                "SELECT value FROM meta WHERE key = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| not_a_store_err(&self.path, e))?;
        let Some(version) = version else {
            return Err(self.not_a_store("it has no schema_version"));
        };
        let found: i64 = version.parse().map_err(|_| {
            self.not_a_store(format!("its schema_version `{version}` is not a number"))
        })?;
        if found > SCHEMA_VERSION {
            return Err(StoreError::FutureSchema {
                path: self.path.display().to_string(),
                found,
                supported: SCHEMA_VERSION,
            });
        }
        if found < 1 {
            return Err(self.not_a_store(format!("schema_version {found}")));
        }
        Ok(())
    }

    fn load_key(&self) -> Result<StoreKey, StoreError> {
        let bytes: Vec<u8> = self
            .conn
            .query_row("SELECT key FROM store_key WHERE id = 1", [], |r| r.get(0))
            .map_err(|e| not_a_store_err(&self.path, e))?;
        StoreKey::from_bytes(&bytes).ok_or_else(|| self.not_a_store("its key is not 32 bytes"))
    }

    fn summaries(
        &self,
        filter: &str,
        arg: Option<&str>,
    ) -> Result<Vec<GenerationSummary>, StoreError> {
        let sql = format!(
            "SELECT g.id, g.sequence, g.state, g.created_at, g.semantic_digest, g.digest,
                    (SELECT count(*) FROM nodes n WHERE n.generation_id = g.id)
             FROM generations g {filter} ORDER BY g.sequence"
        );
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.backend(e))?;
        let map = |r: &rusqlite::Row<'_>| -> rusqlite::Result<GenerationSummary> {
            Ok(GenerationSummary {
                id: r.get(0)?,
                sequence: u64_of(r.get(1)?),
                state: r.get(2)?,
                created_at: r.get(3)?,
                semantic_digest: r.get(4)?,
                digest: r.get(5)?,
                nodes: usize::try_from(r.get::<_, i64>(6)?).unwrap_or(0),
            })
        };
        let rows = match arg {
            Some(a) => stmt.query_map(params![a], map),
            None => stmt.query_map([], map),
        }
        .map_err(|e| self.backend(e))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(|e| self.backend(e))
    }

    fn full(&self, summary: GenerationSummary) -> Result<StoredGeneration, StoreError> {
        let (snapshot, physical, impact): (String, String, String) = self
            .conn
            .query_row(
                "SELECT snapshot, physical_digest, impact FROM generations WHERE id = ?1",
                params![summary.id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .map_err(|e| self.backend(e))?;
        let mut stmt = self
            .conn
            .prepare(
                "SELECT entry_id, instance_id, mount, identity FROM nodes
                 WHERE generation_id = ?1 ORDER BY entry_id",
            )
            .map_err(|e| self.backend(e))?;
        let rows = stmt
            .query_map(params![summary.id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, String>(3)?,
                ))
            })
            .map_err(|e| self.backend(e))?;
        let mut nodes = Vec::new();
        for row in rows {
            let (entry_id, instance_id, mount, identity) = row.map_err(|e| self.backend(e))?;
            let identity: StoredIdentity = serde_json::from_str(&identity)
                .map_err(|e| self.not_a_store(format!("node `{entry_id}`: {e}")))?;
            nodes.push(StoredNode {
                entry_id,
                instance_id,
                mount: u64_of(mount),
                identity,
            });
        }
        let snapshot = serde_json::from_str(&snapshot)
            .map_err(|e| self.not_a_store(format!("snapshot of {}: {e}", summary.id)))?;
        let impact: Vec<StoredImpact> = serde_json::from_str(&impact)
            .map_err(|e| self.not_a_store(format!("impact of {}: {e}", summary.id)))?;
        Ok(StoredGeneration {
            summary,
            physical_digest: physical,
            snapshot,
            nodes,
            impact,
        })
    }
}

fn not_a_store_err(path: &Path, e: impl std::fmt::Display) -> StoreError {
    StoreError::NotAStore {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

/// Open read-only. A store left with a hot journal (a publish was killed)
/// cannot be rolled back read-only, so it is recovered once read-write —
/// which restores the last committed state and changes nothing else.
fn open_read_only(path: &Path) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)?;
    match conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
        r.get::<_, i64>(0)
    }) {
        Ok(_) => Ok(conn),
        Err(e) if is_read_only_rollback(&e) => {
            drop(conn);
            let rw = Connection::open_with_flags(
                path,
                OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )?;
            rw.busy_timeout(BUSY_TIMEOUT)?;
            rw.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
                r.get::<_, i64>(0)
            })?;
            drop(rw);
            Connection::open_with_flags(path, flags)
        }
        Err(e) => Err(e),
    }
}

fn is_read_only_rollback(e: &rusqlite::Error) -> bool {
    matches!(
        e,
        rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::ReadOnly
    )
}

impl Store for SqliteStore {
    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn created(&self) -> bool {
        self.created
    }

    fn current(&self) -> Result<Option<StoredGeneration>, StoreError> {
        let last = self
            .summaries(
                "WHERE g.sequence = (SELECT max(sequence) FROM generations)",
                None,
            )?
            .pop();
        last.map(|s| self.full(s)).transpose()
    }

    fn generation(&self, id: &GenerationId) -> Result<Option<StoredGeneration>, StoreError> {
        let found = self
            .summaries("WHERE g.id = ?1", Some(&id.to_string()))?
            .pop();
        found.map(|s| self.full(s)).transpose()
    }

    fn list(&self) -> Result<Vec<GenerationSummary>, StoreError> {
        self.summaries("", None)
    }

    fn entry_mounts(&self) -> Result<BTreeMap<String, u64>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT entry_id, mount FROM entry_mounts ORDER BY entry_id")
            .map_err(|e| self.backend(e))?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, u64_of(r.get(1)?))))
            .map_err(|e| self.backend(e))?;
        rows.collect::<rusqlite::Result<BTreeMap<_, _>>>()
            .map_err(|e| self.backend(e))
    }

    fn config_fingerprint(&self) -> ConfigFingerprint {
        fingerprint_fn(self.key.clone())
    }

    fn publish(&mut self, record: PublishRecord) -> Result<GenerationId, StoreError> {
        let path = self.path.display().to_string();
        let backend = |e: rusqlite::Error| StoreError::Backend {
            path: path.clone(),
            message: e.to_string(),
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(backend)?;
        failpoint("publish.after_begin");
        let current: Option<(String, i64)> = tx
            .query_row(
                "SELECT id, sequence FROM generations ORDER BY sequence DESC LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(backend)?;
        let found = current.as_ref().map(|(id, _)| id.clone());
        let expected = record.expected_current.as_ref().map(ToString::to_string);
        let sequence = current.as_ref().map_or(0, |(_, s)| u64_of(*s)) + 1;
        if found != expected || sequence != record.generation_id.sequence() {
            return Err(StoreError::Conflict {
                expected: expected.unwrap_or_else(|| "none".into()),
                found: found.unwrap_or_else(|| "none".into()),
            });
        }
        let id = GenerationId::from_sequence(sequence);
        tx.execute(
            "UPDATE generations SET state = 'superseded' WHERE state = 'active'",
            [],
        )
        .map_err(backend)?;
        tx.execute(
            "INSERT INTO generations
               (id, sequence, state, created_at, snapshot, semantic_digest, digest, physical_digest, impact)
             VALUES (?1, ?2, 'active', ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                id.to_string(),
                i64_of(sequence),
                now_rfc3339(),
                json(&record.snapshot),
                record.digests.semantic_digest,
                record.digests.digest,
                record.digests.physical_digest,
                json(&record.impact),
            ],
        )
        .map_err(backend)?;
        failpoint("publish.after_generation_row");
        for n in &record.nodes {
            tx.execute(
                "INSERT INTO nodes (generation_id, entry_id, instance_id, mount, identity)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    id.to_string(),
                    n.entry_id,
                    n.instance_id,
                    i64_of(n.mount),
                    json(&n.identity),
                ],
            )
            .map_err(backend)?;
        }
        for (entry, mount) in &record.mounts {
            tx.execute(
                "INSERT INTO entry_mounts (entry_id, mount) VALUES (?1, ?2)
                 ON CONFLICT (entry_id) DO UPDATE SET mount = max(mount, excluded.mount)",
                params![entry, i64_of(*mount)],
            )
            .map_err(backend)?;
        }
        failpoint("publish.after_nodes");
        failpoint("publish.before_commit");
        tx.commit().map_err(backend)?;
        Ok(id)
    }

    fn record_run(&mut self, run: NewRun) -> Result<String, StoreError> {
        let path = self.path.display().to_string();
        let backend = |e: rusqlite::Error| StoreError::Backend {
            path: path.clone(),
            message: e.to_string(),
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(backend)?;
        let id = run.id;
        tx.execute(
            "INSERT INTO runs (id, generation_id, agent, status, started_at, finished_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                id,
                run.generation_id,
                run.agent,
                run.status,
                run.started_at,
                run.finished_at
            ],
        )
        .map_err(backend)?;
        tx.commit().map_err(backend)?;
        Ok(id)
    }

    fn runs(&self) -> Result<Vec<StoredRun>, StoreError> {
        self.query_runs("", None)
    }

    fn run(&self, id: &str) -> Result<Option<StoredRun>, StoreError> {
        Ok(self.query_runs("WHERE id = ?1", Some(id))?.pop())
    }
}

impl SqliteStore {
    fn query_runs(&self, filter: &str, arg: Option<&str>) -> Result<Vec<StoredRun>, StoreError> {
        let sql = format!(
            "SELECT id, generation_id, agent, status, started_at, finished_at FROM runs {filter} ORDER BY rowid"
        );
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.backend(e))?;
        let map = |r: &rusqlite::Row<'_>| -> rusqlite::Result<StoredRun> {
            Ok(StoredRun {
                id: r.get(0)?,
                generation_id: r.get(1)?,
                agent: r.get(2)?,
                status: r.get(3)?,
                started_at: r.get(4)?,
                finished_at: r.get(5)?,
            })
        };
        let rows = match arg {
            Some(a) => stmt.query_map(params![a], map),
            None => stmt.query_map([], map),
        }
        .map_err(|e| self.backend(e))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(|e| self.backend(e))
    }
}

fn json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}
