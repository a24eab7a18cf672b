//! Store unit tests: creation, publication, schema versioning, races.

use super::*;
use crate::engine::snapshot::Digests;

fn record(seq: u64, expected: Option<u64>) -> PublishRecord {
    PublishRecord {
        generation_id: GenerationId::from_sequence(seq),
        expected_current: expected.map(GenerationId::from_sequence),
        // Its digests are the record's (a store checks they are).
        snapshot: format!(
            "{{\n\"digests\": {{\n\"digest\": \"d{seq}\",\n\"physical_digest\": \"p\",\n\"semantic_digest\": \"s\"\n}},\n\"format_version\": 1\n}}"
        ),
        agents: None,
        digests: Digests {
            digest: format!("d{seq}"),
            semantic_digest: "s".into(),
            physical_digest: "p".into(),
        },
        nodes: vec![StoredNode {
            entry_id: "app".into(),
            instance_id: "plugin_x".into(),
            mount: seq,
            identity: StoredIdentity {
                implementation: "i".into(),
                contracts: "c".into(),
                config: "f".into(),
                scope: "/".into(),
                dependencies: "d".into(),
                config_leaves: [("[\"timeout\"]".to_owned(), "h".to_owned())].into(),
            },
        }],
        impact: vec![],
        mounts: [("app".to_owned(), seq)].into(),
        chunked: None,
    }
}

#[test]
fn chunks_cut_before_the_transaction_store_what_cutting_inside_it_does() {
    let dir = tempfile::tempdir().unwrap();
    let mut inside = open(&dir.path().join("a.db"), OpenMode::Create).unwrap();
    let mut before = open(&dir.path().join("b.db"), OpenMode::Create).unwrap();
    inside.publish("c.toml", record(1, None)).unwrap();
    let mut chunked = record(1, None);
    chunked.chunk();
    assert!(
        chunked
            .chunked
            .as_ref()
            .is_some_and(|c| !c.chunks.is_empty())
    );
    before.publish("c.toml", chunked).unwrap();
    let id = GenerationId::from_sequence(1);
    let (a, b) = (
        inside.generation("c.toml", &id).unwrap().unwrap(),
        before.generation("c.toml", &id).unwrap().unwrap(),
    );
    assert_eq!((a.snapshot, a.nodes), (b.snapshot, b.nodes));
}

#[test]
fn a_store_is_created_published_to_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".chassis/state.db");
    assert!(matches!(
        open(&path, OpenMode::ReadOnly),
        Err(StoreError::Missing { .. })
    ));
    let mut store = open(&path, OpenMode::Create).unwrap();
    assert!(store.created());
    assert!(store.current("c.toml").unwrap().is_none());
    assert_eq!(
        store
            .publish("c.toml", record(1, None))
            .unwrap()
            .to_string(),
        "gen_0001"
    );
    assert_eq!(
        store
            .publish("c.toml", record(2, Some(1)))
            .unwrap()
            .to_string(),
        "gen_0002"
    );
    drop(store);
    let store = open(&path, OpenMode::ReadOnly).unwrap();
    let list = store.list(None).unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0].state, "superseded");
    assert_eq!(list[1].state, "active");
    let current = store.current("c.toml").unwrap().unwrap();
    assert_eq!(current.summary.id, "gen_0002");
    assert_eq!(current.nodes[0].mount, 2);
    assert_eq!(store.entry_mounts("c.toml").unwrap()["app"], 2);
    assert_eq!(store.integrity_check().unwrap(), "ok");
    let reopened = open(&path, OpenMode::Create).unwrap();
    assert!(!reopened.created());
    let fp = store.config_fingerprint();
    assert_eq!(
        fp("h"),
        reopened.config_fingerprint()("h"),
        "one key per store"
    );
}

#[test]
fn a_publish_computed_against_an_older_current_is_a_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(&dir.path().join("s.db"), OpenMode::Create).unwrap();
    store.publish("c.toml", record(1, None)).unwrap();
    let err = store.publish("c.toml", record(1, None)).unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err}");
    assert_eq!(store.list(None).unwrap().len(), 1);
}

#[test]
fn a_writer_commits_to_a_log_that_readers_see_and_an_old_journal_store_is_moved_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let mut writer = sqlite::SqliteStore::open(&path, OpenMode::Create).unwrap();
    assert_eq!(writer.pragma("journal_mode"), "wal");
    assert_eq!(writer.pragma("synchronous"), "1", "NORMAL");
    writer.publish("c.toml", record(1, None)).unwrap();
    // The commit is in the log, not yet in the file: a reader sees it.
    let mut log = path.clone().into_os_string();
    log.push("-wal");
    assert!(std::fs::metadata(&log).is_ok_and(|m| m.len() > 0));
    for mode in [OpenMode::ReadOnly, OpenMode::Peek] {
        let reader = sqlite::SqliteStore::open(&path, mode).unwrap();
        let id = GenerationId::from_sequence(1);
        assert!(reader.generation("c.toml", &id).unwrap().is_some());
    }
    drop(writer);
    assert!(
        std::fs::metadata(&log).is_err(),
        "the last writer checkpoints"
    );
    // A reader writes nothing, and leaves no side file behind.
    for mode in [OpenMode::ReadOnly, OpenMode::Peek] {
        let mut reader = sqlite::SqliteStore::open(&path, mode).unwrap();
        assert!(reader.publish("c.toml", record(2, Some(1))).is_err());
        assert_eq!(reader.list(None).unwrap().len(), 1);
        drop(reader);
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["s.db"], "{mode:?}");
    }
    // A store written in the rollback journal (chassis before the log).
    let conn = rusqlite::Connection::open(&path).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode = DELETE", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "delete");
    drop(conn);
    let reader = sqlite::SqliteStore::open(&path, OpenMode::ReadOnly).unwrap();
    assert_eq!(
        reader.pragma("journal_mode"),
        "delete",
        "a reader changes nothing"
    );
    drop(reader);
    let writer = sqlite::SqliteStore::open(&path, OpenMode::Create).unwrap();
    assert_eq!(writer.pragma("journal_mode"), "wal");
    assert_eq!(writer.list(None).unwrap().len(), 1);
}

#[test]
fn a_future_schema_is_refused_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    drop(open(&path, OpenMode::Create).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "UPDATE meta SET value = '99' WHERE key = 'schema_version'",
        [],
    )
    .unwrap();
    drop(conn);
    let err = open(&path, OpenMode::ReadOnly).unwrap_err();
    assert_eq!(err.code(), "store::future-schema");
    assert!(err.to_string().contains("schema version 99"), "{err}");
}

#[test]
fn a_file_that_is_not_a_store_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    std::fs::write(&path, "not sqlite at all, just text that is long enough").unwrap();
    for mode in [OpenMode::ReadOnly, OpenMode::Peek, OpenMode::Create] {
        let err = open(&path, mode).unwrap_err();
        assert!(matches!(err, StoreError::NotAStore { .. }), "{err}");
    }
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "not sqlite at all, just text that is long enough"
    );
}

/// A run of `agent` on gen_0001 that succeeded, as `chassis run` records it.
fn finished_run(id: &str, agent: &str) -> NewRun {
    NewRun {
        id: id.into(),
        generation_id: "gen_0001".into(),
        agent: agent.into(),
        status: "succeeded".into(),
        started_at: now_rfc3339(),
        finished_at: Some(now_rfc3339()),
        instance: None,
    }
}

#[test]
fn runs_are_recorded_and_listed() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(&dir.path().join("s.db"), OpenMode::Create).unwrap();
    store.publish("c.toml", record(1, None)).unwrap();
    let id = store
        .record_run("c.toml", finished_run("run_0123456789ab", "triage"))
        .unwrap();
    assert_eq!(id, "run_0123456789ab");
    assert_eq!(store.runs().unwrap().len(), 1);
    assert_eq!(store.run(&id).unwrap().unwrap().agent, "triage");
    assert!(store.run("run_0001").unwrap().is_none());
}

#[test]
fn a_servers_store_copies_its_log_into_the_file_beside_the_writes_and_stops_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let mut store = open(&path, OpenMode::Create).unwrap();
    store.keep_up_beside_writes();
    assert_eq!(
        store.pragma("wal_autocheckpoint"),
        "0",
        "the writer never copies"
    );
    store.publish("c.toml", record(1, None)).unwrap();
    let size = || std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let before = size();
    // A few hundred runs: tens of pages, far below the 1,000 at which a
    // writer would copy them itself.
    let runs = (0..400)
        .map(|i| finished_run(&format!("run_{i:012x}"), "triage"))
        .collect();
    store.record_runs("c.toml", runs).unwrap();
    let waited = std::time::Instant::now();
    while size() <= before && waited.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        size() > before,
        "the checkpointer copied the runs into the file"
    );
    assert_eq!(store.runs().unwrap().len(), 400);
    // Dropped: the checkpointer lets go too, so the last connection
    // closing removes the log.
    drop(store);
    let mut log = path.clone().into_os_string();
    log.push("-wal");
    let waited = std::time::Instant::now();
    while std::fs::metadata(&log).is_ok() && waited.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        std::fs::metadata(&log).is_err(),
        "no connection is left open"
    );
}

/// Each run's (id, status), in the order they were recorded.
fn statuses(runs: Vec<StoredRun>) -> Vec<(String, String)> {
    runs.into_iter().map(|r| (r.id, r.status)).collect()
}

#[test]
fn a_group_of_runs_commits_together_and_never_writes_over_a_finished_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(&dir.path().join("s.db"), OpenMode::Create).unwrap();
    store.publish("c.toml", record(1, None)).unwrap();
    let run = |id: &str| finished_run(id, "a");
    let ids = store
        .record_runs(
            "c.toml",
            vec![run("run_000000000001"), run("run_000000000002")],
        )
        .unwrap();
    assert_eq!(ids, ["run_000000000001", "run_000000000002"]);
    // A group with a run recorded finished already: that record is left as
    // it is, the rest of the group is committed.
    let mut again = run("run_000000000001");
    again.status = "failed".into();
    store
        .record_runs("c.toml", vec![run("run_000000000003"), again])
        .unwrap();
    let listed = statuses(store.runs().unwrap());
    assert_eq!(
        listed,
        [
            ("run_000000000001".to_owned(), "succeeded".to_owned()),
            ("run_000000000002".to_owned(), "succeeded".to_owned()),
            ("run_000000000003".to_owned(), "succeeded".to_owned()),
        ]
    );
}

#[test]
fn a_session_is_saved_replaced_read_and_deleted_within_its_lineage() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(&dir.path().join("s.db"), OpenMode::Create).unwrap();
    let mut session = crate::store::StoredSession {
        id: "chat-1".into(),
        agent: "a".into(),
        created_at: now_rfc3339(),
        updated_at: now_rfc3339(),
        transcript: serde_json::json!({ "turns": [1] }),
    };
    assert!(store.save_session("c.toml", &session, 0).unwrap());
    session.transcript = serde_json::json!({ "turns": [1, 2] });
    assert!(store.save_session("c.toml", &session, 1).unwrap());
    // A turn that began from one turn, saved after another turn was: refused.
    let mut late = session.clone();
    late.transcript = serde_json::json!({ "turns": [1, "late"] });
    assert!(!store.save_session("c.toml", &late, 1).unwrap());
    assert!(!store.save_session("c.toml", &late, 0).unwrap());
    assert_eq!(store.session("c.toml", "chat-1").unwrap(), Some(session));
    assert_eq!(store.session("other.toml", "chat-1").unwrap(), None);
    assert!(!store.delete_session("other.toml", "chat-1").unwrap());
    assert!(store.delete_session("c.toml", "chat-1").unwrap());
    assert_eq!(store.session("c.toml", "chat-1").unwrap(), None);
}

#[test]
fn a_running_record_is_finished_once_or_interrupted_by_another_server() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(&dir.path().join("s.db"), OpenMode::Create).unwrap();
    store.publish("c.toml", record(1, None)).unwrap();
    let run = |id: &str, status: &str, instance: &str| NewRun {
        id: id.into(),
        generation_id: "gen_0001".into(),
        agent: "a".into(),
        status: status.into(),
        started_at: now_rfc3339(),
        finished_at: (status != "running").then(now_rfc3339),
        instance: Some(instance.into()),
    };
    store
        .record_runs(
            "c.toml",
            vec![
                run("run_00000000000a", "running", "srv_a"),
                run("run_00000000000b", "running", "srv_a"),
                run("run_00000000000c", "running", "srv_b"),
            ],
        )
        .unwrap();
    // The run's end finishes its record (in the same group or a later one).
    store
        .record_runs(
            "c.toml",
            vec![run("run_00000000000a", "succeeded", "srv_a")],
        )
        .unwrap();
    // A finished run is not written over.
    store
        .record_runs("c.toml", vec![run("run_00000000000a", "failed", "srv_a")])
        .unwrap();
    // Server b starts: a's unfinished run was interrupted, its own is not.
    assert_eq!(
        store
            .interrupt_runs("c.toml", "srv_b", "2026-01-01T00:00:00Z")
            .unwrap(),
        1
    );
    let status = statuses(store.runs().unwrap());
    assert_eq!(
        status,
        [
            ("run_00000000000a".to_owned(), "succeeded".to_owned()),
            ("run_00000000000b".to_owned(), "interrupted".to_owned()),
            ("run_00000000000c".to_owned(), "running".to_owned()),
        ]
    );
    assert_eq!(store.interrupt_runs("other.toml", "srv_b", "x").unwrap(), 0);
}

#[test]
fn a_session_turn_is_claimed_once_until_let_go_or_no_longer_live() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(&dir.path().join("s.db"), OpenMode::Create).unwrap();
    let claim = |run: &str, instance: &str| SessionClaim {
        session: "chat-1".into(),
        run_id: run.into(),
        instance: instance.into(),
        pid: 7,
        host: "h".into(),
        claimed_at: "2026-01-01T00:00:00Z".into(),
        heartbeat: 1,
    };
    let live = |_: &SessionClaim| true;
    let gone = |_: &SessionClaim| false;
    assert_eq!(
        store
            .claim_session("c.toml", &claim("run_a", "run_a"), &live)
            .unwrap(),
        None
    );
    // A claim writes no lineage: a first run refused later leaves no store.
    assert!(store.lineages().unwrap().is_empty());
    // Held: a second claim is refused with the one holding it, and nothing
    // is written; another lineage's session of the same id is its own.
    assert_eq!(
        store
            .claim_session("c.toml", &claim("run_b", "srv_b"), &live)
            .unwrap(),
        Some(claim("run_a", "run_a"))
    );
    assert_eq!(
        store
            .claim_session("other.toml", &claim("run_c", "run_c"), &live)
            .unwrap(),
        None
    );
    // Its heartbeat is beaten by its instance alone.
    assert_eq!(store.beat_session_claims("c.toml", "srv_b").unwrap(), 0);
    assert_eq!(store.beat_session_claims("c.toml", "run_a").unwrap(), 1);
    let beaten = store.session_claim("c.toml", "chat-1").unwrap().unwrap();
    assert!(beaten.heartbeat > 1, "{beaten:?}");
    // Only the run holding it lets it go.
    assert!(
        !store
            .release_session_claim("c.toml", "chat-1", "run_b")
            .unwrap()
    );
    // No longer live (stale, its process gone): taken over, and the late
    // release of the run it was taken from leaves the new claim.
    assert_eq!(
        store
            .claim_session("c.toml", &claim("run_b", "srv_b"), &gone)
            .unwrap(),
        None
    );
    assert!(
        !store
            .release_session_claim("c.toml", "chat-1", "run_a")
            .unwrap()
    );
    assert_eq!(
        store
            .session_claim("c.toml", "chat-1")
            .unwrap()
            .map(|c| c.run_id),
        Some("run_b".to_owned())
    );
    // A server that stops lets go of its instance's claims.
    assert_eq!(store.release_session_claims("c.toml", "srv_b").unwrap(), 1);
    assert_eq!(store.session_claim("c.toml", "chat-1").unwrap(), None);
    assert!(
        store
            .release_session_claim("other.toml", "chat-1", "run_c")
            .unwrap()
    );
}

#[test]
fn damaged_contents_are_a_damaged_store_naming_the_generation_and_part() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let mut store = open(&path, OpenMode::Create).unwrap();
    store.publish("c.toml", record(1, None)).unwrap();
    drop(store);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let nodes: String = conn
        .query_row("SELECT nodes_root FROM generations", [], |r| r.get(0))
        .unwrap();
    conn.execute(
        "UPDATE chunks SET body = CAST(body || ' ' AS BLOB) WHERE hash = ?1",
        [&nodes],
    )
    .unwrap();
    drop(conn);
    let store = open(&path, OpenMode::ReadOnly).unwrap();
    let id = GenerationId::from_sequence(1);
    for err in [
        store.generation("c.toml", &id).unwrap_err(),
        store.head("c.toml").unwrap_err(),
    ] {
        assert_eq!(err.code(), "store::damaged", "{err}");
        assert!(
            matches!(&err, StoreError::Damaged { lineage, generation, part: "nodes", .. }
                if lineage == "c.toml" && generation == "gen_0001"),
            "{err:?}"
        );
        assert!(
            err.to_string()
                .contains(&format!("chunk {nodes} fails its hash check")),
            "{err}"
        );
    }
}
