//! The group consumer's answers: FindCoordinator, ConsumerGroupHeartbeat, OffsetFetch and
//! OffsetCommit, and what each failure does to the membership.

use super::*;
use crate::protocol::CoordinatorResponse;

impl GroupConsumer {
    pub(super) fn handle_answer(
        &mut self,
        now_ms: i64,
        broker: NodeId,
        request: GroupRequest,
        response: Result<Response, ErrorCode>,
    ) {
        match (request, response) {
            (
                GroupRequest::FindCoordinator,
                Ok(Response::Coordinator(CoordinatorResponse::FindCoordinator {
                    error,
                    coordinator,
                })),
            ) => match coordinator {
                Some(coordinator) if error.is_none() => {
                    self.coordinator = Some(coordinator);
                    self.events
                        .push(GroupConsumerEvent::CoordinatorFound { coordinator });
                }
                _ => self.find_failed(now_ms),
            },
            (GroupRequest::FindCoordinator, _) => self.find_failed(now_ms),
            (
                GroupRequest::Heartbeat { member_epoch },
                Ok(Response::Coordinator(CoordinatorResponse::ConsumerGroupHeartbeat {
                    error,
                    member_id,
                    member_epoch: new_epoch,
                    heartbeat_interval_ms,
                    assignment,
                })),
            ) => {
                if error.is_none() {
                    if heartbeat_interval_ms > 0 {
                        self.heartbeat_interval_ms = heartbeat_interval_ms;
                    }
                    self.heartbeat_succeeded(
                        now_ms,
                        member_epoch,
                        member_id,
                        new_epoch,
                        assignment,
                    );
                } else {
                    self.heartbeat_failed(now_ms, broker, member_epoch, error);
                }
            }
            (GroupRequest::Heartbeat { member_epoch }, other) => {
                let error = other.err().unwrap_or(ErrorCode::InvalidRequest);
                self.heartbeat_failed(now_ms, broker, member_epoch, error);
            }
            (
                GroupRequest::OffsetFetch,
                Ok(Response::Coordinator(CoordinatorResponse::OffsetFetch { error, offsets })),
            ) => {
                if error.is_none() {
                    self.start_partitions(now_ms, offsets);
                } else {
                    self.offset_fetch_failed(now_ms, broker, error);
                }
            }
            (GroupRequest::OffsetFetch, other) => {
                let error = other.err().unwrap_or(ErrorCode::InvalidRequest);
                self.offset_fetch_failed(now_ms, broker, error);
            }
            (GroupRequest::OffsetCommit { offsets, purpose }, response) => {
                let results = match response {
                    Ok(Response::Coordinator(CoordinatorResponse::OffsetCommit { results })) => {
                        results
                    }
                    Ok(_) => offsets
                        .iter()
                        .map(|(tp, _, _)| (tp.clone(), ErrorCode::InvalidRequest))
                        .collect(),
                    Err(error) => offsets
                        .iter()
                        .map(|(tp, _, _)| (tp.clone(), error))
                        .collect(),
                };
                self.commit_answered(now_ms, broker, &offsets, results, purpose);
            }
        }
    }

    pub(super) fn find_failed(&mut self, now_ms: i64) {
        self.bootstrap_index = (self.bootstrap_index + 1) % self.bootstrap.len();
        self.find_not_before_ms = now_ms + self.config.consumer.retry_backoff_ms;
    }

    pub(super) fn heartbeat_succeeded(
        &mut self,
        now_ms: i64,
        sent_epoch: i32,
        member_id: String,
        member_epoch: i32,
        assignment: Option<Vec<TopicPartition>>,
    ) {
        self.next_heartbeat_ms = now_ms + self.heartbeat_interval_ms;
        self.full_heartbeat_due = false;
        match self.phase {
            Phase::Joining => {
                self.phase = Phase::Stable;
                self.member_id = member_id.clone();
                self.member_epoch = member_epoch;
                self.next_auto_commit_ms = now_ms + self.config.auto_commit_interval_ms;
                self.events.push(GroupConsumerEvent::Joined {
                    member_id,
                    member_epoch,
                });
                self.apply_assignment(now_ms, assignment.unwrap_or_default(), true);
            }
            Phase::Stable => {
                self.member_epoch = member_epoch;
                if let Some(assignment) = assignment {
                    self.apply_assignment(now_ms, assignment, false);
                }
            }
            Phase::Leaving if sent_epoch == -1 => self.finish_leaving(ErrorCode::None),
            // A heartbeat sent before leave() or a join answered after it: nothing to do.
            Phase::Leaving | Phase::Unjoined | Phase::Left => {}
        }
    }

    pub(super) fn heartbeat_failed(
        &mut self,
        now_ms: i64,
        broker: NodeId,
        sent_epoch: i32,
        error: ErrorCode,
    ) {
        if self.phase == Phase::Leaving && sent_epoch == -1 {
            // Give up on a clean leave: the coordinator ends the session anyway.
            if !matches!(
                error,
                ErrorCode::NotCoordinator | ErrorCode::CoordinatorNotAvailable
            ) {
                self.finish_leaving(ErrorCode::None);
                return;
            }
        }
        if self.phase == Phase::Joining {
            self.phase = Phase::Unjoined;
        }
        self.full_heartbeat_due = true;
        match error {
            ErrorCode::UnknownMemberId | ErrorCode::FencedMemberEpoch => {
                if self.phase == Phase::Stable || self.phase == Phase::Leaving {
                    self.lose_membership(now_ms, error);
                } else {
                    // A rejoin under a stale id: join afresh.
                    self.member_id.clear();
                    self.next_heartbeat_ms = now_ms;
                }
            }
            ErrorCode::NotCoordinator
            | ErrorCode::CoordinatorNotAvailable
            | ErrorCode::RequestTimedOut => {
                self.lose_coordinator(now_ms, broker, error);
                self.next_heartbeat_ms = now_ms;
            }
            _ => self.next_heartbeat_ms = now_ms + self.config.consumer.retry_backoff_ms,
        }
    }

    pub(super) fn start_partitions(&mut self, now_ms: i64, offsets: Vec<CommittedOffset>) {
        let mut failed = false;
        for entry in offsets {
            if !entry.error.is_none() {
                failed = true;
                continue;
            }
            if !self.awaiting_offsets.remove(&entry.topic_partition) {
                continue; // No longer assigned, or answered before.
            }
            let committed = entry.offset.is_some().then_some(entry.offset.0);
            let epoch = if committed.is_some() {
                self.committed.insert(
                    entry.topic_partition.clone(),
                    (entry.offset.0, entry.leader_epoch.0),
                );
                entry.leader_epoch.0
            } else {
                -1
            };
            // As Kafka's refreshCommittedOffsets: the commit's epoch exists, so a leader
            // with an older one is stale and must not be fetched from.
            self.consumer
                .update_last_seen_epoch_if_newer(&entry.topic_partition, epoch);
            // A committed offset with its leader epoch is validated before the first fetch
            // (KIP-320): the log may have been truncated below it since the commit.
            match committed {
                Some(offset) => {
                    self.consumer
                        .assign_partition_at(entry.topic_partition.clone(), offset, epoch)
                }
                None => self
                    .consumer
                    .assign_partition(entry.topic_partition.clone(), None),
            }
            self.consumer_started = true;
            self.events.push(GroupConsumerEvent::Started {
                topic_partition: entry.topic_partition,
                committed,
            });
        }
        // Partitions still waiting (an error, or not in the answer) are asked for again.
        self.offset_fetch_not_before_ms = if failed {
            now_ms + self.config.consumer.retry_backoff_ms
        } else {
            now_ms
        };
    }

    pub(super) fn offset_fetch_failed(&mut self, now_ms: i64, broker: NodeId, error: ErrorCode) {
        if matches!(
            error,
            ErrorCode::NotCoordinator
                | ErrorCode::CoordinatorNotAvailable
                | ErrorCode::RequestTimedOut
        ) {
            self.lose_coordinator(now_ms, broker, error);
        }
        self.offset_fetch_not_before_ms = now_ms + self.config.consumer.retry_backoff_ms;
    }

    pub(super) fn commit_answered(
        &mut self,
        now_ms: i64,
        broker: NodeId,
        offsets: &[(TopicPartition, i64, i32)],
        results: Vec<(TopicPartition, ErrorCode)>,
        purpose: CommitPurpose,
    ) {
        let sent: BTreeMap<&TopicPartition, (i64, i32)> = offsets
            .iter()
            .map(|(tp, offset, epoch)| (tp, (*offset, *epoch)))
            .collect();
        let mut accepted = Vec::new();
        let mut errors = Vec::new();
        for (tp, error) in results {
            let Some(&(offset, epoch)) = sent.get(&tp) else {
                continue;
            };
            if error.is_none() {
                self.committed.insert(tp.clone(), (offset, epoch));
                accepted.push((tp, offset, epoch));
            } else {
                errors.push((tp, error));
            }
        }
        let coordinator_error = errors.iter().map(|(_, error)| *error).find(|error| {
            matches!(
                error,
                ErrorCode::NotCoordinator
                    | ErrorCode::CoordinatorNotAvailable
                    | ErrorCode::RequestTimedOut
            )
        });
        if let Some(error) = coordinator_error {
            self.lose_coordinator(now_ms, broker, error);
        }
        if !accepted.is_empty() {
            self.events
                .push(GroupConsumerEvent::Committed { offsets: accepted });
        }
        if !errors.is_empty() {
            self.events
                .push(GroupConsumerEvent::CommitFailed { errors });
        }
        if purpose == CommitPurpose::Revocation && self.phase == Phase::Stable {
            self.next_heartbeat_ms = self.next_heartbeat_ms.min(now_ms);
        }
    }
}
