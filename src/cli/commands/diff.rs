//! `chassis diff generations`: what changed, semantically, between two
//! compositions.

use crate::app::diff::{DiffOptions, diff};
use crate::app::workspace::{Operand, OperandKind};

use super::super::exit::ExitStatus;
use super::super::render::{diff as render, reuse};
use super::super::shown;
use super::super::ui::{Format, Ui};

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
    /// Semantic changes are grouped as SCOPES, PROVIDERS, REQUIREMENTS,
    /// AGENTS and POLICY, each with a kind (added, removed, replaced, changed, rewired)
    /// and a reason; `--exit-code` follows them. Between two compositions,
    /// CHANGED KEYS names every changed key with old -> new (secrets and
    /// secret-looking values masked; a changed prompt as a unified diff)
    /// and HOST SETTINGS the changed `[store]` table, which never fails the
    /// gate; between two stored generations, CHANGED KEYS names the changed
    /// configuration keys without values.
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
        /// With two stored generations: list reused nodes too in text and
        /// markdown (they are counted otherwise; JSON always lists them).
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        store: super::store_args::StoreArgs,
    },
}

/// How text names a side: the operand, and for a snapshot file the
/// generation it records too.
fn label(side: &Operand) -> String {
    match side.kind {
        OperandKind::SnapshotFile => {
            format!("{} ({})", side.display, side.snapshot.generation_id)
        }
        OperandKind::Composition | OperandKind::Stored => side.display.clone(),
    }
}

/// Run `diff`.
pub fn run(ui: &Ui, cmd: &DiffCommand) -> Result<ExitStatus, ExitStatus> {
    let DiffCommand::Generations {
        old,
        new,
        include_unchanged,
        exit_code,
        all,
        store,
    } = cmd;
    super::super::require_format(
        ui,
        &[Format::Text, Format::Json, Format::Markdown],
        "diff generations",
    )?;
    let options = DiffOptions {
        old: old.clone(),
        new: new.clone(),
        include_unchanged: *include_unchanged,
        store: store.selection(),
    };
    let mut outcome = shown(ui, diff(&options, &super::super::reporter(ui)))?;
    let changed = outcome.diff.semantic_changed;
    if ui.format != Format::Json {
        // Text and Markdown name each side by its operand (a stored
        // generation's id, a file, `REV:PATH`): the `gen_0001` of a
        // composition read outside a store would say nothing.
        outcome.diff.old.generation_id = label(&outcome.old);
        outcome.diff.new.generation_id = label(&outcome.new);
    }
    let nodes = outcome.nodes.as_deref();
    let host = outcome.host_settings.as_deref().unwrap_or_default();
    let keys = outcome.keys.as_deref().unwrap_or_default();
    match ui.format {
        Format::Json => ui.out_json(&outcome.document(old, new)),
        Format::Markdown => {
            let mut text = render::render_markdown(&outcome.diff);
            text.push_str(&render::keys_markdown(keys));
            text.push_str(&render::host_settings_markdown(host));
            text.push_str(
                &nodes
                    .map(|n| reuse::nodes_markdown(n, *all))
                    .unwrap_or_default(),
            );
            ui.out(&text);
        }
        _ => {
            let mut text = render::render_text(&outcome.diff);
            text.push_str(&render::keys_text(keys));
            text.push_str(&render::host_settings_text(host));
            text.push_str(
                &nodes
                    .map(|n| reuse::nodes_text(n, *all))
                    .unwrap_or_default(),
            );
            ui.out(&text);
        }
    }
    super::super::exit::keep_until_exit(outcome);
    Ok(if *exit_code && changed {
        ExitStatus::Negative
    } else {
        ExitStatus::Success
    })
}
