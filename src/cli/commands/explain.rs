//! `chassis explain`: why a requirement resolved the way it did; what a
//! scope sees; why a node was reused; each agent's budget.

use std::path::PathBuf;

use crate::app::env::RunEnv;
use crate::app::explain::{self, View};
use crate::app::reuse;
use crate::app::workspace::{Workspace, load_file};

use super::super::exit::ExitStatus;
use super::super::render::{budgets, explain as render, reuse as reuse_render};
use super::super::shown;
use super::super::ui::{Format, Ui};

/// What to explain.
#[derive(Debug, clap::Subcommand)]
pub enum ExplainCommand {
    /// Every candidate for one requirement: origin, visibility, eligibility,
    /// selection, and the reason each was rejected.
    ///
    /// CONSUMER is an entry id, or a scope path for scope-level requirements.
    #[command(
        after_long_help = "Examples:\n  chassis explain requirement app database composition.toml\n  chassis explain requirement /ops vector composition.toml"
    )]
    Requirement {
        /// Entry id (or scope path) holding the requirement.
        consumer: String,
        /// The required capability.
        capability: String,
        /// The consumer's scope, to make sure it is the one you mean.
        #[arg(long, value_name = "PATH")]
        scope: Option<String>,
        /// Composition file.
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// A scope: parent, children, effective view, providers (local,
    /// inherited, visible), entries, requirements, tools. Metadata values
    /// are redacted.
    Scope {
        /// Canonical scope path, e.g. `/research`.
        path: String,
        /// Composition file.
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Why a node was reused, rebuilt or rewired between two stored
    /// generations: which identity parts changed.
    #[command(
        after_long_help = "Examples:\n  chassis explain reuse gen_0001 gen_0002 app\n  chassis explain reuse gen_0001 gen_0002 app --state deploy/.chassis/state.db"
    )]
    Reuse(ReuseArgs),
    /// Each agent's budget limits per dimension and how they are enforced
    /// (the built-in loop enforces every dimension at its boundaries).
    #[command(
        after_long_help = "Examples:\n  chassis explain budgets composition.toml\n  chassis explain budgets composition.toml --agent assistant --format json"
    )]
    Budgets(BudgetsArgs),
}

/// `explain reuse` arguments.
#[derive(Debug, clap::Args)]
pub struct ReuseArgs {
    /// The older generation (`gen_0001`).
    pub old: String,
    /// The newer generation (`gen_0002`).
    pub new: String,
    /// The node (entry id).
    pub node: String,
    #[command(flatten)]
    pub store: super::store_args::StoreArgs,
}

/// Arguments of `explain budgets`.
#[derive(Debug, clap::Args)]
pub struct BudgetsArgs {
    /// Composition file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Only this agent.
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
}

/// Run `explain`.
pub fn run(ui: &Ui, cmd: &ExplainCommand) -> Result<ExitStatus, ExitStatus> {
    super::super::require_format(ui, &[Format::Text, Format::Json], "explain")?;
    let reporter = super::super::reporter(ui);
    match cmd {
        ExplainCommand::Requirement {
            consumer,
            capability,
            scope,
            file,
        } => {
            let ws = shown(ui, load_file(file, &RunEnv::process(), &reporter))?;
            let report = kept(
                ui,
                explain::requirement_in(&View::of(&ws), consumer, capability, scope.as_deref()),
                ws,
            )?;
            ui.emit(
                || render::requirement_json(&report),
                || render::requirement_text(&report),
            );
        }
        ExplainCommand::Scope { path, file } => {
            let ws = shown(ui, load_file(file, &RunEnv::process(), &reporter))?;
            let report = kept(ui, explain::scope_in(&View::of(&ws), path), ws)?;
            ui.emit(
                || render::scope_json(&report),
                || render::scope_text(&report),
            );
        }
        ExplainCommand::Reuse(args) => {
            let report = shown(
                ui,
                reuse::explain_reuse(&args.store.selection(), &args.old, &args.new, &args.node),
            )?;
            ui.emit(|| report.document(), || reuse_render::text(&report));
        }
        ExplainCommand::Budgets(args) => {
            let ws = shown(ui, load_file(&args.file, &RunEnv::process(), &reporter))?;
            let agents = kept(
                ui,
                explain::budgets_in(&View::of(&ws), args.agent.as_deref()),
                ws,
            )?;
            ui.emit(|| budgets::json(&agents), || budgets::text(&agents));
        }
    }
    Ok(ExitStatus::Success)
}

/// The answer about `ws`, which is kept until the process exits: freeing
/// a loaded composition of 100,000 built-in entries entry by entry was a
/// sixth of `explain`.
fn kept<T>(
    ui: &Ui,
    answer: Result<T, crate::app::AppError>,
    ws: Workspace,
) -> Result<T, ExitStatus> {
    super::super::exit::keep_until_exit(ws);
    shown(ui, answer)
}
