//! What a store remembers: its generations and the runs made on them.

use std::path::{Path, PathBuf};

use crate::store::{GenerationSummary, OpenMode, StoredGeneration, StoredRun};

use super::error::AppError;
use super::state::{StateStore, state_path};

/// A list read from a store.
pub struct Listing<T> {
    /// The store it was read from.
    pub store: PathBuf,
    /// Oldest first.
    pub items: Vec<T>,
}

fn open(state: Option<&Path>) -> Result<StateStore, AppError> {
    StateStore::open(&state_path(state, None), OpenMode::ReadOnly)
}

/// Every published generation of the store at `state` (default
/// `.chassis/state.db` here), oldest first.
pub fn generations(state: Option<&Path>) -> Result<Listing<GenerationSummary>, AppError> {
    let store = open(state)?;
    Ok(Listing {
        items: store.list()?,
        store: store.path().to_path_buf(),
    })
}

/// Generation `id` of the store at `state`.
pub fn generation(state: Option<&Path>, id: &str) -> Result<StoredGeneration, AppError> {
    open(state)?.generation(id)
}

/// Every run recorded in the store at `state`.
pub fn runs(state: Option<&Path>) -> Result<Listing<StoredRun>, AppError> {
    let store = open(state)?;
    Ok(Listing {
        items: store.runs()?,
        store: store.path().to_path_buf(),
    })
}

/// Run `id` of the store at `state`.
pub fn run(state: Option<&Path>, id: &str) -> Result<StoredRun, AppError> {
    open(state)?.run(id)
}
