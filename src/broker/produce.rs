//! Produce on a leader: client writes (acks=1 and acks=all with `min.insync.replicas`), the
//! read-only gate of mirror topics, the high watermark's moves, and the acks=all produces
//! waiting for it.

use super::*;

#[derive(Debug, Clone)]
pub(super) struct DelayedProduce {
    pub(super) reply_to: NodeId,
    pub(super) correlation_id: u64,
    pub(super) topic_partition: TopicPartition,
    pub(super) leader_epoch: i32,
    pub(super) base_offset: i64,
    pub(super) required_offset: i64,
    pub(super) log_append_time_ms: Option<i64>,
    pub(super) deadline_ms: i64,
}

impl<S: BrokerStorage> Broker<S> {
    #[allow(clippy::too_many_arguments)] // The fields of one Produce request, unpacked.
    pub(super) fn handle_produce(
        &mut self,
        now_ms: i64,
        from: NodeId,
        correlation_id: u64,
        acks: Acks,
        timeout_ms: i64,
        topic_partition: TopicPartition,
        batch: RecordBatch,
    ) {
        let min_insync = self.min_insync_replicas(&topic_partition.topic);
        let Some(partition) = self.partitions.get_mut(&topic_partition) else {
            self.respond_produce(
                from,
                correlation_id,
                ErrorCode::NotLeaderOrFollower,
                -1,
                None,
                -1,
            );
            return;
        };
        let Role::Leader(state) = &partition.role else {
            self.respond_produce(
                from,
                correlation_id,
                ErrorCode::NotLeaderOrFollower,
                -1,
                None,
                -1,
            );
            return;
        };
        let leader_epoch = state.leader_epoch;
        // For a KIP-1279 mirror topic, the partition's mirror state (`None` for other topics).
        let mirror_state =
            mirror_state_of(&self.image, &topic_partition.topic, partition.mirror_state);
        if let Some(state) = refuses_client_write(mirror_state, &self.config.broken) {
            // KIP-1279: a mirror topic is read-only until its partition is STOPPED.
            self.events.push(BrokerEvent::MirrorWriteRefused {
                topic_partition: topic_partition.clone(),
                mirror_state: state,
            });
            let log_start = partition.log.log_start_offset();
            self.respond_produce(
                from,
                correlation_id,
                ErrorCode::ReadOnlyTopic,
                -1,
                None,
                log_start,
            );
            return;
        }
        if acks == Acks::All && state.isr.len() < min_insync {
            let log_start = partition.log.log_start_offset();
            self.respond_produce(
                from,
                correlation_id,
                ErrorCode::NotEnoughReplicas,
                -1,
                None,
                log_start,
            );
            return;
        }
        let appended =
            partition
                .log
                .append_as_leader(&batch, leader_epoch, AppendOrigin::Client, now_ms);
        let info = match appended {
            Ok(info) => info,
            Err(error) => {
                let log_start = partition.log.log_start_offset();
                self.respond_produce(
                    from,
                    correlation_id,
                    ErrorCode::from(&error),
                    -1,
                    None,
                    log_start,
                );
                return;
            }
        };
        if info.duplicate {
            self.events.push(BrokerEvent::DuplicateBatch {
                topic_partition: topic_partition.clone(),
                first_offset: info.first_offset,
            });
        } else {
            self.events.push(BrokerEvent::LeaderAppend {
                topic_partition: topic_partition.clone(),
                first_offset: info.first_offset,
                last_offset: info.last_offset,
                leader_epoch,
                mirror_state,
                control: batch.is_control(),
            });
        }
        let ack_at_once = acks == Acks::Leader
            || self
                .config
                .broken
                .contains(&BrokenSwitch::AckBeforeReplication);
        match if ack_at_once { Acks::Leader } else { acks } {
            Acks::Leader => self.respond_produce(
                from,
                correlation_id,
                ErrorCode::None,
                info.first_offset,
                info.log_append_time_ms,
                info.log_start_offset,
            ),
            Acks::All => self.delayed_produces.push(DelayedProduce {
                reply_to: from,
                correlation_id,
                topic_partition: topic_partition.clone(),
                leader_epoch,
                base_offset: info.first_offset,
                required_offset: info.last_offset + 1,
                log_append_time_ms: info.log_append_time_ms,
                deadline_ms: now_ms + timeout_ms,
            }),
        }
        self.maybe_increment_high_watermark(now_ms, &topic_partition);
        self.try_complete_delayed_fetches(now_ms);
    }

    pub(super) fn respond_produce(
        &mut self,
        to: NodeId,
        correlation_id: u64,
        error: ErrorCode,
        base_offset: i64,
        log_append_time_ms: Option<i64>,
        log_start_offset: i64,
    ) {
        self.outbox.respond(
            to,
            correlation_id,
            Response::Produce {
                error,
                base_offset,
                log_append_time_ms,
                log_start_offset,
            },
        );
    }

    /// The topic's `min.insync.replicas`; the broker default when unset or unparsable.
    pub(super) fn min_insync_replicas(&self, topic: &str) -> usize {
        // The empty fallback fails to parse, so the default needs no string of its own (this
        // runs for every acks=all produce and coordinator write).
        self.image
            .topic_config(topic, MIN_INSYNC_REPLICAS, "")
            .parse()
            .unwrap_or(self.config.default_min_insync_replicas)
    }

    pub(super) fn maybe_increment_high_watermark(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
    ) {
        let self_id = self.broker_id;
        let moved = self
            .partitions
            .get_mut(topic_partition)
            .is_some_and(|partition| partition.maybe_increment_high_watermark(self_id));
        if moved {
            self.complete_delayed_produces(now_ms);
            self.complete_delayed_markers(now_ms);
            self.poll_coordinator(now_ms, topic_partition);
            self.try_complete_delayed_fetches(now_ms);
        }
    }

    /// Answers every acks=all produce whose offsets the high watermark passed, and fails those
    /// whose partition this broker no longer leads in the same epoch.
    pub(super) fn complete_delayed_produces(&mut self, now_ms: i64) {
        let pending = std::mem::take(&mut self.delayed_produces);
        for produce in pending {
            let partition = self.partitions.get(&produce.topic_partition);
            let leader = partition.and_then(|p| p.leader_state().map(|s| (p, s)));
            match leader {
                Some((partition, state)) if state.leader_epoch == produce.leader_epoch => {
                    if partition.log.high_watermark() >= produce.required_offset {
                        let min_insync = self.min_insync_replicas(&produce.topic_partition.topic);
                        let error = if state.isr.len() < min_insync {
                            ErrorCode::NotEnoughReplicasAfterAppend
                        } else {
                            ErrorCode::None
                        };
                        let log_start = partition.log.log_start_offset();
                        self.respond_produce(
                            produce.reply_to,
                            produce.correlation_id,
                            error,
                            produce.base_offset,
                            produce.log_append_time_ms,
                            log_start,
                        );
                    } else if now_ms >= produce.deadline_ms {
                        self.respond_produce(
                            produce.reply_to,
                            produce.correlation_id,
                            ErrorCode::RequestTimedOut,
                            -1,
                            None,
                            -1,
                        );
                    } else {
                        self.delayed_produces.push(produce);
                    }
                }
                _ => self.respond_produce(
                    produce.reply_to,
                    produce.correlation_id,
                    ErrorCode::NotLeaderOrFollower,
                    -1,
                    None,
                    -1,
                ),
            }
        }
    }

    pub(super) fn fail_delayed_produces(
        &mut self,
        topic_partition: &TopicPartition,
        error: ErrorCode,
    ) {
        let (failed, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.delayed_produces)
            .into_iter()
            .partition(|produce| &produce.topic_partition == topic_partition);
        self.delayed_produces = kept;
        for produce in failed {
            self.respond_produce(
                produce.reply_to,
                produce.correlation_id,
                error,
                -1,
                None,
                -1,
            );
        }
    }
}
