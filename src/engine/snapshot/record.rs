//! The snapshot record and its three digests.

use std::collections::BTreeMap;
use std::fmt::{self, Write};
use std::sync::Arc;

use super::scopes::{ScopesFingerprint, ScopesText, TextPiece};
use crate::engine::canonical::{
    Canon, CanonError, Sha256Tee, Sha256Writer, write_canonical, write_json_string,
};
use crate::engine::parallel;

/// The `metadata` key of the programs process plugins run (argv and file
/// digests): also part of the semantic composition.
pub const PROCESS_PLUGINS: &str = "process_plugins";

use crate::engine::model::POLICY;
/// About how many bytes of the semantic tree's text one piece of the
/// digest pipeline holds ([`SnapshotRecord::digests`]): small enough that
/// the record's hasher starts early, large enough that handing pieces over
/// costs nothing next to hashing them.
pub(super) const PIECE_BYTES: usize = 64 * 1024;

/// Room a new piece starts with: a piece is cut once it reaches
/// [`PIECE_BYTES`], after at most one more row.
pub(super) const PIECE_CAPACITY: usize = PIECE_BYTES + PIECE_BYTES / 4;

/// The semantic digest: `head`, the pieces' text, `tail`.
pub(super) fn hash_over_pieces(head: &str, pieces: &[Arc<TextPiece>], tail: &str) -> String {
    let mut s = Sha256Writer::new();
    s.update(head.as_bytes());
    for piece in pieces {
        s.update(piece.text.as_bytes());
    }
    s.update(tail.as_bytes());
    s.finish_hex()
}

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
    /// Manifest name → version, for active entries (shared between the
    /// generations of one resolution).
    pub plugins: Arc<BTreeMap<String, String>>,
    /// Capability → registered versions (sorted as strings, as the reference
    /// does, so digests agree with it).
    pub capabilities: Arc<BTreeMap<String, Vec<String>>>,
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
    pub scopes: Arc<ScopesFingerprint>,
    /// Scope fingerprint naming providers by entry id (shared between the
    /// generations of one resolution).
    pub semantic_scopes: Arc<ScopesFingerprint>,
    /// Instance ids in activation order.
    pub runtime_instance_ids: Vec<Arc<str>>,
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
                .map(|s| Canon::from(&**s))
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

    /// Agent name → hash of its definition, from `metadata.agents` (see
    /// [`crate::engine::agent::agents_metadata`]); `None` when the record
    /// has no agents (every snapshot the reference writes).
    pub fn agent_hashes(&self) -> Option<Vec<(&str, &str)>> {
        let Some(Canon::Map(agents)) = self.metadata.get(crate::engine::agent::AGENTS) else {
            return None;
        };
        Some(
            agents
                .iter()
                .map(|(name, a)| {
                    let hash = match a {
                        Canon::Map(m) => match m.get("hash") {
                            Some(Canon::Str(h)) => h.as_str(),
                            _ => "",
                        },
                        _ => "",
                    };
                    (name.as_str(), hash)
                })
                .collect(),
        )
    }

    /// The semantic composition: plugins, capabilities, the three content
    /// hashes, the semantic scope tree and, when the composition declares
    /// agents, each agent's definition hash (`agents`, a chassis key: a
    /// composition without agents hashes as the reference's), and when it
    /// has process plugins, the program each runs (`process_plugins`:
    /// argv and file digests, so editing a plugin's code is a change), and
    /// when it declares `[policy]`, what that policy decides (`policy`: a
    /// widened grant is a change CI must see). No
    /// ids, versions of chassis, generation numbers, run fields or other
    /// metadata.
    pub fn semantic_composition(&self) -> Canon {
        let mut map = self.semantic_composition_without_agents();
        if let Some(policy) = self.metadata.get(POLICY) {
            map.insert(POLICY.to_owned(), policy.clone());
        }
        if let Some(programs) = self.metadata.get(PROCESS_PLUGINS) {
            map.insert(PROCESS_PLUGINS.to_owned(), programs.clone());
        }
        if let Some(agents) = self.agent_hashes() {
            map.insert(
                "agents".to_owned(),
                Canon::Map(
                    agents
                        .into_iter()
                        .map(|(n, h)| (n.to_owned(), Canon::from(h)))
                        .collect(),
                ),
            );
        }
        Canon::Map(map)
    }

    fn semantic_composition_without_agents(&self) -> BTreeMap<String, Canon> {
        BTreeMap::from([
            ("plugins".to_owned(), self.plugins_canon()),
            ("capabilities".to_owned(), self.capabilities_canon()),
            (
                "config_hash".to_owned(),
                Canon::Str(self.config_hash.clone()),
            ),
            (
                "plugin_graph_hash".to_owned(),
                Canon::Str(self.plugin_graph_hash.clone()),
            ),
            (
                "tool_schema_hash".to_owned(),
                Canon::Str(self.tool_schema_hash.clone()),
            ),
            ("scopes".to_owned(), self.semantic_scopes.to_canon()),
        ])
    }

    /// Hash of the whole record.
    pub fn digest(&self) -> Result<String, CanonError> {
        let mut d = Sha256Writer::new();
        self.write_record_head(&mut d, |out| Ok(self.scopes.write_canonical(out)?))?;
        self.semantic_scopes.write_canonical(&mut d)?;
        self.write_record_tail(&mut d)?;
        Ok(d.finish_hex())
    }

    /// Hash of the semantic composition.
    pub fn semantic_digest(&self) -> Result<String, CanonError> {
        let mut s = Sha256Writer::new();
        self.write_semantic_head(&mut s)?;
        self.semantic_scopes.write_canonical(&mut s)?;
        self.write_semantic_tail(&mut s)?;
        Ok(s.finish_hex())
    }

    /// Hash of the runtime instance ids.
    pub fn physical_digest(&self) -> Result<String, CanonError> {
        let mut h = Sha256Writer::new();
        w_strs(&self.runtime_instance_ids, &mut h)?;
        Ok(h.finish_hex())
    }

    /// All three digests. The semantic tree is written once, into both the
    /// record's and the semantic hasher at the same time; no canonical text
    /// is ever held in memory.
    pub fn digests(&self) -> Result<Digests, CanonError> {
        self.digests_inner(None)
    }

    /// [`Self::digests`], given the text of `semantic_scopes`
    /// ([`ScopesFingerprint::text`]): the generations of one resolution
    /// share their semantic tree, so a runtime serializes it once and hashes
    /// its text for each — and the physical tree's, which is that text but
    /// for the providers. The caller vouches that the text is that tree's
    /// and that the physical tree differs from it only in providers (as
    /// every built snapshot's does); debug builds check both.
    pub fn digests_with_semantic_text(&self, semantic: &ScopesText) -> Result<Digests, CanonError> {
        debug_assert_eq!(*semantic.text, self.semantic_scopes.canonical_text());
        let digests = self.digests_inner(Some(semantic))?;
        debug_assert_eq!(Ok(&digests), self.digests_inner(None).as_ref());
        Ok(digests)
    }

    fn digests_inner(&self, semantic: Option<&ScopesText>) -> Result<Digests, CanonError> {
        let work = self.semantic_scopes.work();
        if !parallel::splits(work) {
            return self.digests_in_order(semantic);
        }
        match semantic {
            Some(text) => self.digests_over_text(work, text),
            None => self.digests_pipelined(work),
        }
    }

    /// Two cores, given the semantic tree's text: one hashes the record
    /// (its physical tree written over the text), the other the semantic
    /// composition and the instance ids.
    fn digests_over_text(&self, work: usize, text: &ScopesText) -> Result<Digests, CanonError> {
        let (digest, semantic) = parallel::join(
            work,
            || -> Result<String, CanonError> {
                let mut d = Sha256Writer::new();
                self.write_record_head(&mut d, |out| {
                    Ok(self.scopes.write_canonical_over(text, out)?)
                })?;
                d.write_str(&text.text)?;
                self.write_record_tail(&mut d)?;
                Ok(d.finish_hex())
            },
            || -> Result<(String, String), CanonError> {
                let mut s = Sha256Writer::new();
                self.write_semantic_head(&mut s)?;
                s.write_str(&text.text)?;
                self.write_semantic_tail(&mut s)?;
                Ok((s.finish_hex(), self.physical_digest()?))
            },
        );
        let (semantic_digest, physical_digest) = semantic?;
        Ok(Digests {
            digest: digest?,
            semantic_digest,
            physical_digest,
        })
    }

    /// Two cores, in a pipeline: this one writes the semantic tree's text
    /// in pieces (carrying the physical tree's providers when the two trees
    /// differ only there), handing each to the other as soon as it is
    /// written, then hashes the semantic composition over the pieces and
    /// the instance ids; the other hashes the record over the pieces as
    /// they arrive ([`Self::hash_record_over`]). The record's hasher, the
    /// longest of the three, starts after the first piece.
    fn digests_pipelined(&self, work: usize) -> Result<Digests, CanonError> {
        let over = self.scopes.same_but_providers(&self.semantic_scopes);
        let (tx, rx) = std::sync::mpsc::channel::<Arc<TextPiece>>();
        let pipelined = parallel::join_concurrent(
            work,
            move || -> Result<(String, String), CanonError> {
                let (head, tail) = self.semantic_head_tail()?;
                let mut pieces = Vec::new();
                self.semantic_scopes.write_pieces(
                    PIECE_BYTES,
                    PIECE_CAPACITY,
                    over.then_some(&*self.scopes),
                    &mut |piece| {
                        let piece = Arc::new(piece);
                        // The other half stops reading only on an error.
                        let _ = tx.send(Arc::clone(&piece));
                        pieces.push(piece);
                    },
                );
                drop(tx);
                Ok((
                    hash_over_pieces(&head, &pieces, &tail),
                    self.physical_digest()?,
                ))
            },
            move || self.hash_record_over(rx, over),
        );
        let Some((semantic, digest)) = pipelined else {
            return self.digests_in_order(None);
        };
        let (semantic_digest, physical_digest) = semantic?;
        Ok(Digests {
            digest: digest?,
            semantic_digest,
            physical_digest,
        })
    }

    /// The record's digest, its semantic tree the text of `pieces` (as they
    /// arrive, until the sender is dropped); its physical tree written over
    /// the pieces with the providers they carry when `over`, else whole.
    pub(super) fn hash_record_over(
        &self,
        pieces: std::sync::mpsc::Receiver<Arc<TextPiece>>,
        over: bool,
    ) -> Result<String, CanonError> {
        let mut d = Sha256Writer::new();
        let mut kept = Vec::new();
        self.write_record_head(&mut d, |out| {
            if over {
                for piece in pieces.iter() {
                    piece.write_other(out)?;
                    kept.push(piece);
                }
            } else {
                self.scopes.write_canonical(out)?;
            }
            Ok(())
        })?;
        kept.extend(pieces.iter());
        for piece in &kept {
            d.write_str(&piece.text)?;
        }
        self.write_record_tail(&mut d)?;
        Ok(d.finish_hex())
    }

    /// The semantic composition's canonical JSON before and after its
    /// `scopes` value.
    pub(super) fn semantic_head_tail(&self) -> Result<(String, String), CanonError> {
        let (mut head, mut tail) = (String::new(), String::new());
        self.write_semantic_head(&mut head)?;
        self.write_semantic_tail(&mut tail)?;
        Ok((head, tail))
    }

    /// [`Self::digests_inner`] on one thread, the semantic tree written once
    /// into both hashers.
    fn digests_in_order(&self, semantic: Option<&ScopesText>) -> Result<Digests, CanonError> {
        let (mut d, mut s) = (Sha256Writer::new(), Sha256Writer::new());
        self.write_record_head(&mut d, |out| {
            match semantic {
                Some(text) => self.scopes.write_canonical_over(text, out)?,
                None => self.scopes.write_canonical(out)?,
            }
            Ok(())
        })?;
        self.write_semantic_head(&mut s)?;
        {
            let mut both = Sha256Tee::new(&mut d, &mut s);
            match semantic {
                Some(text) => both.write_str(&text.text)?,
                None => self.semantic_scopes.write_canonical(&mut both)?,
            }
        }
        self.write_record_tail(&mut d)?;
        self.write_semantic_tail(&mut s)?;
        Ok(Digests {
            digest: d.finish_hex(),
            semantic_digest: s.finish_hex(),
            physical_digest: self.physical_digest()?,
        })
    }

    // Direct canonical writers of the two hashed objects, keys in sorted
    // order by hand (`digests_agree_with_the_canon_path` checks them against
    // `to_canon` / `semantic_composition`). The record is split around its
    // `semantic_scopes` value, the semantic composition around `scopes`, so
    // one pass over the semantic tree can feed both hashers.

    /// The record's canonical JSON up to the `semantic_scopes` value, its
    /// `scopes` value written by `scopes`.
    fn write_record_head<W: Write>(
        &self,
        out: &mut W,
        scopes: impl FnOnce(&mut W) -> Result<(), CanonError>,
    ) -> Result<(), CanonError> {
        out.write_str("{\"agent\":")?;
        w_opt(&self.agent, out)?;
        out.write_str(",\"agent_revision\":")?;
        w_opt(&self.agent_revision, out)?;
        out.write_str(",\"agent_runtime\":")?;
        write_json_string(&self.agent_runtime, out)?;
        out.write_str(",\"capabilities\":")?;
        self.write_capabilities(out)?;
        out.write_str(",\"chassis_version\":")?;
        write_json_string(&self.chassis_version, out)?;
        out.write_str(",\"config_hash\":")?;
        write_json_string(&self.config_hash, out)?;
        write!(out, ",\"format_version\":{}", self.format_version)?;
        out.write_str(",\"generation_id\":")?;
        write_json_string(&self.generation_id, out)?;
        out.write_str(",\"graph_definition_hash\":")?;
        w_opt(&self.graph_definition_hash, out)?;
        out.write_str(",\"metadata\":{")?;
        for (i, (k, v)) in self.metadata.iter().enumerate() {
            if i > 0 {
                out.write_char(',')?;
            }
            write_json_string(k, out)?;
            out.write_char(':')?;
            write_canonical(v, out)?;
        }
        out.write_str("},\"plugin_graph_hash\":")?;
        write_json_string(&self.plugin_graph_hash, out)?;
        out.write_str(",\"plugins\":")?;
        self.write_plugins(out)?;
        out.write_str(",\"prompt_hash\":")?;
        w_opt(&self.prompt_hash, out)?;
        out.write_str(",\"runtime_instance_ids\":")?;
        w_strs(&self.runtime_instance_ids, out)?;
        out.write_str(",\"scopes\":")?;
        scopes(out)?;
        out.write_str(",\"semantic_scopes\":")?;
        Ok(())
    }

    /// The record's canonical JSON after the `semantic_scopes` value.
    fn write_record_tail<W: Write>(&self, out: &mut W) -> Result<(), CanonError> {
        write!(out, ",\"sequence\":{}", self.sequence)?;
        out.write_str(",\"tool_schema_hash\":")?;
        write_json_string(&self.tool_schema_hash, out)?;
        out.write_char('}')?;
        Ok(())
    }

    /// The semantic composition's canonical JSON up to the `scopes` value.
    fn write_semantic_head<W: Write>(&self, out: &mut W) -> Result<(), CanonError> {
        out.write_char('{')?;
        if let Some(agents) = self.agent_hashes() {
            out.write_str("\"agents\":{")?;
            for (i, (name, hash)) in agents.into_iter().enumerate() {
                if i > 0 {
                    out.write_char(',')?;
                }
                write_json_string(name, out)?;
                out.write_char(':')?;
                write_json_string(hash, out)?;
            }
            out.write_str("},")?;
        }
        out.write_str("\"capabilities\":")?;
        self.write_capabilities(out)?;
        out.write_str(",\"config_hash\":")?;
        write_json_string(&self.config_hash, out)?;
        out.write_str(",\"plugin_graph_hash\":")?;
        write_json_string(&self.plugin_graph_hash, out)?;
        out.write_str(",\"plugins\":")?;
        self.write_plugins(out)?;
        if let Some(policy) = self.metadata.get(POLICY) {
            out.write_str(",\"policy\":")?;
            crate::engine::canonical::write_canonical(policy, out)?;
        }
        if let Some(programs) = self.metadata.get(PROCESS_PLUGINS) {
            out.write_str(",\"process_plugins\":")?;
            crate::engine::canonical::write_canonical(programs, out)?;
        }
        out.write_str(",\"scopes\":")?;
        Ok(())
    }

    /// The semantic composition's canonical JSON after the `scopes` value.
    fn write_semantic_tail<W: Write>(&self, out: &mut W) -> Result<(), CanonError> {
        out.write_str(",\"tool_schema_hash\":")?;
        write_json_string(&self.tool_schema_hash, out)?;
        out.write_char('}')?;
        Ok(())
    }

    fn write_plugins<W: Write>(&self, out: &mut W) -> fmt::Result {
        out.write_char('{')?;
        for (i, (k, v)) in self.plugins.iter().enumerate() {
            if i > 0 {
                out.write_char(',')?;
            }
            write_json_string(k, out)?;
            out.write_char(':')?;
            write_json_string(v, out)?;
        }
        out.write_char('}')
    }

    fn write_capabilities<W: Write>(&self, out: &mut W) -> fmt::Result {
        out.write_char('{')?;
        for (i, (k, v)) in self.capabilities.iter().enumerate() {
            if i > 0 {
                out.write_char(',')?;
            }
            write_json_string(k, out)?;
            out.write_char(':')?;
            w_strs(v, out)?;
        }
        out.write_char('}')
    }
}

fn w_strs<W: Write>(items: &[impl AsRef<str>], out: &mut W) -> fmt::Result {
    out.write_char('[')?;
    for (i, s) in items.iter().enumerate() {
        if i > 0 {
            out.write_char(',')?;
        }
        write_json_string(s.as_ref(), out)?;
    }
    out.write_char(']')
}

fn w_opt<W: Write>(s: &Option<String>, out: &mut W) -> fmt::Result {
    match s {
        Some(s) => write_json_string(s, out),
        None => out.write_str("null"),
    }
}

#[cfg(test)]
mod writer_tests {
    use super::*;
    use crate::engine::canonical::stable_hash;
    use crate::engine::snapshot::{ScopeRow, SelectionRow};

    fn record() -> SnapshotRecord {
        let row = ScopeRow {
            path: "/".into(),
            parent: None,
            children: vec!["/a".into()].into(),
            capabilities: None,
            tools: Some(vec!["t\"q".into()].into()),
            entries: vec!["db".into(), "app".into()].into(),
            providers: BTreeMap::from([("database".into(), vec!["db".into()].into())]),
            visible_tools: vec!["t".into()].into(),
            selections: vec![SelectionRow {
                consumer: "app".into(),
                requirement: "database <2,>=1".into(),
                status: "resolved".into(),
                provider: Some("db".into()),
                provider_scope: Some("/".into()),
            }]
            .into(),
        };
        let tree = ScopesFingerprint {
            root: "/".into(),
            scopes: vec![row],
        };
        let mut physical = tree.clone();
        physical.scopes[0].providers =
            BTreeMap::from([("database".into(), vec!["plugin_1".into()].into())]);
        SnapshotRecord {
            format_version: SNAPSHOT_FORMAT_VERSION,
            chassis_version: "0.1.0".into(),
            generation_id: "gen_0007".into(),
            sequence: 7,
            agent_runtime: "unknown".into(),
            agent: Some("bot".into()),
            agent_revision: None,
            plugins: Arc::new(BTreeMap::from([
                ("postgres".into(), "1.4.2".into()),
                ("app".into(), "1.0.0".into()),
            ])),
            capabilities: Arc::new(BTreeMap::from([(
                "database".into(),
                vec!["1.4.2".into(), "2.0.0".into()],
            )])),
            config_hash: "c".into(),
            plugin_graph_hash: "g".into(),
            graph_definition_hash: None,
            tool_schema_hash: "t".into(),
            prompt_hash: Some("p".into()),
            metadata: BTreeMap::from([
                ("skipped".into(), Canon::list(["x"])),
                ("n".into(), Canon::Float(0.5)),
            ]),
            scopes: Arc::new(physical),
            semantic_scopes: Arc::new(tree),
            runtime_instance_ids: vec!["plugin_1".into(), "plugin_2".into()],
        }
    }

    #[test]
    fn digests_agree_with_the_canon_path() {
        let r = record();
        let d = r.digests().unwrap();
        assert_eq!(d.digest, stable_hash(&r.to_canon()).unwrap());
        assert_eq!(
            d.semantic_digest,
            stable_hash(&r.semantic_composition()).unwrap()
        );
        assert_eq!(
            d.physical_digest,
            stable_hash(&r.instance_ids_canon()).unwrap()
        );
        assert_eq!(r.digest().unwrap(), d.digest);
        assert_eq!(r.semantic_digest().unwrap(), d.semantic_digest);
    }

    #[test]
    fn process_plugins_enter_the_semantic_digest_through_both_writers() {
        let plain = record();
        let mut with = record();
        let program = |sha: &str| {
            Canon::map([(
                "p",
                Canon::map([
                    ("command", Canon::list(["python3", "p.py"])),
                    ("files", Canon::map([("p.py", Canon::from(sha))])),
                ]),
            )])
        };
        with.metadata.insert(PROCESS_PLUGINS.into(), program("aa"));
        let mut edited = with.clone();
        edited
            .metadata
            .insert(PROCESS_PLUGINS.into(), program("bb"));
        for r in [&plain, &with, &edited] {
            let d = r.digests().unwrap();
            assert_eq!(
                d.semantic_digest,
                stable_hash(&r.semantic_composition()).unwrap()
            );
        }
        let digests: std::collections::BTreeSet<String> = [&plain, &with, &edited]
            .iter()
            .map(|r| r.semantic_digest().unwrap())
            .collect();
        assert_eq!(
            digests.len(),
            3,
            "an edited plugin file is another composition"
        );
    }

    #[test]
    fn agents_enter_the_semantic_composition_only_when_there_are_some() {
        let plain = record();
        let mut with = record();
        let agent = |hash: &str| {
            Canon::map([
                ("hash", Canon::from(hash)),
                ("definition", Canon::map([("max_steps", Canon::Int(6))])),
            ])
        };
        with.metadata.insert(
            "agents".into(),
            Canon::map([("b\"ot", agent("h1")), ("a", agent("h2"))]),
        );
        let canon = with.semantic_composition();
        let Canon::Map(m) = &canon else {
            panic!("a map")
        };
        assert_eq!(
            m["agents"],
            Canon::map([("a", Canon::from("h2")), ("b\"ot", Canon::from("h1"))])
        );
        assert!(!matches!(plain.semantic_composition(), Canon::Map(m) if m.contains_key("agents")));
        // The hand-written writers agree with the canon path, both ways.
        for r in [&plain, &with] {
            let d = r.digests().unwrap();
            assert_eq!(
                d.semantic_digest,
                stable_hash(&r.semantic_composition()).unwrap()
            );
            assert_eq!(d.digest, stable_hash(&r.to_canon()).unwrap());
        }
        assert_ne!(
            plain.semantic_digest().unwrap(),
            with.semantic_digest().unwrap()
        );
        // Another definition hash is another composition.
        let mut other = with.clone();
        other.metadata.insert(
            "agents".into(),
            Canon::map([("b\"ot", agent("h3")), ("a", agent("h2"))]),
        );
        assert_ne!(
            other.semantic_digest().unwrap(),
            with.semantic_digest().unwrap()
        );
    }

    #[test]
    fn a_tree_large_enough_for_two_threads_hashes_as_in_order() {
        let mut r = record();
        let rows: Vec<SelectionRow> = (0..crate::engine::parallel::PARALLEL_MIN_WORK)
            .map(|i| SelectionRow {
                consumer: format!("app{i:05}").into(),
                requirement: "database <2,>=1".into(),
                status: "resolved".into(),
                provider: Some("db".into()),
                provider_scope: Some("/".into()),
            })
            .collect();
        for tree in [&mut r.semantic_scopes, &mut r.scopes] {
            Arc::make_mut(tree).scopes[0].selections = rows.clone().into();
        }
        assert_digests_are_the_canon_path(&r);
    }

    /// A record of `scopes` scopes under `/`, each with `rows` selection
    /// rows and one local provider.
    fn wide_record(scopes: usize, rows: usize) -> SnapshotRecord {
        let mut r = record();
        let template = r.semantic_scopes.scopes[0].clone();
        let mut semantic = ScopesFingerprint {
            root: "/".into(),
            scopes: Vec::new(),
        };
        for k in 0..scopes {
            let mut row = template.clone();
            row.path = format!("/s{k:04}").into();
            row.parent = Some("/".into());
            row.children = Arc::from([]);
            row.providers =
                BTreeMap::from([("database".into(), vec![format!("db{k}").into()].into())]);
            row.selections = (0..rows)
                .map(|i| SelectionRow {
                    consumer: format!("app{k:04}-{i:03}").into(),
                    requirement: "database <2,>=1".into(),
                    status: "resolved".into(),
                    provider: Some(format!("db{k}").into()),
                    provider_scope: Some(row.path.clone()),
                })
                .collect();
            semantic.scopes.push(row);
        }
        let mut physical = semantic.clone();
        for (k, row) in physical.scopes.iter_mut().enumerate() {
            row.providers = BTreeMap::from([(
                "database".into(),
                vec![format!("plugin_{k:012}").into()].into(),
            )]);
        }
        r.semantic_scopes = Arc::new(semantic);
        r.scopes = Arc::new(physical);
        r
    }

    fn assert_digests_are_the_canon_path(r: &SnapshotRecord) {
        assert!(r.semantic_scopes.work() >= crate::engine::parallel::PARALLEL_MIN_WORK);
        let d = r.digests().unwrap();
        assert_eq!(d, r.digests_in_order(None).unwrap());
        assert_eq!(d.digest, stable_hash(&r.to_canon()).unwrap());
        assert_eq!(
            d.semantic_digest,
            stable_hash(&r.semantic_composition()).unwrap()
        );
        let text = r.semantic_scopes.text();
        if r.scopes.same_but_providers(&r.semantic_scopes) {
            assert_eq!(r.digests_with_semantic_text(&text).unwrap(), d);
        }
    }

    #[test]
    fn the_digest_pipeline_hashes_many_pieces_as_in_order() {
        // About 8 MiB of text: well over a hundred pieces.
        let r = wide_record(500, 100);
        assert!(r.scopes.same_but_providers(&r.semantic_scopes));
        assert_digests_are_the_canon_path(&r);
    }

    #[test]
    fn trees_that_differ_in_more_than_providers_are_hashed_whole() {
        let mut r = wide_record(300, 20);
        // A physical tree that is not the semantic one but for providers
        // (a hand-edited or foreign snapshot file): writing it over the
        // semantic text would hash the wrong document.
        let row = &mut Arc::make_mut(&mut r.scopes).scopes[7];
        let mut entries = row.entries.to_vec();
        entries.push("extra".into());
        row.entries = entries.into();
        assert!(!r.scopes.same_but_providers(&r.semantic_scopes));
        assert_digests_are_the_canon_path(&r);
        let mut r = wide_record(300, 20);
        Arc::make_mut(&mut r.scopes).scopes.pop();
        assert!(!r.scopes.same_but_providers(&r.semantic_scopes));
        assert_digests_are_the_canon_path(&r);
    }

    #[test]
    fn pieces_join_into_the_text_and_carry_their_providers() {
        let r = wide_record(40, 30);
        let whole = r.semantic_scopes.text();
        for cut in [1, 700, 5_000, usize::MAX] {
            let mut pieces = Vec::new();
            r.semantic_scopes
                .write_pieces(cut, 256, Some(&r.scopes), &mut |p| pieces.push(p));
            let joined: String = pieces.iter().map(|p| p.text.as_str()).collect();
            assert_eq!(joined, *whole.text, "cut {cut}");
            // Every providers value sits whole in its piece, at the place
            // the whole text has it.
            let mut offset = 0;
            let mut spans = Vec::new();
            for p in &pieces {
                for &(a, b) in &p.providers {
                    assert!(a <= b && b <= p.text.len());
                    spans.push((offset + a, offset + b));
                }
                offset += p.text.len();
            }
            assert_eq!(spans, whole.providers, "cut {cut}");
            if cut == 1 {
                // A piece after every selection row and every scope.
                assert!(pieces.len() > 40 * 30, "{} pieces", pieces.len());
            }
            // The physical tree written over the pieces is its own text.
            let mut over = String::new();
            for p in &pieces {
                p.write_other(&mut over).unwrap();
            }
            assert_eq!(over, r.scopes.canonical_text(), "cut {cut}");
        }
    }

    #[test]
    fn a_non_finite_metadata_value_fails_the_digest() {
        let mut r = record();
        r.metadata.insert("bad".into(), Canon::Float(f64::NAN));
        assert!(r.digests().is_err());
        assert!(r.digest().is_err());
        assert!(r.semantic_digest().is_ok());
    }
}
