//! The ISR on a leader: followers join once caught up, leave after `replica.lag.time.max.ms`,
//! one AlterPartition to the controller at a time, retried until answered.

use super::{ReplicaContext, ReplicaManager};
use crate::events::BrokerEvent;
use crate::metadata::PartitionRecord;
use crate::protocol::{BrokerId, ControllerRequest, ErrorCode, Request, TopicPartition};
use crate::replica::storage::BrokerStorage;
use crate::replica::{IsrExpansion, Role};

impl<S: BrokerStorage> ReplicaManager<S> {
    /// Proposes `follower` for the ISR of `topic_partition` if it caught up.
    pub fn maybe_expand_isr(
        &mut self,
        context: &mut ReplicaContext<'_>,
        topic_partition: &TopicPartition,
        follower: BrokerId,
    ) {
        let Some(partition) = self.partitions.get_mut(topic_partition) else {
            return;
        };
        let waits_for_epoch_start = self.config.isr_join_waits_for_epoch_start;
        match partition.maybe_expand_isr(follower, waits_for_epoch_start) {
            IsrExpansion::Proposed(proposed) => {
                self.send_alter_partition(context, topic_partition, proposed);
            }
            IsrExpansion::BelowEpochStart {
                proposed,
                follower_end,
                high_watermark,
                epoch_start,
            } => {
                context.events.push(BrokerEvent::IsrJoinBelowEpochStart {
                    topic_partition: topic_partition.clone(),
                    follower,
                    follower_end,
                    high_watermark,
                    epoch_start,
                    joined: proposed.is_some(),
                });
                if let Some(proposed) = proposed {
                    self.send_alter_partition(context, topic_partition, proposed);
                }
            }
            IsrExpansion::Unchanged => {}
        }
    }

    /// Proposes dropping the followers that lagged too long, on every led partition.
    pub(super) fn maybe_shrink_isrs(&mut self, context: &mut ReplicaContext<'_>) {
        let lag_time_ms = self.config.replica_lag_time_max_ms;
        let mut proposals = Vec::new();
        for (topic_partition, partition) in self.partitions.iter_mut() {
            if let Some(proposed) =
                partition.maybe_shrink_isr(context.broker_id, context.now_ms, lag_time_ms)
            {
                proposals.push((topic_partition.clone(), proposed));
            }
        }
        for (topic_partition, proposed) in proposals {
            self.send_alter_partition(context, &topic_partition, proposed);
        }
    }

    fn send_alter_partition(
        &mut self,
        context: &mut ReplicaContext<'_>,
        topic_partition: &TopicPartition,
        new_isr: Vec<BrokerId>,
    ) {
        let Some(broker_epoch) = context.broker_epoch else {
            return;
        };
        let Some(partition) = self.partitions.get(topic_partition) else {
            return;
        };
        let Some(state) = partition.leader_state() else {
            return;
        };
        let request = Request::Controller(ControllerRequest::AlterPartition {
            broker_id: context.broker_id,
            broker_epoch,
            topic_id: partition.topic_id,
            partition: topic_partition.partition,
            leader_epoch: state.leader_epoch,
            partition_epoch: state.partition_epoch,
            new_isr,
        });
        let correlation_id = context.outbox.request(context.controller, request);
        self.alter_partitions
            .insert(correlation_id, (topic_partition.clone(), context.now_ms));
    }

    /// Whether `correlation_id` is an AlterPartition this replica manager sent.
    pub fn owns_alter_partition(&self, correlation_id: u64) -> bool {
        self.alter_partitions.contains_key(&correlation_id)
    }

    /// The controller's answer to an AlterPartition; the partition whose ISR changed, if one
    /// did (the broker then runs what a new ISR may complete).
    pub fn handle_alter_partition_response(
        &mut self,
        context: &mut ReplicaContext<'_>,
        correlation_id: u64,
        error: ErrorCode,
        record: Option<PartitionRecord>,
    ) -> Option<TopicPartition> {
        let (topic_partition, _) = self.alter_partitions.remove(&correlation_id)?;
        let partition = self.partitions.get_mut(&topic_partition)?;
        match (error, record) {
            (ErrorCode::None, Some(record)) => {
                partition.update_isr(&record);
                // The controller may answer an unchanged ISR with the current state (same
                // partition epoch); the proposal is settled either way.
                if let Role::Leader(state) = &mut partition.role {
                    state.pending_isr = None;
                }
                context.events.push(BrokerEvent::IsrChanged {
                    topic_partition: topic_partition.clone(),
                    isr: record.isr.clone(),
                });
                Some(topic_partition)
            }
            (ErrorCode::RequestTimedOut, _) => {
                self.retry_alter_partition(context, &topic_partition);
                None
            }
            _ => {
                // Refused (stale epochs, fenced member): drop the proposal; metadata will bring
                // the partition's real state and the next check proposes again.
                if let Role::Leader(state) = &mut partition.role {
                    state.pending_isr = None;
                }
                None
            }
        }
    }

    /// An AlterPartition went unanswered. Kafka's AlterPartition channel retries until it is
    /// answered, and the proposal stays pending meanwhile, so the high watermark is still
    /// computed over the maximal ISR. Dropping it let a deposed leader cut off from its
    /// controller commit a produce over its ISR of itself alone and acknowledge it, after the
    /// controller had elected another leader below it (generated seed 9970000000001044,
    /// `transaction-atomicity`).
    fn retry_alter_partition(
        &mut self,
        context: &mut ReplicaContext<'_>,
        topic_partition: &TopicPartition,
    ) {
        let pending = self
            .partitions
            .get(topic_partition)
            .and_then(|partition| partition.leader_state())
            .and_then(|state| state.pending_isr.clone());
        if let Some(proposed) = pending {
            context.events.push(BrokerEvent::AlterPartitionRetried {
                topic_partition: topic_partition.clone(),
                isr: proposed.clone(),
            });
            self.send_alter_partition(context, topic_partition, proposed);
        }
    }

    /// Retries the AlterPartition requests the controller left unanswered past its timeout.
    pub fn expire_alter_partitions(&mut self, context: &mut ReplicaContext<'_>) {
        let timeout = self.config.controller_request_timeout_ms;
        let expired: Vec<u64> = self
            .alter_partitions
            .iter()
            .filter(|(_, (_, sent_ms))| context.now_ms - sent_ms >= timeout)
            .map(|(correlation_id, _)| *correlation_id)
            .collect();
        for correlation_id in expired {
            let changed = self.handle_alter_partition_response(
                context,
                correlation_id,
                ErrorCode::RequestTimedOut,
                None,
            );
            debug_assert!(changed.is_none(), "a timeout changes no ISR");
        }
    }
}
