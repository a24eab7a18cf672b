//! Snapshots: the immutable record of what a generation (or a run) is, with
//! stable digests.
//!
//! The record's field set and every hash follow the Python reference, so a
//! composition hashes the same in both (`tests/data/vectors`). Configuration
//! values never appear: only `config_hash`, over the redacted payload.

mod build;
mod document;
mod record;
mod scopes;
mod serialize;

pub use build::{
    CHASSIS_VERSION, MountNumbers, SnapshotContext, TOOL_CONTRACTS, build_snapshot,
    build_snapshot_digested, config_hash, plugin_graph_hash, rederive_snapshot, tool_schema_hash,
};
pub use document::{Envelope, SnapshotLoadError, SnapshotLoadReason, envelope, parse_document};
pub use record::{Digests, PROCESS_PLUGINS, SNAPSHOT_FORMAT_VERSION, SnapshotRecord};
pub use scopes::{
    Names, PieceStream, ProviderIds, ScopeRow, ScopesFingerprint, ScopesText, SelectionRow,
    TextPiece,
};
pub use serialize::EnvelopeView;

#[cfg(test)]
mod tests;
