//! Where composition text comes from: the file system, a git revision, or memory.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use crate::engine::diag::Code;

/// Why a source could not deliver a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceError {
    /// What kind of failure this is.
    pub kind: SourceErrorKind,
    /// What went wrong, lower-case, no trailing period.
    pub message: String,
    /// Suggestions.
    pub help: Vec<String>,
}

/// The kind of a [`SourceError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceErrorKind {
    /// The path does not exist (an include of it is `load::include-missing`).
    NotFound,
    /// Any other I/O failure (`load::io`).
    Io,
    /// git failed, e.g. the revision does not resolve (`load::git`).
    Git,
}

impl SourceError {
    pub(crate) fn new(kind: SourceErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            help: Vec::new(),
        }
    }

    /// The diagnostic code for this failure when it is not about an include.
    pub fn code(&self) -> Code {
        match self.kind {
            SourceErrorKind::Git => Code::Git,
            SourceErrorKind::NotFound | SourceErrorKind::Io => Code::Io,
        }
    }
}

/// A provider of composition files.
///
/// Paths are given as the loader builds them: the root path as passed to
/// [`crate::load::load`], includes joined onto the including file's directory
/// and normalized lexically (no `.` or `..` components where avoidable).
pub trait Source {
    /// The text of the file at `path`.
    fn read(&self, path: &Path) -> Result<String, SourceError>;
    /// The `*.toml` files directly inside `dir`, sorted by name.
    /// The bytes of a file (a plugin's files need not be UTF-8); by
    /// default, [`Source::read`]'s text.
    fn read_bytes(&self, path: &Path) -> Result<Vec<u8>, SourceError> {
        self.read(path).map(String::into_bytes)
    }
    fn list_toml(&self, dir: &Path) -> Result<Vec<PathBuf>, SourceError>;
    /// Whether `path` is a directory.
    fn is_dir(&self, path: &Path) -> bool;
    /// How `path` is shown in diagnostics.
    fn display_name(&self, path: &Path) -> String;
    /// The directory that every include and prompt file of the composition
    /// rooted at `root` must lie inside, or `None` when the source holds only
    /// the composition's own files (a git tree, memory). See
    /// [`FsSource::workspace`].
    fn workspace(&self, _root: &Path) -> Option<PathBuf> {
        None
    }
    /// Where `path` really is (symbolic links followed, where the source has
    /// them), or `None` when nothing is there.
    fn resolve(&self, path: &Path) -> Option<PathBuf>;
}

/// Lexically normalize a path: drop `.` components and fold `a/..`.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out: Vec<Component<'_>> = Vec::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match out.last() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(c),
            },
            other => out.push(other),
        }
    }
    let p: PathBuf = out.iter().collect();
    if p.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        p
    }
}

/// The 1-based line and column (in characters) of byte `at` of `bytes`,
/// whose first `at` bytes are valid UTF-8.
fn utf8_position(bytes: &[u8], at: usize) -> (usize, usize) {
    let before = std::str::from_utf8(&bytes[..at.min(bytes.len())]).unwrap_or_default();
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[start..].chars().count() + 1)
}

pub(crate) fn is_toml(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "toml")
}

/// Files on disk.
#[derive(Clone, Copy, Debug, Default)]
pub struct FsSource;

impl Source for FsSource {
    fn read(&self, path: &Path) -> Result<String, SourceError> {
        let bytes = self.read_bytes(path)?;
        String::from_utf8(bytes).map_err(|e| {
            let (line, column) = utf8_position(e.as_bytes(), e.utf8_error().valid_up_to());
            SourceError::new(
                SourceErrorKind::Io,
                format!(
                    "cannot read `{}`: it is not valid UTF-8 at line {line}, column {column} (byte {}); save the file as UTF-8",
                    path.display(),
                    e.utf8_error().valid_up_to()
                ),
            )
        })
    }

    fn read_bytes(&self, path: &Path) -> Result<Vec<u8>, SourceError> {
        let io = |e: std::io::Error| {
            let kind = if e.kind() == std::io::ErrorKind::NotFound {
                SourceErrorKind::NotFound
            } else {
                SourceErrorKind::Io
            };
            SourceError::new(kind, format!("cannot read `{}`: {e}", path.display()))
        };
        // Only regular files: a FIFO or a device named by an include would
        // block the load forever (or read without end).
        let meta = std::fs::metadata(path).map_err(io)?;
        if !meta.is_file() {
            return Err(SourceError::new(
                SourceErrorKind::Io,
                format!(
                    "cannot read `{}`: it is not a regular file (a composition is read from files only)",
                    path.display()
                ),
            ));
        }
        std::fs::read(path).map_err(io)
    }

    fn list_toml(&self, dir: &Path) -> Result<Vec<PathBuf>, SourceError> {
        let read = std::fs::read_dir(dir).map_err(|e| {
            let kind = if e.kind() == std::io::ErrorKind::NotFound {
                SourceErrorKind::NotFound
            } else {
                SourceErrorKind::Io
            };
            SourceError::new(kind, format!("cannot list `{}`: {e}", dir.display()))
        })?;
        let mut out: Vec<PathBuf> = read
            .filter_map(Result::ok)
            .map(|e| e.path())
            // Every `.toml` name but a folder's: one that is not a regular
            // file (a FIFO, a dangling link) is then refused by name when
            // read, never skipped without a word.
            .filter(|p| is_toml(p) && !p.is_dir())
            .map(|p| dir.join(p.file_name().unwrap_or_default()))
            .collect();
        out.sort();
        Ok(out)
    }

    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }

    fn display_name(&self, path: &Path) -> String {
        path.display().to_string()
    }

    /// The top of the git work tree holding `root`, or `root`'s directory
    /// outside one. `check` and `diff` read pull-request content in CI: an
    /// include of `/proc/self/environ` or of a symbolic link to a file
    /// elsewhere on the runner would otherwise print that file's lines in a
    /// syntax error.
    ///
    /// The top is found from the directory as written (made absolute, not
    /// following links), then resolved: a directory of the work tree that
    /// is a link to `/` cannot widen it, and a root file whose real place
    /// lies outside it is refused like an include.
    ///
    /// A top reached through a symbolic link that lies inside another work
    /// tree (a link to another checkout, committed by a pull request) is no
    /// top: the outer tree is.
    fn workspace(&self, root: &Path) -> Option<PathBuf> {
        let dir = root.parent().filter(|d| !d.as_os_str().is_empty());
        let dir = normalize(&std::path::absolute(dir.unwrap_or(Path::new("."))).ok()?);
        let is_top = |d: &Path| d.join(".git").exists();
        let mut top = dir.ancestors().find(|d| is_top(d)).unwrap_or(&dir);
        let linked = top
            .ancestors()
            .any(|a| std::fs::symlink_metadata(a).is_ok_and(|m| m.file_type().is_symlink()));
        if linked && let Some(outer) = top.ancestors().skip(1).find(|d| is_top(d)) {
            top = outer;
        }
        Some(std::fs::canonicalize(top).unwrap_or_else(|_| top.to_path_buf()))
    }

    fn resolve(&self, path: &Path) -> Option<PathBuf> {
        std::fs::canonicalize(path).ok()
    }
}

/// Files held in memory, for tests and benchmarks. A directory exists when
/// some file lies below it.
#[derive(Clone, Debug, Default)]
pub struct MemorySource {
    /// Files by (normalized) path.
    pub files: BTreeMap<PathBuf, String>,
}

impl MemorySource {
    /// An empty source.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add (or replace) a file; builder style.
    pub fn with(mut self, path: impl AsRef<Path>, text: impl Into<String>) -> Self {
        self.insert(path, text);
        self
    }

    /// Add (or replace) a file.
    pub fn insert(&mut self, path: impl AsRef<Path>, text: impl Into<String>) {
        self.files.insert(normalize(path.as_ref()), text.into());
    }
}

impl Source for MemorySource {
    fn read(&self, path: &Path) -> Result<String, SourceError> {
        self.files.get(&normalize(path)).cloned().ok_or_else(|| {
            SourceError::new(
                SourceErrorKind::NotFound,
                format!("`{}` does not exist", path.display()),
            )
        })
    }

    fn list_toml(&self, dir: &Path) -> Result<Vec<PathBuf>, SourceError> {
        if !self.is_dir(dir) {
            return Err(SourceError::new(
                SourceErrorKind::NotFound,
                format!("directory `{}` does not exist", dir.display()),
            ));
        }
        let dir = normalize(dir);
        Ok(self
            .files
            .keys()
            .filter(|p| p.parent().map(normalize).as_deref() == Some(dir.as_path()) && is_toml(p))
            .cloned()
            .collect())
    }

    fn is_dir(&self, path: &Path) -> bool {
        let dir = normalize(path);
        if dir == Path::new(".") {
            return !self.files.is_empty();
        }
        self.files.keys().any(|p| p != &dir && p.starts_with(&dir))
    }

    fn display_name(&self, path: &Path) -> String {
        normalize(path).display().to_string()
    }

    fn resolve(&self, path: &Path) -> Option<PathBuf> {
        let path = normalize(path);
        (self.files.contains_key(&path) || self.is_dir(&path)).then_some(path)
    }
}

/// Split a `rev:path` operand (`origin/main:composition.toml`,
/// `HEAD~1:a.toml`) at its first `:`. Returns `None` for operands that are
/// plain paths: no `:`, an empty side, a Windows drive (`C:\x`, `C:/x`), or a
/// "revision" that looks like a path (starts with `.` or `/`, contains `\`
/// or whitespace).
pub fn parse_rev_path(operand: &str) -> Option<(String, String)> {
    let (rev, path) = operand.split_once(':')?;
    if rev.is_empty() || path.is_empty() {
        return None;
    }
    let drive = rev.len() == 1 && rev.as_bytes()[0].is_ascii_alphabetic();
    if drive && (path.starts_with('\\') || path.starts_with('/')) {
        return None;
    }
    if rev.starts_with(['.', '/']) || rev.contains(['\\']) || rev.contains(char::is_whitespace) {
        return None;
    }
    Some((rev.to_owned(), path.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rev_path_operands() {
        let ok = |s: &str, r: &str, p: &str| {
            assert_eq!(parse_rev_path(s), Some((r.to_owned(), p.to_owned())), "{s}");
        };
        ok(
            "origin/main:composition.toml",
            "origin/main",
            "composition.toml",
        );
        ok("HEAD~1:a.toml", "HEAD~1", "a.toml");
        ok("v1.0^:dir/a.toml", "v1.0^", "dir/a.toml");
        ok("HEAD:a:b.toml", "HEAD", "a:b.toml");
        for none in [
            "a.toml",
            "C:\\x\\a.toml",
            "C:/x/a.toml",
            "HEAD:",
            ":a.toml",
            "./x:a.toml",
            "/abs:x",
        ] {
            assert_eq!(parse_rev_path(none), None, "{none}");
        }
    }

    #[test]
    fn memory_source_lists_and_normalizes() {
        let src = MemorySource::new()
            .with("c.toml", "")
            .with("p/b.toml", "")
            .with("p/a.toml", "")
            .with("p/x.txt", "")
            .with("p/q/d.toml", "");
        assert!(src.is_dir(Path::new("p")));
        assert!(src.is_dir(Path::new("./p/")));
        assert!(!src.is_dir(Path::new("c.toml")));
        assert_eq!(
            src.list_toml(Path::new("p")).unwrap(),
            vec![PathBuf::from("p/a.toml"), PathBuf::from("p/b.toml")]
        );
        assert_eq!(src.read(Path::new("p/../c.toml")).unwrap(), "");
        assert_eq!(
            src.read(Path::new("nope.toml")).unwrap_err().kind,
            SourceErrorKind::NotFound
        );
        assert_eq!(
            normalize(Path::new("a/./b/../c.toml")),
            PathBuf::from("a/c.toml")
        );
    }
}
