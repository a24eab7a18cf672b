//! Work a server does beside the runs it serves — reading and resolving an
//! edited composition, preparing its publication and cutting it into
//! chunks — on a thread of its own at a lower scheduling priority.
//!
//! Only pure computation goes here — never work that starts a program (a
//! child inherits its thread's priority for life: an `mcp` server mounted
//! by a reconcile would answer every later tool call slowly), takes a lock
//! the runs wait on, or hands work to tokio's blocking pool (a pool thread
//! started from here would stay lowered and later write the store).
//!
//! Why it exists: a reload of a large composition is tens to hundreds of
//! milliseconds of CPU. On a tokio blocking thread it competes as an equal
//! with the async workers serving runs, and every run in flight waits a
//! scheduler slice longer: the p99 of served runs rises while it lasts. At a
//! lower priority (`nice` 10) the kernel gives the runs the cores first and
//! the reload what is left, so a reload under load takes longer and the
//! runs do not notice it. A thread's priority can be lowered but not raised
//! again without privilege, so each piece of work gets a fresh thread that
//! ends with it — never a pooled one.

use super::error::AppError;

/// How much lower than the server's own threads: `nice` 10 weighs about a
/// tenth of a normal thread with the Linux scheduler.
const NICENESS: i32 = 10;

/// Run `work` on a new thread named `name` at a lower priority and wait
/// for its result without holding an async worker.
pub(crate) async fn beside_runs<T: Send + 'static>(
    name: &str,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, AppError> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name(format!("chassis-{name}"))
        .spawn(move || {
            lower_priority();
            // A panic is an error the caller reports, with its message.
            let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
                .map_err(|panic| panic_text(panic.as_ref()));
            let _ = tx.send(done);
        })
        .map_err(|e| AppError::failure(format!("starting the {name} thread: {e}")))?;
    match rx.await {
        Ok(Ok(done)) => Ok(done),
        Ok(Err(panic)) => Err(AppError::failure(format!("the {name} panicked: {panic}"))),
        Err(_) => Err(AppError::failure(format!(
            "the {name} stopped before it finished"
        ))),
    }
}

/// What a panic said, when it said it as text.
fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_owned())
}

/// Lower the calling thread's priority; where that is refused, the work
/// runs at normal priority (slower runs while it lasts, nothing wrong).
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        // On Linux the priority `setpriority` sets for a thread id is that
        // thread's alone.
        let tid = rustix::thread::gettid();
        if let Err(e) = rustix::process::setpriority_process(Some(tid), NICENESS) {
            tracing::debug!("could not lower a background thread's priority: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_work_runs_on_its_own_thread_at_a_lower_priority_and_its_result_comes_back() {
        let caller = std::thread::current().id();
        let (priority, thread, name) = beside_runs("test", || {
            let me = std::thread::current();
            (
                rustix::process::getpriority_process(None),
                me.id(),
                me.name().map(str::to_owned),
            )
        })
        .await
        .expect("the work ran");
        assert_ne!(thread, caller);
        assert_eq!(name.as_deref(), Some("chassis-test"));
        // `getpriority` of the process reads the calling thread's nice
        // value on Linux.
        #[cfg(target_os = "linux")]
        assert_eq!(
            priority.expect("a priority"),
            (rustix::process::getpriority_process(None).expect("ours") + NICENESS).min(19)
        );
        let _ = priority;
    }

    #[tokio::test]
    async fn a_panic_in_the_work_is_an_error_that_says_it() {
        let result = beside_runs("test", || -> u8 { panic!("boom {}", 7) }).await;
        let error = result.expect_err("an error").to_string();
        assert!(error.contains("the test panicked: boom 7"), "{error}");
    }
}
