//! chassis: a transactional harness for agent systems.
//!
//! The crate is split the way data flows through it:
//!
//! - [`engine`] is the pure core: the composition model, manifests and version
//!   specifiers, the scope tree, the resolver, snapshots and canonical hashing,
//!   explain reports and generation diffs. It performs no I/O, prints nothing,
//!   and never names `toml` or `miette`; every item that came from a file
//!   carries an [`engine::span::Origin`] that the edge renders.
//! - [`load`] is the edge that reads compositions: sources (file system, git
//!   revision, memory), the TOML walker that collects every problem of a file,
//!   includes, and the JSON Schema of the format.
//! - [`store`], [`lock`], [`plugins`], [`process`] and [`trace`] are the
//!   other adapters that touch the world; [`runtime`] is the harness that
//!   mounts plugins into generations and runs agents.
//! - [`app`] is the application layer: each thing chassis does (check,
//!   publish, plan, run an agent…) as a function that returns data, for
//!   every front end alike.
//! - [`serve`] is the HTTP front (`chassis serve`): each handler a thin
//!   parse → call [`app::host`] → render of the same JSON documents, errors
//!   as `application/problem+json`; it imports nothing from [`cli`].
//! - [`cli`] is the only module that prints: argument parsing, commands
//!   (each a thin parse → call [`app`] → render), rendering (text, JSON,
//!   markdown, miette diagnostics) and exit codes.
#![forbid(unsafe_code)]

pub mod app;
pub mod cli;
pub mod engine;
pub mod load;
pub mod lock;
pub mod plugins;
pub mod process;
pub mod runtime;
pub mod serve;
pub mod store;
pub mod testing;
pub mod trace;
