//! `--state` and `--composition`: which store a history command reads, and
//! whose history in it. One definition so every command that takes a
//! generation id reads, helps and completes the same way.

use std::path::PathBuf;

use crate::app::state::StoreSelection;

/// Which store, and which composition's history in it.
#[derive(Clone, Debug, clap::Args)]
pub struct StoreArgs {
    /// The store (default `.chassis/state.db` beside `--composition FILE`,
    /// else in the current directory).
    #[arg(long, value_name = "PATH")]
    pub state: Option<PathBuf>,
    /// Whose history, when compositions share the store: a composition
    /// file, or its lineage name (the file's path in the workspace, or its
    /// `name = "…"`). A qualified id (`NAME:gen_0002`) names one too.
    #[arg(long, value_name = "FILE|NAME")]
    pub composition: Option<String>,
}

impl StoreArgs {
    /// As the application layer takes it.
    pub fn selection(&self) -> StoreSelection {
        StoreSelection::new(self.state.as_deref(), self.composition.as_deref())
    }
}
