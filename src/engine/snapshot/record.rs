//! The snapshot record and its three digests.

use std::collections::BTreeMap;

use super::scopes::ScopesFingerprint;
use crate::engine::canonical::{
    Canon, CanonError, Sha256Writer, stable_hash, write_canonical, write_json_string,
};

/// The record format version written by this chassis.
pub const SNAPSHOT_FORMAT_VERSION: u64 = 1;

/// A runtime snapshot: everything that identifies what a run executed
/// against, and nothing secret (configuration appears only as a hash over
/// the redacted payload; scope metadata never appears).
#[derive(Clone, Debug, PartialEq)]
pub struct SnapshotRecord {
    /// Record format version (1).
    pub format_version: u64,
    /// Version of the chassis that wrote the record.
    pub chassis_version: String,
    /// Generation id (`gen_0001`).
    pub generation_id: String,
    /// Generation sequence.
    pub sequence: u64,
    /// Agent runtime kind, `unknown` for a bare snapshot.
    pub agent_runtime: String,
    /// Agent name, if the snapshot is for an agent run.
    pub agent: Option<String>,
    /// Agent revision.
    pub agent_revision: Option<String>,
    /// Manifest name → version, for active entries.
    pub plugins: BTreeMap<String, String>,
    /// Capability → registered versions (sorted as strings, as the reference
    /// does, so digests agree with it).
    pub capabilities: BTreeMap<String, Vec<String>>,
    /// Hash of the redacted configuration of active entries.
    pub config_hash: String,
    /// Hash of the plugin dependency graph.
    pub plugin_graph_hash: String,
    /// Compiled-graph cache key of the agent, if any.
    pub graph_definition_hash: Option<String>,
    /// Hash of the tool contracts.
    pub tool_schema_hash: String,
    /// Hash of the agent's prompt, if any.
    pub prompt_hash: Option<String>,
    /// Redacted metadata of what ran (e.g. skipped entries, MCP servers).
    pub metadata: BTreeMap<String, Canon>,
    /// Scope fingerprint naming providers by instance id.
    pub scopes: ScopesFingerprint,
    /// Scope fingerprint naming providers by entry id.
    pub semantic_scopes: ScopesFingerprint,
    /// Instance ids in activation order.
    pub runtime_instance_ids: Vec<String>,
}

/// The three digests of a record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Digests {
    /// Hash of the whole record.
    pub digest: String,
    /// Hash of the semantic composition only.
    pub semantic_digest: String,
    /// Hash of the runtime instance ids.
    pub physical_digest: String,
}

fn opt(s: &Option<String>) -> Canon {
    s.as_ref().map_or(Canon::Null, |s| Canon::Str(s.clone()))
}

impl SnapshotRecord {
    fn plugins_canon(&self) -> Canon {
        Canon::Map(
            self.plugins
                .iter()
                .map(|(k, v)| (k.clone(), Canon::Str(v.clone())))
                .collect(),
        )
    }

    fn capabilities_canon(&self) -> Canon {
        Canon::Map(
            self.capabilities
                .iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        Canon::List(v.iter().map(|s| Canon::Str(s.clone())).collect()),
                    )
                })
                .collect(),
        )
    }

    /// Every field but the two scope trees, by key.
    fn small_fields(&self) -> BTreeMap<&'static str, Canon> {
        BTreeMap::from([
            (
                "format_version",
                Canon::Int(i128::from(self.format_version)),
            ),
            ("chassis_version", Canon::Str(self.chassis_version.clone())),
            ("generation_id", Canon::Str(self.generation_id.clone())),
            ("sequence", Canon::Int(i128::from(self.sequence))),
            ("agent_runtime", Canon::Str(self.agent_runtime.clone())),
            ("agent", opt(&self.agent)),
            ("agent_revision", opt(&self.agent_revision)),
            ("plugins", self.plugins_canon()),
            ("capabilities", self.capabilities_canon()),
            ("config_hash", Canon::Str(self.config_hash.clone())),
            (
                "plugin_graph_hash",
                Canon::Str(self.plugin_graph_hash.clone()),
            ),
            ("graph_definition_hash", opt(&self.graph_definition_hash)),
            (
                "tool_schema_hash",
                Canon::Str(self.tool_schema_hash.clone()),
            ),
            ("prompt_hash", opt(&self.prompt_hash)),
            ("metadata", Canon::Map(self.metadata.clone())),
            ("runtime_instance_ids", self.instance_ids_canon()),
        ])
    }

    fn instance_ids_canon(&self) -> Canon {
        Canon::List(
            self.runtime_instance_ids
                .iter()
                .map(|s| Canon::Str(s.clone()))
                .collect(),
        )
    }

    /// The whole record, as the reference's `to_dict()`.
    pub fn to_canon(&self) -> Canon {
        let mut map: BTreeMap<String, Canon> = self
            .small_fields()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        map.insert("scopes".into(), self.scopes.to_canon());
        map.insert("semantic_scopes".into(), self.semantic_scopes.to_canon());
        Canon::Map(map)
    }

    /// The semantic composition: plugins, capabilities, the three content
    /// hashes and the semantic scope tree. No ids, versions of chassis,
    /// generation numbers, agent fields or metadata.
    pub fn semantic_composition(&self) -> Canon {
        Canon::map([
            ("plugins", self.plugins_canon()),
            ("capabilities", self.capabilities_canon()),
            ("config_hash", Canon::Str(self.config_hash.clone())),
            (
                "plugin_graph_hash",
                Canon::Str(self.plugin_graph_hash.clone()),
            ),
            (
                "tool_schema_hash",
                Canon::Str(self.tool_schema_hash.clone()),
            ),
            ("scopes", self.semantic_scopes.to_canon()),
        ])
    }

    /// The record's top-level fields as pieces: small values as `Canon`,
    /// the two scope trees as canonical text rendered once, so each tree is
    /// serialized once however many digests cover it.
    fn record_pieces<'a>(
        &self,
        scopes: &'a str,
        semantic: &'a str,
    ) -> BTreeMap<&'static str, Piece<'a>> {
        let mut pieces: BTreeMap<&'static str, Piece<'a>> = self
            .small_fields()
            .into_iter()
            .map(|(k, v)| (k, Piece::Value(v)))
            .collect();
        pieces.insert("scopes", Piece::Text(scopes));
        pieces.insert("semantic_scopes", Piece::Text(semantic));
        pieces
    }

    fn semantic_pieces<'a>(&self, semantic: &'a str) -> BTreeMap<&'static str, Piece<'a>> {
        BTreeMap::from([
            ("plugins", Piece::Value(self.plugins_canon())),
            ("capabilities", Piece::Value(self.capabilities_canon())),
            (
                "config_hash",
                Piece::Value(Canon::Str(self.config_hash.clone())),
            ),
            (
                "plugin_graph_hash",
                Piece::Value(Canon::Str(self.plugin_graph_hash.clone())),
            ),
            (
                "tool_schema_hash",
                Piece::Value(Canon::Str(self.tool_schema_hash.clone())),
            ),
            ("scopes", Piece::Text(semantic)),
        ])
    }

    /// Hash of the whole record.
    pub fn digest(&self) -> Result<String, CanonError> {
        let scopes = self.scopes.canonical_text();
        let semantic = self.semantic_scopes.canonical_text();
        hash_pieces(&self.record_pieces(&scopes, &semantic))
    }

    /// Hash of the semantic composition.
    pub fn semantic_digest(&self) -> Result<String, CanonError> {
        hash_pieces(&self.semantic_pieces(&self.semantic_scopes.canonical_text()))
    }

    /// Hash of the runtime instance ids.
    pub fn physical_digest(&self) -> Result<String, CanonError> {
        stable_hash(&self.instance_ids_canon())
    }

    /// All three digests, serializing each scope tree once.
    pub fn digests(&self) -> Result<Digests, CanonError> {
        let scopes = self.scopes.canonical_text();
        let semantic = self.semantic_scopes.canonical_text();
        Ok(Digests {
            digest: hash_pieces(&self.record_pieces(&scopes, &semantic))?,
            semantic_digest: hash_pieces(&self.semantic_pieces(&semantic))?,
            physical_digest: self.physical_digest()?,
        })
    }
}

/// A top-level value: a small `Canon`, or canonical text rendered once.
enum Piece<'a> {
    Value(Canon),
    Text(&'a str),
}

/// SHA-256 of the canonical JSON object made of `pieces` (keys sorted by the
/// map, as canonical JSON requires).
fn hash_pieces(pieces: &BTreeMap<&'static str, Piece<'_>>) -> Result<String, CanonError> {
    use std::fmt::Write;
    let mut h = Sha256Writer::new();
    h.write_char('{')?;
    for (i, (key, piece)) in pieces.iter().enumerate() {
        if i > 0 {
            h.write_char(',')?;
        }
        write_json_string(key, &mut h)?;
        h.write_char(':')?;
        match piece {
            Piece::Value(v) => write_canonical(v, &mut h)?,
            Piece::Text(t) => h.write_str(t)?,
        }
    }
    h.write_char('}')?;
    Ok(h.finish_hex())
}
