//! How a desired composition relates to the current generation's.
//!
//! Every reconcile starts here: an identical composition publishes nothing,
//! one that differs only in some entries' configurations (or in where
//! things were declared) shares the current scope tree and plan, anything
//! else resolves again. A reload builds every entry afresh, so at 10,000
//! entries this is 10,000 manifests compared by value — memory-bound work
//! that splits in two halves over a second core (see
//! [`crate::engine::parallel`]). The same walk notes whether a
//! requirement's declaration moved, so the plan is re-pointed at the new
//! text only when one did.

use std::sync::Arc;

use crate::engine::model::{Composition, Entry, EntryId};
use crate::engine::parallel;

/// How a desired composition relates to the current one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Sameness {
    /// Equal, as `==` says (entries compared by [`same_entry`]).
    Identical,
    /// Equal but for some entries' configurations: the same scope tree and
    /// resolution.
    SameResolution,
    /// Anything else.
    Different,
}

/// The answer of [`compare_compositions`].
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Compared {
    /// How the two relate.
    pub(super) sameness: Sameness,
    /// The entries whose configuration differs, in id order (empty when
    /// `Different`).
    pub(super) changed: Vec<EntryId>,
    /// Whether a requirement (of an entry's manifest or of a scope) is
    /// declared elsewhere in the desired composition: the current plan's
    /// origins need re-pointing. Only meaningful unless `Different`.
    pub(super) requirements_moved: bool,
    /// The desired entries whose configuration references a secret (their
    /// identity may move with the secret's value), in id order; noted while
    /// each configuration is at hand. Empty when `Different`.
    pub(super) with_secrets: Vec<EntryId>,
}

impl Compared {
    /// Nothing in common (or nothing to compare with).
    pub(super) fn different() -> Self {
        Self {
            sameness: Sameness::Different,
            changed: Vec::new(),
            requirements_moved: false,
            with_secrets: Vec::new(),
        }
    }
}

/// Compare `a` (current) with `b` (desired), entries by [`same_entry`] (a
/// composition cloned from the current one shares its manifests, and
/// comparing 10,000 of them field by field with themselves was most of a
/// no-op reconcile); everything else by [`Composition::same_but_entries`].
pub(super) fn compare_compositions(a: &Composition, b: &Composition) -> Compared {
    let rest_equal = a.entries.len() == b.entries.len() && a.same_but_entries(b);
    if !rest_equal {
        return Compared::different();
    }
    let scopes_moved = a.scopes.values().zip(b.scopes.values()).any(|(x, y)| {
        x.requirements
            .values()
            .zip(y.requirements.values())
            .any(|(rx, ry)| rx.origin != ry.origin)
    });
    // Two halves at the middle id of `a`; `b`'s halves are the same ranges
    // of ids, so equal maps split alike (and unequal ones are told apart by
    // whichever half differs).
    let n = a.entries.len();
    let halves = match a.entries.keys().nth(n / 2) {
        Some(mid) if parallel::splits(n) => parallel::join(
            n,
            || {
                compare_entries(
                    a.entries.range::<EntryId, _>(..mid),
                    b.entries.range::<EntryId, _>(..mid),
                )
            },
            || {
                compare_entries(
                    a.entries.range::<EntryId, _>(mid..),
                    b.entries.range::<EntryId, _>(mid..),
                )
            },
        ),
        _ => (
            compare_entries(a.entries.iter(), b.entries.iter()),
            Some(EntriesCompared::default()),
        ),
    };
    let (Some(first), Some(second)) = halves else {
        return Compared::different();
    };
    let mut changed = first.changed;
    changed.extend(second.changed);
    let mut with_secrets = first.with_secrets;
    with_secrets.extend(second.with_secrets);
    Compared {
        sameness: if changed.is_empty() {
            Sameness::Identical
        } else {
            Sameness::SameResolution
        },
        changed,
        requirements_moved: scopes_moved || first.requirements_moved || second.requirements_moved,
        with_secrets,
    }
}

/// What comparing a run of entries found (when they resolve alike).
#[derive(Default)]
struct EntriesCompared {
    changed: Vec<EntryId>,
    requirements_moved: bool,
    with_secrets: Vec<EntryId>,
}

/// Compare two runs of entries pair by pair; `None` when they differ in
/// anything but configurations and origins (a different id, count or
/// resolution input).
fn compare_entries<'c>(
    mut a: impl Iterator<Item = (&'c EntryId, &'c Entry)>,
    mut b: impl Iterator<Item = (&'c EntryId, &'c Entry)>,
) -> Option<EntriesCompared> {
    let mut out = EntriesCompared::default();
    loop {
        match (a.next(), b.next()) {
            (None, None) => return Some(out),
            (Some((ia, ea)), Some((ib, eb))) => {
                if ia != ib || !same_resolution_inputs(ea, eb) {
                    return None;
                }
                // A configuration with a NaN is unequal to itself: such an
                // entry never counts as unchanged (as with `==`).
                if ea.config != eb.config {
                    out.changed.push(ib.clone());
                }
                if eb.config.has_secret_refs() {
                    out.with_secrets.push(ib.clone());
                }
                // Equal manifests require the same capabilities, in the
                // same order; a shared one declared them in the same place.
                if !out.requirements_moved && !Arc::ptr_eq(&ea.manifest, &eb.manifest) {
                    out.requirements_moved = ea
                        .manifest
                        .requires
                        .values()
                        .zip(eb.manifest.requires.values())
                        .any(|(x, y)| x.origin != y.origin);
                }
            }
            _ => return None,
        }
    }
}

/// Whether `a` equals `b`, as `==` says, without comparing a shared manifest
/// with itself (only used to skip hashing an identity: a manifest unequal to
/// itself hashes as it did).
pub(super) fn same_entry(a: &Entry, b: &Entry) -> bool {
    same_resolution_inputs(a, b) && a.config == b.config
}

/// Whether `a` equals `b` in everything the scope tree and the resolver
/// read: all but the configuration and where the entry was declared. Every
/// field is named, so a new one cannot be missed.
fn same_resolution_inputs(a: &Entry, b: &Entry) -> bool {
    let Entry {
        id,
        plugin,
        manifest,
        scope,
        config: _,
        prefer,
        origin: _,
    } = a;
    *id == b.id
        && *plugin == b.plugin
        && *scope == b.scope
        && *prefer == b.prefer
        && (Arc::ptr_eq(manifest, &b.manifest) || *manifest == b.manifest)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engine::build::CompositionBuilder;
    use crate::engine::model::ConfigValue;
    use crate::engine::span::{Origin, SourceId, Span};

    /// A chain of `n` entries named `e{i}` (skipping `skip`), the entry at
    /// `changed` configured differently.
    fn chain(n: usize, skip: Option<usize>, changed: Option<usize>) -> Composition {
        let mut b = CompositionBuilder::new();
        for i in (0..n).filter(|&i| Some(i) != skip) {
            b = b
                .entry(&format!("e{i:05}"))
                .provides(&format!("cap{i}"), &["1.0.0"]);
            if i > 0 {
                b = b.requires(&format!("cap{}", i - 1), ">=1,<2");
            }
            if Some(i) == changed {
                b = b.config(ConfigValue::Table(
                    [("v".to_owned(), ConfigValue::Int(2))].into(),
                ));
            }
        }
        b.build().expect("a valid chain")
    }

    fn id(i: usize) -> EntryId {
        EntryId::new(&format!("e{i:05}")).unwrap()
    }

    // Below and above the size at which the halves are compared on two
    // cores (the answers must not depend on it).
    const SIZES: [usize; 4] = [1, 3, 4_095, 4_097];

    #[test]
    fn identical_and_configuration_changes_wherever_they_are() {
        for n in SIZES {
            let base = chain(n, None, None);
            let same = compare_compositions(&base, &chain(n, None, None));
            assert_eq!(same.sameness, Sameness::Identical, "n={n}");
            assert!(same.changed.is_empty() && !same.requirements_moved);
            for at in [0, n / 2, n - 1] {
                let got = compare_compositions(&base, &chain(n, None, Some(at)));
                assert_eq!(got.sameness, Sameness::SameResolution, "n={n} at={at}");
                assert_eq!(got.changed, [id(at)], "n={n} at={at}");
                assert!(!got.requirements_moved);
            }
        }
    }

    #[test]
    fn a_different_entry_set_of_the_same_size_is_different() {
        for n in SIZES.into_iter().filter(|&n| n > 2) {
            // One id dropped, another added: same count, other keys, on
            // either side of the middle.
            for (gone, extra) in [(0, n), (n / 2, n), (n - 1, n), (1, n + 7)] {
                let a = chain(n, None, None);
                let mut b = chain(n + 8, Some(gone), None);
                b.entries.retain(|k, _| {
                    let i: usize = k.as_str()[1..].parse().unwrap();
                    i < n || i == extra
                });
                assert_eq!(a.entries.len(), b.entries.len());
                let got = compare_compositions(&a, &b);
                assert_eq!(got, Compared::different(), "n={n} gone={gone}");
            }
        }
    }

    #[test]
    fn a_moved_requirement_is_noticed_in_either_half() {
        for n in SIZES.into_iter().filter(|&n| n > 2) {
            for at in [1, n / 2, n - 1] {
                let a = chain(n, None, None);
                let mut b = chain(n, None, None);
                let entry = b.entries.get_mut(&id(at)).unwrap();
                let manifest = Arc::make_mut(&mut entry.manifest);
                for r in manifest.requires.values_mut() {
                    r.origin = Some(Origin::new(SourceId(0), Span { start: 9, end: 10 }));
                }
                let got = compare_compositions(&a, &b);
                assert_eq!(got.sameness, Sameness::Identical, "n={n} at={at}");
                assert!(got.requirements_moved, "n={n} at={at}");
            }
        }
    }

    #[test]
    fn configurations_referencing_secrets_are_listed_from_either_half() {
        use crate::engine::model::SecretRef;
        for n in SIZES {
            let base = chain(n, None, None);
            let none = compare_compositions(&base, &chain(n, None, None));
            assert!(none.with_secrets.is_empty(), "n={n}");
            let mut with = chain(n, None, None);
            let picked: Vec<usize> = [0, n / 2, n - 1].into_iter().collect();
            for &at in &picked {
                *std::sync::Arc::make_mut(&mut with.entries.get_mut(&id(at)).unwrap().config) =
                    ConfigValue::Table(
                        [(
                            "key".to_owned(),
                            ConfigValue::Array(vec![ConfigValue::Secret(SecretRef {
                                name: "API_KEY".into(),
                            })]),
                        )]
                        .into(),
                    );
            }
            let got = compare_compositions(&base, &with);
            let mut expected: Vec<EntryId> = picked.iter().map(|&at| id(at)).collect();
            expected.dedup();
            assert_eq!(got.with_secrets, expected, "n={n}");
            assert_eq!(got.changed, expected, "n={n}");
            // Referencing secrets on both sides is unchanged, and still
            // listed; another entry's change is listed as changed only.
            if n > 3 && !picked.contains(&1) {
                let mut other = with.clone();
                *std::sync::Arc::make_mut(&mut other.entries.get_mut(&id(1)).unwrap().config) =
                    ConfigValue::Table([("v".to_owned(), ConfigValue::Int(7))].into());
                let got = compare_compositions(&with, &other);
                assert_eq!(got.sameness, Sameness::SameResolution, "n={n}");
                assert_eq!(got.changed, [id(1)], "n={n}");
                assert_eq!(got.with_secrets, expected, "n={n}");
            }
        }
    }
}
