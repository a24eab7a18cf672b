//! One module per command: arguments (whose doc comments are the `--help`
//! text) and a `run` function that parses them into the application
//! layer's options, calls one operation and renders what it returns.

pub mod check;
pub mod completions;
pub mod diff;
pub mod explain;
pub mod generations;
pub mod graph;
pub mod plan;
pub mod plugin;
pub mod publish;
pub mod run;
pub mod runs;
pub mod schema;
pub mod serve;
pub mod snapshot;
pub mod store_args;
pub mod tools;
