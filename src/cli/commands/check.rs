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
/// An `mcp` entry is checked against `chassis.lock` beside the file (its
/// tools as last pinned by `chassis tools --update-lock`); an entry missing
/// from the lock, or whose locked server lacks a tool in `expect_tools`,
/// is a finding.
///
/// Exit status: 0 when every hard requirement resolves, 1 when some do not
/// (or an `mcp` entry's lock finding), 2 when a file is unusable.
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
        let findings = plan_diagnostics(&resolved.composition, &resolved.tree, &resolved.plan);
        ui.diagnostics(&findings, &resolved.sources);
        // A tool whose permissions its plugin does not declare would be
        // refused at publication: a negative answer, like a pending entry.
        let refused = findings
            .iter()
            .any(|d| d.code == crate::engine::diag::Code::UndeclaredPermission);
        let lock_findings = resolved.lock_findings();
        if !resolved.plan.is_complete() || refused || !lock_findings.is_empty() {
            status = status.max(ExitStatus::Negative);
        }
        match ui.format {
            Format::Json => {
                let mut report = render::check_json(&resolved, refused);
                if let Some(o) = report.as_object_mut() {
                    if !lock_findings.is_empty() {
                        o.insert("ok".into(), serde_json::Value::Bool(false));
                    }
                    o.insert("lock_findings".into(), serde_json::json!(lock_findings));
                }
                reports.push(report);
            }
            _ => ui.out(&render::check_text(&resolved, refused)),
        }
    }
    if ui.format == Format::Json {
        ui.out_json(&serde_json::json!({ "format_version": 1, "files": reports }));
    }
    Ok(status)
}
