//! Named failpoints: crash the process at a chosen point inside a publish
//! or a schema migration.
//!
//! Used only by the tests (`tests/it/store.rs`): they run the real binary
//! with `CHASSIS_FAILPOINT=<name>`, the process sends itself `SIGKILL` at
//! that point (no destructor, no `atexit`, no SQLite rollback runs: what a
//! `kill -9` or a power cut leaves), and the test then checks that the store
//! is intact and its current generation unchanged. The points inside
//! [`super::sqlite::SqliteStore::publish`], in order:
//!
//! - `publish.after_begin`: the `BEGIN IMMEDIATE` transaction is open;
//! - `publish.after_nodes`: the generation's chunks (snapshot, nodes,
//!   impact) are written;
//! - `publish.after_generation_row`: the generation row is written;
//! - `publish.before_commit`: the mount counters too, nothing committed.
//!
//! And `migrate.before_commit`: every migration past the store's version is
//! applied, nothing committed (`tests/it/lineage.rs`).
//!
//! With the variable unset (always, outside the tests) a failpoint is one
//! environment lookup.

/// The environment variable naming the failpoint to trigger.
pub const FAILPOINT_ENV: &str = "CHASSIS_FAILPOINT";

/// Every failpoint, in the order a publish passes them.
pub const PUBLISH_FAILPOINTS: [&str; 4] = [
    "publish.after_begin",
    "publish.after_nodes",
    "publish.after_generation_row",
    "publish.before_commit",
];

/// Kill the process with `SIGKILL` when `CHASSIS_FAILPOINT` is `name`.
pub fn failpoint(name: &str) {
    if std::env::var_os(FAILPOINT_ENV).is_some_and(|v| v == name) {
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
        // SIGKILL cannot be caught; should raising it ever fail, still stop
        // here without unwinding or flushing anything.
        std::process::abort();
    }
}
