//! Building a snapshot record from a resolved composition.

use std::collections::BTreeMap;

use super::record::{SNAPSHOT_FORMAT_VERSION, SnapshotRecord};
use super::scopes::{ScopeRow, ScopesFingerprint, SelectionRow};
use crate::engine::canonical::{Canon, CanonError, stable_hash};
use crate::engine::identity::{GenerationId, instance_id};
use crate::engine::model::{Composition, Entry, EntryId};
use crate::engine::redact::redact_for_hash;
use crate::engine::resolve::{Plan, Status};
use crate::engine::tree::ScopeTree;

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

/// Build the snapshot of `composition` resolved as `plan`.
pub fn build_snapshot(
    composition: &Composition,
    tree: &ScopeTree,
    plan: &Plan,
    ctx: &SnapshotContext,
) -> Result<SnapshotRecord, CanonError> {
    let active: Vec<&Entry> = plan
        .activation_order
        .iter()
        .filter_map(|id| composition.entries.get(id))
        .collect();
    let instance_of = |id: &EntryId| instance_id(id, ctx.mounts.get(id).copied().unwrap_or(1));
    let runtime_instance_ids: Vec<String> = plan.activation_order.iter().map(instance_of).collect();
    // Instance ids of active entries, for the physical scope tree.
    let instances: std::collections::HashMap<&str, &str> = plan
        .activation_order
        .iter()
        .zip(&runtime_instance_ids)
        .map(|(id, inst)| (id.as_str(), inst.as_str()))
        .collect();

    let mut plugins = BTreeMap::new();
    let mut capabilities: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in &active {
        // Later in activation order wins, as in the reference.
        plugins.insert(e.manifest.name.clone(), e.manifest.version.to_string());
        for (cap, p) in &e.manifest.provides {
            capabilities
                .entry(cap.to_string())
                .or_default()
                .extend(p.versions.iter().map(ToString::to_string));
        }
    }
    for versions in capabilities.values_mut() {
        versions.sort();
    }

    let (semantic_scopes, scopes) = fingerprints(composition, tree, plan, &instances);
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
        config_hash: config_hash(&active)?,
        plugin_graph_hash: plugin_graph_hash(&active, plan)?,
        graph_definition_hash: ctx.graph_definition_hash.clone(),
        tool_schema_hash: tool_schema_hash(&active)?,
        prompt_hash: ctx.prompt_hash.clone(),
        metadata: ctx.metadata.clone(),
        scopes,
        semantic_scopes,
        runtime_instance_ids,
    })
}

/// Both scope fingerprints: by entry id and by instance id.
fn fingerprints(
    composition: &Composition,
    tree: &ScopeTree,
    plan: &Plan,
    instances: &std::collections::HashMap<&str, &str>,
) -> (ScopesFingerprint, ScopesFingerprint) {
    let table = tree.lookup_table();
    let find = |p| {
        table
            .binary_search_by(|(q, _)| (*q).cmp(p))
            .map(|i| table[i].1)
            .ok()
    };
    let n = tree.len();
    let mut entries: Vec<Vec<&Entry>> = vec![Vec::new(); n];
    for e in composition.entries.values() {
        if let Some(ix) = find(&e.scope.value) {
            entries[ix].push(e);
        }
    }
    let mut selections: Vec<Vec<SelectionRow>> = vec![Vec::new(); n];
    for r in &plan.resolutions {
        let Some(ix) = find(&r.scope) else { continue };
        let resolved = r.status == Status::Resolved;
        selections[ix].push(SelectionRow {
            consumer: r.consumer.name().to_owned(),
            requirement: r.requirement.render(),
            status: r.status.as_str().to_owned(),
            provider: r
                .selected
                .as_ref()
                .filter(|_| resolved)
                .map(|s| s.entry.to_string()),
            provider_scope: r
                .selected
                .as_ref()
                .filter(|_| resolved)
                .map(|s| s.scope.to_string()),
        });
    }
    // Tools owned by active entries on each lineage, accumulated in
    // pre-order (a parent always precedes its children).
    let mut lineage_tools: Vec<Vec<&str>> = vec![Vec::new(); n];
    let mut semantic = Vec::with_capacity(n);
    let mut physical = Vec::with_capacity(n);
    for ix in 0..n {
        let scope = tree.get(ix);
        let mut acc = scope
            .parent
            .map(|p| lineage_tools[p].clone())
            .unwrap_or_default();
        let mut providers: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut ids: Vec<String> = Vec::with_capacity(entries[ix].len());
        for e in &entries[ix] {
            ids.push(e.id.to_string());
            if !plan.is_eligible(&e.id) {
                continue;
            }
            for t in &e.manifest.tools {
                acc.push(t.name.as_str());
            }
            for cap in e.manifest.provides.keys() {
                if tree.exposes(ix, cap) {
                    providers
                        .entry(cap.to_string())
                        .or_default()
                        .push(e.id.to_string());
                }
            }
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
        let row = ScopeRow {
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
            entries: ids,
            providers,
            visible_tools: visible,
            selections: std::mem::take(&mut selections[ix]),
        };
        let mut phys = row.clone();
        for list in phys.providers.values_mut() {
            // Providers listed here are active, so each has an instance id.
            *list = list
                .iter()
                .filter_map(|id| instances.get(id.as_str()))
                .map(|i| (*i).to_owned())
                .collect();
            list.sort();
        }
        semantic.push(row);
        physical.push(phys);
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
