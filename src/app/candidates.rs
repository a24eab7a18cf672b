//! Candidate generations while a command runs.
//!
//! Why it exists: a mounted plugin whose tools change under a generation —
//! an MCP server restarted on another version, or one that announced a new
//! list — must not change what that generation offers; it reports the
//! change instead ([`crate::runtime::tool_set`]). The follower turns each
//! report into a candidate generation: the composition with the entry's
//! newly pinned tools, published through the ordinary transactional
//! reconcile. A run in flight keeps the generation it leased (and is
//! stamped with it); the candidate is what the next lease sees. The lock
//! is the gate, as at `publish`: without `--update-lock` a changed tool list
//! is refused with its diff and the current generation stays; with it the
//! candidate is built and, once published, `chassis.lock` is rewritten.
//!
//! The candidate starts from the current generation's own composition (so
//! entries quarantined there stay out), and the changed entry may not be
//! quarantined itself: if its fresh mount fails, the candidate fails and
//! the current generation stays. A fresh mount starts the server afresh, so
//! a stdio server whose new tools exist only in the session that announced
//! them fails the candidate's contract check (refused, nothing changes).
//!
//! `chassis run` follows for the length of one run; `chassis serve` will
//! follow for its lifetime. A change announced in the run's very last
//! instant may end with the process; the lock check at the next `publish`
//! or `run` reports it then, so it is never silently accepted.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::broadcast::error::RecvError;

use super::caller::Caller;
use super::report::Notice;
use crate::engine::model::Composition;
use crate::lock::{LOCK_VERSION, Lock};
use crate::plugins::BuiltinEnv;
use crate::runtime::harness::SeedNode;
use crate::runtime::{Generation, Harness, ReconcileReport, ToolSetChange};

/// What became of one reported change.
pub enum Outcome {
    /// A candidate generation was published.
    Published {
        /// The reconcile's report.
        report: Box<ReconcileReport>,
        /// The harness's nodes after it (for the store).
        nodes: Vec<SeedNode>,
        /// The published generation.
        generation: Arc<Generation>,
    },
    /// No candidate was published, and why.
    Refused(String),
}

/// One reported change and what became of it.
pub struct Candidate {
    /// The entry whose tools changed.
    pub entry: String,
    /// The tool diff (`+ extra`).
    pub changes: Vec<String>,
    /// Published or refused.
    pub outcome: Outcome,
}

impl Candidate {
    /// The `--format json` row.
    pub fn to_json(&self) -> serde_json::Value {
        let (generation, refused) = match &self.outcome {
            Outcome::Published { generation, .. } => (Some(generation.id.to_string()), None),
            Outcome::Refused(why) => (None, Some(why.as_str())),
        };
        serde_json::json!({
            "entry": self.entry,
            "changes": self.changes,
            "generation_id": generation,
            "refused": refused,
        })
    }
}

/// What the follower needs to build a candidate.
pub struct Follow {
    /// The harness to publish into.
    pub harness: Harness,
    /// The reports, subscribed before the first reconcile (a server may
    /// announce a new list right after it starts).
    pub changes: tokio::sync::broadcast::Receiver<ToolSetChange>,
    /// The generation the run leased (named in the progress lines).
    pub leased: String,
    /// The root composition file (its lock is beside it).
    pub file: PathBuf,
    /// The built-in kinds' environment (its lock is what `mcp` mounts check).
    pub env: BuiltinEnv,
    /// `--update-lock`: accept a changed tool list.
    pub accept: bool,
    /// Told of each candidate and of a lock that cannot be written.
    pub caller: Caller,
}

/// A running follower.
pub struct Follower {
    stop: Arc<tokio::sync::Notify>,
    task: tokio::task::JoinHandle<Vec<Candidate>>,
}

impl Follower {
    /// Start following (after the first publication, before the run).
    pub fn start(follow: Follow) -> Self {
        let stop = Arc::new(tokio::sync::Notify::new());
        let task = tokio::spawn(run(follow, Arc::clone(&stop)));
        Self { stop, task }
    }

    /// Stop at once, building nothing more (the run was interrupted): a
    /// candidate being built is abandoned, and the harness's shutdown
    /// disposes whatever it had mounted.
    pub fn abort(self) {
        self.task.abort();
    }

    /// Stop and return what happened, in order: a candidate being built is
    /// finished, and every change reported before the stop is still
    /// handled (a run that ends right after a change leaves the candidate
    /// behind in the store and the lock, as it would in a long-lived
    /// process).
    pub async fn finish(self) -> Vec<Candidate> {
        self.stop.notify_one();
        self.task.await.unwrap_or_default()
    }
}

fn missed(n: u64) {
    tracing::warn!(target: "chassis::candidates", "{n} tool-set changes were missed (the lock check at the next publish reports them)");
}

async fn run(mut follow: Follow, stop: Arc<tokio::sync::Notify>) -> Vec<Candidate> {
    use tokio::sync::broadcast::error::TryRecvError;
    let mut out = Vec::new();
    loop {
        let change = tokio::select! {
            biased;
            () = stop.notified() => {
                loop {
                    match follow.changes.try_recv() {
                        Ok(c) => {
                            if let Some(c) = candidate(&mut follow, c).await {
                                out.push(c);
                            }
                        }
                        Err(TryRecvError::Lagged(n)) => missed(n),
                        Err(TryRecvError::Empty | TryRecvError::Closed) => break,
                    }
                }
                break;
            }
            c = follow.changes.recv() => c,
        };
        let change = match change {
            Ok(c) => c,
            Err(RecvError::Lagged(n)) => {
                missed(n);
                continue;
            }
            Err(RecvError::Closed) => break,
        };
        if let Some(c) = candidate(&mut follow, change).await {
            out.push(c);
        }
    }
    out
}

/// Build (or refuse) the candidate for one change; `None` for a report
/// from an instance the current generation no longer holds (stale).
async fn candidate(follow: &mut Follow, change: ToolSetChange) -> Option<Candidate> {
    let current = follow.harness.current()?;
    if !current
        .instances
        .iter()
        .any(|i| *i.instance_id == *change.instance_id)
    {
        tracing::debug!(target: "chassis::candidates", entry = %change.entry_id, "a report from a retired instance is ignored");
        return None;
    }
    let entry = change.entry_id.clone();
    let diff = change.changes.join(", ");
    let refuse = |why: String| {
        follow
            .caller
            .notice(Notice::CandidateRefused { reason: &why });
        Some(Candidate {
            entry: entry.clone(),
            changes: change.changes.clone(),
            outcome: Outcome::Refused(why),
        })
    };
    let Some(pinned) = change.pinned.clone() else {
        return refuse(format!(
            "entry `{entry}`: {} ({diff}); its kind pins no tools, so no candidate generation can be built",
            change.reason
        ));
    };
    if !follow.accept {
        return refuse(format!(
            "entry `{entry}`: {} ({diff}); no candidate generation was published because `chassis.lock` pins the tools {} published; review the change and run with `--update-lock` to accept it",
            change.reason, current.id
        ));
    }
    let Ok(entry_id) = crate::engine::model::EntryId::new(&entry) else {
        return None;
    };
    let previous = follow.env.lock();
    let mut lock = previous.as_deref().cloned().unwrap_or(Lock {
        version: LOCK_VERSION,
        entries: Default::default(),
    });
    lock.entries.insert(entry.clone(), pinned.clone());
    follow.env.set_lock(Some(lock.clone()));
    // From what the current generation runs (its quarantined entries stay
    // out); the changed entry must mount or the candidate fails.
    let mut next: Composition = (*current.composition).clone();
    next.skip_on_failure.remove(&entry_id);
    crate::load::apply_lock(&mut next, Some(&lock));
    match follow.harness.reconcile(next).await {
        Ok(report) if report.published => {
            let generation = follow.harness.current()?;
            let nodes = follow.harness.nodes().await;
            // Rewrite the lock on disk from what is there now (it is shared
            // with the other compositions of the directory); one that cannot
            // be read is replaced by what this process loaded, never by
            // this entry alone.
            let mut on_disk = super::lock::read_lock(&follow.file).unwrap_or(lock);
            on_disk.entries.insert(entry.clone(), pinned);
            let lock_file = super::lock::lock_path(&follow.file);
            let written = match super::lock::write(&follow.file, &on_disk) {
                Ok(_) => true,
                Err(e) => {
                    follow.caller.notice(Notice::Error(&e));
                    false
                }
            };
            follow.caller.notice(Notice::CandidatePublished {
                entry: &entry,
                reason: &change.reason,
                diff: &diff,
                generation: &generation.id.to_string(),
                leased: &follow.leased,
                lock_written: written.then_some(lock_file.as_path()),
            });
            Some(Candidate {
                entry,
                changes: change.changes,
                outcome: Outcome::Published {
                    report: Box::new(report),
                    nodes,
                    generation,
                },
            })
        }
        Ok(_) => {
            follow.env.set_lock(previous.as_deref().cloned());
            refuse(format!(
                "entry `{entry}`: {} ({diff}); the candidate equals {}, nothing was published",
                change.reason, current.id
            ))
        }
        Err(e) => {
            follow.env.set_lock(previous.as_deref().cloned());
            refuse(format!(
                "entry `{entry}`: {} ({diff}); the candidate generation was refused and {} stays current: {e}",
                change.reason, current.id
            ))
        }
    }
}
