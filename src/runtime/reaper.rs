//! Freeing a retired generation's data off the path that retired it.
//!
//! The last handle on a generation of 10,000 entries is usually dropped by
//! the reconcile that retires it, under the control lock: its composition,
//! snapshot, plan and tables are tens of thousands of allocations, about
//! 2 ms to free. [`free_later`] hands such plain data to one background
//! thread that frees it, so a reconcile returns (and releases the lock)
//! without waiting for that. Only plain data goes there — never anything a
//! plugin gave (capability values, tools, hooks), whose drop may expect to
//! run inside the async runtime; the caller drops those in place. Where the
//! thread cannot be started, everything is freed in place, as before.

use std::sync::OnceLock;
use std::sync::mpsc::{Sender, channel};

/// Something to free.
type Garbage = Box<dyn Send>;

/// The reaper's inbox; `None` when its thread could not be started.
fn inbox() -> Option<&'static Sender<Garbage>> {
    static INBOX: OnceLock<Option<Sender<Garbage>>> = OnceLock::new();
    INBOX
        .get_or_init(|| {
            let (tx, rx) = channel::<Garbage>();
            std::thread::Builder::new()
                .name("chassis-reaper".into())
                .spawn(move || {
                    // Each value is dropped as it arrives; the loop ends
                    // with the process.
                    while let Ok(garbage) = rx.recv() {
                        drop(garbage);
                    }
                })
                .ok()
                .map(|_| tx)
        })
        .as_ref()
}

/// Drop `value` on the reaper thread (in place when there is none).
pub(crate) fn free_later<T: Send + 'static>(value: T) {
    match inbox() {
        Some(tx) => {
            // A send fails only when the thread is gone: drop it here.
            if let Err(returned) = tx.send(Box::new(value)) {
                drop(returned.0);
            }
        }
        None => drop(value),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::free_later;

    #[test]
    fn a_value_handed_over_is_freed_on_another_thread() {
        struct Noted(Arc<std::sync::Mutex<Option<std::thread::ThreadId>>>);
        impl Drop for Noted {
            fn drop(&mut self) {
                if let Ok(mut at) = self.0.lock() {
                    *at = Some(std::thread::current().id());
                }
            }
        }
        let at = Arc::new(std::sync::Mutex::new(None));
        free_later(Noted(Arc::clone(&at)));
        let deadline = Instant::now() + Duration::from_secs(10);
        let dropped_on = loop {
            if let Some(id) = *at.lock().unwrap() {
                break id;
            }
            assert!(Instant::now() < deadline, "never freed");
            std::thread::sleep(Duration::from_millis(1));
        };
        assert_ne!(dropped_on, std::thread::current().id());
    }
}
