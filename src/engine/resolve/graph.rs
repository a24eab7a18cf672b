//! Graph steps of resolution: dependency cycles and activation order.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use petgraph::graph::{DiGraph, NodeIndex};

use super::gather::{Gathered, Holder};

/// Cycles (strongly connected components) of the declared graph: an edge consumer → provider for every hard
/// requirement and every visible provider that accepts it. Each cycle is a
/// shortest closed path through its strongly connected component, starting
/// at the component's smallest member (entry ids order the indices), in
/// dependency order (`a` requires `b` …). Sorted.
pub(super) fn find_cycles(g: &Gathered<'_>) -> Vec<Cycle> {
    let n = g.entries.len();
    let mut graph: DiGraph<(), ()> = DiGraph::with_capacity(n, g.requirements.len());
    for _ in 0..n {
        graph.add_node(());
    }
    let mut adjacency: Vec<Vec<usize>> = vec![Vec::new(); n];
    for req in &g.requirements {
        let Holder::Entry(c) = req.holder else {
            continue;
        };
        if !req.gates() {
            continue;
        }
        for cand in &req.accepted {
            graph.add_edge(NodeIndex::new(c), NodeIndex::new(cand.entry), ());
            adjacency[c].push(cand.entry);
        }
    }
    let mut cycles = Vec::new();
    let mut component_of = vec![usize::MAX; n];
    for (ci, scc) in petgraph::algo::tarjan_scc(&graph).into_iter().enumerate() {
        if scc.len() < 2 {
            continue;
        }
        for node in &scc {
            component_of[node.index()] = ci;
        }
        let mut members: Vec<usize> = scc.iter().map(|n| n.index()).collect();
        members.sort_unstable();
        let path = shortest_cycle(members[0], ci, &adjacency, &component_of);
        cycles.push(Cycle { path, members });
    }
    cycles.sort_by(|a, b| a.members.cmp(&b.members));
    cycles
}

/// One strongly connected component of the declared graph.
pub(super) struct Cycle {
    /// A shortest closed path through the smallest member.
    pub(super) path: Vec<usize>,
    /// Every member of the component, sorted.
    pub(super) members: Vec<usize>,
}

/// Shortest path from `start` back to itself inside component `ci` (BFS,
/// neighbours in index order, so the path is deterministic).
fn shortest_cycle(
    start: usize,
    ci: usize,
    adjacency: &[Vec<usize>],
    component_of: &[usize],
) -> Vec<usize> {
    let mut parent: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(node) = queue.pop_front() {
        let mut next: Vec<usize> = adjacency[node]
            .iter()
            .copied()
            .filter(|&m| component_of[m] == ci)
            .collect();
        next.sort_unstable();
        next.dedup();
        for m in next {
            if m == start {
                let mut path = vec![node];
                let mut cur = node;
                while cur != start {
                    cur = parent[&cur];
                    path.push(cur);
                }
                path.reverse();
                return path;
            }
            if let std::collections::hash_map::Entry::Vacant(slot) = parent.entry(m) {
                slot.insert(node);
                queue.push_back(m);
            }
        }
    }
    vec![start]
}

/// Kahn's algorithm over eligible entries, providers first, ties by entry
/// index (= id order). Optional requirements can close a loop that no hard
/// cycle explains; Kahn then stalls, and the smallest remaining entry whose
/// *hard* providers are all placed goes next (hard cycles never reach here:
/// their members are pending), so a hard provider always precedes its
/// consumer and only optional bindings are ordered loosely.
pub(super) fn activation_order(
    n: usize,
    eligible: &[bool],
    edges: &[(usize, usize)],
    hard: &[(usize, usize)],
) -> Vec<usize> {
    let mut indegree = vec![0usize; n];
    let mut hard_indegree = vec![0usize; n];
    let mut out_edges: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut hard_out: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(p, c) in edges {
        if eligible[p] && eligible[c] {
            indegree[c] += 1;
            out_edges[p].push(c);
        }
    }
    for &(p, c) in hard {
        if eligible[p] && eligible[c] {
            hard_indegree[c] += 1;
            hard_out[p].push(c);
        }
    }
    let mut heap: BinaryHeap<Reverse<usize>> = (0..n)
        .filter(|&e| eligible[e] && indegree[e] == 0)
        .map(Reverse)
        .collect();
    let mut placed = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let total = eligible.iter().filter(|&&e| e).count();
    while order.len() < total {
        let e = match heap.pop() {
            Some(Reverse(e)) => e,
            None => {
                let free = (0..n).find(|&e| eligible[e] && !placed[e] && hard_indegree[e] == 0);
                match free.or_else(|| (0..n).find(|&e| eligible[e] && !placed[e])) {
                    Some(e) => e,
                    None => break,
                }
            }
        };
        if placed[e] {
            continue;
        }
        placed[e] = true;
        order.push(e);
        for &c in &out_edges[e] {
            indegree[c] = indegree[c].saturating_sub(1);
            if indegree[c] == 0 && !placed[c] {
                heap.push(Reverse(c));
            }
        }
        for &c in &hard_out[e] {
            hard_indegree[c] = hard_indegree[c].saturating_sub(1);
        }
    }
    order
}
