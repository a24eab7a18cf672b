//! `chassis runs`: the runs a store recorded (`chassis run` records them).

use std::fmt::Write as _;
use std::path::PathBuf;

use crate::store::{OpenMode, Store, StoredRun};

use super::super::exit::ExitStatus;
use super::super::ui::{Format, Ui};
use super::generations::{open_store, state_path, store_error};

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
            let path = state_path(state.as_deref(), None);
            let store = open_store(ui, &path, OpenMode::ReadOnly)?;
            let runs = store.runs().map_err(|e| store_error(ui, &e))?;
            if ui.format == Format::Json {
                ui.out_json(&serde_json::json!({
                    "format_version": 1,
                    "store": path.display().to_string(),
                    "runs": runs,
                }));
            } else if runs.is_empty() {
                ui.out(&format!(
                    "no runs recorded in `{}` (`chassis run` records them)",
                    path.display()
                ));
            } else {
                ui.out(&table(&runs));
            }
            Ok(ExitStatus::Success)
        }
        RunsCommand::Show { id, state } => {
            let path = state_path(state.as_deref(), None);
            let store = open_store(ui, &path, OpenMode::ReadOnly)?;
            let Some(r) = store.run(id).map_err(|e| store_error(ui, &e))? else {
                ui.err(&format!(
                    "error: the store `{}` has no run `{id}`\n  help: see `chassis runs list`",
                    path.display()
                ));
                return Err(ExitStatus::Input);
            };
            if ui.format == Format::Json {
                let mut doc = serde_json::to_value(&r).unwrap_or_default();
                doc["format_version"] = 1.into();
                ui.out_json(&doc);
            } else {
                ui.out(&format!(
                    "{}\n  generation  {}\n  agent       {}\n  status      {}\n  started_at  {}\n  finished_at {}",
                    r.id,
                    r.generation_id,
                    r.agent,
                    r.status,
                    r.started_at,
                    r.finished_at.as_deref().unwrap_or("-")
                ));
            }
            Ok(ExitStatus::Success)
        }
    }
}

/// The runs as a table, each column as wide as its widest cell.
fn table(runs: &[StoredRun]) -> String {
    const HEAD: [&str; 6] = ["ID", "GENERATION", "AGENT", "STATUS", "STARTED", "FINISHED"];
    let rows: Vec<[&str; 6]> = runs
        .iter()
        .map(|r| {
            [
                r.id.as_str(),
                r.generation_id.as_str(),
                r.agent.as_str(),
                r.status.as_str(),
                r.started_at.as_str(),
                r.finished_at.as_deref().unwrap_or("-"),
            ]
        })
        .collect();
    let mut width = HEAD.map(str::len);
    for row in &rows {
        for (w, cell) in width.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&HEAD).chain(&rows) {
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(width).enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                let _ = write!(line, "{cell:<w$}  ");
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
