//! Writing a snapshot document straight from its record.
//!
//! [`super::envelope`] builds the document as a
//! [`Canon`](crate::engine::canonical::Canon) tree — the form
//! hashing and comparison read — which for 100,000 entries is a few hundred
//! megabytes of maps that exist only to be printed or stored once.
//! [`EnvelopeView`] writes the same document (every key in the same sorted
//! order, every value the same) from the record itself; a test holds the
//! two to the same bytes.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

use super::record::{Digests, SNAPSHOT_FORMAT_VERSION, SnapshotRecord};
use super::scopes::{ScopeRow, ScopesFingerprint, SelectionRow};
use crate::engine::canonical::CanonError;

/// The envelope `{digests, format_version, snapshot}` of a record, written
/// without a canonical tree of it.
#[derive(Debug)]
pub struct EnvelopeView<'a> {
    record: &'a SnapshotRecord,
    /// The record's digests.
    pub digests: Digests,
}

impl<'a> EnvelopeView<'a> {
    /// The envelope of `record` (its digests computed here).
    pub fn new(record: &'a SnapshotRecord) -> Result<Self, CanonError> {
        Ok(Self {
            digests: record.digests()?,
            record,
        })
    }

    /// The envelope of `record` whose digests are `digests` (the caller
    /// computed them from it).
    pub fn with_digests(record: &'a SnapshotRecord, digests: Digests) -> Self {
        Self { record, digests }
    }

    /// The record.
    pub fn record(&self) -> &SnapshotRecord {
        self.record
    }
}

impl Serialize for EnvelopeView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("digests", &DigestsView(&self.digests))?;
        map.serialize_entry("format_version", &SNAPSHOT_FORMAT_VERSION)?;
        map.serialize_entry("snapshot", &RecordView(self.record))?;
        map.end()
    }
}

struct DigestsView<'a>(&'a Digests);

impl Serialize for DigestsView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("digest", &self.0.digest)?;
        map.serialize_entry("physical_digest", &self.0.physical_digest)?;
        map.serialize_entry("semantic_digest", &self.0.semantic_digest)?;
        map.end()
    }
}

struct RecordView<'a>(&'a SnapshotRecord);

impl Serialize for RecordView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        let ids: Vec<&str> = r.runtime_instance_ids.iter().map(|s| &**s).collect();
        // In key order, as the record's canonical map has them.
        let mut map = serializer.serialize_map(Some(18))?;
        map.serialize_entry("agent", &r.agent)?;
        map.serialize_entry("agent_revision", &r.agent_revision)?;
        map.serialize_entry("agent_runtime", &r.agent_runtime)?;
        map.serialize_entry("capabilities", &*r.capabilities)?;
        map.serialize_entry("chassis_version", &r.chassis_version)?;
        map.serialize_entry("config_hash", &r.config_hash)?;
        map.serialize_entry("format_version", &r.format_version)?;
        map.serialize_entry("generation_id", &r.generation_id)?;
        map.serialize_entry("graph_definition_hash", &r.graph_definition_hash)?;
        map.serialize_entry("metadata", &r.metadata)?;
        map.serialize_entry("plugin_graph_hash", &r.plugin_graph_hash)?;
        map.serialize_entry("plugins", &*r.plugins)?;
        map.serialize_entry("prompt_hash", &r.prompt_hash)?;
        map.serialize_entry("runtime_instance_ids", &ids)?;
        map.serialize_entry("scopes", &*r.scopes)?;
        map.serialize_entry("semantic_scopes", &*r.semantic_scopes)?;
        map.serialize_entry("sequence", &r.sequence)?;
        map.serialize_entry("tool_schema_hash", &r.tool_schema_hash)?;
        map.end()
    }
}

impl Serialize for ScopesFingerprint {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("root", &self.root)?;
        map.serialize_entry("scopes", &self.scopes)?;
        map.end()
    }
}

/// A list of names.
struct Strs<'a>(&'a [std::sync::Arc<str>]);

impl Serialize for Strs<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for s in self.0 {
            seq.serialize_element(&**s)?;
        }
        seq.end()
    }
}

impl Serialize for ScopeRow {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let providers: Vec<(&str, Strs<'_>)> = self
            .providers
            .iter()
            .map(|(k, v)| (&**k, Strs(v)))
            .collect();
        let mut map = serializer.serialize_map(Some(9))?;
        map.serialize_entry("capabilities", &self.capabilities.as_deref().map(Strs))?;
        map.serialize_entry("children", &Strs(&self.children))?;
        map.serialize_entry("entries", &Strs(&self.entries))?;
        map.serialize_entry("parent", &self.parent.as_deref())?;
        map.serialize_entry("path", &*self.path)?;
        map.serialize_entry("providers", &Pairs(&providers))?;
        map.serialize_entry("selections", &*self.selections)?;
        map.serialize_entry("tools", &self.tools.as_deref().map(Strs))?;
        map.serialize_entry("visible_tools", &Strs(&self.visible_tools))?;
        map.end()
    }
}

/// Pairs already in key order, as a map.
struct Pairs<'a, V>(&'a [(&'a str, V)]);

impl<V: Serialize> Serialize for Pairs<'_, V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl Serialize for SelectionRow {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(5))?;
        map.serialize_entry("consumer", &*self.consumer)?;
        map.serialize_entry("provider", &self.provider.as_deref())?;
        map.serialize_entry("provider_scope", &self.provider_scope.as_deref())?;
        map.serialize_entry("requirement", &*self.requirement)?;
        map.serialize_entry("status", &*self.status)?;
        map.end()
    }
}

/// The envelope as a canonical tree, for a test to hold [`EnvelopeView`] to.
#[cfg(test)]
pub(crate) fn canon_of(view: &EnvelopeView<'_>) -> crate::engine::canonical::Canon {
    super::envelope(view.record).unwrap_or(crate::engine::canonical::Canon::Null)
}
