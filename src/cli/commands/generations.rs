//! `chassis generations`: the generations a store holds.

use crate::app::history;

use super::super::exit::ExitStatus;
use super::super::render::history as render;
use super::super::shown;
use super::super::ui::{Format, Ui};
use super::store_args::StoreArgs;

/// What to show.
#[derive(Debug, clap::Subcommand)]
pub enum GenerationsCommand {
    /// Every published generation, grouped by composition (lineage),
    /// oldest first.
    #[command(
        after_long_help = "Examples:\n  chassis generations list\n  chassis generations list --composition quickstart.toml\n  chassis generations list --state deploy/.chassis/state.db --format json"
    )]
    List {
        #[command(flatten)]
        store: StoreArgs,
    },
    /// One generation: digests, nodes (entry, instance id, mount, identity
    /// hashes) and what its publish did to each node.
    #[command(
        after_long_help = "Examples:\n  chassis generations show gen_0002\n  chassis generations show quickstart.toml:gen_0001 --format json\n  chassis generations show gen_0001 --composition support-bot"
    )]
    Show {
        /// Generation id (`gen_0001`, or `NAME:gen_0001` in a store
        /// several compositions share).
        id: String,
        #[command(flatten)]
        store: StoreArgs,
    },
}

/// Run `generations`.
pub fn run(ui: &Ui, cmd: &GenerationsCommand) -> Result<ExitStatus, ExitStatus> {
    super::super::require_format(ui, &[Format::Text, Format::Json], "generations")?;
    match cmd {
        GenerationsCommand::List { store } => {
            let list = shown(ui, history::generations(&store.selection()))?;
            ui.emit(
                || render::generations_json(&list),
                || render::generations_text(&list),
            );
        }
        GenerationsCommand::Show { id, store } => {
            let g = shown(ui, history::generation(&store.selection(), id))?;
            ui.emit(
                || render::generation_json(&g),
                || render::generation_text(&g),
            );
        }
    }
    Ok(ExitStatus::Success)
}
