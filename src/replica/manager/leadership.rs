//! Replicas follow the metadata image: a replica per assigned partition (its log recovered or
//! created), leader or follower as the image says.

use super::{ReplicaContext, ReplicaManager};
use crate::common::{LeaderEpoch, MirrorState};
use crate::events::{BrokerEvent, TruncationReason};
use crate::metadata::{MetadataImage, PartitionRecord};
use crate::protocol::{BrokerId, ErrorCode, TopicPartition};
use crate::replica::storage::BrokerStorage;
use crate::replica::{FollowerRole, Partition, Role};

/// What applying a partition record did to the local replica, for the broker to carry on to
/// the other components.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaChange {
    /// Still the leader in the same epoch; the ISR was brought in line (it may have changed,
    /// so the high watermark may move and waiting produces may complete).
    LeaderIsrUpdated,
    /// Still following the same leader in the same epoch: nothing to do.
    Unchanged,
    /// Now the leader (a new epoch): its high watermark may move at once, and a coordinator
    /// shard on this partition loads.
    BecameLeader,
    /// Now a follower of `leader` (none when the partition has no leader): the produces that
    /// waited on it as leader were failed; a coordinator shard on it unloads, and the replica
    /// fetcher follows the new leader.
    BecameFollower {
        /// The new leader.
        leader: Option<BrokerId>,
    },
}

impl<S: BrokerStorage> ReplicaManager<S> {
    /// The partitions the image assigns to `broker_id`, with their records, in partition
    /// order.
    pub fn assigned(
        image: &MetadataImage,
        broker_id: BrokerId,
    ) -> Vec<(TopicPartition, PartitionRecord)> {
        image
            .all_partitions()
            .filter(|(_, record)| record.replicas.contains(&broker_id))
            .map(|(topic_partition, record)| (topic_partition, record.clone()))
            .collect()
    }

    /// Creates the replica of a newly assigned partition (a follower of no one yet, on the log
    /// recovered at start-up or a new one); whether the replica exists (a log that cannot be
    /// opened leaves the partition unhosted until the next try).
    pub fn ensure_replica(
        &mut self,
        topic_partition: &TopicPartition,
        record: &PartitionRecord,
    ) -> bool {
        if self.partitions.contains_key(topic_partition) {
            return true;
        }
        let Some(log) = self.take_or_create_log(topic_partition) else {
            return false;
        };
        self.partitions.insert(
            topic_partition.clone(),
            Partition {
                topic_partition: topic_partition.clone(),
                topic_id: record.topic_id,
                log,
                role: Role::Follower(FollowerRole {
                    leader: None,
                    leader_epoch: LeaderEpoch(-1),
                    epoch_looked_up: false,
                }),
                mirror_state: MirrorState::Unknown,
            },
        );
        true
    }

    /// Brings the replica of `topic_partition` (which must exist) in line with `record`;
    /// `mirror_topic` says whether the topic is a KIP-1279 mirror topic in the image (a new
    /// leader of one keeps the source's epochs rather than starting its own).
    pub fn apply_partition_record(
        &mut self,
        context: &mut ReplicaContext<'_>,
        topic_partition: &TopicPartition,
        record: &PartitionRecord,
        mirror_topic: bool,
    ) -> ReplicaChange {
        let self_id = context.broker_id;
        let partition = self
            .partitions
            .get_mut(topic_partition)
            .expect("reconciled partition exists");
        // The image applies the controller's records in order, and a replica of a deleted
        // topic is dropped before its name's next topic is reconciled: a replica's leader
        // epoch never goes back. One that did would make a deposed epoch's leader again.
        assert!(
            LeaderEpoch(record.leader_epoch) >= partition.leader_epoch(),
            "{topic_partition}: leader epoch {} after {} on broker {self_id:?}",
            record.leader_epoch,
            partition.leader_epoch(),
        );
        let same_epoch = partition.leader_epoch() == LeaderEpoch(record.leader_epoch);
        match (&partition.role, record.leader) {
            (Role::Leader(_), Some(leader)) if leader == self_id && same_epoch => {
                let before = partition.leader_state().map(|s| s.isr.clone());
                partition.update_isr(record);
                let after = partition.leader_state().map(|s| s.isr.clone());
                if before != after {
                    context.events.push(BrokerEvent::IsrChanged {
                        topic_partition: topic_partition.clone(),
                        isr: record.isr.clone(),
                    });
                }
                ReplicaChange::LeaderIsrUpdated
            }
            (Role::Follower(role), leader) if role.leader == leader && same_epoch => {
                ReplicaChange::Unchanged
            }
            (_, Some(leader)) if leader == self_id => {
                let high_watermark = partition.log.high_watermark();
                partition.become_leader(record, self_id, context.now_ms, mirror_topic);
                context.events.push(BrokerEvent::BecameLeader {
                    topic_partition: topic_partition.clone(),
                    leader_epoch: LeaderEpoch(record.leader_epoch),
                    start_offset: partition.log.log_end_offset(),
                    high_watermark,
                });
                ReplicaChange::BecameLeader
            }
            (_, leader) => {
                let log_end_before = partition.log.log_end_offset();
                let high_watermark_before = partition.log.high_watermark();
                let truncation = self.config.follower_truncation;
                let reason = if truncation.truncates_to_high_watermark() {
                    TruncationReason::HighWatermarkOnBecomingFollower
                } else {
                    TruncationReason::NoEpochsOnBecomingFollower
                };
                partition.become_follower(record, truncation);
                if partition.log.log_end_offset() < log_end_before {
                    context.events.push(BrokerEvent::Truncated {
                        topic_partition: topic_partition.clone(),
                        from_log_end_offset: log_end_before,
                        to_log_end_offset: partition.log.log_end_offset(),
                        high_watermark_before,
                        reason,
                    });
                }
                context.events.push(BrokerEvent::BecameFollower {
                    topic_partition: topic_partition.clone(),
                    leader,
                    leader_epoch: LeaderEpoch(record.leader_epoch),
                    log_end_offset: log_end_before,
                    high_watermark: high_watermark_before,
                });
                self.fail_delayed_produces(
                    context,
                    topic_partition,
                    ErrorCode::NotLeaderOrFollower,
                );
                ReplicaChange::BecameFollower { leader }
            }
        }
    }
}
