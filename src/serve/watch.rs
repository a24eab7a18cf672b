//! Reload when the composition's files change.
//!
//! Folders are watched, not files: an editor that saves by writing a
//! temporary file and renaming it over the original replaces the file
//! (a watch on the old file would go quiet), but its folder sees the
//! rename. An event counts when it names a file the last load read, or a
//! `*.toml` file in a folder a `dir/*.toml` include listed; events within
//! [`QUIET`] of each other make one reload. After each reload the watched
//! folders follow what that load read (a new include is watched at once).
//!
//! notify (inotify on Linux) does the watching; the debounce is a timer
//! here, a few lines on the runtime the server already has.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

use crate::app::host::{Host, ReloadStatus};
use crate::load::recording::Read;

/// How long the files must stay quiet before a reload.
pub const QUIET: Duration = Duration::from_millis(150);

/// The longest a stream of changes delays a reload.
pub const LONGEST: Duration = Duration::from_secs(2);

/// Watch `host`'s files until the returned task is aborted; `told` hears
/// each reload's outcome.
pub fn spawn(
    host: Host,
    told: impl Fn(&ReloadStatus) + Send + 'static,
) -> Result<tokio::task::JoinHandle<()>, String> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Vec<PathBuf>>();
    let mut watcher: RecommendedWatcher =
        notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            // Writes, creations, removals and renames; not reads (a
            // reload reads every file it watches) nor metadata.
            use notify::EventKind;
            use notify::event::ModifyKind;
            if let Ok(event) = event
                && matches!(
                    event.kind,
                    EventKind::Create(_)
                        | EventKind::Remove(_)
                        | EventKind::Modify(
                            ModifyKind::Data(_) | ModifyKind::Name(_) | ModifyKind::Any
                        )
                )
            {
                let _ = tx.send(event.paths);
            }
        })
        .map_err(|e| format!("cannot watch the composition's files: {e}"))?;
    Ok(tokio::spawn(async move {
        let mut read = absolute(host.watched());
        let mut folders = BTreeSet::new();
        rewatch(&mut watcher, &mut folders, &read);
        while let Some(paths) = rx.recv().await {
            if !paths.iter().any(|p| concerns(&read, p)) {
                continue;
            }
            // Debounce: wait until nothing relevant arrives for QUIET (a
            // store written beside the composition is busy, but not
            // relevant), and at most LONGEST in all.
            let deadline = tokio::time::Instant::now() + LONGEST;
            let mut quiet_until = tokio::time::Instant::now() + QUIET;
            loop {
                let wake = quiet_until.min(deadline);
                match tokio::time::timeout_at(wake, rx.recv()).await {
                    Ok(Some(paths)) => {
                        if paths.iter().any(|p| concerns(&read, p)) {
                            quiet_until = tokio::time::Instant::now() + QUIET;
                        }
                    }
                    Ok(None) => return,
                    Err(_) => break,
                }
            }
            let status = host.reload().await;
            told(&status);
            read = absolute(host.watched());
            rewatch(&mut watcher, &mut folders, &read);
        }
    }))
}

/// `read` with absolute paths (what the watcher reports), lexically.
fn absolute(read: Read) -> Read {
    let abs = |p: PathBuf| std::path::absolute(&p).unwrap_or(p);
    Read {
        files: read.files.into_iter().map(abs).collect(),
        listed: read.listed.into_iter().map(abs).collect(),
    }
}

/// Whether a change at `path` is a reason to reload.
fn concerns(read: &Read, path: &Path) -> bool {
    read.files.contains(path)
        || path.parent().is_some_and(|dir| read.listed.contains(dir))
            && path.extension().is_some_and(|e| e == "toml")
}

/// Watch the folders of `read` (and stop watching the others).
fn rewatch(watcher: &mut RecommendedWatcher, folders: &mut BTreeSet<PathBuf>, read: &Read) {
    let wanted: BTreeSet<PathBuf> = read
        .files
        .iter()
        .filter_map(|f| f.parent().map(Path::to_path_buf))
        .chain(read.listed.iter().cloned())
        .collect();
    for gone in folders.difference(&wanted) {
        let _ = watcher.unwatch(gone);
    }
    for new in wanted.difference(folders) {
        // A folder that does not exist (a missing include's) is not
        // watched; its parent's own file list is.
        let _ = watcher.watch(new, RecursiveMode::NonRecursive);
    }
    *folders = wanted;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_concerns_a_reload() {
        let read = Read {
            files: [PathBuf::from("/w/c.toml"), PathBuf::from("/w/p.md")].into(),
            listed: [PathBuf::from("/w/parts")].into(),
        };
        assert!(concerns(&read, Path::new("/w/c.toml")));
        assert!(concerns(&read, Path::new("/w/p.md")));
        assert!(concerns(&read, Path::new("/w/parts/new.toml")));
        assert!(!concerns(&read, Path::new("/w/c.toml.tmp")));
        assert!(!concerns(&read, Path::new("/w/parts/notes.txt")));
        assert!(!concerns(&read, Path::new("/w/.c.toml.swp")));
    }
}
