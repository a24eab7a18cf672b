//! A few recently used values, searched front to back.
//!
//! Hot loops over large compositions often repeat a handful of keys (a
//! scope's rows cycle through their consumers' requirements; nearby rows
//! bind the same providers; many requirements name the same preferred
//! entry), so a short list searched with a cheap predicate (usually
//! pointer equality) beats a hash lookup. When full, a new value replaces
//! the oldest.

/// At most `N` values, the oldest replaced first.
#[derive(Debug)]
pub(crate) struct Recent<T, const N: usize> {
    slots: Vec<T>,
    /// The slot the next new value replaces once all are taken.
    next: usize,
}

impl<T, const N: usize> Default for Recent<T, N> {
    fn default() -> Self {
        Self {
            slots: Vec::new(),
            next: 0,
        }
    }
}

impl<T, const N: usize> Recent<T, N> {
    /// The first kept value that `is` accepts.
    pub(crate) fn find(&self, is: impl FnMut(&T) -> bool) -> Option<&T> {
        self.position(is).map(|at| &self.slots[at])
    }

    /// Where the first kept value that `is` accepts is ([`Self::get`]).
    pub(crate) fn position(&self, is: impl FnMut(&T) -> bool) -> Option<usize> {
        self.slots.iter().position(is)
    }

    /// The value at `at`, a position this gave.
    pub(crate) fn get(&self, at: usize) -> &T {
        &self.slots[at]
    }

    /// Keep the value `make` builds from the one it replaces (`None` while
    /// there are free slots, so a replaced value's buffers can be reused);
    /// its position.
    pub(crate) fn insert(&mut self, make: impl FnOnce(Option<T>) -> T) -> usize {
        if self.slots.len() < N {
            self.slots.push(make(None));
            return self.slots.len() - 1;
        }
        let at = self.next;
        self.next = (self.next + 1) % N;
        // The oldest out (the last slot takes its place), the new value in
        // at the end, then the two swapped back.
        let old = self.slots.swap_remove(at);
        self.slots.push(make(Some(old)));
        let last = self.slots.len() - 1;
        self.slots.swap(at, last);
        at
    }

    /// Forget every value.
    pub(crate) fn clear(&mut self) {
        self.slots.clear();
        self.next = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_value_is_replaced_and_handed_back() {
        let mut r: Recent<u32, 3> = Recent::default();
        let keep = |r: &mut Recent<u32, 3>, v: u32, replaced: Option<u32>| {
            let at = r.insert(|old| {
                assert_eq!(old, replaced);
                v
            });
            assert_eq!(*r.get(at), v);
        };
        for v in [1, 2, 3] {
            keep(&mut r, v, None);
        }
        keep(&mut r, 4, Some(1));
        keep(&mut r, 5, Some(2));
        assert_eq!(r.find(|&v| v == 1), None);
        for v in [3, 4, 5] {
            assert_eq!(r.find(|&x| x == v), Some(&v));
        }
        keep(&mut r, 6, Some(3));
        r.clear();
        assert_eq!(r.find(|_| true), None);
        keep(&mut r, 7, None);
    }
}
