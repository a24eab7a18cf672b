//! `run`: publish a composition as a generation and run one agent against
//! exactly it — the model's tool calls crossing the tool boundary (hooks,
//! policy, approval, budget, telemetry) — then record what happened.
//!
//! The steps, in order: everything that can be refused up front (the env
//! file, the lock, the composition, the agent, the input, the request's
//! tools, the files the run writes, the store); then the run, racing the
//! caller's interrupt; then the recording and the store, which see only a
//! finished run.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::engine::diag::did_you_mean;
use crate::engine::policy::{Grant, PolicyRules};
use crate::engine::telemetry::Telemetry;
use crate::runtime::agent::{
    AgentError, AgentObserver, AgentRequest, AgentResult, AgentRunner, MonotonicClock, StopReason,
};
use crate::runtime::harness::{SeedNode, SeedState};
use crate::runtime::replay::{Fallback, Replay, ReplayDocument};
use crate::runtime::request_tools::RequestTools;
use crate::runtime::{
    ExecutorServices, Generation, Harness, ReconcileError, ReconcileReport, ToolExecutor,
    Ungoverned,
};
use crate::store::{NewRun, now_rfc3339};

use super::approval::{Approvals, Prompter};
use super::caller::Caller;
use super::candidates::{self, Candidate, Follow, Follower};
use super::env::RunEnv;
use super::error::{AppError, ErrorKind, Problem};
use super::report::Notice;
use super::state::{Publication, StateStore, open_to_publish, previous_of, state_path_of};
use super::workspace::{Workspace, load_file};

/// Where a run's input comes from.
pub enum RunInput {
    /// This text.
    Text(String),
    /// A file's contents.
    File(PathBuf),
    /// Everything a reader yields (standard input); `what` names it in an
    /// error.
    Read {
        /// `stdin`.
        what: &'static str,
        /// The reader.
        reader: Box<dyn Read + Send>,
    },
    /// The agent's `default_input`.
    AgentDefault,
}

/// Whether and where a run is recorded in a store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunState {
    /// Not recorded (published in memory only).
    None,
    /// In the composition's store: its `[store] path`, else
    /// `.chassis/state.db` beside it.
    Default,
    /// In this store.
    At(PathBuf),
}

/// What to run.
pub struct RunOptions {
    /// The composition.
    pub file: PathBuf,
    /// The agent (required when the composition declares several).
    pub agent: Option<String>,
    /// The input.
    pub input: RunInput,
    /// Tools approved for every call.
    pub approve: Vec<String>,
    /// Grants that widen the default policy (`[policy]`, or nothing): they
    /// never override a deny rule, and a scope governed by a `policy`
    /// provider ignores them.
    pub grants: Vec<String>,
    /// Approve every call that needs approval.
    pub yes: bool,
    /// Secrets and `enabled_if` variables from this env file too.
    pub env_file: Option<PathBuf>,
    /// Record the publication and the run in a store.
    pub state: RunState,
    /// Run without the pending entries instead of refusing.
    pub allow_pending: bool,
    /// Write every telemetry signal (redacted) here as JSON lines.
    pub trace: Option<PathBuf>,
    /// Record every model and tool call (redacted) here.
    pub record: Option<PathBuf>,
    /// Answer model and tool calls from this recording.
    pub replay: Option<(PathBuf, Fallback)>,
    /// Start the `mcp` servers first, pin what they offer, and accept a
    /// changed tool list during the run as a candidate generation.
    pub update_lock: bool,
    /// Tools this run brings with its request.
    pub request_tools: Option<PathBuf>,
    /// Asks a person about calls that need approval.
    pub prompter: Arc<dyn Prompter>,
    /// Told of every step (model call, tool call, sub-agent).
    pub observer: Option<Arc<dyn AgentObserver>>,
    /// Continue (or start) this session of the store: the model sees its
    /// earlier turns, and this run is added as its next turn.
    pub session: Option<String>,
}

/// How a finished run ended, as the store records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunStatus {
    /// It answered.
    Succeeded,
    /// It ran to the end without an answer (step limit, refusal).
    NoAnswer,
    /// A budget ran out, or a model, tool or hook failed.
    Failed,
}

impl RunStatus {
    /// The status of a run that stopped for `stop`.
    pub fn of(stop: &StopReason) -> Self {
        match stop {
            StopReason::Answered => RunStatus::Succeeded,
            StopReason::StepLimit { .. } | StopReason::Refused { .. } => RunStatus::NoAnswer,
            StopReason::BudgetExhausted { .. }
            | StopReason::ModelFailed { .. }
            | StopReason::Failed { .. } => RunStatus::Failed,
        }
    }

    /// `succeeded`, `no_answer`, `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Succeeded => "succeeded",
            RunStatus::NoAnswer => "no_answer",
            RunStatus::Failed => "failed",
        }
    }
}

/// A finished run.
pub struct RunOutcome {
    /// What the agent did.
    pub result: AgentResult,
    /// The generation it ran on (a request's own candidate when it brought
    /// tools).
    pub generation: Arc<Generation>,
    /// Candidate generations built while it ran.
    pub candidates: Vec<Candidate>,
    /// The tools its request brought, by name.
    pub request_tools: Vec<String>,
    /// How it ended.
    pub status: RunStatus,
    /// The session it was a turn of, and which turn.
    pub session: Option<SessionTurn>,
}

/// A run's place in a session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionTurn {
    /// The session.
    pub id: String,
    /// Its turn number (1 for the first).
    pub turn: usize,
    /// Whether the turn was saved: false when another turn of the session
    /// was saved while this one ran (the run is then `failed`).
    pub saved: bool,
}

impl RunOutcome {
    /// Why the run, which ran, still failed: its session turn was not saved
    /// (a failure while running, exit 3).
    pub fn unsaved_turn(&self) -> Option<AppError> {
        self.session
            .as_ref()
            .filter(|s| !s.saved)
            .map(|s| super::state::session_moved_on(&s.id, ErrorKind::Failure).into())
    }
}

use super::session::{Conversation, SESSION_ID_RULE, SessionError, is_session_id};

/// Run an agent of `options.file`.
pub async fn run(options: RunOptions, caller: &Caller) -> Result<RunOutcome, AppError> {
    if let Some(id) = options.session.as_deref().filter(|id| !is_session_id(id)) {
        return Err(
            Problem::input(format!("`--session {id}`: {SESSION_ID_RULE}"))
                .with_code("run::bad-session")
                .into(),
        );
    }
    let env = super::mount::run_env(options.env_file.as_deref())?;
    let redactor = &caller.redactor;
    if options.update_lock {
        super::lock::update_for(&options.file, &env, caller).await?;
    }
    let ws = load_file(&options.file, &env, &*caller.reporter)?;
    if let Some(refusal) = ws.refusal(options.allow_pending, &*caller.reporter) {
        return Err(AppError::Refused {
            verb: "run",
            display: ws.display,
            refusal,
        });
    }
    let agent = pick_agent(&ws, options.agent.as_deref())?;
    let input = read_input(options.input, &ws, &agent)?;
    let grants = parse_grants(&options.grants)?;
    notice_unknown_approvals(caller, &options.approve, &ws);
    let request_tools = match &options.request_tools {
        None => RequestTools::default(),
        Some(path) => {
            let file = super::request_tools::load_file(path, &env, &*caller.reporter)?;
            // Refused before anything mounts when they cannot join.
            crate::engine::request_tools::with_request_tools(
                &ws.composition,
                &agent,
                &file.decl(),
                &|_| false,
            )
            .map_err(|e| AppError::input(e.to_string()))?;
            file.request_tools(redactor)?
        }
    };
    let mut request_tool_names: Vec<String> = request_tools
        .tools
        .iter()
        .map(|t| t.tool.name().to_owned())
        .collect();
    request_tool_names.sort();

    // The files the run writes first (a path that cannot be written is
    // refused before a store is created), then the store.
    let telemetry = super::telemetry::for_operation(options.trace.as_deref(), caller)?;
    let record_file = options
        .record
        .as_deref()
        .map(RecordFile::create)
        .transpose()?;
    let store_path = match &options.state {
        // A session lives in the store: the default one unless named.
        RunState::None if options.session.is_some() => {
            Some(state_path_of(None, &options.file, &ws.composition.host))
        }
        RunState::None => None,
        RunState::Default => Some(state_path_of(None, &options.file, &ws.composition.host)),
        RunState::At(path) => Some(path.clone()),
    };
    let mut store = match store_path {
        None => None,
        Some(path) => {
            // A run publishes: not into a lineage a server holds.
            Some(open_to_publish(
                &path,
                &options.file,
                &ws.composition.host,
                Arc::clone(&caller.reporter),
            )?)
        }
    };
    let seed = store.as_ref().map(StateStore::seed).transpose()?;
    // A session past `[serve] session_ttl_seconds` is gone here too, as on
    // the server: the command line starts it afresh.
    let ttl = ws
        .composition
        .host
        .serve
        .as_ref()
        .and_then(|s| s.session_ttl_seconds);
    // A session's turn is claimed in the store before it is read, and held
    // until it is saved: a second turn of the session at once, in this
    // process or another (`chassis run`, `chassis serve`), is refused here
    // — before any model call, tool call or budget — rather than found
    // out when saving.
    let run_id = options
        .session
        .as_ref()
        .map(|_| crate::runtime::agent::new_run_id());
    let lease = match (&options.session, store.as_mut(), &run_id) {
        (Some(id), Some(store), Some(run_id)) => {
            Some(super::session::TurnLease::take(store, id, run_id)?)
        }
        _ => None,
    };
    if let (Some(_), Some(store), Some(ttl)) = (&options.session, store.as_mut(), ttl) {
        store.expire_sessions(ttl)?;
    }
    let conversation = match (&options.session, &store) {
        (Some(id), Some(store)) => Some(resume_session(store, id, &agent)?),
        _ => None,
    };
    let replay = replay(
        options.record.is_some(),
        options.replay.as_ref(),
        redactor,
        &telemetry,
    )?;
    let approvals = Approvals::new(
        options.approve.iter().cloned(),
        options.yes,
        Arc::clone(&options.prompter),
        Arc::clone(&telemetry),
    );
    let started_at = now_rfc3339();
    let ran = execute(
        Execution {
            ws: &ws,
            env: &env,
            telemetry,
            seed: seed.clone(),
            approvals,
            replay: replay.clone(),
            observer: options.observer.clone(),
            request: AgentRequest {
                agent,
                input,
                run_id,
                history: conversation
                    .as_ref()
                    .map(|c| c.messages.clone())
                    .unwrap_or_default(),
            },
            request_tools,
            file: &options.file,
            update_lock: options.update_lock,
            grants,
        },
        caller,
    )
    .await;
    let ran = match ran {
        Ok(ran) => ran,
        Err(e) => {
            // The turn is let go first (its claim is no record).
            drop(lease);
            // A first run that fails before publishing leaves no store.
            if let Some(store) = store {
                store.discard_if_unused();
            }
            return Err(e);
        }
    };
    super::publish::notice_quarantined(caller, &ran.report);
    let mut status = RunStatus::of(&ran.result.stop);
    if let (Some(file), Some(replay)) = (record_file, &replay) {
        file.write_recording(&ran.result, replay, caller)?;
    }
    if let (Some(store), Some(seed)) = (store.as_mut(), &seed) {
        record_publications(store, seed, &ran)?;
    }
    // The turn is saved before the run is recorded: a turn another one
    // overtook (two turns of one session at once) is recorded `failed`,
    // never `succeeded` with no trace of it in the session.
    let session = match (conversation, store.as_mut()) {
        (Some(c), Some(store)) => {
            let saved = store.try_save_session(
                &c.with_turn(&ran.result, status.as_str(), redactor),
                c.next_turn() - 1,
            )?;
            if !saved {
                status = RunStatus::Failed;
            }
            Some(SessionTurn {
                turn: c.next_turn(),
                id: c.id,
                saved,
            })
        }
        _ => None,
    };
    // Saved (or not): the session may take its next turn.
    drop(lease);
    if let (Some(store), Some(_)) = (store.as_mut(), &seed) {
        record_run(store, &ran, status, started_at, caller)?;
    }
    Ok(RunOutcome {
        result: ran.result,
        generation: ran.generation,
        candidates: ran.candidates,
        request_tools: request_tool_names,
        status,
        session,
    })
}

/// Session `id` of the store, taking a turn of `agent`: unusable input when
/// the session belongs to another agent.
fn resume_session(store: &StateStore, id: &str, agent: &str) -> Result<Conversation, AppError> {
    Conversation::resume(id.to_owned(), store.session(id)?, agent).map_err(|e| match e {
        SessionError::OtherAgent(owner) => {
            Problem::input(format!("session `{id}` belongs to agent `{owner}`"))
                .with_code("run::session-agent")
                .with_help(format!(
                    "a session talks to one agent: pass `--agent {owner}`, or start another session"
                ))
                .into()
        }
        SessionError::Unreadable(why) => AppError::failure(format!(
            "session `{id}` does not read back from the store: {why}"
        )),
    })
}

/// `--grant` values as grants (unusable input when one is not).
pub(crate) fn parse_grants(grants: &[String]) -> Result<Vec<Grant>, AppError> {
    grants
        .iter()
        .map(|g| {
            Grant::parse(g).map_err(|e| {
                Problem::input(format!("`--grant {g}` is not a grant: {}", e.message))
                    .with_help("a grant is `name[:resource-pattern]`, e.g. `filesystem.read:/workspace/**` or `network.*`")
                    .into()
            })
        })
        .collect()
}

fn pick_agent(ws: &Workspace, asked: Option<&str>) -> Result<String, AppError> {
    let names: Vec<&String> = ws.composition.agents.keys().collect();
    match asked {
        Some(name) if ws.composition.agents.contains_key(name) => Ok(name.to_owned()),
        Some(name) => Err(ws.unknown_agent(name)),
        None => match names.as_slice() {
            [only] => Ok((*only).clone()),
            [] => Err(Problem::input(format!("`{}` declares no agent", ws.display))
                .with_help("add one, e.g.\n\n    [agents.assistant]\n    prompt = \"You are a helpful assistant.\"\n")
                .into()),
            many => Err(AppError::input(format!(
                "`{}` declares {} agents; choose one with --agent: {}",
                ws.display,
                many.len(),
                many.iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        },
    }
}

fn read_input(input: RunInput, ws: &Workspace, agent: &str) -> Result<String, AppError> {
    match input {
        RunInput::Text(text) => Ok(text),
        RunInput::File(path) => std::fs::read_to_string(&path).map_err(|e| {
            AppError::input(format!(
                "cannot read the input file `{}`: {e}",
                path.display()
            ))
        }),
        RunInput::Read { what, mut reader } => {
            let mut text = String::new();
            reader
                .read_to_string(&mut text)
                .map_err(|e| AppError::input(format!("cannot read the input from {what}: {e}")))?;
            Ok(text)
        }
        RunInput::AgentDefault => ws
            .composition
            .agents
            .get(agent)
            .and_then(|a| a.default_input.clone())
            .ok_or_else(|| {
                Problem::input(format!("no input for agent `{agent}`"))
                    .with_help("pass --input TEXT, --input-file PATH or --input - (stdin), or set `default_input` on the agent")
                    .into()
            }),
    }
}

/// Say when an approval names a tool no entry declares (a typo would
/// otherwise leave the tool refused without a word). Not an error: a
/// plugin may register tools only when it is mounted.
fn notice_unknown_approvals(caller: &Caller, approve: &[String], ws: &Workspace) {
    let declared: std::collections::BTreeSet<&str> = ws
        .composition
        .entries
        .values()
        .flat_map(|e| e.manifest.tools.iter().map(|t| t.name.as_str()))
        .collect();
    for tool in approve {
        if declared.contains(tool.as_str()) {
            continue;
        }
        caller.notice(Notice::UnknownApproval {
            tool,
            composition: &ws.display,
            suggestion: did_you_mean(tool, declared.iter().copied()),
        });
    }
}

/// The recording (`record`) or the replay (`from`) of the run.
fn replay(
    record: bool,
    from: Option<&(PathBuf, Fallback)>,
    redactor: &crate::engine::secret::Redactor,
    telemetry: &Arc<dyn Telemetry>,
) -> Result<Option<Arc<Replay>>, AppError> {
    if record {
        return Ok(Some(Arc::new(Replay::recording(
            redactor.clone(),
            Arc::clone(telemetry),
        ))));
    }
    let Some((path, fallback)) = from else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        AppError::input(format!(
            "cannot read the replay file `{}`: {e}",
            path.display()
        ))
    })?;
    let doc = ReplayDocument::parse(&text)
        .map_err(|e| AppError::input(format!("`{}`: {e}", path.display())))?;
    Ok(Some(Arc::new(Replay::replaying(
        doc,
        *fallback,
        redactor.clone(),
        Arc::clone(telemetry),
    ))))
}

/// What the run itself needs.
struct Execution<'a> {
    ws: &'a Workspace,
    env: &'a RunEnv,
    telemetry: Arc<dyn Telemetry>,
    seed: Option<SeedState>,
    approvals: Approvals,
    replay: Option<Arc<Replay>>,
    observer: Option<Arc<dyn AgentObserver>>,
    request: AgentRequest,
    request_tools: RequestTools,
    file: &'a Path,
    update_lock: bool,
    grants: Vec<Grant>,
}

/// A run that finished, with what is recorded of it.
struct Ran {
    result: AgentResult,
    report: ReconcileReport,
    nodes: Vec<SeedNode>,
    /// The published generation.
    published: Arc<Generation>,
    /// The generation the run ran on.
    generation: Arc<Generation>,
    candidates: Vec<Candidate>,
}

/// How the harness part ended, before it is an outcome.
enum Ended {
    Ran(Box<Ran>),
    Reconcile(ReconcileError),
    Agent(AgentError),
    Interrupted,
    Other(String),
}

async fn execute(x: Execution<'_>, caller: &Caller) -> Result<Ran, AppError> {
    match harness_run(x, caller).await {
        Ended::Ran(ran) => Ok(*ran),
        Ended::Reconcile(e) => Err(e.into()),
        Ended::Interrupted => Err(AppError::Interrupted(
            "the run was cancelled; nothing was recorded",
        )),
        Ended::Agent(e) => Err(agent_error(e)),
        Ended::Other(e) => Err(AppError::failure(e)),
    }
}

/// A run that could not start, as a failure of its row.
pub(crate) fn agent_error(e: AgentError) -> AppError {
    let kind = match e {
        AgentError::UnknownAgent { .. } => ErrorKind::Input,
        AgentError::ModelUnavailable { .. } => ErrorKind::Negative,
        AgentError::Snapshot(_) => ErrorKind::Failure,
        AgentError::RequestTools(crate::engine::request_tools::RequestToolsError::Snapshot(_)) => {
            ErrorKind::Failure
        }
        AgentError::RequestTools(_) => ErrorKind::Input,
    };
    Problem::new(kind, e.to_string()).into()
}

async fn harness_run(x: Execution<'_>, caller: &Caller) -> Ended {
    let redactor = &caller.redactor;
    let options = super::mount::harness_options(Arc::clone(&x.telemetry), redactor, x.env);
    let (catalog, builtin_env) = super::mount::catalog(x.file, redactor, x.env);
    // Tools of scopes no `secrets` provider governs read what plugins read.
    let default_secrets = Arc::clone(&options.secrets);
    let harness = Harness::new(catalog, options);
    if let Some(seed) = x.seed {
        let _ = harness.seed(seed).await;
    }
    // Subscribed before anything mounts: a server may announce a new tool
    // list right after it starts.
    let changes = harness.tool_set_changes();
    // Interrupted, the setups in flight are cancelled, not waited for.
    let reconciled = harness
        .unless_interrupted(
            harness.reconcile_resolved(
                x.ws.composition.clone(),
                Arc::clone(&x.ws.tree),
                Arc::clone(&x.ws.plan),
            ),
            caller.interrupt.wait(),
        )
        .await;
    let report = match reconciled {
        Some(Ok(r)) => r,
        Some(Err(e)) => {
            harness.shutdown().await;
            return Ended::Reconcile(e);
        }
        None => {
            harness.shutdown().await;
            return Ended::Interrupted;
        }
    };
    let nodes = harness.nodes().await;
    let lease = match harness.acquire() {
        Ok(l) => l,
        Err(e) => {
            harness.shutdown().await;
            return Ended::Other(e.to_string());
        }
    };
    let generation = Arc::clone(lease.generation());
    // A plugin whose tools change during the run gets a candidate
    // generation; the run stays on the one it leased.
    let follower = Follower::start(Follow {
        harness: harness.clone(),
        changes,
        leased: generation.id.to_string(),
        file: x.file.to_path_buf(),
        env: builtin_env,
        accept: x.update_lock,
        caller: caller.clone(),
    });
    // Fail closed: what no grant covers is refused, and a tool no
    // permission governs needs approval unless it is read-only.
    let services = ExecutorServices {
        policy: Arc::new(default_policy(&generation, x.grants)),
        approvals: Arc::new(x.approvals),
        telemetry: Arc::clone(&x.telemetry),
        redactor: redactor.clone(),
        replay: x.replay.clone(),
        secrets: default_secrets,
        ungoverned: Ungoverned::NeedsApproval,
        // Paths are judged where tools land: relative ones against the
        // composition's directory (where command tools and servers start).
        paths: Some(crate::runtime::paths::PathResolver::new(
            super::workspace::base_dir(x.file),
        )),
        ..ExecutorServices::permissive()
    };
    let mut runner = AgentRunner::new(ToolExecutor::new(services), Arc::new(MonotonicClock::new()));
    if let Some(r) = x.replay {
        runner = runner.with_models(r);
    }
    if let Some(observer) = x.observer {
        runner = runner.with_observer(observer);
    }
    let runner = Arc::new(runner);
    // A request that brings tools runs on its own candidate generation
    // (what the result describes); the published one never changes.
    let published = Arc::clone(&generation);
    let generation = if x.request_tools.is_empty() {
        generation
    } else {
        match crate::runtime::request_tools::candidate_for_request(
            &generation,
            &x.request.agent,
            x.request_tools,
        ) {
            Ok(g) => g,
            Err(e) => {
                drop(lease);
                follower.abort();
                harness.shutdown().await;
                return Ended::Agent(AgentError::RequestTools(e));
            }
        }
    };
    let result = tokio::select! {
        r = runner.run(&generation, x.request) => Some(r),
        () = caller.interrupt.wait() => {
            runner.cancellation().cancel();
            None
        }
    };
    drop(lease);
    let candidates = if result.is_some() {
        follower.finish().await
    } else {
        follower.abort();
        Vec::new()
    };
    harness.shutdown().await;
    match result {
        None => Ended::Interrupted,
        Some(Err(e)) => Ended::Agent(e),
        Some(Ok(result)) => Ended::Ran(Box::new(Ran {
            result,
            report,
            nodes,
            published,
            generation,
            candidates,
        })),
    }
}

/// The policy of scopes no `policy` provider governs: the generation's
/// `[policy]` (or no rule at all) with `grants` added — a permission no
/// grant covers is denied, and a deny rule still wins over a grant.
pub(crate) fn default_policy(generation: &Generation, grants: Vec<Grant>) -> PolicyRules {
    let mut rules = generation
        .composition
        .policy
        .as_ref()
        .map(|p| p.rules.clone())
        .unwrap_or_default();
    rules.grants.extend(grants);
    rules
}

/// Record the publication and the candidates published during the run
/// (in order).
fn record_publications(
    store: &mut StateStore,
    seed: &SeedState,
    ran: &Ran,
) -> Result<(), AppError> {
    let mut previous = previous_of(seed);
    if ran.report.published {
        store.record_publication(Publication {
            report: &ran.report,
            nodes: &ran.nodes,
            generation: &ran.published,
            previous: previous.clone(),
            mounts: seed.mounts.clone(),
        })?;
        previous = Some(ran.published.id.clone());
    }
    for c in &ran.candidates {
        if let candidates::Outcome::Published {
            report,
            nodes,
            generation,
        } = &c.outcome
        {
            store.record_publication(Publication {
                report,
                nodes,
                generation,
                previous: previous.clone(),
                mounts: seed.mounts.clone(),
            })?;
            previous = Some(generation.id.clone());
        }
    }
    Ok(())
}

/// Record the run itself, as it ended.
fn record_run(
    store: &mut StateStore,
    ran: &Ran,
    status: RunStatus,
    started_at: String,
    caller: &Caller,
) -> Result<(), AppError> {
    let stored = store.record_run(NewRun {
        instance: None,
        id: ran.result.run_id.clone(),
        generation_id: ran.generation.id.to_string(),
        agent: ran.result.agent.clone(),
        status: status.as_str().to_owned(),
        started_at,
        finished_at: Some(now_rfc3339()),
    })?;
    caller.notice(Notice::RunStored {
        run_id: &stored,
        store: store.path(),
    });
    Ok(())
}

/// The `record` file, checked before anything runs so that a path that
/// cannot be written is refused up front (unusable input), like a trace.
/// An existing recording is left as it is until the new one is written; a
/// file this run created is removed again when the run ends without a
/// recording (interrupted, failed to start).
struct RecordFile {
    path: PathBuf,
    /// Whether this run created the (regular, empty) file.
    created: bool,
    written: bool,
}

impl RecordFile {
    fn create(path: &Path) -> Result<Self, AppError> {
        let existed = path.exists();
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .map_err(|e| {
                AppError::input(format!(
                    "cannot write the recording `{}`: {e}",
                    path.display()
                ))
            })?;
        Ok(Self {
            path: path.to_path_buf(),
            created: !existed,
            written: false,
        })
    }

    /// Write the recording of `result` (replacing what was there), redacted.
    fn write_recording(
        mut self,
        result: &AgentResult,
        replay: &Replay,
        caller: &Caller,
    ) -> Result<(), AppError> {
        let metadata = [
            ("agent".to_owned(), serde_json::json!(result.agent)),
            (
                "chassis_version".to_owned(),
                serde_json::json!(crate::engine::snapshot::CHASSIS_VERSION),
            ),
            (
                "snapshot_digest".to_owned(),
                serde_json::json!(result.snapshot_digest),
            ),
        ]
        .into_iter()
        .collect();
        let doc = replay.document(metadata);
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n";
        self.written = true;
        std::fs::write(&self.path, caller.redactor.redact(&text).as_bytes()).map_err(|e| {
            AppError::failure(format!("cannot write `{}`: {e}", self.path.display()))
        })?;
        caller.notice(Notice::Recorded {
            boundaries: doc.records.len(),
            path: &self.path,
        });
        Ok(())
    }
}

impl Drop for RecordFile {
    fn drop(&mut self) {
        let empty_file = std::fs::symlink_metadata(&self.path)
            .is_ok_and(|m| m.file_type().is_file() && m.len() == 0);
        if self.created && !self.written && empty_file {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
