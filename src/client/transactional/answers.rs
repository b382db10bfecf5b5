//! The transactional producer's answers (Metadata, FindCoordinator, InitProducerId,
//! AddPartitionsToTxn, EndTxn, Produce) and its error transitions (abortable, fatal, a batch
//! retried or failed).

use super::*;

impl TransactionalProducer {
    /// The open transaction can only be aborted from now on.
    pub(super) fn transition_to_abortable(&mut self, error: ErrorCode) {
        let Some(txn) = &mut self.txn else {
            return;
        };
        if !txn.producing() {
            return; // Already aborting, or already abortable.
        }
        txn.phase = TransactionPhase::AbortableError(error);
        let transaction = Some(txn.number);
        self.events.push(TransactionalEvent::TransactionFailed {
            transaction,
            fatal: false,
            error,
        });
        self.fail_unsent_records();
    }

    /// Fails queued records and batches waiting for a retry (Java's `abortUndrainedBatches`);
    /// batches in flight finish on their own.
    pub(super) fn fail_unsent_records(&mut self) {
        for (topic_partition, partition) in &mut self.partitions {
            let queued: Vec<PendingRecord> = partition.queued.drain(..).collect();
            fail_records(
                &mut self.events,
                topic_partition,
                queued,
                TransactionalSendError::Aborted,
                false,
            );
            if partition.batch.as_ref().is_some_and(|b| !b.is_in_flight()) {
                let batch = partition.batch.take().expect("checked above");
                // Its sequence was used; the next transaction needs a fresh epoch.
                self.epoch_bump_required = true;
                fail_records(
                    &mut self.events,
                    topic_partition,
                    batch.records,
                    TransactionalSendError::Aborted,
                    batch.maybe_written,
                );
            }
        }
    }

    /// Fatal: every record fails, the open transaction ends with an unknown outcome.
    pub(super) fn fail_fatally(&mut self, error: ErrorCode) {
        if self.fatal_error.is_some() {
            return;
        }
        self.fatal_error = Some(error);
        let failure = TransactionalSendError::ProducerFailed(error);
        for (topic_partition, partition) in &mut self.partitions {
            let queued: Vec<PendingRecord> = partition.queued.drain(..).collect();
            fail_records(&mut self.events, topic_partition, queued, failure, false);
            if let Some(batch) = partition.batch.take() {
                let outcome_unknown = batch.maybe_written || batch.is_in_flight();
                fail_records(
                    &mut self.events,
                    topic_partition,
                    batch.records,
                    failure,
                    outcome_unknown,
                );
            }
        }
        let transaction = self.txn.take().map(|txn| txn.number);
        self.events.push(TransactionalEvent::TransactionFailed {
            transaction,
            fatal: true,
            error,
        });
        if matches!(
            error,
            ErrorCode::ProducerFenced | ErrorCode::InvalidProducerEpoch
        ) {
            self.events.push(TransactionalEvent::Fenced { error });
        }
    }

    /// A produce attempt failed with a retriable error (or timed out): retry it while the
    /// transaction is producing, else fail it.
    pub(super) fn retry_or_fail_batch(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        batch_id: u64,
        error: ErrorCode,
    ) {
        let producing = self.txn.as_ref().is_some_and(OpenTransaction::producing);
        let Some(partition) = self.partitions.get_mut(topic_partition) else {
            return;
        };
        let Some(batch) = partition.batch.as_mut().filter(|b| b.id == batch_id) else {
            return;
        };
        // Timeouts and errors after the append (NotEnoughReplicasAfterAppend, a delayed
        // produce that lost leadership) leave the batch possibly written.
        batch.maybe_written = true;
        if producing {
            batch.state = BatchState::Ready {
                not_before_ms: now_ms + self.config.retry_backoff_ms,
            };
            return;
        }
        let batch = partition.batch.take().expect("checked above");
        self.epoch_bump_required = true;
        let reason = if error == ErrorCode::RequestTimedOut {
            TransactionalSendError::Aborted
        } else {
            TransactionalSendError::Rejected(error)
        };
        fail_records(
            &mut self.events,
            topic_partition,
            batch.records,
            reason,
            true,
        );
    }

    pub(super) fn handle_metadata(
        &mut self,
        now_ms: i64,
        brokers: &[BrokerId],
        topics: &[TopicMetadata],
    ) {
        self.io.metadata.apply(now_ms, brokers, topics);
    }

    /// Common handling of a coordinator's error answer: true if it was retriable.
    pub(super) fn coordinator_error(&mut self, now_ms: i64, error: ErrorCode) -> bool {
        match error {
            ErrorCode::NotCoordinator | ErrorCode::CoordinatorNotAvailable => {
                self.coordinator = None;
            }
            ErrorCode::ConcurrentTransactions | ErrorCode::CoordinatorLoadInProgress => {}
            _ => return false,
        }
        self.coordinator_not_before_ms = now_ms + self.config.retry_backoff_ms;
        true
    }

    pub(super) fn handle_find_coordinator(
        &mut self,
        now_ms: i64,
        broker: NodeId,
        error: ErrorCode,
        coordinator: Option<NodeId>,
    ) {
        self.coordinator_request_in_flight = false;
        match (error, coordinator) {
            (ErrorCode::None, Some(coordinator)) => {
                self.coordinator = Some(coordinator);
                self.events
                    .push(TransactionalEvent::CoordinatorFound { coordinator });
            }
            (error, _) if error.is_none() || error.is_retriable() => {
                self.coordinator_not_before_ms = now_ms + self.config.retry_backoff_ms;
                self.io.metadata.rotate_away_from(broker);
            }
            (error, _) => self.fail_fatally(error),
        }
    }

    pub(super) fn handle_init_producer_id(
        &mut self,
        now_ms: i64,
        error: ErrorCode,
        producer_id: i64,
        producer_epoch: i16,
    ) {
        self.coordinator_request_in_flight = false;
        if !error.is_none() {
            if !self.coordinator_error(now_ms, error) {
                self.fail_fatally(error);
            }
            return;
        }
        assert!(
            producer_id >= 0 && producer_epoch >= 0,
            "InitProducerId gave {producer_id}/{producer_epoch}"
        );
        assert!(
            self.partitions.values().all(|p| p.batch.is_none()),
            "a new epoch while batches are unfinished"
        );
        let producer = ProducerIdAndEpoch {
            producer_id,
            epoch: producer_epoch,
        };
        self.producer = Some(producer);
        self.init_needed = false;
        self.epoch_bump_required = false;
        self.events
            .push(TransactionalEvent::ProducerIdAssigned { producer });
    }

    /// KIP-890 part 2: the coordinator bumped the epoch for the transaction's markers and the
    /// next transaction runs under it, every partition from sequence 0 (`sequence_owner`).
    /// That also closes any sequence hole a failed batch left, so no KIP-360 bump follows
    /// (KAFKA-17898: a version-2 client never bumps the epoch itself).
    fn adopt_bumped_epoch(&mut self, producer: ProducerIdAndEpoch) {
        assert!(
            self.partitions.values().all(|p| p.batch.is_none()),
            "a new epoch while batches are unfinished"
        );
        self.producer = Some(producer);
        self.init_needed = false;
        self.epoch_bump_required = false;
        self.events
            .push(TransactionalEvent::ProducerIdAssigned { producer });
    }

    pub(super) fn handle_add_partitions(
        &mut self,
        now_ms: i64,
        partitions: Vec<TopicPartition>,
        results: &[(TopicPartition, ErrorCode)],
    ) {
        self.coordinator_request_in_flight = false;
        let error = results
            .iter()
            .map(|(_, error)| *error)
            .find(|error| !error.is_none() && *error != OPERATION_NOT_ATTEMPTED);
        match error {
            None => {
                let Some(txn) = &mut self.txn else {
                    return;
                };
                for topic_partition in partitions {
                    txn.maybe_added.remove(&topic_partition);
                    txn.added.insert(topic_partition);
                }
            }
            Some(error) if self.coordinator_error(now_ms, error) => {}
            // A partition the cluster does not know (yet): Java retries it.
            Some(ErrorCode::UnknownTopicOrPartition) => {
                self.coordinator_not_before_ms = now_ms + self.config.retry_backoff_ms;
                self.io.metadata.request_update();
            }
            // KIP-1279: a mirror partition cannot join a transaction until it is stopped. Java
            // makes every partition error it has no case for abortable ("Could not add
            // partitions to transaction due to errors"); the transaction aborts and the next
            // one may try again.
            Some(error @ ErrorCode::ReadOnlyTopic) => self.transition_to_abortable(error),
            Some(error) => self.fail_fatally(error),
        }
    }

    /// `next`: what a transaction-version-2 coordinator answered the producer holds from now
    /// on (`None` from version 1).
    pub(super) fn handle_end_txn(
        &mut self,
        now_ms: i64,
        committed: bool,
        error: ErrorCode,
        next: Option<ProducerIdAndEpoch>,
    ) {
        self.coordinator_request_in_flight = false;
        if error.is_none() {
            let expected = match self.txn.as_ref().map(|txn| txn.phase) {
                Some(TransactionPhase::Committing) => Some(true),
                Some(TransactionPhase::Aborting) => Some(false),
                _ => None,
            };
            assert_eq!(expected, Some(committed), "EndTxn answered out of phase");
            self.complete_transaction(committed);
            if let Some(producer) = next {
                self.adopt_bumped_epoch(producer);
            }
            return;
        }
        if !self.coordinator_error(now_ms, error) {
            self.fail_fatally(error);
        }
    }

    pub(super) fn handle_produce(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        batch_id: u64,
        error: ErrorCode,
        base_offset: i64,
    ) {
        let Some(partition) = self.partitions.get_mut(topic_partition) else {
            return;
        };
        let Some(batch) = partition.batch.as_mut().filter(|b| b.id == batch_id) else {
            return;
        };
        batch.state = BatchState::Ready {
            not_before_ms: now_ms,
        };
        match error {
            ErrorCode::None | DUPLICATE_SEQUENCE_NUMBER => {
                let batch = partition.batch.take().expect("checked above");
                // A duplicate is confirmed without an offset.
                let base_offset = if error.is_none() { base_offset } else { -1 };
                ack_records(
                    &mut self.events,
                    topic_partition,
                    batch.records,
                    base_offset,
                );
            }
            ErrorCode::ProducerFenced => self.fail_fatally(error),
            error if error.is_retriable() => {
                if invalidates_metadata(error) {
                    self.io.metadata.request_update();
                }
                self.retry_or_fail_batch(now_ms, topic_partition, batch_id, error);
            }
            error => {
                // Not retried inside a transaction (OUT_OF_ORDER_SEQUENCE_NUMBER among them):
                // the batch fails and the transaction must abort.
                let batch = partition.batch.take().expect("checked above");
                self.epoch_bump_required = true;
                fail_records(
                    &mut self.events,
                    topic_partition,
                    batch.records,
                    TransactionalSendError::Rejected(error),
                    batch.maybe_written,
                );
                self.transition_to_abortable(error);
            }
        }
    }
}
