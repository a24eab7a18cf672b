//! Snapshot documents: the envelope `chassis snapshot` writes, and reading
//! records back (ours, or v1 records exported by the Python reference).
//!
//! A document is never guessed at: a missing `format_version` is the legacy
//! version 0 and is migrated; a newer version, a version that is not an
//! integer, a wrong shape, or an envelope whose digests do not recompute is
//! rejected with its reason.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::record::{Digests, SNAPSHOT_FORMAT_VERSION, SnapshotRecord};
use super::scopes::ScopesFingerprint;
use crate::engine::canonical::{Canon, CanonError};

/// Why a snapshot document was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotLoadReason {
    /// Written by a newer format than this chassis reads.
    FutureVersion,
    /// `format_version` is not a non-negative integer.
    MalformedVersion,
    /// The content has the wrong shape, or the digests do not recompute.
    Corrupted,
}

impl SnapshotLoadReason {
    /// The reference's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FutureVersion => "future_version",
            Self::MalformedVersion => "malformed_version",
            Self::Corrupted => "corrupted",
        }
    }
}

/// A rejected snapshot document.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message} ({})", reason.as_str())]
pub struct SnapshotLoadError {
    /// Reason.
    pub reason: SnapshotLoadReason,
    /// What is wrong.
    pub message: String,
}

fn reject(reason: SnapshotLoadReason, message: impl Into<String>) -> SnapshotLoadError {
    SnapshotLoadError {
        reason,
        message: message.into(),
    }
}

/// A loaded snapshot.
#[derive(Clone, Debug, PartialEq)]
pub struct Envelope {
    /// The record.
    pub snapshot: SnapshotRecord,
    /// Its digests (recomputed; for an envelope they were checked to match).
    pub digests: Digests,
    /// The format version the document had before migration.
    pub source_format_version: u64,
}

/// The envelope `{format_version, snapshot, digests}` of `record`.
pub fn envelope(record: &SnapshotRecord) -> Result<Canon, CanonError> {
    let d = record.digests()?;
    Ok(Canon::map([
        (
            "format_version",
            Canon::Int(i128::from(SNAPSHOT_FORMAT_VERSION)),
        ),
        ("snapshot", record.to_canon()),
        (
            "digests",
            Canon::map([
                ("digest", Canon::Str(d.digest)),
                ("semantic_digest", Canon::Str(d.semantic_digest)),
                ("physical_digest", Canon::Str(d.physical_digest)),
            ]),
        ),
    ]))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRecord {
    #[serde(default)]
    format_version: Option<Value>,
    chassis_version: String,
    generation_id: String,
    sequence: u64,
    agent_runtime: String,
    agent: Option<String>,
    agent_revision: Option<String>,
    plugins: BTreeMap<String, String>,
    capabilities: BTreeMap<String, Vec<String>>,
    config_hash: String,
    plugin_graph_hash: String,
    graph_definition_hash: Option<String>,
    tool_schema_hash: String,
    prompt_hash: Option<String>,
    #[serde(default)]
    metadata: BTreeMap<String, Value>,
    scopes: ScopesFingerprint,
    #[serde(default)]
    semantic_scopes: Option<ScopesFingerprint>,
    runtime_instance_ids: Vec<String>,
}

/// Read a format version: absent → 0, a non-negative integer → it, anything
/// else → malformed.
fn version_of(value: Option<&Value>) -> Result<u64, SnapshotLoadError> {
    match value {
        None => Ok(0),
        Some(Value::Number(n)) if n.is_u64() => n
            .as_u64()
            .ok_or_else(|| reject(SnapshotLoadReason::MalformedVersion, "bad version")),
        Some(other) => Err(reject(
            SnapshotLoadReason::MalformedVersion,
            format!("`format_version` must be a non-negative integer, found `{other}`"),
        )),
    }
}

fn check_supported(found: u64) -> Result<(), SnapshotLoadError> {
    if found > SNAPSHOT_FORMAT_VERSION {
        return Err(reject(
            SnapshotLoadReason::FutureVersion,
            format!(
                "snapshot format version {found} is newer than the supported {SNAPSHOT_FORMAT_VERSION}"
            ),
        ));
    }
    Ok(())
}

fn parse_record(value: &Value) -> Result<(SnapshotRecord, u64), SnapshotLoadError> {
    let obj = value.as_object().ok_or_else(|| {
        reject(
            SnapshotLoadReason::Corrupted,
            "a snapshot must be a JSON object",
        )
    })?;
    let found = version_of(obj.get("format_version"))?;
    check_supported(found)?;
    let raw: RawRecord = serde_json::from_value(value.clone()).map_err(|e| {
        reject(
            SnapshotLoadReason::Corrupted,
            format!("snapshot record has the wrong shape: {e}"),
        )
    })?;
    let semantic_scopes = match (found, raw.semantic_scopes) {
        (_, Some(s)) => s,
        // Version 0 had no semantic tree: what it can say is the physical
        // tree without provider maps (instance ids cannot be mapped back).
        (0, None) => raw.scopes.without_providers(),
        (_, None) => {
            return Err(reject(
                SnapshotLoadReason::Corrupted,
                "snapshot record lacks `semantic_scopes`",
            ));
        }
    };
    let _ = raw.format_version;
    let record = SnapshotRecord {
        format_version: SNAPSHOT_FORMAT_VERSION,
        chassis_version: raw.chassis_version,
        generation_id: raw.generation_id,
        sequence: raw.sequence,
        agent_runtime: raw.agent_runtime,
        agent: raw.agent,
        agent_revision: raw.agent_revision,
        plugins: Arc::new(raw.plugins),
        capabilities: Arc::new(raw.capabilities),
        config_hash: raw.config_hash,
        plugin_graph_hash: raw.plugin_graph_hash,
        graph_definition_hash: raw.graph_definition_hash,
        tool_schema_hash: raw.tool_schema_hash,
        prompt_hash: raw.prompt_hash,
        metadata: raw
            .metadata
            .iter()
            .map(|(k, v)| (k.clone(), Canon::from_json(v)))
            .collect(),
        scopes: std::sync::Arc::new(raw.scopes),
        semantic_scopes: std::sync::Arc::new(semantic_scopes),
        runtime_instance_ids: raw
            .runtime_instance_ids
            .into_iter()
            .map(Arc::from)
            .collect(),
    };
    Ok((record, found))
}

/// Load a snapshot document: an envelope or a bare record.
pub fn parse_document(value: &Value) -> Result<Envelope, SnapshotLoadError> {
    let corrupted = |m: String| reject(SnapshotLoadReason::Corrupted, m);
    let obj = value
        .as_object()
        .ok_or_else(|| corrupted("a snapshot document must be a JSON object".into()))?;
    if let (Some(inner), Some(digests)) = (obj.get("snapshot"), obj.get("digests")) {
        let found = version_of(obj.get("format_version"))?;
        check_supported(found)?;
        let extra: Vec<&String> = obj
            .keys()
            .filter(|k| !matches!(k.as_str(), "format_version" | "snapshot" | "digests"))
            .collect();
        if !extra.is_empty() {
            return Err(corrupted(format!("unexpected envelope keys: {extra:?}")));
        }
        let (record, source) = parse_record(inner)?;
        let computed = record.digests().map_err(|e| corrupted(e.to_string()))?;
        for (key, want) in [
            ("digest", &computed.digest),
            ("semantic_digest", &computed.semantic_digest),
            ("physical_digest", &computed.physical_digest),
        ] {
            match digests.get(key).and_then(Value::as_str) {
                Some(given) if given == want => {}
                Some(given) => {
                    return Err(corrupted(format!(
                        "`{key}` is {given} but the record hashes to {want}"
                    )));
                }
                None => return Err(corrupted(format!("envelope lacks `digests.{key}`"))),
            }
        }
        return Ok(Envelope {
            snapshot: record,
            digests: computed,
            source_format_version: source,
        });
    }
    let (record, source) = parse_record(value)?;
    let digests = record.digests().map_err(|e| corrupted(e.to_string()))?;
    Ok(Envelope {
        snapshot: record,
        digests,
        source_format_version: source,
    })
}
