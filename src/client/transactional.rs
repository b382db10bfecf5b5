//! Kafka's transactional producer (`transactional.id` set) as a sans-IO [`Node`].
//!
//! Contract (Java's `TransactionManager` and `Sender`; kafka-storage.md §6):
//! - **Start.** On its first input the producer finds its transaction coordinator
//!   (FindCoordinator of type Transaction, to the metadata rotation target) and sends
//!   InitProducerId(transactional id, `transaction_timeout_ms`) to it. NOT_COORDINATOR and
//!   COORDINATOR_NOT_AVAILABLE (and timeouts) forget the coordinator and find it again after
//!   `retry_backoff_ms`; CONCURRENT_TRANSACTIONS and COORDINATOR_LOAD_IN_PROGRESS retry after
//!   `retry_backoff_ms`. Coordinator requests go one at a time, in the order FindCoordinator,
//!   InitProducerId, AddPartitionsToTxn, EndTxn.
//! - **Transactions.** [`TransactionalProducer::begin_transaction`] opens one (allowed while the
//!   producer id is still being fetched: records wait). [`TransactionalProducer::send`] queues a
//!   record; outside an open transaction it fails at once. A partition's first record triggers
//!   AddPartitionsToTxn (every partition still missing, in one request) and nothing is produced
//!   to a partition before the coordinator confirmed it. Batches are transactional, carry the
//!   producer id and epoch, and per-partition sequences that start at 0 for every new epoch;
//!   retries resend the same bytes. **At most one batch per partition is in flight** (Kafka
//!   allows five): a sequence then never has a gap behind a failed batch, and the broker's
//!   "any sequence from an unknown producer" rule cannot reorder batches.
//! - **Commit** ([`TransactionalProducer::commit_transaction`]) waits until every record is
//!   acknowledged, then sends EndTxn(commit); the transaction is committed when the coordinator
//!   answers (it answers once PrepareCommit is durable). A transaction that never added a
//!   partition completes without a request. A transaction-version-2 coordinator answers EndTxn
//!   with the epoch it bumped to (KIP-890 part 2): the producer takes it for its next
//!   transaction, every partition from sequence 0, and needs no KIP-360 bump of its own
//!   (KAFKA-17898); a version-1 answer names none and the epoch stays.
//! - **Connections.** A request that outlives `request_timeout_ms` closes the connection to
//!   its broker, as Java's `NetworkClient` does: every request that connection carried fails
//!   with it, and later ones travel on a new connection, which a message still held on the old
//!   one does not delay (`ClientIo::take_timed_out`). The old one may still arrive: a late
//!   EndTxn that, under one epoch across transactions, would end the next transaction.
//! - **Abort** ([`TransactionalProducer::abort_transaction`]) fails the records not yet sent (and
//!   batches waiting for a retry), waits for batches in flight, re-sends AddPartitionsToTxn for
//!   partitions whose earlier request went unanswered, then sends EndTxn(abort). If any batch
//!   of the transaction failed (its sequence may be missing in the partition), the epoch is
//!   bumped afterwards by InitProducerId with the current producer id and epoch (KIP-360, Java's
//!   `epochBumpRequired`), which restarts every partition at sequence 0.
//! - **Errors.** Abortable (the transaction can only be aborted; reported by
//!   [`TransactionalEvent::TransactionFailed`] with `fatal: false`): a produce error that is not
//!   retried (OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH — abortable on produce since
//!   Kafka 2.7 —, INVALID_TXN_STATE, …), READ_ONLY_TOPIC from AddPartitionsToTxn (KIP-1279: a
//!   mirror partition that is not stopped; Java makes every unexpected partition error of
//!   AddPartitionsToTxn abortable) and a record that reaches `delivery_timeout_ms`. Retriable
//!   produce errors and timeouts retry after `retry_backoff_ms` (refreshing metadata when the
//!   leader is probably wrong). Fatal (every later call fails; `TransactionFailed` with
//!   `fatal: true`, then [`TransactionalEvent::Fenced`] for the first two): PRODUCER_FENCED
//!   anywhere, INVALID_PRODUCER_EPOCH from the coordinator, INVALID_TXN_STATE and
//!   INVALID_PRODUCER_ID_MAPPING from the coordinator, and any error the Java client does not
//!   retry.
//! - **Outputs.** Requests through [`Node::take_outbox`]; outcomes through
//!   [`TransactionalProducer::take_events`]. Every `send` gets exactly one `Acked` or `Failed`;
//!   `Acked` means written to the log, not committed. Every begun transaction ends with exactly
//!   one `TransactionCompleted` (outcome known) or `TransactionFailed { fatal: true }` (the
//!   producer died; the outcome is unknown if EndTxn(commit) was sent, otherwise the
//!   coordinator aborts it).
//!
//! Differences from the Java client, on purpose: AddPartitionsToTxn is sent under transaction
//! version 2 too (Kafka 4.0's client lets the partition leader add the partition; the epoch
//! rules are the same either way); one batch in flight per partition; one Produce
//! request per batch, no linger, no byte-size batching; the producer starts initialising on its
//! first input instead of on `initTransactions()`; INVALID_PRODUCER_ID_MAPPING on EndTxn is fatal
//! (Java makes it abortable when it can bump the epoch). A produce request the client gave up on
//! (delivery timeout) can still reach the leader after the abort marker; the leader's KIP-890
//! verification (`crate::broker`'s `txn_verification`) refuses it, and under the `pre-kip-890`
//! design it opens a transaction nobody ends there, as it did in Kafka before 3.6. Produce
//! requests carry the transactional id for that verification.

mod answers;

use crate::protocol::{
    Acks, BrokerId, ClusterResponse, CoordinatorRequest, CoordinatorResponse, CoordinatorType,
    ErrorCode, NodeId, ProducerEpoch, ProducerId, ReplicaRequest, ReplicaResponse, Request,
    Response, TopicMetadata, TopicPartition,
};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

use bytes::Bytes;

use super::error::{require_positive_ms, ClientConfigError};
use super::io::{invalidates_metadata, ClientIo, WakeupAfter};
use super::produce_core::{
    ack_records, encode_batch, fail_records, queued_wakeup, take_expired_records, BatchState,
    PendingRecord, ProducerBatch, ProducerNode, RecordEvent, DUPLICATE_SEQUENCE_NUMBER,
};
use super::produce_core::{ProducerIdAndEpoch, SendHandle};
use crate::record::{increment_sequence, CompressionType};
/// Kafka's OPERATION_NOT_ATTEMPTED (55): this partition failed because another one did.
const OPERATION_NOT_ATTEMPTED: ErrorCode = ErrorCode::Other(55);

/// Transactional producer settings (Kafka producer configs of similar names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionalProducerConfig {
    /// `transactional.id`; must not be empty.
    pub transactional_id: String,
    /// `transaction.timeout.ms`: the coordinator aborts a transaction open longer than this.
    /// Kafka default 60 000.
    pub transaction_timeout_ms: i64,
    /// `request.timeout.ms`; also the Produce request's `timeout_ms`. Kafka default 30 000.
    pub request_timeout_ms: i64,
    /// `retry.backoff.ms`: wait before any retry and between metadata refreshes. Kafka
    /// default 100.
    pub retry_backoff_ms: i64,
    /// `delivery.timeout.ms`: a record not acknowledged this long after `send` fails and makes
    /// its transaction abortable. At least `request_timeout_ms`. Kafka default 120 000.
    pub delivery_timeout_ms: i64,
    /// `metadata.max.age.ms`. Kafka default 300 000.
    pub metadata_max_age_ms: i64,
    /// Records per batch at most (stands in for `batch.size`). Default 100.
    pub batch_records_max: usize,
    /// `compression.type`: how each batch's records are compressed. Default none.
    pub compression: CompressionType,
}

impl TransactionalProducerConfig {
    /// Kafka's defaults for `transactional_id`.
    pub fn new(transactional_id: impl Into<String>) -> Self {
        Self {
            transactional_id: transactional_id.into(),
            transaction_timeout_ms: 60_000,
            request_timeout_ms: 30_000,
            retry_backoff_ms: 100,
            delivery_timeout_ms: 120_000,
            metadata_max_age_ms: 300_000,
            batch_records_max: 100,
            compression: CompressionType::None,
        }
    }

    /// Kafka's defaults scaled to simulated runs of seconds, like the simulator's other
    /// clients: requests time out after 1 s (Kafka 30 s), records after 8 s (120 s),
    /// transactions after 10 s (60 s), retries wait 50 ms, metadata is at most 5 s old.
    pub fn simulated(transactional_id: impl Into<String>) -> Self {
        Self {
            transaction_timeout_ms: 10_000,
            request_timeout_ms: 1_000,
            retry_backoff_ms: 50,
            delivery_timeout_ms: 8_000,
            metadata_max_age_ms: 5_000,
            ..Self::new(transactional_id)
        }
    }

    /// Checks every field's range.
    pub fn validate(&self) -> Result<(), ClientConfigError> {
        if self.transactional_id.is_empty() {
            return Err(ClientConfigError::field(
                "transactional_id",
                "must not be empty",
            ));
        }
        require_positive_ms("transaction_timeout_ms", self.transaction_timeout_ms)?;
        require_positive_ms("request_timeout_ms", self.request_timeout_ms)?;
        require_positive_ms("retry_backoff_ms", self.retry_backoff_ms)?;
        require_positive_ms("delivery_timeout_ms", self.delivery_timeout_ms)?;
        require_positive_ms("metadata_max_age_ms", self.metadata_max_age_ms)?;
        if self.delivery_timeout_ms < self.request_timeout_ms {
            return Err(ClientConfigError::field(
                "delivery_timeout_ms",
                "must be at least request_timeout_ms",
            ));
        }
        if self.batch_records_max == 0 || self.batch_records_max > i32::MAX as usize {
            return Err(ClientConfigError::field(
                "batch_records_max",
                "must be in 1..=i32::MAX",
            ));
        }
        Ok(())
    }
}

/// Why a record failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionalSendError {
    /// `send` outside an open transaction (none begun, or its commit or abort is under way).
    NotInTransaction,
    /// The transaction hit an abortable error or is being aborted before the record was
    /// acknowledged.
    Aborted,
    /// The partition leader refused the record's batch with this error (not retried).
    Rejected(ErrorCode),
    /// `delivery_timeout_ms` passed before the record was acknowledged.
    DeliveryTimeout,
    /// The producer failed with this fatal error.
    ProducerFailed(ErrorCode),
}

/// Why an API call was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionApiError {
    /// The producer failed with this fatal error.
    Fatal(ErrorCode),
    /// `begin_transaction` while a transaction is open or completing.
    TransactionInProgress,
    /// `commit_transaction` / `abort_transaction` with no transaction begun.
    NoTransaction,
    /// The opposite completion is already under way (commit after abort or abort during a
    /// commit).
    Completing,
    /// The transaction hit this abortable error: only `abort_transaction` is possible.
    Abortable(ErrorCode),
}

/// What the producer reports; see [`TransactionalProducer::take_events`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransactionalEvent {
    /// FindCoordinator named the transaction coordinator.
    CoordinatorFound {
        /// The coordinator broker.
        coordinator: NodeId,
    },
    /// InitProducerId gave a producer id and epoch (at start, and after an epoch bump), or a
    /// transaction-version-2 EndTxn answered the bumped epoch the next transaction uses.
    ProducerIdAssigned {
        /// The id and epoch.
        producer: ProducerIdAndEpoch,
    },
    /// The record is in the partition's log at `offset` (−1 if an old broker confirmed a
    /// duplicate without one). Not yet committed.
    Acked {
        /// The record's send.
        handle: SendHandle,
        /// Its partition.
        topic_partition: TopicPartition,
        /// Its offset.
        offset: i64,
    },
    /// The record failed; with `outcome_unknown` it may nevertheless be in the log (never
    /// committed: its transaction cannot commit).
    Failed {
        /// The record's send.
        handle: SendHandle,
        /// Its partition.
        topic_partition: TopicPartition,
        /// Why.
        error: TransactionalSendError,
        /// Whether a request carrying the record may have been written.
        outcome_unknown: bool,
    },
    /// The coordinator confirmed the transaction's outcome.
    TransactionCompleted {
        /// The transaction (numbered from 0 by `begin_transaction`).
        transaction: u64,
        /// Committed or aborted.
        committed: bool,
        /// The producer id and epoch it ran under.
        producer: Option<ProducerIdAndEpoch>,
    },
    /// Abortable (`fatal: false`): the transaction can only be aborted now. Fatal: the producer
    /// stopped; `transaction` is the one open then, whose outcome is unknown.
    TransactionFailed {
        /// The transaction concerned.
        transaction: Option<u64>,
        /// Whether the producer stopped.
        fatal: bool,
        /// The error.
        error: ErrorCode,
    },
    /// A newer instance with the same transactional id (or the coordinator's timeout abort)
    /// fenced this producer; follows the fatal `TransactionFailed`.
    Fenced {
        /// PRODUCER_FENCED or INVALID_PRODUCER_EPOCH.
        error: ErrorCode,
    },
}

impl RecordEvent for TransactionalEvent {
    type Error = TransactionalSendError;

    fn acked(handle: SendHandle, topic_partition: TopicPartition, offset: i64) -> Self {
        Self::Acked {
            handle,
            topic_partition,
            offset,
        }
    }

    fn failed(
        handle: SendHandle,
        topic_partition: TopicPartition,
        error: TransactionalSendError,
        outcome_unknown: bool,
    ) -> Self {
        Self::Failed {
            handle,
            topic_partition,
            error,
            outcome_unknown,
        }
    }
}

/// Where the open transaction is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionPhase {
    /// Records may be sent.
    Open,
    /// `commit_transaction` was called: flushing, then EndTxn(commit).
    Committing,
    /// `abort_transaction` was called: waiting for batches in flight, then EndTxn(abort).
    Aborting,
    /// An abortable error happened; only `abort_transaction` is possible.
    AbortableError(ErrorCode),
}

#[derive(Debug, Clone)]
struct OpenTransaction {
    number: u64,
    phase: TransactionPhase,
    /// Partitions the coordinator confirmed.
    added: BTreeSet<TopicPartition>,
    /// Partitions of an AddPartitionsToTxn that went unanswered: maybe in the transaction.
    maybe_added: BTreeSet<TopicPartition>,
}

impl OpenTransaction {
    /// Whether the coordinator may know this transaction (EndTxn is needed).
    fn started(&self) -> bool {
        !self.added.is_empty() || !self.maybe_added.is_empty()
    }

    /// Whether new batches may be sent and retries go on.
    fn producing(&self) -> bool {
        matches!(
            self.phase,
            TransactionPhase::Open | TransactionPhase::Committing
        )
    }
}

#[derive(Debug, Clone, Default)]
struct PartitionState {
    queued: VecDeque<PendingRecord>,
    /// The partition's one unfinished batch.
    batch: Option<ProducerBatch>,
    /// The producer id and epoch `next_sequence` belongs to.
    sequence_owner: Option<ProducerIdAndEpoch>,
    next_sequence: i32,
}

impl PartitionState {
    fn is_flushed(&self) -> bool {
        self.queued.is_empty() && self.batch.is_none()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum PendingRequest {
    Metadata,
    FindCoordinator,
    InitProducerId,
    AddPartitions {
        partitions: Vec<TopicPartition>,
    },
    EndTxn {
        committed: bool,
    },
    Produce {
        topic_partition: TopicPartition,
        batch_id: u64,
    },
}

impl PendingRequest {
    fn is_coordinator_request(&self) -> bool {
        !matches!(self, Self::Metadata | Self::Produce { .. })
    }
}

/// A transactional producer; see the module doc.
#[derive(Debug, Clone)]
pub struct TransactionalProducer {
    node_id: NodeId,
    config: TransactionalProducerConfig,
    io: ClientIo<PendingRequest>,
    now_ms: Option<i64>,
    coordinator: Option<NodeId>,
    coordinator_request_in_flight: bool,
    coordinator_not_before_ms: i64,
    producer: Option<ProducerIdAndEpoch>,
    /// InitProducerId is due: at start, and for the epoch bump after an abort.
    init_needed: bool,
    /// A batch of the open transaction failed: bump the epoch once it is aborted.
    epoch_bump_required: bool,
    txn: Option<OpenTransaction>,
    next_transaction: u64,
    partitions: BTreeMap<TopicPartition, PartitionState>,
    fatal_error: Option<ErrorCode>,
    next_handle: u64,
    next_batch_id: u64,
    events: Vec<TransactionalEvent>,
}

impl TransactionalProducer {
    /// A producer that bootstraps from `bootstrap` (brokers of one cluster).
    pub fn new(
        node_id: NodeId,
        bootstrap: Vec<NodeId>,
        config: TransactionalProducerConfig,
    ) -> Result<Self, ClientConfigError> {
        config.validate()?;
        let io = ClientIo::new(
            node_id,
            &bootstrap,
            config.metadata_max_age_ms,
            config.retry_backoff_ms,
            config.request_timeout_ms,
        )?;
        Ok(Self {
            node_id,
            config,
            io,
            now_ms: None,
            coordinator: None,
            coordinator_request_in_flight: false,
            coordinator_not_before_ms: i64::MIN,
            producer: None,
            init_needed: true,
            epoch_bump_required: false,
            txn: None,
            next_transaction: 0,
            partitions: BTreeMap::new(),
            fatal_error: None,
            next_handle: 0,
            next_batch_id: 0,
            events: Vec::new(),
        })
    }

    // ----- application API -----

    /// Opens a transaction; returns its number. Records may be sent from now on.
    pub fn begin_transaction(&mut self) -> Result<u64, TransactionApiError> {
        if let Some(error) = self.fatal_error {
            return Err(TransactionApiError::Fatal(error));
        }
        if self.txn.is_some() {
            return Err(TransactionApiError::TransactionInProgress);
        }
        let number = self.next_transaction;
        self.next_transaction += 1;
        self.txn = Some(OpenTransaction {
            number,
            phase: TransactionPhase::Open,
            added: BTreeSet::new(),
            maybe_added: BTreeSet::new(),
        });
        Ok(number)
    }

    /// Queues one record of the open transaction; its outcome arrives as an event with the
    /// returned handle. Take the outbox afterwards.
    pub fn send(
        &mut self,
        now_ms: i64,
        topic: &str,
        partition: i32,
        key: Option<Bytes>,
        value: Option<Bytes>,
    ) -> SendHandle {
        let handle = SendHandle(self.next_handle);
        self.next_handle += 1;
        let topic_partition = TopicPartition::new(topic, partition);
        let refusal = match (self.fatal_error, self.txn.as_ref().map(|txn| txn.phase)) {
            (Some(error), _) => Some(TransactionalSendError::ProducerFailed(error)),
            (None, Some(TransactionPhase::Open)) => None,
            (None, Some(TransactionPhase::AbortableError(_))) => {
                Some(TransactionalSendError::Aborted)
            }
            (None, _) => Some(TransactionalSendError::NotInTransaction),
        };
        if let Some(error) = refusal {
            self.events.push(TransactionalEvent::Failed {
                handle,
                topic_partition,
                error,
                outcome_unknown: false,
            });
            return handle;
        }
        self.io.metadata.add_topic(topic);
        self.partitions
            .entry(topic_partition)
            .or_default()
            .queued
            .push_back(PendingRecord {
                handle,
                created_ms: now_ms,
                key,
                value,
            });
        self.pump(now_ms);
        handle
    }

    /// Commits the open transaction once every record is acknowledged; the outcome arrives as
    /// `TransactionCompleted` (or `TransactionFailed`). Calling it again while committing is a
    /// no-op.
    pub fn commit_transaction(&mut self, now_ms: i64) -> Result<(), TransactionApiError> {
        let txn = self.open_transaction()?;
        match txn.phase {
            TransactionPhase::Open => txn.phase = TransactionPhase::Committing,
            TransactionPhase::Committing => {}
            TransactionPhase::Aborting => return Err(TransactionApiError::Completing),
            TransactionPhase::AbortableError(error) => {
                return Err(TransactionApiError::Abortable(error));
            }
        }
        self.pump(now_ms);
        Ok(())
    }

    /// Aborts the open transaction: records not yet sent fail at once, and EndTxn(abort)
    /// follows once the batches in flight are answered. Calling it again while aborting is a
    /// no-op.
    pub fn abort_transaction(&mut self, now_ms: i64) -> Result<(), TransactionApiError> {
        let txn = self.open_transaction()?;
        match txn.phase {
            TransactionPhase::Open | TransactionPhase::AbortableError(_) => {
                txn.phase = TransactionPhase::Aborting;
                self.fail_unsent_records();
            }
            TransactionPhase::Aborting => {}
            TransactionPhase::Committing => return Err(TransactionApiError::Completing),
        }
        self.pump(now_ms);
        Ok(())
    }

    fn open_transaction(&mut self) -> Result<&mut OpenTransaction, TransactionApiError> {
        if let Some(error) = self.fatal_error {
            return Err(TransactionApiError::Fatal(error));
        }
        self.txn.as_mut().ok_or(TransactionApiError::NoTransaction)
    }

    /// Outcomes and informational events since the last call, in the order they happened.
    pub fn take_events(&mut self) -> Vec<TransactionalEvent> {
        std::mem::take(&mut self.events)
    }

    // ----- getters for checkers -----

    /// The producer id and epoch in use, if one is held.
    pub fn producer_id_and_epoch(&self) -> Option<ProducerIdAndEpoch> {
        self.producer
    }

    /// The configuration.
    pub fn config(&self) -> &TransactionalProducerConfig {
        &self.config
    }

    /// The coordinator currently believed in.
    pub fn coordinator(&self) -> Option<NodeId> {
        self.coordinator
    }

    /// The open transaction's number and phase.
    pub fn transaction(&self) -> Option<(u64, TransactionPhase)> {
        self.txn.as_ref().map(|txn| (txn.number, txn.phase))
    }

    /// Whether a producer id is held and no InitProducerId is due.
    pub fn is_ready(&self) -> bool {
        self.fatal_error.is_none() && self.producer.is_some() && !self.init_needed
    }

    /// The fatal error the producer stopped on, if any.
    pub fn fatal_error(&self) -> Option<ErrorCode> {
        self.fatal_error
    }

    /// Base sequence the next batch of `topic_partition` gets (under the current epoch).
    pub fn next_sequence(&self, topic_partition: &TopicPartition) -> i32 {
        self.partitions
            .get(topic_partition)
            .filter(|partition| partition.sequence_owner == self.producer)
            .map_or(0, |partition| partition.next_sequence)
    }

    /// Requests of any kind in flight now.
    pub fn in_flight_requests(&self) -> usize {
        self.io.in_flight.len()
    }

    /// Responses ignored because their request had timed out or was abandoned.
    pub fn ignored_responses(&self) -> u64 {
        self.io.ignored_responses
    }

    // ----- the step function -----

    /// A request got no usable answer (timeout, or an answer of the wrong kind).
    fn fail_request(&mut self, now_ms: i64, broker: NodeId, request: PendingRequest) {
        if request.is_coordinator_request() {
            self.coordinator_request_in_flight = false;
            // Java treats a timeout as a disconnection: find the coordinator again.
            self.coordinator = None;
            self.coordinator_not_before_ms = now_ms + self.config.retry_backoff_ms;
            self.io.metadata.rotate_away_from(broker);
        }
        match request {
            PendingRequest::Metadata => self.io.metadata.on_failed(now_ms, broker),
            PendingRequest::AddPartitions { partitions } => {
                if let Some(txn) = &mut self.txn {
                    txn.maybe_added.extend(partitions);
                }
            }
            PendingRequest::FindCoordinator
            | PendingRequest::InitProducerId
            | PendingRequest::EndTxn { .. } => {}
            PendingRequest::Produce {
                topic_partition,
                batch_id,
            } => {
                self.io.metadata.request_update();
                self.retry_or_fail_batch(
                    now_ms,
                    &topic_partition,
                    batch_id,
                    ErrorCode::RequestTimedOut,
                );
            }
        }
    }

    fn expire_deliveries(&mut self, now_ms: i64) {
        let delivery_timeout_ms = self.config.delivery_timeout_ms;
        let mut expired_any = false;
        for (topic_partition, partition) in &mut self.partitions {
            let expired = take_expired_records(&mut partition.queued, delivery_timeout_ms, now_ms);
            expired_any |= !expired.is_empty();
            // Never sent, so certainly not written.
            let error = TransactionalSendError::DeliveryTimeout;
            fail_records(&mut self.events, topic_partition, expired, error, false);
            let batch_expired = partition
                .batch
                .as_ref()
                .is_some_and(|batch| batch.delivery_deadline_ms(delivery_timeout_ms) <= now_ms);
            if batch_expired {
                let batch = partition.batch.take().expect("checked above");
                if let BatchState::InFlight { correlation_id } = batch.state {
                    // Abandon the request: an answer that still arrives is ignored.
                    self.io.in_flight.take(correlation_id);
                }
                expired_any = true;
                self.epoch_bump_required = true;
                let outcome_unknown = batch.maybe_written || batch.is_in_flight();
                fail_records(
                    &mut self.events,
                    topic_partition,
                    batch.records,
                    TransactionalSendError::DeliveryTimeout,
                    outcome_unknown,
                );
            }
        }
        if expired_any {
            self.transition_to_abortable(ErrorCode::RequestTimedOut);
        }
    }

    fn send_request(
        &mut self,
        now_ms: i64,
        broker: NodeId,
        request: Request,
        pending: PendingRequest,
    ) -> u64 {
        if pending.is_coordinator_request() {
            assert!(
                !self.coordinator_request_in_flight,
                "one coordinator request at a time"
            );
            self.coordinator_request_in_flight = true;
        }
        self.io.send_request(now_ms, broker, request, pending)
    }

    /// The next coordinator request, by priority: FindCoordinator, InitProducerId,
    /// AddPartitionsToTxn, EndTxn.
    fn maybe_send_coordinator_request(&mut self, now_ms: i64) {
        if self.coordinator_request_in_flight || now_ms < self.coordinator_not_before_ms {
            return;
        }
        let Some(coordinator) = self.coordinator else {
            let request = Request::Coordinator(CoordinatorRequest::FindCoordinator {
                key_type: CoordinatorType::Transaction,
                key: self.config.transactional_id.clone(),
            });
            let broker = self.io.metadata.target();
            self.send_request(now_ms, broker, request, PendingRequest::FindCoordinator);
            return;
        };
        if self.init_needed {
            self.send_init_producer_id(now_ms, coordinator);
            return;
        }
        let Some(producer) = self.producer else {
            unreachable!("a producer id is held once no InitProducerId is due");
        };
        let to_add = self.partitions_to_add();
        if !to_add.is_empty() {
            let request = Request::Coordinator(CoordinatorRequest::AddPartitionsToTxn {
                transactional_id: self.config.transactional_id.clone(),
                producer_id: ProducerId(producer.producer_id),
                producer_epoch: ProducerEpoch(producer.epoch),
                partitions: to_add.clone(),
                verify_only: false,
            });
            let pending = PendingRequest::AddPartitions { partitions: to_add };
            self.send_request(now_ms, coordinator, request, pending);
            return;
        }
        if let Some(committed) = self.end_txn_due() {
            let request = Request::Coordinator(CoordinatorRequest::EndTxn {
                transactional_id: self.config.transactional_id.clone(),
                producer_id: ProducerId(producer.producer_id),
                producer_epoch: ProducerEpoch(producer.epoch),
                committed,
            });
            let pending = PendingRequest::EndTxn { committed };
            self.send_request(now_ms, coordinator, request, pending);
        }
    }

    fn send_init_producer_id(&mut self, now_ms: i64, coordinator: NodeId) {
        // An epoch bump names the producer id and epoch it holds (KIP-360); a first
        // InitProducerId names none.
        let (producer_id, producer_epoch) = self
            .producer
            .map_or((-1, -1), |producer| (producer.producer_id, producer.epoch));
        let request = Request::Coordinator(CoordinatorRequest::InitProducerId {
            transactional_id: Some(self.config.transactional_id.clone()),
            transaction_timeout_ms: self.config.transaction_timeout_ms,
            producer_id: ProducerId(producer_id),
            producer_epoch: ProducerEpoch(producer_epoch),
        });
        self.send_request(now_ms, coordinator, request, PendingRequest::InitProducerId);
    }

    /// Partitions the coordinator must (still) be told about.
    fn partitions_to_add(&self) -> Vec<TopicPartition> {
        let Some(txn) = &self.txn else {
            return Vec::new();
        };
        let mut wanted: BTreeSet<TopicPartition> = txn.maybe_added.clone();
        if txn.producing() {
            wanted.extend(
                self.partitions
                    .iter()
                    .filter(|(_, partition)| !partition.queued.is_empty())
                    .map(|(topic_partition, _)| topic_partition.clone()),
            );
        }
        wanted
            .into_iter()
            .filter(|topic_partition| !txn.added.contains(topic_partition))
            .collect()
    }

    /// EndTxn(commit) once everything is acknowledged, EndTxn(abort) once nothing is in flight.
    fn end_txn_due(&self) -> Option<bool> {
        let txn = self.txn.as_ref()?;
        if !txn.started() {
            return None;
        }
        match txn.phase {
            TransactionPhase::Committing if self.all_flushed() => Some(true),
            TransactionPhase::Aborting if self.nothing_in_flight() => Some(false),
            _ => None,
        }
    }

    fn all_flushed(&self) -> bool {
        self.partitions.values().all(PartitionState::is_flushed)
    }

    fn nothing_in_flight(&self) -> bool {
        self.partitions
            .values()
            .all(|partition| partition.batch.is_none())
    }

    /// A transaction the coordinator never heard of completes without EndTxn.
    fn maybe_complete_locally(&mut self) {
        let Some(txn) = &self.txn else {
            return;
        };
        if txn.started() || self.coordinator_request_in_flight {
            return;
        }
        let committed = match txn.phase {
            TransactionPhase::Committing if self.all_flushed() => true,
            TransactionPhase::Aborting if self.nothing_in_flight() => false,
            _ => return,
        };
        self.complete_transaction(committed);
    }

    fn complete_transaction(&mut self, committed: bool) {
        let txn = self.txn.take().expect("a transaction completes");
        self.events.push(TransactionalEvent::TransactionCompleted {
            transaction: txn.number,
            committed,
            producer: self.producer,
        });
        if !committed && self.epoch_bump_required {
            // A failed batch may have left a hole in some partition's sequences: restart them
            // all under a bumped epoch (KIP-360, after the abort as Java does).
            self.init_needed = true;
        }
    }

    fn send_produce_requests(&mut self, now_ms: i64) {
        let Some(producer) = self.producer.filter(|_| !self.init_needed) else {
            return;
        };
        let Some(txn) = &self.txn else {
            return;
        };
        if !txn.producing() {
            return;
        }
        let added: Vec<TopicPartition> = txn.added.iter().cloned().collect();
        for topic_partition in added {
            self.send_partition(now_ms, &topic_partition, producer);
        }
    }

    /// Sends the partition's batch when due, or drains a new one (one in flight at most).
    fn send_partition(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        producer: ProducerIdAndEpoch,
    ) {
        let Some(partition) = self.partitions.get(topic_partition) else {
            return;
        };
        if partition.is_flushed() {
            return;
        }
        let Some((leader, _)) = self.io.metadata.leader(topic_partition) else {
            self.io.metadata.request_update();
            return;
        };
        let partition = self.partitions.get_mut(topic_partition).expect("checked");
        match &partition.batch {
            Some(batch) => match batch.state {
                BatchState::InFlight { .. } => return,
                BatchState::Ready { not_before_ms } if not_before_ms > now_ms => return,
                BatchState::Ready { .. } => {}
            },
            None => {
                if partition.sequence_owner != Some(producer) {
                    partition.sequence_owner = Some(producer);
                    partition.next_sequence = 0;
                }
                let count = partition.queued.len().min(self.config.batch_records_max);
                let records: Vec<PendingRecord> = partition.queued.drain(..count).collect();
                let encoded = encode_batch(
                    &records,
                    producer,
                    partition.next_sequence,
                    true,
                    self.config.compression,
                );
                partition.next_sequence = increment_sequence(partition.next_sequence, count as i32);
                let batch = ProducerBatch::new(self.next_batch_id, records, encoded, (), now_ms);
                partition.batch = Some(batch);
                self.next_batch_id += 1;
            }
        }
        let batch = partition.batch.as_ref().expect("present");
        let request = Request::Replica(ReplicaRequest::Produce {
            acks: Acks::All,
            timeout_ms: self.config.request_timeout_ms,
            topic_partition: topic_partition.clone(),
            batch: batch.encoded.clone(),
            transactional_id: Some(self.config.transactional_id.clone()),
            // By name: KIP-890's verification already refuses a transaction's produce to a
            // topic created again (its partition is not in the ongoing transaction there).
            topic_id: None,
        });
        let pending = PendingRequest::Produce {
            topic_partition: topic_partition.clone(),
            batch_id: batch.id,
        };
        let correlation_id = self.send_request(now_ms, leader, request, pending);
        let batch = self.partitions.get_mut(topic_partition).expect("checked");
        let batch = batch.batch.as_mut().expect("present");
        batch.attempts += 1;
        batch.state = BatchState::InFlight { correlation_id };
    }

    // ----- errors -----

    // ----- answers -----
}

impl ProducerNode for TransactionalProducer {
    type Pending = PendingRequest;

    fn client_id(&self) -> NodeId {
        self.node_id
    }

    fn io(&self) -> &ClientIo<PendingRequest> {
        &self.io
    }

    fn io_mut(&mut self) -> &mut ClientIo<PendingRequest> {
        &mut self.io
    }

    fn last_pump_ms(&self) -> Option<i64> {
        self.now_ms
    }

    fn has_fatal_error(&self) -> bool {
        self.fatal_error.is_some()
    }

    /// Does everything that is due at `now_ms`, in a fixed order.
    fn pump(&mut self, now_ms: i64) {
        self.now_ms = Some(now_ms);
        if self.fatal_error.is_some() {
            return;
        }
        self.expire_requests(now_ms);
        self.expire_deliveries(now_ms);
        if self.fatal_error.is_some() {
            return;
        }
        self.io
            .maybe_send_metadata(now_ms, PendingRequest::Metadata);
        self.send_produce_requests(now_ms);
        self.maybe_complete_locally();
        self.maybe_send_coordinator_request(now_ms);
    }

    /// Requests that timed out, and the others their closed connection carried, fail.
    fn expire_requests(&mut self, now_ms: i64) {
        for (_, entry) in self.io.take_timed_out(now_ms) {
            self.fail_request(now_ms, entry.broker, entry.request);
            if self.fatal_error.is_some() {
                return;
            }
        }
    }

    fn handle_response(
        &mut self,
        now_ms: i64,
        request: PendingRequest,
        broker: NodeId,
        response: Response,
    ) {
        match (request, response) {
            (
                PendingRequest::Metadata,
                Response::Cluster(ClusterResponse::Metadata { brokers, topics }),
            ) => {
                self.handle_metadata(now_ms, &brokers, &topics);
            }
            (
                PendingRequest::FindCoordinator,
                Response::Coordinator(CoordinatorResponse::FindCoordinator { error, coordinator }),
            ) => self.handle_find_coordinator(now_ms, broker, error, coordinator),
            (
                PendingRequest::InitProducerId,
                Response::Coordinator(CoordinatorResponse::InitProducerId {
                    error,
                    producer_id,
                    producer_epoch,
                }),
            ) => self.handle_init_producer_id(now_ms, error, producer_id.0, producer_epoch.0),
            (
                PendingRequest::AddPartitions { partitions },
                Response::Coordinator(CoordinatorResponse::AddPartitionsToTxn { results }),
            ) => self.handle_add_partitions(now_ms, partitions, &results),
            (
                PendingRequest::EndTxn { committed },
                Response::Coordinator(CoordinatorResponse::EndTxn {
                    error,
                    producer_id,
                    producer_epoch,
                }),
            ) => {
                let next = (producer_id != ProducerId::NONE).then_some(ProducerIdAndEpoch {
                    producer_id: producer_id.0,
                    epoch: producer_epoch.0,
                });
                self.handle_end_txn(now_ms, committed, error, next);
            }
            (
                PendingRequest::Produce {
                    topic_partition,
                    batch_id,
                },
                Response::Replica(ReplicaResponse::Produce {
                    error, base_offset, ..
                }),
            ) => self.handle_produce(now_ms, &topic_partition, batch_id, error, base_offset.0),
            (request, _) => {
                // An answer of the wrong kind is a broker-model bug; treat it as no answer.
                self.io.ignored_responses += 1;
                self.fail_request(now_ms, broker, request);
            }
        }
    }

    fn own_wakeups(&self, wakeups: &mut WakeupAfter) {
        if !self.coordinator_request_in_flight {
            wakeups.push(self.coordinator_not_before_ms);
        }
        for partition in self.partitions.values() {
            wakeups.extend(queued_wakeup(
                &partition.queued,
                self.config.delivery_timeout_ms,
            ));
            if let Some(batch) = &partition.batch {
                wakeups.extend(batch.wakeups(self.config.delivery_timeout_ms));
            }
        }
    }
}

#[cfg(test)]
#[path = "transactional_tests.rs"]
mod tests;
