//! How an operation of the application layer fails.
//!
//! Why it exists: the same failure must become exit code 3 and a miette
//! line at a terminal, or a 5xx problem document over HTTP. So a failure is
//! a value with an [`ErrorKind`] (the row of the exit-code table it belongs
//! to) and enough structure for each front end to render it; the layer
//! itself never prints one.

use crate::runtime::ReconcileError;
use crate::store::StoreError;

use super::refusal::Refusal;

/// Which row of the exit-code table a failure belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ErrorKind {
    /// A negative answer (exit 1): a refused publication, a cycle.
    Negative,
    /// Unusable input found before anything ran (exit 2).
    Input,
    /// A failure while running (exit 3).
    Failure,
    /// Interrupted (exit 130).
    Interrupted,
}

/// A failure that is a message for a person: what went wrong and what to
/// do about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Its row of the exit-code table.
    pub kind: ErrorKind,
    /// A stable code (`mcp::start`), when the failure has one.
    pub code: Option<&'static str>,
    /// What went wrong (may span lines).
    pub message: String,
    /// What to do about it, one suggestion each.
    pub help: Vec<String>,
}

impl Problem {
    /// A problem of `kind`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            code: None,
            message: message.into(),
            help: Vec::new(),
        }
    }

    /// Unusable input (exit 2).
    pub fn input(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Input, message)
    }

    /// A failure while running (exit 3).
    pub fn failure(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Failure, message)
    }

    /// With a suggestion.
    #[must_use]
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help.push(help.into());
        self
    }

    /// With a stable code.
    #[must_use]
    pub fn with_code(mut self, code: &'static str) -> Self {
        self.code = Some(code);
        self
    }
}

/// A failed operation.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// A file could not be loaded; its diagnostics were reported (as a
    /// [`super::Notice::Diagnostics`]) before this was returned.
    #[error("could not load `{display}` ({errors} error{})", if *errors == 1 { "" } else { "s" })]
    Load {
        /// How the caller named the file.
        display: String,
        /// How many errors it has.
        errors: usize,
    },
    /// A failure that is a message.
    #[error("{}", .0.message)]
    Problem(Problem),
    /// Several failures at once (every MCP server that could not be read),
    /// never empty.
    #[error("{}", .0.iter().map(|p| p.message.as_str()).collect::<Vec<_>>().join("; "))]
    Problems(Vec<Problem>),
    /// A composition that cannot be published as it is (pending hard
    /// requirements, a cycle).
    #[error("refusing to {verb} `{display}`: {}", refusal.reason().as_str())]
    Refused {
        /// `publish` or `run`.
        verb: &'static str,
        /// How the caller named the composition.
        display: String,
        /// Why.
        refusal: Refusal,
    },
    /// Publishing failed (a plugin, a contract); nothing was published.
    #[error(transparent)]
    Reconcile(ReconcileError),
    /// The store failed.
    #[error(transparent)]
    Store(StoreError),
    /// A signal ended the operation; the message says what was left as it
    /// was (`nothing was published`).
    #[error("interrupted: {0}")]
    Interrupted(&'static str),
}

impl AppError {
    /// Its row of the exit-code table.
    pub fn kind(&self) -> ErrorKind {
        match self {
            AppError::Load { .. } => ErrorKind::Input,
            AppError::Problem(p) => p.kind,
            AppError::Problems(ps) => ps
                .iter()
                .map(|p| p.kind)
                .max()
                .unwrap_or(ErrorKind::Failure),
            AppError::Refused { .. } => ErrorKind::Negative,
            AppError::Reconcile(ReconcileError::Cycle { .. }) => ErrorKind::Negative,
            AppError::Reconcile(_) => ErrorKind::Failure,
            // A store that is absent, from a newer chassis or not a store
            // at all is found before anything runs; so is one whose
            // contents are damaged (found on reading them, before anything
            // is written or mounted).
            AppError::Store(
                StoreError::Missing { .. }
                | StoreError::FutureSchema { .. }
                | StoreError::NotAStore { .. }
                | StoreError::Damaged { .. },
            ) => ErrorKind::Input,
            AppError::Store(_) => ErrorKind::Failure,
            AppError::Interrupted(_) => ErrorKind::Interrupted,
        }
    }

    /// Unusable input (exit 2).
    pub fn input(message: impl Into<String>) -> Self {
        AppError::Problem(Problem::input(message))
    }

    /// A failure while running (exit 3).
    pub fn failure(message: impl Into<String>) -> Self {
        AppError::Problem(Problem::failure(message))
    }
}

impl From<Problem> for AppError {
    fn from(p: Problem) -> Self {
        AppError::Problem(p)
    }
}

impl From<StoreError> for AppError {
    fn from(e: StoreError) -> Self {
        AppError::Store(e)
    }
}

impl From<ReconcileError> for AppError {
    fn from(e: ReconcileError) -> Self {
        AppError::Reconcile(e)
    }
}
