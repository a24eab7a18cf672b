//! `chassis graph`: the dependency graph, scopes as clusters.

use std::path::PathBuf;

use super::super::exit::ExitStatus;
use super::super::render::graph as render;
use super::super::ui::{Format, Ui};
use super::super::workspace::load_file;

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
    let resolved = load_file(ui, &args.file)?;
    match ui.format {
        Format::Mermaid => ui.out(&render::mermaid(&resolved)),
        Format::Json => ui.out_json(&render::json(&resolved)),
        _ => ui.out(&render::dot(&resolved)),
    }
    Ok(ExitStatus::Success)
}
