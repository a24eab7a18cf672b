//! `chassis runs`: the runs a store recorded (`chassis run` records them).

use crate::app::history;

use super::super::exit::ExitStatus;
use super::super::render::history as render;
use super::super::shown;
use super::super::ui::{Format, Ui};
use super::store_args::StoreArgs;

/// What to show.
#[derive(Debug, clap::Subcommand)]
pub enum RunsCommand {
    /// Every recorded run, oldest first.
    List {
        #[command(flatten)]
        store: StoreArgs,
    },
    /// One run.
    Show {
        /// Run id, as `chassis run` printed it (`run_898ebc768c7b`).
        id: String,
        #[command(flatten)]
        store: StoreArgs,
    },
}

/// Run `runs`.
pub fn run(ui: &Ui, cmd: &RunsCommand) -> Result<ExitStatus, ExitStatus> {
    super::super::require_format(ui, &[Format::Text, Format::Json], "runs")?;
    match cmd {
        RunsCommand::List { store } => {
            let list = shown(ui, history::runs(&store.selection()))?;
            ui.emit(|| render::runs_json(&list), || render::runs_text(&list));
        }
        RunsCommand::Show { id, store } => {
            let r = shown(ui, history::run(&store.selection(), id))?;
            ui.emit(|| render::run_json(&r), || render::run_text(&r));
        }
    }
    Ok(ExitStatus::Success)
}
