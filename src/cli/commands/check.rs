//! `chassis check`: load, validate and resolve; list what does not resolve.

use std::path::PathBuf;

use crate::app::check::check_file;

use super::super::exit::ExitStatus;
use super::super::render::check as render;
use super::super::ui::{Format, Ui};

/// Check compositions.
///
/// Loads each file (with its includes), validates every key, version and
/// specifier, resolves every requirement, and reports pending requirements
/// (with their status), ambiguities, cycles, and preferences that chose
/// nothing. Nothing is started and nothing is written.
///
/// An `mcp` entry is checked against `chassis.lock` beside the file (its
/// tools as last pinned by `chassis tools --update-lock`); an entry missing
/// from the lock, or whose locked server lacks a tool in `expect_tools`,
/// is a finding.
///
/// Exit status: 0 when every hard requirement resolves and nothing would
/// be refused, 1 when some do not, a tool would be refused or an `mcp`
/// entry's tools are not pinned (publish would refuse it alike), 2 when a
/// file is unusable.
#[derive(Debug, clap::Args)]
#[command(
    after_long_help = "Examples:\n  chassis check composition.toml\n  chassis check --format json a.toml b.toml"
)]
pub struct CheckArgs {
    /// Composition files.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

/// Run `check`.
pub fn run(ui: &Ui, args: &CheckArgs) -> Result<ExitStatus, ExitStatus> {
    super::super::require_format(ui, &[Format::Text, Format::Json], "check")?;
    let reporter = super::super::reporter(ui);
    let mut status = ExitStatus::Success;
    let mut reports = Vec::new();
    // The last file's report lives until the process ends (each earlier
    // one is freed before the next file is read).
    let mut last = None;
    for file in &args.files {
        drop(last.take());
        let report = match check_file(file, &reporter) {
            Ok(r) => r,
            Err(e) => {
                status = status.max(super::super::report::fail(ui, &e));
                reports.push(
                    serde_json::json!({ "file": file.display().to_string(), "loaded": false }),
                );
                continue;
            }
        };
        ui.diagnostics(&report.findings, &report.workspace.sources);
        if report.is_negative() {
            status = status.max(ExitStatus::Negative);
        }
        match ui.format {
            Format::Json => reports.push(render::check_json(&report)),
            _ => ui.out(&render::check_text(&report)),
        }
        last = Some(report);
    }
    if ui.format == Format::Json {
        ui.out_json(&serde_json::json!({ "format_version": 1, "files": reports }));
    }
    super::super::exit::keep_until_exit(last);
    Ok(status)
}
