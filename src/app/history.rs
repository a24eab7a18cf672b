//! What a store remembers: its generations and the runs made on them.

use std::path::PathBuf;

use crate::store::{GenerationSummary, StoredGeneration, StoredRun};

use super::error::AppError;
use super::state::StoreSelection;

/// A list read from a store.
pub struct Listing<T> {
    /// The store it was read from.
    pub store: PathBuf,
    /// Oldest first.
    pub items: Vec<T>,
}

/// Every published generation of the selected store (default
/// `.chassis/state.db` here), by lineage, oldest first; one lineage's with
/// `--composition`.
pub fn generations(at: &StoreSelection) -> Result<Listing<GenerationSummary>, AppError> {
    let store = at.open()?;
    let lineage = at.lineage(store.path());
    if let Some(l) = &lineage {
        store.known_lineage(l)?;
    }
    Ok(Listing {
        items: store.list(lineage.as_deref())?,
        store: store.path().to_path_buf(),
    })
}

/// Generation `id` (`gen_0002` or `NAME:gen_0002`) of the selected store.
pub fn generation(at: &StoreSelection, id: &str) -> Result<StoredGeneration, AppError> {
    at.open()?.generation(id, at.composition.as_ref())
}

/// Every run recorded in the selected store (one lineage's with
/// `--composition`).
pub fn runs(at: &StoreSelection) -> Result<Listing<StoredRun>, AppError> {
    let store = at.open()?;
    let lineage = at.lineage(store.path());
    if let Some(l) = &lineage {
        store.known_lineage(l)?;
    }
    let mut items = store.runs()?;
    if let Some(l) = lineage {
        items.retain(|r| r.lineage == l);
    }
    Ok(Listing {
        items,
        store: store.path().to_path_buf(),
    })
}

/// Run `id` of the selected store.
pub fn run(at: &StoreSelection, id: &str) -> Result<StoredRun, AppError> {
    at.open()?.run(id)
}
