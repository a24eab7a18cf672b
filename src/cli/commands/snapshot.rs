//! `chassis snapshot`: the snapshot record of a resolved composition.

use std::path::PathBuf;

use crate::engine::snapshot::envelope;

use super::super::exit::ExitStatus;
use super::super::ui::{Format, Ui};
use super::super::workspace::load_file;

/// Print the snapshot of a composition.
///
/// The document is an envelope `{format_version, snapshot, digests}` where
/// `digests` holds `digest` (the whole record), `semantic_digest` (the
/// composition only: the same on every machine and every run) and
/// `physical_digest` (runtime instance ids). The composition is snapshotted
/// as the first generation of an empty store (`gen_0001`). Configuration
/// values never appear, only `config_hash` over the redacted payload.
#[derive(Debug, clap::Args)]
#[command(
    after_long_help = "Examples:\n  chassis snapshot composition.toml\n  chassis snapshot composition.toml --out snapshot.json\n  chassis snapshot composition.toml --agent assistant"
)]
pub struct SnapshotArgs {
    /// Composition file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Write the snapshot here instead of stdout (stdout then gets the digests).
    #[arg(long, value_name = "PATH")]
    pub out: Option<PathBuf>,
    /// Snapshot what a run of this agent executes against (its revision,
    /// `prompt_hash` and `graph_definition_hash`): the digest `chassis run`
    /// stamps on a run without a store.
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// With `--agent`: the digest of a run whose request brings the tools
    /// of this file (`chassis run --request-tools`).
    #[arg(long, value_name = "FILE", requires = "agent")]
    pub request_tools: Option<PathBuf>,
}

/// Run `snapshot`.
pub fn run(ui: &Ui, args: &SnapshotArgs) -> Result<ExitStatus, ExitStatus> {
    super::super::require_format(ui, &[Format::Text, Format::Json], "snapshot")?;
    let mut resolved = load_file(ui, &args.file)?;
    if let (Some(path), Some(agent)) = (&args.request_tools, &args.agent) {
        if !resolved.composition.agents.contains_key(agent) {
            return Err(super::super::workspace::unknown_agent(ui, &resolved, agent));
        }
        let env = super::super::env::RunEnv::process();
        let tools = super::super::request_tools::load_file(ui, path, &env)?;
        resolved = resolved.with_request_tools(ui, agent, &tools.decl())?;
    }
    if !resolved.plan.pending.is_empty() && !ui.quiet {
        ui.err(&format!(
            "warning: {} pending entr{} left out of the snapshot (see `chassis check`)",
            resolved.plan.pending.len(),
            if resolved.plan.pending.len() == 1 {
                "y is"
            } else {
                "ies are"
            }
        ));
    }
    let record = match &args.agent {
        None => resolved.snapshot()?,
        Some(name) => match resolved.agent_snapshot(name) {
            Some(r) => r?,
            None => return Err(super::super::workspace::unknown_agent(ui, &resolved, name)),
        },
    };
    let doc = envelope(&record).map_err(|e| {
        ui.err(&format!("error: {e}"));
        ExitStatus::Input
    })?;
    let json = doc.to_json();
    let Some(out) = &args.out else {
        ui.out_json(&json);
        return Ok(ExitStatus::Success);
    };
    let text = serde_json::to_string_pretty(&json).unwrap_or_default() + "\n";
    if let Err(e) = std::fs::write(out, text) {
        ui.err(&format!("error: cannot write `{}`: {e}", out.display()));
        return Err(ExitStatus::Failure);
    }
    let digests = &json["digests"];
    match ui.format {
        Format::Json => ui.out_json(&serde_json::json!({ "format_version": 1, "written": out.display().to_string(), "digests": digests })),
        _ => ui.out(&format!(
            "wrote {}\n  digest           {}\n  semantic_digest  {}\n  physical_digest  {}",
            out.display(),
            digests["digest"].as_str().unwrap_or(""),
            digests["semantic_digest"].as_str().unwrap_or(""),
            digests["physical_digest"].as_str().unwrap_or("")
        )),
    }
    Ok(ExitStatus::Success)
}
