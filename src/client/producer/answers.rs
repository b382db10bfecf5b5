//! The idempotent producer's answers: Metadata, InitProducerId, and Produce with every error
//! Kafka's producer tells apart (retriable, out of order, fatal).

use super::*;

impl IdempotentProducer {
    pub(super) fn handle_metadata(
        &mut self,
        now_ms: i64,
        broker: NodeId,
        brokers: &[BrokerId],
        topics: &[TopicMetadata],
    ) {
        let leaders_changed = self.io.metadata.apply(now_ms, brokers, topics);
        self.start_over_in_created_again_topics();
        self.events.push(ProducerEvent::MetadataRefreshed {
            broker,
            leaders_changed,
        });
    }

    /// A partition whose batches went out under a topic id that metadata no longer gives the
    /// name (the topic was deleted and created again): none of them can be in the new topic's
    /// log, as every attempt named the old id (Produce v13) and the new leader refuses those,
    /// so nothing is left to probe; and the new leader knows nothing of our sequences, so they
    /// start over under a new epoch, the first batch alone, as after any loss of the broker's
    /// state (KIP-360). Otherwise a probe resent unchanged would be written ahead of the
    /// partition's older batches by a leader that accepts any first sequence (generated seeds
    /// 15300000000000424, 15400000000000210: `producer-order`).
    fn start_over_in_created_again_topics(&mut self) {
        for (topic_partition, partition) in &mut self.partitions {
            let current = self.io.metadata.topic_id(&topic_partition.topic);
            let Some(sent_under) = partition.topic_id else {
                continue;
            };
            if current.is_none_or(|current| current == sent_under) {
                continue;
            }
            partition.topic_id = current;
            for batch in partition.batches.iter_mut().filter(|b| !b.is_in_flight()) {
                batch.maybe_written = false;
            }
            if !partition.batches.is_empty() || partition.last_acked_sequence >= 0 {
                self.partitions_to_rewrite.insert(topic_partition.clone());
                self.events.push(ProducerEvent::TopicCreatedAgain {
                    topic_partition: topic_partition.clone(),
                });
            }
        }
    }

    pub(super) fn handle_init_producer_id(
        &mut self,
        now_ms: i64,
        broker: NodeId,
        error: ErrorCode,
        producer_id: i64,
        producer_epoch: i16,
    ) {
        if !error.is_none() {
            // An idempotent producer's InitProducerId fails only transiently in this model
            // (no authorization), so every error is retried on the next broker.
            self.init_failed(now_ms, broker);
            return;
        }
        assert!(
            producer_id >= 0,
            "InitProducerId gave producer id {producer_id}"
        );
        assert!(
            producer_epoch >= 0,
            "InitProducerId gave epoch {producer_epoch}"
        );
        self.init_in_flight = false;
        let producer = ProducerIdAndEpoch {
            producer_id,
            epoch: producer_epoch,
        };
        self.producer = Some(producer);
        self.events
            .push(ProducerEvent::ProducerIdAssigned { producer });
        // Partitions waiting for a bump (epoch exhausted) restart under the new id.
        self.rewrite_partitions(producer);
    }

    pub(super) fn init_failed(&mut self, now_ms: i64, broker: NodeId) {
        assert!(self.init_in_flight, "no InitProducerId in flight");
        self.init_in_flight = false;
        self.init_not_before_ms = now_ms + self.config.retry_backoff_ms;
        self.io.metadata.rotate_away_from(broker);
    }

    pub(super) fn handle_produce(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        batch_id: u64,
        stamp: Stamp,
        error: ErrorCode,
        base_offset: i64,
    ) {
        let Some(partition) = self.partitions.get_mut(topic_partition) else {
            return;
        };
        let Some(index) = partition.batch_index(batch_id) else {
            return; // Failed meanwhile (fatal error); nothing left to do.
        };
        partition.batches[index].state = BatchState::Ready {
            not_before_ms: now_ms,
        };
        match error {
            ErrorCode::None => self.complete_batch(topic_partition, index, stamp, base_offset),
            DUPLICATE_SEQUENCE_NUMBER => self.complete_batch(topic_partition, index, stamp, -1),
            ErrorCode::ProducerFenced => self.fail_fatally(error),
            error => self.handle_produce_error(now_ms, topic_partition, index, stamp, error),
        }
    }

    /// A refused batch: retried (maybe re-stamped later) or failed, per `canRetry`.
    pub(super) fn handle_produce_error(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        index: usize,
        stamp: Stamp,
        error: ErrorCode,
    ) {
        let partition = self.partitions.get_mut(topic_partition).expect("found");
        let batch = &mut partition.batches[index];
        let batch_id = batch.id;
        let current_stamp = batch.stamp() == stamp;
        match error {
            ErrorCode::OutOfOrderSequenceNumber => {
                if current_stamp {
                    // Links keep order, so earlier attempts reached the leader first; had one
                    // been written, this one would be a duplicate (success), not out of order:
                    // at most four later batches can follow it into the five-batch window.
                    batch.maybe_written = false;
                }
                self.handle_out_of_order(topic_partition, index, stamp);
            }
            ErrorCode::UnknownTopicId => {
                // Produce v13: refused before the append, the leader's partition is of a topic
                // created again under the name; metadata will give its id.
                self.io.metadata.request_update();
            }
            UNKNOWN_PRODUCER_ID => {
                // Pre-2.5 brokers: the leader lost our state; for idempotence, bump and retry.
                if current_stamp {
                    self.partitions_to_rewrite.insert(topic_partition.clone());
                }
            }
            error if error.is_retriable() => {
                // Some of these come after the append (NotEnoughReplicasAfterAppend, a delayed
                // produce that timed out or lost leadership), so the batch may be in the log.
                batch.maybe_written = true;
                if invalidates_metadata(error) {
                    self.io.metadata.request_update();
                }
            }
            error => {
                // The batch leaves a hole in the sequences; later batches restart under a new
                // epoch.
                let batch = partition.batches.remove(index).expect("found");
                let outcome_unknown = batch.maybe_written;
                let error = ProduceError::Rejected(error);
                fail_records(
                    &mut self.events,
                    topic_partition,
                    batch.records,
                    error,
                    outcome_unknown,
                );
                self.partitions_to_rewrite.insert(topic_partition.clone());
                return;
            }
        }
        let reason = RetryReason::Broker(error);
        self.retry_batch(now_ms, topic_partition, batch_id, stamp, reason);
    }

    /// Success: every record is at `base_offset + index`.
    pub(super) fn complete_batch(
        &mut self,
        topic_partition: &TopicPartition,
        index: usize,
        stamp: Stamp,
        base_offset: i64,
    ) {
        let partition = self.partitions.get_mut(topic_partition).expect("found");
        let batch = partition.batches.remove(index).expect("found");
        if batch.stamp() == stamp {
            let last_sequence = batch.last_sequence();
            if sequence_is_after(last_sequence, partition.last_acked_sequence) {
                partition.last_acked_sequence = last_sequence;
            }
        } else {
            // Written under the stamp it had before a bump, while the later batches were
            // re-stamped assuming it was not: only a fresh epoch makes them line up again.
            self.partitions_to_rewrite.insert(topic_partition.clone());
        }
        ack_records(
            &mut self.events,
            topic_partition,
            batch.records,
            base_offset,
        );
    }

    /// Java's `canRetry` for OUT_OF_ORDER_SEQUENCE_NUMBER: decides whether to bump the epoch;
    /// the batch is retried either way.
    pub(super) fn handle_out_of_order(
        &mut self,
        topic_partition: &TopicPartition,
        index: usize,
        stamp: Stamp,
    ) {
        let partition = &self.partitions[topic_partition];
        let sequence_reset = partition.batches[index].stamp() != stamp;
        let is_next =
            !sequence_reset && in_sequence(partition.last_acked_sequence, stamp.base_sequence);
        let bump = match partition.unresolved_next_sequence {
            // An earlier batch probably failed first; this one will line up once it is retried.
            None if sequence_reset || !is_next => false,
            // The next expected batch was refused: the broker lost our sequence; start over.
            None => true,
            // Only the batch right after the expired one proves the gap is real.
            Some(next) => !sequence_reset && next == stamp.base_sequence,
        };
        if bump {
            self.partitions_to_rewrite.insert(topic_partition.clone());
        }
    }

    /// Puts a batch back for another attempt after the backoff, same sequence and bytes.
    pub(super) fn retry_batch(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        batch_id: u64,
        failed: Stamp,
        reason: RetryReason,
    ) {
        let Some(partition) = self.partitions.get_mut(topic_partition) else {
            return;
        };
        let Some(index) = partition.batch_index(batch_id) else {
            return;
        };
        let batch = &mut partition.batches[index];
        batch.attempts += 1;
        if reason == RetryReason::RequestTimeout {
            batch.maybe_written = true;
        }
        batch.state = BatchState::Ready {
            not_before_ms: now_ms + self.config.retry_backoff_ms,
        };
        self.events.push(ProducerEvent::Retried {
            topic_partition: topic_partition.clone(),
            base_sequence: failed.base_sequence,
            attempts: batch.attempts,
            reason,
        });
    }

    /// ProducerFenced: every queued and unfinished record fails, and so will every later send.
    pub(super) fn fail_fatally(&mut self, error: ErrorCode) {
        self.fatal_error = Some(error);
        for (topic_partition, partition) in &mut self.partitions {
            for batch in std::mem::take(&mut partition.batches) {
                let outcome_unknown = batch.maybe_written || batch.is_in_flight();
                fail_records(
                    &mut self.events,
                    topic_partition,
                    batch.records,
                    ProduceError::ProducerFailed(error),
                    outcome_unknown,
                );
            }
            let queued = std::mem::take(&mut partition.queued);
            let failure = ProduceError::ProducerFailed(error);
            fail_records(&mut self.events, topic_partition, queued, failure, false);
        }
    }
}
