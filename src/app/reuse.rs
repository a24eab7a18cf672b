//! How a node changed between two stored generations: reused, rebuilt or
//! rewired, and which parts of its identity changed (`explain reuse`, and
//! the NODES section of a `diff` of two stored generations).

use crate::engine::diag::did_you_mean;
use crate::runtime::identity::{Decision, changes};
use crate::store::{StoredGeneration, StoredIdentity};

use super::error::{AppError, Problem};
use super::state::StoreSelection;

/// How one node changed between two stored generations.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct NodeChange {
    /// Entry id.
    pub entry_id: String,
    /// Reused, rebuilt, rewired, unchanged (a new instance of an unchanged
    /// identity), added, removed, or pending (still declared, not mounted:
    /// a requirement of it does not resolve).
    pub kind: Decision,

    /// Reasons (`config_changed`, …).
    pub reasons: Vec<String>,
    /// Old instance id.
    pub old_instance_id: Option<String>,
    /// New instance id.
    pub new_instance_id: Option<String>,
}

/// One part of a node's identity, compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdentityPart {
    /// `implementation`, `contracts`, `config`, `scope`, `dependencies`.
    pub name: &'static str,
    /// Whether it is the same in both.
    pub same: bool,
    /// The reason a change of it gives (`config_changed`).
    pub reason: &'static str,
}

/// `explain reuse`: one node between two generations.
pub struct ReuseReport {
    /// The older generation, as named.
    pub old: String,
    /// The newer generation, as named.
    pub new: String,
    /// How the node changed.
    pub change: NodeChange,
    /// Its identity parts, when it is in both.
    pub parts: Option<[IdentityPart; 5]>,
}

impl ReuseReport {
    /// The document of `chassis explain reuse --format json` (and of
    /// `GET /v1/explain/reuse`).
    pub fn document(&self) -> serde_json::Value {
        let mut doc = serde_json::to_value(&self.change).unwrap_or_default();
        doc["format_version"] = 1.into();
        doc["old_generation_id"] = self.old.clone().into();
        doc["new_generation_id"] = self.new.clone().into();
        if let Some(parts) = &self.parts {
            doc["identity"] = parts
                .iter()
                .map(|p| {
                    (
                        p.name.to_owned(),
                        serde_json::Value::from(if p.same { "same" } else { "changed" }),
                    )
                })
                .collect::<serde_json::Map<_, _>>()
                .into();
        }
        doc
    }
}

/// Compare `entry` in two generations.
pub fn node_change(
    old: &StoredGeneration,
    new: &StoredGeneration,
    entry: &str,
) -> Option<NodeChange> {
    let (a, b) = (old.node(entry), new.node(entry));
    let (kind, reasons) = match (a, b) {
        (None, None) => return None,
        (None, Some(_)) => (Decision::Added, vec!["entry_added".to_owned()]),
        (Some(_), None) => match pending_in(new, entry) {
            Some(statuses) => (Decision::Pending, statuses),
            None => (Decision::Removed, vec!["entry_removed".to_owned()]),
        },
        (Some(a), Some(b)) => {
            // The identity decides. Equal instance ids do not: an instance
            // id is derived from the entry id and a mount number counted
            // per lineage, so two lineages' nodes may share one whatever
            // their identities.
            let reasons = changes(&a.identity.to_identity(), &b.identity.to_identity());
            let kind = if reasons.is_empty() {
                if a.instance_id == b.instance_id {
                    Decision::Reused
                } else {
                    Decision::Unchanged
                }
            } else if reasons == ["dependency_changed"] {
                Decision::Rewired
            } else {
                Decision::Rebuilt
            };
            let reasons = if kind == Decision::Unchanged {
                vec!["instance_inactive"]
            } else {
                reasons
            };
            (kind, reasons.into_iter().map(str::to_owned).collect())
        }
    };
    Some(NodeChange {
        entry_id: entry.to_owned(),
        kind,
        reasons,
        old_instance_id: a.map(|n| n.instance_id.clone()),
        new_instance_id: b.map(|n| n.instance_id.clone()),
    })
}

/// The statuses of `entry`'s unresolved requirements in `generation`,
/// when it declares the entry but did not mount it (its snapshot lists the
/// entry's requirements; a removed entry has none).
fn pending_in(generation: &StoredGeneration, entry: &str) -> Option<Vec<String>> {
    let scopes = generation
        .snapshot
        .pointer("/snapshot/semantic_scopes/scopes")?
        .as_array()?;
    let mut statuses: Vec<String> = Vec::new();
    for row in scopes {
        let Some(selections) = row.get("selections").and_then(|s| s.as_array()) else {
            continue;
        };
        for sel in selections {
            if sel.get("consumer").and_then(|c| c.as_str()) != Some(entry) {
                continue;
            }
            if let Some(status) = sel.get("status").and_then(|s| s.as_str())
                && status != "resolved"
                && !statuses.iter().any(|s| s == status)
            {
                statuses.push(status.to_owned());
            }
        }
    }
    (!statuses.is_empty()).then_some(statuses)
}

/// Every node of either generation, by entry id.
pub fn node_changes(old: &StoredGeneration, new: &StoredGeneration) -> Vec<NodeChange> {
    let mut entries: Vec<&str> = old
        .nodes
        .iter()
        .chain(&new.nodes)
        .map(|n| n.entry_id.as_str())
        .collect();
    entries.sort_unstable();
    entries.dedup();
    entries
        .into_iter()
        .filter_map(|e| node_change(old, new, e))
        .collect()
}

fn parts(a: &StoredIdentity, b: &StoredIdentity) -> [IdentityPart; 5] {
    let part = |name, same, reason| IdentityPart { name, same, reason };
    [
        part(
            "implementation",
            a.implementation == b.implementation,
            "implementation_changed",
        ),
        part(
            "contracts",
            a.contracts == b.contracts,
            "capability_contract_changed",
        ),
        part("config", a.config == b.config, "config_changed"),
        part("scope", a.scope == b.scope, "scope_visibility_changed"),
        part(
            "dependencies",
            a.dependencies == b.dependencies,
            "dependency_changed",
        ),
    ]
}

/// Explain node `node` between generations `old` and `new` of the store
/// at `state` (default `.chassis/state.db` here).
pub fn explain_reuse(
    at: &StoreSelection,
    old: &str,
    new: &str,
    node: &str,
) -> Result<ReuseReport, AppError> {
    let store = at.open()?;
    let a = store.generation(old, at.composition.as_ref())?;
    let b = store.generation(new, at.composition.as_ref())?;
    let Some(change) = node_change(&a, &b, node) else {
        let mut known: Vec<&str> = a
            .nodes
            .iter()
            .chain(&b.nodes)
            .map(|n| n.entry_id.as_str())
            .collect();
        known.sort_unstable();
        known.dedup();
        let help = did_you_mean(node, known.iter().copied()).map_or_else(
            || format!("its nodes are {}", known.join(", ")),
            |s| format!("did you mean `{s}`?"),
        );
        return Err(
            Problem::input(format!("no node `{node}` in {old} or {new}"))
                .with_help(help)
                .into(),
        );
    };
    let parts = match (a.node(node), b.node(node)) {
        (Some(x), Some(y)) => Some(parts(&x.identity, &y.identity)),
        _ => None,
    };
    Ok(ReuseReport {
        old: old.to_owned(),
        new: new.to_owned(),
        change,
        parts,
    })
}
