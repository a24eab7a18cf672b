//! System requirements: the `policy` and `secrets` providers that govern a
//! scope.
//!
//! The harness has a default policy (the composition's `[policy]`, else
//! allow-all) and a default secret provider (the environment). An entry
//! providing `policy@1` or `secrets@1` overrides the default for the scopes
//! that *see* it, through the rules an ordinary requirement uses: the
//! provider is declared in the scope or an ancestor, and no capability view
//! on the way hides the capability. A run in scope S uses the provider
//! visible from S; a sibling of the provider's scope keeps the default. (The
//! reference installs one provider for the whole generation, so a scope's
//! policy leaks to its siblings; chassis does not.)
//!
//! Selection follows the reference's system requirements:
//!
//! * no provider in the scope or an ancestor → the harness default;
//! * providers there, but a capability view hides the capability from the
//!   scope → the scope **fails closed** (a narrower view never widens what
//!   a scope may do);
//! * one visible provider on contract generation 1 → it;
//! * several → the scope's own `prefer`, then the global `[prefer]` (as for
//!   a scope requirement, whose consumer has no `prefer` of its own);
//! * otherwise the scope **fails closed**: ambiguous, no provider on
//!   generation 1, or the chosen provider cannot activate (a pending policy
//!   provider does not fall back to the more permissive default).
//!
//! The runtime then binds the chosen entry's registered value and fails
//! closed too when it is not of the expected type.

use std::fmt;

use super::model::{CapabilityName, Composition, EntryId};
use super::resolve::{Plan, PreferenceLevel, ProviderOrigin, SelectionReason};
use super::tree::{ScopeIx, ScopeTree};

/// A capability the harness itself consumes for every scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SystemCapability {
    /// `policy`: the engine deciding tool permissions.
    Policy,
    /// `secrets`: where tools and plugins resolve secrets.
    Secrets,
}

impl SystemCapability {
    /// Both, in display order.
    pub const ALL: [Self; 2] = [Self::Policy, Self::Secrets];

    /// The contract generation the harness consumes.
    pub const CONTRACT: u64 = 1;

    /// The capability name (`policy`, `secrets`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Policy => "policy",
            Self::Secrets => "secrets",
        }
    }

    /// The capability name, typed.
    pub fn capability(self) -> CapabilityName {
        CapabilityName::new(self.name()).expect("system capability names are valid")
    }

    /// Whether `name` is a system capability.
    pub fn is_system(name: &str) -> bool {
        Self::ALL.iter().any(|s| s.name() == name)
    }
}

/// What governs one system capability in one scope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Governing {
    /// No provider is visible: the harness default.
    Default,
    /// This entry's `@1` registration governs.
    Provider {
        /// The provider entry.
        entry: EntryId,
        /// Declared in the scope itself or in an ancestor.
        origin: ProviderOrigin,
        /// Why it was chosen.
        reason: SelectionReason,
    },
    /// Nothing can be chosen: every request is refused.
    FailClosed(SystemFailure),
}

/// Why a scope's system capability fails closed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SystemFailure {
    /// Several visible providers, and no preference names one of them.
    Ambiguous {
        /// The candidates, sorted.
        candidates: Vec<EntryId>,
    },
    /// Visible providers exist, none on contract generation 1.
    ContractMismatch {
        /// The providers, sorted.
        providers: Vec<EntryId>,
    },
    /// The chosen provider cannot activate.
    Pending {
        /// The provider.
        entry: EntryId,
    },
    /// The scope or an ancestor declares providers, and a capability view
    /// hides the capability from the scope.
    Hidden {
        /// The hidden providers, sorted.
        providers: Vec<EntryId>,
    },
}

impl fmt::Display for SystemFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let join = |ids: &[EntryId]| {
            ids.iter()
                .map(EntryId::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Self::Ambiguous { candidates } => write!(
                f,
                "ambiguous between {} (name one in the scope's `prefer` or in `[prefer]`)",
                join(candidates)
            ),
            Self::ContractMismatch { providers } => write!(
                f,
                "{} provide(s) no contract generation {}",
                join(providers),
                SystemCapability::CONTRACT
            ),
            Self::Pending { entry } => write!(f, "provider {entry} is pending"),
            Self::Hidden { providers } => write!(
                f,
                "a capability view hides {} from this scope (list the capability in the view, or move the provider)",
                join(providers)
            ),
        }
    }
}

/// What governs `system` in the scope `scope` of `tree` (see the module
/// documentation).
pub fn governing(
    composition: &Composition,
    tree: &ScopeTree,
    plan: &Plan,
    scope: ScopeIx,
    system: SystemCapability,
) -> Governing {
    let cap = system.capability();
    // (entry, origin), sorted by entry id (the map's order).
    let mut on_contract: Vec<(&EntryId, ProviderOrigin)> = Vec::new();
    let mut elsewhere: Vec<EntryId> = Vec::new();
    for entry in composition.entries.values() {
        let Some(provided) = entry.manifest.provides.get(&cap) else {
            continue;
        };
        let Some(at) = tree.find(&entry.scope.value) else {
            continue;
        };
        if !tree.is_ancestor_or_self(at, scope) {
            continue;
        }
        let origin = if at == scope {
            ProviderOrigin::Local
        } else {
            ProviderOrigin::Inherited
        };
        if provided.generation(SystemCapability::CONTRACT).is_some() {
            on_contract.push((&entry.id, origin));
        } else {
            elsewhere.push(entry.id.clone());
        }
    }
    if on_contract.is_empty() && elsewhere.is_empty() {
        return Governing::Default;
    }
    // A view that hides the capability from a scope under (or at) a
    // provider must not hand that scope the more permissive default: a
    // child scope could otherwise escape its parent's policy by declaring a
    // view without `policy`.
    if !tree.exposes(scope, &cap) {
        let mut providers: Vec<EntryId> = on_contract.iter().map(|(id, _)| (*id).clone()).collect();
        providers.extend(elsewhere);
        providers.sort();
        return Governing::FailClosed(SystemFailure::Hidden { providers });
    }
    let chosen = match on_contract.as_slice() {
        [] => {
            return Governing::FailClosed(SystemFailure::ContractMismatch {
                providers: elsewhere,
            });
        }
        [one] => Some((*one, SelectionReason::OnlyEligible)),
        several => {
            let scope_prefer = composition
                .scopes
                .get(&tree.get(scope).path)
                .and_then(|d| d.prefer.get(&cap));
            let global = composition.preferences.global.get(&cap);
            [
                (PreferenceLevel::Scope, scope_prefer),
                (PreferenceLevel::Global, global),
            ]
            .into_iter()
            .find_map(|(level, preferred)| {
                let preferred = &preferred?.value;
                several
                    .iter()
                    .find(|(id, _)| *id == preferred)
                    .map(|&c| (c, SelectionReason::ExplicitPreference(level)))
            })
        }
    };
    match chosen {
        None => Governing::FailClosed(SystemFailure::Ambiguous {
            candidates: on_contract.iter().map(|(id, _)| (*id).clone()).collect(),
        }),
        Some(((entry, _), _)) if !plan.is_eligible(entry) => {
            Governing::FailClosed(SystemFailure::Pending {
                entry: entry.clone(),
            })
        }
        Some(((entry, origin), reason)) => Governing::Provider {
            entry: entry.clone(),
            origin,
            reason,
        },
    }
}

/// Whether any entry of `composition` provides a system capability (when
/// none does, every scope has the defaults and nothing needs resolving).
pub fn any_provider(composition: &Composition) -> bool {
    composition.entries.values().any(|e| {
        e.manifest
            .provides
            .keys()
            .any(|c| SystemCapability::is_system(c.as_str()))
    })
}

#[cfg(test)]
mod tests;
