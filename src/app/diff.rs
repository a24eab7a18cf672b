//! `diff generations`: what changed, semantically, between two sides —
//! each a composition, a snapshot file, a composition at a git revision or
//! a stored generation id; with NODES when both are stored generations.

use std::path::Path;

use crate::engine::canonical::Canon;
use crate::engine::declared::changed_keys;
use crate::engine::diff::{GenerationDiff, diff_snapshots};
use crate::engine::leaf_diff::{LeafChange, changed_leaves};
use crate::engine::parallel;
use crate::engine::redact::REDACTED;
use crate::store::StoredGeneration;

use super::error::AppError;
use super::report::{Deferred, Reporter};
use super::reuse::{NodeChange, node_changes};
use super::state::{GenerationRef, StateStore, StoreSelection};
use super::workspace::{Operand, OperandKind, load_operand};

/// What to compare.
#[derive(Clone, Debug)]
pub struct DiffOptions {
    /// The old side, as the caller named it.
    pub old: String,
    /// The new side.
    pub new: String,
    /// Also list what did not change.
    pub include_unchanged: bool,
    /// The store generation ids are read from (and whose history).
    pub store: StoreSelection,
}

/// The comparison.
pub struct DiffOutcome {
    /// The semantic diff.
    pub diff: GenerationDiff,
    /// The old side.
    pub old: Operand,
    /// The new side.
    pub new: Operand,
    /// How each node changed, when both sides are stored generations.
    pub nodes: Option<Vec<NodeChange>>,
    /// Every changed key (`entries.db.config.timeout`): between two
    /// compositions with their values (masked where a person must not see
    /// them); between two stored generations the configuration keys, named
    /// without values.
    pub keys: Option<Vec<LeafChange>>,
    /// How the host settings changed, when both sides are compositions
    /// (never part of the semantic diff: they fail no gate).
    pub host_settings: Option<Vec<LeafChange>>,
}

impl DiffOutcome {
    /// The document of `chassis diff generations --format json` (and of a
    /// server's `/v1/diff`), the sides named as the caller named them.
    pub fn document(&self, old_operand: &str, new_operand: &str) -> serde_json::Value {
        let mut doc = self.diff.to_canon().to_json();
        if let Some(obj) = doc.as_object_mut() {
            obj.insert("old_operand".into(), old_operand.into());
            obj.insert("new_operand".into(), new_operand.into());
            if let Some(nodes) = &self.nodes {
                obj.insert(
                    "nodes".into(),
                    serde_json::to_value(nodes).unwrap_or_default(),
                );
            }
            if let Some(keys) = &self.keys {
                obj.insert("keys".into(), keys.iter().map(|l| l.to_json()).collect());
            }
            if let Some(host) = &self.host_settings {
                obj.insert(
                    "host_settings".into(),
                    host.iter().map(|l| l.to_json()).collect(),
                );
            }
        }
        doc
    }
}

/// Compare two sides.
pub fn diff(options: &DiffOptions, reporter: &dyn Reporter) -> Result<DiffOutcome, AppError> {
    let mut store = None;
    let ((old, old_gen), (new, new_gen)) =
        if names_stored(&options.old) || names_stored(&options.new) {
            let old = side(&options.old, &options.store, &mut store, reporter)?;
            (
                old,
                side(&options.new, &options.store, &mut store, reporter)?,
            )
        } else {
            // Two files: loaded side by side, one per core (a 100,000-entry
            // composition takes ~0.4 s). The new side's diagnostics wait for
            // the old side's, so what is reported reads as if loaded in turn.
            let deferred = Deferred::new(reporter);
            let (old, new) = parallel::join(
                parallel::PARALLEL_MIN_WORK,
                || load_operand(&options.old, reporter),
                || load_operand(&options.new, &deferred),
            );
            let old = old?;
            deferred.replay();
            ((old, None), (new?, None))
        };
    let nodes = match (&old_gen, &new_gen) {
        (Some(a), Some(b)) => Some(node_changes(a, b)),
        _ => None,
    };
    // The semantic diff beside the changed keys: they read the two sides
    // and share nothing.
    let work = (old.snapshot.semantic_scopes.work()).max(new.snapshot.semantic_scopes.work());
    let (diff, (keys, host_settings)) = parallel::join(
        work,
        || diff_snapshots(&old.snapshot, &new.snapshot, options.include_unchanged),
        || match (&old.composition, &new.composition) {
            (Some(a), Some(b)) => (
                Some(changed_keys(a, b)),
                Some(changed_leaves(&a.host.to_canon(), &b.host.to_canon())),
            ),
            _ => match (&old_gen, &new_gen) {
                (Some(a), Some(b)) => (Some(stored_config_keys(a, b)), None),
                _ => (None, None),
            },
        },
    );
    Ok(DiffOutcome {
        diff,
        old,
        new,
        nodes,
        keys,
        host_settings,
    })
}

/// The configuration keys that changed between two stored generations,
/// named from the per-leaf fingerprints the store keeps (it keeps no
/// values: each is `(changed)`, `(added)` or `(removed)`). When the
/// configuration changed and no fingerprinted leaf did — a value that may be
/// a credential (never fingerprinted), a rotated secret, an entry stored
/// before leaves were kept — the entry's `config` is the row.
fn stored_config_keys(old: &StoredGeneration, new: &StoredGeneration) -> Vec<LeafChange> {
    let masked = |present: bool| present.then(|| Canon::from(REDACTED));
    let mut out = Vec::new();
    for a in &old.nodes {
        let Some(b) = new.node(&a.entry_id) else {
            continue;
        };
        if a.identity.config == b.identity.config {
            continue;
        }
        let base = ["entries", a.entry_id.as_str(), "config"].map(str::to_owned);
        let (x, y) = (&a.identity.config_leaves, &b.identity.config_leaves);
        let before = out.len();
        let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
        for key in keys {
            let (p, q) = (x.get(key), y.get(key));
            // Present on both sides without a fingerprint: unknown, and
            // covered by the row below when nothing else explains it.
            let unknown = p.is_some_and(String::is_empty) && q.is_some_and(String::is_empty);
            if p == q || unknown {
                continue;
            }
            let below: Vec<String> = serde_json::from_str(key).unwrap_or_default();
            out.push(LeafChange {
                path: base.iter().cloned().chain(below).collect(),
                old: masked(p.is_some()),
                new: masked(q.is_some()),
                masked: true,
            });
        }
        if out.len() == before {
            out.push(LeafChange {
                path: base.to_vec(),
                old: masked(true),
                new: masked(true),
                masked: true,
            });
        }
    }
    out
}

fn side(
    operand: &str,
    at: &StoreSelection,
    store: &mut Option<StateStore>,
    reporter: &dyn Reporter,
) -> Result<(Operand, Option<StoredGeneration>), AppError> {
    match store_operand(operand, at, store)? {
        Some((side, g)) => Ok((side, Some(g))),
        None => Ok((load_operand(operand, reporter)?, None)),
    }
}

/// Whether `operand` names a stored generation: a `gen_NNNN` (or
/// `NAME:gen_NNNN`) that is not an existing file.
fn names_stored(operand: &str) -> bool {
    !Path::new(operand).exists() && GenerationRef::parse(operand).is_some()
}

/// The stored generation `operand` names (see [`names_stored`]);
/// `Ok(None)` when it names none.
fn store_operand(
    operand: &str,
    at: &StoreSelection,
    store: &mut Option<StateStore>,
) -> Result<Option<(Operand, StoredGeneration)>, AppError> {
    if !names_stored(operand) {
        return Ok(None);
    }
    let opened = match store {
        Some(s) => s,
        None => store.insert(at.open()?),
    };
    let (g, env) = opened.generation_read_back(operand, at.composition.as_ref())?;
    Ok(Some((
        Operand {
            snapshot: env.snapshot,
            display: operand.to_owned(),
            kind: OperandKind::Stored,
            composition: None,
        },
        g,
    )))
}
