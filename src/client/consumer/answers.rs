//! The consumer's answers: ListOffsets (a reset), OffsetsForLeaderEpoch (a position
//! validated after a leader change), Fetch (records delivered, positions moved, errors).

use super::*;
use crate::protocol::{ClusterResponse, Offset, ReplicaResponse};

/// Copies the leader's offsets from a successful answer (values below 0 mean "not sent").
pub(super) fn update_offsets(partition: &mut AssignedPartition, answer: &FetchPartitionResponse) {
    if answer.high_watermark.is_some() {
        partition.high_watermark = answer.high_watermark.0;
    }
    if answer.last_stable_offset.is_some() {
        partition.last_stable_offset = answer.last_stable_offset.0;
    }
    if answer.log_start_offset.is_some() {
        partition.log_start_offset = answer.log_start_offset.0;
    }
}

/// INV-9 on the consumer side: no delivered record lies inside a control batch.
pub(super) fn debug_assert_no_control_records(batches: &[RecordBatch], records: &[ConsumerRecord]) {
    if cfg!(debug_assertions) {
        for batch in batches.iter().filter(|batch| batch.is_control()) {
            let range = batch.base_offset()..=batch.last_offset();
            assert!(
                !records.iter().any(|record| range.contains(&record.offset)),
                "a control record at {}..={} reached the application",
                batch.base_offset(),
                batch.last_offset()
            );
        }
    }
}

impl Consumer {
    pub(super) fn handle_response(
        &mut self,
        now_ms: i64,
        correlation_id: u64,
        broker: NodeId,
        request: PendingRequest,
        response: Response,
    ) {
        match (request, response) {
            (
                PendingRequest::Metadata,
                Response::Cluster(ClusterResponse::Metadata { brokers, topics }),
            ) => {
                let leaders_changed = self.io.metadata.apply(now_ms, &brokers, &topics);
                self.assign_new_partitions_of_whole_topics();
                self.forget_positions_in_deleted_topics();
                self.events.push(ConsumerEvent::MetadataRefreshed {
                    broker,
                    leaders_changed,
                });
            }
            (
                PendingRequest::ListOffsets { partitions },
                Response::Replica(ReplicaResponse::ListOffsets {
                    partitions: answers,
                }),
            ) => {
                self.handle_list_offsets(now_ms, correlation_id, &partitions, &answers);
            }
            (
                PendingRequest::Fetch {
                    partitions,
                    sent_ms,
                },
                Response::Replica(ReplicaResponse::Fetch {
                    partitions: answers,
                }),
            ) => {
                self.handle_fetch(now_ms, correlation_id, &partitions, sent_ms, answers);
            }
            (
                PendingRequest::Validate { partitions },
                Response::Replica(ReplicaResponse::OffsetsForLeaderEpoch {
                    partitions: answers,
                }),
            ) => {
                self.handle_validation(now_ms, correlation_id, &partitions, &answers);
            }
            (request, _) => {
                // An answer of the wrong kind is a broker-model bug; treat it as no answer.
                self.io.ignored_responses += 1;
                self.fail_request(now_ms, broker, request, FetchError::MalformedAnswer);
            }
        }
    }

    pub(super) fn handle_list_offsets(
        &mut self,
        now_ms: i64,
        correlation_id: u64,
        topic_partitions: &[TopicPartition],
        answers: &[ListOffsetsAnswer],
    ) {
        for (index, topic_partition) in topic_partitions.iter().enumerate() {
            let still_ours = self
                .partitions
                .get(topic_partition)
                .is_some_and(|partition| {
                    partition.phase == Phase::ListingOffsets { correlation_id }
                });
            if !still_ours {
                continue;
            }
            // Answers come in request order; a missing one counts as a failure.
            match answers.get(index) {
                Some(answer) if answer.error.is_none() => {
                    self.apply_reset(now_ms, topic_partition, answer.offset.0);
                }
                Some(answer) => self.handle_partition_error(now_ms, topic_partition, answer.error),
                None => self.retry_later(now_ms, topic_partition, FetchError::MalformedAnswer),
            }
        }
    }

    /// Whether `topic_partition` still waits, in `phase`, at `position`: an answer to a request
    /// sent before the partition moved on (another request, a seek, a revocation) is stale.
    pub(super) fn awaits(
        &self,
        topic_partition: &TopicPartition,
        phase: Phase,
        position: i64,
    ) -> bool {
        self.partitions
            .get(topic_partition)
            .is_some_and(|partition| {
                partition.phase == phase && partition.position == Some(position)
            })
    }

    /// Answers to position validation (Kafka's `SubscriptionState.maybeCompleteValidation`).
    pub(super) fn handle_validation(
        &mut self,
        now_ms: i64,
        correlation_id: u64,
        requested: &[(TopicPartition, i64, i32)],
        answers: &[EpochAnswer],
    ) {
        for (index, (topic_partition, position, leader_epoch)) in requested.iter().enumerate() {
            if !self.awaits(
                topic_partition,
                Phase::Validating { correlation_id },
                *position,
            ) {
                continue;
            }
            let answer = match answers.get(index) {
                Some(answer) if answer.error.is_none() => *answer,
                Some(answer) => {
                    self.handle_partition_error(now_ms, topic_partition, answer.error);
                    continue;
                }
                None => {
                    self.retry_later(now_ms, topic_partition, FetchError::MalformedAnswer);
                    continue;
                }
            };
            let policy = self.config.auto_offset_reset;
            let partition = self.partitions.get_mut(topic_partition).expect("assigned");
            partition.wait(now_ms);
            if answer.end_offset.is_none() || answer.leader_epoch.is_none() {
                // The leader knows no epoch at or below the position's: reset under the
                // policy, as for OffsetOutOfRange (the next pump sends ListOffsets).
                partition.reset_from = partition.position.take();
                partition.offset_epoch = None;
                continue;
            }
            partition.validated_leader_epoch = Some(*leader_epoch);
            if answer.end_offset < Offset(*position) {
                // Truncation detected: go back to the first offset known to diverge.
                partition.position = Some(answer.end_offset.0);
                partition.offset_epoch = Some(answer.leader_epoch.0);
                self.events.push(ConsumerEvent::OffsetReset {
                    topic_partition: topic_partition.clone(),
                    previous: Some(*position),
                    offset: answer.end_offset.0,
                    policy,
                });
            }
        }
    }

    pub(super) fn apply_reset(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        offset: i64,
    ) {
        assert!(
            offset >= 0,
            "ListOffsets gave offset {offset} for {topic_partition}"
        );
        let leader_epoch = self.io.metadata.leader_epoch(topic_partition);
        let topic_id = self.io.metadata.topic_id(&topic_partition.topic);
        let partition = self.partitions.get_mut(topic_partition).expect("assigned");
        partition.position = Some(offset);
        partition.topic_id = topic_id;
        partition.offset_epoch = None;
        partition.validated_leader_epoch = Some(leader_epoch);
        partition.wait(now_ms);
        let previous = partition.reset_from.take();
        self.events.push(ConsumerEvent::OffsetReset {
            topic_partition: topic_partition.clone(),
            previous,
            offset,
            policy: self.config.auto_offset_reset,
        });
    }

    pub(super) fn handle_fetch(
        &mut self,
        now_ms: i64,
        correlation_id: u64,
        requested: &[(TopicPartition, i64)],
        sent_ms: i64,
        answers: Vec<FetchPartitionResponse>,
    ) {
        let mut answers_by_partition: BTreeMap<TopicPartition, FetchPartitionResponse> = answers
            .into_iter()
            .map(|answer| (answer.topic_partition.clone(), answer))
            .collect();
        for (topic_partition, fetch_offset) in requested {
            if !self.awaits(
                topic_partition,
                Phase::Fetching { correlation_id },
                *fetch_offset,
            ) {
                continue; // Stale: the partition moved on since this fetch was sent.
            }
            match answers_by_partition.remove(topic_partition) {
                Some(answer) if answer.error.is_none() => {
                    self.apply_fetched(now_ms, topic_partition, *fetch_offset, sent_ms, &answer);
                }
                Some(answer) => self.handle_partition_error(now_ms, topic_partition, answer.error),
                None => self.retry_later(now_ms, topic_partition, FetchError::MalformedAnswer),
            }
        }
    }

    /// Turns fetched batches into records and advances the position past them.
    pub(super) fn apply_fetched(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        fetch_offset: i64,
        fetch_sent_ms: i64,
        answer: &FetchPartitionResponse,
    ) {
        let aborted = answer.aborted_transactions.as_deref().unwrap_or(&[]);
        let fetch = match completed_fetch(
            fetch_offset,
            &answer.batches,
            aborted,
            self.config.isolation,
        ) {
            Ok(fetch) => fetch,
            Err(error) => {
                // Java raises a corrupt-record error and stays at the same position.
                self.retry_later(now_ms, topic_partition, FetchError::CorruptRecords(error));
                return;
            }
        };
        debug_assert_no_control_records(&answer.batches, &fetch.records);
        assert!(
            fetch.next_fetch_offset >= fetch_offset,
            "the position never moves back"
        );
        assert!(
            fetch
                .records
                .windows(2)
                .all(|pair| pair[0].offset < pair[1].offset),
            "records come in offset order"
        );
        let consumed_epoch = answer
            .batches
            .iter()
            .filter(|batch| {
                batch.last_offset() >= fetch_offset
                    && batch.next_offset() <= fetch.next_fetch_offset
                    && batch.partition_leader_epoch() >= 0
            })
            .map(RecordBatch::partition_leader_epoch)
            .last();
        let partition = self.partitions.get_mut(topic_partition).expect("assigned");
        update_offsets(partition, answer);
        partition.position = Some(fetch.next_fetch_offset);
        if consumed_epoch.is_some() && self.config.fences_by_leader_epoch {
            partition.offset_epoch = consumed_epoch;
        }
        let progressed = fetch.next_fetch_offset > fetch_offset;
        // Nothing new (the leader's wait ran out, or it does not wait): back off, don't spin.
        let not_before_ms = if progressed {
            now_ms
        } else {
            now_ms + self.config.fetch_backoff_ms
        };
        partition.wait(not_before_ms);
        if !fetch.records.is_empty() {
            self.events.push(ConsumerEvent::Records {
                topic_partition: topic_partition.clone(),
                records: fetch.records,
                fetch_sent_ms,
            });
        }
    }

    pub(super) fn handle_partition_error(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        error: ErrorCode,
    ) {
        match error {
            ErrorCode::OffsetOutOfRange => {
                // Reset under the policy: the next pump sends ListOffsets.
                let partition = self.partitions.get_mut(topic_partition).expect("assigned");
                partition.reset_from = partition.position.take();
                partition.offset_epoch = None;
                partition.wait(now_ms);
                self.events.push(ConsumerEvent::FetchFailed {
                    topic_partition: topic_partition.clone(),
                    error: FetchError::Broker(error),
                });
            }
            error => {
                if invalidates_metadata(error) {
                    self.io.metadata.request_update();
                }
                self.retry_later(now_ms, topic_partition, FetchError::Broker(error));
            }
        }
    }
}
