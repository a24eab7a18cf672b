//! Lists of indices per entry (or scope) in one array, for the resolver.

/// Lists of indices per entry, in one array (compressed rows): built in two
/// passes over the pairs, so 10,000 entries cost two allocations, not
/// 10,000. Each entry's list keeps the order the pairs came in.
pub(super) struct Adjacency {
    start: Vec<usize>,
    items: Vec<usize>,
}

impl Adjacency {
    /// From `(entry, item)` pairs, `pairs` called twice (count, then fill).
    pub(super) fn new<I: Iterator<Item = (usize, usize)>>(n: usize, pairs: impl Fn() -> I) -> Self {
        let mut start = vec![0usize; n + 1];
        for (e, _) in pairs() {
            start[e + 1] += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut items = vec![0usize; start[n]];
        for (e, item) in pairs() {
            items[fill[e]] = item;
            fill[e] += 1;
        }
        Self { start, items }
    }

    pub(super) fn of(&self, e: usize) -> &[usize] {
        &self.items[self.start[e]..self.start[e + 1]]
    }
}
