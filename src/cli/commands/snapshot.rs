//! `chassis snapshot`: the snapshot record of a resolved composition.

use std::path::PathBuf;

use crate::app::snapshot::{SnapshotOptions, snapshot};

use super::super::exit::ExitStatus;
use super::super::ui::{Format, Ui};

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
    let options = SnapshotOptions {
        file: args.file.clone(),
        agent: args.agent.clone(),
        request_tools: args.request_tools.clone(),
        out: args.out.clone(),
    };
    let outcome = snapshot(&options, &super::super::reporter(ui))
        .map_err(|e| super::super::report::fail(ui, &e))?;
    let Some(out) = &outcome.written else {
        ui.out_json(&outcome.document());
        super::super::exit::keep_until_exit(outcome);
        return Ok(ExitStatus::Success);
    };
    let d = &outcome.digests;
    let digests = serde_json::json!({
        "digest": d.digest,
        "semantic_digest": d.semantic_digest,
        "physical_digest": d.physical_digest,
    });
    match ui.format {
        Format::Json => ui.out_json(&serde_json::json!({ "format_version": 1, "written": out.display().to_string(), "digests": digests })),
        _ => ui.out(&format!(
            "wrote {}\n  digest           {}\n  semantic_digest  {}\n  physical_digest  {}",
            out.display(),
            d.digest, d.semantic_digest, d.physical_digest
        )),
    }
    super::super::exit::keep_until_exit(outcome);
    Ok(ExitStatus::Success)
}
