//! The application layer used as a library, with no CLI: operations return
//! data, failures carry their exit-code row, and what an operation says
//! while it works arrives as typed notices.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::approval::{Answer, Prompter};
use super::plan::{PlanOptions, PlanOutcome, plan};
use super::publish::{PublishOptions, publish};
use super::run::{RunInput, RunOptions, RunState, RunStatus, run};
use super::{AppError, Caller, ErrorKind, Notice, Reporter};
use crate::engine::policy::ApprovalRequest;

/// Keeps a line per notice: its kind, and the detail a test looks at.
#[derive(Default)]
struct Collect(Mutex<Vec<String>>);

impl Collect {
    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

impl Reporter for Collect {
    fn notice(&self, notice: Notice<'_>) {
        let line = match notice {
            Notice::Diagnostics { diagnostics, .. } => format!(
                "diagnostics {}",
                diagnostics
                    .iter()
                    .map(|d| d.code.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            Notice::StoreCreated { .. } => "store created".into(),
            Notice::UnknownApproval {
                tool, suggestion, ..
            } => format!("unknown approval {tool} {suggestion:?}"),
            Notice::RunStored { .. } => "run stored".into(),
            _ => "other".into(),
        };
        self.0.lock().unwrap().push(line);
    }
}

/// Answers every question "once" and remembers what it was asked.
#[derive(Default)]
struct Asked(Mutex<Vec<String>>);

impl Prompter for Asked {
    fn ask<'a>(&'a self, request: &'a ApprovalRequest) -> super::approval::Asking<'a> {
        self.0.lock().unwrap().push(request.tool.clone());
        Box::pin(std::future::ready(Ok(Answer::Once)))
    }
}

fn caller() -> (Caller, Arc<Collect>) {
    let collect = Arc::new(Collect::default());
    (
        Caller::new(Arc::clone(&collect) as Arc<dyn Reporter>),
        collect,
    )
}

/// A copy of the examples in a fresh directory (a run writes notes there).
fn examples() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    for name in ["quickstart.toml", "quickstart-tools.toml"] {
        std::fs::copy(root.join(name), dir.path().join(name)).unwrap();
    }
    let file = dir.path().join("quickstart.toml");
    (dir, file)
}

/// Publish `file` into its default store, as `chassis publish FILE` does.
fn publishing(file: &Path) -> PublishOptions {
    PublishOptions {
        file: file.to_path_buf(),
        state: None,
        allow_pending: false,
        trace: None,
        update_lock: false,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn publish_then_plan_and_publish_again_change_nothing() {
    let (_dir, file) = examples();
    let (caller, notes) = caller();
    let options = publishing(&file);
    let rt = runtime();
    let first = rt.block_on(publish(&options, &caller)).unwrap();
    assert!(first.published);
    assert_eq!(first.generation_id, "gen_0001");
    assert!(first.previous.is_none());
    assert_eq!(notes.lines(), ["store created"]);
    assert!(
        first.store.ends_with(".chassis/state.db"),
        "{:?}",
        first.store
    );

    let planned = plan(
        &PlanOptions {
            file: file.clone(),
            state: None,
            allow_pending: false,
        },
        &caller,
    )
    .unwrap();
    let PlanOutcome::Planned(p) = planned else {
        panic!("a plan of a published composition is not refused");
    };
    assert!(!p.prediction.published);
    assert_eq!(p.previous.as_deref(), Some("gen_0001"));

    let again = rt.block_on(publish(&options, &caller)).unwrap();
    assert!(!again.published);
    assert_eq!(again.digests, first.digests);
    assert_eq!(notes.lines(), ["store created"], "no second store note");
}

#[test]
fn a_run_returns_its_result_and_asks_the_callers_prompter() {
    let (_dir, file) = examples();
    let (caller, notes) = caller();
    let asked = Arc::new(Asked::default());
    let options = RunOptions {
        file,
        agent: None,
        input: RunInput::AgentDefault,
        approve: vec!["save_nte".into()],
        grants: Vec::new(),
        yes: false,
        env_file: None,
        state: RunState::Default,
        allow_pending: false,
        trace: None,
        record: None,
        replay: None,
        update_lock: false,
        request_tools: None,
        prompter: Arc::clone(&asked) as Arc<dyn Prompter>,
        observer: None,
        session: None,
    };
    let outcome = runtime().block_on(run(options, &caller)).unwrap();
    assert_eq!(outcome.status, RunStatus::Succeeded);
    assert!(
        outcome
            .result
            .answer
            .as_deref()
            .is_some_and(|a| a.contains("9 words"))
    );
    assert_eq!(outcome.generation.id.to_string(), "gen_0001");
    // The document a server sends is the one `--format json` prints, its
    // keys in the same order.
    let document = outcome.document(&caller.redactor);
    assert_eq!(
        outcome.document_text(&caller.redactor).get(),
        document.to_string()
    );
    assert_eq!(document["format_version"], 1);
    assert_eq!(document["generation_id"], "gen_0001");
    assert_eq!(document["composition"]["generation_id"], "gen_0001");
    assert!(document["budget"][0]["dimension"].is_string(), "{document}");
    assert_eq!(document["trace_id"].as_str().map(str::len), Some(32));
    assert!(document["messages"].as_array().is_some_and(|m| m.len() > 2));
    assert!(document.get("session").is_none());
    // `save_note` needs approval: the caller's prompter was asked.
    assert_eq!(*asked.0.lock().unwrap(), ["save_note"]);
    assert_eq!(
        notes.lines(),
        [
            "unknown approval save_nte Some(\"save_note\")",
            "run stored"
        ]
    );
}

#[test]
fn failures_carry_their_exit_code_row() {
    let (dir, file) = examples();
    let (caller, notes) = caller();
    // A file that does not load: its diagnostics are told, then the failure.
    let broken = dir.path().join("broken.toml");
    std::fs::write(&broken, "version = 1\nvresion = 2\n").unwrap();
    let Err(e) = super::check::check_file(&broken, &*caller.reporter) else {
        panic!("an unknown key fails the load");
    };
    assert!(matches!(e, AppError::Load { errors: 1, .. }), "{e:?}");
    assert_eq!(e.kind(), ErrorKind::Input);
    assert_eq!(notes.lines(), ["diagnostics load::unknown-key"]);
    // An unknown agent is unusable input, with a suggestion.
    let ws = super::workspace::load_file(&file, &super::env::RunEnv::process(), &*caller.reporter)
        .unwrap();
    let Err(e) = super::explain::budgets_in(&super::explain::View::of(&ws), Some("assistent"))
    else {
        panic!("no such agent");
    };
    let AppError::Problem(p) = &e else {
        panic!("{e:?}")
    };
    assert_eq!(p.kind, ErrorKind::Input);
    assert_eq!(p.help, ["did you mean `assistant`?"]);
    // A store that is not there, for a command that only reads.
    let at = super::state::StoreSelection::new(Some(&dir.path().join("none.db")), None);
    let Err(e) = super::history::generations(&at) else {
        panic!("no store");
    };
    assert_eq!(e.kind(), ErrorKind::Input);
    assert!(matches!(e, AppError::Store(_)));
}

#[test]
fn generation_refs_are_ids_or_qualified_ids_never_git_operands() {
    use super::state::GenerationRef;
    let plain = GenerationRef::parse("gen_0002").unwrap();
    assert_eq!((plain.lineage, plain.id.sequence()), (None, 2));
    let qualified = GenerationRef::parse("support-bot:gen_0012").unwrap();
    assert_eq!(qualified.lineage.as_deref(), Some("support-bot"));
    assert_eq!(qualified.id.sequence(), 12);
    // The last colon splits: a lineage may hold one (a path on some systems).
    let colon = GenerationRef::parse("a:b.toml:gen_0001").unwrap();
    assert_eq!(colon.lineage.as_deref(), Some("a:b.toml"));
    // `REV:PATH` (a composition at a git revision) is not a generation.
    assert_eq!(GenerationRef::parse("origin/main:composition.toml"), None);
    assert_eq!(GenerationRef::parse("main:gen_12"), None);
    assert_eq!(GenerationRef::parse("gen_0001.toml"), None);
}

#[test]
fn a_lineage_is_named_by_the_file_in_its_workspace() {
    use super::state::lineage_of;
    use crate::engine::model::HostSettings;
    let none = HostSettings::default();
    let p = std::path::Path::new;
    // Beside the default store: the file's name; in a subfolder, its path.
    assert_eq!(
        lineage_of(p("/w/composition.toml"), &none, p("/w/.chassis/state.db")),
        "composition.toml"
    );
    assert_eq!(
        lineage_of(p("/w/deploy/c.toml"), &none, p("/w/.chassis/state.db")),
        "deploy/c.toml"
    );
    // `.` and `..` resolve before naming.
    assert_eq!(
        lineage_of(p("/w/x/../c.toml"), &none, p("/w/./.chassis/state.db")),
        "c.toml"
    );
    // A store elsewhere: the deepest folder holding both.
    assert_eq!(
        lineage_of(p("/w/sub/c.toml"), &none, p("/w/state/s.db")),
        "sub/c.toml"
    );
    assert_eq!(lineage_of(p("/w/c.toml"), &none, p("/s.db")), "w/c.toml");
    // `name = "…"` wins.
    let named = HostSettings {
        name: Some(crate::engine::span::Located::new("bot".to_owned(), None)),
        ..HostSettings::default()
    };
    assert_eq!(
        lineage_of(p("/w/c.toml"), &named, p("/w/.chassis/state.db")),
        "bot"
    );
}

#[test]
fn a_seed_read_beside_the_load_is_used_only_while_it_is_the_head() {
    use super::state::{lineage_of, open_to_publish, read_seed};
    use crate::engine::model::HostSettings;
    use crate::store::OpenMode;
    let (dir, file) = examples();
    let (caller, _) = caller();
    let options = publishing(&file);
    let rt = runtime();
    let first = rt.block_on(publish(&options, &caller)).unwrap();
    let host = HostSettings::default();
    let lineage = lineage_of(&file, &host, &first.store);
    let peek = || {
        read_seed(&first.store, &lineage, OpenMode::Peek)
            .unwrap()
            .0
            .expect("a store")
    };
    let open =
        || open_to_publish(&first.store, &file, &host, Arc::clone(&caller.reporter)).unwrap();
    let seed = peek();
    assert_eq!(seed.sequence, 1);
    assert!(open().still_current(&seed).unwrap());
    // Another publish moved the head on: the earlier read is stale.
    let text = std::fs::read_to_string(&file).unwrap();
    let extra = format!(
        "{text}\n[plugins.extra]\nversion = \"1.0.0\"\nprovides = {{ extra = \"1.0.0\" }}\n\n[entries.extra]\n"
    );
    std::fs::write(&file, extra).unwrap();
    let second = rt.block_on(publish(&options, &caller)).unwrap();
    assert_eq!(second.generation_id, "gen_0002");
    assert!(!open().still_current(&seed).unwrap());
    assert!(open().still_current(&peek()).unwrap());
    // The first generation published anew in a new store: the same head,
    // under another key — stale.
    std::fs::write(&file, &text).unwrap();
    std::fs::remove_dir_all(dir.path().join(".chassis")).unwrap();
    let again = rt.block_on(publish(&options, &caller)).unwrap();
    assert_eq!(again.generation_id, "gen_0001");
    assert_eq!(again.digests.digest, first.digests.digest);
    assert!(!open().still_current(&seed).unwrap());
    assert!(open().still_current(&peek()).unwrap());
    // A composition that names its lineage publishes into it, not on the
    // default lineage's head read beside its load.
    std::fs::write(&file, format!("name = \"named\"\n{text}")).unwrap();
    let named = rt.block_on(publish(&options, &caller)).unwrap();
    assert!(named.published);
    assert_eq!(named.generation_id, "gen_0001");
    assert!(named.previous.is_none());
    assert!(
        named
            .impact
            .iter()
            .all(|i| i.decision == crate::runtime::identity::Decision::Added),
        "a new lineage adds every node"
    );
}
