//! The resolver: a pure, deterministic function from a composition to a plan.
//!
//! Steps, each linear in entries, requirements and the candidate lists:
//! 1. gather, per requirement, the visible providers that accept it (a
//!    pre-order walk keeping a per-capability stack of the providers on the
//!    current lineage, so no requirement walks its ancestors); requirements
//!    of one scope with one capability and specifier share one list, so N
//!    consumers among N providers make one list of N, not N of N;
//! 2. find dependency cycles on the declared, visibility-filtered graph of
//!    hard requirements (petgraph's Tarjan SCC, through a node per shared
//!    list); members are pending;
//! 3. *viability*, a greatest fixpoint: an entry stays viable while each hard
//!    requirement keeps at least one viable accepted candidate (cascade by
//!    counting down candidate counts);
//! 4. selection among the viable candidates: one → selected; several → a
//!    preference (consumer, then scope, then global) naming one of them, else
//!    ambiguous — never a silent tie-break;
//! 5. *eligibility*: viable entries whose hard requirements all selected an
//!    eligible provider (cascade along selections);
//! 6. statuses in the reference's precedence, bound edges, activation order
//!    (Kahn, ties by entry id) and preference findings.
//!
//! One entry offering several contract generations of a capability is one
//! candidate; a requirement binds the highest provided version it accepts.

mod adjacency;
mod gather;
mod graph;
mod origins;
pub mod plan;
mod preferences;

use std::collections::BTreeMap;

pub use gather::best_accepted;
pub use origins::with_origins_of;
pub use plan::*;

use crate::engine::model::{Composition, EntryId};
use crate::engine::parallel;
use crate::engine::tree::ScopeTree;
use adjacency::Adjacency;
use gather::{Gathered, Holder};

/// Resolve `composition`.
pub fn resolve(composition: &Composition) -> Plan {
    let tree = ScopeTree::new(composition);
    resolve_with_tree(composition, &tree)
}

/// Resolve with a scope tree the caller already built.
pub fn resolve_with_tree(composition: &Composition, tree: &ScopeTree) -> Plan {
    let g = gather::gather(composition, tree);
    let n = g.entries.len();

    // 2. Cycles on the declared graph (hard requirements, visible accepted).
    // Steps 3-5 depend on the cycles only through their members, and a large
    // composition rarely has any: on two cores they run beside the cycle
    // search as if there were none, and are redone only when there are.
    let no_cycles: Vec<Option<usize>> = vec![None; n];
    let work = g.requirements.len() + n;
    let (cycles, acyclic) = if parallel::splits(work) {
        let (cycles, acyclic) = parallel::join(
            work,
            || graph::find_cycles(&g),
            || choose(composition, &g, &no_cycles),
        );
        (cycles, Some(acyclic))
    } else {
        (graph::find_cycles(&g), None)
    };
    let mut cycle_of = no_cycles;
    for (ci, cycle) in cycles.iter().enumerate() {
        for &e in &cycle.members {
            cycle_of[e] = Some(ci);
        }
    }
    let Choice {
        selections,
        viable_lists,
        pref_log,
        eligible,
    } = match acyclic {
        Some(choice) if cycles.is_empty() => choice,
        _ => choose(composition, &g, &cycle_of),
    };

    // 6. Statuses and the plan.
    // Resolutions are emitted directly in their published order, (consumer
    // name, capability), instead of being sorted as large values afterwards.
    let (order_of_output, entry_reqs) = output_order(&g);
    // Two halves of the published order, on two cores when large (each
    // requirement's row reads its provider's manifest: memory-bound work);
    // joined in order, so the answer is the same either way.
    // The first part's lists are sized for both (the second is appended
    // without growing them).
    let all = order_of_output.len();
    let chosen = Chosen {
        selections: &selections,
        viable_lists: &viable_lists,
        eligible: &eligible,
    };
    let emit = |part: &[usize], room: usize| emit_rows(&g, tree, &chosen, part, room);
    let (mut rows, tail) = match order_of_output.split_at_checked(all / 2) {
        Some((head, tail)) if parallel::splits(all) => {
            let (rows, tail) = parallel::join(all, || emit(head, all), || emit(tail, tail.len()));
            (rows, Some(tail))
        }
        _ => (emit(&order_of_output, all), None),
    };
    if let Some(mut tail) = tail {
        rows.resolutions.append(&mut tail.resolutions);
        rows.edges.append(&mut tail.edges);
        rows.hard_edges.append(&mut tail.hard_edges);
        rows.pending.append(&mut tail.pending);
    }
    let Rows {
        resolutions,
        mut edges,
        mut hard_edges,
        pending,
    } = rows;
    let mut pending_reasons: Vec<Vec<PendingReason>> = vec![Vec::new(); n];
    for (c, reason) in pending {
        pending_reasons[c].push(reason);
    }
    sort_edges(n, &mut edges);
    edges.dedup();
    sort_edges(n, &mut hard_edges);
    hard_edges.dedup();

    let id = |e: usize| g.entries[e].id.clone();
    // Two independent halves, on two cores when large: the activation order
    // and each entry's plan; the bound edges, the pending list and the
    // preference findings by id.
    let ((activation_order, entries), (edges, pending, preference_findings)) = parallel::join(
        n + edges.len(),
        || {
            let order = graph::activation_order(n, &eligible, &edges, &hard_edges);
            let mut position = vec![None; n];
            for (i, &e) in order.iter().enumerate() {
                position[e] = Some(i);
            }
            let mut entries: Vec<(EntryId, EntryPlan)> = Vec::with_capacity(n);
            for e in 0..n {
                let mut pending = std::mem::take(&mut pending_reasons[e]);
                if let Some(ci) = cycle_of[e] {
                    pending.insert(0, PendingReason::Cycle { cycle: ci });
                }
                if !eligible[e] && pending.is_empty() {
                    // Ineligible only through a provider: say which requirement.
                    for ri in entry_reqs[e].clone() {
                        let (req, sel) = (&g.requirements[ri], &selections[ri]);
                        if !req.requirement.optional
                            && let Selection::One(p, _) = sel
                            && !eligible[*p]
                        {
                            pending.push(PendingReason::Requirement {
                                capability: req.requirement.capability.clone(),
                                status: Status::ProviderPending,
                            });
                        }
                    }
                }
                entries.push((
                    id(e),
                    EntryPlan {
                        eligible: eligible[e],
                        order: position[e],
                        pending,
                    },
                ));
            }
            // Already in id order: the map is bulk-built.
            let entries: BTreeMap<EntryId, EntryPlan> = entries.into_iter().collect();
            let activation_order: Vec<EntryId> = order.iter().map(|&e| id(e)).collect();
            (activation_order, entries)
        },
        || {
            let edges: Vec<(EntryId, EntryId)> =
                edges.iter().map(|&(p, c)| (id(p), id(c))).collect();
            let pending: Vec<EntryId> = (0..n).filter(|&e| !eligible[e]).map(id).collect();
            (edges, pending, pref_log.findings(composition, &g))
        },
    );
    Plan {
        activation_order,
        pending,
        edges,
        cycle_paths: cycles
            .iter()
            .map(|c| c.path.iter().map(|&e| id(e)).collect())
            .collect(),
        cycles: cycles
            .iter()
            .map(|c| c.members.iter().map(|&e| id(e)).collect())
            .collect(),
        resolutions,
        preference_findings,
        entries,
    }
}

/// What steps 3-5 decide: each requirement's selection, what the
/// preferences were seen to do, and which entries are eligible.
struct Choice<'a> {
    selections: Vec<Selection>,
    /// The viable candidates of the lists an ambiguous selection names.
    viable_lists: ViableLists,
    pref_log: preferences::Log<'a>,
    eligible: Vec<bool>,
}

/// The viable candidates of each candidate list, filtered once per list
/// (requirements sharing a list share its viable candidates): all in one
/// array, list `l`'s at `at[l]` once filtered.
struct ViableLists {
    at: Vec<Option<(usize, usize)>>,
    pool: Vec<usize>,
}

impl ViableLists {
    fn new(lists: usize) -> Self {
        Self {
            at: vec![None; lists],
            pool: Vec::new(),
        }
    }

    /// The viable candidates of `req`'s list, sorted, filtered on first use.
    fn of(&mut self, g: &Gathered<'_>, req: &gather::Req<'_>, viable: &[bool]) -> (usize, usize) {
        if let Some(at) = self.at[req.list] {
            return at;
        }
        let start = self.pool.len();
        self.pool.extend(
            g.accepted(req)
                .iter()
                .map(|c| c.entry)
                .filter(|&e| viable[e]),
        );
        let at = (start, self.pool.len());
        self.at[req.list] = Some(at);
        at
    }

    fn get(&self, (start, end): (usize, usize)) -> &[usize] {
        self.pool.get(start..end).unwrap_or_default()
    }
}

/// Steps 3-5 as [`emit_rows`] reads them.
struct Chosen<'c> {
    selections: &'c [Selection],
    viable_lists: &'c ViableLists,
    eligible: &'c [bool],
}

/// Steps 3-5 given each entry's cycle (`cycle_of`): viability, selection
/// among the viable candidates, eligibility.
fn choose<'a>(
    composition: &'a Composition,
    g: &Gathered<'a>,
    cycle_of: &[Option<usize>],
) -> Choice<'a> {
    // 3. Viability.
    let viable = viability(g, cycle_of);

    // 4. Selection among viable candidates.
    // Requirements sharing a candidate list share its viable candidates:
    // filtered once per list, then each requirement only looks up its
    // preferences among them (binary search), so N consumers of one list of
    // N cost N lookups, not N copies of N.
    let mut selections: Vec<Selection> = Vec::with_capacity(g.requirements.len());
    let mut pref_log = preferences::Log::default();
    let mut viable_lists = ViableLists::new(g.lists);
    let mut index_cache = preferences::IndexCache::default();
    for req in &g.requirements {
        let at = viable_lists.of(g, req, &viable);
        let cands = viable_lists.get(at);
        let applicable = preferences::applicable_indexed(composition, g, req, &mut index_cache);
        let sel = match cands {
            [] => Selection::None,
            [one] => Selection::One(*one, SelectionReason::OnlyEligible),
            _ => match preferences::choose(&applicable, cands) {
                Some((e, level)) => Selection::One(e, SelectionReason::ExplicitPreference(level)),
                None => Selection::Ambiguous(at),
            },
        };
        pref_log.observe(&applicable, g, req, cands);
        selections.push(sel);
    }

    // 5. Eligibility with cascade along hard selections.
    let eligible = eligibility(g, &viable, &selections);
    Choice {
        selections,
        viable_lists,
        pref_log,
        eligible,
    }
}

/// What [`emit_rows`] gives for a run of requirements, in published order.
struct Rows {
    resolutions: Vec<Resolution>,
    /// Bound (provider, consumer) edges, in consumer order.
    edges: Vec<(usize, usize)>,
    /// The hard ones among them.
    hard_edges: Vec<(usize, usize)>,
    /// (consumer, why it is pending), in order.
    pending: Vec<(usize, PendingReason)>,
}

/// Step 6 for the requirements at `part` (indices in published order):
/// statuses, resolutions, bound edges and pending reasons, in lists with
/// `room` for that many requirements.
fn emit_rows(
    g: &Gathered<'_>,
    tree: &ScopeTree,
    chosen: &Chosen<'_>,
    part: &[usize],
    room: usize,
) -> Rows {
    let Chosen {
        selections,
        viable_lists,
        eligible,
    } = *chosen;
    // Per list, whether an eligible provider rejects it (requirements
    // sharing a list share the answer), found on first use.
    let mut rejected_eligible: Vec<Option<bool>> = vec![None; g.lists];
    // Per list, its ambiguous candidates by id, named on first use.
    let mut named: Vec<Option<Between>> = vec![None; g.lists];
    // At most one edge per requirement.
    let mut rows = Rows {
        resolutions: Vec::with_capacity(room),
        edges: Vec::with_capacity(room),
        hard_edges: Vec::with_capacity(room),
        pending: Vec::new(),
    };
    for &ri in part {
        let (req, sel) = (&g.requirements[ri], &selections[ri]);
        let (status, selected, reason, ambiguous_between) = match sel {
            Selection::One(p, reason) if eligible[*p] => (
                Status::Resolved,
                Some(*p),
                Some(*reason),
                Between::default(),
            ),
            Selection::One(..) => (Status::ProviderPending, None, None, Between::default()),
            Selection::Ambiguous(at) => {
                // Named once per list, shared by the requirements holding it.
                let between = named[req.list].get_or_insert_with(|| {
                    Between::new(
                        viable_lists
                            .get(*at)
                            .iter()
                            .map(|&e| g.entries[e].id.clone())
                            .collect(),
                    )
                });
                (Status::Ambiguous, None, None, between.clone())
            }
            Selection::None => {
                let rejected_eligible = *rejected_eligible[req.list]
                    .get_or_insert_with(|| g.exposed_rejected(req).iter().any(|&e| eligible[e]));
                let status = unselected_status(g, req, rejected_eligible);
                (status, None, None, Between::default())
            }
        };
        if let Holder::Entry(c) = req.holder {
            if status == Status::Resolved
                && eligible[c]
                && let Some(p) = selected
            {
                rows.edges.push((p, c));
                if !req.requirement.optional {
                    rows.hard_edges.push((p, c));
                }
            }
            if status != Status::Resolved && !req.requirement.optional {
                rows.pending.push((
                    c,
                    PendingReason::Requirement {
                        capability: req.requirement.capability.clone(),
                        status,
                    },
                ));
            }
        }
        let selected = selected.map(|p| {
            // Candidates are sorted by entry.
            let accepted = g.accepted(req);
            let version = accepted
                .binary_search_by_key(&p, |c| c.entry)
                .ok()
                .map(|at| accepted[at].version.clone())
                .unwrap_or_else(|| g.entries[p].manifest.version.clone());
            Selected {
                entry: g.entries[p].id.clone(),
                scope: tree.get(g.entry_scope[p]).path.clone(),
                origin: if g.entry_scope[p] == req.scope {
                    ProviderOrigin::Local
                } else {
                    ProviderOrigin::Inherited
                },
                version,
            }
        });
        rows.resolutions.push(Resolution {
            consumer: req.consumer(g, tree),
            scope: tree.get(req.scope).path.clone(),
            requirement: req.requirement.clone(),
            status,
            selected,
            reason,
            ambiguous_between,
        });
    }
    rows
}

/// The published order of the requirements, (consumer name, capability),
/// ties in gathering order (what a stable sort gives), and each entry's
/// requirement indices.
///
/// An entry's requirements are gathered together, in capability order
/// (manifest maps are sorted), and entries are indexed in id order, so entry
/// requirements are already sorted; only the (few) scope requirements are
/// sorted, then merged in.
fn output_order(g: &Gathered<'_>) -> (Vec<usize>, Vec<std::ops::Range<usize>>) {
    let reqs = &g.requirements;
    let name = |ri: usize| match reqs[ri].holder {
        Holder::Entry(e) => g.entries[e].id.as_str(),
        Holder::Scope(s) => g.scope_paths[s].as_str(),
    };
    let key = |ri: usize| (name(ri), &reqs[ri].requirement.capability, ri);
    let mut entry_reqs: Vec<std::ops::Range<usize>> = vec![0..0; g.entries.len()];
    let mut scope_reqs: Vec<usize> = Vec::new();
    for (ri, req) in reqs.iter().enumerate() {
        match req.holder {
            Holder::Entry(e) if entry_reqs[e].is_empty() => entry_reqs[e] = ri..ri + 1,
            Holder::Entry(e) => entry_reqs[e].end = ri + 1,
            Holder::Scope(_) => scope_reqs.push(ri),
        }
    }
    scope_reqs.sort_by(|&a, &b| key(a).cmp(&key(b)));
    let mut from_entries: Vec<usize> = Vec::with_capacity(reqs.len() - scope_reqs.len());
    for range in &entry_reqs {
        let start = from_entries.len();
        from_entries.extend(range.clone());
        let mine = &mut from_entries[start..];
        if !mine.is_sorted_by_key(|&ri| &reqs[ri].requirement.capability) {
            mine.sort_by(|&a, &b| key(a).cmp(&key(b)));
        }
    }
    let mut out = Vec::with_capacity(reqs.len());
    let (mut i, mut j) = (0, 0);
    while i < from_entries.len() && j < scope_reqs.len() {
        if key(scope_reqs[j]) < key(from_entries[i]) {
            out.push(scope_reqs[j]);
            j += 1;
        } else {
            out.push(from_entries[i]);
            i += 1;
        }
    }
    out.extend_from_slice(&from_entries[i..]);
    out.extend_from_slice(&scope_reqs[j..]);
    (out, entry_reqs)
}

/// Sort `(provider, consumer)` pairs of entry indices below `n`. Edges are
/// collected in consumer order, so a stable counting sort by provider sorts
/// them in linear time; anything else is sorted by comparison.
fn sort_edges(n: usize, edges: &mut Vec<(usize, usize)>) {
    if edges.len() < 64 || !edges.is_sorted_by_key(|&(_, c)| c) {
        edges.sort_unstable();
        return;
    }
    let mut start = vec![0usize; n + 1];
    for &(p, _) in edges.iter() {
        start[p + 1] += 1;
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut sorted = vec![(0, 0); edges.len()];
    for &(p, c) in edges.iter() {
        sorted[start[p]] = (p, c);
        start[p] += 1;
    }
    *edges = sorted;
}

/// What step 4 chose for one requirement.
#[derive(Clone, Debug)]
enum Selection {
    None,
    One(usize, SelectionReason),
    /// Between the viable candidates of a list: where they are in
    /// [`ViableLists`].
    Ambiguous((usize, usize)),
}

/// Status of a requirement with no viable accepted candidate, in the
/// reference's precedence.
/// `rejected_eligible`: whether an eligible provider is among its exposed
/// rejected ones.
fn unselected_status(g: &Gathered<'_>, req: &gather::Req<'_>, rejected_eligible: bool) -> Status {
    let rejected = g.exposed_rejected(req);
    if rejected_eligible {
        Status::VersionMismatch
    } else if !g.accepted(req).is_empty() {
        Status::ProviderPending
    } else if !rejected.is_empty() {
        Status::VersionMismatch
    } else if req.hidden_in_lineage || req.elsewhere {
        Status::NotVisible
    } else if req.self_provides {
        Status::SelfReference
    } else {
        Status::NoProvider
    }
}

/// Greatest fixpoint: entries stay viable while every hard requirement has a
/// viable accepted candidate.
///
/// Counted per candidate list, not per requirement: requirements sharing a
/// list always have the same number of viable candidates (the list's), so
/// a provider going down decrements each list it is in once, and a list
/// reaching zero takes down every consumer holding it by a hard requirement
/// — what counting each requirement's own copy would do, without N copies
/// of a list N consumers share.
fn viability(g: &Gathered<'_>, cycle_of: &[Option<usize>]) -> Vec<bool> {
    let n = g.entries.len();
    let mut viable: Vec<bool> = cycle_of.iter().map(Option::is_none).collect();
    // The lists of hard requirements, each with one of its requirements
    // (to read the list from), and their consumers.
    let mut first_req: Vec<Option<usize>> = vec![None; g.lists];
    for (ri, req) in g.requirements.iter().enumerate() {
        if req.gates() && first_req[req.list].is_none() {
            first_req[req.list] = Some(ri);
        }
    }
    let gating_lists = || {
        first_req
            .iter()
            .enumerate()
            .filter_map(|(l, ri)| ri.map(|ri| (l, &g.requirements[ri])))
    };
    // Per list: number of viable candidates. Reverse index: provider ->
    // lists of hard requirements it is a candidate in.
    let mut count: Vec<usize> = vec![0; g.lists];
    let reverse = Adjacency::new(n, || {
        gating_lists().flat_map(|(l, req)| g.accepted(req).iter().map(move |c| (c.entry, l)))
    });
    let consumers = Adjacency::new(g.lists, || {
        g.requirements
            .iter()
            .filter(|req| req.gates())
            .filter_map(|req| match req.holder {
                Holder::Entry(c) => Some((req.list, c)),
                Holder::Scope(_) => None,
            })
    });
    for (l, req) in gating_lists() {
        count[l] = g.accepted(req).iter().filter(|c| viable[c.entry]).count();
    }
    // Cycle members were never counted; only entries invalidated from here on
    // are queued, so every decrement matches an increment.
    let mut queue: Vec<usize> = Vec::new();
    for req in &g.requirements {
        if let Holder::Entry(c) = req.holder
            && req.gates()
            && count[req.list] == 0
            && viable[c]
        {
            viable[c] = false;
            queue.push(c);
        }
    }
    while let Some(e) = queue.pop() {
        for &l in reverse.of(e) {
            count[l] -= 1;
            if count[l] == 0 {
                for &c in consumers.of(l) {
                    if viable[c] {
                        viable[c] = false;
                        queue.push(c);
                    }
                }
            }
        }
    }
    viable
}

/// Viable entries whose hard requirements selected eligible providers.
fn eligibility(g: &Gathered<'_>, viable: &[bool], selections: &[Selection]) -> Vec<bool> {
    let n = g.entries.len();
    let mut eligible = viable.to_vec();
    let mut queue = Vec::new();
    let gating = || {
        g.requirements
            .iter()
            .zip(selections)
            .filter_map(|(req, sel)| match req.holder {
                Holder::Entry(c) if req.gates() => Some((c, sel)),
                _ => None,
            })
    };
    let dependents = Adjacency::new(n, || {
        gating().filter_map(|(c, sel)| match sel {
            Selection::One(p, _) => Some((*p, c)),
            _ => None,
        })
    });
    for (c, sel) in gating() {
        if !matches!(sel, Selection::One(..)) && eligible[c] {
            eligible[c] = false;
            queue.push(c);
        }
    }
    queue.extend((0..n).filter(|&e| !viable[e]));
    while let Some(p) = queue.pop() {
        for &c in dependents.of(p) {
            if eligible[c] {
                eligible[c] = false;
                queue.push(c);
            }
        }
    }
    eligible
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;
