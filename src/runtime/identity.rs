//! Semantic identity of a mounted node, and the impact of a reconcile.
//!
//! An instance is reused only when its identity is unchanged: the same
//! implementation, contracts, configuration (secret values included, once
//! secrets are resolved at mount), scope, and bindings to the same provider
//! *instances* — so a consumer of a rebuilt provider is rebuilt too.

use std::sync::Arc;

use serde::Serialize;

use crate::engine::canonical::{Canon, Sha256Writer, stable_hash, write_json_string};
use crate::engine::model::Entry;

/// What implements a node, as its identity names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Implementation<'a> {
    /// A kind or a name the catalog registers: which code runs.
    Named(&'a str),
    /// A manifest declared in the composition, run by the declared kind:
    /// what it is is its contents, so renaming its `[plugins]` table (the
    /// manifest's name) changes nothing.
    Declared,
}

/// The parts of an identity, each hashed separately so an impact can say
/// which input changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NodeIdentity {
    /// Implementation: the catalog kind with the manifest's name and
    /// version, or for a declared manifest its version alone.
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
        implementation: Implementation<'_>,
        bindings: &[(String, String, String)],
        secrets: Option<&str>,
    ) -> Self {
        let (implementation, contracts) = manifest_hashes(entry, implementation);
        Self::with_manifest_hashes(entry, implementation, contracts, bindings, secrets)
    }

    /// [`Self::of`] with the implementation and contracts hashes of its
    /// manifest already computed.
    fn with_manifest_hashes(
        entry: &Entry,
        implementation: String,
        contracts: String,
        bindings: &[(String, String, String)],
        secrets: Option<&str>,
    ) -> Self {
        IdentityBasis::with_manifest_hashes(entry, implementation, contracts, secrets)
            .bind(bindings)
    }
}

/// A node identity but its bindings: what the entry alone decides. Bases
/// are independent of each other, so a `plan` of 100,000 entries computes
/// them on both cores, then binds each in activation order (a binding
/// names its provider's instance, decided just before).
#[derive(Clone, Debug)]
pub struct IdentityBasis {
    implementation: String,
    contracts: String,
    config: String,
    scope: String,
}

impl IdentityBasis {
    fn with_manifest_hashes(
        entry: &Entry,
        implementation: String,
        contracts: String,
        secrets: Option<&str>,
    ) -> Self {
        Self {
            implementation,
            contracts,
            config: config_hash(entry, secrets),
            scope: entry.scope.value.to_string(),
        }
    }

    /// The identity with `bindings`.
    pub fn bind(self, bindings: &[(String, String, String)]) -> NodeIdentity {
        let h = |c: Canon| stable_hash(&c).unwrap_or_default();
        NodeIdentity {
            implementation: self.implementation,
            contracts: self.contracts,
            config: self.config,
            scope: self.scope,
            dependencies: h(Canon::List(
                bindings
                    .iter()
                    .map(|(c, i, v)| Canon::list([c.as_str(), i.as_str(), v.as_str()]))
                    .collect(),
            )),
        }
    }
}

/// The hash of `entry`'s unredacted configuration (with `secrets`, the
/// fingerprint of its secret values, as `[config, secrets]`), written
/// straight into the hasher; empty when it cannot be written (a value that
/// is not finite), as the tree it replaces hashed.
fn config_hash(entry: &Entry, secrets: Option<&str>) -> String {
    use std::fmt::Write as _;
    let mut hasher = Sha256Writer::new();
    let written = match secrets {
        None => entry.config.write_unredacted(&mut hasher),
        Some(fp) => (|| {
            hasher.write_char('[')?;
            entry.config.write_unredacted(&mut hasher)?;
            hasher.write_char(',')?;
            write_json_string(fp, &mut hasher)?;
            hasher.write_char(']')?;
            Ok(())
        })(),
    };
    match written {
        Ok(()) => hasher.finish_hex(),
        Err(_) => String::new(),
    }
}

/// The implementation and contracts hashes of `entry`'s node identity:
/// what its manifest (and the implementation running it) alone decides.
fn manifest_hashes(entry: &Entry, implementation: Implementation<'_>) -> (String, String) {
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
    let implementation = match implementation {
        Implementation::Named(kind) => match &m.process {
            // A process plugin is its argv and its files' contents:
            // editing `plugin.py` rebuilds the instance.
            Some(p) => h(Canon::list([
                Canon::from(kind),
                Canon::from(m.identity()),
                p.fingerprint(),
            ])),
            None => h(Canon::list([Canon::from(kind), Canon::from(m.identity())])),
        },
        Implementation::Declared => h(Canon::list([
            Canon::from("declared"),
            Canon::from(m.version.to_string()),
        ])),
    };
    let contracts = h(Canon::map([
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
                                t.args_schema.as_ref().map_or(Canon::Null, Canon::from_json),
                            ),
                        ])
                    })
                    .collect(),
            ),
        ),
    ]));
    (implementation, contracts)
}

/// The implementation and contracts hashes of node identities by
/// manifest, while the manifests live: entries that share a manifest (the
/// 100,000 consumers of one `[plugins.X]` of a fan) hash it once per
/// reconcile or plan instead of once each.
#[derive(Default)]
pub struct ManifestHashes {
    by_manifest: std::collections::HashMap<usize, Hashed>,
}

/// One manifest's hashes, with the manifest (kept alive, so its address
/// names no other while this is held), per implementation running it
/// (almost always one).
struct Hashed {
    manifest: Arc<crate::engine::model::Manifest>,
    by_implementation: Vec<(Option<String>, (String, String))>,
}

impl ManifestHashes {
    /// [`NodeIdentity::of`], hashing each manifest once per implementation.
    pub fn identity(
        &mut self,
        entry: &Entry,
        implementation: Implementation<'_>,
        bindings: &[(String, String, String)],
        secrets: Option<&str>,
    ) -> NodeIdentity {
        self.basis(entry, implementation, secrets).bind(bindings)
    }

    /// [`Self::identity`] but its bindings.
    pub fn basis(
        &mut self,
        entry: &Entry,
        implementation: Implementation<'_>,
        secrets: Option<&str>,
    ) -> IdentityBasis {
        let named = match implementation {
            Implementation::Named(kind) => Some(kind),
            Implementation::Declared => None,
        };
        let key = Arc::as_ptr(&entry.manifest) as usize;
        let hashed = self.by_manifest.entry(key).or_insert_with(|| Hashed {
            manifest: Arc::clone(&entry.manifest),
            by_implementation: Vec::new(),
        });
        // Held, the manifest keeps its address; checked all the same.
        if !Arc::ptr_eq(&hashed.manifest, &entry.manifest) {
            *hashed = Hashed {
                manifest: Arc::clone(&entry.manifest),
                by_implementation: Vec::new(),
            };
        }
        let found = hashed
            .by_implementation
            .iter()
            .find(|(i, _)| i.as_deref() == named)
            .map(|(_, h)| h.clone());
        let (implementation, contracts) = match found {
            Some(h) => h,
            None => {
                let h = manifest_hashes(entry, implementation);
                hashed
                    .by_implementation
                    .push((named.map(str::to_owned), h.clone()));
                h
            }
        };
        IdentityBasis::with_manifest_hashes(entry, implementation, contracts, secrets)
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
    /// Still declared, but not mounted: a hard requirement of it does not
    /// resolve (its provider was removed or is pending). The reasons are
    /// the requirements' statuses.
    Pending,
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

/// Every node's impact of one reconcile, sorted by entry id.
///
/// A reconcile that changes one entry of 10,000 keeps 9,999 instances: those
/// rows say only "reused, same instance". They are kept as the entry →
/// instance map the harness holds anyway (persistent, so holding it here
/// copies a pointer) and written out when read, instead of as 10,000 rows
/// built on every reload whether anyone reads them or not.
#[derive(Clone, Debug, Default)]
pub struct NodeImpacts {
    /// The entries a decision was taken for (placed, added, removed), sorted
    /// by entry id.
    decided: Vec<NodeImpact>,
    /// Entry id → instance id: every entry of `kept` not in `decided` was
    /// reused with that instance.
    kept: imbl::OrdMap<Arc<str>, Arc<str>>,
}

impl NodeImpacts {
    /// Impacts listed one by one (sorted by entry id here).
    #[must_use]
    pub fn from_sorted(decided: Vec<NodeImpact>) -> Self {
        debug_assert!(decided.is_sorted_by(|a, b| a.entry_id <= b.entry_id));
        Self {
            decided,
            kept: imbl::OrdMap::new(),
        }
    }

    /// `decided` (sorted by entry id, one row per entry), and every other
    /// entry of `kept` reused with its instance there.
    #[must_use]
    pub(crate) fn with_kept(
        decided: Vec<NodeImpact>,
        kept: imbl::OrdMap<Arc<str>, Arc<str>>,
    ) -> Self {
        // Strictly sorted: one row per entry (the counts rely on it).
        debug_assert!(decided.is_sorted_by(|a, b| a.entry_id < b.entry_id));
        Self { decided, kept }
    }

    /// Every node's impact, in entry id order.
    pub fn iter(&self) -> impl Iterator<Item = NodeImpact> + '_ {
        let mut decided = self.decided.iter().peekable();
        let mut kept = self.kept.iter().peekable();
        std::iter::from_fn(move || match (decided.peek(), kept.peek()) {
            (Some(d), Some((e, _))) if d.entry_id <= **e => {
                if d.entry_id == **e {
                    kept.next();
                }
                decided.next().cloned()
            }
            (_, Some(_)) => kept
                .next()
                .map(|(e, i)| NodeImpact::reused(Arc::clone(e), Arc::clone(i))),
            (Some(_), None) => decided.next().cloned(),
            (None, None) => None,
        })
    }

    /// Every node's impact, in entry id order, as a list.
    #[must_use]
    pub fn to_vec(&self) -> Vec<NodeImpact> {
        self.iter().collect()
    }

    /// How many nodes took `decision`.
    #[must_use]
    pub fn count(&self, decision: Decision) -> usize {
        let decided = self
            .decided
            .iter()
            .filter(|i| i.decision == decision)
            .count();
        if decision != Decision::Reused {
            return decided;
        }
        decided + self.reused_kept()
    }

    /// How many entries of `kept` were not decided for (each reused).
    fn reused_kept(&self) -> usize {
        let decided_too = self
            .decided
            .iter()
            .filter(|i| self.kept.contains_key(&*i.entry_id))
            .count();
        self.kept.len() - decided_too
    }

    /// The number of nodes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.decided.len() + self.reused_kept()
    }

    /// Whether there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.decided.is_empty() && self.kept.is_empty()
    }

    /// The entries whose instances were reused, in entry id order.
    #[must_use]
    pub fn reused(&self) -> Vec<Arc<str>> {
        self.iter()
            .filter(|i| i.decision == Decision::Reused)
            .map(|i| i.entry_id)
            .collect()
    }
}

impl PartialEq for NodeImpacts {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for NodeImpacts {}

impl Serialize for NodeImpacts {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn decided(
        entry: &str,
        decision: Decision,
        old: Option<&str>,
        new: Option<&str>,
    ) -> NodeImpact {
        NodeImpact {
            entry_id: entry.into(),
            decision,
            reasons: vec!["config_changed"],
            old_instance_id: old.map(Into::into),
            new_instance_id: new.map(Into::into),
        }
    }

    /// Decided rows win over kept ones, everything comes out in entry id
    /// order, and the counts agree with the listed rows.
    #[test]
    fn decided_rows_merge_into_the_kept_map() {
        let kept: imbl::OrdMap<Arc<str>, Arc<str>> = [("b", "i_b"), ("d", "i_d"), ("f", "i_f")]
            .into_iter()
            .map(|(e, i)| (Arc::from(e), Arc::from(i)))
            .collect();
        let rows = vec![
            decided("a", Decision::Added, None, Some("i_a2")),
            decided("d", Decision::Rebuilt, Some("i_d"), Some("i_d2")),
            decided("g", Decision::Removed, Some("i_g"), None),
        ];
        let impacts = NodeImpacts::with_kept(rows.clone(), kept);
        let listed = impacts.to_vec();
        let order: Vec<(&str, Decision)> =
            listed.iter().map(|i| (&*i.entry_id, i.decision)).collect();
        assert_eq!(
            order,
            [
                ("a", Decision::Added),
                ("b", Decision::Reused),
                ("d", Decision::Rebuilt),
                ("f", Decision::Reused),
                ("g", Decision::Removed),
            ]
        );
        assert_eq!(listed[1], NodeImpact::reused("b".into(), "i_b".into()));
        assert_eq!(listed[2], rows[1]);
        assert_eq!(impacts.len(), 5);
        assert_eq!(impacts.count(Decision::Reused), 2);
        assert_eq!(impacts.count(Decision::Rebuilt), 1);
        assert_eq!(impacts.count(Decision::Removed), 1);
        assert_eq!(impacts.reused(), [Arc::<str>::from("b"), "f".into()]);
        // Equal to the same rows listed one by one; serialized as a list.
        let listed_again = NodeImpacts::from_sorted(listed.clone());
        assert_eq!(impacts, listed_again);
        assert_eq!(
            serde_json::to_value(&impacts).unwrap(),
            serde_json::to_value(&listed).unwrap()
        );
        assert!(NodeImpacts::default().is_empty());
        assert_eq!(NodeImpacts::default().len(), 0);
    }

    /// Two plugins, one consumed by three entries (sharing its manifest),
    /// a tool and a process-free named kind among them.
    fn composition() -> crate::engine::model::Composition {
        let text = "version = 1\n\n\
            [plugins.db]\nversion = \"1.4.2\"\nprovides = { database = \"1.4.2\" }\n\n\
            [plugins.app]\nversion = \"1.0.0\"\nrequires = { database = \">=1,<2\" }\n\
            [[plugins.app.tools]]\nname = \"lookup\"\ndescription = \"Look up.\"\nresult = \"r\"\n\n\
            [entries.db]\nconfig = { n = 0 }\n\n\
            [entries.a1]\nplugin = \"app\"\nconfig = { n = 1 }\n\n\
            [entries.a2]\nplugin = \"app\"\nconfig = { n = 2 }\n\n\
            [entries.a3]\nplugin = \"app\"\n";
        crate::load::load_str("composition.toml", text)
            .composition
            .expect("loads")
    }

    /// The memo gives every entry exactly the identity computed afresh,
    /// whatever order entries and implementations come in, and hashes a
    /// shared manifest once.
    #[test]
    fn manifest_hashes_give_the_identities_computed_afresh() {
        let c = composition();
        let bindings = vec![("database".to_owned(), "db#1".to_owned(), "1.4.2".to_owned())];
        let mut hashes = ManifestHashes::default();
        let cases = [
            ("a1", Implementation::Declared),
            ("db", Implementation::Declared),
            ("a2", Implementation::Declared),
            ("a3", Implementation::Named("app")),
            ("a1", Implementation::Named("other")),
            ("a2", Implementation::Declared),
            ("a3", Implementation::Named("app")),
        ];
        for (id, implementation) in cases {
            let entry = &c.entries[&crate::engine::model::EntryId::new(id).unwrap()];
            for secrets in [None, Some("fp")] {
                assert_eq!(
                    hashes.identity(entry, implementation, &bindings, secrets),
                    NodeIdentity::of(entry, implementation, &bindings, secrets),
                    "{id} {implementation:?}"
                );
            }
        }
        // One manifest per plugin table: a1, a2 and a3 share app's.
        assert_eq!(hashes.by_manifest.len(), 2);
        // db's declared; app's declared, named `app` and named `other`.
        let hashed: usize = hashes
            .by_manifest
            .values()
            .map(|h| h.by_implementation.len())
            .sum();
        assert_eq!(hashed, 4);
        // A changed manifest is another manifest (its own hashes).
        let mut changed = c.entries[&crate::engine::model::EntryId::new("a1").unwrap()].clone();
        let mut manifest = (*changed.manifest).clone();
        manifest.permissions.push("net".to_owned());
        changed.manifest = Arc::new(manifest);
        let afresh = NodeIdentity::of(&changed, Implementation::Declared, &bindings, None);
        assert_eq!(
            hashes.identity(&changed, Implementation::Declared, &bindings, None),
            afresh
        );
        let before = NodeIdentity::of(
            &c.entries[&crate::engine::model::EntryId::new("a1").unwrap()],
            Implementation::Declared,
            &bindings,
            None,
        );
        assert_ne!(afresh.contracts, before.contracts);
    }

    /// `sees_as` is `view` then `==`, part by part.
    #[test]
    fn a_seed_sees_an_identity_as_its_view_compares() {
        let c = composition();
        let entry = &c.entries[&crate::engine::model::EntryId::new("a1").unwrap()];
        let identity = NodeIdentity::of(entry, Implementation::Declared, &[], None);
        let keyed = crate::runtime::harness::SeedState {
            config_fingerprint: Some(Arc::new(|v: &str| format!("k:{v}"))),
            ..Default::default()
        };
        for seed in [crate::runtime::harness::SeedState::default(), keyed] {
            let stored = seed.view(&identity);
            assert!(seed.sees_as(&identity, &stored));
            let parts: [fn(&mut NodeIdentity); 5] = [
                |i| i.implementation.push('x'),
                |i| i.contracts.push('x'),
                |i| i.config.push('x'),
                |i| i.scope.push('x'),
                |i| i.dependencies.push('x'),
            ];
            for change in parts {
                let mut other = stored.clone();
                change(&mut other);
                assert_eq!(
                    seed.sees_as(&identity, &other),
                    seed.view(&identity) == other
                );
                assert!(!seed.sees_as(&identity, &other));
            }
        }
    }

    /// The configuration hash written straight into the hasher is the hash
    /// of the tree it replaced, with and without a secrets fingerprint.
    #[test]
    fn the_config_hash_is_the_canon_trees() {
        use crate::engine::model::{ConfigValue, SecretRef};
        let c = composition();
        let mut entry = c.entries.values().next().unwrap().clone();
        let table = |items: Vec<(&str, ConfigValue)>| {
            ConfigValue::Table(items.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
        };
        for config in [
            ConfigValue::empty_table(),
            table(vec![
                (
                    "api_key",
                    ConfigValue::Secret(SecretRef { name: "KEY".into() }),
                ),
                ("password", ConfigValue::Str("not \"redacted\" here".into())),
                ("ratio", ConfigValue::Float(0.25)),
                (
                    "list",
                    ConfigValue::Array(vec![ConfigValue::Int(-3), table(vec![])]),
                ),
                ("when", ConfigValue::Datetime("1979-05-27T07:32:00Z".into())),
            ]),
        ] {
            entry.config = Arc::new(config);
            for fp in [None, Some("fp-1")] {
                let tree = match fp {
                    None => entry.config.to_canon_unredacted(),
                    Some(fp) => Canon::list([entry.config.to_canon_unredacted(), Canon::from(fp)]),
                };
                assert_eq!(config_hash(&entry, fp), stable_hash(&tree).unwrap());
            }
        }
        entry.config = Arc::new(table(vec![("x", ConfigValue::Float(f64::NAN))]));
        assert_eq!(config_hash(&entry, None), "");
    }
}
