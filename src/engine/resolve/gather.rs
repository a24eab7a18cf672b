//! Step 1 of resolution: per requirement, the providers it can see and accept.

use super::plan::Consumer;
use std::collections::BTreeMap;

use crate::engine::model::{
    CapabilityName, Composition, Entry, EntryId, EntryRef, Provided, Requirement, ScopePath,
};
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
    /// Visible (lineage, exposed), accepting providers, by entry index: a
    /// range of [`Gathered::candidates`] (one list for all requirements
    /// spares an allocation per requirement).
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
    let entries: Vec<&Entry> = composition.entries.values().collect();
    let entry_scope: Vec<ScopeIx> = entries
        .iter()
        .map(|e| tree.find(&e.scope.value).unwrap_or(0))
        .collect();
    let decls = tree.decls(composition);
    let mut by_scope: Vec<Vec<usize>> = vec![Vec::new(); tree.len()];
    for (e, &s) in entry_scope.iter().enumerate() {
        by_scope[s].push(e);
    }

    // Intern provided capability names; count providers per capability.
    let mut caps: FxHashMap<&str, usize> = FxHashMap::default();
    caps.reserve(entries.len().min(1 << 16));
    let mut provided: Vec<Vec<(usize, &Provided)>> = Vec::with_capacity(entries.len());
    let mut total: Vec<usize> = Vec::new();
    let mut entry_prefers: Vec<bool> = Vec::with_capacity(entries.len());
    for entry in &entries {
        entry_prefers.push(!entry.prefer.is_empty());
        let mut mine = Vec::with_capacity(entry.manifest.provides.len());
        for (name, p) in &entry.manifest.provides {
            let next = caps.len();
            let ix = *caps.entry(name.as_str()).or_insert(next);
            if ix == total.len() {
                total.push(0);
            }
            total[ix] += 1;
            mine.push((ix, p));
        }
        provided.push(mine);
    }

    let mut on_lineage: Vec<Vec<usize>> = vec![Vec::new(); caps.len()];
    let mut lineage: Vec<(ScopeIx, Vec<usize>)> = Vec::new();
    // Sized up front: one requirement (and usually one candidate) per
    // declared requirement, instead of growing by copies.
    let declared: usize = entries
        .iter()
        .map(|e| e.manifest.requires.len())
        .sum::<usize>()
        + decls
            .iter()
            .flatten()
            .map(|d| d.requirements.len())
            .sum::<usize>();
    let mut requirements = Vec::with_capacity(declared);
    let mut lists = Lists {
        candidates: Vec::with_capacity(declared),
        rejected: Vec::new(),
    };
    let ctx = Ctx {
        provided: &provided,
        caps: &caps,
        total: &total,
        tree,
    };
    for (ix, in_scope) in by_scope.iter().enumerate() {
        while let Some((top, _)) = lineage.last() {
            if tree.is_ancestor_or_self(*top, ix) {
                break;
            }
            if let Some((_, pushed)) = lineage.pop() {
                for cap in pushed {
                    on_lineage[cap].pop();
                }
            }
        }
        let mut pushed = Vec::new();
        for &e in in_scope {
            for &(cap, _) in &provided[e] {
                on_lineage[cap].push(e);
                pushed.push(cap);
            }
        }
        lineage.push((ix, pushed));
        if let Some(decl) = decls[ix] {
            for requirement in decl.requirements.values() {
                requirements.push(ctx.req(
                    Holder::Scope(ix),
                    ix,
                    requirement,
                    &on_lineage,
                    &mut lists,
                ));
            }
        }
        for &e in in_scope {
            for requirement in entries[e].manifest.requires.values() {
                requirements.push(ctx.req(
                    Holder::Entry(e),
                    ix,
                    requirement,
                    &on_lineage,
                    &mut lists,
                ));
            }
        }
    }
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
    }
}

/// The shared candidate lists being filled.
#[derive(Default)]
struct Lists<'a> {
    candidates: Vec<Candidate<'a>>,
    rejected: Vec<usize>,
}

struct Ctx<'c, 'a> {
    provided: &'c [Vec<(usize, &'a Provided)>],
    caps: &'c FxHashMap<&'a str, usize>,
    total: &'c [usize],
    tree: &'c ScopeTree,
}

impl<'a> Ctx<'_, 'a> {
    fn req(
        &self,
        holder: Holder,
        scope: ScopeIx,
        requirement: &'a Requirement,
        on_lineage: &[Vec<usize>],
        lists: &mut Lists<'a>,
    ) -> Req<'a> {
        let (c0, r0) = (lists.candidates.len(), lists.rejected.len());
        let mut out = Req {
            holder,
            scope,
            requirement,
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
        out.self_provides = me.is_some_and(|e| self.provided[e].iter().any(|&(c, _)| c == cap));
        let visible = on_lineage[cap].iter().copied().filter(|&p| Some(p) != me);
        let mut lineage_count = 0;
        if self.tree.exposes(scope, &requirement.capability) {
            for p in visible {
                lineage_count += 1;
                let prov = self.provided[p]
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
        out
    }
}
