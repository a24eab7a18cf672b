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

use super::record::{SNAPSHOT_FORMAT_VERSION, SnapshotRecord};
use super::scopes::{ScopeRow, ScopesFingerprint, SelectionRow};
use crate::engine::canonical::{
    Canon, CanonError, Sha256Writer, stable_hash, write_canonical, write_json_string,
};
use crate::engine::identity::{GenerationId, instance_id};
use crate::engine::model::{Composition, Entry, EntryId, Requirement};
use crate::engine::redact::redact_for_hash;
use crate::engine::resolve::{Consumer, Plan, Status};
use crate::engine::tree::{ScopeIx, ScopeTree};

/// The version of this chassis, recorded in every snapshot.
pub const CHASSIS_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Facts a snapshot needs that are not in the composition.
#[derive(Clone, Debug)]
pub struct SnapshotContext {
    /// The generation the snapshot describes.
    pub generation: GenerationId,
    /// Mount number of each entry in its store (1 when absent: a fresh store).
    pub mounts: BTreeMap<EntryId, u64>,
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
            mounts: BTreeMap::new(),
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
    let mut tools: Vec<(&str, &str, Canon)> = Vec::new();
    for e in active {
        for t in &e.manifest.tools {
            let args = t.args_schema.as_ref().map_or(Canon::Null, Canon::from_json);
            tools.push((t.name.as_str(), t.description.as_str(), args));
        }
    }
    tools.sort_by(|a, b| a.0.cmp(b.0));
    let list = tools
        .into_iter()
        .map(|(name, description, args)| {
            Canon::map([
                ("name", Canon::from(name)),
                ("description", Canon::from(description)),
                ("args", args),
            ])
        })
        .collect();
    stable_hash(&Canon::List(list))
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

/// Build the snapshot of `composition` resolved as `plan`.
pub fn build_snapshot(
    composition: &Composition,
    tree: &ScopeTree,
    plan: &Plan,
    ctx: &SnapshotContext,
) -> Result<SnapshotRecord, CanonError> {
    let facts = EntryFacts::new(composition, plan);
    // Active entries in activation order (ids the composition lacks are
    // skipped, but still get an instance id).
    let mut slots: Vec<Option<&Entry>> = vec![None; plan.activation_order.len()];
    for (e, p) in facts.entries.iter().zip(&facts.position) {
        if let Some(p) = *p {
            slots[p] = Some(e);
        }
    }
    let lined_up = slots.iter().all(Option::is_some);
    let active: Vec<&Entry> = if lined_up {
        slots.iter().flatten().copied().collect()
    } else {
        plan.activation_order
            .iter()
            .filter_map(|id| composition.entries.get(id))
            .collect()
    };
    let runtime_instance_ids: Vec<String> = plan
        .activation_order
        .iter()
        .map(|id| instance_id(id, ctx.mounts.get(id).copied().unwrap_or(1)))
        .collect();

    let mut plugins: BTreeMap<String, String> = BTreeMap::new();
    let mut capabilities: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in &active {
        // Later in activation order wins, as in the reference.
        let version = e.manifest.version.as_str();
        match plugins.get_mut(&e.manifest.name) {
            Some(v) if v == version => {}
            Some(v) => version.clone_into(v),
            None => {
                plugins.insert(e.manifest.name.clone(), version.to_owned());
            }
        }
        for (cap, p) in &e.manifest.provides {
            let versions = p.versions.iter().map(ToString::to_string);
            match capabilities.get_mut(cap.as_str()) {
                Some(list) => list.extend(versions),
                None => {
                    capabilities.insert(cap.to_string(), versions.collect());
                }
            }
        }
    }
    for versions in capabilities.values_mut() {
        versions.sort();
    }

    // Active entries sorted by id: when the plan lines up (the activation
    // order holds each eligible entry once), the eligible entries in
    // composition order.
    let by_id: Vec<&Entry> = if lined_up
        && facts
            .position
            .iter()
            .zip(&facts.eligible)
            .all(|(p, &e)| p.is_some() == e)
    {
        facts
            .entries
            .iter()
            .zip(&facts.eligible)
            .filter(|&(_, &e)| e)
            .map(|(e, _)| *e)
            .collect()
    } else {
        let mut sorted = active.clone();
        sorted.sort_by(|a, b| a.id.cmp(&b.id));
        sorted
    };
    // The configuration map has one key per id (a repeated id is the same
    // entry, so the same value).
    let mut unique = by_id.clone();
    unique.dedup_by(|a, b| a.id == b.id);

    let (semantic_scopes, scopes) =
        fingerprints(composition, tree, plan, &facts, &runtime_instance_ids);
    let (agent, agent_revision) = match &ctx.agent {
        Some((a, r)) => (Some(a.clone()), Some(r.clone())),
        None => (None, None),
    };
    Ok(SnapshotRecord {
        format_version: SNAPSHOT_FORMAT_VERSION,
        chassis_version: CHASSIS_VERSION.to_owned(),
        generation_id: ctx.generation.to_string(),
        sequence: ctx.generation.sequence(),
        agent_runtime: ctx.agent_runtime.clone(),
        agent,
        agent_revision,
        plugins,
        capabilities,
        config_hash: sorted_config_hash(&unique)?,
        plugin_graph_hash: sorted_graph_hash(&by_id, plan)?,
        graph_definition_hash: ctx.graph_definition_hash.clone(),
        tool_schema_hash: tool_schema_hash(&active)?,
        prompt_hash: ctx.prompt_hash.clone(),
        metadata: ctx.metadata.clone(),
        scopes,
        semantic_scopes,
        runtime_instance_ids,
    })
}

/// [`config_hash`] of entries sorted by id without duplicates, written
/// straight into the hasher.
fn sorted_config_hash(sorted: &[&Entry]) -> Result<String, CanonError> {
    let mut h = Sha256Writer::new();
    h.write_char('{')?;
    for (i, e) in sorted.iter().enumerate() {
        if i > 0 {
            h.write_char(',')?;
        }
        write_json_string(e.id.as_str(), &mut h)?;
        h.write_char(':')?;
        write_canonical(&redact_for_hash(&e.config.to_canon()), &mut h)?;
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
        write!(identity, "{}@{}", e.manifest.name, e.manifest.version)?;
        write_json_string(&identity, &mut h)?;
        h.write_char(']')?;
    }
    h.write_str("]}")?;
    Ok(h.finish_hex())
}

/// Rendered specifiers by clause list. Requirements cloned from one manifest
/// share their clause list (`Specifier` holds an `Arc`), so a composition of
/// many entries of few plugins renders each specifier once. The key is the
/// list's address and length: equal keys mean the same list while `plan` is
/// borrowed, and only the rendered text reaches the output.
#[derive(Default)]
struct SpecTexts {
    rendered: HashMap<(usize, usize), String>,
}

impl SpecTexts {
    /// `Requirement::render`: `<capability> <spec>` (`*` for any), then
    /// ` (optional)`.
    fn render(&mut self, r: &Requirement) -> String {
        let clauses = r.specifier.clauses();
        let key = (clauses.as_ptr() as usize, clauses.len());
        let spec = self.rendered.entry(key).or_insert_with(|| {
            if clauses.is_empty() {
                "*".to_owned()
            } else {
                r.specifier.to_string()
            }
        });
        let cap = r.capability.as_str();
        let suffix = if r.optional { " (optional)" } else { "" };
        let mut out = String::with_capacity(cap.len() + 1 + spec.len() + suffix.len());
        out.push_str(cap);
        out.push(' ');
        out.push_str(spec);
        out.push_str(suffix);
        out
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
    let by_path: HashMap<&str, ScopeIx> = tree
        .scopes()
        .iter()
        .enumerate()
        .map(|(i, s)| (s.path.as_str(), i))
        .collect();
    let entry_scope: Vec<Option<ScopeIx>> = facts
        .entries
        .iter()
        .map(|e| by_path.get(e.scope.value.as_str()).copied())
        .collect();
    let mut k = 0;
    let resolution_scope = plan
        .resolutions
        .iter()
        .map(|r| {
            if let Consumer::Entry(id) = &r.consumer {
                while k < facts.entries.len() && facts.entries[k].id < *id {
                    k += 1;
                }
                if let (Some(e), Some(ix)) = (facts.entries.get(k), entry_scope.get(k)) {
                    if e.id == *id && e.scope.value == r.scope {
                        return *ix;
                    }
                }
            }
            by_path.get(r.scope.as_str()).copied()
        })
        .collect();
    (entry_scope, resolution_scope)
}

/// Both scope fingerprints: by entry id and by instance id.
fn fingerprints(
    composition: &Composition,
    tree: &ScopeTree,
    plan: &Plan,
    facts: &EntryFacts<'_>,
    instance_ids: &[String],
) -> (ScopesFingerprint, ScopesFingerprint) {
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

    let mut texts = SpecTexts::default();
    let mut semantic_rows: Vec<Vec<SelectionRow>> = vec![Vec::new(); n];
    let mut physical_rows: Vec<Vec<SelectionRow>> = vec![Vec::new(); n];
    for (r, ix) in plan.resolutions.iter().zip(&resolution_scope) {
        let Some(ix) = *ix else { continue };
        let resolved = r.status == Status::Resolved;
        let selected = r.selected.as_ref().filter(|_| resolved);
        let row = SelectionRow {
            consumer: r.consumer.name().to_owned(),
            requirement: texts.render(&r.requirement),
            status: r.status.as_str().to_owned(),
            provider: selected.map(|s| s.entry.to_string()),
            provider_scope: selected.map(|s| s.scope.to_string()),
        };
        physical_rows[ix].push(row.clone());
        semantic_rows[ix].push(row);
    }

    // Tools owned by active entries on each lineage, accumulated in
    // pre-order (a parent always precedes its children).
    let mut lineage_tools: Vec<Vec<&str>> = vec![Vec::new(); n];
    let mut semantic = Vec::with_capacity(n);
    let mut physical = Vec::with_capacity(n);
    for ix in 0..n {
        let scope = tree.get(ix);
        let mut acc = match scope.parent {
            Some(p) if !lineage_tools[p].is_empty() => lineage_tools[p].clone(),
            _ => Vec::new(),
        };
        let mine = &in_scope[start[ix]..start[ix + 1]];
        let mut providers: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut instances: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut ids: Vec<String> = Vec::with_capacity(mine.len());
        for &e in mine {
            let entry = facts.entries[e];
            ids.push(entry.id.to_string());
            if !facts.eligible[e] {
                continue;
            }
            for t in &entry.manifest.tools {
                acc.push(t.name.as_str());
            }
            for cap in entry.manifest.provides.keys() {
                if !tree.exposes(ix, cap) {
                    continue;
                }
                let instance = facts.position[e].and_then(|p| instance_ids.get(p));
                match providers.get_mut(cap.as_str()) {
                    Some(list) => list.push(entry.id.to_string()),
                    None => {
                        providers.insert(cap.to_string(), vec![entry.id.to_string()]);
                    }
                }
                // Providers listed here are active, so each has an instance id.
                let list = match instances.get_mut(cap.as_str()) {
                    Some(list) => list,
                    None => instances.entry(cap.to_string()).or_default(),
                };
                list.extend(instance.cloned());
            }
        }
        for list in instances.values_mut() {
            list.sort();
        }
        let mut visible: Vec<String> = acc
            .iter()
            .filter(|t| {
                scope
                    .tools
                    .as_ref()
                    .is_none_or(|v| v.iter().any(|x| x.as_str() == **t))
            })
            .map(|t| (*t).to_owned())
            .collect();
        visible.sort();
        visible.dedup();
        lineage_tools[ix] = acc;
        let decl = composition.scopes.get(&scope.path);
        let row = |providers, selections, entries, visible_tools| ScopeRow {
            path: scope.path.to_string(),
            parent: scope.parent.map(|p| tree.get(p).path.to_string()),
            children: scope
                .children
                .iter()
                .map(|&c| tree.get(c).path.to_string())
                .collect(),
            capabilities: scope
                .capabilities
                .as_ref()
                .map(|v| v.iter().map(ToString::to_string).collect()),
            tools: decl
                .and_then(|d| d.tools.as_ref())
                .map(|v| v.iter().map(ToString::to_string).collect()),
            entries,
            providers,
            visible_tools,
            selections,
        };
        physical.push(row(
            instances,
            std::mem::take(&mut physical_rows[ix]),
            ids.clone(),
            visible.clone(),
        ));
        semantic.push(row(
            providers,
            std::mem::take(&mut semantic_rows[ix]),
            ids,
            visible,
        ));
    }
    (
        ScopesFingerprint {
            root: "/".into(),
            scopes: semantic,
        },
        ScopesFingerprint {
            root: "/".into(),
            scopes: physical,
        },
    )
}
