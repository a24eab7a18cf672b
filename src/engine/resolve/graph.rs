//! Graph steps of resolution: dependency cycles and activation order.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use petgraph::graph::{DiGraph, NodeIndex};

use super::adjacency::Adjacency;
use super::gather::{Gathered, Holder};

/// Cycles (strongly connected components) of the declared graph: an edge consumer → provider for every hard
/// requirement and every visible provider that accepts it. Each cycle is a
/// shortest closed path through its strongly connected component, starting
/// at the component's smallest member (entry ids order the indices), in
/// dependency order (`a` requires `b` …). Sorted.
pub(super) fn find_cycles(g: &Gathered<'_>) -> Vec<Cycle> {
    let n = g.entries.len();
    // The declared graph as flat arrays (consumer -> provider).
    let mut arcs: Vec<(usize, usize)> = Vec::new();
    for req in &g.requirements {
        let Holder::Entry(c) = req.holder else {
            continue;
        };
        if !req.gates() {
            continue;
        }
        arcs.extend(g.accepted(req).iter().map(|cand| (c, cand.entry)));
    }
    let core = cyclic_core(n, &arcs);
    if core.iter().all(|&keep| !keep) {
        return Vec::new();
    }
    // Tarjan on the core only: trimming never removes a node on a cycle.
    let mut adjacency: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut graph: DiGraph<(), ()> = DiGraph::with_capacity(n, 0);
    for _ in 0..n {
        graph.add_node(());
    }
    for &(c, p) in &arcs {
        if core[c] && core[p] {
            graph.add_edge(NodeIndex::new(c), NodeIndex::new(p), ());
            adjacency[c].push(p);
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

/// Nodes that can lie on a cycle: repeatedly drop nodes without incoming or
/// without outgoing arcs among the remaining ones (linear; an acyclic graph,
/// the usual case, trims to nothing). Self-loops keep their node, but a
/// component of one node is never reported, so they are harmless.
fn cyclic_core(n: usize, arcs: &[(usize, usize)]) -> Vec<bool> {
    let mut indegree = vec![0usize; n];
    let mut outdegree = vec![0usize; n];
    for &(c, p) in arcs {
        outdegree[c] += 1;
        indegree[p] += 1;
    }
    // Both directions as compressed rows.
    let rows = |key: fn(&(usize, usize)) -> (usize, usize)| {
        let mut start = vec![0usize; n + 1];
        for a in arcs {
            start[key(a).0 + 1] += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut to = vec![0usize; arcs.len()];
        for a in arcs {
            let (from, target) = key(a);
            to[fill[from]] = target;
            fill[from] += 1;
        }
        (start, to)
    };
    let (out_start, out_to) = rows(|&(c, p)| (c, p));
    let (in_start, in_from) = rows(|&(c, p)| (p, c));
    let mut keep = vec![true; n];
    let mut queue: Vec<usize> = (0..n)
        .filter(|&v| indegree[v] == 0 || outdegree[v] == 0)
        .collect();
    for &v in &queue {
        keep[v] = false;
    }
    while let Some(v) = queue.pop() {
        for &p in &out_to[out_start[v]..out_start[v + 1]] {
            indegree[p] -= 1;
            if keep[p] && indegree[p] == 0 {
                keep[p] = false;
                queue.push(p);
            }
        }
        for &c in &in_from[in_start[v]..in_start[v + 1]] {
            outdegree[c] -= 1;
            if keep[c] && outdegree[c] == 0 {
                keep[c] = false;
                queue.push(c);
            }
        }
    }
    keep
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
    let out = Adjacency::new(n, || edges.iter().copied());
    let hard_out = Adjacency::new(n, || hard.iter().copied());
    let mut indegree = vec![0usize; n];
    let mut hard_indegree = vec![0usize; n];
    for &(p, c) in edges {
        if eligible[p] && eligible[c] {
            indegree[c] += 1;
        }
    }
    for &(p, c) in hard {
        if eligible[p] && eligible[c] {
            hard_indegree[c] += 1;
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
        // `e` is eligible: its edges to eligible consumers are counted.
        for &c in out.of(e) {
            if !eligible[c] {
                continue;
            }
            indegree[c] = indegree[c].saturating_sub(1);
            if indegree[c] == 0 && !placed[c] {
                heap.push(Reverse(c));
            }
        }
        for &c in hard_out.of(e) {
            if eligible[c] {
                hard_indegree[c] = hard_indegree[c].saturating_sub(1);
            }
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activation_order_does_not_depend_on_the_order_edges_come_in() {
        // 0 provides to 3 and 2; 1 provides to 2 (hard); 4 is ineligible
        // and its edge is ignored; 5 waits on 3.
        let eligible = [true, true, true, true, false, true];
        let sorted = [(0, 2), (0, 3), (1, 2), (3, 5), (4, 5)];
        let hard = [(1, 2), (3, 5)];
        let want = activation_order(6, &eligible, &sorted, &hard);
        assert_eq!(want, [0, 1, 2, 3, 5]);
        let mut shuffled = sorted;
        shuffled.reverse();
        let mut hard_shuffled = hard;
        hard_shuffled.reverse();
        assert_eq!(
            activation_order(6, &eligible, &shuffled, &hard_shuffled),
            want
        );
    }
}
