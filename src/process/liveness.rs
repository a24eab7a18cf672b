//! Whether a process recorded in the store is still there: a server that
//! holds a lineage writes its host and pid, and one that was killed cannot
//! let go. Its heartbeat goes stale in 20 s; on the same host (same boot,
//! same pid namespace), a pid that no longer exists says it at once.

/// Where a pid means this process: the host name, this boot, and the pid
/// namespace (two containers sharing a host name and a store each have
/// their own pids). Empty when any part cannot be read: then no pid is ever
/// taken for gone.
pub fn host_name() -> String {
    let name = nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_default();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let pid_ns = std::fs::read_link("/proc/self/ns/pid")
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let boot = boot.trim();
    if name.is_empty() || boot.is_empty() || pid_ns.is_empty() {
        return String::new();
    }
    format!("{name} {boot} {pid_ns}")
}

/// Whether process `pid` of `host` is known to be gone: only on this host,
/// only when signal 0 finds no such process (a process of another user
/// answers "not permitted", and counts as there).
pub fn is_gone(host: &str, pid: u32) -> bool {
    let here = host_name();
    if host.is_empty() || here.is_empty() || host != here {
        return false;
    }
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    matches!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
        Err(nix::errno::Errno::ESRCH)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_living_process_is_there_and_an_ended_one_is_gone() {
        let here = host_name();
        assert!(!here.is_empty());
        assert!(!is_gone(&here, std::process::id()));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(is_gone(&here, pid));
        // Another host's pid, or no host, is never taken for gone.
        assert!(!is_gone("elsewhere.example", pid));
        assert!(!is_gone("", pid));
        assert!(!is_gone(&here, 0));
    }
}
