//! The resolution plan: the resolver's whole answer, as data.
//!
//! Vocabulary follows the Python reference so reports read the same:
//! seven requirement statuses, three provider origins, eight rejection
//! reasons. Every collection is sorted by declared names.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::engine::model::{CapabilityName, EntryId, Requirement, ScopePath};
use crate::engine::version::Version;

/// The outcome of one requirement, in the reference's precedence order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Status {
    /// Exactly one provider selected (alone, or by a preference).
    Resolved,
    /// Several providers qualify and no preference selects one.
    Ambiguous,
    /// Visible providers exist but none offers an accepted version.
    VersionMismatch,
    /// Accepted providers exist but none can activate.
    ProviderPending,
    /// Providers exist, but none is visible from the consumer's scope.
    NotVisible,
    /// Only the consumer itself provides the capability.
    SelfReference,
    /// Nothing provides the capability.
    NoProvider,
}

impl Status {
    /// Every status, in precedence order.
    pub const ALL: [Status; 7] = [
        Status::Resolved,
        Status::Ambiguous,
        Status::VersionMismatch,
        Status::ProviderPending,
        Status::NotVisible,
        Status::SelfReference,
        Status::NoProvider,
    ];

    /// The reference's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Resolved => "resolved",
            Status::Ambiguous => "ambiguous",
            Status::VersionMismatch => "version_mismatch",
            Status::ProviderPending => "provider_pending",
            Status::NotVisible => "not_visible",
            Status::SelfReference => "self_reference",
            Status::NoProvider => "no_provider",
        }
    }
}

/// Where a candidate provider sits relative to the consumer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProviderOrigin {
    /// Declared in the consumer's own scope.
    Local,
    /// Declared in an ancestor scope.
    Inherited,
    /// Declared outside the consumer's lineage.
    Unrelated,
}

impl ProviderOrigin {
    /// The reference's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderOrigin::Local => "local",
            ProviderOrigin::Inherited => "inherited",
            ProviderOrigin::Unrelated => "unrelated",
        }
    }
}

/// Why a candidate was not selected (first match in this order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rejection {
    /// The candidate is the consumer itself.
    SelfReference,
    /// The candidate is outside the consumer's lineage.
    NotVisible,
    /// A capability view on the lineage hides the capability.
    CapabilityNotExposed,
    /// The candidate cannot activate (its own requirements, or a cycle).
    ProviderPending,
    /// The requirement pins another contract generation.
    ContractMismatch,
    /// No provided version satisfies the specifier.
    VersionMismatch,
    /// The candidate qualifies, but so do others and nothing chose.
    Ambiguous,
    /// The candidate qualifies, but a preference chose another.
    NotSelected,
}

impl Rejection {
    /// The reference's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Rejection::SelfReference => "self_reference",
            Rejection::NotVisible => "not_visible",
            Rejection::CapabilityNotExposed => "capability_not_exposed",
            Rejection::ProviderPending => "provider_pending",
            Rejection::ContractMismatch => "contract_mismatch",
            Rejection::VersionMismatch => "version_mismatch",
            Rejection::Ambiguous => "ambiguous",
            Rejection::NotSelected => "not_selected",
        }
    }
}

/// Which level of preference made a selection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PreferenceLevel {
    /// `prefer` on the consuming entry.
    Consumer,
    /// `prefer` on the consumer's scope.
    Scope,
    /// The top-level `[prefer]` table.
    Global,
}

impl PreferenceLevel {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            PreferenceLevel::Consumer => "consumer",
            PreferenceLevel::Scope => "scope",
            PreferenceLevel::Global => "global",
        }
    }
}

/// Why the selected provider was selected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SelectionReason {
    /// It was the only qualifying provider.
    OnlyEligible,
    /// A preference at this level named it among several.
    ExplicitPreference(PreferenceLevel),
}

impl SelectionReason {
    /// The reference's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SelectionReason::OnlyEligible => "only_eligible",
            SelectionReason::ExplicitPreference(_) => "explicit_preference",
        }
    }
}

/// Who holds a requirement.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Consumer {
    /// A plugin entry.
    Entry(EntryId),
    /// A scope (scope-level requirements never gate anything).
    Scope(ScopePath),
}

impl Consumer {
    /// The consumer's name: the entry id, or the scope path.
    pub fn name(&self) -> &str {
        match self {
            Consumer::Entry(id) => id.as_str(),
            Consumer::Scope(path) => path.as_str(),
        }
    }

    /// `plugin` or `scope`, as the reference calls consumer kinds.
    pub fn kind(&self) -> &'static str {
        match self {
            Consumer::Entry(_) => "plugin",
            Consumer::Scope(_) => "scope",
        }
    }
}

/// The provider a requirement bound to, and the exact contract it bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selected {
    /// Provider entry.
    pub entry: EntryId,
    /// Scope that declares the provider.
    pub scope: ScopePath,
    /// Provider origin relative to the consumer.
    pub origin: ProviderOrigin,
    /// The provided version bound (one contract generation of the provider).
    pub version: Version,
}

/// One requirement's outcome. Candidate assessments are computed on demand
/// (`explain::requirement`), not stored: they are needed for one requirement
/// at a time, and storing them for every requirement is quadratic.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolution {
    /// Who requires.
    pub consumer: Consumer,
    /// The consumer's scope.
    pub scope: ScopePath,
    /// The requirement.
    pub requirement: Requirement,
    /// The outcome.
    pub status: Status,
    /// The bound provider when `status` is resolved.
    pub selected: Option<Selected>,
    /// Why it was selected.
    pub reason: Option<SelectionReason>,
    /// For ambiguous requirements, the qualifying providers, sorted.
    pub ambiguous_between: Between,
}

impl Resolution {
    /// The capability required.
    pub fn capability(&self) -> &CapabilityName {
        &self.requirement.capability
    }
}

/// The qualifying providers of an ambiguous requirement, sorted (empty for
/// any other), read as a slice. Requirements that see the same candidates
/// share one list: N consumers ambiguous among the same N providers hold
/// one list of N, not N lists of N.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Between(Option<Arc<[EntryId]>>);

impl Between {
    /// A list to share (cloning it shares it).
    pub fn new(ids: Vec<EntryId>) -> Self {
        Self((!ids.is_empty()).then(|| ids.into()))
    }
}

impl std::ops::Deref for Between {
    type Target = [EntryId];

    fn deref(&self) -> &[EntryId] {
        self.0.as_deref().unwrap_or_default()
    }
}

impl<'a> IntoIterator for &'a Between {
    type Item = &'a EntryId;
    type IntoIter = std::slice::Iter<'a, EntryId>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl PartialEq<Vec<EntryId>> for Between {
    fn eq(&self, other: &Vec<EntryId>) -> bool {
        **self == **other
    }
}

/// As the list it is.
impl std::fmt::Debug for Between {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Why an entry cannot activate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PendingReason {
    /// A hard requirement did not resolve.
    Requirement {
        /// The capability.
        capability: CapabilityName,
        /// Its status.
        status: Status,
    },
    /// The entry is a member of a dependency cycle.
    Cycle {
        /// Index into [`Plan::cycles`].
        cycle: usize,
    },
}

/// Per-entry outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryPlan {
    /// Whether the entry activates.
    pub eligible: bool,
    /// Position in the activation order, for eligible entries.
    pub order: Option<usize>,
    /// Why it is pending, for ineligible entries, sorted.
    pub pending: Vec<PendingReason>,
}

/// A problem with a provider preference found by resolution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PreferenceFinding {
    /// The preferred entry was never among the candidates of a requirement
    /// the preference applied to.
    NotCandidate {
        /// Level of the preference.
        level: PreferenceLevel,
        /// Consumer entry id or scope path the preference belongs to
        /// (`None` for global).
        holder: Option<String>,
        /// Capability.
        capability: CapabilityName,
        /// The entry it names.
        preferred: EntryId,
        /// A consumer where it did not apply, with that requirement's
        /// candidates.
        consumer: Consumer,
        /// The candidates that qualified there.
        candidates: Vec<EntryId>,
    },
    /// The preference applies to no requirement at all.
    Unused {
        /// Level of the preference.
        level: PreferenceLevel,
        /// Holder, as in `NotCandidate`.
        holder: Option<String>,
        /// Capability.
        capability: CapabilityName,
        /// The entry it names.
        preferred: EntryId,
    },
    /// The preference names a disabled entry.
    Disabled {
        /// Level of the preference.
        level: PreferenceLevel,
        /// Holder, as in `NotCandidate`.
        holder: Option<String>,
        /// Capability.
        capability: CapabilityName,
        /// The entry it names.
        preferred: EntryId,
    },
}

/// A closed path in dependency order (`a` requires `b` …) as text in the
/// direction of the plan's edges (provider -> consumer).
fn cycle_text(path: &[EntryId]) -> String {
    let Some(first) = path.first() else {
        return String::new();
    };
    std::iter::once(first)
        .chain(path[1..].iter().rev())
        .chain(std::iter::once(first))
        .map(EntryId::as_str)
        .collect::<Vec<_>>()
        .join(" -> ")
}

/// The resolver's answer for one composition.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Per-entry outcome, by id.
    pub entries: BTreeMap<EntryId, EntryPlan>,
    /// Eligible entries, providers before consumers, ties by entry id.
    pub activation_order: Vec<EntryId>,
    /// Ineligible entries (including cycle members), sorted.
    pub pending: Vec<EntryId>,
    /// `(provider, consumer)` pairs of every bound requirement (hard or
    /// optional) of an eligible entry, sorted, unique.
    pub edges: Vec<(EntryId, EntryId)>,
    /// Dependency cycles: the members of each strongly connected component
    /// of the declared graph, sorted; the list is sorted.
    pub cycles: Vec<Vec<EntryId>>,
    /// For each cycle, a shortest closed path through its smallest member,
    /// in dependency order (`a` requires `b` …), for display; parallel to
    /// `cycles`.
    pub cycle_paths: Vec<Vec<EntryId>>,
    /// Every requirement's outcome: scope requirements and entry requirements,
    /// sorted by (consumer name, capability).
    pub resolutions: Vec<Resolution>,
    /// Preference problems, sorted.
    pub preference_findings: Vec<PreferenceFinding>,
}

impl Plan {
    /// Each cycle as text, in the direction of [`Plan::edges`] (provider ->
    /// consumer: each entry provides to the next), through its smallest
    /// member: `a -> c -> b -> a` for `a` requiring `b`, `b` requiring `c`
    /// and `c` requiring `a`.
    pub fn cycle_texts(&self) -> Vec<String> {
        self.cycle_paths.iter().map(|p| cycle_text(p)).collect()
    }

    /// Whether every hard requirement of every entry resolved and there is
    /// no cycle.
    pub fn is_complete(&self) -> bool {
        self.pending.is_empty()
    }

    /// Whether `entry` activates.
    pub fn is_eligible(&self, entry: &EntryId) -> bool {
        self.entries.get(entry).is_some_and(|e| e.eligible)
    }

    /// Every consumer's resolutions, hashed by its name in one pass: for a
    /// caller that asks for each entry's (a binary search each is a dozen
    /// and more string comparisons at 100,000 entries).
    pub fn resolution_index(&self) -> ResolutionIndex<'_> {
        let mut by_consumer = std::collections::HashMap::new();
        let mut rest = &self.resolutions[..];
        while let Some(first) = rest.first() {
            let name = first.consumer.name();
            let len = rest.partition_point(|r| r.consumer.name() == name);
            let (these, after) = rest.split_at(len);
            by_consumer.insert(name, these);
            rest = after;
        }
        ResolutionIndex { by_consumer }
    }

    /// Resolutions of one consumer (a contiguous, sorted slice).
    pub fn resolutions_of(&self, consumer_name: &str) -> &[Resolution] {
        let start = self
            .resolutions
            .partition_point(|r| r.consumer.name() < consumer_name);
        let len = self.resolutions[start..].partition_point(|r| r.consumer.name() == consumer_name);
        &self.resolutions[start..start + len]
    }

    /// The resolution of one consumer's requirement on `capability`.
    pub fn resolution(&self, consumer_name: &str, capability: &str) -> Option<&Resolution> {
        self.resolutions_of(consumer_name)
            .iter()
            .find(|r| r.capability().as_str() == capability)
    }
}

/// [`Plan::resolution_index`]: each consumer's resolutions by its name.
pub struct ResolutionIndex<'p> {
    by_consumer: std::collections::HashMap<&'p str, &'p [Resolution]>,
}

impl<'p> ResolutionIndex<'p> {
    /// What [`Plan::resolutions_of`] answers for `consumer_name`.
    pub fn of(&self, consumer_name: &str) -> &'p [Resolution] {
        self.by_consumer.get(consumer_name).copied().unwrap_or(&[])
    }
}
