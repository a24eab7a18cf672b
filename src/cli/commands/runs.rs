//! `chassis runs`: the runs a store recorded (`chassis run` records them).

use std::path::PathBuf;

use crate::app::history;

use super::super::exit::ExitStatus;
use super::super::render::history as render;
use super::super::shown;
use super::super::ui::{Format, Ui};

/// What to show.
#[derive(Debug, clap::Subcommand)]
pub enum RunsCommand {
    /// Every recorded run, oldest first.
    List {
        /// The store (default `.chassis/state.db` in the current directory).
        #[arg(long, value_name = "PATH")]
        state: Option<PathBuf>,
    },
    /// One run.
    Show {
        /// Run id, as `chassis run` printed it (`run_898ebc768c7b`).
        id: String,
        /// The store (default `.chassis/state.db` in the current directory).
        #[arg(long, value_name = "PATH")]
        state: Option<PathBuf>,
    },
}

/// Run `runs`.
pub fn run(ui: &Ui, cmd: &RunsCommand) -> Result<ExitStatus, ExitStatus> {
    super::super::require_format(ui, &[Format::Text, Format::Json], "runs")?;
    match cmd {
        RunsCommand::List { state } => {
            let list = shown(ui, history::runs(state.as_deref()))?;
            ui.emit(|| render::runs_json(&list), || render::runs_text(&list));
        }
        RunsCommand::Show { id, state } => {
            let r = shown(ui, history::run(state.as_deref(), id))?;
            ui.emit(|| render::run_json(&r), || render::run_text(&r));
        }
    }
    Ok(ExitStatus::Success)
}
