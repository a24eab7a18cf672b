//! `chassis graph`: the dependency graph, scopes as clusters.

use std::path::PathBuf;

use crate::app::env::RunEnv;
use crate::app::workspace::load_file;

use super::super::exit::ExitStatus;
use super::super::render::graph as render;
use super::super::ui::{Format, Ui};

/// Draw the dependency graph of a composition.
///
/// Nodes are entries (pending ones dashed), edges point from a consumer to
/// the provider it bound, and scopes are clusters. `--format dot` (the
/// default) is Graphviz: `chassis graph c.toml | dot -Tsvg > graph.svg`;
/// `--format mermaid` pastes into Markdown.
#[derive(Debug, clap::Args)]
pub struct GraphArgs {
    /// Composition file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

/// Run `graph`.
pub fn run(ui: &Ui, args: &GraphArgs) -> Result<ExitStatus, ExitStatus> {
    super::super::require_format(
        ui,
        &[Format::Text, Format::Dot, Format::Mermaid, Format::Json],
        "graph",
    )?;
    let ws = load_file(&args.file, &RunEnv::process(), &super::super::reporter(ui))
        .map_err(|e| super::super::report::fail(ui, &e))?;
    match ui.format {
        Format::Mermaid => ui.out(&render::mermaid(&ws)),
        Format::Json => ui.out_json(&render::json(&ws)),
        _ => ui.out(&render::dot(&ws)),
    }
    super::super::exit::keep_until_exit(ws);
    Ok(ExitStatus::Success)
}
