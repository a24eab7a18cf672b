//! Step 1 of resolution: per requirement, the providers it can see and accept.

use std::collections::HashMap;

use super::plan::Consumer;
use std::collections::BTreeMap;

use crate::engine::model::{
    CapabilityName, Composition, Entry, EntryId, EntryRef, Provided, Requirement, ScopePath,
};
use crate::engine::tree::{ScopeIx, ScopeTree};
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
    /// Visible (lineage, exposed), accepting providers, by entry index.
    pub(super) accepted: Vec<Candidate<'a>>,
    /// Visible providers that accept no version of theirs.
    pub(super) exposed_rejected: Vec<usize>,
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
}

impl Gathered<'_> {
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
    let table = tree.lookup_table();
    let find = |p| {
        table
            .binary_search_by(|(q, _)| (*q).cmp(p))
            .map(|i| table[i].1)
            .unwrap_or(0)
    };
    let entry_scope: Vec<ScopeIx> = entries.iter().map(|e| find(&e.scope.value)).collect();
    let mut by_scope: Vec<Vec<usize>> = vec![Vec::new(); tree.len()];
    for (e, &s) in entry_scope.iter().enumerate() {
        by_scope[s].push(e);
    }

    // Intern provided capability names; count providers per capability.
    let mut caps: HashMap<&str, usize> = HashMap::new();
    let mut provided: Vec<Vec<(usize, &Provided)>> = Vec::with_capacity(entries.len());
    let mut total: Vec<usize> = Vec::new();
    for entry in &entries {
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
    let mut requirements = Vec::new();
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
        if let Some(decl) = composition.scopes.get(&tree.get(ix).path) {
            for requirement in decl.requirements.values() {
                requirements.push(ctx.req(Holder::Scope(ix), ix, requirement, &on_lineage));
            }
        }
        for &e in in_scope {
            for requirement in entries[e].manifest.requires.values() {
                requirements.push(ctx.req(Holder::Entry(e), ix, requirement, &on_lineage));
            }
        }
    }
    let scope_prefer = tree
        .scopes()
        .iter()
        .map(|s| composition.scopes.get(&s.path).map(|d| &d.prefer))
        .collect();
    let scope_paths = tree.scopes().iter().map(|s| s.path.clone()).collect();
    Gathered {
        entries,
        entry_scope,
        requirements,
        scope_prefer,
        scope_paths,
    }
}

struct Ctx<'c, 'a> {
    provided: &'c [Vec<(usize, &'a Provided)>],
    caps: &'c HashMap<&'a str, usize>,
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
    ) -> Req<'a> {
        let mut out = Req {
            holder,
            scope,
            requirement,
            accepted: Vec::new(),
            exposed_rejected: Vec::new(),
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
                    Some(version) => out.accepted.push(Candidate { entry: p, version }),
                    None => out.exposed_rejected.push(p),
                }
            }
        } else {
            lineage_count = visible.count();
            out.hidden_in_lineage = lineage_count > 0;
        }
        out.accepted.sort_unstable_by_key(|c| c.entry);
        out.exposed_rejected.sort_unstable();
        let own = usize::from(out.self_provides);
        out.elsewhere = self.total[cap] > lineage_count + own;
        out
    }
}
