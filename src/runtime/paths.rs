//! File-system resources judged where the program lands.
//!
//! A permission of the `filesystem` family (`filesystem.read:{/path}`)
//! names a path a tool will open. Policy matches text, but a program
//! follows symlinks: `workspace/etc -> /etc` makes `workspace/etc/passwd`
//! read `/etc/passwd`, whatever the text says. [`PathResolver`] turns such
//! a resource into the path the operating system would open — relative
//! ones against the composition's directory (where command tools and MCP
//! servers start), each existing component's symlink followed (dangling
//! ones too: writing through one creates its target), `..` applied after
//! the links before it, as the kernel does — before grants *and* deny
//! rules are matched.
//!
//! The result stays relative when it lands inside the directory (so the
//! relative grants of `examples/mcp.toml`, `workspace/**`, keep working)
//! and becomes absolute when it leaves it (so `workspace/**` no longer
//! covers it and `/etc/**` rules do). A resource that cannot be resolved
//! (a symlink loop, a name that is not UTF-8) is left as written, and the
//! matcher's own normalization (which refuses a relative `..`) judges it.
//!
//! What is judged is the path at the moment of the check: a file that a
//! concurrent process turns into a symlink afterwards is outside what a
//! check before the call can see.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use crate::engine::policy::Permission;

/// The permission family whose resources are paths.
const FILESYSTEM: &str = "filesystem.";

/// How many symlinks one resolution follows before giving up (Linux's
/// `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// Resolves `filesystem.*` resources against a base directory.
#[derive(Clone, Debug)]
pub struct PathResolver {
    /// The base directory, itself resolved.
    base: PathBuf,
}

impl PathResolver {
    /// Relative resources resolve against `base` (its own symlinks resolved
    /// now; if it does not exist, as given).
    #[must_use]
    pub fn new(base: &Path) -> Self {
        let absolute = if base.is_absolute() {
            base.to_path_buf()
        } else {
            std::env::current_dir().map_or_else(|_| base.to_path_buf(), |cwd| cwd.join(base))
        };
        Self {
            base: std::fs::canonicalize(&absolute).unwrap_or(absolute),
        }
    }

    /// `permission` with its resource resolved, when it is a file-system
    /// permission; any other is returned as it is.
    #[must_use]
    pub fn resolve(&self, permission: &Permission) -> Permission {
        let (Some(resource), true) = (
            permission.resource(),
            permission.name().starts_with(FILESYSTEM),
        ) else {
            return permission.clone();
        };
        self.resolve_text(resource)
            .and_then(|r| Permission::new(permission.name(), Some(&r)).ok())
            .unwrap_or_else(|| permission.clone())
    }

    /// The path `resource` lands on, relative to the base when it stays
    /// inside it; `None` when it cannot be resolved.
    fn resolve_text(&self, resource: &str) -> Option<String> {
        if resource.chars().any(char::is_control) || resource.contains('\\') {
            return None;
        }
        let relative = !resource.starts_with('/');
        let mut current = if relative {
            self.base.clone()
        } else {
            PathBuf::from("/")
        };
        let mut pending: VecDeque<String> = resource.split('/').map(str::to_owned).collect();
        let mut links = 0;
        while let Some(part) = pending.pop_front() {
            match part.as_str() {
                "" | "." => {}
                // `current` holds no symlink, so its parent is where `..`
                // leads; above the root it stays at the root, as the
                // kernel does.
                ".." => {
                    current.pop();
                }
                name => {
                    let next = current.join(name);
                    match std::fs::symlink_metadata(&next) {
                        Ok(meta) if meta.file_type().is_symlink() => {
                            links += 1;
                            if links > MAX_LINKS {
                                return None;
                            }
                            let target = std::fs::read_link(&next).ok()?;
                            let target = target.to_str()?;
                            if target.starts_with('/') {
                                current = PathBuf::from("/");
                            }
                            for (i, p) in target.split('/').enumerate() {
                                pending.insert(i, p.to_owned());
                            }
                        }
                        _ => current = next,
                    }
                }
            }
        }
        let text = |p: &Path| p.to_str().map(str::to_owned);
        match current.strip_prefix(&self.base) {
            Ok(inside) if relative => {
                let inside = text(inside)?;
                Some(if inside.is_empty() {
                    ".".to_owned()
                } else {
                    inside
                })
            }
            _ => text(&current),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    fn resolved(r: &PathResolver, resource: &str) -> String {
        let p = Permission::new("filesystem.read", Some(resource)).unwrap();
        r.resolve(&p).resource().unwrap().to_owned()
    }

    #[test]
    fn symlinks_and_dots_resolve_as_the_kernel_does() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("base");
        std::fs::create_dir_all(base.join("workspace/secrets")).unwrap();
        std::fs::write(base.join("workspace/secrets/key.txt"), "k").unwrap();
        symlink("/etc", base.join("workspace/etc")).unwrap();
        symlink("secrets", base.join("workspace/inner")).unwrap();
        symlink(
            "/nonexistent-chassis-target",
            base.join("workspace/dangling"),
        )
        .unwrap();
        symlink("loop", base.join("workspace/loop")).unwrap();
        let r = PathResolver::new(&base);
        for (resource, expected) in [
            ("workspace/notes.md", "workspace/notes.md"),
            ("workspace/./secrets/key.txt", "workspace/secrets/key.txt"),
            ("workspace//secrets/key.txt", "workspace/secrets/key.txt"),
            ("workspace/inner/key.txt", "workspace/secrets/key.txt"),
            ("workspace/etc/passwd", "/etc/passwd"),
            ("workspace/etc/../x", "/x"),
            (
                "workspace/../..",
                dir.path().canonicalize().unwrap().to_str().unwrap(),
            ),
            ("workspace/dangling", "/nonexistent-chassis-target"),
            ("workspace/new/file", "workspace/new/file"),
            (".", "."),
            ("/etc/../etc/passwd", "/etc/passwd"),
            ("/../../etc", "/etc"),
            // A loop cannot be resolved: left as written, for the matcher.
            ("workspace/loop/x", "workspace/loop/x"),
        ] {
            assert_eq!(resolved(&r, resource), expected, "{resource}");
        }
        let absolute = base.canonicalize().unwrap().join("workspace/inner/key.txt");
        assert_eq!(
            resolved(&r, absolute.to_str().unwrap()),
            base.canonicalize()
                .unwrap()
                .join("workspace/secrets/key.txt")
                .to_str()
                .unwrap(),
            "an absolute path stays absolute"
        );
        // Other families are not paths.
        let net = Permission::new("network.fetch", Some("workspace/etc")).unwrap();
        assert_eq!(r.resolve(&net), net);
    }
}
