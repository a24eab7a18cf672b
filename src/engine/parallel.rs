//! Fork-join for the two large, independent halves of snapshot work.
//!
//! Building and hashing a snapshot of a large composition splits into two
//! halves that read the same data and write nothing shared (the scope
//! fingerprints beside the other hashes; the record digest beside the
//! semantic digest). On a machine with more than one core the second half
//! runs on a scoped thread; small inputs, where a thread costs more than it
//! saves, and single-core machines run both halves in order. The results are
//! the same either way: only the wall time differs.

use std::sync::OnceLock;

/// Below this much work (scopes plus selection rows plus entries, roughly),
/// starting a thread costs more than the second core saves.
pub const PARALLEL_MIN_WORK: usize = 4096;

/// Whether this machine has a second core to give.
fn has_second_core() -> bool {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from)) > 1
}

/// Whether [`join`] runs its halves in parallel for `work`: callers whose
/// in-order path differs from "first `a`, then `b`" take it otherwise.
pub fn splits(work: usize) -> bool {
    work >= PARALLEL_MIN_WORK && has_second_core()
}

/// Run `a` and `b`, in parallel when `work` is at least
/// [`PARALLEL_MIN_WORK`] and a second core exists, and return both results.
/// A panic in either half resumes on the caller's thread; a thread that
/// cannot be started means `b` runs after `a` on this one.
pub fn join<A, B, RA, RB>(work: usize, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    // Each half sits in a slot so that both can still run here, in order,
    // when they do not run side by side.
    let (mut a, mut b) = (Some(a), Some(b));
    if let Some((Some(ra), Some(rb))) =
        join_concurrent(work, || a.take().map(|a| a()), || b.take().map(|b| b()))
    {
        return (ra, rb);
    }
    match (a, b) {
        (Some(a), Some(b)) => (a(), b()),
        _ => unreachable!("join_concurrent runs both halves or neither"),
    }
}

/// Run `a` here and `b` on a second thread at the same time, for halves
/// that wait on each other (a pipeline) and so cannot run one after the
/// other. `None`, with neither run, when `work` is below
/// [`PARALLEL_MIN_WORK`], the machine has one core, or no thread starts:
/// the caller then takes its sequential path.
pub fn join_concurrent<A, B, RA, RB>(work: usize, a: A, b: B) -> Option<(RA, RB)>
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    if !splits(work) {
        return None;
    }
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name("chassis-join".into())
            .spawn_scoped(scope, b)
            .ok()?;
        let ra = a();
        match handle.join() {
            Ok(rb) => Some((ra, rb)),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_halves_run_below_and_above_the_threshold() {
        for work in [0, PARALLEL_MIN_WORK, usize::MAX] {
            let (a, b) = join(work, || 2 + 2, || "four".len());
            assert_eq!((a, b), (4, 4), "work {work}");
        }
    }

    #[test]
    fn concurrent_halves_run_side_by_side_or_not_at_all() {
        assert_eq!(join_concurrent(0, || 1, || 2), None);
        // Two halves that each wait for the other: only side by side can
        // they finish.
        let (tx_a, rx_a) = std::sync::mpsc::channel();
        let (tx_b, rx_b) = std::sync::mpsc::channel();
        let both = join_concurrent(
            usize::MAX,
            move || {
                tx_a.send(1).unwrap();
                rx_b.recv().unwrap()
            },
            move || {
                tx_b.send(2).unwrap();
                rx_a.recv().unwrap()
            },
        );
        if has_second_core() {
            assert_eq!(both, Some((2, 1)));
        } else {
            assert_eq!(both, None);
        }
    }

    #[test]
    fn a_panic_in_the_second_half_reaches_the_caller() {
        let caught = std::panic::catch_unwind(|| {
            join(
                usize::MAX,
                || 1,
                || -> usize { panic!("second half failed") },
            )
        });
        assert!(caught.is_err());
    }
}
