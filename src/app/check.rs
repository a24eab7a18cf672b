//! `check`: load, validate and resolve a composition; find what would keep
//! it from publishing.

use std::path::Path;

use crate::engine::diag::Diagnostic;
use crate::engine::findings::{REFUSAL_CODES, plan_diagnostics};

use super::env::RunEnv;
use super::error::AppError;
use super::report::Reporter;
use super::workspace::{Workspace, load_file};

/// What `check` found in one composition.
pub struct CheckReport {
    /// The composition, loaded and resolved.
    pub workspace: Workspace,
    /// The resolver's findings (pending, ambiguous, cycles, preferences
    /// that chose nothing), pointing into the workspace's sources.
    pub findings: Vec<Diagnostic>,
    /// Whether publication would refuse a tool: a name two active entries
    /// declare, or permissions its plugin does not declare.
    pub refused: bool,
    /// The loader's `chassis.lock` findings.
    pub lock_findings: Vec<&'static str>,
}

impl CheckReport {
    /// Whether the answer is no: a hard requirement does not resolve, a
    /// tool would be refused, or an `mcp` entry's lock is missing or stale.
    pub fn is_negative(&self) -> bool {
        !self.workspace.plan.is_complete() || self.refused || !self.lock_findings.is_empty()
    }
}

/// Check the composition at `path`.
pub fn check_file(path: &Path, reporter: &dyn Reporter) -> Result<CheckReport, AppError> {
    let workspace = load_file(path, &RunEnv::process(), reporter)?;
    let findings = plan_diagnostics(&workspace.composition, &workspace.tree, &workspace.plan);
    // What publication would refuse (a tool name two entries declare, a
    // permission a plugin does not declare): a negative answer, like a
    // pending entry.
    let refused = findings.iter().any(|d| REFUSAL_CODES.contains(&d.code));
    let lock_findings = workspace.lock_findings();
    Ok(CheckReport {
        workspace,
        findings,
        refused,
        lock_findings,
    })
}
