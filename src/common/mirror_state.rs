//! The KIP-1279 mirror partition states (seed names): what `__mirror_state` persists, what
//! DescribeMirror reports and what every layer names. The rules over them (legal transitions,
//! the decision from `mirror.name`) are the mirror module's (`crate::mirror::state`).

use std::fmt;

use serde::{Deserialize, Serialize};

/// A mirror partition's state (seed names).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
pub enum MirrorState {
    /// Nothing known: never mirrored, or the coordinator has no record.
    #[default]
    Unknown,
    /// Last-mirrored-epoch truncation and the wait for the ISR to follow it.
    Preparing,
    /// A mirror fetcher copies the source partition; the partition is read-only.
    Mirroring,
    /// Fetchers are being removed for a pause.
    Pausing,
    /// No fetcher, read-only, no metadata sync.
    Paused,
    /// The failover steps run: remove fetchers, bump the epoch, truncate to the LSO, persist
    /// the last mirrored epoch, write MIRROR_PID_RESET.
    Stopping,
    /// Writable; the mirror no longer touches the partition.
    Stopped,
    /// An error stopped the work; retried with backoff unless non-retryable.
    Failed,
    /// The late revision's state (spec §4.7): the source lost records this partition had
    /// mirrored (an unclean election there) and the topic has
    /// `mirror.support.unclean.leader.election=true`; the fetcher cut them and stopped, and the
    /// partition waits until every replica has truncated too before it mirrors again.
    UleRecovery,
    /// The late revision's state (spec §4.4, design `epoch-fencing-state` only): a fetched
    /// batch carried a leader epoch above this partition's, and the leader asks the controller
    /// to raise its epoch above it before it mirrors again.
    EpochFencing,
}

impl MirrorState {
    /// Every state, in declaration order.
    pub const ALL: [MirrorState; 10] = [
        MirrorState::Unknown,
        MirrorState::Preparing,
        MirrorState::Mirroring,
        MirrorState::Pausing,
        MirrorState::Paused,
        MirrorState::Stopping,
        MirrorState::Stopped,
        MirrorState::Failed,
        MirrorState::UleRecovery,
        MirrorState::EpochFencing,
    ];

    /// The state's name as the KIP writes it.
    pub fn name(self) -> &'static str {
        match self {
            MirrorState::Unknown => "UNKNOWN",
            MirrorState::Preparing => "PREPARING",
            MirrorState::Mirroring => "MIRRORING",
            MirrorState::Pausing => "PAUSING",
            MirrorState::Paused => "PAUSED",
            MirrorState::Stopping => "STOPPING",
            MirrorState::Stopped => "STOPPED",
            MirrorState::Failed => "FAILED",
            MirrorState::UleRecovery => "ULE_RECOVERY",
            MirrorState::EpochFencing => "EPOCH_FENCING",
        }
    }

    /// Whether clients may produce to the partition (only a stopped mirror partition is
    /// writable; `Unknown` is not, because a mirror topic's partition that the coordinator has
    /// not answered for yet must not take writes either).
    pub fn is_writable(self) -> bool {
        self == MirrorState::Stopped
    }
}

impl fmt::Display for MirrorState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
