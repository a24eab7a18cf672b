//! `chassis run`: publish a generation and run an agent against exactly it.

use std::fmt::Write as _;
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::cli::render;
use crate::engine::budget::BudgetDimension;
use crate::runtime::agent::{
    AgentError, AgentRequest, AgentResult, AgentRunner, MonotonicClock, StopReason,
};
use crate::runtime::replay::{Fallback, Replay, ReplayDocument};
use crate::runtime::{ExecutorServices, Harness, ToolExecutor};
use crate::store::{NewRun, OpenMode, Store, now_rfc3339, seed_state};

use super::super::approval::{CliApprovals, Terminal};
use super::super::candidates::{Candidate, Follow, Follower};
use super::super::exit::ExitStatus;
use super::super::progress::Progress;
use super::super::ui::{Format, Ui};
use super::super::workspace::{Resolved, catalog_with_env, harness_options, load_file_in};
use super::generations::{open_store, state_path, store_error};
use super::publish::{
    reconcile_failure, record_publication, refusal, report_refusal, runtime, trace_telemetry,
};

/// Run an agent of a composition.
///
/// Resolves FILE, publishes it as a generation (in memory, or in the store
/// with `--state`), and runs the agent against exactly that generation: the
/// model's tool calls cross the tool boundary (hooks, policy, approval,
/// budget, tracing) and every model call the model boundary. The answer is
/// printed on stdout; progress and a summary (generation, snapshot digest,
/// steps, tool calls, budget) on stderr.
///
/// Input comes from `--input`, `--input-file`, `--input -` (stdin), or the
/// agent's `default_input`. A tool that needs approval is asked about on
/// the terminal; without one it is refused unless `--approve TOOL` or
/// `--yes` was given. Secrets are read from the environment (`{ secret =
/// "OPENAI_API_KEY" }` reads `OPENAI_API_KEY`) and `--env-file`.
///
/// Exit status: 0 answered; 1 stopped without an answer (step limit,
/// refusal) or the composition is pending; 2 unusable input; 3 budget
/// exhausted, a model or plugin failed; 130 interrupted.
#[derive(Debug, clap::Args)]
#[command(
    after_long_help = "Examples:\n  chassis run examples/quickstart.toml\n  chassis run composition.toml --agent support --input \"Where is my order?\"\n  echo \"summarize this\" | chassis run composition.toml --input -\n  chassis run composition.toml --format json --trace run.jsonl --approve save_note\n  chassis run examples/quickstart.toml --request-tools examples/request-tools.toml --yes"
)]
pub struct RunArgs {
    /// Composition file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The agent to run (required when the composition declares several).
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// The input; `-` reads it from stdin.
    #[arg(long, value_name = "TEXT", conflicts_with = "input_file")]
    pub input: Option<String>,
    /// Read the input from a file.
    #[arg(long, value_name = "PATH")]
    pub input_file: Option<PathBuf>,
    /// Approve every call of this tool without asking (repeatable).
    #[arg(long, value_name = "TOOL")]
    pub approve: Vec<String>,
    /// Approve every tool call that needs approval.
    #[arg(long)]
    pub yes: bool,
    /// Read secrets and `enabled_if` variables from this env file too
    /// (`KEY=VALUE` lines; its values win over the environment's).
    #[arg(long, value_name = "PATH")]
    pub env_file: Option<PathBuf>,
    /// Record the publication and the run in this store (default
    /// `.chassis/state.db` beside FILE when given without a value).
    #[arg(long, value_name = "PATH", num_args = 0..=1, default_missing_value = "@", hide_default_value = true)]
    pub state: Option<PathBuf>,
    /// Run even when some entries are pending (they are left out).
    #[arg(long)]
    pub allow_pending: bool,
    /// Write every telemetry signal of the run (redacted) to FILE as JSON lines.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Record every model call and tool call (redacted) to FILE.
    #[arg(long, value_name = "FILE", conflicts_with = "replay")]
    pub record: Option<PathBuf>,
    /// Answer model and tool calls from a recording; policy, approval and
    /// budget still run.
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,
    /// What a replay does for a call it has no recording of: fail the run
    /// (`error`) or make the call live (`live`).
    #[arg(
        long,
        value_name = "MODE",
        default_value = "error",
        requires = "replay"
    )]
    pub replay_fallback: ReplayFallback,
    /// Start the `mcp` servers first and pin what they offer in
    /// `chassis.lock` (otherwise a server that differs from the lock fails
    /// the run before the agent starts, with the tool diff).
    #[arg(long)]
    pub update_lock: bool,
    /// Tools this run brings with its request: a composition of `command`
    /// entries. The run gets its own candidate generation with them (the
    /// published one never changes) and is stamped with its digest
    /// (`chassis snapshot FILE --agent NAME --request-tools FILE` gives it).
    #[arg(long, value_name = "FILE")]
    pub request_tools: Option<PathBuf>,
}

/// `--replay-fallback`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ReplayFallback {
    /// Fail the run, naming the boundary.
    Error,
    /// Make the call live (it is not recorded).
    Live,
}

/// The exit status of a finished run.
pub(crate) fn exit_for(stop: &StopReason) -> ExitStatus {
    match stop {
        StopReason::Answered => ExitStatus::Success,
        StopReason::StepLimit { .. } | StopReason::Refused { .. } => ExitStatus::Negative,
        StopReason::BudgetExhausted { .. }
        | StopReason::ModelFailed { .. }
        | StopReason::Failed { .. } => ExitStatus::Failure,
    }
}

fn pick_agent(ui: &Ui, r: &Resolved, asked: Option<&str>) -> Result<String, ExitStatus> {
    let names: Vec<&String> = r.composition.agents.keys().collect();
    match asked {
        Some(name) if r.composition.agents.contains_key(name) => Ok(name.to_owned()),
        Some(name) => Err(super::super::workspace::unknown_agent(ui, r, name)),
        None => match names.as_slice() {
            [only] => Ok((*only).clone()),
            [] => {
                ui.err(&format!(
                    "error: `{}` declares no agent\n  help: add one, e.g.\n\n    [agents.assistant]\n    prompt = \"You are a helpful assistant.\"\n",
                    r.display
                ));
                Err(ExitStatus::Input)
            }
            many => {
                ui.err(&format!(
                    "error: `{}` declares {} agents; choose one with --agent: {}",
                    r.display,
                    many.len(),
                    many.iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
                Err(ExitStatus::Input)
            }
        },
    }
}

fn read_input(ui: &Ui, args: &RunArgs, r: &Resolved, agent: &str) -> Result<String, ExitStatus> {
    if let Some(path) = &args.input_file {
        return std::fs::read_to_string(path).map_err(|e| {
            ui.err(&format!(
                "error: cannot read the input file `{}`: {e}",
                path.display()
            ));
            ExitStatus::Input
        });
    }
    match args.input.as_deref() {
        Some("-") => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).map_err(|e| {
                ui.err(&format!("error: cannot read the input from stdin: {e}"));
                ExitStatus::Input
            })?;
            Ok(text)
        }
        Some(text) => Ok(text.to_owned()),
        None => match r
            .composition
            .agents
            .get(agent)
            .and_then(|a| a.default_input.clone())
        {
            Some(text) => Ok(text),
            None => {
                ui.err(&format!(
                    "error: no input for agent `{agent}`\n  help: pass --input TEXT, --input-file PATH or --input - (stdin), or set `default_input` on the agent"
                ));
                Err(ExitStatus::Input)
            }
        },
    }
}

/// Run `run`.
pub fn run(ui: &Ui, args: &RunArgs) -> Result<ExitStatus, ExitStatus> {
    super::super::require_format(ui, &[Format::Text, Format::Json], "run")?;
    let env = super::super::workspace::run_env(ui, args.env_file.as_deref())?;
    let redactor = super::super::process_redactor();
    if args.update_lock {
        super::super::lockfile::update_for(ui, &args.file, args.env_file.as_deref(), &redactor)?;
    }
    let resolved = load_file_in(ui, &args.file, &env)?;
    if let Some(r) = refusal(&resolved, args.allow_pending) {
        report_refusal(ui, "run", &resolved.display, &r);
        return Err(ExitStatus::Negative);
    }
    let agent = pick_agent(ui, &resolved, args.agent.as_deref())?;
    let input = read_input(ui, args, &resolved, &agent)?;
    warn_unknown_approvals(ui, args, &resolved);
    let request_tools = match &args.request_tools {
        None => crate::runtime::request_tools::RequestTools::default(),
        Some(path) => {
            let file = super::super::request_tools::load_file(ui, path, &env)?;
            // Refused before anything mounts when they cannot join.
            crate::engine::request_tools::with_request_tools(
                &resolved.composition,
                &agent,
                &file.decl(),
                &|_| false,
            )
            .map_err(|e| {
                ui.err(&format!("error: {e}"));
                ExitStatus::Input
            })?;
            file.request_tools(ui, &redactor)?
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
    let telemetry = trace_telemetry(ui, args.trace.as_deref(), &redactor)?;
    let record_file = match &args.record {
        Some(path) => Some(RecordFile::create(ui, path)?),
        None => None,
    };

    // The store, when asked for: the run publishes into it and is recorded.
    let mut store = match &args.state {
        None => None,
        Some(p) => {
            let explicit = (p.as_os_str() != "@").then_some(p.as_path());
            let path = state_path(explicit, Some(&args.file));
            Some((open_store(ui, &path, OpenMode::Create)?, path))
        }
    };
    let seed = match &store {
        Some((s, _)) => Some(seed_state(s).map_err(|e| store_error(ui, &e))?),
        None => None,
    };
    let options = harness_options(
        ui,
        Arc::clone(&telemetry),
        &redactor,
        args.env_file.as_deref(),
    )?;
    let (catalog, builtin_env) = catalog_with_env(&args.file, &redactor, &env);
    // Tools of scopes no `secrets` provider governs read what plugins read.
    let default_secrets = Arc::clone(&options.secrets);
    let rt = runtime().map_err(|e| {
        ui.err(&format!("error: cannot start the runtime: {e}"));
        ExitStatus::Failure
    })?;
    let replay = match (&args.record, &args.replay) {
        (Some(_), _) => Some(Arc::new(Replay::recording(
            redactor.clone(),
            Arc::clone(&telemetry),
        ))),
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                ui.err(&format!(
                    "error: cannot read the replay file `{}`: {e}",
                    path.display()
                ));
                ExitStatus::Input
            })?;
            let doc = ReplayDocument::parse(&text).map_err(|e| {
                ui.err(&format!("error: `{}`: {e}", path.display()));
                ExitStatus::Input
            })?;
            let fallback = match args.replay_fallback {
                ReplayFallback::Error => Fallback::Error,
                ReplayFallback::Live => Fallback::Live,
            };
            Some(Arc::new(Replay::replaying(
                doc,
                fallback,
                redactor.clone(),
                Arc::clone(&telemetry),
            )))
        }
        (None, None) => None,
    };
    let replay_for_run = replay.clone();
    let approvals = CliApprovals::new(
        args.approve.iter().cloned(),
        args.yes,
        Arc::new(Terminal),
        Arc::clone(&telemetry),
    );
    let quiet = ui.quiet;
    let json_progress = ui.format == Format::Json;
    let composition = resolved.composition.clone();
    let follow_ui = ui.clone();
    let started_at = now_rfc3339();
    let seed_for_harness = seed.clone();
    let outcome = rt.block_on(async move {
        let harness = Harness::new(catalog, options);
        if let Some(seed) = seed_for_harness {
            let _ = harness.seed(seed).await;
        }
        // Subscribed before anything mounts: a server may announce a new
        // tool list right after it starts.
        let changes = harness.tool_set_changes();
        let reconciled = tokio::select! {
            r = harness.reconcile(composition) => Some(r),
            () = super::super::interrupt::signalled() => None,
        };
        let report = match reconciled {
            Some(Ok(r)) => r,
            Some(Err(e)) => {
                harness.shutdown().await;
                return Outcome::Reconcile(e);
            }
            None => {
                harness.shutdown().await;
                return Outcome::Interrupted;
            }
        };
        let nodes = harness.nodes().await;
        let lease = match harness.acquire() {
            Ok(l) => l,
            Err(e) => {
                harness.shutdown().await;
                return Outcome::Other(e.to_string());
            }
        };
        let generation = Arc::clone(lease.generation());
        // A plugin whose tools change during the run gets a candidate
        // generation; the run stays on the one it leased.
        let follower = Follower::start(Follow {
            harness: harness.clone(),
            changes,
            leased: generation.id.to_string(),
            file: args.file.clone(),
            env: builtin_env,
            accept: args.update_lock,
            ui: follow_ui,
        });
        let services = ExecutorServices {
            approvals: Arc::new(approvals),
            telemetry: Arc::clone(&telemetry),
            redactor: redactor.clone(),
            replay: replay_for_run.clone(),
            secrets: default_secrets,
            ..ExecutorServices::permissive()
        }
        .with_generation_policy(&generation);
        let mut runner =
            AgentRunner::new(ToolExecutor::new(services), Arc::new(MonotonicClock::new()));
        if let Some(r) = replay_for_run {
            runner = runner.with_models(r);
        }
        if !quiet {
            let progress = if json_progress {
                Progress::json()
            } else {
                Progress::lines()
            };
            runner = runner.with_observer(Arc::new(progress));
            if !json_progress
                && std::io::stderr().is_terminal()
                && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
            {
                super::super::spinner::start();
            }
        }
        let runner = Arc::new(runner);
        let request = AgentRequest {
            agent,
            input,
            run_id: None,
        };
        // A request that brings tools runs on its own candidate generation
        // (what the result describes); the published one never changes.
        let published = Arc::clone(&generation);
        let generation = if request_tools.is_empty() {
            generation
        } else {
            match crate::runtime::request_tools::candidate_for_request(
                &generation,
                &request.agent,
                request_tools,
            ) {
                Ok(g) => g,
                Err(e) => {
                    drop(lease);
                    follower.abort();
                    harness.shutdown().await;
                    return Outcome::Agent(AgentError::RequestTools(e));
                }
            }
        };
        let result = tokio::select! {
            r = runner.run(&generation, request) => Some(r),
            () = super::super::interrupt::signalled() => {
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
            None => Outcome::Interrupted,
            Some(Err(e)) => Outcome::Agent(e),
            Some(Ok(r)) => Outcome::Ran(Box::new((
                r, report, nodes, published, generation, redactor, candidates,
            ))),
        }
    });
    super::super::spinner::stop();
    let (result, report, nodes, published, generation, redactor, candidates) = match outcome {
        Outcome::Ran(b) => *b,
        Outcome::Reconcile(e) => return Err(reconcile_failure(ui, &e)),
        Outcome::Interrupted => {
            ui.err("interrupted: the run was cancelled; nothing was recorded");
            return Err(ExitStatus::Interrupted);
        }
        Outcome::Agent(e) => {
            ui.err(&format!("error: {e}"));
            return Err(match e {
                AgentError::UnknownAgent { .. } => ExitStatus::Input,
                AgentError::ModelUnavailable { .. } => ExitStatus::Negative,
                AgentError::Snapshot(_) => ExitStatus::Failure,
                AgentError::RequestTools(
                    crate::engine::request_tools::RequestToolsError::Snapshot(_),
                ) => ExitStatus::Failure,
                AgentError::RequestTools(_) => ExitStatus::Input,
            });
        }
        Outcome::Other(e) => {
            ui.err(&format!("error: {e}"));
            return Err(ExitStatus::Failure);
        }
    };
    super::publish::warn_quarantined(ui, &report);
    let status = exit_for(&result.stop);
    if let (Some(file), Some(replay)) = (record_file, &replay) {
        let path = file.path.clone();
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
        file.write(redactor.redact(&text).as_bytes()).map_err(|e| {
            ui.err(&format!("error: cannot write `{}`: {e}", path.display()));
            ExitStatus::Failure
        })?;
        if !ui.quiet {
            let n = doc.records.len();
            let noun = if n == 1 { "boundary" } else { "boundaries" };
            ui.info(&format!("recorded {n} {noun} to {}", path.display()));
        }
    }
    if let (Some((store, path)), Some(seed)) = (store.as_mut(), seed) {
        let mut previous = (seed.sequence > 0)
            .then(|| crate::engine::identity::GenerationId::from_sequence(seed.sequence));
        let fingerprint = store.config_fingerprint();
        if report.published {
            record_publication(
                ui,
                store,
                &report,
                &nodes,
                &published,
                previous.clone(),
                seed.mounts.clone(),
                &fingerprint,
            )?;
            previous = Some(published.id.clone());
        }
        // Candidates published during the run, in order.
        for c in &candidates {
            if let super::super::candidates::Outcome::Published {
                report,
                nodes,
                generation,
            } = &c.outcome
            {
                record_publication(
                    ui,
                    store,
                    report,
                    nodes,
                    generation,
                    previous.clone(),
                    seed.mounts.clone(),
                    &fingerprint,
                )?;
                previous = Some(generation.id.clone());
            }
        }
        let stored = store
            .record_run(NewRun {
                id: result.run_id.clone(),
                generation_id: generation.id.to_string(),
                agent: result.agent.clone(),
                status: match status {
                    ExitStatus::Success => "succeeded",
                    // Ran to the end without an answer (step limit, refusal).
                    ExitStatus::Negative => "no_answer",
                    _ => "failed",
                }
                .to_owned(),
                started_at,
                finished_at: Some(now_rfc3339()),
            })
            .map_err(|e| store_error(ui, &e))?;
        if !ui.quiet {
            ui.info(&format!("recorded {stored} in {}", path.display()));
        }
    }
    render(
        ui,
        &result,
        &generation,
        &redactor,
        &candidates,
        &request_tool_names,
    );
    Ok(status)
}

/// Say when `--approve` names a tool no entry declares (a typo would
/// otherwise leave the tool refused without a word). A warning, not an
/// error: a plugin may register tools only when it is mounted.
fn warn_unknown_approvals(ui: &Ui, args: &RunArgs, resolved: &Resolved) {
    let declared: std::collections::BTreeSet<&str> = resolved
        .composition
        .entries
        .values()
        .flat_map(|e| e.manifest.tools.iter().map(|t| t.name.as_str()))
        .collect();
    for tool in &args.approve {
        if declared.contains(tool.as_str()) {
            continue;
        }
        let hint = crate::engine::diag::did_you_mean(tool, declared.iter().copied())
            .map(|m| format!("\n  help: did you mean `{m}`?"))
            .unwrap_or_default();
        ui.err(&format!(
            "warning: --approve names `{tool}`, which no entry of `{}` declares{hint}",
            resolved.display
        ));
    }
}

/// The `--record` file, checked before anything runs so that a path that
/// cannot be written is refused up front (exit 2), like `--trace`. An
/// existing recording is left as it is until the new one is written; a
/// file this run created is removed again when the run ends without a
/// recording (interrupted, failed to start).
struct RecordFile {
    path: PathBuf,
    /// Whether this run created the (regular, empty) file.
    created: bool,
    written: bool,
}

impl RecordFile {
    fn create(ui: &Ui, path: &Path) -> Result<Self, ExitStatus> {
        let existed = path.exists();
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .map_err(|e| {
                ui.err(&format!(
                    "error: cannot write the recording `{}`: {e}",
                    path.display()
                ));
                ExitStatus::Input
            })?;
        Ok(Self {
            path: path.to_path_buf(),
            created: !existed,
            written: false,
        })
    }

    /// Write the recording (replacing what was there); the file is kept.
    fn write(mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.written = true;
        std::fs::write(&self.path, bytes)
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

/// What a finished run hands back to be recorded and rendered.
type Ran = (
    AgentResult,
    crate::runtime::ReconcileReport,
    Vec<crate::runtime::harness::SeedNode>,
    // The published generation, and the one the run ran on (a request's
    // own candidate when it brought tools).
    Arc<crate::runtime::Generation>,
    Arc<crate::runtime::Generation>,
    crate::engine::secret::Redactor,
    Vec<Candidate>,
);

enum Outcome {
    Ran(Box<Ran>),
    Reconcile(crate::runtime::ReconcileError),
    Agent(AgentError),
    Interrupted,
    Other(String),
}

/// The result document of `--format json`.
pub(crate) fn result_json(
    result: &AgentResult,
    generation: &crate::runtime::Generation,
    candidates: &[Candidate],
    request_tools: &[String],
) -> serde_json::Value {
    let snap = &generation.snapshot;
    // Rows, not a map keyed by dimension: `tokens` is also a secret-looking
    // key name, and a report must never look redacted.
    let budget: Vec<serde_json::Value> = result
        .budget
        .as_ref()
        .map(|b| {
            b.dimensions
                .iter()
                .map(|d| {
                    serde_json::json!({
                        "dimension": d.dimension.as_str(),
                        "limit": d.limit,
                        "used": d.used,
                        "enforcement": d.enforcement.as_str(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    serde_json::json!({
        "format_version": 1,
        "agent": result.agent,
        "agent_revision": result.agent_revision,
        "answer": result.answer,
        "stop": result.stop,
        "steps": result.steps,
        "messages": result.messages,
        "tool_calls": result.tool_calls,
        "usage": {
            "input_tokens": result.usage.input_tokens,
            "output_tokens": result.usage.output_tokens,
            "estimated_cost": result.estimated_cost,
        },
        "model": result.model,
        "budget": budget,
        "run_id": result.run_id,
        "generation_id": result.generation_id,
        "snapshot_digest": result.snapshot_digest,
        "duration_seconds": result.duration_seconds,
        "composition": {
            "generation_id": result.generation_id,
            "chassis_version": crate::engine::snapshot::CHASSIS_VERSION,
            "agent_runtime": crate::engine::agent::LOOP_RUNTIME,
            "plugins": snap.plugins,
            "capabilities": snap.capabilities,
            "config_hash": snap.config_hash,
            "plugin_graph_hash": snap.plugin_graph_hash,
            "tool_schema_hash": snap.tool_schema_hash,
            "graph_definition_hash": result.graph_definition_hash,
            "prompt_hash": result.prompt_hash,
            "snapshot_digest": result.snapshot_digest,
            "semantic_digest": result.semantic_digest,
        },
        // Generations built while the run ran (a plugin's tools changed);
        // the run itself stayed on `generation_id`.
        "candidate_generations": candidates.iter().map(Candidate::to_json).collect::<Vec<_>>(),
        // Tools the request brought: the run ran on its own candidate of
        // `generation_id`, which `snapshot_digest` describes.
        "request_tools": request_tools,
    })
}

fn render(
    ui: &Ui,
    result: &AgentResult,
    generation: &crate::runtime::Generation,
    redactor: &crate::engine::secret::Redactor,
    candidates: &[Candidate],
    request_tools: &[String],
) {
    if ui.format == Format::Json {
        let doc = result_json(result, generation, candidates, request_tools);
        let mut out = redactor.redact_json(&doc);
        // The snapshot's `plugins` and `capabilities` map names to versions:
        // `secrets.env` names a plugin, not a secret.
        for field in ["plugins", "capabilities"] {
            if let (Some(slot), Some(original)) = (
                out.pointer_mut(&format!("/composition/{field}")),
                doc.pointer(&format!("/composition/{field}")),
            ) {
                *slot = redactor.redact_json_known(original);
            }
        }
        ui.out_json(&out);
        return;
    }
    if let Some(answer) = &result.answer {
        ui.out(answer.trim_end());
    }
    if ui.quiet && result.stop == StopReason::Answered {
        return;
    }
    let mut text = String::new();
    if result.stop != StopReason::Answered {
        let _ = writeln!(
            text,
            "error: agent `{}`: {}",
            result.agent,
            result.stop.describe()
        );
    }
    let refused = result
        .tool_calls
        .iter()
        .filter(|c| c.status == "refused")
        .count();
    let _ = write!(
        text,
        "\n{} in {:.2}s · {} step{} · {} tool call{}{}\n  generation       {}\n  run              {}\n  snapshot_digest  {}\n",
        result.stop.kind(),
        result.duration_seconds,
        result.steps,
        if result.steps == 1 { "" } else { "s" },
        result.tool_calls.len(),
        if result.tool_calls.len() == 1 {
            ""
        } else {
            "s"
        },
        if refused > 0 {
            format!(" ({refused} refused)")
        } else {
            String::new()
        },
        result.generation_id,
        result.run_id,
        result.snapshot_digest,
    );
    if let Some(b) = &result.budget {
        let parts: Vec<String> = b
            .dimensions
            .iter()
            .filter(|d| d.used > 0.0 || d.limit.is_some())
            .filter(|d| d.dimension != BudgetDimension::WallClockSeconds || d.limit.is_some())
            .map(|d| match d.limit {
                Some(l) => format!(
                    "{} {}/{}",
                    d.dimension.as_str(),
                    render::amount(d.used),
                    render::amount(l)
                ),
                None => format!("{} {}", d.dimension.as_str(), render::amount(d.used)),
            })
            .collect();
        if !parts.is_empty() {
            let _ = writeln!(text, "  budget           {}", parts.join(", "));
        }
    }
    if !request_tools.is_empty() {
        let _ = writeln!(
            text,
            "  request tools    {} (this run's own candidate of {})",
            request_tools.join(", "),
            result.generation_id
        );
    }
    for c in candidates {
        let _ = match &c.outcome {
            super::super::candidates::Outcome::Published { generation, .. } => writeln!(
                text,
                "  candidate        {} (entry `{}`'s tools changed)",
                generation.id, c.entry
            ),
            super::super::candidates::Outcome::Refused(why) => {
                writeln!(text, "  candidate        refused: {why}")
            }
        };
    }
    ui.err(redactor.redact(text.trim_end()).as_ref());
}
