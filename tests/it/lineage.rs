//! A store evolves safely and knows its compositions: numbered migrations
//! (a store written by the chassis before lineages, checked in under
//! `tests/data/store-v1/`, is migrated and read back), one lineage per
//! composition in a shared store, qualified and ambiguous ids, and a store
//! that grows with what changed.

use std::path::Path;

use chassis::store::{OpenMode, SqliteStore, Store};
use chassis::testing::generate::{Shape, generate};

use crate::harness::{Run, root, run_in};

fn run(dir: &Path, args: &[&str]) -> Run {
    let mut all = vec!["--color", "never"];
    all.extend_from_slice(args);
    run_in(dir, &all, &[])
}

fn json(dir: &Path, args: &[&str]) -> (i32, serde_json::Value) {
    let mut all = vec!["--format", "json"];
    all.extend_from_slice(args);
    let r = run_in(dir, &all, &[]);
    let doc = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", r.transcript()));
    (r.code, doc)
}

/// A copy of the fixture: the composition, its include, and the version 1
/// store its two publishes and one run wrote (`.chassis/state.db`).
fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let data = root().join("tests/data/store-v1");
    for f in ["composition.toml", "quickstart-tools.toml"] {
        std::fs::copy(data.join(f), dir.path().join(f)).unwrap();
    }
    std::fs::create_dir(dir.path().join(".chassis")).unwrap();
    std::fs::copy(data.join("state.db"), dir.path().join(".chassis/state.db")).unwrap();
    dir
}

fn expected(name: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(root().join("tests/data/store-v1").join(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn schema_version(path: &Path) -> String {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row(
        "SELECT value FROM meta WHERE key = 'schema_version'",
        [],
        |r| r.get(0),
    )
    .unwrap()
}

#[test]
fn a_version_1_store_is_migrated_on_open_and_reads_back_as_it_was_written() {
    let dir = fixture();
    let state = dir.path().join(".chassis/state.db");
    assert_eq!(schema_version(&state), "1");
    // A reading command migrates it (one transaction) and reads it back.
    let (code, mut shown) = json(dir.path(), &["generations", "show", "gen_0002"]);
    assert_eq!(code, 0, "{shown}");
    assert_eq!(
        schema_version(&state),
        chassis::store::schema_version().to_string()
    );
    // Everything the old chassis printed is still there; only the lineage
    // (unnamed until a composition claims it) is new.
    assert_eq!(shown["lineage"], "");
    shown.as_object_mut().unwrap().remove("lineage");
    assert_eq!(shown, expected("show2.json"));
    let (_, mut first) = json(dir.path(), &["generations", "show", "gen_0001"]);
    first.as_object_mut().unwrap().remove("lineage");
    assert_eq!(first, expected("show1.json"));
    let (code, diff) = json(dir.path(), &["diff", "generations", "gen_0001", "gen_0002"]);
    assert_eq!(code, 0);
    assert_eq!(diff, expected("diff12.json"));
    let (_, runs) = json(dir.path(), &["runs", "list"]);
    assert_eq!(runs["runs"][0]["id"], "run_8c5ffea4529a");
    assert_eq!(runs["runs"][0]["generation_id"], "gen_0001");
    let store = SqliteStore::open(&state, OpenMode::ReadOnly).unwrap();
    assert_eq!(store.integrity_check().unwrap(), "ok");

    // The composition that publishes first continues the history. Its
    // `[policy]` grant, which the old chassis left out of the semantic
    // digest, is the one change: its first recorded generation says so,
    // claims the history, and it is told.
    let r = run(
        dir.path(),
        &["--format", "json", "publish", "composition.toml"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(
        r.stderr
            .contains("continue as the history of `composition.toml`"),
        "{}",
        r.stderr
    );
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(doc["generation_id"], "gen_0003", "{}", r.stdout);
    assert_eq!(doc["previous_generation_id"], "gen_0002");
    assert_eq!(doc["impact"]["reused"], 2, "{}", r.stdout);
    let (code, policy) = json(dir.path(), &["diff", "generations", "gen_0002", "gen_0003"]);
    assert_eq!(code, 0, "{policy}");
    assert_eq!(
        policy["changes"].as_array().map(Vec::len),
        Some(1),
        "{policy}"
    );
    assert_eq!(policy["changes"][0]["category"], "policy", "{policy}");
    assert_eq!(
        policy["changes"][0]["subject"],
        "grant filesystem.write:quickstart-notes.txt"
    );
    // The agents the migrated generation recorded are what it compares
    // with: a changed description, not a new agent.
    let file = dir.path().join("composition.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("keeps a note", "keeps notes")).unwrap();
    let r = run(
        dir.path(),
        &["--format", "json", "publish", "composition.toml"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(doc["generation_id"], "gen_0004");
    assert_eq!(doc["previous_generation_id"], "gen_0003");
    let agents = doc["agents"].to_string();
    assert!(agents.contains("description_changed"), "{agents}");
    assert!(!agents.contains("agent_added"), "{agents}");
    let (_, list) = json(dir.path(), &["generations", "list"]);
    let rows = list["generations"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    assert!(rows.iter().all(|g| g["lineage"] == "composition.toml"));
}

#[test]
fn a_store_from_a_newer_chassis_is_refused_and_left_alone() {
    let dir = fixture();
    let state = dir.path().join(".chassis/state.db");
    {
        let conn = rusqlite::Connection::open(&state).unwrap();
        conn.execute(
            "UPDATE meta SET value = '999' WHERE key = 'schema_version'",
            [],
        )
        .unwrap();
    }
    let before = std::fs::read(&state).unwrap();
    for args in [
        &["generations", "list"][..],
        &["publish", "composition.toml"][..],
    ] {
        let r = run(dir.path(), args);
        assert_eq!(r.code, 2, "{}", r.transcript());
        assert!(r.stderr.contains("schema version 999"), "{}", r.stderr);
        assert!(r.stderr.contains("upgrade chassis"), "{}", r.stderr);
    }
    assert_eq!(std::fs::read(&state).unwrap(), before, "untouched");
}

const A: &str = r#"version = 1

[plugins.db]
version = "1.0.0"
provides = { database = "1.0.0" }

[plugins.app]
version = "1.0.0"
requires = { database = ">=1,<2" }

[entries.db]
config = { n = 1 }

[entries.app]
"#;

const B: &str = r#"version = 1

[plugins.cache]
version = "1.0.0"
provides = { cache = "1.0.0" }

[entries.cache]
config = { size = 10 }
"#;

#[test]
fn compositions_sharing_a_store_keep_histories_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("composition.toml"), A).unwrap();
    std::fs::write(d.join("quickstart.toml"), B).unwrap();
    assert_eq!(run(d, &["publish", "composition.toml"]).code, 0);
    // The second file starts its own history: nothing of the first is
    // recorded as removed.
    let (code, doc) = json(d, &["publish", "quickstart.toml"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["generation_id"], "gen_0001");
    assert_eq!(doc["impact"]["removed"], 0, "{doc}");
    assert_eq!(doc["impact"]["added"], 1, "{doc}");
    // And the first is still where it was: republishing it changes nothing.
    let (code, doc) = json(d, &["publish", "composition.toml"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["published"], false, "{doc}");
    std::fs::write(
        d.join("composition.toml"),
        A.replace("{ n = 1 }", "{ n = 2 }"),
    )
    .unwrap();
    let (_, doc) = json(d, &["publish", "composition.toml"]);
    assert_eq!(doc["generation_id"], "gen_0002");
    assert_eq!(doc["previous_generation_id"], "gen_0001");

    // `generations list` groups by lineage.
    let r = run(d, &["generations", "list"]);
    assert_eq!(r.code, 0);
    let a = r.stdout.find("composition.toml\n").expect(&r.stdout);
    let b = r.stdout.find("quickstart.toml\n").expect(&r.stdout);
    assert!(a < b, "{}", r.stdout);
    let (_, only) = json(
        d,
        &["generations", "list", "--composition", "quickstart.toml"],
    );
    assert_eq!(only["generations"].as_array().unwrap().len(), 1);

    // An id both hold is ambiguous (exit 2, naming both); qualified, or
    // with --composition (a file or a name), it is one generation.
    let r = run(d, &["generations", "show", "gen_0001"]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(r.stderr.contains("ambiguous"), "{}", r.stderr);
    assert!(
        r.stderr.contains("`composition.toml:gen_0001`"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("`quickstart.toml:gen_0001`"),
        "{}",
        r.stderr
    );
    let (code, g) = json(d, &["generations", "show", "quickstart.toml:gen_0001"]);
    assert_eq!(code, 0);
    assert_eq!(g["node_list"][0]["entry_id"], "cache");
    let (code, g) = json(
        d,
        &[
            "generations",
            "show",
            "gen_0001",
            "--composition",
            "composition.toml",
        ],
    );
    assert_eq!(code, 0);
    assert_eq!(g["lineage"], "composition.toml");
    // An id only one holds needs no qualifier.
    let (code, g) = json(d, &["generations", "show", "gen_0002"]);
    assert_eq!(code, 0);
    assert_eq!(g["lineage"], "composition.toml");
    // Diff and explain reuse take the same ids.
    let r = run(
        d,
        &[
            "diff",
            "generations",
            "composition.toml:gen_0001",
            "composition.toml:gen_0002",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = run(d, &["diff", "generations", "gen_0001", "gen_0002"]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    let r = run(
        d,
        &[
            "explain",
            "reuse",
            "gen_0001",
            "gen_0002",
            "db",
            "--composition",
            "composition.toml",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    // A lineage the store does not have is named in the error.
    let r = run(d, &["generations", "show", "nope:gen_0001"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("composition.toml, quickstart.toml"),
        "{}",
        r.stderr
    );
}

/// Instance ids count mounts per lineage, so two lineages' `db` share
/// one (`plugin_` of `["db", 1]`) whatever their configurations: the
/// identity, not the instance id, says whether a node was reused.
#[test]
fn a_node_whose_config_differs_across_lineages_is_rebuilt_not_reused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("staging.toml"), A).unwrap();
    std::fs::write(d.join("prod.toml"), A.replace("{ n = 1 }", "{ n = 30 }")).unwrap();
    for f in ["staging.toml", "prod.toml"] {
        let r = run(d, &["publish", f]);
        assert_eq!(r.code, 0, "{}", r.transcript());
    }
    let (old, new) = ("staging.toml:gen_0001", "prod.toml:gen_0001");
    let r = run(d, &["explain", "reuse", old, new, "db"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let headline = r.stdout.lines().next().unwrap_or_default();
    assert!(headline.ends_with(": rebuilt"), "{}", r.stdout);
    assert!(
        r.stdout.contains("changed (config_changed)"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("carried over"), "{}", r.stdout);
    assert!(
        r.stdout.contains("each lineage counts its own mounts"),
        "{}",
        r.stdout
    );
    let (_, doc) = json(d, &["explain", "reuse", old, new, "db"]);
    assert_eq!(doc["kind"], "rebuilt", "{doc}");
    // The same instance id on both sides is no claim that it carried over.
    assert_eq!(doc["old_instance_id"], doc["new_instance_id"], "{doc}");
    // `app` binds the same instance id on both sides: reused.
    let (_, doc) = json(d, &["explain", "reuse", old, new, "app"]);
    assert_eq!(doc["kind"], "reused", "{doc}");

    let (code, doc) = json(d, &["diff", "generations", old, new]);
    assert_eq!(code, 0, "{doc}");
    let db = doc["nodes"]
        .as_array()
        .and_then(|n| n.iter().find(|n| n["entry_id"] == "db"))
        .unwrap_or_else(|| panic!("no db node: {doc}"));
    assert_eq!(db["kind"], "rebuilt", "{doc}");
    assert_eq!(
        db["reasons"],
        serde_json::json!(["config_changed"]),
        "{doc}"
    );
    let r = run(d, &["diff", "generations", old, new]);
    assert!(
        r.stdout.contains("1 reused (identity unchanged"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("db  rebuilt"), "{}", r.stdout);
}

/// A configuration changed and changed back: the node's identity is the
/// first one's, its instance is not (the one in between replaced it).
#[test]
fn an_unchanged_node_is_not_explained_as_a_changed_identity() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for n in ["{ n = 1 }", "{ n = 2 }", "{ n = 1 }"] {
        publish(d, &A.replace("{ n = 1 }", n));
    }
    let r = run(d, &["explain", "reuse", "gen_0001", "gen_0003", "db"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let headline = r.stdout.lines().next().unwrap_or_default();
    assert!(headline.ends_with(": unchanged"), "{}", r.stdout);
    assert!(!r.stdout.contains("changed ("), "{}", r.stdout);
    assert!(!r.stdout.contains("identity changed"), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("every identity part is the same as in gen_0001"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("a generation in between replaced"),
        "{}",
        r.stdout
    );
}

#[test]
fn a_name_in_the_composition_names_its_lineage() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("c.toml"), format!("name = \"support-bot\"\n{A}")).unwrap();
    let (code, _) = json(d, &["publish", "c.toml"]);
    assert_eq!(code, 0);
    // Renaming the file keeps the history: the name is the lineage.
    std::fs::rename(d.join("c.toml"), d.join("renamed.toml")).unwrap();
    let (_, doc) = json(d, &["publish", "renamed.toml"]);
    assert_eq!(doc["published"], false, "{doc}");
    // `plan` reads the named lineage too (it reads the store beside the
    // load where an unnamed composition keeps its lineage, and again here).
    let (code, doc) = json(d, &["plan", "renamed.toml"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["action"], "no-op", "{doc}");
    assert_eq!(doc["generation_id"], "gen_0001", "{doc}");
    let (_, list) = json(d, &["generations", "list"]);
    assert_eq!(list["generations"][0]["lineage"], "support-bot");
    let (code, _) = json(d, &["generations", "show", "support-bot:gen_0001"]);
    assert_eq!(code, 0);
    let (code, _) = json(
        d,
        &[
            "generations",
            "show",
            "gen_0001",
            "--composition",
            "renamed.toml",
        ],
    );
    assert_eq!(code, 0);
    // A name that is not one is an error pointing at it.
    std::fs::write(d.join("bad.toml"), format!("name = \"\"\n{A}")).unwrap();
    let r = run(d, &["check", "bad.toml"]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(r.stderr.contains("`name` is empty"), "{}", r.stderr);
}

#[test]
fn a_composition_the_store_does_not_hold_is_refused_by_list_as_by_show() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("c.toml"), format!("name = \"support-bot\"\n{A}")).unwrap();
    let (code, _) = json(d, &["publish", "c.toml"]);
    assert_eq!(code, 0);
    for args in [
        &["generations", "show", "gen_0001", "--composition", "TYPO"][..],
        &["generations", "list", "--composition", "TYPO"],
        &["runs", "list", "--composition", "TYPO"],
    ] {
        let r = run(d, args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.transcript());
        assert!(
            r.stderr.contains("help: its compositions are support-bot"),
            "{args:?}: {}",
            r.stderr
        );
    }
    // The composition it holds lists as before.
    for args in [
        &["generations", "list", "--composition", "support-bot"][..],
        &["runs", "list", "--composition", "support-bot"],
    ] {
        let r = run(d, args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.transcript());
    }
}

/// Bytes of the store file and its chunks after a publish of `text`.
fn publish(dir: &Path, text: &str) -> u64 {
    std::fs::write(dir.join("c.toml"), text).unwrap();
    let r = run(dir, &["publish", "c.toml"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let store = SqliteStore::open(&dir.join(".chassis/state.db"), OpenMode::ReadOnly).unwrap();
    store.chunk_bytes().unwrap()
}

#[test]
fn a_one_entry_generation_stores_what_changed_not_a_copy() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fan = generate(Shape::Fan, 2_000);
    let first = publish(d, &fan.text);
    let one = publish(d, &fan.one_change());
    let growth = one - first;
    eprintln!("store: first generation {first} bytes of chunks, one-entry generation +{growth}");
    // The first generation of 2,000 entries holds hundreds of kilobytes;
    // a one-entry change adds a few chunks.
    assert!(first > 200_000, "first generation: {first} bytes");
    assert!(
        growth * 20 < first,
        "a one-entry generation added {growth} bytes to a first of {first}"
    );
    // The generations read back whole.
    let store = SqliteStore::open(&d.join(".chassis/state.db"), OpenMode::ReadOnly).unwrap();
    let list = store.list(None).unwrap();
    assert_eq!(list.len(), 2);
    let current = store.current("c.toml").unwrap().unwrap();
    assert_eq!(current.nodes.len(), 2_000);
    assert_eq!(current.summary.nodes, 2_000);
}

#[test]
fn a_refused_publish_claims_nothing_of_a_migrated_store() {
    let dir = fixture();
    let d = dir.path();
    // Pending: refused, exit 1, before anything is recorded.
    std::fs::write(d.join("other.toml"), "version = 1\n\n[plugins.app]\nversion = \"1.0.0\"\nrequires = { database = \">=1,<2\" }\n\n[entries.app]\n").unwrap();
    let r = run(d, &["publish", "other.toml"]);
    assert_eq!(r.code, 1, "{}", r.transcript());
    assert!(
        !r.stderr.contains("continue as the history"),
        "{}",
        r.stderr
    );
    let (_, list) = json(d, &["generations", "list"]);
    assert!(
        list["generations"]
            .as_array()
            .unwrap()
            .iter()
            .all(|g| g["lineage"] == ""),
        "{list}"
    );
    // The composition that publishes first continues it.
    let r = run(d, &["publish", "composition.toml"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    // A no-change publish records nothing, so the history is claimed by the
    // first write: the reads agree with what the publish was computed on.
    let (code, g) = json(
        d,
        &[
            "generations",
            "show",
            "gen_0002",
            "--composition",
            "composition.toml",
        ],
    );
    assert_eq!(code, 0, "{g}");
}

#[test]
fn a_migration_killed_before_commit_leaves_the_old_store() {
    let dir = fixture();
    let state = dir.path().join(".chassis/state.db");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_chassis"))
        .args(["generations", "list"])
        .current_dir(dir.path())
        .env("CHASSIS_FAILPOINT", "migrate.before_commit")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(!status.success(), "the failpoint killed it: {status:?}");
    assert_eq!(
        schema_version(&state),
        "1",
        "nothing of the migration stayed"
    );
    let (code, list) = json(dir.path(), &["generations", "list"]);
    assert_eq!(code, 0, "{list}");
    assert_eq!(list["generations"].as_array().unwrap().len(), 2);
    let store = SqliteStore::open(&state, OpenMode::ReadOnly).unwrap();
    assert_eq!(store.integrity_check().unwrap(), "ok");
}

#[test]
fn composition_file_finds_the_store_its_store_path_names() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("sub")).unwrap();
    std::fs::write(
        d.join("sub/c.toml"),
        format!("{A}\n[store]\npath = \"../state/shared.db\"\n"),
    )
    .unwrap();
    let r = run(d, &["publish", "sub/c.toml"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(d.join("state/shared.db").is_file());
    // `plan` finds it too, and the unchanged generation in it.
    let (code, doc) = json(d, &["plan", "sub/c.toml"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["action"], "no-op", "{doc}");
    let (code, list) = json(d, &["generations", "list", "--composition", "sub/c.toml"]);
    assert_eq!(code, 0, "{list}");
    assert_eq!(list["generations"][0]["lineage"], "sub/c.toml", "{list}");
    let (code, _) = json(
        d,
        &[
            "generations",
            "show",
            "gen_0001",
            "--composition",
            "sub/c.toml",
        ],
    );
    assert_eq!(code, 0);
}

#[test]
fn plans_guess_at_the_store_writes_nothing() {
    // `plan` reads the store beside the load on a guess; that read only
    // peeks. A version 1 store is neither migrated by a peek nor by a plan
    // whose composition does not load; a plan that needs it migrates it,
    // as a read always has.
    let dir = fixture();
    let state = dir.path().join(".chassis/state.db");
    let before = std::fs::read(&state).unwrap();
    let peek = SqliteStore::open(&state, OpenMode::Peek);
    assert!(peek.is_err(), "a peek makes no migration");
    std::fs::write(dir.path().join("broken.toml"), "version = 1\n[entries.x\n").unwrap();
    let r = run(dir.path(), &["plan", "broken.toml"]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert_eq!(schema_version(&state), "1");
    assert_eq!(std::fs::read(&state).unwrap(), before);
    let (code, doc) = json(dir.path(), &["plan", "composition.toml"]);
    assert_eq!(code, 0, "{doc}");
    // Its `[policy]`, left out of the semantic digest by the chassis that
    // wrote the store, is a change now.
    assert_eq!(doc["action"], "publish", "{doc}");
    assert_eq!(doc["previous_generation_id"], "gen_0002", "{doc}");
    assert_eq!(
        schema_version(&state),
        chassis::store::schema_version().to_string()
    );
    // Migrated, a peek reads it.
    assert!(SqliteStore::open(&state, OpenMode::Peek).is_ok());
}
