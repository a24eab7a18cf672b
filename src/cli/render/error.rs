//! A failed operation on stderr: `error[code]: message` with `help:` lines
//! for a person, the same as a JSON diagnostic line under `--format json`;
//! a refused or failed publication with its fields.

use std::fmt::Write as _;

use crate::app::refusal::{Refusal, RefusalReason};
use crate::app::{AppError, Problem};
use crate::runtime::ReconcileError;
use crate::store::StoreError;

use super::super::ui::{Format, Ui, message_json, plain_diagnostic};

/// Show `e`.
pub fn show(ui: &Ui, e: &AppError) {
    match e {
        AppError::Load { .. } => {
            // Under JSON the diagnostics already said it all.
            if ui.format != Format::Json {
                ui.err(&format!("error: {e}"));
            }
        }
        AppError::Problem(p) => ui.err(&problem_text(p)),
        AppError::Problems(ps) => {
            for p in ps {
                ui.err(&problem_text(p));
            }
        }
        AppError::Refused {
            verb,
            display,
            refusal,
        } => refused(ui, verb, display, refusal),
        AppError::Reconcile(e) => reconcile_failure(ui, e),
        AppError::Store(e) => store_error(ui, e),
        AppError::Interrupted(_) => ui.err(&e.to_string()),
    }
}

/// A refused tool as one line: its message and code.
pub fn problem_line(d: &crate::engine::diag::Diagnostic) -> String {
    format!("{} [{}]", d.message, d.code.as_str())
}

/// `error[code]: message` and a `  help: …` line per suggestion.
fn problem_text(p: &Problem) -> String {
    let mut text = match p.code {
        Some(code) => format!("error[{code}]: {}", p.message),
        None => format!("error: {}", p.message),
    };
    for h in &p.help {
        let _ = write!(text, "\n  help: {h}");
    }
    text
}

fn store_error(ui: &Ui, e: &StoreError) {
    if ui.format == Format::Json {
        let help: Vec<String> = e.help().into_iter().map(Into::into).collect();
        ui.err(&message_json("error", Some(e.code()), &e.to_string(), &help).to_string());
    } else {
        let mut text = format!("error[{}]: {e}", e.code());
        if let Some(help) = e.help() {
            let _ = write!(text, "\n  help: {help}");
        }
        ui.err(&text);
    }
}

fn refused(ui: &Ui, verb: &str, display: &str, refusal: &Refusal) {
    let mut text = String::new();
    if !refusal.cycles.is_empty() {
        let _ = writeln!(
            text,
            "error: refusing to {verb} `{display}`: {} dependency cycle{}",
            refusal.cycles.len(),
            if refusal.cycles.len() == 1 { "" } else { "s" }
        );
        for c in &refusal.cycles {
            let _ = writeln!(text, "  - {c}");
        }
    }
    if !refusal.problems.is_empty() {
        let _ = writeln!(
            text,
            "error: refusing to {verb} `{display}`: {} tool problem{}",
            refusal.problems.len(),
            if refusal.problems.len() == 1 { "" } else { "s" }
        );
        for d in &refusal.problems {
            let _ = writeln!(text, "  - {}", problem_line(d));
        }
    }
    if !refusal.pending.is_empty() {
        let _ = writeln!(
            text,
            "error: refusing to {verb} `{display}`: {} pending hard requirement{}",
            refusal.pending.len(),
            if refusal.pending.len() == 1 { "" } else { "s" }
        );
        for p in &refusal.pending {
            let _ = writeln!(
                text,
                "  - {}: {} ({})",
                p.entry.as_str(),
                p.capability.as_str(),
                p.status.as_str()
            );
        }
    }
    let help = match refusal.reason() {
        RefusalReason::DependencyCycle => format!(
            "  help: break the cycle (see `chassis check {display}`); a cycle cannot be published"
        ),
        RefusalReason::ToolProblems if refusal.needs_lock_update() => format!(
            "  help: pin what the servers and plugin processes offer with `chassis tools {display} --update-lock` (or {verb} with --update-lock), and fix the rest (see `chassis check {display}`)"
        ),
        RefusalReason::ToolProblems => format!(
            "  help: fix them (see `chassis check {display}`); --allow-pending does not skip them"
        ),
        RefusalReason::PendingRequirements => format!(
            "  help: fix them (see `chassis check {display}`), or {verb} without the pending entries with --allow-pending"
        ),
    };
    text.push_str(&help);
    if ui.format == Format::Json {
        let code = match refusal.reason() {
            RefusalReason::DependencyCycle => "publish::cycle",
            RefusalReason::ToolProblems => "publish::refused",
            RefusalReason::PendingRequirements => "publish::pending",
        };
        let mut doc = plain_diagnostic(&text).unwrap_or_default();
        doc["code"] = code.into();
        ui.err(&doc.to_string());
    } else {
        ui.err(&text);
    }
}

/// A broken promise as text: what was promised, then each difference on
/// its own lines (a difference may carry the TOML to paste).
fn contract_text(code: &str, c: &crate::runtime::PluginContractError) -> String {
    let mut text = format!(
        "error[{code}]: plugin `{}` (entry `{}`) {}",
        c.provider_name, c.provider, c.promise
    );
    let _ = write!(text, "\n  promised: {}\n  registered:", c.promised);
    if c.actual.is_empty() {
        text.push_str(" nothing");
    }
    for a in &c.actual {
        let _ = write!(text, "\n    {}", a.replace('\n', "\n      "));
    }
    let list = |v: &[String]| {
        if v.is_empty() {
            "none".to_owned()
        } else {
            v.join(", ")
        }
    };
    let _ = write!(
        text,
        "\n  consumers affected: {}\n  rolled back: {}",
        list(&c.consumers),
        list(&c.rolled_back)
    );
    if !c.rollback_failures.is_empty() {
        let _ = write!(
            text,
            "\n  rollback failures: {}",
            c.rollback_failures.join("; ")
        );
    }
    text.push_str("\n  nothing was published; the current generation is unchanged");
    text
}

/// A reconcile failure with its fields.
fn reconcile_failure(ui: &Ui, e: &ReconcileError) {
    let (code, fields) = match e {
        ReconcileError::Cycle { cycles } => {
            ("runtime::cycle", serde_json::json!({ "cycles": cycles }))
        }
        ReconcileError::Instantiate {
            entry,
            error,
            rolled_back,
        } => (
            "runtime::instantiate",
            serde_json::json!({ "entry": entry, "error": error, "rolled_back": rolled_back }),
        ),
        ReconcileError::Setup { error, rolled_back } => (
            "runtime::setup",
            serde_json::json!({
                "plugin": error.plugin,
                "entry": error.entry_id,
                "instance_id": error.instance_id,
                "error": error.error,
                "cleanup_failures": error.cleanup_failures.iter().map(|f| format!("{} -> {}", f.description, f.error)).collect::<Vec<_>>(),
                "rolled_back": rolled_back,
            }),
        ),
        ReconcileError::Contract(c) => (
            "runtime::contract",
            serde_json::to_value(c.as_ref()).unwrap_or_default(),
        ),
        ReconcileError::DuplicateTool {
            tool,
            owners,
            rolled_back,
        } => (
            "runtime::duplicate-tool",
            serde_json::json!({ "tool": tool, "owners": owners, "rolled_back": rolled_back }),
        ),
        ReconcileError::UndeclaredPermission {
            entry,
            tool,
            undeclared,
            rolled_back,
        } => (
            "runtime::undeclared-permission",
            serde_json::json!({ "entry": entry, "tool": tool, "undeclared": undeclared, "rolled_back": rolled_back }),
        ),
        ReconcileError::Snapshot(m) => ("runtime::snapshot", serde_json::json!({ "error": m })),
        ReconcileError::Stopping => ("runtime::stopping", serde_json::json!({})),
    };
    if ui.format == Format::Json {
        ui.err(
            &serde_json::json!({
                "type": "diagnostic",
                "code": code,
                "severity": "error",
                "message": e.to_string(),
                "labels": [],
                "help": [],
                "fields": fields,
            })
            .to_string(),
        );
        return;
    }
    if let ReconcileError::Contract(c) = e {
        ui.err(&contract_text(code, c));
        return;
    }
    let mut text = format!("error[{code}]: {e}");
    if let Some(obj) = fields.as_object() {
        let width = obj.keys().map(String::len).max().unwrap_or(0);
        for (k, v) in obj {
            let v = match v {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Array(a) => format!(
                    "[{}]",
                    a.iter()
                        .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_owned))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                other => other.to_string(),
            };
            let _ = write!(text, "\n  {k:<width$}  {v}");
        }
    }
    text.push_str("\n  nothing was published; the current generation is unchanged");
    ui.err(&text);
}
