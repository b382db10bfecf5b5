//! Follower fetching: one fetch session per leader broker; diverging epochs and out-of-range
//! answers truncate, appended data moves the follower's high watermark and log start.

use super::*;

#[derive(Debug, Clone, Default)]
pub(super) struct FetchSession {
    pub(super) inflight: Option<PendingRequest>,
    /// Partitions in the in-flight request with the fetch offsets sent.
    pub(super) inflight_offsets: BTreeMap<TopicPartition, i64>,
    pub(super) next_fetch_ms: i64,
}

impl<S: BrokerStorage> Broker<S> {
    pub(super) fn maybe_send_replica_fetches(&mut self, now_ms: i64) {
        if !self.session.metadata_ready() {
            return;
        }
        let Some(broker_epoch) = self.session.broker_epoch() else {
            return;
        };
        let leaders: Vec<BrokerId> = self.fetch_sessions.keys().copied().collect();
        for leader in leaders {
            let session = self.fetch_sessions.get(&leader).expect("listed above");
            if let Some(pending) = session.inflight {
                if now_ms - pending.sent_ms < self.config.replica_fetch_timeout_ms {
                    continue;
                }
            }
            if now_ms < session.next_fetch_ms {
                continue;
            }
            let requests = self.follower_fetch_partitions(leader);
            if requests.is_empty() {
                self.fetch_sessions.remove(&leader);
                continue;
            }
            let offsets = requests
                .iter()
                .map(|request| (request.topic_partition.clone(), request.fetch_offset))
                .collect();
            let correlation_id = self.outbox.request(
                NodeId::Broker(self.node_id.cluster(), leader),
                Request::Fetch {
                    replica_id: Some(self.broker_id),
                    replica_epoch: broker_epoch,
                    isolation: FetchIsolation::LogEnd,
                    max_wait_ms: self.config.replica_fetch_wait_max_ms,
                    max_bytes: self.config.replica_fetch_max_bytes,
                    partitions: requests,
                },
            );
            let session = self.fetch_sessions.get_mut(&leader).expect("listed above");
            session.inflight = Some(PendingRequest {
                correlation_id,
                sent_ms: now_ms,
            });
            session.inflight_offsets = offsets;
        }
    }

    pub(super) fn follower_fetch_partitions(&self, leader: BrokerId) -> Vec<FetchPartition> {
        self.partitions
            .values()
            .filter_map(|partition| match &partition.role {
                Role::Follower(role) if role.leader == Some(leader) => Some(FetchPartition {
                    topic_partition: partition.topic_partition.clone(),
                    current_leader_epoch: role.leader_epoch,
                    fetch_offset: partition.log.log_end_offset(),
                    last_fetched_epoch: partition.log.latest_epoch().unwrap_or(-1),
                }),
                _ => None,
            })
            .collect()
    }

    pub(super) fn handle_replica_fetch_response(
        &mut self,
        now_ms: i64,
        leader: BrokerId,
        correlation_id: u64,
        answers: Vec<FetchPartitionResponse>,
    ) {
        let Some(session) = self.fetch_sessions.get_mut(&leader) else {
            return;
        };
        if session.inflight.map(|p| p.correlation_id) != Some(correlation_id) {
            return;
        }
        session.inflight = None;
        let offsets = std::mem::take(&mut session.inflight_offsets);
        let mut backoff = false;
        for answer in answers {
            let Some(sent_offset) = offsets.get(&answer.topic_partition).copied() else {
                continue;
            };
            backoff |= !self.handle_replica_fetch_answer(leader, sent_offset, answer);
        }
        let next = if backoff {
            now_ms + self.config.replica_fetch_backoff_ms
        } else {
            now_ms
        };
        if let Some(session) = self.fetch_sessions.get_mut(&leader) {
            session.next_fetch_ms = next;
        }
    }

    /// Applies one partition of a fetch answer; returns false when the fetcher should back off.
    pub(super) fn handle_replica_fetch_answer(
        &mut self,
        leader: BrokerId,
        sent_offset: i64,
        answer: FetchPartitionResponse,
    ) -> bool {
        let topic_partition = answer.topic_partition.clone();
        let Some(partition) = self.partitions.get_mut(&topic_partition) else {
            return true;
        };
        let following =
            matches!(&partition.role, Role::Follower(role) if role.leader == Some(leader));
        if !following || partition.log.log_end_offset() != sent_offset {
            // The role or the log changed while the fetch was in flight: drop the answer.
            return true;
        }
        match answer.error {
            ErrorCode::None => {}
            ErrorCode::OffsetOutOfRange => {
                let reason = if answer.log_start_offset > partition.log.log_end_offset() {
                    let _ = partition
                        .log
                        .truncate_fully_and_start_at(answer.log_start_offset);
                    TruncationReason::OffsetOutOfRangeBelowLeaderStart
                } else {
                    let target = answer.high_watermark.min(partition.log.log_end_offset());
                    let _ = partition.log.truncate_to(target);
                    TruncationReason::OffsetOutOfRangeAboveLeader
                };
                self.push_truncation(&topic_partition, sent_offset, reason);
                return true;
            }
            _ => return false,
        }
        let target = match answer.diverging_epoch {
            Some(_)
                if self
                    .config
                    .broken
                    .contains(&BrokenSwitch::SkipDivergenceTruncation) =>
            {
                return false;
            }
            Some(diverging) => Some(follower_truncation_offset(&partition.log, diverging)),
            None => follower_truncation_for_batches(&partition.log, &answer.batches),
        };
        if let Some(target) = target {
            let _ = partition.log.truncate_to(target);
            self.push_truncation(
                &topic_partition,
                sent_offset,
                TruncationReason::DivergingEpoch,
            );
            return true;
        }
        let appended = if self
            .config
            .broken
            .contains(&BrokenSwitch::FollowerIgnoresPidReset)
        {
            partition
                .log
                .append_as_follower_ignoring_pid_reset(&answer.batches)
        } else {
            partition.log.append_as_follower(&answer.batches)
        };
        if appended.is_err() {
            return false;
        }
        let log = &mut partition.log;
        let high_watermark_before = log.high_watermark();
        let high_watermark = log.update_high_watermark(answer.high_watermark);
        if high_watermark < high_watermark_before {
            // Kafka's follower takes the leader's high watermark as it is; a new leader's may
            // lag its predecessor's until its followers fetch again.
            self.events.push(BrokerEvent::FollowerHighWatermarkLowered {
                topic_partition: topic_partition.clone(),
                from: high_watermark_before,
                to: high_watermark,
                leader,
            });
        }
        let log = &mut self
            .partitions
            .get_mut(&topic_partition)
            .expect("checked above")
            .log;
        let new_start = answer.log_start_offset.min(log.high_watermark());
        // Raising the start above the high watermark is refused by the log; clamped above.
        let _ = log.maybe_increment_log_start_offset(new_start);
        true
    }

    pub(super) fn push_truncation(
        &mut self,
        topic_partition: &TopicPartition,
        from: i64,
        reason: TruncationReason,
    ) {
        if let Some(partition) = self.partitions.get_mut(topic_partition) {
            report_leader_truncation(partition, &mut self.events, topic_partition, from, reason);
        }
    }
}
