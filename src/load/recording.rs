//! A [`Source`] that remembers what a load looked at.
//!
//! Why it exists: a server reloads its composition when any file the load
//! read changes — the root, includes, prompt files, the lock — and when a
//! `dir/*.toml` include's folder gains or loses a file. Which files those
//! are is only known by loading, so the load itself keeps the list,
//! including reads that failed (creating the missing file is a change).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::source::{Source, SourceError};

/// What a load read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Read {
    /// Every file it read (or tried to).
    pub files: BTreeSet<PathBuf>,
    /// Every folder whose `*.toml` files it listed.
    pub listed: BTreeSet<PathBuf>,
}

/// `inner`, remembering every read and listing.
pub struct Recording<'s> {
    inner: &'s dyn Source,
    read: Mutex<Read>,
}

impl<'s> Recording<'s> {
    /// Record what is read through `inner`.
    pub fn new(inner: &'s dyn Source) -> Self {
        Self {
            inner,
            read: Mutex::new(Read::default()),
        }
    }

    /// What was read.
    pub fn into_read(self) -> Read {
        self.read
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn note(&self, f: impl FnOnce(&mut Read)) {
        f(&mut self
            .read
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner));
    }
}

impl Source for Recording<'_> {
    fn read(&self, path: &Path) -> Result<String, SourceError> {
        self.note(|r| {
            r.files.insert(path.to_path_buf());
        });
        self.inner.read(path)
    }

    fn read_bytes(&self, path: &Path) -> Result<Vec<u8>, SourceError> {
        self.note(|r| {
            r.files.insert(path.to_path_buf());
        });
        self.inner.read_bytes(path)
    }

    fn list_toml(&self, dir: &Path) -> Result<Vec<PathBuf>, SourceError> {
        self.note(|r| {
            r.listed.insert(dir.to_path_buf());
        });
        self.inner.list_toml(dir)
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.inner.is_dir(path)
    }

    fn display_name(&self, path: &Path) -> String {
        self.inner.display_name(path)
    }

    fn workspace(&self, root: &Path) -> Option<PathBuf> {
        self.inner.workspace(root)
    }

    fn resolve(&self, path: &Path) -> Option<PathBuf> {
        self.inner.resolve(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::source::MemorySource;

    #[test]
    fn a_load_remembers_every_file_and_folder_it_looked_at() {
        let mem = MemorySource::new()
            .with(
                "/w/c.toml",
                "version = 1\ninclude = [\"parts/*.toml\", \"missing.toml\"]\n[agents.a]\nprompt_file = \"p.md\"\n",
            )
            .with("/w/parts/a.toml", "[plugins.x]\nversion = \"1.0.0\"\n")
            .with("/w/p.md", "Be brief.");
        let recording = Recording::new(&mem);
        let _ = crate::load::load(&recording, Path::new("/w/c.toml"));
        let read = recording.into_read();
        for f in ["/w/c.toml", "/w/parts/a.toml", "/w/p.md", "/w/missing.toml"] {
            assert!(read.files.contains(Path::new(f)), "{f}: {read:?}");
        }
        assert!(read.listed.contains(Path::new("/w/parts")), "{read:?}");
    }
}
