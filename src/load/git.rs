//! Reading a composition as it is at a git revision, through the `git` CLI.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::source::{Source, SourceError, SourceErrorKind, is_toml, normalize};

/// Files as they are at a git revision, read through the `git` command.
///
/// Paths are relative to `repo` (a directory inside the work tree) or
/// absolute; they are translated to paths relative to the repository top.
#[derive(Clone, Debug)]
pub struct GitSource {
    /// A directory inside the repository (`git -C` runs there).
    pub repo: PathBuf,
    /// The revision, e.g. `HEAD`, `origin/main`, `v1.2~1`.
    pub rev: String,
}

impl GitSource {
    /// A source reading `rev` in the repository containing `repo`.
    pub fn new(repo: impl Into<PathBuf>, rev: impl Into<String>) -> Self {
        Self {
            repo: repo.into(),
            rev: rev.into(),
        }
    }

    fn git(&self, args: &[&str]) -> Result<std::process::Output, SourceError> {
        Command::new("git")
            .arg("-C")
            .arg(&self.repo)
            .args(args)
            .output()
            .map_err(|e| SourceError::new(SourceErrorKind::Git, format!("cannot run `git`: {e}")))
    }

    fn git_stdout(&self, args: &[&str]) -> Option<String> {
        let out = self.git(args).ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim_end().to_owned())
    }

    /// `path` relative to the repository top, with `/` separators.
    fn top_relative(&self, path: &Path) -> String {
        let joined = if path.is_absolute() {
            let top = self
                .git_stdout(&["rev-parse", "--show-toplevel"])
                .unwrap_or_default();
            path.strip_prefix(&top)
                .map(Path::to_path_buf)
                .unwrap_or_else(|_| path.to_path_buf())
        } else {
            let prefix = self
                .git_stdout(&["rev-parse", "--show-prefix"])
                .unwrap_or_default();
            Path::new(&prefix).join(path)
        };
        let norm = normalize(&joined);
        let text = norm.to_string_lossy().replace('\\', "/");
        if text == "." { String::new() } else { text }
    }

    /// The error for a revision that does not resolve, if it does not.
    fn check_rev(&self) -> Result<(), SourceError> {
        let spec = format!("{}^{{commit}}", self.rev);
        if self
            .git_stdout(&["rev-parse", "--verify", "--quiet", &spec])
            .is_some()
        {
            return Ok(());
        }
        if self
            .git_stdout(&["rev-parse", "--is-inside-work-tree"])
            .is_none()
        {
            let mut err = SourceError::new(
                SourceErrorKind::Git,
                format!(
                    "`{}` is not inside a git repository, so `{}:…` cannot be read",
                    self.repo.display(),
                    self.rev
                ),
            );
            err.help.push(
                "run chassis inside the repository, or name a file that exists (a file is tried before `REV:PATH`)".into(),
            );
            return Err(err);
        }
        let mut err = SourceError::new(
            SourceErrorKind::Git,
            format!(
                "revision `{}` does not resolve in `{}`",
                self.rev,
                self.repo.display()
            ),
        );
        if self
            .git_stdout(&["rev-parse", "--is-shallow-repository"])
            .as_deref()
            == Some("true")
        {
            err.help.push(format!(
                "this is a shallow clone, so `{}` may be missing from it: run `git fetch --unshallow` (in CI, use `fetch-depth: 0`)",
                self.rev
            ));
        } else {
            err.help
                .push("check the name with `git rev-parse --verify <rev>`".into());
        }
        Err(err)
    }

    fn object_type(&self, top_path: &str) -> Option<String> {
        self.git_stdout(&["cat-file", "-t", &format!("{}:{top_path}", self.rev)])
    }
}

impl Source for GitSource {
    fn read(&self, path: &Path) -> Result<String, SourceError> {
        let top = self.top_relative(path);
        let out = self.git(&["cat-file", "blob", &format!("{}:{top}", self.rev)])?;
        if out.status.success() {
            return String::from_utf8(out.stdout).map_err(|_| {
                SourceError::new(
                    SourceErrorKind::Io,
                    format!("`{}` is not UTF-8", self.display_name(path)),
                )
            });
        }
        self.check_rev()?;
        if let Some(kind) = self.object_type(&top) {
            let what = if kind == "tree" {
                "a directory"
            } else {
                "not a file"
            };
            return Err(SourceError::new(
                SourceErrorKind::Io,
                format!("`{top}` is {what} at revision `{}`", self.rev),
            ));
        }
        Err(SourceError::new(
            SourceErrorKind::NotFound,
            format!("`{top}` does not exist at revision `{}`", self.rev),
        ))
    }

    fn list_toml(&self, dir: &Path) -> Result<Vec<PathBuf>, SourceError> {
        let top = self.top_relative(dir);
        if self.object_type(&top).as_deref() != Some("tree") {
            self.check_rev()?;
            return Err(SourceError::new(
                SourceErrorKind::NotFound,
                format!(
                    "directory `{top}` does not exist at revision `{}`",
                    self.rev
                ),
            ));
        }
        let spec = if top.is_empty() {
            String::new()
        } else {
            format!("{top}/")
        };
        let mut args = vec!["ls-tree", "--name-only", "--full-tree", &self.rev];
        if !spec.is_empty() {
            args.push(&spec);
        }
        let out = self.git(&args)?;
        if !out.status.success() {
            return Err(SourceError::new(
                SourceErrorKind::Git,
                String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            ));
        }
        let mut files: Vec<PathBuf> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|line| Path::new(line).file_name().map(|n| dir.join(n)))
            .filter(|p| is_toml(p))
            .filter(|p| self.object_type(&self.top_relative(p)).as_deref() == Some("blob"))
            .collect();
        files.sort();
        Ok(files)
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.object_type(&self.top_relative(path)).as_deref() == Some("tree")
    }

    fn display_name(&self, path: &Path) -> String {
        format!("{}:{}", self.rev, self.top_relative(path))
    }

    fn resolve(&self, path: &Path) -> Option<PathBuf> {
        self.object_type(&self.top_relative(path))
            .map(|_| normalize(path))
    }
}
