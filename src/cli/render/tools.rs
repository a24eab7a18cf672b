//! `tools` output: a table of tools with their policy, the tools each
//! scope sees, and the live servers against `chassis.lock`.

use std::fmt::Write as _;
use std::path::Path;

use crate::app::lock::{self, Probed};
use crate::app::tools::ToolsReport;
use crate::engine::tool_listing::{ListedTool, PolicySource};
use crate::lock::{Lock, ToolChange, diff_tools};

/// `read_only, idempotent · permissions filesystem.read:{/path} · timeout 60s`.
fn policy_text(t: &ListedTool) -> String {
    let p = &t.policy;
    let mut parts = Vec::new();
    let mut traits: Vec<String> = p.side_effects.clone();
    if p.idempotent {
        traits.push("idempotent".into());
    }
    if p.approval_required {
        traits.push("approval required".into());
    }
    if !traits.is_empty() {
        parts.push(traits.join(", "));
    }
    if !p.permissions.is_empty() {
        parts.push(format!("permissions {}", p.permissions.join(", ")));
    }
    if let Some(s) = p.timeout_seconds {
        parts.push(format!("timeout {s}s"));
    }
    if let Some(c) = &p.cost_class {
        parts.push(format!("cost {c}"));
    }
    let mut out = if parts.is_empty() {
        "-".to_owned()
    } else {
        parts.join(" · ")
    };
    if t.policy_source != PolicySource::Annotations && t.policy_source != PolicySource::Config {
        let _ = write!(out, " ({})", t.policy_source.as_str());
    }
    if t.ungoverned {
        out.push_str(" · ungoverned: each call needs approval");
    }
    out
}

/// The listing as text.
pub fn text(r: &ToolsReport, file: &Path) -> String {
    let mut out = String::new();
    tool_table(r, &mut out);
    scope_lines(r, &mut out);
    server_lines(&r.probed, &mut out);
    match r.written {
        Some(true) => {
            let _ = writeln!(
                out,
                "\nupdated {}: {}",
                lock::lock_path(file).display(),
                r.lock
                    .as_ref()
                    .map_or_else(String::new, |l| lock_summary(r.old_lock.as_ref(), l))
            );
        }
        Some(false) => {
            let _ = writeln!(out, "\n{} is up to date", lock::lock_path(file).display());
        }
        None => {
            if r.probed.iter().any(|p| !p.matches_lock()) {
                let _ = writeln!(
                    out,
                    "\nhelp: review the difference, then `chassis tools {} --update-lock` pins it",
                    file.display()
                );
            }
        }
    }
    out
}

fn tool_table(r: &ToolsReport, out: &mut String) {
    let tools = &r.tools;
    if tools.is_empty() {
        let _ = writeln!(out, "{}: no tools", r.workspace.display);
        return;
    }
    let entry_of = |t: &ListedTool| {
        if t.active {
            t.entry.clone()
        } else {
            format!("{} (pending)", t.entry)
        }
    };
    let w_name = tools.iter().map(|t| t.name.len()).max().unwrap_or(0).max(4);
    let w_entry = tools
        .iter()
        .map(|t| entry_of(t).len())
        .max()
        .unwrap_or(0)
        .max(5);
    let w_kind = tools.iter().map(|t| t.kind.len()).max().unwrap_or(0).max(4);
    let _ = writeln!(
        out,
        "{:<w_name$}  {:<w_entry$}  {:<w_kind$}  POLICY",
        "TOOL", "ENTRY", "KIND"
    );
    for t in tools {
        let _ = writeln!(
            out,
            "{:<w_name$}  {:<w_entry$}  {:<w_kind$}  {}",
            t.name,
            entry_of(t),
            t.kind,
            policy_text(t)
        );
    }
}

fn scope_lines(r: &ToolsReport, out: &mut String) {
    let scopes = &r.scopes;
    if !(scopes.iter().any(|s| s.restricted) || scopes.len() > 1) {
        return;
    }
    let all = r.tools.iter().filter(|t| t.active).count();
    let w = scopes.iter().map(|s| s.scope.len()).max().unwrap_or(1);
    let _ = writeln!(out, "\nSCOPES");
    for s in scopes {
        let seen = if s.tools.len() == all && all == 1 {
            "the one tool".to_owned()
        } else if s.tools.len() == all {
            format!("all {all} tools")
        } else if s.tools.is_empty() {
            "no tools".to_owned()
        } else {
            format!("{} of {all}: {}", s.tools.len(), s.tools.join(", "))
        };
        let _ = writeln!(out, "  {:<w$}  {seen}", s.scope);
    }
}

/// `, N hooks, M routes, K agents` after a tool count (nothing for none).
fn extras_suffix(e: &crate::lock::LockEntry) -> String {
    let mut out = String::new();
    for (n, one) in [
        (e.hooks.len(), "hook"),
        (e.routes.len(), "route"),
        (e.agents.len(), "agent"),
    ] {
        match n {
            0 => {}
            1 => out.push_str(&format!(", 1 {one}")),
            n => out.push_str(&format!(", {n} {one}s")),
        }
    }
    out
}

fn server_lines(probed: &[Probed], out: &mut String) {
    if probed.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nSTARTED (servers and plugin processes)");
    for p in probed {
        let Ok(live) = &p.live else { continue };
        let state = match &p.changes {
            None => "not in chassis.lock".to_owned(),
            Some(c) if c.is_empty() => "matches chassis.lock".to_owned(),
            Some(c) => format!(
                "differs from chassis.lock: {}",
                c.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let hooks = extras_suffix(live);
        let _ = writeln!(
            out,
            "  {}  {} {} (protocol {}), {} tool{}{hooks}: {state}",
            p.entry,
            live.server_name,
            live.server_version,
            live.protocol_version,
            live.tools.len(),
            if live.tools.len() == 1 { "" } else { "s" }
        );
    }
}

/// The listing as JSON.
pub fn json(r: &ToolsReport, file: &Path) -> serde_json::Value {
    serde_json::json!({
        "format_version": 1,
        "file": r.workspace.display,
        "lock": lock::lock_path(file).display().to_string(),
        "tools": r.tools,
        "scopes": r.scopes,
        "servers": r.probed.iter().map(|p| match &p.live {
            Ok(l) => serde_json::json!({
                "entry": p.entry,
                "server_name": l.server_name,
                "server_version": l.server_version,
                "protocol_version": l.protocol_version,
                "tools": l.tools.iter().map(|t| &t.name).collect::<Vec<_>>(),
                "in_lock": p.changes.is_some(),
                "matches_lock": p.matches_lock(),
                "changes": p.changes,
            }),
            Err(e) => serde_json::json!({ "entry": p.entry, "error": e }),
        }).collect::<Vec<_>>(),
        "lock_written": r.written,
    })
}

/// What changed between two locks: `fs (+2 -1 ~0), time (new, 1 tool)`.
pub fn lock_summary(old: Option<&Lock>, new: &Lock) -> String {
    let mut parts = Vec::new();
    for (id, e) in &new.entries {
        match old.and_then(|l| l.entries.get(id)) {
            None => parts.push(format!(
                "{id} (new, {} tool{}{})",
                e.tools.len(),
                if e.tools.len() == 1 { "" } else { "s" },
                extras_suffix(e)
            )),
            Some(o) => {
                let changes = diff_tools(o, e);
                let count = |f: fn(&ToolChange) -> bool| changes.iter().filter(|c| f(c)).count();
                let added = count(|c| matches!(c, ToolChange::Added { .. }));
                let removed = count(|c| matches!(c, ToolChange::Removed { .. }));
                let changed = changes.len() - added - removed;
                if !changes.is_empty() {
                    parts.push(format!("{id} (+{added} -{removed} ~{changed})"));
                } else if o != e {
                    parts.push(format!(
                        "{id} (server {} {})",
                        e.server_name, e.server_version
                    ));
                }
            }
        }
    }
    for id in old.map(|l| l.entries.keys()).into_iter().flatten() {
        if !new.entries.contains_key(id) {
            parts.push(format!("{id} (removed)"));
        }
    }
    if parts.is_empty() {
        "no change".to_owned()
    } else {
        parts.join(", ")
    }
}
