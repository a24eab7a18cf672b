//! Numbered schema migrations, applied on open in one transaction.
//!
//! Why: a store outlives the chassis that wrote it. Every change to the
//! layout is one more entry in [`MIGRATIONS`] (never an edit of an old
//! one); opening a store applies those past its `schema_version` inside
//! one `BEGIN IMMEDIATE` transaction, so a migration killed half-way leaves
//! the store as it was. A new store is an empty one migrated from 0, so the
//! path every old store takes is the one every test takes. A store from a
//! newer schema is refused before anything is read
//! ([`super::StoreError::FutureSchema`]).

use rusqlite::{Transaction, params};

use super::chunks;
use super::{StoredIdentity, StoredImpact, StoredNode};

/// One schema step.
pub struct Migration {
    /// The schema version it produces.
    pub version: i64,
    /// What it does, for a person.
    pub summary: &'static str,
    apply: fn(&Transaction<'_>) -> rusqlite::Result<()>,
}

/// Every migration, in order. Later features append theirs.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        summary: "generations, their nodes, mount counters and runs",
        apply: v1,
    },
    Migration {
        version: 2,
        summary: "lineages (one per composition) and content-addressed chunks",
        apply: v2,
    },
    Migration {
        version: 3,
        summary: "each generation's agents beside it (a publish reads no snapshot)",
        apply: v3,
    },
    Migration {
        version: 4,
        summary: "sessions: a conversation with one agent, turn by turn",
        apply: v4,
    },
    Migration {
        version: 5,
        summary: "holders: the server serving a lineage, with its heartbeat",
        apply: v5,
    },
    Migration {
        version: 6,
        summary: "runs carry the server that ran them, holders their host (a killed server's runs are marked interrupted)",
        apply: v6,
    },
    Migration {
        version: 7,
        summary: "session claims: the run taking a session's turn, with its heartbeat (one turn at a time across processes)",
        apply: v7,
    },
];

/// The newest schema version this build writes.
pub fn latest() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// Apply every migration after `from`, recording the new version.
pub fn migrate(tx: &Transaction<'_>, from: i64) -> rusqlite::Result<i64> {
    let mut version = from;
    for m in MIGRATIONS.iter().filter(|m| m.version > from) {
        (m.apply)(tx)?;
        version = m.version;
    }
    tx.execute(
        "INSERT INTO meta (key, value) VALUES ('schema_version', ?1)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        params![version.to_string()],
    )?;
    Ok(version)
}

/// What every store starts with: its metadata and key.
pub const BASE: &str = "
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE store_key (
    id  INTEGER PRIMARY KEY CHECK (id = 1),
    key BLOB NOT NULL
);
";

fn v1(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(
        "
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
",
    )
}

/// The name of the lineage a version 1 store's generations move into: it
/// did not know which composition published them, so the first composition
/// that publishes into the store continues them (and names the lineage).
pub const UNCLAIMED: &str = "";

/// Version 2: generations belong to a lineage (one per composition); a
/// generation's snapshot, nodes and impact are chunk trees shared between
/// generations ([`chunks`]); mount counters are per lineage.
fn v2(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(
        "
CREATE TABLE lineages (
    id         INTEGER PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
);
CREATE TABLE chunks (
    hash  TEXT PRIMARY KEY,
    level INTEGER NOT NULL,
    body  BLOB NOT NULL
);
CREATE TABLE generations_v2 (
    lineage_id      INTEGER NOT NULL REFERENCES lineages(id),
    sequence        INTEGER NOT NULL,
    state           TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    semantic_digest TEXT NOT NULL,
    digest          TEXT NOT NULL,
    physical_digest TEXT NOT NULL,
    node_count      INTEGER NOT NULL,
    snapshot_root   TEXT NOT NULL,
    nodes_root      TEXT NOT NULL,
    impact_root     TEXT NOT NULL,
    PRIMARY KEY (lineage_id, sequence)
) WITHOUT ROWID;
CREATE TABLE entry_mounts_v2 (
    lineage_id INTEGER NOT NULL REFERENCES lineages(id),
    entry_id   TEXT NOT NULL,
    mount      INTEGER NOT NULL,
    PRIMARY KEY (lineage_id, entry_id)
) WITHOUT ROWID;
CREATE TABLE runs_v2 (
    id          TEXT PRIMARY KEY,
    lineage_id  INTEGER NOT NULL REFERENCES lineages(id),
    sequence    INTEGER NOT NULL,
    agent       TEXT NOT NULL,
    status      TEXT NOT NULL,
    started_at  TEXT NOT NULL,
    finished_at TEXT
);
",
    )?;
    let used: i64 = tx.query_row(
        "SELECT (SELECT count(*) FROM generations) + (SELECT count(*) FROM runs)
              + (SELECT count(*) FROM entry_mounts)",
        [],
        |r| r.get(0),
    )?;
    if used > 0 {
        let since: String = tx
            .query_row("SELECT min(created_at) FROM generations", [], |r| {
                r.get::<_, Option<String>>(0)
            })?
            .unwrap_or_else(super::now_rfc3339);
        tx.execute(
            "INSERT INTO lineages (id, name, created_at) VALUES (1, ?1, ?2)",
            params![UNCLAIMED, since],
        )?;
        move_generations(tx)?;
        tx.execute_batch(
            "INSERT INTO entry_mounts_v2 (lineage_id, entry_id, mount)
                 SELECT 1, entry_id, mount FROM entry_mounts;
             INSERT INTO runs_v2 (id, lineage_id, sequence, agent, status, started_at, finished_at)
                 SELECT r.id, 1, coalesce(g.sequence, 0), r.agent, r.status, r.started_at, r.finished_at
                 FROM runs r LEFT JOIN generations g ON g.id = r.generation_id
                 ORDER BY r.rowid;",
        )?;
    }
    tx.execute_batch(
        "DROP TABLE runs;
         DROP TABLE nodes;
         DROP TABLE entry_mounts;
         DROP TABLE generations;
         ALTER TABLE generations_v2 RENAME TO generations;
         ALTER TABLE entry_mounts_v2 RENAME TO entry_mounts;
         ALTER TABLE runs_v2 RENAME TO runs;",
    )
}

/// Version 7: which run is taking a session's turn (`chassis run
/// --session` or a served run), with its process and heartbeat, so a
/// second turn of the session is refused before its model is called, in
/// whatever process it starts. Keyed by the lineage's name, not its row: a
/// turn is claimed before anything of its run is recorded, and a claim
/// writes no lineage (a first run that fails leaves no store behind).
fn v7(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(
        "
CREATE TABLE session_claims (
    lineage    TEXT NOT NULL,
    session_id TEXT NOT NULL,
    run_id     TEXT NOT NULL,
    instance   TEXT NOT NULL,
    pid        INTEGER NOT NULL,
    host       TEXT NOT NULL,
    claimed_at TEXT NOT NULL,
    heartbeat  INTEGER NOT NULL,
    PRIMARY KEY (lineage, session_id)
);
",
    )
}

/// Version 6: a served run is recorded when it starts, with the instance
/// of its server, so the next server of the lineage marks the runs of one
/// that was killed `interrupted`; a holder's host tells whether its pid can
/// be looked at here.
fn v6(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(
        "
ALTER TABLE runs ADD COLUMN instance TEXT;
ALTER TABLE holders ADD COLUMN host TEXT NOT NULL DEFAULT '';
",
    )
}

/// Version 5: which server holds a lineage (`chassis serve`'s heartbeat),
/// so a `publish` beside a running server is refused.
fn v5(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(
        "
CREATE TABLE holders (
    lineage_id INTEGER PRIMARY KEY REFERENCES lineages(id),
    instance   TEXT NOT NULL,
    pid        INTEGER NOT NULL,
    address    TEXT NOT NULL,
    started_at TEXT NOT NULL,
    heartbeat  INTEGER NOT NULL
);
",
    )
}

/// Version 4: sessions (`chassis serve`'s multi-turn conversations).
fn v4(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(
        "
CREATE TABLE sessions (
    lineage_id INTEGER NOT NULL REFERENCES lineages(id),
    id         TEXT NOT NULL,
    agent      TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    transcript TEXT NOT NULL,
    PRIMARY KEY (lineage_id, id)
);
",
    )
}

/// Version 3: a generation's `metadata.agents` in a column of its own,
/// filled in from each stored snapshot.
fn v3(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch("ALTER TABLE generations ADD COLUMN agents TEXT;")?;
    let rows: Vec<(i64, i64, String)> = tx
        .prepare("SELECT lineage_id, sequence, snapshot_root FROM generations")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (lineage, sequence, root) in rows {
        let text = read_document(tx, &root).map_err(|e| damaged(&format!("{sequence}"), &e))?;
        let snapshot: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| damaged(&format!("{sequence}"), &e))?;
        tx.execute(
            "UPDATE generations SET agents = ?1 WHERE lineage_id = ?2 AND sequence = ?3",
            params![agents_of(&snapshot), lineage, sequence],
        )?;
    }
    Ok(())
}

/// The text of the chunk tree at `root` in the store `conn` (statement
/// prepared once per connection).
pub fn read_document(
    conn: &rusqlite::Connection,
    root: &str,
) -> Result<String, chunks::ReadError<rusqlite::Error>> {
    use rusqlite::OptionalExtension as _;
    let mut stmt = conn
        .prepare_cached("SELECT level, body FROM chunks WHERE hash = ?1")
        .map_err(chunks::ReadError::Fetch)?;
    chunks::read(root, &mut |hash| {
        stmt.query_row(params![hash], |r| {
            // Whatever the row holds is read as it is: a level or body of
            // another type (a body edited into text) then fails the hash
            // check, as a damaged chunk, rather than the read.
            use rusqlite::types::ValueRef;
            let level = match r.get_ref(0)? {
                ValueRef::Integer(n) => u8::try_from(n).unwrap_or(u8::MAX),
                _ => u8::MAX,
            };
            let body = match r.get_ref(1)? {
                ValueRef::Blob(b) | ValueRef::Text(b) => b.to_vec(),
                _ => Vec::new(),
            };
            Ok(chunks::Chunk { level, body })
        })
        .optional()
    })
}

/// Version 1 generations into version 2 rows, their documents as chunks.
fn move_generations(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    let mut gens = tx.prepare(
        "SELECT id, sequence, state, created_at, snapshot, semantic_digest, digest,
                physical_digest, impact
         FROM generations ORDER BY sequence",
    )?;
    let mut nodes = tx.prepare(
        "SELECT entry_id, instance_id, mount, identity FROM nodes
         WHERE generation_id = ?1 ORDER BY entry_id",
    )?;
    let rows = gens.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, i64>(1)?,
            [
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, String>(5)?,
                r.get::<_, String>(6)?,
                r.get::<_, String>(7)?,
                r.get::<_, String>(8)?,
            ],
        ))
    })?;
    for row in rows {
        let (id, sequence, [state, created, snapshot, semantic, digest, physical, impact]) = row?;
        let listed = nodes
            .query_map(params![id], |r| {
                let identity: String = r.get(3)?;
                Ok(StoredNode {
                    entry_id: r.get(0)?,
                    instance_id: r.get(1)?,
                    mount: u64::try_from(r.get::<_, i64>(2)?).unwrap_or(0),
                    identity: serde_json::from_str::<StoredIdentity>(&identity)
                        .map_err(|e| damaged(&id, &e))?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let snapshot: serde_json::Value =
            serde_json::from_str(&snapshot).map_err(|e| damaged(&id, &e))?;
        let impact: Vec<StoredImpact> =
            serde_json::from_str(&impact).map_err(|e| damaged(&id, &e))?;
        let snapshot = one_value_per_line(&snapshot);
        let roots = Documents {
            snapshot: &snapshot,
            nodes: &listed,
            impact: &impact,
        }
        .write(tx)?;
        tx.execute(
            "INSERT INTO generations_v2
               (lineage_id, sequence, state, created_at, semantic_digest, digest, physical_digest,
                node_count, snapshot_root, nodes_root, impact_root)
             VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                sequence,
                state,
                created,
                semantic,
                digest,
                physical,
                i64::try_from(listed.len()).unwrap_or(i64::MAX),
                roots[0],
                roots[1],
                roots[2],
            ],
        )?;
    }
    Ok(())
}

/// The snapshot's `metadata.agents` as JSON, kept beside a generation so a
/// publish reads what it compares agents with without its snapshot.
pub fn agents_of(snapshot: &serde_json::Value) -> Option<String> {
    snapshot
        .pointer("/snapshot/metadata/agents")
        .map(|a| serde_json::to_string(a).unwrap_or_default())
}

fn damaged(id: &str, e: &dyn std::fmt::Display) -> rusqlite::Error {
    rusqlite::Error::ToSqlConversionFailure(
        format!("generation {id} cannot be migrated: {e}").into(),
    )
}

/// A generation's three documents, as they are written to chunks.
pub struct Documents<'a> {
    /// The snapshot envelope, one value per line ([`one_value_per_line`]).
    pub snapshot: &'a str,
    /// Its nodes, by entry id.
    pub nodes: &'a [StoredNode],
    /// What its publish did.
    pub impact: &'a [StoredImpact],
}

impl Documents<'_> {
    /// Write the chunks (once each) and return the roots: snapshot, nodes,
    /// impact. The snapshot is written one value per line (so an edit
    /// touches the lines of what changed); nodes and impact one per line.
    pub fn write(&self, tx: &Transaction<'_>) -> rusqlite::Result<[String; 3]> {
        self.chunked().write(tx)
    }

    /// The documents cut and hashed — the costly part, which needs no
    /// store — ready for [`Chunked::write`].
    pub fn chunked(&self) -> Chunked {
        let impact: Vec<&StoredImpact> = self
            .impact
            .iter()
            .filter(|i| !implied(i, self.nodes))
            .collect();
        // The snapshot on one core, the nodes and impact on the other (at
        // 100,000 entries each is tens of megabytes to write and hash);
        // their chunks are then listed in that order, each once.
        let (snapshot, rest) = crate::engine::parallel::join(
            self.snapshot.len() / 256,
            || cut_document(self.snapshot),
            || {
                [
                    cut_document(&json_lines(self.nodes)),
                    cut_document(&json_lines(&impact)),
                ]
            },
        );
        let mut seen = std::collections::HashSet::new();
        let mut chunks = Vec::new();
        let [nodes, impact] = rest;
        let roots = [snapshot, nodes, impact].map(|(root, cut)| {
            for (hash, chunk) in cut {
                if seen.insert(hash.clone()) {
                    chunks.push((hash, chunk));
                }
            }
            root
        });
        Chunked { roots, chunks }
    }
}

/// `text` cut into chunks: its root and every chunk, once each, in the
/// order they were cut.
fn cut_document(text: &str) -> (String, Vec<(String, chunks::Chunk)>) {
    let mut seen = std::collections::HashSet::new();
    let mut cut = Vec::new();
    let mut put = |hash: &str, c: &chunks::Chunk| -> Result<(), std::convert::Infallible> {
        if seen.insert(hash.to_owned()) {
            cut.push((hash.to_owned(), c.clone()));
        }
        Ok(())
    };
    let root = match chunks::write(text, &mut put) {
        Ok(root) => root,
        Err(never) => match never {},
    };
    (root, cut)
}

/// A publication's documents cut into chunks, before its transaction: a
/// server's publication then holds the store only to insert them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chunked {
    /// The roots: snapshot, nodes, impact.
    pub roots: [String; 3],
    /// Every chunk, once, with its hash.
    pub chunks: Vec<(String, chunks::Chunk)>,
}

impl Chunked {
    /// Insert the chunks the store does not hold yet; the roots.
    pub fn write(&self, tx: &Transaction<'_>) -> rusqlite::Result<[String; 3]> {
        let mut insert = tx.prepare_cached(
            "INSERT INTO chunks (hash, level, body) VALUES (?1, ?2, ?3)
             ON CONFLICT (hash) DO NOTHING",
        )?;
        for (hash, c) in &self.chunks {
            insert.execute(params![hash, i64::from(c.level), c.body])?;
        }
        Ok(self.roots.clone())
    }
}

/// Whether `impact` says no more than its node does — reused as it was,
/// for no reason — so it is left out of the stored impact (most of a
/// one-entry publish) and [`with_implied`] puts it back.
fn implied(impact: &StoredImpact, nodes: &[StoredNode]) -> bool {
    impact.decision == "reused"
        && impact.reasons.is_empty()
        && impact.old_instance_id == impact.new_instance_id
        && nodes
            .binary_search_by(|n| n.entry_id.cmp(&impact.entry_id))
            .is_ok_and(|i| Some(&nodes[i].instance_id) == impact.new_instance_id.as_ref())
}

/// The impact as published: the stored rows and, for every node they do
/// not name, its implied `reused` row; by entry id.
pub fn with_implied(stored: Vec<StoredImpact>, nodes: &[StoredNode]) -> Vec<StoredImpact> {
    let named: std::collections::BTreeSet<&str> =
        stored.iter().map(|i| i.entry_id.as_str()).collect();
    let implied: Vec<StoredImpact> = nodes
        .iter()
        .filter(|n| !named.contains(n.entry_id.as_str()))
        .map(|n| StoredImpact {
            entry_id: n.entry_id.clone(),
            decision: "reused".to_owned(),
            reasons: Vec::new(),
            old_instance_id: Some(n.instance_id.clone()),
            new_instance_id: Some(n.instance_id.clone()),
        })
        .collect();
    let mut all = stored;
    all.extend(implied);
    all.sort_by(|a, b| a.entry_id.cmp(&b.entry_id));
    all
}

/// `value` as JSON with every member and element on a line of its own and
/// no indentation: an edit touches the lines of what changed (so the chunks
/// around it), and no byte is spent on indentation.
pub fn one_value_per_line(value: &impl serde::Serialize) -> String {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    if value.serialize(&mut ser).is_err() {
        return "null".to_owned();
    }
    String::from_utf8(out).unwrap_or_default()
}

/// One compact JSON value per line.
pub fn json_lines<T: serde::Serialize>(items: &[T]) -> String {
    let mut out = String::new();
    for item in items {
        out.push_str(&serde_json::to_string(item).unwrap_or_else(|_| "null".into()));
        out.push('\n');
    }
    out
}
