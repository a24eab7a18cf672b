//! Reading live MCP servers and plugin processes into `chassis.lock`: the
//! one place that starts them for the lock (`tools --live/--update-lock`,
//! and `publish`/`run --update-lock`).
//!
//! Probing starts each selected `mcp` entry's server with the entry's
//! configuration and the same secrets a run would use, lists its tools
//! (after the entry's filter and prefix), stops it, and compares what it
//! offered with the lock. A process plugin's entry is started alone
//! ([`crate::plugins::process::probe`]) and what it registers (tools with
//! their policies, hooks) is compared the same way. Writing keeps the locked entries that were not
//! probed, drops entries of this composition that are no longer `mcp`
//! entries, and keeps ids it does not know (several compositions in one
//! directory share the lock). It is written atomically (a temporary file
//! renamed over the old one) and only when its text changes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::engine::builtin::mcp;
use crate::engine::model::{Composition, EntryId};
use crate::engine::resolve::Plan;
use crate::lock::{LOCK_FILE, LOCK_VERSION, Lock, LockEntry, ToolChange, diff_tools};
use crate::plugins::process::protocol::{BoundProvider, CapabilityRegistration};

use super::caller::Caller;
use super::env::RunEnv;
use super::error::{AppError, Problem};
use super::report::{ErrorsOnly, Notice};

/// What probing one entry found.
pub struct Probed {
    /// The entry id.
    pub entry: String,
    /// Whether it is a process plugin's entry (else an `mcp` entry).
    pub process: bool,
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

/// The ids of the entries of `composition` the lock pins: `mcp` entries
/// and entries of process plugins.
pub fn lockable_entries(composition: &Composition) -> Vec<String> {
    composition
        .entries
        .iter()
        .filter(|(_, e)| {
            e.manifest.kind.as_deref() == Some(mcp::KIND.name) || e.manifest.process.is_some()
        })
        .map(|(id, _)| id.to_string())
        .collect()
}

/// Start the servers of the `mcp` entries `ids` of `composition` (at
/// `file`) and read what they offer, comparing with `lock`. Secrets come
/// from `env`; the caller's redactor learns them. A process plugin is
/// started after the process plugins it requires (those `ids` leaves out
/// too, as `plan` binds them): its `setup` then reads their values, as it
/// would in a run.
pub async fn probe_entries(
    file: &Path,
    composition: &Composition,
    plan: &Plan,
    ids: &[String],
    lock: Option<&Lock>,
    env: &RunEnv,
    caller: &Caller,
) -> Result<Vec<Probed>, AppError> {
    let mut probing = Probing::new(file, composition, plan, env, caller);
    let mut out = Vec::new();
    for (id, wanted) in probing_order(composition, plan, ids) {
        let Some(live) = probing.probe(&id).await? else {
            continue;
        };
        if !wanted {
            continue;
        }
        let changes = match (&live, lock.and_then(|l| l.entries.get(id.as_str()))) {
            (Ok(live), Some(locked)) => Some(diff_tools(locked, live)),
            _ => None,
        };
        out.push(Probed {
            entry: id.to_string(),
            process: composition
                .entries
                .get(&id)
                .is_some_and(|e| e.manifest.process.is_some()),
            live,
            changes,
        });
    }
    Ok(out)
}

/// The providers `plan` binds to the requirements of entry `id`, as a run
/// hands them to its process: the process plugins among them (and theirs)
/// are started alone first, to read what they provide (`chassis plugin
/// check`).
pub async fn providers_for(
    file: &Path,
    composition: &Composition,
    plan: &Plan,
    id: &str,
    env: &RunEnv,
    caller: &Caller,
) -> Result<ProvidersFor, AppError> {
    let Ok(id) = EntryId::new(id) else {
        return Ok(ProvidersFor::default());
    };
    let mut probing = Probing::new(file, composition, plan, env, caller);
    for (provider, _) in probing_order(composition, plan, &[id.to_string()]) {
        if provider != id {
            probing.probe(&provider).await?;
        }
    }
    Ok(ProvidersFor {
        bound: bound_providers(composition, plan, &id, &probing.provided, &caller.redactor),
        failed: probing.failed_providers(&id),
    })
}

/// What [`providers_for`] found.
#[derive(Default)]
pub struct ProvidersFor {
    /// Each requirement's provider, with its value when one was read.
    pub bound: BTreeMap<String, BoundProvider>,
    /// The providers that could not be started, each with the first line
    /// of why (their values are `null`).
    pub failed: Vec<(String, String)>,
}

/// Probing entries one after the other, remembering what each process
/// plugin provided for the plugins that require it.
struct Probing<'a> {
    composition: &'a Composition,
    plan: &'a Plan,
    caller: &'a Caller,
    secrets: std::sync::Arc<dyn crate::engine::secret::SecretProvider>,
    builtin: crate::plugins::BuiltinEnv,
    provided: BTreeMap<String, Vec<CapabilityRegistration>>,
    /// Why each entry that could not be probed failed (a consumer's failure
    /// then names its provider's).
    failed: BTreeMap<String, String>,
}

impl<'a> Probing<'a> {
    fn new(
        file: &Path,
        composition: &'a Composition,
        plan: &'a Plan,
        env: &RunEnv,
        caller: &'a Caller,
    ) -> Self {
        Self {
            composition,
            plan,
            caller,
            secrets: super::mount::secret_provider(&caller.redactor, env),
            builtin: crate::plugins::BuiltinEnv::new(super::workspace::base_dir(file)),
            provided: BTreeMap::new(),
            failed: BTreeMap::new(),
        }
    }

    /// The providers of `id` that could not be probed, each with the first
    /// line of why.
    fn failed_providers(&self, id: &EntryId) -> Vec<(String, String)> {
        self.plan
            .resolutions_of(id.as_str())
            .iter()
            .filter_map(|r| r.selected.as_ref())
            .filter_map(|s| {
                let why = self.failed.get(s.entry.as_str())?;
                let first = why.lines().next().unwrap_or_default().to_owned();
                Some((s.entry.to_string(), first))
            })
            .collect()
    }

    /// Start `id`'s server or plugin and read what it offers (`None` when
    /// the composition has no such entry); interrupted, an error.
    async fn probe(&mut self, id: &EntryId) -> Result<Option<Result<LockEntry, String>>, AppError> {
        let Some(entry) = self.composition.entries.get(id) else {
            return Ok(None);
        };
        let redactor = &self.caller.redactor;
        let secret = |name: &str| self.secrets.get(name).map_err(|e| e.to_string());
        let process = entry.manifest.process.is_some();
        self.caller.notice(Notice::ServerStarting {
            entry: id.as_str(),
            plugin: process,
        });
        let started = std::time::Instant::now();
        let probing = async {
            if process {
                let requirements =
                    bound_providers(self.composition, self.plan, id, &self.provided, redactor);
                probe_process(id, entry, requirements, &secret, redactor).await
            } else {
                let config = entry.config.to_json();
                crate::plugins::mcp::probe(id.as_str(), &config, &self.builtin, &secret, redactor)
                    .await
                    .map(|entry| (entry, Vec::new()))
            }
        };
        let probed = tokio::select! {
            r = probing => Some(r),
            () = self.caller.interrupt.wait() => None,
        };
        let Some(live) = probed else {
            return Err(AppError::Interrupted("the lock was not changed"));
        };
        let live = live.map_err(|e| redactor.redact(&e).into_owned());
        tracing::info!(
            entry = id.as_str(),
            ok = live.is_ok(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "probed"
        );
        let live = match live {
            Ok((lock_entry, capabilities)) => {
                self.provided.insert(id.to_string(), capabilities);
                Ok(lock_entry)
            }
            Err(why) => {
                // Its setup saw `null` for what a failed provider would
                // have provided: say which one failed, and why.
                let mut why = why;
                for (provider, first) in self.failed_providers(id) {
                    why.push_str(&format!(
                        "\n(its provider `{provider}` could not be started for the probe either: {first})"
                    ));
                }
                self.failed.insert(id.to_string(), why.clone());
                Err(why)
            }
        };
        Ok(Some(live))
    }
}

/// The entries to probe, in order, each with whether it was asked for:
/// `ids`, and the process plugins they require (transitively, as `plan`
/// binds them) — providers before their consumers.
fn probing_order(composition: &Composition, plan: &Plan, ids: &[String]) -> Vec<(EntryId, bool)> {
    let wanted: BTreeSet<&str> = ids.iter().map(String::as_str).collect();
    let mut needed: BTreeSet<EntryId> = BTreeSet::new();
    let mut work: Vec<EntryId> = ids.iter().filter_map(|id| EntryId::new(id).ok()).collect();
    while let Some(id) = work.pop() {
        if !needed.insert(id.clone()) {
            continue;
        }
        for r in plan.resolutions_of(id.as_str()) {
            if let Some(s) = &r.selected
                && composition
                    .entries
                    .get(&s.entry)
                    .is_some_and(|e| e.manifest.process.is_some())
            {
                work.push(s.entry.clone());
            }
        }
    }
    // Providers first (the plan's activation order), then whatever cannot
    // activate, by id.
    let mut order: Vec<EntryId> = plan
        .activation_order
        .iter()
        .filter(|id| needed.contains(*id))
        .cloned()
        .collect();
    let placed: BTreeSet<EntryId> = order.iter().cloned().collect();
    order.extend(needed.into_iter().filter(|id| !placed.contains(id)));
    order
        .into_iter()
        .map(|id| {
            let asked = wanted.contains(id.as_str());
            (id, asked)
        })
        .collect()
}

/// The providers `plan` binds to `id`'s requirements, with the value a
/// run would hand the plugin when it can be read without a mount: what a
/// process plugin probed before provided, or a `shared-state` table.
fn bound_providers(
    composition: &Composition,
    plan: &Plan,
    id: &EntryId,
    provided: &BTreeMap<String, Vec<CapabilityRegistration>>,
    redactor: &crate::engine::secret::Redactor,
) -> BTreeMap<String, BoundProvider> {
    let Some(entry) = composition.entries.get(id) else {
        return BTreeMap::new();
    };
    entry
        .manifest
        .requires
        .keys()
        .map(|cap| {
            let selected = plan
                .resolution(id.as_str(), cap.as_str())
                .and_then(|r| r.selected.as_ref());
            let bound = match selected {
                None => BoundProvider {
                    provider: "chassis-lock-probe".to_owned(),
                    version: String::new(),
                    value: None,
                },
                Some(s) => {
                    let registered = provided.get(s.entry.as_str()).and_then(|caps| {
                        caps.iter().find(|c| {
                            c.key == cap.as_str()
                                && crate::engine::version::Version::parse(&c.version)
                                    .is_ok_and(|v| v.major() == s.version.major())
                        })
                    });
                    let value = match registered {
                        Some(c) => c.value.clone(),
                        None => composition
                            .entries
                            .get(&s.entry)
                            .filter(|p| {
                                p.manifest.kind.as_deref()
                                    == Some(crate::engine::builtin::shared::KIND.name)
                            })
                            .map(|p| crate::plugins::shared::values_of(&p.config)),
                    };
                    BoundProvider {
                        provider: s.entry.to_string(),
                        version: registered
                            .map_or_else(|| s.version.to_string(), |c| c.version.clone()),
                        value: value.map(|v| redactor.redact_foreign(&v)),
                    }
                }
            };
            (cap.to_string(), bound)
        })
        .collect()
}

/// Start the plugin process of `entry` with `requirements` and read what
/// it registers, and what it provides.
async fn probe_process(
    id: &EntryId,
    entry: &crate::engine::model::Entry,
    requirements: BTreeMap<String, BoundProvider>,
    secret: &(dyn Fn(&str) -> Result<crate::engine::secret::SecretValue, String> + Sync),
    redactor: &crate::engine::secret::Redactor,
) -> Result<(LockEntry, Vec<CapabilityRegistration>), String> {
    use crate::plugins::process::{probe, start};
    let config = start::config_json(&entry.config, secret, redactor)?;
    let target = probe::ProbeTarget {
        entry: id.as_str(),
        scope: entry.scope.value.as_str(),
        manifest: &entry.manifest,
        config,
        requirements,
    };
    let probed = probe::probe(target, redactor).await?;
    Ok((probed.entry, probed.capabilities))
}

/// The lock after `probed`: the probed entries replaced, the others of
/// `composition` kept from `old`; an entry of `composition` the lock no
/// longer pins is dropped, and entries of ids `composition` does not have
/// are kept (another composition in the same directory may own them).
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
    for id in lockable_entries(composition) {
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
        version: LOCK_VERSION,
        entries,
    }
}

/// Write `lock` beside `file` when its text differs; `Ok(true)` when it
/// was written.
pub fn write(file: &Path, lock: &Lock) -> Result<bool, AppError> {
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
            AppError::failure(format!("cannot write `{}`: {e}", path.display()))
        })?;
    Ok(true)
}

/// Before `--update-lock` rewrites it: a lock beside `file` that cannot be
/// read is renamed to `chassis.lock.invalid` (kept, not lost), so the
/// composition loads and the lock is written afresh.
pub fn set_aside_unreadable(file: &Path, caller: &Caller) -> Result<(), AppError> {
    let path = lock_path(file);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(());
    };
    if Lock::parse(&text).is_ok() {
        return Ok(());
    }
    let aside = path.with_extension("lock.invalid");
    std::fs::rename(&path, &aside)
        .map_err(|e| AppError::failure(format!("cannot move `{}` aside: {e}", path.display())))?;
    caller.notice(Notice::LockSetAside {
        path: &path,
        aside: &aside,
    });
    Ok(())
}

/// Every probe that failed, as one failure (exit 3); `Ok` when none did.
pub fn require_probed(probed: &[Probed]) -> Result<(), AppError> {
    let failed: Vec<Problem> = probed
        .iter()
        .filter_map(|p| {
            p.live.as_ref().err().map(|e| {
                let code = if p.process {
                    "plugin::start"
                } else {
                    "mcp::start"
                };
                Problem::failure(format!("entry `{}`: {e}", p.entry)).with_code(code)
            })
        })
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(AppError::Problems(failed))
    }
}

/// Probe every `mcp` and process plugin entry of the composition at
/// `file` and rewrite the lock (`publish`/`run --update-lock`); says what
/// changed.
pub async fn update_for(file: &Path, env: &RunEnv, caller: &Caller) -> Result<(), AppError> {
    set_aside_unreadable(file, caller)?;
    // Its warnings are reported by the load that follows.
    let ws = super::workspace::load_file(file, &RunEnv::process(), &ErrorsOnly(&*caller.reporter))?;
    let ids = lockable_entries(&ws.composition);
    if ids.is_empty() {
        return Ok(());
    }
    let old = read_lock(file);
    let probed = probe_entries(
        file,
        &ws.composition,
        &ws.plan,
        &ids,
        old.as_ref(),
        env,
        caller,
    )
    .await?;
    require_probed(&probed)?;
    let lock = updated(old.as_ref(), &ws.composition, &probed);
    if write(file, &lock)? {
        caller.notice(Notice::LockUpdated {
            path: &lock_path(file),
            old: old.as_ref(),
            new: &lock,
        });
    }
    Ok(())
}
