//! Explain reports as data: why a requirement resolved the way it did, and
//! what a scope sees. Rendering is the edge's job.
//!
//! Candidate assessments are computed here, for the one requirement asked
//! about, rather than stored by the resolver for every requirement.

use std::collections::BTreeMap;

use super::model::{CapabilityName, Composition, ConfigValue, EntryId, ScopePath};
use super::redact::{REDACTED, is_sensitive_key, redact_url_userinfo};
use super::resolve::{Plan, ProviderOrigin, Rejection, Resolution, Status};
use super::system::{Governing, SystemCapability, governing};
use super::tree::ScopeTree;
use super::version::Version;

/// One provider of the capability, anywhere in the composition, judged
/// against the requirement.
#[derive(Clone, Debug, PartialEq)]
pub struct Assessment {
    /// Provider entry.
    pub entry: EntryId,
    /// Manifest name.
    pub name: String,
    /// The version it would bind (highest accepted, else highest provided).
    pub version: Version,
    /// All provided versions of the capability.
    pub versions: Vec<Version>,
    /// Scope declaring the provider.
    pub scope: ScopePath,
    /// Origin relative to the consumer.
    pub origin: ProviderOrigin,
    /// Whether the consumer can see it (lineage and capability views).
    pub visible: bool,
    /// Whether the provider itself activates (its own requirements
    /// resolve and it is in no cycle).
    pub active: bool,
    /// Whether it qualifies for this requirement: visible, active, and
    /// offering an accepted version on an accepted contract generation.
    pub qualifies: bool,
    /// Whether it was selected.
    pub selected: bool,
    /// Why not, when not selected.
    pub rejection: Option<Rejection>,
    /// Why it was selected or rejected, in a sentence.
    pub why: String,
}

/// `chassis explain requirement`.
#[derive(Clone, Debug, PartialEq)]
pub struct RequirementReport {
    /// The resolution from the plan.
    pub resolution: Resolution,
    /// Every provider of the capability, sorted by entry id.
    pub candidates: Vec<Assessment>,
}

/// Explain `consumer`'s requirement on `capability`. `consumer` is an entry
/// id or, for scope requirements, a scope path.
pub fn explain_requirement(
    composition: &Composition,
    tree: &ScopeTree,
    plan: &Plan,
    consumer: &str,
    capability: &str,
) -> Option<RequirementReport> {
    let resolution = plan.resolution(consumer, capability)?.clone();
    let consumer_scope = tree.find(&resolution.scope)?;
    let cap = &resolution.requirement.capability;
    let mut candidates = Vec::new();
    for entry in composition.entries.values() {
        let Some(provided) = entry.manifest.provides.get(cap) else {
            continue;
        };
        let Some(scope_ix) = tree.find(&entry.scope.value) else {
            continue;
        };
        let is_self = entry.id.as_str() == consumer;
        let in_lineage = tree.is_ancestor_or_self(scope_ix, consumer_scope);
        let exposed = tree.exposes(consumer_scope, cap);
        let origin = if scope_ix == consumer_scope {
            ProviderOrigin::Local
        } else if in_lineage {
            ProviderOrigin::Inherited
        } else {
            ProviderOrigin::Unrelated
        };
        let accepted = crate::engine::resolve::best_accepted(provided, &resolution.requirement);
        let eligible = plan.is_eligible(&entry.id);
        let selected = resolution.status == Status::Resolved
            && resolution
                .selected
                .as_ref()
                .is_some_and(|s| s.entry == entry.id);
        let pinned = resolution.requirement.specifier.pinned_major();
        let rejection = if selected {
            None
        } else if is_self {
            Some(Rejection::SelfReference)
        } else if !in_lineage {
            Some(Rejection::NotVisible)
        } else if !exposed {
            Some(Rejection::CapabilityNotExposed)
        } else if !eligible {
            Some(Rejection::ProviderPending)
        } else if pinned.is_some_and(|m| provided.generation(m).is_none()) {
            Some(Rejection::ContractMismatch)
        } else if accepted.is_none() {
            Some(Rejection::VersionMismatch)
        } else if resolution.status == Status::Ambiguous {
            Some(Rejection::Ambiguous)
        } else {
            Some(Rejection::NotSelected)
        };
        let fallback = provided.versions.last().cloned();
        let Some(version) = accepted.cloned().or(fallback) else {
            continue;
        };
        let why = why(
            &Judged {
                entry: &entry.id,
                versions: &provided.versions,
                scope: &entry.scope.value,
                rejection,
            },
            &resolution,
            plan,
        );
        candidates.push(Assessment {
            entry: entry.id.clone(),
            name: entry.manifest.name.clone(),
            version,
            versions: provided.versions.clone(),
            scope: entry.scope.value.clone(),
            origin,
            visible: in_lineage && exposed && !is_self,
            active: eligible,
            qualifies: matches!(
                rejection,
                None | Some(Rejection::Ambiguous | Rejection::NotSelected)
            ),
            selected,
            rejection,
            why,
        });
    }
    Some(RequirementReport {
        resolution,
        candidates,
    })
}

/// A candidate as [`why`] needs it.
struct Judged<'a> {
    entry: &'a EntryId,
    versions: &'a [Version],
    scope: &'a ScopePath,
    rejection: Option<Rejection>,
}

/// Why a candidate was selected or rejected, in a sentence.
fn why(c: &Judged<'_>, r: &Resolution, plan: &Plan) -> String {
    let cap = &r.requirement.capability;
    let spec = r.requirement.specifier.to_string();
    let spec = if spec.is_empty() {
        "*".to_owned()
    } else {
        spec
    };
    let versions = c
        .versions
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    // The others an ambiguous candidate ties with, the first
    // `LISTED_CANDIDATES` named: each of N candidates naming the N - 1
    // others made one explanation N² names.
    let others = |id: &EntryId| -> String {
        let between = &r.ambiguous_between;
        // Sorted: whether `id` is among them is a search.
        let total = between.len() - usize::from(between.binary_search(id).is_ok());
        let mut names: Vec<String> = between
            .iter()
            .filter(|e| *e != id)
            .take(crate::engine::findings::LISTED_CANDIDATES)
            .map(|e| format!("`{e}`"))
            .collect();
        if total > names.len() {
            names.push(format!("… and {} more", total - names.len()));
        }
        names.join(", ")
    };
    match c.rejection {
        None => match r.reason {
            Some(crate::engine::resolve::SelectionReason::ExplicitPreference(level)) => {
                format!("selected by the {} preference for `{cap}`", level.as_str())
            }
            _ => format!("selected: the only provider of `{cap}` that qualifies"),
        },
        Some(Rejection::SelfReference) => {
            format!("`{}` is the consumer itself", c.entry)
        }
        Some(Rejection::NotVisible) => format!(
            "declared in `{}`, which is neither `{}` nor one of its ancestors: a sibling's or a child's providers are never visible",
            c.scope, r.scope
        ),
        Some(Rejection::CapabilityNotExposed) => format!(
            "a capability view between `/` and `{}` does not include `{cap}`",
            r.scope
        ),
        Some(Rejection::ProviderPending) => {
            let because: Vec<String> = plan
                .entries
                .get(c.entry)
                .map(|p| {
                    p.pending
                        .iter()
                        .map(|reason| match reason {
                            crate::engine::resolve::PendingReason::Requirement {
                                capability,
                                status,
                            } => format!("its requirement `{capability}` is {}", status.as_str()),
                            crate::engine::resolve::PendingReason::Cycle { .. } => {
                                "it is in a dependency cycle".to_owned()
                            }
                        })
                        .collect()
                })
                .unwrap_or_default();
            if because.is_empty() {
                format!("`{}` does not activate", c.entry)
            } else {
                format!("`{}` does not activate: {}", c.entry, because.join("; "))
            }
        }
        Some(Rejection::ContractMismatch) => match r.requirement.specifier.pinned_major() {
            Some(major) => format!(
                "provides `{cap}` {versions}, but the requirement `{spec}` pins contract generation `{cap}@{major}`"
            ),
            None => format!("provides `{cap}` {versions}, on another contract generation"),
        },
        Some(Rejection::VersionMismatch) => {
            format!("provides `{cap}` {versions}; the requirement accepts `{spec}`")
        }
        Some(Rejection::Ambiguous) => format!(
            "qualifies, as does {}; no preference chooses between them",
            others(c.entry)
        ),
        Some(Rejection::NotSelected) => match &r.selected {
            Some(s) => format!("qualifies, but a preference chose `{}`", s.entry),
            None => "qualifies, but another was chosen".to_owned(),
        },
    }
}

/// An entry as seen from a scope report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopeEntry {
    /// Entry id.
    pub id: EntryId,
    /// Catalog plugin name.
    pub plugin: String,
    /// Whether it activates.
    pub eligible: bool,
}

/// `chassis explain scope`.
#[derive(Clone, Debug, PartialEq)]
pub struct ScopeReport {
    /// Path.
    pub path: ScopePath,
    /// Last segment (`root` for `/`).
    pub name: String,
    /// Parent path.
    pub parent: Option<ScopePath>,
    /// Child paths, sorted.
    pub children: Vec<ScopePath>,
    /// Whether the scope was implied by a descendant, not declared.
    pub implied: bool,
    /// Effective capability view.
    pub capabilities: Option<Vec<CapabilityName>>,
    /// The scope's own tool view.
    pub tools: Option<Vec<String>>,
    /// Entries declared here.
    pub entries: Vec<ScopeEntry>,
    /// Capability → eligible providers declared here (exposed by the view).
    pub local_providers: BTreeMap<CapabilityName, Vec<EntryId>>,
    /// Capability → eligible providers declared in ancestors (exposed).
    pub inherited_providers: BTreeMap<CapabilityName, Vec<EntryId>>,
    /// Every requirement held here (scope and entry requirements).
    pub requirements: Vec<Resolution>,
    /// Tools owned by eligible entries declared here.
    pub local_tools: Vec<String>,
    /// Tools visible here (own and inherited, through the effective view).
    pub visible_tools: Vec<String>,
    /// Metadata with sensitive values replaced by `<redacted>`.
    pub metadata: BTreeMap<String, ConfigValue>,
    /// What governs the scope's `policy` and `secrets`, in
    /// [`SystemCapability::ALL`] order.
    pub system: Vec<(SystemCapability, Governing)>,
    /// The rules a call here is decided by, and where they come from, when
    /// they are known before a run: the composition's `[policy]` (or no
    /// rule: nothing granted) for the harness default, a `policy` entry's
    /// configuration for a provider of the built-in kind.
    pub policy: Option<EffectivePolicy>,
}

/// The rules that decide a scope's tool calls.
#[derive(Clone, Debug, PartialEq)]
pub struct EffectivePolicy {
    /// `[policy]`, or the entry that provides the policy.
    pub source: String,
    /// The rules (no grant: every permission is refused).
    pub rules: super::policy::PolicyRules,
}

impl ScopeReport {
    /// Requirements that did not resolve.
    pub fn unresolved(&self) -> impl Iterator<Item = &Resolution> {
        self.requirements
            .iter()
            .filter(|r| r.status != Status::Resolved)
    }

    /// Union of local and inherited providers.
    pub fn visible_providers(&self) -> BTreeMap<CapabilityName, Vec<EntryId>> {
        let mut out = self.inherited_providers.clone();
        for (cap, ids) in &self.local_providers {
            let list = out.entry(cap.clone()).or_default();
            list.extend(ids.iter().cloned());
            list.sort();
        }
        out
    }
}

/// Redact a metadata or config value for display: values under sensitive
/// keys become `<redacted>`, secret references show their name only, and
/// passwords in URL user-info are masked.
pub fn redact_for_display(value: &ConfigValue) -> ConfigValue {
    match value {
        ConfigValue::Table(map) => ConfigValue::Table(
            map.iter()
                .map(|(k, v)| {
                    let v = if is_sensitive_key(k) && !matches!(v, ConfigValue::Secret(_)) {
                        ConfigValue::Str(REDACTED.into())
                    } else {
                        redact_for_display(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        ConfigValue::Array(items) => {
            ConfigValue::Array(items.iter().map(redact_for_display).collect())
        }
        ConfigValue::Str(s) => ConfigValue::Str(redact_url_userinfo(s).into_owned()),
        other => other.clone(),
    }
}

/// Explain the scope at `path`.
pub fn explain_scope(
    composition: &Composition,
    tree: &ScopeTree,
    plan: &Plan,
    path: &ScopePath,
) -> Option<ScopeReport> {
    let ix = tree.find(path)?;
    let scope = tree.get(ix);
    let decl = composition.scopes.get(path)?;
    let mut entries = Vec::new();
    let mut local_providers: BTreeMap<CapabilityName, Vec<EntryId>> = BTreeMap::new();
    let mut inherited_providers: BTreeMap<CapabilityName, Vec<EntryId>> = BTreeMap::new();
    let mut local_tools = Vec::new();
    let mut visible_tools = Vec::new();
    for e in composition.entries.values() {
        let Some(eix) = tree.find(&e.scope.value) else {
            continue;
        };
        let eligible = plan.is_eligible(&e.id);
        if eix == ix {
            entries.push(ScopeEntry {
                id: e.id.clone(),
                plugin: e.plugin.value.clone(),
                eligible,
            });
        }
        if !eligible || !tree.is_ancestor_or_self(eix, ix) {
            continue;
        }
        for cap in e.manifest.provides.keys() {
            if tree.exposes(ix, cap) {
                let target = if eix == ix {
                    &mut local_providers
                } else {
                    &mut inherited_providers
                };
                target.entry(cap.clone()).or_default().push(e.id.clone());
            }
        }
        for t in &e.manifest.tools {
            if eix == ix {
                local_tools.push(t.name.to_string());
            }
            if tree.shows_tool(ix, &t.name) {
                visible_tools.push(t.name.to_string());
            }
        }
    }
    local_tools.sort();
    visible_tools.sort();
    visible_tools.dedup();
    let requirements = plan
        .resolutions
        .iter()
        .filter(|r| &r.scope == path)
        .cloned()
        .collect();
    let metadata = match redact_for_display(&ConfigValue::Table(decl.metadata.clone())) {
        ConfigValue::Table(m) => m,
        _ => BTreeMap::new(),
    };
    Some(ScopeReport {
        path: path.clone(),
        name: path.name().to_owned(),
        parent: scope.parent.map(|p| tree.get(p).path.clone()),
        children: scope
            .children
            .iter()
            .map(|&c| tree.get(c).path.clone())
            .collect(),
        implied: decl.implied,
        capabilities: scope
            .capabilities
            .as_ref()
            .map(|v| v.iter().cloned().collect()),
        tools: decl
            .tools
            .as_ref()
            .map(|v| v.iter().map(ToString::to_string).collect()),
        entries,
        local_providers,
        inherited_providers,
        requirements,
        local_tools,
        visible_tools,
        metadata,
        system: SystemCapability::ALL
            .into_iter()
            .map(|system| (system, governing(composition, tree, plan, ix, system)))
            .collect(),
        policy: effective_policy(composition, tree, plan, ix),
    })
}

/// The rules that decide the tool calls of scope `ix`, when they are known
/// before a run.
fn effective_policy(
    composition: &Composition,
    tree: &ScopeTree,
    plan: &Plan,
    ix: usize,
) -> Option<EffectivePolicy> {
    match governing(composition, tree, plan, ix, SystemCapability::Policy) {
        Governing::Default => Some(EffectivePolicy {
            source: "[policy]".to_owned(),
            rules: composition
                .policy
                .as_ref()
                .map(|p| p.rules.clone())
                .unwrap_or_default(),
        }),
        Governing::Provider { entry, .. } => {
            let e = composition.entries.get(&entry)?;
            (e.manifest.kind.as_deref() == Some(super::builtin::system::POLICY.name))
                .then(|| super::builtin::system::policy_rules(&e.config).ok())
                .flatten()
                .map(|rules| EffectivePolicy {
                    source: format!("entry `{entry}`"),
                    rules,
                })
        }
        Governing::FailClosed(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::build::CompositionBuilder as B;
    use crate::engine::resolve::resolve;

    #[test]
    fn assessments_name_every_provider_with_a_reason() {
        let c = B::new()
            .scope("/finance", None)
            .scope("/research", Some(&["model"]))
            .entry("postgres")
            .provides("database", &["1.2.0"])
            .entry("old")
            .provides("database", &["0.9.0"])
            .entry("fin-db")
            .in_scope("/finance")
            .provides("database", &["1.0.0"])
            .entry("app")
            .requires("database", ">=1,<2")
            .entry("r")
            .in_scope("/research")
            .requires("database", "")
            .build()
            .unwrap();
        let tree = ScopeTree::new(&c);
        let plan = resolve(&c);
        let report = explain_requirement(&c, &tree, &plan, "app", "database").unwrap();
        let got: Vec<(&str, Option<Rejection>)> = report
            .candidates
            .iter()
            .map(|a| (a.entry.as_str(), a.rejection))
            .collect();
        assert_eq!(
            got,
            [
                ("fin-db", Some(Rejection::NotVisible)),
                ("old", Some(Rejection::ContractMismatch)),
                ("postgres", None)
            ]
        );
        let report = explain_requirement(&c, &tree, &plan, "r", "database").unwrap();
        assert!(
            report
                .candidates
                .iter()
                .any(|a| a.rejection == Some(Rejection::CapabilityNotExposed))
        );
    }

    #[test]
    fn scope_report_separates_local_and_inherited() {
        let c = B::new()
            .scope("/ops", None)
            .entry("postgres")
            .provides("database", &["1.0.0"])
            .tool("query", "Run a query", None)
            .entry("tenant")
            .in_scope("/ops")
            .provides("database", &["1.5.0"])
            .build()
            .unwrap();
        let tree = ScopeTree::new(&c);
        let plan = resolve(&c);
        let r = explain_scope(&c, &tree, &plan, &ScopePath::new("/ops").unwrap()).unwrap();
        assert_eq!(
            r.local_providers.values().next().unwrap()[0].as_str(),
            "tenant"
        );
        assert_eq!(
            r.inherited_providers.values().next().unwrap()[0].as_str(),
            "postgres"
        );
        assert_eq!(r.visible_tools, ["query"]);
    }

    #[test]
    fn display_redaction_hides_sensitive_values() {
        let v = ConfigValue::Table(
            [
                ("api_key".to_owned(), ConfigValue::Str("sk-123".into())),
                (
                    "dsn".to_owned(),
                    ConfigValue::Str("postgres://u:hunter2@h/db".into()),
                ),
            ]
            .into(),
        );
        let shown = format!("{:?}", redact_for_display(&v));
        assert!(
            !shown.contains("sk-123") && !shown.contains("hunter2"),
            "{shown}"
        );
    }
}
