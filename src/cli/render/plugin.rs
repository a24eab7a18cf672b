//! `plugin new` and `plugin check` output.

use std::fmt::Write as _;

use crate::app::plugin::check::CheckReport;
use crate::app::plugin::new::Created;

/// `plugin new --format json`.
pub fn created_json(c: &Created) -> serde_json::Value {
    serde_json::json!({
        "format_version": 1,
        "dir": c.dir.display().to_string(),
        "files": c.files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>(),
        "include": c.include,
        "test": c.test,
        "check": c.check,
    })
}

/// `plugin new`.
pub fn created_text(c: &Created) -> String {
    let mut out = format!("created {}:\n", c.dir.display());
    for f in &c.files {
        let _ = writeln!(out, "  {}", f.display());
    }
    let _ = writeln!(
        out,
        "\nadd it to your composition (chassis never edits it for you):\n  {}\n",
        c.include
    );
    let _ = writeln!(out, "then:\n  {:<44} # the plugin's own test", c.test);
    let _ = write!(out, "  {:<44} # the protocol conformance suite", c.check);
    out
}

/// `plugin check --format json`.
pub fn check_json(r: &CheckReport) -> serde_json::Value {
    serde_json::json!({
        "format_version": 1,
        "plugin": r.plugin,
        "program": r.program,
        "passed": r.passed(),
        "checks": r.checks,
    })
}

/// `plugin check`.
pub fn check_text(r: &CheckReport) -> String {
    let mut out = format!("plugin `{}` ({})\n", r.plugin, r.program);
    let width = r.checks.iter().map(|c| c.name.len()).max().unwrap_or(0);
    for c in &r.checks {
        let mark = if c.passed { "ok  " } else { "FAIL" };
        let _ = writeln!(out, "  {mark} {:<width$}  {}", c.name, c.detail);
    }
    let failed = r.checks.iter().filter(|c| !c.passed).count();
    let _ = write!(
        out,
        "{} checks: {} passed, {failed} failed",
        r.checks.len(),
        r.checks.len() - failed
    );
    out
}
