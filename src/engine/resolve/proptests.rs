//! Property tests of the resolver.
//!
//! Small compositions are generated as plain descriptions ([`Desc`]), built
//! with the [`CompositionBuilder`], resolved, and checked against a
//! brute-force oracle written directly from the specification using only the
//! public model types (no resolver internals), plus metamorphic properties:
//! permutation invariance, irrelevant additions and removals, determinism and
//! activation-order consistency.
#![allow(clippy::needless_range_loop)] // index loops mirror the oracle's definitions

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::*;
use crate::engine::build::CompositionBuilder;
use crate::engine::model::{CapabilityName, Composition, Entry, EntryId, Requirement, ScopePath};
use crate::engine::version::Version;

const CAPS: [&str; 3] = ["x", "y", "z"];
const SPECS: [&str; 8] = [
    "", ">=1,<2", ">=2", "~=1.1", "1.0.0", ">=0,<1", ">1.9,<3", ">=1",
];
const SCOPES: [&str; 4] = ["/", "/a", "/a/b", "/c"];
/// Entry ids, deliberately not in lexicographic order; the last two never
/// name an entry (preferences may still name them).
const IDS: [&str; 10] = [
    "m", "b", "x1", "a-2", "k", "c", "zz", "d", "ghost", "nobody",
];
const MAX_ENTRIES: usize = 8;
/// (minor, patch) pool for provided versions.
const MINORS: [(u64, u64); 4] = [(0, 0), (1, 0), (1, 2), (9, 1)];
const UNRELATED: &str = "unrelated-new";

// ---------------------------------------------------------------------------
// Descriptions and building

#[derive(Clone, Debug)]
struct EntryDesc {
    id: usize,
    scope: usize,
    /// Per capability: per major 0..3, an index into `MINORS`.
    provides: Vec<Option<Vec<Option<usize>>>>,
    /// Per capability: (index into `SPECS`, optional).
    requires: Vec<Option<(usize, bool)>>,
    /// Per capability: index into `IDS`.
    prefer: Vec<Option<usize>>,
}

#[derive(Clone, Debug)]
struct ScopeDesc {
    view: Option<Vec<bool>>,
    prefer: Vec<Option<usize>>,
    requires: Vec<Option<usize>>,
}

#[derive(Clone, Debug)]
struct Desc {
    scopes: Vec<Option<ScopeDesc>>,
    entries: Vec<EntryDesc>,
    global: Vec<Option<usize>>,
}

/// Insertion order used when building.
#[derive(Clone, Debug)]
struct Order {
    entries: Vec<usize>,
    scopes: Vec<usize>,
    /// Reverse the per-capability insertion order everywhere.
    reverse_caps: bool,
}

impl Order {
    fn identity(desc: &Desc) -> Self {
        Self {
            entries: (0..desc.entries.len()).collect(),
            scopes: (0..SCOPES.len()).collect(),
            reverse_caps: false,
        }
    }

    fn caps(&self) -> Vec<usize> {
        if self.reverse_caps {
            vec![2, 1, 0]
        } else {
            vec![0, 1, 2]
        }
    }
}

fn version_text(major: usize, minor: usize) -> String {
    let (mi, pa) = MINORS[minor];
    format!("{major}.{mi}.{pa}")
}

fn builder(desc: &Desc, order: &Order) -> CompositionBuilder {
    let caps = order.caps();
    let mut b = CompositionBuilder::new();
    for &s in &order.scopes {
        let Some(sd) = &desc.scopes[s] else { continue };
        let view: Option<Vec<&str>> = sd
            .view
            .as_ref()
            .map(|v| caps.iter().filter(|&&c| v[c]).map(|&c| CAPS[c]).collect());
        b = b.scope(SCOPES[s], view.as_deref());
        for &c in &caps {
            if let Some(spec) = sd.requires[c] {
                b = b.scope_requires(CAPS[c], SPECS[spec]);
            }
            if let Some(t) = sd.prefer[c] {
                b = b.scope_prefer(CAPS[c], IDS[t]);
            }
        }
    }
    for &i in &order.entries {
        let e = &desc.entries[i];
        b = b.entry(IDS[e.id]).in_scope(SCOPES[e.scope]);
        for &c in &caps {
            if let Some(majors) = &e.provides[c] {
                let mut versions: Vec<String> = majors
                    .iter()
                    .enumerate()
                    .filter_map(|(m, v)| v.map(|v| version_text(m, v)))
                    .collect();
                if order.reverse_caps {
                    versions.reverse();
                }
                if !versions.is_empty() {
                    let refs: Vec<&str> = versions.iter().map(String::as_str).collect();
                    b = b.provides(CAPS[c], &refs);
                }
            }
            match e.requires[c] {
                Some((spec, false)) => b = b.requires(CAPS[c], SPECS[spec]),
                Some((spec, true)) => b = b.optional(CAPS[c], SPECS[spec]),
                None => {}
            }
            if let Some(t) = e.prefer[c] {
                b = b.prefer(CAPS[c], IDS[t]);
            }
        }
    }
    for &c in &caps {
        if let Some(t) = desc.global[c] {
            b = b.prefer_global(CAPS[c], IDS[t]);
        }
    }
    b
}

/// The builder calls `builder(desc, identity)` makes, for failure messages.
fn render(desc: &Desc) -> String {
    let mut out = String::from("CompositionBuilder::new()");
    for (s, sd) in desc.scopes.iter().enumerate() {
        let Some(sd) = sd else { continue };
        let view = match &sd.view {
            None => "None".to_owned(),
            Some(v) => format!(
                "Some(&{:?})",
                (0..3)
                    .filter(|&c| v[c])
                    .map(|c| CAPS[c])
                    .collect::<Vec<_>>()
            ),
        };
        out += &format!("\n    .scope({:?}, {view})", SCOPES[s]);
        for c in 0..3 {
            if let Some(spec) = sd.requires[c] {
                out += &format!(".scope_requires({:?}, {:?})", CAPS[c], SPECS[spec]);
            }
            if let Some(t) = sd.prefer[c] {
                out += &format!(".scope_prefer({:?}, {:?})", CAPS[c], IDS[t]);
            }
        }
    }
    for e in &desc.entries {
        out += &format!(
            "\n    .entry({:?}).in_scope({:?})",
            IDS[e.id], SCOPES[e.scope]
        );
        for c in 0..3 {
            if let Some(majors) = &e.provides[c] {
                let versions: Vec<String> = majors
                    .iter()
                    .enumerate()
                    .filter_map(|(m, v)| v.map(|v| version_text(m, v)))
                    .collect();
                if !versions.is_empty() {
                    out += &format!(".provides({:?}, &{versions:?})", CAPS[c]);
                }
            }
            match e.requires[c] {
                Some((spec, false)) => {
                    out += &format!(".requires({:?}, {:?})", CAPS[c], SPECS[spec])
                }
                Some((spec, true)) => {
                    out += &format!(".optional({:?}, {:?})", CAPS[c], SPECS[spec])
                }
                None => {}
            }
            if let Some(t) = e.prefer[c] {
                out += &format!(".prefer({:?}, {:?})", CAPS[c], IDS[t]);
            }
        }
    }
    for c in 0..3 {
        if let Some(t) = desc.global[c] {
            out += &format!("\n    .prefer_global({:?}, {:?})", CAPS[c], IDS[t]);
        }
    }
    out
}

/// Attach the rendered description to a failure.
fn with_desc(desc: &Desc, r: Result<(), TestCaseError>) -> Result<(), TestCaseError> {
    r.map_err(|e| TestCaseError::fail(format!("{e}\ninput:\n{}", render(desc))))
}

fn build(desc: &Desc, order: &Order) -> Option<Composition> {
    builder(desc, order).build().ok()
}

fn build_plain(desc: &Desc) -> Option<Composition> {
    build(desc, &Order::identity(desc))
}

// ---------------------------------------------------------------------------
// Strategies

fn caps_of<T: std::fmt::Debug + Clone>(
    s: impl Strategy<Value = T> + Clone,
) -> impl Strategy<Value = Vec<T>> {
    prop::collection::vec(s, CAPS.len())
}

fn entry_strategy() -> impl Strategy<Value = EntryDesc> {
    (
        prop_oneof![3 => Just(0), 2 => 1..SCOPES.len()],
        caps_of(prop::option::weighted(
            0.45,
            prop::collection::vec(prop::option::weighted(0.5, 0..MINORS.len()), 3),
        )),
        caps_of(prop::option::weighted(
            0.45,
            (0..SPECS.len(), prop::bool::weighted(0.25)),
        )),
        caps_of(prop::option::weighted(0.3, 0..IDS.len())),
    )
        .prop_map(|(scope, provides, requires, prefer)| EntryDesc {
            id: 0,
            scope,
            provides,
            requires,
            prefer,
        })
}

fn scope_strategy() -> impl Strategy<Value = ScopeDesc> {
    (
        prop::option::weighted(0.3, caps_of(prop::bool::weighted(0.7))),
        caps_of(prop::option::weighted(0.3, 0..IDS.len())),
        caps_of(prop::option::weighted(0.15, 0..SPECS.len())),
    )
        .prop_map(|(view, prefer, requires)| ScopeDesc {
            view,
            prefer,
            requires,
        })
}

fn desc_strategy() -> impl Strategy<Value = Desc> {
    (
        prop::collection::vec(prop::option::weighted(0.6, scope_strategy()), SCOPES.len()),
        prop::collection::vec(entry_strategy(), 1..=MAX_ENTRIES),
        caps_of(prop::option::weighted(0.4, 0..IDS.len())),
    )
        .prop_map(|(scopes, mut entries, global)| {
            for (i, e) in entries.iter_mut().enumerate() {
                e.id = i;
            }
            Desc {
                scopes,
                entries,
                global,
            }
        })
}

fn order_strategy() -> impl Strategy<Value = (Vec<usize>, Vec<usize>, bool)> {
    (
        Just((0..MAX_ENTRIES).collect::<Vec<_>>()).prop_shuffle(),
        Just((0..SCOPES.len()).collect::<Vec<_>>()).prop_shuffle(),
        any::<bool>(),
    )
}

// ---------------------------------------------------------------------------
// The oracle, naively from the specification

#[derive(Clone, Debug, PartialEq)]
enum Sel {
    None,
    One(usize, Option<PreferenceLevel>),
    Ambiguous(Vec<usize>),
}

#[derive(Clone, Debug)]
struct OReq {
    consumer: String,
    holder: Option<usize>,
    scope: ScopePath,
    requirement: Requirement,
    /// Seen providers (lineage, exposed, not the consumer).
    seen: Vec<usize>,
    /// Seen providers that accept, with the highest accepted version.
    accepting: Vec<(usize, Version)>,
    /// Viable accepting providers.
    cands: Vec<usize>,
    selection: Sel,
    status: Status,
}

impl OReq {
    fn hard_entry(&self) -> Option<usize> {
        if self.requirement.optional {
            None
        } else {
            self.holder
        }
    }

    fn accepts(&self, p: usize) -> bool {
        self.accepting.iter().any(|(q, _)| *q == p)
    }
}

#[derive(Debug)]
struct Oracle {
    ids: Vec<EntryId>,
    /// Declared graph: adjacency consumer -> provider.
    declared: Vec<Vec<bool>>,
    /// Its transitive closure.
    reach: Vec<Vec<bool>>,
    cycle: Vec<bool>,
    eligible: Vec<bool>,
    reqs: Vec<OReq>,
    edges: BTreeSet<(usize, usize)>,
}

fn oracle(c: &Composition) -> Oracle {
    let entries: Vec<&Entry> = c.entries.values().collect();
    let n = entries.len();
    let index_of = |id: &EntryId| entries.iter().position(|e| &e.id == id);
    let exposed = |scope: &ScopePath, cap: &CapabilityName| {
        c.scopes
            .iter()
            .filter(|(p, _)| p.is_ancestor_or_self(scope))
            .all(|(_, d)| d.capabilities.as_ref().is_none_or(|v| v.contains(cap)))
    };
    let best = |p: usize, r: &Requirement| -> Option<Version> {
        entries[p]
            .manifest
            .provides
            .get(&r.capability)?
            .versions
            .iter()
            .filter(|v| r.accepts(v))
            .max()
            .cloned()
    };

    let mut raw: Vec<(String, Option<usize>, ScopePath, Requirement)> = Vec::new();
    for (path, decl) in &c.scopes {
        for r in decl.requirements.values() {
            raw.push((path.to_string(), None, path.clone(), r.clone()));
        }
    }
    for (i, e) in entries.iter().enumerate() {
        for r in e.manifest.requires.values() {
            raw.push((e.id.to_string(), Some(i), e.scope.value.clone(), r.clone()));
        }
    }
    let mut reqs: Vec<OReq> = raw
        .into_iter()
        .map(|(consumer, holder, scope, requirement)| {
            let cap = &requirement.capability;
            let seen: Vec<usize> = (0..n)
                .filter(|&p| Some(p) != holder)
                .filter(|&p| entries[p].manifest.provides.contains_key(cap))
                .filter(|&p| entries[p].scope.value.is_ancestor_or_self(&scope))
                .filter(|_| exposed(&scope, cap))
                .collect();
            let accepting = seen
                .iter()
                .filter_map(|&p| best(p, &requirement).map(|v| (p, v)))
                .collect();
            OReq {
                consumer,
                holder,
                scope,
                requirement,
                seen,
                accepting,
                cands: Vec::new(),
                selection: Sel::None,
                status: Status::NoProvider,
            }
        })
        .collect();

    // Declared graph and cycle members (transitive closure).
    let mut declared = vec![vec![false; n]; n];
    for r in &reqs {
        if let Some(i) = r.hard_entry() {
            for (p, _) in &r.accepting {
                declared[i][*p] = true;
            }
        }
    }
    let mut reach = declared.clone();
    for k in 0..n {
        for i in 0..n {
            for j in 0..n {
                if reach[i][k] && reach[k][j] {
                    reach[i][j] = true;
                }
            }
        }
    }
    let cycle: Vec<bool> = (0..n)
        .map(|i| (0..n).any(|j| j != i && reach[i][j] && reach[j][i]))
        .collect();

    // Viability.
    let mut viable: Vec<bool> = cycle.iter().map(|c| !c).collect();
    loop {
        let mut changed = false;
        for r in &reqs {
            if let Some(i) = r.hard_entry()
                && viable[i]
                && !r.accepting.iter().any(|(p, _)| viable[*p])
            {
                viable[i] = false;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }

    // Selection.
    for r in &mut reqs {
        let cap = &r.requirement.capability;
        r.cands = r
            .accepting
            .iter()
            .map(|(p, _)| *p)
            .filter(|&p| viable[p])
            .collect();
        r.selection = match r.cands.len() {
            0 => Sel::None,
            1 => Sel::One(r.cands[0], None),
            _ => {
                let levels = [
                    (
                        PreferenceLevel::Consumer,
                        r.holder.and_then(|h| entries[h].prefer.get(cap)),
                    ),
                    (
                        PreferenceLevel::Scope,
                        c.scopes.get(&r.scope).and_then(|d| d.prefer.get(cap)),
                    ),
                    (PreferenceLevel::Global, c.preferences.global.get(cap)),
                ];
                levels
                    .iter()
                    .find_map(|(level, pref)| {
                        let p = index_of(&pref.as_ref()?.value)?;
                        r.cands.contains(&p).then_some(Sel::One(p, Some(*level)))
                    })
                    .unwrap_or_else(|| Sel::Ambiguous(r.cands.clone()))
            }
        };
    }

    // Eligibility.
    let mut eligible = viable.clone();
    loop {
        let mut changed = false;
        for r in &reqs {
            if let Some(i) = r.hard_entry() {
                let ok = match r.selection {
                    Sel::One(p, _) => eligible[p],
                    _ => false,
                };
                if eligible[i] && !ok {
                    eligible[i] = false;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }

    // Statuses and edges.
    let mut edges = BTreeSet::new();
    for r in &mut reqs {
        let cap = &r.requirement.capability;
        r.status = match &r.selection {
            Sel::One(p, _) if eligible[*p] => Status::Resolved,
            Sel::One(..) => Status::ProviderPending,
            Sel::Ambiguous(_) => Status::Ambiguous,
            Sel::None => {
                if r.seen.iter().any(|&p| !r.accepts(p) && eligible[p]) {
                    Status::VersionMismatch
                } else if !r.accepting.is_empty() {
                    Status::ProviderPending
                } else if !r.seen.is_empty() {
                    Status::VersionMismatch
                } else if (0..n)
                    .any(|p| Some(p) != r.holder && entries[p].manifest.provides.contains_key(cap))
                {
                    Status::NotVisible
                } else if r
                    .holder
                    .is_some_and(|h| entries[h].manifest.provides.contains_key(cap))
                {
                    Status::SelfReference
                } else {
                    Status::NoProvider
                }
            }
        };
        if let (Status::Resolved, Some(i), Sel::One(p, _)) = (r.status, r.holder, &r.selection)
            && eligible[i]
        {
            edges.insert((*p, i));
        }
    }

    Oracle {
        ids: entries.iter().map(|e| e.id.clone()).collect(),
        declared,
        reach,
        cycle,
        eligible,
        reqs,
        edges,
    }
}

/// Length of a shortest closed path through the smallest of `members`
/// inside the component (breadth-first search).
fn shortest_cycle_len(declared: &[Vec<bool>], members: &[usize]) -> Option<usize> {
    let start = *members.first()?;
    let mut seen: BTreeSet<usize> = BTreeSet::from([start]);
    let mut frontier = vec![start];
    let mut depth = 0;
    while !frontier.is_empty() {
        depth += 1;
        let mut next = Vec::new();
        for &u in &frontier {
            for &v in members {
                if declared[u][v] {
                    if v == start {
                        return Some(depth);
                    }
                    if seen.insert(v) {
                        next.push(v);
                    }
                }
            }
        }
        frontier = next;
    }
    None
}

/// Topological order of the eligible entries over `edges`, ties by smallest
/// index; `None` when the edges among eligible entries contain a cycle.
fn topological(eligible: &[bool], edges: &BTreeSet<(usize, usize)>) -> Option<Vec<usize>> {
    let n = eligible.len();
    let mut placed = vec![false; n];
    let mut order = Vec::new();
    while order.len() < eligible.iter().filter(|&&e| e).count() {
        let next = (0..n).find(|&e| {
            eligible[e]
                && !placed[e]
                && edges
                    .iter()
                    .all(|&(p, c)| c != e || !eligible[p] || placed[p])
        })?;
        placed[next] = true;
        order.push(next);
    }
    Some(order)
}

// ---------------------------------------------------------------------------
// Checks

fn check_oracle(c: &Composition, plan: &Plan) -> Result<(), TestCaseError> {
    let o = oracle(c);
    let entries: Vec<&Entry> = c.entries.values().collect();
    let id = |i: usize| o.ids[i].clone();

    // Resolutions: one per requirement, sorted by (consumer, capability).
    let keys: Vec<(String, String)> = plan
        .resolutions
        .iter()
        .map(|r| (r.consumer.name().to_owned(), r.capability().to_string()))
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    prop_assert_eq!(&keys, &sorted, "resolutions not sorted");
    let expected: BTreeMap<(String, String), &OReq> = o
        .reqs
        .iter()
        .map(|r| {
            (
                (r.consumer.clone(), r.requirement.capability.to_string()),
                r,
            )
        })
        .collect();
    prop_assert_eq!(keys.len(), expected.len(), "resolution count");
    for r in &plan.resolutions {
        let key = (r.consumer.name().to_owned(), r.capability().to_string());
        let Some(want) = expected.get(&key) else {
            return Err(TestCaseError::fail(format!(
                "unexpected resolution {key:?}"
            )));
        };
        prop_assert_eq!(r.status, want.status, "status of {:?}", key);
        prop_assert_eq!(&r.scope, &want.scope, "scope of {:?}", key);
        prop_assert_eq!(
            &r.requirement,
            &want.requirement,
            "requirement of {:?}",
            key
        );
        prop_assert_eq!(
            r.consumer.kind(),
            if want.holder.is_some() {
                "plugin"
            } else {
                "scope"
            },
            "consumer kind of {:?}",
            key
        );
        match (&want.selection, want.status) {
            (Sel::One(p, level), Status::Resolved) => {
                let Some(sel) = &r.selected else {
                    return Err(TestCaseError::fail(format!(
                        "{key:?}: resolved without selection"
                    )));
                };
                prop_assert_eq!(&sel.entry, &o.ids[*p], "selected provider of {:?}", key);
                let version = want
                    .accepting
                    .iter()
                    .find(|(q, _)| q == p)
                    .map(|(_, v)| v.clone());
                prop_assert_eq!(
                    Some(&sel.version),
                    version.as_ref(),
                    "bound version of {:?}",
                    key
                );
                prop_assert_eq!(
                    &sel.scope,
                    &entries[*p].scope.value,
                    "provider scope of {:?}",
                    key
                );
                let origin = if entries[*p].scope.value == want.scope {
                    ProviderOrigin::Local
                } else {
                    ProviderOrigin::Inherited
                };
                prop_assert_eq!(sel.origin, origin, "origin of {:?}", key);
                let reason = match level {
                    None => SelectionReason::OnlyEligible,
                    Some(l) => SelectionReason::ExplicitPreference(*l),
                };
                prop_assert_eq!(r.reason, Some(reason), "reason of {:?}", key);
            }
            _ => {
                prop_assert!(
                    r.selected.is_none(),
                    "{:?}: unexpected selection {:?}",
                    key,
                    r.selected
                );
                prop_assert!(r.reason.is_none(), "{:?}: unexpected reason", key);
            }
        }
        let between: Vec<EntryId> = match &want.selection {
            Sel::Ambiguous(cands) => cands.iter().map(|&p| id(p)).collect(),
            _ => Vec::new(),
        };
        prop_assert_eq!(
            &r.ambiguous_between,
            &between,
            "ambiguous_between of {:?}",
            key
        );
    }

    // Eligibility, pending.
    let ids: Vec<&EntryId> = plan.entries.keys().collect();
    prop_assert_eq!(ids, o.ids.iter().collect::<Vec<_>>(), "entry plans");
    for (i, e) in o.ids.iter().enumerate() {
        prop_assert_eq!(
            plan.entries[e].eligible,
            o.eligible[i],
            "eligibility of {}",
            e
        );
    }
    let pending: Vec<EntryId> = (0..o.ids.len())
        .filter(|&i| !o.eligible[i])
        .map(id)
        .collect();
    prop_assert_eq!(&plan.pending, &pending, "pending");

    // Cycles: `cycles` holds each strongly connected component's members,
    // sorted; `cycle_paths`, parallel, a shortest closed path of the
    // declared graph through the component's smallest member.
    let n = o.ids.len();
    let components: BTreeSet<Vec<usize>> = (0..n)
        .filter(|&i| o.cycle[i])
        .map(|i| {
            (0..n)
                .filter(|&j| j == i || (o.reach[i][j] && o.reach[j][i]))
                .collect()
        })
        .collect();
    let want: Vec<Vec<EntryId>> = components
        .iter()
        .map(|m| m.iter().map(|&i| id(i)).collect())
        .collect();
    prop_assert_eq!(&plan.cycles, &want, "cycles (components)");
    prop_assert_eq!(
        plan.cycle_paths.len(),
        plan.cycles.len(),
        "cycle_paths not parallel to cycles"
    );
    for (members, path) in components.iter().zip(&plan.cycle_paths) {
        let ix: Vec<usize> = path
            .iter()
            .map(|e| o.ids.iter().position(|x| x == e).unwrap_or(usize::MAX))
            .collect();
        prop_assert!(
            ix.iter().all(|i| members.contains(i)),
            "path {:?} leaves its component",
            path
        );
        prop_assert_eq!(
            ix.first(),
            members.first(),
            "path {:?} does not start at the smallest member",
            path
        );
        for k in 0..ix.len() {
            let (a, b) = (ix[k], ix[(k + 1) % ix.len()]);
            prop_assert!(
                o.declared[a][b],
                "path {:?}: no declared edge {} -> {}",
                path,
                o.ids[a],
                o.ids[b]
            );
        }
        prop_assert_eq!(
            Some(ix.len()),
            shortest_cycle_len(&o.declared, members),
            "path {:?} is not shortest",
            path
        );
    }
    for (i, e) in o.ids.iter().enumerate() {
        let cycles: Vec<usize> = plan.entries[e]
            .pending
            .iter()
            .filter_map(|p| match p {
                PendingReason::Cycle { cycle } => Some(*cycle),
                PendingReason::Requirement { .. } => None,
            })
            .collect();
        let want: Vec<usize> = components
            .iter()
            .position(|m| m.contains(&i))
            .into_iter()
            .collect();
        prop_assert_eq!(cycles, want, "cycle pending reason of {}", e);
    }

    // Edges.
    let edges: Vec<(EntryId, EntryId)> = o.edges.iter().map(|&(p, c)| (id(p), id(c))).collect();
    prop_assert_eq!(&plan.edges, &edges, "edges");
    Ok(())
}

fn check_order(plan: &Plan) -> Result<(), TestCaseError> {
    let eligible: BTreeSet<&EntryId> = plan
        .entries
        .iter()
        .filter(|(_, e)| e.eligible)
        .map(|(id, _)| id)
        .collect();
    let in_order: BTreeSet<&EntryId> = plan.activation_order.iter().collect();
    prop_assert_eq!(
        in_order.len(),
        plan.activation_order.len(),
        "duplicate in activation order"
    );
    prop_assert_eq!(
        &in_order,
        &eligible,
        "activation order is not the eligible set"
    );
    let pending: Vec<&EntryId> = plan
        .entries
        .iter()
        .filter(|(_, e)| !e.eligible)
        .map(|(id, _)| id)
        .collect();
    prop_assert_eq!(
        plan.pending.iter().collect::<Vec<_>>(),
        pending,
        "pending is not the sorted ineligible set"
    );
    let position: BTreeMap<&EntryId, usize> = plan
        .activation_order
        .iter()
        .enumerate()
        .map(|(i, e)| (e, i))
        .collect();
    for (id, e) in &plan.entries {
        prop_assert_eq!(e.order, position.get(id).copied(), "order field of {}", id);
    }
    // Every edge joins eligible entries.
    for (p, c) in &plan.edges {
        prop_assert!(
            eligible.contains(p) && eligible.contains(c),
            "edge ({}, {}) touches a pending entry",
            p,
            c
        );
    }
    // Where the edges admit a topological order, the activation order is the
    // smallest-id-first one (and so respects every edge).
    let ids: Vec<&EntryId> = plan.entries.keys().collect();
    let ix = |e: &EntryId| ids.iter().position(|x| *x == e).unwrap_or(usize::MAX);
    let flags: Vec<bool> = plan.entries.values().map(|e| e.eligible).collect();
    let edges: BTreeSet<(usize, usize)> = plan.edges.iter().map(|(p, c)| (ix(p), ix(c))).collect();
    if let Some(topo) = topological(&flags, &edges) {
        for (p, c) in &plan.edges {
            prop_assert!(
                position[p] < position[c],
                "provider {} activates after consumer {}",
                p,
                c
            );
        }
        let want: Vec<EntryId> = topo.iter().map(|&i| ids[i].clone()).collect();
        prop_assert_eq!(&plan.activation_order, &want, "activation order");
    }
    Ok(())
}

fn prop_oracle(desc: &Desc) -> Result<(), TestCaseError> {
    let Some(c) = build_plain(desc) else {
        return Ok(());
    };
    let plan = resolve(&c);
    // The hashed index answers what the sorted search does, for every id
    // (those naming no entry included).
    let index = plan.resolution_index();
    for id in IDS {
        prop_assert_eq!(
            index.of(id),
            plan.resolutions_of(id),
            "resolutions of {}",
            id
        );
    }
    check_oracle(&c, &plan)
}

fn prop_permutation(desc: &Desc, order: Order) -> Result<(), TestCaseError> {
    let Some(c) = build_plain(desc) else {
        return Ok(());
    };
    let Some(shuffled) = build(desc, &order) else {
        return Err(TestCaseError::fail("shuffled description failed to build"));
    };
    prop_assert_eq!(&c, &shuffled, "composition differs by insertion order");
    prop_assert_eq!(
        resolve(&c),
        resolve(&shuffled),
        "plan differs by insertion order {:?}",
        order
    );
    Ok(())
}

fn prop_unrelated(desc: &Desc, scope: usize) -> Result<(), TestCaseError> {
    let Some(c) = build_plain(desc) else {
        return Ok(());
    };
    let Ok(bigger) = builder(desc, &Order::identity(desc))
        .entry(UNRELATED)
        .in_scope(SCOPES[scope])
        .provides("fresh", &["1.0.0"])
        .build()
    else {
        return Err(TestCaseError::fail(
            "failed to build with the unrelated entry",
        ));
    };
    let before = resolve(&c);
    let after = resolve(&bigger);
    let new = EntryId::new(UNRELATED).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&after.resolutions, &before.resolutions);
    prop_assert_eq!(&after.edges, &before.edges);
    prop_assert_eq!(&after.cycles, &before.cycles);
    prop_assert_eq!(&after.pending, &before.pending);
    prop_assert_eq!(&after.preference_findings, &before.preference_findings);
    prop_assert!(after.is_eligible(&new));
    let order: Vec<&EntryId> = after
        .activation_order
        .iter()
        .filter(|e| **e != new)
        .collect();
    prop_assert_eq!(order, before.activation_order.iter().collect::<Vec<_>>());
    for (id, e) in &before.entries {
        let a = &after.entries[id];
        prop_assert_eq!(a.eligible, e.eligible, "eligibility of {}", id);
        prop_assert_eq!(&a.pending, &e.pending, "pending reasons of {}", id);
    }
    Ok(())
}

fn prop_deterministic(desc: &Desc) -> Result<(), TestCaseError> {
    let Some(c) = build_plain(desc) else {
        return Ok(());
    };
    let first = resolve(&c);
    prop_assert_eq!(&first, &resolve(&c));
    prop_assert_eq!(&first, &resolve(&c.clone()));
    let tree = crate::engine::tree::ScopeTree::new(&c);
    prop_assert_eq!(&first, &resolve_with_tree(&c, &tree));
    Ok(())
}

/// Entries whose removal may not change any selection: on no cycle, selected
/// by no requirement (also not as a pending provider), and no candidate of an
/// ambiguous requirement (per the oracle).
fn removable(o: &Oracle) -> Vec<usize> {
    (0..o.ids.len())
        .filter(|&p| !o.cycle[p])
        .filter(|&p| {
            o.reqs.iter().all(|r| match &r.selection {
                Sel::One(q, _) => *q != p,
                Sel::Ambiguous(cands) => !cands.contains(&p),
                Sel::None => true,
            })
        })
        .collect()
}

fn prop_removal(desc: &Desc, pick: prop::sample::Index) -> Result<(), TestCaseError> {
    let Some(c) = build_plain(desc) else {
        return Ok(());
    };
    let candidates = removable(&oracle(&c));
    if candidates.is_empty() {
        return Ok(());
    }
    let gone = c
        .entries
        .keys()
        .nth(candidates[pick.index(candidates.len())])
        .cloned();
    let Some(gone) = gone else {
        return Err(TestCaseError::fail("bad index"));
    };
    let mut smaller = desc.clone();
    smaller.entries.retain(|e| IDS[e.id] != gone.as_str());
    let Some(c2) = build_plain(&smaller) else {
        return Err(TestCaseError::fail("failed to build without the provider"));
    };
    let before = resolve(&c);
    let after = resolve(&c2);
    let sel = |r: &Resolution| r.selected.as_ref().map(|s| s.entry.clone());
    for r in &after.resolutions {
        let (name, cap) = (r.consumer.name(), r.capability().as_str());
        let Some(old) = before.resolution(name, cap) else {
            return Err(TestCaseError::fail(format!("new resolution {name}/{cap}")));
        };
        prop_assert_eq!(
            sel(r),
            sel(old),
            "removing {}: selection of {}/{}",
            gone,
            name,
            cap
        );
        prop_assert_eq!(
            &r.ambiguous_between,
            &old.ambiguous_between,
            "removing {}: {}/{}",
            gone,
            name,
            cap
        );
    }
    let old_edges: Vec<(EntryId, EntryId)> = before
        .edges
        .iter()
        .filter(|(_, c)| *c != gone)
        .cloned()
        .collect();
    prop_assert_eq!(&after.edges, &old_edges, "removing {}: edges", gone);
    for (id, e) in &after.entries {
        prop_assert_eq!(
            e.eligible,
            before.entries[id].eligible,
            "removing {}: eligibility of {}",
            gone,
            id
        );
    }
    Ok(())
}

fn prop_order(desc: &Desc) -> Result<(), TestCaseError> {
    let Some(c) = build_plain(desc) else {
        return Ok(());
    };
    check_order(&resolve(&c))
}

/// What gathering found, requirement by requirement, in a form to compare.
type GatheredRow = (String, usize, String, Vec<usize>, Vec<usize>, [bool; 4]);

fn gathered_rows(g: &super::gather::Gathered<'_>) -> Vec<GatheredRow> {
    g.requirements
        .iter()
        .map(|q| {
            (
                format!("{:?}", q.holder),
                q.scope,
                format!("{:?}", q.requirement),
                g.accepted(q).iter().map(|c| c.entry).collect(),
                g.exposed_rejected(q).to_vec(),
                [q.hidden_in_lineage, q.elsewhere, q.self_provides, q.gates()],
            )
        })
        .collect()
}

/// Gathering cut at any (scope, entry offset) — the two parts walked apart,
/// the second stacking the providers above its start — finds what the walk
/// from the root finds.
fn prop_cut_anywhere(desc: &Desc) -> Result<(), TestCaseError> {
    use super::gather::{Cut, gather_cut};
    let Some(c) = build_plain(desc) else {
        return Ok(());
    };
    let tree = ScopeTree::new(&c);
    let whole = gathered_rows(&gather_cut(&c, &tree, Cut::At(tree.len(), 0)));
    for ix in 0..=tree.len() {
        for offset in 0..=c.entries.len() + 1 {
            let cut = gathered_rows(&gather_cut(&c, &tree, Cut::At(ix, offset)));
            prop_assert_eq!(&cut, &whole, "cut at ({}, {})", ix, offset);
        }
    }
    Ok(())
}

/// 256 cases (`PROPTEST_CASES` overrides); no regression files are written.
fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::with_cases(cases)
    }
}

proptest! {
    #![proptest_config(config())]

    /// 1. Agreement with the brute-force oracle.
    #[test]
    fn agrees_with_oracle(desc in desc_strategy()) {
        with_desc(&desc, prop_oracle(&desc))?;
    }

    /// 2. Insertion order of entries, scopes and preferences is irrelevant.
    #[test]
    fn permutation_invariant(desc in desc_strategy(), (entries, scopes, reverse_caps) in order_strategy()) {
        let entries = entries.into_iter().filter(|&i| i < desc.entries.len()).collect();
        with_desc(&desc, prop_permutation(&desc, Order { entries, scopes, reverse_caps }))?;
    }

    /// 3. An unrelated entry changes nothing that exists.
    #[test]
    fn unrelated_entry_changes_nothing(desc in desc_strategy(), scope in 0..SCOPES.len()) {
        with_desc(&desc, prop_unrelated(&desc, scope))?;
    }

    /// 4. Resolution is deterministic.
    #[test]
    fn repeated_runs_are_identical(desc in desc_strategy()) {
        with_desc(&desc, prop_deterministic(&desc))?;
    }

    /// 5. Removing a provider that nothing selected, that is no candidate of
    /// an ambiguous requirement and that is on no cycle changes no selection.
    #[test]
    fn removing_an_unselected_provider_changes_no_selection(desc in desc_strategy(), pick in any::<prop::sample::Index>()) {
        with_desc(&desc, prop_removal(&desc, pick))?;
    }

    /// 6. Activation order and pending list are consistent with the plan.
    #[test]
    fn activation_order_respects_edges(desc in desc_strategy()) {
        with_desc(&desc, prop_order(&desc))?;
    }

    /// 7. Where the gathering walk is cut in two (for a second core) never
    /// changes what it finds.
    #[test]
    fn gathering_cut_anywhere_finds_the_same(desc in desc_strategy()) {
        with_desc(&desc, prop_cut_anywhere(&desc))?;
    }
}

// ---------------------------------------------------------------------------
// Deterministic tests

#[test]
fn pool_specifiers_and_versions_parse() {
    for s in SPECS {
        assert!(
            crate::engine::specifier::Specifier::parse(s).is_ok(),
            "{s:?}"
        );
    }
    for m in 0..3 {
        for v in 0..MINORS.len() {
            assert!(Version::parse(&version_text(m, v)).is_ok());
        }
    }
}

/// Regression (found by `agrees_with_oracle`): cycle members used to be the
/// entries of the *shortest cycle* of a strongly connected component, not
/// the whole component.
///
/// Declared graph: a→b (y), b→a (x), b→c (z), c→b (y), plus a→d and c→d (y).
/// {a, b, c} is one component: c is on the directed cycle b→c→b. `a` and `c`
/// are symmetric, yet only `a` (on the shortest cycle [a, b]) was treated as
/// a cycle member; `c` stayed viable through `d` and activated.
#[test]
fn every_member_of_a_cyclic_component_is_a_cycle_member() {
    let c = CompositionBuilder::new()
        .entry("a")
        .provides("x", &["1.0.0"])
        .requires("y", "")
        .entry("b")
        .provides("y", &["1.0.0"])
        .requires("x", "")
        .requires("z", "")
        .entry("c")
        .provides("z", &["1.0.0"])
        .requires("y", "")
        .entry("d")
        .provides("y", &["1.0.0"])
        .build()
        .unwrap();
    let plan = resolve(&c);
    let names = |v: &[Vec<EntryId>]| -> Vec<Vec<String>> {
        v.iter()
            .map(|c| c.iter().map(ToString::to_string).collect())
            .collect()
    };
    assert_eq!(names(&plan.cycles), [["a", "b", "c"]]);
    assert_eq!(names(&plan.cycle_paths), [["a", "b"]]);
    let members: BTreeSet<&str> = plan.cycles.iter().flatten().map(EntryId::as_str).collect();
    assert_eq!(
        members,
        BTreeSet::from(["a", "b", "c"]),
        "cycles: {:?}",
        plan.cycles
    );
    let pending: Vec<&str> = plan.pending.iter().map(EntryId::as_str).collect();
    assert_eq!(pending, ["a", "b", "c"]);
    let order: Vec<&str> = plan.activation_order.iter().map(EntryId::as_str).collect();
    assert_eq!(order, ["d"]);
}
