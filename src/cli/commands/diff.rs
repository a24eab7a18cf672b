//! `chassis diff generations`: what changed, semantically, between two
//! compositions.

use crate::engine::diff::diff_snapshots;

use super::super::exit::ExitStatus;
use super::super::render::diff as render;
use super::super::ui::{Format, Ui};
use super::super::workspace::load_operand;
use super::reuse;

/// What to diff.
#[derive(Debug, clap::Subcommand)]
pub enum DiffCommand {
    /// Compare two generations.
    ///
    /// OLD and NEW are each a composition file, a snapshot file (from
    /// `chassis snapshot`, or a v1 snapshot exported by the Python reference),
    /// or a composition at a git revision (`origin/main:composition.toml`; its
    /// includes are read at that revision too). An operand is tried as an
    /// existing file first, then as `REV:PATH`.
    ///
    /// An operand may also be a generation id from the store (`gen_0002`;
    /// the store is `--state`, default `.chassis/state.db`). When both are,
    /// a NODES section says which nodes were reused, rebuilt or rewired.
    ///
    /// Changes are grouped as SCOPES, PROVIDERS and REQUIREMENTS, each with a
    /// kind (added, removed, replaced, changed, rewired) and a reason.
    #[command(
        after_long_help = "Examples:\n  chassis diff generations origin/main:composition.toml composition.toml\n  chassis diff generations old.json new.toml --format markdown --exit-code"
    )]
    Generations {
        /// The old side.
        old: String,
        /// The new side.
        new: String,
        /// Also list what did not change.
        #[arg(long)]
        include_unchanged: bool,
        /// Exit 1 exactly when the semantic digests differ (like `git diff --exit-code`).
        #[arg(long)]
        exit_code: bool,
        /// The store generation ids are read from (default `.chassis/state.db`).
        #[arg(long, value_name = "PATH")]
        state: Option<std::path::PathBuf>,
    },
}

/// Run `diff`.
pub fn run(ui: &Ui, cmd: &DiffCommand) -> Result<ExitStatus, ExitStatus> {
    let DiffCommand::Generations {
        old,
        new,
        include_unchanged,
        exit_code,
        state,
    } = cmd;
    super::super::require_format(
        ui,
        &[Format::Text, Format::Json, Format::Markdown],
        "diff generations",
    )?;
    let mut store = None;
    let (old_side, old_gen) = match reuse::store_operand(ui, old, state.as_deref(), &mut store)? {
        Some((operand, g)) => (operand, Some(g)),
        None => (load_operand(ui, old)?, None),
    };
    let (new_side, new_gen) = match reuse::store_operand(ui, new, state.as_deref(), &mut store)? {
        Some((operand, g)) => (operand, Some(g)),
        None => (load_operand(ui, new)?, None),
    };
    let nodes = match (&old_gen, &new_gen) {
        (Some(a), Some(b)) => Some(reuse::node_changes(a, b)),
        _ => None,
    };
    let mut diff = diff_snapshots(&old_side.snapshot, &new_side.snapshot, *include_unchanged);
    if ui.format != Format::Json {
        // Text and Markdown name each side by its operand (a stored
        // generation's id, a file, `REV:PATH`): the `gen_0001` of a
        // composition read outside a store would say nothing.
        diff.old.generation_id.clone_from(&old_side.label);
        diff.new.generation_id.clone_from(&new_side.label);
    }
    match ui.format {
        Format::Json => {
            let mut doc = diff.to_canon().to_json();
            if let Some(obj) = doc.as_object_mut() {
                obj.insert("old_operand".into(), old.clone().into());
                obj.insert("new_operand".into(), new.clone().into());
                if let Some(nodes) = &nodes {
                    obj.insert(
                        "nodes".into(),
                        serde_json::to_value(nodes).unwrap_or_default(),
                    );
                }
            }
            ui.out_json(&doc);
        }
        Format::Markdown => {
            let mut text = render::render_markdown(&diff);
            if let Some(nodes) = &nodes {
                text.push_str(&reuse::nodes_markdown(nodes));
            }
            ui.out(&text);
        }
        _ => {
            let mut text = render::render_text(&diff);
            if let Some(nodes) = &nodes {
                text.push_str(&reuse::nodes_text(nodes));
            }
            ui.out(&text);
        }
    }
    if *exit_code && diff.semantic_changed {
        return Ok(ExitStatus::Negative);
    }
    Ok(ExitStatus::Success)
}
