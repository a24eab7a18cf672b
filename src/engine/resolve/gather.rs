//! Step 1 of resolution: per requirement, the providers it can see and accept.
//!
//! A pre-order walk of the scope tree keeps, per capability, the providers
//! on the current lineage. The walk can start anywhere (it first stacks the
//! providers above its start), so a large composition is gathered in two
//! halves on two cores and joined in order; where it is cut never changes
//! the answer (a proptest cuts it everywhere).

use super::adjacency::Adjacency;
use super::plan::Consumer;
use std::collections::BTreeMap;

use crate::engine::model::{
    CapabilityName, Composition, Entry, EntryId, EntryRef, Provided, Requirement, ScopeDecl,
    ScopePath, SmallMap,
};
use crate::engine::parallel;
use crate::engine::specifier::Specifier;
use crate::engine::tree::{FxHashMap, ScopeIx, ScopeTree};
use crate::engine::version::Version;

/// Who holds a gathered requirement (indices into [`Gathered`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Holder {
    Entry(usize),
    Scope(ScopeIx),
}

/// A visible provider that accepts the requirement, with the version bound.
#[derive(Clone, Debug)]
pub(super) struct Candidate<'a> {
    pub(super) entry: usize,
    pub(super) version: &'a Version,
}

/// One requirement with what its consumer can see.
#[derive(Clone, Debug)]
pub(super) struct Req<'a> {
    pub(super) holder: Holder,
    pub(super) scope: ScopeIx,
    pub(super) requirement: &'a Requirement,
    /// Which candidate list this is, below [`Gathered::lists`]: requirements
    /// that see the same candidates (same scope, capability and specifier,
    /// none providing it itself) share one list, so later steps can work per
    /// list instead of per requirement.
    pub(super) list: usize,
    /// Visible (lineage, exposed), accepting providers, by entry index: a
    /// range of [`Gathered::candidates`] (one list for all requirements
    /// spares an allocation per requirement; requirements sharing a list
    /// share the range).
    accepted: std::ops::Range<usize>,
    /// Visible providers that accept no version of theirs: a range of
    /// [`Gathered::rejected`].
    exposed_rejected: std::ops::Range<usize>,
    /// A lineage provider exists but a capability view hides it.
    pub(super) hidden_in_lineage: bool,
    /// A provider exists outside the lineage.
    pub(super) elsewhere: bool,
    /// The consumer provides the capability itself.
    pub(super) self_provides: bool,
    /// Cached [`Req::gates`]: later steps scan every requirement several
    /// times, and reading the flag here spares a pointer chase into the
    /// manifest per requirement and scan.
    gates: bool,
}

impl Req<'_> {
    /// Whether the requirement gates its consumer (hard, held by an entry).
    pub(super) fn gates(&self) -> bool {
        self.gates
    }

    pub(super) fn consumer(&self, g: &Gathered<'_>, tree: &ScopeTree) -> Consumer {
        match self.holder {
            Holder::Entry(e) => Consumer::Entry(g.entries[e].id.clone()),
            Holder::Scope(s) => Consumer::Scope(tree.get(s).path.clone()),
        }
    }
}

/// Everything later steps need, by index.
pub(super) struct Gathered<'a> {
    /// Entries in id order.
    pub(super) entries: Vec<&'a Entry>,
    /// Scope index of each entry.
    pub(super) entry_scope: Vec<ScopeIx>,
    /// Every requirement: per scope in pre-order, the scope's own
    /// requirements, then its entries' requirements in id order.
    pub(super) requirements: Vec<Req<'a>>,
    /// Scope-level preferences by scope index.
    pub(super) scope_prefer: Vec<Option<&'a BTreeMap<CapabilityName, EntryRef>>>,
    /// Scope paths by scope index.
    pub(super) scope_paths: Vec<ScopePath>,
    /// Whether each entry declares any preference (read once here, so
    /// selection does not visit the entry again for an empty map).
    pub(super) entry_prefers: Vec<bool>,
    /// Accepted candidates of every requirement, each requirement's sorted
    /// by entry.
    candidates: Vec<Candidate<'a>>,
    /// Exposed rejected providers of every requirement, each requirement's
    /// sorted.
    rejected: Vec<usize>,
    /// How many distinct candidate lists there are ([`Req::list`]).
    pub(super) lists: usize,
}

impl<'a> Gathered<'a> {
    /// Visible, accepting providers of `req`, by entry index.
    pub(super) fn accepted(&self, req: &Req<'a>) -> &[Candidate<'a>] {
        &self.candidates[req.accepted.clone()]
    }

    /// Visible providers of `req` that accept no version of theirs.
    pub(super) fn exposed_rejected(&self, req: &Req<'a>) -> &[usize] {
        &self.rejected[req.exposed_rejected.clone()]
    }

    /// Index of the entry with `id`.
    pub(super) fn index_of(&self, id: &EntryId) -> Option<usize> {
        self.entries.binary_search_by(|e| e.id.cmp(id)).ok()
    }
}

/// The highest provided version `requirement` accepts.
pub fn best_accepted<'a>(provided: &'a Provided, requirement: &Requirement) -> Option<&'a Version> {
    provided
        .versions
        .iter()
        .rev()
        .find(|v| requirement.accepts(v))
}

pub(super) fn gather<'a>(composition: &'a Composition, tree: &ScopeTree) -> Gathered<'a> {
    gather_cut(composition, tree, Cut::Auto)
}

/// Where [`gather_cut`] cuts its walk in two.
#[derive(Clone, Copy, Debug)]
pub(super) enum Cut {
    /// Halfway, when the work is worth a second core.
    Auto,
    /// At this (scope, entry offset), the parts one after the other (tests).
    #[cfg(test)]
    At(ScopeIx, usize),
}

/// [`gather`], its walk cut as `cut` says: the answer never depends on it.
pub(super) fn gather_cut<'a>(
    composition: &'a Composition,
    tree: &ScopeTree,
    cut: Cut,
) -> Gathered<'a> {
    let entries: Vec<&Entry> = composition.entries.values().collect();
    let entry_scope: Vec<ScopeIx> = entries
        .iter()
        .map(|e| tree.find(&e.scope.value).unwrap_or(0))
        .collect();
    let decls = tree.decls(composition);
    // Each scope's entries in id order, in one array.
    let by_scope = Adjacency::new(tree.len(), || {
        entry_scope.iter().enumerate().map(|(e, &s)| (s, e))
    });

    // Intern provided capability names; count providers per capability.
    let mut caps: FxHashMap<&str, usize> = FxHashMap::default();
    caps.reserve(entries.len().min(1 << 16));
    // Every entry's (capability, provided) pairs in one list, entry `e`'s at
    // `provided_at[e]..provided_at[e + 1]`.
    let mut provided: Vec<(usize, &Provided)> = Vec::with_capacity(entries.len());
    let mut provided_at: Vec<usize> = Vec::with_capacity(entries.len() + 1);
    let mut total: Vec<usize> = Vec::new();
    let mut entry_prefers: Vec<bool> = Vec::with_capacity(entries.len());
    // Requirements per scope (its own, then its entries'), to cut the walk
    // into two parts of about the same work; counted while each manifest
    // is at hand.
    let mut weights: Vec<usize> = decls
        .iter()
        .map(|d| d.map_or(0, |d| d.requirements.len()))
        .collect();
    for (entry, &scope) in entries.iter().zip(&entry_scope) {
        entry_prefers.push(!entry.prefer.is_empty());
        weights[scope] += entry.manifest.requires.len();
        provided_at.push(provided.len());
        for (name, p) in &entry.manifest.provides {
            let next = caps.len();
            let ix = *caps.entry(name.as_str()).or_insert(next);
            if ix == total.len() {
                total.push(0);
            }
            total[ix] += 1;
            provided.push((ix, p));
        }
    }
    provided_at.push(provided.len());

    let declared: usize = weights.iter().sum();
    let ctx = Ctx {
        provided: &provided,
        provided_at: &provided_at,
        caps: &caps,
        total: &total,
        tree,
        entries: &entries,
        decls: &decls,
        by_scope: &by_scope,
    };
    let end = (tree.len(), 0);
    let mid = match cut {
        Cut::Auto if parallel::splits(declared) => split_point(&ctx, &weights, declared),
        Cut::Auto => None,
        #[cfg(test)]
        Cut::At(ix, offset) => Some((ix, offset)),
    };
    let (requirements, lists) = match mid {
        Some(mid) => {
            let ((mut reqs, mut lists), (tail, tail_lists)) = parallel::join(
                // Forced cuts run in order.
                if matches!(cut, Cut::Auto) {
                    declared
                } else {
                    0
                },
                // The first part's lists have room for both: the second is
                // appended without a copy.
                || ctx.walk((0, 0), mid, declared),
                || ctx.walk(mid, end, declared / 2),
            );
            // The second part's ranges point into its own lists: shift them
            // past the first part's.
            // So are its list ids (each part numbers its lists from 0; the
            // parts share no list, which only costs a list shared across the
            // cut being gathered twice).
            let (c, r, l) = (lists.candidates.len(), lists.rejected.len(), lists.count);
            reqs.reserve(tail.len());
            reqs.extend(tail.into_iter().map(|mut q| {
                q.accepted = q.accepted.start + c..q.accepted.end + c;
                q.exposed_rejected = q.exposed_rejected.start + r..q.exposed_rejected.end + r;
                q.list += l;
                q
            }));
            lists.candidates.extend(tail_lists.candidates);
            lists.rejected.extend(tail_lists.rejected);
            lists.count += tail_lists.count;
            (reqs, lists)
        }
        None => ctx.walk((0, 0), end, declared),
    };
    // Empty tables as `None`: selection then never visits the declaration.
    let scope_prefer = decls
        .iter()
        .map(|d| d.map(|d| &d.prefer).filter(|p| !p.is_empty()))
        .collect();
    let scope_paths = tree.scopes().iter().map(|s| s.path.clone()).collect();
    Gathered {
        entries,
        entry_scope,
        requirements,
        scope_prefer,
        scope_paths,
        entry_prefers,
        candidates: lists.candidates,
        rejected: lists.rejected,
        lists: lists.count,
    }
}

/// Where to cut the walk in two: the first (scope, entry offset) before
/// which at least half of the `declared` requirements lie (a scope's own
/// requirements count before its entries'); `weights` are the requirements
/// of each scope. `None` when nothing lies after the cut.
fn split_point(ctx: &Ctx<'_, '_>, weights: &[usize], declared: usize) -> Option<(ScopeIx, usize)> {
    let half = declared.div_ceil(2);
    let mut before = 0;
    for (ix, &w) in weights.iter().enumerate() {
        if before + w < half {
            before += w;
            continue;
        }
        before += ctx.decls[ix].map_or(0, |d| d.requirements.len());
        for (offset, &e) in ctx.by_scope.of(ix).iter().enumerate() {
            if before >= half {
                return Some((ix, offset));
            }
            before += ctx.entries[e].manifest.requires.len();
        }
        return (ix + 1 < weights.len()).then_some((ix + 1, 0));
    }
    None
}

/// The providers on the walk's lineage (the current scope and its
/// ancestors), per capability: a stack per capability threaded through one
/// list of links, so entering and leaving scopes allocates nothing per
/// capability (a chain of 10,000 capabilities has 10,000 such stacks).
struct Lineage {
    /// Per capability, its newest link (or [`Lineage::NONE`]).
    top: Vec<usize>,
    /// (capability, provider entry, the capability's link below).
    links: Vec<(usize, usize, usize)>,
    /// The scopes entered, each with the link count before it.
    frames: Vec<(ScopeIx, usize)>,
}

impl Lineage {
    const NONE: usize = usize::MAX;

    fn new(capabilities: usize) -> Self {
        Self {
            top: vec![Self::NONE; capabilities],
            links: Vec::new(),
            frames: Vec::new(),
        }
    }

    fn push(&mut self, cap: usize, entry: usize) {
        self.links.push((cap, entry, self.top[cap]));
        self.top[cap] = self.links.len() - 1;
    }

    /// Leave every entered scope that is not `ix` or one of its ancestors.
    fn leave_all_but_ancestors_of(&mut self, tree: &ScopeTree, ix: ScopeIx) {
        while let Some(&(scope, mark)) = self.frames.last() {
            if tree.is_ancestor_or_self(scope, ix) {
                break;
            }
            self.frames.pop();
            while self.links.len() > mark {
                if let Some((cap, _, below)) = self.links.pop() {
                    self.top[cap] = below;
                }
            }
        }
    }

    /// The providers of `cap` on the lineage, newest first.
    fn providers(&self, cap: usize) -> impl Iterator<Item = usize> + '_ {
        let mut at = self.top[cap];
        std::iter::from_fn(move || {
            let &(_, entry, below) = self.links.get(at)?;
            at = below;
            Some(entry)
        })
    }
}

/// The shared candidate lists being filled.
#[derive(Default)]
struct Lists<'a> {
    candidates: Vec<Candidate<'a>>,
    rejected: Vec<usize>,
    /// Lists numbered so far.
    count: usize,
}

/// What a requirement that does not provide its capability sees in the
/// current scope: the same for every such requirement of the scope with the
/// same capability and specifier (the lineage, the capability view and the
/// accepted versions are all the same), so it is gathered once.
#[derive(Clone)]
struct Seen {
    list: usize,
    accepted: std::ops::Range<usize>,
    exposed_rejected: std::ops::Range<usize>,
    hidden_in_lineage: bool,
    elsewhere: bool,
}

/// [`Seen`] by (capability index, specifier), for the scope being walked.
type SeenInScope<'a> = FxHashMap<(usize, &'a Specifier), Seen>;

struct Ctx<'c, 'a> {
    provided: &'c [(usize, &'a Provided)],
    provided_at: &'c [usize],
    caps: &'c FxHashMap<&'a str, usize>,
    total: &'c [usize],
    tree: &'c ScopeTree,
    entries: &'c [&'a Entry],
    decls: &'c [Option<&'a ScopeDecl>],
    by_scope: &'c Adjacency,
}

impl<'a> Ctx<'_, 'a> {
    /// Gather the requirements from `start` up to `end` (each a scope and an
    /// offset into its entries, in walk order: scopes in pre-order, a
    /// scope's own requirements, then its entries' in id order). A walk
    /// that starts inside the tree first stacks the providers of the
    /// scopes above its start, so it sees what the walk from the root sees
    /// there; the ranges of what it returns point into its own lists.
    fn walk(
        &self,
        start: (ScopeIx, usize),
        end: (ScopeIx, usize),
        capacity: usize,
    ) -> (Vec<Req<'a>>, Lists<'a>) {
        let n = self.tree.len();
        let mut lineage = Lineage::new(self.total.len());
        // Sized up front (one candidate per requirement is the common case)
        // instead of growing by copies.
        let mut requirements = Vec::with_capacity(capacity);
        let mut lists = Lists {
            candidates: Vec::with_capacity(capacity),
            rejected: Vec::new(),
            count: 0,
        };
        let mut seen: SeenInScope<'a> = FxHashMap::default();
        if start >= end || start.0 >= n {
            return (requirements, lists);
        }
        let mut above = Vec::new();
        let mut at = self.tree.get(start.0).parent;
        while let Some(p) = at {
            above.push(p);
            at = self.tree.get(p).parent;
        }
        for &ix in above.iter().rev() {
            self.enter(ix, &mut lineage);
        }
        let mut ix = start.0;
        while ix < n && (ix == start.0 || (ix, 0) < end) {
            lineage.leave_all_but_ancestors_of(self.tree, ix);
            self.enter(ix, &mut lineage);
            // (Cleared only when used: clearing costs the map's capacity.)
            if !seen.is_empty() {
                seen.clear();
            }
            let in_scope = self.by_scope.of(ix);
            let lo = if ix == start.0 { start.1 } else { 0 };
            let hi = if ix == end.0 {
                end.1.min(in_scope.len())
            } else {
                in_scope.len()
            };
            let mut gather =
                |holder: Holder, declared: &'a SmallMap<CapabilityName, Requirement>| {
                    for requirement in declared.values() {
                        requirements.push(self.req(
                            holder,
                            ix,
                            requirement,
                            &lineage,
                            &mut lists,
                            &mut seen,
                        ));
                    }
                };
            if lo == 0
                && (ix, 0) < end
                && let Some(decl) = self.decls[ix]
            {
                gather(Holder::Scope(ix), &decl.requirements);
            }
            for &e in in_scope.get(lo..hi).unwrap_or_default() {
                gather(Holder::Entry(e), &self.entries[e].manifest.requires);
            }
            ix += 1;
        }
        (requirements, lists)
    }

    /// The providers entry `e` declares: (capability index, provided).
    fn provided_by(&self, e: usize) -> &[(usize, &'a Provided)] {
        &self.provided[self.provided_at[e]..self.provided_at[e + 1]]
    }

    /// Enter scope `ix`: its providers join the lineage.
    fn enter(&self, ix: ScopeIx, lineage: &mut Lineage) {
        lineage.frames.push((ix, lineage.links.len()));
        for &e in self.by_scope.of(ix) {
            for &(cap, _) in self.provided_by(e) {
                lineage.push(cap, e);
            }
        }
    }

    /// Gather one requirement of scope `scope`, with the lineage of that
    /// scope; `seen` holds what this scope's requirements saw so far.
    fn req(
        &self,
        holder: Holder,
        scope: ScopeIx,
        requirement: &'a Requirement,
        lineage: &Lineage,
        lists: &mut Lists<'a>,
        seen: &mut SeenInScope<'a>,
    ) -> Req<'a> {
        let (c0, r0) = (lists.candidates.len(), lists.rejected.len());
        // A list of its own unless it shares one seen before.
        let list = lists.count;
        lists.count += 1;
        let mut out = Req {
            holder,
            scope,
            requirement,
            list,
            accepted: c0..c0,
            exposed_rejected: r0..r0,
            hidden_in_lineage: false,
            elsewhere: false,
            self_provides: false,
            gates: matches!(holder, Holder::Entry(_)) && !requirement.optional,
        };
        let Some(&cap) = self.caps.get(requirement.capability.as_str()) else {
            return out;
        };
        let me = match holder {
            Holder::Entry(e) => Some(e),
            Holder::Scope(_) => None,
        };
        out.self_provides = me.is_some_and(|e| self.provided_by(e).iter().any(|&(c, _)| c == cap));
        // A consumer that does not provide the capability is never among
        // its providers: what it sees depends on the scope, the capability
        // and the specifier only.
        let key = (cap, &requirement.specifier);
        if !out.self_provides
            && let Some(s) = seen.get(&key)
        {
            // The list numbered above stays unused: the next is numbered
            // in its place.
            lists.count = list;
            out.list = s.list;
            out.accepted = s.accepted.clone();
            out.exposed_rejected = s.exposed_rejected.clone();
            out.hidden_in_lineage = s.hidden_in_lineage;
            out.elsewhere = s.elsewhere;
            return out;
        }
        let visible = lineage.providers(cap).filter(|&p| Some(p) != me);
        let mut lineage_count = 0;
        if self.tree.exposes(scope, &requirement.capability) {
            for p in visible {
                lineage_count += 1;
                let prov = self
                    .provided_by(p)
                    .iter()
                    .find(|&&(c, _)| c == cap)
                    .map(|&(_, pr)| pr);
                match prov.and_then(|pr| best_accepted(pr, requirement)) {
                    Some(version) => lists.candidates.push(Candidate { entry: p, version }),
                    None => lists.rejected.push(p),
                }
            }
        } else {
            lineage_count = visible.count();
            out.hidden_in_lineage = lineage_count > 0;
        }
        lists.candidates[c0..].sort_unstable_by_key(|c| c.entry);
        lists.rejected[r0..].sort_unstable();
        out.accepted = c0..lists.candidates.len();
        out.exposed_rejected = r0..lists.rejected.len();
        let own = usize::from(out.self_provides);
        out.elsewhere = self.total[cap] > lineage_count + own;
        if !out.self_provides {
            seen.insert(
                key,
                Seen {
                    list,
                    accepted: out.accepted.clone(),
                    exposed_rejected: out.exposed_rejected.clone(),
                    hidden_in_lineage: out.hidden_in_lineage,
                    elsewhere: out.elsewhere,
                },
            );
        }
        out
    }
}
