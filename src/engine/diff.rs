//! The semantic diff of two generations.
//!
//! A diff compares two [`SnapshotRecord`]s, so it serves every operand kind
//! the edge can turn into a record: a composition file, a snapshot file, a
//! git revision, a store generation. Only the semantic part of a record is
//! compared (plugins, capability contracts, the content hashes and the
//! semantic scope tree); ids, generation numbers and metadata never produce a
//! change. Configuration appears only as `config_hash`: a diff can say that
//! configuration changed, never what it was or became.
//!
//! Changes fall into three categories:
//!
//! - **scope** (subject: the scope path): scopes added or removed, or
//!   `changed` when the effective capability view, the own tool view, the
//!   entries placed there or the children differ;
//! - **provider**: local providers of a capability in a scope (subject
//!   `<scope>::<capability>`), plugin versions (subject: manifest name), the
//!   configuration (`config`) and tool contracts (`tools`) by hash, each
//!   tool that came, went, left or entered a scope's view, or whose own
//!   contract changed (`tool:<name>`, the last from the per-tool hashes a
//!   snapshot records in its metadata, the one metadata a diff reads), and
//!   the registered contract versions (`capability:<name>`);
//! - **requirement** (subject `<scope>::<consumer>::<capability>`):
//!   requirements added or removed, `rewired` when the selected provider
//!   changed, `changed` when the status or the specifier changed;
//! - **agent** (subject: the agent's name): agents added or removed, or
//!   `changed` naming each field of the definition that changed
//!   (`prompt_changed`, `max_steps_changed`…), from the definitions a
//!   snapshot records in `metadata.agents`.
//!
//! A process plugin's program (argv and the digests of its files, from
//! `metadata.process_plugins`) is a provider change too (subject
//! `program:<entry>`, reason `program_changed`): editing `plugin.py`
//! changes the semantic digest, so the diff says why.
//!
//! Changes are sorted by category, subject, kind and reason, so a diff is
//! deterministic.

use std::collections::{BTreeMap, BTreeSet};

use crate::engine::canonical::Canon;
use crate::engine::snapshot::{ScopeRow, SelectionRow, SnapshotRecord, TOOL_CONTRACTS};

/// The format version of [`GenerationDiff::to_canon`].
pub const DIFF_FORMAT_VERSION: u64 = 1;

/// What a change is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Category {
    /// A scope of the tree.
    Scope,
    /// Who provides what: local providers, plugins, contracts, hashes.
    Provider,
    /// A requirement and its selection.
    Requirement,
    /// An agent's definition.
    Agent,
    /// The composition's `[policy]`: a rule or a tool's policy.
    Policy,
}

impl Category {
    /// Lower-case name: `scope`, `provider`, `requirement`.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Scope => "scope",
            Category::Provider => "provider",
            Category::Requirement => "requirement",
            Category::Agent => "agent",
            Category::Policy => "policy",
        }
    }
}

/// How a subject changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ChangeKind {
    /// Only in the new generation.
    Added,
    /// Only in the old generation.
    Removed,
    /// Present in both with nothing in common (a provider list).
    Replaced,
    /// Present in both, partly different.
    Changed,
    /// A requirement now selects a different provider.
    Rewired,
    /// Present in both and identical (listed only on request).
    Unchanged,
}

impl ChangeKind {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Added => "added",
            ChangeKind::Removed => "removed",
            ChangeKind::Replaced => "replaced",
            ChangeKind::Changed => "changed",
            ChangeKind::Rewired => "rewired",
            ChangeKind::Unchanged => "unchanged",
        }
    }
}

/// One change.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    /// What the change is about.
    pub category: Category,
    /// How it changed.
    pub kind: ChangeKind,
    /// The subject (see the module documentation for its spelling).
    pub subject: String,
    /// The old value (`None` for an addition).
    pub old: Option<Canon>,
    /// The new value (`None` for a removal).
    pub new: Option<Canon>,
    /// Machine-readable reason; several are joined with `,`.
    pub reason: String,
}

impl Change {
    /// Canonical form: `{category, kind, subject, old, new, reason}`.
    pub fn to_canon(&self) -> Canon {
        Canon::map([
            ("category", Canon::from(self.category.as_str())),
            ("kind", Canon::from(self.kind.as_str())),
            ("subject", Canon::from(self.subject.as_str())),
            ("old", self.old.clone().unwrap_or(Canon::Null)),
            ("new", self.new.clone().unwrap_or(Canon::Null)),
            ("reason", Canon::from(self.reason.as_str())),
        ])
    }
}

/// One side of a diff.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Side {
    /// Generation id of the record.
    pub generation_id: String,
    /// Semantic digest of the record.
    pub semantic_digest: String,
    /// Digest of the whole record (empty if the record's metadata cannot be
    /// hashed).
    pub digest: String,
}

impl Side {
    fn of(record: &SnapshotRecord) -> Self {
        // Both digests from one pass over the semantic tree; apart when
        // the record's metadata cannot be hashed (its semantic digest
        // still can).
        let (semantic_digest, digest) = match record.digests() {
            Ok(d) => (d.semantic_digest, d.digest),
            Err(_) => (record.semantic_digest().unwrap_or_default(), String::new()),
        };
        Self {
            generation_id: record.generation_id.clone(),
            semantic_digest,
            digest,
        }
    }

    fn to_canon(&self) -> Canon {
        Canon::map([
            ("generation_id", self.generation_id.as_str()),
            ("semantic_digest", self.semantic_digest.as_str()),
            ("digest", self.digest.as_str()),
        ])
    }
}

/// Number of changes of each kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiffCounts {
    /// `added` changes.
    pub added: usize,
    /// `removed` changes.
    pub removed: usize,
    /// `replaced` changes.
    pub replaced: usize,
    /// `changed` changes.
    pub changed: usize,
    /// `rewired` changes.
    pub rewired: usize,
    /// `unchanged` rows.
    pub unchanged: usize,
}

impl DiffCounts {
    /// Every change except `unchanged` rows.
    pub fn total_changes(&self) -> usize {
        self.added + self.removed + self.replaced + self.changed + self.rewired
    }

    /// `(kind, count)` in kind order, zero counts included.
    pub fn by_kind(&self) -> [(ChangeKind, usize); 6] {
        [
            (ChangeKind::Added, self.added),
            (ChangeKind::Removed, self.removed),
            (ChangeKind::Replaced, self.replaced),
            (ChangeKind::Changed, self.changed),
            (ChangeKind::Rewired, self.rewired),
            (ChangeKind::Unchanged, self.unchanged),
        ]
    }
}

/// The semantic diff of two generations.
#[derive(Clone, Debug, PartialEq)]
pub struct GenerationDiff {
    /// The old side.
    pub old: Side,
    /// The new side.
    pub new: Side,
    /// Changes, sorted by (category, subject, kind, reason).
    pub changes: Vec<Change>,
    /// Whether the semantic digests differ.
    pub semantic_changed: bool,
}

impl GenerationDiff {
    /// Number of changes of each kind.
    pub fn counts(&self) -> DiffCounts {
        let mut c = DiffCounts::default();
        for ch in &self.changes {
            match ch.kind {
                ChangeKind::Added => c.added += 1,
                ChangeKind::Removed => c.removed += 1,
                ChangeKind::Replaced => c.replaced += 1,
                ChangeKind::Changed => c.changed += 1,
                ChangeKind::Rewired => c.rewired += 1,
                ChangeKind::Unchanged => c.unchanged += 1,
            }
        }
        c
    }

    /// Whether any change other than an `unchanged` row is listed.
    pub fn has_changes(&self) -> bool {
        self.changes.iter().any(|c| c.kind != ChangeKind::Unchanged)
    }

    /// Canonical form: `{format_version, old, new, changes, summary,
    /// semantic_changed}`.
    pub fn to_canon(&self) -> Canon {
        let counts = self.counts();
        let summary = Canon::map(counts.by_kind().map(|(k, n)| (k.as_str(), Canon::from(n))));
        Canon::map([
            ("format_version", Canon::from(DIFF_FORMAT_VERSION)),
            ("old", self.old.to_canon()),
            ("new", self.new.to_canon()),
            (
                "changes",
                Canon::List(self.changes.iter().map(Change::to_canon).collect()),
            ),
            ("summary", summary),
            ("semantic_changed", Canon::Bool(self.semantic_changed)),
        ])
    }
}

fn strs<S: AsRef<str>>(items: &[S]) -> Canon {
    Canon::list(items.iter().map(AsRef::as_ref))
}

fn opt_strs<S: AsRef<str>>(items: Option<&[S]>) -> Canon {
    items.map_or(Canon::Null, strs)
}

fn opt_str(s: Option<&str>) -> Canon {
    s.map_or(Canon::Null, Canon::from)
}

/// Collects changes; `unchanged` rows only when asked for.
struct Collector {
    include_unchanged: bool,
    changes: Vec<Change>,
}

impl Collector {
    fn push(
        &mut self,
        category: Category,
        kind: ChangeKind,
        subject: String,
        old: Option<Canon>,
        new: Option<Canon>,
        reason: &str,
    ) {
        if kind == ChangeKind::Unchanged && !self.include_unchanged {
            return;
        }
        self.changes.push(Change {
            category,
            kind,
            subject,
            old,
            new,
            reason: reason.to_owned(),
        });
    }

    /// Added / removed / unchanged for a subject whose value is compared as
    /// a whole, `changed` otherwise.
    fn simple(
        &mut self,
        category: Category,
        subject: String,
        old: Option<Canon>,
        new: Option<Canon>,
        what: &str,
        changed_reason: &str,
    ) {
        match (old, new) {
            (None, None) => {}
            (None, Some(n)) => self.push(
                category,
                ChangeKind::Added,
                subject,
                None,
                Some(n),
                &format!("{what}_added"),
            ),
            (Some(o), None) => self.push(
                category,
                ChangeKind::Removed,
                subject,
                Some(o),
                None,
                &format!("{what}_removed"),
            ),
            (Some(o), Some(n)) if o == n => self.push(
                category,
                ChangeKind::Unchanged,
                subject,
                Some(o),
                Some(n),
                "unchanged",
            ),
            (Some(o), Some(n)) => self.push(
                category,
                ChangeKind::Changed,
                subject,
                Some(o),
                Some(n),
                changed_reason,
            ),
        }
    }
}

/// Keys of two maps, each once, sorted.
fn union_keys<'a, V>(a: &'a BTreeMap<String, V>, b: &'a BTreeMap<String, V>) -> BTreeSet<&'a str> {
    a.keys().chain(b.keys()).map(String::as_str).collect()
}

/// What an added or removed scope carries.
fn scope_value(row: &ScopeRow) -> Canon {
    Canon::map([
        ("capabilities", opt_strs(row.capabilities.as_deref())),
        ("tools", opt_strs(row.tools.as_deref())),
        ("entries", strs(&row.entries)),
    ])
}

fn diff_scopes(out: &mut Collector, old: &SnapshotRecord, new: &SnapshotRecord) {
    let index = |r: &SnapshotRecord| -> BTreeMap<String, ScopeRow> {
        r.semantic_scopes
            .scopes
            .iter()
            .map(|s| (s.path.to_string(), s.clone()))
            .collect()
    };
    let (a, b) = (index(old), index(new));
    for path in union_keys(&a, &b) {
        let subject = path.to_owned();
        match (a.get(path), b.get(path)) {
            (None, None) => {}
            (None, Some(n)) => out.push(
                Category::Scope,
                ChangeKind::Added,
                subject,
                None,
                Some(scope_value(n)),
                "scope_added",
            ),
            (Some(o), None) => out.push(
                Category::Scope,
                ChangeKind::Removed,
                subject,
                Some(scope_value(o)),
                None,
                "scope_removed",
            ),
            (Some(o), Some(n)) => {
                let fields: [(&str, &str, Canon, Canon); 4] = [
                    (
                        "capabilities",
                        "capability_view_changed",
                        opt_strs(o.capabilities.as_deref()),
                        opt_strs(n.capabilities.as_deref()),
                    ),
                    (
                        "tools",
                        "tool_view_changed",
                        opt_strs(o.tools.as_deref()),
                        opt_strs(n.tools.as_deref()),
                    ),
                    (
                        "entries",
                        "entries_changed",
                        strs(&o.entries),
                        strs(&n.entries),
                    ),
                    (
                        "children",
                        "children_changed",
                        strs(&o.children),
                        strs(&n.children),
                    ),
                ];
                let mut reasons = Vec::new();
                let (mut ov, mut nv) = (BTreeMap::new(), BTreeMap::new());
                for (field, reason, x, y) in fields {
                    if x != y {
                        reasons.push(reason);
                        ov.insert(field.to_owned(), x);
                        nv.insert(field.to_owned(), y);
                    }
                }
                if reasons.is_empty() {
                    let v = scope_value(o);
                    out.push(
                        Category::Scope,
                        ChangeKind::Unchanged,
                        subject,
                        Some(v.clone()),
                        Some(v),
                        "unchanged",
                    );
                } else {
                    out.push(
                        Category::Scope,
                        ChangeKind::Changed,
                        subject,
                        Some(Canon::Map(ov)),
                        Some(Canon::Map(nv)),
                        &reasons.join(","),
                    );
                }
            }
        }
    }
}

fn diff_local_providers(out: &mut Collector, old: &SnapshotRecord, new: &SnapshotRecord) {
    let index = |r: &SnapshotRecord| -> BTreeMap<String, Vec<String>> {
        let mut m = BTreeMap::new();
        for s in &r.semantic_scopes.scopes {
            for (cap, ids) in &s.providers {
                let mut ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
                ids.sort();
                m.insert(format!("{}::{cap}", s.path), ids);
            }
        }
        m
    };
    let (a, b) = (index(old), index(new));
    for subject in union_keys(&a, &b) {
        let (o, n) = (a.get(subject), b.get(subject));
        let (kind, reason) = match (o, n) {
            (None, None) => continue,
            (None, Some(_)) => (ChangeKind::Added, "provider_added"),
            (Some(_), None) => (ChangeKind::Removed, "provider_removed"),
            (Some(o), Some(n)) if o == n => (ChangeKind::Unchanged, "unchanged"),
            (Some(o), Some(n)) if o.iter().all(|id| !n.contains(id)) => {
                (ChangeKind::Replaced, "providers_replaced")
            }
            (Some(_), Some(_)) => (ChangeKind::Changed, "providers_changed"),
        };
        out.push(
            Category::Provider,
            kind,
            subject.to_owned(),
            o.map(|v| strs(v)),
            n.map(|v| strs(v)),
            reason,
        );
    }
}

fn diff_plugins(out: &mut Collector, old: &SnapshotRecord, new: &SnapshotRecord) {
    for name in union_keys(&old.plugins, &new.plugins) {
        let version = |r: &SnapshotRecord| r.plugins.get(name).map(|v| Canon::from(v.as_str()));
        out.simple(
            Category::Provider,
            name.to_owned(),
            version(old),
            version(new),
            "plugin",
            "version_changed",
        );
    }
    for cap in union_keys(&old.capabilities, &new.capabilities) {
        let versions = |r: &SnapshotRecord| r.capabilities.get(cap).map(|v| strs(v));
        out.simple(
            Category::Provider,
            format!("capability:{cap}"),
            versions(old),
            versions(new),
            "capability",
            "contract_versions_changed",
        );
    }
    // Tools by name, with the scopes that show each: the `tools` row below
    // says that a contract changed, these say which tools came, went, or
    // moved out of (or into) a scope's view.
    let tool_scopes = |r: &SnapshotRecord| -> BTreeMap<String, Vec<String>> {
        let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for s in &r.semantic_scopes.scopes {
            for t in s.visible_tools.iter() {
                m.entry(t.to_string()).or_default().push(s.path.to_string());
            }
        }
        m
    };
    let (a, b) = (tool_scopes(old), tool_scopes(new));
    for name in union_keys(&a, &b) {
        out.simple(
            Category::Provider,
            format!("tool:{name}"),
            a.get(name).map(|p| strs(p)),
            b.get(name).map(|p| strs(p)),
            "tool",
            "tool_visibility_changed",
        );
    }
    // A tool in both whose contract (description, argument schema)
    // changed, by the per-tool hashes a snapshot records in its metadata
    // (a record without them, such as one the reference wrote, says only
    // that some contract changed: the `tools` row).
    let contracts = |r: &SnapshotRecord| match r.metadata.get(TOOL_CONTRACTS) {
        Some(Canon::Map(m)) => Some(m.clone()),
        _ => None,
    };
    if let (Some(a), Some(b)) = (contracts(old), contracts(new)) {
        for (name, was) in &a {
            if let Some(now) = b.get(name)
                && now != was
            {
                out.push(
                    Category::Provider,
                    ChangeKind::Changed,
                    format!("tool:{name}"),
                    Some(was.clone()),
                    Some(now.clone()),
                    "tool_contract_changed",
                );
            }
        }
    }
    let hash = |s: &str| Some(Canon::from(s));
    out.simple(
        Category::Provider,
        "config".to_owned(),
        hash(&old.config_hash),
        hash(&new.config_hash),
        "config",
        "config_changed",
    );
    out.simple(
        Category::Provider,
        "tools".to_owned(),
        hash(&old.tool_schema_hash),
        hash(&new.tool_schema_hash),
        "tools",
        "tool_contract_changed",
    );
}

/// What an added or removed requirement carries.
fn selection_value(row: &SelectionRow) -> Canon {
    Canon::map([
        ("requirement", Canon::from(&*row.requirement)),
        ("status", Canon::from(&*row.status)),
        ("provider", opt_str(row.provider.as_deref())),
    ])
}

fn diff_requirements(out: &mut Collector, old: &SnapshotRecord, new: &SnapshotRecord) {
    // Each side's rows by (scope, consumer, capability), borrowed: a
    // 100,000-entry composition has as many rows, and only those reported
    // get a subject written out.
    type Key<'r> = (&'r str, &'r str, &'r str);
    fn index(r: &SnapshotRecord) -> BTreeMap<Key<'_>, &SelectionRow> {
        let mut m = BTreeMap::new();
        for s in &r.semantic_scopes.scopes {
            for sel in s.selections.iter() {
                let cap = sel
                    .requirement
                    .split_whitespace()
                    .next()
                    .unwrap_or_default();
                m.insert((&*s.path, &*sel.consumer, cap), sel);
            }
        }
        m
    }
    let (a, b) = (index(old), index(new));
    let subject = |(path, consumer, cap): Key<'_>| format!("{path}::{consumer}::{cap}");
    let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
    // The two sides merged in key order: the smaller key next, with the
    // other side's row when it has the same key.
    while let Some(key) = match (a.peek(), b.peek()) {
        (Some(&(ka, _)), Some(&(kb, _))) => Some(ka.min(kb)),
        (Some(&(k, _)), None) | (None, Some(&(k, _))) => Some(k),
        (None, None) => None,
    } {
        let o = a.next_if(|(k, _)| *k == key).map(|(_, o)| o);
        let n = b.next_if(|(k, _)| *k == key).map(|(_, n)| n);
        let req = Category::Requirement;
        let (o, n) = match (o, n) {
            (None, None) => continue,
            (None, Some(n)) => {
                out.push(
                    req,
                    ChangeKind::Added,
                    subject(key),
                    None,
                    Some(selection_value(n)),
                    "requirement_added",
                );
                continue;
            }
            (Some(o), None) => {
                out.push(
                    req,
                    ChangeKind::Removed,
                    subject(key),
                    Some(selection_value(o)),
                    None,
                    "requirement_removed",
                );
                continue;
            }
            (Some(o), Some(n)) => (o, n),
        };
        let spec_changed = o.requirement != n.requirement;
        let status_changed = o.status != n.status;
        let provider_changed = o.provider != n.provider;
        if spec_changed || status_changed {
            let mut reasons = Vec::new();
            let (mut ov, mut nv) = (BTreeMap::new(), BTreeMap::new());
            let fields = [
                (
                    spec_changed,
                    "requirement",
                    "specifier_changed",
                    Canon::from(&*o.requirement),
                    Canon::from(&*n.requirement),
                ),
                (
                    status_changed,
                    "status",
                    "status_changed",
                    Canon::from(&*o.status),
                    Canon::from(&*n.status),
                ),
                (
                    provider_changed,
                    "provider",
                    "provider_selection_changed",
                    opt_str(o.provider.as_deref()),
                    opt_str(n.provider.as_deref()),
                ),
            ];
            for (differs, field, reason, x, y) in fields {
                if differs {
                    reasons.push(reason);
                    ov.insert(field.to_owned(), x);
                    nv.insert(field.to_owned(), y);
                }
            }
            out.push(
                req,
                ChangeKind::Changed,
                subject(key),
                Some(Canon::Map(ov)),
                Some(Canon::Map(nv)),
                &reasons.join(","),
            );
        } else if provider_changed {
            let (x, y) = (
                opt_str(o.provider.as_deref()),
                opt_str(n.provider.as_deref()),
            );
            out.push(
                req,
                ChangeKind::Rewired,
                subject(key),
                Some(x),
                Some(y),
                "provider_selection_changed",
            );
        } else if o.provider_scope != n.provider_scope {
            // Same provider entry, moved to another scope.
            let (x, y) = (
                opt_str(o.provider_scope.as_deref()),
                opt_str(n.provider_scope.as_deref()),
            );
            out.push(
                req,
                ChangeKind::Rewired,
                subject(key),
                Some(x),
                Some(y),
                "provider_scope_changed",
            );
        } else if out.include_unchanged {
            let v = selection_value(o);
            out.push(
                req,
                ChangeKind::Unchanged,
                subject(key),
                Some(v.clone()),
                Some(v),
                "unchanged",
            );
        }
    }
}

/// The reason a changed field of an agent's definition gives:
/// `prompt_changed` for `prompt_hash`, `max_steps_changed`…
fn agent_field_reason(field: &str) -> String {
    format!("{}_changed", field.strip_suffix("_hash").unwrap_or(field))
}

/// A definition's fields with map values spread into `field.key` leaves
/// (`budget.tokens`), so a change names the leaf.
fn leaves(definition: &BTreeMap<String, Canon>) -> BTreeMap<String, Canon> {
    let mut out = BTreeMap::new();
    for (field, value) in definition {
        match value {
            Canon::Map(m) => {
                for (k, v) in m {
                    out.insert(format!("{field}.{k}"), v.clone());
                }
            }
            other => {
                out.insert(field.clone(), other.clone());
            }
        }
    }
    out
}

/// How the agents changed between two snapshots' `metadata.agents`
/// (see [`crate::engine::agent::agents_metadata`]): one row per agent,
/// `changed` naming each field of its definition that differs (old and new
/// hold only those fields).
pub fn agent_changes(
    old: Option<&Canon>,
    new: Option<&Canon>,
    include_unchanged: bool,
) -> Vec<Change> {
    let definitions = |v: Option<&Canon>| -> BTreeMap<String, Canon> {
        match v {
            Some(Canon::Map(agents)) => agents
                .iter()
                .map(|(name, a)| {
                    let definition = match a {
                        Canon::Map(m) => m.get("definition").cloned().unwrap_or(Canon::Null),
                        _ => Canon::Null,
                    };
                    (name.clone(), definition)
                })
                .collect(),
            _ => BTreeMap::new(),
        }
    };
    let (a, b) = (definitions(old), definitions(new));
    let mut out = Collector {
        include_unchanged,
        changes: Vec::new(),
    };
    for name in union_keys(&a, &b) {
        match (a.get(name), b.get(name)) {
            (Some(Canon::Map(x)), Some(Canon::Map(y))) if x != y => {
                let (x, y) = (leaves(x), leaves(y));
                let fields: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
                let (mut ov, mut nv, mut reasons) = (BTreeMap::new(), BTreeMap::new(), Vec::new());
                for field in fields {
                    let (o, n) = (x.get(field), y.get(field));
                    if o != n {
                        let top = field.split('.').next().unwrap_or(field);
                        let reason = agent_field_reason(top);
                        if !reasons.contains(&reason) {
                            reasons.push(reason);
                        }
                        ov.insert(field.clone(), o.cloned().unwrap_or(Canon::Null));
                        nv.insert(field.clone(), n.cloned().unwrap_or(Canon::Null));
                    }
                }
                out.push(
                    Category::Agent,
                    ChangeKind::Changed,
                    name.to_owned(),
                    Some(Canon::Map(ov)),
                    Some(Canon::Map(nv)),
                    &reasons.join(","),
                );
            }
            (o, n) => out.simple(
                Category::Agent,
                name.to_owned(),
                o.cloned(),
                n.cloned(),
                "agent",
                "definition_changed",
            ),
        }
    }
    out.changes
}

/// How the composition's `[policy]` changed: a row per rule added or
/// removed (`grant …`, `deny …`, `approval_required …`) and per tool whose
/// policy was added, removed or changed (`tool NAME`).
fn diff_policy(out: &mut Collector, old: &SnapshotRecord, new: &SnapshotRecord) {
    let policy = |r: &SnapshotRecord| r.metadata.get(crate::engine::model::POLICY).cloned();
    let (a, b) = (policy(old), policy(new));
    if a.is_none() && b.is_none() {
        return;
    }
    let rules = |side: &Option<Canon>, key: &str| -> BTreeSet<String> {
        match side.as_ref().and_then(|p| p.at(&[key])) {
            Some(Canon::List(items)) => items
                .iter()
                .filter_map(|i| match i {
                    Canon::Str(s) => Some(s.clone()),
                    _ => None,
                })
                .collect(),
            _ => BTreeSet::new(),
        }
    };
    for (key, what) in [
        ("grants", "grant"),
        ("deny", "deny"),
        ("approval_required", "approval_required"),
    ] {
        let (x, y) = (rules(&a, key), rules(&b, key));
        for rule in x.union(&y) {
            out.simple(
                Category::Policy,
                format!("{what} {rule}"),
                x.contains(rule).then(|| Canon::Str(rule.clone())),
                y.contains(rule).then(|| Canon::Str(rule.clone())),
                what,
                "rule_changed",
            );
        }
    }
    let tools = |side: &Option<Canon>| -> BTreeMap<String, Canon> {
        match side.as_ref().and_then(|p| p.at(&["tools"])) {
            Some(Canon::Map(m)) => m.clone(),
            _ => BTreeMap::new(),
        }
    };
    let (x, y) = (tools(&a), tools(&b));
    for name in union_keys(&x, &y) {
        out.simple(
            Category::Policy,
            format!("tool {name}"),
            x.get(name).cloned(),
            y.get(name).cloned(),
            "tool_policy",
            "tool_policy_changed",
        );
    }
}

/// The programs of process plugins, per entry.
fn diff_programs(out: &mut Collector, old: &SnapshotRecord, new: &SnapshotRecord) {
    let programs = |r: &SnapshotRecord| -> BTreeMap<String, Canon> {
        match r.metadata.get(crate::engine::snapshot::PROCESS_PLUGINS) {
            Some(Canon::Map(m)) => m.clone(),
            _ => BTreeMap::new(),
        }
    };
    let (a, b) = (programs(old), programs(new));
    for entry in union_keys(&a, &b) {
        let (o, n) = match (a.get(entry), b.get(entry)) {
            // A changed program shows only what differs (`files.plugin.py`),
            // not its whole command, variables and pinned tools.
            (Some(Canon::Map(x)), Some(Canon::Map(y))) if x != y => {
                let (x, y) = (leaves(x), leaves(y));
                let (mut ov, mut nv) = (BTreeMap::new(), BTreeMap::new());
                for field in x.keys().chain(y.keys()).collect::<BTreeSet<_>>() {
                    let (o, n) = (x.get(field), y.get(field));
                    if o != n {
                        ov.insert(field.clone(), o.cloned().unwrap_or(Canon::Null));
                        nv.insert(field.clone(), n.cloned().unwrap_or(Canon::Null));
                    }
                }
                (Some(Canon::Map(ov)), Some(Canon::Map(nv)))
            }
            (o, n) => (o.cloned(), n.cloned()),
        };
        out.simple(
            Category::Provider,
            format!("program:{entry}"),
            o,
            n,
            "program",
            "program_changed",
        );
    }
}

/// The semantic diff from `old` to `new`; `unchanged` rows (one per scope,
/// provider and requirement subject present on both sides and identical) are
/// listed only when `include_unchanged`.
pub fn diff_snapshots(
    old: &SnapshotRecord,
    new: &SnapshotRecord,
    include_unchanged: bool,
) -> GenerationDiff {
    // The rows and the two sides' digests read the records and share
    // nothing: side by side at 100,000 entries.
    let work = old.semantic_scopes.work().max(new.semantic_scopes.work());
    let (changes, (old_side, new_side)) = crate::engine::parallel::join(
        work,
        || changes_between(old, new, include_unchanged),
        || (Side::of(old), Side::of(new)),
    );
    let semantic_changed = old_side.semantic_digest != new_side.semantic_digest
        || old.semantic_composition() != new.semantic_composition();
    GenerationDiff {
        old: old_side,
        new: new_side,
        changes,
        semantic_changed,
    }
}

/// Every row of [`diff_snapshots`], sorted.
fn changes_between(
    old: &SnapshotRecord,
    new: &SnapshotRecord,
    include_unchanged: bool,
) -> Vec<Change> {
    let mut out = Collector {
        include_unchanged,
        changes: Vec::new(),
    };
    diff_scopes(&mut out, old, new);
    diff_local_providers(&mut out, old, new);
    diff_plugins(&mut out, old, new);
    diff_requirements(&mut out, old, new);
    diff_programs(&mut out, old, new);
    diff_policy(&mut out, old, new);
    let mut changes = out.changes;
    changes.extend(agent_changes(
        old.metadata.get(crate::engine::agent::AGENTS),
        new.metadata.get(crate::engine::agent::AGENTS),
        include_unchanged,
    ));
    changes.sort_by(|x, y| {
        (x.category, x.subject.as_str(), x.kind, x.reason.as_str()).cmp(&(
            y.category,
            y.subject.as_str(),
            y.kind,
            y.reason.as_str(),
        ))
    });
    changes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::build::CompositionBuilder;
    use crate::engine::model::{Composition, ConfigValue};
    use crate::engine::resolve::resolve;
    use crate::engine::snapshot::{SnapshotContext, build_snapshot};
    use crate::engine::tree::ScopeTree;

    fn snapshot_of(c: &Composition) -> SnapshotRecord {
        let tree = ScopeTree::new(c);
        let plan = resolve(c);
        build_snapshot(c, &tree, &plan, &SnapshotContext::default()).unwrap()
    }

    fn diff(old: CompositionBuilder, new: CompositionBuilder) -> GenerationDiff {
        diff_snapshots(
            &snapshot_of(&old.build().unwrap()),
            &snapshot_of(&new.build().unwrap()),
            false,
        )
    }

    /// `category kind subject reason` per change.
    fn rows(d: &GenerationDiff) -> Vec<String> {
        d.changes
            .iter()
            .map(|c| {
                format!(
                    "{} {} {} {}",
                    c.category.as_str(),
                    c.kind.as_str(),
                    c.subject,
                    c.reason
                )
            })
            .collect()
    }

    fn find<'a>(d: &'a GenerationDiff, subject: &str) -> &'a Change {
        d.changes
            .iter()
            .find(|c| c.subject == subject)
            .unwrap_or_else(|| panic!("no change for {subject}: {:?}", rows(d)))
    }

    fn base() -> CompositionBuilder {
        CompositionBuilder::new()
            .scope("/research", Some(&["database"]))
            .entry("postgres")
            .provides("database", &["1.4.2"])
            .entry("app")
            .requires("database", ">=1,<2")
            .in_scope("/research")
    }

    #[test]
    fn identical_compositions_have_no_changes() {
        let d = diff(base(), base());
        assert!(d.changes.is_empty(), "{:?}", rows(&d));
        assert!(!d.semantic_changed);
        assert!(!d.has_changes());
        assert_eq!(d.old, d.new);
        assert_eq!(d.counts(), DiffCounts::default());
    }

    #[test]
    fn an_added_scope_is_reported_with_its_parent() {
        let d = diff(base(), base().scope("/ops", None));
        assert!(d.semantic_changed);
        assert_eq!(
            rows(&d),
            [
                "scope changed / children_changed",
                "scope added /ops scope_added"
            ]
        );
        let root = find(&d, "/");
        assert_eq!(
            root.old,
            Some(Canon::map([("children", Canon::list(["/research"]))]))
        );
        assert_eq!(
            root.new,
            Some(Canon::map([(
                "children",
                Canon::list(["/ops", "/research"])
            )]))
        );
        let ops = find(&d, "/ops");
        assert_eq!(
            ops.new,
            Some(Canon::map([
                ("capabilities", Canon::Null),
                ("tools", Canon::Null),
                ("entries", Canon::list::<&str, _>([]))
            ]))
        );
        // And the other way round.
        let back = diff(base().scope("/ops", None), base());
        assert_eq!(
            rows(&back),
            [
                "scope changed / children_changed",
                "scope removed /ops scope_removed"
            ]
        );
    }

    #[test]
    fn a_changed_capability_view_names_the_field() {
        let new = CompositionBuilder::new()
            .scope("/research", Some(&["database", "cache"]))
            .tool_view(&["search"])
            .entry("postgres")
            .provides("database", &["1.4.2"])
            .entry("app")
            .requires("database", ">=1,<2")
            .in_scope("/research");
        let d = diff(base(), new);
        let c = find(&d, "/research");
        assert_eq!(c.kind, ChangeKind::Changed);
        assert_eq!(c.reason, "capability_view_changed,tool_view_changed");
        assert_eq!(
            c.old,
            Some(Canon::map([
                ("capabilities", Canon::list(["database"])),
                ("tools", Canon::Null)
            ]))
        );
        assert_eq!(
            c.new,
            Some(Canon::map([
                ("capabilities", Canon::list(["cache", "database"])),
                ("tools", Canon::list(["search"]))
            ]))
        );
    }

    #[test]
    fn providers_added_removed_replaced_and_changed() {
        let old = || {
            CompositionBuilder::new()
                .entry("postgres")
                .provides("database", &["1.4.2"])
        };
        let new = || old().entry("redis").provides("cache", &["7.0.0"]);
        let d = diff(old(), new());
        assert_eq!(
            rows(&d),
            [
                "scope changed / entries_changed",
                "provider added /::cache provider_added",
                "provider added capability:cache capability_added",
                "provider changed config config_changed",
                "provider added redis plugin_added",
            ]
        );
        assert_eq!(find(&d, "/::cache").new, Some(Canon::list(["redis"])));
        let back = diff(new(), old());
        assert_eq!(find(&back, "/::cache").kind, ChangeKind::Removed);
        assert_eq!(find(&back, "redis").kind, ChangeKind::Removed);

        let replaced = diff(
            old(),
            CompositionBuilder::new()
                .entry("sqlite")
                .provides("database", &["3.0.0"]),
        );
        let c = find(&replaced, "/::database");
        assert_eq!(
            (c.kind, c.reason.as_str()),
            (ChangeKind::Replaced, "providers_replaced")
        );
        assert_eq!(c.old, Some(Canon::list(["postgres"])));
        assert_eq!(c.new, Some(Canon::list(["sqlite"])));
        let cap = find(&replaced, "capability:database");
        assert_eq!(
            (cap.kind, cap.reason.as_str()),
            (ChangeKind::Changed, "contract_versions_changed")
        );

        let partial = diff(
            old(),
            old().entry("sqlite").provides("database", &["3.0.0"]),
        );
        let c = find(&partial, "/::database");
        assert_eq!(
            (c.kind, c.reason.as_str()),
            (ChangeKind::Changed, "providers_changed")
        );
        assert_eq!(c.new, Some(Canon::list(["postgres", "sqlite"])));
    }

    #[test]
    fn a_preference_change_rewires_a_requirement() {
        let with = |pref: &str| {
            CompositionBuilder::new()
                .entry("postgres")
                .provides("database", &["1.4.2"])
                .entry("sqlite")
                .provides("database", &["1.1.0"])
                .entry("app")
                .requires("database", ">=1")
                .prefer_global("database", pref)
        };
        let d = diff(with("postgres"), with("sqlite"));
        assert!(d.semantic_changed);
        let req: Vec<_> = d
            .changes
            .iter()
            .filter(|c| c.category == Category::Requirement)
            .collect();
        assert_eq!(req.len(), 1, "{:?}", rows(&d));
        let c = req[0];
        assert_eq!(c.subject, "/::app::database");
        assert_eq!(
            (c.kind, c.reason.as_str()),
            (ChangeKind::Rewired, "provider_selection_changed")
        );
        assert_eq!(c.old, Some(Canon::from("postgres")));
        assert_eq!(c.new, Some(Canon::from("sqlite")));
        assert_eq!(d.counts().rewired, 1);
    }

    #[test]
    fn status_and_specifier_changes_are_changed_requirements() {
        let old = CompositionBuilder::new()
            .entry("postgres")
            .provides("database", &["1.4.2"])
            .entry("app")
            .requires("database", ">=1");
        let new = CompositionBuilder::new()
            .entry("postgres")
            .provides("database", &["1.4.2"])
            .entry("app")
            .requires("database", ">=2");
        let d = diff(old, new);
        let c = find(&d, "/::app::database");
        assert_eq!(c.kind, ChangeKind::Changed);
        assert_eq!(
            c.reason,
            "specifier_changed,status_changed,provider_selection_changed"
        );
        assert_eq!(
            c.new,
            Some(Canon::map([
                ("requirement", Canon::from("database >=2")),
                ("status", Canon::from("version_mismatch")),
                ("provider", Canon::Null)
            ]))
        );
    }

    #[test]
    fn a_version_bump_is_a_changed_plugin() {
        let with = |v: &str| {
            CompositionBuilder::new()
                .entry("postgres")
                .plugin("pg", v)
                .provides("database", &["1.4.2"])
        };
        let d = diff(with("1.0.0"), with("1.1.0"));
        let c = find(&d, "pg");
        assert_eq!(
            (c.category, c.kind, c.reason.as_str()),
            (Category::Provider, ChangeKind::Changed, "version_changed")
        );
        assert_eq!(c.old, Some(Canon::from("1.0.0")));
        assert_eq!(c.new, Some(Canon::from("1.1.0")));
        assert!(d.semantic_changed);
    }

    #[test]
    fn a_config_change_shows_hashes_only() {
        let secret = "config-value-canary";
        let with = |v: &str| {
            CompositionBuilder::new()
                .entry("postgres")
                .provides("database", &["1.4.2"])
                .config(ConfigValue::Table(
                    [("dsn".to_owned(), ConfigValue::Str(v.into()))].into(),
                ))
        };
        let (a, b) = (
            snapshot_of(&with("before").build().unwrap()),
            snapshot_of(&with(secret).build().unwrap()),
        );
        let d = diff_snapshots(&a, &b, false);
        assert_eq!(rows(&d), ["provider changed config config_changed"]);
        let c = &d.changes[0];
        assert_eq!(c.old, Some(Canon::from(a.config_hash.as_str())));
        assert_eq!(c.new, Some(Canon::from(b.config_hash.as_str())));
        let text = d.to_canon().to_json().to_string();
        assert!(!text.contains(secret) && !text.contains("before"), "{text}");
    }

    #[test]
    fn tool_contract_changes_show_as_tools() {
        let with = |desc: &str| {
            CompositionBuilder::new()
                .entry("search")
                .tool("search", desc, None)
        };
        let d = diff(with("find things"), with("find more things"));
        assert_eq!(
            rows(&d),
            [
                "provider changed tool:search tool_contract_changed",
                "provider changed tools tool_contract_changed"
            ]
        );
        // A record without per-tool hashes (written by the reference) says
        // only that some contract changed.
        let bare = |b: CompositionBuilder| {
            let mut r = snapshot_of(&b.build().unwrap());
            r.metadata.remove(TOOL_CONTRACTS);
            r
        };
        let d = diff_snapshots(
            &bare(with("find things")),
            &bare(with("find more things")),
            false,
        );
        assert_eq!(rows(&d), ["provider changed tools tool_contract_changed"]);
    }

    #[test]
    fn tools_that_come_go_or_leave_a_view_are_named() {
        let with = |names: &[&str], view: Option<&[&str]>| {
            let mut b = CompositionBuilder::new().entry("kit");
            for n in names {
                b = b.tool(n, "a tool", None);
            }
            b = b.scope("/ops", None);
            if let Some(v) = view {
                b = b.tool_view(v);
            }
            b.build().unwrap()
        };
        let d = diff_snapshots(
            &snapshot_of(&with(&["fetch", "search"], None)),
            &snapshot_of(&with(&["search", "write"], Some(&["write"]))),
            false,
        );
        let tools: Vec<String> = rows(&d)
            .into_iter()
            .filter(|r| r.contains("tool:"))
            .collect();
        assert_eq!(
            tools,
            [
                "provider removed tool:fetch tool_removed",
                "provider changed tool:search tool_visibility_changed",
                "provider added tool:write tool_added",
            ]
        );
    }

    #[test]
    fn include_unchanged_lists_every_shared_subject() {
        let (a, b) = (
            snapshot_of(&base().build().unwrap()),
            snapshot_of(&base().scope("/ops", None).build().unwrap()),
        );
        let d = diff_snapshots(&a, &b, true);
        assert_eq!(
            rows(&d),
            [
                "scope changed / children_changed",
                "scope added /ops scope_added",
                "scope unchanged /research unchanged",
                "provider unchanged /::database unchanged",
                "provider unchanged app unchanged",
                "provider unchanged capability:database unchanged",
                "provider unchanged config unchanged",
                "provider unchanged postgres unchanged",
                "provider unchanged tools unchanged",
                "requirement unchanged /research::app::database unchanged",
            ]
        );
        let counts = d.counts();
        assert_eq!((counts.total_changes(), counts.unchanged), (2, 8));
        let same = diff_snapshots(&a, &a, true);
        assert!(!same.has_changes() && !same.semantic_changed);
        assert!(
            same.changes
                .iter()
                .all(|c| c.kind == ChangeKind::Unchanged && c.old == c.new)
        );
    }

    #[test]
    fn canonical_form_has_summary_and_sides() {
        let d = diff(base(), base().scope("/ops", None));
        let json = d.to_canon().to_json();
        assert_eq!(json["format_version"], 1);
        assert_eq!(json["semantic_changed"], true);
        assert_eq!(json["old"]["generation_id"], "gen_0001");
        assert_eq!(json["old"]["semantic_digest"].as_str().unwrap().len(), 64);
        assert_eq!(
            json["summary"],
            serde_json::json!({"added": 1, "removed": 0, "replaced": 0, "changed": 1, "rewired": 0, "unchanged": 0})
        );
        assert_eq!(
            json["changes"][1],
            serde_json::json!({"category": "scope", "kind": "added", "subject": "/ops", "old": null,
                "new": {"capabilities": null, "tools": null, "entries": []}, "reason": "scope_added"})
        );
    }

    #[test]
    fn diffs_are_deterministic() {
        let old = base()
            .entry("redis")
            .provides("cache", &["7.0.0"])
            .in_scope("/research");
        let new = base()
            .scope("/ops", Some(&["cache"]))
            .entry("memcached")
            .provides("cache", &["1.6.0"])
            .in_scope("/ops");
        let (a, b) = (
            snapshot_of(&old.build().unwrap()),
            snapshot_of(&new.build().unwrap()),
        );
        let first = diff_snapshots(&a, &b, true);
        for _ in 0..3 {
            assert_eq!(diff_snapshots(&a, &b, true), first);
        }
        let mut sorted = first.changes.clone();
        sorted.sort_by(|x, y| {
            (x.category, &x.subject, x.kind).cmp(&(y.category, &y.subject, y.kind))
        });
        assert_eq!(sorted, first.changes);
    }
}
