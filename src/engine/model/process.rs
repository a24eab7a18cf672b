//! A plugin that is a program: `[plugins.X] command = ["python3", "plugin.py"]`.
//!
//! Why it exists: plugins written in Python or TypeScript run as processes
//! speaking the plugin protocol (`docs/plugin-protocol.md`). What such a
//! plugin *is* — the code that runs — is its argv plus the contents of its
//! files, so editing `plugin.py` is a change the snapshot, the diff and the
//! runtime identity see, while the manifest around it stays authoritative
//! for what it provides, requires and declares. The loader reads and hashes
//! the files (through the same source as the composition, so `REV:PATH`
//! hashes them at that revision); this type only holds the result.

use std::path::PathBuf;

use crate::engine::canonical::Canon;

/// The catalog kind of a manifest with a `command`.
pub const PROCESS_KIND: &str = "process";

/// One file of a process plugin and the SHA-256 of its contents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginFile {
    /// The path relative to the declaring file's folder, lexically
    /// normalized (`./plugin.py` is `plugin.py`).
    pub path: String,
    /// Lowercase hex SHA-256 of the contents.
    pub sha256: String,
}

/// How to start a process plugin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessCommand {
    /// The program and its arguments, never run through a shell.
    pub argv: Vec<String>,
    /// Names of environment variables passed through besides the base
    /// allow-list (`PATH`, `HOME`, `LANG`, `TMPDIR`, `VIRTUAL_ENV`,
    /// `PYENV_*`).
    pub env: Vec<String>,
    /// The files whose contents are the plugin's implementation, sorted by
    /// path.
    pub files: Vec<PluginFile>,
    /// How long `initialize` and `setup` may each take (default 30 s).
    /// Not part of any hash: it says how long to wait, not what runs.
    pub startup_timeout: Option<std::time::Duration>,
    /// The folder of the file that declared the plugin: the process's
    /// working directory and what relative paths in `argv` are relative to.
    /// Not part of any hash (the same plugin checked out elsewhere is the
    /// same plugin).
    pub dir: PathBuf,
    /// What `chassis.lock` pins for this entry: every tool the process
    /// registers (with its policy) and every hook. Set per entry by the
    /// loader; mounting refuses a process that registers anything else.
    /// Without it, the process may register only what the TOML declares.
    pub pinned: Option<std::sync::Arc<crate::lock::LockEntry>>,
}

impl ProcessCommand {
    /// What identifies the implementation: argv, the names of the
    /// variables it is given, each file's digest, and what the lock pins
    /// (when it pins anything, so a composition without a lock keeps its
    /// digest).
    pub fn fingerprint(&self) -> Canon {
        let mut fields = vec![
            ("command", Canon::list(self.argv.iter().map(String::as_str))),
            ("env", Canon::list(self.env.iter().map(String::as_str))),
            (
                "files",
                Canon::Map(
                    self.files
                        .iter()
                        .map(|f| (f.path.clone(), Canon::from(f.sha256.as_str())))
                        .collect(),
                ),
            ),
        ];
        if let Some(pinned) = &self.pinned {
            let json = serde_json::to_value(pinned.as_ref()).unwrap_or_default();
            fields.push(("pinned", Canon::from_json(&json)));
        }
        Canon::map(fields)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folder_is_not_part_of_the_fingerprint() {
        let at = |dir: &str, sha: &str| ProcessCommand {
            argv: vec!["python3".into(), "p.py".into()],
            env: vec![],
            files: vec![PluginFile {
                path: "p.py".into(),
                sha256: sha.into(),
            }],
            startup_timeout: None,
            dir: PathBuf::from(dir),
            pinned: None,
        };
        assert_eq!(at("/a", "1").fingerprint(), at("/b", "1").fingerprint());
        assert_ne!(at("/a", "1").fingerprint(), at("/a", "2").fingerprint());
        let mut pinned = at("/a", "1");
        pinned.pinned = Some(std::sync::Arc::new(crate::lock::LockEntry {
            hooks: vec![crate::lock::LockedHook {
                event: "before_tool_execute".into(),
                mode: "bail".into(),
                priority: 0,
                error_policy: "record".into(),
            }],
            ..Default::default()
        }));
        assert_ne!(pinned.fingerprint(), at("/a", "1").fingerprint());
    }
}
