//! Graph steps of resolution: dependency cycles and activation order.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};

use petgraph::graph::{DiGraph, NodeIndex};

use super::adjacency::Adjacency;
use super::gather::{Gathered, Holder};

/// Cycles (strongly connected components) of the declared graph: an edge
/// consumer → provider for every hard requirement and every visible provider
/// that accepts it. Each cycle is a shortest closed path through its strongly
/// connected component, starting at the component's smallest member (entry
/// ids order the indices), in dependency order (`a` requires `b` …). Sorted.
///
/// Requirements share candidate lists ([`super::gather::Req::list`]): N
/// consumers of one capability among N providers have N² declared edges but
/// one list of N. The graph searched has a node per shared list instead:
/// consumer → list for each hard requirement, list → provider for each of
/// its candidates (once per list), so it is as large as the gathered lists
/// (see [`cycles_through_lists`] for why the answer is the same).
pub(super) fn find_cycles(g: &Gathered<'_>) -> Vec<Cycle> {
    let n = g.entries.len();
    let mut arcs: Vec<(usize, usize)> = Vec::new();
    let mut listed = vec![false; g.lists];
    for req in &g.requirements {
        let Holder::Entry(c) = req.holder else {
            continue;
        };
        let accepted = g.accepted(req);
        if !req.gates() || accepted.is_empty() {
            continue;
        }
        arcs.push((c, n + req.list));
        if !std::mem::replace(&mut listed[req.list], true) {
            arcs.extend(accepted.iter().map(|cand| (n + req.list, cand.entry)));
        }
    }
    cycles_through_lists(n, n + g.lists, &arcs)
}

/// The cycles of a graph given with its edges routed through list nodes:
/// nodes below `n` are entries, nodes from `n` up to `nodes` are lists, and
/// every arc runs entry → list or list → entry. The graph it stands for has
/// an edge c → p for every path c → list → p (the *expanded* graph); the
/// cycles are those of the expanded graph, the same members, the same paths:
///
/// - a path between entries here is a path of the expanded graph with a
///   list node between each two entries, and each expanded edge is such a
///   two-arc path; so two entries are strongly connected here exactly when
///   they are in the expanded graph, and a component here, its list nodes
///   left out, is a component there. A component of one entry (with one
///   list: an entry among its own candidates, which gathering never makes)
///   is not reported, in either graph;
/// - trimming removes only nodes on no cycle, here as there;
/// - the shortest closed path is a breadth-first search over entries whose
///   neighbours are the union of their lists' members, taken in index
///   order: [`shortest_cycle`] reproduces the order of that search level by
///   level without visiting a list twice (a proptest compares both with a
///   search of the expanded graph on random graphs).
fn cycles_through_lists(n: usize, nodes: usize, arcs: &[(usize, usize)]) -> Vec<Cycle> {
    let core = cyclic_core(nodes, arcs);
    if core.iter().all(|&keep| !keep) {
        return Vec::new();
    }
    // Tarjan on the core only: trimming never removes a node on a cycle.
    let inner = || arcs.iter().copied().filter(|&(a, b)| core[a] && core[b]);
    let adjacency = Adjacency::new(nodes, inner);
    let mut graph: DiGraph<(), ()> = DiGraph::with_capacity(nodes, 0);
    for _ in 0..nodes {
        graph.add_node(());
    }
    for (a, b) in inner() {
        graph.add_edge(NodeIndex::new(a), NodeIndex::new(b), ());
    }
    let mut cycles = Vec::new();
    let mut component_of = vec![usize::MAX; n];
    for (ci, scc) in petgraph::algo::tarjan_scc(&graph).into_iter().enumerate() {
        let mut members: Vec<usize> = scc
            .iter()
            .map(|node| node.index())
            .filter(|&e| e < n)
            .collect();
        if members.len() < 2 {
            continue;
        }
        for &e in &members {
            component_of[e] = ci;
        }
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

/// Shortest path from `start` back to itself inside component `ci`: the
/// breadth-first search of the expanded graph (an entry's neighbours are
/// its lists' members, in index order; the first entry in queue order to
/// reach one is its parent), so the path is deterministic.
///
/// Done level by level, each list expanded once: an entry of the level
/// reaching a list first (in queue order) is the parent of every member
/// not reached before; reaching it again later finds nobody new, and never
/// `start` (that would have ended the search where the list was first
/// reached). The next level is the new entries by (parent's place, index):
/// the order a queue fed with each entry's sorted neighbours has.
fn shortest_cycle(
    start: usize,
    ci: usize,
    adjacency: &Adjacency,
    component_of: &[usize],
) -> Vec<usize> {
    let mut parent: HashMap<usize, usize> = HashMap::new();
    let mut expanded: HashSet<usize> = HashSet::new();
    let mut level = vec![start];
    while !level.is_empty() {
        let mut next: Vec<(usize, usize)> = Vec::new();
        for (place, &node) in level.iter().enumerate() {
            for &list in adjacency.of(node) {
                if !expanded.insert(list) {
                    continue;
                }
                let members = adjacency
                    .of(list)
                    .iter()
                    .copied()
                    .filter(|&m| component_of.get(m) == Some(&ci));
                for m in members {
                    if m == start {
                        let mut path = vec![node];
                        let mut cur = node;
                        while let Some(&p) = parent.get(&cur) {
                            cur = p;
                            path.push(cur);
                        }
                        path.reverse();
                        return path;
                    }
                    if let std::collections::hash_map::Entry::Vacant(slot) = parent.entry(m) {
                        slot.insert(node);
                        next.push((place, m));
                    }
                }
            }
        }
        next.sort_unstable();
        level = next.into_iter().map(|(_, m)| m).collect();
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
    use proptest::prelude::*;

    /// The search before lists had nodes of their own, kept as the
    /// reference: Tarjan on the expanded graph (an edge per consumer and
    /// candidate), then a breadth-first search from the smallest member.
    fn expanded_cycles(n: usize, edges: &[(usize, usize)]) -> Vec<(Vec<usize>, Vec<usize>)> {
        let mut adjacency: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut graph: DiGraph<(), ()> = DiGraph::with_capacity(n, 0);
        for _ in 0..n {
            graph.add_node(());
        }
        for &(c, p) in edges {
            graph.add_edge(NodeIndex::new(c), NodeIndex::new(p), ());
            adjacency[c].push(p);
        }
        let mut out = Vec::new();
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
            let start = members[0];
            // Breadth-first, neighbours in index order.
            let mut parent: HashMap<usize, usize> = HashMap::new();
            let mut queue = std::collections::VecDeque::from([start]);
            let mut path = vec![start];
            'search: while let Some(node) = queue.pop_front() {
                let mut next: Vec<usize> = adjacency[node]
                    .iter()
                    .copied()
                    .filter(|&m| component_of[m] == ci)
                    .collect();
                next.sort_unstable();
                next.dedup();
                for m in next {
                    if m == start {
                        path = vec![node];
                        let mut cur = node;
                        while cur != start {
                            cur = parent[&cur];
                            path.push(cur);
                        }
                        path.reverse();
                        break 'search;
                    }
                    if let std::collections::hash_map::Entry::Vacant(slot) = parent.entry(m) {
                        slot.insert(node);
                        queue.push_back(m);
                    }
                }
            }
            out.push((path, members));
        }
        out.sort_by(|a, b| a.1.cmp(&b.1));
        out
    }

    /// Random graphs through lists: `uses` are (consumer, list), `lists`
    /// their members; no entry among its own lists' members, as gathering
    /// never makes one.
    fn through_lists() -> impl Strategy<Value = (usize, Vec<Vec<usize>>, Vec<(usize, usize)>)> {
        (1usize..12, 1usize..8).prop_flat_map(|(n, l)| {
            (
                Just(n),
                prop::collection::vec(prop::collection::btree_set(0..n, 0..5), l),
                prop::collection::vec((0..n, 0..l), 0..24),
            )
                .prop_map(|(n, lists, uses)| {
                    let lists: Vec<Vec<usize>> =
                        lists.into_iter().map(|s| s.into_iter().collect()).collect();
                    let uses = uses
                        .into_iter()
                        .filter(|&(c, l)| !lists[l].contains(&c))
                        .collect();
                    (n, lists, uses)
                })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            failure_persistence: None,
            ..ProptestConfig::with_cases(512)
        })]

        /// Cycles found with a node per list are those of the expanded
        /// graph: the same members, the same shortest paths.
        #[test]
        fn cycles_through_lists_are_those_of_the_expanded_graph(
            (n, lists, uses) in through_lists()
        ) {
            let mut arcs = Vec::new();
            let mut listed = vec![false; lists.len()];
            let mut expanded = Vec::new();
            for &(c, l) in &uses {
                arcs.push((c, n + l));
                if !std::mem::replace(&mut listed[l], true) {
                    arcs.extend(lists[l].iter().map(|&p| (n + l, p)));
                }
                expanded.extend(lists[l].iter().map(|&p| (c, p)));
            }
            let got: Vec<(Vec<usize>, Vec<usize>)> = cycles_through_lists(n, n + lists.len(), &arcs)
                .into_iter()
                .map(|c| (c.path, c.members))
                .collect();
            prop_assert_eq!(got, expanded_cycles(n, &expanded));
        }
    }

    #[test]
    fn a_shared_list_closes_one_cycle_through_every_consumer() {
        // 0 and 1 share list 0 = {2, 3}; 2 and 3 share list 1 = {0, 1}:
        // one component of four, shortest path 0 -> 2 -> 0.
        let arcs = [
            (0, 4),
            (1, 4),
            (4, 2),
            (4, 3),
            (2, 5),
            (3, 5),
            (5, 0),
            (5, 1),
        ];
        let cycles = cycles_through_lists(4, 6, &arcs);
        assert_eq!(cycles.len(), 1);
        assert_eq!(cycles[0].members, [0, 1, 2, 3]);
        assert_eq!(cycles[0].path, [0, 2]);
    }

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
