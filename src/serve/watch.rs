//! Reload when the composition's files change.
//!
//! Folders are watched, not files: an editor that saves by writing a
//! temporary file and renaming it over the original replaces the file
//! (a watch on the old file would go quiet), but its folder sees the
//! rename. An event counts when it names a file the last load read, a
//! `*.toml` file in a folder a `dir/*.toml` include listed, or a watched
//! folder (or one above it) made or removed; events within [`QUIET`] of
//! each other make one reload. Every folder is watched again at each
//! counted event and after each reload, which then follows what that load
//! read (a new include is watched at once; a folder removed and made
//! again — `git checkout`, `rm -rf prompts && mkdir prompts` — is watched
//! as the new folder it is).
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
        let mut folders = folders_of(&read);
        let mut watching = BTreeSet::new();
        rewatch(&mut watcher, &mut watching, &folders);
        while let Some(paths) = rx.recv().await {
            if !paths.iter().any(|p| concerns(&read, &folders, p)) {
                continue;
            }
            // A folder made again is watched again now, so what is written
            // into it while the reload waits is seen.
            rewatch(&mut watcher, &mut watching, &folders);
            // Debounce: wait until nothing relevant arrives for QUIET (a
            // store written beside the composition is busy, but not
            // relevant), and at most LONGEST in all.
            let deadline = tokio::time::Instant::now() + LONGEST;
            let mut quiet_until = tokio::time::Instant::now() + QUIET;
            loop {
                let wake = quiet_until.min(deadline);
                match tokio::time::timeout_at(wake, rx.recv()).await {
                    Ok(Some(paths)) => {
                        if paths.iter().any(|p| concerns(&read, &folders, p)) {
                            quiet_until = tokio::time::Instant::now() + QUIET;
                            rewatch(&mut watcher, &mut watching, &folders);
                        }
                    }
                    Ok(None) => return,
                    Err(_) => break,
                }
            }
            let status = host.reload().await;
            told(&status);
            read = absolute(host.watched());
            folders = folders_of(&read);
            rewatch(&mut watcher, &mut watching, &folders);
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

/// Whether a change at `path` is a reason to reload: a file the load read,
/// a `*.toml` file in a listed folder, or one of the folders to watch (or
/// a folder above one) made, removed or renamed — `rm -rf prompts && mkdir
/// prompts` changes what the folder holds, and its watch must be made
/// again.
/// (`folders` is [`folders_of`] `read`.)
fn concerns(read: &Read, folders: &BTreeSet<PathBuf>, path: &Path) -> bool {
    read.files.contains(path)
        || path.parent().is_some_and(|dir| read.listed.contains(dir))
            && path.extension().is_some_and(|e| e == "toml")
        || folders.iter().any(|f| f.starts_with(path))
}

/// The folders to watch for `read`: each read file's, each listed one.
fn folders_of(read: &Read) -> BTreeSet<PathBuf> {
    read.files
        .iter()
        .filter_map(|f| f.parent().map(Path::to_path_buf))
        .chain(read.listed.iter().cloned())
        .collect()
}

/// Watch `folders` (and stop watching the others). Each is
/// watched again every time: a folder removed and made again is another
/// folder to inotify, whose old watch went with the old one. A folder that
/// does not exist (yet) is watched through the nearest folder above it
/// that does, so its making is seen.
fn rewatch(
    watcher: &mut RecommendedWatcher,
    watching: &mut BTreeSet<PathBuf>,
    folders: &BTreeSet<PathBuf>,
) {
    let wanted: BTreeSet<PathBuf> = folders
        .iter()
        .filter_map(|f| f.ancestors().find(|a| a.is_dir()).map(Path::to_path_buf))
        .collect();
    for gone in watching.difference(&wanted) {
        let _ = watcher.unwatch(gone);
    }
    for folder in &wanted {
        let _ = watcher.watch(folder, RecursiveMode::NonRecursive);
    }
    *watching = wanted;
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
        let concerns = |p: &str| super::concerns(&read, &folders_of(&read), Path::new(p));
        assert!(concerns("/w/c.toml"));
        assert!(concerns("/w/p.md"));
        assert!(concerns("/w/parts/new.toml"));
        assert!(!concerns("/w/c.toml.tmp"));
        assert!(!concerns("/w/parts/notes.txt"));
        assert!(!concerns("/w/.c.toml.swp"));
        // A folder to watch, or one above it, made or removed.
        let read = Read {
            files: [PathBuf::from("/w/c.toml"), PathBuf::from("/w/p/a/x.md")].into(),
            listed: [PathBuf::from("/w/parts")].into(),
        };
        let concerns = |p: &str| super::concerns(&read, &folders_of(&read), Path::new(p));
        assert!(concerns("/w/p/a"));
        assert!(concerns("/w/p"));
        assert!(concerns("/w/parts"));
        assert!(!concerns("/w/q"));
        assert!(!concerns("/w/p/b"));
        assert!(!concerns("/w/.chassis"));
    }
}
