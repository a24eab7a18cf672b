//! Threading `chassis.lock` into the manifests of `mcp` and process
//! plugin entries.
//!
//! An `mcp` entry's tools are what its server offers, and a process
//! plugin's registrations are what its program answers to `setup`; the
//! pure commands must not start either, so the lock file pins them. It is
//! read through the same [`Source`] as the composition (so `REV:PATH` reads
//! the lock at that revision), beside the root file. Each `mcp` entry's
//! manifest is derived again with its locked tools, and each process
//! entry's manifest gains the locked tools its TOML does not declare and
//! carries the pinned registrations (which mounting enforces), before
//! references to tools are checked; the agents a process plugin defines
//! join the composition's (`plugin_agents`).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use super::agent::WalkedAgent;
use super::source::{Source, SourceErrorKind};
use crate::engine::builtin::mcp;
use crate::engine::diag::{Code, Diagnostic};
use crate::engine::model::{Composition, EntryId, Manifest, ToolDecl, ToolName};
use crate::engine::span::Origin;
use crate::lock::{LOCK_FILE, Lock, LockEntry};

/// The lock beside `root`: `Ok(None)` when there is none, `Err` with the
/// diagnostic when it cannot be read.
pub(crate) fn read(source: &dyn Source, root: &Path) -> Result<Option<Lock>, Diagnostic> {
    let path = root
        .parent()
        .map_or_else(|| Path::new(LOCK_FILE).to_path_buf(), |d| d.join(LOCK_FILE));
    // Like an include, the lock is read only from inside the workspace (it
    // may be a link to a file elsewhere).
    if let (Some(ws), Some(real)) = (source.workspace(root), source.resolve(&path))
        && !real.starts_with(&ws)
    {
        return Err(Diagnostic::error(
            Code::IncludeOutside,
            format!(
                "`{}` is a link to a file outside the workspace `{}`",
                source.display_name(&path),
                ws.display()
            ),
        )
        .with_help("keep `chassis.lock` a file beside the composition"));
    }
    match source.read(&path) {
        Ok(text) => Lock::parse(&text).map(Some).map_err(|e| {
            Diagnostic::error(Code::BadLock, e.to_string()).with_help(
                "`chassis tools FILE --update-lock` writes it again from the live servers",
            )
        }),
        Err(e) if e.kind == SourceErrorKind::NotFound => Ok(None),
        Err(e) => Err(Diagnostic::error(
            Code::BadLock,
            format!(
                "cannot read `{}`: {}",
                source.display_name(&path),
                e.message
            ),
        )),
    }
}

/// Give every `mcp` entry of `comp` its locked tools; an entry the lock does
/// not know is reported (`load::mcp-lock-missing`, a warning the `check`
/// command turns into exit 1). Give every process plugin entry the lock
/// knows its pinned registrations.
pub(crate) fn apply(comp: &mut Composition, lock: Option<&Lock>, diags: &mut Vec<Diagnostic>) {
    for (id, entry) in comp.entries.iter_mut() {
        if entry.manifest.process.is_some() {
            if let Some(locked) = lock.and_then(|l| l.entries.get(id.as_str())) {
                entry.manifest = Arc::new(pin_process(&entry.manifest, locked));
            }
            continue;
        }
        if entry.manifest.kind.as_deref() != Some(mcp::KIND.name) {
            continue;
        }
        let locked = lock.and_then(|l| l.entries.get(id.as_str()));
        let Some(locked) = locked else {
            diags.push(
                Diagnostic::warning(
                    Code::McpLockMissing,
                    format!("the `mcp` entry `{id}` has no tools in `{LOCK_FILE}`"),
                )
                .at(entry.origin, "its tools are unknown to the pure commands")
                .with_help(
                    "run `chassis tools FILE --update-lock` to start the server and pin its tools",
                ),
            );
            continue;
        };
        let config = entry.config.to_json();
        let filter = mcp::ToolFilter::from_config(&config);
        let stale: Vec<&str> = locked
            .tools
            .iter()
            .filter(|t| !filter.admits(&t.remote_name) || filter.exposed(&t.remote_name) != t.name)
            .map(|t| t.name.as_str())
            .collect();
        if !stale.is_empty() {
            diags.push(
                Diagnostic::warning(
                    Code::McpLockStale,
                    format!(
                        "the locked tools of the `mcp` entry `{id}` do not match its `tools` filter or prefix: {}",
                        stale
                            .iter()
                            .map(|t| format!("`{t}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
                .at(entry.origin, "changed since the lock was written")
                .with_help("run `chassis tools FILE --update-lock` to pin the tools it mounts now"),
            );
        }
        let expected = mcp::missing_expected(&config, locked);
        if !expected.is_empty() {
            diags.push(
                Diagnostic::warning(
                    Code::McpExpectedToolMissing,
                    format!(
                        "the `mcp` entry `{id}` expects {} that its server does not offer in `{LOCK_FILE}`",
                        expected
                            .iter()
                            .map(|t| format!("`{t}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
                .at(entry.origin, "publication would fail: the promise is broken")
                .with_help(
                    "check the server's tool names (`chassis tools FILE --live`) and the entry's `tools.allow`/`tools.deny`",
                ),
            );
        }
        if let Ok(mut m) = mcp::manifest_with_lock(&entry.config, Some(locked)) {
            m.origin = entry.manifest.origin;
            entry.manifest = Arc::new(m);
        }
    }
}

/// `manifest` of a process plugin with what `locked` pins: the locked
/// tools its TOML does not declare (so agents may name them and the tool
/// schema hash covers them) and the pinned registrations.
fn pin_process(manifest: &Manifest, locked: &LockEntry) -> Manifest {
    let mut m = manifest.clone();
    let declared: std::collections::BTreeSet<ToolName> =
        m.tools.iter().map(|d| d.name.clone()).collect();
    m.tools.extend(
        locked
            .tools
            .iter()
            .filter_map(ToolDecl::from_lock)
            .filter(|d| !declared.contains(&d.name)),
    );
    m.tools.sort_by(|a, b| a.name.cmp(&b.name));
    if let Some(process) = m.process.as_mut() {
        Arc::make_mut(process).pinned = Some(Arc::new(locked.clone()));
    }
    m
}

/// The agents the process plugin entries of `comp` define, as
/// `chassis.lock` pins them, ready to be placed like `[agents.X]` tables.
/// Each points at its entry's declaration (it has no TOML of its own). A
/// definition the loader cannot use, or a name `toml` (the composition's
/// agents) or another entry already defines, is left out and reported as
/// a lock finding (a warning: the file still loads, so `--update-lock`
/// can pin again; `check` answers no and `publish`/`run` refuse). The
/// names of those left out are returned too: a reference to one is
/// covered by that finding, not another error.
pub(crate) fn plugin_agents(
    comp: &Composition,
    toml: &[&WalkedAgent],
    diags: &mut Vec<Diagnostic>,
) -> (Vec<WalkedAgent>, std::collections::BTreeSet<String>) {
    let mut out: Vec<WalkedAgent> = Vec::new();
    let mut withheld = std::collections::BTreeSet::new();
    // Who defines each name so far: the composition's agents (`None`),
    // then the entries' as they are placed.
    let mut by_name: BTreeMap<String, (Option<&EntryId>, Option<Origin>)> = toml
        .iter()
        .map(|a| (a.decl.name.clone(), (None, a.decl.origin)))
        .collect();
    for (id, entry) in &comp.entries {
        let Some(locked) = entry
            .manifest
            .process
            .as_ref()
            .and_then(|p| p.pinned.as_deref())
        else {
            continue;
        };
        for definition in &locked.agents {
            let mut decl = match definition.to_decl() {
                Ok(d) => d,
                Err(problems) => {
                    diags.push(
                        Diagnostic::warning(
                            Code::BadLock,
                            format!(
                                "the agent `{}` that `{LOCK_FILE}` pins for the entry `{id}` cannot be used: {}",
                                definition.name,
                                problems.join("; ")
                            ),
                        )
                        .at(entry.origin, "the plugin defining it")
                        .with_help(
                            "`chassis tools FILE --update-lock` pins what the plugin defines now",
                        ),
                    );
                    withheld.insert(definition.name.clone());
                    continue;
                }
            };
            if let Some((first_by, first)) = by_name.get(&decl.name) {
                let who = match first_by {
                    None => "the composition".to_owned(),
                    Some(e) if *e == id => "the same entry again".to_owned(),
                    Some(e) => format!("the entry `{e}`"),
                };
                diags.push(
                    Diagnostic::warning(
                        Code::BadLock,
                        format!(
                            "the agent `{}` is defined by the entry `{id}` (pinned in `{LOCK_FILE}`) and by {who}",
                            decl.name
                        ),
                    )
                    .at(entry.origin, "defines it")
                    .also(*first, "defines it too")
                    .with_help("rename one of them: agent names are unique in a composition"),
                );
                continue;
            }
            decl.origin = entry.origin;
            decl.model.origin = entry.origin;
            let at = |names: &[String]| -> Vec<(String, Origin)> {
                entry
                    .origin
                    .map_or_else(Vec::new, |o| names.iter().map(|n| (n.clone(), o)).collect())
            };
            let tool_refs = at(definition.tools.as_deref().unwrap_or_default());
            let sub_agent_refs = at(&definition.sub_agents);
            by_name.insert(decl.name.clone(), (Some(id), entry.origin));
            decl.defined_by = Some(id.clone());
            out.push(WalkedAgent {
                decl,
                prompt_file: None,
                scope_origin: None,
                tool_refs,
                sub_agent_refs,
            });
        }
    }
    (out, withheld)
}
