//! The scope tree as an index: pre-order, parents, children, effective views.
//!
//! Built once per composition in linear time and shared by the resolver,
//! snapshots and explain reports, so none of them re-derives visibility.

use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use super::model::{CapabilityName, Composition, ScopeDecl, ScopePath, ToolName};

/// A small, fast, non-cryptographic hasher for in-memory indexes keyed by
/// names (the FxHash mixing step, eight bytes at a time). Indexes hashed
/// with it are only looked up, never iterated, so nothing depends on its
/// order.
#[derive(Clone, Copy, Default)]
pub(crate) struct FxHasher(u64);

impl FxHasher {
    const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(Self::SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        // The multiply leaves the best-mixed bits on top; hash tables index
        // with the low ones.
        self.0.rotate_left(26)
    }
}

/// A hash map using [`FxHasher`].
pub(crate) type FxHashMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// The parent path of a canonical scope path, without allocating.
fn parent_str(path: &str) -> Option<&str> {
    if path == "/" {
        return None;
    }
    match path.rfind('/') {
        Some(0) => Some("/"),
        Some(i) => Some(&path[..i]),
        None => None,
    }
}

/// The address of a path's shared text.
fn address(path: &ScopePath) -> usize {
    path.as_arc().as_ptr().cast::<u8>() as usize
}

/// Index of a scope in pre-order (the root is 0).
pub type ScopeIx = usize;

/// One scope of the tree.
#[derive(Clone, Debug)]
pub struct TreeScope {
    /// Canonical path.
    pub path: ScopePath,
    /// Parent index, `None` for the root.
    pub parent: Option<ScopeIx>,
    /// Children in sorted path order.
    pub children: Vec<ScopeIx>,
    /// Depth (root 0).
    pub depth: usize,
    /// One past the last descendant in pre-order: descendants of `i` are
    /// exactly `i + 1 .. end`.
    pub end: ScopeIx,
    /// Effective capability view: intersection of the views from the root
    /// down; `None` when no scope on the lineage has one. Shared with the
    /// parent when the scope declares no view of its own.
    pub capabilities: Option<Arc<BTreeSet<CapabilityName>>>,
    /// Effective tool view, computed the same way.
    pub tools: Option<Arc<BTreeSet<ToolName>>>,
}

/// The whole tree in pre-order, children visited in sorted path order.
#[derive(Clone, Debug)]
pub struct ScopeTree {
    scopes: Vec<TreeScope>,
    /// Pre-order index of each path.
    by_path: FxHashMap<ScopePath, ScopeIx>,
    /// Pre-order index of each path by the address of its text: a
    /// composition's entries share their scope's path ([`Composition::insert_entry`]),
    /// so their scopes are found without hashing or comparing text. The
    /// tree holds every path it lists here, so an address found is that
    /// path's.
    by_address: FxHashMap<usize, ScopeIx>,
    /// Per pre-order index, the position of the scope's declaration in the
    /// composition's (sorted) scope map.
    decl_ix: Vec<usize>,
    /// Number of declarations the tree was built from.
    decls: usize,
}

/// A scope's effective view: the inherited one (shared) narrowed by its own.
fn intersect<T: Ord + Clone>(
    inherited: &Option<Arc<BTreeSet<T>>>,
    own: &Option<BTreeSet<T>>,
) -> Option<Arc<BTreeSet<T>>> {
    match (inherited, own) {
        (None, None) => None,
        (Some(a), None) => Some(Arc::clone(a)),
        (None, Some(b)) => Some(Arc::new(b.clone())),
        (Some(a), Some(b)) => Some(Arc::new(a.intersection(b).cloned().collect())),
    }
}

impl ScopeTree {
    /// Build the tree of `composition`. Relies on the composition invariant
    /// that every scope's parent exists.
    pub fn new(composition: &Composition) -> Self {
        // BTreeMap order is not pre-order (`/a/b` sorts after `/a-x`), so walk
        // explicitly: group children by parent first.
        let (paths, decls): (Vec<&ScopePath>, Vec<&ScopeDecl>) = composition.scopes.iter().unzip();
        // One map, first from path to sorted position (to find parents),
        // then, once the walk has numbered the scopes, to pre-order index.
        let mut by_path: FxHashMap<ScopePath, usize> = FxHashMap::default();
        by_path.reserve(paths.len());
        for (i, p) in paths.iter().enumerate() {
            by_path.insert((*p).clone(), i);
        }
        let mut children_of: Vec<Vec<usize>> = vec![Vec::new(); paths.len()];
        let mut root = None;
        for (i, path) in paths.iter().enumerate() {
            match parent_str(path.as_str()) {
                None => root = Some(i),
                Some(parent) => {
                    if let Some(&pi) = by_path.get(parent) {
                        children_of[pi].push(i);
                    }
                }
            }
        }
        let mut scopes: Vec<TreeScope> = Vec::with_capacity(decls.len());
        let mut decl_ix: Vec<usize> = Vec::with_capacity(decls.len());
        let Some(root) = root else {
            by_path.clear();
            return Self {
                scopes,
                by_path,
                by_address: FxHashMap::default(),
                decl_ix,
                decls: decls.len(),
            };
        };
        // Iterative pre-order; children lists are already in sorted path order.
        let mut stack: Vec<(usize, Option<ScopeIx>)> = vec![(root, None)];
        while let Some((sorted_ix, parent)) = stack.pop() {
            let decl = decls[sorted_ix];
            decl_ix.push(sorted_ix);
            let ix = scopes.len();
            let (depth, caps, tools) = match parent {
                None => (
                    0,
                    decl.capabilities.clone().map(Arc::new),
                    decl.tools.clone().map(Arc::new),
                ),
                Some(p) => {
                    let ps = &scopes[p];
                    (
                        ps.depth + 1,
                        intersect(&ps.capabilities, &decl.capabilities),
                        intersect(&ps.tools, &decl.tools),
                    )
                }
            };
            scopes.push(TreeScope {
                path: decl.path.clone(),
                parent,
                children: Vec::new(),
                depth,
                end: ix + 1,
                capabilities: caps,
                tools,
            });
            if let Some(p) = parent {
                scopes[p].children.push(ix);
            }
            for &child in children_of[sorted_ix].iter().rev() {
                stack.push((child, Some(ix)));
            }
        }
        // Subtree ends, bottom-up (children have larger indices than parents).
        for ix in (0..scopes.len()).rev() {
            let end = scopes[ix]
                .children
                .iter()
                .map(|&c| scopes[c].end)
                .max()
                .unwrap_or(ix + 1);
            scopes[ix].end = end;
        }
        // Sorted position -> pre-order index. Every declaration is visited
        // (each has its parent, by the composition invariant); one that
        // was not would keep no place in the map.
        let mut pre_order = vec![usize::MAX; paths.len()];
        for (ix, &d) in decl_ix.iter().enumerate() {
            pre_order[d] = ix;
        }
        by_path.retain(|_, v| {
            *v = pre_order[*v];
            *v != usize::MAX
        });
        let by_address = scopes
            .iter()
            .enumerate()
            .map(|(ix, s)| (address(&s.path), ix))
            .collect();
        Self {
            scopes,
            by_path,
            by_address,
            decl_ix,
            decls: decls.len(),
        }
    }

    /// The declaration of every scope of the tree, by pre-order index, as
    /// `composition.scopes.get(path)` gives it, in linear time when the tree
    /// was built from `composition` (checked), by lookups otherwise.
    pub fn decls<'c>(&self, composition: &'c Composition) -> Vec<Option<&'c ScopeDecl>> {
        if composition.scopes.len() == self.decls {
            let decls: Vec<(&ScopePath, &ScopeDecl)> = composition.scopes.iter().collect();
            let aligned: Option<Vec<Option<&ScopeDecl>>> = self
                .scopes
                .iter()
                .zip(&self.decl_ix)
                .map(|(s, &d)| {
                    let (path, decl) = decls.get(d).copied()?;
                    (*path == s.path).then_some(Some(decl))
                })
                .collect();
            if let Some(aligned) = aligned {
                return aligned;
            }
        }
        self.scopes
            .iter()
            .map(|s| composition.scopes.get(&s.path))
            .collect()
    }

    /// Scopes in pre-order.
    pub fn scopes(&self) -> &[TreeScope] {
        &self.scopes
    }

    /// Number of scopes.
    pub fn len(&self) -> usize {
        self.scopes.len()
    }

    /// Whether the tree is empty (never, for a valid composition).
    pub fn is_empty(&self) -> bool {
        self.scopes.is_empty()
    }

    /// One scope by index.
    pub fn get(&self, ix: ScopeIx) -> &TreeScope {
        &self.scopes[ix]
    }

    /// The index of `path` (a hash lookup).
    pub fn find(&self, path: &ScopePath) -> Option<ScopeIx> {
        match self.by_address.get(&address(path)) {
            Some(&ix) => Some(ix),
            None => self.find_str(path.as_str()),
        }
    }

    /// The index of the scope whose path is `path`.
    pub fn find_str(&self, path: &str) -> Option<ScopeIx> {
        self.by_path.get(path).copied()
    }

    /// A sorted `(path, index)` table for repeated lookups.
    pub fn lookup_table(&self) -> Vec<(&ScopePath, ScopeIx)> {
        let mut table: Vec<(&ScopePath, ScopeIx)> = self
            .scopes
            .iter()
            .enumerate()
            .map(|(i, s)| (&s.path, i))
            .collect();
        table.sort_unstable_by(|a, b| a.0.cmp(b.0));
        table
    }

    /// Whether `ancestor` is `ix` or one of its ancestors.
    pub fn is_ancestor_or_self(&self, ancestor: ScopeIx, ix: ScopeIx) -> bool {
        ancestor <= ix && ix < self.scopes[ancestor].end
    }

    /// Whether `capability` passes the effective view of scope `ix`.
    pub fn exposes(&self, ix: ScopeIx, capability: &CapabilityName) -> bool {
        self.scopes[ix]
            .capabilities
            .as_ref()
            .is_none_or(|v| v.contains(capability))
    }

    /// Whether `tool` passes the effective tool view of scope `ix`.
    pub fn shows_tool(&self, ix: ScopeIx, tool: &ToolName) -> bool {
        self.scopes[ix]
            .tools
            .as_ref()
            .is_none_or(|v| v.contains(tool))
    }

    /// The lineage of `ix` from the root down to `ix`.
    pub fn lineage(&self, ix: ScopeIx) -> Vec<ScopeIx> {
        let mut out = vec![ix];
        let mut cur = ix;
        while let Some(p) = self.scopes[cur].parent {
            out.push(p);
            cur = p;
        }
        out.reverse();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model::ScopeDecl;
    use std::sync::Arc;

    fn path(p: &str) -> ScopePath {
        ScopePath::new(p).unwrap()
    }

    #[test]
    fn preorder_visits_children_in_sorted_order() {
        let mut c = Composition::new();
        for p in ["/b", "/a/x", "/a-z", "/a"] {
            c.insert_scope(ScopeDecl::new(path(p)));
        }
        let tree = ScopeTree::new(&c);
        let order: Vec<&str> = tree.scopes().iter().map(|s| s.path.as_str()).collect();
        assert_eq!(order, ["/", "/a", "/a/x", "/a-z", "/b"]);
        assert!(tree.is_ancestor_or_self(1, 2));
        assert!(!tree.is_ancestor_or_self(1, 3));
        assert_eq!(tree.get(0).end, 5);
    }

    #[test]
    fn entries_share_their_scope_path_and_are_found_by_it() {
        use crate::engine::build::CompositionBuilder;
        // `/a/b` is implied by the entry, then declared: the declaration,
        // the map's key and the entry all hold one path.
        let c = CompositionBuilder::new()
            .entry("x")
            .in_scope("/a/b")
            .provides("db", &["1.0.0"])
            .scope("/a/b", None)
            .build()
            .unwrap();
        let entry = &c.entries["x"];
        let (key, decl) = c.scopes.get_key_value("/a/b").unwrap();
        assert!(Arc::ptr_eq(entry.scope.value.as_arc(), key.as_arc()));
        assert!(Arc::ptr_eq(decl.path.as_arc(), key.as_arc()));
        let tree = ScopeTree::new(&c);
        let ix = tree.find(&entry.scope.value).unwrap();
        assert_eq!(tree.get(ix).path.as_str(), "/a/b");
        // Another allocation of the same text is found by its text, and a
        // path the tree lacks is not found at all.
        assert_eq!(tree.find(&path("/a/b")), Some(ix));
        assert_eq!(tree.find(&path("/a/c")), None);
    }

    #[test]
    fn effective_views_intersect_down_the_lineage() {
        let mut c = Composition::new();
        let mut a = ScopeDecl::new(path("/a"));
        a.capabilities = Some(
            ["database", "model"]
                .iter()
                .map(|n| CapabilityName::new(n).unwrap())
                .collect(),
        );
        c.insert_scope(a);
        let mut b = ScopeDecl::new(path("/a/b"));
        b.capabilities = Some(
            ["model", "tools"]
                .iter()
                .map(|n| CapabilityName::new(n).unwrap())
                .collect(),
        );
        c.insert_scope(b);
        c.insert_scope(ScopeDecl::new(path("/a/b/c")));
        let tree = ScopeTree::new(&c);
        let c_ix = tree.find(&path("/a/b/c")).unwrap();
        let view: Vec<&str> = tree
            .get(c_ix)
            .capabilities
            .as_ref()
            .unwrap()
            .iter()
            .map(|c| c.as_str())
            .collect();
        assert_eq!(view, ["model"]);
        assert!(tree.get(0).capabilities.is_none());
        // `/a/b/c` declares no view: it shares its parent's.
        let b_ix = tree.find(&path("/a/b")).unwrap();
        assert!(Arc::ptr_eq(
            tree.get(c_ix).capabilities.as_ref().unwrap(),
            tree.get(b_ix).capabilities.as_ref().unwrap()
        ));
    }
}
