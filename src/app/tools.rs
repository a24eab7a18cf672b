//! `tools`: every tool a composition mounts, per scope, with the policy
//! each call runs under; live, the MCP servers compared with
//! `chassis.lock`, and the lock rewritten on request.

use std::path::PathBuf;

use crate::engine::diag::did_you_mean;
use crate::engine::model::ScopePath;
use crate::engine::tool_listing::{ListedTool, ScopeTools, list_tools, scope_tools};
use crate::lock::Lock;

use super::caller::Caller;
use super::env::RunEnv;
use super::error::AppError;
use super::lock::{self, Probed};
use super::report::{ErrorsOnly, Notice};
use super::workspace::{Workspace, load_file};

/// What to list.
#[derive(Clone, Debug)]
pub struct ToolsOptions {
    /// The composition.
    pub file: PathBuf,
    /// Only this entry's tools (and only its server when live).
    pub entry: Option<String>,
    /// Only this scope in the per-scope listing.
    pub scope: Option<String>,
    /// Start the `mcp` servers and plugin processes and compare what they
    /// offer with the lock.
    pub live: bool,
    /// Start them and write what they offer to the lock.
    pub update_lock: bool,
    /// Extra environment for the servers' secrets.
    pub env_file: Option<PathBuf>,
}

/// The listing.
pub struct ToolsReport {
    /// The composition (after a lock update, as loaded again).
    pub workspace: Workspace,
    /// Every tool, with its effective policy.
    pub tools: Vec<ListedTool>,
    /// Per scope, the tools its views let an agent there see.
    pub scopes: Vec<ScopeTools>,
    /// What each started server offered.
    pub probed: Vec<Probed>,
    /// With `update_lock`: whether the lock was written (`false`: it was
    /// up to date; `None`: nothing was written).
    pub written: Option<bool>,
    /// The lock before.
    pub old_lock: Option<Lock>,
    /// The lock after (as read, or as the servers would make it).
    pub lock: Option<Lock>,
}

impl ToolsReport {
    /// Whether a live server differs from, or is missing in, the lock.
    pub fn drift(&self, update_lock: bool) -> bool {
        !update_lock && self.probed.iter().any(|p| !p.matches_lock())
    }
}

/// List the tools of `options.file`.
pub async fn tools(options: &ToolsOptions, caller: &Caller) -> Result<ToolsReport, AppError> {
    let file = &options.file;
    if options.update_lock {
        lock::set_aside_unreadable(file, caller)?;
    }
    let mut ws = load_file(file, &RunEnv::process(), &*caller.reporter)?;
    if let Some(id) = &options.entry {
        check_entry(&ws, id)?;
    }
    let scope = options
        .scope
        .as_deref()
        .map(|s| check_scope(&ws, s))
        .transpose()?;
    let old_lock = lock::read_lock(file);
    let mut current = old_lock.clone();
    let mut probed = Vec::new();
    let mut written = None;
    if options.live || options.update_lock {
        let ids: Vec<String> = lock::lockable_entries(&ws.composition)
            .into_iter()
            .filter(|id| options.entry.as_ref().is_none_or(|e| e == id))
            .collect();
        let env = super::mount::run_env(options.env_file.as_deref())?;
        probed = lock::probe_entries(
            file,
            &ws.composition,
            &ws.plan,
            &ids,
            old_lock.as_ref(),
            &env,
            caller,
        )
        .await?;
        lock::require_probed(&probed)?;
        let new = lock::updated(old_lock.as_ref(), &ws.composition, &probed);
        // A composition without `mcp` or process entries has nothing to
        // pin: leave a lock beside it (another composition's) alone.
        if options.update_lock && ids.is_empty() {
            caller.notice(Notice::NothingToPin);
        } else if options.update_lock {
            written = Some(lock::write(file, &new)?);
            // Load again, so the listing is what the pure commands now see.
            ws = load_file(file, &RunEnv::process(), &ErrorsOnly(&*caller.reporter))?;
        } else {
            crate::load::apply_lock(&mut ws.composition, Some(&new));
        }
        current = Some(new);
    }
    let mut tools = list_tools(&ws.composition, &ws.plan, current.as_ref());
    if let Some(id) = &options.entry {
        tools.retain(|t| &t.entry == id);
    }
    let mut scopes = scope_tools(&ws.tree, &tools);
    if let Some(s) = &scope {
        scopes.retain(|x| &x.scope == s);
    }
    Ok(ToolsReport {
        workspace: ws,
        tools,
        scopes,
        probed,
        written,
        old_lock,
        lock: current,
    })
}

fn check_entry(ws: &Workspace, id: &str) -> Result<(), AppError> {
    if ws.composition.entries.keys().any(|k| k.as_str() == id) {
        return Ok(());
    }
    let problem = super::error::Problem::input(format!("`{}` has no entry `{id}`", ws.display));
    Err(
        match did_you_mean(id, ws.composition.entries.keys().map(|k| k.as_str())) {
            Some(s) => problem.with_help(format!("did you mean `{s}`?")),
            None => problem,
        }
        .into(),
    )
}

fn check_scope(ws: &Workspace, s: &str) -> Result<String, AppError> {
    let found = ScopePath::new(s).ok().filter(|p| ws.tree.find(p).is_some());
    match found {
        Some(p) => Ok(p.to_string()),
        None => {
            let paths: Vec<String> = ws
                .tree
                .scopes()
                .iter()
                .map(|x| x.path.to_string())
                .collect();
            Err(AppError::input(format!(
                "`{}` has no scope `{s}`; scopes: {}",
                ws.display,
                paths.join(", ")
            )))
        }
    }
}
