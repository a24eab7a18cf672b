//! The generation store through the binary: publish, plan, generations,
//! runs, explain reuse, diff by generation id, refusals, crash consistency
//! at every failpoint, the secret canary in the database file, and plan ==
//! publish.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use chassis::engine::identity::GenerationId;
use chassis::store::failpoint::PUBLISH_FAILPOINTS;
use chassis::store::{OpenMode, Store};
use proptest::prelude::*;

use crate::harness::{Run, run_in};

const CANARY: &str = "sk-canary-7f3a9c2e51";

fn flat(dsn: &str) -> String {
    format!(
        r#"version = 1

[plugins.db]
version = "1.0.0"
provides = {{ database = "1.0.0" }}

[plugins.app]
version = "1.0.0"
requires = {{ database = ">=1,<2" }}

[plugins.cache]
version = "1.0.0"
provides = {{ cache = "1.0.0" }}

[entries.db]
config = {{ dsn = "{dsn}", api_key = "{CANARY}" }}

[entries.app]

[entries.cache]
"#
    )
}

const PENDING: &str = r#"version = 1

[plugins.app]
version = "1.0.0"
requires = { database = ">=1,<2" }

[plugins.cache]
version = "1.0.0"
provides = { cache = "1.0.0" }

[entries.app]

[entries.cache]
"#;

const CYCLE: &str = r#"version = 1

[plugins.a]
version = "1.0.0"
provides = { alpha = "1.0.0" }
requires = { beta = ">=1,<2" }

[plugins.b]
version = "1.0.0"
provides = { beta = "1.0.0" }
requires = { alpha = ">=1,<2" }

[entries.a]

[entries.b]
"#;

const LIAR: &str = r#"version = 1

[plugins."testing.liar"]
version = "1.0.0"
provides = { database = "1.0.0" }

[plugins.app]
version = "1.0.0"
requires = { database = ">=1,<2" }

[entries.db]
plugin = "testing.liar"

[entries.app]
"#;

struct Workspace {
    dir: tempfile::TempDir,
}

impl Workspace {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn write(&self, text: &str) {
        std::fs::write(self.path().join("c.toml"), text).unwrap();
    }

    fn state(&self) -> PathBuf {
        self.path().join(".chassis/state.db")
    }

    fn run(&self, args: &[&str]) -> Run {
        let mut all = vec!["--color", "never"];
        all.extend_from_slice(args);
        run_in(self.path(), &all, &[])
    }

    fn json(&self, args: &[&str]) -> (i32, serde_json::Value) {
        let mut all = vec!["--format", "json"];
        all.extend_from_slice(args);
        let r = self.run(&all);
        let doc = serde_json::from_str(&r.stdout).unwrap_or_else(|e| {
            panic!("not JSON ({e}):\n{}", r.transcript());
        });
        (r.code, doc)
    }

    /// A transcript with the temp dir and timestamps masked, for goldens.
    fn golden(&self, r: &Run) -> String {
        let text = r
            .transcript()
            .replace(&self.path().display().to_string(), "[TMP]");
        mask_timestamps(&text)
    }

    fn current(&self) -> Option<String> {
        let store = chassis::store::open(&self.state(), OpenMode::ReadOnly).unwrap();
        store.current("c.toml").unwrap().map(|g| g.summary.id)
    }
}

/// `2026-01-31T12:00:00Z` -> `[TIME]`.
fn mask_timestamps(text: &str) -> String {
    let bytes = text.as_bytes();
    let shape = b"dddd-dd-ddTdd:dd:ddZ";
    let mut out = String::new();
    let mut i = 0;
    while i < bytes.len() {
        let fits = bytes.len() - i >= shape.len()
            && shape.iter().zip(&bytes[i..]).all(|(s, b)| match s {
                b'd' => b.is_ascii_digit(),
                other => other == b,
            });
        if fits {
            out.push_str("[TIME]");
            // Keep the column width of the masked field.
            out.push_str(&" ".repeat(shape.len() - "[TIME]".len()));
            i += shape.len();
        } else {
            let ch = text[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

#[test]
fn the_first_publish_creates_the_store_and_an_unchanged_republish_records_nothing() {
    let w = Workspace::new();
    w.write(&flat("postgres://a"));
    let (code, first) = w.json(&["publish", "c.toml"]);
    assert_eq!(code, 0, "{first}");
    assert!(w.state().is_file(), "created beside the composition");
    assert_eq!(first["format_version"], 1);
    assert_eq!(first["published"], true);
    assert_eq!(first["generation_id"], "gen_0001");
    assert_eq!(first["impact"]["added"], 3);
    // The first generation is what `chassis snapshot` says.
    let (_, snap) = w.json(&["snapshot", "c.toml"]);
    assert_eq!(first["digests"]["digest"], snap["digests"]["digest"]);

    let (code, again) = w.json(&["publish", "c.toml"]);
    assert_eq!(code, 0);
    assert_eq!(again["published"], false);
    assert_eq!(again["action"], "no-op");
    assert_eq!(again["generation_id"], "gen_0001");
    assert_eq!(again["impact"]["reused"], 3);
    assert_eq!(again["digests"], first["digests"], "identical digest");
    let text = w.run(&["publish", "c.toml"]);
    assert!(
        text.stdout.starts_with("no change: gen_0001 reused"),
        "{}",
        text.stdout
    );
    let (_, list) = w.json(&["generations", "list"]);
    assert_eq!(list["generations"].as_array().unwrap().len(), 1);
}

/// A composition whose one agent answers after `delay_ms`: runs of it
/// started together are still running together when they record.
fn slow_agent(delay_ms: u64) -> String {
    format!(
        "version = 1\n[entries.model]\nplugin = \"scripted\"\nconfig.repeat_last = true\n\
         [[entries.model.config.turns]]\ntext = \"hi\"\ndelay_ms = {delay_ms}\n\
         [agents.a]\nprompt = \"p\"\n"
    )
}

/// Four `chassis` processes in `w` at once, the `i`th with `args(i)`;
/// each one's exit code, stdout and stderr.
fn four_at_once(w: &Workspace, args: impl Fn(usize) -> Vec<String>) -> Vec<(i32, String, String)> {
    let started: Vec<_> = (0..4)
        .map(|i| {
            let dir = w.path().to_path_buf();
            let args = args(i);
            std::thread::spawn(move || {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let r = run_in(&dir, &args, &[]);
                (r.code, r.stdout, r.stderr)
            })
        })
        .collect();
    started.into_iter().map(|r| r.join().unwrap()).collect()
}

#[test]
fn concurrent_runs_and_publishes_of_one_composition_share_the_generation_one_of_them_recorded() {
    let w = Workspace::new();
    w.write(&slow_agent(600));
    // Four runs on a new store: each computes gen_0001 from an empty
    // lineage; one records it, the others find it there and use it.
    let runs = four_at_once(&w, |i| {
        [
            "-q",
            "run",
            "c.toml",
            "--state=.chassis/state.db",
            "--input",
        ]
        .map(str::to_owned)
        .into_iter()
        .chain([format!("x{i}")])
        .collect()
    });
    for (code, _, stderr) in runs {
        assert_eq!(code, 0, "{stderr}");
    }
    let (_, list) = w.json(&["generations", "list"]);
    assert_eq!(list["generations"].as_array().unwrap().len(), 1, "{list}");
    let (_, runs) = w.json(&["runs", "list"]);
    let runs = runs["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4, "{runs:?}");
    assert!(
        runs.iter()
            .all(|r| r["generation_id"] == "gen_0001" && r["status"] == "succeeded"),
        "{runs:?}"
    );

    // Four publishes of one change: one records gen_0002, the others find
    // it (or publish after it) and change nothing.
    w.write(&(slow_agent(600) + "max_steps = 3\n"));
    let publishes = four_at_once(&w, |_| {
        ["--format", "json", "publish", "c.toml"]
            .map(str::to_owned)
            .to_vec()
    });
    let mut recorded = 0;
    for (code, stdout, stderr) in publishes {
        assert_eq!(code, 0, "{stderr}");
        let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(doc["generation_id"], "gen_0002", "{doc}");
        recorded += usize::from(doc["published"] == true);
    }
    assert_eq!(recorded, 1, "one of them recorded gen_0002");
    let (_, list) = w.json(&["generations", "list"]);
    assert_eq!(list["generations"].as_array().unwrap().len(), 2, "{list}");
}

#[test]
fn a_config_change_publishes_gen_0002_rebuilding_the_provider_and_rewiring_its_consumer() {
    let w = Workspace::new();
    w.write(&flat("postgres://a"));
    assert_eq!(w.run(&["publish", "c.toml"]).code, 0);
    w.write(&flat("postgres://b"));
    let (code, doc) = w.json(&["publish", "c.toml"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["generation_id"], "gen_0002");
    assert_eq!(doc["previous_generation_id"], "gen_0001");
    let by = decision_by_entry(&doc);
    assert_eq!(by["db"], "rebuilt");
    assert_eq!(by["app"], "rewired");
    assert_eq!(by["cache"], "reused");
    let store = chassis::store::open(&w.state(), OpenMode::ReadOnly).unwrap();
    let (g1, g2) = (
        store
            .generation("c.toml", &GenerationId::from_sequence(1))
            .unwrap()
            .unwrap(),
        store
            .generation("c.toml", &GenerationId::from_sequence(2))
            .unwrap()
            .unwrap(),
    );
    assert_eq!(
        g1.node("cache").unwrap().instance_id,
        g2.node("cache").unwrap().instance_id,
        "a reused node keeps its instance id across processes"
    );
    assert_ne!(
        g1.node("db").unwrap().instance_id,
        g2.node("db").unwrap().instance_id
    );
    assert_eq!(g2.node("db").unwrap().mount, 2);
    // Back to the first config: a new generation (db mounted a third time).
    w.write(&flat("postgres://a"));
    let (_, doc) = w.json(&["publish", "c.toml"]);
    assert_eq!(doc["generation_id"], "gen_0003");
}

fn published_twice() -> Workspace {
    let w = Workspace::new();
    w.write(&flat("postgres://a"));
    assert_eq!(w.run(&["publish", "c.toml"]).code, 0);
    w.write(&flat("postgres://b"));
    assert_eq!(w.run(&["publish", "c.toml"]).code, 0);
    w
}

#[test]
fn generations_list_and_show_in_text_and_json() {
    let w = published_twice();
    let list = w.run(&["generations", "list"]);
    assert_eq!(list.code, 0);
    insta::assert_snapshot!("generations_list", w.golden(&list));
    let show = w.run(&["generations", "show", "gen_0002"]);
    assert_eq!(show.code, 0);
    insta::assert_snapshot!("generations_show", w.golden(&show));
    let (code, doc) = w.json(&["generations", "list"]);
    assert_eq!(code, 0);
    assert_eq!(doc["format_version"], 1);
    assert_eq!(doc["generations"][0]["state"], "superseded");
    assert_eq!(doc["generations"][1]["state"], "active");
    let (code, doc) = w.json(&["generations", "show", "gen_0001"]);
    assert_eq!(code, 0);
    assert_eq!(doc["id"], "gen_0001");
    assert_eq!(doc["snapshot"]["snapshot"]["generation_id"], "gen_0001");
    assert_eq!(doc["node_list"].as_array().unwrap().len(), 3);
    let unknown = w.run(&["generations", "show", "gen_0009"]);
    assert_eq!(unknown.code, 2, "{}", unknown.transcript());
    assert!(
        unknown.stderr.contains("gen_0001 … gen_0002"),
        "{}",
        unknown.stderr
    );
    let bad = w.run(&["generations", "show", "nine"]);
    assert_eq!(bad.code, 2);
    let elsewhere = Workspace::new();
    let missing = elsewhere.run(&["generations", "list"]);
    assert_eq!(missing.code, 2);
    assert!(
        missing.stderr.contains("store::missing"),
        "{}",
        missing.stderr
    );
    assert!(
        !elsewhere.state().exists(),
        "reading commands never create a store"
    );
}

#[test]
fn diff_generations_takes_generation_ids_and_shows_nodes() {
    let w = published_twice();
    let state = w.state().display().to_string();
    let r = w.run(&[
        "diff",
        "generations",
        "gen_0001",
        "gen_0002",
        "--state",
        &state,
    ]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    insta::assert_snapshot!("diff_generations_store", w.golden(&r));
    let (_, doc) = w.json(&["diff", "generations", "gen_0001", "gen_0002"]);
    let kinds: Vec<&str> = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["rewired", "reused", "rebuilt"]);
    // A stored generation against a composition file: no NODES section.
    let mixed = w.run(&["diff", "generations", "gen_0001", "c.toml"]);
    assert_eq!(mixed.code, 0);
    assert!(!mixed.stdout.contains("NODES"));
}

#[test]
fn explain_reuse_names_the_identity_parts_that_changed() {
    let w = published_twice();
    let r = w.run(&["explain", "reuse", "gen_0001", "gen_0002", "app"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    insta::assert_snapshot!("explain_reuse_app", w.golden(&r));
    let (_, doc) = w.json(&["explain", "reuse", "gen_0001", "gen_0002", "db"]);
    assert_eq!(doc["kind"], "rebuilt");
    assert_eq!(doc["identity"]["config"], "changed");
    let (_, doc) = w.json(&["explain", "reuse", "gen_0001", "gen_0002", "cache"]);
    assert_eq!(doc["kind"], "reused");
    let typo = w.run(&["explain", "reuse", "gen_0001", "gen_0002", "cahce"]);
    assert_eq!(typo.code, 2);
    assert!(
        typo.stderr.contains("did you mean `cache`"),
        "{}",
        typo.stderr
    );
}

#[test]
fn runs_list_is_empty_until_chassis_run_records_some() {
    let w = published_twice();
    let r = w.run(&["runs", "list"]);
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains("no runs recorded"), "{}", r.stdout);
    let (_, doc) = w.json(&["runs", "list"]);
    assert_eq!(doc["runs"], serde_json::json!([]));
    let mut store = chassis::store::open(&w.state(), OpenMode::Create).unwrap();
    store
        .record_run(
            "c.toml",
            chassis::store::NewRun {
                id: "run_0123456789ab".into(),
                generation_id: "gen_0002".into(),
                agent: "triage".into(),
                status: "succeeded".into(),
                started_at: "2026-01-01T00:00:00Z".into(),
                finished_at: Some("2026-01-01T00:00:05Z".into()),
                instance: None,
            },
        )
        .unwrap();
    drop(store);
    let (code, doc) = w.json(&["runs", "show", "run_0123456789ab"]);
    assert_eq!(code, 0);
    assert_eq!(doc["agent"], "triage");
    assert_eq!(w.run(&["runs", "show", "run_0001"]).code, 2);
}

#[test]
fn pending_requirements_are_refused_unless_allowed() {
    let w = Workspace::new();
    w.write(PENDING);
    let r = w.run(&["publish", "c.toml"]);
    assert_eq!(r.code, 1, "{}", r.transcript());
    insta::assert_snapshot!("publish_pending_refused", w.golden(&r));
    assert!(!w.state().exists(), "a refused publish opens no store");
    let (code, plan) = w.json(&["plan", "c.toml"]);
    assert_eq!(code, 1);
    assert_eq!(plan["action"], "reject");
    let (code, doc) = w.json(&["publish", "c.toml", "--allow-pending"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["generation_id"], "gen_0001");
    assert_eq!(doc["pending"], serde_json::json!(["app"]));
    assert_eq!(doc["impact"]["added"], 1);
}

#[test]
fn a_cycle_is_refused_by_plan_and_publish_alike() {
    let w = Workspace::new();
    w.write(CYCLE);
    for args in [
        &["publish", "c.toml"][..],
        &["publish", "c.toml", "--allow-pending"],
        &["plan", "c.toml"],
        &["plan", "c.toml", "--allow-pending"],
    ] {
        let r = w.run(args);
        assert_eq!(r.code, 1, "{args:?}: {}", r.transcript());
        assert!(
            r.stdout.contains("a -> b -> a") || r.stderr.contains("a -> b -> a"),
            "{}",
            r.transcript()
        );
    }
    assert!(!w.state().exists());
}

#[test]
fn a_contract_failure_exits_3_with_its_fields_and_publishes_nothing() {
    let w = Workspace::new();
    w.write(&flat("postgres://a"));
    assert_eq!(w.run(&["publish", "c.toml"]).code, 0);
    w.write(LIAR);
    let r = w.run(&["publish", "c.toml"]);
    assert_eq!(r.code, 3, "{}", r.transcript());
    insta::assert_snapshot!("publish_contract_failure", w.golden(&r));
    assert_eq!(w.current().as_deref(), Some("gen_0001"));
}

/// The diagnostic `r` ends with, from `--format json`'s stderr.
fn last_diagnostic(r: &Run) -> serde_json::Value {
    let line = r.stderr.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| panic!("no diagnostic ({e}): {}", r.transcript()))
}

#[test]
fn a_state_path_that_is_no_store_is_refused_alike_by_every_command_and_kept() {
    // Garbage bytes, another program's SQLite file and a directory are
    // not a store: every command refuses them the same way (exit 2,
    // `store::not-a-store`, the path and a help line) and writes nothing.
    let w = Workspace::new();
    w.write(&flat("postgres://a"));
    let state = w.path().join("s.db");
    let commands: [&[&str]; 5] = [
        &["generations", "list"],
        &["runs", "list"],
        &["plan", "c.toml"],
        &["publish", "c.toml"],
        &["diff", "generations", "gen_0001", "gen_0002"],
    ];
    let garbage: Vec<u8> = (0..4096_u32).map(|i| (i * 7919 % 251) as u8).collect();
    let foreign = w.path().join("foreign.db");
    rusqlite::Connection::open(&foreign)
        .and_then(|c| c.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);"))
        .unwrap();
    let foreign = std::fs::read(&foreign).unwrap();
    for (kind, bytes) in [
        ("garbage", Some(&garbage)),
        ("foreign", Some(&foreign)),
        ("directory", None),
    ] {
        match bytes {
            Some(b) => std::fs::write(&state, b).unwrap(),
            None => std::fs::create_dir(&state).unwrap(),
        }
        for command in commands {
            let mut args = command.to_vec();
            args.extend(["--state", "s.db"]);
            let r = w.run(&args);
            assert_eq!(r.code, 2, "{kind} {command:?}: {}", r.transcript());
            assert!(
                r.stderr
                    .contains("error[store::not-a-store]: `s.db` is not a chassis store")
                    && r.stderr.contains("help: point `--state`"),
                "{kind} {command:?}: {}",
                r.transcript()
            );
            let mut json = vec!["--format", "json"];
            json.extend(&args);
            let r = w.run(&json);
            assert_eq!(r.code, 2, "{kind} {command:?}: {}", r.transcript());
            let d = last_diagnostic(&r);
            assert_eq!(d["code"], "store::not-a-store", "{kind} {command:?}: {d}");
            assert!(d["message"].as_str().unwrap().contains("`s.db`"), "{d}");
            assert_eq!(d["help"].as_array().map(Vec::len), Some(1), "{d}");
            match bytes {
                Some(b) => assert_eq!(
                    &std::fs::read(&state).unwrap(),
                    b,
                    "{kind} {command:?} wrote over it"
                ),
                None => assert_eq!(std::fs::read_dir(&state).unwrap().count(), 0, "{command:?}"),
            }
            for side in ["s.db-wal", "s.db-shm", "s.db-journal"] {
                assert!(!w.path().join(side).exists(), "{kind} {command:?}: {side}");
            }
        }
        match bytes {
            Some(_) => std::fs::remove_file(&state).unwrap(),
            None => std::fs::remove_dir(&state).unwrap(),
        }
    }

    // An empty file is no store yet (SQLite's empty database, and what a
    // first publish killed before its first commit leaves): reading
    // commands find no store, plan shows a first publish, a publish that
    // fails leaves it empty, and one that succeeds makes the store in it.
    std::fs::write(&state, b"").unwrap();
    for command in [&["generations", "list"][..], &["runs", "list"]] {
        let mut args = command.to_vec();
        args.extend(["--state", "s.db"]);
        let r = w.run(&args);
        assert_eq!(r.code, 2, "{command:?}: {}", r.transcript());
        assert!(
            r.stderr
                .contains("error[store::missing]: no generation store at `s.db`")
                && r.stderr.contains("help: run `chassis publish FILE` first"),
            "{command:?}: {}",
            r.transcript()
        );
        let mut json = vec!["--format", "json"];
        json.extend(&args);
        let r = w.run(&json);
        assert_eq!(r.code, 2, "{command:?}: {}", r.transcript());
        assert_eq!(last_diagnostic(&r)["code"], "store::missing");
    }
    let (code, plan) = w.json(&["plan", "c.toml", "--state", "s.db"]);
    assert_eq!(code, 0, "{plan}");
    assert_eq!(plan["generation_id"], "gen_0001", "{plan}");
    assert_eq!(plan["store_exists"], false, "{plan}");
    assert_eq!(w.run(&["plan", "c.toml", "--state", "s.db"]).code, 0);
    std::fs::write(w.path().join("liar.toml"), LIAR).unwrap();
    let failed = w.run(&["publish", "liar.toml", "--state", "s.db"]);
    assert_eq!(failed.code, 3, "{}", failed.transcript());
    assert_eq!(std::fs::read(&state).unwrap(), b"", "left as it was found");
    let (code, published) = w.json(&["publish", "c.toml", "--state", "s.db"]);
    assert_eq!(code, 0, "{published}");
    assert_eq!(published["generation_id"], "gen_0001");
    let (code, list) = w.json(&["generations", "list", "--state", "s.db"]);
    assert_eq!(code, 0, "{list}");
    assert_eq!(list["generations"][0]["id"], "gen_0001", "{list}");
}

#[test]
fn killing_a_publish_at_any_failpoint_leaves_the_store_consistent() {
    for point in PUBLISH_FAILPOINTS {
        let w = Workspace::new();
        w.write(&flat("postgres://a"));
        assert_eq!(w.run(&["publish", "c.toml"]).code, 0);
        w.write(&flat("postgres://b"));
        let status = Command::new(env!("CARGO_BIN_EXE_chassis"))
            .args(["publish", "c.toml"])
            .current_dir(w.path())
            .env("CHASSIS_FAILPOINT", point)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert_eq!(
            status.signal(),
            Some(nix::sys::signal::Signal::SIGKILL as i32),
            "{point}: the process was killed by SIGKILL, got {status:?}"
        );
        let store = chassis::store::open(&w.state(), OpenMode::ReadOnly).unwrap();
        assert_eq!(store.integrity_check().unwrap(), "ok", "{point}");
        assert_eq!(
            store.current("c.toml").unwrap().unwrap().summary.id,
            "gen_0001",
            "{point}: the current generation is unchanged"
        );
        assert_eq!(store.list(None).unwrap().len(), 1, "{point}");
        assert_eq!(store.entry_mounts("c.toml").unwrap()["db"], 1, "{point}");
        drop(store);
        // The next publish goes through.
        let (code, doc) = w.json(&["publish", "c.toml"]);
        assert_eq!(code, 0, "{point}: {doc}");
        assert_eq!(doc["generation_id"], "gen_0002", "{point}");
    }
}

#[test]
fn the_canary_is_in_no_output_and_not_in_the_database_file() {
    let w = Workspace::new();
    w.write(&flat("postgres://a"));
    let mut outputs = Vec::new();
    for args in [
        &["publish", "c.toml"][..],
        &["plan", "c.toml"],
        &["--format", "json", "plan", "c.toml"],
        &["--format", "json", "publish", "c.toml"],
        &["generations", "list"],
        &["--format", "json", "generations", "show", "gen_0001"],
        &["generations", "show", "gen_0001"],
    ] {
        outputs.push(w.run(args));
    }
    w.write(&flat("postgres://b"));
    outputs.push(w.run(&["--format", "json", "publish", "c.toml"]));
    outputs.push(w.run(&[
        "--format",
        "json",
        "diff",
        "generations",
        "gen_0001",
        "gen_0002",
    ]));
    outputs.push(w.run(&["explain", "reuse", "gen_0001", "gen_0002", "db"]));
    for r in &outputs {
        assert!(
            !r.stdout.contains(CANARY) && !r.stderr.contains(CANARY),
            "{}",
            r.transcript()
        );
    }
    for entry in std::fs::read_dir(w.path().join(".chassis")).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(
            !bytes
                .windows(CANARY.len())
                .any(|win| win == CANARY.as_bytes()),
            "the canary is in the store's files"
        );
        assert!(
            !bytes.windows(12).any(|win| win == b"postgres://b"),
            "configuration values stay out of the store"
        );
    }
}

// ---- plan == publish -------------------------------------------------

/// A small composition family: a provider, a consumer, an optional
/// consumer and a bystander, each switchable, with variable config,
/// versions and scopes.
#[derive(Clone, Debug)]
struct Shape {
    db_dsn: u8,
    db_major: u8,
    db_enabled: bool,
    app_enabled: bool,
    app_scope: bool,
    worker_enabled: bool,
    cache_config: u8,
}

fn render(s: &Shape) -> String {
    format!(
        r#"version = 1

[plugins.db]
version = "{major}.0.0"
provides = {{ database = "{major}.0.0" }}

[plugins.app]
version = "1.0.0"
requires = {{ database = ">=1" }}

[plugins.worker]
version = "1.0.0"
optional = {{ database = ">=1,<2" }}
provides = {{ jobs = "1.0.0" }}

[plugins.cache]
version = "1.0.0"
provides = {{ cache = "1.0.0" }}

[scopes."/team"]

[entries.db]
enabled = {db}
config = {{ dsn = "postgres://db/{dsn}" }}

[entries.app]
enabled = {app}
scope = "{scope}"

[entries.worker]
enabled = {worker}

[entries.cache]
config = {{ size = {cache} }}
"#,
        major = s.db_major,
        db = s.db_enabled,
        dsn = s.db_dsn,
        app = s.app_enabled,
        scope = if s.app_scope { "/team" } else { "/" },
        worker = s.worker_enabled,
        cache = s.cache_config,
    )
}

fn shape() -> impl Strategy<Value = Shape> {
    (
        0u8..2,
        1u8..3,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        0u8..2,
    )
        .prop_map(
            |(
                db_dsn,
                db_major,
                db_enabled,
                app_enabled,
                app_scope,
                worker_enabled,
                cache_config,
            )| {
                Shape {
                    db_dsn,
                    db_major,
                    db_enabled,
                    app_enabled,
                    app_scope,
                    worker_enabled,
                    cache_config,
                }
            },
        )
}

/// What plan predicted and what publish then did, as comparable JSON.
/// Entry id -> decision of a publish document's nodes.
fn decision_by_entry(doc: &serde_json::Value) -> std::collections::BTreeMap<String, String> {
    doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["entry_id"].as_str().unwrap().to_owned(),
                n["decision"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn decisions(doc: &serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "action": doc["action"],
        "generation_id": doc["generation_id"],
        "nodes": doc["nodes"],
        "digest": doc["digests"]["digest"],
        "semantic_digest": doc["digests"]["semantic_digest"],
    })
}

fn check_plan_equals_publish(w: &Workspace, text: &str) {
    w.write(text);
    let (plan_code, plan) = w.json(&["plan", "c.toml", "--allow-pending"]);
    let publish = w.run(&["--format", "json", "publish", "c.toml", "--allow-pending"]);
    assert_eq!(plan_code, publish.code, "{plan}\n{}", publish.transcript());
    if publish.code != 0 {
        assert_eq!(plan["action"], "reject");
        return;
    }
    let publish: serde_json::Value = serde_json::from_str(&publish.stdout).unwrap();
    assert_eq!(decisions(&plan), decisions(&publish), "for:\n{text}");
}

#[test]
fn plan_predicts_publish_on_fixed_sequences() {
    let w = Workspace::new();
    for text in [
        flat("postgres://a"),
        flat("postgres://a"),
        flat("postgres://b"),
        PENDING.to_owned(),
        CYCLE.to_owned(),
        flat("postgres://b"),
        flat("postgres://a"),
    ] {
        check_plan_equals_publish(&w, &text);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn plan_predicts_publish(steps in proptest::collection::vec(shape(), 1..4)) {
        let w = Workspace::new();
        for s in &steps {
            check_plan_equals_publish(&w, &render(s));
        }
    }
}

#[test]
fn publish_trace_writes_the_contract_signals_as_json_lines_without_secrets() {
    let w = Workspace::new();
    // The declared entries are placed without mounting (a one-shot publish
    // mounts what has a setup to run); the scripted model is mounted.
    w.write(&format!(
        "{}\n[entries.model]\nplugin = \"scripted\"\n[[entries.model.config.turns]]\ntext = \"{CANARY}\"\n",
        flat(&format!("postgres://app:{CANARY}@db/app"))
    ));
    let r = w.run(&["publish", "c.toml", "--trace", "trace.jsonl"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let text = std::fs::read_to_string(w.path().join("trace.jsonl")).unwrap();
    assert!(!text.contains(CANARY), "the trace leaked the canary");
    let signals: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: std::collections::BTreeSet<String> = signals
        .iter()
        .map(|s| s["name"].as_str().unwrap_or("").to_owned())
        .collect();
    let mounted: Vec<&str> = signals
        .iter()
        .filter(|s| s["name"] == "plugin.mount" && s["type"] == "span_start")
        .filter_map(|s| s["attrs"]["entry_id"].as_str())
        .collect();
    assert_eq!(mounted, ["model"], "{text}");
    for expected in [
        "harness.reconcile",
        "dependency.resolve",
        "plugin.mount",
        "generation.build",
        "generation.publish",
        "plugin.unmount",
        "harness.shutdown",
    ] {
        assert!(names.contains(expected), "missing {expected}: {names:?}");
    }
}

#[test]
fn a_rotated_secret_rebuilds_the_node_that_reads_it_and_plan_predicts_it() {
    let w = Workspace::new();
    w.write(&flat("postgres://a").replace(
        "[entries.app]",
        "[entries.app.config]\npassword = { secret = \"APP_PASSWORD\" }\n\n[entries.app2]\nplugin = \"app\"",
    ));
    let publish = |value: &str| {
        let r = run_in(
            w.path(),
            &["--format", "json", "publish", "c.toml"],
            &[("APP_PASSWORD", value)],
        );
        let doc: serde_json::Value = serde_json::from_str(&r.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", r.transcript()));
        (r, doc)
    };
    let plan = |value: &str| {
        let r = run_in(
            w.path(),
            &["--format", "json", "plan", "c.toml"],
            &[("APP_PASSWORD", value)],
        );
        serde_json::from_str::<serde_json::Value>(&r.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", r.transcript()))
    };
    let (r, _) = publish("first-password-value");
    assert_eq!(r.code, 0, "{}", r.transcript());
    // The same value: nothing to publish.
    let (_, doc) = publish("first-password-value");
    assert_eq!(doc["published"], false, "{doc}");
    // A rotated value: plan says so, and publish rebuilds only that node.
    let predicted = plan("second-password-value");
    let (_, doc) = publish("second-password-value");
    assert_eq!(doc["published"], true, "{doc}");
    assert_eq!(decisions(&predicted), decisions(&doc));
    let by = decision_by_entry(&doc);
    assert_eq!(by["app"], "rebuilt", "{doc}");
    assert_eq!(by["app2"], "reused", "{doc}");
    assert_eq!(by["db"], "reused", "{doc}");
    // Neither value is in the store.
    let bytes = std::fs::read(w.state()).unwrap();
    for v in ["first-password-value", "second-password-value"] {
        assert!(
            !bytes.windows(v.len()).any(|w| w == v.as_bytes()),
            "{v} stored"
        );
    }
}

/// A secret that is not set would fail publish's mount: plan says so, with
/// exit 1, instead of predicting a rebuild from the missing value; with the
/// secret set again it predicts no change.
#[test]
fn plan_reports_a_missing_secret_instead_of_a_rebuild() {
    let w = Workspace::new();
    w.write(&format!(
        "{}\n[plugins.vault]\nversion = \"1.0.0\"\n[entries.vault]\nconfig = {{ token = {{ secret = \"CHASSIS_PLAN_TEST_TOKEN\" }} }}\n",
        flat("postgres://a")
    ));
    let set = [("CHASSIS_PLAN_TEST_TOKEN", "token-value-1")];
    let with = |args: &[&str]| {
        let mut all = vec!["--color", "never"];
        all.extend_from_slice(args);
        run_in(w.path(), &all, &set)
    };
    assert_eq!(with(&["publish", "c.toml"]).code, 0);
    let r = w.run(&["plan", "c.toml"]);
    assert_eq!(r.code, 1, "{}", r.transcript());
    assert!(
        r.stdout.contains("CHASSIS_PLAN_TEST_TOKEN") && r.stdout.contains("vault"),
        "{}",
        r.transcript()
    );
    assert!(!r.stdout.contains("rebuild"), "{}", r.transcript());
    let (code, doc) = w.json(&["plan", "c.toml"]);
    assert_eq!(code, 1);
    assert_eq!(doc["reason"], "missing_secret", "{doc}");
    assert_eq!(doc["missing_secrets"][0]["entry"], "vault", "{doc}");
    assert_eq!(doc["missing_secrets"][0]["problem"], "missing", "{doc}");
    // A value too short to be redacted is refused as a missing one is:
    // plan says which and why, publish fails (exit 3), and the value
    // is in no output.
    let short = [("CHASSIS_PLAN_TEST_TOKEN", "k9!x")];
    let shortly = |args: &[&str]| {
        let mut all = vec!["--color", "never"];
        all.extend_from_slice(args);
        run_in(w.path(), &all, &short)
    };
    let r = shortly(&["--format", "json", "plan", "c.toml"]);
    assert_eq!(r.code, 1, "{}", r.transcript());
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(doc["missing_secrets"][0]["problem"], "too_short", "{doc}");
    for args in [&["plan", "c.toml"][..], &["publish", "c.toml"]] {
        let r = shortly(args);
        assert_eq!(
            r.code,
            if args[0] == "plan" { 1 } else { 3 },
            "{}",
            r.transcript()
        );
        assert!(
            r.transcript().contains("shorter than 6 characters")
                && r.transcript().contains("CHASSIS_PLAN_TEST_TOKEN"),
            "{}",
            r.transcript()
        );
        assert!(!r.transcript().contains("k9!x"), "{}", r.transcript());
    }
    let r = with(&["plan", "c.toml"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stdout.starts_with("plan: no-op"), "{}", r.transcript());
    // With `on_failure = "skip"`, publish would quarantine the entry rather
    // than fail: plan predicts that, and publish agrees.
    let text = std::fs::read_to_string(w.path().join("c.toml")).unwrap();
    w.write(&text.replace(
        "[entries.vault]\n",
        "[entries.vault]\non_failure = \"skip\"\n",
    ));
    let r = w.run(&["plan", "c.toml"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stdout.contains("quarantine  vault"), "{}", r.transcript());
    let (_, doc) = w.json(&["plan", "c.toml"]);
    assert_eq!(doc["quarantined"][0]["entry"], "vault", "{doc}");
    let (code, published) = w.json(&["publish", "c.toml"]);
    assert_eq!(code, 0, "{published}");
    // The same generation, digest for digest; then plan and publish agree
    // that nothing changes.
    assert_eq!(
        doc["generation_id"], published["generation_id"],
        "{published}"
    );
    assert_eq!(doc["digests"]["digest"], published["digests"]["digest"]);
    let (code, doc) = w.json(&["plan", "c.toml"]);
    assert_eq!((code, doc["action"].as_str()), (0, Some("no-op")), "{doc}");
}

/// An output file that cannot be written is refused before a store is
/// created (exit 2); `run` orders its `--trace` and `--record` the same way.
#[test]
fn an_unwritable_trace_creates_no_store() {
    let w = Workspace::new();
    w.write(&flat("postgres://a"));
    let r = w.run(&["publish", "c.toml", "--trace", "no/such/dir/t.jsonl"]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(!w.state().exists(), "{}", r.transcript());
}

/// A store its reader may not write — published by another user, or
/// archived read-only — is read all the same: `generations`, `plan` and
/// `diff` need no write, not even of SQLite's side files (they failed with
/// "attempt to write a readonly database"). As root the reader drops to
/// `nobody` (setpriv); otherwise the store is made read-only.
#[test]
fn a_store_its_reader_may_not_write_is_read() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        dir.path().join("c.toml"),
        "version = 1\n[plugins.a]\nversion = \"1.0.0\"\n[entries.a]\n",
    )
    .unwrap();
    let published = crate::harness::run_in(dir.path(), &["publish", "c.toml"], &[]);
    assert_eq!(published.code, 0, "{}", published.transcript());
    // The owner of /proc/self is this process's effective user.
    let root = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) == 0;
    if !root {
        let store = dir.path().join(".chassis");
        std::fs::set_permissions(
            store.join("state.db"),
            std::fs::Permissions::from_mode(0o444),
        )
        .unwrap();
        std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o555)).unwrap();
    }
    let read = |args: &[&str]| {
        let mut cmd = if root {
            let mut c = std::process::Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(env!("CARGO_BIN_EXE_chassis"));
            c
        } else {
            std::process::Command::new(env!("CARGO_BIN_EXE_chassis"))
        };
        let out = cmd
            .args(args)
            .current_dir(dir.path())
            .env("NO_COLOR", "1")
            .output()
            .expect("setpriv (util-linux) runs as root");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for args in [
        &["generations", "list"][..],
        &["generations", "show", "gen_0001"][..],
        &["plan", "c.toml"][..],
        &["diff", "generations", "gen_0001", "c.toml"][..],
    ] {
        let (code, stdout, stderr) = read(args);
        assert_eq!(code, Some(0), "{args:?}: {stdout}\n{stderr}");
    }
    let (_, listed, _) = read(&["generations", "list"]);
    assert!(listed.contains("gen_0001"), "{listed}");
    // Publishing still needs to write, and says so.
    let (code, _, stderr) = read(&["publish", "c.toml"]);
    assert_eq!(code, Some(3), "{stderr}");
    assert!(stderr.contains("readonly"), "{stderr}");
    if !root {
        let store = dir.path().join(".chassis");
        std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// What `chassis` writes when a document of a stored generation does not
/// read back: in no output.
pub(crate) const DAMAGE_CANARY: &str = "sk-canary-damaged-5e1f0a";

/// The roots of generation `sequence`'s snapshot and nodes in the store
/// at `state`.
pub(crate) fn roots(conn: &rusqlite::Connection, sequence: i64) -> (String, String) {
    conn.query_row(
        "SELECT snapshot_root, nodes_root FROM generations WHERE sequence = ?1",
        [sequence],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .unwrap()
}

/// The text of the chunk tree at `root`.
pub(crate) fn stored_text(conn: &rusqlite::Connection, root: &str) -> String {
    chassis::store::chunks::read::<rusqlite::Error>(root, &mut |hash| {
        conn.query_row(
            "SELECT level, body FROM chunks WHERE hash = ?1",
            [hash],
            |r| {
                Ok(Some(chassis::store::chunks::Chunk {
                    level: r.get(0)?,
                    body: r.get(1)?,
                }))
            },
        )
    })
    .unwrap()
}

/// Store `text` as a chunk tree whose chunks pass their hash check (what
/// a document damaged before it was cut looks like); its root.
pub(crate) fn put_text(conn: &rusqlite::Connection, text: &str) -> String {
    chassis::store::chunks::write::<rusqlite::Error>(text, &mut |hash, chunk| {
        conn.execute(
            "INSERT OR IGNORE INTO chunks (hash, level, body) VALUES (?1, ?2, ?3)",
            rusqlite::params![hash, chunk.level, chunk.body],
        )
        .map(|_| ())
    })
    .unwrap()
}

/// Give the snapshot of generation `sequence` a record that no longer
/// hashes to its digests (its `config_hash` is the canary), its chunks
/// passing their hash check.
pub(crate) fn damage_snapshot_record(conn: &rusqlite::Connection, sequence: i64) {
    let (snapshot, _) = roots(conn, sequence);
    let text = stored_text(conn, &snapshot);
    let key = "\"config_hash\": \"";
    let at = text.find(key).unwrap() + key.len();
    let text = format!("{}{DAMAGE_CANARY}{}", &text[..at], &text[at + 64..]);
    let root = put_text(conn, &text);
    conn.execute(
        "UPDATE generations SET snapshot_root = ?1 WHERE sequence = ?2",
        rusqlite::params![root, sequence],
    )
    .unwrap();
}

/// `flat(dsn)` with an agent, so `run` reads the store too.
fn flat_with_agent(dsn: &str) -> String {
    format!(
        "{}\n[entries.model]\nplugin = \"scripted\"\nconfig.repeat_last = true\n\
         [[entries.model.config.turns]]\ntext = \"hi\"\n\
         [agents.a]\nprompt = \"p\"\n",
        flat(dsn)
    )
}

#[test]
fn damaged_contents_of_a_store_are_refused_alike_by_every_command_that_reads_them() {
    // A real chassis store whose contents are damaged — a chunk that
    // fails its hash check, a node list or a snapshot that does not read
    // back — is one error for every command that reads them: exit 2,
    // `store::damaged`, the store, the composition, the generation and
    // what of it is damaged, never its contents; nothing is written.
    let w = Workspace::new();
    w.write(&flat_with_agent("postgres://a"));
    assert_eq!(w.run(&["publish", "c.toml"]).code, 0);
    w.write(&flat_with_agent("postgres://b"));
    assert_eq!(w.run(&["publish", "c.toml"]).code, 0);
    let pristine = std::fs::read(w.state()).unwrap();
    // A change to publish: what `publish`, `plan` and `run` would do.
    w.write(&flat_with_agent("postgres://c"));
    let reading: [&[&str]; 3] = [
        &["generations", "show", "gen_0002"],
        &["diff", "generations", "gen_0001", "gen_0002"],
        &["explain", "reuse", "gen_0001", "gen_0002", "db"],
    ];
    let seeded: [&[&str]; 3] = [
        &["publish", "c.toml"],
        &["plan", "c.toml"],
        &[
            "run",
            "c.toml",
            "--state",
            ".chassis/state.db",
            "--input",
            "x",
        ],
    ];
    type Damage = fn(&rusqlite::Connection);
    let damages: [(&str, Damage, &str, bool); 4] = [
        (
            // A chunk of gen_0002's nodes whose bytes changed.
            "a chunk",
            |c| {
                let (_, nodes) = roots(c, 2);
                c.execute(
                    "UPDATE chunks SET body = body || X'20' WHERE hash = ?1",
                    [&nodes],
                )
                .unwrap();
            },
            "the nodes of gen_0002 (composition `c.toml`): chunk ",
            true,
        ),
        (
            // A chunk of gen_0002's nodes that is gone.
            "a missing chunk",
            |c| {
                let (_, nodes) = roots(c, 2);
                c.execute("DELETE FROM chunks WHERE hash = ?1", [&nodes])
                    .unwrap();
            },
            "the nodes of gen_0002 (composition `c.toml`): chunk ",
            true,
        ),
        (
            // A node whose mount is a string: serde would quote it.
            "a node list",
            |c| {
                let (_, nodes) = roots(c, 2);
                let text = stored_text(c, &nodes).replacen(
                    "\"mount\":1,",
                    &format!("\"mount\":\"{DAMAGE_CANARY}\","),
                    1,
                );
                let root = put_text(c, &text);
                c.execute(
                    "UPDATE generations SET nodes_root = ?1 WHERE sequence = 2",
                    [&root],
                )
                .unwrap();
            },
            "the nodes of gen_0002 (composition `c.toml`): it does not have the shape of a node at line ",
            true,
        ),
        (
            // A snapshot whose record no longer hashes to its digests:
            // `diff` found it and failed (exit 3, another message).
            "a snapshot",
            |c| damage_snapshot_record(c, 2),
            "the snapshot of gen_0002 (composition `c.toml`): its record does not read back",
            false,
        ),
    ];
    for (kind, damage, says, head) in damages {
        std::fs::write(w.state(), &pristine).unwrap();
        {
            let conn = rusqlite::Connection::open(w.state()).unwrap();
            damage(&conn);
        }
        let damaged = std::fs::read(w.state()).unwrap();
        assert!(damaged != pristine, "{kind}");
        let mut commands: Vec<&[&str]> = reading.to_vec();
        if head {
            commands.extend(seeded);
        }
        for command in commands {
            let r = w.run(command);
            assert_eq!(r.code, 2, "{kind} {command:?}: {}", r.transcript());
            assert!(
                r.stderr.contains(&format!(
                    "error[store::damaged]: the store `.chassis/state.db` is damaged: {says}"
                )) && r.stderr.contains("help: restore the store from a backup")
                    && r.stderr.contains("--state NEW_PATH"),
                "{kind} {command:?}: {}",
                r.transcript()
            );
            let mut json = vec!["--format", "json"];
            json.extend(command);
            let r = w.run(&json);
            assert_eq!(r.code, 2, "{kind} {command:?}: {}", r.transcript());
            let d = last_diagnostic(&r);
            assert_eq!(d["code"], "store::damaged", "{kind} {command:?}: {d}");
            assert_eq!(d["help"].as_array().map(Vec::len), Some(1), "{d}");
            for out in [&r.stdout, &r.stderr] {
                assert!(!out.contains(DAMAGE_CANARY), "{kind} {command:?}: {out}");
                assert!(!out.contains("postgres://"), "{kind} {command:?}: {out}");
            }
            assert!(
                std::fs::read(w.state()).unwrap() == damaged,
                "{kind} {command:?} wrote to the store"
            );
            for side in ["state.db-wal", "state.db-shm", "state.db-journal"] {
                assert!(
                    !w.path().join(".chassis").join(side).exists(),
                    "{kind} {command:?}: {side}"
                );
            }
        }
    }
    // The same store, undamaged, reads.
    std::fs::write(w.state(), &pristine).unwrap();
    for command in reading {
        assert_eq!(w.run(command).code, 0, "{command:?}");
    }
}
