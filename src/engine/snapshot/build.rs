//! Building a snapshot record from a resolved composition.
//!
//! A snapshot of a large composition is mostly its two scope trees, one row
//! per requirement. Building them is kept linear and light: entries and
//! resolutions are matched to scopes by walking sorted lists side by side
//! (never by repeated id lookups), rendered specifiers are shared between
//! requirements of one manifest, and the graph and configuration hashes are
//! written straight into the hasher instead of through a `Canon` tree.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::Arc;

use super::record::{
    Digests, PIECE_BYTES, PIECE_CAPACITY, SNAPSHOT_FORMAT_VERSION, SnapshotRecord, hash_over_pieces,
};
use super::scopes::{
    Names, PieceStream, ProviderIds, ScopeRow, ScopesFingerprint, SelectionRow, TextPiece,
};
use crate::engine::canonical::{Canon, CanonError, Sha256Writer, stable_hash, write_json_string};
use crate::engine::identity::{GenerationId, instance_id, instance_id_arc};
use crate::engine::model::{CapabilityName, Composition, Entry, EntryId, Requirement, ToolName};
use crate::engine::parallel;
use crate::engine::recent::Recent;
use crate::engine::redact::redact_for_hash;
use crate::engine::resolve::{Consumer, Plan, Resolution, Status};
use crate::engine::specifier::Clause;
use crate::engine::tree::{FxHashMap, ScopeIx, ScopeTree};

/// The `metadata` key of each tool's contract hash, by tool name.
pub const TOOL_CONTRACTS: &str = "tool_contracts";

/// The `metadata` key of the MCP servers the active entries run against.
const MCP_SERVERS: &str = "mcp_servers";

use super::record::PROCESS_PLUGINS;

/// The version of this chassis, recorded in every snapshot.
pub const CHASSIS_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Entry id → mount number in its store. Persistent (structurally
/// shared): a generation derived from another changes a few of its rows.
pub type MountNumbers = imbl::OrdMap<EntryId, u64>;

/// Facts a snapshot needs that are not in the composition.
#[derive(Clone, Debug)]
pub struct SnapshotContext {
    /// The generation the snapshot describes.
    pub generation: GenerationId,
    /// Mount number of each entry in its store (1 when absent: a fresh store).
    pub mounts: MountNumbers,
    /// Agent runtime kind (`unknown` for a bare snapshot).
    pub agent_runtime: String,
    /// Agent name and revision, for agent runs.
    pub agent: Option<(String, String)>,
    /// Agent compiled-graph key.
    pub graph_definition_hash: Option<String>,
    /// Agent prompt hash.
    pub prompt_hash: Option<String>,
    /// Redacted metadata of what ran.
    pub metadata: BTreeMap<String, Canon>,
}

impl Default for SnapshotContext {
    /// The first generation of an empty store, no agent.
    fn default() -> Self {
        Self {
            generation: GenerationId::first(),
            mounts: MountNumbers::new(),
            agent_runtime: "unknown".into(),
            agent: None,
            graph_definition_hash: None,
            prompt_hash: None,
            metadata: BTreeMap::new(),
        }
    }
}

/// `config_hash`: the redacted configuration of every active entry.
pub fn config_hash(active: &[&Entry]) -> Result<String, CanonError> {
    let map = active
        .iter()
        .map(|e| (e.id.to_string(), redact_for_hash(&e.config.to_canon())))
        .collect();
    stable_hash(&Canon::Map(map))
}

/// `plugin_graph_hash`: nodes `[entry, name@version]` and bound edges.
pub fn plugin_graph_hash(active: &[&Entry], plan: &Plan) -> Result<String, CanonError> {
    let mut nodes: Vec<(String, String)> = active
        .iter()
        .map(|e| (e.id.to_string(), e.manifest.identity()))
        .collect();
    nodes.sort();
    let nodes = Canon::List(
        nodes
            .into_iter()
            .map(|(a, b)| Canon::list([a, b]))
            .collect(),
    );
    let edges = Canon::List(
        plan.edges
            .iter()
            .map(|(p, c)| Canon::list([p.to_string(), c.to_string()]))
            .collect(),
    );
    stable_hash(&Canon::map([("nodes", nodes), ("edges", edges)]))
}

/// `tool_schema_hash`: every tool of every active entry, sorted by name.
pub fn tool_schema_hash(active: &[&Entry]) -> Result<String, CanonError> {
    Ok(ToolTexts::of(active)?.schema_hash())
}

/// Each tool's contract hash, by name: the canonical hash of the list of
/// its declarations (`{name, description, args}`, as `tool_schema_hash`
/// covers them; one unless two entries declare the name), so a diff can
/// name the tool whose contract changed. `None` without tools.
fn tool_contracts(active: &[&Entry]) -> Result<Option<Canon>, CanonError> {
    Ok(ToolTexts::of(active)?.contracts())
}

/// Every tool declaration of the active entries as canonical JSON
/// (`{"args":…,"description":…,"name":…}`), sorted by name and, among
/// equal names, in activation order: what `tool_schema_hash` and each
/// tool's contract hash cover. Written once for both — each built its own
/// tree of every declaration, a third of a snapshot's contents on 100,000
/// `command` entries.
struct ToolTexts<'a> {
    rows: Vec<(&'a str, String)>,
}

impl<'a> ToolTexts<'a> {
    fn of(active: &[&'a Entry]) -> Result<Self, CanonError> {
        let mut rows = Vec::new();
        for e in active {
            for t in &e.manifest.tools {
                let args = t.args_schema.as_ref().map_or(Canon::Null, Canon::from_json);
                let decl = Canon::map([
                    ("name", Canon::from(t.name.as_str())),
                    ("description", Canon::from(t.description.as_str())),
                    ("args", args),
                ]);
                let mut text = String::new();
                crate::engine::canonical::write_canonical(&decl, &mut text)?;
                rows.push((t.name.as_str(), text));
            }
        }
        // Stable: equal names keep their activation order.
        rows.sort_by(|a, b| a.0.cmp(b.0));
        Ok(Self { rows })
    }

    /// The hash of the list of every declaration.
    fn schema_hash(&self) -> String {
        list_hash(&self.rows)
    }

    /// Each name's hash of the list of its declarations; `None` without
    /// tools.
    fn contracts(&self) -> Option<Canon> {
        if self.rows.is_empty() {
            return None;
        }
        let out = self
            .rows
            .chunk_by(|a, b| a.0 == b.0)
            .map(|group| (group[0].0.to_owned(), Canon::Str(list_hash(group))))
            .collect();
        Some(Canon::Map(out))
    }
}

/// The canonical hash of the list of `rows`' texts, as `stable_hash` of a
/// list of the values they are the canonical text of.
fn list_hash(rows: &[(&str, String)]) -> String {
    let mut hasher = Sha256Writer::new();
    hasher.update(b"[");
    for (n, (_, text)) in rows.iter().enumerate() {
        if n > 0 {
            hasher.update(b",");
        }
        hasher.update(text.as_bytes());
    }
    hasher.update(b"]");
    hasher.finish_hex()
}

/// Per composition entry (id order): whether it activates and its position
/// in the activation order. Read by walking `plan.entries` alongside
/// `composition.entries` (both keyed by entry id), so no entry is looked up
/// by its id string; a plan that does not line up with the composition falls
/// back to lookups.
struct EntryFacts<'a> {
    entries: Vec<&'a Entry>,
    eligible: Vec<bool>,
    /// Index into `plan.activation_order` (and the instance ids).
    position: Vec<Option<usize>>,
}

impl<'a> EntryFacts<'a> {
    fn new(composition: &'a Composition, plan: &Plan) -> Self {
        let entries: Vec<&Entry> = composition.entries.values().collect();
        let order = &plan.activation_order;
        let aligned = plan.entries.len() == entries.len()
            && plan.entries.keys().zip(&entries).all(|(id, e)| *id == e.id);
        let (eligible, mut position): (Vec<bool>, Vec<Option<usize>>) = if aligned {
            plan.entries
                .values()
                .zip(&entries)
                .map(|(p, e)| {
                    let at = p.order.filter(|&i| order.get(i) == Some(&e.id));
                    (p.eligible, at)
                })
                .unzip()
        } else {
            entries
                .iter()
                .map(|e| (plan.is_eligible(&e.id), None))
                .unzip()
        };
        // Positions the plan did not record (or recorded wrongly): search.
        let found = position.iter().filter(|p| p.is_some()).count();
        if found != order.len() {
            let at: HashMap<&str, usize> = order
                .iter()
                .enumerate()
                .map(|(i, id)| (id.as_str(), i))
                .collect();
            for (p, e) in position.iter_mut().zip(&entries) {
                *p = at.get(e.id.as_str()).copied();
            }
        }
        Self {
            entries,
            eligible,
            position,
        }
    }
}

/// The active entries of a resolved composition, in the orders a snapshot
/// needs them.
struct Active<'a> {
    facts: EntryFacts<'a>,
    /// In activation order (ids the composition lacks are skipped).
    in_order: Vec<&'a Entry>,
    /// Sorted by id.
    by_id: Vec<&'a Entry>,
    /// Whether `by_id` holds each id once (it was taken from the
    /// composition's map, not from a plan that repeats an entry).
    by_id_unique: bool,
}

impl<'a> Active<'a> {
    fn new(composition: &'a Composition, plan: &Plan) -> Self {
        let facts = EntryFacts::new(composition, plan);
        let mut slots: Vec<Option<&Entry>> = vec![None; plan.activation_order.len()];
        for (e, p) in facts.entries.iter().zip(&facts.position) {
            if let Some(p) = *p {
                slots[p] = Some(e);
            }
        }
        let lined_up = slots.iter().all(Option::is_some);
        let in_order: Vec<&Entry> = if lined_up {
            slots.iter().flatten().copied().collect()
        } else {
            plan.activation_order
                .iter()
                .filter_map(|id| composition.entries.get(id))
                .collect()
        };
        // When the plan lines up (the activation order holds each eligible
        // entry once), the eligible entries in composition order.
        let by_id_unique = lined_up
            && facts
                .position
                .iter()
                .zip(&facts.eligible)
                .all(|(p, &e)| p.is_some() == e);
        let by_id: Vec<&Entry> = if by_id_unique {
            facts
                .entries
                .iter()
                .zip(&facts.eligible)
                .filter(|&(_, &e)| e)
                .map(|(e, _)| *e)
                .collect()
        } else {
            let mut sorted = in_order.clone();
            sorted.sort_by(|a, b| a.id.cmp(&b.id));
            sorted
        };
        Self {
            facts,
            in_order,
            by_id,
            by_id_unique,
        }
    }

    /// Everything a snapshot records but its scope trees (left empty): the
    /// instance ids (one SHA-256 per active entry), plugins, capabilities,
    /// hashes and metadata.
    fn contents(
        &self,
        composition: &Composition,
        plan: &Plan,
        ctx: &SnapshotContext,
    ) -> Result<Contents, CanonError> {
        // The configurations' hash beside everything else: on 100,000
        // built-in entries it is two fifths of this, which ran alone on one
        // core while the other, done with the few scopes, waited.
        let (config_hash, rest) = parallel::join(
            self.by_id.len(),
            || self.config_hash(),
            || -> Result<_, CanonError> {
                let runtime_instance_ids = plan
                    .activation_order
                    .iter()
                    .map(|id| instance_of(ctx, id))
                    .collect();
                let tools = ToolTexts::of(&self.in_order)?;
                Ok((
                    runtime_instance_ids,
                    plugins_and_capabilities(&self.in_order),
                    sorted_graph_hash(&self.by_id, plan)?,
                    tools.schema_hash(),
                    self.metadata(composition, ctx, tools.contracts())?,
                ))
            },
        );
        // The configurations' error first, as when they were hashed first.
        let config_hash = config_hash?;
        let (
            runtime_instance_ids,
            (plugins, capabilities),
            plugin_graph_hash,
            tool_schema_hash,
            metadata,
        ) = rest?;
        let empty = Arc::new(ScopesFingerprint::new(Vec::new()));
        Ok(Contents {
            plugins: Arc::new(plugins),
            capabilities: Arc::new(capabilities),
            config_hash,
            plugin_graph_hash,
            tool_schema_hash,
            metadata,
            scopes: Arc::clone(&empty),
            semantic_scopes: empty,
            runtime_instance_ids,
        })
    }

    /// `config_hash` (one key per id: a repeated id is the same entry).
    fn config_hash(&self) -> Result<String, CanonError> {
        if self.by_id_unique {
            return sorted_config_hash(self.by_id.iter().copied());
        }
        let mut unique = self.by_id.clone();
        unique.dedup_by(|a, b| a.id == b.id);
        sorted_config_hash(unique.iter().copied())
    }

    /// The snapshot's `metadata`: the context's, then what the composition
    /// skipped and quarantined, the MCP servers its entries run against and
    /// each tool's contract hash.
    fn metadata(
        &self,
        composition: &Composition,
        ctx: &SnapshotContext,
        tools: Option<Canon>,
    ) -> Result<BTreeMap<String, Canon>, CanonError> {
        snapshot_metadata(
            composition,
            ctx,
            tools,
            mcp_servers(&self.in_order),
            process_plugins(&self.in_order),
        )
    }
}

/// The snapshot's `metadata`, given what the active entries' manifests
/// contribute (each tool's contract hash, the MCP servers): also the
/// agents' definitions, which the semantic composition hashes.
fn snapshot_metadata(
    composition: &Composition,
    ctx: &SnapshotContext,
    tools: Option<Canon>,
    servers: Option<Canon>,
    programs: Option<Canon>,
) -> Result<BTreeMap<String, Canon>, CanonError> {
    let mut metadata = ctx.metadata.clone();
    if let Some(tools) = tools {
        metadata.insert(TOOL_CONTRACTS.to_owned(), tools);
    }
    if let Some(agents) = crate::engine::agent::agents_metadata(composition)? {
        metadata.insert(crate::engine::agent::AGENTS.to_owned(), agents);
    }
    if let Some(policy) = composition.policy.as_ref().filter(|p| !p.is_empty()) {
        metadata.insert(crate::engine::model::POLICY.to_owned(), policy.to_canon());
    }
    if let Some(skipped) = composition.skipped_metadata() {
        metadata.insert("skipped_entries".to_owned(), skipped);
    }
    if let Some(servers) = servers {
        metadata.insert(MCP_SERVERS.to_owned(), servers);
    }
    if let Some(programs) = programs {
        metadata.insert(PROCESS_PLUGINS.to_owned(), programs);
    }
    if !composition.quarantined.is_empty() {
        metadata.insert(
            "quarantined_entries".to_owned(),
            Canon::Map(
                composition
                    .quarantined
                    .iter()
                    .map(|(id, kind)| (id.to_string(), Canon::Str(kind.clone())))
                    .collect(),
            ),
        );
    }
    Ok(metadata)
}

/// Build the snapshot of `composition` resolved as `plan`.
pub fn build_snapshot(
    composition: &Composition,
    tree: &ScopeTree,
    plan: &Plan,
    ctx: &SnapshotContext,
) -> Result<SnapshotRecord, CanonError> {
    let active = Active::new(composition, plan);
    let instance = |id: &EntryId| instance_of(ctx, id);
    // The scope fingerprints on one core; the instance ids (one SHA-256 per
    // active entry) and everything else on the other. The physical tree
    // names its few providers by instance id: it derives those itself
    // rather than wait for the list.
    let ((semantic_scopes, scopes), rest) = parallel::join(
        work_of(composition, tree, plan),
        || fingerprints(composition, tree, plan, &active.facts, &instance),
        || active.contents(composition, plan, ctx),
    );
    let mut record = record(ctx, rest?);
    record.scopes = Arc::new(scopes);
    record.semantic_scopes = Arc::new(semantic_scopes);
    Ok(record)
}

/// [`build_snapshot`] and the record's [`SnapshotRecord::digests`], in one
/// pipeline on two cores when the composition is large: the core building
/// the scope fingerprints writes their text as each scope is built, while
/// the other, once it has the rest of the record, hashes the record over
/// that text as it arrives. The same answer as building, then hashing.
pub fn build_snapshot_digested(
    composition: &Composition,
    tree: &ScopeTree,
    plan: &Plan,
    ctx: &SnapshotContext,
) -> Result<(SnapshotRecord, Digests), CanonError> {
    let active = &Active::new(composition, plan);
    let instance = &|id: &EntryId| instance_of(ctx, id);
    let (pieces_tx, pieces_rx) = std::sync::mpsc::channel::<Arc<TextPiece>>();
    let (heads_tx, heads_rx) = std::sync::mpsc::channel::<(String, String)>();
    let pipelined = parallel::join_concurrent(
        work_of(composition, tree, plan),
        // This core: the trees, their text in pieces, then the semantic
        // digest over the pieces once the other sends the head and tail.
        move || {
            let mut pieces = Vec::new();
            let mut emit = |piece: TextPiece| {
                let piece = Arc::new(piece);
                // The other half stops reading only on an error.
                let _ = pieces_tx.send(Arc::clone(&piece));
                pieces.push(piece);
            };
            let mut text = PieceStream::new("/", PIECE_BYTES, PIECE_CAPACITY, &mut emit);
            let mut semantic = Vec::with_capacity(tree.len());
            let mut physical = Vec::with_capacity(tree.len());
            scope_rows(
                composition,
                tree,
                plan,
                &active.facts,
                instance,
                |sem, phys| {
                    text.push(&sem, Some(&phys));
                    semantic.push(sem);
                    physical.push(phys);
                },
            );
            text.finish();
            drop(pieces_tx);
            // No head when the other half failed: its error is the answer.
            let digest = heads_rx
                .recv()
                .ok()
                .map(|(head, tail)| hash_over_pieces(&head, &pieces, &tail));
            (
                (
                    ScopesFingerprint::new(semantic),
                    ScopesFingerprint::new(physical),
                ),
                digest,
            )
        },
        // The other: the instance ids and the rest of the record, then the
        // record's digest over the pieces as they come.
        move || -> Result<_, CanonError> {
            let shell = record(ctx, active.contents(composition, plan, ctx)?);
            let _ = heads_tx.send(shell.semantic_head_tail()?);
            let physical = shell.physical_digest()?;
            let digest = shell.hash_record_over(pieces_rx, true)?;
            Ok((shell, digest, physical))
        },
    );
    let Some(((trees, semantic), other)) = pipelined else {
        let record = build_snapshot(composition, tree, plan, ctx)?;
        let digests = record.digests()?;
        return Ok((record, digests));
    };
    let (mut record, digest, physical_digest) = other?;
    let (semantic_scopes, scopes) = trees;
    record.scopes = Arc::new(scopes);
    record.semantic_scopes = Arc::new(semantic_scopes);
    let digests = Digests {
        digest,
        // Computed whenever the other half succeeded.
        semantic_digest: match semantic {
            Some(digest) => digest,
            None => record.semantic_digest()?,
        },
        physical_digest,
    };
    debug_assert_eq!(Ok(&digests), record.digests().as_ref());
    Ok((record, digests))
}

/// How much work building a snapshot is (whether two cores pay off).
fn work_of(composition: &Composition, tree: &ScopeTree, plan: &Plan) -> usize {
    tree.len() + plan.resolutions.len() + composition.entries.len()
}

/// The instance id of `id` in `ctx`'s store.
fn instance_of(ctx: &SnapshotContext, id: &EntryId) -> Arc<str> {
    instance_id_arc(id, ctx.mounts.get(id).copied().unwrap_or(1))
}

/// The snapshot's `plugins` (manifest name -> version, later in activation
/// order winning, as in the reference) and `capabilities` (capability ->
/// sorted versions) of the active entries: sorted lists, then bulk-built
/// maps.
fn plugins_and_capabilities(
    in_order: &[&Entry],
) -> (BTreeMap<String, String>, BTreeMap<String, Vec<String>>) {
    let mut named: Vec<(&str, &str)> = in_order
        .iter()
        .map(|e| (e.manifest.name.as_str(), e.manifest.version.as_str()))
        .collect();
    named.sort_by(|a, b| a.0.cmp(b.0));
    let mut plugin_list: Vec<(String, String)> = Vec::with_capacity(named.len());
    for (i, &(name, version)) in named.iter().enumerate() {
        if named.get(i + 1).is_none_or(|next| next.0 != name) {
            plugin_list.push((name.to_owned(), version.to_owned()));
        }
    }
    let plugins: BTreeMap<String, String> = plugin_list.into_iter().collect();
    let mut provided: Vec<(&str, &str)> = Vec::with_capacity(in_order.len());
    for e in in_order {
        for (cap, p) in &e.manifest.provides {
            provided.extend(p.versions.iter().map(|v| (cap.as_str(), v.as_str())));
        }
    }
    provided.sort_unstable();
    let mut capability_list: Vec<(String, Vec<String>)> = Vec::new();
    for (i, &(cap, version)) in provided.iter().enumerate() {
        match capability_list.last_mut() {
            Some((_, list)) if i > 0 && provided[i - 1].0 == cap => list.push(version.to_owned()),
            _ => capability_list.push((cap.to_owned(), vec![version.to_owned()])),
        }
    }
    (plugins, capability_list.into_iter().collect())
}

/// What a snapshot records of a composition (everything but what the
/// context gives).
struct Contents {
    plugins: Arc<BTreeMap<String, String>>,
    capabilities: Arc<BTreeMap<String, Vec<String>>>,
    config_hash: String,
    plugin_graph_hash: String,
    tool_schema_hash: String,
    metadata: BTreeMap<String, Canon>,
    scopes: Arc<ScopesFingerprint>,
    semantic_scopes: Arc<ScopesFingerprint>,
    runtime_instance_ids: Vec<Arc<str>>,
}

/// The record of `contents` in `ctx`'s generation, for its agent.
fn record(ctx: &SnapshotContext, contents: Contents) -> SnapshotRecord {
    let Contents {
        plugins,
        capabilities,
        config_hash,
        plugin_graph_hash,
        tool_schema_hash,
        metadata,
        scopes,
        semantic_scopes,
        runtime_instance_ids,
    } = contents;
    let (agent, agent_revision) = match &ctx.agent {
        Some((a, r)) => (Some(a.clone()), Some(r.clone())),
        None => (None, None),
    };
    SnapshotRecord {
        format_version: SNAPSHOT_FORMAT_VERSION,
        chassis_version: CHASSIS_VERSION.to_owned(),
        generation_id: ctx.generation.to_string(),
        sequence: ctx.generation.sequence(),
        agent_runtime: ctx.agent_runtime.clone(),
        agent,
        agent_revision,
        plugins,
        capabilities,
        config_hash,
        plugin_graph_hash,
        graph_definition_hash: ctx.graph_definition_hash.clone(),
        tool_schema_hash,
        prompt_hash: ctx.prompt_hash.clone(),
        metadata,
        scopes,
        semantic_scopes,
        runtime_instance_ids,
    }
}

/// The snapshot [`build_snapshot`] builds for `composition` and `ctx`,
/// derived from `previous`: the snapshot of a composition with the same
/// scope tree and plan (`tree`, `plan`), differing at most in entries'
/// configurations and declaration spans, whose instances are the same but
/// for the entries at `remounted` (positions in the activation order, each
/// with its mount number in `ctx.mounts`).
///
/// What can differ between the two is rewritten (the generation, the agent
/// fields, `config_hash`, `metadata`, the remounted entries' instance ids,
/// in `runtime_instance_ids` and in the physical scope tree); the rest,
/// the semantic scope tree included, is shared, so a runtime publishing a
/// changed configuration does work in proportion to the change, not to the
/// composition. A `previous` that does not line up with `plan` (the
/// caller broke the contract) is not patched: the snapshot is built.
pub fn rederive_snapshot(
    previous: &SnapshotRecord,
    composition: &Composition,
    tree: &ScopeTree,
    plan: &Plan,
    ctx: &SnapshotContext,
    remounted: &[usize],
) -> Result<SnapshotRecord, CanonError> {
    if previous.runtime_instance_ids.len() != plan.activation_order.len()
        || previous.scopes.scopes.len() != tree.len()
    {
        return build_snapshot(composition, tree, plan, ctx);
    }
    // One pass over the entries: the plan lists the composition's entries
    // (the same ids, in the same order), so each entry's eligibility is read
    // beside it instead of being looked up.
    let Some((config_hash, with_metadata)) = rederived_config_hash(composition, plan)? else {
        return build_snapshot(composition, tree, plan, ctx);
    };
    let mut runtime_instance_ids = previous.runtime_instance_ids.clone();
    let mut physical = Arc::clone(&previous.scopes);
    for &p in remounted {
        let (Some(id), Some(old)) = (
            plan.activation_order.get(p),
            previous.runtime_instance_ids.get(p),
        ) else {
            return build_snapshot(composition, tree, plan, ctx);
        };
        let new = instance_id(id, ctx.mounts.get(id).copied().unwrap_or(1));
        if *new == **old {
            continue;
        }
        // The entry's instance id in each provider list of its scope row.
        let (Some(entry), Some(ix)) = (
            composition.entries.get(id),
            composition
                .entries
                .get(id)
                .and_then(|e| tree.find(&e.scope.value)),
        ) else {
            return build_snapshot(composition, tree, plan, ctx);
        };
        let row = &mut Arc::make_mut(&mut physical).scopes[ix];
        for cap in entry.manifest.provides.keys() {
            if !tree.exposes(ix, cap) {
                continue;
            }
            let replaced = row.providers.get_mut(cap.as_str()).and_then(|list| {
                let at = list.iter().position(|i| **i == **old)?;
                let mut ids = list.to_vec();
                ids[at] = Arc::from(new.as_str());
                ids.sort();
                *list = Arc::from(ids);
                Some(())
            });
            if replaced.is_none() {
                return build_snapshot(composition, tree, plan, ctx);
            }
        }
        runtime_instance_ids[p] = new.into();
    }
    Ok(record(
        ctx,
        Contents {
            plugins: Arc::clone(&previous.plugins),
            capabilities: Arc::clone(&previous.capabilities),
            config_hash,
            plugin_graph_hash: previous.plugin_graph_hash.clone(),
            tool_schema_hash: previous.tool_schema_hash.clone(),
            metadata: snapshot_metadata(
                composition,
                ctx,
                tool_contracts(&with_metadata)?,
                mcp_servers(&with_metadata),
                process_plugins(&with_metadata),
            )?,
            scopes: physical,
            semantic_scopes: Arc::clone(&previous.semantic_scopes),
            runtime_instance_ids,
        },
    ))
}

/// `config_hash` of the eligible entries of `composition`, read beside
/// `plan.entries`, and those of them that contribute to the snapshot's
/// `metadata` (tools, MCP servers) in activation order; `None` when the two
/// visibly list other ids (other counts, or other ids at either end). The contract of
/// [`rederive_snapshot`] is that they list the same ids; comparing every
/// one would read 10,000 more strings per reconcile, so debug builds (the
/// test suite) check that, release builds check the ends.
fn rederived_config_hash<'c>(
    composition: &'c Composition,
    plan: &Plan,
) -> Result<Option<(String, Vec<&'c Entry>)>, CanonError> {
    let (ids, planned) = (&composition.entries, &plan.entries);
    if ids.len() != planned.len()
        || ids.first_key_value().map(|(k, _)| k) != planned.first_key_value().map(|(k, _)| k)
        || ids.last_key_value().map(|(k, _)| k) != planned.last_key_value().map(|(k, _)| k)
    {
        return Ok(None);
    }
    debug_assert!(composition.entries.keys().eq(plan.entries.keys()));
    let mut with_metadata: Vec<(usize, &Entry)> = Vec::new();
    let eligible = composition
        .entries
        .values()
        .zip(plan.entries.values())
        .filter(|(_, p)| p.eligible)
        .map(|(e, p)| {
            if !e.manifest.tools.is_empty() || is_mcp(e) || e.manifest.process.is_some() {
                with_metadata.push((p.order.unwrap_or(usize::MAX), e));
            }
            e
        });
    let hash = sorted_config_hash(eligible)?;
    with_metadata.sort_by_key(|&(order, _)| order);
    Ok(Some((
        hash,
        with_metadata.into_iter().map(|(_, e)| e).collect(),
    )))
}

/// [`config_hash`] of entries sorted by id without duplicates, written
/// straight into the hasher.
fn sorted_config_hash<'e>(
    sorted: impl IntoIterator<Item = &'e Entry>,
) -> Result<String, CanonError> {
    let mut h = Sha256Writer::new();
    h.write_char('{')?;
    for (i, e) in sorted.into_iter().enumerate() {
        if i > 0 {
            h.write_char(',')?;
        }
        write_json_string(e.id.as_str(), &mut h)?;
        h.write_char(':')?;
        e.config.write_redacted_for_hash(&mut h)?;
    }
    h.write_char('}')?;
    Ok(h.finish_hex())
}

/// [`plugin_graph_hash`] of entries sorted by id (ties, possible only for a
/// hand-made list, by identity), written straight into the hasher.
fn sorted_graph_hash(sorted: &[&Entry], plan: &Plan) -> Result<String, CanonError> {
    let mut h = Sha256Writer::new();
    h.write_str("{\"edges\":[")?;
    for (i, (p, c)) in plan.edges.iter().enumerate() {
        if i > 0 {
            h.write_char(',')?;
        }
        h.write_char('[')?;
        write_json_string(p.as_str(), &mut h)?;
        h.write_char(',')?;
        write_json_string(c.as_str(), &mut h)?;
        h.write_char(']')?;
    }
    h.write_str("],\"nodes\":[")?;
    let mut identity = String::new();
    for (i, e) in sorted.iter().enumerate() {
        if i > 0 {
            h.write_char(',')?;
        }
        h.write_char('[')?;
        write_json_string(e.id.as_str(), &mut h)?;
        h.write_char(',')?;
        identity.clear();
        identity.push_str(&e.manifest.name);
        identity.push('@');
        identity.push_str(e.manifest.version.as_str());
        write_json_string(&identity, &mut h)?;
        h.write_char(']')?;
    }
    h.write_str("]}")?;
    Ok(h.finish_hex())
}

/// Rendered requirement texts. Requirements cloned from one manifest share
/// their clause list (`Specifier` holds an `Arc`), so specifiers are first
/// looked up by the list's address and length (equal keys mean the same list
/// while `plan` is borrowed), then by content, so equal specifiers of
/// different manifests are rendered once too. Only the rendered text reaches
/// the output. Rows with the same requirement (capability handle, specifier,
/// optional) share one text.
#[derive(Default)]
struct SpecTexts<'p> {
    by_address: FxHashMap<(usize, usize), usize>,
    by_content: FxHashMap<&'p [Clause], usize>,
    rendered: Vec<String>,
    scratch: String,
    /// The texts of the last few requirements, by the addresses of their
    /// capability and clause list (stable while `plan` is borrowed) and
    /// `optional`: a scope's rows cycle through their consumers' few
    /// requirements, so nearly every row finds its text here without
    /// hashing or comparing clauses.
    recent: Recent<(RequirementKey, Arc<str>), 8>,
    /// Every rendered requirement text, by (capability handle address,
    /// specifier, optional); addresses are stable while `plan` is borrowed.
    texts: FxHashMap<(usize, usize, bool), Arc<str>>,
}

impl<'p> SpecTexts<'p> {
    fn lookup(&mut self, clauses: &'p [Clause], r: &Requirement) -> usize {
        let key = (clauses.as_ptr() as usize, clauses.len());
        if let Some(&i) = self.by_address.get(&key) {
            return i;
        }
        let i = match self.by_content.get(clauses) {
            Some(&i) => i,
            None => {
                let text = if clauses.is_empty() {
                    "*".to_owned()
                } else {
                    r.specifier.to_string()
                };
                self.rendered.push(text);
                let i = self.rendered.len() - 1;
                self.by_content.insert(clauses, i);
                i
            }
        };
        self.by_address.insert(key, i);
        i
    }

    /// `Requirement::render`: `<capability> <spec>` (`*` for any), then
    /// ` (optional)`.
    fn render(&mut self, r: &'p Requirement) -> Arc<str> {
        let clauses = r.specifier.clauses();
        let recent_key = (
            r.capability.as_arc().as_ptr() as usize,
            clauses.as_ptr() as usize,
            clauses.len(),
            r.optional,
        );
        if let Some((_, text)) = self.recent.find(|(k, _)| *k == recent_key) {
            return Arc::clone(text);
        }
        let text = self.render_new(r);
        self.recent.insert(|_| (recent_key, Arc::clone(&text)));
        text
    }

    /// [`Self::render`] for a requirement not among the recent ones.
    fn render_new(&mut self, r: &'p Requirement) -> Arc<str> {
        let spec = self.lookup(r.specifier.clauses(), r);
        let key = (r.capability.as_arc().as_ptr() as usize, spec, r.optional);
        if let Some(text) = self.texts.get(&key) {
            return Arc::clone(text);
        }
        let suffix = if r.optional { " (optional)" } else { "" };
        self.scratch.clear();
        self.scratch.push_str(r.capability.as_str());
        self.scratch.push(' ');
        self.scratch.push_str(&self.rendered[spec]);
        self.scratch.push_str(suffix);
        let text: Arc<str> = Arc::from(self.scratch.as_str());
        self.texts.insert(key, Arc::clone(&text));
        text
    }
}

/// A requirement's capability and clause list addresses, clause count and
/// `optional` ([`SpecTexts::render`]).
type RequirementKey = (usize, usize, usize, bool);

/// One shared text per status spelling.
#[derive(Default)]
struct StatusTexts(Vec<(&'static str, Arc<str>)>);

impl StatusTexts {
    fn get(&mut self, status: Status) -> Arc<str> {
        let s = status.as_str();
        if let Some((_, t)) = self.0.iter().find(|(k, _)| *k == s) {
            return Arc::clone(t);
        }
        let t: Arc<str> = Arc::from(s);
        self.0.push((s, Arc::clone(&t)));
        t
    }
}

/// Scope index of every entry (composition order) and of every resolution
/// (plan order). Resolutions are sorted by consumer name, as entries are by
/// id, so an entry consumer's scope is found by walking both lists together;
/// scope consumers and anything that does not line up are looked up by path.
fn scope_indices(
    tree: &ScopeTree,
    plan: &Plan,
    facts: &EntryFacts<'_>,
) -> (Vec<Option<ScopeIx>>, Vec<Option<ScopeIx>>) {
    let entry_scope: Vec<Option<ScopeIx>> = facts
        .entries
        .iter()
        .map(|e| tree.find(&e.scope.value))
        .collect();
    let mut k = 0;
    let resolution_scope = plan
        .resolutions
        .iter()
        .map(|r| {
            if let Consumer::Entry(id) = &r.consumer {
                // The plan's ids are the composition's: the consumer is
                // nearly always this entry or the next, by pointer, so
                // names are compared only when it is neither.
                let is = |k: usize| {
                    facts
                        .entries
                        .get(k)
                        .is_some_and(|e| Arc::ptr_eq(e.id.as_arc(), id.as_arc()))
                };
                if is(k + 1) {
                    k += 1;
                } else if !is(k) {
                    while k < facts.entries.len() && facts.entries[k].id < *id {
                        k += 1;
                    }
                }
                if let (Some(e), Some(ix)) = (facts.entries.get(k), entry_scope.get(k))
                    && e.id == *id
                    && e.scope.value == r.scope
                {
                    return *ix;
                }
            }
            tree.find(&r.scope)
        })
        .collect();
    (entry_scope, resolution_scope)
}

/// `items` as one shared list; `empty` when there are none.
fn shared_names<'a>(empty: &Names, items: impl ExactSizeIterator<Item = &'a Arc<str>>) -> Names {
    if items.len() == 0 {
        Arc::clone(empty)
    } else {
        // Exact-size iterators over slices collect in one allocation.
        items.map(Arc::clone).collect()
    }
}

/// Both scope fingerprints: by entry id and by instance id.
fn fingerprints(
    composition: &Composition,
    tree: &ScopeTree,
    plan: &Plan,
    facts: &EntryFacts<'_>,
    instance: &(dyn Fn(&EntryId) -> Arc<str> + Sync),
) -> (ScopesFingerprint, ScopesFingerprint) {
    let mut semantic = Vec::with_capacity(tree.len());
    let mut physical = Vec::with_capacity(tree.len());
    scope_rows(composition, tree, plan, facts, instance, |sem, phys| {
        semantic.push(sem);
        physical.push(phys);
    });
    (
        ScopesFingerprint::new(semantic),
        ScopesFingerprint::new(physical),
    )
}

/// Each scope's row of both fingerprints (by entry id, by instance id),
/// handed to `sink` in pre-order as it is built. The two rows differ only
/// in `providers`; everything else they share.
fn scope_rows<'p>(
    composition: &Composition,
    tree: &ScopeTree,
    plan: &'p Plan,
    facts: &EntryFacts<'_>,
    instance: &(dyn Fn(&EntryId) -> Arc<str> + Sync),
    mut sink: impl FnMut(ScopeRow, ScopeRow),
) {
    let n = tree.len();
    let (entry_scope, resolution_scope) = scope_indices(tree, plan, facts);
    // Entries of each scope, in id order (counting sort).
    let mut start = vec![0usize; n + 1];
    for ix in entry_scope.iter().flatten() {
        start[ix + 1] += 1;
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut in_scope = vec![0usize; start[n]];
    for (e, ix) in entry_scope.iter().enumerate() {
        if let Some(ix) = *ix {
            in_scope[fill[ix]] = e;
            fill[ix] += 1;
        }
    }

    // Resolutions of each scope, in plan order (counting sort), so each
    // scope's rows are built straight into their shared slice.
    let mut row_start = vec![0usize; n + 1];
    for ix in resolution_scope.iter().flatten() {
        row_start[ix + 1] += 1;
    }
    for i in 0..n {
        row_start[i + 1] += row_start[i];
    }
    let mut row_fill = row_start.clone();
    let mut rows_of = vec![0usize; row_start[n]];
    for (ri, ix) in resolution_scope.iter().enumerate() {
        if let Some(ix) = *ix {
            rows_of[row_fill[ix]] = ri;
            row_fill[ix] += 1;
        }
    }
    let mut texts = SpecTexts::default();
    let mut statuses = StatusTexts::default();
    // Most scopes have no children, tools or visible tools: one shared
    // empty list instead of an allocation each.
    let empty: Names = Arc::from([]);
    let mut row = |r: &'p Resolution| {
        let resolved = r.status == Status::Resolved;
        let selected = r.selected.as_ref().filter(|_| resolved);
        let consumer = match &r.consumer {
            Consumer::Entry(id) => Arc::clone(id.as_arc()),
            Consumer::Scope(path) => Arc::clone(path.as_arc()),
        };
        SelectionRow {
            consumer,
            requirement: texts.render(&r.requirement),
            status: statuses.get(r.status),
            provider: selected.map(|s| Arc::clone(s.entry.as_arc())),
            provider_scope: selected.map(|s| Arc::clone(s.scope.as_arc())),
        }
    };

    // Tools owned by active entries on each lineage, accumulated in
    // pre-order (a parent always precedes its children).
    let decls = tree.decls(composition);
    let mut lineage_tools: Vec<Vec<&ToolName>> = vec![Vec::new(); n];
    let mut pairs: Vec<(&CapabilityName, usize)> = Vec::new();
    for ix in 0..n {
        let scope = tree.get(ix);
        let mut acc = match scope.parent {
            Some(p) if !lineage_tools[p].is_empty() => lineage_tools[p].clone(),
            _ => Vec::new(),
        };
        let mine = &in_scope[start[ix]..start[ix + 1]];
        let ids = shared_names(&empty, mine.iter().map(|&e| facts.entries[e].id.as_arc()));
        pairs.clear();
        for &e in mine {
            let entry = facts.entries[e];
            if !facts.eligible[e] {
                continue;
            }
            for t in &entry.manifest.tools {
                acc.push(&t.name);
            }
            for cap in entry.manifest.provides.keys() {
                if tree.exposes(ix, cap) {
                    pairs.push((cap, e));
                }
            }
        }
        // Providers by capability, each list in entry id order (stable sort:
        // entries were visited in id order).
        pairs.sort_by(|a, b| a.0.cmp(b.0));
        // Each list is allocated once, at its length (most capabilities
        // have a single local provider).
        let mut providers: Vec<(Arc<str>, ProviderIds)> = Vec::new();
        let mut instances: Vec<(Arc<str>, ProviderIds)> = Vec::new();
        for group in pairs.chunk_by(|a, b| a.0 == b.0) {
            let cap = Arc::clone(group[0].0.as_arc());
            let ids: ProviderIds = group
                .iter()
                .map(|&(_, e)| Arc::clone(facts.entries[e].id.as_arc()))
                .collect();
            // Providers listed here are active (they have a place in the
            // activation order), so each has an instance id.
            let instance = |&(_, e): &(&CapabilityName, usize)| {
                facts.position[e].map(|_| instance(&facts.entries[e].id))
            };
            let iids: ProviderIds = match group {
                [one] => instance(one).into_iter().collect(),
                _ => {
                    let mut list: Vec<Arc<str>> = group.iter().filter_map(instance).collect();
                    list.sort();
                    list.into()
                }
            };
            providers.push((Arc::clone(&cap), ids));
            instances.push((cap, iids));
        }
        let mut visible: Vec<&Arc<str>> = acc
            .iter()
            .filter(|t| {
                scope
                    .tools
                    .as_ref()
                    .is_none_or(|v| v.iter().any(|x| x.as_str() == t.as_str()))
            })
            .map(|t| t.as_arc())
            .collect();
        visible.sort();
        visible.dedup();
        let visible = shared_names(&empty, visible.into_iter());
        lineage_tools[ix] = acc;
        let decl = decls[ix];
        let selections: Arc<[SelectionRow]> = rows_of[row_start[ix]..row_start[ix + 1]]
            .iter()
            .map(|&ri| row(&plan.resolutions[ri]))
            .collect();
        let sem = ScopeRow {
            path: Arc::clone(scope.path.as_arc()),
            parent: scope.parent.map(|p| Arc::clone(tree.get(p).path.as_arc())),
            children: shared_names(
                &empty,
                scope.children.iter().map(|&c| tree.get(c).path.as_arc()),
            ),
            capabilities: scope
                .capabilities
                .as_ref()
                .map(|v| shared_names(&empty, v.iter().map(|c| c.as_arc()))),
            tools: decl
                .and_then(|d| d.tools.as_ref())
                .map(|v| shared_names(&empty, v.iter().map(|t| t.as_arc()))),
            entries: ids,
            providers: providers.into_iter().collect(),
            visible_tools: visible,
            selections,
        };
        let phys = ScopeRow {
            path: Arc::clone(&sem.path),
            parent: sem.parent.clone(),
            children: Arc::clone(&sem.children),
            capabilities: sem.capabilities.clone(),
            tools: sem.tools.clone(),
            entries: Arc::clone(&sem.entries),
            providers: instances.into_iter().collect(),
            visible_tools: Arc::clone(&sem.visible_tools),
            selections: Arc::clone(&sem.selections),
        };
        sink(sem, phys);
    }
}

/// Per active `mcp` entry, the locked server it runs against
/// (`server_name`, `server_version`, `protocol_version`): part of what a
/// run executed against, so it is in the snapshot (and its full digest).
/// Whether `entry` runs against an MCP server (its manifest says which).
fn is_mcp(entry: &Entry) -> bool {
    entry.manifest.kind.as_deref() == Some(crate::engine::builtin::mcp::KIND.name)
}

/// Per active process plugin, the program it runs: argv and the SHA-256
/// of each of its files. Editing `plugin.py` changes what a run executes,
/// so it changes the snapshot (and its digests) like a configuration does.
fn process_plugins(active: &[&Entry]) -> Option<Canon> {
    let programs: BTreeMap<String, Canon> = active
        .iter()
        .filter_map(|e| {
            let p = e.manifest.process.as_ref()?;
            Some((e.id.to_string(), p.fingerprint()))
        })
        .collect();
    (!programs.is_empty()).then_some(Canon::Map(programs))
}

fn mcp_servers(active: &[&Entry]) -> Option<Canon> {
    let servers: BTreeMap<String, Canon> = active
        .iter()
        .filter(|e| is_mcp(e))
        .filter_map(|e| {
            let fields: BTreeMap<String, Canon> =
                ["server_name", "server_version", "protocol_version"]
                    .iter()
                    .filter_map(|k| match e.manifest.metadata.get(&format!("mcp.{k}")) {
                        Some(crate::engine::model::ConfigValue::Str(v)) => {
                            Some(((*k).to_owned(), Canon::Str(v.clone())))
                        }
                        _ => None,
                    })
                    .collect();
            (!fields.is_empty()).then(|| (e.id.to_string(), Canon::Map(fields)))
        })
        .collect();
    (!servers.is_empty()).then_some(Canon::Map(servers))
}
