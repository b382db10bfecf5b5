//! Per-node clocks: a clock skew jumps a node's clock forward and may make it run fast or slow,
//! never back (see the world's module doc for why).

/// Per-node clock: `local = EPOCH_MS + elapsed_ms + offset_ms + (elapsed_ms − drift_since_ms) ×
/// drift_ppm / 10⁶`. It never steps backwards: the offset only grows ([`Self::jumped`]), the
/// drift counts from when it was set, and changing or stopping it first folds what it
/// accumulated into the offset.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ClockSkew {
    /// Offset in milliseconds, drift accumulated before `drift_since_ms` included.
    pub offset_ms: i64,
    /// Drift in parts per million (a slow clock, when negative, still moves forward: the
    /// loader and swarm mode keep it above −10⁶).
    pub drift_ppm: i64,
    /// When the drift started, in ms since the world started.
    pub drift_since_ms: i64,
}

impl ClockSkew {
    /// How far the clock is ahead of the world's time (behind when negative) at `elapsed_ms`.
    pub fn offset_at(&self, elapsed_ms: i64) -> i64 {
        self.offset_ms + (elapsed_ms - self.drift_since_ms) * self.drift_ppm / 1_000_000
    }

    /// The clock jumped forward by `jump_ms` at `elapsed_ms`, then drifting by `drift_ppm`.
    pub fn jumped(self, elapsed_ms: i64, jump_ms: i64, drift_ppm: i64) -> Self {
        assert!(
            jump_ms >= 0,
            "a node's clock never steps back ({jump_ms} ms)"
        );
        Self {
            offset_ms: self.offset_at(elapsed_ms) + jump_ms,
            drift_ppm,
            drift_since_ms: elapsed_ms,
        }
    }
}
