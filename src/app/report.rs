//! What an operation tells its caller while it works.
//!
//! Why it exists: loading reports warnings, a publish creates a store and
//! may quarantine an entry, a run records its boundaries — things a person
//! at a terminal reads on stderr, a server logs or returns with its
//! status, and a test collects. The layer says each as a typed [`Notice`]
//! to the caller's [`Reporter`] at the moment it happens (so a terminal
//! shows them in order), and never decides how one looks.

use std::path::Path;

use crate::engine::diag::Diagnostic;
use crate::load::SourceMap;
use crate::lock::Lock;

use super::error::AppError;

/// Something the caller may want to show while an operation runs.
#[derive(Clone, Copy)]
pub enum Notice<'a> {
    /// Findings of a load: warnings, and the errors of a load that failed.
    Diagnostics {
        /// The findings, each pointing into `sources`.
        diagnostics: &'a [Diagnostic],
        /// The texts they point into.
        sources: &'a SourceMap,
    },
    /// The first publish created the store.
    StoreCreated {
        /// Where.
        path: &'a Path,
        /// Whether it is the default `.chassis/` folder (worth ignoring in git).
        in_default_folder: bool,
    },
    /// A composition claimed the history a store kept from before lineages
    /// (the first to publish or run after the store was migrated).
    LineageClaimed {
        /// The store.
        store: &'a Path,
        /// The lineage it now is.
        lineage: &'a str,
    },
    /// `on_failure = "skip"` left an entry out of the generation.
    Quarantined {
        /// Entry id.
        entry: &'a str,
        /// Why it failed.
        error: &'a str,
    },
    /// A cleanup step failed while the harness shut down.
    CleanupFailed {
        /// What was being cleaned up.
        description: &'a str,
        /// How it failed.
        error: &'a str,
    },
    /// A data-plane hook failed (already redacted); the call went on under
    /// the hook's error policy.
    HookFailed {
        /// `hook … of … failed on …: …`.
        text: &'a str,
    },
    /// An unreadable `chassis.lock` was moved aside before rewriting it.
    LockSetAside {
        /// The lock.
        path: &'a Path,
        /// Where it is kept now.
        aside: &'a Path,
    },
    /// `chassis.lock` was rewritten.
    LockUpdated {
        /// The lock.
        path: &'a Path,
        /// What it held before.
        old: Option<&'a Lock>,
        /// What it holds now.
        new: &'a Lock,
    },
    /// `--update-lock` on a composition without `mcp` or process entries.
    NothingToPin,
    /// An MCP server (or a plugin process) is being started to read its
    /// tools.
    ServerStarting {
        /// Entry id.
        entry: &'a str,
        /// Whether it is a process plugin, not an MCP server.
        plugin: bool,
    },
    /// A run's boundaries were recorded for replay.
    Recorded {
        /// How many.
        boundaries: usize,
        /// The recording.
        path: &'a Path,
    },
    /// A run was recorded in the store.
    RunStored {
        /// Its id.
        run_id: &'a str,
        /// The store.
        store: &'a Path,
    },
    /// An approval names a tool no entry declares (a plugin may still
    /// register it when mounted).
    UnknownApproval {
        /// The tool named.
        tool: &'a str,
        /// The composition, as the caller named it.
        composition: &'a str,
        /// The closest declared tool.
        suggestion: Option<&'a str>,
    },
    /// Pending entries are left out of a snapshot.
    PendingLeftOut {
        /// How many.
        count: usize,
    },
    /// A plugin's tools changed under a generation and a candidate
    /// generation was published.
    CandidatePublished {
        /// The entry whose tools changed.
        entry: &'a str,
        /// What the plugin reported (`the server announced a new tool list`).
        reason: &'a str,
        /// The tool diff (`+ extra, - old`).
        diff: &'a str,
        /// The candidate.
        generation: &'a str,
        /// The generation the run stays on.
        leased: &'a str,
        /// The lock rewritten, if it was.
        lock_written: Option<&'a Path>,
    },
    /// A plugin's tools changed and no candidate was published; why.
    CandidateRefused {
        /// The whole reason, naming the entry.
        reason: &'a str,
    },
    /// A failure that did not end the operation.
    Error(&'a AppError),
}

/// Where notices go. Implementations decide what to show and how; they
/// must be cheap, since a notice is given while work waits.
pub trait Reporter: Send + Sync {
    /// Take one notice.
    fn notice(&self, notice: Notice<'_>);
}

/// A reporter that drops everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct Silent;

impl Reporter for Silent {
    fn notice(&self, _: Notice<'_>) {}
}

/// Passes on only the errors of diagnostics and every other notice: for a
/// second load of a file whose warnings were already reported.
pub struct ErrorsOnly<'r>(pub &'r dyn Reporter);

impl Reporter for ErrorsOnly<'_> {
    fn notice(&self, notice: Notice<'_>) {
        match notice {
            Notice::Diagnostics {
                diagnostics,
                sources,
            } => {
                let errors: Vec<Diagnostic> = diagnostics
                    .iter()
                    .filter(|d| d.is_error())
                    .cloned()
                    .collect();
                if !errors.is_empty() {
                    self.0.notice(Notice::Diagnostics {
                        diagnostics: &errors,
                        sources,
                    });
                }
            }
            other => self.0.notice(other),
        }
    }
}

/// Holds the diagnostics of work running beside other work until
/// [`Deferred::replay`], so a reader sees them after the other work's, as
/// if the two had run in turn; every other notice passes on at once.
pub struct Deferred<'r> {
    to: &'r dyn Reporter,
    held: std::sync::Mutex<Vec<(Vec<Diagnostic>, SourceMap)>>,
}

impl<'r> Deferred<'r> {
    /// Hold diagnostics meant for `to`.
    pub fn new(to: &'r dyn Reporter) -> Self {
        Self {
            to,
            held: std::sync::Mutex::default(),
        }
    }

    /// Pass on what was held, in the order it came.
    pub fn replay(self) {
        let held = self.held.into_inner().unwrap_or_else(|p| p.into_inner());
        for (diagnostics, sources) in &held {
            self.to.notice(Notice::Diagnostics {
                diagnostics,
                sources,
            });
        }
    }
}

impl Reporter for Deferred<'_> {
    fn notice(&self, notice: Notice<'_>) {
        match notice {
            Notice::Diagnostics {
                diagnostics,
                sources,
            } => self
                .held
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((diagnostics.to_vec(), sources.clone())),
            other => self.to.notice(other),
        }
    }
}
