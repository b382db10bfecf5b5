//! Replicas follow the metadata image: a replica per assigned partition (its log recovered
//! or created), leader or follower as the image says, and the listeners opened once the image
//! shows this broker's registration.

use super::*;

impl<S: BrokerStorage> Broker<S> {
    /// The session applied fetched metadata: once ready, bring replicas, coordinators and
    /// mirror components in line with the image, and open the listeners the first time.
    pub(super) fn after_metadata(&mut self, now_ms: i64, applied: bool) {
        if applied && self.session.metadata_ready() {
            self.drop_deleted_topics();
            self.reconcile_partitions(now_ms);
            self.with_mirror_manager(|manager, broker| {
                manager.reconcile_mirror_tasks(broker, now_ms);
            });
            self.mirror_syncs.reconcile(&mut context!(self, now_ms));
        }
        if self.session.metadata_ready() && !self.serving_requests {
            self.open_listeners(now_ms);
        }
    }

    /// Opens the listeners once the image shows this incarnation's registration and handles
    /// the requests held until then, in arrival order.
    pub(super) fn open_listeners(&mut self, now_ms: i64) {
        self.serving_requests = true;
        for envelope in std::mem::take(&mut self.held_requests) {
            if let Message::Request(correlation_id, request) = envelope.message {
                self.handle_request(now_ms, envelope.from, correlation_id, request);
            }
        }
    }

    /// Brings every local replica's role in line with the metadata image.
    pub(super) fn reconcile_partitions(&mut self, now_ms: i64) {
        let assigned: Vec<(TopicPartition, PartitionRecord)> = self
            .image
            .all_partitions()
            .filter(|(_, record)| record.replicas.contains(&self.broker_id))
            .map(|(topic_partition, record)| (topic_partition, record.clone()))
            .collect();
        for (topic_partition, record) in assigned {
            if !self.partitions.contains_key(&topic_partition) {
                let Some(log) = self.take_or_create_log(&topic_partition) else {
                    continue;
                };
                self.partitions.insert(
                    topic_partition.clone(),
                    Partition {
                        topic_partition: topic_partition.clone(),
                        topic_id: record.topic_id,
                        log,
                        role: Role::Follower(FollowerRole {
                            leader: None,
                            leader_epoch: -1,
                        }),
                        mirror_state: MirrorState::Unknown,
                    },
                );
            }
            self.apply_partition_record(now_ms, &topic_partition, &record);
        }
    }

    pub(super) fn take_or_create_log(
        &mut self,
        topic_partition: &TopicPartition,
    ) -> Option<PartitionLog<S::Disk>> {
        if let Some(log) = self.unassigned_logs.remove(topic_partition) {
            return Some(log);
        }
        let disk = self.storage.open_dir(&partition_dir_name(topic_partition));
        PartitionLog::open(disk, log_config(&self.config))
            .ok()
            .map(|(log, _)| log)
    }

    pub(super) fn apply_partition_record(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        record: &PartitionRecord,
    ) {
        let self_id = self.broker_id;
        let partition = self
            .partitions
            .get_mut(topic_partition)
            .expect("reconciled partition exists");
        let same_epoch = partition.leader_epoch() == record.leader_epoch;
        match (&partition.role, record.leader) {
            (Role::Leader(_), Some(leader)) if leader == self_id && same_epoch => {
                let before = partition.leader_state().map(|s| s.isr.clone());
                partition.update_isr(record);
                let after = partition.leader_state().map(|s| s.isr.clone());
                if before != after {
                    self.events.push(BrokerEvent::IsrChanged {
                        topic_partition: topic_partition.clone(),
                        isr: record.isr.clone(),
                    });
                }
                self.after_isr_change(now_ms, topic_partition);
            }
            (Role::Follower(role), leader) if role.leader == leader && same_epoch => {}
            (_, Some(leader)) if leader == self_id => {
                let mirror_topic = self
                    .image
                    .mirror_desired_state(&topic_partition.topic)
                    .is_some();
                partition.become_leader(record, self_id, now_ms, mirror_topic);
                self.events.push(BrokerEvent::BecameLeader {
                    topic_partition: topic_partition.clone(),
                    leader_epoch: record.leader_epoch,
                    start_offset: partition.log.log_end_offset(),
                });
                // As Kafka's `makeLeader`: an ISR of the leader alone commits its whole log now.
                self.maybe_increment_high_watermark(now_ms, topic_partition);
                self.load_coordinator(now_ms, topic_partition);
            }
            (_, leader) => {
                let log_end_before = partition.log.log_end_offset();
                let high_watermark_before = partition.log.high_watermark();
                partition.become_follower(record);
                if partition.log.log_end_offset() < log_end_before {
                    self.events.push(BrokerEvent::Truncated {
                        topic_partition: topic_partition.clone(),
                        from_log_end_offset: log_end_before,
                        to_log_end_offset: partition.log.log_end_offset(),
                        high_watermark_before,
                        reason: TruncationReason::NoEpochsOnBecomingFollower,
                    });
                }
                self.events.push(BrokerEvent::BecameFollower {
                    topic_partition: topic_partition.clone(),
                    leader,
                    leader_epoch: record.leader_epoch,
                });
                self.fail_delayed_produces(topic_partition, ErrorCode::NotLeaderOrFollower);
                self.unload_coordinator(topic_partition);
                self.complete_delayed_markers(now_ms);
                if let Some(leader) = leader {
                    self.fetcher.follow(leader);
                }
            }
        }
    }
}
