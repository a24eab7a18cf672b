//! An ordered map kept as a sorted vector, for the maps a manifest holds.
//!
//! A manifest's `provides` and `requires` hold one or two capabilities,
//! and there is a manifest per plugin: a `BTreeMap` allocates a whole
//! eleven-slot node for its first key (about 800 bytes for a requirement),
//! so a 100,000-plugin composition spent 160 MB on those two maps. A sorted
//! vector holds what it holds, iterates in the same (key) order, and looks
//! up by binary search. The API is the subset of `BTreeMap`'s the code
//! uses, with the same meaning, so either reads the same.

use std::borrow::Borrow;
use std::fmt;

/// An ordered map as a sorted vector of pairs (keys unique).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct SmallMap<K, V> {
    pairs: Vec<(K, V)>,
}

impl<K, V> Default for SmallMap<K, V> {
    fn default() -> Self {
        Self { pairs: Vec::new() }
    }
}

impl<K: fmt::Debug, V: fmt::Debug> fmt::Debug for SmallMap<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.pairs.iter().map(|(k, v)| (k, v)))
            .finish()
    }
}

impl<K: Ord, V> SmallMap<K, V> {
    /// An empty map.
    pub const fn new() -> Self {
        Self { pairs: Vec::new() }
    }

    fn find<Q: Ord + ?Sized>(&self, key: &Q) -> Result<usize, usize>
    where
        K: Borrow<Q>,
    {
        self.pairs.binary_search_by(|(k, _)| k.borrow().cmp(key))
    }

    /// How many pairs.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The value of `key`.
    pub fn get<Q: Ord + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
    {
        self.find(key).ok().map(|i| &self.pairs[i].1)
    }

    /// The value of `key`, to change.
    pub fn get_mut<Q: Ord + ?Sized>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
    {
        self.find(key).ok().map(|i| &mut self.pairs[i].1)
    }

    /// Whether `key` is in the map.
    pub fn contains_key<Q: Ord + ?Sized>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
    {
        self.find(key).is_ok()
    }

    /// Set `key` to `value`, returning the value it replaced.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.pairs[i].1, value)),
            Err(i) => {
                self.pairs.insert(i, (key, value));
                None
            }
        }
    }

    /// Remove `key`, returning its value.
    pub fn remove<Q: Ord + ?Sized>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        self.find(key).ok().map(|i| self.pairs.remove(i).1)
    }

    /// The pairs in key order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&K, &V)> + ExactSizeIterator {
        self.pairs.iter().map(|(k, v)| (k, v))
    }

    /// The keys in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &K> + ExactSizeIterator {
        self.pairs.iter().map(|(k, _)| k)
    }

    /// The values in key order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &V> + ExactSizeIterator {
        self.pairs.iter().map(|(_, v)| v)
    }

    /// The values in key order, to change.
    pub fn values_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut V> + ExactSizeIterator {
        self.pairs.iter_mut().map(|(_, v)| v)
    }
}

impl<K: Ord, V> FromIterator<(K, V)> for SmallMap<K, V> {
    /// Like `BTreeMap`'s: of pairs with equal keys, the last one stays.
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut pairs: Vec<(K, V)> = iter.into_iter().collect();
        // Stable, so equal keys keep their order and the last is kept.
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out: Vec<(K, V)> = Vec::with_capacity(pairs.len());
        for pair in pairs {
            match out.last_mut() {
                Some(last) if last.0 == pair.0 => *last = pair,
                _ => out.push(pair),
            }
        }
        out.shrink_to_fit();
        Self { pairs: out }
    }
}

impl<K: Ord, V, const N: usize> From<[(K, V); N]> for SmallMap<K, V> {
    fn from(pairs: [(K, V); N]) -> Self {
        pairs.into_iter().collect()
    }
}

impl<K: Ord, V> Extend<(K, V)> for SmallMap<K, V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl<K, V> IntoIterator for SmallMap<K, V> {
    type Item = (K, V);
    type IntoIter = std::vec::IntoIter<(K, V)>;

    fn into_iter(self) -> Self::IntoIter {
        self.pairs.into_iter()
    }
}

impl<'a, K, V> IntoIterator for &'a SmallMap<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, (K, V)>, fn(&'a (K, V)) -> (&'a K, &'a V)>;

    fn into_iter(self) -> Self::IntoIter {
        self.pairs.iter().map(|(k, v)| (k, v))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::SmallMap;

    #[test]
    fn reads_as_a_btree_map_would() {
        let input = [(3, "c"), (1, "a"), (2, "b"), (1, "z"), (5, "e")];
        let small: SmallMap<i32, &str> = input.into_iter().collect();
        let btree: BTreeMap<i32, &str> = input.into_iter().collect();
        assert!(small.iter().eq(btree.iter()));
        assert_eq!(small.len(), btree.len());
        assert_eq!(small.get(&1), Some(&"z"));
        assert_eq!(format!("{small:?}"), format!("{btree:?}"));

        let mut small = small;
        let mut btree = btree;
        for (k, v) in [(4, "d"), (0, "o"), (3, "x"), (9, "n")] {
            assert_eq!(small.insert(k, v), btree.insert(k, v));
        }
        assert_eq!(small.remove(&2), btree.remove(&2));
        assert_eq!(small.remove(&7), btree.remove(&7));
        assert!(small.keys().eq(btree.keys()));
        assert!(small.values().eq(btree.values()));
        assert!(small.contains_key(&9) && !small.contains_key(&2));
        if let Some(v) = small.get_mut(&9) {
            *v = "m";
        }
        assert_eq!(small.get(&9), Some(&"m"));
        let owned: Vec<(i32, &str)> = small.into_iter().collect();
        assert_eq!(owned.first(), Some(&(0, "o")));
    }
}
