//! `chassis publish`: reconcile a composition against the store's current
//! generation and record the new generation (or report reuse).

use std::path::PathBuf;

use crate::app::publish::{PublishOptions, publish};

use super::super::exit::ExitStatus;
use super::super::render::publish as render;
use super::super::ui::{Format, Ui};

/// Publish a composition as a new generation.
///
/// Loads and resolves FILE, then reconciles it against the last published
/// generation in the store: a node whose identity (implementation,
/// contracts, configuration, scope, bindings) is unchanged keeps its
/// instance id (`reused`, mounted afresh in this process); others are
/// rebuilt or rewired. An entry that only declares (no `plugin` kind or
/// `command` of its own) is not mounted: its setup would only restate its
/// manifest, which is checked against its consumers as a mount's would be.
/// The new generation is recorded in one transaction;
/// an unchanged composition records nothing (`no change: gen_0001 reused`).
///
/// The store is `.chassis/state.db` beside FILE unless the composition's
/// `[store] path` or `--state` names another; it is created on the first
/// publish (keep it out of git). A composition with a pending hard
/// requirement is refused unless `--allow-pending`; a dependency cycle and
/// a tool problem `chassis check` reports are always refused.
///
/// Exit status: 0 published or no change, 1 refused (pending, a cycle, a
/// tool problem), 2 unusable input, 3 a plugin, contract or store failure.
#[derive(Debug, clap::Args)]
#[command(
    after_long_help = "Examples:\n  chassis publish composition.toml\n  chassis publish composition.toml --state /var/lib/chassis/state.db --format json"
)]
pub struct PublishArgs {
    /// Composition file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The store (default: the composition's `[store] path`, else
    /// `.chassis/state.db` beside FILE).
    #[arg(long, value_name = "PATH")]
    pub state: Option<PathBuf>,
    /// Publish even when some entries are pending (they are left out).
    #[arg(long)]
    pub allow_pending: bool,
    /// Write every telemetry signal of the publish (redacted) to FILE as JSON lines.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Start the `mcp` servers first and pin what they offer in
    /// `chassis.lock` (otherwise a server that differs from the lock fails
    /// the publication with the tool diff).
    #[arg(long)]
    pub update_lock: bool,
    /// List every node in text output (reused ones are counted otherwise;
    /// JSON always lists them).
    #[arg(long)]
    pub all: bool,
}

/// Run `publish`.
pub fn run(ui: &Ui, args: &PublishArgs) -> Result<ExitStatus, ExitStatus> {
    super::super::require_format(ui, &[Format::Text, Format::Json], "publish")?;
    let options = PublishOptions {
        file: args.file.clone(),
        state: args.state.clone(),
        allow_pending: args.allow_pending,
        trace: args.trace.clone(),
        update_lock: args.update_lock,
    };
    let caller = super::super::caller(ui);
    let published = super::super::block_on(ui, publish(&options, &caller))?;
    ui.emit(
        || render::publish_json(&published),
        || render::publish_text(&published, args.all),
    );
    super::super::exit::keep_until_exit(published);
    Ok(ExitStatus::Success)
}
