//! `chassis run`: publish a generation and run an agent against exactly it.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use crate::app::run::{RunInput, RunOptions, RunState, RunStatus, run as run_agent};
use crate::runtime::replay::Fallback;

use super::super::answer_stream::AnswerStream;
use super::super::exit::ExitStatus;
use super::super::progress::Progress;
use super::super::prompt::Terminal;
use super::super::ui::{Format, Ui};

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
    after_long_help = "Examples:\n  chassis run examples/quickstart.toml\n  chassis run composition.toml --agent support --input \"Where is my order?\"\n  echo \"summarize this\" | chassis run composition.toml --input -\n  chassis run composition.toml --format json --trace run.jsonl --approve save_note\n  chassis run examples/quickstart.toml --request-tools examples/request-tools.toml --yes\n  chassis run examples/serve.toml --session chat-1 --input \"Count: one two\"\n  chassis run examples/serve.toml --session chat-1 --input \"and again?\""
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
    /// Grant a permission for this run (repeatable), e.g.
    /// `filesystem.read:/workspace/**` or `network.*`: it widens the
    /// default policy (`[policy]`, else nothing is granted) and never
    /// overrides a deny rule; a scope a `policy` provider governs ignores it.
    #[arg(long, value_name = "PERM")]
    pub grant: Vec<String>,
    /// Read secrets and `enabled_if` variables from this env file too
    /// (`KEY=VALUE` lines; its values win over the environment's).
    #[arg(long, value_name = "PATH")]
    pub env_file: Option<PathBuf>,
    /// Record the publication and the run in this store (given without a
    /// value: the composition's `[store] path`, else `.chassis/state.db`
    /// beside FILE).
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
    /// Continue (or start) the conversation NAME kept in the store
    /// (`--state`, else the default store): the model is sent its earlier
    /// turns, and this run becomes its next turn. `chassis serve` keeps
    /// its sessions in the same store, so one started there continues
    /// here. One turn at a time: while another process is taking a turn
    /// of NAME, this run is refused before it starts (exit 2,
    /// `run::session-busy`). NAME is 1 to 128 of `A-Z a-z 0-9 . _ -`.
    #[arg(long, value_name = "NAME")]
    pub session: Option<String>,
}

/// `--replay-fallback`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ReplayFallback {
    /// Fail the run, naming the boundary.
    Error,
    /// Make the call live (it is not recorded).
    Live,
}

/// Run `run`.
pub fn run(ui: &Ui, args: &RunArgs) -> Result<ExitStatus, ExitStatus> {
    super::super::require_format(ui, &[Format::Text, Format::Json], "run")?;
    let caller = super::super::caller(ui);
    let (options, answer) = options(ui, args);
    let outcome = super::super::block_on(ui, run_agent(options, &caller));
    super::super::spinner::stop();
    let outcome = outcome?;
    let streamed = answer.is_some_and(|a| a.printed());
    super::super::render::run::show(ui, &outcome, &caller.redactor, streamed);
    // It ran, and what it did is shown; the turn it was is not saved.
    if let Some(e) = outcome.unsaved_turn() {
        return Err(super::super::report::fail(ui, &e));
    }
    Ok(match outcome.status {
        RunStatus::Succeeded => ExitStatus::Success,
        RunStatus::NoAnswer => ExitStatus::Negative,
        RunStatus::Failed => ExitStatus::Failure,
    })
}

/// The run's options, and the terminal the answer streams to, if any.
fn options(ui: &Ui, args: &RunArgs) -> (RunOptions, Option<Arc<AnswerStream>>) {
    let input = match (&args.input_file, args.input.as_deref()) {
        (Some(path), _) => RunInput::File(path.clone()),
        (None, Some("-")) => RunInput::Read {
            what: "stdin",
            reader: Box::new(std::io::stdin()),
        },
        (None, Some(text)) => RunInput::Text(text.to_owned()),
        (None, None) => RunInput::AgentDefault,
    };
    let state = match &args.state {
        None => RunState::None,
        Some(p) if p.as_os_str() == "@" => RunState::Default,
        Some(p) => RunState::At(p.clone()),
    };
    let fallback = match args.replay_fallback {
        ReplayFallback::Error => Fallback::Error,
        ReplayFallback::Live => Fallback::Live,
    };
    // Step lines (or JSON objects) on stderr, and on a terminal a spinner
    // while a model or tool call is awaited; nothing under `-q`. With
    // stdout a terminal too, the answer is printed as it is generated.
    let terminal = std::env::var_os("TERM").is_none_or(|t| t != "dumb");
    let answer =
        (!ui.quiet && ui.format == Format::Text && terminal && std::io::stdout().is_terminal())
            .then(|| {
                Arc::new(AnswerStream::new(
                    Progress::lines().with_spinner(std::io::stderr().is_terminal()),
                ))
            });
    let observer = (!ui.quiet).then(|| match &answer {
        Some(a) => Arc::clone(a) as Arc<dyn crate::runtime::agent::AgentObserver>,
        None => {
            let progress = if ui.format == Format::Json {
                Progress::json()
            } else {
                Progress::lines().with_spinner(std::io::stderr().is_terminal() && terminal)
            };
            Arc::new(progress) as Arc<dyn crate::runtime::agent::AgentObserver>
        }
    });
    let options = RunOptions {
        file: args.file.clone(),
        agent: args.agent.clone(),
        input,
        approve: args.approve.clone(),
        grants: args.grant.clone(),
        yes: args.yes,
        env_file: args.env_file.clone(),
        state,
        allow_pending: args.allow_pending,
        trace: args.trace.clone(),
        record: args.record.clone(),
        replay: args.replay.clone().map(|p| (p, fallback)),
        update_lock: args.update_lock,
        request_tools: args.request_tools.clone(),
        prompter: Arc::new(Terminal),
        observer,
        session: args.session.clone(),
    };
    (options, answer)
}
