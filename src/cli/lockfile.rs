//! Reading live MCP servers into `chassis.lock`: the one place that starts
//! servers for the lock (`chassis tools --live/--update-lock`, and
//! `publish`/`run --update-lock`).
//!
//! Probing starts each selected `mcp` entry's server with the entry's
//! configuration and the same secrets a run would use, lists its tools
//! (after the entry's filter and prefix), stops it, and compares what it
//! offered with the lock. Writing keeps the locked entries that were not
//! probed, drops entries of this composition that are no longer `mcp`
//! entries, and keeps ids it does not know (several compositions in one
//! directory share the lock). It is written atomically (a temporary file
//! renamed over the old one) and only when its text changes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::engine::builtin::mcp;
use crate::engine::model::Composition;
use crate::engine::secret::Redactor;
use crate::lock::{LOCK_FILE, Lock, LockEntry, ToolChange, diff_tools};

use super::exit::ExitStatus;
use super::ui::Ui;

/// What probing one entry found.
pub struct Probed {
    /// The entry id.
    pub entry: String,
    /// What its server offers now, or why it could not be read.
    pub live: Result<LockEntry, String>,
    /// The changes from the locked entry (empty when equal); `None` when
    /// the lock has no such entry.
    pub changes: Option<Vec<ToolChange>>,
}

impl Probed {
    /// Whether the server offers exactly what is locked.
    pub fn matches_lock(&self) -> bool {
        self.live.is_ok() && self.changes.as_ref().is_some_and(Vec::is_empty)
    }
}

/// The lock file beside `file`.
pub fn lock_path(file: &Path) -> PathBuf {
    match file.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) => dir.join(LOCK_FILE),
        // Shown as `chassis.lock`, not `./chassis.lock`.
        None => PathBuf::from(LOCK_FILE),
    }
}

/// The lock beside `file`, if there is a readable one (the loader has
/// already reported one it cannot read).
pub fn read_lock(file: &Path) -> Option<Lock> {
    std::fs::read_to_string(lock_path(file))
        .ok()
        .and_then(|t| Lock::parse(&t).ok())
}

/// The ids of the `mcp` entries of `composition`.
pub fn mcp_entries(composition: &Composition) -> Vec<String> {
    composition
        .entries
        .iter()
        .filter(|(_, e)| e.manifest.kind.as_deref() == Some(mcp::KIND.name))
        .map(|(id, _)| id.to_string())
        .collect()
}

/// Start the servers of the `mcp` entries `ids` of `composition` (at
/// `file`) and read what they offer, comparing with `lock`. Secrets come
/// from the environment and `env_file`; `redactor` learns them.
pub fn probe_entries(
    ui: &Ui,
    file: &Path,
    composition: &Composition,
    ids: &[String],
    lock: Option<&Lock>,
    env_file: Option<&Path>,
    redactor: &Redactor,
) -> Result<Vec<Probed>, ExitStatus> {
    let secrets = super::workspace::secret_provider(ui, redactor, env_file)?;
    let env = crate::plugins::BuiltinEnv::new(super::workspace::base_dir(file));
    let rt = super::commands::publish::runtime().map_err(|e| {
        ui.err(&format!("error: cannot start the runtime: {e}"));
        ExitStatus::Failure
    })?;
    let secret = |name: &str| secrets.get(name).map_err(|e| e.to_string());
    let mut out = Vec::new();
    for id in ids {
        let Some(entry) = composition.entries.iter().find(|(k, _)| k.as_str() == id) else {
            continue;
        };
        if !ui.quiet && ui.format != super::ui::Format::Json {
            ui.info(&format!("starting the MCP server of `{id}`…"));
        }
        let config = entry.1.config.to_json();
        let started = std::time::Instant::now();
        let probed = rt.block_on(async {
            tokio::select! {
                r = crate::plugins::mcp::probe(id, &config, &env, &secret, redactor) => Some(r),
                () = super::interrupt::signalled() => None,
            }
        });
        let Some(live) = probed else {
            ui.err("interrupted: the lock was not changed");
            return Err(ExitStatus::Interrupted);
        };
        let live = live.map_err(|e| redactor.redact(&e).into_owned());
        tracing::info!(
            entry = id.as_str(),
            ok = live.is_ok(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "probed"
        );
        let changes = match (&live, lock.and_then(|l| l.entries.get(id))) {
            (Ok(live), Some(locked)) => Some(diff_tools(locked, live)),
            _ => None,
        };
        out.push(Probed {
            entry: id.clone(),
            live,
            changes,
        });
    }
    Ok(out)
}

/// The lock after `probed`: the probed entries replaced, the others of
/// `composition` kept from `old`; an entry of `composition` that is no
/// longer an `mcp` entry is dropped, and entries of ids `composition`
/// does not have are kept (another composition in the same directory may
/// own them).
pub fn updated(old: Option<&Lock>, composition: &Composition, probed: &[Probed]) -> Lock {
    let mut entries: BTreeMap<String, LockEntry> = old
        .map(|l| {
            l.entries
                .iter()
                .filter(|(id, _)| {
                    !composition
                        .entries
                        .keys()
                        .any(|k| k.as_str() == id.as_str())
                })
                .map(|(id, e)| (id.clone(), e.clone()))
                .collect()
        })
        .unwrap_or_default();
    for id in mcp_entries(composition) {
        let live = probed
            .iter()
            .find(|p| p.entry == id)
            .and_then(|p| p.live.as_ref().ok());
        let kept = old.and_then(|l| l.entries.get(&id));
        if let Some(e) = live.or(kept) {
            entries.insert(id, e.clone());
        }
    }
    Lock {
        version: crate::lock::LOCK_VERSION,
        entries,
    }
}

/// Write `lock` beside `file` when its text differs; `Ok(true)` when it
/// was written.
pub fn write(ui: &Ui, file: &Path, lock: &Lock) -> Result<bool, ExitStatus> {
    let path = lock_path(file);
    let text = lock.to_text();
    if std::fs::read_to_string(&path).is_ok_and(|old| old == text) {
        return Ok(false);
    }
    let tmp = path.with_extension("lock.tmp");
    std::fs::write(&tmp, &text)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            ui.err(&format!("error: cannot write `{}`: {e}", path.display()));
            ExitStatus::Failure
        })?;
    Ok(true)
}

/// Before `--update-lock` rewrites it: a lock beside `file` that cannot be
/// read is renamed to `chassis.lock.invalid` (kept, not lost), so the
/// composition loads and the lock is written afresh.
pub fn set_aside_unreadable(ui: &Ui, file: &Path) -> Result<(), ExitStatus> {
    let path = lock_path(file);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(());
    };
    if Lock::parse(&text).is_ok() {
        return Ok(());
    }
    let aside = path.with_extension("lock.invalid");
    std::fs::rename(&path, &aside).map_err(|e| {
        ui.err(&format!(
            "error: cannot move `{}` aside: {e}",
            path.display()
        ));
        ExitStatus::Failure
    })?;
    if !ui.quiet {
        ui.err(&format!(
            "warning: `{}` could not be read; it is kept as `{}` and written afresh",
            path.display(),
            aside.display()
        ));
    }
    Ok(())
}

/// Report probe failures on stderr; `Err(3)` when there was one.
pub fn require_probed(ui: &Ui, probed: &[Probed]) -> Result<(), ExitStatus> {
    let failed: Vec<&Probed> = probed.iter().filter(|p| p.live.is_err()).collect();
    for p in &failed {
        if let Err(e) = &p.live {
            ui.err(&format!("error[mcp::start]: entry `{}`: {e}", p.entry));
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(ExitStatus::Failure)
    }
}

/// Probe every `mcp` entry of the composition at `file` and rewrite the
/// lock (`publish`/`run --update-lock`); reports what changed on stderr.
pub fn update_for(
    ui: &Ui,
    file: &Path,
    env_file: Option<&Path>,
    redactor: &Redactor,
) -> Result<(), ExitStatus> {
    set_aside_unreadable(ui, file)?;
    let resolved = super::workspace::load_file(
        &Ui {
            quiet: true,
            ..ui.clone()
        },
        file,
    )?;
    let ids = mcp_entries(&resolved.composition);
    if ids.is_empty() {
        return Ok(());
    }
    let old = read_lock(file);
    let probed = probe_entries(
        ui,
        file,
        &resolved.composition,
        &ids,
        old.as_ref(),
        env_file,
        redactor,
    )?;
    require_probed(ui, &probed)?;
    let lock = updated(old.as_ref(), &resolved.composition, &probed);
    if write(ui, file, &lock)? && !ui.quiet {
        ui.info(&format!(
            "updated `{}`: {}",
            lock_path(file).display(),
            summary(old.as_ref(), &lock)
        ));
    }
    Ok(())
}

/// `fs (+2 tools, -1), time (new)`: what changed between two locks.
pub fn summary(old: Option<&Lock>, new: &Lock) -> String {
    let mut parts = Vec::new();
    for (id, e) in &new.entries {
        match old.and_then(|l| l.entries.get(id)) {
            None => parts.push(format!(
                "{id} (new, {} tool{})",
                e.tools.len(),
                if e.tools.len() == 1 { "" } else { "s" }
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
