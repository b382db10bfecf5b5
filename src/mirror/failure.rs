//! How a mirror partition fails and retries: the mirror properties that steer FAILED (spec
//! §2.6, the prototype's config keys) — pure rules, read from the mirror's config.
//!
//! Contract:
//! - [`FailureSettings::from_properties`] reads `mirror.failed.retry.initial.backoff.ms`,
//!   `mirror.failed.retry.max.backoff.ms`, `mirror.failed.retry.max.attempts` and
//!   `mirror.socket.timeout.ms` from a mirror's properties; an absent one takes its default, a
//!   value that is not a number in range is an error naming the key (CreateMirror and
//!   AlterConfigs refuse it with `InvalidConfig`, so a broker never meets one).
//! - [`FailureSettings::backoff_ms`]: the wait before the n-th retry, the initial backoff
//!   doubled per attempt up to the maximum. The prototype adds a 20 % jitter; this model has
//!   none, so the retry times follow from the seed alone without a random draw per failure.
//! - [`FailureSettings::retries_left`]: attempt n (1 = the first failure) may still be
//!   retried while n < max attempts; −1 (non-retryable) never is, nor any with max attempts 0.
//! - `mirror.socket.timeout.ms` is how long a mirror partition waits on a source that answers
//!   nothing for it (no fetch, no last-mirrored-epoch lookup answered, e.g. every source broker
//!   down) before it goes FAILED (retryable). The prototype's fetcher fails a partition after
//!   repeated connection errors; this model names that wait with the prototype's socket
//!   timeout key.
//!
//! Defaults differ from the prototype's where a simulated run is short: the maximum backoff
//! is 5 s (the prototype's 300 s would outlast most scenarios); the initial backoff (100 ms),
//! the attempts (20) and the socket timeout (30 s) are the prototype's.

/// `mirror.failed.retry.initial.backoff.ms`: the first retry's wait.
pub const RETRY_INITIAL_BACKOFF_CONFIG: &str = "mirror.failed.retry.initial.backoff.ms";
/// `mirror.failed.retry.max.backoff.ms`: the longest wait between retries.
pub const RETRY_MAX_BACKOFF_CONFIG: &str = "mirror.failed.retry.max.backoff.ms";
/// `mirror.failed.retry.max.attempts`: failures retried before the partition waits for an
/// operator (0: none is).
pub const RETRY_MAX_ATTEMPTS_CONFIG: &str = "mirror.failed.retry.max.attempts";
/// `mirror.socket.timeout.ms`: how long a silent source is waited for (see the module doc).
pub const SOCKET_TIMEOUT_CONFIG: &str = "mirror.socket.timeout.ms";

/// Default of [`RETRY_INITIAL_BACKOFF_CONFIG`].
pub const DEFAULT_RETRY_INITIAL_BACKOFF_MS: i64 = 100;
/// Default of [`RETRY_MAX_BACKOFF_CONFIG`].
pub const DEFAULT_RETRY_MAX_BACKOFF_MS: i64 = 5_000;
/// Default of [`RETRY_MAX_ATTEMPTS_CONFIG`].
pub const DEFAULT_RETRY_MAX_ATTEMPTS: i16 = 20;
/// Default of [`SOCKET_TIMEOUT_CONFIG`].
pub const DEFAULT_SOCKET_TIMEOUT_MS: i64 = 30_000;

/// A mirror's failure and retry settings; see the module doc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailureSettings {
    /// The first retry's wait.
    pub initial_backoff_ms: i64,
    /// The longest wait.
    pub max_backoff_ms: i64,
    /// Failures retried before an operator must act.
    pub max_attempts: i16,
    /// How long a silent source is waited for.
    pub socket_timeout_ms: i64,
}

impl Default for FailureSettings {
    fn default() -> Self {
        Self {
            initial_backoff_ms: DEFAULT_RETRY_INITIAL_BACKOFF_MS,
            max_backoff_ms: DEFAULT_RETRY_MAX_BACKOFF_MS,
            max_attempts: DEFAULT_RETRY_MAX_ATTEMPTS,
            socket_timeout_ms: DEFAULT_SOCKET_TIMEOUT_MS,
        }
    }
}

impl FailureSettings {
    /// Reads the settings from a mirror's properties (absent ones take their defaults).
    pub fn from_properties<'a>(
        mut get: impl FnMut(&str) -> Option<&'a str>,
    ) -> Result<Self, String> {
        let defaults = Self::default();
        let initial_backoff_ms = milliseconds(
            get(RETRY_INITIAL_BACKOFF_CONFIG),
            RETRY_INITIAL_BACKOFF_CONFIG,
            defaults.initial_backoff_ms,
            1,
        )?;
        let max_backoff_ms = milliseconds(
            get(RETRY_MAX_BACKOFF_CONFIG),
            RETRY_MAX_BACKOFF_CONFIG,
            defaults.max_backoff_ms,
            1,
        )?;
        let max_attempts = match get(RETRY_MAX_ATTEMPTS_CONFIG) {
            None => defaults.max_attempts,
            Some(value) => value
                .trim()
                .parse::<i16>()
                .ok()
                .filter(|attempts| *attempts >= 0)
                .ok_or_else(|| {
                    format!("{RETRY_MAX_ATTEMPTS_CONFIG}: {value:?} is not a number in 0..=32767")
                })?,
        };
        let socket_timeout_ms = milliseconds(
            get(SOCKET_TIMEOUT_CONFIG),
            SOCKET_TIMEOUT_CONFIG,
            defaults.socket_timeout_ms,
            1,
        )?;
        Ok(Self {
            initial_backoff_ms,
            max_backoff_ms: max_backoff_ms.max(initial_backoff_ms),
            max_attempts,
            socket_timeout_ms,
        })
    }

    /// The wait before retrying failure number `retry_attempt` (1 = the first).
    pub fn backoff_ms(&self, retry_attempt: i16) -> i64 {
        let doublings = u32::try_from(retry_attempt.max(1) - 1).unwrap_or(0).min(30);
        self.initial_backoff_ms
            .saturating_mul(1_i64 << doublings)
            .min(self.max_backoff_ms)
    }

    /// Whether failure number `retry_attempt` may be retried (−1: non-retryable).
    pub fn retries_left(&self, retry_attempt: i16) -> bool {
        (0..self.max_attempts).contains(&retry_attempt)
    }
}

/// A duration property in milliseconds, at least `min` (a day at most, so that a sum of
/// simulated times cannot overflow).
fn milliseconds(value: Option<&str>, name: &str, default: i64, min: i64) -> Result<i64, String> {
    const MAX_MS: i64 = 86_400_000;
    match value {
        None => Ok(default),
        Some(value) => value
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|ms| (min..=MAX_MS).contains(ms))
            .ok_or_else(|| format!("{name}: {value:?} is not a number of ms in {min}..={MAX_MS}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> Result<FailureSettings, String> {
        FailureSettings::from_properties(|key| {
            pairs
                .iter()
                .find(|(name, _)| *name == key)
                .map(|(_, value)| *value)
        })
    }

    #[test]
    fn absent_properties_take_the_defaults() {
        let defaults = settings(&[]).unwrap();
        assert_eq!(defaults, FailureSettings::default());
        assert_eq!(defaults.backoff_ms(1), 100);
        assert_eq!(defaults.backoff_ms(2), 200);
        assert_eq!(defaults.backoff_ms(7), 5_000);
        assert_eq!(defaults.backoff_ms(i16::MAX), 5_000);
    }

    #[test]
    fn backoff_doubles_from_the_initial_up_to_the_maximum() {
        let s = settings(&[
            (RETRY_INITIAL_BACKOFF_CONFIG, "1000"),
            (RETRY_MAX_BACKOFF_CONFIG, "5000"),
        ])
        .unwrap();
        let waits: Vec<i64> = (1..=5).map(|n| s.backoff_ms(n)).collect();
        assert_eq!(waits, [1_000, 2_000, 4_000, 5_000, 5_000]);
        // A maximum below the initial backoff waits the initial one.
        let s = settings(&[
            (RETRY_INITIAL_BACKOFF_CONFIG, "300"),
            (RETRY_MAX_BACKOFF_CONFIG, "100"),
        ])
        .unwrap();
        assert_eq!(s.backoff_ms(3), 300);
    }

    #[test]
    fn retries_run_out_at_max_attempts_and_never_for_non_retryable() {
        let s = settings(&[(RETRY_MAX_ATTEMPTS_CONFIG, "3")]).unwrap();
        assert!(s.retries_left(0));
        assert!(s.retries_left(2));
        assert!(!s.retries_left(3));
        assert!(!s.retries_left(-1));
        let none = settings(&[(RETRY_MAX_ATTEMPTS_CONFIG, "0")]).unwrap();
        assert!(!none.retries_left(1));
    }

    #[test]
    fn bad_values_name_their_key() {
        for (key, value) in [
            (RETRY_INITIAL_BACKOFF_CONFIG, "0"),
            (RETRY_MAX_BACKOFF_CONFIG, "soon"),
            (RETRY_MAX_ATTEMPTS_CONFIG, "-2"),
            (RETRY_MAX_ATTEMPTS_CONFIG, "40000"),
            (SOCKET_TIMEOUT_CONFIG, "99999999999"),
        ] {
            let error = settings(&[(key, value)]).unwrap_err();
            assert!(error.starts_with(key), "{error}");
        }
    }
}
