//! Semantic identity of a mounted node, and the impact of a reconcile.
//!
//! An instance is reused only when its identity is unchanged: the same
//! implementation, contracts, configuration (secret values included, once
//! secrets are resolved at mount), scope, and bindings to the same provider
//! *instances* — so a consumer of a rebuilt provider is rebuilt too.

use std::sync::Arc;

use serde::Serialize;

use crate::engine::canonical::{Canon, stable_hash};
use crate::engine::model::Entry;

/// The parts of an identity, each hashed separately so an impact can say
/// which input changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NodeIdentity {
    /// Implementation: catalog kind, manifest name and version.
    pub implementation: String,
    /// Contracts: provides, requires, optional, permissions, config_version.
    pub contracts: String,
    /// Configuration (unredacted; never emitted, only compared).
    #[serde(skip)]
    pub config: String,
    /// Scope path.
    pub scope: String,
    /// Bindings: `(capability, provider instance, version)`.
    pub dependencies: String,
}

impl NodeIdentity {
    /// The identity of `entry` mounted with `bindings`; `secrets` is the
    /// [`secret_fingerprint`] of its configuration's secret values (so a
    /// rotated secret rebuilds the node), `None` when it references none.
    pub fn of(
        entry: &Entry,
        kind: &str,
        bindings: &[(String, String, String)],
        secrets: Option<&str>,
    ) -> Self {
        let m = &entry.manifest;
        let h = |c: Canon| stable_hash(&c).unwrap_or_default();
        let provides = Canon::Map(
            m.provides
                .iter()
                .map(|(k, p)| {
                    (
                        k.to_string(),
                        Canon::List(p.versions.iter().map(|v| Canon::from(v.as_str())).collect()),
                    )
                })
                .collect(),
        );
        let requires = Canon::Map(
            m.requires
                .iter()
                .map(|(k, r)| {
                    (
                        k.to_string(),
                        Canon::list([
                            Canon::from(r.specifier.to_string()),
                            Canon::Bool(r.optional),
                        ]),
                    )
                })
                .collect(),
        );
        Self {
            implementation: h(Canon::list([Canon::from(kind), Canon::from(m.identity())])),
            contracts: h(Canon::map([
                ("provides", provides),
                ("requires", requires),
                (
                    "permissions",
                    Canon::list(m.permissions.iter().map(String::as_str)),
                ),
                ("config_version", Canon::Int(i128::from(m.config_version))),
                (
                    "tools",
                    Canon::List(
                        m.tools
                            .iter()
                            .map(|t| {
                                Canon::map([
                                    ("name", Canon::from(t.name.as_str())),
                                    ("description", Canon::from(t.description.as_str())),
                                    (
                                        "args",
                                        t.args_schema
                                            .as_ref()
                                            .map_or(Canon::Null, Canon::from_json),
                                    ),
                                ])
                            })
                            .collect(),
                    ),
                ),
            ])),
            config: match secrets {
                None => h(entry.config.to_canon_unredacted()),
                Some(fp) => h(Canon::list([
                    entry.config.to_canon_unredacted(),
                    Canon::from(fp),
                ])),
            },
            scope: entry.scope.value.to_string(),
            dependencies: h(Canon::List(
                bindings
                    .iter()
                    .map(|(c, i, v)| Canon::list([c.as_str(), i.as_str(), v.as_str()]))
                    .collect(),
            )),
        }
    }
}

/// A fingerprint of the values of the secrets `entry`'s configuration
/// references, as `secrets` resolves them now (a missing one counts as
/// missing: its mount fails anyway); `None` when it references none. Each
/// value is hashed before it is combined, and the result only ever enters
/// a node identity's `config`, which is compared, never emitted, and stored
/// only under the store's keyed fingerprint.
pub fn secret_fingerprint(
    entry: &Entry,
    secrets: &dyn crate::engine::secret::SecretProvider,
) -> Option<String> {
    let mut names: Vec<&str> = entry
        .config
        .secret_refs()
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    if names.is_empty() {
        return None;
    }
    names.sort_unstable();
    names.dedup();
    let items: Vec<Canon> = names
        .iter()
        .map(|name| {
            let value = secrets
                .get(name)
                .ok()
                .and_then(|v| stable_hash(&Canon::from(v.reveal())).ok());
            Canon::list([Canon::from(*name), value.map_or(Canon::Null, Canon::from)])
        })
        .collect();
    stable_hash(&Canon::List(items)).ok()
}

/// What a reconcile did with one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// New entry.
    Added,
    /// Entry gone.
    Removed,
    /// Same instance kept.
    Reused,
    /// Identical identity, new instance (e.g. retrying a failed one).
    Unchanged,
    /// Only its bindings changed; mounted afresh.
    Rewired,
    /// Implementation, contracts, configuration or scope changed.
    Rebuilt,
}

/// One node's impact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NodeImpact {
    /// Entry id.
    pub entry_id: Arc<str>,
    /// Decision.
    pub decision: Decision,
    /// Reasons (`config_changed`, `implementation_changed`, …).
    pub reasons: Vec<&'static str>,
    /// Old instance id.
    pub old_instance_id: Option<Arc<str>>,
    /// New instance id.
    pub new_instance_id: Option<Arc<str>>,
}

impl NodeImpact {
    /// An entry that keeps its instance.
    pub fn reused(entry_id: Arc<str>, instance_id: Arc<str>) -> Self {
        Self {
            entry_id,
            decision: Decision::Reused,
            reasons: vec![],
            old_instance_id: Some(instance_id.clone()),
            new_instance_id: Some(instance_id),
        }
    }
}

/// Compare an old and a new identity of the same entry.
pub fn changes(old: &NodeIdentity, new: &NodeIdentity) -> Vec<&'static str> {
    let mut out = Vec::new();
    if old.implementation != new.implementation {
        out.push("implementation_changed");
    }
    if old.contracts != new.contracts {
        out.push("capability_contract_changed");
    }
    if old.config != new.config {
        out.push("config_changed");
    }
    if old.scope != new.scope {
        out.push("scope_visibility_changed");
    }
    if old.dependencies != new.dependencies {
        out.push("dependency_changed");
    }
    out
}
