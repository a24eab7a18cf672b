//! Descendants that escaped their call's process group.
//!
//! Every program chassis starts gets a process group of its own, killed
//! whole when the call ends. A descendant that calls `setsid` (or
//! `setpgid`) leaves that group: killing the group misses it, and when its
//! parent exits the kernel hands it to init, so it outlives chassis. Made a
//! *child subreaper* ([`adopt_orphans`], Linux `PR_SET_CHILD_SUBREAPER`),
//! chassis receives those orphans instead, and [`sweep`] finds them among
//! its own children: a child chassis did not start itself ([`spawn`]
//! registers those, under the same lock a sweep holds, so a program that
//! has just been started is never mistaken for one) and that is not in
//! chassis's own process group (`git`, run in it, is left alone) is killed
//! with its group, and reaped. Its own children are handed to chassis in
//! turn and go in the next round. Exited orphans are reaped too, so no
//! zombie accumulates.
//!
//! A sweep follows every program that ends (a tool call, a hook, a server)
//! and the end of each command. Elsewhere than Linux nothing is adopted and
//! a sweep does nothing.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// Whether this process adopts orphans (and sweeps are worth doing).
static ADOPTING: AtomicBool = AtomicBool::new(false);

/// The pids of the children chassis started and has not waited for.
static STARTED: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

fn started() -> MutexGuard<'static, BTreeSet<i32>> {
    STARTED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Make this process the reaper of its orphaned descendants. `true` when
/// it now is (Linux); sweeps do nothing otherwise.
pub fn adopt_orphans() -> bool {
    #[cfg(target_os = "linux")]
    {
        if nix::sys::prctl::set_child_subreaper(true).is_ok() {
            ADOPTING.store(true, Ordering::SeqCst);
            return true;
        }
    }
    false
}

/// A child chassis started, registered until this is dropped (after the
/// child was waited for).
#[derive(Debug)]
pub struct Started(Option<i32>);

impl Drop for Started {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            started().remove(&pid);
        }
    }
}

/// Spawn `cmd` and register the child, with no sweep in between.
///
/// # Errors
///
/// The spawn's error.
pub fn spawn(
    cmd: &mut tokio::process::Command,
) -> std::io::Result<(tokio::process::Child, Started)> {
    let mut registry = started();
    let child = cmd.spawn()?;
    let pid = child.id().and_then(|p| i32::try_from(p).ok());
    if let Some(pid) = pid {
        registry.insert(pid);
    }
    Ok((child, Started(pid)))
}

/// How many rounds a sweep makes at most: an orphan's own children reach
/// chassis only once it is dead, so each round after a kill looks again.
const ROUNDS: usize = 50;

/// The pause between two rounds.
const PAUSE: Duration = Duration::from_millis(5);

/// Kill and reap the orphans chassis adopted (see the module docs),
/// blocking between rounds; how many were killed or reaped.
pub fn sweep() -> usize {
    let mut handled = 0;
    for _ in 0..ROUNDS {
        let found = round();
        if found == 0 {
            break;
        }
        handled += found;
        std::thread::sleep(PAUSE);
    }
    handled
}

/// [`sweep`], pausing between rounds without blocking the runtime.
pub async fn sweep_async() -> usize {
    let mut handled = 0;
    for _ in 0..ROUNDS {
        let found = round();
        if found == 0 {
            break;
        }
        handled += found;
        tokio::time::sleep(PAUSE).await;
    }
    handled
}

/// One look at the children: each orphan killed with its group, each
/// exited one reaped; how many there were.
#[cfg(target_os = "linux")]
fn round() -> usize {
    use nix::sys::signal::{Signal, kill, killpg};
    use nix::sys::wait::{WaitPidFlag, waitpid};
    use nix::unistd::Pid;

    if !ADOPTING.load(Ordering::SeqCst) {
        return 0;
    }
    let own_group = nix::unistd::getpgrp().as_raw();
    let registry = started();
    let mut found = 0;
    for pid in children() {
        if registry.contains(&pid) {
            continue;
        }
        let Some((state, group)) = stat(pid) else {
            continue;
        };
        if state == 'Z' {
            let _ = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
            found += 1;
            continue;
        }
        if group == own_group {
            continue;
        }
        if group == pid {
            let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
        } else {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        found += 1;
    }
    found
}

#[cfg(not(target_os = "linux"))]
fn round() -> usize {
    0
}

/// This process's children: every thread's `children` list (the kernel
/// hands an orphan to one of the reaper's threads).
#[cfg(target_os = "linux")]
fn children() -> Vec<i32> {
    let mut out = BTreeSet::new();
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for task in tasks.flatten() {
            if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
                out.extend(
                    text.split_whitespace()
                        .filter_map(|p| p.parse::<i32>().ok()),
                );
            }
        }
    }
    out.into_iter().collect()
}

/// `(state, process group)` of `pid`, from `/proc/PID/stat`.
#[cfg(target_os = "linux")]
fn stat(pid: i32) -> Option<(char, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp …`: comm may hold spaces and parens.
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let group = fields.next()?.parse().ok()?;
    Some((state, group))
}
