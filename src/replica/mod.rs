//! A broker's replicas: one [`Partition`] per partition the broker holds, its log and its role
//! (leader with the ISR and the high watermark, follower, or offline). This layer sits below
//! every broker component (the broker's produce and fetch paths, the coordinator host, the
//! KIP-1279 mirror manager), which all read and write replicas through it.

mod fetcher;
mod manager;
mod partition;
pub mod storage;
mod truncation;

pub use fetcher::{FetcherConfig, FetcherContext, ReplicaFetcher};
pub use manager::{
    check_leader_epoch, fetch_answer_ready, leader_end_offset_for_fetched_epoch, DelayedFetch,
    FetchRead, MarkerGate, ProduceOutcome, ProduceRequest, ReplicaChange, ReplicaConfig,
    ReplicaContext, ReplicaManager, WriteGate,
};
pub use partition::{FollowerRole, FollowerState, IsrExpansion, LeaderState, Partition, Role};
use truncation::end_offset_truncation;
pub use truncation::{
    follower_truncation_for_batches, follower_truncation_offset, FollowerTruncation,
};

use crate::common::Offset;
use crate::events::{BrokerEvent, TruncationReason};
use crate::protocol::TopicPartition;

/// [`report_leader_truncation`] for `topic_partition` among `partitions`, if this broker holds
/// it (the replica fetcher's and the mirror manager's contexts both report through this).
pub fn report_truncation_among<D: crate::log::LogDisk>(
    partitions: &mut std::collections::BTreeMap<TopicPartition, Partition<D>>,
    events: &mut Vec<BrokerEvent>,
    topic_partition: &TopicPartition,
    from: Offset,
    reason: TruncationReason,
) {
    if let Some(partition) = partitions.get_mut(topic_partition) {
        report_leader_truncation(partition, events, topic_partition, from, reason);
    }
}

/// Reports a leader's log truncated from log end `from` (by a KIP-1279 mirroring cut or
/// a restart at the source's log start) and resets what the leader knew of its followers'
/// positions past the new end. Reported even when the log end moves up (a restart at the
/// leader's log start): either way the log's content was rewritten.
pub fn report_leader_truncation<D: crate::log::LogDisk>(
    partition: &mut Partition<D>,
    events: &mut Vec<BrokerEvent>,
    topic_partition: &TopicPartition,
    from: Offset,
    reason: TruncationReason,
) {
    partition.leader_log_truncated();
    let to = partition.log.log_end_offset();
    if to != from {
        events.push(BrokerEvent::Truncated {
            topic_partition: topic_partition.clone(),
            from_log_end_offset: from,
            to_log_end_offset: to,
            high_watermark_before: partition.log.high_watermark(),
            reason,
        });
    }
}
