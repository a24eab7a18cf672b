//! The command line's side of the application layer: notices become the
//! lines a person (or, under `--format json`, a machine) reads on stderr,
//! and a failed operation becomes its rendering and its exit status.

use crate::app::{AppError, ErrorKind, Notice, Reporter};
use crate::engine::secret::Redactor;

use super::exit::ExitStatus;
use super::ui::{Format, Ui};

/// Shows notices on stderr: as text, or as JSON lines under `--format
/// json`; `-q` keeps only what must not pass unseen.
pub struct CliReporter {
    ui: Ui,
    /// Scrubs candidate lines (a server's tool diff may quote a secret).
    redactor: Redactor,
}

impl CliReporter {
    /// A reporter rendering through `ui`, scrubbing with `redactor`.
    pub fn new(ui: &Ui, redactor: Redactor) -> Self {
        Self {
            ui: ui.clone(),
            redactor,
        }
    }

    fn said(&self, text: &str) {
        if !self.ui.quiet {
            self.ui.err(text);
        }
    }

    /// A line that may share the terminal with the spinner; under
    /// `--format json` a diagnostic line (`warning: …`) or a `note`.
    fn line(&self, text: &str) {
        if self.ui.quiet {
            return;
        }
        let text = self.redactor.redact(text);
        if self.ui.format == Format::Json {
            if super::ui::plain_diagnostic(&text).is_some() {
                self.ui.err(&text);
            } else {
                self.ui.info(&text);
            }
        } else {
            super::spinner::clear_then(text.as_ref());
        }
    }
}

impl Reporter for CliReporter {
    fn notice(&self, notice: Notice<'_>) {
        let ui = &self.ui;
        let json = ui.format == Format::Json;
        match notice {
            Notice::Diagnostics {
                diagnostics,
                sources,
            } => ui.diagnostics(diagnostics, sources),
            Notice::StoreCreated {
                path,
                in_default_folder,
            } => {
                // The advice names the default folder only when the store is in it.
                let ignore = if in_default_folder {
                    " (add `.chassis/` to .gitignore)"
                } else {
                    ""
                };
                self.said(&format!(
                    "note: created the generation store `{}`; keep it out of version control{ignore}",
                    path.display()
                ));
            }
            Notice::LineageClaimed { store, lineage } => self.said(&format!(
                "note: the generations `{}` held from before lineages continue as the history of `{lineage}`; other compositions publishing there get histories of their own",
                store.display()
            )),
            Notice::Quarantined { entry, error } => self.said(&format!(
                "warning: entry `{entry}` was quarantined (on_failure = \"skip\"): {error}; its consumers are pending"
            )),
            Notice::CleanupFailed { description, error } => {
                self.said(&format!("warning: cleanup: {description} -> {error}"));
            }
            Notice::HookFailed { text } => {
                if ui.quiet {
                } else if json {
                    ui.err(
                        &super::ui::message_json(
                            "warning",
                            Some("runtime::hook-failure"),
                            text,
                            &[],
                        )
                        .to_string(),
                    );
                } else {
                    super::spinner::clear_then(&format!("warning: {text}"));
                }
            }
            Notice::LockSetAside { path, aside } => self.said(&format!(
                "warning: `{}` could not be read; it is kept as `{}` and written afresh",
                path.display(),
                aside.display()
            )),
            Notice::LockUpdated { path, old, new } => {
                if !ui.quiet {
                    ui.info(&format!(
                        "updated `{}`: {}",
                        path.display(),
                        super::render::tools::lock_summary(old, new)
                    ));
                }
            }
            Notice::NothingToPin => {
                if !json {
                    self.said("note: no `mcp` or process plugin entries to pin; the lock is left as it is");
                }
            }
            Notice::ServerStarting { entry, plugin } => {
                if !ui.quiet && !json {
                    let what = if plugin {
                        "plugin process"
                    } else {
                        "MCP server"
                    };
                    ui.info(&format!("starting the {what} of `{entry}`…"));
                }
            }
            Notice::Recorded { boundaries, path } => {
                if !ui.quiet {
                    let noun = if boundaries == 1 {
                        "boundary"
                    } else {
                        "boundaries"
                    };
                    ui.info(&format!(
                        "recorded {boundaries} {noun} to {}",
                        path.display()
                    ));
                }
            }
            Notice::RunStored { run_id, store } => {
                if !ui.quiet {
                    ui.info(&format!("recorded {run_id} in {}", store.display()));
                }
            }
            Notice::UnknownApproval {
                tool,
                composition,
                suggestion,
            } => {
                let hint = suggestion
                    .map(|m| format!("\n  help: did you mean `{m}`?"))
                    .unwrap_or_default();
                ui.err(&format!(
                    "warning: --approve names `{tool}`, which no entry of `{composition}` declares{hint}"
                ));
            }
            Notice::PendingLeftOut { count } => self.said(&format!(
                "warning: {count} pending entr{} left out of the snapshot (see `chassis check`)",
                if count == 1 { "y is" } else { "ies are" }
            )),
            Notice::CandidatePublished {
                entry,
                reason,
                diff,
                generation,
                leased,
                lock_written,
            } => self.line(&format!(
                "entry `{entry}`: {reason} ({diff}); published candidate {generation} (this run continues on {leased}){}",
                lock_written
                    .map(|p| format!("; updated `{}`", p.display()))
                    .unwrap_or_default()
            )),
            Notice::CandidateRefused { reason } => self.line(&format!("warning: {reason}")),
            Notice::Error(e) => {
                super::render::error::show(ui, e);
            }
        }
    }
}

/// The exit status of a failure of `kind`.
pub fn status_of(kind: ErrorKind) -> ExitStatus {
    match kind {
        ErrorKind::Negative => ExitStatus::Negative,
        ErrorKind::Input => ExitStatus::Input,
        ErrorKind::Failure => ExitStatus::Failure,
        ErrorKind::Interrupted => ExitStatus::Interrupted,
    }
}

/// Show a failed operation on stderr; its exit status.
pub fn fail(ui: &Ui, e: &AppError) -> ExitStatus {
    super::render::error::show(ui, e);
    status_of(e.kind())
}
