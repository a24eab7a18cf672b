//! The integration test binary: the real `chassis` executable run against
//! the bundled examples, with a pinned environment.

mod canary;
mod conversation;
mod fuzz;
mod gate;
mod generated;
mod golden;
mod harness;
mod lineage;
mod loopback;
mod mcp;
mod mcp_servers;
mod policy;
mod process_plugins;
mod processes;
mod robust;
mod run;
mod run_stream;
mod secret_pieces;
mod serve;
mod store;
mod vectors;
