//! The process environment as the commands that run things see it: the
//! real environment with an optional `--env-file` on top, behind the
//! engine's [`EnvLookup`], so secrets resolve by the reference's name
//! mapping and nothing else reads `std::env` directly.

use std::collections::BTreeMap;
use std::path::Path;

use crate::engine::secret::EnvLookup;

/// Variables from the process, overridden by an env file.
#[derive(Clone, Default)]
pub struct RunEnv {
    file: BTreeMap<String, String>,
}

impl std::fmt::Debug for RunEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunEnv")
            .field("file_keys", &self.file.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// A problem with an env file, with its line (never its value).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", location(path, *line))]
pub struct EnvFileError {
    /// File.
    pub path: String,
    /// 1-based line (0 when the file cannot be read).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// `path:line`, or `path` alone for a failure that is not on a line.
fn location(path: &str, line: usize) -> String {
    if line == 0 {
        path.to_owned()
    } else {
        format!("{path}:{line}")
    }
}

impl RunEnv {
    /// The process environment only.
    pub fn process() -> Self {
        Self::default()
    }

    /// The process environment with `path`'s `KEY=VALUE` lines on top.
    ///
    /// The format is dotenv's common subset: blank lines and `#` comments
    /// are skipped, an optional `export ` prefix is allowed, and a value
    /// may be wrapped in single or double quotes.
    pub fn with_file(path: &Path) -> Result<Self, EnvFileError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| EnvFileError {
            path: shown.clone(),
            line: 0,
            message: format!("cannot read the env file: {e}"),
        })?;
        Ok(Self {
            file: parse(&shown, &text)?,
        })
    }

    /// Whether `name` is set (to anything non-empty).
    pub fn is_set(&self, name: &str) -> bool {
        self.var(name).is_some_and(|v| !v.is_empty())
    }

    /// The variables an env file set.
    pub fn file_vars(&self) -> &BTreeMap<String, String> {
        &self.file
    }
}

/// Parse env-file text.
pub fn parse(path: &str, text: &str) -> Result<BTreeMap<String, String>, EnvFileError> {
    let mut out = BTreeMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((key, value)) = line.split_once('=') else {
            return Err(EnvFileError {
                path: path.to_owned(),
                line: i + 1,
                message: "expected `KEY=VALUE`".into(),
            });
        };
        let key = key.trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(EnvFileError {
                path: path.to_owned(),
                line: i + 1,
                message: format!("`{key}` is not a variable name"),
            });
        }
        let value = value.trim();
        let value = ['"', '\'']
            .iter()
            .find_map(|q| value.strip_prefix(*q).and_then(|v| v.strip_suffix(*q)))
            .unwrap_or(value);
        out.insert(key.to_owned(), value.to_owned());
    }
    Ok(out)
}

impl EnvLookup for RunEnv {
    fn var(&self, name: &str) -> Option<String> {
        self.file
            .get(name)
            .cloned()
            .or_else(|| std::env::var(name).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_files_parse_the_common_subset() {
        let vars = parse(
            "e",
            "# comment\n\nA=1\nexport B = two words \nC=\"quoted # not a comment\"\nD='x'\nE=\n",
        )
        .unwrap();
        assert_eq!(vars["A"], "1");
        assert_eq!(vars["B"], "two words");
        assert_eq!(vars["C"], "quoted # not a comment");
        assert_eq!(vars["D"], "x");
        assert_eq!(vars["E"], "");
        let err = parse("e", "A=1\nnot a line\n").unwrap_err();
        assert_eq!(err.line, 2);
        let err = parse("e", "BAD-KEY=secret-value\n").unwrap_err();
        assert!(!err.to_string().contains("secret-value"));
    }
}
