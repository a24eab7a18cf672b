//! `chassis generations`: the generations a store holds.

use std::path::PathBuf;

use crate::app::history;

use super::super::exit::ExitStatus;
use super::super::render::history as render;
use super::super::shown;
use super::super::ui::{Format, Ui};

/// What to show.
#[derive(Debug, clap::Subcommand)]
pub enum GenerationsCommand {
    /// Every published generation, oldest first.
    #[command(
        after_long_help = "Examples:\n  chassis generations list\n  chassis generations list --state deploy/.chassis/state.db --format json"
    )]
    List {
        /// The store (default `.chassis/state.db` in the current directory).
        #[arg(long, value_name = "PATH")]
        state: Option<PathBuf>,
    },
    /// One generation: digests, nodes (entry, instance id, mount, identity
    /// hashes) and what its publish did to each node.
    #[command(
        after_long_help = "Examples:\n  chassis generations show gen_0002\n  chassis generations show gen_0001 --format json"
    )]
    Show {
        /// Generation id (`gen_0001`).
        id: String,
        /// The store (default `.chassis/state.db` in the current directory).
        #[arg(long, value_name = "PATH")]
        state: Option<PathBuf>,
    },
}

/// Run `generations`.
pub fn run(ui: &Ui, cmd: &GenerationsCommand) -> Result<ExitStatus, ExitStatus> {
    super::super::require_format(ui, &[Format::Text, Format::Json], "generations")?;
    match cmd {
        GenerationsCommand::List { state } => {
            let list = shown(ui, history::generations(state.as_deref()))?;
            ui.emit(
                || render::generations_json(&list),
                || render::generations_text(&list),
            );
        }
        GenerationsCommand::Show { id, state } => {
            let g = shown(ui, history::generation(state.as_deref(), id))?;
            ui.emit(
                || render::generation_json(&g),
                || render::generation_text(&g),
            );
        }
    }
    Ok(ExitStatus::Success)
}
