//! `chassis tools`: every tool a composition mounts, per scope, with the
//! policy each call runs under; `--live` starts the MCP servers and
//! compares them with `chassis.lock`, `--update-lock` rewrites it.

use std::fmt::Write as _;
use std::path::PathBuf;

use crate::engine::tool_listing::{ListedTool, PolicySource, ScopeTools, list_tools, scope_tools};
use crate::lock::Lock;

use super::super::exit::ExitStatus;
use super::super::lockfile::{self, Probed};
use super::super::ui::{Format, Ui};
use super::super::workspace::{Resolved, load_file};

/// List the tools a composition mounts and the policy each runs under.
///
/// Shows every tool of FILE — declared tools, `command` tools, and the
/// tools of `mcp` entries as pinned in `chassis.lock` beside FILE — with
/// its effective policy: permissions (argument templates), side effects,
/// idempotence, approval, timeout and cost class, and where that policy
/// came from (`override` = the composition's `[policy.tools.<name>]`,
/// `config` = a `command` entry, `annotations` = an MCP server's hints
/// with the entry's `config.policy`, `default`). Then, per scope, the tools
/// its tool views let an agent there see.
///
/// Without `--live` nothing is started. `--live` starts the selected `mcp`
/// entries' servers (secrets from the environment and `--env-file`), lists
/// what they offer, and compares it with the lock; `--update-lock` does
/// the same and writes `chassis.lock` (review it like code; commit it).
///
/// Exit status: 0 listed (and, with `--live`, every server matches its
/// lock; with `--update-lock`, the lock is written), 1 a server differs
/// from or is missing in the lock (`--live`), 2 unusable input, 3 a server
/// could not be started or read.
#[derive(Debug, clap::Args)]
#[command(
    after_long_help = "Examples:\n  chassis tools composition.toml\n  chassis tools composition.toml --entry fs --live\n  chassis tools composition.toml --update-lock\n  chassis tools composition.toml --scope /research --format json"
)]
pub struct ToolsArgs {
    /// Composition file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Only the tools of this entry (and only its server with `--live`).
    #[arg(long, value_name = "ID")]
    pub entry: Option<String>,
    /// Only this scope in the per-scope listing (e.g. `/research`).
    #[arg(long, value_name = "PATH")]
    pub scope: Option<String>,
    /// Start the `mcp` servers and compare what they offer with the lock.
    #[arg(long)]
    pub live: bool,
    /// Start the `mcp` servers and write what they offer to `chassis.lock`.
    #[arg(long)]
    pub update_lock: bool,
    /// Read KEY=VALUE lines as extra environment (secrets for the servers).
    #[arg(long, value_name = "FILE")]
    pub env_file: Option<PathBuf>,
}

/// Run `tools`.
pub fn run(ui: &Ui, args: &ToolsArgs) -> Result<ExitStatus, ExitStatus> {
    super::super::require_format(ui, &[Format::Text, Format::Json], "tools")?;
    if args.update_lock {
        lockfile::set_aside_unreadable(ui, &args.file)?;
    }
    let mut resolved = load_file(ui, &args.file)?;
    if let Some(id) = &args.entry {
        check_entry(ui, &resolved, id)?;
    }
    let scope = match &args.scope {
        Some(s) => Some(check_scope(ui, &resolved, s)?),
        None => None,
    };
    let old = lockfile::read_lock(&args.file);
    let mut lock = old.clone();
    let mut probed = Vec::new();
    let mut written = None;
    if args.live || args.update_lock {
        let ids: Vec<String> = lockfile::mcp_entries(&resolved.composition)
            .into_iter()
            .filter(|id| args.entry.as_ref().is_none_or(|e| e == id))
            .collect();
        let redactor = super::super::process_redactor();
        probed = lockfile::probe_entries(
            ui,
            &args.file,
            &resolved.composition,
            &ids,
            old.as_ref(),
            args.env_file.as_deref(),
            &redactor,
        )?;
        lockfile::require_probed(ui, &probed)?;
        let new = lockfile::updated(old.as_ref(), &resolved.composition, &probed);
        // A composition without `mcp` entries has nothing to pin: leave a
        // lock beside it (another composition's) alone.
        if args.update_lock && ids.is_empty() {
            if !ui.quiet && ui.format != Format::Json {
                ui.err("note: no `mcp` entries to pin; the lock is left as it is");
            }
        } else if args.update_lock {
            written = Some(lockfile::write(ui, &args.file, &new)?);
            // Load again, so the listing is what the pure commands now see.
            resolved = load_file(
                &Ui {
                    quiet: true,
                    ..ui.clone()
                },
                &args.file,
            )?;
        } else {
            crate::load::apply_lock(&mut resolved.composition, Some(&new));
        }
        lock = Some(new);
    }
    let mut tools = list_tools(&resolved.composition, &resolved.plan, lock.as_ref());
    if let Some(id) = &args.entry {
        tools.retain(|t| &t.entry == id);
    }
    let mut scopes = scope_tools(&resolved.tree, &tools);
    if let Some(s) = &scope {
        scopes.retain(|x| &x.scope == s);
    }
    let drift = !args.update_lock && probed.iter().any(|p| !p.matches_lock());
    match ui.format {
        Format::Json => ui.out_json(&json(
            &resolved, &tools, &scopes, &probed, written, &args.file,
        )),
        _ => ui.out(&text(
            &resolved,
            &tools,
            &scopes,
            &probed,
            written,
            old.as_ref(),
            lock.as_ref(),
            &args.file,
        )),
    }
    Ok(if drift {
        ExitStatus::Negative
    } else {
        ExitStatus::Success
    })
}

fn check_entry(ui: &Ui, r: &Resolved, id: &str) -> Result<(), ExitStatus> {
    if r.composition.entries.keys().any(|k| k.as_str() == id) {
        return Ok(());
    }
    let help =
        crate::engine::diag::did_you_mean(id, r.composition.entries.keys().map(|k| k.as_str()))
            .map(|s| format!("\n  help: did you mean `{s}`?"))
            .unwrap_or_default();
    ui.err(&format!("error: `{}` has no entry `{id}`{help}", r.display));
    Err(ExitStatus::Input)
}

fn check_scope(ui: &Ui, r: &Resolved, s: &str) -> Result<String, ExitStatus> {
    let found = crate::engine::model::ScopePath::new(s)
        .ok()
        .filter(|p| r.tree.find(p).is_some());
    match found {
        Some(p) => Ok(p.to_string()),
        None => {
            let paths: Vec<String> = r.tree.scopes().iter().map(|x| x.path.to_string()).collect();
            ui.err(&format!(
                "error: `{}` has no scope `{s}`; scopes: {}",
                r.display,
                paths.join(", ")
            ));
            Err(ExitStatus::Input)
        }
    }
}

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
    out
}

#[allow(clippy::too_many_arguments)]
fn text(
    r: &Resolved,
    tools: &[ListedTool],
    scopes: &[ScopeTools],
    probed: &[Probed],
    written: Option<bool>,
    old: Option<&Lock>,
    lock: Option<&Lock>,
    file: &std::path::Path,
) -> String {
    let mut out = String::new();
    if tools.is_empty() {
        let _ = writeln!(out, "{}: no tools", r.display);
    } else {
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
    if scopes.iter().any(|s| s.restricted) || scopes.len() > 1 {
        let all = tools.iter().filter(|t| t.active).count();
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
    if !probed.is_empty() {
        let _ = writeln!(out, "\nSERVERS");
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
            let _ = writeln!(
                out,
                "  {}  {} {} (protocol {}), {} tool{}: {state}",
                p.entry,
                live.server_name,
                live.server_version,
                live.protocol_version,
                live.tools.len(),
                if live.tools.len() == 1 { "" } else { "s" }
            );
        }
    }
    match written {
        Some(true) => {
            let _ = writeln!(
                out,
                "\nupdated {}: {}",
                lockfile::lock_path(file).display(),
                lock.map_or_else(String::new, |l| lockfile::summary(old, l))
            );
        }
        Some(false) => {
            let _ = writeln!(
                out,
                "\n{} is up to date",
                lockfile::lock_path(file).display()
            );
        }
        None => {
            if probed.iter().any(|p| !p.matches_lock()) {
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

fn json(
    r: &Resolved,
    tools: &[ListedTool],
    scopes: &[ScopeTools],
    probed: &[Probed],
    written: Option<bool>,
    file: &std::path::Path,
) -> serde_json::Value {
    serde_json::json!({
        "format_version": 1,
        "file": r.display,
        "lock": lockfile::lock_path(file).display().to_string(),
        "tools": tools,
        "scopes": scopes,
        "servers": probed.iter().map(|p| match &p.live {
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
        "lock_written": written,
    })
}
