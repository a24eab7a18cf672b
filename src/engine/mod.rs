//! The pure core of chassis.
//!
//! Nothing in this module tree performs I/O, reads the environment or the
//! clock, or prints. Inputs arrive as validated model values
//! ([`model::Composition`]); outputs are data (plans, snapshots, reports,
//! diagnostics) that the edge renders. Ordering always comes from declared
//! data (entry ids, scope paths, capability names), never from file order or
//! hash-map iteration.

pub mod agent;
pub mod args_schema;
pub mod budget;
pub mod build;
pub mod builtin;
pub mod canonical;
pub mod declared;
pub mod diag;
pub mod diff;
pub mod explain;
pub mod findings;
pub mod identity;
pub mod leaf_diff;
pub mod model;
pub mod parallel;
pub mod policy;
pub(crate) mod recent;
pub mod redact;
pub mod request_tools;
pub mod resolve;
pub mod schema_check;
pub mod secret;
pub mod snapshot;
pub mod span;
pub mod specifier;
pub mod system;
pub mod telemetry;
pub mod tool_listing;
pub mod trace_context;
pub mod tree;
pub mod version;
