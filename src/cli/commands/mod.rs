//! One module per command: arguments (whose doc comments are the `--help`
//! text) and a `run` function that loads, calls the engine and renders.

pub mod budgets;
pub mod check;
pub mod completions;
pub mod diff;
pub mod explain;
pub mod generations;
pub mod graph;
pub mod plan;
pub mod publish;
pub mod reuse;
pub mod run;
pub mod runs;
pub mod schema;
pub mod snapshot;
pub mod tools;
