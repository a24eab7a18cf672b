//! Named failpoints: crash the process at a chosen point inside a publish.
//!
//! Used only by the tests (`tests/it/store.rs`): they run the real binary
//! with `CHASSIS_FAILPOINT=<name>`, the process aborts at that point (as a
//! SIGKILL or a power cut would stop it), and the test then checks that the
//! store is intact and its current generation unchanged. The points inside
//! [`super::sqlite::SqliteStore::publish`], in order:
//!
//! - `publish.after_begin`: the `BEGIN IMMEDIATE` transaction is open;
//! - `publish.after_generation_row`: the generation row is written;
//! - `publish.after_nodes`: its nodes and mount counters are written;
//! - `publish.before_commit`: everything is written, nothing committed.
//!
//! With the variable unset (always, outside the tests) a failpoint is one
//! environment lookup.

/// The environment variable naming the failpoint to trigger.
pub const FAILPOINT_ENV: &str = "CHASSIS_FAILPOINT";

/// Every failpoint, in the order a publish passes them.
pub const PUBLISH_FAILPOINTS: [&str; 4] = [
    "publish.after_begin",
    "publish.after_generation_row",
    "publish.after_nodes",
    "publish.before_commit",
];

/// Abort the process immediately when `CHASSIS_FAILPOINT` is `name`.
pub fn failpoint(name: &str) {
    if std::env::var_os(FAILPOINT_ENV).is_some_and(|v| v == name) {
        std::process::abort();
    }
}
