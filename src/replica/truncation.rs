//! Where a replica truncates when its log and the leader's (or, for a KIP-1279 mirror
//! fetcher, the source's) part: Kafka's follower rule for a diverging epoch, and the check a
//! mirrored log needs on top of it when a fetched batch's epoch goes below its latest.

use crate::common::{LeaderEpoch, Offset};
use crate::log::{EpochEndOffset, LogDisk, PartitionLog};
use crate::record::RecordBatch;

/// How a follower finds where its log and its leader's part: the replication protocol's
/// history, one rule per era (issue #18 runs the older ones as pre-fix designs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FollowerTruncation {
    /// Kafka since KIP-101 (0.11), with KIP-279's follower-side epoch lookup and KIP-595's
    /// truncation on fetch (2.7): a follower fetches with its last fetched epoch, the leader
    /// answers a diverging epoch where their histories part, and the follower cuts there
    /// ([`follower_truncation_offset`]). Becoming a follower truncates nothing (unless the log
    /// has no epochs at all).
    #[default]
    LeaderEpoch,
    /// KIP-101 as first shipped (Kafka 0.11 to 1.1), before KIP-279 (KAFKA-6361): when a
    /// replica begins to follow, it asks the leader once for the end offset of its own latest
    /// epoch and truncates to that offset (or its log end, if lower), whatever epoch the
    /// leader's answer is for; then it fetches by offset alone. When the leader never had the
    /// follower's latest epoch (two leader changes in quick succession, an unclean election),
    /// the end offset the leader gives is that of an older epoch, which the follower's log may
    /// have ended earlier: the follower keeps records of its own in between, and its fetches,
    /// which no longer carry an epoch, append the leader's after them.
    EpochLookupOnFollow,
    /// Kafka before KIP-101 (KAFKA-1211): a replica that becomes a follower (a leader change,
    /// a restart) truncates its log to its high watermark and fetches from there, with no
    /// epoch and no divergence check. A follower's high watermark lags the leader's by a fetch
    /// round trip (by a checkpoint interval after a restart), so the cut removes committed
    /// records; elected before it fetched them again, the follower loses them for good (the
    /// KIP's first scenario), and a high watermark above the new leader's log keeps records
    /// the new leader replaced (its second).
    HighWatermark,
}

impl FollowerTruncation {
    /// Whether becoming a follower cuts the log to the high watermark (before KIP-101).
    pub fn truncates_to_high_watermark(self) -> bool {
        self == Self::HighWatermark
    }

    /// Whether a follower's fetch carries its last fetched epoch, given whether its one epoch
    /// lookup since it began to follow is `done` (which only matters before KIP-279).
    pub fn fetches_with_epoch(self, done: bool) -> bool {
        match self {
            Self::LeaderEpoch => true,
            Self::EpochLookupOnFollow => !done,
            Self::HighWatermark => false,
        }
    }

    /// Whether a fetched batch whose epoch goes below the follower's latest one cuts the
    /// follower's tail ([`follower_truncation_for_batches`]; a KIP-1279 addition on top of
    /// today's Kafka).
    pub fn cuts_by_batch_epochs(self) -> bool {
        self == Self::LeaderEpoch
    }

    /// Where a follower cuts its log on the leader's diverging-epoch answer `leader`.
    pub fn truncation_offset<D: LogDisk>(
        self,
        log: &PartitionLog<D>,
        leader: EpochEndOffset,
    ) -> Offset {
        match self {
            Self::EpochLookupOnFollow => end_offset_truncation(log, leader),
            Self::LeaderEpoch | Self::HighWatermark => follower_truncation_offset(log, leader),
        }
    }
}

/// The follower's rule before KIP-279: the leader's end offset, or the follower's log end if
/// lower, without looking at which epoch the offset ends; an answer with no offset sends the
/// follower back to its high watermark.
pub(super) fn end_offset_truncation<D: LogDisk>(
    log: &PartitionLog<D>,
    leader: EpochEndOffset,
) -> Offset {
    if leader.end_offset.is_none() {
        return log.high_watermark();
    }
    leader.end_offset.min(log.log_end_offset())
}

/// Where a follower must truncate before appending `batches` (fetched at its log end), if
/// they would put an epoch below its latest one after it; `None` when they fit.
///
/// A leader's log never lowers its epochs, so when the first fetched batch has epoch `e`
/// below the follower's latest epoch, every batch the leader holds below this offset has an
/// epoch ≤ `e` and the follower's batches of later epochs are not the leader's. Kafka never
/// sees this (its epochs are the leader's terms); a KIP-1279 destination's log mixes the
/// source's epochs with its own (written while STOPPED), and a follower that missed a
/// PREPARING truncation keeps a local tail whose epoch the source may reach later, which the
/// fetch's divergence check then takes for the leader's. The tail is cut as for a diverging
/// epoch `(e, this offset)`; the next fetch checks what is left.
pub fn follower_truncation_for_batches<D: LogDisk>(
    log: &PartitionLog<D>,
    batches: &[RecordBatch],
) -> Option<Offset> {
    let first = batches.first()?;
    let epoch = LeaderEpoch(first.partition_leader_epoch());
    let latest = log.latest_epoch()?;
    if epoch.is_none() || epoch >= latest {
        return None;
    }
    Some(follower_truncation_offset(
        log,
        EpochEndOffset {
            epoch,
            end_offset: Offset(first.base_offset()),
        },
    ))
}

/// Kafka's follower truncation decision for a diverging epoch `(Lε, Lo)` from the leader
/// (kafka-storage.md §4.5). When the follower lacks `Lε` it truncates to the end of its own
/// closest lower epoch; the next fetch carries that epoch and may diverge again (KIP-279).
pub fn follower_truncation_offset<D: LogDisk>(
    log: &PartitionLog<D>,
    leader: EpochEndOffset,
) -> Offset {
    let log_end = log.log_end_offset();
    if leader.end_offset.is_none() {
        return log.high_watermark();
    }
    if leader.epoch.is_none() {
        return leader.end_offset.min(log_end);
    }
    let local = log.end_offset_for_epoch(leader.epoch);
    if local == EpochEndOffset::UNDEFINED {
        leader.end_offset.min(log_end)
    } else if local.epoch != leader.epoch {
        local.end_offset.min(log_end)
    } else {
        local.end_offset.min(leader.end_offset).min(log_end)
    }
}
