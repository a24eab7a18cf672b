//! The application layer: what chassis does, as functions that return data.
//!
//! Why it exists: a command line and an HTTP server (and evaluation runs,
//! and plugins as processes) all load a workspace, check it, publish it,
//! plan against the store and run agents — exactly alike. Those operations
//! live here, once, between the adapters they drive (the loader, the
//! runtime, the store, the lock file, MCP) and the front ends that call
//! them. Think `cargo::ops`.
//!
//! The rules of the layer (a test holds the first two):
//!
//! - It never prints and never exits: results are values, failures are
//!   [`AppError`]s with an [`ErrorKind`] a front end maps to an exit code or
//!   an HTTP status.
//! - It names no front end (the command line, a server): no argument
//!   parser, no terminal.
//!   What a person should see while an operation runs reaches the caller as
//!   a [`Notice`] through the caller's [`Reporter`]; a run's steps through
//!   the runtime's `AgentObserver`; approvals through a [`approval::Prompter`]
//!   the caller provides (a terminal for `run`, an HTTP client for `serve`).
//! - The store is reached through [`state::StateStore`] only.
//!
//! Operations that mount plugins are `async`; a command-line front end runs
//! them on its own runtime, a server on its workers.

pub mod approval;
pub mod approval_desk;
mod background;
pub mod caller;
pub mod candidates;
pub mod check;
pub mod diff;
pub mod documents;
pub mod env;
pub mod error;
pub mod explain;
pub mod explain_documents;
pub mod history;
pub mod host;
pub mod lock;
pub mod metrics;
pub mod mount;
pub mod plan;
pub mod plugin;
pub mod plugin_route;
pub mod publish;
pub mod refusal;
pub mod report;
pub mod request_tools;
pub mod reuse;
pub mod run;
mod run_document;
pub mod run_writer;
pub mod session;
pub mod snapshot;
pub mod state;
pub mod telemetry;
pub mod tools;
pub mod workspace;

#[cfg(test)]
mod layering_tests;
#[cfg(test)]
mod tests;

pub use caller::{Caller, Interrupt};
pub use error::{AppError, ErrorKind, Problem};
pub use report::{Notice, Reporter};
pub use workspace::Workspace;
