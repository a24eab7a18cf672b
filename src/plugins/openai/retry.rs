//! When to try a model call again, and how long to wait first.
//!
//! Rate limits (429), server errors (5xx) and broken connections are
//! usually transient; every other 4xx is the request's fault and would
//! fail the same way again, so it is never retried. The wait doubles from
//! a base with a small jitter (so agents that were throttled together do
//! not come back together), unless the server said how long with
//! `Retry-After`, which wins, capped so a misbehaving server cannot park a
//! run.

use std::time::Duration;

/// The retry schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// The first backoff.
    pub base: Duration,
    /// The longest computed backoff.
    pub max_backoff: Duration,
    /// The longest `Retry-After` honoured.
    pub max_retry_after: Duration,
}

impl RetryPolicy {
    /// `max_retries` retries with the default schedule (0.5 s doubling to
    /// 8 s; `Retry-After` up to 30 s).
    pub fn new(max_retries: u32) -> Self {
        Self {
            max_retries,
            base: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(30),
        }
    }

    /// The wait before retry number `retry` (0 for the first retry):
    /// `retry_after` when the server gave one (capped), else exponential
    /// backoff plus up to 25% jitter.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(after) = retry_after {
            return after.min(self.max_retry_after);
        }
        let exp = self
            .base
            .saturating_mul(1u32.checked_shl(retry.min(16)).unwrap_or(u32::MAX))
            .min(self.max_backoff);
        exp + jitter(exp / 4)
    }
}

/// A pseudo-random duration in `[0, max]`: sub-second clock noise is
/// enough to spread retries, and needs no RNG dependency.
fn jitter(max: Duration) -> Duration {
    let max_nanos = u64::try_from(max.as_nanos()).unwrap_or(u64::MAX);
    if max_nanos == 0 {
        return Duration::ZERO;
    }
    let noise = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::from(d.subsec_nanos()));
    // A multiplicative hash spreads consecutive clock readings.
    let mixed = noise.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11;
    Duration::from_nanos(mixed % (max_nanos + 1))
}

/// Whether an HTTP status is worth retrying.
pub fn retryable_status(status: u16) -> bool {
    status == 429 || (500..=599).contains(&status)
}

/// A `Retry-After` header value in seconds (integer or decimal). The
/// HTTP-date form is not honoured: the computed backoff applies.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let secs: f64 = value.trim().parse().ok()?;
    if !secs.is_finite() || secs < 0.0 {
        return None;
    }
    Duration::try_from_secs_f64(secs.min(86_400.0)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_bounded_jitter_and_a_cap() {
        let p = RetryPolicy::new(5);
        for (retry, base_ms) in [
            (0, 500),
            (1, 1000),
            (2, 2000),
            (3, 4000),
            (4, 8000),
            (9, 8000),
        ] {
            let d = p.delay(retry, None);
            let base = Duration::from_millis(base_ms);
            assert!(d >= base && d <= base + base / 4, "{retry}: {d:?}");
        }
        assert!(
            p.delay(40, None) <= Duration::from_secs(10),
            "capped, plus jitter"
        );
    }

    #[test]
    fn retry_after_wins_and_is_capped() {
        let p = RetryPolicy::new(2);
        assert_eq!(p.delay(0, Some(Duration::ZERO)), Duration::ZERO);
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(3))),
            Duration::from_secs(3)
        );
        assert_eq!(
            p.delay(0, Some(Duration::from_secs(3600))),
            Duration::from_secs(30)
        );
    }

    #[test]
    fn retry_after_values() {
        assert_eq!(parse_retry_after("0"), Some(Duration::ZERO));
        assert_eq!(parse_retry_after(" 2 "), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("1.5"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(parse_retry_after("NaN"), None);
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }

    #[test]
    fn which_statuses_are_retried() {
        assert!(retryable_status(429));
        assert!(retryable_status(500));
        assert!(retryable_status(503));
        assert!(!retryable_status(400));
        assert!(!retryable_status(401));
        assert!(!retryable_status(404));
    }
}
