//! The ISR on a leader: followers join once caught up, leave after `replica.lag.time.max.ms`,
//! one AlterPartition to the controller at a time.

use super::*;

impl<S: BrokerStorage> Broker<S> {
    pub(super) fn maybe_expand_isr(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        follower: BrokerId,
    ) {
        let Some(partition) = self.partitions.get_mut(topic_partition) else {
            return;
        };
        if let Some(proposed) = partition.maybe_expand_isr(follower) {
            self.send_alter_partition(now_ms, topic_partition, proposed);
        }
    }

    pub(super) fn maybe_shrink_isrs(&mut self, now_ms: i64) {
        let self_id = self.broker_id;
        let lag_time_ms = self.config.replica_lag_time_max_ms;
        let mut proposals = Vec::new();
        for (topic_partition, partition) in self.partitions.iter_mut() {
            if let Some(proposed) = partition.maybe_shrink_isr(self_id, now_ms, lag_time_ms) {
                proposals.push((topic_partition.clone(), proposed));
            }
        }
        for (topic_partition, proposed) in proposals {
            self.send_alter_partition(now_ms, &topic_partition, proposed);
        }
    }

    pub(super) fn send_alter_partition(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        new_isr: Vec<BrokerId>,
    ) {
        let Some(broker_epoch) = self.session.broker_epoch() else {
            return;
        };
        let Some(partition) = self.partitions.get(topic_partition) else {
            return;
        };
        let Some(state) = partition.leader_state() else {
            return;
        };
        let request = Request::AlterPartition {
            broker_id: self.broker_id,
            broker_epoch,
            topic_id: partition.topic_id,
            partition: topic_partition.partition,
            leader_epoch: state.leader_epoch,
            partition_epoch: state.partition_epoch,
            new_isr,
        };
        let correlation_id = self.outbox.request(self.controller, request);
        self.alter_partitions
            .insert(correlation_id, (topic_partition.clone(), now_ms));
    }

    pub(super) fn handle_alter_partition_response(
        &mut self,
        now_ms: i64,
        correlation_id: u64,
        error: ErrorCode,
        record: Option<PartitionRecord>,
    ) {
        let Some((topic_partition, _)) = self.alter_partitions.remove(&correlation_id) else {
            return;
        };
        let Some(partition) = self.partitions.get_mut(&topic_partition) else {
            return;
        };
        match (error, record) {
            (ErrorCode::None, Some(record)) => {
                partition.update_isr(&record);
                // The controller may answer an unchanged ISR with the current state (same
                // partition epoch); the proposal is settled either way.
                if let Role::Leader(state) = &mut partition.role {
                    state.pending_isr = None;
                }
                self.events.push(BrokerEvent::IsrChanged {
                    topic_partition: topic_partition.clone(),
                    isr: record.isr.clone(),
                });
                self.after_isr_change(now_ms, &topic_partition);
            }
            (ErrorCode::RequestTimedOut, _) => {
                // Unanswered: Kafka's AlterPartition channel retries until it is answered, and
                // the proposal stays pending meanwhile, so the high watermark is still computed
                // over the maximal ISR. Dropping it let a deposed leader cut off from its
                // controller commit a produce over its ISR of itself alone and acknowledge
                // it, after the controller had elected another leader below it (generated
                // seed 9970000000001044, `transaction-atomicity`).
                let pending = partition
                    .leader_state()
                    .and_then(|state| state.pending_isr.clone());
                if let Some(proposed) = pending {
                    self.events.push(BrokerEvent::AlterPartitionRetried {
                        topic_partition: topic_partition.clone(),
                        isr: proposed.clone(),
                    });
                    self.send_alter_partition(now_ms, &topic_partition, proposed);
                }
            }
            _ => {
                // Refused (stale epochs, fenced member): drop the proposal; metadata will bring
                // the partition's real state and the next check proposes again.
                if let Role::Leader(state) = &mut partition.role {
                    state.pending_isr = None;
                }
            }
        }
    }

    pub(super) fn after_isr_change(&mut self, now_ms: i64, topic_partition: &TopicPartition) {
        // A smaller ISR can let the high watermark move; a larger one can make acks=all
        // produces fail with NotEnoughReplicasAfterAppend less often.
        self.maybe_increment_high_watermark(now_ms, topic_partition);
        self.complete_delayed_produces(now_ms);
    }

    pub(super) fn expire_alter_partitions(&mut self, now_ms: i64) {
        let timeout = self.config.controller_request_timeout_ms;
        let expired: Vec<u64> = self
            .alter_partitions
            .iter()
            .filter(|(_, (_, sent_ms))| now_ms - sent_ms >= timeout)
            .map(|(correlation_id, _)| *correlation_id)
            .collect();
        for correlation_id in expired {
            self.handle_alter_partition_response(
                now_ms,
                correlation_id,
                ErrorCode::RequestTimedOut,
                None,
            );
        }
    }
}
