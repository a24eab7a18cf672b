//! `chassis plan`: what `publish` would do, computed without mounting or
//! writing anything.

use std::path::PathBuf;

use crate::app::plan::{PlanOptions, plan};

use super::super::exit::ExitStatus;
use super::super::render::publish as render;
use super::super::shown;
use super::super::ui::{Format, Ui};

/// Show what `chassis publish` would do, changing nothing.
///
/// The zero-mutation dry run: it resolves FILE, compares every node's
/// identity with the store's current generation and prints, per node, the
/// action (`add`, `remove`, `reuse`, `rebuild`, `rewire`, `reject`) with its
/// reasons, and overall `publish` (with the generation id and digests it
/// would record), `no-op` or `reject`. Nothing is mounted; the store is
/// opened read-only (or not at all when it does not exist yet).
///
/// Exit status: 0 when publish would succeed or change nothing, 1 when it
/// would refuse or fail (pending requirements, a cycle, a secret that is not
/// set), 2 unusable input, 3 a store failure.
#[derive(Debug, clap::Args)]
#[command(
    after_long_help = "Examples:\n  chassis plan composition.toml\n  chassis plan composition.toml --format json"
)]
pub struct PlanArgs {
    /// Composition file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The store (default: the composition's `[store] path`, else
    /// `.chassis/state.db` beside FILE).
    #[arg(long, value_name = "PATH")]
    pub state: Option<PathBuf>,
    /// Plan as `publish --allow-pending` would.
    #[arg(long)]
    pub allow_pending: bool,
    /// List every node in text output (reused ones are counted otherwise;
    /// JSON always lists them).
    #[arg(long)]
    pub all: bool,
}

/// Run `plan`.
pub fn run(ui: &Ui, args: &PlanArgs) -> Result<ExitStatus, ExitStatus> {
    super::super::require_format(ui, &[Format::Text, Format::Json], "plan")?;
    let options = PlanOptions {
        file: args.file.clone(),
        state: args.state.clone(),
        allow_pending: args.allow_pending,
    };
    let outcome = shown(ui, plan(&options, &super::super::caller(ui)))?;
    ui.emit(
        || render::plan_json(&outcome),
        || render::plan_text(&outcome, args.all),
    );
    let status = if outcome.is_negative() {
        ExitStatus::Negative
    } else {
        ExitStatus::Success
    };
    super::super::exit::keep_until_exit(outcome);
    Ok(status)
}
