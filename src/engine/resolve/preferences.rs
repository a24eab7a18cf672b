//! Provider preferences: choosing among several qualifying providers, and
//! reporting preferences that chose nothing.
//!
//! Precedence is the reference's: the consumer's own `prefer`, then its
//! scope's, then the global table; the first level that names one of the
//! candidates decides. A preference never creates a match.

use std::collections::HashMap;

use super::gather::{Gathered, Holder, Req};
use super::plan::{Consumer, PreferenceFinding, PreferenceLevel};
use crate::engine::model::{CapabilityName, Composition, EntryId};
use crate::engine::recent::Recent;
use crate::engine::tree::FxHashMap;

/// The preferences that apply to `req`, most specific first.
fn applicable<'a>(
    composition: &'a Composition,
    g: &Gathered<'a>,
    req: &Req<'a>,
) -> [(PreferenceLevel, Option<&'a EntryId>); 3] {
    let cap = &req.requirement.capability;
    let consumer = match req.holder {
        Holder::Entry(e) if g.entry_prefers[e] => g.entries[e].prefer.get(cap).map(|r| &r.value),
        Holder::Entry(_) => None,
        Holder::Scope(_) => None,
    };
    let scope = g.scope_prefer[req.scope]
        .and_then(|m| m.get(cap))
        .map(|r| &r.value);
    let global = composition.preferences.global.get(cap).map(|r| &r.value);
    [
        (PreferenceLevel::Consumer, consumer),
        (PreferenceLevel::Scope, scope),
        (PreferenceLevel::Global, global),
    ]
}

/// The applicable preferences with the index of each preferred entry
/// (`None` when the composition has no such entry), looked up once per
/// requirement for both [`choose`] and [`Log::observe`].
pub(super) type Applicable<'a> = [(PreferenceLevel, Option<(&'a EntryId, Option<usize>)>); 3];

/// Recently looked-up preferred ids: a composition names few distinct
/// preferred entries, each from many requirements, so most lookups hit here
/// instead of searching the entry list.
#[derive(Default)]
pub(super) struct IndexCache<'a>(Recent<(&'a EntryId, Option<usize>), 8>);

impl<'a> IndexCache<'a> {
    fn index_of(&mut self, g: &Gathered<'_>, id: &'a EntryId) -> Option<usize> {
        if let Some(&(_, ix)) = self
            .0
            .find(|(k, _)| std::ptr::eq(*k, id) || k.as_str() == id.as_str())
        {
            return ix;
        }
        let at = self.0.insert(|_| (id, g.index_of(id)));
        self.0.get(at).1
    }
}

/// [`applicable`], with entry indices.
pub(super) fn applicable_indexed<'a>(
    composition: &'a Composition,
    g: &Gathered<'a>,
    req: &Req<'a>,
    cache: &mut IndexCache<'a>,
) -> Applicable<'a> {
    // Written out rather than through `array::map`: this runs once per
    // requirement, nearly always with no preference at all, and the
    // mapped closure was not inlined.
    let [(l0, p0), (l1, p1), (l2, p2)] = applicable(composition, g, req);
    let mut indexed = |p: Option<&'a EntryId>| p.map(|id| (id, cache.index_of(g, id)));
    [(l0, indexed(p0)), (l1, indexed(p1)), (l2, indexed(p2))]
}

/// Choose among `cands` (entry indices, sorted) by preference.
pub(super) fn choose(
    applicable: &Applicable<'_>,
    cands: &[usize],
) -> Option<(usize, PreferenceLevel)> {
    for &(level, preferred) in applicable {
        let Some((_, Some(ix))) = preferred else {
            continue;
        };
        if cands.binary_search(&ix).is_ok() {
            return Some((ix, level));
        }
    }
    None
}

/// A preference by index: level, holder (entry index, scope index, or 0 for
/// the global table) and capability. Usage is looked up, never iterated, so
/// a hash map keyed by indices keeps the output deterministic while sparing
/// a string key per observed requirement. The capability is borrowed from
/// the composition, so observing clones nothing.
type UsageKey<'a> = (PreferenceLevel, usize, &'a str);

#[derive(Default)]
struct Usage {
    applies: usize,
    named_a_candidate: bool,
    first_miss: Option<(Consumer, Vec<EntryId>)>,
}

/// What each preference did, gathered while selecting.
#[derive(Default)]
pub(super) struct Log<'a> {
    usage: FxHashMap<UsageKey<'a>, Usage>,
}

impl<'a> Log<'a> {
    /// Record how the preferences that apply to `req` relate to its
    /// candidates.
    pub(super) fn observe(
        &mut self,
        applicable: &Applicable<'_>,
        g: &Gathered<'_>,
        req: &Req<'a>,
        cands: &[usize],
    ) {
        let cap: &'a str = req.requirement.capability.as_str();
        for &(level, preferred) in applicable {
            let Some((_, index)) = preferred else {
                continue;
            };
            let holder = match level {
                PreferenceLevel::Consumer => match req.holder {
                    Holder::Entry(e) => e,
                    // Scope requirements have no consumer-level preference.
                    Holder::Scope(_) => continue,
                },
                PreferenceLevel::Scope => req.scope,
                PreferenceLevel::Global => 0,
            };
            let usage = self.usage.entry((level, holder, cap)).or_default();
            usage.applies += 1;
            let is_candidate = index.is_some_and(|ix| cands.binary_search(&ix).is_ok());
            if is_candidate {
                usage.named_a_candidate = true;
            } else if !cands.is_empty() && usage.first_miss.is_none() {
                let consumer = match req.holder {
                    Holder::Entry(e) => Consumer::Entry(g.entries[e].id.clone()),
                    Holder::Scope(s) => Consumer::Scope(g.scope_paths[s].clone()),
                };
                usage.first_miss = Some((
                    consumer,
                    cands.iter().map(|&c| g.entries[c].id.clone()).collect(),
                ));
            }
        }
    }

    /// Findings for every declared preference, in (level, holder, capability)
    /// order.
    pub(super) fn findings(
        &self,
        composition: &'a Composition,
        g: &Gathered<'a>,
    ) -> Vec<PreferenceFinding> {
        // (level, holder name, capability, holder index, preferred); the
        // index is `None` for a scope outside the tree, which no requirement
        // can see. Holder names are borrowed; only findings own them.
        type Declared<'d> = (
            PreferenceLevel,
            Option<&'d str>,
            &'d CapabilityName,
            Option<usize>,
            &'d EntryId,
        );
        let mut declared: Vec<Declared<'_>> = Vec::new();
        for (e, entry) in g.entries.iter().enumerate() {
            for (cap, r) in &entry.prefer {
                declared.push((
                    PreferenceLevel::Consumer,
                    Some(entry.id.as_str()),
                    cap,
                    Some(e),
                    &r.value,
                ));
            }
        }
        let mut scope_ix: Option<HashMap<&str, usize>> = None;
        for (path, scope) in &composition.scopes {
            for (cap, r) in &scope.prefer {
                let index = scope_ix.get_or_insert_with(|| {
                    g.scope_paths
                        .iter()
                        .enumerate()
                        .map(|(i, p)| (p.as_str(), i))
                        .collect()
                });
                declared.push((
                    PreferenceLevel::Scope,
                    Some(path.as_str()),
                    cap,
                    index.get(path.as_str()).copied(),
                    &r.value,
                ));
            }
        }
        for (cap, r) in &composition.preferences.global {
            declared.push((PreferenceLevel::Global, None, cap, Some(0), &r.value));
        }
        declared.sort_by(|a, b| (a.0, a.1, a.2, a.4).cmp(&(b.0, b.1, b.2, b.4)));
        let mut out = Vec::new();
        for (level, holder_name, cap, holder_ix, preferred) in declared {
            let holder = || holder_name.map(str::to_owned);
            let capability = cap.clone();
            let usage = holder_ix.and_then(|h| self.usage.get(&(level, h, cap.as_str())));
            if composition.disabled.contains_key(preferred) {
                let (holder, preferred) = (holder(), preferred.clone());
                out.push(PreferenceFinding::Disabled {
                    level,
                    holder,
                    capability,
                    preferred,
                });
                continue;
            }
            let Some(usage) = usage.filter(|u| u.applies > 0) else {
                // The harness consumes `policy` and `secrets` for every
                // scope (`engine::system`), with or without a requirement.
                if crate::engine::system::SystemCapability::is_system(cap.as_str()) {
                    continue;
                }
                let (holder, preferred) = (holder(), preferred.clone());
                out.push(PreferenceFinding::Unused {
                    level,
                    holder,
                    capability,
                    preferred,
                });
                continue;
            };
            let report_miss = match level {
                PreferenceLevel::Global => !usage.named_a_candidate,
                _ => true,
            };
            if let (true, Some((consumer, candidates))) = (report_miss, &usage.first_miss) {
                let (holder, preferred) = (holder(), preferred.clone());
                out.push(PreferenceFinding::NotCandidate {
                    level,
                    holder,
                    capability,
                    preferred,
                    consumer: consumer.clone(),
                    candidates: candidates.clone(),
                });
            }
        }
        out
    }
}
