//! `chassis check`: load, validate and resolve; list what does not resolve.

use std::path::PathBuf;

use crate::engine::findings::plan_diagnostics;

use super::super::exit::ExitStatus;
use super::super::render::check as render;
use super::super::ui::{Format, Ui};
use super::super::workspace::load_file;

/// Check compositions.
///
/// Loads each file (with its includes), validates every key, version and
/// specifier, resolves every requirement, and reports pending requirements
/// (with their status), ambiguities, cycles, and preferences that chose
/// nothing. Nothing is started and nothing is written.
///
/// Exit status: 0 when every hard requirement resolves, 1 when some do not,
/// 2 when a file is unusable.
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
    let mut status = ExitStatus::Success;
    let mut reports = Vec::new();
    for file in &args.files {
        let resolved = match load_file(ui, file) {
            Ok(r) => r,
            Err(s) => {
                status = status.max(s);
                reports.push(
                    serde_json::json!({ "file": file.display().to_string(), "loaded": false }),
                );
                continue;
            }
        };
        let findings = plan_diagnostics(&resolved.composition, &resolved.plan);
        ui.diagnostics(&findings, &resolved.sources);
        // A tool whose permissions its plugin does not declare would be
        // refused at publication: a negative answer, like a pending entry.
        let refused = findings
            .iter()
            .any(|d| d.code == crate::engine::diag::Code::UndeclaredPermission);
        if !resolved.plan.is_complete() || refused {
            status = status.max(ExitStatus::Negative);
        }
        match ui.format {
            Format::Json => reports.push(render::check_json(&resolved, refused)),
            _ => ui.out(&render::check_text(&resolved, refused)),
        }
    }
    if ui.format == Format::Json {
        ui.out_json(&serde_json::json!({ "format_version": 1, "files": reports }));
    }
    Ok(status)
}
