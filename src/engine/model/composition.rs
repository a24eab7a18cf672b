//! A whole composition: scopes, entries and provider preferences.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::config::ConfigValue;
use super::ids::{CapabilityName, EntryId, ScopePath};
use super::manifest::Manifest;
use super::scope::ScopeDecl;
use crate::engine::span::{Located, Origin};

/// A reference to an entry by id, remembering where the reference was written.
pub type EntryRef = Located<EntryId>;

/// One plugin entry: an implementation placed in a scope with a configuration.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Stable id.
    pub id: EntryId,
    /// The catalog name of the implementation (`plugin = "postgres"`).
    pub plugin: Located<String>,
    /// The implementation's manifest.
    pub manifest: Arc<Manifest>,
    /// The scope the entry is placed in.
    pub scope: Located<ScopePath>,
    /// Configuration table (possibly with secret references).
    pub config: Arc<ConfigValue>,
    /// Preferences for this entry's own requirements (consumer level).
    pub prefer: BTreeMap<CapabilityName, EntryRef>,
    /// Where the entry was declared.
    pub origin: Option<Origin>,
}

eq_but_origin!(Entry {
    id,
    plugin,
    manifest,
    scope,
    config,
    prefer
});

impl Entry {
    /// An entry at the root scope with an empty configuration.
    pub fn new(id: EntryId, manifest: Arc<Manifest>) -> Self {
        Self {
            plugin: Located::bare(manifest.name.clone()),
            id,
            manifest,
            scope: Located::bare(ScopePath::root()),
            config: Arc::new(ConfigValue::empty_table()),
            prefer: BTreeMap::new(),
            origin: None,
        }
    }

    /// Place the entry in `scope`.
    pub fn in_scope(mut self, scope: ScopePath) -> Self {
        self.scope = Located::bare(scope);
        self
    }
}

/// Provider preferences that apply everywhere (`[prefer]`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Preferences {
    /// Capability → preferred provider entry, for every consumer.
    pub global: BTreeMap<CapabilityName, EntryRef>,
}

/// A validated composition.
///
/// Invariants: the root scope exists; every scope's parent exists; every
/// enabled entry's scope exists. Disabled entries are absent from `entries`
/// and listed in `disabled` so reports can say why. Equality ignores where
/// anything was declared, as for every model type (`eq_but_origin!`).
#[derive(Clone, Debug)]
pub struct Composition {
    /// Scopes by path (sorted, so iteration is deterministic).
    pub scopes: BTreeMap<ScopePath, ScopeDecl>,
    /// Enabled entries by id.
    pub entries: BTreeMap<EntryId, Entry>,
    /// Disabled entries by id, with where they were declared.
    pub disabled: BTreeMap<EntryId, Option<Origin>>,
    /// Global preferences.
    pub preferences: Preferences,
    /// The declared `[policy]`, if any.
    pub policy: Option<super::policy::PolicyDecl>,
    /// Declared agents by name (each also owns a scope in `scopes`).
    pub agents: BTreeMap<String, super::agent::AgentDecl>,
    /// `enabled_if` conditions of entries, evaluated at the edge.
    pub conditions: BTreeMap<EntryId, super::condition::Condition>,
    /// Entries left out because their condition did not hold.
    pub skipped: BTreeMap<EntryId, super::condition::SkippedEntry>,
    /// Entries with `on_failure = "skip"`: a failed setup quarantines the
    /// entry (its consumers go pending) instead of failing the publication.
    pub skip_on_failure: std::collections::BTreeSet<EntryId>,
    /// Entries quarantined by a failed setup, with the failure kind.
    pub quarantined: BTreeMap<EntryId, String>,
    /// Host settings (`[store]`): they configure the process, not the
    /// composition, so equality ignores them.
    pub host: super::host::HostSettings,
}

impl PartialEq for Composition {
    fn eq(&self, other: &Self) -> bool {
        self.entries == other.entries && self.same_but_entries(other)
    }
}

impl Composition {
    /// Whether `self` equals `other` in everything but `entries` (which a
    /// caller compares its own way). Every field is named, so a new one
    /// cannot be missed; disabled entries compare by id.
    pub fn same_but_entries(&self, other: &Self) -> bool {
        let Self {
            scopes,
            entries: _,
            disabled,
            preferences,
            policy,
            agents,
            conditions,
            skipped,
            skip_on_failure,
            quarantined,
            // Host settings are not what the composition says.
            host: _,
        } = self;
        *scopes == other.scopes
            && disabled.keys().eq(other.disabled.keys())
            && *preferences == other.preferences
            && *policy == other.policy
            && *agents == other.agents
            && *conditions == other.conditions
            && *skipped == other.skipped
            && *skip_on_failure == other.skip_on_failure
            && *quarantined == other.quarantined
    }
}

impl Default for Composition {
    fn default() -> Self {
        Self::new()
    }
}

impl Composition {
    /// Whether a failed setup of `id` quarantines it instead of failing the
    /// publication: it has `on_failure = "skip"` and governs no scope. An
    /// entry providing `policy` or `secrets` never is skipped: the scopes
    /// it governs would fall back to the (more permissive) default.
    pub fn quarantines_on_failure(&self, id: &EntryId) -> bool {
        self.skip_on_failure.contains(id)
            && self.entries.get(id).is_some_and(|e| {
                !e.manifest
                    .provides
                    .keys()
                    .any(|c| crate::engine::system::SystemCapability::is_system(c.as_str()))
            })
    }

    /// A composition with only the root scope.
    pub fn new() -> Self {
        let mut scopes = BTreeMap::new();
        scopes.insert(ScopePath::root(), ScopeDecl::new(ScopePath::root()));
        Self {
            scopes,
            entries: BTreeMap::new(),
            disabled: BTreeMap::new(),
            preferences: Preferences::default(),
            policy: None,
            agents: BTreeMap::new(),
            conditions: BTreeMap::new(),
            skipped: BTreeMap::new(),
            skip_on_failure: std::collections::BTreeSet::new(),
            quarantined: BTreeMap::new(),
            host: super::host::HostSettings::default(),
        }
    }

    /// Insert or replace a scope, creating implied ancestors as needed.
    pub fn insert_scope(&mut self, mut scope: ScopeDecl) {
        // A replaced scope keeps its key: the declaration shares it, as
        // entries placed there do ([`Self::insert_entry`]).
        if let Some((path, _)) = self.scopes.get_key_value(&scope.path) {
            scope.path = path.clone();
        }
        let mut parent = scope.path.parent();
        while let Some(p) = parent {
            if self.scopes.contains_key(&p) {
                break;
            }
            let mut implied = ScopeDecl::new(p.clone());
            implied.implied = true;
            parent = p.parent();
            self.scopes.insert(p, implied);
        }
        self.scopes.insert(scope.path.clone(), scope);
    }

    /// Insert an entry, creating its scope (as implied) if it does not exist.
    /// Code-built compositions use this; the loader reports unknown scopes
    /// instead. The entry shares its scope's path with the scope map (one allocation
    /// per path; the scope tree finds an entry's scope by its address).
    pub fn insert_entry(&mut self, mut entry: Entry) {
        match self.scopes.get_key_value(&entry.scope.value) {
            Some((path, _)) => entry.scope.value = path.clone(),
            None => {
                let mut implied = ScopeDecl::new(entry.scope.value.clone());
                implied.implied = true;
                self.insert_scope(implied);
            }
        }
        self.entries.insert(entry.id.clone(), entry);
    }

    /// Add `agent` and the scope it owns.
    pub fn insert_agent(&mut self, agent: super::agent::AgentDecl) {
        self.insert_scope(agent.scope_decl());
        self.agents.insert(agent.name.clone(), agent);
    }

    /// Children of `path`, sorted.
    pub fn children(&self, path: &ScopePath) -> Vec<&ScopePath> {
        // Scopes are few compared with entries; callers that need this for
        // every scope use `ScopeIndex` in the resolver instead.
        self.scopes
            .keys()
            .filter(|p| p.parent().as_ref() == Some(path))
            .collect()
    }
}
