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
}

impl Compared {
    /// Nothing in common (or nothing to compare with).
    pub(super) fn different() -> Self {
        Self {
            sameness: Sameness::Different,
            changed: Vec::new(),
            requirements_moved: false,
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
    Compared {
        sameness: if changed.is_empty() {
            Sameness::Identical
        } else {
            Sameness::SameResolution
        },
        changed,
        requirements_moved: scopes_moved || first.requirements_moved || second.requirements_moved,
    }
}

/// What comparing a run of entries found (when they resolve alike).
#[derive(Default)]
struct EntriesCompared {
    changed: Vec<EntryId>,
    requirements_moved: bool,
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
