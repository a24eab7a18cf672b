//! `check`: load, validate and resolve a composition; find what would keep
//! it from publishing — the same refusals `plan`, `publish` and `run` make.

use std::path::Path;

use crate::engine::diag::Diagnostic;
use crate::engine::findings::{plan_diagnostics, tool_policy_findings};
use crate::engine::tool_listing::list_tools;

use super::env::RunEnv;
use super::error::AppError;
use super::report::Reporter;
use super::workspace::{Workspace, load_file};

/// The answer of `check` for one composition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It publishes as it stands.
    Ok,
    /// A hard requirement does not resolve, or entries form a cycle.
    Pending,
    /// It resolves, but publication would refuse a tool (a name two
    /// entries declare, a permission its plugin does not declare).
    Refused,
    /// It resolves, but an `mcp` entry's tools are not pinned in
    /// `chassis.lock` as it expects.
    Unlocked,
}

impl Verdict {
    /// `ok`, `pending`, `refused`, `unlocked`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Pending => "pending",
            Verdict::Refused => "refused",
            Verdict::Unlocked => "unlocked",
        }
    }
}

/// What `check` found in one composition.
pub struct CheckReport {
    /// The composition, loaded and resolved.
    pub workspace: Workspace,
    /// The resolver's findings (pending, ambiguous, cycles, preferences
    /// that chose nothing, refused tools), pointing into the workspace's
    /// sources.
    pub findings: Vec<Diagnostic>,
    /// The answer: anything but `Ok` is a no (exit 1), the reason
    /// `publish` would refuse.
    pub verdict: Verdict,
}

impl CheckReport {
    /// Whether the answer is no.
    pub fn is_negative(&self) -> bool {
        self.verdict != Verdict::Ok
    }

    /// The codes of the `chassis.lock` findings about entries that would
    /// be mounted.
    pub fn lock_findings(&self) -> Vec<&'static str> {
        self.workspace.lock_findings()
    }
}

/// Check the composition at `path`.
pub fn check_file(path: &Path, reporter: &dyn Reporter) -> Result<CheckReport, AppError> {
    let workspace = load_file(path, &RunEnv::process(), reporter)?;
    let lock = super::lock::read_lock(path);
    let (c, tree, plan) = (&workspace.composition, &workspace.tree, &workspace.plan);
    // Listing the tools (a `command` entry's policies are read from its
    // configuration) beside the plan's findings and the refusal: they
    // share nothing, and each is a pass over every entry.
    let (tools, (mut findings, refusal)) = crate::engine::parallel::join(
        c.entries.len(),
        || list_tools(c, plan, lock.as_ref()),
        || {
            (
                plan_diagnostics(c, tree, plan),
                // The refusal publish would make (its problems are among
                // the findings, so it is not reported again).
                super::refusal::refusal(c, plan, false),
            )
        },
    );
    // What the default policy will do with each tool (warnings).
    findings.extend(tool_policy_findings(c, tree, plan, &tools));
    let verdict = if !workspace.plan.is_complete() {
        Verdict::Pending
    } else if refusal.is_some_and(|r| !r.problems.is_empty()) {
        Verdict::Refused
    } else if !workspace.lock_problems.is_empty() {
        Verdict::Unlocked
    } else {
        Verdict::Ok
    };
    Ok(CheckReport {
        workspace,
        findings,
        verdict,
    })
}
